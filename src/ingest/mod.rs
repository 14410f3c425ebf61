//! Importers from real on-disk formats into the stores.
//!
//! Each importer turns one file into canonical [`Message`] rows (conversations) and
//! reports problems as [`Fault`]s with path, line and reason instead of failing the run.
//! Importers know nothing about skills, engines or the CLI; writing goes through
//! [`crate::stores::conversations::ConversationStore`].
//!
//! Formats (one private module each, documenting its on-disk shape and mapping):
//! Claude Code sessions (`claude_code`), ChatGPT exports (`chatgpt`), Claude.ai exports
//! (`claude_ai`), Codex CLI rollouts (`codex`), Gemini CLI chats (`gemini`), pi sessions
//! (`pi`), Aider chat logs (`aider`), Cursor agent transcripts and `state.vscdb`
//! (`cursor`), OpenCode storage files and `opencode.db` (`opencode`), Cline task folders
//! (`cline`), GitHub Copilot CLI sessions (`copilot`), Amp threads (`amp`), Google
//! Antigravity step transcripts (`antigravity`) and generic JSON Lines (`generic`).
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

mod aider;
mod amp;
mod antigravity;
mod chatgpt;
mod claude_ai;
mod claude_code;
mod cline;
mod codex;
mod copilot;
mod cursor;
mod driver;
mod gemini;
mod generic;
pub mod injected;
mod opencode;
mod pending;
mod pi;

pub mod memories;

pub use crate::model::Message;
pub use driver::{
    ingest_paths, ingest_paths_with, FileSummary, IngestOptions, IngestSummary, SourceCounts,
};

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
    /// For append-only JSON Lines formats ([`Format::is_append_only`]): where a later
    /// import of the same file, grown by appending, can go on. `None` for
    /// whole-document formats.
    pub cursor: Option<Cursor>,
}

/// A resumption point in an append-only JSON Lines file: the end of the last complete
/// (newline-terminated) line read, and what the importer knew there. A last line
/// without a newline is imported but not consumed, so it is read again (same ids,
/// same `msg_index`) once the writer finishes it.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cursor {
    /// Byte offset just after the last complete line.
    pub offset: u64,
    /// 1-based number of that line (0 at the start of the file).
    pub line: usize,
    /// `msg_index` of the next message.
    pub next_index: i64,
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
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc))
    }

    /// Sets (or, for `None`, leaves out) a context value.
    pub(crate) fn set(&mut self, key: &str, value: Option<impl ToString>) {
        if let Some(v) = value {
            self.context.insert(key.to_owned(), v.to_string());
        }
    }
}

/// Where [`read_jsonl_from`] stopped: the end of the last complete line.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JsonlEnd {
    /// Byte offset after the last newline-terminated line.
    pub offset: u64,
    /// Its 1-based line number.
    pub line: usize,
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

/// A transcript format this module can import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// Claude Code session JSONL (`~/.claude/projects/<dir>/<session>.jsonl`, also
    /// subagent files `agent-*.jsonl`). Source name `claude-code`.
    ClaudeCode,
    /// ChatGPT data export `conversations.json`. Source name `chatgpt`.
    #[serde(rename = "chatgpt")]
    ChatGpt,
    /// Codex CLI rollout JSONL (`~/.codex/sessions/**/rollout-*.jsonl`), enveloped or
    /// legacy. Source name `codex`.
    Codex,
    /// Gemini CLI chat (`~/.gemini/tmp/<project>/chats/session-*.json`, or the JSON
    /// Lines form). Source name `gemini-cli`.
    GeminiCli,
    /// pi coding-agent session JSONL (`~/.pi/agent/sessions/--<cwd>--/*.jsonl`).
    /// Source name `pi`.
    Pi,
    /// Generic JSON Lines, one message per line with `role` and `content` (and
    /// optionally `timestamp`, `conversation_id`, `id`, `title`). Source name `generic`.
    Generic,
    /// Aider chat log `.aider.chat.history.md`. Source name `aider`.
    Aider,
    /// Claude.ai data export `conversations.json`. Source name `claude-ai`.
    ClaudeAi,
    /// Cursor: agent transcripts (`~/.cursor/projects/<p>/agent-transcripts/*.jsonl`),
    /// the chat store `state.vscdb`, or a JSON dump of its `cursorDiskKV` rows. Source
    /// name `cursor`.
    Cursor,
    /// OpenCode storage JSON files (`storage/{session,message,part}/…/*.json`; a message
    /// file is one message) or the SQLite `opencode.db`. Source name `opencode`.
    #[serde(rename = "opencode")]
    OpenCode,
    /// Cline task files (`tasks/<id>/ui_messages.json` is the conversation;
    /// `api_conversation_history.json` and `task_metadata.json` yield nothing). Source
    /// name `cline`.
    Cline,
    /// GitHub Copilot CLI event logs (`session-state/<id>/events.jsonl`) and legacy
    /// histories (`history-session-state/*.json`). Source name `copilot`.
    Copilot,
    /// Amp thread JSON (`~/.local/share/amp/threads/T-*.json`). Source name `amp`.
    Amp,
    /// Google Antigravity step transcript
    /// (`~/.gemini/antigravity/brain/<id>/.system_generated/logs/transcript.jsonl`).
    /// Source name `antigravity`.
    Antigravity,
}

