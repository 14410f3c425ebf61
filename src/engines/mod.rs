//! Engines: the Rust code a skill document binds to by its frontmatter `engine` name.
//!
//! An engine receives arguments that the runtime has already validated against the
//! skill's input schema (defaults applied) and returns structured JSON. Engines know
//! nothing about MCP, the CLI or templates. All engines are registered in
//! [`registry`], the one place that maps names to code.

pub mod memo_search;
pub mod search_conversations;
pub mod semantic_search;
pub mod sql;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::embed::{EmbedError, Embedder};
use crate::stores::conversations::embeddings::{self, Embeddings};
use crate::stores::conversations::index::{self, Unavailable};
use crate::stores::conversations::ConversationStore;
use crate::stores::memories::MemoryStore;
use crate::stores::{StoreError, StorePaths};

/// A retrieval engine.
///
/// Implementers own one kind of query over one store. `call` must be a pure function
/// of its arguments and the store contents when the skill declares
/// `determinism: pure-function`, and must never write when the skill's `writes` is empty.
pub trait Engine: Send + Sync {
    /// The name a document's frontmatter `engine:` field binds to.
    fn name(&self) -> &'static str;

    /// Specialises the engine for one skill document, for engines configured per skill
    /// (e.g. `sql` reads the skill's query file). `Ok(None)`, the default, shares this
    /// engine across skills.
    ///
    /// # Errors
    /// A reason, reported as a diagnostic on the document's `engine-options`.
    fn bind(&self, binding: &Binding<'_>) -> Result<Option<Arc<dyn Engine>>, String> {
        let _ = binding;
        Ok(None)
    }

    /// Runs one call. `args` is a JSON object already validated against the skill's
    /// input schema, with defaults applied.
    ///
    /// # Errors
    /// [`EngineError`] for store failures or argument values the schema cannot express.
    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError>;
}

/// What a document gives its engine when it binds: the skill folder, the frontmatter's
/// `engine-options` (JSON object, `{}` when absent) and the input schema.
pub struct Binding<'a> {
    /// Folder holding `SKILL.md`.
    pub skill_dir: &'a Path,
    /// `engine-options` from the frontmatter.
    pub options: &'a Value,
    /// The skill's input schema.
    pub input_schema: &'a Value,
}

/// Errors an engine returns; shown to the caller as a failed call (exit 1, MCP `isError`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The store could not be opened or queried.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An argument value is invalid in a way the schema does not express.
    #[error("argument `{name}`: {reason}")]
    Argument {
        /// Argument name.
        name: String,
        /// What was expected.
        reason: String,
    },
    /// A query failed, was interrupted or tried to write.
    #[error("{0}")]
    Query(String),
    /// A capability the engine needs is not available (e.g. no embedding model).
    #[error("{0}")]
    Unavailable(String),
}

/// What engines read: the stores, opened lazily and shared across calls.
pub struct Context {
    paths: StorePaths,
    /// The conversations store while calls use it (see [`Context::conversations`]).
    conversations: Arc<Mutex<Held>>,
    memories: OnceLock<Arc<MemoryStore>>,
    embedder: OnceLock<Result<Arc<Embedder>, EmbedError>>,
    now: Option<chrono::DateTime<chrono::Utc>>,
    /// The conversations search index, reopened when it or the store changes.
    index: index::Cache,
    /// The conversations' L1 embeddings, reopened when they or the store change.
    embeddings: embeddings::Cache,
    /// False: every search answers from DuckDB (`SKILLS_SEARCH_INDEX=off`, tests).
    use_index: bool,
}

impl Context {
    /// A context over the stores at `paths`.
    pub fn new(paths: StorePaths) -> Self {
        Self {
            paths,
            conversations: Arc::new(Mutex::new(Held::default())),
            memories: OnceLock::new(),
            embedder: OnceLock::new(),
            now: None,
            index: index::Cache::default(),
            embeddings: embeddings::Cache::default(),
            use_index: std::env::var("SKILLS_SEARCH_INDEX").map_or(true, |v| v != "off"),
        }
    }

    /// Turns the conversations search index on or off (off: DuckDB answers every
    /// search) — differential tests and benchmarks.
    #[must_use]
    pub fn with_search_index(mut self, on: bool) -> Self {
        self.use_index = on;
        self
    }

    /// False when the search index is turned off ([`Context::with_search_index`]).
    pub fn uses_search_index(&self) -> bool {
        self.use_index
    }

    /// The conversations search index, when it is on and matches the store.
    ///
    /// # Errors
    /// [`Unavailable`] saying why the caller must answer from DuckDB (`Missing` also
    /// when the index is turned off).
    pub fn conversations_index(&self) -> Result<Arc<index::Index>, Unavailable> {
        if !self.use_index {
            return Err(Unavailable::Missing);
        }
        self.index.get(&self.paths.conversations)
    }

