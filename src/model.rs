//! The records ingest produces and stores keep: a conversation [`Message`] and a
//! [`Memory`]. Plain data shared by `ingest` (which builds them) and `stores` (which
//! persists them), so neither depends on the other. No I/O here.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// One message in the canonical shape of table `all_conversations`
/// (brain-mcp's L0 schema). Derived columns (year, month, word_count, has_question…)
/// are computed by the store when rows are inserted; importers fill the source fields.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Message {
    /// Source tool, e.g. `claude-code`, `chatgpt`.
    pub source: String,
    /// Model name when the source records one.
    pub model: Option<String>,
    /// Project (working directory or project folder) when known.
    pub project: Option<String>,
    /// Stable conversation id from the source (session id, conversation id).
    pub conversation_id: String,
    /// Conversation title when the source records one.
    pub conversation_title: Option<String>,
    /// Stable message id: the source's own id when present, else a lowercase-hex
    /// SHA-256 of (source, conversation id, line or position, text) — never salted,
    /// never time-based. Rows are keyed by (source, conversation id, message id), so
    /// re-importing a file adds nothing.
    pub message_id: String,
    /// Parent message id when the source records one.
    pub parent_id: Option<String>,
    /// 0-based position of the message in its conversation (as imported).
    pub msg_index: i64,
    /// Message time in UTC.
    pub timestamp: DateTime<Utc>,
    /// True when the source had no time for this message and the conversation's
    /// time was used instead (see `temporal_precision`).
    pub timestamp_is_fallback: bool,
    /// `user` or `assistant` (other roles are not imported as message text).
    pub role: String,
    /// Content type, e.g. `text`.
    pub content_type: String,
    /// The message text: at most [`crate::ingest::MAX_STORED_CHARS`] characters, the
    /// first of the source's text.
    pub content: String,
    /// Characters of the source's text left out at import because it was longer than
    /// [`crate::ingest::MAX_STORED_CHARS`]; 0 for a message stored whole. The store's
    /// `char_count` counts them, so `char_count` above the content's length marks a cut.
    pub chars_cut: usize,
    /// True when the message had an attachment (image, file) in the source.
    pub has_attachment: bool,
    /// True when the source marks citations in the message.
    pub has_citation: bool,
    /// True for a `user` message the person did not write: text a harness injected
    /// (reminders, command wrappers, continuation summaries, Codex context preambles;
    /// see `ingest::injected`). Stored, but kept out of user-role search by default.
    pub is_injected: bool,
}

/// One memory as stored (without its embedding).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Memory {
    /// Stable id (see [`Memory::stable_id`]).
    pub id: String,
    /// Short title.
    pub title: String,
    /// Free-form type, lowercased: `decision`, `fact`, `bug`, `feedback`, `note`…
    #[serde(rename = "type")]
    pub kind: String,
    /// Tags, in source order, without duplicates.
    pub tags: Vec<String>,
    /// Creation time, UTC (second precision).
    pub created: DateTime<Utc>,
    /// Last update time, UTC (second precision); date filters apply to this.
    pub updated: DateTime<Utc>,
    /// Markdown body.
    pub body: String,
    /// Paths the memory's author read when capturing it.
    pub files_read: Vec<String>,
    /// Paths the memory's author modified when capturing it.
    pub files_modified: Vec<String>,
    /// Where the memory came from (file path, optionally `#section`), when imported.
    pub origin: Option<String>,
}

impl Memory {
    /// A stable id from a key (an origin path, or title and body): `m-` plus the first
    /// 16 hex digits of its SHA-256. Never salted, never time-based.
    pub fn stable_id(key: &str) -> String {
        let digest = Sha256::digest(key.as_bytes());
        format!("m-{}", hex::encode(&digest[..8]))
    }

    /// Text the embedding is computed from: title, tags and body.
    pub fn embedding_text(&self) -> String {
        format!("{}\n{}\n{}", self.title, self.tags.join(" "), self.body)
    }
}
