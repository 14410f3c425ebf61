//! Pieces shared by the record-by-record importers (Claude Code, Codex, Gemini CLI,
//! pi): a message as read from one record ([`Pending`]), the times seen so far
//! ([`Clock`]), the resumption point ([`cursor`]) and the step that turns pending
//! records into [`Message`]s once the conversation-wide fields are known ([`finish`]).

use std::path::Path;

use chrono::{DateTime, Utc};

use super::{count_i64, stable_id, Cursor, JsonlEnd, Message};

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
