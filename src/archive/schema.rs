//! The archive's schema (PostgreSQL schema `skills_archive`), versioned, created and
//! upgraded only by [`migrate`] (`skills archive migrate`): a push or a read checks the
//! version ([`check`]) and runs no DDL, so readers are never blocked by a push's
//! schema changes.
//!
//! - Text columns are `COLLATE "C"`: byte order, no locale in comparisons, so `LIKE`
//!   matches bytes exactly as DuckDB does and sorting is the same on every server.
//! - `messages` holds the local `all_conversations` columns plus `machine`,
//!   `user_name`, `content_folded` (the content lowercased as DuckDB's `lower()`
//!   does, [`crate::search::scan::fold`], which the archive's search matches),
//!   `content_raw` and `project_folded` (the project folded the same way). PostgreSQL text cannot hold NUL: a NUL is stored as U+FFFF in
//!   `content` and `content_folded`, and a content holding NUL or U+FFFF keeps its
//!   exact bytes in `content_raw` (else NULL).
//! - `messages` is partitioned by month of `created` (the message's time, else its
//!   conversation's), from [`FIRST_MONTH`] to [`MONTHS_AHEAD`] months past the
//!   migration; rows outside that range (and any without a time) go to the default
//!   partition `messages_default`, which the next migrate splits into months.
//! - A trigram GIN index (`pg_trgm`) on `content_folded` when the extension can be
//!   created; `vector` (pgvector) is created too when allowed, for the meaning issue's
//!   tables. Version 3 turns the index's pending list on (`fastupdate = on`,
//!   `gin_pending_list_limit` [`TRIGRAM_PENDING_LIST_KB`]): maintained row by row
//!   (`fastupdate = off`, versions 1–2) it held a push to 759 messages/s. The pending
//!   list stays bounded because every push transaction is short: the backend that
//!   inserts past the limit merges the list into the index before its transaction
//!   ends (agentsview's 283 GB index, its #605, grew under long sync transactions that
//!   starved autovacuum). A partitioned index's options cannot be altered, so each
//!   partition's index is set ([`trigram_options`]) — by every migrate, which also
//!   makes the new months' partitions. A push ends by merging the pending lists
//!   ([`FLUSH_PENDING`], a `SECURITY DEFINER` function: `gin_clean_pending_list`
//!   needs the index's owner), so searches between pushes read no pending list.
//! - `conversations` is the push watermark: per machine and conversation, the
//!   fingerprint of the rows last pushed. It is written in the same transaction as the
//!   rows, so it is never ahead of them.
//! - Version 2, the sandbox of the drop-in `sql` skills ([`super::sql`]): schema
//!   [`SQL_SCHEMA`] holds the view `all_conversations` (the local store's columns plus
//!   `machine` — the host label —, `machine_id` and `user`), and the role
//!   [`SQL_ROLE`] (no login) may `SELECT` that view and nothing else of the archive.
//!   A skill's query runs after `SET LOCAL ROLE` to it; the migrating role is made a
//!   member (the printed GRANTs make the reader one too). `set_config()` is revoked from
//!   `PUBLIC` in this database: a query could otherwise reset the role or its
//!   `statement_timeout` from inside a `SELECT`. When it cannot be revoked (migrate not
//!   run by a superuser) the `sql` skills refuse to run on the archive.
//! - Version 4, vectors (pgvector, the `vector` extension): the registry
//!   [`VECTOR_MODELS`] (model id, dimension, slot) and per registered model two tables,
//!   `units_<slot>` (the conversations' L1 units: one row per window of messages, its
//!   messages, role bits, time range, the 8-bit code `scale`·`codes` and `embedding`,
//!   the dequantized `v̂ = scale · codes` as `halfvec(dim)`) and `memory_vectors_<slot>`
//!   (a memory's `f32` vector, exact as `bytea`, and as `halfvec(dim)`), each with an
//!   HNSW index ([`HNSW_M`], [`HNSW_EF_CONSTRUCTION`], `halfvec_ip_ops`: the local
//!   scores are dot products of unit vectors). Two models never share a table, so
//!   vectors of two models are never compared. The watermark `conversations` records
//!   which model's units a conversation was pushed with (`vector_model`, `units`,
//!   `vector_unit`). Tables are
//!   DDL, so only [`migrate`] registers a model: it registers the models of the data
//!   folder it runs from ([`local_models`]); a push of vectors of a model the archive
//!   has no table for sends the rows without them and says so.
//! - Version 5, the keyword leg ([`super::keyword`]): [`MESSAGE_TERMS`] holds per
//!   message its BM25 length and terms (the conversations index's stemmed terms, with
//!   their counts, cut from `content_folded` by push), its time, role and whether it is
//!   typed (not injected); [`KEYWORD_DELTAS`] and [`KEYWORD_TOTALS`] hold the
//!   collection statistics (document frequency per term; messages and words) as
//!   signed deltas appended by each push transaction — rows in, rows deleted — so two
//!   connections never wait for each other on a common term's counter; a read sums
//!   them, and a push ends by folding them ([`COMPACT_DELTAS`]). A conversation pushed
//!   before version 5 has `keyword_terms` false: the next push sends it again with its
//!   terms.
//! - Version 6, memo-search's keyword legs ([`MEMORY_TERMS`]): per memory its local
//!   position (rowid) and sequence (the neighbours' conversation or file,
//!   [`crate::stores::memories::SEQUENCE_SQL`]), and for each of the memories store's
//!   two FTS5 tokenizers (plain; Porter-stemmed) its tokens per column (title, tags,
//!   body) and its terms with their counts per column (three per term), cut by push
//!   with the store's own tokenizers. The collection statistics (rows, tokens, a
//!   term's document frequency) are summed from it by each search, so they are always
//!   those of the memories held. A memory pushed before version 6 has no row in it:
//!   the next push sends it again.
//! - Version 7, the memories' view of the drop-in `sql` skills ([`super::sql`]):
//!   [`SQL_SCHEMA`]`.all_memories` (every machine's pushed memories: the local
//!   `memories` columns a query reads — `id`, `title`, `type`, `tags`, `created`,
//!   `updated`, `body`, `files_read`, `files_modified`, `origin`, `content_hash` —, the
//!   links as lists, `supersedes` and `conversations`, plus `machine` — the host
//!   label —, `machine_id` and `user`), readable by the role [`SQL_MEMORIES_ROLE`]
//!   only: a skill whose `reads` names the memories runs as that role, one that names
//!   the conversations as [`SQL_ROLE`], so neither reads the other's store on the
//!   archive, as locally.
//! - Version 8, postings for the keyword leg ([`KEYWORD_POSTINGS`]): every row of
//!   [`MESSAGE_TERMS`] gets a dense `id` ([`MESSAGE_IDS`], reserved by push in blocks,
//!   so a conversation's messages have consecutive ids in the local row order: newest
//!   first, then `message_id`), and per term and push batch one row holds the term's
//!   postings in that batch packed in a `bytea` ([`POSTING_BYTES`] bytes each: `id`
//!   u32, `count` u32, `length` u16, big-endian, ascending `id`), stored uncompressed
//!   (`STORAGE EXTERNAL`). A rewritten or pruned conversation's postings stay until
//!   compacted ([`super::compact`]): a search checks every posting it ranks against
//!   the rows [`MESSAGE_TERMS`] holds (a missing `id` is a deleted row); the
//!   statistics are the deltas', as before. The
//!   migration numbers the rows already held and writes their postings (one row per
//!   term).
//! - Version 9, memo-search's collection statistics kept by push: [`MEMORY_DELTAS`]
//!   (per tokenizer — [`memory_tokenizer`] — and term, signed document-frequency
//!   deltas) and [`MEMORY_TOTALS`] (signed deltas of the memories held, those with
//!   terms, and their tokens under each tokenizer), appended by the push transaction
//!   that writes or deletes the rows (a deleted row's taken back by the statement that
//!   deletes it), as [`KEYWORD_DELTAS`] does for the messages: two machines pushing
//!   never wait on a common term's counter, a read sums them, and a push that wrote
//!   memories ends by folding them ([`COMPACT_MEMORY_DELTAS`]). The plain tokenizer's
//!   terms with a positive sum are fuzzy mode's vocabulary. The migration fills them
//!   from the rows held (with the memories' tables locked against pushes), and adds a
//!   partial index of the memories that supersede others (`memories_superseding`),
//!   which every memo-search reads. Per registered model, `memory_chunks_<slot>` holds
//!   each chunk vector of the long memories (more than one vector) as `halfvec`
//!   ([`RegisteredModel::chunks_table`]): memo-search's vec leg orders them with the
//!   one-vector memories instead of reading every long memory's vectors; the migration
//!   writes them from the exact vectors held.

