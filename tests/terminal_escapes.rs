//! Nothing raw to a terminal: a transcript whose file name and text hold ESC, BEL, CR
//! and a C1 control (CSI, U+009B) is imported by `skills ingest`, by `skills serve`'s
//! background importer, and found by `skills run`; none of those bytes reach stdout
//! or stderr raw, and the escaped form (`\x1b`, …) is printed instead.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::serve::{spawn_logging_to, wait_for_log};
use serde_json::json;

/// ESC `]0;` title BEL (retitles), CR (overwrites the line), CSI `31m` (recolours).
const HOSTILE: &str = "pwn\u{1b}]0;owned\u{7}\r\u{9b}31m";

/// The raw control characters found in `bytes` (as text).
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| matches!(*c, '\u{1b}' | '\u{7}' | '\r' | '\u{80}'..='\u{9f}'))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect()
}

/// A folder holding one Claude Code session with a hostile name: one good line with
/// hostile text, then a line that is not JSON (a fault that names the file).
fn hostile_folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("projects").join("-work-demo");
    fs_err::create_dir_all(&folder).unwrap();
    let file = folder.join(format!("{HOSTILE}.jsonl"));
    let record = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/work/demo", "sessionId": "s-hostile", "version": "2.0.0",
        "type": "user", "message": {"role": "user", "content": format!("zebrafish {HOSTILE} done")},
        "uuid": "u1", "timestamp": "2026-03-01T10:00:00.000Z",
    });
    fs_err::write(&file, format!("{record}\n{{not json\n{record}\n")).unwrap();
    (dir, folder)
}

fn skills(data: &Path) -> Command {
    let mut cmd = common::cli::with_data(data);
    cmd.env("SKILLS_EMBEDDER", "none");
    cmd
}

#[test]
fn ingest_and_run_escape_control_characters() {
    let (dir, folder) = hostile_folder();
    let data = dir.path().join("data");
    let out = skills(&data)
        .args(["ingest", "--no-embed"])
        .arg(&folder)
        .output()
        .unwrap();
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    let shown = String::from_utf8_lossy(&all);
    assert!(
        shown.contains("pwn\\x1b]0;owned\\x07\\x0d\\x9b31m"),
        "the file name is printed escaped: {shown}"
    );
    assert_eq!(raw_controls(&all), Vec::<String>::new(), "{shown}");

    let out = skills(&data)
        .args(["run", "search-conversations", "--arg", "term=zebrafish"])
        .output()
        .unwrap();
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    let shown = String::from_utf8_lossy(&all);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("zebrafish"), "{shown}");
    assert_eq!(raw_controls(&all), Vec::<String>::new(), "{shown}");
}

#[test]
fn serve_logs_escape_control_characters() {
    let (dir, folder) = hostile_folder();
    let data = dir.path().join("data");
    let stderr = dir.path().join("stderr");
    let mut child = spawn_logging_to(
        skills(&data)
            .args(["serve", "--watch"])
            .arg(&folder)
            .env("HOME", dir.path()),
        &stderr,
    );
    wait_for_log(&stderr, "import fault", Duration::from_secs(90));
    let _ = child.kill();
    let _ = child.wait();
    // The bytes as written: a raw C1 control is not valid UTF-8 on its own.
    let logged = fs_err::read(&stderr).unwrap();
    let shown = String::from_utf8_lossy(&logged);
    assert!(shown.contains("pwn\\x1b]0;owned"), "{shown}");
    assert_eq!(raw_controls(&logged), Vec::<String>::new(), "{shown}");
}
