//! Tests that cannot run here say so instead of passing.
//!
//! libtest knows only passed, failed and ignored, decided before a test starts; a test
//! that finds at run time that its input is missing (the corpus of real transcripts,
//! Chromium, the real MCP clients, the embedding model, PostgreSQL) would otherwise
//! return early and count as passed. Such a test calls [`not_run`] with the reason and
//! returns at once:
//!
//! ```ignore
//! let Some(corpus) = common::corpus() else { return }; // records the test itself
//! let Some(pg) = common::postgres() else { return };    // a helper of your own:
//! fn postgres() -> Option<Url> {                          // it calls not_run(reason)
//!     let url = std::env::var("SKILLS_TEST_PG").ok();     // and returns None
//!     if url.is_none() { not_run("no PostgreSQL (set SKILLS_TEST_PG)") }
//!     url.and_then(|u| u.parse().ok())
//! }
//! ```
//!
//! [`not_run`] writes `not run: <crate>::<test> — <reason>` to the process's stderr
//! (outside libtest's capture, so plain `cargo test` shows it) and, when
//! `$SKILLS_TEST_NOT_RUN_DIR` names a folder (`./scripts/test` sets it), a file there
//! named after the test holding the reason. `./scripts/test` subtracts those tests
//! from cargo's passed count and ends with a line counting them, reasons grouped.
//! Keep a reason the same text for the same cause (no per-test detail) so that the
//! grouping works.
//!
//! One file for the integration tests (`tests/common`) and the unit tests under `src/`
//! (`src/lib.rs` includes it under `cfg(test)`): it uses std only.
#![allow(dead_code)]

use std::io::Write;

/// The folder `./scripts/test` collects the not-run records in.
pub const REPORT_DIR: &str = "SKILLS_TEST_NOT_RUN_DIR";

/// Records the running test as not run because of `reason` (one line, same text for
/// the same cause). Call it, then return from the test without asserting anything.
///
/// # Panics
/// When `$SKILLS_TEST_NOT_RUN_DIR` is set but the record cannot be written there (the
/// test must not then count as passed), or when called outside a test's own thread
/// (libtest names that thread after the test; a spawned thread or runtime worker has
/// another name).
pub fn not_run(reason: &str) {
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" && !name.starts_with("tokio-runtime") => name,
        other => panic!("not_run({reason:?}) called outside the test's thread ({other:?})"),
    };
    not_run_named(test, reason);
}

/// [`not_run`] for the test named `test` — for harnesses whose worker threads do not
/// carry the test's name (`harness = false` binaries built on libtest-mimic). A `/`
/// in the name becomes `∕` in the record's file name, and a name over 200 bytes is cut
/// there (with `…`).
///
/// # Panics
/// As [`not_run`], when the record cannot be written.
pub fn not_run_named(test: &str, reason: &str) {
    let mut test = format!("{}::{test}", env!("CARGO_CRATE_NAME")).replace('/', "∕");
    // A file name holds at most 255 bytes: a long name is cut on a character boundary.
    if test.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|&i| test.is_char_boundary(i))
            .unwrap_or(0);
        test.truncate(cut);
        test.push('…');
    }
    let reason = reason.replace('\n', " ");
    let _ = writeln!(std::io::stderr(), "not run: {test} — {reason}");
    if let Some(dir) = std::env::var_os(REPORT_DIR) {
        let file = std::path::Path::new(&dir).join(&test);
        std::fs::write(&file, format!("{reason}\n")).unwrap_or_else(|e| {
            panic!(
                "not run ({reason}), and the record {} could not be written: {e}",
                file.display()
            )
        });
    }
}
