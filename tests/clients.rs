//! Real clients, installed from the registries at pinned versions by
//! `scripts/install-test-clients` (`tests/clients/package.json`, `requirements.txt`),
//! against the built `skills serve`:
//! - the TypeScript SDK v2 `SkillsClient`: list, get, read and verify every file;
//! - fastmcp's skills client (over the Python `mcp` SDK): `list_skills`, `get_skill`,
//!   `read_skill` with digest and frontmatter verification;
//! - the Python `mcp` SDK through the save → recall loop (`memo_save`, `memo_search`,
//!   `recall`, then a new server process);
//! - google-genai's MCP converter over every served tool;
//! - `skills-ref validate` over `skills export --agent-skills` output (and its
//!   rejection of the bundled documents);
//! - the official conformance suite: its `sep-2640-*` server scenarios pass, and the
//!   rest of its active server suite fails only where `conformance-baseline.yml` says.
//!
//! A test whose client is not installed is reported as not run, saying which (CI
//! installs them).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// `$SKILLS_CLIENTS_DIR`, else `$SKILLS_CACHE/clients`, else `~/.cache/skills/clients`.
fn clients_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SKILLS_CLIENTS_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("SKILLS_CACHE").map_or_else(
        || dirs::home_dir().unwrap_or_default().join(".cache/skills"),
        PathBuf::from,
    );
    cache.join("clients")
}

fn node() -> Option<PathBuf> {
    let node = clients_dir().join("node/node_modules/.bin/node");
    node.is_file().then_some(node)
}

fn node_module(path: &str) -> Option<PathBuf> {
    let p = clients_dir().join("node/node_modules").join(path);
    p.exists().then_some(p)
}

/// The Python clients [`python`] runs, as [`skip`] names them.
const PY_CLIENTS: &str = "the Python clients (mcp 2.3.0, fastmcp 4.2.3)";

fn python() -> Option<PathBuf> {
    let py = clients_dir().join("py/venv/bin/python");
    py.is_file().then_some(py)
}

/// Records the test as not run: client `what` is not installed.
fn skip(what: &str) {
    common::not_run(&format!(
        "{what} is not installed in `{}` (run scripts/install-test-clients)",
        clients_dir().display()
    ));
}

/// Runs a client script with the skills binary as its server command; returns its
/// JSON summary (stdout) after checking it succeeded.
fn run_client(mut cmd: Command, data: &Path) -> Value {
    cmd.arg(env!("CARGO_BIN_EXE_skills"))
        .args([
            "--skills-dir",
            common::repo().join("skills").to_str().unwrap(),
            "serve",
            "--no-ingest",
        ])
        .env("SKILLS_DATA_DIR", data)
        .env_remove("SKILLS_DIR")
        .stdin(Stdio::null());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| {
        panic!("client printed no JSON summary ({e})\nstdout: {stdout}\nstderr: {stderr}")
    })
}

/// Runs the Python client `script` (in `tests/clients`) with [`run_client`]: its
/// summary, or `None` (recorded as not run: `what` is not installed) when the Python
/// clients are not installed.
fn python_client(script: &str, what: &str, data: &Path) -> Option<Value> {
    let Some(python) = python() else {
        skip(what);
        return None;
    };
    let mut cmd = Command::new(python);
    cmd.arg(common::repo().join("tests/clients").join(script));
    Some(run_client(cmd, data))
}

