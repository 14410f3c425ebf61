//! `skills archive status` (and the archive section of `skills status`): the schema
//! version, the database's size, per machine and source the messages and the newest
//! one, the keyword postings' rows and dead postings, and this machine's last push and
//! what it has not pushed yet.

use super::machine::Machine;
use super::schema::SCHEMA;
use super::{Archive, ArchiveError};
use crate::stores::StorePaths;

/// Messages of one machine from one source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Slice {
    /// Machine id.
    pub machine: String,
    /// Its host label.
    pub label: String,
    /// Its user.
    pub user: String,
    /// Source (`claude-code`, `codex`…).
    pub source: String,
    /// Messages held.
    pub messages: i64,
    /// Time of the newest (`YYYY-MM-DDTHH:MM:SSZ`).
    pub newest: String,
}

/// What the archive holds and what this machine has not pushed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    /// The archive (no password).
    pub archive: String,
    /// `<system_identifier>/<database>`.
    pub identity: String,
    /// Schema version.
    pub schema_version: i32,
    /// `pg_database_size`, bytes.
    pub size_bytes: i64,
    /// Memories held.
    pub memories: i64,
    /// Rows in the default partition (outside the monthly ones; the next migrate
    /// moves them).
    pub default_partition_rows: i64,
    /// Per machine and source.
    pub slices: Vec<Slice>,
    /// Rows of the keyword postings table (one per term after a compaction).
    pub postings_rows: i64,
    /// Postings they hold (live and dead).
    pub postings: i64,
    /// Their bytes.
    pub postings_bytes: i64,
    /// Dead postings among them (their message rewritten or pruned; dropped by
    /// `skills archive compact`).
    pub dead_postings: i64,
    /// This machine's id.
    pub machine: String,
    /// Its last push (`None`: never pushed).
    pub last_push: Option<String>,
    /// Conversations new or changed locally since (what a push would send).
    pub pending_conversations: usize,
    /// Their messages.
    pub pending_messages: u64,
}

/// Reads the status.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read or its schema is not this build's.
pub fn status(
    archive: &mut Archive,
    paths: &StorePaths,
    machine: &Machine,
) -> Result<Status, ArchiveError> {
    super::schema::check(archive)?;
    let identity = archive.identity()?;
    let target = archive.target().clone();
    let err = |e: postgres::Error| target.error("reading its status", &e);
    let c = archive.client();
    let size: i64 = c
        .query_one("SELECT pg_database_size(current_database())", &[])
        .map_err(err)?
        .get(0);
    let memories: i64 = c
        .query_one(&format!("SELECT count(*) FROM {SCHEMA}.memories"), &[])
        .map_err(err)?
        .get(0);
    let default_rows: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM {SCHEMA}.messages_default"),
            &[],
        )
        .map_err(err)?
        .get(0);
    let slices = c
        .query(
            &format!(
                "SELECT m.machine, coalesce(k.label, ''), coalesce(k.user_name, ''), m.source,
                        m.n, to_char(m.newest, 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
                 FROM (SELECT machine, source, count(*) AS n, max(created) AS newest
                       FROM {SCHEMA}.messages GROUP BY machine, source) m
                 LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine
                 ORDER BY k.label, m.machine, m.source"
            ),
            &[],
        )
        .map_err(err)?
        .iter()
        .map(|r| Slice {
            machine: r.get(0),
            label: r.get(1),
            user: r.get(2),
            source: r.get(3),
            messages: r.get(4),
            newest: r.get(5),
        })
        .collect();
    let last_push: Option<String> = c
        .query_opt(
            &format!(
                "SELECT to_char(last_push AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
                 FROM {SCHEMA}.machines WHERE machine = $1"
            ),
            &[&machine.id],
        )
        .map_err(err)?
        .and_then(|r| r.get(0));
    let (postings_rows, postings, postings_bytes, dead_postings) =
        super::compact::size(c).map_err(err)?;
    let (pending_conversations, pending_messages) = super::push::pending(archive, paths, machine)?;
    Ok(Status {
        archive: target.shown().to_owned(),
        identity: identity.key(),
        schema_version: super::schema::VERSION,
        size_bytes: size,
        memories,
        default_partition_rows: default_rows,
        slices,
        postings_rows,
        postings,
        postings_bytes,
        dead_postings,
        machine: machine.id.clone(),
        last_push,
        pending_conversations,
        pending_messages,
    })
}
