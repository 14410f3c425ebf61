//! OpenCode sessions, source `opencode`, in both of OpenCode's storages under
//! `$XDG_DATA_HOME/opencode` (default `~/.local/share/opencode`, on macOS too):
//!
//! 1. **JSON files** (OpenCode ≤ 1.1) in `storage/`:
//!    `session/<projectID>/<sessionID>.json` (`{"id", "projectID", "directory",
//!    "title", "time": {"created", "updated"}}`), `message/<sessionID>/<messageID>.json`
//!    (`{"id", "sessionID", "role", "parentID"?, "modelID"?, "time": {"created",
//!    "completed"?}}`, no text) and `part/<messageID>/<partID>.json` (`{"id",
//!    "messageID", "type": "text"|"reasoning"|"tool"|"file"|"step-start"…, "text"?,
//!    "synthetic"?}`).
//!
//!    The unit of import is the **message file**: it becomes one message whose text is
//!    its parts' text, found at `<storage>/part/<messageID>/*.json` (in file-name order,
//!    which is creation order for OpenCode's sortable ids); the title and project come
//!    from `<storage>/session/*/<sessionID>.json`, and `msg_index` is the file's rank
//!    among the message files of its session folder (ids sort by creation). Session and
//!    part files are recognised (so they are not unknown-format faults when given
//!    explicitly) but yield no message: each counts as one skipped record. A message
//!    file outside that layout (its parts cannot be found) is a [`Fault`] and yields
//!    nothing; so does a message whose parts have no text (skipped, counted).
//!
//!    Incremental ingest tracks files, not these links: a part (or the session title)
//!    that changes after its message file was imported is not seen until the message
//!    file itself changes (OpenCode rewrites it when the reply completes, which covers
//!    streaming replies), and a message deleted by a revert keeps its row and shifts the
//!    rank of later ones only when they are re-imported.
//!
//! 2. **SQLite `opencode.db`** (OpenCode ≥ 1.2 migrated the files into it): tables
//!    `session(id, directory, title, time_created…)`, `message(id, session_id,
//!    time_created, data)` and `part(id, message_id, session_id, time_created, data)`,
//!    where `data` holds the JSON of the file shapes above without the ids. The whole
//!    database is one unit, opened read-only; every session is imported, messages in
//!    (`time_created`, id) order.
//!
//! Mapping, both storages:
//! - `role` `user` / `assistant` messages are messages, others skipped; the text is the
//!   `text` parts joined by a newline, leaving out `synthetic` (harness-written) and
//!   `ignored` ones; a user message with only synthetic text keeps it with
//!   `is_injected`. `reasoning`, `tool`, `step-*` and `patch` parts are not text; a
//!   `file` part sets `has_attachment`;
//! - `conversation_id` is the session id, the title the session's `title`, `project`
//!   its `directory` (else the message's `path.cwd`); `message_id` the message id,
//!   `parent_id` its `parentID`; `model` (assistant) `modelID`;
//! - the time is `time.created` (epoch ms), else the session's creation time
//!   (`timestamp_is_fallback`).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{finish, Conversation, Pending};
use crate::ingest::{
    chat_role, join_texts, kind_of, parse_time, read_json, str_field, Fault, FileImport, IngestError,
};

const SOURCE: &str = "opencode";

/// The OpenCode importer (registered in [`super::IMPORTERS`]).
pub(super) struct OpenCode;

/// The registry's instance.
pub(super) static IMPORTER: OpenCode = OpenCode;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "OpenCode",
    unit: "the database; one message file",
    locations: &[crate::ingest::locations::Location::first_of(
        crate::places::Root::XdgData("opencode"),
        // OpenCode 1.2 migrated the JSON files into the database and keeps them.
        &["opencode.db", "storage/message/*/*.json"],
    )],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: None,
};

impl super::Importer for OpenCode {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_path(&self, path: &Path) -> bool {
        path.file_name().is_some_and(|n| n == "opencode.db") && crate::ingest::detect::is_sqlite(path)
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        match &doc.parsed {
            Some(parsed) => kind_of_doc(parsed).is_some(),
            None => !doc.whole && kind_of_path(doc.path).is_some(),
        }
    }
}

