//! Cursor: agent transcripts and the chat store `state.vscdb`.
//!
//! Three on-disk shapes, all with source `cursor`:
//!
//! 1. **Agent transcripts** `~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl`
//!    (newer builds: `agent-transcripts/<id>/<id>.jsonl`), one JSON object per line
//!    `{"role": "user"|"assistant", "message": {"content": [{"type": "text", "text"}…]}}`.
//!    Hand-made samples (brain-mcp) write Claude Code's line shape instead:
//!    `{"type": "user", "message": {"role", "content"}, "uuid", "sessionId", "timestamp"}`.
//!    That shape cannot be told from Claude Code by content, so a `.jsonl` file is a
//!    Cursor transcript when a folder of its path is named `agent-transcripts`, or when
//!    a line has Cursor's own shape (a top-level string `role` next to a `message`
//!    object and no `type`).
//!    - a line is a message when its `role` (else `type`) is `user` or `assistant` and
//!      its `message.content` (string or blocks) has text; `text` blocks are the text,
//!      `image` blocks set `has_attachment`, tool and thinking blocks are not text;
//!      other lines are skipped and counted;
//!    - Cursor wraps what the person typed in `<user_query>…</user_query>` among
//!      context blocks (`<attached_files>`…); when present only the query is kept;
//!    - `conversation_id` is the first `sessionId`, else the file stem (the transcript
//!      id); `project` is the `<project>` folder name before `agent-transcripts` (a slug
//!      of the workspace path, not a path); `message_id` is `uuid`/`id`, else
//!      [`stable_id`](crate::ingest::stable_id) of (`cursor`, conversation id, line, text);
//!    - the time is the line's `timestamp`; real transcripts have none, so messages
//!      take the file's modification time with `timestamp_is_fallback`.
//!
//!    Transcripts are re-read whole when they change (not resumed from an offset).
//!
//! 2. **`state.vscdb`** (SQLite; `globalStorage/state.vscdb` holds the chats, each
//!    `workspaceStorage/<id>/state.vscdb` may hold older ones), opened read-only and
//!    never written. Table `cursorDiskKV` rows `composerData:<composerId>` (a
//!    conversation: `name`, `createdAt`, `modelConfig.modelName`, and either
//!    `fullConversationHeadersOnly: [{"bubbleId"}]` pointing at rows
//!    `bubbleId:<composerId>:<bubbleId>`, or an inline `conversation` array of bubbles);
//!    legacy table `ItemTable` key `workbench.panel.aichat.view.aichat.chatdata`
//!    (`{"tabs": [{"tabId", "chatTitle", "bubbles": [{"type": "user"|"ai", "text"}]}]}`).
//!
//! 3. **A JSON dump of those rows**: an array of `{"key", "value"}` rows (what
//!    `sqlite3 -json state.vscdb "SELECT key, value FROM cursorDiskKV"` prints; `value`
//!    a JSON string or object), or cass's test wrapper
//!    `{"composer_key", "composer_data", "bubble_rows": [{"key", "value"}]}`. Detected by
//!    a `"composerData:` key in its first bytes.
//!
//! Shapes 2 and 3 share one mapping (a composer is one conversation):
//! - bubbles are taken in header order; bubble `type` 1 is `user`, 2 `assistant`;
//!   any other type (tool output, status) is skipped and counted, as is a bubble
//!   without text. The text is `text`, else `rawText`, else a string `content`;
//!   non-empty `images` set `has_attachment`;
//! - `conversation_id` is the composer id, the title its `name`, `message_id` the
//!   bubble id; `model` (assistant) the bubble's `modelInfo.modelName`, else the
//!   composer's `modelConfig.modelName`; `project` the first `workspaceProjectDir`;
//! - the time is the bubble's `timestamp`/`createdAt` (epoch ms or ISO), else
//!   `timingInfo.clientStartTime`, else the nearest earlier one, else the composer's
//!   `createdAt` (`timestamp_is_fallback`);
//! - a header whose bubble row is missing is a [`Fault`].
//!
//! A `state.vscdb` is imported whole whenever its size or time changes. Cursor writes
//! through SQLite's write-ahead log (`state.vscdb-wal`): rows still only in the log
//! are read (the database is opened read-only, not immutable, so the log is seen), but
//! the database file's own size and time may not change until the log is
//! checkpointed, so the incremental ingest can skip a database that has new chats.

