//! The MCP clients `skills setup` knows, as data: one [`Client`] row each in
//! [`CLIENTS`] — where its user-level (and project-level) config file lives on each
//! platform, the file's [`Format`], the key path of its server map and the
//! [`EntryShape`] of one stdio server. Adding a client is one row; nothing else in
//! `setup` names a client.
//!
//! Paths are resolved against an [`Environment`] (home, the platform's configuration
//! folder, environment variables, the project folder and `PATH`), so tests can point
//! every client at a fake home.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use crate::places::{Environment, Root};

/// The config file format of a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// JSON; comments and trailing commas are read and kept (JSONC).
    Json,
    /// TOML.
    Toml,
}

impl Format {
    /// `JSON` or `TOML`, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Toml => "TOML",
        }
    }
}

/// One config file: a folder and the file names a client reads there.
#[derive(Debug, Clone, Copy)]
pub struct ConfigFile {
    /// The folder.
    pub root: Root,
    /// File names (or paths) below it, in the client's order: the first that exists is
    /// edited; when none does, the first is created.
    pub names: &'static [&'static str],
}

/// How one stdio server entry looks in a client's server map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryShape {
    /// `{"command": CMD, "args": [ARGS…]}` (TOML: `command = …`, `args = […]`).
    CommandArgs,
    /// `{"type": "stdio", "command": CMD, "args": [ARGS…]}`.
    StdioCommandArgs,
    /// `{"type": "local", "command": [CMD, ARGS…], "enabled": true}` (opencode).
    LocalCommandArray,
}

impl EntryShape {
    /// The fields of an entry that runs `command` with `args`, in the order written.
    /// Only these fields are compared and written; other fields of an existing entry
    /// (`env`, timeouts, tool approvals) are kept.
    pub fn fields(self, command: &str, args: &[&str]) -> Map<String, Value> {
        let mut map = Map::new();
        let args_value = || Value::Array(args.iter().map(|a| Value::from(*a)).collect());
        match self {
            EntryShape::CommandArgs => {
                map.insert("command".into(), command.into());
                map.insert("args".into(), args_value());
            }
            EntryShape::StdioCommandArgs => {
                map.insert("type".into(), "stdio".into());
                map.insert("command".into(), command.into());
                map.insert("args".into(), args_value());
            }
            EntryShape::LocalCommandArray => {
                map.insert("type".into(), "local".into());
                let mut line = vec![Value::from(command)];
                line.extend(args.iter().map(|a| Value::from(*a)));
                map.insert("command".into(), Value::Array(line));
                map.insert("enabled".into(), true.into());
            }
        }
        map
    }
}

/// A sign that a client is installed.
#[derive(Debug, Clone, Copy)]
pub enum Marker {
    /// Its folder exists.
    Folder(Root),
    /// Its command is on `PATH`.
    Command(&'static str),
}

/// One MCP client that reads its servers from a documented config file.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    /// The name on the command line (`claude-code`).
    pub name: &'static str,
    /// The product's name (`Claude Code`).
    pub title: &'static str,
    /// The user-level config file.
    pub user: ConfigFile,
    /// The project-level config file, where the client reads one.
    pub project: Option<ConfigFile>,
    /// The files' format.
    pub format: Format,
    /// The keys from the top of the file to the map of servers (`["mcpServers"]`).
    pub key: &'static [&'static str],
    /// How one server entry looks.
    pub entry: EntryShape,
    /// Signs that the client is installed here.
    pub markers: &'static [Marker],
    /// The documentation the row follows.
    pub source: &'static str,
}

