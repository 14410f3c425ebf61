//! Claude.ai data export `conversations.json`: an array of conversations
//! `{"uuid", "name", "created_at", "chat_messages": [...]}`, each message
//! `{"uuid", "sender": "human"|"assistant", "text", "content": [blocks], "created_at",
//! "attachments", "files", "parent_message_uuid"?}`.
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - each conversation is one conversation: `conversation_id` its `uuid` (else
//!   [`stable_id`](crate::ingest::stable_id) of (`claude-ai`, its position)), the title its
//!   `name`;
//! - `human` messages are `user`, `assistant` ones `assistant`; other senders, and
//!   messages without text, are skipped and counted;
//! - the text is the `text` blocks of `content` joined by a newline (`thinking`,
//!   tool blocks are not text), else the message's `text`; a non-empty `attachments`
//!   or `files` sets `has_attachment`, a text block with `citations` `has_citation`;
//! - `message_id` is the `uuid`, else [`stable_id`](crate::ingest::stable_id) of (`claude-ai`,
//!   conversation id, position, text); `parent_id` the `parent_message_uuid`;
//! - the time is the message's `created_at`, else the nearest earlier one, else the
//!   conversation's `created_at`, else the file's time (`timestamp_is_fallback`).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{each_conversation, Named, Pending, Records};
use crate::ingest::{join_texts, parse_time, stable_id, str_field, FileImport, IngestError};

const SOURCE: &str = "claude-ai";

/// The Claude.ai export importer (registered in [`super::IMPORTERS`]).
pub(super) struct ClaudeAi;

/// The registry's instance.
pub(super) static IMPORTER: ClaudeAi = ClaudeAi;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Claude.ai export",
    unit: "export file",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::Var(crate::settings::CLAUDE_AI_EXPORT.name), &["", "**/conversations.json"])],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: None,
};

impl super::Importer for ClaudeAi {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        doc.contains(b"\"chat_messages\"")
    }
}

/// Imports one export file. `fallback` is the time of messages with none.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] when it is
/// not JSON, [`IngestError::Shape`] when it is neither an array nor an object.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    each_conversation(path, |position, conv, out| {
        let id = str_field(conv, "uuid").map_or_else(
            || stable_id(&[SOURCE, &position.to_string()]),
            str::to_owned,
        );
        let mut records = Records::new(path, None);
        let messages = conv.get("chat_messages").and_then(Value::as_array);
        for (index, message) in messages.into_iter().flatten().enumerate() {
            match message.as_object().and_then(|m| pending_of(m, index)) {
                Some(p) => {
                    let at = records.record(index, p.time);
                    records.push(Pending {
                        earlier_time: at.earlier_time,
                        ..p
                    });
                }
                None => records.skip(),
            }
        }
        let time = conv.get("created_at").and_then(parse_time);
        let named = Named {
            title: str_field(conv, "name"),
            ..Named::new(SOURCE, &id)
        };
        out.append(records.finish(&named, time.unwrap_or(fallback), None));
    })
}

/// The pending message of one `chat_messages` entry at `index`, when it has text.
fn pending_of(message: &Map<String, Value>, index: usize) -> Option<Pending> {
    let role = match str_field(message, "sender")? {
        "human" => "user",
        "assistant" => "assistant",
        _ => return None,
    };
    let content = message.get("content").and_then(Value::as_array);
    let blocks: Vec<&Map<String, Value>> = content
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .filter(|b| str_field(b, "type") == Some("text"))
        .collect();
    // Without `content` blocks, `text` (which also holds the thinking when there are).
    let text = match content {
        Some(_) => join_texts(blocks.iter().filter_map(|b| str_field(b, "text"))),
        None => str_field(message, "text").unwrap_or("").to_owned(),
    };
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    Pending::said(index, role, text).map(|p| Pending {
        id: str_field(message, "uuid").map(str::to_owned),
        parent: str_field(message, "parent_message_uuid").map(str::to_owned),
        time: message.get("created_at").and_then(parse_time),
        has_attachment: non_empty(message.get("attachments")) || non_empty(message.get("files")),
        has_citation: blocks.iter().any(|b| non_empty(b.get("citations"))),
        ..p
    })
}