use std::collections::HashMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{
    chat_role, join_texts, kind_of, parse_time, read_json, str_field, Fault, FileImport, IngestError,
};

const SOURCE: &str = "cursor";

/// The Cursor importer (registered in [`super::IMPORTERS`]).
pub(super) struct CursorImporter;

/// The registry's instance.
pub(super) static IMPORTER: CursorImporter = CursorImporter;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Cursor",
    unit: "transcript; the whole database",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::Home(".cursor/projects"), &["**/agent-transcripts/**/*.jsonl"]),
        crate::ingest::locations::Location::all(
            crate::places::Root::AppConfig("Cursor/User"),
            &["globalStorage/state.vscdb", "workspaceStorage/*/state.vscdb"],
        ),],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: Some(looks_like),
};

impl super::Importer for CursorImporter {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_path(&self, path: &Path) -> bool {
        // A transcript's lines may have Claude Code's shape, so the location decides.
        (crate::ingest::has_ext(path, "vscdb") && crate::ingest::detect::is_sqlite(path))
            || (crate::ingest::has_ext(path, "jsonl") && is_transcript_path(path) && path.is_file())
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        doc.contains(b"\"composerData:")
    }
}

/// Folder that holds Cursor agent transcripts.
const TRANSCRIPTS_DIR: &str = "agent-transcripts";

/// True when a folder of `path` is named `agent-transcripts`.
pub(super) fn is_transcript_path(path: &Path) -> bool {
    path.parent()
        .is_some_and(|p| p.components().any(|c| c.as_os_str() == TRANSCRIPTS_DIR))
}

/// True when one parsed JSON Lines record has Cursor's own transcript shape: a string
/// `role`, a `message` object and no `type` (Claude Code lines always have `type`).
fn looks_like(obj: &Map<String, Value>) -> bool {
    obj.get("role").is_some_and(Value::is_string)
        && obj.get("message").is_some_and(Value::is_object)
        && !obj.contains_key("type")
}

/// Imports a transcript (`.jsonl`), a `state.vscdb` or a JSON dump of its rows.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] /
/// [`IngestError::Shape`] for a dump that is not JSON or not rows,
/// [`IngestError::Sqlite`] when the database cannot be opened or queried.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    if crate::ingest::has_ext(path, "jsonl") {
        import_transcript(path, fallback)
    } else if crate::ingest::has_ext(path, "vscdb") {
        import_vscdb(path, fallback)
    } else {
        import_dump(path, fallback)
    }
}

fn import_transcript(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, None);
    let mut session_id: Option<String> = None;
    records.jsonl(|records, line, obj| {
        if session_id.is_none() {
            session_id = str_field(&obj, "sessionId").map(str::to_owned);
        }
        let at = records.record(line, obj.get("timestamp").and_then(parse_time));
        match transcript_line(&obj, line) {
            Some(p) => records.push(Pending {
                time: at.time,
                earlier_time: at.earlier_time,
                ..p
            }),
            None => records.skip(),
        }
    })?;
    let id = session_id.unwrap_or_else(|| file_stem(path));
    let project = transcript_project(path);
    let time = records.first_time_or(fallback);
    let named = Named {
        project: project.as_deref(),
        ..Named::new(SOURCE, &id)
    };
    Ok(records.finish(&named, time, None))
}

/// The `<project>` folder name in `…/<project>/agent-transcripts/…`.
fn transcript_project(path: &Path) -> Option<String> {
    let parts: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
    let at = parts.iter().rposition(|c| *c == TRANSCRIPTS_DIR)?;
    at.checked_sub(1)
        .map(|i| parts[i].to_string_lossy().into_owned())
}

/// The pending message of one transcript line, when it is a message with text.
fn transcript_line(obj: &Map<String, Value>, line: usize) -> Option<Pending> {
    let message = obj.get("message").and_then(Value::as_object)?;
    let role = str_field(obj, "role")
        .or_else(|| str_field(obj, "type"))
        .or_else(|| str_field(message, "role"))
        .and_then(chat_role)?;
    let (text, has_attachment) = content_text(message.get("content"));
    let text = if role == "user" {
        user_query(&text).unwrap_or(text)
    } else {
        text
    };
    Pending::said(line, role, text).map(|p| Pending {
        id: str_field(obj, "uuid")
            .or_else(|| str_field(obj, "id"))
            .map(str::to_owned),
        parent: str_field(obj, "parentUuid").map(str::to_owned),
        model: (role == "assistant")
            .then(|| str_field(message, "model").map(str::to_owned))
            .flatten(),
        has_attachment,
        ..p
    })
}