use postgres::Transaction;

use super::{Archive, ArchiveError};

/// The PostgreSQL schema holding everything.
pub const SCHEMA: &str = "skills_archive";

/// The schema version this build writes and reads.
pub const VERSION: i32 = 9;

/// `gin_pending_list_limit` of the trigram index, in kB: the pending list a push
/// fills before the inserting backend merges it into the index, and that a search
/// reads whole until then (docs/performance.md, "Push to the team archive").
pub const TRIGRAM_PENDING_LIST_KB: i32 = 16_384;

/// The trigram index's storage options (version 3), as `ALTER INDEX … SET` takes them.
pub fn trigram_options() -> String {
    format!("fastupdate = on, gin_pending_list_limit = {TRIGRAM_PENDING_LIST_KB}")
}

/// The function (version 3, owned by the migrating role, `SECURITY DEFINER`) that
/// merges every partition's trigram pending list into the index and returns the
/// pending pages it emptied; a push calls it once at its end. `EXECUTE` is revoked
/// from `PUBLIC` and granted by [`grants`] to the pushing role.
pub const FLUSH_PENDING: &str = "skills_archive.flush_trigram_pending()";

/// The same options as PostgreSQL lists them in `pg_class.reloptions`.
const TRIGRAM_RELOPTIONS: [&str; 2] = ["fastupdate=on", "gin_pending_list_limit="];

/// The schema of the views the `sql` skills read on the archive.
pub const SQL_SCHEMA: &str = "skills_sql";

/// The role (no login) a `sql` skill over the conversations runs its query as: it may
/// `SELECT` the view [`SQL_SCHEMA`]`.all_conversations` only. Roles are per cluster;
/// every archive database of a cluster grants it its own view.
pub const SQL_ROLE: &str = "skills_sql_conversations";

/// The role (no login, version 7) a `sql` skill over the memories runs its query as:
/// it may `SELECT` the view [`SQL_SCHEMA`]`.all_memories` only.
pub const SQL_MEMORIES_ROLE: &str = "skills_sql_memories";

/// The sandbox role of the `sql` skills reading `store`: [`SQL_ROLE`] for the
/// conversations, [`SQL_MEMORIES_ROLE`] for the memories.
pub fn sql_role(store: crate::stores::Store) -> &'static str {
    match store {
        crate::stores::Store::Conversations => SQL_ROLE,
        crate::stores::Store::Memories => SQL_MEMORIES_ROLE,
    }
}

/// `set_config`'s signature, revoked from `PUBLIC` by [`migrate`].
pub const SET_CONFIG: &str = "pg_catalog.set_config(text, text, boolean)";

/// The registry of embedding models (version 4): `model` (the embedder's id),
/// `dim`, `slot` (its tables are `units_<slot>` and `memory_vectors_<slot>`).
pub const VECTOR_MODELS: &str = "skills_archive.vector_models";

/// Per message: its BM25 length and stemmed terms with counts (version 5).
pub const MESSAGE_TERMS: &str = "skills_archive.message_terms";

/// Per term and push batch: the postings of the term's messages (version 8, see the
/// module docs).
pub const KEYWORD_POSTINGS: &str = "skills_archive.keyword_postings";

/// The sequence of [`MESSAGE_TERMS`]' `id`s (version 8).
pub const MESSAGE_IDS: &str = "skills_archive.message_ids";

/// Bytes of one posting in [`KEYWORD_POSTINGS`]: `id` u32, `count` u32, `length` u16.
pub const POSTING_BYTES: usize = 10;

/// Signed document-frequency deltas per term (version 5): a term's df is their sum.
pub const KEYWORD_DELTAS: &str = "skills_archive.keyword_deltas";

/// Signed deltas of the messages and words counted by the keyword leg (version 5).
pub const KEYWORD_TOTALS: &str = "skills_archive.keyword_totals";

/// Folds [`KEYWORD_DELTAS`] (terms with more than a few rows) and [`KEYWORD_TOTALS`]
/// into one row each; safe beside pushes and other folds (a `DELETE … RETURNING`
/// takes only the rows it deleted, under `READ COMMITTED` a row another fold deleted
/// first is skipped).
pub const COMPACT_DELTAS: &str = "WITH gone AS (
    DELETE FROM skills_archive.keyword_deltas
    WHERE term IN (SELECT term FROM skills_archive.keyword_deltas GROUP BY term HAVING count(*) > 4)
    RETURNING term, df)
INSERT INTO skills_archive.keyword_deltas (term, df)
    SELECT term, sum(df) FROM gone GROUP BY term HAVING sum(df) <> 0;
WITH gone AS (DELETE FROM skills_archive.keyword_totals RETURNING messages, words)
INSERT INTO skills_archive.keyword_totals (messages, words)
    SELECT sum(messages), sum(words) FROM gone HAVING count(*) > 0";

/// Per memory: its local position and sequence, and its terms under each of the
/// memories store's tokenizers (version 6, see the module docs).
pub const MEMORY_TERMS: &str = "skills_archive.memory_terms";

/// Per tokenizer and term of the memories, signed document-frequency deltas (version
/// 9): `tokenizer` ([`memory_tokenizer`]), `term`, `df`; a term's document frequency
/// is their sum.
pub const MEMORY_DELTAS: &str = "skills_archive.memory_deltas";

/// Signed deltas of the memories' totals (version 9): `memories` (rows of
/// `memories`), `with_terms` (rows of [`MEMORY_TERMS`]), `plain_tokens` and
/// `stem_tokens` (their tokens, all columns, under each tokenizer).
pub const MEMORY_TOTALS: &str = "skills_archive.memory_totals";

/// Folds [`MEMORY_DELTAS`] (terms with more than a few rows) and [`MEMORY_TOTALS`]
/// into one row each, safe beside pushes and other folds as [`COMPACT_DELTAS`].
pub const COMPACT_MEMORY_DELTAS: &str = "WITH gone AS (
    DELETE FROM skills_archive.memory_deltas
    WHERE (tokenizer, term) IN (SELECT tokenizer, term FROM skills_archive.memory_deltas
                                GROUP BY tokenizer, term HAVING count(*) > 4)
    RETURNING tokenizer, term, df)
INSERT INTO skills_archive.memory_deltas (tokenizer, term, df)
    SELECT tokenizer, term, sum(df) FROM gone GROUP BY tokenizer, term HAVING sum(df) <> 0;
WITH gone AS (DELETE FROM skills_archive.memory_totals
              RETURNING memories, with_terms, plain_tokens, stem_tokens)
INSERT INTO skills_archive.memory_totals (memories, with_terms, plain_tokens, stem_tokens)
    SELECT sum(memories), sum(with_terms), sum(plain_tokens), sum(stem_tokens) FROM gone
    HAVING count(*) > 0";

