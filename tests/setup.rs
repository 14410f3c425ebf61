//! `skills setup`: the real binary against a fake home (`HOME`, `XDG_CONFIG_HOME`, an
//! empty `PATH`) holding a realistic config for every client — other servers,
//! unrelated settings and comments. Comments are written even into files whose
//! client reads strict JSON (`~/.claude.json`, Claude Desktop): the editor works at
//! the format level and must never lose them. For every client: `--dry-run` prints
//! the diff and writes nothing, setup adds the entry (backing the old file up) and
//! leaves everything else as it was, a second run changes nothing (same bytes, same
//! modification time, no second backup), `--remove` gives back the original bytes and
//! `--project` writes the project-level file where the client has one. The listing
//! is snapshotted (insta) with the fake home filtered.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use jsonc_parser::cst::CstRootNode;
use serde_json::{json, Value};

/// The server command written in every test.
const BIN: &str = "/opt/skills/bin/skills";

/// A fake home with a project folder and an empty `PATH` folder.
struct Home {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Home {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        for dir in [&home, &project, &home.join("bin")] {
            fs_err::create_dir_all(dir).unwrap();
        }
        Self {
            _tmp: tmp,
            home,
            project,
        }
    }

    /// `skills ARGS` in the project folder with this home.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The command [`Home::run`] runs.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = common::cli::skills();
        cmd.args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("PATH", self.home.join("bin"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("APPDATA")
            .env_remove("SKILLS_DIR")
            .env_remove("SKILLS_DATA_DIR");
        cmd
    }

    /// `skills ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        common::cli::stdout_of_success(&mut self.command(args))
    }

    /// The listing (`skills setup --json`).
    fn listing(&self) -> Value {
        serde_json::from_str(&self.ok(&["setup", "--json", "--command", BIN])).unwrap()
    }

    /// The user-level config path the binary reports for `client`.
    fn user_path(&self, client: &str) -> PathBuf {
        let listing = self.listing();
        let row = listing["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client"] == client)
            .unwrap_or_else(|| panic!("{client} listed"))
            .clone();
        PathBuf::from(row["user"]["path"].as_str().unwrap())
    }
}

/// One client's realistic existing config and what the entry must look like.
struct Case {
    client: &'static str,
    /// Where the file is on Linux, below the fake home.
    linux_path: &'static str,
    toml: bool,
    /// The key path of the server map.
    key: &'static [&'static str],
    /// The existing file.
    config: &'static str,
    /// Text that must survive every change (comments).
    kept: &'static [&'static str],
    /// The project-level file, relative to the project folder.
    project: Option<&'static str>,
    /// The entry expected (`BIN` stands for the command).
    entry: fn() -> Value,
}

fn command_args() -> Value {
    json!({"command": BIN, "args": ["serve"]})
}

fn stdio_command_args() -> Value {
    json!({"type": "stdio", "command": BIN, "args": ["serve"]})
}

fn local_command() -> Value {
    json!({"type": "local", "command": [BIN, "serve"], "enabled": true})
}

const CASES: &[Case] = &[
    Case {
        client: "claude-code",
        linux_path: ".claude.json",
        toml: false,
        key: &["mcpServers"],
        config: r#"{
  "numStartups": 42,
  "theme": "dark",
  // a personal server for every project
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
    }
  },
  "projects": {
    "/home/me/work": {
      "allowedTools": [],
      "mcpServers": {}
    }
  }
}
"#,
        kept: &["// a personal server for every project"],
        project: Some(".mcp.json"),
        entry: stdio_command_args,
    },
    Case {
        client: "codex",
        linux_path: ".codex/config.toml",
        toml: true,
        key: &["mcp_servers"],
        config: r#"# Codex CLI settings
model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx" # documentation lookups
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.docs.tools.search]
approval_mode = "approve"

