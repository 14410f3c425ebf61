//! search-conversations answered from the archive: the same rows in the same order
//! as DuckDB's `content ILIKE '%' || term || '%' ORDER BY created DESC, source,
//! conversation_id, message_id` over the same rows.
//!
//! How the traps are avoided (each pinned by `tests/archive.rs`'s differential test):
//! - folding: `content_folded` holds the text lowercased by
//!   [`crate::search::scan::fold`] (DuckDB's per-code-point simple mapping, not
//!   PostgreSQL's collation-dependent `lower()`), and the term is folded the same way
//!   here;
//! - escapes: `LIKE … ESCAPE ''` — PostgreSQL's default escape `\` does not exist in
//!   DuckDB, where `\` is a plain character;
//! - order: `COLLATE "C"` (bytes, as DuckDB compares strings) and the same
//!   tie-break; the sort columns are all `NOT NULL` in the archive, so where NULLs
//!   sort does not arise;
//! - NUL: stored as U+FFFF (see [`super::schema`]); a term holding NUL or U+FFFF
//!   matches a superset on the server, and rows whose exact bytes were kept
//!   (`content_raw`) are checked again here with the local matcher.
//!
//! The trigram GIN index on `content_folded` serves terms with three or more
//! characters of literal text; a shorter one scans, newest partition first, stopped by
//! `statement_timeout` ([`DEADLINE`]) with a clear error.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::schema::SCHEMA;
use super::{ArchiveError, Target};
use crate::search::scan::{fold, Pattern};

/// Longest a search may run on the archive before it stops with an error.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Connections to one archive, kept between calls (a connection costs a TCP and SCRAM
/// handshake, milliseconds; a call then costs its query only).
pub struct Pool {
    target: Target,
    idle: Mutex<Vec<postgres::Client>>,
}

impl Pool {
    /// A pool for `target`; connects on first use.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The archive's address.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Runs `f` with a connection (an idle one, else a new one), returning it to the
    /// pool afterwards unless it broke.
    ///
    /// # Errors
    /// The connection's error, or `f`'s.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut postgres::Client) -> Result<T, ArchiveError>,
    ) -> Result<T, ArchiveError> {
        let taken = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let mut client = match taken {
            Some(c) if !c.is_closed() => c,
            _ => self.target.connect()?,
        };
        let out = f(&mut client);
        if !client.is_closed() {
            let mut idle = self
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if idle.len() < 4 {
                idle.push(client);
            }
        }
        out
    }
}

/// One search of the archive.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// The term as typed (`None`: the questions mode, recent user questions).
    pub term: Option<&'a str>,
    /// `role = …`; with `user`, injected harness text is left out.
    pub role: Option<&'a str>,
    /// A case-insensitive literal part of the project path.
    pub project: Option<&'a str>,
    /// Only rows of this machine (its id or its host label).
    pub machine: Option<&'a str>,
    /// Only rows of this user.
    pub user: Option<&'a str>,
    /// Rows wanted.
    pub limit: i64,
}

/// `\`, `%` and `_` escaped with `\` (PostgreSQL's default `LIKE` escape).
fn like_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The SQL of one search and its parameters, as [`search`] sends them (benchmarks
/// `EXPLAIN` the same statement).
pub struct Statement {
    /// `SELECT …` with `$n` placeholders.
    pub sql: String,
    /// The parameters, in `$n` order.
    pub params: Vec<Box<dyn postgres::types::ToSql + Sync>>,
    /// A term holding NUL or U+FFFF matches a superset on the server: the rows are
    /// checked again with this local matcher (and the statement has no `LIMIT`).
    recheck: Option<Pattern>,
}

impl Statement {
    /// The parameters as `query_raw` and friends take them.
    pub fn refs(&self) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
        self.params.iter().map(|b| b.as_ref() as _).collect()
    }
}

