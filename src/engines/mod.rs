//! Engines: the Rust code a skill document binds to by its frontmatter `engine` name.
//!
//! An engine receives arguments that the runtime has already validated against the
//! skill's input schema (defaults applied) and returns structured JSON. Engines know
//! nothing about MCP, the CLI or templates. All engines are registered in
//! [`registry`], the one place that maps names to code.

pub mod compose;
pub mod memo_save;
pub mod memo_search;
pub mod rerank;
pub mod search_conversations;
pub mod semantic_search;
pub mod sql;
pub mod temporal;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::cancel::Cancel;
use crate::embed::{EmbedError, Embedder};
use crate::stores::conversations::embeddings::{self, Embeddings};
use crate::stores::conversations::index::{self, Unavailable};
use crate::stores::conversations::ConversationStore;
use crate::stores::memories::MemoryStore;
use crate::stores::{Store, StoreError, StorePaths};

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

    /// Runs one call with access to other skills through the host's call path
    /// ([`Skills`]) — what composing engines ([`compose`]) implement. The default runs
    /// [`Engine::call`]; the host always calls this one.
    ///
    /// # Errors
    /// As [`Engine::call`].
    fn call_in(
        &self,
        args: &Value,
        ctx: &Context,
        skills: &dyn Skills,
    ) -> Result<Value, EngineError> {
        let _ = skills;
        self.call(args, ctx)
    }

    /// Skills this engine's calls run through [`Skills`] (a bound engine: for its
    /// document); the host checks them when it loads (each loaded, no cycle, their
    /// stores declared). The default: none.
    fn calls(&self) -> Vec<String> {
        Vec::new()
    }

    /// The stores this engine's calls open (a bound engine: for its document), checked
    /// when a document binds against its `reads` and `writes`. The default, nothing,
    /// leaves only the per-call check of [`Context::scoped`].
    fn effects(&self) -> Effects {
        Effects::default()
    }
}

/// Other skills, as a composing engine reaches them: the host's one call path
/// (argument validation, declared effects, redaction), implemented by
/// [`crate::host::Host`]. `Sync`: a composition may call its sources side by side.
pub trait Skills: Sync {
    /// Calls skill `name` with `args` and returns its structured output.
    ///
    /// # Errors
    /// [`SkillCallError`]: skipped (its store does not exist yet, or a capability is
    /// unavailable) or failed.
    fn call_skill(&self, name: &str, args: Value) -> Result<Value, SkillCallError>;
}

/// Why a call through [`Skills`] gave no output.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SkillCallError {
    /// The skill cannot answer here yet (its store does not exist, no embeddings…):
    /// a composition skips it with a note.
    #[error("{0}")]
    Skipped(String),
    /// Any other failure (bad arguments, store errors…).
    #[error("{0}")]
    Failed(String),
}

/// The stores an engine reads and writes ([`Engine::effects`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Stores read.
    pub reads: Vec<Store>,
    /// Stores written.
    pub writes: Vec<Store>,
}

impl Effects {
    /// Reads `stores`, writes nothing.
    pub fn reads(stores: &[Store]) -> Self {
        Self {
            reads: stores.to_vec(),
            writes: Vec::new(),
        }
    }
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
    /// The call stopped ([`Context::cancel`]): its deadline passed or its client left.
    #[error("stopped: {0}")]
    Stopped(crate::cancel::Stop),
    /// A capability the engine needs is not available (e.g. no embedding model).
    #[error("{0}")]
    Unavailable(String),
}

/// A failed statement or connection of the team archive, as a failed query: its text
/// names the archive (never its password) and what failed.
impl From<crate::archive::ArchiveError> for EngineError {
    fn from(e: crate::archive::ArchiveError) -> Self {
        Self::Query(e.to_string())
    }
}

/// What engines read: the stores, the clock and the embedding model.
///
/// One context is shared by every call of a host; [`Context::scoped`] gives each call
/// a view limited to the stores its document declares ([`Access`]): a store missing
/// from `reads` cannot be opened, and a skill whose `writes` is empty only ever gets
/// read-only handles (DuckDB `access_mode=READ_ONLY`, SQLite's read-only open flag
/// plus `PRAGMA query_only`).
pub struct Context {
    shared: Arc<Shared>,
    now: Option<chrono::DateTime<chrono::Utc>>,
    /// False: every search answers from DuckDB (`SKILLS_SEARCH_INDEX=off`, tests).
    use_index: bool,
    access: Access,
    /// The call's stop signal (deadline, client gone); never stops outside a call.
    cancel: Cancel,
    /// The team archive the skills read instead of the local stores (`--archive`).
    archive: Option<Arc<crate::archive::search::Pool>>,
}

