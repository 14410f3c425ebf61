//! pi coding-agent sessions (`~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`, also
//! written by forks such as Clawdbot/OpenClaw): JSON Lines whose first record is
//! `{"type": "session", "id", "cwd", "timestamp", "version"?}` followed by entries
//! (`message`, `model_change`, `thinking_level_change`, `session_info`, `custom`,
//! `compaction`…). Version 3 entries form a tree through `id`/`parentId`.
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - `message` entries whose `message.role` is `user` or `assistant` are messages;
//!   `toolResult`, `bashExecution` and other roles, and every non-`message` entry,
//!   are skipped and counted. `content` is a string or an array of blocks; `text`
//!   blocks are the text (joined by a newline), an `image` block sets
//!   `has_attachment`, `thinking` and `toolCall` blocks are not text;
//! - all message entries are imported in file order, including branches the person
//!   left (as for Claude Code rewinds); `parent_id` keeps the tree;
//! - `conversation_id` is the session record's `id`, else the file stem; `message_id`
//!   is the entry `id` (version 3 ids are 8 hex digits, unique within a session, which
//!   is enough as rows are keyed by source, conversation and message id) and
//!   `parent_id` its `parentId`; an entry without id gets [`stable_id`](crate::ingest::stable_id) of (`pi`,
//!   conversation id, line number, text);
//! - `project` is the session's `cwd`; `model` (assistant) is `message.model`, else
//!   the latest `model_change` `modelId`, else the session record's `modelId`; the
//!   title is the latest `session_info` `name`;
//! - the time is the entry's `timestamp` (ISO), else `message.timestamp` (epoch ms),
//!   else the nearest earlier time with `timestamp_is_fallback`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{
    chat_role, content_texts, join_texts, parse_time, str_field, Cursor, FileImport, IngestError,
};

const SOURCE: &str = "pi";

/// The pi importer (registered in [`super::IMPORTERS`]).
pub(super) static IMPORTER: super::About = super::About {
    source: SOURCE,
    tool: "pi",
    unit: "session file",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::Home(".pi/agent/sessions"), &["**/*.jsonl"])],
    note: None,
    append_only: true,
    import,
    looks_like: Some(looks_like),
};

/// True when one parsed line looks like a pi session record ([`super::About::looks_like`]).
fn looks_like(obj: &Map<String, Value>) -> bool {
    match str_field(obj, "type") {
        Some("session") => obj.contains_key("id") && !obj.contains_key("payload"),
        Some("message") => obj.get("message").and_then(|m| m.get("role")).is_some(),
        Some("model_change" | "thinking_level_change") => true,
        _ => false,
    }
}

/// Imports one session file. `fallback` is the time used when no entry has one.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened or read.
pub(super) fn import(
    path: &Path,
    fallback: DateTime<Utc>,
    start: Option<&Cursor>,
) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, start);
    let mut session_id: Option<String> = records.saved("session_id");
    let mut project: Option<String> = records.saved("project");
    let mut title: Option<String> = records.saved("title");
    let mut model: Option<String> = records.saved("model");

    let end = records.jsonl(|records, line, obj| {
        let message = obj.get("message").and_then(Value::as_object);
        let time = obj.get("timestamp").and_then(parse_time).or_else(|| {
            message
                .and_then(|m| m.get("timestamp"))
                .and_then(parse_time)
        });
        let at = records.record(line, time);
        match str_field(&obj, "type") {
            Some("session") => {
                if session_id.is_none() {
                    session_id = str_field(&obj, "id").map(str::to_owned);
                    project = str_field(&obj, "cwd").map(str::to_owned);
                }
                if let Some(m) = str_field(&obj, "modelId") {
                    model = Some(m.to_owned());
                }
            }
            Some("model_change") => {
                if let Some(m) = str_field(&obj, "modelId") {
                    model = Some(m.to_owned());
                }
            }
            Some("session_info") => {
                if let Some(name) = str_field(&obj, "name") {
                    title = Some(name.to_owned());
                }
            }
            Some("message") => {
                if let Some((role, text, has_attachment)) = message.and_then(message_text) {
                    let own_model = message.and_then(|m| str_field(m, "model"));
                    records.push(Pending {
                        id: str_field(&obj, "id").map(str::to_owned),
                        parent: str_field(&obj, "parentId").map(str::to_owned),
                        model: (role == "assistant")
                            .then(|| own_model.map(str::to_owned).or_else(|| model.clone()))
                            .flatten(),
                        has_attachment,
                        ..at.message(role, text)
                    });
                    return;
                }
            }
            _ => {}
        }
        records.skip();
    })?;

    let conversation_id = session_id.unwrap_or_else(|| file_stem(path));
    let time = records.first_time_or(fallback);
    let saved = [
        ("session_id", Some(conversation_id.as_str())),
        ("project", project.as_deref()),
        ("title", title.as_deref()),
        ("model", model.as_deref()),
    ];
    Ok(records.finish(
        &Named {
            source: SOURCE,
            id: &conversation_id,
            title: title.as_deref(),
            project: project.as_deref(),
        },
        time,
        Some((end, &saved)),
    ))
}

