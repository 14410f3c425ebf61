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
//! `statement_timeout` ([`DEADLINE`]) with a clear error. Before either, a term with
//! whole words (a literal non-word character on each side) is checked against the
//! messages' keyword terms: when no message holds all their stems, no message holds
//! the term, and the search answers no row without reading a partition
//! ([`crate::search::words::whole_words_of_pattern`]).
//!
//! **Newest first, window by window.** `messages` is partitioned by month of
//! `created`, and the order starts with `created DESC`, so rows of a later time range
//! all come before rows of an earlier one. The statement is run over time windows
//! ([`windows`]), newest first — from the newest month holding rows
//! ([`newest_month`]) to the end of time, then 1, 1, 2, 4, … months further back,
//! then everything before. The newest window is one statement (a common term ends
//! there), the others together a second one that PostgreSQL runs window by window
//! until the rows still missing are found ([`Statement::sql`]). One statement over every partition instead had to
//! start every partition's part of the plan: a term whose trigram bitmap matches a few
//! thousand rows (`serde%json` at 1M) fetched, rechecked and sorted all of them
//! (docs/performance.md, "Search on the archive at 1M messages"). The windows cover
//! all time without gaps or overlaps, so the rows and their order are those of the
//! single statement; the window only prunes partitions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{Datelike as _, NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::{json, Value};

use super::schema::{FIRST_MONTH, MESSAGE_TERMS, SCHEMA};
use super::{ArchiveError, Target};
use crate::search::scan::{fold, Pattern};
use crate::search::words::whole_words_of_pattern;

/// Longest a search may run on the archive before it stops with an error.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Connections to one archive, kept between calls (a connection costs a TCP and SCRAM
/// handshake, milliseconds; a call then costs its query only).
pub struct Pool {
    target: Target,
    idle: Mutex<Vec<Conn>>,
    /// [`newest_month`]'s last answer and when it was read (kept [`NEWEST_TTL`]).
    newest: Mutex<Option<(std::time::Instant, (i32, u32))>>,
    /// Every conversation in the archive has its keyword terms (read once true: a
    /// push since schema version 5 always sends them; see [`Pool::no_row_holds`]).
    terms_complete: std::sync::atomic::AtomicBool,
}

/// A pooled connection and the statements prepared on it (by SQL text).
struct Conn {
    client: postgres::Client,
    prepared: HashMap<String, postgres::Statement>,
}

/// Most statements a pooled connection keeps prepared; past it the cache is emptied
/// (the SQL of a call depends on its filters and number of query terms, so the set is
/// small, but not fixed).
const PREPARED_MAX: usize = 256;

/// A pooled connection lent by [`Pool::with_prepared`]: its client, and statements
/// prepared once per connection and kept with it ([`Prepared::statement`]).
pub struct Prepared<'a> {
    /// The connection.
    pub client: &'a mut postgres::Client,
    cache: &'a mut HashMap<String, postgres::Statement>,
}

impl Prepared<'_> {
    /// `sql` prepared on this connection, once: a named server-side statement, parsed
    /// and (for [`GENERIC`] transactions) planned once, then reused by every call the
    /// connection serves.
    ///
    /// # Errors
    /// PostgreSQL's (syntax, an unknown table: the schema is not this build's).
    pub fn statement(&mut self, sql: &str) -> Result<postgres::Statement, postgres::Error> {
        if let Some(st) = self.cache.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql)?;
        if self.cache.len() >= PREPARED_MAX {
            self.cache.clear();
        }
        self.cache.insert(sql.to_owned(), st.clone());
        Ok(st)
    }
}

/// Settings of a read transaction whose prepared statements run with one generic plan
/// (`plan_cache_mode = force_generic_plan`): planned once per connection, with
/// `messages`' monthly partitions pruned when the statement runs (by the `created`
/// it is given) rather than at each planning — planning over every partition cost
/// 49 ms a statement at 100k messages (docs/performance.md, "Hybrid on the team
/// archive, faster").
pub const GENERIC: &str =
    "SET TRANSACTION READ ONLY; SET LOCAL plan_cache_mode = force_generic_plan";

/// Idle connections a pool keeps (a call's legs run side by side, each on its own).
const IDLE_MAX: usize = 4;

/// How long a pool reuses [`newest_month`]'s answer: only a hint of where the windows
/// start, so a stale one costs time, never rows.
const NEWEST_TTL: Duration = Duration::from_secs(60);