[profiles.fast]
model = "gpt-5-mini"
"#,
        kept: &["# Codex CLI settings", "# documentation lookups"],
        project: Some(".codex/config.toml"),
        entry: command_args,
    },
    Case {
        client: "cursor",
        linux_path: ".cursor/mcp.json",
        toml: false,
        key: &["mcpServers"],
        config: r#"{
  // servers for every project
  "mcpServers": {
    "playwright": { "command": "npx", "args": ["@playwright/mcp@latest"] },
    "remote": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer x" } }
  }
}
"#,
        kept: &["// servers for every project"],
        project: Some(".cursor/mcp.json"),
        entry: command_args,
    },
    Case {
        client: "gemini-cli",
        linux_path: ".gemini/settings.json",
        toml: false,
        key: &["mcpServers"],
        config: r#"{
  "theme": "GitHub", // picked in /theme
  "selectedAuthType": "gemini-api-key",
  /* tools */
  "mcpServers": {
    "git": { "command": "uvx", "args": ["mcp-server-git"], "timeout": 5000, "trust": false }
  },
  "telemetry": { "enabled": false }
}
"#,
        kept: &["// picked in /theme", "/* tools */"],
        project: Some(".gemini/settings.json"),
        entry: command_args,
    },
    Case {
        client: "vscode",
        linux_path: ".config/Code/User/mcp.json",
        toml: false,
        key: &["servers"],
        config: r#"{
  // prompted for on first use
  "inputs": [
    { "type": "promptString", "id": "token", "description": "API token", "password": true }
  ],
  "servers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
    },
  },
}
"#,
        kept: &["// prompted for on first use"],
        project: Some(".vscode/mcp.json"),
        entry: stdio_command_args,
    },
    Case {
        client: "claude-desktop",
        linux_path: ".config/Claude/claude_desktop_config.json",
        toml: false,
        key: &["mcpServers"],
        config: r#"{
  "mcpServers": {
    // files on the desktop
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"]
    }
  },
  "globalShortcut": "Ctrl+Space"
}
"#,
        kept: &["// files on the desktop"],
        project: None,
        entry: command_args,
    },
    Case {
        client: "opencode",
        linux_path: ".config/opencode/opencode.json",
        toml: false,
        key: &["mcp"],
        config: r#"{
  "$schema": "https://opencode.ai/config.json",
  "theme": "opencode",
  // remote tools
  "mcp": {
    "sentry": { "type": "remote", "url": "https://mcp.sentry.dev/mcp", "enabled": true },
  },
  "autoupdate": true,
}
"#,
        kept: &["// remote tools"],
        project: Some("opencode.json"),
        entry: local_command,
    },
    Case {
        client: "windsurf",
        linux_path: ".codeium/windsurf/mcp_config.json",
        toml: false,
        key: &["mcpServers"],
        config: r#"{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "<token>" }
    },
    // a remote one
    "zapier": { "serverUrl": "https://actions.zapier.com/mcp/KEY/sse" }
  }
}
"#,
        kept: &["// a remote one"],
        project: None,
        entry: command_args,
    },
];

fn case(client: &str) -> &'static Case {
    CASES.iter().find(|c| c.client == client).unwrap()
}

/// The file as JSON: JSONC through the CST parser, TOML through `toml_edit`.
fn parsed(case: &Case, text: &str) -> Value {
    if case.toml {
        toml_json(text.parse::<toml_edit::DocumentMut>().unwrap().as_item())
    } else {
        CstRootNode::parse(text, &jsonc_parser::ParseOptions::default())
            .unwrap()
            .to_serde_value()
            .unwrap_or(Value::Null)
    }
}

fn toml_json(item: &toml_edit::Item) -> Value {
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => toml_value(v),
        toml_edit::Item::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), toml_json(v)))
                .collect(),
        ),
        toml_edit::Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| toml_json(&toml_edit::Item::Table(t.clone())))
                .collect(),
        ),
    }
}

fn toml_value(v: &toml_edit::Value) -> Value {
    match v {
        toml_edit::Value::String(s) => json!(s.value()),
        toml_edit::Value::Integer(i) => json!(i.value()),
        toml_edit::Value::Float(f) => json!(f.value()),
        toml_edit::Value::Boolean(b) => json!(b.value()),
        toml_edit::Value::Datetime(d) => json!(d.value().to_string()),
        toml_edit::Value::Array(a) => Value::Array(a.iter().map(toml_value).collect()),
        toml_edit::Value::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), toml_value(v)))
                .collect(),
        ),
    }
}

/// The server map of a parsed config (`Null` when absent).
fn servers<'v>(case: &Case, value: &'v Value) -> &'v Value {
    case.key.iter().fold(value, |v, k| &v[*k])
}

/// The parsed config without the `skills` entry.
fn without_entry(case: &Case, mut value: Value) -> Value {
    let mut map = &mut value;
    for k in case.key {
        map = &mut map[*k];
    }
    map.as_object_mut().unwrap().remove("skills");
    value
}

fn mtime(path: &Path) -> std::time::SystemTime {
    fs_err::metadata(path).unwrap().modified().unwrap()
}

