//! Amp threads, source `amp`: one JSON file per thread,
//! `$XDG_DATA_HOME/amp/threads/T-<uuid>.json` (default `~/.local/share/amp/threads`;
//! the VS Code extension's older copies live in
//! `<editor globalStorage>/sourcegraph.amp/threads3/`), shaped
//! `{"v", "id": "T-…", "created", "title"?, "messages": [{"role": "user"|"assistant"|
//! "info", "content": [{"type": "text", "text"} | tool_use | tool_result | thinking…],
//! "meta": {"sentAt"}}], "env": {"initial": {"cwd"?, "trees": [{"uri"}]}}}`.
//! Also read: messages `{"role", "text", "createdAt"}` (cass's sample).
//!
//! A `.json` file is an Amp thread when it has a `messages` array and its `id` or file
//! name starts with `T-`, or it sits in a `threads` / `threads3` folder: the message
//! shape alone is too common to tell Amp from other tools.
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - `user` and `assistant` messages with text are messages (text: a string `content`,
//!   else its `text` blocks, else `text`); `info` messages, tool results sent as user
//!   messages and replies with only tool calls are skipped and counted; `image` blocks
//!   set `has_attachment`;
//! - `conversation_id` is the thread `id`, else the file stem; the title `title`;
//!   `project` `env.initial.cwd`, else the first tree's `file://` URI as a path;
//!   `message_id` the message's `id`/`messageId`, else
//!   [`stable_id`](crate::ingest::stable_id) of (`amp`, thread id, position, text);
//! - the time is `meta.sentAt` (epoch ms), else `createdAt`/`timestamp`, else the
//!   nearest earlier one, else the thread's `created`, else the file's time
//!   (`timestamp_is_fallback`).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{chat_role, join_texts, kind_of, parse_time, read_json, str_field, FileImport, IngestError};

const SOURCE: &str = "amp";

/// The Amp importer (registered in [`super::IMPORTERS`]).
pub(super) struct Amp;

/// The registry's instance.
pub(super) static IMPORTER: Amp = Amp;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Amp",
    unit: "thread",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::XdgData("amp/threads"), &["*.json"])],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: None,
};

impl super::Importer for Amp {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        doc.parsed.as_ref().is_some_and(|parsed| looks_like(parsed, doc.path))
    }
}

/// True when `doc` (the file at `path`) is an Amp thread (used by `detect`).
pub(super) fn looks_like(doc: &Value, path: &Path) -> bool {
    let Some(obj) = doc.as_object() else {
        return false;
    };
    if !obj.get("messages").is_some_and(Value::is_array) {
        return false;
    }
    let thread_id = str_field(obj, "id").is_some_and(|id| id.starts_with("T-"))
        || path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("T-"));
    let in_threads = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "threads" || n == "threads3");
    thread_id || in_threads
}

/// Imports one thread file.
///
/// # Errors
/// [`IngestError::Io`] / [`IngestError::Json`] when it cannot be read or parsed,
/// [`IngestError::Shape`] when it has no `messages` array.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let doc = read_json(path)?;
    let Some((thread, messages)) = doc
        .as_object()
        .and_then(|o| Some((o, o.get("messages")?.as_array()?)))
    else {
        return Err(IngestError::Shape {
            path: path.to_path_buf(),
            reason: format!(
                "expected an Amp thread object with a `messages` array, found {}",
                kind_of(&doc)
            ),
        });
    };
    let mut records = Records::new(path, None);
    records.items(messages, |records, position, m| {
        let time = m
            .get("meta")
            .and_then(|meta| meta.get("sentAt"))
            .or_else(|| m.get("createdAt"))
            .or_else(|| m.get("timestamp"))
            .and_then(parse_time);
        let at = records.record(position, time);
        match pending_of(m, position) {
            Some(p) => records.push(Pending {
                time: at.time,
                earlier_time: at.earlier_time,
                ..p
            }),
            None => records.skip(),
        }
    });
    let id = str_field(thread, "id").map_or_else(|| file_stem(path), str::to_owned);
    let project = project_of(thread);
    let time = thread.get("created").and_then(parse_time);
    let named = Named {
        title: str_field(thread, "title"),
        project: project.as_deref(),
        ..Named::new(SOURCE, &id)
    };
    Ok(records.finish(&named, time.unwrap_or(fallback), None))
}

/// The pending message of a `user`/`assistant` thread message with text.
fn pending_of(m: &Map<String, Value>, position: usize) -> Option<Pending> {
    let role = chat_role(str_field(m, "role")?)?;
    let mut has_attachment = false;
    let text = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for b in blocks.iter().filter_map(Value::as_object) {
                match str_field(b, "type") {
                    Some("text") => texts.extend(str_field(b, "text")),
                    Some("image") => has_attachment = true,
                    _ => {}
                }
            }
            join_texts(texts)
        }
        _ => str_field(m, "text").unwrap_or_default().to_owned(),
    };
    Pending::said(position, role, text).map(|p| Pending {
        id: str_field(m, "id")
            .or_else(|| str_field(m, "messageId"))
            .map(str::to_owned),
        has_attachment,
        ..p
    })
}

/// `env.initial.cwd`, else the path of the first `file://` tree URI.
fn project_of(thread: &Map<String, Value>) -> Option<String> {
    let initial = thread.get("env")?.get("initial")?;
    if let Some(cwd) = initial.get("cwd").and_then(Value::as_str) {
        return Some(cwd.to_owned());
    }
    initial
        .get("trees")?
        .as_array()?
        .iter()
        .find_map(|t| t.get("uri").and_then(Value::as_str))
        .map(|uri| uri.strip_prefix("file://").unwrap_or(uri).to_owned())
}