impl Pool {
    /// A pool for `target`; connects on first use.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            idle: Mutex::new(Vec::new()),
            newest: Mutex::new(None),
            terms_complete: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether no message can hold `term` (as typed; a `LIKE` pattern once folded):
    /// its whole words' terms ([`whole_words_of_pattern`]) are in no message's terms
    /// row together. Then its `ILIKE` needs no scan: a long question matched literally
    /// (semantic-search's literal leg) otherwise reads the trigram index of every
    /// monthly partition to find nothing (~340 ms at 1M messages). `false` when the
    /// term has no whole word, or some conversation was pushed before the archive kept
    /// terms (schema version 5) and has none yet.
    fn no_row_holds(
        &self,
        client: &mut impl postgres::GenericClient,
        term: &str,
    ) -> Result<bool, postgres::Error> {
        use std::sync::atomic::Ordering;
        let mut f = Vec::with_capacity(term.len());
        fold(term, &mut f);
        let required = whole_words_of_pattern(&String::from_utf8_lossy(&f));
        if required.is_empty() {
            return Ok(false);
        }
        if !self.terms_complete.load(Ordering::Relaxed) {
            let complete: bool = client
                .query_one(
                    &format!(
                        "SELECT NOT EXISTS (SELECT 1 FROM {SCHEMA}.conversations \
                         WHERE NOT keyword_terms)"
                    ),
                    &[],
                )?
                .get(0);
            if !complete {
                return Ok(false);
            }
            self.terms_complete.store(true, Ordering::Relaxed);
        }
        // The terms' GIN index intersects their rows; one is enough to say "maybe".
        let none: bool = client
            .query_one(
                &format!(
                    "SELECT NOT EXISTS (SELECT 1 FROM {MESSAGE_TERMS} \
                     WHERE terms @> $1::text[])"
                ),
                &[&required],
            )?
            .get(0);
        Ok(none)
    }

    /// [`newest_month`], read again when the last answer is older than [`NEWEST_TTL`].
    fn newest_month(
        &self,
        client: &mut impl postgres::GenericClient,
    ) -> Result<(i32, u32), postgres::Error> {
        let kept = *self
            .newest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, month)) = kept.filter(|(at, _)| at.elapsed() < NEWEST_TTL) {
            return Ok(month);
        }
        let month = newest_month(client)?;
        *self
            .newest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some((std::time::Instant::now(), month));
        Ok(month)
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
        self.with_prepared(|p| f(p.client))
    }

    /// As [`Pool::with`], lending the connection with its prepared statements.
    ///
    /// # Errors
    /// The connection's error, or `f`'s.
    pub fn with_prepared<T>(
        &self,
        f: impl FnOnce(&mut Prepared<'_>) -> Result<T, ArchiveError>,
    ) -> Result<T, ArchiveError> {
        let taken = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let mut conn = match taken {
            Some(c) if !c.client.is_closed() => c,
            _ => Conn {
                client: custom_plans(&self.target)?,
                prepared: HashMap::new(),
            },
        };
        let out = f(&mut Prepared {
            client: &mut conn.client,
            cache: &mut conn.prepared,
        });
        if !conn.client.is_closed() {
            let mut idle = self
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if idle.len() < IDLE_MAX {
                idle.push(conn);
            }
        }
        out
    }
}

/// A new connection to `target` whose prepared statements are planned with their
/// values every time (`plan_cache_mode = force_custom_plan`; [`GENERIC`] transactions
/// still ask for one generic plan). With PostgreSQL's default, a statement run five
/// times may switch to a generic plan: after pushes that rewrote conversations, the
/// keyword leg's statements then took 4.5–7.1 s instead of 70–140 ms on a 100,000-message
/// archive (`cargo bench --bench archive_compact`, docs/performance.md "Compacting the
/// keyword postings"); planning them with values costs well under a millisecond (no
/// partitions).
fn custom_plans(target: &Target) -> Result<postgres::Client, ArchiveError> {
    let mut client = target.connect()?;
    client
        .batch_execute("SET plan_cache_mode = force_custom_plan")
        .map_err(|e| target.error("setting up the connection", &e))?;
    Ok(client)
}

/// One search of the archive./// One search of the archive.
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