/// What the calls of one host share: store locations and what is cached across calls.
struct Shared {
    paths: StorePaths,
    memories: OnceLock<Arc<MemoryStore>>,
    /// The writable handle of `memories`, opened by the first write and held (a held
    /// SQLite connection locks nothing between transactions).
    memories_writer: OnceLock<Arc<MemoryStore>>,
    embedder: OnceLock<Result<Arc<Embedder>, EmbedError>>,
    /// The memories' model: the second tier when fetched ([`Embedder::load_for_memories`]).
    memory_embedder: OnceLock<Result<Arc<Embedder>, EmbedError>>,
    /// The conversations search index, reopened when it or the store changes.
    index: index::Cache,
    /// The conversations' L1 embeddings, reopened when they or the store change.
    embeddings: embeddings::Cache,
}

/// The stores one call may open, from its document's `reads` and `writes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Skill the access is for (`None`: unrestricted, e.g. tests and benchmarks).
    skill: Option<String>,
    reads: Vec<Store>,
    writes: Vec<Store>,
}

impl Access {
    /// Every store readable, none writable through the context: what a context that
    /// was never scoped gives (tests, benchmarks, the conformance runner's lookups).
    pub fn unrestricted() -> Self {
        Self {
            skill: None,
            reads: vec![Store::Conversations, Store::Memories],
            writes: Vec::new(),
        }
    }

    /// The access skill `skill` declares: `reads` and `writes` as stores (a store
    /// written is also read).
    pub fn declared(skill: &str, reads: &[Store], writes: &[Store]) -> Self {
        let mut all = reads.to_vec();
        all.extend(writes.iter().copied().filter(|w| !reads.contains(w)));
        Self {
            skill: Some(skill.to_owned()),
            reads: all,
            writes: writes.to_vec(),
        }
    }

    /// The skill this access is for (`None`: unrestricted).
    pub fn skill(&self) -> Option<&str> {
        self.skill.as_deref()
    }

    /// True when `store` may be read.
    pub fn reads(&self, store: Store) -> bool {
        self.reads.contains(&store)
    }

    /// True when `store` may be written.
    pub fn writes(&self, store: Store) -> bool {
        self.writes.contains(&store)
    }

    fn check(&self, store: Store, write: bool) -> Result<(), StoreError> {
        let allowed = if write {
            self.writes(store)
        } else {
            self.reads(store)
        };
        if allowed {
            return Ok(());
        }
        Err(StoreError::Undeclared {
            skill: self.skill.clone().unwrap_or_else(|| "this context".into()),
            store,
            field: if write { "writes" } else { "reads" },
        })
    }
}

/// The handle held in `cell`, opened by `open` on first use (a failed open is not
/// kept, so the next call tries again).
fn held(
    cell: &OnceLock<Arc<MemoryStore>>,
    open: impl FnOnce() -> Result<MemoryStore, StoreError>,
) -> Result<Arc<MemoryStore>, StoreError> {
    if let Some(store) = cell.get() {
        return Ok(store.clone());
    }
    let store = Arc::new(open()?);
    Ok(cell.get_or_init(|| store).clone())
}

impl Context {
    /// A context over the stores at `paths`.
    pub fn new(paths: StorePaths) -> Self {
        Self {
            shared: Arc::new(Shared {
                paths,
                memories: OnceLock::new(),
                memories_writer: OnceLock::new(),
                embedder: OnceLock::new(),
                memory_embedder: OnceLock::new(),
                index: index::Cache::default(),
                embeddings: embeddings::Cache::default(),
            }),
            now: None,
            use_index: crate::settings::search_index(),
            access: Access::unrestricted(),
            cancel: Cancel::new(),
            archive: None,
        }
    }

    /// The same stores, caches, clock and model, limited to `access` — what
    /// [`crate::host::Host::call`] hands each engine call.
    #[must_use]
    pub fn scoped(&self, access: Access) -> Self {
        Self {
            shared: self.shared.clone(),
            now: self.now,
            use_index: self.use_index,
            access,
            cancel: self.cancel.clone(),
            archive: self.archive.clone(),
        }
    }