/// The `tokenizer` of `table`'s terms in [`MEMORY_DELTAS`]: 0 plain, 1 Porter-stemmed.
pub fn memory_tokenizer(table: crate::stores::memories::fts::Table) -> i16 {
    match table {
        crate::stores::memories::fts::Table::Plain => 0,
        crate::stores::memories::fts::Table::Stemmed => 1,
    }
}

/// HNSW `m` (links per node) of the vector indexes: pgvector's default.
pub const HNSW_M: i32 = 16;

/// HNSW `ef_construction` of the vector indexes: pgvector's default.
pub const HNSW_EF_CONSTRUCTION: i32 = 64;

/// Largest dimension a `halfvec` HNSW index takes (pgvector 0.8).
pub const MAX_INDEXED_DIM: u32 = 4000;

/// An embedding model whose vectors the archive may hold.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VectorModel {
    /// [`crate::embed::Embedder::name`].
    pub model: String,
    /// Vector dimension.
    pub dim: u32,
}

/// A model registered in the archive, with its tables' slot.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RegisteredModel {
    /// The model and dimension.
    #[serde(flatten)]
    pub model: VectorModel,
    /// Its tables are `units_<slot>` and `memory_vectors_<slot>`.
    pub slot: i32,
}

impl RegisteredModel {
    /// `skills_archive.units_<slot>`: the conversations' units of this model.
    pub fn units_table(&self) -> String {
        format!("{SCHEMA}.units_{}", self.slot)
    }

    /// `skills_archive.memory_vectors_<slot>`: the memories' vectors of this model.
    pub fn memories_table(&self) -> String {
        format!("{SCHEMA}.memory_vectors_{}", self.slot)
    }

    /// `skills_archive.memory_chunks_<slot>` (schema version 9): each chunk vector of
    /// this model's long memories (more than one vector) as `halfvec`, so memo-search's
    /// vec leg orders them beside the one-vector memories.
    pub fn chunks_table(&self) -> String {
        format!("{SCHEMA}.memory_chunks_{}", self.slot)
    }
}

/// The models of the stores at `paths` whose vectors a push would send: the
/// conversations' L1 embeddings' model (when they match the store) and every model
/// named by a memory's stored vector. Unreadable stores give none.
pub fn local_models(paths: &crate::stores::StorePaths) -> Vec<VectorModel> {
    let mut out = Vec::new();
    if let Ok(e) = crate::stores::conversations::embeddings::Embeddings::open(&paths.conversations)
    {
        out.push(VectorModel {
            model: e.manifest().model.clone(),
            dim: e.manifest().dim,
        });
    }
    if paths.memories.exists() {
        if let Ok(conn) = crate::stores::memories::query_connection(&paths.memories) {
            if let Ok(mut stmt) = conn.prepare(
                "SELECT DISTINCT embedding_model, length(embedding) / 4 FROM memories \
                 WHERE embedding IS NOT NULL AND embedding_model IS NOT NULL",
            ) {
                if let Ok(rows) =
                    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                {
                    for (model, dim) in rows.flatten() {
                        let m = VectorModel {
                            model,
                            dim: u32::try_from(dim).unwrap_or(0),
                        };
                        if m.dim > 0 && !out.contains(&m) {
                            out.push(m);
                        }
                    }
                }
            }
        }
    }
    out
}

/// The models registered in the archive, by slot.
///
/// # Errors
/// [`postgres::Error`] when the registry cannot be read (an archive before version 4).
pub fn registered_models(
    client: &mut impl postgres::GenericClient,
) -> Result<Vec<RegisteredModel>, postgres::Error> {
    Ok(client
        .query(
            &format!("SELECT model, dim, slot FROM {VECTOR_MODELS} ORDER BY slot"),
            &[],
        )?
        .iter()
        .map(|r| RegisteredModel {
            model: VectorModel {
                model: r.get(0),
                dim: u32::try_from(r.get::<_, i32>(1)).unwrap_or(0),
            },
            slot: r.get(2),
        })
        .collect())
}

/// Registers `m` (when absent) and creates its tables and HNSW indexes; `Ok(false)`
/// when it was registered already. A model registered with another dimension is an
/// error (a model id names one vector space).
fn register_model(tx: &mut Transaction<'_>, m: &VectorModel) -> Result<bool, String> {
    if m.dim == 0 || m.dim > MAX_INDEXED_DIM {
        return Err(format!(
            "model `{}`: dimension {} is outside 1..={MAX_INDEXED_DIM} (pgvector's halfvec \
             HNSW limit)",
            m.model, m.dim
        ));
    }
    let described = |e: postgres::Error| super::connect::describe(&e);
    let known = tx
        .query_opt(
            &format!("SELECT dim FROM {VECTOR_MODELS} WHERE model = $1"),
            &[&m.model],
        )
        .map_err(described)?;
    if let Some(r) = known {
        let dim: i32 = r.get(0);
        if u32::try_from(dim).ok() != Some(m.dim) {
            return Err(format!(
                "model `{}` is registered with dimension {dim}, this machine's has {}",
                m.model, m.dim
            ));
        }
        return Ok(false);
    }
    let dim = i32::try_from(m.dim).unwrap_or(0);
    let slot: i32 = tx
        .query_one(
            &format!(
                "INSERT INTO {VECTOR_MODELS} (model, dim, slot) \
                 SELECT $1, $2, coalesce(max(slot), 0) + 1 FROM {VECTOR_MODELS} RETURNING slot"
            ),
            &[&m.model, &dim],
        )
        .map_err(described)?
        .get(0);
    tx.batch_execute(&format!(
        "CREATE TABLE {SCHEMA}.units_{slot} (
    machine text COLLATE \"C\" NOT NULL,
    source text COLLATE \"C\" NOT NULL,
    conversation_id text COLLATE \"C\" NOT NULL,
    unit integer NOT NULL,
    message_ids text[] COLLATE \"C\" NOT NULL,
    message_created bigint[] NOT NULL,
    message_roles smallint[] NOT NULL,
    roles smallint NOT NULL,
    first_us bigint NOT NULL,
    last_us bigint NOT NULL,
    scale real NOT NULL,
    codes bytea NOT NULL,
    embedding halfvec({dim}) NOT NULL,
    PRIMARY KEY (machine, source, conversation_id, unit)
);
CREATE INDEX units_{slot}_hnsw ON {SCHEMA}.units_{slot}
    USING hnsw (embedding halfvec_ip_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION});
CREATE TABLE {SCHEMA}.memory_vectors_{slot} (
    machine text COLLATE \"C\" NOT NULL,
    id text COLLATE \"C\" NOT NULL,
    exact bytea NOT NULL,
    embedding halfvec({dim}) NOT NULL,
    PRIMARY KEY (machine, id)
);
CREATE INDEX memory_vectors_{slot}_hnsw ON {SCHEMA}.memory_vectors_{slot}
    USING hnsw (embedding halfvec_ip_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION});
{}",
        chunks_sql(slot, dim)
    ))
    .map_err(described)?;
    Ok(true)
}

/// The `memory_chunks_<slot>` table of a model of dimension `dim` (version 9,
/// [`RegisteredModel::chunks_table`]).
fn chunks_sql(slot: i32, dim: i32) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA}.memory_chunks_{slot} (
    machine text COLLATE \"C\" NOT NULL,
    id text COLLATE \"C\" NOT NULL,
    chunk integer NOT NULL,
    embedding halfvec({dim}) NOT NULL,
    PRIMARY KEY (machine, id, chunk)
);"
    )
}

