//! `skills serve` imports the files of folders created while it runs: Claude Code starts
//! a new project's history in a new folder, and files written there before the folder's
//! own watch exists send no event. `NEW_FOLDERS` folders × `FILES_PER_FOLDER` sessions
//! (default 100 × 2; `scripts/measure-new-folders.sh` runs 20,000 files) are written
//! under `~/.claude/projects` as fast as possible; every message must be stored.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::serve::{spawn_logging_to, wait_for_log};
use serde_json::json;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn session_line(session: &str, text: &str) -> String {
    let record = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/work/demo", "sessionId": session, "version": "2.0.0", "type": "user",
        "message": {"role": "user", "content": text}, "uuid": format!("{session}-u1"),
        "timestamp": "2026-03-01T10:00:00.000Z",
    });
    format!("{record}\n")
}

fn stored(data: &Path) -> u64 {
    let path = skills::stores::StorePaths::in_dir(data).conversations;
    match skills::stores::conversations::ConversationStore::open_ro(&path) {
        Ok(store) => store.count().unwrap_or(0),
        Err(_) => 0,
    }
}

#[test]
fn files_in_folders_created_while_serving_are_all_imported() {
    let folders = env_usize("NEW_FOLDERS", 100);
    let per_folder = env_usize("FILES_PER_FOLDER", 2);
    let home = tempfile::tempdir().unwrap();
    let projects = home.path().join(".claude/projects");
    fs_err::create_dir_all(&projects).unwrap();
    fs_err::create_dir_all(home.path().join(".config")).unwrap();
    let data = home.path().join("data");
    let stderr = home.path().join("serve.stderr");
    let mut child = spawn_logging_to(
        common::cli::with_data(&data)
            .args(["serve", "--no-watch"])
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .env("XDG_DATA_HOME", home.path().join(".local/share"))
            .env("SKILLS_EMBEDDER", "none")
            .env_remove("SKILLS_WATCH")
            .env_remove("CLAUDE_CONFIG_DIR"),
        &stderr,
    );
    // Wait until the watcher says it watches.
    wait_for_log(
        &stderr,
        "keeping the store current",
        Duration::from_secs(60),
    );
    let written = Instant::now();
    for f in 0..folders {
        let folder = projects.join(format!("-work-new-{f}"));
        fs_err::create_dir(&folder).unwrap();
        for s in 0..per_folder {
            let session = format!("f{f}-s{s}");
            fs_err::write(
                folder.join(format!("{session}.jsonl")),
                session_line(&session, &format!("quokka number {f} {s}")),
            )
            .unwrap();
        }
    }
    let expected = (folders * per_folder) as u64;
    let mut count = 0;
    while written.elapsed() < Duration::from_secs(50) {
        count = stored(&data);
        if count >= expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = child.kill();
    let _ = child.wait();
    println!(
        "{count} of {expected} messages stored {:.1} s after writing began",
        written.elapsed().as_secs_f64()
    );
    assert_eq!(
        count,
        expected,
        "files of new folders were missed; serve said:\n{}",
        fs_err::read_to_string(&stderr).unwrap_or_default()
    );
}
