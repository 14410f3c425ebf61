//! The embedding model travels with the binary: an installed binary
//! (`<prefix>/bin/skills`, the layout `scripts/install` writes) finds the model in
//! `<prefix>/share/skills/model` with an empty home, and with no model anywhere
//! `skills ingest` says embeddings were skipped and why, and semantic-search names the
//! missing model instead of asking for an ingest.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The model this machine has (`$SKILLS_MODEL_DIR`, else `~/.cache/skills/model`), or
/// `None` after recording the test as not run.
fn machine_model() -> Option<PathBuf> {
    let dir = std::env::var_os("SKILLS_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".cache/skills/model")))?;
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        common::not_run(&format!(
            "no embedding model in {} (run scripts/fetch-model)",
            dir.display()
        ));
        None
    }
}

/// A temporary install prefix (not created), an empty home and a data folder (not
/// created).
struct Machine {
    _tmp: tempfile::TempDir,
    prefix: PathBuf,
    home: PathBuf,
    data: PathBuf,
}

impl Machine {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        fs_err::create_dir_all(&home).unwrap();
        Self {
            prefix: tmp.path().join("prefix"),
            data: tmp.path().join("data"),
            home,
            _tmp: tmp,
        }
    }

    /// `bin ARGS` with this home (also the working folder), this data folder, the
    /// bundled skills and no model variable.
    fn command(&self, bin: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(&self.home)
            .env("HOME", &self.home)
            .env("SKILLS_DATA_DIR", &self.data)
            .env("SKILLS_DIR", common::repo().join("skills"))
            .env_remove("SKILLS_MODEL_DIR")
            .env_remove("SKILLS_EMBEDDER")
            .env_remove("XDG_DATA_HOME");
        cmd
    }
}

/// `cmd` (a `skills` command) importing the bundled Claude Code sample quietly, which
/// must succeed: its stdout.
fn ingest_sample(cmd: &mut Command) -> String {
    let sample = common::repo().join("data/sample/claude-code");
    common::cli::stdout_of_success(cmd.args(["ingest", "--quiet", sample.to_str().unwrap()]))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A copy of the binary at `<prefix>/bin/skills`.
fn install_binary(prefix: &Path) -> PathBuf {
    let bin = prefix.join("bin/skills");
    fs_err::create_dir_all(bin.parent().unwrap()).unwrap();
    fs_err::copy(env!("CARGO_BIN_EXE_skills"), &bin).unwrap();
    bin
}

#[test]
fn an_installed_binary_finds_the_model_beside_it_with_an_empty_home() {
    let Some(model) = machine_model() else {
        return;
    };
    let machine = Machine::new();
    let bin = install_binary(&machine.prefix);
    let installed = machine.prefix.join("share/skills/model");
    fs_err::create_dir_all(&installed).unwrap();
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        fs_err::copy(model.join(file), installed.join(file)).unwrap();
    }
    let said = ingest_sample(&mut machine.command(&bin, &[]));
    assert!(said.contains("embeddings: rebuilt"), "{said}");
    common::cli::ok(&mut machine.command(
        &bin,
        &[
            "run",
            "semantic-search",
            "--arg",
            "query=linking the database library",
        ],
    ));
    let status = machine
        .command(&bin, &["status", "--json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["model"]["found"], true);
    assert_eq!(
        fs_err::canonicalize(status["model"]["dir"].as_str().unwrap()).unwrap(),
        fs_err::canonicalize(&installed).unwrap()
    );
    assert_eq!(status["conversations"]["embeddings"]["state"], "current");
}

#[test]
fn without_a_model_ingest_says_embeddings_were_skipped_and_search_names_the_model() {
    let machine = Machine::new();
    let bin = install_binary(&machine.prefix);
    let summary = ingest_sample(&mut machine.command(&bin, &[]));
    let cache = machine.home.join(".cache/skills/model");
    assert!(
        summary.contains(&format!("embeddings: skipped — no embedding model (all-MiniLM-L6-v2, static) in `{}`; run `scripts/fetch-model`", cache.display())),
        "{summary}"
    );
    let search = machine
        .command(&bin, &["run", "semantic-search", "--arg", "query=linking"])
        .output()
        .unwrap();
    assert!(!search.status.success());
    let said = format!(
        "{}{}",
        stdout(&search),
        String::from_utf8_lossy(&search.stderr)
    );
    assert!(
        said.contains("no embedding model (all-MiniLM-L6-v2, static)"),
        "{said}"
    );
    assert!(!said.contains("run `skills ingest`"), "{said}");
}

/// Every file below `dir`, relative to it, sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Issue 30: `scripts/install` into a fresh `PREFIX` (the binary this test run built,
/// `SKILLS_INSTALL_BIN`, so nothing is compiled again) copies the whole model folder,
/// subfolders included; the installed binary, run with an empty `HOME`, imports with
/// embeddings and `semantic-search` answers.
#[cfg(unix)]
#[test]
fn scripts_install_into_a_fresh_prefix_then_semantic_search_answers_with_an_empty_home() {
    let Some(model) = machine_model() else {
        return;
    };
    let machine = Machine::new();
    let prefix = &machine.prefix;
    common::cli::ok(
        Command::new("bash")
            .arg(common::repo().join("scripts/install"))
            .env("PREFIX", prefix)
            .env("SKILLS_INSTALL_BIN", env!("CARGO_BIN_EXE_skills"))
            .env("SKILLS_MODEL_DIR", &model),
    );
    let installed = prefix.join("share/skills/model");
    assert_eq!(files_below(&installed), files_below(&model));
    let bin = prefix.join("bin/skills");
    assert!(prefix
        .join("share/skills/skills/semantic-search/SKILL.md")
        .is_file());

    // The installed binary with an empty home and no SKILLS_DIR: its bundled skills.
    let command = |args: &[&str]| {
        let mut cmd = machine.command(&bin, args);
        cmd.env_remove("SKILLS_DIR").env_remove("XDG_CACHE_HOME");
        cmd
    };
    let said = ingest_sample(&mut command(&[]));
    assert!(said.contains("embeddings: rebuilt"), "{said}");
    let search = common::cli::ok(&mut command(&[
        "run",
        "semantic-search",
        "--json",
        "--arg",
        "query=linking the database library",
        "--arg",
        "mode=semantic",
    ]));
    let answer: serde_json::Value = serde_json::from_slice(&search.stdout).unwrap();
    assert!(
        answer.to_string().contains("conversation_id"),
        "no rows: {answer}"
    );
}