/// The text of a string or an array of content blocks, and whether an image was there.
fn content_text(content: Option<&Value>) -> (String, bool) {
    match content {
        Some(Value::String(s)) => (s.clone(), false),
        Some(Value::Array(blocks)) => {
            let mut attachment = false;
            let mut texts = Vec::new();
            for block in blocks {
                match block {
                    Value::String(s) => texts.push(s.as_str()),
                    Value::Object(b) => match str_field(b, "type") {
                        Some("text") => texts.extend(str_field(b, "text")),
                        Some("image") => attachment = true,
                        _ => {}
                    },
                    _ => {}
                }
            }
            (join_texts(texts), attachment)
        }
        _ => (String::new(), false),
    }
}

/// The texts inside `<user_query>…</user_query>`, joined, when there is such a block.
fn user_query(text: &str) -> Option<String> {
    const OPEN: &str = "<user_query>";
    const CLOSE: &str = "</user_query>";
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let end = after.find(CLOSE).unwrap_or(after.len());
        found.push(after[..end].trim());
        rest = after.get(end + CLOSE.len()..).unwrap_or("");
    }
    (!found.is_empty()).then(|| join_texts(found))
}

/// One key/value row of `cursorDiskKV` (or of a dump of it), the value parsed.
type Row = (String, Value);

fn import_vscdb(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let conn = crate::ingest::open_sqlite_read_only(path)?;
    let sqlite = |source| IngestError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let tables = crate::ingest::sqlite_tables(&conn).map_err(sqlite)?;
    let mut out = FileImport::default();
    let mut rows: Vec<Row> = Vec::new();
    let read_rows = |sql: &str, out: &mut FileImport| -> Result<Vec<Row>, rusqlite::Error> {
        let mut stmt = conn.prepare(sql)?;
        let raw = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, crate::ingest::sqlite_text(r.get_ref(1)?)))
        })?;
        let mut parsed = Vec::new();
        for row in raw {
            let (key, value) = row?;
            match serde_json::from_str::<Value>(&value) {
                Ok(v) => parsed.push((key, v)),
                Err(e) => out.faults.push(Fault::new(
                    path,
                    None,
                    format!("row `{key}`: invalid JSON: {e}"),
                )),
            }
        }
        Ok(parsed)
    };
    if tables.iter().any(|t| t == "cursorDiskKV") {
        rows.extend(
            read_rows(
                "SELECT key, value FROM cursorDiskKV \
                 WHERE key LIKE 'composerData:%' OR key LIKE 'bubbleId:%' ORDER BY key",
                &mut out,
            )
            .map_err(sqlite)?,
        );
    }
    let mut legacy = Vec::new();
    if tables.iter().any(|t| t == "ItemTable") {
        legacy = read_rows(
            "SELECT key, value FROM ItemTable \
             WHERE key = 'workbench.panel.aichat.view.aichat.chatdata'",
            &mut out,
        )
        .map_err(sqlite)?;
    }
    import_rows(path, rows, fallback, &mut out);
    for (_, chat) in legacy {
        import_legacy_chat(path, &chat, fallback, &mut out);
    }
    Ok(out)
}

