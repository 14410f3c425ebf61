//! The record loop the importers share, written once: [`Records`] reads a conversation's
//! records (the lines of a JSON Lines file from where a previous import stopped, or the
//! items of a document), keeps the clock ([`Clock`]), the skipped count and the faults
//! (with path and line), collects a [`Pending`] message per record the format keeps,
//! and at the end turns them into [`Message`]s ([`finish`]) with the resumption point
//! ([`cursor`]) when the file is append-only. A format keeps only what is its own: how
//! a record reads, and what the conversation's id, title and project are. (Formats
//! whose records are not one message each keep their own loop: generic JSON Lines,
//! where every line names its conversation; ChatGPT's node tree; Aider's markdown;
//! OpenCode's one-message files and database rows.)

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::{
    conversations_of, count_i64, kind_of, read_json, read_jsonl_from, stable_id, Cursor, Fault,
    FileImport, IngestError, JsonlEnd, Message,
};

/// A format's own cursor state: `(key, value)` pairs, each `None` left out.
pub(crate) type Saved<'a> = &'a [(&'a str, Option<&'a str>)];
/// Runs `each` over the conversations of an export file (an array of them, or one
/// object: [`conversations_of`]) with each one's 0-based position and object and the
/// file's import so far, to which it adds what it makes of that conversation; an entry
/// that is not an object is a fault naming its position.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] when it is
/// not JSON, [`IngestError::Shape`] when it is neither an array nor an object.
pub(crate) fn each_conversation(
    path: &Path,
    mut each: impl FnMut(usize, &Map<String, Value>, &mut FileImport),
) -> Result<FileImport, IngestError> {
    let doc = read_json(path)?;
    let mut out = FileImport::default();
    for (index, conversation) in conversations_of(&doc, path)?.into_iter().enumerate() {
        match conversation.as_object() {
            Some(conv) => each(index, conv, &mut out),
            None => out.faults.push(Fault::new(
                path,
                None,
                format!(
                    "conversation #{index}: expected an object, found {}",
                    kind_of(conversation)
                ),
            )),
        }
    }
    Ok(out)
}

/// One conversation's records being read: see the module docs.
pub(crate) struct Records<'a> {
    path: &'a Path,
    start: Option<&'a Cursor>,
    pending: Vec<Pending>,
    skipped: usize,
    read: usize,
    faults: Vec<Fault>,
    /// 1 when the file ended in a line a writer had not finished.
    unfinished: usize,
    /// Bytes the JSON Lines reader read ([`FileImport::jsonl_bytes_read`]).
    bytes_read: u64,
    clock: Clock,
}

/// Where one record stands: its position and times, from which its [`Pending`] starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    /// 1-based line number (JSON Lines) or position in the document.
    pub line: usize,
    /// The record's own time.
    pub time: Option<DateTime<Utc>>,
    /// Time of the nearest earlier record that had one.
    pub earlier_time: Option<DateTime<Utc>>,
}

impl Record {
    /// A message of `role` saying `text` at this record (the other fields default).
    pub(crate) fn message(&self, role: &'static str, text: String) -> Pending {
        Pending {
            line: self.line,
            role,
            text,
            time: self.time,
            earlier_time: self.earlier_time,
            ..Pending::default()
        }
    }
}

/// The conversation-wide fields a format knows once its records are read.
pub(crate) struct Named<'a> {
    /// Source name, e.g. `codex`.
    pub source: &'static str,
    /// Conversation id.
    pub id: &'a str,
    /// Conversation title.
    pub title: Option<&'a str>,
    /// Project of messages that have none of their own.
    pub project: Option<&'a str>,
}

impl<'a> Named<'a> {
    /// Conversation `id` of `source`, without title or project.
    pub(crate) fn new(source: &'static str, id: &'a str) -> Self {
        Self {
            source,
            id,
            title: None,
            project: None,
        }
    }
}

impl<'a> Records<'a> {
    /// A loop over the records of `path`, resuming at `start` (its clock and
    /// `msg_index`; JSON Lines formats also its offset) when given.
    pub(crate) fn new(path: &'a Path, start: Option<&'a Cursor>) -> Self {
        Self {
            path,
            start,
            pending: Vec::new(),
            skipped: 0,
            read: 0,
            faults: Vec::new(),
            unfinished: 0,
            bytes_read: 0,
            clock: Clock::resume(start),
        }
    }

    /// A value the previous import saved in its cursor (`None` without one).
    pub(crate) fn saved(&self, key: &str) -> Option<String> {
        self.start.and_then(|c| c.get(key))
    }