/// Version 9 for the models registered before it: creates each one's
/// `memory_chunks_<slot>` and fills it from its long memories' exact vectors (each
/// chunk rounded to `halfvec`, as push sends them).
fn chunk_tables(tx: &mut Transaction<'_>) -> Result<(), postgres::Error> {
    let models = registered_models(tx)?;
    if models.is_empty() {
        return Ok(());
    }
    let halfvec = super::meaning::halfvec_type(tx)?;
    for m in models {
        let dim = m.model.dim as usize;
        tx.batch_execute(&chunks_sql(m.slot, i32::try_from(dim).unwrap_or(0)))?;
        let one = i32::try_from(dim * 4).unwrap_or(i32::MAX);
        let long = tx.query(
            &format!(
                "SELECT machine, id, exact FROM {} WHERE octet_length(exact) <> $1",
                m.memories_table()
            ),
            &[&one],
        )?;
        // One memory's chunks decoded at a time, as COPY sends them.
        let chunks = long.iter().map(|r| {
            let bytes: Vec<u8> = r.get(2);
            let values = crate::stores::memories::decode_vector(&bytes);
            (
                r.get::<_, String>(0),
                r.get::<_, String>(1),
                memory_chunks(&values, dim),
            )
        });
        copy_chunks(tx, &m.chunks_table(), &halfvec, chunks)?;
    }
    Ok(())
}

/// Writes each memory's chunk vectors — (machine, id, its chunks in order) — into
/// `table` (a model's `memory_chunks_<slot>`) by binary `COPY`, a row per chunk
/// numbered from 0; `halfvec` is the type's oid on this server. What push sends and
/// what the version 9 upgrade writes.
pub(super) fn copy_chunks<M, I, C>(
    tx: &mut Transaction<'_>,
    table: &str,
    halfvec: &postgres::types::Type,
    memories: impl IntoIterator<Item = (M, I, C)>,
) -> Result<(), postgres::Error>
where
    M: postgres::types::ToSql + Sync,
    I: postgres::types::ToSql + Sync,
    C: AsRef<[super::meaning::HalfVec]>,
{
    use postgres::types::{ToSql, Type};
    let sink = tx.copy_in(&format!(
        "COPY {table} (machine, id, chunk, embedding) FROM STDIN (FORMAT binary)"
    ))?;
    let types = [Type::TEXT, Type::TEXT, Type::INT4, halfvec.clone()];
    let mut w = postgres::binary_copy::BinaryCopyInWriter::new(sink, &types);
    for (machine, id, chunks) in memories {
        for (chunk, half) in chunks.as_ref().iter().enumerate() {
            let chunk = i32::try_from(chunk).unwrap_or(i32::MAX);
            w.write(&[&machine as &(dyn ToSql + Sync), &id, &chunk, half])?;
        }
    }
    w.finish()?;
    Ok(())
}

/// The chunk vectors of a long memory's `values` (several vectors of `dim` values, one
/// after the other) rounded to `halfvec`; none when `values` is one vector (or not
/// whole vectors).
pub fn memory_chunks(values: &[f32], dim: usize) -> Vec<super::meaning::HalfVec> {
    if dim == 0 || values.len() <= dim || !values.len().is_multiple_of(dim) {
        return Vec::new();
    }
    values
        .chunks_exact(dim)
        .map(super::meaning::HalfVec::of)
        .collect()
}

/// First month with its own partition (older rows go to the default partition).
pub const FIRST_MONTH: (i32, u32) = (2020, 1);

/// Months past the current one that migrate creates partitions for.
pub const MONTHS_AHEAD: u32 = 24;

/// One column of `messages`: its name and PostgreSQL type.
pub struct Column {
    /// Column name.
    pub name: &'static str,
    /// PostgreSQL type (text columns are `COLLATE "C"`).
    pub sql: &'static str,
}

const fn col(name: &'static str, sql: &'static str) -> Column {
    Column { name, sql }
}

/// The columns of `messages`, in table (and `COPY`) order: `machine`, `user_name`,
/// then the local store's columns ([`crate::stores::conversations::COLUMNS`], same
/// names and order), then `content_folded` and `content_raw`.
pub const MESSAGE_COLUMNS: &[Column] = &[
    col("machine", "text COLLATE \"C\" NOT NULL"),
    col("user_name", "text COLLATE \"C\" NOT NULL"),
    col("source", "text COLLATE \"C\" NOT NULL"),
    col("model", "text COLLATE \"C\""),
    col("project", "text COLLATE \"C\""),
    col("conversation_id", "text COLLATE \"C\" NOT NULL"),
    col("conversation_title", "text COLLATE \"C\""),
    col("created", "timestamp NOT NULL"),
    col("updated", "timestamp NOT NULL"),
    col("year", "integer NOT NULL"),
    col("month", "integer NOT NULL"),
    col("day_of_week", "text COLLATE \"C\" NOT NULL"),
    col("hour", "integer NOT NULL"),
    col("message_id", "text COLLATE \"C\" NOT NULL"),
    col("parent_id", "text COLLATE \"C\""),
    col("msg_index", "bigint NOT NULL"),
    col("msg_timestamp", "timestamp"),
    col("timestamp_is_fallback", "boolean NOT NULL"),
    col("role", "text COLLATE \"C\" NOT NULL"),
    col("content_type", "text COLLATE \"C\" NOT NULL"),
    col("is_first", "boolean NOT NULL"),
    col("is_last", "boolean NOT NULL"),
    col("word_count", "integer NOT NULL"),
    col("char_count", "integer NOT NULL"),
    col("conversation_msg_count", "integer NOT NULL"),
    col("has_code", "integer NOT NULL"),
    col("has_url", "integer NOT NULL"),
    col("has_question", "integer NOT NULL"),
    col("has_attachment", "integer NOT NULL"),
    col("has_citation", "integer NOT NULL"),
    col("content", "text COLLATE \"C\" NOT NULL"),
    col("temporal_precision", "text COLLATE \"C\" NOT NULL"),
    col("is_injected", "boolean NOT NULL"),
    col("content_folded", "text COLLATE \"C\" NOT NULL"),
    col("content_raw", "bytea"),
    col("project_folded", "text COLLATE \"C\""),
];

/// The columns of `memories`, in table (and `COPY`) order.
pub const MEMORY_COLUMNS: &[Column] = &[
    col("machine", "text COLLATE \"C\" NOT NULL"),
    col("user_name", "text COLLATE \"C\" NOT NULL"),
    col("id", "text COLLATE \"C\" NOT NULL"),
    col("title", "text COLLATE \"C\" NOT NULL"),
    col("type", "text COLLATE \"C\" NOT NULL"),
    col("tags", "text COLLATE \"C\" NOT NULL"),
    col("created", "timestamp NOT NULL"),
    col("updated", "timestamp NOT NULL"),
    col("body", "text COLLATE \"C\" NOT NULL"),
    col("files_read", "text COLLATE \"C\" NOT NULL"),
    col("files_modified", "text COLLATE \"C\" NOT NULL"),
    col("origin", "text COLLATE \"C\""),
    col("content_hash", "text COLLATE \"C\" NOT NULL"),
    col("supersedes", "text[] COLLATE \"C\" NOT NULL"),
    col("conversations", "text[] COLLATE \"C\" NOT NULL"),
    col("fingerprint", "bigint NOT NULL"),
];

fn columns_sql(cols: &[Column]) -> String {
    cols.iter()
        .map(|c| format!("    {} {}", c.name, c.sql))
        .collect::<Vec<_>>()
        .join(",\n")
}

/// What [`migrate`] did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Migration {
    /// Version before (0: no schema).
    pub from: i32,
    /// Version after.
    pub to: i32,
    /// Monthly partitions created by this run.
    pub partitions_created: usize,
    /// Rows moved out of the default partition into new months.
    pub rows_moved: u64,
    /// Extensions present after the run, by name (`pg_trgm`, `vector`).
    pub extensions: Vec<String>,
    /// Why an extension is missing, one line each (what to ask an administrator).
    pub notes: Vec<String>,
    /// Whether the trigram index exists (searches without it scan, still exact).
    pub trigram_index: bool,
    /// Partitions whose trigram index got this version's options
    /// ([`trigram_options`]) in this run (older archives, new months).
    pub trigram_partitions_set: usize,
    /// Embedding models registered by this run (their vector tables created).
    pub models_registered: Vec<VectorModel>,
    /// Every model the archive has vector tables for after the run.
    pub models: Vec<RegisteredModel>,
}