fn skill_folders() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(common::repo().join("skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn typescript_sdk_skills_client_lists_gets_and_verifies_every_skill() {
    let (Some(node), Some(_)) = (node(), node_module("@modelcontextprotocol/client")) else {
        return skip("the TypeScript SDK (@modelcontextprotocol/client 2.4.0)");
    };
    let data = tempfile::tempdir().unwrap();
    // ES modules resolve imports beside the script: run a copy inside the install.
    let script = clients_dir().join("node/ts_skills.mjs");
    std::fs::copy(common::repo().join("tests/clients/ts_skills.mjs"), &script).unwrap();
    let mut cmd = Command::new(node);
    cmd.arg(&script).current_dir(clients_dir().join("node"));
    let summary = run_client(cmd, data.path());
    assert_eq!(summary["supported"], true);
    assert_eq!(summary["directoryRead"], true);
    assert!(summary["ttlMs"].as_u64().unwrap() > 0, "{summary}");
    let skills = summary["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, skill_folders());
    for s in skills {
        let name = s["name"].as_str().unwrap();
        let files = std::fs::read_dir(common::repo().join("skills").join(name))
            .unwrap()
            .count();
        assert_eq!(
            s["files"].as_array().unwrap().len(),
            files,
            "{name}: every file read and verified"
        );
        assert_eq!(s["frontmatterVerified"], true, "{name}");
        assert!(
            s["directory"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "SKILL.md"),
            "{s}"
        );
    }
    assert_eq!(
        summary["tamperedRejected"], true,
        "a wrong digest must fail: {summary}"
    );
    assert_eq!(summary["unknownRejected"], true, "{summary}");
}

#[test]
fn fastmcp_skills_client_lists_gets_and_reads_every_skill() {
    let data = tempfile::tempdir().unwrap();
    let Some(summary) = python_client("py_skills.py", PY_CLIENTS, data.path()) else {
        return;
    };
    let names = common::strings(&summary["skills"], "name");
    assert_eq!(names, skill_folders(), "{summary}");
    assert_eq!(
        summary["tools"].as_array().unwrap().len(),
        skill_folders().len()
    );
}

/// The save → recall loop from the Python `mcp` SDK: a memory saved with
/// `memo_save` (saving it again changes nothing) is found first by `memo_search` and
/// cited by `recall` within its budget in the same session, and found again by a new
/// server process over the same data.
#[test]
fn python_sdk_saves_a_memory_and_finds_it_again_after_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let Some(summary) = python_client("py_remember.py", PY_CLIENTS, data.path()) else {
        return;
    };
    let id = summary["saved"]["id"].as_str().unwrap();
    assert!(id.starts_with("m-"), "{summary}");
    assert_eq!(summary["saved"]["created"], true, "{summary}");
    assert_eq!(summary["again"]["id"], id, "{summary}");
    assert_eq!(summary["again"]["changed"], false, "{summary}");
    assert_eq!(summary["again"]["status"], "already stored", "{summary}");
    assert_eq!(summary["search_ids"][0], id, "{summary}");
    let recall = &summary["recall"];
    assert!(recall["tokens"].as_u64().unwrap() <= 300, "{summary}");
    let citation = recall["citations"][0].as_str().unwrap();
    assert!(
        citation.starts_with(&format!("[memory {id} · ")),
        "{summary}"
    );
    assert!(
        recall["pack"].as_str().unwrap().contains(citation),
        "{summary}"
    );
    assert_eq!(summary["after_restart_ids"][0], id, "{summary}");
    assert!(data.path().join("memories.sqlite").is_file());
}

#[test]
fn google_genai_converts_every_served_tool() {
    let data = tempfile::tempdir().unwrap();
    let Some(summary) = python_client("genai_schemas.py", "google-genai 3.3.0", data.path()) else {
        return;
    };
    assert_eq!(summary["converted"], summary["tools"], "{summary}");
    assert_eq!(
        summary["tools"].as_array().unwrap().len(),
        skill_folders().len()
    );
}

fn skills_ref(node: &Path, dir: &Path) -> Output {
    let cli = clients_dir().join("node/node_modules/skills-ref/dist/cli.js");
    Command::new(node)
        .arg(cli)
        .arg("validate")
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn skills_ref_accepts_every_exported_skill() {
    let (Some(node), Some(_)) = (node(), node_module("skills-ref")) else {
        return skip("skills-ref 0.1.5");
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("exported");
    common::cli::ok(
        Command::new(env!("CARGO_BIN_EXE_skills"))
            .args([
                "--skills-dir",
                common::repo().join("skills").to_str().unwrap(),
            ])
            .args(["export", "--agent-skills", out.to_str().unwrap()])
            .env("SKILLS_DATA_DIR", tmp.path().join("data")),
    );
    for name in skill_folders() {
        let original = skills_ref(&node, &common::repo().join("skills").join(&name));
        assert!(
            !original.status.success()
                && String::from_utf8_lossy(&original.stdout)
                    .to_string()
                    .chars()
                    .chain(String::from_utf8_lossy(&original.stderr).chars())
                    .collect::<String>()
                    .contains("Unexpected fields"),
            "{name}: skills-ref is expected to reject the bundled document"
        );
        let exported = skills_ref(&node, &out.join(&name));
        assert!(
            exported.status.success(),
            "{name}: {}{}",
            String::from_utf8_lossy(&exported.stdout),
            String::from_utf8_lossy(&exported.stderr)
        );
    }
}

/// Starts `skills serve --http 127.0.0.1:0` over `skills_dir`; returns the child and
/// the URL it prints on stderr.
fn serve_http(skills_dir: &Path, data: &Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut server = Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["--skills-dir", skills_dir.to_str().unwrap()])
        .args(["serve", "--no-ingest", "--http", "127.0.0.1:0"])
        .env("SKILLS_DATA_DIR", data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("http://"))
                .map(str::to_owned)
        })
        .unwrap();
    std::thread::spawn(move || lines.for_each(drop));
    (server, url)
}

