//! Snapshots of the real `skills` binary's output: help, `list`, `show`, `run`, imports
//! and the main error messages, each with its exit code. Stores are built in the test
//! from `tests/conformance/fixtures/` through the real importers; temp folders, the
//! source tree and the version are filtered so the snapshots hold on any clone.
//!
//! After an intended change: `cargo insta review` (or `INSTA_UPDATE=always cargo test
//! --release --test cli_snapshots`) and commit `tests/snapshots/`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Environment variables of the developer's shell that would change the output.
const CLEARED_ENV: [&str; 7] = [
    "SKILLS_DIR",
    "SKILLS_DATA_DIR",
    "SKILLS_FIXTURES_DIR",
    "SKILLS_NOW",
    "SKILLS_EMBEDDER",
    "SKILLS_CHATGPT_EXPORT",
    "SKILLS_CLAUDE_AI_EXPORT",
];

/// One invocation of the binary: arguments, extra environment, and whether its
/// stderr belongs in the snapshot.
struct Call<'a> {
    args: &'a [&'a str],
    data: Option<&'a Path>,
    env: &'a [(&'a str, &'a str)],
    stderr: bool,
}

impl<'a> Call<'a> {
    fn new(args: &'a [&'a str]) -> Self {
        Self {
            args,
            data: None,
            env: &[],
            stderr: true,
        }
    }

    fn data(mut self, dir: &'a Path) -> Self {
        self.data = Some(dir);
        self
    }

    fn env(mut self, env: &'a [(&'a str, &'a str)]) -> Self {
        self.env = env;
        self
    }

    /// Leaves stderr out (notes other work may add to a command's stderr).
    fn without_stderr(mut self) -> Self {
        self.stderr = false;
        self
    }

    fn output(&self) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_skills"));
        for var in CLEARED_ENV {
            command.env_remove(var);
        }
        command
            .args(self.args)
            .current_dir(root())
            // No embedding model: imports and searches are the same on every machine.
            .env("SKILLS_MODEL_DIR", no_model_dir())
            .env("SKILLS_DIR", root().join("skills"));
        if let Some(dir) = self.data {
            command.env("SKILLS_DATA_DIR", dir);
        }
        for (key, value) in self.env {
            command.env(key, value);
        }
        command.output().unwrap()
    }

    /// `$ skills ARGS`, the exit code, stdout and (unless left out) stderr.
    fn transcript(&self) -> String {
        let o = self.output();
        let mut text = format!(
            "$ skills {}\nexit: {}\n--- stdout\n{}",
            self.args.join(" "),
            o.status.code().map_or("signal".into(), |c| c.to_string()),
            String::from_utf8_lossy(&o.stdout)
        );
        if self.stderr {
            text.push_str("--- stderr\n");
            text.push_str(&String::from_utf8_lossy(&o.stderr));
        }
        text
    }
}

/// A temp folder for the whole test binary, holding the stores built from the fixtures
/// and the (absent) model folder.
fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn no_model_dir() -> PathBuf {
    scratch().join("no-model")
}