/// Creates or upgrades the schema to [`VERSION`] in one transaction (two migrations
/// at once wait for each other through an advisory lock), adds the monthly partitions
/// up to [`MONTHS_AHEAD`] months from now (moving rows the default partition holds for
/// them), and creates `pg_trgm`, `vector` and the trigram index when allowed; with
/// `vector`, registers `models` (the data folder's, [`local_models`]) and creates their
/// vector tables.
///
/// # Errors
/// [`ArchiveError`] when the archive's schema is newer than this build, or a statement
/// fails (nothing is changed then).
pub fn migrate(archive: &mut Archive, models: &[VectorModel]) -> Result<Migration, ArchiveError> {
    let target = archive.target().clone();
    let err = |what: &str| {
        let target = target.clone();
        let what = what.to_owned();
        move |e: postgres::Error| target.error(&what, &e)
    };
    let mut tx = archive
        .client()
        .transaction()
        .map_err(err("starting the migration"))?;
    tx.batch_execute("SELECT pg_advisory_xact_lock(hashtext('skills_archive migrate'))")
        .map_err(err("waiting for another migration"))?;
    let from = version_in(&mut tx).map_err(err("reading the schema version"))?;
    if from > VERSION {
        return Err(ArchiveError::new(format!(
            "archive {}: its schema is version {from}, newer than this skills build knows \
             ({VERSION}); upgrade skills",
            target.shown()
        )));
    }
    let mut out = Migration {
        from,
        to: VERSION,
        ..Migration::default()
    };
    for (name, why) in [
        (
            "pg_trgm",
            "searches then scan every row (still exact, slower)",
        ),
        (
            "vector",
            "without it no vectors are pushed and the searches by meaning \
             (semantic-search) cannot answer from the archive",
        ),
    ] {
        match create_extension(&mut tx, name) {
            Ok(()) => out.extensions.push(name.to_owned()),
            Err(reason) => out.notes.push(format!(
                "extension {name} is not available ({reason}); {why}. An administrator can \
                 run `CREATE EXTENSION {name};` in this database, then `skills archive \
                 migrate` again"
            )),
        }
    }
    if from < 1 {
        tx.batch_execute(&version_1())
            .map_err(err("creating the schema (version 1)"))?;
    }
    if from < 2 {
        tx.batch_execute(&version_2())
            .map_err(err("creating the sql skills' views (version 2)"))?;
    }
    if from < 3 {
        tx.batch_execute(&version_3())
            .map_err(err("creating the pending-list flush (version 3)"))?;
    }
    let vectors = out.extensions.iter().any(|e| e == "vector");
    if from < 4 {
        tx.batch_execute(&version_4())
            .map_err(err("creating the vectors' registry (version 4)"))?;
    }
    if from < 5 {
        tx.batch_execute(&version_5())
            .map_err(err("creating the keyword leg's tables (version 5)"))?;
    }
    if from < 6 {
        tx.batch_execute(&version_6())
            .map_err(err("creating memo-search's keyword tables (version 6)"))?;
    }
    if from < 7 {
        tx.batch_execute(&version_7())
            .map_err(err("creating the sql skills' memories view (version 7)"))?;
    }
    if from < 8 {
        tx.batch_execute(&version_8()).map_err(err(
            "numbering the messages and writing their postings (version 8)",
        ))?;
    }
    if from < 9 {
        tx.batch_execute(&version_9()).map_err(err(
            "counting the memories' terms for memo-search (version 9)",
        ))?;
        if vectors {
            chunk_tables(&mut tx)
                .map_err(err("writing the long memories' chunk vectors (version 9)"))?;
        }
    }
    if (1..VERSION).contains(&from) {
        // GRANT … ON ALL TABLES covers the tables that existed when it ran: roles given
        // an older version's lines lack what later versions added.
        out.notes.push(format!(
            "upgraded from schema version {from}: a reading or pushing role given the GRANT              lines of an older version needs the lines below run again (version 7 added the              role {SQL_MEMORIES_ROLE} readers are made members of; version 8 the table              {KEYWORD_POSTINGS} and the sequence {MESSAGE_IDS} a push writes; version 9 the              tables {MEMORY_DELTAS}, {MEMORY_TOTALS} and memory_chunks_<slot>)"
        ));
    }
    if vectors {
        for m in models {
            match register_model(&mut tx, m) {
                Ok(true) => out.models_registered.push(m.clone()),
                Ok(false) => {}
                Err(why) => out
                    .notes
                    .push(format!("vectors of `{}` cannot be held: {why}", m.model)),
            }
        }
        out.models = registered_models(&mut tx).map_err(err("reading the vector models"))?;
    } else if !models.is_empty() {
        out.notes.push(
            "no vector tables: the `vector` extension is missing, so pushes send no \
             vectors"
                .to_owned(),
        );
    }
    if let Err(e) = sandbox_role(&mut tx) {
        out.notes.push(format!(
            "cannot create or grant the roles {SQL_ROLE} and {SQL_MEMORIES_ROLE} ({}): the \
             drop-in sql skills refuse to run on this archive until a role that may create \
             roles runs `skills archive migrate`",
            super::connect::describe(&e)
        ));
    }
    if let Err(reason) = revoke_set_config(&mut tx) {
        out.notes.push(format!(
            "cannot revoke set_config() from PUBLIC ({reason}): the drop-in sql skills \
             (get-conversation, get-memory, list-memories, brain-stats…) refuse to run on this \
             archive until a superuser runs `skills archive migrate`"
        ));
    }
    tx.execute(
        &format!(
            "INSERT INTO {SCHEMA}.meta (key, value) VALUES ('schema_version', $1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        &[&VERSION.to_string()],
    )
    .map_err(err("recording the schema version"))?;
    let now = chrono::Utc::now().date_naive();
    let (created, moved) = add_partitions(&mut tx, now).map_err(err("adding partitions"))?;
    out.partitions_created = created;
    out.rows_moved = moved;
    if out.extensions.iter().any(|e| e == "pg_trgm") {
        tx.batch_execute(&format!(
            "CREATE INDEX IF NOT EXISTS messages_folded_trgm ON {SCHEMA}.messages \
             USING gin (content_folded gin_trgm_ops) WITH ({})",
            trigram_options()
        ))
        .map_err(err("creating the trigram index"))?;
        out.trigram_partitions_set =
            set_trigram_options(&mut tx).map_err(err("setting the trigram index's options"))?;
    }
    out.trigram_index = has_trigram_index(&mut tx).map_err(err("reading the indexes"))?;
    tx.commit().map_err(err("committing the migration"))?;
    Ok(out)
}

/// `CREATE EXTENSION IF NOT EXISTS name` in a savepoint, so a refusal leaves the
/// migration going; the refusal's reason as text.
fn create_extension(tx: &mut Transaction<'_>, name: &str) -> Result<(), String> {
    let mut sp = tx.savepoint("extension").map_err(|e| e.to_string())?;
    match sp.batch_execute(&format!("CREATE EXTENSION IF NOT EXISTS {name}")) {
        Ok(()) => sp.commit().map_err(|e| e.to_string()),
        Err(e) => {
            let why = super::connect::describe(&e);
            let _ = sp.rollback();
            Err(why)
        }
    }
}

/// The schema version recorded in the archive (0 when there is no schema).
fn version_in(tx: &mut Transaction<'_>) -> Result<i32, postgres::Error> {
    let exists: bool = tx
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{SCHEMA}.meta")],
        )?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = tx.query_opt(
        &format!("SELECT value FROM {SCHEMA}.meta WHERE key = 'schema_version'"),
        &[],
    )?;
    Ok(row
        .and_then(|r| r.get::<_, String>(0).parse().ok())
        .unwrap_or(0))
}

