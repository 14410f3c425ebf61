//! `skills archive push`: the local conversations and memories into the archive.
//!
//! - **Keyed** by (`machine`, `source`, `conversation_id`, `message_id`): every row a
//!   push writes or deletes has this machine's id, so a machine never touches another's
//!   rows.
//! - **Incremental**: per conversation a fingerprint of its rows (count and an XOR of
//!   row hashes computed by DuckDB) is compared with the one the archive recorded at
//!   the last push (table `conversations`, the watermark, which lives in the archive and
//!   so follows its identity, not its URL). Only conversations whose fingerprint differs
//!   are sent; a changed (appended or rewritten) conversation replaces all its rows. A
//!   conversation gone locally stays unless `prune`.
//! - **Fingerprints kept locally**: hashing every row is most of a push with little to
//!   send (1.4 s at 1M messages), so the fingerprints are kept beside the store
//!   (`conversations.archive-prints`, [`PrintCache`]) with the position of the store's
//!   change log ([`crate::stores::conversations::changes`]) they hold for; the next
//!   push hashes only the conversations the log records as changed since. A cache that
//!   does not fit the store (another log, a number ahead of the log's, a row count
//!   that differs from the table's) is ignored and every conversation hashed, as a
//!   store without the log (written by an older version) always is. The cache holds
//!   local facts only, so any archive may be pushed to with it, and writing it
//!   (a new file renamed over the old) never affects what a push sends.
//! - **Idempotent and kill-safe**: each batch (whole conversations, about
//!   [`PushOptions::batch_rows`] rows) is one short transaction — delete the
//!   conversations' rows, binary `COPY` the new ones, record their fingerprints — so a
//!   push killed at any point leaves whole conversations with matching fingerprints,
//!   and the next push sends exactly what is missing. Batches go out over
//!   [`PushOptions::connections`] connections side by side; each is still its own
//!   transaction with its own watermark rows, so this holds whatever the order in
//!   which they commit.
//! - **Vectors** beside the rows: a conversation's L1 units (its 8-bit codes, as the
//!   local store holds them: never embedded again) go into its model's table
//!   ([`super::schema`], `units_<slot>`) in the same transaction as its rows, and their
//!   fingerprint is part of the conversation's, so a conversation re-embedded locally
//!   (another model, a rewrite) is sent again, and a push killed mid-way leaves rows
//!   and vectors of the same version. Vectors whose model the archive has no table
//!   for (or embeddings older than the store) are not sent, and the rows go without
//!   them (said in [`PushReport::notes`]); once `skills archive migrate` made the
//!   table (or `skills ingest` embedded again), the next push sends them. Memories'
//!   vectors go the same way into `memory_vectors_<slot>`.
//! - **Keyword terms** beside the rows (schema version 5): each message's BM25 length
//!   and stemmed terms with their counts, cut from the folded text sent
//!   ([`crate::search::postings::RowTerms`], as the local index posts them), go into
//!   `message_terms` in the batch's transaction, with the batch's document frequencies
//!   and totals as signed deltas (a rewritten or pruned conversation's taken back by
//!   the statement that deletes its terms), so the archive's statistics are always
//!   those of the rows it holds; the push ends by folding the deltas
//!   ([`super::schema::COMPACT_DELTAS`]). See [`super::keyword`]. Since schema
//!   version 8 each message also gets an id (a block of
//!   [`super::schema::MESSAGE_IDS`] reserved per batch, consecutive in each
//!   conversation's local row order) and the batch writes its postings, one row per
//!   term ([`super::schema::KEYWORD_POSTINGS`]); a deleted message's postings stay
//!   (searches skip ids that have no row) until the push ends by compacting the terms
//!   it wrote postings for that have many dead postings or rows
//!   ([`super::compact`]).
//! - **Memories' terms** (schema version 6): each memory sent goes with its row of
//!   [`MEMORY_TERMS`] — its local position and sequence, and its terms under the
//!   memories store's two FTS5 tokenizers, cut from the text sent
//!   ([`crate::stores::memories::fts::row_terms`]) — in the same transaction, so
//!   memo-search's BM25 on the archive is the local one ([`super::memo`]). Since
//!   schema version 9 the same transaction appends memo-search's statistics as signed
//!   deltas ([`MEMORY_DELTAS`], [`MEMORY_TOTALS`]: the sent rows' document frequencies,
//!   rows and tokens; the deleted rows' taken back by the statement deleting them), and
//!   the push folds them after committing
//!   ([`super::schema::COMPACT_MEMORY_DELTAS`]).
//! - **Redacted** by default: message and memory text go through
//!   [`crate::redact::Redactor`] before they leave the machine (counted).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use super::machine::Machine;
use super::meaning::HalfVec;
use super::schema::{
    RegisteredModel, KEYWORD_DELTAS, KEYWORD_POSTINGS, KEYWORD_TOTALS, MEMORY_COLUMNS,
    MEMORY_DELTAS, MEMORY_TERMS, MEMORY_TOTALS, MESSAGE_COLUMNS, MESSAGE_IDS, MESSAGE_TERMS,
    SCHEMA,
};
use super::{Archive, ArchiveError};
use crate::stores::conversations::embeddings::{ConversationUnits, Embeddings};
use crate::stores::StorePaths;

/// Options of one push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// Redact secrets before sending (default true).
    pub redact: bool,
    /// Delete this machine's conversations and memories that are gone locally.
    pub prune: bool,
    /// Rows per transaction (whole conversations; a larger conversation is one batch).
    pub batch_rows: usize,
    /// Connections sending batches side by side (at least 1).
    pub connections: usize,
    /// Compact the keyword postings of the terms the push wrote, when they need it
    /// ([`super::compact::needs_compaction`]; default true; off to measure without).
    pub compact: bool,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self {
            redact: true,
            prune: false,
            batch_rows: DEFAULT_BATCH_ROWS,
            connections: DEFAULT_CONNECTIONS,
            compact: true,
        }
    }
}

/// Rows per transaction: a batch commits in well under a second, so no transaction
/// is long (agentsview's long sync transactions starved autovacuum, its #605).
pub const DEFAULT_BATCH_ROWS: usize = 20_000;

/// Connections a push sends batches over side by side: PostgreSQL spends most of a
/// push's time in one backend per connection (the trigram index's upkeep), so a
/// second one uses a second core (docs/performance.md, "Push to the team archive").
pub const DEFAULT_CONNECTIONS: usize = 2;

/// What a push did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PushReport {
    /// The archive (no password).
    pub archive: String,
    /// `<system_identifier>/<database>`.
    pub identity: String,
    /// This machine's id and label.
    pub machine: String,
    /// Host label.
    pub label: String,
    /// User recorded on the rows.
    pub user: String,
    /// Conversations held locally.
    pub conversations_local: usize,
    /// Conversations whose fingerprint was computed by this push (new or changed
    /// since the last push from this folder, per the store's change log); the others'
    /// came from the local cache of fingerprints.
    pub conversations_hashed: usize,
    /// Conversations sent (new or changed).
    pub conversations_sent: usize,
    /// Messages sent.
    pub messages_sent: u64,
    /// Conversations deleted from the archive (`prune`).
    pub conversations_pruned: usize,
    /// Memories sent (new or changed).
    pub memories_sent: usize,
    /// Memories deleted from the archive (`prune`).
    pub memories_pruned: usize,
    /// Secrets replaced by `[REDACTED:…]` in what was sent.
    pub secrets_redacted: usize,
    /// Whether text was redacted.
    pub redacted: bool,
    /// Transactions committed.
    pub batches: usize,
    /// Trigram pending-list pages merged into the index at the end of the push
    /// (`None`: nothing sent, or the role may not run the merge; autovacuum does it).
    pub pending_pages_merged: Option<i64>,
    /// Units (vectors of conversations' windows of messages) sent.
    pub units_sent: u64,
    /// The model of the conversations' vectors sent (`None`: none sent).
    pub vector_model: Option<String>,
    /// Memories' vectors sent.
    pub memory_vectors_sent: usize,
    /// The keyword postings compacted at the end of the push (the terms it wrote
    /// postings for that [`super::compact::needs_compaction`]; `None`: no message
    /// sent).
    pub compacted: Option<super::compact::CompactReport>,
    /// What was not sent and why (vectors without a table in the archive, embeddings
    /// older than the store), and a compaction that failed (the push's rows stay).
    pub notes: Vec<String>,
    /// Seconds the push took.
    pub seconds: f64,
}

/// Progress callback: (messages sent, messages to send).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// A conversation's fingerprint: (message count, XOR of row hashes).
type Print = (i64, i64);

