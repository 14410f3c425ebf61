//! Cline tasks, source `cline`: one folder per task,
//! `<VS Code globalStorage>/saoudrizwan.claude-dev/tasks/<taskId>/` with
//! `api_conversation_history.json` (the model's context: Anthropic messages
//! `[{"role", "content": string | [{"type": "text", "text"}, tool_use, tool_result…]}]`),
//! `ui_messages.json` (what the chat view shows: `[{"ts", "type": "say"|"ask",
//! "say"?, "ask"?, "text"?, "images"?, "partial"?}]`) and `task_metadata.json` (files
//! in context, model usage).
//!
//! The unit of import is **`ui_messages.json`**: it has the person's own words and
//! the replies as shown, each with a time (`ts`), while `api_conversation_history.json`
//! has no times and wraps every user turn in harness text (`<task>`, `<feedback>`,
//! `<environment_details>`, tool results sent as user messages). The corpus' task
//! folder agrees: its UI file holds both sides of the exchange, its API file one reply.
//! `api_conversation_history.json` and `task_metadata.json` are recognised but yield
//! no message: each of their records counts as skipped (an array's items, or 1).
//! Files are recognised by name (a name that ends in one of the three names, so
//! flattened copies such as `task1__ui_messages.json` are too).
//!
//! Mapping of `ui_messages.json`:
//! - the first `say: "text"` record is the task the person typed (`user`); later
//!   `say: "text"` records are replies (`assistant`); `say: "user_feedback"` is the
//!   person (`user`); `say: "completion_result"` is the final reply and `ask:
//!   "followup"` a question to the person (`assistant`, the `question` of its JSON
//!   text); everything else (`api_req_started`, tools, commands, reasoning,
//!   checkpoints…), `partial` records and records without text are skipped and counted;
//! - also read: records `{"role": "user"|"assistant", "content"|"text", "timestamp"}`
//!   (hand-made samples);
//! - `conversation_id` is the task folder name (the task id) when the file sits in
//!   `tasks/<id>/`, else the file stem; the title is `title` of a `task_metadata.json`
//!   beside it (real ones have none); `model` (assistant) is the last `model_usage`
//!   `model_id` of that file;
//! - `message_id` is the record's `ts`, else [`stable_id`](crate::ingest::stable_id) of
//!   (`cline`, task id, position, text); the time is `ts` / `timestamp` (epoch ms),
//!   else the nearest earlier one, else the file's time (`timestamp_is_fallback`);
//!   non-empty `images` set `has_attachment`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{chat_role, kind_of, parse_time, read_json, str_field, FileImport, IngestError};

const SOURCE: &str = "cline";

/// The Cline importer (registered in [`super::IMPORTERS`]).
pub(super) struct Cline;

/// The registry's instance.
pub(super) static IMPORTER: Cline = Cline;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Cline",
    unit: "task",
    locations: &[crate::ingest::locations::Location::all(
        crate::places::Root::AppConfig(""),
        &["{Code,Code - Insiders,VSCodium,Cursor,Windsurf}/User/globalStorage/saoudrizwan.claude-dev/tasks/*/ui_messages.json"],
    )],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: None,
};

impl super::Importer for Cline {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_path(&self, path: &Path) -> bool {
        crate::ingest::has_ext(path, "json") && is_task_file(path) && path.is_file()
    }
}

/// The task's UI transcript: the unit of import.
pub(super) const UI_MESSAGES: &str = "ui_messages.json";
/// The model's context: recognised, not imported.
const API_HISTORY: &str = "api_conversation_history.json";
/// Task metadata: recognised, not imported.
const METADATA: &str = "task_metadata.json";

/// True when the file name ends in one of Cline's task file names.
pub(super) fn is_task_file(path: &Path) -> bool {
    path.file_name()
        .map(|n| n.to_string_lossy())
        .is_some_and(|n| {
            [UI_MESSAGES, API_HISTORY, METADATA]
                .iter()
                .any(|s| n.ends_with(s))
        })
}

