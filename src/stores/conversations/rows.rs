//! One message as a row of `all_conversations`: the derived columns computed on append.

use chrono::{Datelike, Timelike};
use duckdb::params;

use crate::model::Message;

/// Appends one message, computing the derived columns. With `conversation`, the
/// per-conversation columns (`updated`, `is_first`, `is_last`,
/// `conversation_msg_count`, a missing `conversation_title`) come from it; without,
/// they are placeholders that `ConversationStore::merge_staging` fills in.
pub(super) fn append(
    app: &mut duckdb::Appender<'_>,
    m: &Message,
    conversation: Option<&ConversationStats>,
) -> duckdb::Result<()> {
    use duckdb::types::{TimeUnit, Value};
    let stamp = |t: chrono::DateTime<chrono::Utc>| {
        Value::Timestamp(TimeUnit::Microsecond, t.timestamp_micros())
    };
    let ts = m.timestamp.naive_utc();
    let flag = |b: bool| i32::from(b);
    let word_count = i64::try_from(m.content.split_whitespace().count()).unwrap_or(i64::MAX);
    // The characters cut at import count: `char_count` is the source text's length.
    let char_count =
        i64::try_from(m.content.chars().count().saturating_add(m.chars_cut)).unwrap_or(i64::MAX);
    let (updated, is_first, is_last, count) = match conversation {
        Some(c) => (
            c.newest,
            m.msg_index == c.first_index,
            m.msg_index == c.last_index,
            c.count,
        ),
        None => (m.timestamp, false, false, 0),
    };
    let title = m.conversation_title.as_deref().or_else(|| {
        conversation
            .and_then(|c| c.title.as_ref())
            .map(|(_, t)| t.as_str())
    });
    app.append_row(params![
        m.source,
        m.model,
        m.project,
        m.conversation_id,
        title,
        stamp(m.timestamp),
        stamp(updated),
        ts.year(),
        ts.month(),
        WEEKDAYS[ts.weekday().num_days_from_monday() as usize],
        ts.hour(),
        m.message_id,
        m.parent_id,
        m.msg_index,
        (!m.timestamp_is_fallback).then(|| stamp(m.timestamp)),
        m.timestamp_is_fallback,
        m.role,
        m.content_type,
        is_first,
        is_last,
        word_count,
        char_count,
        count,
        flag(m.content.contains("```")),
        flag(m.content.contains("http://") || m.content.contains("https://")),
        flag(m.content.contains('?')),
        flag(m.has_attachment),
        flag(m.has_citation),
        m.content,
        if m.timestamp_is_fallback {
            "conversation"
        } else {
            "message"
        },
        m.is_injected,
    ])
}

/// `day_of_week` values, Monday first (as chrono's `%A`).
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Per-conversation columns of a conversation stored in one go: computed from its
/// rows before they are appended, instead of an `UPDATE` afterwards.
pub(super) struct ConversationStats {
    count: i64,
    first_index: i64,
    last_index: i64,
    newest: chrono::DateTime<chrono::Utc>,
    /// Title of the latest message (by `msg_index`) that has one.
    title: Option<(i64, String)>,
}

impl ConversationStats {
    pub(super) fn new(m: &Message) -> Self {
        Self {
            count: 0,
            first_index: m.msg_index,
            last_index: m.msg_index,
            newest: m.timestamp,
            title: None,
        }
    }

    pub(super) fn add(&mut self, m: &Message) {
        self.count += 1;
        self.first_index = self.first_index.min(m.msg_index);
        self.last_index = self.last_index.max(m.msg_index);
        self.newest = self.newest.max(m.timestamp);
        if let Some(t) = &m.conversation_title {
            if self.title.as_ref().is_none_or(|(i, _)| m.msg_index >= *i) {
                self.title = Some((m.msg_index, t.clone()));
            }
        }
    }
}