/// Every client, in the order listed.
pub const CLIENTS: &[Client] = &[
    // Claude Code: user scope is the top-level `mcpServers` of `~/.claude.json` (kept in
    // `$CLAUDE_CONFIG_DIR` when that is set), project scope `.mcp.json` at the project
    // root; `claude mcp add` writes `"type": "stdio"`.
    Client {
        name: "claude-code",
        title: "Claude Code",
        user: ConfigFile {
            root: Root::VarOrHome {
                var: "CLAUDE_CONFIG_DIR",
                home: "",
            },
            names: &[".claude.json"],
        },
        project: Some(ConfigFile {
            root: Root::Project(""),
            names: &[".mcp.json"],
        }),
        format: Format::Json,
        key: &["mcpServers"],
        entry: EntryShape::StdioCommandArgs,
        markers: &[
            Marker::Folder(Root::Home(".claude")),
            Marker::Command("claude"),
        ],
        source: "https://code.claude.com/docs/en/mcp",
    },
    // Codex: `[mcp_servers.<name>]` tables with `command` and `args` in
    // `$CODEX_HOME/config.toml` (default `~/.codex`), and in `.codex/config.toml` of a
    // trusted project.
    Client {
        name: "codex",
        title: "Codex",
        user: ConfigFile {
            root: Root::VarOrHome {
                var: "CODEX_HOME",
                home: ".codex",
            },
            names: &["config.toml"],
        },
        project: Some(ConfigFile {
            root: Root::Project(".codex"),
            names: &["config.toml"],
        }),
        format: Format::Toml,
        key: &["mcp_servers"],
        entry: EntryShape::CommandArgs,
        markers: &[
            Marker::Folder(Root::VarOrHome {
                var: "CODEX_HOME",
                home: ".codex",
            }),
            Marker::Command("codex"),
        ],
        source: "https://developers.openai.com/codex/mcp",
    },
    // Cursor: `mcpServers` in `~/.cursor/mcp.json` (global) or `.cursor/mcp.json`
    // (project).
    Client {
        name: "cursor",
        title: "Cursor",
        user: ConfigFile {
            root: Root::Home(".cursor"),
            names: &["mcp.json"],
        },
        project: Some(ConfigFile {
            root: Root::Project(".cursor"),
            names: &["mcp.json"],
        }),
        format: Format::Json,
        key: &["mcpServers"],
        entry: EntryShape::CommandArgs,
        markers: &[
            Marker::Folder(Root::Home(".cursor")),
            Marker::Command("cursor"),
        ],
        source: "https://cursor.com/docs/mcp",
    },
    // Gemini CLI: `mcpServers` in the user settings file `~/.gemini/settings.json` or the
    // project's `.gemini/settings.json`.
    Client {
        name: "gemini-cli",
        title: "Gemini CLI",
        user: ConfigFile {
            root: Root::Home(".gemini"),
            names: &["settings.json"],
        },
        project: Some(ConfigFile {
            root: Root::Project(".gemini"),
            names: &["settings.json"],
        }),
        format: Format::Json,
        key: &["mcpServers"],
        entry: EntryShape::CommandArgs,
        markers: &[
            Marker::Folder(Root::Home(".gemini")),
            Marker::Command("gemini"),
        ],
        source: "https://geminicli.com/docs/tools/mcp-server",
    },
    // VS Code (Copilot agent mode): top-level `servers` in `mcp.json` of the user profile
    // (`<config>/Code/User/mcp.json`) or the workspace's `.vscode/mcp.json`; a stdio
    // server needs `"type": "stdio"`.
    Client {
        name: "vscode",
        title: "VS Code",
        user: ConfigFile {
            root: Root::AppConfig("Code/User"),
            names: &["mcp.json"],
        },
        project: Some(ConfigFile {
            root: Root::Project(".vscode"),
            names: &["mcp.json"],
        }),
        format: Format::Json,
        key: &["servers"],
        entry: EntryShape::StdioCommandArgs,
        markers: &[
            Marker::Folder(Root::AppConfig("Code")),
            Marker::Command("code"),
        ],
        source: "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
    },
    // Claude Desktop: `mcpServers` in `claude_desktop_config.json` of its folder in the
    // platform's configuration folder (macOS `~/Library/Application Support/Claude`,
    // Windows `%APPDATA%\Claude`; `~/.config/Claude` on Linux, where builds exist).
    Client {
        name: "claude-desktop",
        title: "Claude Desktop",
        user: ConfigFile {
            root: Root::AppConfig("Claude"),
            names: &["claude_desktop_config.json"],
        },
        project: None,
        format: Format::Json,
        key: &["mcpServers"],
        entry: EntryShape::CommandArgs,
        markers: &[Marker::Folder(Root::AppConfig("Claude"))],
        source: "https://modelcontextprotocol.io/quickstart/user",
    },
    // opencode: servers are keys of `mcp`, a local one `{"type": "local", "command":
    // [...], "enabled": true}`, in `~/.config/opencode/opencode.json` (or `.jsonc`) and
    // the project's `opencode.json`. OpenCode 2 also reads this (V1) shape
    // (https://opencode.ai/docs/migrate-v1); its native `mcp.servers` would break V1.
    Client {
        name: "opencode",
        title: "opencode",
        user: ConfigFile {
            root: Root::XdgConfig("opencode"),
            names: &["opencode.json", "opencode.jsonc"],
        },
        project: Some(ConfigFile {
            root: Root::Project(""),
            names: &["opencode.json", "opencode.jsonc"],
        }),
        format: Format::Json,
        key: &["mcp"],
        entry: EntryShape::LocalCommandArray,
        markers: &[
            Marker::Folder(Root::XdgConfig("opencode")),
            Marker::Command("opencode"),
        ],
        source: "https://opencode.ai/docs/mcp-servers",
    },
    // Windsurf (Cascade): `mcpServers` in `~/.codeium/windsurf/mcp_config.json`, the
    // same schema as Claude Desktop's; no project-level file.
    Client {
        name: "windsurf",
        title: "Windsurf",
        user: ConfigFile {
            root: Root::Home(".codeium/windsurf"),
            names: &["mcp_config.json"],
        },
        project: None,
        format: Format::Json,
        key: &["mcpServers"],
        entry: EntryShape::CommandArgs,
        markers: &[
            Marker::Folder(Root::Home(".codeium/windsurf")),
            Marker::Command("windsurf"),
        ],
        source: "https://docs.windsurf.com/windsurf/cascade/mcp",
    },
];

