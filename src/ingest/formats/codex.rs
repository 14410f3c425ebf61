//! Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.
//!
//! Two shapes are read:
//! - enveloped (current): every line is `{"timestamp", "type", "payload"}` with `type`
//!   `session_meta`, `turn_context`, `response_item`, `event_msg` or `compacted`;
//! - legacy "bare" (early 2025): a first line `{"id", "timestamp", …}` describing the
//!   session, then un-enveloped items such as `{"type": "message", "role", "content"}`.
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - messages are `response_item`s (or bare items) of `type` `message` with `role`
//!   `user` or `assistant`; text is the `input_text` / `output_text` / `text` blocks
//!   joined by a newline, and an `input_image` block sets `has_attachment`. `developer`
//!   and `system` messages, reasoning, tool calls and their output are skipped;
//! - `event_msg` `user_message` / `agent_message` repeat those messages in newer
//!   rollouts and are skipped, except in a file with no message items at all (some
//!   subagent rollouts), where they are the messages;
//! - lines that are not messages are skipped and counted; malformed lines are
//!   [`Fault`](crate::ingest::Fault)s with their line number;
//! - `conversation_id` is the first `session_meta` `payload.id` (the legacy first
//!   line's `id`), else the file stem; `project` is the session's `cwd`; `model` (on
//!   assistant messages) is the latest `turn_context` `payload.model`; `message_id` is
//!   the item's `id` when it has one, else [`stable_id`](crate::ingest::stable_id) of (`codex`, conversation id,
//!   line number, text);
//! - the time is the line's `timestamp` in UTC; bare items have none and take the
//!   nearest earlier time (the session's), with `timestamp_is_fallback`;
//! - user messages that are context preambles (`<environment_context>`,
//!   `# AGENTS.md instructions`, `<user_instructions>`…, see [`crate::ingest::injected`]) get
//!   `is_injected`; a `<realtime_delegation>` voice hand-off keeps only its `<input>` text.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::injected::realtime_delegation_input;
use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{
    chat_role, content_texts, parse_time, str_field, Cursor, FileImport, IngestError,
};

const SOURCE: &str = "codex";

/// The Codex CLI importer (registered in [`super::IMPORTERS`]).
pub(super) static IMPORTER: super::About = super::About {
    source: SOURCE,
    tool: "Codex CLI",
    unit: "rollout file",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::VarOrHome { var: "CODEX_HOME", home: ".codex" }, &["sessions/**/*.jsonl"])],
    note: None,
    append_only: true,
    import,
    looks_like: Some(looks_like),
};

/// Envelope `type`s of current rollouts.
const ENVELOPE_TYPES: &[&str] = &[
    "session_meta",
    "turn_context",
    "response_item",
    "event_msg",
    "compacted",
];

/// True when one parsed line looks like a Codex rollout record ([`super::About::looks_like`]).
fn looks_like(obj: &Map<String, Value>) -> bool {
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    (ENVELOPE_TYPES.contains(&kind) && obj.get("payload").is_some_and(Value::is_object))
        || (kind == "message"
            && obj.get("role").is_some_and(Value::is_string)
            && obj.get("content").is_some_and(Value::is_array)
            && !obj.contains_key("message"))
}

/// Imports one rollout file. `fallback` is the time used when no line has one.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened or read.
pub(super) fn import(
    path: &Path,
    fallback: DateTime<Utc>,
    start: Option<&Cursor>,
) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, start);
    // Each with whether it comes from an `event_msg` (used only when the file has no
    // message items).
    let mut pending: Vec<(bool, Pending)> = Vec::new();
    let mut session_id: Option<String> = records.saved("session_id");
    let mut project: Option<String> = records.saved("project");
    let mut model: Option<String> = records.saved("model");
    // Message items seen before `start`: events then only repeat them.
    let items_before = records.saved("items").is_some();

    let end = records.jsonl(|records, line, obj| {
        let at = records.record(line, obj.get("timestamp").and_then(parse_time));
        let message = |role: &'static str, text: String, id: Option<&str>, has_attachment| {
            Pending {
                id: id.map(str::to_owned),
                model: (role == "assistant").then(|| model.clone()).flatten(),
                has_attachment,
                ..at.message(role, text)
            }
        };
        let kind = str_field(&obj, "type").unwrap_or("");
        let payload = obj.get("payload").and_then(Value::as_object);
        match (kind, payload) {
            ("session_meta", Some(p)) => {
                if session_id.is_none() {
                    session_id = str_field(p, "id").map(str::to_owned);
                }
                if project.is_none() {
                    project = str_field(p, "cwd").map(str::to_owned);
                }
                if let Some(m) = str_field(p, "model") {
                    model = Some(m.to_owned());
                }
            }
            ("turn_context", Some(p)) => {
                if let Some(m) = str_field(p, "model") {
                    model = Some(m.to_owned());
                }
                if project.is_none() {
                    project = str_field(p, "cwd").map(str::to_owned);
                }
            }
            ("response_item", Some(item)) => {
                if let Some((role, text, attachment)) = message_item(item) {
                    let m = message(role, text, str_field(item, "id"), attachment);
                    pending.push((false, m));
                }
            }
            ("event_msg", Some(event)) => {
                let role = match str_field(event, "type") {
                    Some("user_message") => "user",
                    Some("agent_message") => "assistant",
                    _ => return,
                };
                let text = str_field(event, "message").unwrap_or("").to_owned();
                let non_empty = |k: &str| {
                    event
                        .get(k)
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty())
                };
                let attachment = non_empty("images") || non_empty("local_images");
                pending.push((true, message(role, text, None, attachment)));
            }
            ("message", None) => {
                // Legacy bare item.
                if let Some((role, text, attachment)) = message_item(&obj) {
                    let m = message(role, text, str_field(&obj, "id"), attachment);
                    pending.push((false, m));
                }
            }
            ("", None) if session_id.is_none() && at.time.is_some() => {
                // Legacy first line: {"id", "timestamp", "instructions"?}.
                session_id = str_field(&obj, "id").map(str::to_owned);
            }
            _ => {}
        }
    })?;

    let use_events = !items_before && pending.iter().all(|(event, _)| *event);
    let items = items_before || pending.iter().any(|(event, _)| !event);
    records.keep(
        pending
            .into_iter()
            .filter(|(event, p)| *event == use_events && !p.text.trim().is_empty())
            .map(|(_, p)| p)
            .collect(),
    );
    records.skip_the_rest();

    let conversation_id = session_id.unwrap_or_else(|| file_stem(path));
    let time = records.first_time_or(fallback);
    let saved = [
        ("session_id", Some(conversation_id.as_str())),
        ("project", project.as_deref()),
        ("model", model.as_deref()),
        ("items", items.then_some("true")),
    ];
    // `is_injected` is set later by `mark_injected`.
    Ok(records.finish(
        &Named {
            project: project.as_deref(),
            ..Named::new(SOURCE, &conversation_id)
        },
        time,
        Some((end, &saved)),
    ))
}