impl Format {
    /// True for JSON Lines formats written only by appending (Claude Code, Codex, pi):
    /// a grown file is imported from where the last import stopped. Gemini CLI JSONL
    /// sessions rewrite records (`$set`), so they are re-read whole; so are Cursor
    /// transcripts, Copilot CLI event logs and Antigravity transcripts (their importers
    /// keep no resumption point yet), and every whole-document format.
    pub fn is_append_only(self) -> bool {
        matches!(
            self,
            Self::ClaudeCode | Self::Codex | Self::Pi | Self::Generic
        )
    }

    /// The format whose [`Format::source`] is `source`.
    pub fn from_source(source: &str) -> Option<Self> {
        [
            Self::ClaudeCode,
            Self::ChatGpt,
            Self::Codex,
            Self::GeminiCli,
            Self::Pi,
            Self::Generic,
            Self::Aider,
            Self::ClaudeAi,
            Self::Cursor,
            Self::OpenCode,
            Self::Cline,
            Self::Copilot,
            Self::Amp,
            Self::Antigravity,
        ]
        .into_iter()
        .find(|f| f.source() == source)
    }

    /// The value written to the `source` column for this format.
    pub fn source(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::ChatGpt => "chatgpt",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
            Self::Pi => "pi",
            Self::Generic => "generic",
            Self::Aider => "aider",
            Self::ClaudeAi => "claude-ai",
            Self::Cursor => "cursor",
            Self::OpenCode => "opencode",
            Self::Cline => "cline",
            Self::Copilot => "copilot",
            Self::Amp => "amp",
            Self::Antigravity => "antigravity",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.source())
    }
}

/// Bytes read from the start of a file by [`detect`].
const PEEK_BYTES: usize = 256 * 1024;

