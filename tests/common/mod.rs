//! Helpers shared by the integration tests (each test file that needs them declares
//! `mod common;`).
#![allow(dead_code, clippy::unwrap_used)]

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