/// Pushes the stores at `paths` as `machine`.
///
/// # Errors
/// [`ArchiveError`] when the schema is missing or of another version, a local store
/// cannot be read, or a statement fails (batches committed before stay; the next push
/// completes the rest).
pub fn push(
    archive: &mut Archive,
    paths: &StorePaths,
    machine: &Machine,
    options: &PushOptions,
    progress: Progress<'_>,
) -> Result<PushReport, ArchiveError> {
    let started = std::time::Instant::now();
    let (mut report, models) = start(archive, machine, options)?;
    // The terms the batches wrote postings for.
    let touched = if paths.conversations.exists() {
        push_conversations(
            archive,
            paths,
            machine,
            options,
            &models,
            &mut report,
            progress,
        )?
    } else {
        HashSet::new()
    };
    if paths.memories.exists() {
        push_memories(
            archive,
            &paths.memories,
            machine,
            options,
            &models,
            &mut report,
        )?;
    }
    let target = archive.target().clone();
    if report.messages_sent > 0 {
        // The rows are committed; merging the trigram pending lists now spares every
        // search until the next push from reading them (a role without EXECUTE on
        // the function leaves that to autovacuum: nothing is lost either way).
        report.pending_pages_merged = archive
            .client()
            .query_one(&format!("SELECT {}", super::schema::FLUSH_PENDING), &[])
            .ok()
            .map(|r| r.get(0));
    }
    if report.messages_sent > 0 || report.conversations_pruned > 0 {
        // Fold the keyword statistics' deltas this push appended (one per term per
        // batch), so a search sums a few rows per term.
        archive
            .client()
            .batch_execute(super::schema::COMPACT_DELTAS)
            .map_err(|e| target.error("folding the keyword statistics", &e))?;
    }
    if options.compact && !touched.is_empty() {
        // The rows are committed: a compaction that fails (a role without DELETE on
        // the postings) loses nothing, so it is a note, not the push's error.
        let mut terms: Vec<String> = touched.into_iter().collect();
        terms.sort_unstable();
        match super::compact::compact(archive, super::compact::Scope::Touched(&terms)) {
            Ok(c) => report.compacted = Some(c),
            Err(e) => report
                .notes
                .push(format!("keyword postings not compacted: {e}")),
        }
    }
    archive
        .client()
        .execute(
            &format!("UPDATE {SCHEMA}.machines SET last_push = now() WHERE machine = $1"),
            &[&machine.id],
        )
        .map_err(|e| target.error("recording the push", &e))?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Whether the archive's role may write this machine's memories (`INSERT` and
/// `DELETE` on `memories`, `memory_terms`): the `--writer` role may, the reader role
/// may not. Checks the schema version first.
///
/// # Errors
/// [`ArchiveError`] when the schema is missing or of another version, or the archive
/// cannot be read.
pub fn may_push_memories(archive: &mut Archive) -> Result<bool, ArchiveError> {
    super::schema::check(archive)?;
    let target = archive.target().clone();
    let r = archive
        .client()
        .query_one(
            &format!(
                "SELECT has_table_privilege('{SCHEMA}.memories', 'INSERT')
                    AND has_table_privilege('{SCHEMA}.memories', 'DELETE')
                    AND has_table_privilege('{MEMORY_TERMS}', 'INSERT')
                    AND has_table_privilege('{SCHEMA}.machines', 'INSERT')"
            ),
            &[],
        )
        .map_err(|e| target.error("reading this role's privileges", &e))?;
    Ok(r.get(0))
}

/// What every push does first: checks the schema, registers `machine`, and returns
/// the report to fill and the archive's vector models.
///
/// # Errors
/// [`ArchiveError`] when the schema is missing or of another version, or a statement
/// fails.
fn start(
    archive: &mut Archive,
    machine: &Machine,
    options: &PushOptions,
) -> Result<(PushReport, Vec<super::schema::RegisteredModel>), ArchiveError> {
    super::schema::check(archive)?;
    let identity = archive.identity()?;
    let report = PushReport {
        archive: archive.target().shown().to_owned(),
        identity: identity.key(),
        machine: machine.id.clone(),
        label: machine.label.clone(),
        user: machine.user.clone(),
        redacted: options.redact,
        ..PushReport::default()
    };
    register_machine(archive, machine)?;
    let models = super::schema::registered_models(archive.client())
        .map_err(|e| archive.error("reading the vector models", &e))?;
    Ok((report, models))
}

/// Pushes the memories store at `paths` as `machine`, and nothing else: the memories
/// path of [`push`] (this machine's new and changed memories with their links, terms
/// and vectors, in one transaction; `options.prune` deletes its memories gone
/// locally), as memo-save does after writing one into the archive. The report's
/// conversation counts stay 0; the machine's `last_push` is not moved (its
/// conversations were not pushed).
///
/// # Errors
/// [`ArchiveError`] as [`push`].
pub fn push_memories_only(
    archive: &mut Archive,
    paths: &StorePaths,
    machine: &Machine,
    options: &PushOptions,
) -> Result<PushReport, ArchiveError> {
    let started = std::time::Instant::now();
    let (mut report, models) = start(archive, machine, options)?;
    if paths.memories.exists() {
        push_memories(
            archive,
            &paths.memories,
            machine,
            options,
            &models,
            &mut report,
        )?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

fn register_machine(archive: &mut Archive, m: &Machine) -> Result<(), ArchiveError> {
    let target = archive.target().clone();
    archive
        .client()
        .execute(
            &format!(
                "INSERT INTO {SCHEMA}.machines (machine, label, user_name) VALUES ($1, $2, $3)
                 ON CONFLICT (machine) DO UPDATE SET label = excluded.label,
                   user_name = excluded.user_name"
            ),
            &[&m.id, &m.label, &m.user],
        )
        .map_err(|e| target.error("registering this machine", &e))?;
    Ok(())
}

/// DuckDB's fingerprint of each conversation: its row count and the XOR of a hash
/// of every column a push sends (a `WHERE` may follow, then [`PRINTS_GROUP`]).
const LOCAL_PRINTS: &str = "SELECT source, conversation_id, count(*)::BIGINT,
    (bit_xor(hash(message_id, content, epoch_us(created), epoch_us(updated),
        conversation_title, model, project, parent_id, msg_index, role, content_type,
        is_first, is_last, conversation_msg_count, epoch_us(msg_timestamp),
        temporal_precision, is_injected, has_attachment, has_citation)) >> 1)::BIGINT
  FROM all_conversations";

/// The end of [`LOCAL_PRINTS`].
const PRINTS_GROUP: &str = " GROUP BY source, conversation_id";

/// Version of [`PrintCache`]'s content: raise it whenever [`LOCAL_PRINTS`] changes, so
/// fingerprints computed the old way are not taken for new ones.
const PRINT_CACHE_VERSION: u32 = 1;

/// The fingerprints of the local conversations as a push computed them, kept beside
/// the store between pushes (JSON, `conversations.archive-prints`).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct PrintCache {
    /// [`PRINT_CACHE_VERSION`].
    version: u32,
    /// The store's change log (its id, [`crate::stores::conversations::changes`]).
    log: String,
    /// The log's number the fingerprints hold for: conversations recorded at a
    /// greater one changed since.
    seq: i64,
    /// Whether the store marked injected rows (the fingerprint hashes the column).
    injected: bool,
    /// (source, conversation id, messages, fingerprint), conversations with rows only.
    prints: Vec<(String, String, i64, i64)>,
}

/// Where the fingerprints of the store at `db` are kept (`conversations.duckdb` →
/// `conversations.archive-prints`).
fn cache_path(db: &Path) -> std::path::PathBuf {
    db.with_extension("archive-prints")
}

/// The cache at `path` when it holds for `log` up to a number at most `seq` and the
/// same `injected`; `None` when missing, unreadable or not fitting.
fn read_cache(path: &Path, log: &str, seq: i64, injected: bool) -> Option<PrintCache> {
    let text = std::fs::read(path).ok()?;
    let c: PrintCache = serde_json::from_slice(&text).ok()?;
    (c.version == PRINT_CACHE_VERSION && c.log == log && c.seq <= seq && c.injected == injected)
        .then_some(c)
}

/// Writes the cache: a new file renamed over the old, so a push killed while writing
/// leaves the previous one. A folder that cannot be written keeps none (the next push
/// hashes every conversation again).
fn write_cache(path: &Path, log: &str, seq: i64, injected: bool, prints: &Prints) {
    let cache = PrintCache {
        version: PRINT_CACHE_VERSION,
        log: log.to_owned(),
        seq,
        injected,
        prints: prints
            .iter()
            .map(|((s, c), (n, f))| (s.clone(), c.clone(), *n, *f))
            .collect(),
    };
    let Ok(bytes) = serde_json::to_vec(&cache) else {
        return;
    };
    let tmp = path.with_extension(format!("archive-prints.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// The columns read from DuckDB for a row, in [`MESSAGE_COLUMNS`] order from `source`
/// to `is_injected` (times as microseconds).
const ROW_SELECT: &str = "SELECT source, model, project, conversation_id, conversation_title,
    epoch_us(created), epoch_us(updated), year, month, day_of_week, hour, message_id,
    parent_id, msg_index, epoch_us(msg_timestamp), timestamp_is_fallback, role,
    content_type, is_first, is_last, word_count, char_count, conversation_msg_count,
    has_code, has_url, has_question, has_attachment, has_citation, content,
    temporal_precision, is_injected FROM all_conversations";

/// XORed into the fingerprints of a push with `--no-redact`, so switching between
/// redacted and raw pushes sends every conversation again.
const RAW_MARK: i64 = 0x2545_F491_4F6C_DD1D;

type Prints = HashMap<(String, String), Print>;

/// The conversations' vectors a push sends: the local L1 embeddings, when they match
/// the store and their model has tables in the archive.
struct LocalVectors {
    embeddings: Embeddings,
    model: RegisteredModel,
    /// Each conversation's units and their fingerprint.
    units: HashMap<(String, String), ConversationUnits>,
    /// The unit spec, as JSON (recorded in the watermark).
    unit: String,
}

/// The local vectors to send with `models` registered in the archive, or `None` and
/// why not (`None` without a note: this store has no embeddings at all).
fn local_vectors(
    paths: &StorePaths,
    models: &[RegisteredModel],
) -> Result<(Option<LocalVectors>, Option<String>), ArchiveError> {
    use crate::stores::segments::Unavailable;
    let embeddings = match Embeddings::open(&paths.conversations) {
        Ok(e) => e,
        Err(Unavailable::Missing) => return Ok((None, None)),
        Err(Unavailable::Stale) => {
            return Ok((
                None,
                Some(
                    "conversations' vectors not sent: the embeddings are older than the \
                     store (run `skills ingest`, then push again)"
                        .to_owned(),
                ),
            ))
        }
        Err(Unavailable::Corrupt(why)) => {
            return Ok((
                None,
                Some(format!(
                    "conversations' vectors not sent: the embeddings are damaged ({why})"
                )),
            ))
        }
    };
    let (name, dim) = (&embeddings.manifest().model, embeddings.manifest().dim);
    let Some(model) = models
        .iter()
        .find(|m| &m.model.model == name && m.model.dim == dim)
    else {
        return Ok((
            None,
            Some(format!(
                "conversations' vectors not sent: the archive has no table for model `{name}` \
                 ({dim} dimensions); run `skills archive migrate` from this data folder (as \
                 the archive's owner), then push again"
            )),
        ));
    };
    let units = embeddings.units_by_conversation().map_err(|_| {
        ArchiveError::new(format!(
            "the embeddings of `{}` are damaged",
            paths.conversations.display()
        ))
    })?;
    let unit = serde_json::to_string(&embeddings.manifest().unit).unwrap_or_default();
    Ok((
        Some(LocalVectors {
            model: model.clone(),
            embeddings,
            units,
            unit,
        }),
        None,
    ))
}

/// Mixes each conversation's vectors' fingerprint into its rows' (`prints`).
fn with_vectors(prints: &mut Prints, vectors: Option<&LocalVectors>) {
    let Some(v) = vectors else { return };
    for (k, p) in prints.iter_mut() {
        if let Some(cu) = v.units.get(k) {
            p.1 ^= cu.print;
        }
    }
}

/// Every registered model's units table (a rewritten conversation's units are
/// deleted from all of them: the machine may have changed models).
fn unit_tables(models: &[RegisteredModel]) -> Vec<String> {
    models.iter().map(RegisteredModel::units_table).collect()
}

/// The local store (read-only), whether it marks injected rows, each conversation's
/// fingerprint, and how many of them were computed now (the others came from the
/// local cache, see the module's doc).
fn local_prints(
    paths: &StorePaths,
) -> Result<
    (
        crate::stores::conversations::ConversationStore,
        bool,
        Prints,
        usize,
    ),
    ArchiveError,
> {
    let store = crate::stores::conversations::ConversationStore::open_ro(&paths.conversations)
        .map_err(|e| ArchiveError::new(e.to_string()))?;
    let injected = store
        .marks_injected()
        .map_err(|e| ArchiveError::new(e.to_string()))?;
    let conn = store
        .connection()
        .map_err(|e| ArchiveError::new(e.to_string()))?;
    let local_err = |e: duckdb::Error| {
        ArchiveError::new(format!(
            "conversations store `{}`: {e}",
            paths.conversations.display()
        ))
    };
    let prints_sql = if injected {
        LOCAL_PRINTS.to_owned()
    } else {
        LOCAL_PRINTS.replace("is_injected,", "")
    };
    let prints_of = |filter: &str, keep: &dyn Fn(&(String, String)) -> bool| {
        let mut out = Prints::new();
        let mut stmt = conn
            .prepare(&format!("{prints_sql}{filter}{PRINTS_GROUP}"))
            .map_err(local_err)?;
        let rows = stmt
            .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))
            .map_err(local_err)?;
        for row in rows {
            let (k, v) = row.map_err(local_err)?;
            if keep(&k) {
                out.insert(k, v);
            }
        }
        Ok::<_, ArchiveError>(out)
    };
    let log = crate::stores::conversations::changes::position(&conn).map_err(local_err)?;
    let cache = cache_path(&paths.conversations);
    let cached = log
        .as_ref()
        .and_then(|(id, seq)| read_cache(&cache, id, *seq, injected));
    let mut from_cache = None;
    if let (Some(c), Some((_, seq))) = (cached, &log) {
        let mut local: Prints = c
            .prints
            .into_iter()
            .map(|(s, id, n, f)| ((s, id), (n, f)))
            .collect();
        let mut changed: HashSet<(String, String)> = HashSet::new();
        if *seq > c.seq {
            let mut stmt = conn
                .prepare("SELECT source, conversation_id FROM conversation_changes WHERE seq > ?")
                .map_err(local_err)?;
            let rows = stmt
                .query_map([c.seq], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(local_err)?;
            for row in rows {
                changed.insert(row.map_err(local_err)?);
            }
        }
        for k in &changed {
            local.remove(k);
        }
        if !changed.is_empty() {
            // Few: by name, which the conversation_id index serves; many: joined.
            let filter = if changed.len() <= NAMED_CONVERSATIONS {
                let ids: HashSet<&str> = changed.iter().map(|(_, c)| c.as_str()).collect();
                let list: Vec<String> = ids
                    .iter()
                    .map(|c| format!("'{}'", c.replace('\'', "''")))
                    .collect();
                format!(" WHERE conversation_id IN ({})", list.join(", "))
            } else {
                format!(
                    " WHERE (source, conversation_id) IN (SELECT source, conversation_id \
                     FROM conversation_changes WHERE seq > {})",
                    c.seq
                )
            };
            local.extend(prints_of(&filter, &|k| changed.contains(k))?);
        }
        // A store written by a version without the log since the cache was made:
        // its row count tells (an added or deleted row), and then all is hashed.
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM all_conversations", [], |r| r.get(0))
            .map_err(local_err)?;
        if local.values().map(|v| v.0).sum::<i64>() == rows {
            from_cache = Some((local, changed.len(), *seq > c.seq));
        }
    }
    let (local, hashed) = match from_cache {
        Some((local, hashed, moved)) => {
            if let (true, Some((id, seq))) = (moved, &log) {
                write_cache(&cache, id, *seq, injected, &local);
            }
            (local, hashed)
        }
        None => {
            let local = prints_of("", &|_| true)?;
            if let Some((id, seq)) = &log {
                write_cache(&cache, id, *seq, injected, &local);
            }
            let n = local.len();
            (local, n)
        }
    };
    drop(conn);
    Ok((store, injected, local, hashed))
}

/// The fingerprints the archive recorded for `machine`'s conversations (a message
/// count of -1, which no local one equals, for a conversation pushed before the
/// archive held terms: it is sent again).
fn remote_prints(archive: &mut Archive, machine: &Machine) -> Result<Prints, ArchiveError> {
    let target = archive.target().clone();
    let mut remote = Prints::new();
    for r in archive
        .client()
        .query(
            &format!(
                "SELECT source, conversation_id,
                        CASE WHEN keyword_terms THEN messages::bigint ELSE -1 END, fingerprint
                 FROM {SCHEMA}.conversations WHERE machine = $1"
            ),
            &[&machine.id],
        )
        .map_err(|e| target.error("reading the watermark", &e))?
    {
        remote.insert((r.get(0), r.get(1)), (r.get(2), r.get(3)));
    }
    Ok(remote)
}

/// What a push would send now: (conversations, messages) new or changed locally
/// since the last push of `machine`.
///
/// # Errors
/// [`ArchiveError`] when a store or the archive cannot be read.
pub fn pending(
    archive: &mut Archive,
    paths: &StorePaths,
    machine: &Machine,
) -> Result<(usize, u64), ArchiveError> {
    if !paths.conversations.exists() {
        return Ok((0, 0));
    }
    let (_, _, mut local, _) = local_prints(paths)?;
    let models = super::schema::registered_models(archive.client())
        .map_err(|e| archive.error("reading the vector models", &e))?;
    let (vectors, _) = local_vectors(paths, &models)?;
    with_vectors(&mut local, vectors.as_ref());
    let remote = remote_prints(archive, machine)?;
    let mut out = (0, 0);
    for (k, v) in &local {
        if remote.get(k) != Some(v) {
            out.0 += 1;
            out.1 += u64::try_from(v.0).unwrap_or(0);
        }
    }
    Ok(out)
}

/// Conversations sent by name in the query (`IN (…)`) when at most this many
/// changed; more, and the whole table is read and filtered.
const NAMED_CONVERSATIONS: usize = 2_000;

/// Pushes the conversations (new and changed ones; `prune`: deletes those gone
/// locally). Returns the terms the batches wrote postings for.
fn push_conversations(
    archive: &mut Archive,
    paths: &StorePaths,
    machine: &Machine,
    options: &PushOptions,
    models: &[RegisteredModel],
    report: &mut PushReport,
    progress: Progress<'_>,
) -> Result<HashSet<String>, ArchiveError> {
    let mut touched = HashSet::new();
    let (store, injected, mut local, hashed) = local_prints(paths)?;
    report.conversations_hashed = hashed;
    let (vectors, note) = local_vectors(paths, models)?;
    report.notes.extend(note);
    with_vectors(&mut local, vectors.as_ref());
    let tables = unit_tables(models);
    let halfvec = match &vectors {
        Some(_) => Some(
            super::meaning::halfvec_type(archive.client())
                .map_err(|e| archive.error("reading the halfvec type", &e))?,
        ),
        None => None,
    };
    let target = archive.target().clone();
    if !options.redact {
        for v in local.values_mut() {
            v.1 ^= RAW_MARK;
        }
    }
    let conn = store
        .connection()
        .map_err(|e| ArchiveError::new(e.to_string()))?;
    let local_err = |e: duckdb::Error| {
        ArchiveError::new(format!(
            "conversations store `{}`: {e}",
            paths.conversations.display()
        ))
    };
    report.conversations_local = local.len();
    let remote = remote_prints(archive, machine)?;
    let changed: HashSet<(String, String)> = local
        .iter()
        .filter(|(k, v)| remote.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    if options.prune {
        let gone: Vec<&(String, String)> =
            remote.keys().filter(|k| !local.contains_key(*k)).collect();
        for chunk in gone.chunks(1000) {
            let (sources, ids): (Vec<&str>, Vec<&str>) =
                chunk.iter().map(|(s, c)| (s.as_str(), c.as_str())).unzip();
            let mut tx = archive
                .client()
                .transaction()
                .map_err(|e| target.error("pruning", &e))?;
            delete_conversations(&mut tx, &machine.id, &sources, &ids, &tables)
                .map_err(|e| target.error("pruning", &e))?;
            tx.commit().map_err(|e| target.error("pruning", &e))?;
            report.batches += 1;
        }
        report.conversations_pruned = gone.len();
    }
    if changed.is_empty() {
        return Ok(touched);
    }
    let total: u64 = changed
        .iter()
        .map(|k| u64::try_from(local[k].0).unwrap_or(0))
        .sum();
    let mut sql = ROW_SELECT.to_owned();
    if !injected {
        sql = sql.replace("is_injected FROM", "false FROM");
    }
    if changed.len() <= NAMED_CONVERSATIONS {
        let ids: HashSet<&str> = changed.iter().map(|(_, c)| c.as_str()).collect();
        let list: Vec<String> = ids
            .iter()
            .map(|c| format!("'{}'", c.replace('\'', "''")))
            .collect();
        sql.push_str(&format!(" WHERE conversation_id IN ({})", list.join(", ")));
    }
    sql.push_str(" ORDER BY source, conversation_id, msg_index, message_id");
    let redactor = if options.redact {
        Some(crate::redact::Redactor::global().ok_or_else(|| {
            ArchiveError::new("the secret detectors did not compile; push with --no-redact")
        })?)
    } else {
        None
    };
    let mut stmt = conn.prepare(&sql).map_err(local_err)?;
    let mut rows = stmt.query([]).map_err(local_err)?;
    // More connections than the first: opened before any batch is sent, so a refused
    // connection fails the push before it starts.
    let mut extra = Vec::new();
    for _ in 1..options.connections.max(1) {
        extra.push(target.connect()?);
    }
    let mut clients: Vec<&mut postgres::Client> = vec![archive.client()];
    clients.extend(extra.iter_mut());
    let sender = Sender {
        target: &target,
        machine,
        prints: &local,
        vectors: vectors.as_ref().zip(halfvec.as_ref()),
        tables: &tables,
    };
    let mut read_error = None;
    let (sent, units, batches) = sender.run(clients, total, &mut touched, progress, |send| {
        let mut batch = Batch::default();
        let mut next = || -> Result<bool, ArchiveError> {
            let Some(r) = rows.next().map_err(local_err)? else {
                return Ok(false);
            };
            let source: String = r.get(0).map_err(local_err)?;
            let conversation: String = r.get(3).map_err(local_err)?;
            let key = (source, conversation);
            if !changed.contains(&key) {
                return Ok(true);
            }
            if batch.last.as_ref() != Some(&key) {
                if batch.rows.len() >= options.batch_rows && !send(std::mem::take(&mut batch)) {
                    return Ok(false);
                }
                batch.conversations.push(key.clone());
                batch.last = Some(key);
            }
            let mut row = LocalRow::read(r).map_err(local_err)?;
            if let Some(red) = redactor {
                let out = red.redact(&row.content);
                if out.count > 0 {
                    report.secrets_redacted += out.count;
                    row.content = out.text.into_owned();
                }
            }
            batch.rows.push(row);
            Ok(true)
        };
        loop {
            match next() {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    read_error = Some(e);
                    return;
                }
            }
        }
        send(batch);
    })?;
    if let Some(e) = read_error {
        return Err(e);
    }
    report.batches += batches;
    report.conversations_sent = changed.len();
    report.messages_sent = sent;
    report.units_sent = units;
    if units > 0 {
        report.vector_model = vectors.map(|v| v.model.model.model);
    }
    Ok(touched)
}

/// Sends batches over several connections side by side: the caller's producer reads
/// and redacts rows on this thread and hands whole batches to one worker thread per
/// connection, each committing a batch per transaction ([`flush`]).
struct Sender<'a> {
    target: &'a super::Target,
    machine: &'a Machine,
    prints: &'a Prints,
    /// The vectors to send with the rows, and the server's `halfvec` type.
    vectors: Option<(&'a LocalVectors, &'a Type)>,
    /// Every model's units table (see [`unit_tables`]).
    tables: &'a [String],
}

impl Sender<'_> {
    /// Runs `produce` with a `send` function (false once a batch failed: stop
    /// producing), one worker per client, and reports progress as batches commit.
    /// Returns (messages committed, units committed, transactions), or the first
    /// batch's error; adds the terms the committed batches wrote postings for to
    /// `touched`.
    fn run(
        &self,
        clients: Vec<&mut postgres::Client>,
        total: u64,
        touched: &mut HashSet<String>,
        progress: Progress<'_>,
        produce: impl FnOnce(&mut dyn FnMut(Batch) -> bool),
    ) -> Result<(u64, u64, usize), ArchiveError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{mpsc, Mutex};
        let failed = AtomicBool::new(false);
        let (to_workers, from_reader) = mpsc::sync_channel::<Batch>(clients.len());
        let from_reader = Mutex::new(from_reader);
        let (done, finished) = mpsc::channel::<Result<(u64, Sent), ArchiveError>>();
        let (mut sent, mut units, mut batches, mut first_error) = (0u64, 0u64, 0usize, None);
        let mut take = |r: Result<(u64, Sent), ArchiveError>,
                        progress: &mut dyn FnMut(u64, u64)| match r {
            Ok((n, s)) => {
                sent += n;
                units += s.units;
                touched.extend(s.terms);
                batches += 1;
                progress(sent, total);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        };
        progress(0, total);
        std::thread::scope(|s| {
            for client in clients {
                let (done, from_reader, failed) = (done.clone(), &from_reader, &failed);
                s.spawn(move || loop {
                    // A worker keeps receiving after a failure (discarding) so the
                    // producer never blocks on a full channel nobody reads.
                    let next = from_reader
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .recv();
                    let Ok(mut batch) = next else { return };
                    if failed.load(Ordering::Relaxed) || batch.conversations.is_empty() {
                        continue;
                    }
                    let rows = batch.rows.len() as u64;
                    let r = flush(client, self, &mut batch);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    if done.send(r.map(|s| (rows, s))).is_err() {
                        return;
                    }
                });
            }
            drop(done);
            let mut send = |batch: Batch| {
                while let Ok(r) = finished.try_recv() {
                    take(r, progress);
                }
                !failed.load(Ordering::Relaxed) && to_workers.send(batch).is_ok()
            };
            produce(&mut send);
            drop(to_workers);
            for r in finished.iter() {
                take(r, progress);
            }
        });
        match first_error {
            Some(e) => Err(e),
            None => Ok((sent, units, batches)),
        }
    }
}

/// Whole conversations waiting to be sent in one transaction.
#[derive(Default)]
struct Batch {
    conversations: Vec<(String, String)>,
    rows: Vec<LocalRow>,
    last: Option<(String, String)>,
}

/// One local row, as read from DuckDB.
struct LocalRow {
    text: [Option<String>; 12],
    ints: [i32; 11],
    bigs: [i64; 1],
    times: [Option<i64>; 3],
    flags: [bool; 4],
    content: String,
}

// Positions in LocalRow.text: source, model, project, conversation_id,
// conversation_title, day_of_week, message_id, parent_id, role, content_type,
// temporal_precision. ints: year, month, hour, word_count, char_count,
// conversation_msg_count, has_code, has_url, has_question, has_attachment, has_citation.
// times: created, updated, msg_timestamp. flags: timestamp_is_fallback, is_first,
// is_last, is_injected.
impl LocalRow {
    fn read(r: &duckdb::Row<'_>) -> duckdb::Result<Self> {
        let t = |i: usize| r.get::<_, Option<String>>(i);
        let n = |i: usize| -> duckdb::Result<i32> {
            Ok(i32::try_from(r.get::<_, i64>(i)?).unwrap_or(i32::MAX))
        };
        Ok(Self {
            text: [
                t(0)?,
                t(1)?,
                t(2)?,
                t(3)?,
                t(4)?,
                t(9)?,
                t(11)?,
                t(12)?,
                t(16)?,
                t(17)?,
                t(29)?,
                None,
            ],
            ints: [
                n(7)?,
                n(8)?,
                n(10)?,
                n(20)?,
                n(21)?,
                n(22)?,
                n(23)?,
                n(24)?,
                n(25)?,
                n(26)?,
                n(27)?,
            ],
            bigs: [r.get(13)?],
            times: [r.get(5)?, r.get(6)?, r.get(14)?],
            flags: [r.get(15)?, r.get(18)?, r.get(19)?, r.get(30)?],
            content: r.get(28)?,
        })
    }
}

/// A time in microseconds since the epoch as PostgreSQL's `timestamp`.
fn naive(us: i64) -> chrono::NaiveDateTime {
    chrono::DateTime::from_timestamp_micros(us)
        .unwrap_or_default()
        .naive_utc()
}

/// Text as PostgreSQL can hold it: NUL becomes U+FFFF (see [`super::schema`]).
pub fn storable(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFF}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The exact bytes of a content that [`storable`] cannot keep as it is (one holding
/// NUL or U+FFFF), else `None`.
pub fn raw_of(text: &str) -> Option<&[u8]> {
    (text.contains('\0') || text.contains('\u{FFFF}')).then_some(text.as_bytes())
}

/// `content` folded as DuckDB's `lower()` folds it, storable.
pub fn folded(content: &str) -> String {
    let mut out = Vec::with_capacity(content.len());
    crate::search::scan::fold(content, &mut out);
    let s = String::from_utf8(out).unwrap_or_default();
    storable(&s).into_owned()
}

/// Deletes `machine`'s conversations (`sources`, `ids`): their rows, their units in
/// every model's table `unit_tables`, and their watermark.
fn delete_conversations(
    tx: &mut postgres::Transaction<'_>,
    machine: &str,
    sources: &[&str],
    ids: &[&str],
    unit_tables: &[String],
) -> Result<(), postgres::Error> {
    let keys = "(source, conversation_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))";
    tx.execute(
        &format!("DELETE FROM {SCHEMA}.messages WHERE machine = $1 AND {keys}"),
        &[&machine, &sources, &ids],
    )?;
    // The keyword leg's rows, their terms' document frequencies and the totals taken
    // back in the same statement.
    tx.execute(
        &format!(
            "WITH gone AS (DELETE FROM {MESSAGE_TERMS} WHERE machine = $1 AND {keys}
                           RETURNING terms, length),
                  totals AS (INSERT INTO {KEYWORD_TOTALS} (messages, words)
                             SELECT -count(*), -sum(length) FROM gone HAVING count(*) > 0)
             INSERT INTO {KEYWORD_DELTAS} (term, df)
             SELECT t, -count(*) FROM gone, unnest(gone.terms) AS t GROUP BY t"
        ),
        &[&machine, &sources, &ids],
    )?;
    for table in unit_tables {
        tx.execute(
            &format!("DELETE FROM {table} WHERE machine = $1 AND {keys}"),
            &[&machine, &sources, &ids],
        )?;
    }
    tx.execute(
        &format!("DELETE FROM {SCHEMA}.conversations WHERE machine = $1 AND {keys}"),
        &[&machine, &sources, &ids],
    )?;
    Ok(())
}

/// What one batch sent: its units, and the terms it wrote postings for.
#[derive(Default)]
struct Sent {
    units: u64,
    terms: Vec<String>,
}

/// Sends `batch` in one transaction over `client`: its conversations' rows, their
/// units (when the sender has vectors) and their watermark.
fn flush(
    client: &mut postgres::Client,
    sender: &Sender<'_>,
    batch: &mut Batch,
) -> Result<Sent, ArchiveError> {
    let (target, machine, prints) = (sender.target, sender.machine, sender.prints);
    if batch.conversations.is_empty() {
        return Ok(Sent::default());
    }
    let err = |e: postgres::Error| target.error("sending a batch", &e);
    let (sources, ids): (Vec<&str>, Vec<&str>) = batch
        .conversations
        .iter()
        .map(|(s, c)| (s.as_str(), c.as_str()))
        .unzip();
    // Folded before the transaction opens: it stays short.
    let folded: Vec<String> = batch.rows.iter().map(|r| folded(&r.content)).collect();
    let first_id = reserve_ids(client, batch.rows.len()).map_err(err)?;
    let mut tx = client.transaction().map_err(err)?;
    delete_conversations(&mut tx, &machine.id, &sources, &ids, sender.tables).map_err(err)?;
    {
        let names: Vec<&str> = MESSAGE_COLUMNS.iter().map(|c| c.name).collect();
        let sink = tx
            .copy_in(&format!(
                "COPY {SCHEMA}.messages ({}) FROM STDIN (FORMAT binary)",
                names.join(", ")
            ))
            .map_err(err)?;
        let types = message_types();
        let mut w = BinaryCopyInWriter::new(sink, &types);
        for (row, folded) in batch.rows.iter().zip(&folded) {
            write_row(&mut w, machine, row, folded).map_err(err)?;
        }
        w.finish().map_err(err)?;
    }
    let terms = send_terms(&mut tx, machine, &batch.rows, &folded, first_id).map_err(err)?;
    let counts: Vec<i32> = batch
        .conversations
        .iter()
        .map(|k| i32::try_from(prints[k].0).unwrap_or(i32::MAX))
        .collect();
    let units = match sender.vectors {
        Some((v, halfvec)) => {
            send_units(&mut tx, target, machine, v, halfvec, &batch.conversations)?
        }
        None => vec![0; batch.conversations.len()],
    };
    let model = sender.vectors.map(|(v, _)| v.model.model.model.as_str());
    let unit = sender.vectors.map(|(v, _)| v.unit.as_str());
    let fps: Vec<i64> = batch.conversations.iter().map(|k| prints[k].1).collect();
    tx.execute(
        &format!(
            "INSERT INTO {SCHEMA}.conversations (machine, source, conversation_id, messages,
                 fingerprint, units, vector_model, vector_unit, keyword_terms)
             SELECT $1, s, c, m, f, u, CASE WHEN u > 0 THEN $7::text END, CASE WHEN u > 0 THEN $8::text END, true
             FROM unnest($2::text[], $3::text[], $4::int[], $5::bigint[], $6::int[]) AS t(s, c, m, f, u)"
        ),
        &[&machine.id, &sources, &ids, &counts, &fps, &units, &model, &unit],
    )
    .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(Sent {
        units: units.iter().map(|&u| u64::try_from(u).unwrap_or(0)).sum(),
        terms,
    })
}

/// The columns of a `units_<slot>` table ([`super::schema`]), in `COPY` order.
const UNIT_COLUMNS: &str = "machine, source, conversation_id, unit, message_ids, \
    message_created, message_roles, roles, first_us, last_us, scale, codes, embedding";

/// Copies the units of `conversations` into the model's table in `tx`; the units per
/// conversation, in order.
fn send_units(
    tx: &mut postgres::Transaction<'_>,
    target: &super::Target,
    machine: &Machine,
    v: &LocalVectors,
    halfvec: &Type,
    conversations: &[(String, String)],
) -> Result<Vec<i32>, ArchiveError> {
    let err = |e: postgres::Error| target.error("sending vectors", &e);
    let sink = tx
        .copy_in(&format!(
            "COPY {} ({UNIT_COLUMNS}) FROM STDIN (FORMAT binary)",
            v.model.units_table()
        ))
        .map_err(err)?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT4,
        Type::TEXT_ARRAY,
        Type::INT8_ARRAY,
        Type::INT2_ARRAY,
        Type::INT2,
        Type::INT8,
        Type::INT8,
        Type::FLOAT4,
        Type::BYTEA,
        halfvec.clone(),
    ];
    let mut w = BinaryCopyInWriter::new(sink, &types);
    let mut counts = Vec::with_capacity(conversations.len());
    for (source, conversation) in conversations {
        let Some(cu) = v.units.get(&(source.clone(), conversation.clone())) else {
            counts.push(0);
            continue;
        };
        for (n, at) in cu.units.iter().enumerate() {
            let r = v.embeddings.unit_record(*at).map_err(|_| {
                ArchiveError::new("the local embeddings are damaged; run `skills ingest`")
            })?;
            let unit = i32::try_from(n).unwrap_or(i32::MAX);
            let ids: Vec<String> = r
                .messages
                .iter()
                .map(|m| storable(&m.message_id).into_owned())
                .collect();
            let created: Vec<i64> = r.messages.iter().map(|m| m.created_us).collect();
            let roles: Vec<i16> = r
                .messages
                .iter()
                .map(|m| i16::from(crate::stores::conversations::embeddings::role::bit(m.role)))
                .collect();
            let codes: &[u8] = bytemuck::cast_slice(&r.codes);
            let embedding = HalfVec::of_code(r.scale, &r.codes);
            let (source, conversation) = (
                storable(source).into_owned(),
                storable(conversation).into_owned(),
            );
            let role_bits = i16::from(r.roles);
            let values: [&(dyn ToSql + Sync); 13] = [
                &machine.id,
                &source,
                &conversation,
                &unit,
                &ids,
                &created,
                &roles,
                &role_bits,
                &r.first_us,
                &r.last_us,
                &r.scale,
                &codes,
                &embedding,
            ];
            w.write(&values).map_err(err)?;
        }
        counts.push(i32::try_from(cu.units.len()).unwrap_or(i32::MAX));
    }
    w.finish().map_err(err)?;
    Ok(counts)
}

/// The PostgreSQL types of [`MESSAGE_COLUMNS`], in order.
fn message_types() -> Vec<Type> {
    MESSAGE_COLUMNS.iter().map(|c| type_of(c.sql)).collect()
}

fn type_of(sql: &str) -> Type {
    let base = sql.split_whitespace().next().unwrap_or("");
    match base {
        "text[]" => Type::TEXT_ARRAY,
        "text" => Type::TEXT,
        "timestamp" => Type::TIMESTAMP,
        "integer" => Type::INT4,
        "bigint" => Type::INT8,
        "boolean" => Type::BOOL,
        _ => Type::BYTEA,
    }
}

/// Reserves `n` consecutive ids of [`MESSAGE_IDS`] and returns the first: one
/// statement (its own transaction) under a transaction advisory lock, so two pushes'
/// blocks never interleave and the lock is never held past it.
fn reserve_ids(client: &mut postgres::Client, n: usize) -> Result<i64, postgres::Error> {
    let n = i64::try_from(n.max(1)).unwrap_or(i64::MAX);
    let row = client.query_one(
        &format!(
            "SELECT setval('{MESSAGE_IDS}', nextval('{MESSAGE_IDS}') + $1 - 1) - $1 + 1
             FROM (SELECT pg_advisory_xact_lock(hashtext('skills_archive message_ids')) OFFSET 0) l"
        ),
        &[&n],
    )?;
    Ok(row.get(0))
}

/// Copies the keyword leg's row of each of `rows` ([`MESSAGE_TERMS`]: its terms cut
/// from its folded content `folded`, as the local index posts them, and its id: from
/// `first_id` on, consecutive in each conversation's local row order), the batch's
/// postings ([`KEYWORD_POSTINGS`], one row per term), and appends the batch's
/// document frequencies and totals as deltas ([`super::schema`]). Returns the terms
/// it wrote postings for, in order.
fn send_terms(
    tx: &mut postgres::Transaction<'_>,
    machine: &Machine,
    rows: &[LocalRow],
    folded: &[String],
    first_id: i64,
) -> Result<Vec<String>, postgres::Error> {
    // Ids in the local row order of each conversation (newest first, then
    // `message_id`); a batch holds whole conversations.
    let key = |i: usize| {
        let r = &rows[i];
        (
            r.text[0].as_deref().unwrap_or(""),
            r.text[3].as_deref().unwrap_or(""),
            std::cmp::Reverse(r.times[0].unwrap_or(0)),
            storable(r.text[6].as_deref().unwrap_or("")),
        )
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| key(a).cmp(&key(b)));
    let mut ids = vec![0i64; rows.len()];
    for (rank, &i) in order.iter().enumerate() {
        ids[i] = first_id + i64::try_from(rank).unwrap_or(i64::MAX);
    }
    let sink = tx.copy_in(&format!(
        "COPY {MESSAGE_TERMS} (machine, source, conversation_id, message_id, created_us, \
         role, typed, length, terms, counts, id) FROM STDIN (FORMAT binary)"
    ))?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::TEXT,
        Type::BOOL,
        Type::INT8,
        Type::TEXT_ARRAY,
        Type::INT4_ARRAY,
        Type::INT8,
    ];
    let mut w = BinaryCopyInWriter::new(sink, &types);
    let mut cut = crate::search::postings::RowTerms::default();
    let mut df: HashMap<String, i64> = HashMap::new();
    let mut words = 0i64;
    let mut cuts: Vec<(i64, Vec<(String, u32)>)> = Vec::with_capacity(rows.len());
    for ((r, text), &id) in rows.iter().zip(folded).zip(&ids) {
        let (len, terms) = cut.of(text);
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        cuts.push((len, terms.clone()));
        words = words.saturating_add(len);
        let text = |i: usize| storable(r.text[i].as_deref().unwrap_or("")).into_owned();
        let (source, conversation, message, role) = (text(0), text(3), text(6), text(8));
        let created = r.times[0].unwrap_or(0);
        let typed = !r.flags[3];
        let counts: Vec<i32> = terms
            .iter()
            .map(|(_, n)| i32::try_from(*n).unwrap_or(i32::MAX))
            .collect();
        let terms: Vec<String> = terms.into_iter().map(|(t, _)| t).collect();
        for t in &terms {
            *df.entry(t.clone()).or_insert(0) += 1;
        }
        let values: [&(dyn ToSql + Sync); 11] = [
            &machine.id,
            &source,
            &conversation,
            &message,
            &created,
            &role,
            &typed,
            &len,
            &terms,
            &counts,
            &id,
        ];
        w.write(&values)?;
    }
    w.finish()?;
    // The postings, in ascending id per term.
    let mut postings: HashMap<&str, Vec<u8>> = HashMap::new();
    for &i in &order {
        let id = u32::try_from(ids[i]).unwrap_or(u32::MAX);
        let (len, terms) = &cuts[i];
        let len = u16::try_from(*len).unwrap_or(u16::MAX);
        for (t, n) in terms {
            let p = postings.entry(t.as_str()).or_default();
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&n.to_be_bytes());
            p.extend_from_slice(&len.to_be_bytes());
        }
    }
    let mut postings: Vec<(&str, Vec<u8>)> = postings.into_iter().collect();
    postings.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let sink = tx.copy_in(&format!(
        "COPY {KEYWORD_POSTINGS} (term, postings) FROM STDIN (FORMAT binary)"
    ))?;
    let mut w = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::BYTEA]);
    for (t, p) in &postings {
        let values: [&(dyn ToSql + Sync); 2] = [t, p];
        w.write(&values)?;
    }
    w.finish()?;
    // Sorted, so the deltas' index is filled in order.
    let mut df: Vec<(String, i64)> = df.into_iter().collect();
    df.sort_unstable();
    let (terms, counts): (Vec<String>, Vec<i64>) = df.into_iter().unzip();
    tx.execute(
        &format!(
            "INSERT INTO {KEYWORD_DELTAS} (term, df) SELECT * FROM unnest($1::text[], $2::bigint[])"
        ),
        &[&terms, &counts],
    )?;
    let messages = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    tx.execute(
        &format!("INSERT INTO {KEYWORD_TOTALS} (messages, words) VALUES ($1, $2)"),
        &[&messages, &words],
    )?;
    Ok(terms)
}

