//! Gemini CLI chats: `~/.gemini/tmp/<project>/chats/session-*.json`, one JSON document
//! `{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": […]}`, and the
//! newer JSON Lines form of the same data (a first metadata line, then one message
//! record per line).
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - records with `type` `user` become user messages, `gemini` (older `model`)
//!   assistant messages; `info`, `error`, `warning` records, metadata lines and
//!   `$set` updates are skipped and counted. `content` is a string or an array of
//!   parts; `text` parts are the text (joined by a newline), `inlineData` /
//!   `fileData` parts set `has_attachment`. `thoughts` and `toolCalls` are not text;
//! - in the JSON Lines form a later record with the `id` of an earlier message
//!   replaces it (last write wins) and is counted as skipped;
//! - `conversation_id` is `sessionId`, else the file stem; the title is `summary`
//!   when present; `model` is the record's `model`; `message_id` is its `id`, else
//!   [`stable_id`](crate::ingest::stable_id) of (`gemini-cli`, conversation id, position, text);
//! - the time is the record's `timestamp` in UTC, else the nearest earlier one,
//!   else `startTime`, with `timestamp_is_fallback`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{join_texts, kind_of, parse_time, part_texts, read_json, str_field, FileImport, IngestError};

const SOURCE: &str = "gemini-cli";

/// The Gemini CLI importer (registered in [`super::IMPORTERS`]).
pub(super) struct GeminiCli;

/// The registry's instance.
pub(super) static IMPORTER: GeminiCli = GeminiCli;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Gemini CLI",
    unit: "session file",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::Home(".gemini"), &["tmp/**/chats/*.{json,jsonl}"])],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: Some(looks_like),
};

impl super::Importer for GeminiCli {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        doc.contains(b"\"messages\"")
            && (doc.contains(b"\"projectHash\"") || doc.contains(b"\"sessionId\""))
    }
}

/// True when one parsed JSON Lines record looks like Gemini CLI ([`super::About::looks_like`]).
fn looks_like(obj: &Map<String, Value>) -> bool {
    (obj.contains_key("projectHash") && obj.contains_key("sessionId"))
        || (matches!(str_field(obj, "type"), Some("gemini"))
            && obj.contains_key("content")
            && !obj.contains_key("message"))
}

/// Session-level fields gathered from the metadata.
#[derive(Default)]
struct Session {
    id: Option<String>,
    title: Option<String>,
    start: Option<DateTime<Utc>>,
}

impl Session {
    fn absorb(&mut self, obj: &Map<String, Value>) {
        if self.id.is_none() {
            self.id = str_field(obj, "sessionId").map(str::to_owned);
        }
        if let Some(summary) = str_field(obj, "summary") {
            self.title = Some(summary.to_owned());
        }
        if self.start.is_none() {
            self.start = obj.get("startTime").and_then(parse_time);
        }
    }
}

/// Imports a `.json` session document or a `.jsonl` session log.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read; for `.json`,
/// [`IngestError::Json`] when it is not JSON and [`IngestError::Shape`] when it has no
/// `messages` array.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, None);
    let mut session = Session::default();
    let is_jsonl = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
    if is_jsonl {
        records.jsonl(|records, line, obj| {
            if obj.contains_key("projectHash") || obj.contains_key("$set") {
                session.absorb(obj.get("$set").and_then(Value::as_object).unwrap_or(&obj));
                records.skip();
            } else {
                take(records, line, &obj);
            }
        })?;
    } else {
        let doc = read_json(path)?;
        let Some(messages) = doc.get("messages").and_then(Value::as_array) else {
            return Err(IngestError::Shape {
                path: path.to_path_buf(),
                reason: format!(
                    "expected a Gemini CLI session object with a `messages` array, found {}",
                    kind_of(&doc)
                ),
            });
        };
        if let Some(obj) = doc.as_object() {
            session.absorb(obj);
        }
        for (index, message) in messages.iter().enumerate() {
            match message.as_object() {
                Some(obj) => take(&mut records, index, obj),
                None => records.fault(
                    None,
                    format!(
                        "`messages[{index}]`: expected an object, found {}",
                        kind_of(message)
                    ),
                ),
            }
        }
    }

    let conversation_id = session.id.unwrap_or_else(|| file_stem(path));
    let time = session.start.or(records.clock().last).unwrap_or(fallback);
    let named = Named {
        title: session.title.as_deref(),
        ..Named::new(SOURCE, &conversation_id)
    };
    Ok(records.finish(&named, time, None))
}

