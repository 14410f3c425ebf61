//! Importers from real on-disk formats into the stores.
//!
//! Each importer turns one file into canonical [`Message`] rows (conversations) and
//! reports problems as [`Fault`]s with path, line and reason instead of failing the run.
//! Importers know nothing about skills, engines or the CLI; writing goes through
//! [`crate::stores::conversations::ConversationStore`].
//!
//! Formats live in [`formats`], one file per tool, each an importer; their order in
//! `formats::IMPORTERS` is the detection priority ([`detect`]) and their declared
//! default locations are what [`discover`] searches (and the README table shows).
//! Shared pieces: [`read`] (JSON Lines and JSON readers), `pending` (the record → message
//! step), [`sqlite`], [`injected`] (harness text), [`locations`].
//!
//! Entry points:
//! - [`detect`] tells the [`Format`] of a file from its extension and first bytes;
//! - [`import_file`] parses one file into a [`FileImport`] (nothing is stored);
//! - [`discover`] lists the default transcript locations of this machine;
//! - [`ingest_paths`] walks files and directories, stores them in batched
//!   transactions (one file's rows always with its state) and returns an
//!   [`IngestSummary`]; it skips files unchanged since the
//!   last run, reads grown append-only files from where it stopped, and imports
//!   `*.parquet` files shaped like `all_conversations` (brain-mcp's export) directly.
//!
//! Importers never read the wall clock: a message without a time gets an earlier time
//! of the same conversation (flagged with `timestamp_is_fallback`), and ids are either
//! the source's own or a SHA-256 of stable fields.

mod detect;
mod driver;
mod formats;
pub mod injected;
pub(crate) mod locations;
mod pending;
pub(crate) mod read;
#[cfg(test)]
mod readme_table;
pub(crate) mod sqlite;
pub mod watched;

pub mod memories;

pub use crate::model::Message;
pub use detect::detect;
pub use driver::{
    ingest_paths, ingest_paths_with, FileSummary, IngestOptions, IngestSummary, SourceCounts,
};
pub(crate) use read::{
    chat_role, content_texts, conversations_of, count_i64, join_texts, kind_of, parse_time,
    part_texts, plain_text, read_json, read_jsonl_from, str_field, strip_bom, JsonlEnd,
};
pub use read::{MAX_ID_CHARS, MAX_STORED_CHARS};
pub(crate) use sqlite::{open_sqlite_read_only, sqlite_tables, sqlite_text};

use std::path::{Path, PathBuf};

/// A problem met while importing: the offending file, the 1-based line when the
/// format is line-oriented, and what was wrong. A fault never stops the run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fault {
    /// File the fault was found in (serialised lossily when not UTF-8).
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// 1-based line number, when known.
    pub line: Option<usize>,
    /// Human-readable reason, e.g. "invalid JSON: expected value at column 1".
    pub reason: String,
}

/// Serialises a path as a string, replacing bytes that are not UTF-8 with U+FFFD, so
/// one odd file name cannot fail a whole `--json` report.
pub(crate) fn lossy_path<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

impl Fault {
    /// Builds a fault for `path` (and `line` when known).
    pub fn new(path: &Path, line: Option<usize>, reason: impl Into<String>) -> Self {
        Self {
            path: path.to_path_buf(),
            line,
            reason: reason.into(),
        }
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
    /// Last lines left unread because a writer had not finished them (JSON Lines
    /// formats: 0 or 1 per file); read by the next import, never a fault.
    pub unfinished: usize,
    /// For append-only JSON Lines formats ([`Format::is_append_only`]): where a later
    /// import of the same file, grown by appending, can go on. `None` for
    /// whole-document formats.
    pub cursor: Option<Cursor>,
    /// Bytes the JSON Lines reader read: the lines from the resumption point on, or
    /// only the new end of a last line still being written ([`Cursor::partial`]); 0
    /// for formats read otherwise.
    pub jsonl_bytes_read: u64,
}

impl FileImport {
    /// Adds what another conversation of the same file gave: its messages after these,
    /// its skipped count and its faults (a multi-conversation file has no cursor).
    pub(crate) fn append(&mut self, other: FileImport) {
        self.messages.extend(other.messages);
        self.skipped += other.skipped;
        self.faults.extend(other.faults);
        self.unfinished += other.unfinished;
        self.jsonl_bytes_read += other.jsonl_bytes_read;
    }
}

/// A resumption point in an append-only JSON Lines file: the end of the last complete
/// (newline-terminated) line read, and what the importer knew there. A last line
/// without a newline is imported but not consumed, so it is read again (same ids,
/// same `msg_index`) once the writer finishes it — and, while it is still being
/// written, only its new bytes are scanned for the newline ([`Cursor::partial`]).
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cursor {
    /// Byte offset just after the last complete line.
    pub offset: u64,
    /// 1-based number of that line (0 at the start of the file).
    pub line: usize,
    /// `msg_index` of the next message.
    pub next_index: i64,
    /// Bytes after `offset` read without finding a newline: the start of a last line
    /// still being written. A read resuming here scans only the bytes after them for
    /// the newline, and reads and parses the line once it came (or once the line may
    /// be a whole object), so a line growing for a minute costs each import its new
    /// bytes. 0 when there was none (or it is unknown).
    #[serde(default)]
    pub partial: u64,
    /// Importer state carried over (session id, project, model, latest time…), as
    /// string values keyed by the importer's own names.
    pub context: std::collections::BTreeMap<String, String>,
}

impl Cursor {
    /// A context value.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.context.get(key).cloned()
    }

