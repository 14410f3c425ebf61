//! `kill -9` at any moment of `skills ingest` leaves a store and a search index that
//! answer exactly as DuckDB does: 24 ingests are killed at spread-out moments (while
//! parsing, storing, building, merging or publishing the index), each followed by
//! searches run both ways; then a full ingest brings the index back.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::engines::search_conversations::SearchConversations;
use skills::engines::{Context, Engine};
use skills::stores::conversations::index::Index;
use skills::stores::StorePaths;

const KILLS: u64 = 24;

fn ingest(data: &Path, src: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["--data-dir"])
        .arg(data)
        .args(["ingest", "--quiet"])
        .arg(src)
        .env("SKILLS_EMBEDDER", "none")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn search(dir: &Path, index: bool, term: &str, role: Option<&str>) -> Value {
    let ctx = Context::new(StorePaths::in_dir(dir)).with_search_index(index);
    SearchConversations
        .call(&json!({"term": term, "role": role, "limit": 50}), &ctx)
        .unwrap()
}

/// The search index and a full DuckDB scan give the same rows for a few searches (a
/// common, a rare and an empty term, with and without a role filter).
fn same_answers(data: &Path, when: &str) {
    for (term, role) in [
        ("the", None),
        (gen::RARE_TERM, None),
        ("serde", Some("user")),
        ("", Some("user")),
    ] {
        assert_eq!(
            search(data, true, term, role),
            search(data, false, term, role),
            "{when}: {term:?} {role:?}"
        );
    }
}

#[test]
fn killed_ingests_never_give_wrong_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, data) = (tmp.path().join("src"), tmp.path().join("data"));
    gen::write_claude_code_tree(
        &src.join("a"),
        Spec {
            messages: 20_000,
            seed: 1,
        },
    )
    .unwrap();
    // How long one whole ingest takes here, to spread the kills over it.
    let scratch = tmp.path().join("scratch");
    let t = Instant::now();
    assert!(ingest(&scratch, &src).wait().unwrap().success());
    let full = t.elapsed();
    std::fs::remove_dir_all(&scratch).unwrap();

    let mut fresh_after_kill = 0;
    for k in 0..KILLS {
        // New files every round, so each ingest has rows to store and index.
        gen::write_claude_code_tree(
            &src.join(format!("r{k}")),
            Spec {
                messages: 600,
                seed: 100 + k,
            },
        )
        .unwrap();
        let mut child = ingest(&data, &src);
        // Spread over 0–110 % of a full ingest (later rounds have less to do).
        let at = full.mul_f64((k as f64 * 0.37).fract() * 1.1);
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        if !StorePaths::in_dir(&data).conversations.exists() {
            continue;
        }
        if Index::open(&StorePaths::in_dir(&data).conversations).is_ok() {
            fresh_after_kill += 1;
        }
        same_answers(&data, &format!("kill {k} after {at:?}"));
    }
    println!("{fresh_after_kill} of {KILLS} kills left a usable index (full ingest {full:?})");
    let status = ingest(&data, &src).wait_timeout_secs(600);
    assert!(status, "final ingest failed");
    Index::open(&StorePaths::in_dir(&data).conversations).expect("index fresh after a full ingest");
    same_answers(&data, "after the final ingest");
}

trait WaitTimeout {
    fn wait_timeout_secs(self, secs: u64) -> bool;
}

impl WaitTimeout for std::process::Child {
    fn wait_timeout_secs(mut self, secs: u64) -> bool {
        let start = Instant::now();
        loop {
            if let Some(s) = self.try_wait().unwrap() {
                return s.success();
            }
            if start.elapsed() > Duration::from_secs(secs) {
                let _ = self.kill();
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