/// The client named `name` (`claude-code`), if there is one.
pub fn find(name: &str) -> Option<&'static Client> {
    CLIENTS.iter().find(|c| c.name == name)
}

// What an environment says of one client: its config file, whether it is installed
// (a folder, or a command on `PATH`).
impl Environment {
    /// The path of `file`: the first of its names that exists, else the first name.
    pub fn file(&self, file: &ConfigFile) -> Option<PathBuf> {
        let dir = self.resolve(file.root)?;
        let candidates: Vec<PathBuf> = file.names.iter().map(|n| dir.join(n)).collect();
        candidates
            .iter()
            .find(|p| p.exists())
            .or(candidates.first())
            .cloned()
    }

    /// The first sign that `client` is installed: a folder that exists, or a command
    /// found on `PATH` (as `` `name` on PATH ``); `None` when there is none.
    pub fn installed(&self, client: &Client) -> Option<String> {
        client.markers.iter().find_map(|marker| match marker {
            Marker::Folder(root) => self
                .resolve(*root)
                .filter(|dir| dir.is_dir())
                .map(|dir| format!("`{}`", dir.display())),
            Marker::Command(name) => self.on_path(name).map(|_| format!("`{name}` on PATH")),
        })
    }

    /// Where [`Environment::installed`] looks for `client`, for messages: its folders
    /// (`` `/home/me/.cursor` ``) and commands (`` `cursor` on PATH ``).
    pub fn looked_for(&self, client: &Client) -> Vec<String> {
        client
            .markers
            .iter()
            .filter_map(|marker| match marker {
                Marker::Folder(root) => self
                    .resolve(*root)
                    .map(|dir| format!("`{}`", dir.display())),
                Marker::Command(name) => Some(format!("`{name}` on PATH")),
            })
            .collect()
    }