fn has_trigram_index(tx: &mut Transaction<'_>) -> Result<bool, postgres::Error> {
    Ok(tx
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{SCHEMA}.messages_folded_trgm")],
        )?
        .get(0))
}

/// Sets [`trigram_options`] on each partition's trigram index that lacks them (an
/// archive of version 1–2, made with `fastupdate = off`; a month created since):
/// `ALTER INDEX … SET` takes a lock that lets reads and writes go on and rebuilds
/// nothing. Returns how many were set.
fn set_trigram_options(tx: &mut Transaction<'_>) -> Result<usize, postgres::Error> {
    let wanted = [
        TRIGRAM_RELOPTIONS[0].to_owned(),
        format!("{}{TRIGRAM_PENDING_LIST_KB}", TRIGRAM_RELOPTIONS[1]),
    ];
    let rows = tx.query(
        "SELECT format('%I.%I', n.nspname, c.relname), coalesce(c.reloptions, '{}')::text[]
         FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE i.inhparent = to_regclass($1)",
        &[&format!("{SCHEMA}.messages_folded_trgm")],
    )?;
    let mut set = 0;
    for r in rows {
        let name: String = r.get(0);
        let options: Vec<String> = r.get(1);
        if wanted.iter().all(|w| options.contains(w)) {
            continue;
        }
        tx.batch_execute(&format!("ALTER INDEX {name} SET ({})", trigram_options()))?;
        set += 1;
    }
    Ok(set)
}

/// Version 1: the tables, the default partition and the non-trigram indexes.
fn version_1() -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE {SCHEMA}.meta (
    key text COLLATE \"C\" PRIMARY KEY,
    value text COLLATE \"C\" NOT NULL
);
INSERT INTO {SCHEMA}.meta (key, value) VALUES ('archive_id', md5(random()::text || clock_timestamp()::text));
CREATE TABLE {SCHEMA}.machines (
    machine text COLLATE \"C\" PRIMARY KEY,
    label text COLLATE \"C\" NOT NULL,
    user_name text COLLATE \"C\" NOT NULL,
    first_push timestamptz NOT NULL DEFAULT now(),
    last_push timestamptz
);
CREATE TABLE {SCHEMA}.conversations (
    machine text COLLATE \"C\" NOT NULL,
    source text COLLATE \"C\" NOT NULL,
    conversation_id text COLLATE \"C\" NOT NULL,
    fingerprint bigint NOT NULL,
    messages integer NOT NULL,
    pushed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (machine, source, conversation_id)
);
CREATE TABLE {SCHEMA}.messages (
{messages}
) PARTITION BY RANGE (created);
CREATE TABLE {SCHEMA}.messages_default PARTITION OF {SCHEMA}.messages DEFAULT;
CREATE INDEX messages_conversation ON {SCHEMA}.messages (machine, source, conversation_id);
CREATE INDEX messages_created ON {SCHEMA}.messages (created);
CREATE TABLE {SCHEMA}.memories (
{memories},
    PRIMARY KEY (machine, id)
);
CREATE VIEW {SCHEMA}.all_conversations AS
    SELECT {local}, machine, user_name AS \"user\" FROM {SCHEMA}.messages;
",
        messages = columns_sql(MESSAGE_COLUMNS),
        memories = columns_sql(MEMORY_COLUMNS),
        local = crate::stores::conversations::COLUMNS.join(", "),
    )
}

/// Version 2: the view the `sql` skills read, and its role's privileges.
fn version_2() -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {SQL_SCHEMA};
REVOKE ALL ON SCHEMA {SQL_SCHEMA} FROM PUBLIC;
CREATE VIEW {SQL_SCHEMA}.all_conversations AS
    SELECT {local}, coalesce(k.label, m.machine) AS machine, m.machine AS machine_id,
           m.user_name AS \"user\"
    FROM {SCHEMA}.messages m LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine;
",
        local = crate::stores::conversations::COLUMNS
            .iter()
            .map(|c| format!("m.{c}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Version 3: [`FLUSH_PENDING`] (the trigram index's options are set by every
/// migrate, [`set_trigram_options`]). It finds the partitions' indexes at each call,
/// so months added later are covered, and does nothing without the index.
fn version_3() -> String {
    format!(
        "CREATE FUNCTION {FLUSH_PENDING} RETURNS bigint
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $f$ SELECT coalesce(sum(gin_clean_pending_list(i.inhrelid::regclass)), 0)::bigint
           FROM pg_inherits i WHERE i.inhparent = to_regclass('{SCHEMA}.messages_folded_trgm') $f$;
REVOKE ALL ON FUNCTION {FLUSH_PENDING} FROM PUBLIC;
"
    )
}

/// Version 4: the registry of embedding models ([`VECTOR_MODELS`]; created even
/// without pgvector, so a later migrate with it only adds tables) and the watermark's
/// vector columns. A conversation pushed before version 4 has `vector_model` NULL:
/// its fingerprint no longer matches (vectors are part of it), so the next push sends
/// it again with its vectors.
fn version_4() -> String {
    format!(
        "CREATE TABLE {VECTOR_MODELS} (
    model text COLLATE \"C\" PRIMARY KEY,
    dim integer NOT NULL,
    slot integer NOT NULL UNIQUE,
    registered timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE {SCHEMA}.conversations
    ADD COLUMN vector_model text COLLATE \"C\",
    ADD COLUMN units integer NOT NULL DEFAULT 0,
    ADD COLUMN vector_unit text COLLATE \"C\";
"
    )
}

/// Version 5: the keyword leg's tables (see the module docs). Conversations pushed
/// before it are marked `keyword_terms = false`, so the next push sends them again
/// with their terms (its watermark then differs, [`super::push`]).
fn version_5() -> String {
    format!(
        "CREATE TABLE {MESSAGE_TERMS} (
    machine text COLLATE \"C\" NOT NULL,
    source text COLLATE \"C\" NOT NULL,
    conversation_id text COLLATE \"C\" NOT NULL,
    message_id text COLLATE \"C\" NOT NULL,
    created_us bigint NOT NULL,
    role text COLLATE \"C\" NOT NULL,
    typed boolean NOT NULL,
    length bigint NOT NULL,
    terms text[] COLLATE \"C\" NOT NULL,
    counts integer[] NOT NULL
);
CREATE INDEX message_terms_terms ON {MESSAGE_TERMS} USING gin (terms);
CREATE INDEX message_terms_order ON {MESSAGE_TERMS}
    (machine, source, conversation_id, created_us, message_id);
CREATE TABLE {KEYWORD_DELTAS} (
    term text COLLATE \"C\" NOT NULL,
    df bigint NOT NULL
);
CREATE INDEX keyword_deltas_term ON {KEYWORD_DELTAS} (term);
CREATE TABLE {KEYWORD_TOTALS} (
    messages bigint NOT NULL,
    words bigint NOT NULL
);
ALTER TABLE {SCHEMA}.conversations
    ADD COLUMN keyword_terms boolean NOT NULL DEFAULT false;
"
    )
}

/// Version 6: [`MEMORY_TERMS`] (see the module docs). Memories pushed before it have
/// no row there, which the next push reads as a changed memory ([`super::push`]).
fn version_6() -> String {
    format!(
        "CREATE TABLE {MEMORY_TERMS} (
    machine text COLLATE \"C\" NOT NULL,
    id text COLLATE \"C\" NOT NULL,
    position bigint NOT NULL,
    sequence text COLLATE \"C\",
    plain_sizes integer[] NOT NULL,
    plain_terms text[] COLLATE \"C\" NOT NULL,
    plain_counts integer[] NOT NULL,
    stem_sizes integer[] NOT NULL,
    stem_terms text[] COLLATE \"C\" NOT NULL,
    stem_counts integer[] NOT NULL,
    PRIMARY KEY (machine, id)
);
CREATE INDEX memory_terms_plain ON {MEMORY_TERMS} USING gin (plain_terms);
CREATE INDEX memory_terms_stem ON {MEMORY_TERMS} USING gin (stem_terms);
CREATE INDEX memory_terms_sequence ON {MEMORY_TERMS} (sequence);
"
    )
}

