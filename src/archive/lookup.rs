//! Memories and messages of the archive read by the keys the local stores know them
//! by — a memory by its id, a message by `source`, `conversation_id` and
//! `message_id` — without naming the machine that pushed them (rerank's items).
//!
//! A key held by several machines (each pushed its own copy) reads one copy,
//! deterministically: the most recently `updated` one, then the smallest machine id
//! (byte order) — get-memory's rule on the archive (`skills/get-memory/archive.sql`).
//! A message's `updated` is its conversation's on that machine, so the copy read is the
//! machine's whose conversation changed last. A key the archive does not hold reads
//! nothing.
//!
//! Each read is one prepared statement ([`Prepared::statement`]) in a read-only
//! transaction with one generic plan ([`GENERIC`]); the keys are bound as arrays,
//! never spliced. Each key is a `LATERAL` subquery that joins `machines` first:
//! `messages` and `memories` are indexed by machine first (`messages_conversation` in
//! every monthly partition, the memories' primary key), and every machine that pushed
//! a row was registered in `machines` before the row was written ([`super::push`]), so
//! a key is probed once per machine (and, for a message, whose month is unknown, per
//! partition) through those indexes. A plain join of the keys with the tables was
//! planned as a scan of every partition instead: 123 ms for two message keys at
//! 300,000 messages against 1.8 ms so (3 machines, 110 monthly partitions, PostgreSQL
//! 18, a generic plan).

use std::collections::HashMap;

use super::schema::SCHEMA;
use super::search::{Pool, Prepared, DEADLINE, GENERIC};
use super::ArchiveError;

/// Which machine's copy a row was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    /// The machine id that pushed it.
    pub machine: String,
    /// Its host label (the id when the machine has none).
    pub label: String,
    /// The user recorded on it.
    pub user: String,
}

/// A memory as rerank scores it: its title and body, and the copy read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMemory {
    /// Title.
    pub title: String,
    /// Body (a NUL of the local body is U+FFFF here: PostgreSQL text cannot hold it).
    pub body: String,
    /// The machine whose copy this is.
    pub copy: Copy,
}

/// A message as rerank scores it: its content (exact, NUL included: from
/// `content_raw` when push kept the bytes) and the copy read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Content, as the local `all_conversations.content`.
    pub content: String,
    /// The machine whose copy this is.
    pub copy: Copy,
}

/// A message's local key: source, conversation_id, message_id.
pub type MessageKey = [String; 3];

fn err(pool: &Pool, what: &'static str) -> impl Fn(postgres::Error) -> ArchiveError {
    let target = pool.target().clone();
    move |e| target.error(what, &e)
}

/// Runs the prepared `sql` with `params` in a read-only transaction with a generic plan
/// and [`DEADLINE`].
fn read(
    p: &mut Prepared<'_>,
    sql: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
    err: &impl Fn(postgres::Error) -> ArchiveError,
) -> Result<Vec<postgres::Row>, ArchiveError> {
    let st = p.statement(sql).map_err(err)?;
    let mut tx = p.client.transaction().map_err(err)?;
    tx.batch_execute(&format!(
        "{GENERIC}; SET LOCAL statement_timeout = {}; \
         SET LOCAL max_parallel_workers_per_gather = 0",
        DEADLINE.as_millis()
    ))
    .map_err(err)?;
    let rows = tx.query(&st, params).map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(rows)
}

/// The memories `ids` name, each its most recently updated copy (then the smallest
/// machine id), by id; an id the archive does not hold is absent.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn memories(pool: &Pool, ids: &[&str]) -> Result<HashMap<String, StoredMemory>, ArchiveError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let err = err(pool, "reading the memories named");
    let sql = format!(
        "SELECT s.id, c.title, c.body, c.machine, c.label, c.user_name
         FROM unnest($1::text[]) AS s(id)
         CROSS JOIN LATERAL (
             SELECT m.title, m.body, m.machine, k.label, m.user_name
             FROM {SCHEMA}.machines k
             JOIN {SCHEMA}.memories m ON m.machine = k.machine AND m.id = s.id
             ORDER BY m.updated DESC, m.machine
             LIMIT 1) c"
    );
    pool.with_prepared(|p| {
        let rows = read(p, &sql, &[&ids], &err)?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    r.get(0),
                    StoredMemory {
                        title: r.get(1),
                        body: r.get(2),
                        copy: Copy {
                            machine: r.get(3),
                            label: r.get(4),
                            user: r.get(5),
                        },
                    },
                )
            })
            .collect())
    })
}

/// The messages `keys` name, each its copy of the most recently updated conversation
/// (then the smallest machine id), by key; a key the archive does not hold is absent.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read.
pub fn messages(
    pool: &Pool,
    keys: &[[&str; 3]],
) -> Result<HashMap<MessageKey, StoredMessage>, ArchiveError> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let err = err(pool, "reading the messages named");
    let sql = format!(
        "SELECT s.source, s.conversation_id, s.message_id, c.content, c.content_raw,
                c.machine, c.label, c.user_name
         FROM unnest($1::text[], $2::text[], $3::text[])
              AS s(source, conversation_id, message_id)
         CROSS JOIN LATERAL (
             SELECT m.content, m.content_raw, m.machine, k.label, m.user_name
             FROM {SCHEMA}.machines k
             JOIN {SCHEMA}.messages m ON m.machine = k.machine AND m.source = s.source
                  AND m.conversation_id = s.conversation_id AND m.message_id = s.message_id
             ORDER BY m.updated DESC, m.machine
             LIMIT 1) c"
    );
    let mut cols: [Vec<&str>; 3] = Default::default();
    for k in keys {
        for (col, v) in cols.iter_mut().zip(k) {
            col.push(v);
        }
    }
    pool.with_prepared(|p| {
        let rows = read(p, &sql, &[&cols[0], &cols[1], &cols[2]], &err)?;
        Ok(rows
            .iter()
            .map(|r| {
                let raw: Option<Vec<u8>> = r.get(4);
                let content = match raw {
                    Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    None => r.get(3),
                };
                (
                    [r.get(0), r.get(1), r.get(2)],
                    StoredMessage {
                        content,
                        copy: Copy {
                            machine: r.get(5),
                            label: r.get(6),
                            user: r.get(7),
                        },
                    },
                )
            })
            .collect())
    })
}