/// Node and the installed conformance suite, or `None` (recorded as not run) when the
/// suite is not installed.
fn conformance_suite() -> Option<(PathBuf, PathBuf)> {
    let found = node().zip(node_module("@modelcontextprotocol/conformance"));
    if found.is_none() {
        skip("@modelcontextprotocol/conformance 0.2.0-alpha.12");
    }
    found
}

/// The suite's whole active server suite, in the default era and in 2026-07-28,
/// against the bundled skills: every failure must be one the baseline
/// (`tests/clients/conformance-baseline.yml`, each entry with its reason) expects, and
/// no baseline entry may have started passing.
#[test]
fn conformance_suite_other_scenarios_match_the_baseline() {
    let Some((node, suite)) = conformance_suite() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let (mut server, url) = serve_http(&common::repo().join("skills"), data.path());
    let baseline = common::repo().join("tests/clients/conformance-baseline.yml");
    let mut failed = Vec::new();
    for era in [None, Some("2026-07-28")] {
        let mut cmd = Command::new(&node);
        cmd.arg(suite.join("dist/index.js"))
            .args(["server", "--url", &url, "--expected-failures"])
            .arg(&baseline)
            .arg("-o")
            .arg(data.path().join("results"));
        if let Some(era) = era {
            cmd.args(["--spec-version", era]);
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let summary = text.find("=== SUMMARY").map_or(&text[..], |i| &text[i..]);
        eprintln!(
            "== era {era:?}\n{summary}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            failed.push(era.unwrap_or("default"));
        }
    }
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        failed.is_empty(),
        "unexpected failures or stale baseline entries in eras {failed:?} (see the summary above)"
    );
}

/// The conformance suite's SEP-2640 server scenarios against `skills serve --http`,
/// over the exported folder: `sep-2640-directory-read-subdir-mimetype` needs a skill
/// with a subfolder, which the bundled skills lack and the export has (`references/`).
#[test]
fn conformance_suite_sep_2640_scenarios_pass() {
    let Some((node, suite)) = conformance_suite() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let exported = data.path().join("exported");
    let export = Command::new(env!("CARGO_BIN_EXE_skills"))
        .args([
            "--skills-dir",
            common::repo().join("skills").to_str().unwrap(),
        ])
        .args(["export", "--agent-skills", exported.to_str().unwrap()])
        .env("SKILLS_DATA_DIR", data.path())
        .output()
        .unwrap();
    assert!(export.status.success());
    let (mut server, url) = serve_http(&exported, data.path());
    let mut failures = Vec::new();
    for scenario in [
        "sep-2640-skills-enumeration",
        "sep-2640-skills-manifest",
        "sep-2640-skills-directory",
    ] {
        let out = Command::new(&node)
            .arg(suite.join("dist/index.js"))
            .args(["server", "--url", &url, "--scenario", scenario])
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("== {scenario}\n{text}");
        if !out.status.success() || text.contains("FAILURE") {
            failures.push(scenario);
        }
    }
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(failures.is_empty(), "failing scenarios: {failures:?}");
}
