//! The data engines read: conversations (DuckDB, table `all_conversations`) and
//! memories (SQLite with FTS5). Stores know nothing about skills, engines or MCP.

pub mod conversations;
pub mod memories;
pub mod sandbox;
pub mod segments;
pub mod sql_value;

use std::path::PathBuf;

/// Errors from opening, creating or querying a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The DuckDB conversations store failed.
    #[error("conversations store `{path}`: {source}")]
    DuckDb {
        /// Database file.
        path: PathBuf,
        /// Underlying DuckDB error.
        #[source]
        source: duckdb::Error,
    },
    /// The SQLite memories store failed.
    #[error("memories store `{path}`: {source}")]
    Sqlite {
        /// Database file.
        path: PathBuf,
        /// Underlying SQLite error.
        #[source]
        source: rusqlite::Error,
    },
    /// Another process holds the database file's lock for longer than we waited.
    /// DuckDB lets one process write a file or several read it, never both:
    /// `skills ingest` holds it while it imports, a search for one call.
    #[error(
        "conversations store `{path}` is held by {holder} (waited {waited_secs} s): \
         a `skills ingest` still running? Try again when it ends. ({detail})"
    )]
    Locked {
        /// Database file.
        path: PathBuf,
        /// Seconds waited for the lock.
        waited_secs: u64,
        /// The process holding it, as DuckDB names it (program, PID, user).
        holder: String,
        /// DuckDB's message (names the process holding the lock).
        detail: String,
    },
    /// The store file does not exist yet (nothing was imported into it).
    #[error("store `{path}` does not exist; run `{}` first", store.import_command())]
    Missing {
        /// Which store it is, and so which command creates it.
        store: Store,
        /// Database file.
        path: PathBuf,
    },
    /// A skill asked for a store its document does not declare (`reads`, or
    /// `writes` for a writable handle).
    #[error(
        "skill `{skill}` may not {verb} store `{store}`: its `{field}` does not name it{hint}",
        verb = verb_of(.field),
        hint = hint_of(.field)
    )]
    Undeclared {
        /// The skill.
        skill: String,
        /// The store asked for.
        store: Store,
        /// The frontmatter field that would have to name it: `reads` or `writes`.
        field: &'static str,
    },
    /// The call stopped (deadline, client gone) before the store was queried.
    #[error("stopped: {0}")]
    Stopped(crate::cancel::Stop),
    /// Filesystem error (creating the data directory…).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// "read" or "write", for [`StoreError::Undeclared`]'s field `reads` or `writes`.
fn verb_of(field: &str) -> &'static str {
    if field == "writes" {
        "write"
    } else {
        "read"
    }
}

/// The hint of [`StoreError::Undeclared`].
fn hint_of(field: &str) -> &'static str {
    if field == "writes" {
        " (a skill with `writes: []` gets read-only stores)"
    } else {
        ""
    }
}

/// One of the stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Transcripts (`conversations.duckdb`), written by `skills ingest`.
    Conversations,
    /// Memories (`memories.sqlite`), written by `skills memo import` and `skills memo add`.
    Memories,
}

impl std::fmt::Display for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Store {
    /// Every store.
    pub const ALL: [Store; 2] = [Store::Conversations, Store::Memories];

    /// The store's name in documents: `conversations` or `memories`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Conversations => "conversations",
            Self::Memories => "memories",
        }
    }

    /// The store a frontmatter `reads`/`writes` entry names: `conversations`,
    /// `all_conversations` or `L0.all_conversations` (its table, optionally with the
    /// layer), `conversation_embeddings` or `L1.conversation_embeddings` (the L1
    /// vectors kept beside it), and `memories`; `None` for anything else.
    pub fn from_declared(entry: &str) -> Option<Self> {
        let table = entry
            .strip_prefix("L0.")
            .or_else(|| entry.strip_prefix("L1."))
            .unwrap_or(entry);
        match table {
            "conversations" | "all_conversations" | "conversation_embeddings" => {
                Some(Self::Conversations)
            }
            "memories" => Some(Self::Memories),
            _ => None,
        }
    }

    /// The command that creates this store from the user's files.
    pub fn import_command(self) -> &'static str {
        match self {
            Self::Conversations => "skills ingest",
            Self::Memories => "skills memo import",
        }
    }
}

/// Where the stores live.
///
/// The folder: `--data-dir` / `SKILLS_DATA_DIR` (read by the command line), else
/// [`StorePaths::default_dir`]: `$XDG_DATA_HOME/skills`, else `~/.local/share/skills`.
/// The conversations store is `<dir>/conversations.duckdb`, memories `<dir>/memories.sqlite`.
#[derive(Debug, Clone)]
pub struct StorePaths {
    /// DuckDB file holding `all_conversations`.
    pub conversations: PathBuf,
    /// SQLite file holding memories.
    pub memories: PathBuf,
}

impl StorePaths {
    /// Paths inside one data directory.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Self {
            conversations: dir.join("conversations.duckdb"),
            memories: dir.join("memories.sqlite"),
        }
    }

    /// The default data directory, `$XDG_DATA_HOME/skills` (`~/.local/share/skills`),
    /// when no folder is given (see the type docs); `None` when no home is known.
    pub fn default_dir() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("skills"))
    }
}