    /// The conversations' L1 embeddings (written by `skills ingest`), when they match
    /// the store.
    ///
    /// # Errors
    /// [`Unavailable`]: `Missing` when never embedded (`skills ingest --no-embed`, no
    /// model at ingest), `Stale` when the store changed since.
    pub fn conversation_embeddings(&self) -> Result<Arc<Embeddings>, Unavailable> {
        self.embeddings.get(&self.paths.conversations)
    }

    /// Fixes the clock (for natural-language dates) — tests and conformance runs.
    #[must_use]
    pub fn with_now(mut self, now: chrono::DateTime<chrono::Utc>) -> Self {
        self.now = Some(now);
        self
    }

    /// The current time: the injected clock, else the system clock.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.now.unwrap_or_else(chrono::Utc::now)
    }

    /// Store locations.
    pub fn paths(&self) -> &StorePaths {
        &self.paths
    }

    /// The conversations store, opened read-only on first use and shared by the calls
    /// that follow; closed once no call has used it for [`STORE_IDLE`] (a background
    /// thread watches). Not kept open longer: DuckDB lets one process write the file or
    /// others read it, so a store held by an idle `skills serve` would keep `skills
    /// ingest` out (which waits up to 30 s for the lock) — and while it is held, no
    /// ingest can have written anything it does not see.
    ///
    /// # Errors
    /// [`StoreError::Missing`] when nothing was ingested yet, [`StoreError::Locked`]
    /// while an ingest keeps writing, or a DuckDB error.
    pub fn conversations(&self) -> Result<Arc<ConversationStore>, StoreError> {
        let mut held = lock(&self.conversations);
        held.last_used = std::time::Instant::now();
        if let Some(store) = &held.store {
            return Ok(store.clone());
        }
        let store = Arc::new(ConversationStore::open_ro(&self.paths.conversations)?);
        held.store = Some(store.clone());
        let watched = Arc::downgrade(&self.conversations);
        std::thread::spawn(move || close_when_idle(&watched));
        Ok(store)
    }

    /// Fixes the embedding model (`None`: no model) instead of loading the default one
    /// from `$SKILLS_MODEL_DIR` — tests and conformance runs.
    #[must_use]
    pub fn with_embedder(self, embedder: Option<Arc<Embedder>>) -> Self {
        let _ = self.embedder.set(embedder.ok_or(EmbedError::Disabled));
        self
    }

    /// The memories store, opened read-only on first use.
    ///
    /// # Errors
    /// [`StoreError::Missing`] when nothing was imported yet, or a SQLite error.
    pub fn memories(&self) -> Result<Arc<MemoryStore>, StoreError> {
        if let Some(store) = self.memories.get() {
            return Ok(store.clone());
        }
        let store = Arc::new(MemoryStore::open_ro(&self.paths.memories)?);
        Ok(self.memories.get_or_init(|| store).clone())
    }

    /// The embedding model, loaded on first use from [`Embedder::default_dir`] (or
    /// the one fixed by [`Context::with_embedder`]).
    ///
    /// # Errors
    /// [`EmbedError`] saying why no model is available.
    pub fn embedder(&self) -> Result<Arc<Embedder>, EmbedError> {
        self.embedder
            .get_or_init(|| Embedder::load_default().map(Arc::new))
            .clone()
    }

    /// Path of the memories store.
    pub fn memories_path(&self) -> PathBuf {
        self.paths.memories.clone()
    }
}

/// How long the conversations store stays open after the last call used it.
pub const STORE_IDLE: std::time::Duration = std::time::Duration::from_secs(2);

/// A store kept open by [`Context::conversations`] and when it was last handed out.
struct Held {
    store: Option<Arc<ConversationStore>>,
    last_used: std::time::Instant,
}

impl Default for Held {
    fn default() -> Self {
        Self {
            store: None,
            last_used: std::time::Instant::now(),
        }
    }
}

fn lock(held: &Mutex<Held>) -> std::sync::MutexGuard<'_, Held> {
    held.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Drops the held store once it has been idle for [`STORE_IDLE`] and no call still
/// holds it; ends then, or when the context is gone.
fn close_when_idle(watched: &std::sync::Weak<Mutex<Held>>) {
    loop {
        std::thread::sleep(STORE_IDLE / 4);
        let Some(held) = watched.upgrade() else {
            return;
        };
        let mut held = lock(&held);
        let in_use = held
            .store
            .as_ref()
            .is_some_and(|s| Arc::strong_count(s) > 1);
        if held.store.is_none() {
            return;
        }
        if !in_use && held.last_used.elapsed() >= STORE_IDLE {
            held.store = None;
            return;
        }
    }
}

/// Every engine this host knows, by name. The one place engines are registered.
pub fn registry() -> Vec<Arc<dyn Engine>> {
    vec![
        Arc::new(search_conversations::SearchConversations),
        Arc::new(memo_search::MemoSearch),
        Arc::new(semantic_search::SemanticSearch),
        Arc::new(sql::Sql),
    ]
}
