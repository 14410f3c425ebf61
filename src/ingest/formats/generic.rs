//! Generic JSON Lines transcripts, for tools with no importer of their own: one message
//! per line, `{"role", "content", "timestamp"?, "conversation_id"?, "id"?, "title"?,
//! "model"?, "project"?}` (brain-mcp's generic import shape).
//!
//! Mapping to [`Message`]:
//! - a line whose `role` is `user`/`human` or `assistant`/`ai`/`model` and whose
//!   `content` is a non-empty string (or an array of strings / `{"type": "text", "text"}`
//!   blocks) is a message; other lines (system, tool, empty text) are skipped and
//!   counted; malformed lines are [`Fault`](crate::ingest::Fault)s;
//! - `conversation_id` is the line's `conversation_id` (or `session_id`), else the file
//!   stem; `message_id` is `id` / `message_id`, else [`stable_id`] of (`generic`,
//!   conversation id, line number, text); `conversation_title` is `title`;
//! - the time is `timestamp` (ISO with or without offset, epoch seconds or
//!   milliseconds) in UTC; a line without one takes the nearest earlier time, else the
//!   file's modification time, with `timestamp_is_fallback`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::file_stem;
use crate::ingest::{
    count_i64, parse_time, plain_text, read_jsonl_from, stable_id, str_field, Cursor,
    FileImport,
    IngestError, Message,
};

const SOURCE: &str = "generic";

/// The generic JSON Lines importer (registered in [`super::IMPORTERS`]).
pub(super) struct Generic;

/// The registry's instance.
pub(super) static IMPORTER: Generic = Generic;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "any other tool",
    unit: "file",
    locations: &[],
    note: Some("none: JSON Lines with `role`, `content`, optional `timestamp`, `conversation_id`, `id`, `title`"),
    append_only: true,
    import,
    looks_like: None,
};

impl super::Importer for Generic {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_line(&self, line: &Value) -> super::LineMatch {
        if looks_like(line) {
            super::LineMatch::Fallback
        } else {
            super::LineMatch::No
        }
    }
}

/// The canonical role of a generic line's `role`, when it is a message role.
fn role_of(obj: &Map<String, Value>) -> Option<&'static str> {
    match str_field(obj, "role")? {
        "user" | "human" => Some("user"),
        "assistant" | "ai" | "model" => Some("assistant"),
        _ => None,
    }
}

/// True when one parsed line looks like a generic message line (used by `detect`,
/// after every specific format): a string `role` and a string or array `content`, and
/// no `type` / `message` / `payload` key of the specific formats.
fn looks_like(line: &Value) -> bool {
    let Some(obj) = line.as_object() else {
        return false;
    };
    obj.get("role").is_some_and(Value::is_string)
        && obj
            .get("content")
            .is_some_and(|c| c.is_string() || c.is_array())
        && !obj.contains_key("type")
        && !obj.contains_key("message")
        && !obj.contains_key("payload")
}

/// Imports one file, from `start` when given. `fallback` is the time used when no line
/// has one.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened or read.
pub(super) fn import(
    path: &Path,
    fallback: DateTime<Utc>,
    start: Option<&Cursor>,
) -> Result<FileImport, IngestError> {
    let mut out = FileImport::default();
    let stem = file_stem(path);
    let start_index = start.map_or(0, |c| c.next_index);
    let mut last_time = start.and_then(|c| c.time("last_time"));
    let mut skipped = 0usize;
    let mut lines = Vec::new();
    let end = read_jsonl_from(path, start, &mut out.faults, |line, obj| {
        let time = obj.get("timestamp").and_then(parse_time);
        let earlier = last_time;
        if time.is_some() {
            last_time = time;
        }
        let text = plain_text(obj.get("content"));
        let Some(role) = role_of(&obj).filter(|_| !text.trim().is_empty()) else {
            skipped += 1;
            return;
        };
        let conversation_id = str_field(&obj, "conversation_id")
            .or_else(|| str_field(&obj, "session_id"))
            .unwrap_or(&stem)
            .to_owned();
        let message_id = str_field(&obj, "id")
            .or_else(|| str_field(&obj, "message_id"))
            .map_or_else(
                || stable_id(&[SOURCE, &conversation_id, &line.to_string(), &text]),
                str::to_owned,
            );
        let (timestamp, timestamp_is_fallback) = match time {
            Some(t) => (t, false),
            None => (earlier.unwrap_or(fallback), true),
        };
        let index = start_index.saturating_add(count_i64(lines.iter()));
        lines.push((
            line,
            Message {
                source: SOURCE.to_owned(),
                model: str_field(&obj, "model").map(str::to_owned),
                project: str_field(&obj, "project").map(str::to_owned),
                conversation_id,
                conversation_title: str_field(&obj, "title").map(str::to_owned),
                message_id,
                parent_id: str_field(&obj, "parent_id").map(str::to_owned),
                msg_index: index,
                timestamp,
                timestamp_is_fallback,
                role: role.to_owned(),
                content_type: "text".to_owned(),
                content: text,
                chars_cut: 0,
                has_attachment: false,
                has_citation: false,
                is_injected: false,
            },
        ));
    })?;
    out.skipped = skipped;
    out.unfinished = usize::from(end.unfinished);
    out.jsonl_bytes_read = end.read;
    let mut cursor = Cursor {
        offset: end.offset,
        line: end.line,
        next_index: start_index + count_i64(lines.iter().filter(|(l, _)| *l <= end.line)),
        partial: end.partial,
        context: std::collections::BTreeMap::new(),
    };
    cursor.set("last_time", last_time.map(|t| t.to_rfc3339()));
    out.cursor = Some(cursor);
    out.messages = lines.into_iter().map(|(_, m)| m).collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_times_and_ids() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("chat.jsonl");
        fs_err::write(
            &path,
            concat!(
                r#"{"role":"human","content":"hi","timestamp":1700000000}"#,
                "\n",
                r#"{"role":"system","content":"be nice"}"#,
                "\n",
                r#"{"role":"ai","content":[{"type":"text","text":"hello"}],"timestamp":"2023-11-14T23:13:21+01:00","id":"m2"}"#,
                "\n",
                r#"{"role":"user","content":"later"}"#,
                "\n",
            ),
        )
        .expect("write");
        let out = import(&path, DateTime::UNIX_EPOCH, None).expect("import");
        assert_eq!(out.skipped, 1);
        let m = &out.messages;
        assert_eq!(m.len(), 3);
        assert_eq!(
            (m[0].role.as_str(), m[1].role.as_str()),
            ("user", "assistant")
        );
        assert_eq!(m[0].timestamp.to_rfc3339(), "2023-11-14T22:13:20+00:00");
        assert_eq!(m[1].timestamp.to_rfc3339(), "2023-11-14T22:13:21+00:00");
        assert_eq!(m[1].message_id, "m2");
        assert_eq!(m[0].conversation_id, "chat");
        assert!(m[2].timestamp_is_fallback && m[2].timestamp == m[1].timestamp);
        assert_eq!(m[2].msg_index, 2);
    }
}