/// Which file of the JSON storage a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `session/<projectID>/<sessionID>.json`.
    Session,
    /// `message/<sessionID>/<messageID>.json`.
    Message,
    /// `part/<messageID>/<partID>.json`.
    Part,
}

/// The storage file kind of a parsed JSON document (used by `detect`).
pub(super) fn kind_of_doc(doc: &Value) -> Option<Kind> {
    let obj = doc.as_object()?;
    let id = obj.get("id").is_some_and(Value::is_string);
    if !id {
        return None;
    }
    if obj.contains_key("messageID") && obj.get("type").is_some_and(Value::is_string) {
        Some(Kind::Part)
    } else if obj.get("sessionID").is_some_and(Value::is_string)
        && obj.get("role").is_some_and(Value::is_string)
    {
        Some(Kind::Message)
    } else if obj.get("projectID").is_some_and(Value::is_string) {
        Some(Kind::Session)
    } else {
        None
    }
}

/// The storage file kind of a path in OpenCode's layout
/// (`…/storage/{session,message,part}/<folder>/<id>.json`), for files too large to
/// parse in `detect`.
pub(super) fn kind_of_path(path: &Path) -> Option<Kind> {
    let kind_dir = path.parent()?.parent()?;
    if kind_dir.parent()?.file_name()? != "storage" {
        return None;
    }
    match kind_dir.file_name()?.to_str()? {
        "session" => Some(Kind::Session),
        "message" => Some(Kind::Message),
        "part" => Some(Kind::Part),
        _ => None,
    }
}

/// Imports a storage JSON file or an `opencode.db`.
///
/// # Errors
/// [`IngestError::Io`] / [`IngestError::Json`] when the file cannot be read or parsed,
/// [`IngestError::Shape`] when a JSON file is none of the storage kinds,
/// [`IngestError::Sqlite`] when the database cannot be opened or queried.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    if crate::ingest::has_ext(path, "db") {
        return import_db(path, fallback);
    }
    let doc = read_json(path)?;
    let kind = kind_of_doc(&doc).or_else(|| kind_of_path(path));
    let mut out = FileImport::default();
    match kind {
        Some(Kind::Session | Kind::Part) => out.skipped = 1,
        Some(Kind::Message) => import_message_file(path, &doc, fallback, &mut out),
        None => {
            return Err(IngestError::Shape {
                path: path.to_path_buf(),
                reason: format!(
                    "expected an OpenCode session, message or part object, found {}",
                    kind_of(&doc)
                ),
            })
        }
    }
    Ok(out)
}

/// Session fields a message takes.
#[derive(Debug, Default, Clone)]
struct Session {
    title: Option<String>,
    directory: Option<String>,
    created: Option<DateTime<Utc>>,
}

impl Session {
    fn of(obj: &Map<String, Value>) -> Self {
        Self {
            title: str_field(obj, "title").map(str::to_owned),
            directory: str_field(obj, "directory").map(str::to_owned),
            created: obj
                .get("time")
                .and_then(|t| t.get("created"))
                .and_then(parse_time),
        }
    }

    /// The fields of session `id`'s messages, numbered from `start_index`; `fallback`
    /// is their time when the session has none.
    fn conversation<'a>(
        &'a self,
        id: &'a str,
        fallback: DateTime<Utc>,
        start_index: i64,
    ) -> Conversation<'a> {
        Conversation {
            source: SOURCE,
            id,
            title: self.title.as_deref(),
            project: self.directory.as_deref(),
            time: self.created.unwrap_or(fallback),
            start_index,
        }
    }
}

