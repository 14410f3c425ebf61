//! GitHub Copilot CLI sessions, source `copilot`, under `$COPILOT_HOME` (default
//! `~/.copilot`):
//!
//! 1. **Event logs** `session-state/<sessionId>/events.jsonl` (older CLIs:
//!    `session-state/<sessionId>.jsonl`), one event per line
//!    `{"type", "id", "timestamp", "parentId", "data": {…}}`: `session.start`
//!    (`data.sessionId`, `data.context.cwd`), `session.model_change`
//!    (`data.newModel`), `user.message` (`data.content`, `data.attachments`),
//!    `assistant.message` (`data.content`, `data.toolRequests`), and
//!    `assistant.reasoning`, `tool.execution_*`, `session.*`, `abort`… A
//!    `workspace.yaml` beside `events.jsonl` gives `summary` (title) and `cwd`.
//!    Also read: flat events `{"type": "user.message", "prompt"}` /
//!    `{"type": "assistant.message", "output"}` with `session_id`, `cwd` and epoch-ms
//!    `timestamp` (cass's samples).
//!    - `user.message` / `assistant.message` events with text are messages; an
//!      assistant message that only requests tools (empty content), and every other
//!      event, is skipped and counted;
//!    - `conversation_id` is `session.start`'s `sessionId`, else the event's
//!      `session_id`, else the session folder name (for `events.jsonl`), else the
//!      file stem; `project` the start's `context.cwd`, else `cwd`; `model`
//!      (assistant) the latest `session.model_change`; `message_id` the event `id`,
//!      `parent_id` its `parentId`; non-empty `attachments` set `has_attachment`.
//!
//!    Event logs are re-read whole when they change.
//!
//! 2. **Legacy histories** `history-session-state/<name>.json`: `{"sessionId",
//!    "startTime", "chatMessages": [{"role": "user"|"assistant"|"tool"|"system",
//!    "content", "tool_calls"?}]}`; also read: `{"history": [{"role": "human"|"user"|
//!    "assistant", "content" | "result", "time"}], "workspacePath"}` (cass's sample).
//!    Detected by a `chatMessages` array, or a `history` array of `role` records
//!    without Gemini's `parts`.
//!    - `user`/`human` and `assistant` records with text are messages (text: a string,
//!      or `text` parts), `tool`/`system` records and tool-call-only replies are
//!      skipped and counted;
//!    - `conversation_id` is `sessionId`, else the file stem; `project`
//!      `workspacePath`; the time `time`/`timestamp`, else `startTime`.
//!
//! Text is stored exactly as written (no Unicode normalisation: `e` + U+0301 stays two
//! code points). Times without one of their own take the nearest earlier time, else the
//! session's start, else the file's time (`timestamp_is_fallback`).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{
    kind_of, parse_time, plain_text, read_json, str_field, FileImport, IngestError,
};

const SOURCE: &str = "copilot";

/// The GitHub Copilot CLI importer (registered in [`super::IMPORTERS`]).
pub(super) struct Copilot;

/// The registry's instance.
pub(super) static IMPORTER: Copilot = Copilot;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "GitHub Copilot CLI",
    unit: "session",
    locations: &[crate::ingest::locations::Location::all(
        crate::places::Root::VarOrHome { var: "COPILOT_HOME", home: ".copilot" },
        &["session-state/**/*.jsonl", "history-session-state/*.json"],
    )],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: Some(looks_like),
};

impl super::Importer for Copilot {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        match &doc.parsed {
            Some(parsed) => looks_like_history(parsed),
            None => !doc.whole && doc.contains(b"\"chatMessages\""),
        }
    }
}

/// Event types of the Copilot CLI log (prefixes), for `detect`.
const EVENT_PREFIXES: &[&str] = &["session.", "user.", "assistant.", "tool."];

/// True when one parsed JSON Lines record is a Copilot CLI event ([`super::About::looks_like`]).
fn looks_like(obj: &Map<String, Value>) -> bool {
    let Some(kind) = str_field(obj, "type") else {
        return false;
    };
    EVENT_PREFIXES.iter().any(|p| kind.starts_with(p))
        && (obj.get("data").is_some_and(Value::is_object)
            || obj.contains_key("prompt")
            || obj.contains_key("output"))
}