/// `(role, text, has_attachment)` of a `message` item with role user/assistant.
fn message_item(item: &Map<String, Value>) -> Option<(&'static str, String, bool)> {
    if str_field(item, "type") != Some("message") {
        return None;
    }
    let role = chat_role(str_field(item, "role")?)?;
    let (texts, attachment) = content_texts(
        item.get("content"),
        &["input_text", "output_text", "text"],
        &["input_image", "image"],
    );
    let texts: Vec<&str> = texts
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .map(|t| realtime_delegation_input(t).unwrap_or(t))
        .collect();
    Some((role, texts.join("\n"), attachment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &str) -> FileImport {
        super::super::import_fixture(&IMPORTER, "rollout-x.jsonl", lines.as_bytes())
    }

    #[test]
    fn enveloped_items_win_over_events() {
        let out = run(concat!(
            r#"{"timestamp":"2025-10-01T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:03Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the rpath"},{"type":"input_image","image_url":"data:"}]}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:03Z","type":"event_msg","payload":{"type":"user_message","message":"fix the rpath","images":[]}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:04Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:05Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}"#,
            "\n",
        ));
        assert!(out.faults.is_empty());
        assert_eq!((out.messages.len(), out.skipped), (2, 5));
        let m = &out.messages;
        assert_eq!(
            (
                m[0].content.as_str(),
                m[0].has_attachment,
                m[0].model.as_deref()
            ),
            ("fix the rpath", true, None)
        );
        assert_eq!(
            (m[1].model.as_deref(), m[1].project.as_deref()),
            (Some("gpt-5-codex"), Some("/w"))
        );
        assert_eq!(m[1].conversation_id, "s1");
        assert_eq!(m[1].message_id.len(), 64);
    }

    #[test]
    fn events_only_file_uses_events() {
        let out = run(concat!(
            r#"{"timestamp":"2025-10-01T10:00:00Z","type":"session_meta","payload":{"id":"child"}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:00Z","type":"session_meta","payload":{"id":"parent"}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:02Z","type":"event_msg","payload":{"type":"user_message","message":"pin deps"}}"#,
            "\n",
            r#"{"timestamp":"2025-10-01T10:00:03Z","type":"event_msg","payload":{"type":"agent_message","message":"pinned"}}"#,
            "\n",
        ));
        assert_eq!((out.messages.len(), out.skipped), (2, 2));
        assert_eq!(out.messages[0].conversation_id, "child");
    }

    #[test]
    fn legacy_bare_rollout() {
        let out = run(concat!(
            r#"{"id":"legacy-1","timestamp":"2025-04-01T08:00:00Z","instructions":null}"#,
            "\n",
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}"#,
            "\n",
            r#"{"record_type":"state"}"#,
            "\n",
            r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}"#,
            "\n",
        ));
        assert_eq!((out.messages.len(), out.skipped), (2, 2));
        let m = &out.messages[1];
        assert_eq!(m.conversation_id, "legacy-1");
        assert!(m.timestamp_is_fallback);
        assert_eq!(m.timestamp.to_rfc3339(), "2025-04-01T08:00:00+00:00");
    }

    #[test]
    fn looks_like_recognises_both_shapes() {
        assert!(super::super::claims(&IMPORTER, 
            &serde_json::json!({"type":"session_meta","payload":{}})
        ));
        assert!(super::super::claims(&IMPORTER, 
            &serde_json::json!({"type":"message","role":"user","content":[]})
        ));
        assert!(!super::super::claims(&IMPORTER, 
            &serde_json::json!({"type":"message","message":{"role":"user"}})
        ));
    }
}