/// The `LIKE` pattern (default escape `\`) on `messages.project_folded` of a
/// `project` filter: the fragment folded as push folds the project, stored as push
/// stores it, its `\`, `%` and `_` escaped, between `%`s: a case-insensitive literal
/// part of the project path, as the local [`crate::stores::conversations::project::Project`].
pub fn project_pattern(project: &str) -> String {
    let mut f = Vec::new();
    fold(project, &mut f);
    let folded = String::from_utf8(f).unwrap_or_default();
    format!("%{}%", like_literal(&super::push::storable(&folded)))
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
/// `EXPLAIN` the same statements).
pub struct Statement {
    /// `SELECT … WHERE …` with `$n` placeholders, without the window, order and limit
    /// ([`Statement::sql`] adds them).
    pub select: String,
    /// The parameters, in `$n` order; the rows wanted follow ([`Statement::refs`]).
    pub params: Vec<Box<dyn postgres::types::ToSql + Sync>>,
    /// A term holding NUL or U+FFFF matches a superset on the server: the rows are
    /// checked again with this local matcher (and the statement's `LIMIT` is
    /// `NULL`: all rows).
    recheck: Option<Pattern>,
}

impl Statement {
    /// The statement over `windows` (newest first, as [`windows`] gives them): for one,
    /// the rows of that window sorted and limited; for several, each window's so, one
    /// after the other (`UNION ALL` without an outer `ORDER BY`: PostgreSQL runs the
    /// branches of an `Append` in order and stops once the outer `LIMIT` is reached,
    /// parallel plans being off in the search's transaction).
    pub fn sql(&self, windows: &[(NaiveDateTime, NaiveDateTime)]) -> String {
        let limit = format!("${}", self.params.len() + 1);
        let branch = |(from, to): &(NaiveDateTime, NaiveDateTime)| {
            format!(
                "{} AND m.created >= {} AND m.created < {} \
                 ORDER BY m.created DESC, m.source, m.conversation_id, m.message_id \
                 LIMIT {limit}",
                self.select,
                literal(*from),
                literal(*to)
            )
        };
        match windows {
            [one] => branch(one),
            many => format!(
                "SELECT * FROM ({}) w LIMIT {limit}",
                many.iter()
                    .map(|w| format!("({})", branch(w)))
                    .collect::<Vec<_>>()
                    .join(" UNION ALL ")
            ),
        }
    }

    /// The parameters as `query_raw` and friends take them, with `limit` rows wanted
    /// (`None`: all).
    pub fn refs<'a>(
        &'a self,
        limit: &'a Option<i64>,
    ) -> Vec<&'a (dyn postgres::types::ToSql + Sync)> {
        let mut out: Vec<&(dyn postgres::types::ToSql + Sync)> =
            self.params.iter().map(|b| b.as_ref() as _).collect();
        out.push(limit);
        out
    }
}

/// A window bound as SQL: `'-infinity'` and `'infinity'` at the ends of time.
fn literal(t: NaiveDateTime) -> String {
    if t <= time_min() {
        "'-infinity'::timestamp".into()
    } else if t >= time_max() {
        "'infinity'::timestamp".into()
    } else {
        format!("'{}'::timestamp", t.format("%Y-%m-%d %H:%M:%S"))
    }
}

/// Before any time the archive can hold (PostgreSQL's `timestamp` starts in 4713 BC).
fn time_min() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(-4000, 1, 1)
        .unwrap_or(NaiveDate::MIN)
        .and_time(NaiveTime::MIN)
}

/// After any time the archive can hold (PostgreSQL's `timestamp` ends in 294276 AD).
fn time_max() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(200_000, 1, 1)
        .unwrap_or(NaiveDate::MAX)
        .and_time(NaiveTime::MIN)
}

/// The first day of the month `n` months before `(year, month)` (`n` may be 0).
fn months_back((year, month): (i32, u32), n: u32) -> (i32, u32) {
    let total = i64::from(year) * 12 + i64::from(month) - 1 - i64::from(n);
    (
        i32::try_from(total.div_euclid(12)).unwrap_or(i32::MIN),
        u32::try_from(total.rem_euclid(12)).unwrap_or(0) + 1,
    )
}

fn month_start((year, month): (i32, u32)) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(year, month, 1)
        .unwrap_or(NaiveDate::MIN)
        .and_time(NaiveTime::MIN)
}

/// The time windows a search reads, newest first, each `[from, to)`: from the month
/// `newest` (its first day) to the end of time, then 1, 1, 2, 4, … months further
/// back down to [`FIRST_MONTH`] (the oldest monthly partition), then everything before
/// it. Together they cover all time once, so the rows of the windows in this order,
/// each sorted, are all rows sorted by `created DESC`.
pub fn windows(newest: (i32, u32)) -> Vec<(NaiveDateTime, NaiveDateTime)> {
    let mut out = Vec::new();
    let mut upper = if newest > FIRST_MONTH {
        newest
    } else {
        FIRST_MONTH
    };
    out.push((month_start(upper), time_max()));
    let mut size = 1;
    while upper > FIRST_MONTH {
        let mut lower = months_back(upper, size);
        if lower < FIRST_MONTH {
            lower = FIRST_MONTH;
        }
        out.push((month_start(lower), month_start(upper)));
        upper = lower;
        if out.len() > 2 {
            size = size.saturating_mul(2);
        }
    }
    out.push((time_min(), month_start(upper)));
    out
}