    /// Reads the JSON Lines file from the resumption point, calling `each` with this
    /// loop and every record's line number and object; a line that is not a JSON
    /// object is a fault with its line number. Returns where the last complete line
    /// ends (for [`Records::finish`]).
    ///
    /// # Errors
    /// [`IngestError::Io`] when the file cannot be opened, positioned or read.
    pub(crate) fn jsonl(
        &mut self,
        mut each: impl FnMut(&mut Self, usize, Map<String, Value>),
    ) -> Result<JsonlEnd, IngestError> {
        let (path, start) = (self.path, self.start);
        let mut faults = Vec::new();
        let end = read_jsonl_from(path, start, &mut faults, |line, obj| {
            self.read += 1;
            each(self, line, obj);
        });
        faults.append(&mut self.faults);
        self.faults = faults;
        if let Ok(end) = &end {
            self.unfinished = usize::from(end.unfinished);
            self.bytes_read = end.read;
        }
        end
    }

    /// Runs `each` over the items of a document's record list with this loop and each
    /// item's 0-based position; an item that is not a JSON object is counted as skipped.
    pub(crate) fn items<'v>(
        &mut self,
        items: impl IntoIterator<Item = &'v Value>,
        mut each: impl FnMut(&mut Self, usize, &'v Map<String, Value>),
    ) {
        for (position, item) in items.into_iter().enumerate() {
            match item.as_object() {
                Some(obj) => each(self, position, obj),
                None => self.skip(),
            }
        }
    }

    /// Notes one record at `line` (1-based line or position) and its own `time`: ticks
    /// the clock and returns where the record stands.
    pub(crate) fn record(&mut self, line: usize, time: Option<DateTime<Utc>>) -> Record {
        let earlier_time = self.clock.tick(time);
        Record {
            line,
            time,
            earlier_time,
        }
    }

    /// Keeps one message.
    pub(crate) fn push(&mut self, message: Pending) {
        self.pending.push(message);
    }

    /// Counts one record that is not a message.
    pub(crate) fn skip(&mut self) {
        self.skipped += 1;
    }

    /// The messages kept so far (to update one in place).
    pub(crate) fn pending_mut(&mut self) -> &mut Vec<Pending> {
        &mut self.pending
    }

    /// Counts every record [`Records::jsonl`] read that left no kept message as
    /// skipped, for a format that decides which records to keep only at the end.
    pub(crate) fn skip_the_rest(&mut self) {
        self.skipped = self.read.saturating_sub(self.pending.len());
    }

    /// Replaces the kept messages (a format that decides at the end which to keep).
    pub(crate) fn keep(&mut self, pending: Vec<Pending>) {
        self.pending = pending;
    }

    /// Reports a malformed record (`line` when known) and goes on.
    pub(crate) fn fault(&mut self, line: Option<usize>, reason: impl Into<String>) {
        self.faults.push(Fault::new(self.path, line, reason));
    }

    /// The first and latest times seen.
    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }

    /// The first time seen, else `fallback`: the time of messages that have none.
    pub(crate) fn first_time_or(&self, fallback: DateTime<Utc>) -> DateTime<Utc> {
        self.clock.first.unwrap_or(fallback)
    }

    /// The import: the kept messages as [`Message`]s of conversation `named` (see
    /// [`finish`]; `time` for messages with no time of their own or earlier, `msg_index`
    /// going on from a resumed import), the skipped count and the faults. With `end`
    /// (append-only formats) also the cursor there, holding the clock and `saved`
    /// (the format's own state, each `None` left out).
    pub(crate) fn finish(
        self,
        named: &Named<'_>,
        time: DateTime<Utc>,
        end: Option<(JsonlEnd, Saved<'_>)>,
    ) -> FileImport {
        let start_index = self.start.map_or(0, |c| c.next_index);
        let cursor = end.map(|(end, saved)| {
            let mut cursor = cursor(end, start_index, &self.pending, self.clock);
            for (key, value) in saved {
                cursor.set(key, *value);
            }
            cursor
        });
        let messages = finish(
            self.pending,
            &Conversation {
                source: named.source,
                id: named.id,
                title: named.title,
                project: named.project,
                time,
                start_index,
            },
        );
        FileImport {
            messages,
            skipped: self.skipped,
            faults: self.faults,
            unfinished: self.unfinished,
            cursor,
            jsonl_bytes_read: self.bytes_read,
        }
    }
}