    /// The executable `name` in a folder of `PATH`, if any.
    fn on_path(&self, name: &str) -> Option<PathBuf> {
        let path = self.vars.get("PATH")?;
        std::env::split_paths(path)
            .filter(|dir| dir.is_absolute())
            .flat_map(|dir| {
                EXECUTABLE_SUFFIXES
                    .iter()
                    .map(move |suffix| dir.join(format!("{name}{suffix}")))
            })
            .find(|p| is_executable(p))
    }
}

/// File name endings of executables on this platform.
#[cfg(windows)]
const EXECUTABLE_SUFFIXES: &[&str] = &[".exe", ".cmd", ".bat", ""];
#[cfg(not(windows))]
const EXECUTABLE_SUFFIXES: &[&str] = &[""];

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The README's table of clients (markdown, header included, one line per client), from
/// [`CLIENTS`].
pub fn readme_table() -> String {
    let mut out = String::from(
        "| client | `skills setup …` | user config | `--project` | servers under | documentation |\n\
         |---|---|---|---|---|---|\n",
    );
    for client in CLIENTS {
        let project = client
            .project
            .map_or_else(|| "none".to_owned(), |file| describe(&file));
        out.push_str(&format!(
            "| {} | `{}` | {} | {project} | `{}` | <{}> |\n",
            client.title,
            client.name,
            describe(&client.user),
            client.key.join("."),
            client.source,
        ));
    }
    out
}

/// A config file for the README: `` `~/.cursor/mcp.json` ``, `` `~/.codex/config.toml`
/// (`$CODEX_HOME`) `` (the variable that moves the folder), `` `<config>/Claude/…` ``.
fn describe(file: &ConfigFile) -> String {
    let (dir, var) = file.root.shown();
    let paths = file
        .names
        .iter()
        .map(|name| format!("`{}`", crate::places::join(&dir, name)))
        .collect::<Vec<_>>()
        .join(" or ");
    match var {
        Some(var) => format!("{paths} (`${var}`)"),
        None => paths,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &Path) -> Environment {
        Environment {
            home: Some(home.to_path_buf()),
            config: Some(home.join(".config")),
            project: home.join("project"),
            vars: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn names_are_unique_and_every_row_has_a_server_key() {
        for (i, client) in CLIENTS.iter().enumerate() {
            assert!(!client.key.is_empty(), "{}", client.name);
            assert!(!client.user.names.is_empty(), "{}", client.name);
            assert!(
                CLIENTS[i + 1..].iter().all(|c| c.name != client.name),
                "{} twice",
                client.name
            );
            assert_eq!(find(client.name).map(|c| c.name), Some(client.name));
        }
    }

    #[test]
    fn paths_follow_home_variables_and_existing_names() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut e = env(tmp.path());
        let claude = find("claude-code").expect("claude-code row");
        assert_eq!(e.file(&claude.user), Some(tmp.path().join(".claude.json")));
        e.vars
            .insert("CLAUDE_CONFIG_DIR".into(), "/elsewhere".into());
        assert_eq!(
            e.file(&claude.user),
            Some(PathBuf::from("/elsewhere/.claude.json"))
        );
        let opencode = find("opencode").expect("opencode row");
        let dir = tmp.path().join(".config/opencode");
        assert_eq!(e.file(&opencode.user), Some(dir.join("opencode.json")));
        fs_err::create_dir_all(&dir).expect("mkdir");
        fs_err::write(dir.join("opencode.jsonc"), "{}").expect("write");
        assert_eq!(e.file(&opencode.user), Some(dir.join("opencode.jsonc")));
        assert_eq!(e.installed(opencode), Some(format!("`{}`", dir.display())));
        assert_eq!(e.installed(find("windsurf").expect("row")), None);
    }

    #[test]
    fn entry_shapes() {
        assert_eq!(
            Value::Object(EntryShape::LocalCommandArray.fields("/bin/skills", &["serve"])),
            serde_json::json!({"type": "local", "command": ["/bin/skills", "serve"], "enabled": true})
        );
        assert_eq!(
            Value::Object(EntryShape::StdioCommandArgs.fields("/bin/skills", &["serve"])),
            serde_json::json!({"type": "stdio", "command": "/bin/skills", "args": ["serve"]})
        );
    }
}