fn backup(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The whole cycle for one client on its user-level file.
fn user_level_cycle(client: &str) {
    let case = case(client);
    let home = Home::new();
    let path = home.user_path(client);
    if cfg!(target_os = "linux") {
        assert_eq!(path, home.home.join(case.linux_path));
    }
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, case.config).unwrap();
    let before = parsed(case, case.config);
    let listed = |home: &Home| {
        home.listing()["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client"] == client)
            .unwrap()["user"]["state"]
            .clone()
    };
    assert_eq!(listed(&home), "missing");

    // --dry-run: the diff, nothing written.
    let t0 = mtime(&path);
    let out = home.ok(&["setup", client, "--dry-run", "--command", BIN]);
    assert!(out.contains("would add"), "{out}");
    assert!(out.contains(&format!("+++ {}", path.display())), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with('+') && l.contains(BIN)),
        "{out}"
    );
    assert_eq!(fs_err::read_to_string(&path).unwrap(), case.config);
    assert_eq!(mtime(&path), t0);
    assert!(!backup(&path, ".skills-backup").exists());

    // Setup: the entry added, the rest as it was, the old file backed up.
    let out = home.ok(&["setup", client, "--command", BIN]);
    assert!(out.starts_with(&format!("{client}: added")), "{out}");
    let text = fs_err::read_to_string(&path).unwrap();
    let after = parsed(case, &text);
    assert_eq!(servers(case, &after)["skills"], (case.entry)(), "{text}");
    assert_eq!(without_entry(case, after), before, "{text}");
    for kept in case.kept {
        assert!(text.contains(kept), "{kept:?} lost:\n{text}");
    }
    if case.toml {
        // Only added lines: every original line is still there, in order.
        let diff = similar::TextDiff::from_lines(case.config, &text);
        assert!(
            diff.iter_all_changes()
                .all(|c| c.tag() != similar::ChangeTag::Delete),
            "{text}"
        );
    }
    assert_eq!(
        fs_err::read_to_string(backup(&path, ".skills-backup")).unwrap(),
        case.config
    );
    assert_eq!(listed(&home), "current");

    // A second run changes nothing: same bytes, same time, no second backup.
    let t1 = mtime(&path);
    let out = home.ok(&["setup", client, "--command", BIN]);
    assert!(out.contains("is current; nothing changed"), "{out}");
    assert!(!out.contains("@@"), "{out}");
    assert_eq!(fs_err::read_to_string(&path).unwrap(), text);
    assert_eq!(mtime(&path), t1);
    assert!(!backup(&path, ".skills-backup.1").exists());

    // Another binary path: the entry is updated, nothing else.
    let out = home.ok(&["setup", client, "--command", "/usr/local/bin/skills"]);
    assert!(out.starts_with(&format!("{client}: updated")), "{out}");
    assert!(backup(&path, ".skills-backup.1").exists());
    assert_eq!(listed(&home), "outdated");
    let out = home.ok(&["setup", client, "--command", BIN]);
    assert!(out.starts_with(&format!("{client}: updated")), "{out}");
    assert_eq!(fs_err::read_to_string(&path).unwrap(), text);

    // --remove --dry-run writes nothing; --remove gives back the original file.
    let out = home.ok(&["setup", client, "--remove", "--dry-run", "--command", BIN]);
    assert!(out.contains("would remove"), "{out}");
    assert_eq!(fs_err::read_to_string(&path).unwrap(), text);
    let out = home.ok(&["setup", client, "--remove", "--command", BIN]);
    assert!(out.starts_with(&format!("{client}: removed")), "{out}");
    assert_eq!(fs_err::read_to_string(&path).unwrap(), case.config);
    let out = home.ok(&["setup", client, "--remove", "--command", BIN]);
    assert!(out.contains("nothing changed"), "{out}");
    assert_eq!(listed(&home), "missing");
}