/// A data folder with the conformance fixtures imported: transcripts into the
/// conversations store, memory files into the memories store.
fn fixture_data() -> &'static Path {
    static DONE: OnceLock<PathBuf> = OnceLock::new();
    DONE.get_or_init(|| {
        let data = scratch().join("fixture-data");
        let fixtures = root().join("tests/conformance/fixtures");
        for args in [
            vec![
                "ingest",
                "--quiet",
                "--json",
                "tests/conformance/fixtures/transcripts",
            ],
            vec![
                "memo",
                "import",
                "--json",
                "tests/conformance/fixtures/memories",
            ],
        ] {
            let o = Call::new(&args).data(&data).output();
            assert!(
                o.status.success(),
                "{args:?} on {}: {}",
                fixtures.display(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        data
    })
}

/// A data folder with no stores in it.
fn empty_data() -> PathBuf {
    scratch().join("empty-data")
}

/// Escapes `text` for use as a literal in an insta filter (a regex).
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

// Memories of the fixtures without a date of their own are dated by their file's
// modification time, so the memo-search cases query JSONL memories, which carry ids and dates.

/// Snapshots `text` as `name` with temp folders, the source tree, the version and the
/// target triple replaced.
fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(&literal(&scratch().display().to_string()), "[TMP]");
    settings.add_filter(&literal(&root().display().to_string()), "[ROOT]");
    settings.add_filter(
        &literal(&format!("skills {}", env!("CARGO_PKG_VERSION"))),
        "skills [VERSION]",
    );
    settings.add_filter(&literal(env!("SKILLS_TARGET")), "[TARGET]");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn help_of_every_command() {
    for (name, args) in [
        ("help", vec!["--help"]),
        ("help_list", vec!["list", "--help"]),
        ("help_show", vec!["show", "--help"]),
        ("help_validate", vec!["validate", "--help"]),
        ("help_ingest", vec!["ingest", "--help"]),
        ("help_run", vec!["run", "--help"]),
        ("help_verify", vec!["verify", "--help"]),
        ("help_serve", vec!["serve", "--help"]),
        ("help_new", vec!["new", "--help"]),
        ("help_memo", vec!["memo", "--help"]),
        ("help_memo_import", vec!["memo", "import", "--help"]),
        ("help_memo_add", vec!["memo", "add", "--help"]),
        ("help_docs", vec!["docs", "--help"]),
        ("help_setup", vec!["setup", "--help"]),
        // `-V`: `--version` adds this machine's paths (tests/release.rs checks it).
        ("version", vec!["-V"]),
    ] {
        // Help shows `[env: SKILLS_DIR=…]` when the variable is set: leave it unset.
        let o = Command::new(env!("CARGO_BIN_EXE_skills"))
            .args(&args)
            .env_remove("SKILLS_DIR")
            .env_remove("SKILLS_DATA_DIR")
            .env_remove("SKILLS_FIXTURES_DIR")
            .output()
            .unwrap();
        let text = format!(
            "$ skills {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
            args.join(" "),
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        snapshot(name, &text);
    }
}

#[test]
fn list_and_show() {
    let data = empty_data();
    for (name, args) in [
        ("list", vec!["list"]),
        ("list_json", vec!["list", "--json"]),
        ("show", vec!["show", "brain-stats"]),
        ("show_by_tool_name", vec!["show", "brain_stats"]),
        ("show_json", vec!["show", "brain-stats", "--json"]),
        ("validate", vec!["validate"]),
    ] {
        snapshot(name, &Call::new(&args).data(&data).transcript());
    }
}

#[test]
fn run_on_fixture_stores() {
    let data = fixture_data();
    let clock: &[(&str, &str)] = &[
        ("SKILLS_NOW", "2026-07-03T12:00:00Z"),
        ("SKILLS_EMBEDDER", "none"),
    ];
    let cases: [(&str, Vec<&str>, bool); 8] = [
        (
            "run_search_conversations",
            vec!["run", "search-conversations", "--arg", "term=deadline"],
            false,
        ),
        (
            "run_search_conversations_json",
            vec![
                "run",
                "search-conversations",
                "--json",
                "--args-json",
                r#"{"term": "rpath", "limit": 2}"#,
            ],
            false,
        ),
        (
            "run_search_conversations_no_match",
            vec![
                "run",
                "search-conversations",
                "--arg",
                "term=zzqx-not-there",
            ],
            false,
        ),
        (
            "run_memo_search",
            vec![
                "run",
                "memo-search",
                "--arg",
                "query=kubernetes node pools",
                "--arg",
                "mode=bm25",
                "--arg",
                "limit=3",
            ],
            true,
        ),
        (
            "run_memo_search_json",
            vec![
                "run",
                "memo-search",
                "--json",
                "--arg",
                "query=pod disruption",
                "--arg",
                "mode=exact",
                "--arg",
                "limit=2",
            ],
            true,
        ),
        (
            // No model here: semantic-search is skipped (and named in notes); the
            // memory and keyword rows show their own explanation inside each item's.
            "run_recall_explain_json",
            vec![
                "run",
                "recall",
                "--json",
                "--arg",
                "question=when did we size the kubernetes node pools",
                "--arg",
                "term=deadline",
                "--arg",
                "per_source=2",
                "--arg",
                "max_tokens=300",
                "--arg",
                "explain=true",
            ],
            false,
        ),
        ("run_brain_stats", vec!["run", "brain-stats"], true),
        (
            "run_brain_stats_by_role",
            vec!["run", "brain_stats", "--arg", "by=role"],
            true,
        ),
    ];
    for (name, args, stderr) in cases {
        let call = Call::new(&args).data(data).env(clock);
        let call = if stderr { call } else { call.without_stderr() };
        snapshot(name, &call.transcript());
    }
}

#[test]
fn imports_report_what_they_did() {
    let data = scratch().join("import-data");
    for (name, args) in [
        (
            "ingest_fixtures",
            vec![
                "ingest",
                "--quiet",
                "tests/conformance/fixtures/transcripts",
            ],
        ),
        (
            "ingest_again_reads_nothing",
            vec![
                "ingest",
                "--quiet",
                "tests/conformance/fixtures/transcripts",
            ],
        ),
        (
            "memo_import_fixtures",
            vec!["memo", "import", "tests/conformance/fixtures/memories"],
        ),
        (
            "memo_add",
            vec![
                "memo",
                "add",
                "--title",
                "Snapshots",
                "--body",
                "CLI output is snapshotted with insta.",
                "--type",
                "decision",
            ],
        ),
    ] {
        let text = Call::new(&args).data(&data).transcript();
        // A new memory's id is random.
        let text = if name == "memo_add" {
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            for line in &mut lines {
                if line.starts_with("added ") {
                    *line = "added [ID]".into();
                }
            }
            lines.join("\n") + "\n"
        } else {
            text
        };
        snapshot(name, &text);
    }
}

#[test]
fn error_messages_and_exit_codes() {
    let fixtures = fixture_data();
    let empty = empty_data();
    // Commands that create a store get their own folder, so `empty` stays empty.
    let writes = scratch().join("write-data");
    let cases: [(&str, Vec<&str>, &Path); 15] = [
        (
            "error_unknown_skill",
            vec!["run", "no-such-skill"],
            fixtures,
        ),
        (
            "error_show_unknown_skill",
            vec!["show", "no-such-skill"],
            fixtures,
        ),
        (
            "error_argument_out_of_range",
            vec!["run", "search-conversations", "--arg", "limit=0"],
            fixtures,
        ),
        (
            "error_unknown_argument",
            vec!["run", "search-conversations", "--arg", "colour=red"],
            fixtures,
        ),
        (
            "error_arg_without_equals",
            vec!["run", "search-conversations", "--arg", "term"],
            fixtures,
        ),
        (
            "error_args_json_invalid",
            vec!["run", "search-conversations", "--args-json", "{bad"],
            fixtures,
        ),
        (
            "error_conversations_store_missing",
            vec!["run", "search-conversations", "--arg", "term=x"],
            &empty,
        ),
        (
            "error_memories_store_missing",
            vec!["run", "memo-search", "--arg", "query=x"],
            &empty,
        ),
        (
            "error_sql_skill_store_missing",
            vec!["run", "brain-stats"],
            &empty,
        ),
        ("error_new_bad_name", vec!["new", "Bad_Name"], &empty),
        ("error_docs_without_out", vec!["docs"], &empty),
        (
            "error_serve_not_loopback",
            vec!["serve", "--http", "0.0.0.0:0"],
            &empty,
        ),
        (
            "error_memo_add_empty",
            vec!["memo", "add", "--body", ""],
            &writes,
        ),
        (
            "error_verify_unknown_skill",
            vec!["verify", "no-such-skill"],
            &empty,
        ),
        (
            "error_ingest_missing_path",
            vec!["ingest", "--quiet", "no/such/path"],
            &writes,
        ),
    ];
    for (name, args, data) in cases {
        snapshot(name, &Call::new(&args).data(data).transcript());
    }
    let bad_clock = Call::new(&["run", "brain-stats"])
        .data(fixtures)
        .env(&[("SKILLS_NOW", "yesterday")]);
    snapshot("error_bad_skills_now", &bad_clock.transcript());
    let bad_embedder = Call::new(&["list"])
        .data(fixtures)
        .env(&[("SKILLS_EMBEDDER", "minilm")]);
    snapshot("error_bad_skills_embedder", &bad_embedder.transcript());
}

#[test]
fn each_missing_store_names_the_command_that_creates_it() {
    let empty = empty_data();
    for (skill, arg, command) in [
        ("memo-search", "query=x", "skills memo import"),
        ("search-conversations", "term=x", "skills ingest"),
    ] {
        let o = Call::new(&["run", skill, "--arg", arg])
            .data(&empty)
            .output();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("run `{command}` first")),
            "{stderr}"
        );
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("hint: ") && l.contains(command)),
            "{stderr}"
        );
    }
}