fn write_row(
    w: &mut BinaryCopyInWriter,
    machine: &Machine,
    r: &LocalRow,
    content_folded: &str,
) -> Result<(), postgres::Error> {
    let text = |i: usize| r.text[i].as_deref().map(|t| storable(t).into_owned());
    let [source, model, project, conversation, title, dow, message, parent, role, ctype, precision, _] =
        std::array::from_fn(text);
    let created = naive(r.times[0].unwrap_or(0));
    let updated = naive(r.times[1].unwrap_or(0));
    let msg_ts = r.times[2].map(naive);
    let content = storable(&r.content).into_owned();
    let raw = raw_of(&r.content);
    let project_folded = r.text[2].as_deref().map(folded);
    let values: [&(dyn ToSql + Sync); 36] = [
        &machine.id,
        &machine.user,
        &source,
        &model,
        &project,
        &conversation,
        &title,
        &created,
        &updated,
        &r.ints[0],
        &r.ints[1],
        &dow,
        &r.ints[2],
        &message,
        &parent,
        &r.bigs[0],
        &msg_ts,
        &r.flags[0],
        &role,
        &ctype,
        &r.flags[1],
        &r.flags[2],
        &r.ints[3],
        &r.ints[4],
        &r.ints[5],
        &r.ints[6],
        &r.ints[7],
        &r.ints[8],
        &r.ints[9],
        &r.ints[10],
        &content,
        &precision,
        &r.flags[3],
        &content_folded,
        &raw,
        &project_folded,
    ];
    w.write(&values)
}

