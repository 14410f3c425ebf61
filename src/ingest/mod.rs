//! Importers from real on-disk formats into the stores.
//!
//! Each importer turns one file into canonical [`Message`] rows (conversations) and
//! reports problems as [`Fault`]s with path, line and reason instead of failing the run.
//! Importers know nothing about skills, engines or the CLI; writing goes through
//! [`crate::stores::conversations::ConversationStore`].

pub mod memories;

use std::path::{Path, PathBuf};

/// One message in the canonical shape of table `all_conversations`
/// (brain-mcp's L0 schema). Derived columns (year, month, word_count, has_question…)
/// are computed by [`Message::finish`]; importers fill the source fields.
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
    /// Stable message id: the source's own id when present, else a SHA-256 of
    /// (source, conversation id, position, text) — never salted, never time-based.
    pub message_id: String,
    /// Parent message id when the source records one.
    pub parent_id: Option<String>,
    /// 0-based position of the message in its conversation (as imported).
    pub msg_index: i64,
    /// Message time in UTC.
    pub timestamp: chrono::DateTime<chrono::Utc>,
    /// True when the source had no time for this message and the conversation's
    /// time was used instead (see `temporal_precision`).
    pub timestamp_is_fallback: bool,
    /// `user` or `assistant` (other roles are not imported as message text).
    pub role: String,
    /// Content type, e.g. `text`.
    pub content_type: String,
    /// The message text.
    pub content: String,
    /// True when the message had an attachment (image, file) in the source.
    pub has_attachment: bool,
    /// True when the source marks citations in the message.
    pub has_citation: bool,
}

/// A problem met while importing: the offending file, the 1-based line when the
/// format is line-oriented, and what was wrong. A fault never stops the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fault {
    /// File the fault was found in.
    pub path: PathBuf,
    /// 1-based line number, when known.
    pub line: Option<usize>,
    /// Human-readable reason, e.g. "invalid JSON: expected value at column 1".
    pub reason: String,
}

impl Fault {
    /// Builds a fault for `path` (and `line` when known).
    pub fn new(path: &Path, line: Option<usize>, reason: impl Into<String>) -> Self {
        Self { path: path.to_path_buf(), line, reason: reason.into() }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "`{}`:{line}: {}", self.path.display(), self.reason),
            None => write!(f, "`{}`: {}", self.path.display(), self.reason),
        }
    }
}

/// What one importer made of one file.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct FileImport {
    /// Messages parsed from the file, in conversation order.
    pub messages: Vec<Message>,
    /// Records that were not messages (tool calls, snapshots, metadata…) and were skipped.
    pub skipped: usize,
    /// Malformed records, reported and skipped.
    pub faults: Vec<Fault>,
}