/// Tells the format of `path` from its name, its extension and its first bytes (at
/// most 256 KiB are read), or `None` when it is none of [`Format`] or cannot be read.
///
/// - a file whose name ends in `.aider.chat.history.md` is an aider chat log;
/// - a `.vscdb` file (SQLite) is Cursor's store; a file named `opencode.db` (SQLite) is
///   OpenCode's;
/// - `.json` named (or ending in) `ui_messages.json`, `api_conversation_history.json`
///   or `task_metadata.json` is a Cline task file;
/// - `.jsonl` in a folder named `agent-transcripts` is a Cursor agent transcript (its
///   lines may have Claude Code's shape, so the location decides);
/// - `.jsonl`: the first complete lines (up to 16) are parsed and the first that
///   decides wins. A Claude Code line has a `type` such as `user`/`assistant` with a
///   `message` object, a `parentUuid`, or a `summary`/`file-history-snapshot`… type
///   with `sessionId`/`leafUuid`/`snapshot`; a Codex line is an envelope
///   `{"type": "session_meta"|"response_item"|…, "payload": {…}}` or a legacy bare
///   `{"type": "message", "role", "content": […]}`; a Gemini CLI line has
///   `projectHash` and `sessionId`, or `type` `gemini` with `content`; a pi line is
///   `{"type": "session", "id"}`, `{"type": "message", "message": {"role"}}` or a
///   `model_change`/`thinking_level_change` entry; a Copilot CLI line is an event
///   `{"type": "user.message"|"assistant.message"|"session.…"|"tool.…", "data"}` (or
///   with `prompt`/`output`); an Antigravity line is a step `{"step_index", "source",
///   "type"}`; a Cursor line is `{"role", "message": {…}}` without `type`; failing all
///   of these, a line with a string `role` and a `content` but no
///   `type`/`message`/`payload` is generic JSONL.
/// - `.json`: the first bytes contain a `"chat_messages"` key (Claude.ai export), a
///   `"mapping"` key (ChatGPT export), a `"messages"` key with `"projectHash"` or
///   `"sessionId"` (Gemini CLI), or a `"composerData:` key (a dump of Cursor's rows);
///   else a document that fits in the first bytes is parsed: an object with `id` and
///   `messageID`+`type`, `sessionID`+`role`, or `projectID` is an OpenCode storage file,
///   one with a `chatMessages` array or a `history` array of `role` records a Copilot
///   CLI history, one with `messages` whose `id` or file name starts with `T-` (or that
///   sits in a `threads` folder) an Amp thread. A larger document is an OpenCode file
///   by its place in `storage/{session,message,part}/`, or a Copilot history by a
///   `"chatMessages"` key.
pub fn detect(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy();
    if name.ends_with(aider::SUFFIX) && path.is_file() {
        return Some(Format::Aider);
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if ext == "vscdb" {
        return is_sqlite(path).then_some(Format::Cursor);
    }
    if name == "opencode.db" {
        return is_sqlite(path).then_some(Format::OpenCode);
    }
    if ext != "jsonl" && ext != "json" {
        return None;
    }
    if ext == "json" && cline::is_task_file(path) && path.is_file() {
        return Some(Format::Cline);
    }
    if ext == "jsonl" && cursor::is_transcript_path(path) && path.is_file() {
        return Some(Format::Cursor);
    }
    let head = peek(path).ok()?;
    if ext == "json" {
        return detect_json(path, &head);
    }
    let mut complete = head.split(|&b| b == b'\n').collect::<Vec<_>>();
    if head.len() == PEEK_BYTES {
        complete.pop(); // the last piece may be cut
    }
    // A generic line decides only when no line of the first 16 is of a specific format.
    let mut generic = false;
    for line in complete
        .into_iter()
        .filter(|l| !l.trim_ascii().is_empty())
        .take(16)
    {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(strip_bom(line)) else {
            continue;
        };
        if claude_code::looks_like(&value) {
            return Some(Format::ClaudeCode);
        }
        if codex::looks_like(&value) {
            return Some(Format::Codex);
        }
        if gemini::looks_like(&value) {
            return Some(Format::GeminiCli);
        }
        if pi::looks_like(&value) {
            return Some(Format::Pi);
        }
        if copilot::looks_like(&value) {
            return Some(Format::Copilot);
        }
        if antigravity::looks_like(&value) {
            return Some(Format::Antigravity);
        }
        if cursor::looks_like(&value) {
            return Some(Format::Cursor);
        }
        generic |= generic::looks_like(&value);
    }
    if generic {
        return Some(Format::Generic);
    }
    // A first line longer than the peek window: fall back on markers.
    (contains(&head, b"\"parentUuid\"") || contains(&head, b"\"sessionId\""))
        .then_some(Format::ClaudeCode)
}

/// [`detect`] for a `.json` file whose first bytes are `head`.
fn detect_json(path: &Path, head: &[u8]) -> Option<Format> {
    if contains(head, b"\"chat_messages\"") {
        return Some(Format::ClaudeAi);
    }
    if contains(head, b"\"mapping\"") {
        return Some(Format::ChatGpt);
    }
    if contains(head, b"\"messages\"")
        && (contains(head, b"\"projectHash\"") || contains(head, b"\"sessionId\""))
    {
        return Some(Format::GeminiCli);
    }
    if contains(head, b"\"composerData:") {
        return Some(Format::Cursor);
    }
    // The shapes below are told by their keys: parse the document when it fits.
    let whole = head.len() < PEEK_BYTES;
    match whole
        .then(|| serde_json::from_slice::<serde_json::Value>(strip_bom(head)).ok())
        .flatten()
    {
        Some(doc) => {
            if opencode::kind_of_doc(&doc).is_some() {
                Some(Format::OpenCode)
            } else if copilot::looks_like_history(&doc) {
                Some(Format::Copilot)
            } else if amp::looks_like(&doc, path) {
                Some(Format::Amp)
            } else {
                None
            }
        }
        None if whole => None,
        None => {
            if opencode::kind_of_path(path).is_some() {
                Some(Format::OpenCode)
            } else if contains(head, b"\"chatMessages\"") {
                Some(Format::Copilot)
            } else {
                None
            }
        }
    }
}

/// True when the file starts with SQLite's header.
fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 16];
    fs_err::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"SQLite format 3\0"
}

