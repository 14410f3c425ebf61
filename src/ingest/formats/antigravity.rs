//! Google Antigravity step transcripts, source `antigravity`:
//! `~/.gemini/antigravity/brain/<conversation uuid>/.system_generated/logs/transcript.jsonl`,
//! one agent step per line `{"step_index", "source": "USER_EXPLICIT"|"MODEL"|"SYSTEM",
//! "type", "status", "created_at", "content"?, "thinking"?, "tool_calls"?}`.
//!
//! Mapping to [`Message`](crate::ingest::Message), by step `type`:
//! - `USER_INPUT` is the person (`user`). Antigravity wraps what they typed in
//!   `<USER_REQUEST>…</USER_REQUEST>` and appends harness blocks
//!   (`<ADDITIONAL_METADATA>` with the local time, `<USER_SETTINGS_CHANGE>`…); only the
//!   request text is kept. Without a `USER_REQUEST` block the content minus every
//!   `<UPPER_CASE>…</UPPER_CASE>` block is kept;
//! - `PLANNER_RESPONSE` is the model's reply (`assistant`): its `content`; `thinking`
//!   is not text;
//! - every other step is skipped and counted: tool steps (`VIEW_FILE`, `RUN_COMMAND`,
//!   `GREP_SEARCH`… whose `content` is tool output), `CONVERSATION_HISTORY`,
//!   `EPHEMERAL_MESSAGE` and `SYSTEM_MESSAGE` (harness text), and steps without text;
//! - `conversation_id` is the folder after `brain/` (the conversation uuid), else the
//!   file stem; `message_id` is `step-<step_index>`, else
//!   [`stable_id`](crate::ingest::stable_id) of (`antigravity`, conversation id, line, text);
//! - the time is `created_at` (ISO), else the nearest earlier one, else the file's
//!   time (`timestamp_is_fallback`).
//!
//! Steps may be rewritten as they finish (`status`), so a transcript is re-read whole
//! when it changes.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{parse_time, str_field, FileImport, IngestError};

const SOURCE: &str = "antigravity";

/// The Google Antigravity importer (registered in [`super::IMPORTERS`]).
pub(super) static IMPORTER: super::About = super::About {
    source: SOURCE,
    tool: "Google Antigravity",
    unit: "transcript",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::Home(".gemini/antigravity/brain"), &["*/.system_generated/logs/*.jsonl"])],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: Some(looks_like),
};

/// True when one parsed JSON Lines record is an Antigravity step ([`super::About::looks_like`]).
fn looks_like(obj: &Map<String, Value>) -> bool {
    obj.get("step_index").is_some_and(Value::is_u64)
        && obj.get("type").is_some_and(Value::is_string)
        && obj.contains_key("source")
}

/// Imports one transcript.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened or read.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, None);
    records.jsonl(|records, line, obj| {
        let at = records.record(line, obj.get("created_at").and_then(parse_time));
        let Some((role, text)) = step(&obj) else {
            records.skip();
            return;
        };
        records.push(Pending {
            id: obj
                .get("step_index")
                .and_then(Value::as_u64)
                .map(|i| format!("step-{i}")),
            ..at.message(role, text)
        });
    })?;
    let id = conversation_of(path).unwrap_or_else(|| file_stem(path));
    let time = records.first_time_or(fallback);
    Ok(records.finish(&Named::new(SOURCE, &id), time, None))
}

/// The folder name after `brain/` in the transcript's path.
fn conversation_of(path: &Path) -> Option<String> {
    let parts: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
    let at = parts.iter().rposition(|c| *c == "brain")?;
    parts
        .get(at + 1)
        .filter(|_| at + 2 < parts.len())
        .map(|c| c.to_string_lossy().into_owned())
}

/// `(role, text)` of a step that is a message with text.
fn step(obj: &Map<String, Value>) -> Option<(&'static str, String)> {
    let content = str_field(obj, "content")?;
    let (role, text) = match str_field(obj, "type")? {
        "USER_INPUT" => ("user", user_request(content)),
        "PLANNER_RESPONSE" => ("assistant", content.trim().to_owned()),
        _ => return None,
    };
    (!text.is_empty()).then_some((role, text))
}

/// The text of the `<USER_REQUEST>` blocks, else the content without upper-case tag
/// blocks.
fn user_request(content: &str) -> String {
    let blocks = tag_blocks(content);
    let requests: Vec<&str> = blocks
        .iter()
        .filter(|b| b.tag == "USER_REQUEST")
        .map(|b| content[b.inner.clone()].trim())
        .collect();
    if !requests.is_empty() {
        return requests.join("\n");
    }
    let mut rest = String::new();
    let mut at = 0;
    for b in &blocks {
        rest.push_str(&content[at..b.outer.start]);
        at = b.outer.end;
    }
    rest.push_str(&content[at..]);
    rest.trim().to_owned()
}

/// A `<TAG>…</TAG>` block with an upper-case tag name.
struct Block<'a> {
    tag: &'a str,
    outer: std::ops::Range<usize>,
    inner: std::ops::Range<usize>,
}

/// The top-level upper-case tag blocks of `text`, in order.
fn tag_blocks(text: &str) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = text[from..].find('<') {
        let start = from + rel;
        let after = &text[start + 1..];
        let tag_len = after
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .unwrap_or(after.len());
        if tag_len == 0 || !after[tag_len..].starts_with('>') {
            from = start + 1;
            continue;
        }
        let tag = &after[..tag_len];
        let inner_start = start + 1 + tag_len + 1;
        let close = format!("</{tag}>");
        let Some(close_rel) = text[inner_start..].find(&close) else {
            from = inner_start;
            continue;
        };
        let inner_end = inner_start + close_rel;
        let end = inner_end + close.len();
        out.push(Block {
            tag,
            outer: start..end,
            inner: inner_start..inner_end,
        });
        from = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_request_keeps_only_the_request() {
        let c = "<USER_REQUEST>\nDo it.\n</USER_REQUEST>\n<ADDITIONAL_METADATA>\ntime\n</ADDITIONAL_METADATA>";
        assert_eq!(user_request(c), "Do it.");
        assert_eq!(
            user_request("Hello <ADDITIONAL_METADATA>x</ADDITIONAL_METADATA> there"),
            "Hello  there"
        );
        assert_eq!(
            user_request("a < b and <b>bold</b>"),
            "a < b and <b>bold</b>"
        );
    }
}