/// `(role, text, has_attachment)` of a user/assistant message with non-empty text.
fn message_text(message: &Map<String, Value>) -> Option<(&'static str, String, bool)> {
    let role = chat_role(str_field(message, "role")?)?;
    let (texts, attachment) = content_texts(message.get("content"), &["text"], &["image"]);
    let text = join_texts(texts);
    (!text.trim().is_empty()).then_some((role, text, attachment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &str) -> FileImport {
        super::super::import_fixture(&IMPORTER, "2025-01-01T00-00-00-000Z_x.jsonl", lines.as_bytes())
    }

    #[test]
    fn v3_session() {
        let out = run(concat!(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-05-01T10:00:00Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"session_info","id":"i","parentId":null,"timestamp":"2025-05-01T10:00:00Z","name":"Refactor"}"#,
            "\n",
            r#"{"type":"model_change","id":"mc","parentId":"i","timestamp":"2025-05-01T10:00:00Z","modelId":"gpt-5"}"#,
            "\n",
            r#"{"type":"message","id":"u1","parentId":"mc","timestamp":"2025-05-01T10:00:01Z","message":{"role":"user","content":[{"type":"text","text":"refactor"},{"type":"image","data":"","mimeType":"image/png"}]}}"#,
            "\n",
            r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2025-05-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Done."},{"type":"toolCall","id":"c","name":"read","arguments":{}}]}}"#,
            "\n",
            r#"{"type":"message","id":"t1","parentId":"a1","timestamp":"2025-05-01T10:00:03Z","message":{"role":"toolResult","content":[{"type":"text","text":"ok"}]}}"#,
            "\n",
        ));
        assert_eq!((out.messages.len(), out.skipped), (2, 4));
        let m = &out.messages;
        assert_eq!(m[0].message_id, "u1");
        assert_eq!(m[1].parent_id.as_deref(), Some("u1"));
        assert!(m[0].has_attachment);
        assert_eq!(m[1].model.as_deref(), Some("gpt-5"));
        assert_eq!(m[1].project.as_deref(), Some("/w"));
        assert_eq!(m[1].conversation_title.as_deref(), Some("Refactor"));
    }

    #[test]
    fn old_shape_without_ids() {
        let out = run(concat!(
            r#"{"type":"session","id":"s2","timestamp":"2024-01-15T10:30:00.000Z","modelId":"claude-x"}"#,
            "\n",
            r#"{"type":"message","message":{"role":"user","content":"plain string","timestamp":1705315810000}}"#,
            "\n",
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"reply"}]}}"#,
            "\n",
        ));
        let m = &out.messages;
        assert_eq!(m[0].timestamp.to_rfc3339(), "2024-01-15T10:50:10+00:00");
        assert!(!m[0].timestamp_is_fallback);
        assert!(m[1].timestamp_is_fallback);
        assert_eq!(m[1].timestamp, m[0].timestamp);
        assert_eq!(m[1].model.as_deref(), Some("claude-x"));
        assert_eq!(m[1].message_id.len(), 64);
    }

    #[test]
    fn looks_like_pi() {
        assert!(super::super::claims(&IMPORTER, &serde_json::json!({"type":"session","id":"x"})));
        assert!(super::super::claims(&IMPORTER, 
            &serde_json::json!({"type":"message","message":{"role":"user"}})
        ));
        assert!(!super::super::claims(&IMPORTER, 
            &serde_json::json!({"type":"user","message":{"role":"user"}})
        ));
    }
}