fn import_message_file(path: &Path, doc: &Value, fallback: DateTime<Utc>, out: &mut FileImport) {
    let Some(info) = doc.as_object() else {
        out.faults.push(Fault::new(
            path,
            None,
            format!(
                "expected an OpenCode message object, found {}",
                kind_of(doc)
            ),
        ));
        return;
    };
    // <storage>/message/<sessionID>/<messageID>.json
    let storage = path
        .parent()
        .and_then(Path::parent)
        .filter(|d| d.file_name().is_some_and(|n| n == "message"))
        .and_then(Path::parent);
    let Some(storage) = storage else {
        out.skipped = 1;
        out.faults.push(Fault::new(
            path,
            None,
            "OpenCode message file outside its storage layout \
             (`storage/message/<session>/<message>.json`): its parts cannot be found",
        ));
        return;
    };
    let message_id = str_field(info, "id").unwrap_or_default();
    let session_id = str_field(info, "sessionID").unwrap_or_default();
    let mut parts = Vec::new();
    for part_path in json_files(&storage.join("part").join(message_id)) {
        match read_json(&part_path) {
            Ok(part) => parts.push(part),
            Err(e) => out.faults.push(e.to_fault(&part_path)),
        }
    }
    let session = find_session(storage, session_id)
        .and_then(|p| read_json(&p).ok())
        .and_then(|s| s.as_object().map(Session::of))
        .unwrap_or_default();
    // Rank among the session's message files: OpenCode ids sort by creation time.
    let index = path.parent().map_or(0, |dir| {
        json_files(dir)
            .iter()
            .take_while(|p| p.file_name() < path.file_name())
            .count()
    });
    match pending_of(info, &parts, 0) {
        Some(p) => {
            let start_index = i64::try_from(index).unwrap_or(i64::MAX);
            out.messages = finish(
                vec![p],
                &session.conversation(session_id, fallback, start_index),
            );
        }
        None => out.skipped = 1,
    }
}

/// `*.json` files directly in `dir`, sorted by name (none when `dir` is missing).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs_err::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| crate::ingest::has_ext(p, "json") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// `<storage>/session/<any project>/<sessionID>.json`, when it exists.
fn find_session(storage: &Path, session_id: &str) -> Option<PathBuf> {
    let name = format!("{session_id}.json");
    fs_err::read_dir(storage.join("session"))
        .ok()?
        .filter_map(Result::ok)
        .map(|project| project.path().join(&name))
        .find(|p| p.is_file())
}