/// Keeps the message of one record at `position`; a record with the id of an earlier
/// message updates it (keeping its position) and counts as skipped.
fn take(records: &mut Records<'_>, position: usize, obj: &Map<String, Value>) {
    let at = records.record(position, obj.get("timestamp").and_then(parse_time));
    let Some((role, text, has_attachment)) = record(obj) else {
        return records.skip();
    };
    let id = str_field(obj, "id").map(str::to_owned);
    let earlier = id.as_deref().and_then(|id| {
        records
            .pending_mut()
            .iter()
            .position(|p| p.id.as_deref() == Some(id))
    });
    let entry = Pending {
        model: str_field(obj, "model").map(str::to_owned),
        has_attachment,
        id,
        ..at.message(role, text)
    };
    match earlier {
        Some(index) => {
            // An update of an earlier message: keep its position, take the new content.
            records.skip();
            let earlier = &mut records.pending_mut()[index];
            *earlier = Pending {
                line: earlier.line,
                ..entry
            };
        }
        None => records.push(entry),
    }
}

/// `(role, text, has_attachment)` of a user/model record with non-empty text.
fn record(obj: &Map<String, Value>) -> Option<(&'static str, String, bool)> {
    let role = match str_field(obj, "type")? {
        "user" => "user",
        "gemini" | "model" => "assistant",
        _ => return None,
    };
    let (texts, attachment) = match obj.get("content") {
        Some(Value::String(s)) => (vec![s.as_str()], false),
        Some(Value::Array(parts)) => part_texts(parts, |p| {
            p.contains_key("inlineData") || p.contains_key("fileData")
        }),
        _ => (Vec::new(), false),
    };
    let text = join_texts(texts);
    (!text.trim().is_empty()).then_some((role, text, attachment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, text: &str) -> FileImport {
        super::super::import_fixture(&IMPORTER, name, text.as_bytes())
    }

    #[test]
    fn json_session() {
        let out = run(
            "session-1.json",
            r#"{"sessionId":"g1","projectHash":"h","startTime":"2025-06-01T10:00:00Z","summary":"Port change",
               "messages":[
                 {"id":"m1","timestamp":"2025-06-01T10:00:01Z","type":"user","content":[{"text":"change the port"},{"inlineData":{"mimeType":"image/png","data":""}}]},
                 {"id":"m2","type":"gemini","content":"Done — port 9000.","model":"gemini-2.5-pro","toolCalls":[]},
                 {"id":"m3","timestamp":"2025-06-01T10:00:03Z","type":"info","content":"Request cancelled."},
                 7
               ]}"#,
        );
        assert_eq!(
            (out.messages.len(), out.skipped, out.faults.len()),
            (2, 1, 1)
        );
        let m = &out.messages;
        assert!(m[0].has_attachment);
        assert_eq!(m[1].role, "assistant");
        assert!(m[1].timestamp_is_fallback);
        assert_eq!(m[1].timestamp, m[0].timestamp);
        assert_eq!(m[1].conversation_title.as_deref(), Some("Port change"));
        assert_eq!(m[1].model.as_deref(), Some("gemini-2.5-pro"));
        assert!(out.faults[0].reason.contains("`messages[3]`"));
    }

    #[test]
    fn jsonl_session_with_update() {
        let out = run(
            "session-2.jsonl",
            concat!(
                r#"{"sessionId":"g2","projectHash":"h","startTime":"2025-06-02T10:00:00Z"}"#,
                "\n",
                r#"{"id":"a","timestamp":"2025-06-02T10:00:01Z","type":"user","content":"hi"}"#,
                "\n",
                r#"{"id":"b","timestamp":"2025-06-02T10:00:02Z","type":"gemini","content":"partial"}"#,
                "\n",
                r#"{"$set":{"summary":"Greeting"}}"#,
                "\n",
                r#"{"id":"b","timestamp":"2025-06-02T10:00:03Z","type":"gemini","content":"complete answer"}"#,
                "\n",
            ),
        );
        assert_eq!((out.messages.len(), out.skipped), (2, 3));
        assert_eq!(out.messages[1].content, "complete answer");
        assert_eq!(out.messages[1].conversation_id, "g2");
        assert_eq!(
            out.messages[1].conversation_title.as_deref(),
            Some("Greeting")
        );
    }

    #[test]
    fn not_a_session_document() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.json");
        fs_err::write(&path, "[]").expect("write");
        assert!(matches!(
            import(&path, DateTime::UNIX_EPOCH),
            Err(IngestError::Shape { .. })
        ));
    }
}