    /// A context value that holds an RFC 3339 time.
    pub(crate) fn time(&self, key: &str) -> Option<chrono::DateTime<chrono::Utc>> {
        self.context
            .get(key)
            .and_then(|t| crate::time::parse_timestamp(t))
    }

    /// Sets (or, for `None`, leaves out) a context value.
    pub(crate) fn set(&mut self, key: &str, value: Option<impl ToString>) {
        if let Some(v) = value {
            self.context.insert(key.to_owned(), v.to_string());
        }
    }
}

/// Errors that stop one file from being imported at all. The driver
/// ([`ingest_paths`]) turns each into a [`Fault`] for that file and goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The file could not be opened or read (the message names the file).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file is not in any format [`detect`] recognises.
    #[error("`{}`: not a recognised transcript format", .0.display())]
    UnknownFormat(PathBuf),
    /// A whole-document format (ChatGPT export) is not valid JSON.
    #[error("`{}`: invalid JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The document is valid JSON but not shaped like the format at all
    /// (e.g. a ChatGPT export that is a number).
    #[error("`{}`: {reason}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// What was expected.
        reason: String,
    },
    /// A SQLite source (Cursor `state.vscdb`, `opencode.db`) could not be opened or
    /// queried.
    #[error("`{}`: SQLite: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The store refused a batch.
    #[error(transparent)]
    Store(#[from] crate::stores::StoreError),
}

impl IngestError {
    /// This error as a file-level [`Fault`] (no line) for `path`.
    pub fn to_fault(&self, path: &Path) -> Fault {
        let reason = match self {
            // These already name the file; keep the reason short.
            Self::UnknownFormat(_) => "not a recognised transcript format".to_owned(),
            Self::Json { source, .. } => format!("invalid JSON: {source}"),
            Self::Shape { reason, .. } => reason.clone(),
            Self::Sqlite { source, .. } => format!("cannot read the SQLite database: {source}"),
            Self::Io(e) => format!("cannot read: {e}"),
            Self::Store(e) => format!("cannot store: {e}"),
        };
        Fault::new(path, None, reason)
    }
}

/// A transcript format: one of the registered importers, named by its source.
/// Compares, orders, prints and serialises as its [`Format::source`] (`claude-code`,
/// `chatgpt`…).
#[derive(Clone, Copy)]
pub struct Format(&'static dyn formats::Importer);

impl Format {
    /// True for JSON Lines formats written only by appending (Claude Code, Codex, pi,
    /// generic): a grown file is imported from where the last import stopped. Gemini
    /// CLI JSONL sessions rewrite records (`$set`), so they are re-read whole; so are
    /// Cursor transcripts, Copilot CLI event logs and Antigravity transcripts (their
    /// importers keep no resumption point yet), and every whole-document format.
    pub fn is_append_only(self) -> bool {
        self.0.is_append_only()
    }

    /// The format whose [`Format::source`] is `source`.
    pub fn from_source(source: &str) -> Option<Self> {
        formats::by_source(source).map(Self)
    }

    /// The value written to the `source` column for this format.
    pub fn source(self) -> &'static str {
        self.0.about().source
    }

    /// Every format, in detection priority.
    pub fn all() -> impl Iterator<Item = Self> {
        formats::IMPORTERS.iter().map(|i| Self(*i))
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.source() == other.source()
    }
}

impl Eq for Format {}

impl PartialOrd for Format {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Format {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.source().cmp(other.source())
    }
}

impl std::hash::Hash for Format {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.source().hash(state);
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Format({})", self.source())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.source())
    }
}

impl serde::Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.source())
    }
}