/// The pending message of a message `info` with its `parts`, when it is a user or
/// assistant message with text.
fn pending_of(info: &Map<String, Value>, parts: &[Value], position: usize) -> Option<Pending> {
    let role = chat_role(str_field(info, "role")?)?;
    let mut texts = Vec::new();
    let mut synthetic = Vec::new();
    let mut has_attachment = false;
    for part in parts.iter().filter_map(Value::as_object) {
        match str_field(part, "type") {
            Some("text") => {
                let Some(text) = str_field(part, "text") else {
                    continue;
                };
                let flag = |k: &str| part.get(k).and_then(Value::as_bool).unwrap_or(false);
                if flag("ignored") {
                    continue;
                }
                if flag("synthetic") {
                    synthetic.push(text);
                } else {
                    texts.push(text);
                }
            }
            Some("file") => has_attachment = true,
            _ => {}
        }
    }
    let (text, injected) = match join_texts(texts) {
        t if !t.trim().is_empty() => (t, false),
        _ if role == "user" => (join_texts(synthetic), true),
        _ => (String::new(), false),
    };
    Pending::said(position, role, text).map(|p| Pending {
        id: str_field(info, "id").map(str::to_owned),
        parent: str_field(info, "parentID").map(str::to_owned),
        model: (role == "assistant")
            .then(|| str_field(info, "modelID").map(str::to_owned))
            .flatten(),
        project: info
            .get("path")
            .and_then(|p| p.get("cwd"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        time: info
            .get("time")
            .and_then(|t| t.get("created"))
            .and_then(parse_time),
        has_attachment,
        injected,
        ..p
    })
}

fn import_db(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let conn = crate::ingest::open_sqlite_read_only(path)?;
    let sqlite = |source| IngestError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let mut out = FileImport::default();
    let tables = crate::ingest::sqlite_tables(&conn).map_err(sqlite)?;
    if !["session", "message", "part"]
        .iter()
        .all(|t| tables.iter().any(|have| have == t))
    {
        return Err(IngestError::Shape {
            path: path.to_path_buf(),
            reason: "expected OpenCode tables `session`, `message` and `part`".to_owned(),
        });
    }
    let parse = |what: &str, id: &str, data: &str, out: &mut FileImport| match serde_json::from_str::<
        Value,
    >(data)
    {
        Ok(Value::Object(obj)) => Some(obj),
        Ok(other) => {
            out.faults.push(Fault::new(
                path,
                None,
                format!(
                    "{what} `{id}`: expected a JSON object, found {}",
                    kind_of(&other)
                ),
            ));
            None
        }
        Err(e) => {
            out.faults.push(Fault::new(
                path,
                None,
                format!("{what} `{id}`: invalid JSON: {e}"),
            ));
            None
        }
    };
    let run = || -> Result<_, rusqlite::Error> {
        let mut sessions = std::collections::HashMap::new();
        let mut stmt = conn.prepare("SELECT id, title, directory, time_created FROM session")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })?;
        for row in rows {
            let (id, title, directory, created) = row?;
            let created = created.and_then(|ms| parse_time(&Value::from(ms)));
            sessions.insert(
                id,
                Session {
                    title: title.filter(|t| !t.is_empty()),
                    directory: directory.filter(|d| !d.is_empty()),
                    created,
                },
            );
        }
        let mut parts: std::collections::HashMap<String, Vec<(String, String)>> =
            std::collections::HashMap::new();
        let mut stmt =
            conn.prepare("SELECT id, message_id, data FROM part ORDER BY message_id, id")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                crate::ingest::sqlite_text(r.get_ref(2)?),
            ))
        })?;
        for row in rows {
            let (id, message_id, data) = row?;
            parts.entry(message_id).or_default().push((id, data));
        }
        let mut stmt = conn.prepare(
            "SELECT id, session_id, time_created, data FROM message ORDER BY session_id, time_created, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<i64>>(2)?,
                crate::ingest::sqlite_text(r.get_ref(3)?),
            ))
        })?;
        let mut messages = Vec::new();
        for row in rows {
            messages.push(row?);
        }
        Ok((sessions, parts, messages))
    };
    let (sessions, mut parts, messages) = run().map_err(sqlite)?;

    let flush = |session_id: &str, pending: Vec<Pending>, out: &mut FileImport| {
        let session = sessions.get(session_id).cloned().unwrap_or_default();
        out.messages.extend(finish(
            pending,
            &session.conversation(session_id, fallback, 0),
        ));
    };
    let mut current: Option<String> = None;
    let mut pending: Vec<Pending> = Vec::new();
    let mut position = 0usize;
    for (id, session_id, created, data) in messages {
        if current.as_deref() != Some(session_id.as_str()) {
            if let Some(done) = current.take() {
                flush(&done, std::mem::take(&mut pending), &mut out);
            }
            current = Some(session_id.clone());
            position = 0;
        }
        position += 1;
        let Some(mut info) = parse("message", &id, &data, &mut out) else {
            continue;
        };
        // The row's columns are the file's `id` and `time.created`.
        info.insert("id".to_owned(), Value::from(id.clone()));
        if info.get("time").and_then(|t| t.get("created")).is_none() {
            if let Some(ms) = created {
                info.insert("time".to_owned(), serde_json::json!({ "created": ms }));
            }
        }
        let message_parts: Vec<Value> = parts
            .remove(&id)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(part_id, data)| parse("part", &part_id, &data, &mut out))
            .map(Value::Object)
            .collect();
        match pending_of(&info, &message_parts, position) {
            Some(p) => pending.push(p),
            None => out.skipped += 1,
        }
    }
    if let Some(done) = current {
        flush(&done, pending, &mut out);
    }
    Ok(out)
}