/// The newest month whose partition holds rows by PostgreSQL's statistics (rows
/// inserted, `n_live_tup`, or counted by the last `ANALYZE`, `reltuples`), else the
/// current one: where [`windows`] start. Only a hint: rows newer than it are in the
/// first window whatever the statistics say (stale ones only cost time).
///
/// # Errors
/// PostgreSQL's.
pub fn newest_month(
    client: &mut impl postgres::GenericClient,
) -> Result<(i32, u32), postgres::Error> {
    let row = client.query_one(
        &format!(
            "SELECT max(substring(pg_get_expr(c.relpartbound, c.oid)
                              FROM 'FROM \\(''([^'']*)''\\)')::timestamp)
             FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
             WHERE i.inhparent = '{SCHEMA}.messages'::regclass
               AND (c.reltuples > 0 OR coalesce(s.n_live_tup, 0) > 0)"
        ),
        &[],
    )?;
    let newest: Option<NaiveDateTime> = row.get(0);
    let at = newest.map_or_else(|| chrono::Utc::now().date_naive(), |t| t.date());
    Ok((at.year(), at.month()))
}

/// The statement that answers `q` within one time window: columns created, source,
/// role, conversation_id, message_id, preview (200 characters), project, content_raw,
/// machine label, user, machine id.
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
        let p = param(Box::new(project_pattern(project)));
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
    Statement {
        select: sql,
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
            "SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = {}; \
             SET LOCAL max_parallel_workers_per_gather = 0",
            DEADLINE.as_millis()
        ))
        .map_err(err)?;
        let limit = usize::try_from(q.limit).unwrap_or(0);
        let mut out = Vec::new();
        if limit == 0 {
            tx.commit().map_err(err)?;
            return Ok(out);
        }
        if let Some(term) = q.term {
            if pool.no_row_holds(&mut tx, term).map_err(err)? {
                tx.commit().map_err(err)?;
                return Ok(out);
            }
        }
        let newest = pool.newest_month(&mut tx).map_err(err)?;
        let windows = windows(newest);
        use postgres::fallible_iterator::FallibleIterator;
        // Two statements at most: the newest window (a common term ends there), then
        // all the others at once (a round trip each costs more than planning them).
        for part in [&windows[..1], &windows[1..]] {
            let missing = i64::try_from(limit - out.len()).unwrap_or(i64::MAX);
            let want = st.recheck.is_none().then_some(missing);
            let mut rows = tx.query_raw(&st.sql(part), st.refs(&want)).map_err(err)?;
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
            if out.len() >= limit {
                break;
            }
        }
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
    fn windows_cover_all_time_once_newest_first() {
        for newest in [(2025, 12), (2020, 1), (2019, 6), (2031, 3), (2024, 1)] {
            let w = windows(newest);
            assert_eq!(w[0].1, time_max(), "{newest:?}");
            assert_eq!(w.last().unwrap().0, time_min(), "{newest:?}");
            for pair in w.windows(2) {
                assert_eq!(pair[0].0, pair[1].1, "{newest:?}: {w:?}");
            }
            for (from, to) in &w {
                assert!(from < to, "{newest:?}: {w:?}");
            }
            assert!(w.len() <= 12, "{newest:?}: {w:?}");
        }
        let w = windows((2025, 12));
        let day = |y, m| month_start((y, m));
        assert_eq!(w[0].0, day(2025, 12));
        assert_eq!(w[1], (day(2025, 11), day(2025, 12)));
        assert_eq!(w[2], (day(2025, 10), day(2025, 11)));
        assert_eq!(w[3], (day(2025, 8), day(2025, 10)));
        assert_eq!(w[4], (day(2025, 4), day(2025, 8)));
        assert_eq!(months_back((2020, 1), 1), (2019, 12));
        assert_eq!(months_back((2020, 3), 14), (2019, 1));
    }

    #[test]
    fn like_literals_escape_their_wildcards() {
        assert_eq!(like_literal(r"a\b%c_d"), r"a\\b\%c\_d");
    }
}