/// Parses one file in its detected format. Nothing is stored.
///
/// Problems inside the file (a malformed line, a dangling reference) are returned as
/// [`FileImport::faults`] and the rest of the file is still imported.
///
/// # Errors
/// [`IngestError::UnknownFormat`] when [`detect`] does not recognise the file,
/// [`IngestError::Io`] when it cannot be read, [`IngestError::Json`] /
/// [`IngestError::Shape`] when a whole-document format cannot be parsed at all.
pub fn import_file(path: &Path) -> Result<FileImport, IngestError> {
    let format = detect(path).ok_or_else(|| IngestError::UnknownFormat(path.to_path_buf()))?;
    import_as(path, format)
}

/// Parses one file as `format` (no detection). Errors as for [`import_file`].
///
/// # Errors
/// See [`import_file`].
pub fn import_as(path: &Path, format: Format) -> Result<FileImport, IngestError> {
    import_from(path, format, None)
}

/// Parses one file as `format`, from `start` when given (only for
/// [`Format::is_append_only`] formats: the lines after a previous import's
/// [`FileImport::cursor`]; other formats ignore it and parse the whole file). Every
/// message's text is cut to [`MAX_STORED_CHARS`] here, whatever its format.
///
/// # Errors
/// See [`import_file`].
pub fn import_from(
    path: &Path,
    format: Format,
    start: Option<&Cursor>,
) -> Result<FileImport, IngestError> {
    let fallback = file_time(path);
    let mut import = format.0.import(path, fallback, start)?;
    for m in &mut import.messages {
        m.chars_cut = read::cap_text(&mut m.content);
        if let Some(title) = &mut m.conversation_title {
            read::cap_text(title);
        }
    }
    mark_injected(&mut import.messages);
    Ok(import)
}

/// Sets `is_injected` on every user message whose text a harness injected
/// ([`injected::is_injected_text`]), whatever the source.
fn mark_injected(messages: &mut [Message]) {
    for m in messages.iter_mut().filter(|m| m.role == "user") {
        m.is_injected = m.is_injected || injected::is_injected_text(&m.content);
    }
}

/// The last-resort time for a file whose records carry no time at all: its
/// modification time, else the Unix epoch. Never the wall clock.
fn file_time(path: &Path) -> chrono::DateTime<chrono::Utc> {
    fs_err::metadata(path)
        .and_then(|m| m.modified())
        .map(chrono::DateTime::<chrono::Utc>::from)
        .unwrap_or(chrono::DateTime::UNIX_EPOCH)
}

/// A stable message id: lowercase hex SHA-256 of the fields joined by NUL bytes.
/// Used when a source has no id of its own.
pub(crate) fn stable_id(fields: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            hasher.update([0u8]);
        }
        hasher.update(field.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// Default transcript locations on this machine, as paths for [`ingest_paths`]
/// (only files that exist), importer by importer in detection priority: each importer
/// declares its locations as data (`ingest::locations`; the README's importer table
/// is generated from the same data). Each was checked against the tool's
/// documentation or source, or against importers that read it. Aider writes
/// `.aider.chat.history.md` into each project folder (no central place), so its logs
/// are not discovered: give their paths to `skills ingest`.
///
/// Reads the environment and lists folders; no file is opened.
pub fn discover() -> Vec<PathBuf> {
    discover_in(&crate::places::Environment::current())
}

/// [`discover`] in a given environment.
fn discover_in(env: &crate::places::Environment) -> Vec<PathBuf> {
    formats::IMPORTERS
        .iter()
        .flat_map(|importer| importer.about().locations)
        .flat_map(|location| locations::find(location, env))
        .collect()
}

pub(crate) fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// All regular files below `dir`, sorted, hidden ones included ([`crate::walk`]'s rules;
/// unreadable folders are skipped silently).
fn walk(dir: &Path) -> Vec<PathBuf> {
    crate::walk::files_below(dir, crate::walk::Hidden::Include).files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_id_separates_fields() {
        assert_ne!(stable_id(&["ab", "c"]), stable_id(&["a", "bc"]));
        assert_eq!(stable_id(&["x"]).len(), 64);
    }

    #[test]
    fn formats_serialise_compare_and_print_as_their_source_name() {
        let all: Vec<Format> = Format::all().collect();
        assert!(all.len() >= 14);
        for f in all {
            assert_eq!(
                serde_json::to_value(f).expect("serialise"),
                serde_json::json!(f.source())
            );
            assert_eq!(f.to_string(), f.source());
            assert_eq!(Format::from_source(f.source()), Some(f));
        }
        assert_eq!(Format::from_source("no-such-tool"), None);
    }
}