/// One local memory, with its links.
struct LocalMemory {
    /// Its vector, when the archive has a table for its model: (index of the model
    /// in the registered models, the `f32` vector's little-endian bytes).
    vector: Option<(usize, Vec<u8>)>,
    fields: [String; 9],
    origin: Option<String>,
    created: chrono::NaiveDateTime,
    updated: chrono::NaiveDateTime,
    supersedes: Vec<String>,
    conversations: Vec<String>,
    /// Its local rowid (the order of memories created at the same second).
    position: i64,
    /// Its sequence ([`crate::stores::memories::SEQUENCE_SQL`]).
    sequence: Option<String>,
    fingerprint: i64,
}

fn push_memories(
    archive: &mut Archive,
    path: &Path,
    machine: &Machine,
    options: &PushOptions,
    models: &[RegisteredModel],
    report: &mut PushReport,
) -> Result<(), ArchiveError> {
    use crate::stores::memories::{parse_time, REL_CONVERSATION, REL_SUPERSEDES};
    let local_err =
        |e: rusqlite::Error| ArchiveError::new(format!("memories store `{}`: {e}", path.display()));
    let conn = crate::stores::memories::query_connection(path)
        .map_err(|e| ArchiveError::new(e.to_string()))?;
    let mut links: HashMap<String, (Vec<String>, Vec<String>)> = HashMap::new();
    if crate::stores::memories::has_links_table(&conn).map_err(local_err)? {
        let mut stmt = conn
            .prepare("SELECT id, rel, target FROM memory_links ORDER BY id, rel, target")
            .map_err(local_err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?))
            })
            .map_err(local_err)?;
        for row in rows {
            let (id, rel, target) = row.map_err(local_err)?;
            let entry = links.entry(id).or_default();
            if rel == REL_SUPERSEDES {
                entry.0.push(target);
            } else if rel == REL_CONVERSATION {
                entry.1.push(target);
            }
        }
    }
    let mut memories = Vec::new();
    {
        let sequence = crate::stores::memories::sequence_sql(&conn).map_err(local_err)?;
        let mut stmt = conn
            .prepare(&format!(
                "SELECT id, title, type, tags, body, files_read, files_modified, content_hash,
                        origin, created, updated, embedding, embedding_model, rowid, {sequence}
                 FROM memories ORDER BY id"
            ))
            .map_err(local_err)?;
        let mut rows = stmt.query([]).map_err(local_err)?;
        while let Some(r) = rows.next().map_err(local_err)? {
            let mut fields: [String; 9] = Default::default();
            for (i, f) in fields.iter_mut().enumerate().take(8) {
                *f = r.get(i).map_err(local_err)?;
            }
            let origin: Option<String> = r.get(8).map_err(local_err)?;
            let created: String = r.get(9).map_err(local_err)?;
            let updated: String = r.get(10).map_err(local_err)?;
            let (supersedes, conversations) = links.remove(&fields[0]).unwrap_or_default();
            let embedding: Option<Vec<u8>> = r.get(11).map_err(local_err)?;
            let embedding_model: Option<String> = r.get(12).map_err(local_err)?;
            // One vector per chunk of a long memory: all of them are sent (exact).
            let vector = match (embedding, embedding_model) {
                (Some(bytes), Some(name)) => models
                    .iter()
                    .position(|m| {
                        let one = m.model.dim as usize * 4;
                        m.model.model == name
                            && one > 0
                            && !bytes.is_empty()
                            && bytes.len().is_multiple_of(one)
                    })
                    .map(|i| (i, bytes)),
                _ => None,
            };
            let position: i64 = r.get(13).map_err(local_err)?;
            let sequence: Option<String> = r.get(14).map_err(local_err)?;
            let mut m = LocalMemory {
                vector,
                fields,
                origin,
                created: parse_time(&created).naive_utc(),
                updated: parse_time(&updated).naive_utc(),
                supersedes,
                conversations,
                position,
                sequence,
                fingerprint: 0,
            };
            m.fingerprint = memory_print(&m, options.redact);
            memories.push(m);
        }
    }
    let target = archive.target().clone();
    let err = |what: &'static str| {
        let target = target.clone();
        move |e: postgres::Error| target.error(what, &e)
    };
    // A memory without its terms (pushed before schema version 6) is sent again.
    let remote: HashMap<String, i64> = archive
        .client()
        .query(
            &format!(
                "SELECT m.id, CASE WHEN t.id IS NULL THEN 0 ELSE m.fingerprint END
                 FROM {SCHEMA}.memories m
                 LEFT JOIN {MEMORY_TERMS} t ON t.machine = m.machine AND t.id = m.id
                 WHERE m.machine = $1"
            ),
            &[&machine.id],
        )
        .map_err(err("reading the memories' watermark"))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let local_ids: HashSet<&str> = memories.iter().map(|m| m.fields[0].as_str()).collect();
    let gone: Vec<&str> = if options.prune {
        remote
            .keys()
            .map(String::as_str)
            .filter(|id| !local_ids.contains(id))
            .collect()
    } else {
        Vec::new()
    };
    let changed: Vec<&mut LocalMemory> = memories
        .iter_mut()
        .filter(|m| remote.get(&m.fields[0]) != Some(&m.fingerprint))
        .collect();
    if changed.is_empty() && gone.is_empty() {
        return Ok(());
    }
    let redactor = crate::redact::Redactor::global();
    let mut tx = archive
        .client()
        .transaction()
        .map_err(err("sending memories"))?;
    // Memories this transaction deleted (pruned or replaced): memo-search's totals
    // take them back.
    let mut deleted: u64 = 0;
    if !gone.is_empty() {
        deleted += tx
            .execute(
                &format!("DELETE FROM {SCHEMA}.memories WHERE machine = $1 AND id = ANY($2)"),
                &[&machine.id, &gone],
            )
            .map_err(err("pruning memories"))?;
    }
    let ids: Vec<&str> = changed.iter().map(|m| m.fields[0].as_str()).collect();
    deleted += tx
        .execute(
            &format!("DELETE FROM {SCHEMA}.memories WHERE machine = $1 AND id = ANY($2)"),
            &[&machine.id, &ids],
        )
        .map_err(err("sending memories"))?;
    for table in models
        .iter()
        .flat_map(|m| [m.memories_table(), m.chunks_table()])
    {
        tx.execute(
            &format!("DELETE FROM {table} WHERE machine = $1 AND (id = ANY($2) OR id = ANY($3))"),
            &[&machine.id, &ids, &gone],
        )
        .map_err(err("sending memories' vectors"))?;
    }
    // The terms' rows, their document frequencies and tokens taken back in the same
    // statement (only the rows this statement deleted: exact beside other pushes).
    tx.execute(
        &format!(
            "WITH gone AS (DELETE FROM {MEMORY_TERMS}
                           WHERE machine = $1 AND (id = ANY($2) OR id = ANY($3))
                           RETURNING plain_terms, stem_terms,
                                     plain_sizes[1] + plain_sizes[2] + plain_sizes[3] AS plain,
                                     stem_sizes[1] + stem_sizes[2] + stem_sizes[3] AS stem),
                  totals AS (INSERT INTO {MEMORY_TOTALS}
                                 (memories, with_terms, plain_tokens, stem_tokens)
                             SELECT 0, -count(*), -sum(plain), -sum(stem) FROM gone
                             HAVING count(*) > 0)
             INSERT INTO {MEMORY_DELTAS} (tokenizer, term, df)
             SELECT 0, w, -count(*) FROM gone, unnest(gone.plain_terms) w GROUP BY w
             UNION ALL
             SELECT 1, w, -count(*) FROM gone, unnest(gone.stem_terms) w GROUP BY w"
        ),
        &[&machine.id, &ids, &gone],
    )
    .map_err(err("sending memories' terms"))?;
    // Vectors per model: (id, exact bytes, halfvec, chunks). A long memory's `exact`
    // holds every chunk's vector, its `halfvec` is its first chunk's, and its chunks'
    // go to the model's chunks table (schema version 9, [`super::memo`]).
    let mut vectors: Vec<Vec<MemoryVectors>> = vec![Vec::new(); models.len()];
    for m in &changed {
        if let Some((i, bytes)) = &m.vector {
            let v = crate::stores::memories::decode_vector(bytes);
            let dim = models[*i].model.dim as usize;
            vectors[*i].push((
                storable(&m.fields[0]).into_owned(),
                bytes.clone(),
                HalfVec::of(&v[..dim.min(v.len())]),
                super::schema::memory_chunks(&v, dim),
            ));
        }
    }
    let names: Vec<&str> = MEMORY_COLUMNS.iter().map(|c| c.name).collect();
    let sink = tx
        .copy_in(&format!(
            "COPY {SCHEMA}.memories ({}) FROM STDIN (FORMAT binary)",
            names.join(", ")
        ))
        .map_err(err("sending memories"))?;
    let types: Vec<Type> = MEMORY_COLUMNS.iter().map(|c| type_of(c.sql)).collect();
    let mut w = BinaryCopyInWriter::new(sink, &types);
    let sent = changed.len();
    let mut changed = changed;
    if options.redact {
        if let Some(red) = redactor {
            for m in &mut changed {
                // title, tags, body
                for i in [1, 3, 4] {
                    let out = red.redact(&m.fields[i]);
                    if out.count > 0 {
                        report.secrets_redacted += out.count;
                        let t = out.text.into_owned();
                        m.fields[i] = t;
                    }
                }
            }
        }
    }
    let terms = memory_terms(&changed)
        .map_err(|e| ArchiveError::new(format!("cutting the memories' terms: {e}")))?;
    for m in &changed {
        let f: Vec<String> = m.fields.iter().map(|t| storable(t).into_owned()).collect();
        let origin = m.origin.as_deref().map(|t| storable(t).into_owned());
        let values: [&(dyn ToSql + Sync); 16] = [
            &machine.id,
            &machine.user,
            &f[0],
            &f[1],
            &f[2],
            &f[3],
            &m.created,
            &m.updated,
            &f[4],
            &f[5],
            &f[6],
            &origin,
            &f[7],
            &m.supersedes,
            &m.conversations,
            &m.fingerprint,
        ];
        w.write(&values).map_err(err("sending memories"))?;
    }
    w.finish().map_err(err("sending memories"))?;
    send_memory_terms(&mut tx, machine, &changed, &terms)
        .map_err(err("sending memories' terms"))?;
    send_memory_statistics(&mut tx, sent, deleted, &terms)
        .map_err(err("sending memories' statistics"))?;
    if vectors.iter().any(|v| !v.is_empty()) {
        let halfvec =
            super::meaning::halfvec_type(&mut tx).map_err(err("reading the halfvec type"))?;
        for (model, rows) in models.iter().zip(&vectors) {
            if rows.is_empty() {
                continue;
            }
            let sink = tx
                .copy_in(&format!(
                    "COPY {} (machine, id, exact, embedding) FROM STDIN (FORMAT binary)",
                    model.memories_table()
                ))
                .map_err(err("sending memories' vectors"))?;
            let types = [Type::TEXT, Type::TEXT, Type::BYTEA, halfvec.clone()];
            let mut w = BinaryCopyInWriter::new(sink, &types);
            for (id, exact, half, _) in rows {
                w.write(&[&machine.id as &(dyn ToSql + Sync), id, exact, half])
                    .map_err(err("sending memories' vectors"))?;
            }
            w.finish().map_err(err("sending memories' vectors"))?;
            report.memory_vectors_sent += rows.len();
            if rows.iter().all(|r| r.3.is_empty()) {
                continue;
            }
            super::schema::copy_chunks(
                &mut tx,
                &model.chunks_table(),
                &halfvec,
                rows.iter()
                    .map(|(id, _, _, chunks)| (&machine.id, id, chunks)),
            )
            .map_err(err("sending memories' vectors"))?;
        }
    }
    tx.commit().map_err(err("sending memories"))?;
    // Fold the statistics' deltas (one row per term per push), so a search sums a few
    // rows per term.
    archive
        .client()
        .batch_execute(super::schema::COMPACT_MEMORY_DELTAS)
        .map_err(err("folding the memories' statistics"))?;
    report.batches += 1;
    report.memories_sent = sent;
    report.memories_pruned = gone.len();
    Ok(())
}