/// Opens a SQLite source read-only (never written, never created). When the plain
/// read-only open cannot read it (a write-ahead-logged database in a folder we cannot
/// write, whose `-shm` file is missing), it is opened `immutable`, which reads the main
/// file alone.
///
/// # Errors
/// [`IngestError::Sqlite`] when neither open can read the schema.
pub(crate) fn open_sqlite_read_only(path: &Path) -> Result<rusqlite::Connection, IngestError> {
    use rusqlite::{Connection, OpenFlags};
    let probe = |conn: Connection| {
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|_| conn)
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let first = Connection::open_with_flags(path, flags).and_then(probe);
    first.or_else(|first_error| {
        let escaped: String = path
            .to_string_lossy()
            .chars()
            .map(|c| match c {
                '%' => "%25".to_owned(),
                '?' => "%3f".to_owned(),
                '#' => "%23".to_owned(),
                c => c.to_string(),
            })
            .collect();
        Connection::open_with_flags(
            format!("file:{escaped}?immutable=1"),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )
        .and_then(probe)
        .map_err(|_| IngestError::Sqlite {
            path: path.to_path_buf(),
            source: first_error,
        })
    })
}

/// Names of the tables of a SQLite database.
pub(crate) fn sqlite_tables(conn: &rusqlite::Connection) -> Result<Vec<String>, rusqlite::Error> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// A SQLite value as text (text and blobs as UTF-8, lossily; numbers printed).
pub(crate) fn sqlite_text(value: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Null => String::new(),
    }
}

fn peek(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs_err::File::open(path)?;
    let mut head = Vec::with_capacity(8 * 1024);
    file.take(PEEK_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Removes a UTF-8 byte-order mark.
fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Reads a JSON Lines file record by record, with no line-length limit. Blank lines
/// are ignored; a line that is not valid JSON or not a JSON object becomes a [`Fault`]
/// (1-based line number) and reading goes on. `on_record` gets each object and its
/// line number.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened or read.
pub(crate) fn read_jsonl(
    path: &Path,
    faults: &mut Vec<Fault>,
    on_record: impl FnMut(usize, serde_json::Map<String, serde_json::Value>),
) -> Result<(), IngestError> {
    read_jsonl_from(path, None, faults, on_record).map(|_| ())
}

/// As [`read_jsonl`], starting at `start` (byte offset and line number of a [`Cursor`])
/// instead of the top. Returns where the last complete (newline-terminated) line ends;
/// a last line without newline is still offered to `on_record` but not counted as read.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened, positioned or read.
pub(crate) fn read_jsonl_from(
    path: &Path,
    start: Option<&Cursor>,
    faults: &mut Vec<Fault>,
    mut on_record: impl FnMut(usize, serde_json::Map<String, serde_json::Value>),
) -> Result<JsonlEnd, IngestError> {
    use std::io::{BufRead, Seek};
    let mut file = fs_err::File::open(path)?;
    let mut end = JsonlEnd::default();
    if let Some(c) = start {
        file.seek(std::io::SeekFrom::Start(c.offset))?;
        end = JsonlEnd {
            offset: c.offset,
            line: c.line,
        };
    }
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut line_no = end.line;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("reading `{}` after line {line_no}: {e}", path.display()),
            )
        })?;
        if n == 0 {
            return Ok(end);
        }
        line_no += 1;
        if buf.ends_with(b"\n") {
            end = JsonlEnd {
                offset: end.offset + n as u64,
                line: line_no,
            };
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let bytes = if line_no == 1 { strip_bom(line) } else { line };
        if bytes.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(serde_json::Value::Object(obj)) => on_record(line_no, obj),
            Ok(other) => faults.push(Fault::new(
                path,
                Some(line_no),
                format!("expected a JSON object, found {}", kind_of(&other)),
            )),
            Err(e) => faults.push(Fault::new(
                path,
                Some(line_no),
                format!("invalid JSON: {e}"),
            )),
        }
    }
}

