//! The embedding model travels with the binary: an installed binary
//! (`<prefix>/bin/skills`, the layout `scripts/install` writes) finds the model in
//! `<prefix>/share/skills/model` with an empty home, and with no model anywhere
//! `skills ingest` says embeddings were skipped and why, and semantic-search names the
//! missing model instead of asking for an ingest.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The model this machine has (`$SKILLS_MODEL_DIR`, else `~/.cache/skills/model`), or
/// `None` after saying the test is skipped.
fn machine_model() -> Option<PathBuf> {
    let dir = std::env::var_os("SKILLS_MODEL_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".cache/skills/model")))?;
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        println!(
            "skipped: no embedding model in {} (run scripts/fetch-model)",
            dir.display()
        );
        None
    }
}

/// Runs `bin ARGS` with home `home`, data folder `data` and no model variable.
fn run(bin: &Path, home: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("SKILLS_DATA_DIR", data)
        .env("SKILLS_DIR", root().join("skills"))
        .env_remove("SKILLS_MODEL_DIR")
        .env_remove("SKILLS_EMBEDDER")
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap()
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
    let tmp = tempfile::tempdir().unwrap();
    let (prefix, home, data) = (
        tmp.path().join("prefix"),
        tmp.path().join("home"),
        tmp.path().join("data"),
    );
    fs_err::create_dir_all(&home).unwrap();
    let bin = install_binary(&prefix);
    let installed = prefix.join("share/skills/model");
    fs_err::create_dir_all(&installed).unwrap();
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        fs_err::copy(model.join(file), installed.join(file)).unwrap();
    }
    let sample = root().join("data/sample/claude-code");
    let ingest = run(
        &bin,
        &home,
        &data,
        &["ingest", "--quiet", sample.to_str().unwrap()],
    );
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    assert!(
        stdout(&ingest).contains("embeddings: rebuilt"),
        "{}",
        stdout(&ingest)
    );
    let search = run(
        &bin,
        &home,
        &data,
        &[
            "run",
            "semantic-search",
            "--arg",
            "query=linking the database library",
        ],
    );
    assert!(
        search.status.success(),
        "{}{}",
        stdout(&search),
        String::from_utf8_lossy(&search.stderr)
    );
    let status = run(&bin, &home, &data, &["status", "--json"]);
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
    let tmp = tempfile::tempdir().unwrap();
    let (prefix, home, data) = (
        tmp.path().join("prefix"),
        tmp.path().join("home"),
        tmp.path().join("data"),
    );
    fs_err::create_dir_all(&home).unwrap();
    let bin = install_binary(&prefix);
    let sample = root().join("data/sample/claude-code");
    let ingest = run(
        &bin,
        &home,
        &data,
        &["ingest", "--quiet", sample.to_str().unwrap()],
    );
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    let cache = home.join(".cache/skills/model");
    let summary = stdout(&ingest);
    assert!(
        summary.contains(&format!("embeddings: skipped — no embedding model (all-MiniLM-L6-v2, static) in `{}`; run `scripts/fetch-model`", cache.display())),
        "{summary}"
    );
    let search = run(
        &bin,
        &home,
        &data,
        &["run", "semantic-search", "--arg", "query=linking"],
    );
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
