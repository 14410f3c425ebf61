//! Aider chat logs (`.aider.chat.history.md` in a project folder): Markdown that aider
//! appends to as a session runs.
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - a line `# aider chat started at <YYYY-MM-DD HH:MM:SS>` starts a session, which is
//!   one conversation; lines before the first such line form a session of their own;
//! - a run of `#### ` lines is one user message (the prefix removed, one line each);
//!   a blank line or any other line ends it;
//! - `> ` lines are aider's own output (tool notes, prompts, token counts): skipped and
//!   counted, and they end the message before them; `> Main model: <name> with …`
//!   sets the model of the session's assistant messages;
//! - any other run of lines (blank lines included) is one assistant message;
//! - `conversation_id` is the file name without `.aider.chat.history.md` (the folder
//!   name when nothing is left), `@` and the session's start text; `project` is the
//!   folder of a file named exactly `.aider.chat.history.md`; `message_id` is
//!   [`stable_id`](crate::ingest::stable_id) of (`aider`, conversation id, line, text);
//! - messages have no time of their own: each takes its session's start time (read as
//!   UTC, else the file's time) with `timestamp_is_fallback`.

use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::ingest::pending::{finish, Conversation, Pending};
use crate::ingest::{FileImport, IngestError};

const SOURCE: &str = "aider";

/// The Aider importer (registered in [`super::IMPORTERS`]).
pub(super) struct Aider;

/// The registry's instance.
pub(super) static IMPORTER: Aider = Aider;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Aider",
    unit: "chat log",
    locations: &[],
    note: Some("none: `.aider.chat.history.md` lives in each project, give its path"),
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: None,
};

impl super::Importer for Aider {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_path(&self, path: &Path) -> bool {
        path.file_name().is_some_and(|n| n.to_string_lossy().ends_with(SUFFIX)) && path.is_file()
    }
}

/// File name suffix of aider chat logs (used by `detect`).
pub(super) const SUFFIX: &str = ".aider.chat.history.md";

/// Line prefix that starts a session.
const STARTED: &str = "# aider chat started at ";

/// One session of the log.
#[derive(Default)]
struct Session {
    started: Option<String>,
    time: Option<DateTime<Utc>>,
    model: Option<String>,
    pending: Vec<Pending>,
}

/// The message being read: its kind, first line and lines.
struct Open {
    role: &'static str,
    line: usize,
    text: String,
}

/// Imports one chat log. `fallback` is the time of messages before any session line.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let bytes = fs_err::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = FileImport::default();
    let mut sessions = vec![Session::default()];
    let mut open: Option<Open> = None;

    let close = |open: &mut Option<Open>, sessions: &mut Vec<Session>| {
        let Some(o) = open.take() else { return };
        let text = o.text.trim_end();
        let Some(session) = sessions.last_mut() else {
            return;
        };
        if !text.trim().is_empty() {
            session.pending.push(Pending {
                line: o.line,
                role: o.role,
                text: text.to_owned(),
                model: (o.role == "assistant")
                    .then(|| session.model.clone())
                    .flatten(),
                earlier_time: session.time,
                ..Pending::default()
            });
        }
    };

    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim_end();
        if let Some(started) = line.strip_prefix(STARTED) {
            close(&mut open, &mut sessions);
            let started = started.trim();
            sessions.push(Session {
                started: Some(started.to_owned()),
                time: NaiveDateTime::parse_from_str(started, "%Y-%m-%d %H:%M:%S")
                    .ok()
                    .map(|t| t.and_utc()),
                ..Session::default()
            });
            continue;
        }
        if let Some(note) = line.strip_prefix('>') {
            close(&mut open, &mut sessions);
            out.skipped += 1;
            if let (Some(model), Some(session)) = (
                note.trim_start().strip_prefix("Main model: "),
                sessions.last_mut(),
            ) {
                let name = model.split(" with ").next().unwrap_or(model).trim();
                session.model = (!name.is_empty()).then(|| name.to_owned());
            }
            continue;
        }
        let user = if line == "####" {
            Some("")
        } else {
            line.strip_prefix("#### ")
        };
        let role = if user.is_some() { "user" } else { "assistant" };
        match (&mut open, user) {
            (Some(o), Some(text)) if o.role == "user" => {
                o.text.push('\n');
                o.text.push_str(text);
            }
            (Some(o), None) if o.role == "assistant" => {
                o.text.push('\n');
                o.text.push_str(line);
            }
            _ if user.is_none() && line.trim().is_empty() => close(&mut open, &mut sessions),
            _ => {
                close(&mut open, &mut sessions);
                open = Some(Open {
                    role,
                    line: line_no,
                    text: user.unwrap_or(line).to_owned(),
                });
            }
        }
    }
    close(&mut open, &mut sessions);

    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    let base = match file_name.strip_suffix(SUFFIX).unwrap_or(&file_name) {
        "" => folder
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        name => name.to_owned(),
    };
    let project = (file_name == SUFFIX).then(|| folder.map(|p| p.to_string_lossy().into_owned()));
    let project = project.flatten();
    for session in sessions {
        let id = match &session.started {
            Some(started) => format!("{base}@{started}"),
            None => base.clone(),
        };
        out.messages.extend(finish(
            session.pending,
            &Conversation {
                source: SOURCE,
                id: &id,
                title: None,
                project: project.as_deref(),
                time: session.time.unwrap_or(fallback),
                start_index: 0,
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_users_and_replies() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(SUFFIX);
        fs_err::write(
            &path,
            concat!(
                "\n# aider chat started at 2025-05-04 17:02:36\n\n",
                "> Main model: gemini/x with diff edit format  \n\n",
                "#### first line  \n#### second line  \n\n",
                "Reply one.\n\nStill reply one.\n\n",
                "> Tokens: 1k sent  \n\n",
                "#### /add a.rs  \n\n#### again  \n",
            ),
        )
        .expect("write");
        let out = import(&path, DateTime::UNIX_EPOCH).expect("import");
        let m = &out.messages;
        assert_eq!((m.len(), out.skipped), (4, 2));
        assert_eq!(m[0].content, "first line\nsecond line");
        assert_eq!(m[1].content, "Reply one.\n\nStill reply one.");
        assert_eq!(m[1].model.as_deref(), Some("gemini/x"));
        assert_eq!((m[2].content.as_str(), m[3].msg_index), ("/add a.rs", 3));
        assert!(m[0].timestamp_is_fallback);
        assert_eq!(m[0].timestamp.to_rfc3339(), "2025-05-04T17:02:36+00:00");
        assert!(m[0].conversation_id.ends_with("@2025-05-04 17:02:36"));
        assert!(m[0].project.is_some());
    }
}