/// The statement that answers `q`: columns created, source, role, conversation_id,
/// message_id, preview (200 characters), project, content_raw, machine label, user,
/// machine id.
pub fn statement(q: &Query<'_>) -> Statement {
    let mut sql = format!(
        "SELECT m.created, m.source, m.role, m.conversation_id, m.message_id, \
         left(m.content, 200), m.project, m.content_raw, \
         coalesce(k.label, m.machine), m.user_name, m.machine \
         FROM {SCHEMA}.messages m LEFT JOIN {SCHEMA}.machines k ON k.machine = m.machine \
         WHERE "
    );
    let mut params: Vec<Box<dyn postgres::types::ToSql + Sync>> = Vec::new();
    let mut param = |v: Box<dyn postgres::types::ToSql + Sync>| {
        params.push(v);
        format!("${}", params.len())
    };
    let mut recheck = None;
    match q.term {
        None => sql.push_str("m.role = 'user' AND NOT m.is_injected AND m.has_question = 1"),
        Some(term) => {
            let mut f = Vec::with_capacity(term.len());
            fold(term, &mut f);
            let folded = String::from_utf8(f).unwrap_or_default();
            if folded.contains('\0') || folded.contains('\u{FFFF}') {
                recheck = Some(Pattern::new(term));
            }
            let pattern = format!("%{}%", super::push::storable(&folded));
            let p = param(Box::new(pattern));
            sql.push_str(&format!("m.content_folded LIKE {p} ESCAPE ''"));
            if let Some(role) = q.role {
                let p = param(Box::new(role.to_owned()));
                sql.push_str(&format!(" AND m.role = {p}"));
                if role == "user" {
                    sql.push_str(" AND NOT m.is_injected");
                }
            }
        }
    }
    if let Some(project) = q.project {
        let mut f = Vec::new();
        fold(project, &mut f);
        let folded = String::from_utf8(f).unwrap_or_default();
        let p = param(Box::new(format!(
            "%{}%",
            like_literal(&super::push::storable(&folded))
        )));
        sql.push_str(&format!(" AND m.project_folded LIKE {p}"));
    }
    if let Some(machine) = q.machine {
        let p = param(Box::new(machine.to_owned()));
        sql.push_str(&format!(" AND (m.machine = {p} OR k.label = {p})"));
    }
    if let Some(user) = q.user {
        let p = param(Box::new(user.to_owned()));
        sql.push_str(&format!(" AND m.user_name = {p}"));
    }
    // `created` is NOT NULL, so DuckDB's NULLS LAST needs no clause here; and with
    // none, the order is the backward scan of each partition's `created` index that
    // the planner merges and stops after `LIMIT` rows (newest first: a common term
    // reads a few pages; `NULLS LAST` made it sort every match, 1.9 s for `the` at 1M).
    sql.push_str(" ORDER BY m.created DESC, m.source, m.conversation_id, m.message_id");
    if recheck.is_none() {
        let p = param(Box::new(q.limit));
        sql.push_str(&format!(" LIMIT {p}"));
    }
    Statement {
        sql,
        params,
        recheck,
    }
}

/// The rows of `q`, shaped as search-conversations' rows (without `cites`, which the
/// engine adds as for every row) plus `machine` (the host label), `machine_id` (the
/// machine's stable id: labels are not unique) and `user`.
///
/// # Errors
/// [`ArchiveError`]: the archive is unreachable, its schema is not this build's, or
/// the search passed [`DEADLINE`].
pub fn search(pool: &Pool, q: &Query<'_>) -> Result<Vec<Value>, ArchiveError> {
    let target = pool.target().clone();
    pool.with(|client| {
        let st = statement(q);
        let err = |e: postgres::Error| {
            if e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED) {
                ArchiveError::new(format!(
                    "archive {}: search-conversations stopped after {} s (a term of fewer \
                     than three letters, or only wildcards, cannot use the trigram index \
                     and scans every message; give a longer term)",
                    target.shown(),
                    DEADLINE.as_secs()
                ))
            } else {
                target.error("search-conversations", &e)
            }
        };
        let mut tx = client.transaction().map_err(err)?;
        tx.batch_execute(&format!(
            "SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = {}",
            DEADLINE.as_millis()
        ))
        .map_err(err)?;
        let limit = usize::try_from(q.limit).unwrap_or(0);
        let mut out = Vec::new();
        let mut rows = tx.query_raw(&st.sql, st.refs()).map_err(err)?;
        use postgres::fallible_iterator::FallibleIterator;
        while let Some(r) = rows.next().map_err(err)? {
            let raw: Option<Vec<u8>> = r.get(7);
            let raw = raw.map(|b| String::from_utf8_lossy(&b).into_owned());
            if let (Some(p), Some(text)) = (&st.recheck, &raw) {
                let mut f = Vec::with_capacity(text.len());
                fold(text, &mut f);
                if !p.matches(&f) {
                    continue;
                }
            }
            let created: chrono::NaiveDateTime = r.get(0);
            let preview: String = match &raw {
                Some(text) => text.chars().take(200).collect(),
                None => r.get(5),
            };
            out.push(json!({
                "date": created.format("%Y-%m-%d").to_string(),
                "created": created.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
                "source": r.get::<_, String>(1),
                "role": r.get::<_, String>(2),
                "conversation_id": r.get::<_, String>(3),
                "message_id": r.get::<_, String>(4),
                "project": r.get::<_, Option<String>>(6),
                "preview": preview,
                "machine": r.get::<_, String>(8),
                "machine_id": r.get::<_, String>(10),
                "user": r.get::<_, String>(9),
            }));
            if out.len() >= limit {
                break;
            }
        }
        drop(rows);
        tx.commit().map_err(err)?;
        Ok(out)
    })
}

/// The archive a context reads, shared by its calls.
pub type Shared = Arc<Pool>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_literals_escape_their_wildcards() {
        assert_eq!(like_literal(r"a\b%c_d"), r"a\\b\%c\_d");
    }
}