/// Number of items, as an `i64` (saturating).
pub(crate) fn count_i64<T>(items: impl Iterator<Item = T>) -> i64 {
    i64::try_from(items.count()).unwrap_or(i64::MAX)
}

/// A JSON value's kind, for fault reasons ("an array", "a number"…).
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The non-blank texts, joined by a newline.
pub(crate) fn join_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    texts
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a whole file as one JSON document (a leading byte-order mark is ignored).
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] when it is
/// not JSON.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, IngestError> {
    let bytes = fs_err::read(path)?;
    serde_json::from_slice(strip_bom(&bytes)).map_err(|source| IngestError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// The conversations of an export document: the items of an array, or the document
/// itself when it is one object.
///
/// # Errors
/// [`IngestError::Shape`] when the document is neither an array nor an object.
pub(crate) fn conversations_of<'a>(
    doc: &'a serde_json::Value,
    path: &Path,
) -> Result<Vec<&'a serde_json::Value>, IngestError> {
    use serde_json::Value;
    match doc {
        Value::Array(items) => Ok(items.iter().collect()),
        Value::Object(_) => Ok(vec![doc]),
        other => Err(IngestError::Shape {
            path: path.to_path_buf(),
            reason: format!(
                "expected an array of conversations or one conversation object, found {}",
                kind_of(other)
            ),
        }),
    }
}