fn import_dump(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let doc = read_json(path)?;
    let mut out = FileImport::default();
    let mut rows: Vec<Row> = Vec::new();
    let take_row = |item: &Value, rows: &mut Vec<Row>, out: &mut FileImport| {
        let key = item.get("key").and_then(Value::as_str);
        let value = match item.get("value") {
            Some(Value::String(s)) => serde_json::from_str(s).ok(),
            Some(v @ Value::Object(_)) => Some(v.clone()),
            _ => None,
        };
        match (key, value) {
            (Some(k), Some(v)) => rows.push((k.to_owned(), v)),
            _ => out.faults.push(Fault::new(
                path,
                None,
                format!(
                    "expected a row {{\"key\", \"value\"}} with a JSON value, found {}",
                    kind_of(item)
                ),
            )),
        }
    };
    match &doc {
        Value::Array(items) => {
            for item in items {
                take_row(item, &mut rows, &mut out);
            }
        }
        Value::Object(obj) if obj.contains_key("composer_key") => {
            if let (Some(k), Some(v)) = (str_field(obj, "composer_key"), obj.get("composer_data")) {
                rows.push((k.to_owned(), v.clone()));
            }
            for item in obj
                .get("bubble_rows")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                take_row(item, &mut rows, &mut out);
            }
        }
        other => {
            return Err(IngestError::Shape {
                path: path.to_path_buf(),
                reason: format!(
                "expected an array of Cursor `cursorDiskKV` rows {{\"key\", \"value\"}}, found {}",
                kind_of(other)
            ),
            })
        }
    }
    import_rows(path, rows, fallback, &mut out);
    Ok(out)
}

/// Turns `composerData:*` rows, with their `bubbleId:*:*` rows, into conversations.
fn import_rows(path: &Path, rows: Vec<Row>, fallback: DateTime<Utc>, out: &mut FileImport) {
    let mut composers: Vec<(String, Value)> = Vec::new();
    let mut bubbles: HashMap<String, Value> = HashMap::new();
    for (key, value) in rows {
        if let Some(id) = key.strip_prefix("composerData:") {
            composers.push((id.to_owned(), value));
        } else if let Some(rest) = key.strip_prefix("bubbleId:") {
            bubbles.insert(rest.to_owned(), value);
        }
    }
    for (composer_id, data) in composers {
        let Some(composer) = data.as_object() else {
            out.faults.push(Fault::new(
                path,
                None,
                format!(
                    "composer `{composer_id}`: expected an object, found {}",
                    kind_of(&data)
                ),
            ));
            continue;
        };
        // (bubble id, bubble) in conversation order.
        let mut ordered: Vec<(String, &Value)> = Vec::new();
        if let Some(headers) = composer
            .get("fullConversationHeadersOnly")
            .and_then(Value::as_array)
        {
            for header in headers {
                let Some(bubble_id) = header.get("bubbleId").and_then(Value::as_str) else {
                    out.skipped += 1;
                    continue;
                };
                match bubbles.get(&format!("{composer_id}:{bubble_id}")) {
                    Some(b) => ordered.push((bubble_id.to_owned(), b)),
                    None => out.faults.push(Fault::new(
                        path,
                        None,
                        format!(
                            "composer `{composer_id}`: bubble `{bubble_id}` has no `bubbleId:{composer_id}:{bubble_id}` row"
                        ),
                    )),
                }
            }
        } else if let Some(inline) = composer.get("conversation").and_then(Value::as_array) {
            for (i, b) in inline.iter().enumerate() {
                let id = b
                    .get("bubbleId")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("#{i}"), str::to_owned);
                ordered.push((id, b));
            }
        }
        let model = composer
            .get("modelConfig")
            .and_then(|m| m.get("modelName"))
            .and_then(Value::as_str);
        let mut records = Records::new(path, None);
        let mut project: Option<String> = None;
        for (index, (bubble_id, bubble)) in ordered.into_iter().enumerate() {
            let Some(b) = bubble.as_object() else {
                records.skip();
                continue;
            };
            if project.is_none() {
                project = str_field(b, "workspaceProjectDir").map(str::to_owned);
            }
            let time = b
                .get("timestamp")
                .or_else(|| b.get("createdAt"))
                .and_then(parse_time)
                .or_else(|| {
                    b.get("timingInfo")
                        .and_then(|t| t.get("clientStartTime"))
                        .and_then(parse_time)
                });
            let at = records.record(index, time);
            match bubble_message(b, index, bubble_id, model) {
                Some(p) => records.push(Pending {
                    time: at.time,
                    earlier_time: at.earlier_time,
                    ..p
                }),
                None => records.skip(),
            }
        }
        let time = composer.get("createdAt").and_then(parse_time);
        let named = Named {
            title: str_field(composer, "name"),
            project: project.as_deref(),
            ..Named::new(SOURCE, &composer_id)
        };
        out.append(records.finish(&named, time.unwrap_or(fallback), None));
    }
}