/// One memory's vectors as push sends them: its id, its exact bytes (every chunk's
/// vector), its first vector as `halfvec`, and a long memory's chunks as `halfvec`s.
type MemoryVectors = (String, Vec<u8>, HalfVec, Vec<HalfVec>);

/// Each of `memories`' terms under the store's two tokenizers ([`Table::ALL`] order),
/// cut from the fields sent (redacted when they are).
///
/// [`Table::ALL`]: crate::stores::memories::fts::Table::ALL
fn memory_terms(
    memories: &[&mut LocalMemory],
) -> Result<[Vec<crate::stores::memories::fts::RowTerms>; 2], rusqlite::Error> {
    use crate::stores::memories::fts::{row_terms, Table};
    // The tags as the store indexes them: joined by spaces.
    let tags: Vec<String> = memories
        .iter()
        .map(|m| crate::stores::memories::json_list(&m.fields[3]).join(" "))
        .collect();
    let rows: Vec<[&str; 3]> = memories
        .iter()
        .zip(&tags)
        .map(|(m, t)| [m.fields[1].as_str(), t.as_str(), m.fields[4].as_str()])
        .collect();
    Ok([
        row_terms(Table::Plain, &rows)?,
        row_terms(Table::Stemmed, &rows)?,
    ])
}