/// A non-empty string field of a JSON object.
pub(crate) fn str_field<'a>(
    obj: &'a serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Option<&'a str> {
    obj.get(key)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
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
/// [`FileImport::cursor`]; other formats ignore it and parse the whole file).
///
/// # Errors
/// See [`import_file`].
pub fn import_from(
    path: &Path,
    format: Format,
    start: Option<&Cursor>,
) -> Result<FileImport, IngestError> {
    let fallback = file_time(path);
    let mut import = match format {
        Format::ClaudeCode => claude_code::import(path, fallback, start),
        Format::ChatGpt => chatgpt::import(path, fallback),
        Format::Codex => codex::import(path, fallback, start),
        Format::GeminiCli => gemini::import(path, fallback),
        Format::Pi => pi::import(path, fallback, start),
        Format::Generic => generic::import(path, fallback, start),
        Format::Aider => aider::import(path, fallback),
        Format::ClaudeAi => claude_ai::import(path, fallback),
        Format::Cursor => cursor::import(path, fallback),
        Format::OpenCode => opencode::import(path, fallback),
        Format::Cline => cline::import(path, fallback),
        Format::Copilot => copilot::import(path, fallback),
        Format::Amp => amp::import(path, fallback),
        Format::Antigravity => antigravity::import(path, fallback),
    }?;
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

/// Parses a time value found in a transcript, in UTC.
///
/// Accepts RFC 3339 strings (`2025-11-08T12:00:00.123Z`, any offset), ISO strings
/// without offset (taken as UTC), and numbers: epoch seconds (float allowed), or epoch
/// milliseconds above 10^11, microseconds above 10^14, nanoseconds above 10^17.
/// Anything else is `None`.
pub(crate) fn parse_time(value: &serde_json::Value) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{DateTime, NaiveDateTime, Utc};
    match value {
        serde_json::Value::String(s) => {
            let s = s.trim();
            if let Ok(t) = DateTime::parse_from_rfc3339(s) {
                return Some(t.with_timezone(&Utc));
            }
            ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
                .map(|t| t.and_utc())
        }
        serde_json::Value::Number(n) => {
            let x = n.as_f64()?;
            // Seconds until the year 5138; above: milliseconds, microseconds, nanoseconds.
            let secs = match x.abs() {
                a if a > 1e17 => x / 1e9,
                a if a > 1e14 => x / 1e6,
                a if a > 1e11 => x / 1e3,
                _ => x,
            };
            epoch_seconds(secs)
        }
        _ => None,
    }
}

/// Epoch seconds (fractional) to UTC, rounded to the microsecond.
pub(crate) fn epoch_seconds(secs: f64) -> Option<chrono::DateTime<chrono::Utc>> {
    if !secs.is_finite() {
        return None;
    }
    let micros = (secs * 1e6).round();
    if micros.abs() > 9.0e18 {
        return None;
    }
    #[allow(clippy::cast_possible_truncation)] // range checked above
    chrono::DateTime::from_timestamp_micros(micros as i64)
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
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Default transcript locations on this machine, as paths for [`ingest_paths`]
/// (only those that exist). Each was checked against the tool's documentation or
/// source, or against importers that read it (noted "as used by");
/// `<config>` is the platform's configuration folder (`$XDG_CONFIG_HOME`, default
/// `~/.config`, on Linux; `~/Library/Application Support` on macOS; `%APPDATA%` on
/// Windows), where VS Code-based editors keep `User/`:
///
/// - Claude Code: `$CLAUDE_CONFIG_DIR/projects` when `CLAUDE_CONFIG_DIR` is set and not
///   empty, else `~/.claude/projects` (all `*.jsonl` below it, recursively, including
///   `<session>/subagents/agent-*.jsonl`);
/// - Codex CLI: `$CODEX_HOME/sessions` when `CODEX_HOME` is set and not empty, else
///   `~/.codex/sessions` (all `*.jsonl` below it);
/// - Gemini CLI: `~/.gemini/tmp/*/chats/*.json` and `*.jsonl`;
/// - pi: `~/.pi/agent/sessions` (all `*.jsonl` below it);
/// - Cursor: agent transcripts `~/.cursor/projects/*/agent-transcripts/**/*.jsonl`
///   (as used by brain-mcp and others), and the chat stores
///   `<config>/Cursor/User/globalStorage/state.vscdb` and
///   `<config>/Cursor/User/workspaceStorage/*/state.vscdb` (as used by cass);
/// - OpenCode: `$XDG_DATA_HOME/opencode` (default `~/.local/share/opencode`, also on
///   macOS: OpenCode follows XDG): `opencode.db` when it exists (OpenCode 1.2 migrated
///   the JSON files into it and keeps the files, so reading both would import every
///   message twice), else the message files `storage/message/*/*.json`;
/// - Cline: `<config>/{Code,Code - Insiders,VSCodium,Cursor,Windsurf}/User/globalStorage/saoudrizwan.claude-dev/tasks/*/ui_messages.json`
///   (Cline keeps each task in `<globalStorage>/tasks/<id>/`);
/// - GitHub Copilot CLI: `$COPILOT_HOME` when set and not empty, else `~/.copilot`:
///   `session-state/**/*.jsonl` and legacy `history-session-state/*.json` (GitHub's
///   configuration-directory reference; `COPILOT_HOME` redirects the whole folder);
/// - Amp: `$XDG_DATA_HOME/amp/threads/*.json` (default `~/.local/share/amp/threads`);
/// - Google Antigravity: `~/.gemini/antigravity/brain/*/.system_generated/logs/*.jsonl`;
/// - ChatGPT: `$SKILLS_CHATGPT_EXPORT` when set: a `conversations.json` file, or a
///   directory (an unzipped export) searched for `conversations.json`;
/// - Claude.ai: `$SKILLS_CLAUDE_AI_EXPORT`, the same way (both exports name their file
///   `conversations.json`; [`detect`] tells them apart).
///
/// Aider writes `.aider.chat.history.md` into each project folder (no central place),
/// so its logs are not discovered: give their paths to `skills ingest`.
///
/// Reads the environment and lists folders; no file is opened.
pub fn discover() -> Vec<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut found = Vec::new();
    let claude = env("CLAUDE_CONFIG_DIR").or_else(|| dirs::home_dir().map(|h| h.join(".claude")));
    if let Some(projects) = claude.map(|d| d.join("projects")).filter(|p| p.is_dir()) {
        found.extend(walk(&projects).into_iter().filter(|p| has_ext(p, "jsonl")));
    }
    let codex = env("CODEX_HOME").or_else(|| dirs::home_dir().map(|h| h.join(".codex")));
    if let Some(sessions) = codex.map(|d| d.join("sessions")).filter(|p| p.is_dir()) {
        found.extend(walk(&sessions).into_iter().filter(|p| has_ext(p, "jsonl")));
    }
    let home = dirs::home_dir();
    let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel)).filter(|p| p.is_dir());
    if let Some(tmp) = under_home(".gemini/tmp") {
        found.extend(walk(&tmp).into_iter().filter(|p| {
            (has_ext(p, "json") || has_ext(p, "jsonl"))
                && p.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "chats")
        }));
    }
    if let Some(pi) = under_home(".pi/agent/sessions") {
        found.extend(walk(&pi).into_iter().filter(|p| has_ext(p, "jsonl")));
    }
    // Cursor.
    if let Some(projects) = under_home(".cursor/projects") {
        found.extend(
            walk(&projects)
                .into_iter()
                .filter(|p| has_ext(p, "jsonl") && cursor::is_transcript_path(p)),
        );
    }
    let config = dirs::config_dir();
    if let Some(user) = config.as_ref().map(|c| c.join("Cursor/User")) {
        found.extend(
            Some(user.join("globalStorage/state.vscdb"))
                .into_iter()
                .chain(children(&user.join("workspaceStorage")).map(|w| w.join("state.vscdb")))
                .filter(|p| p.is_file()),
        );
    }
    // OpenCode and Amp follow XDG on every platform.
    let data_home = env("XDG_DATA_HOME").or_else(|| home.as_ref().map(|h| h.join(".local/share")));
    if let Some(opencode) = data_home.as_ref().map(|d| d.join("opencode")) {
        let db = opencode.join("opencode.db");
        if db.is_file() {
            found.push(db);
        } else {
            for session in children(&opencode.join("storage/message")) {
                found.extend(children(&session).filter(|p| has_ext(p, "json") && p.is_file()));
            }
        }
    }
    if let Some(threads) = data_home.as_ref().map(|d| d.join("amp/threads")) {
        found.extend(children(&threads).filter(|p| has_ext(p, "json") && p.is_file()));
    }
    // Cline, in each VS Code-based editor.
    for editor in ["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"] {
        let Some(tasks) = config.as_ref().map(|c| {
            c.join(editor)
                .join("User/globalStorage/saoudrizwan.claude-dev/tasks")
        }) else {
            continue;
        };
        found.extend(
            children(&tasks)
                .map(|task| task.join(cline::UI_MESSAGES))
                .filter(|p| p.is_file()),
        );
    }
    // GitHub Copilot CLI.
    let copilot = env("COPILOT_HOME").or_else(|| home.as_ref().map(|h| h.join(".copilot")));
    if let Some(copilot) = copilot {
        let state = copilot.join("session-state");
        if state.is_dir() {
            found.extend(walk(&state).into_iter().filter(|p| has_ext(p, "jsonl")));
        }
        found.extend(
            children(&copilot.join("history-session-state"))
                .filter(|p| has_ext(p, "json") && p.is_file()),
        );
    }
    if let Some(brain) = under_home(".gemini/antigravity/brain") {
        for conversation in children(&brain) {
            let logs = conversation.join(".system_generated/logs");
            found.extend(children(&logs).filter(|p| has_ext(p, "jsonl") && p.is_file()));
        }
    }
    for var in ["SKILLS_CHATGPT_EXPORT", "SKILLS_CLAUDE_AI_EXPORT"] {
        let Some(export) = env(var) else { continue };
        if export.is_file() {
            found.push(export);
        } else if export.is_dir() {
            found.extend(walk(&export).into_iter().filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.eq_ignore_ascii_case("conversations.json"))
            }));
        }
    }
    found
}