/// True when a parsed JSON document is a legacy Copilot CLI history (used by `detect`).
pub(super) fn looks_like_history(doc: &Value) -> bool {
    let Some(obj) = doc.as_object() else {
        return false;
    };
    if obj.get("chatMessages").is_some_and(Value::is_array) {
        return true;
    }
    obj.get("history")
        .and_then(Value::as_array)
        .and_then(|h| h.first())
        .and_then(Value::as_object)
        .is_some_and(|first| first.contains_key("role") && !first.contains_key("parts"))
}

/// Imports an event log (`.jsonl`) or a legacy history (`.json`).
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read; for `.json`, [`IngestError::Json`]
/// when it is not JSON and [`IngestError::Shape`] when it has no history array.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    if crate::ingest::has_ext(path, "jsonl") {
        import_events(path, fallback)
    } else {
        import_history(path, fallback)
    }
}

fn import_events(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, None);
    let mut session_id: Option<String> = None;
    let mut project: Option<String> = None;
    let mut model: Option<String> = None;
    let mut start: Option<DateTime<Utc>> = None;
    records.jsonl(|records, line, obj| {
        let data = obj.get("data").and_then(Value::as_object);
        let field = |key: &str| data.and_then(|d| str_field(d, key));
        let at = records.record(line, obj.get("timestamp").and_then(parse_time));
        if session_id.is_none() {
            session_id = str_field(&obj, "session_id").map(str::to_owned);
        }
        if project.is_none() {
            project = str_field(&obj, "cwd").map(str::to_owned);
        }
        let (role, text) = match str_field(&obj, "type") {
            Some("session.start") => {
                if let Some(id) = field("sessionId") {
                    session_id = Some(id.to_owned());
                }
                let cwd = data
                    .and_then(|d| d.get("context"))
                    .and_then(|c| c.get("cwd"))
                    .and_then(Value::as_str);
                if let Some(cwd) = cwd {
                    project = Some(cwd.to_owned());
                }
                start = start.or(field("startTime").and_then(|t| parse_time(&Value::from(t))));
                (None, None)
            }
            Some("session.model_change") => {
                model = field("newModel").map(str::to_owned).or(model.take());
                (None, None)
            }
            Some("user.message") => (
                Some("user"),
                field("content").or_else(|| str_field(&obj, "prompt")),
            ),
            Some("assistant.message") => (
                Some("assistant"),
                field("content").or_else(|| str_field(&obj, "output")),
            ),
            _ => (None, None),
        };
        let (Some(role), Some(text)) = (role, text.filter(|t| !t.trim().is_empty())) else {
            return records.skip();
        };
        records.push(Pending {
            id: str_field(&obj, "id").map(str::to_owned),
            parent: str_field(&obj, "parentId").map(str::to_owned),
            model: (role == "assistant")
                .then(|| field("model").map(str::to_owned).or_else(|| model.clone()))
                .flatten(),
            has_attachment: data
                .and_then(|d| d.get("attachments"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            ..at.message(role, text.to_owned())
        });
    })?;
    let workspace = workspace_yaml(path);
    let folder = (path.file_name().is_some_and(|n| n == "events.jsonl"))
        .then(|| path.parent().and_then(Path::file_name))
        .flatten()
        .map(|n| n.to_string_lossy().into_owned());
    let id = session_id.or(folder).unwrap_or_else(|| file_stem(path));
    let project = project.or_else(|| workspace.as_ref().and_then(|w| w.1.clone()));
    let time = start.unwrap_or_else(|| records.first_time_or(fallback));
    let named = Named {
        title: workspace.as_ref().and_then(|w| w.0.as_deref()),
        project: project.as_deref(),
        ..Named::new(SOURCE, &id)
    };
    Ok(records.finish(&named, time, None))
}

/// `(summary, cwd)` of the `workspace.yaml` beside an `events.jsonl`, when readable.
fn workspace_yaml(events: &Path) -> Option<(Option<String>, Option<String>)> {
    if events.file_name()? != "events.jsonl" {
        return None;
    }
    let text = fs_err::read_to_string(events.parent()?.join("workspace.yaml")).ok()?;
    let value: yaml_serde::Value = crate::yaml::parse(&text).ok()?;
    let get = |k: &str| {
        value
            .get(k)
            .and_then(yaml_serde::Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Some((get("summary"), get("cwd")))
}

fn import_history(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let doc = read_json(path)?;
    let Some(obj) = doc.as_object().filter(|_| looks_like_history(&doc)) else {
        return Err(IngestError::Shape {
            path: path.to_path_buf(),
            reason: format!(
                "expected a Copilot CLI history object with a `chatMessages` or `history` array, found {}",
                kind_of(&doc)
            ),
        });
    };
    let list = obj
        .get("chatMessages")
        .or_else(|| obj.get("history"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut records = Records::new(path, None);
    records.items(list, |records, position, r| {
        let time = r
            .get("time")
            .or_else(|| r.get("timestamp"))
            .and_then(parse_time);
        let at = records.record(position, time);
        let Some((role, text)) = history_record(r) else {
            return records.skip();
        };
        records.push(Pending {
            id: str_field(r, "id").map(str::to_owned),
            model: (role == "assistant")
                .then(|| str_field(r, "model").map(str::to_owned))
                .flatten(),
            ..at.message(role, text)
        });
    });
    let id = str_field(obj, "sessionId").map_or_else(|| file_stem(path), str::to_owned);
    let time = obj.get("startTime").and_then(parse_time);
    let time = time.unwrap_or_else(|| records.first_time_or(fallback));
    let named = Named {
        title: str_field(obj, "title"),
        project: str_field(obj, "workspacePath"),
        ..Named::new(SOURCE, &id)
    };
    Ok(records.finish(&named, time, None))
}

/// `(role, text)` of a legacy history record with text.
fn history_record(r: &Map<String, Value>) -> Option<(&'static str, String)> {
    let role = match str_field(r, "role")? {
        "user" | "human" => "user",
        "assistant" => "assistant",
        _ => return None,
    };
    let text = plain_text(r.get("content").or_else(|| r.get("result")));
    (!text.trim().is_empty()).then_some((role, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_event_log_with_workspace_yaml() {
        let dir = tempfile::tempdir().expect("temp dir");
        let session = dir.path().join("session-state/5fedbe45");
        fs_err::create_dir_all(&session).expect("mkdir");
        fs_err::write(
            session.join("workspace.yaml"),
            "id: 5fedbe45\ncwd: /home/me/app\nsummary: Fix the build\n",
        )
        .expect("write");
        let events = session.join("events.jsonl");
        fs_err::write(
            &events,
            concat!(
                r#"{"type":"session.start","data":{"sessionId":"5fedbe45","version":1,"startTime":"2026-01-30T01:28:10.216Z","context":{"cwd":"/home/me/app"}},"id":"e1","timestamp":"2026-01-30T01:28:10.216Z","parentId":null}"#,
                "\n",
                r#"{"type":"session.model_change","data":{"newModel":"claude-sonnet-4.5"},"id":"e2","timestamp":"2026-01-30T01:28:11Z","parentId":"e1"}"#,
                "\n",
                r#"{"type":"user.message","data":{"content":"why does it fail?","attachments":[]},"id":"e3","timestamp":"2026-01-30T01:28:12Z","parentId":"e2"}"#,
                "\n",
                r#"{"type":"assistant.message","data":{"messageId":"m1","content":"","toolRequests":[{"name":"bash"}]},"id":"e4","timestamp":"2026-01-30T01:28:13Z","parentId":"e3"}"#,
                "\n",
                r#"{"type":"tool.execution_complete","data":{"toolCallId":"t","success":true},"id":"e5","timestamp":"2026-01-30T01:28:14Z","parentId":"e4"}"#,
                "\n",
                r#"{"type":"assistant.message","data":{"messageId":"m2","content":"A missing feature flag."},"id":"e6","timestamp":"2026-01-30T01:28:15Z","parentId":"e5"}"#,
                "\n",
            ),
        )
        .expect("write");
        let out = import(&events, DateTime::UNIX_EPOCH).expect("import");
        assert_eq!((out.messages.len(), out.skipped), (2, 4));
        let m = &out.messages;
        assert_eq!(m[0].conversation_id, "5fedbe45");
        assert_eq!(m[0].conversation_title.as_deref(), Some("Fix the build"));
        assert_eq!(m[0].project.as_deref(), Some("/home/me/app"));
        assert_eq!(m[1].model.as_deref(), Some("claude-sonnet-4.5"));
        assert_eq!(m[1].message_id, "e6");
        assert_eq!(m[1].parent_id.as_deref(), Some("e5"));
    }
}