/// Writes the [`MEMORY_TERMS`] rows of `memories` (`terms`: [`memory_terms`]).
fn send_memory_terms(
    tx: &mut postgres::Transaction<'_>,
    machine: &Machine,
    memories: &[&mut LocalMemory],
    terms: &[Vec<crate::stores::memories::fts::RowTerms>; 2],
) -> Result<(), postgres::Error> {
    let sink = tx.copy_in(&format!(
        "COPY {MEMORY_TERMS} (machine, id, position, sequence, plain_sizes, plain_terms, \
         plain_counts, stem_sizes, stem_terms, stem_counts) FROM STDIN (FORMAT binary)"
    ))?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::TEXT,
        Type::INT4_ARRAY,
        Type::TEXT_ARRAY,
        Type::INT4_ARRAY,
        Type::INT4_ARRAY,
        Type::TEXT_ARRAY,
        Type::INT4_ARRAY,
    ];
    let mut w = BinaryCopyInWriter::new(sink, &types);
    let int = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    let columns = |r: &crate::stores::memories::fts::RowTerms| {
        let sizes: Vec<i32> = r.sizes.iter().map(|&n| int(n)).collect();
        let words: Vec<String> = r
            .terms
            .iter()
            .map(|(t, _)| storable(t).into_owned())
            .collect();
        let counts: Vec<i32> = r
            .terms
            .iter()
            .flat_map(|(_, c)| c.iter().map(|&n| int(n)))
            .collect();
        (sizes, words, counts)
    };
    for (i, m) in memories.iter().enumerate() {
        let id = storable(&m.fields[0]).into_owned();
        let sequence = m.sequence.as_deref().map(|s| storable(s).into_owned());
        let (ps, pt, pc) = columns(&terms[0][i]);
        let (ss, st, sc) = columns(&terms[1][i]);
        let values: [&(dyn ToSql + Sync); 10] = [
            &machine.id,
            &id,
            &m.position,
            &sequence,
            &ps,
            &pt,
            &pc,
            &ss,
            &st,
            &sc,
        ];
        w.write(&values)?;
    }
    w.finish()?;
    Ok(())
}