/// `--project`: the project-level file is created in the current folder, left alone by
/// a second run, and keeps its (empty) server map after `--remove`; a client without
/// one is a usage error.
fn project_level_cycle(client: &str) {
    let case = case(client);
    let home = Home::new();
    let user = home.user_path(client);
    let Some(rel) = case.project else {
        let out = home.run(&["setup", client, "--project", "--command", BIN]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no project-level config file"), "{stderr}");
        return;
    };
    let path = home.project.join(rel);
    let out = home.ok(&["setup", client, "--project", "--command", BIN]);
    assert!(out.contains("--- /dev/null"), "{out}");
    let text = fs_err::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    assert_eq!(
        servers(case, &parsed(case, &text))["skills"],
        (case.entry)()
    );
    assert!(!user.exists(), "the user-level file was written");
    assert!(
        !backup(&path, ".skills-backup").exists(),
        "a new file has no backup"
    );
    let t = mtime(&path);
    let out = home.ok(&["setup", client, "--project", "--command", BIN]);
    assert!(out.contains("nothing changed"), "{out}");
    assert_eq!(mtime(&path), t);
    home.ok(&["setup", client, "--project", "--remove", "--command", BIN]);
    let after = parsed(case, &fs_err::read_to_string(&path).unwrap());
    if !case.toml {
        assert_eq!(servers(case, &after), &json!({}));
    }
    assert!(servers(case, &after).get("skills").is_none());
}

macro_rules! client_tests {
    ($($name:ident => $client:literal,)*) => {
        mod user_level {
            $(#[test] fn $name() { super::user_level_cycle($client); })*
        }
        mod project_level {
            $(#[test] fn $name() { super::project_level_cycle($client); })*
        }
    };
}

client_tests! {
    claude_code => "claude-code",
    codex => "codex",
    cursor => "cursor",
    gemini_cli => "gemini-cli",
    vscode => "vscode",
    claude_desktop => "claude-desktop",
    opencode => "opencode",
    windsurf => "windsurf",
}

#[test]
fn every_client_has_a_case() {
    for client in skills::setup::CLIENTS {
        assert!(
            CASES.iter().any(|c| c.client == client.name),
            "no test case for {}",
            client.name
        );
    }
}

#[test]
fn plain_json_stays_plain_json() {
    let home = Home::new();
    let path = home.home.join(".claude.json");
    let config = "{\n  \"numStartups\": 1,\n  \"mcpServers\": {}\n}";
    fs_err::write(&path, config).unwrap();
    home.ok(&["setup", "claude-code", "--command", BIN]);
    let text = fs_err::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    assert_eq!(value["mcpServers"]["skills"], stdio_command_args());
    assert_eq!(value["numStartups"], 1);
}

#[test]
fn an_existing_entry_keeps_the_fields_people_added() {
    let home = Home::new();
    let path = home.home.join(".cursor/mcp.json");
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(
        &path,
        r#"{"mcpServers": {"skills": {"command": "/old/skills", "args": ["serve"], "env": {"SKILLS_DATA_DIR": "/data"}}}}"#,
    )
    .unwrap();
    let out: Value =
        serde_json::from_str(&home.ok(&["setup", "cursor", "--json", "--command", BIN])).unwrap();
    assert_eq!(out["change"], "updated");
    assert_eq!(out["written"], true);
    assert!(out["diff"].as_str().unwrap().contains("-"));
    let value: Value = serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        value["mcpServers"]["skills"],
        json!({"command": BIN, "args": ["serve"], "env": {"SKILLS_DATA_DIR": "/data"}})
    );
}

#[test]
fn a_broken_config_is_named_and_left_untouched() {
    let home = Home::new();
    let path = home.home.join(".gemini/settings.json");
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    for (config, says) in [
        (
            "{\n  \"theme\": \"GitHub\"\n  \"mcpServers\": {}\n}\n",
            "is not valid JSON",
        ),
        (
            "{\"mcpServers\": [\"git\"]}",
            "`mcpServers` is an array, expected an object",
        ),
    ] {
        fs_err::write(&path, config).unwrap();
        let out = home.run(&["setup", "gemini-cli", "--command", BIN]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("`{}`", path.display())),
            "{stderr}"
        );
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains("hint:"), "{stderr}");
        assert_eq!(fs_err::read_to_string(&path).unwrap(), config);
        assert!(!backup(&path, ".skills-backup").exists());
    }
    let path = home.home.join(".codex/config.toml");
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, "model = \n").unwrap();
    let out = home.run(&["setup", "codex", "--command", BIN]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not valid TOML"));
    // The listing reports it and still succeeds.
    let listing = home.listing();
    let codex = &listing["clients"][1];
    assert_eq!(codex["user"]["state"], "invalid");
    assert!(codex["user"]["error"]
        .as_str()
        .unwrap()
        .contains("not valid TOML"));
}