fn has_ext(path: &Path, ext: &str) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// All regular files below `dir`, sorted, hidden ones included ([`crate::walk`]'s rules;
/// unreadable folders are skipped silently).
fn walk(dir: &Path) -> Vec<PathBuf> {
    crate::walk::files_below(dir, crate::walk::Hidden::Include).files
}

/// The entries of `dir`, sorted (none when it cannot be read).
fn children(dir: &Path) -> impl Iterator<Item = PathBuf> {
    crate::walk::entries(dir).into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn format_serialises_as_its_source_name() {
        for f in [
            Format::ClaudeCode,
            Format::ChatGpt,
            Format::Codex,
            Format::GeminiCli,
            Format::Pi,
            Format::Generic,
            Format::Aider,
            Format::ClaudeAi,
            Format::Cursor,
            Format::OpenCode,
            Format::Cline,
            Format::Copilot,
            Format::Amp,
            Format::Antigravity,
        ] {
            assert_eq!(
                serde_json::to_value(f).expect("serialise"),
                json!(f.source())
            );
        }
    }

    #[test]
    fn parse_time_variants() {
        let t = |v: serde_json::Value| parse_time(&v).map(|t| t.to_rfc3339());
        assert_eq!(
            t(json!("2025-03-10T11:14:02.5+02:00")).as_deref(),
            Some("2025-03-10T09:14:02.500+00:00")
        );
        assert_eq!(
            t(json!("2025-03-10T09:14:02")).as_deref(),
            Some("2025-03-10T09:14:02+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000.25)).as_deref(),
            Some("2023-11-14T22:13:20.250+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000_250_i64)).as_deref(),
            Some("2023-11-14T22:13:20.250+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000_123_456_i64)).as_deref(),
            Some("2023-11-14T22:13:20.123456+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000_123_456_000_i64)).as_deref(),
            Some("2023-11-14T22:13:20.123456+00:00")
        );
        assert_eq!(t(json!("yesterday")), None);
        assert_eq!(t(json!(null)), None);
        assert_eq!(t(json!(1e300)), None);
    }

    #[test]
    fn stable_id_separates_fields() {
        assert_ne!(stable_id(&["ab", "c"]), stable_id(&["a", "bc"]));
        assert_eq!(stable_id(&["x"]).len(), 64);
    }

    #[test]
    fn detect_by_extension_and_content() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cases = [
            (
                "a.jsonl",
                r#"{"type":"summary","summary":"s","leafUuid":"u"}"#,
                Some(Format::ClaudeCode),
            ),
            (
                "b.jsonl",
                r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#,
                Some(Format::Codex),
            ),
            (
                "c.jsonl",
                r#"{"type":"session","version":3,"id":"x"}"#,
                Some(Format::Pi),
            ),
            (
                "d.jsonl",
                r#"{"sessionId":"s","projectHash":"h","startTime":"t"}"#,
                Some(Format::GeminiCli),
            ),
            (
                "e.json",
                r#"[{"title":"t","mapping":{}}]"#,
                Some(Format::ChatGpt),
            ),
            (
                "f.json",
                r#"{"sessionId":"s","messages":[]}"#,
                Some(Format::GeminiCli),
            ),
            ("g.jsonl", r#"{"hello":"world"}"#, None),
            (
                "j.jsonl",
                r#"{"role":"user","content":"hi"}"#,
                Some(Format::Generic),
            ),
            ("h.txt", r#"{"type":"summary","leafUuid":"u"}"#, None),
            ("i.json", "{}", None),
        ];
        for (name, text, want) in cases {
            let path = dir.path().join(name);
            fs_err::write(&path, text).expect("write");
            assert_eq!(detect(&path), want, "{name}");
        }
        assert_eq!(detect(&dir.path().join("missing.jsonl")), None);
    }
}