/// Appends memo-search's statistics of the memories sent (`terms`: [`memory_terms`])
/// to [`MEMORY_DELTAS`] and [`MEMORY_TOTALS`]: each term's document frequency under
/// each tokenizer, the rows and their tokens, and `sent - deleted` memories (`deleted`:
/// the rows of `memories` this transaction deleted).
fn send_memory_statistics(
    tx: &mut postgres::Transaction<'_>,
    sent: usize,
    deleted: u64,
    terms: &[Vec<crate::stores::memories::fts::RowTerms>; 2],
) -> Result<(), postgres::Error> {
    use crate::stores::memories::fts::Table;
    let mut tokenizers: Vec<i16> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut dfs: Vec<i64> = Vec::new();
    let mut tokens = [0i64; 2];
    for (k, table) in Table::ALL.into_iter().enumerate() {
        let mut df: HashMap<&str, i64> = HashMap::new();
        for row in &terms[k] {
            tokens[k] += row.sizes.iter().map(|&n| i64::from(n)).sum::<i64>();
            for (t, _) in &row.terms {
                *df.entry(t.as_str()).or_default() += 1;
            }
        }
        let mut df: Vec<(&str, i64)> = df.into_iter().collect();
        df.sort_unstable();
        let code = super::schema::memory_tokenizer(table);
        for (t, n) in df {
            tokenizers.push(code);
            // As the rows hold it ([`send_memory_terms`]).
            words.push(storable(t).into_owned());
            dfs.push(n);
        }
    }
    tx.execute(
        &format!(
            "INSERT INTO {MEMORY_DELTAS} (tokenizer, term, df)
             SELECT * FROM unnest($1::smallint[], $2::text[], $3::bigint[])"
        ),
        &[&tokenizers, &words, &dfs],
    )?;
    let rows = i64::try_from(terms[0].len()).unwrap_or(i64::MAX);
    let memories =
        i64::try_from(sent).unwrap_or(i64::MAX) - i64::try_from(deleted).unwrap_or(i64::MAX);
    tx.execute(
        &format!(
            "INSERT INTO {MEMORY_TOTALS} (memories, with_terms, plain_tokens, stem_tokens)
             VALUES ($1, $2, $3, $4)"
        ),
        &[&memories, &rows, &tokens[0], &tokens[1]],
    )?;
    Ok(())
}