    /// The same context for one call stopped by `cancel` (its deadline, or the client
    /// leaving): long loops check it and database queries are interrupted by it.
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// The call's stop signal ([`crate::cancel`]). Engines pass it to long loops and
    /// may return early once it has stopped: the host then answers with the reason,
    /// never with the partial result.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// A context over the stores at `paths` with this one's clock, search-index
    /// setting and embedding model (when already chosen) and fresh caches — for runs
    /// on a private copy of the stores (conformance cases of skills that write).
    #[must_use]
    pub fn relocated(&self, paths: StorePaths) -> Self {
        let (embedder, memory_embedder) = (OnceLock::new(), OnceLock::new());
        if let Some(chosen) = self.shared.embedder.get() {
            let _ = embedder.set(chosen.clone());
        }
        if let Some(chosen) = self.shared.memory_embedder.get() {
            let _ = memory_embedder.set(chosen.clone());
        }
        Self {
            shared: Arc::new(Shared {
                paths,
                memories: OnceLock::new(),
                memories_writer: OnceLock::new(),
                embedder,
                memory_embedder,
                index: index::Cache::default(),
                embeddings: embeddings::Cache::default(),
            }),
            now: self.now,
            use_index: self.use_index,
            access: Access::unrestricted(),
            cancel: self.cancel.clone(),
            archive: None,
        }
    }

    /// The same context reading the team archive through `pool` instead of the local
    /// stores (`--archive`): every engine answers from it, or says the skill is not
    /// available there (a drop-in `sql` skill without a PostgreSQL twin) — never with a
    /// local answer in its place.
    #[must_use]
    pub fn with_archive(mut self, pool: Option<Arc<crate::archive::search::Pool>>) -> Self {
        self.archive = pool;
        self
    }

    /// The team archive, when the context reads one.
    pub fn archive(&self) -> Option<&Arc<crate::archive::search::Pool>> {
        self.archive.as_ref()
    }

    /// `Ok` when argument `name` may be given: always on the team archive; on the
    /// local stores only when it is absent or null. Arguments that filter what only
    /// the archive records (`machine`, `user`) are refused locally rather than
    /// ignored, so a filter never silently returns every local row.
    ///
    /// # Errors
    /// [`EngineError::Argument`] naming `name` and saying to give `--archive`.
    pub fn archive_only_argument(&self, name: &str, value: &Value) -> Result<(), EngineError> {
        if self.archive.is_some() || value.is_null() {
            return Ok(());
        }
        Err(EngineError::Argument {
            name: name.to_owned(),
            reason: format!(
                "filters the team archive's rows; give `--archive` (or {}) to read the \
                 archive",
                crate::settings::ARCHIVE_URL.name
            ),
        })
    }

    /// The stores this context may open.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// `Ok` when the call may read `store` — for engines that open a store's file
    /// themselves through a read-only opener (`sql` on memories uses
    /// [`crate::stores::memories::query_connection`]).
    ///
    /// # Errors
    /// [`StoreError::Undeclared`] when the skill's `reads` does not name it.
    pub fn may_read(&self, store: Store) -> Result<(), StoreError> {
        self.access.check(store, false)
    }

    /// Turns the conversations search index on or off (off: DuckDB answers every
    /// search) — differential tests and benchmarks (feature `bench`).
    #[cfg(feature = "bench")]
    #[must_use]
    pub fn with_search_index(mut self, on: bool) -> Self {
        self.use_index = on;
        self
    }

    /// False when the search index is turned off ([`Context::with_search_index`]).
    pub fn uses_search_index(&self) -> bool {
        self.use_index
    }

    /// The conversations search index, when it is on and matches the store. Found
    /// stale while an ingest holds the index lock (`skills serve`'s background import),
    /// it waits up to [`index::PUBLISH_WAIT`] for that ingest to publish and opens
    /// again.
    ///
    /// # Errors
    /// [`Unavailable`] saying why the caller must answer from DuckDB (`Missing` also
    /// when the index is turned off or the store is not declared in `reads`).
    pub fn conversations_index(&self) -> Result<Arc<index::Index>, Unavailable> {
        if !self.use_index || !self.access.reads(Store::Conversations) {
            return Err(Unavailable::Missing);
        }
        let db = &self.shared.paths.conversations;
        match self.shared.index.get(db) {
            // An ingest (e.g. `skills serve`'s background import) is about to publish.
            Err(Unavailable::Stale) if index::wait_for_writer(db, index::PUBLISH_WAIT) => {
                self.shared.index.get(db)
            }
            other => other,
        }
    }