/// A skills folder given by `--skills-dir` or `SKILLS_DIR` that cannot be read is a usage
/// error naming it (exit 2), for every command that reads skills; the default folder
/// still applies when neither is given.
#[test]
fn a_skills_folder_that_cannot_be_read_is_a_usage_error() {
    let data = empty_data();
    for (name, args, env) in [
        (
            "error_skills_dir_missing",
            vec!["--skills-dir", "no/such/folder", "list"],
            None,
        ),
        (
            "error_skills_dir_env_missing",
            vec!["run", "brain-stats"],
            Some("no/such/folder"),
        ),
        (
            "error_skills_dir_not_a_folder",
            vec!["--skills-dir", "README.md", "validate"],
            None,
        ),
    ] {
        let env_pairs = env.map(|dir| [("SKILLS_DIR", dir)]);
        let call = Call::new(&args).data(&data);
        let call = match &env_pairs {
            Some(pairs) => call.env(pairs),
            None => call,
        };
        snapshot(name, &call.transcript());
    }
    for args in [
        vec!["show", "brain-stats"],
        vec!["verify", "brain-stats"],
        vec!["docs", "--format", "json"],
        vec!["serve", "--no-watch"],
    ] {
        let o = Call::new(&args)
            .data(&data)
            .env(&[("SKILLS_DIR", "no/such/folder")])
            .output();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("skills folder `no/such/folder`") && stderr.contains("does not exist"),
            "{args:?}: {stderr}"
        );
    }
}