/// A message as read from one record, before the conversation-wide fields are known.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// 1-based line number (or position) of the record; part of the fallback id.
    pub line: usize,
    /// `user` or `assistant`.
    pub role: &'static str,
    /// The message text.
    pub text: String,
    /// The source's own message id, when it has one.
    pub id: Option<String>,
    /// The source's parent message id, when it has one.
    pub parent: Option<String>,
    /// Model name, when known for this message.
    pub model: Option<String>,
    /// This message's own project; `None` takes the conversation's.
    pub project: Option<String>,
    /// The record's own time.
    pub time: Option<DateTime<Utc>>,
    /// Time of the nearest earlier record that had one.
    pub earlier_time: Option<DateTime<Utc>>,
    /// True when the message had an attachment.
    pub has_attachment: bool,
    /// True when the source marks citations in the message.
    pub has_citation: bool,
    /// True for text the person did not write (see [`super::injected`]).
    pub injected: bool,
}

impl Pending {
    /// The message `role` says in `text` at `line` (the other fields unknown), or
    /// `None` when `text` is blank: a record without text imports no message.
    pub(crate) fn said(line: usize, role: &'static str, text: String) -> Option<Self> {
        (!text.trim().is_empty()).then(|| Self {
            line,
            role,
            text,
            ..Self::default()
        })
    }
}

/// The conversation-wide fields [`finish`] gives every message.
pub(crate) struct Conversation<'a> {
    /// Source name, e.g. `codex`.
    pub source: &'static str,
    /// Conversation id.
    pub id: &'a str,
    /// Conversation title.
    pub title: Option<&'a str>,
    /// Project of messages that have none of their own.
    pub project: Option<&'a str>,
    /// Time of messages with no time of their own and no earlier one.
    pub time: DateTime<Utc>,
    /// `msg_index` of the first message.
    pub start_index: i64,
}

/// Turns pending records into messages, in order: a record without id gets
/// [`stable_id`] of (source, conversation id, line, text), one without time the
/// nearest earlier time (else the conversation's) with `timestamp_is_fallback`.
pub(crate) fn finish(pending: Vec<Pending>, conversation: &Conversation<'_>) -> Vec<Message> {
    let c = conversation;
    pending
        .into_iter()
        .enumerate()
        .map(|(index, p)| {
            let message_id =
                p.id.unwrap_or_else(|| stable_id(&[c.source, c.id, &p.line.to_string(), &p.text]));
            let (timestamp, timestamp_is_fallback) = match p.time {
                Some(t) => (t, false),
                None => (p.earlier_time.unwrap_or(c.time), true),
            };
            Message {
                source: c.source.to_owned(),
                model: p.model,
                project: p.project.or_else(|| c.project.map(str::to_owned)),
                conversation_id: c.id.to_owned(),
                conversation_title: c.title.map(str::to_owned),
                message_id,
                parent_id: p.parent,
                msg_index: c
                    .start_index
                    .saturating_add(i64::try_from(index).unwrap_or(i64::MAX)),
                timestamp,
                timestamp_is_fallback,
                role: p.role.to_owned(),
                content_type: "text".to_owned(),
                content: p.text,
                chars_cut: 0,
                has_attachment: p.has_attachment,
                has_citation: p.has_citation,
                is_injected: p.injected,
            }
        })
        .collect()
}

/// The first and the latest time seen in a file so far.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Clock {
    /// The first time seen.
    pub first: Option<DateTime<Utc>>,
    /// The latest time seen.
    pub last: Option<DateTime<Utc>>,
}

impl Clock {
    /// The clock as saved in `start` (empty without one).
    pub(crate) fn resume(start: Option<&Cursor>) -> Self {
        Self {
            first: start.and_then(|c| c.time("first_time")),
            last: start.and_then(|c| c.time("last_time")),
        }
    }

    /// Notes a record's time and returns the time before it (its `earlier_time`).
    pub(crate) fn tick(&mut self, time: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
        let earlier = self.last;
        if let Some(t) = time {
            self.first.get_or_insert(t);
            self.last = Some(t);
        }
        earlier
    }
}

/// The resumption point after `end`: counts the pending messages on complete lines
/// and saves the clock; the importer adds its own context.
pub(crate) fn cursor(end: JsonlEnd, start_index: i64, pending: &[Pending], clock: Clock) -> Cursor {
    let mut cursor = Cursor {
        offset: end.offset,
        line: end.line,
        next_index: start_index + count_i64(pending.iter().filter(|p| p.line <= end.line)),
        partial: end.partial,
        context: std::collections::BTreeMap::new(),
    };
    cursor.set("first_time", clock.first.map(|t| t.to_rfc3339()));
    cursor.set("last_time", clock.last.map(|t| t.to_rfc3339()));
    cursor
}

/// The file name without its extension (the conversation id of last resort).
pub(crate) fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