    /// The conversations' L1 embeddings (written by `skills ingest`), when they match
    /// the store; found stale while an ingest holds the index lock, waits for it as
    /// [`Context::conversations_index`] does.
    ///
    /// # Errors
    /// [`Unavailable`]: `Missing` when never embedded (`skills ingest --no-embed`, no
    /// model at ingest), `Stale` when the store changed since.
    pub fn conversation_embeddings(&self) -> Result<Arc<Embeddings>, Unavailable> {
        if !self.access.reads(Store::Conversations) {
            return Err(Unavailable::Missing);
        }
        let db = &self.shared.paths.conversations;
        match self.shared.embeddings.get(db) {
            Err(Unavailable::Stale) if index::wait_for_writer(db, index::PUBLISH_WAIT) => {
                self.shared.embeddings.get(db)
            }
            other => other,
        }
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
        &self.shared.paths
    }

    /// The conversations store, opened read-only for the caller alone: each call
    /// opens it and the handle closes when the last clone is dropped, so nothing is
    /// held between calls. DuckDB lets one process write a file or several read it:
    /// a store kept open by an idle `skills serve` would keep `skills ingest` out, and
    /// a fresh open always sees the latest import. A read-only open leaves the file
    /// (and so the search index's stamp of it) untouched.
    ///
    /// # Errors
    /// [`StoreError::Undeclared`] when the skill's `reads` does not name the store,
    /// [`StoreError::Missing`] when nothing was ingested yet, [`StoreError::Locked`]
    /// while an ingest keeps writing, or a DuckDB error.
    pub fn conversations(&self) -> Result<Arc<ConversationStore>, StoreError> {
        self.access.check(Store::Conversations, false)?;
        let store = ConversationStore::open_ro(&self.shared.paths.conversations)?;
        Ok(Arc::new(store.interrupted_by(&self.cancel)))
    }

    /// Fixes the embedding model of conversations and memories alike (`None`: no
    /// model) instead of loading the default ones from `$SKILLS_MODEL_DIR` — tests,
    /// conformance runs and the quality harnesses.
    #[must_use]
    pub fn with_embedder(self, embedder: Option<Arc<Embedder>>) -> Self {
        let chosen = embedder.ok_or(EmbedError::Disabled);
        let _ = self.shared.embedder.set(chosen.clone());
        let _ = self.shared.memory_embedder.set(chosen);
        self
    }

    /// The memories store, opened read-only on first use and shared by later calls
    /// (SQLite holds no lock between statements). A hot journal left by an
    /// interrupted write (`memories.sqlite-journal` after a crash or a full disk) is
    /// rolled back first, so reads work without anyone running a write.
    ///
    /// # Errors
    /// [`StoreError::Undeclared`] when the skill's `reads` does not name the store,
    /// [`StoreError::Missing`] when nothing was imported yet, or a SQLite error.
    pub fn memories(&self) -> Result<Arc<MemoryStore>, StoreError> {
        self.access.check(Store::Memories, false)?;
        let path = &self.shared.paths.memories;
        crate::stores::memories::recover_hot_journal(path)?;
        held(&self.shared.memories, || MemoryStore::open_ro(path))
    }

    /// The memories store opened writable (created when missing), for a skill whose
    /// `writes` names `memories`. Opened once per context and held, so a server's saves
    /// do not each pay the open and the schema check (~1 ms); every write is its own
    /// `BEGIN IMMEDIATE` transaction, so other processes' writers are waited for.
    ///
    /// # Errors
    /// [`StoreError::Undeclared`] when `writes` does not name the store, or a SQLite
    /// error.
    pub fn memories_writable(&self) -> Result<Arc<MemoryStore>, StoreError> {
        self.access.check(Store::Memories, true)?;
        held(&self.shared.memories_writer, || {
            MemoryStore::open_rw(&self.shared.paths.memories)
        })
    }

    /// The embedding model, loaded on first use from [`Embedder::default_dir`] (or
    /// the one fixed by [`Context::with_embedder`]).
    ///
    /// # Errors
    /// [`EmbedError`] saying why no model is available.
    pub fn embedder(&self) -> Result<Arc<Embedder>, EmbedError> {
        self.shared
            .embedder
            .get_or_init(|| Embedder::load_default().map(Arc::new))
            .clone()
    }