/// A memory's fingerprint: the first 8 bytes of SHA-256 over its fields, links and
/// whether it was redacted (pushing raw after a redacted push sends it again).
fn memory_print(m: &LocalMemory, redact: bool) -> i64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for f in &m.fields {
        h.update(f.as_bytes());
        h.update([0]);
    }
    h.update(m.origin.as_deref().unwrap_or("\u{1}").as_bytes());
    h.update(m.created.and_utc().timestamp().to_le_bytes());
    h.update(m.updated.and_utc().timestamp().to_le_bytes());
    for l in m.supersedes.iter().chain(&m.conversations) {
        h.update(l.as_bytes());
        h.update([0]);
    }
    // The vector when it is sent (its model has a table): a memory pushed without it
    // is sent again once the archive can hold it.
    if let Some((_, bytes)) = &m.vector {
        h.update([1]);
        h.update(bytes);
    }
    // Its place among the local memories (memo-search's neighbours and ties).
    h.update(m.position.to_le_bytes());
    h.update(m.sequence.as_deref().unwrap_or("\u{1}").as_bytes());
    h.update([u8::from(redact)]);
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_le_bytes(b) >> 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_stored_as_ufffff_and_the_exact_bytes_kept() {
        assert_eq!(storable("a\0b"), "a\u{FFFF}b");
        assert_eq!(storable("plain"), "plain");
        assert_eq!(raw_of("a\0b"), Some("a\0b".as_bytes()));
        assert_eq!(raw_of("a\u{FFFF}b"), Some("a\u{FFFF}b".as_bytes()));
        assert_eq!(raw_of("plain"), None);
        assert_eq!(folded("ÀB\0İ"), "àb\u{FFFF}i");
    }

    #[test]
    fn every_message_column_has_a_copy_type() {
        assert_eq!(message_types().len(), MESSAGE_COLUMNS.len());
        assert_eq!(type_of("text[] COLLATE \"C\" NOT NULL"), Type::TEXT_ARRAY);
        assert_eq!(type_of("timestamp NOT NULL"), Type::TIMESTAMP);
    }
}