/// Imports one task file.
///
/// # Errors
/// [`IngestError::Io`] / [`IngestError::Json`] when it cannot be read or parsed,
/// [`IngestError::Shape`] when `ui_messages.json` is not an array.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doc = read_json(path)?;
    if !name.ends_with(UI_MESSAGES) {
        return Ok(FileImport {
            skipped: doc.as_array().map_or(1, Vec::len),
            ..FileImport::default()
        });
    }
    let Some(list) = doc.as_array() else {
        return Err(IngestError::Shape {
            path: path.to_path_buf(),
            reason: format!(
                "expected an array of Cline UI messages, found {}",
                kind_of(&doc)
            ),
        });
    };
    let task_dir = path.parent().filter(|d| {
        d.parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "tasks")
    });
    let task_id = task_dir
        .and_then(Path::file_name)
        .map_or_else(|| file_stem(path), |n| n.to_string_lossy().into_owned());
    let metadata = task_dir
        .map(|d| d.join(METADATA))
        .filter(|p| p.is_file())
        .and_then(|p| read_json(&p).ok());
    let title = metadata
        .as_ref()
        .and_then(|m| m.get("title"))
        .and_then(Value::as_str);
    let model = metadata
        .as_ref()
        .and_then(|m| m.get("model_usage"))
        .and_then(Value::as_array)
        .and_then(|u| u.last())
        .and_then(|u| u.get("model_id"))
        .and_then(Value::as_str);

    let mut records = Records::new(path, None);
    let mut seen_task = false;
    records.items(list, |records, position, obj| {
        let time = obj
            .get("ts")
            .or_else(|| obj.get("timestamp"))
            .and_then(parse_time);
        let at = records.record(position, time);
        let Some((role, text)) = role_and_text(obj, &mut seen_task) else {
            return records.skip();
        };
        records.push(Pending {
            id: obj
                .get("ts")
                .and_then(Value::as_i64)
                .map(|ts| ts.to_string()),
            model: (role == "assistant")
                .then(|| model.map(str::to_owned))
                .flatten(),
            has_attachment: obj
                .get("images")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            ..at.message(role, text)
        });
    });
    let time = records.first_time_or(fallback);
    let named = Named {
        title,
        ..Named::new(SOURCE, &task_id)
    };
    Ok(records.finish(&named, time, None))
}

/// `(role, text)` of a UI record that is a message with text.
fn role_and_text(obj: &Map<String, Value>, seen_task: &mut bool) -> Option<(&'static str, String)> {
    if obj.get("partial").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let text = str_field(obj, "text")
        .or_else(|| str_field(obj, "content"))
        .filter(|t| !t.trim().is_empty())?;
    if let Some(role) = str_field(obj, "role") {
        return Some((chat_role(role)?, text.to_owned()));
    }
    match (
        str_field(obj, "type")?,
        str_field(obj, "say"),
        str_field(obj, "ask"),
    ) {
        ("say", Some("text"), _) => {
            let role = if *seen_task { "assistant" } else { "user" };
            *seen_task = true;
            Some((role, text.to_owned()))
        }
        ("say", Some("user_feedback"), _) => Some(("user", text.to_owned())),
        ("say", Some("completion_result"), _) => Some(("assistant", text.to_owned())),
        ("ask", _, Some("followup")) => {
            // The text is JSON `{"question", "options"}` in current versions.
            let question = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v.get("question").and_then(Value::as_str).map(str::to_owned));
            Some(("assistant", question.unwrap_or_else(|| text.to_owned())))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_ui_messages_shape() {
        let dir = tempfile::tempdir().expect("temp dir");
        let task = dir.path().join("tasks/1700000000000");
        fs_err::create_dir_all(&task).expect("mkdir");
        fs_err::write(
            task.join(UI_MESSAGES),
            r#"[
              {"ts":1700000000000,"type":"say","say":"text","text":"Add a README"},
              {"ts":1700000000500,"type":"say","say":"api_req_started","text":"{\"request\":\"…\"}"},
              {"ts":1700000001000,"type":"say","say":"text","text":"I'll add it.","partial":false},
              {"ts":1700000002000,"type":"ask","ask":"followup","text":"{\"question\":\"Which title?\",\"options\":[]}"},
              {"ts":1700000003000,"type":"say","say":"user_feedback","text":"Demo"},
              {"ts":1700000004000,"type":"say","say":"completion_result","text":"Done."},
              {"ts":1700000005000,"type":"ask","ask":"completion_result","text":""}
            ]"#,
        )
        .expect("write");
        let out = import(&task.join(UI_MESSAGES), DateTime::UNIX_EPOCH).expect("import");
        let got: Vec<(&str, &str)> = out
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("user", "Add a README"),
                ("assistant", "I'll add it."),
                ("assistant", "Which title?"),
                ("user", "Demo"),
                ("assistant", "Done.")
            ]
        );
        assert_eq!(out.skipped, 2);
        assert!(out
            .messages
            .iter()
            .all(|m| m.conversation_id == "1700000000000"));
        assert_eq!(out.messages[0].message_id, "1700000000000");
    }
}