/// The pending message of one bubble, when it is a user or assistant bubble with text.
fn bubble_message(
    b: &Map<String, Value>,
    index: usize,
    bubble_id: String,
    composer_model: Option<&str>,
) -> Option<Pending> {
    let role = match b.get("type").and_then(Value::as_i64)? {
        1 => "user",
        2 => "assistant",
        _ => return None,
    };
    let text = str_field(b, "text")
        .or_else(|| str_field(b, "rawText"))
        .or_else(|| str_field(b, "content"))?;
    let own_model = b
        .get("modelInfo")
        .and_then(|m| m.get("modelName"))
        .and_then(Value::as_str);
    Pending::said(index, role, text.to_owned()).map(|p| Pending {
        id: Some(bubble_id),
        model: (role == "assistant")
            .then(|| own_model.or(composer_model).map(str::to_owned))
            .flatten(),
        has_attachment: b
            .get("images")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty()),
        ..p
    })
}

/// The legacy `ItemTable` chat data: each tab is a conversation of `user`/`ai` bubbles.
fn import_legacy_chat(path: &Path, chat: &Value, fallback: DateTime<Utc>, out: &mut FileImport) {
    let tabs = chat
        .get("tabs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (position, tab) in tabs.enumerate() {
        let id = tab.get("tabId").and_then(Value::as_str).map_or_else(
            || crate::ingest::stable_id(&[SOURCE, "tab", &position.to_string()]),
            str::to_owned,
        );
        let mut records = Records::new(path, None);
        let bubbles = tab.get("bubbles").and_then(Value::as_array);
        for (index, bubble) in bubbles.into_iter().flatten().enumerate() {
            let role = match bubble.get("type").and_then(Value::as_str) {
                Some("user") => "user",
                Some("ai") => "assistant",
                _ => {
                    records.skip();
                    continue;
                }
            };
            let text = bubble.get("text").and_then(Value::as_str).unwrap_or("");
            if text.trim().is_empty() {
                records.skip();
                continue;
            }
            let time = bubble
                .get("timestamp")
                .or_else(|| bubble.get("createdAt"))
                .and_then(parse_time);
            let at = records.record(index, time);
            records.push(Pending {
                id: bubble.get("id").and_then(Value::as_str).map(str::to_owned),
                model: bubble
                    .get("modelType")
                    .and_then(Value::as_str)
                    .filter(|_| role == "assistant")
                    .map(str::to_owned),
                ..at.message(role, text.to_owned())
            });
        }
        let time = records.first_time_or(fallback);
        let named = Named {
            title: tab.get("chatTitle").and_then(Value::as_str),
            ..Named::new(SOURCE, &id)
        };
        out.append(records.finish(&named, time, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_query_keeps_only_the_query() {
        assert_eq!(
            user_query("<attached_files>x</attached_files>\n<user_query>\nfix it\n</user_query>")
                .as_deref(),
            Some("fix it")
        );
        assert_eq!(user_query("plain"), None);
        assert_eq!(user_query("<user_query>cut").as_deref(), Some("cut"));
    }

    #[test]
    fn transcript_in_native_layout() {
        let dir = tempfile::tempdir().expect("temp dir");
        let folder = dir
            .path()
            .join("projects/home-me-app/agent-transcripts/abc");
        fs_err::create_dir_all(&folder).expect("mkdir");
        let path = folder.join("abc.jsonl");
        fs_err::write(
            &path,
            concat!(
                r#"{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\nwhy?\n</user_query>"}]}}"#,
                "\n",
                r#"{"role":"assistant","message":{"content":[{"type":"text","text":"Because."},{"type":"tool_use","name":"x"}]}}"#,
                "\n",
                r#"{"role":"tool","message":{"content":"out"}}"#,
                "\n",
            ),
        )
        .expect("write");
        assert!(is_transcript_path(&path));
        let out = import(&path, DateTime::UNIX_EPOCH).expect("import");
        assert_eq!((out.messages.len(), out.skipped), (2, 1));
        let m = &out.messages;
        assert_eq!(m[0].content, "why?");
        assert_eq!(m[1].content, "Because.");
        assert_eq!(m[0].conversation_id, "abc");
        assert_eq!(m[0].project.as_deref(), Some("home-me-app"));
        assert!(m[0].timestamp_is_fallback);
    }
}