/// Version 7: the view of the memories the `sql` skills read (see the module docs).
/// A memory's links are its lists (`supersedes`: the ids it replaces; `conversations`:
/// the conversations it was saved from), as the push sent them; times are `timestamp`
/// (UTC), the lists of `tags` and files their stored JSON text.
fn version_7() -> String {
    format!(
        "CREATE VIEW {SQL_SCHEMA}.all_memories AS
    SELECT m.id, m.title, m.type, m.tags, m.created, m.updated, m.body, m.files_read,
           m.files_modified, m.origin, m.content_hash, m.supersedes, m.conversations,
           coalesce(k.label, m.machine) AS machine, m.machine AS machine_id,
           m.user_name AS \"user\"
    FROM {SCHEMA}.memories m LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine;
"
    )
}

/// Version 8: [`MESSAGE_IDS`], [`MESSAGE_TERMS`]' `id` and [`KEYWORD_POSTINGS`] (see
/// the module docs). The rows already held are numbered in (machine, source,
/// conversation, local row order) and their postings written, one row per term.
fn version_8() -> String {
    // A u32 and a u16 as big-endian bytes (PostgreSQL's `int4send`/`int8send` are
    // big-endian).
    let u32_of = |x: &str| format!("substring(int8send(({x})::bigint) FROM 5 FOR 4)");
    let u16_of = |x: &str| format!("substring(int4send(least({x}, 65535)::integer) FROM 3 FOR 2)");
    format!(
        "CREATE SEQUENCE {MESSAGE_IDS} AS bigint MINVALUE 1 MAXVALUE 4294967295;
ALTER TABLE {MESSAGE_TERMS} ADD COLUMN id bigint;
UPDATE {MESSAGE_TERMS} m SET id = o.n
FROM (SELECT ctid AS row, row_number() OVER (ORDER BY machine, source, conversation_id,
                                                     created_us DESC, message_id) AS n
      FROM {MESSAGE_TERMS}) o
WHERE m.ctid = o.row;
SELECT setval('{MESSAGE_IDS}', coalesce((SELECT max(id) FROM {MESSAGE_TERMS}), 0) + 1, false);
ALTER TABLE {MESSAGE_TERMS} ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX message_terms_id ON {MESSAGE_TERMS} (id);
CREATE TABLE {KEYWORD_POSTINGS} (
    term text COLLATE \"C\" NOT NULL,
    postings bytea NOT NULL
);
ALTER TABLE {KEYWORD_POSTINGS} ALTER COLUMN postings SET STORAGE EXTERNAL;
INSERT INTO {KEYWORD_POSTINGS} (term, postings)
SELECT t.term, string_agg({id} || {count} || {length}, ''::bytea ORDER BY m.id)
FROM {MESSAGE_TERMS} m, unnest(m.terms, m.counts) AS t(term, n)
GROUP BY t.term;
CREATE INDEX keyword_postings_term ON {KEYWORD_POSTINGS} (term);
",
        id = u32_of("m.id"),
        count = u32_of("t.n"),
        length = u16_of("m.length"),
    )
}

/// Version 9: [`MEMORY_DELTAS`] and [`MEMORY_TOTALS`], filled from the rows held
/// (the memories' tables locked against pushes until the migration commits, so none
/// is counted twice or missed), and the partial index of the memories superseding
/// others (see the module docs).
fn version_9() -> String {
    let sum = |p: &str| format!("coalesce(sum({p}_sizes[1] + {p}_sizes[2] + {p}_sizes[3]), 0)");
    format!(
        "LOCK TABLE {SCHEMA}.memories, {MEMORY_TERMS} IN SHARE MODE;
CREATE TABLE {MEMORY_DELTAS} (
    tokenizer smallint NOT NULL,
    term text COLLATE \"C\" NOT NULL,
    df bigint NOT NULL
);
INSERT INTO {MEMORY_DELTAS} (tokenizer, term, df)
    SELECT 0, w, count(*) FROM {MEMORY_TERMS}, unnest(plain_terms) w GROUP BY w
    UNION ALL
    SELECT 1, w, count(*) FROM {MEMORY_TERMS}, unnest(stem_terms) w GROUP BY w;
CREATE INDEX memory_deltas_term ON {MEMORY_DELTAS} (tokenizer, term) INCLUDE (df);
CREATE TABLE {MEMORY_TOTALS} (
    memories bigint NOT NULL,
    with_terms bigint NOT NULL,
    plain_tokens bigint NOT NULL,
    stem_tokens bigint NOT NULL
);
INSERT INTO {MEMORY_TOTALS} (memories, with_terms, plain_tokens, stem_tokens)
    SELECT (SELECT count(*) FROM {SCHEMA}.memories), count(*), {}, {} FROM {MEMORY_TERMS};
CREATE INDEX IF NOT EXISTS memories_superseding ON {SCHEMA}.memories (machine, id)
    WHERE cardinality(supersedes) > 0;
",
        sum("plain"),
        sum("stem")
    )
}

/// Creates [`SQL_ROLE`] and [`SQL_MEMORIES_ROLE`] when the cluster has none, grants
/// each its one view, and makes the migrating role a member of both. Another
/// database's migration may create the roles at the same moment: a clash is retried
/// in a savepoint.
fn sandbox_role(tx: &mut Transaction<'_>) -> Result<(), postgres::Error> {
    let statements = format!(
        "DO $do$ BEGIN
           IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{SQL_ROLE}') THEN
             CREATE ROLE {SQL_ROLE} NOLOGIN;
           END IF;
           IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{SQL_MEMORIES_ROLE}') THEN
             CREATE ROLE {SQL_MEMORIES_ROLE} NOLOGIN;
           END IF;
         END $do$;
         GRANT USAGE ON SCHEMA {SQL_SCHEMA} TO {SQL_ROLE}, {SQL_MEMORIES_ROLE};
         REVOKE ALL ON ALL TABLES IN SCHEMA {SQL_SCHEMA} FROM {SQL_ROLE}, {SQL_MEMORIES_ROLE};
         GRANT SELECT ON {SQL_SCHEMA}.all_conversations TO {SQL_ROLE};
         GRANT SELECT ON {SQL_SCHEMA}.all_memories TO {SQL_MEMORIES_ROLE};
         GRANT {SQL_ROLE}, {SQL_MEMORIES_ROLE} TO CURRENT_USER;"
    );
    let mut tries = 0;
    loop {
        let mut sp = tx.savepoint("sandbox_role")?;
        match sp.batch_execute(&statements) {
            Ok(()) => return sp.commit(),
            Err(e) if tries < 5 => {
                tries += 1;
                drop(e);
                sp.rollback()?;
                std::thread::sleep(std::time::Duration::from_millis(50 * tries));
            }
            Err(e) => return Err(e),
        }
    }
}

/// `REVOKE EXECUTE ON FUNCTION set_config FROM PUBLIC` in a savepoint; the refusal's
/// reason as text.
fn revoke_set_config(tx: &mut Transaction<'_>) -> Result<(), String> {
    let mut sp = tx.savepoint("set_config").map_err(|e| e.to_string())?;
    match sp.batch_execute(&format!(
        "REVOKE EXECUTE ON FUNCTION {SET_CONFIG} FROM PUBLIC"
    )) {
        Ok(()) => sp.commit().map_err(|e| e.to_string()),
        Err(e) => {
            let why = super::connect::describe(&e);
            let _ = sp.rollback();
            Err(why)
        }
    }
}