    /// The model that made stored vectors named `model`, to embed a query beside
    /// them: a model already loaded (or fixed by [`Context::with_embedder`]) of that
    /// name; else the second tier ([`Context::memory_embedder`]) when `model` names it;
    /// else [`Context::embedder`]. The caller compares names: a store made by a model
    /// not at hand is the caller's error to report.
    ///
    /// # Errors
    /// [`EmbedError`] saying why no model is available.
    pub fn embedder_for(&self, model: &str) -> Result<Arc<Embedder>, EmbedError> {
        for slot in [&self.shared.embedder, &self.shared.memory_embedder] {
            if let Some(Ok(e)) = slot.get() {
                if e.name() == model {
                    return Ok(e.clone());
                }
            }
        }
        if model == crate::embed::deep::NAME {
            let deep = self.memory_embedder()?;
            if deep.is_deep() {
                return Ok(deep);
            }
        }
        self.embedder()
    }

    /// The memories' embedding model, loaded on first use: the second tier when its
    /// files are fetched, else the static table ([`Embedder::load_for_memories`]); or
    /// the one fixed by [`Context::with_embedder`].
    ///
    /// # Errors
    /// [`EmbedError`] saying why no model is available.
    pub fn memory_embedder(&self) -> Result<Arc<Embedder>, EmbedError> {
        self.shared
            .memory_embedder
            .get_or_init(|| Embedder::load_for_memories().map(Arc::new))
            .clone()
    }

    /// Path of the memories store.
    pub fn memories_path(&self) -> PathBuf {
        self.shared.paths.memories.clone()
    }
}

/// How a hybrid leg's scores are put on one scale before fusion (memo-search's vec
/// leg, semantic-search's semantic leg).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Each score over the leg's best (the best counts 1; 0 when the best is not
    /// positive).
    Best,
    /// `(score − worst) / (best − worst)` over the leg's candidates (1 for all when
    /// they are equal): spreads a model whose cosines all sit close together (e5's lie
    /// in ~0.75–0.9, so over-best gives every candidate nearly the same share).
    MinMax,
}

impl Norm {
    /// `score` on [0, 1], given the leg's best `top` and worst `low` candidate scores.
    pub fn apply(self, score: f64, top: f64, low: f64) -> f64 {
        match self {
            Self::Best if top > 0.0 => (score.max(0.0) / top).min(1.0),
            Self::Best => 0.0,
            Self::MinMax if top > low => ((score - low) / (top - low)).clamp(0.0, 1.0),
            Self::MinMax => 1.0,
        }
    }
}

/// Every engine this host knows, by name. The one place engines are registered.
pub fn registry() -> Vec<Arc<dyn Engine>> {
    vec![
        Arc::new(search_conversations::SearchConversations),
        Arc::new(memo_search::MemoSearch),
        Arc::new(memo_save::MemoSave),
        Arc::new(semantic_search::SemanticSearch),
        Arc::new(sql::Sql),
        Arc::new(compose::Compose),
        Arc::new(rerank::Rerank),
    ]
}

/// A process-wide replacement of an engine's ranking parameters (its `Tuning`), so the
/// quality harnesses can measure variants in one process; calls use the engine's
/// default while none is set. Feature `bench` only: the installed binary always uses
/// the defaults.
#[cfg(feature = "bench")]
pub struct Override<T: Copy>(std::sync::RwLock<Option<T>>);

#[cfg(feature = "bench")]
impl<T: Copy> Default for Override<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "bench")]
impl<T: Copy> Override<T> {
    /// None set.
    pub const fn new() -> Self {
        Self(std::sync::RwLock::new(None))
    }

    /// Sets (`Some`) or clears (`None`) the replacement for every later call.
    pub fn set(&self, t: Option<T>) {
        if let Ok(mut g) = self.0.write() {
            *g = t;
        }
    }

    /// The replacement when one is set, else `default`.
    pub fn get_or(&self, default: T) -> T {
        self.0.read().ok().and_then(|g| *g).unwrap_or(default)
    }
}

/// Writes `line` to stderr the first time this process is told it (a fallback or a
/// degraded answer is said once, not once per call).
pub(crate) fn note_once(line: String) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.contains(&line) {
        crate::terminal::log(format_args!("{line}"));
        said.push(line);
    }
}

/// The `cites` object of an output row citing message `message_id` of conversation
/// `conversation_id` from `source`: what pages link from (never from a row's text).
pub fn cites_message(source: &str, conversation_id: &str, message_id: &str) -> Value {
    serde_json::json!({
        "kind": "conversation",
        "source": source,
        "conversation_id": conversation_id,
        "message_id": message_id,
    })
}

/// The `cites` object of an output row citing memory `id`.
pub fn cites_memory(id: &str) -> Value {
    serde_json::json!({"kind": "memory", "id": id})
}
