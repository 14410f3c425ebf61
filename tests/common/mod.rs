//! Helpers shared by the integration tests (each test file that needs them declares
//! `mod common;`).
#![allow(dead_code, clippy::unwrap_used, clippy::print_stdout)]

use std::path::PathBuf;

use chrono::TimeZone;
use skills::ingest::Message;

/// A user text message `content`, number `i` of conversation `conv` from Claude Code,
/// at 2025-03-10 10:00:`i` UTC.
pub fn message(conv: &str, i: i64, content: &str) -> Message {
    Message {
        source: "claude-code".into(),
        model: None,
        project: None,
        conversation_id: conv.into(),
        conversation_title: None,
        message_id: format!("{conv}-{i}"),
        parent_id: None,
        msg_index: i,
        timestamp: chrono::Utc
            .with_ymd_and_hms(2025, 3, 10, 10, 0, u32::try_from(i).unwrap())
            .unwrap(),
        timestamp_is_fallback: false,
        role: "user".into(),
        content_type: "text".into(),
        content: content.into(),
        has_attachment: false,
        has_citation: false,
        is_injected: false,
    }
}

/// The shared corpus (`$SKILLS_CORPUS_DIR`, default `<manifest>/../shared/corpus`), or
/// `None` after saying on stdout that the test is skipped.
pub fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("SKILLS_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipped: no corpus at {} (set SKILLS_CORPUS_DIR)",
            dir.display()
        );
        None
    }
}