/// Month `(year, month)` plus `n` months.
fn add_months((y, m): (i32, u32), n: u32) -> (i32, u32) {
    let total = y * 12 + i32::try_from(m).unwrap_or(1) - 1 + i32::try_from(n).unwrap_or(0);
    (
        total.div_euclid(12),
        u32::try_from(total.rem_euclid(12)).unwrap_or(0) + 1,
    )
}

/// Name of the partition of month `(y, m)`: `messages_YYYY_MM`.
pub fn partition_name((y, m): (i32, u32)) -> String {
    format!("messages_{y:04}_{m:02}")
}

/// Creates the monthly partitions from [`FIRST_MONTH`] to `MONTHS_AHEAD` months past
/// `today` that do not exist yet; rows of those months held by the default partition
/// are moved into them. Returns (partitions created, rows moved).
fn add_partitions(
    tx: &mut Transaction<'_>,
    today: chrono::NaiveDate,
) -> Result<(usize, u64), postgres::Error> {
    use chrono::Datelike;
    let existing: std::collections::HashSet<String> = tx
        .query(
            "SELECT c.relname::text FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             JOIN pg_class p ON p.oid = i.inhparent
             JOIN pg_namespace n ON n.oid = p.relnamespace
             WHERE n.nspname = $1 AND p.relname = 'messages'",
            &[&SCHEMA],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let last = add_months((today.year(), today.month()), MONTHS_AHEAD);
    let mut month = FIRST_MONTH;
    let (mut created, mut moved) = (0, 0);
    while month <= last {
        let name = partition_name(month);
        let next = add_months(month, 1);
        if !existing.contains(&name) {
            let lo = format!("{:04}-{:02}-01", month.0, month.1);
            let hi = format!("{:04}-{:02}-01", next.0, next.1);
            // Rows the default partition holds for this month must leave it before
            // the partition can be created.
            let n = tx.execute(
                &format!(
                    "CREATE TEMP TABLE moving ON COMMIT DROP AS
                       WITH gone AS (DELETE FROM {SCHEMA}.messages_default
                                     WHERE created >= '{lo}' AND created < '{hi}' RETURNING *)
                       SELECT * FROM gone"
                ),
                &[],
            )?;
            tx.batch_execute(&format!(
                "CREATE TABLE {SCHEMA}.{name} PARTITION OF {SCHEMA}.messages
                   FOR VALUES FROM ('{lo}') TO ('{hi}');
                 INSERT INTO {SCHEMA}.messages SELECT * FROM moving;
                 DROP TABLE moving;"
            ))?;
            created += 1;
            moved += n;
        }
        month = next;
    }
    Ok((created, moved))
}

/// `Ok` when the archive's schema is [`VERSION`].
///
/// # Errors
/// [`ArchiveError`] saying to run `skills archive migrate` (no schema or an older
/// one) or to upgrade skills (a newer one).
pub fn check(archive: &mut Archive) -> Result<(), ArchiveError> {
    let target = archive.target().clone();
    let mut tx = archive
        .client()
        .transaction()
        .map_err(|e| target.error("reading the schema version", &e))?;
    let v = version_in(&mut tx).map_err(|e| target.error("reading the schema version", &e))?;
    drop(tx);
    match v.cmp(&VERSION) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Less if v == 0 => Err(ArchiveError::new(format!(
            "archive {}: no skills schema in this database; run `skills archive migrate \
             --archive URL` once (as a role that may create tables)",
            target.shown()
        ))),
        std::cmp::Ordering::Less => Err(ArchiveError::new(format!(
            "archive {}: schema version {v} is older than this skills build's ({VERSION}); \
             run `skills archive migrate`",
            target.shown()
        ))),
        std::cmp::Ordering::Greater => Err(ArchiveError::new(format!(
            "archive {}: schema version {v} is newer than this skills build knows \
             ({VERSION}); upgrade skills",
            target.shown()
        ))),
    }
}

/// The statements that give role `reader` read-only access (what a shared server's
/// readers should use), and role `writer` what `skills archive push` needs, for
/// database `database` whose vectors' tables are those of `models`.
pub fn grants(database: &str, reader: &str, writer: &str, models: &[RegisteredModel]) -> String {
    let db = quote_ident(database);
    let vectors = vector_grants(models, writer);
    format!(
        "-- read-only role for people and servers that only search the archive:
CREATE ROLE {reader} LOGIN;  -- then: ALTER ROLE {reader} PASSWORD '…';
GRANT CONNECT ON DATABASE {db} TO {reader};
GRANT USAGE ON SCHEMA {SCHEMA} TO {reader};
GRANT SELECT ON ALL TABLES IN SCHEMA {SCHEMA} TO {reader};
ALTER DEFAULT PRIVILEGES IN SCHEMA {SCHEMA} GRANT SELECT ON TABLES TO {reader};
-- the drop-in sql skills run their queries as {SQL_ROLE} (it may read the view
-- {SQL_SCHEMA}.all_conversations only) or {SQL_MEMORIES_ROLE} (the view
-- {SQL_SCHEMA}.all_memories only); the roles that run skills must be members:
GRANT {SQL_ROLE}, {SQL_MEMORIES_ROLE} TO {reader};
-- role for machines that push (no DDL: `skills archive migrate` runs as the owner):
CREATE ROLE {writer} LOGIN;  -- then: ALTER ROLE {writer} PASSWORD '…';
GRANT CONNECT ON DATABASE {db} TO {writer};
GRANT USAGE ON SCHEMA {SCHEMA} TO {writer};
GRANT SELECT ON ALL TABLES IN SCHEMA {SCHEMA} TO {writer};
GRANT INSERT, UPDATE, DELETE ON {SCHEMA}.messages, {SCHEMA}.conversations,
      {SCHEMA}.machines, {SCHEMA}.memories, {MESSAGE_TERMS}, {KEYWORD_DELTAS},
      {KEYWORD_TOTALS}, {MEMORY_TERMS}, {KEYWORD_POSTINGS}, {MEMORY_DELTAS},
      {MEMORY_TOTALS} TO {writer};
GRANT USAGE, UPDATE ON SEQUENCE {MESSAGE_IDS} TO {writer};
ALTER DEFAULT PRIVILEGES IN SCHEMA {SCHEMA} GRANT SELECT ON TABLES TO {writer};
GRANT EXECUTE ON FUNCTION {FLUSH_PENDING} TO {writer};
GRANT {SQL_ROLE}, {SQL_MEMORIES_ROLE} TO {writer};
{vectors}"
    )
}

/// The writer's grants on the vectors' tables of `models` (one pair per model; a
/// model registered later needs them again: `skills archive migrate` prints them).
fn vector_grants(models: &[RegisteredModel], writer: &str) -> String {
    if models.is_empty() {
        return String::new();
    }
    let tables: Vec<String> = models
        .iter()
        .flat_map(|m| [m.units_table(), m.memories_table(), m.chunks_table()])
        .collect();
    format!(
        "-- the vectors' tables, one pair per embedding model (again after a migrate that
-- registers a model):
GRANT INSERT, DELETE ON {} TO {writer};
",
        tables.join(", ")
    )
}

/// `name` as a PostgreSQL identifier (double-quoted when it is not plain lowercase).
pub fn quote_ident(name: &str) -> String {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
    {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_roll_over_years() {
        assert_eq!(add_months((2025, 11), 1), (2025, 12));
        assert_eq!(add_months((2025, 12), 1), (2026, 1));
        assert_eq!(add_months((2025, 3), 24), (2027, 3));
        assert_eq!(partition_name((2026, 2)), "messages_2026_02");
    }

    #[test]
    fn message_columns_carry_the_local_columns_in_order() {
        let names: Vec<&str> = MESSAGE_COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(
            &names[2..names.len() - 3],
            crate::stores::conversations::COLUMNS
        );
    }
}