#[test]
fn an_unknown_client_is_a_usage_error_listing_the_clients() {
    let home = Home::new();
    let out = home.run(&["setup", "emacs"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("claude-code") && stderr.contains("windsurf"),
        "{stderr}"
    );
}

#[test]
fn a_symlinked_config_is_written_through_the_link() {
    let home = Home::new();
    let real = home.home.join("dotfiles/mcp.json");
    fs_err::create_dir_all(real.parent().unwrap()).unwrap();
    fs_err::write(&real, "{}\n").unwrap();
    fs_err::create_dir_all(home.home.join(".cursor")).unwrap();
    let link = home.home.join(".cursor/mcp.json");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&real, &link).unwrap();
    #[cfg(not(unix))]
    return;
    home.ok(&["setup", "cursor", "--command", BIN]);
    assert!(fs_err::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let value: Value = serde_json::from_str(&fs_err::read_to_string(&real).unwrap()).unwrap();
    assert_eq!(value["mcpServers"]["skills"], command_args());
}

/// The listing: which clients look installed (a folder, a command on `PATH`) and the
/// state of each entry, as text (snapshot) and JSON.
#[test]
fn setup_lists_clients_and_their_state() {
    let home = Home::new();
    // Installed: Claude Code (folder) with a current entry, Codex (command on PATH) with
    // no file, Cursor with an old entry, VS Code with a file that has no entry and a
    // project file, Gemini CLI with a broken file.
    fs_err::create_dir_all(home.home.join(".claude")).unwrap();
    fs_err::write(
        home.home.join(".claude.json"),
        format!(r#"{{"mcpServers": {{"skills": {{"type": "stdio", "command": "{BIN}", "args": ["serve"]}}}}}}"#),
    )
    .unwrap();
    let codex = home.home.join("bin/codex");
    fs_err::write(&codex, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs_err::create_dir_all(home.home.join(".cursor")).unwrap();
    fs_err::write(
        home.home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"skills": {"command": "/old/skills", "args": ["serve"]}}}"#,
    )
    .unwrap();
    let vscode = home.user_path("vscode");
    fs_err::create_dir_all(vscode.parent().unwrap()).unwrap();
    fs_err::write(&vscode, "{ \"servers\": {} }").unwrap();
    fs_err::create_dir_all(home.project.join(".vscode")).unwrap();
    fs_err::write(home.project.join(".vscode/mcp.json"), "{}").unwrap();
    fs_err::create_dir_all(home.home.join(".gemini")).unwrap();
    fs_err::write(home.home.join(".gemini/settings.json"), "{ oops }").unwrap();

    let listing = home.listing();
    let state = |client: &str, scope: &str| {
        listing["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client"] == client)
            .unwrap()[scope]["state"]
            .as_str()
            .unwrap_or("null")
            .to_owned()
    };
    assert_eq!(listing["command"], json!([BIN, "serve"]));
    assert_eq!(state("claude-code", "user"), "current");
    assert_eq!(state("codex", "user"), "no_file");
    assert_eq!(state("cursor", "user"), "outdated");
    assert_eq!(state("vscode", "user"), "missing");
    assert_eq!(state("vscode", "project"), "missing");
    assert_eq!(state("gemini-cli", "user"), "invalid");
    assert_eq!(state("windsurf", "project"), "null");
    let installed: Vec<&str> = listing["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["installed"] == true)
        .map(|c| c["client"].as_str().unwrap())
        .collect();
    let mut expected = vec!["claude-code", "codex", "cursor", "gemini-cli"];
    if cfg!(target_os = "linux") {
        expected.push("vscode"); // `<config>/Code` is inside the fake home on Linux only
    }
    assert_eq!(installed, expected);

    if cfg!(target_os = "linux") {
        let out = home.run(&["setup", "--command", BIN]);
        assert!(out.status.success());
        let text = format!(
            "{}--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut settings = insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        let root = home.home.parent().unwrap().display().to_string();
        settings.add_filter(&regex_literal(&root), "[TMP]");
        settings.bind(|| insta::assert_snapshot!("setup_list", text));
    }
}

/// `s` as a regex matching itself.
fn regex_literal(s: &str) -> String {
    s.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// README's client table is the one generated from the client rows.
#[test]
fn the_readme_lists_every_client() {
    let readme =
        fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table = skills::setup::readme_table();
    assert!(
        readme.contains(&table),
        "README.md's client table is not the generated one; replace it with:\n{table}"
    );
}

/// `path`'s permission bits.
#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A private (0600) config holding a token: while setup writes, another local user
/// polling the folder never finds a file (the temporary one, the backup) others may
/// read. The config is padded so each write takes long enough for the poller to see
/// a file before its mode could be narrowed afterwards.
#[cfg(unix)]
#[test]
fn a_private_config_is_never_readable_by_others_while_setup_writes_it() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let home = Home::new();
    let folder = home.home.join(".cursor");
    fs_err::create_dir_all(&folder).unwrap();
    let config = folder.join("mcp.json");
    let pad = "x".repeat(32 << 20);
    fs_err::write(
        &config,
        format!("{{\"token\": \"secret-token\", \"pad\": \"{pad}\", \"mcpServers\": {{}}}}\n"),
    )
    .unwrap();
    fs_err::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let stop = Arc::clone(&stop);
        let folder = folder.clone();
        std::thread::spawn(move || {
            let mut exposed = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                for entry in std::fs::read_dir(&folder).unwrap().flatten() {
                    if let Ok(meta) = std::fs::symlink_metadata(entry.path()) {
                        if meta.permissions().mode() & 0o077 != 0 {
                            exposed.push(format!(
                                "{} {:o}",
                                entry.file_name().to_string_lossy(),
                                meta.permissions().mode() & 0o777
                            ));
                        }
                    }
                }
            }
            exposed
        })
    };
    home.ok(&["setup", "cursor", "--command", BIN]);
    stop.store(true, Ordering::SeqCst);
    let exposed = poller.join().unwrap();
    assert!(
        exposed.is_empty(),
        "files readable by others appeared: {exposed:?}"
    );
    assert_eq!(mode(&config), 0o600);
    assert_eq!(mode(&backup(&config, ".skills-backup")), 0o600);
    let value: Value = serde_json::from_str(&fs_err::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(value["mcpServers"]["skills"], command_args());
}

/// A read-only config is refused (exit 1, naming `--force`) and left as it is;
/// `--force` writes it and keeps its mode.
#[cfg(unix)]
#[test]
fn a_read_only_config_is_refused_unless_forced() {
    use std::os::unix::fs::PermissionsExt as _;
    let home = Home::new();
    let folder = home.home.join(".cursor");
    fs_err::create_dir_all(&folder).unwrap();
    let config = folder.join("mcp.json");
    fs_err::write(&config, "{}\n").unwrap();
    fs_err::set_permissions(&config, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = home.run(&["setup", "cursor", "--command", BIN]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("read-only") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(fs_err::read_to_string(&config).unwrap(), "{}\n");
    assert!(
        !backup(&config, ".skills-backup").exists(),
        "nothing was backed up"
    );
    home.ok(&["setup", "cursor", "--force", "--command", BIN]);
    assert_eq!(mode(&config), 0o444);
    let value: Value = serde_json::from_str(&fs_err::read_to_string(&config).unwrap()).unwrap();
    assert_eq!(value["mcpServers"]["skills"], command_args());
}

/// `--project` never writes outside the project: a symlinked folder (`.cursor` →
/// `~/.ssh`) or file (`.mcp.json` → a file in the home) is refused, naming where it
/// points, and nothing is written there.
#[cfg(unix)]
#[test]
fn a_project_config_leading_outside_the_project_is_refused() {
    let home = Home::new();
    let ssh = home.home.join(".ssh");
    fs_err::create_dir_all(&ssh).unwrap();
    std::os::unix::fs::symlink(&ssh, home.project.join(".cursor")).unwrap();
    let out = home.run(&["setup", "cursor", "--project", "--command", BIN]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("outside the project") && stderr.contains(".ssh"),
        "{stderr}"
    );
    assert!(!ssh.join("mcp.json").exists(), "nothing written in ~/.ssh");
    let elsewhere = home.home.join("elsewhere.json");
    fs_err::write(&elsewhere, "{}\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.project.join(".mcp.json")).unwrap();
    let out = home.run(&["setup", "claude-code", "--project", "--command", BIN]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("elsewhere.json"), "{stderr}");
    assert_eq!(fs_err::read_to_string(&elsewhere).unwrap(), "{}\n");
    // A link that stays inside the project is followed as before.
    fs_err::remove_file(home.project.join(".mcp.json")).unwrap();
    fs_err::write(home.project.join("shared.json"), "{}\n").unwrap();
    std::os::unix::fs::symlink("shared.json", home.project.join(".mcp.json")).unwrap();
    home.ok(&["setup", "claude-code", "--project", "--command", BIN]);
    let value: Value =
        serde_json::from_str(&fs_err::read_to_string(home.project.join("shared.json")).unwrap())
            .unwrap();
    let entry = &value["mcpServers"]["skills"];
    assert_eq!(entry["command"], BIN, "{entry}");
    assert_eq!(entry["args"], json!(["serve"]), "{entry}");
}
