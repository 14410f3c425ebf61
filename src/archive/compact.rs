//! Compaction of the keyword leg's postings ([`KEYWORD_POSTINGS`]): a term's rows
//! replaced by one row holding only its live postings.
//!
//! Every push batch appends one postings row per term it holds, and a rewritten or
//! pruned conversation's postings stay behind ("dead": their ids have no
//! [`MESSAGE_TERMS`] row any more). A search reads and scores them, then skips them,
//! so without compaction an archive whose conversations are rewritten by every push
//! (every push of an active conversation rewrites it) grows without bound and its
//! searches slow down. Compacting a term reads all its rows, keeps the postings whose
//! id still has a [`MESSAGE_TERMS`] row, and writes them back as one row in ascending
//! id (the same 10-byte big-endian format, [`POSTING_BYTES`]).
//!
//! - **When**: at the end of every push, for the terms the push wrote postings for
//!   that [`needs_compaction`] (more than one row, and at least a third of the
//!   postings dead or more than [`MAX_ROWS`] rows), and for every term by
//!   `skills archive compact` ([`Scope::All`]).
//! - **Dead postings counted without reading them**: a term's live postings are its
//!   document frequency (the deltas' sum, [`KEYWORD_DELTAS`], kept in the same
//!   transactions as the rows), its postings the rows' bytes over [`POSTING_BYTES`]
//!   (`length()` of an uncompressed `bytea` reads its TOAST pointer only), so picking
//!   the terms never reads a posting.
//! - **Safe beside pushes, searches and other compactions**: see [`compact_batch`].

use std::collections::HashSet;

use super::schema::{KEYWORD_DELTAS, KEYWORD_POSTINGS, MESSAGE_TERMS, POSTING_BYTES};
use super::{Archive, ArchiveError};

/// A term with more rows than this is compacted whatever its dead share: a search
/// fetches each row (its TOAST chunks) on its own.
pub const MAX_ROWS: i64 = 64;

/// A term (with more than one row) is compacted when at least `1 / DEAD_SHARE` of its
/// postings are dead: a search then reads at most 1.5 times its live postings, and a
/// compaction that reads `B` bytes drops at least `B / 3`, so the bytes all
/// compactions read stay within 3 times the bytes pushes wrote.
pub const DEAD_SHARE: i64 = 3;

/// Postings bytes read per transaction (a larger term is one transaction of its own).
const BATCH_BYTES: i64 = 8 << 20;

/// Terms per transaction at most.
const BATCH_TERMS: usize = 1000;

/// Which terms to compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Of these terms, those that [`needs_compaction`] (a push's terms).
    Touched(&'a [String]),
    /// Every term with more than one row or with dead postings (`skills archive
    /// compact`).
    All,
}

/// What a compaction did. Counts are of the terms compacted only, before and after.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CompactReport {
    /// The archive (no password).
    pub archive: String,
    /// Terms whose rows were replaced (or deleted: no live posting left).
    pub terms_compacted: u64,
    /// Their rows before.
    pub rows_before: u64,
    /// Their rows after (at most one per term).
    pub rows_after: u64,
    /// Their postings before (live and dead).
    pub postings_before: u64,
    /// Their postings after (live only, when no push deleted rows meanwhile).
    pub postings_after: u64,
    /// Their postings' bytes before.
    pub bytes_before: u64,
    /// Their postings' bytes after.
    pub bytes_after: u64,
    /// Transactions committed.
    pub transactions: u64,
    /// Seconds the compaction took.
    pub seconds: f64,
}

/// Whether a term with `rows` rows holding `postings` postings, `live` of them live
/// (its document frequency), is worth compacting (see [`DEAD_SHARE`], [`MAX_ROWS`]).
pub fn needs_compaction(rows: i64, postings: i64, live: i64) -> bool {
    let dead = postings - live.max(0);
    rows > MAX_ROWS || (rows > 1 && dead > 0 && dead * DEAD_SHARE >= postings)
}

/// A term picked: its name and its postings' bytes.
struct Picked {
    term: String,
    bytes: i64,
}

/// Compacts the terms of `scope` ([`Scope`]) in transactions of at most
/// [`BATCH_TERMS`] terms or about [`BATCH_BYTES`] bytes of postings each.
///
/// # Errors
/// [`ArchiveError`] when the archive cannot be read or written (the transactions
/// committed before stay: each leaves whole terms).
pub fn compact(archive: &mut Archive, scope: Scope<'_>) -> Result<CompactReport, ArchiveError> {
    let started = std::time::Instant::now();
    let target = archive.target().clone();
    let mut report = CompactReport {
        archive: target.shown().to_owned(),
        ..CompactReport::default()
    };
    let picked = pick(archive.client(), scope)
        .map_err(|e| target.error("choosing the keyword postings to compact", &e))?;
    let mut batch: Vec<String> = Vec::new();
    let mut bytes = 0i64;
    let mut run = |batch: &mut Vec<String>, report: &mut CompactReport| {
        if batch.is_empty() {
            return Ok(());
        }
        compact_batch(archive.client(), batch, report)
            .map_err(|e| target.error("compacting the keyword postings", &e))?;
        batch.clear();
        Ok::<_, ArchiveError>(())
    };
    for p in picked {
        if !batch.is_empty() && (bytes + p.bytes > BATCH_BYTES || batch.len() >= BATCH_TERMS) {
            run(&mut batch, &mut report)?;
            bytes = 0;
        }
        bytes += p.bytes;
        batch.push(p.term);
    }
    run(&mut batch, &mut report)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The terms of `scope` to compact, in term order, from the rows' sizes and the
/// document frequencies (no posting read).
fn pick(client: &mut postgres::Client, scope: Scope<'_>) -> Result<Vec<Picked>, postgres::Error> {
    let per_term = |filter: &str| {
        format!(
            "SELECT p.term, p.n, p.bytes,
                    coalesce((SELECT sum(d.df) FROM {KEYWORD_DELTAS} d WHERE d.term = p.term), 0)::bigint
             FROM (SELECT term, count(*) AS n, sum(length(postings))::bigint AS bytes
                   FROM {KEYWORD_POSTINGS} {filter} GROUP BY term) p
             ORDER BY p.term"
        )
    };
    let rows = match scope {
        Scope::Touched(terms) => {
            client.query(&per_term("WHERE term = ANY($1::text[])"), &[&terms])?
        }
        Scope::All => client.query(&per_term(""), &[])?,
    };
    let postings_bytes = i64::try_from(POSTING_BYTES).unwrap_or(i64::MAX);
    Ok(rows
        .iter()
        .filter_map(|r| {
            let (term, n, bytes, live): (String, i64, i64, i64) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            let postings = bytes / postings_bytes;
            let keep = match scope {
                Scope::Touched(_) => needs_compaction(n, postings, live),
                Scope::All => n > 1 || postings > live,
            };
            keep.then_some(Picked { term, bytes })
        })
        .collect())
}

/// Compacts `terms` in one transaction, adding what it did to `report`.
///
/// Isolation: `READ COMMITTED` (the default), with the rows read `FOR UPDATE` and
/// deleted by the `ctid` each was read at, so the transaction replaces exactly the
/// rows it read:
/// - a push committing a new row for one of the terms meanwhile is not in the
///   statement's snapshot, so it is neither read nor deleted: it stays beside the
///   merged row (no posting lost);
/// - a concurrent compaction of the same term: the second one's `FOR UPDATE` waits for
///   the first to commit, then skips the rows the first deleted (`READ COMMITTED`
///   re-checks a locked row and drops a deleted one) and does not see the first's
///   merged row (not in its snapshot), so each posting ends in exactly one row.
///   (`REPEATABLE READ` would fail the second with a serialization error instead.)
///   The rows are locked in term and `ctid` order, so two compactions do not
///   deadlock on each other's terms;
/// - live ids are read by a later statement (a newer snapshot) than the postings: a
///   posting's `message_terms` row was committed with it, so every posting read whose
///   message still exists is kept; a message deleted after that read keeps a dead
///   posting, which a search skips and the next compaction drops;
/// - a search reads a term's rows in one statement, so it sees either the rows before
///   or the merged row after this commit, never both or neither;
/// - the locked rows cannot move meanwhile (a plain `VACUUM` moves no live row, a
///   `VACUUM FULL` waits for the lock), so their `ctid`s stay theirs until the commit.
fn compact_batch(
    client: &mut postgres::Client,
    terms: &[String],
    into: &mut CompactReport,
) -> Result<(), postgres::Error> {
    // Counted apart and added once committed.
    let mut report = CompactReport::default();
    let mut tx = client.transaction()?;
    let rows = tx.query(
        &format!(
            "SELECT ctid::text, term, postings FROM {KEYWORD_POSTINGS}
             WHERE term = ANY($1::text[]) ORDER BY term, ctid FOR UPDATE"
        ),
        &[&terms],
    )?;
    let mut ids: Vec<i64> = Vec::new();
    for r in &rows {
        let p: &[u8] = r.get(2);
        ids.extend(p.chunks_exact(POSTING_BYTES).map(|p| i64::from(id_of(p))));
    }
    ids.sort_unstable();
    ids.dedup();
    let live: HashSet<u32> = tx
        .query(
            &format!("SELECT id FROM {MESSAGE_TERMS} WHERE id = ANY($1::bigint[])"),
            &[&ids],
        )?
        .iter()
        .filter_map(|r| u32::try_from(r.get::<_, i64>(0)).ok())
        .collect();
    let ctids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let mut merged_terms: Vec<String> = Vec::new();
    let mut merged: Vec<Vec<u8>> = Vec::new();
    // Rows come in term order: one run per term.
    let mut i = 0;
    while i < rows.len() {
        let term: &str = rows[i].get(1);
        let mut postings: Vec<&[u8]> = Vec::new();
        let mut j = i;
        while j < rows.len() && rows[j].get::<_, &str>(1) == term {
            let p: &[u8] = rows[j].get(2);
            report.bytes_before += p.len() as u64;
            report.postings_before += (p.len() / POSTING_BYTES) as u64;
            postings.extend(
                p.chunks_exact(POSTING_BYTES)
                    .filter(|p| live.contains(&id_of(p))),
            );
            j += 1;
        }
        report.terms_compacted += 1;
        report.rows_before += (j - i) as u64;
        // Ascending id, each once (an id is in one row only; kept once whatever).
        postings.sort_by_key(|p| id_of(p));
        postings.dedup_by_key(|p| id_of(p));
        if !postings.is_empty() {
            report.rows_after += 1;
            report.postings_after += postings.len() as u64;
            report.bytes_after += (postings.len() * POSTING_BYTES) as u64;
            merged_terms.push(term.to_owned());
            merged.push(postings.concat());
        }
        i = j;
    }
    let deleted = tx.execute(
        &format!("DELETE FROM {KEYWORD_POSTINGS} WHERE ctid = ANY($1::text[]::tid[])"),
        &[&ctids],
    )?;
    if deleted != rows.len() as u64 {
        // Cannot happen with the rows locked; rolled back (dropped) if it does, the
        // terms left as they were.
        return Ok(());
    }
    tx.execute(
        &format!(
            "INSERT INTO {KEYWORD_POSTINGS} (term, postings)
             SELECT * FROM unnest($1::text[], $2::bytea[])"
        ),
        &[&merged_terms, &merged],
    )?;
    tx.commit()?;
    into.terms_compacted += report.terms_compacted;
    into.rows_before += report.rows_before;
    into.rows_after += report.rows_after;
    into.postings_before += report.postings_before;
    into.postings_after += report.postings_after;
    into.bytes_before += report.bytes_before;
    into.bytes_after += report.bytes_after;
    into.transactions += 1;
    Ok(())
}

/// The id of one packed posting (its first 4 bytes, big-endian).
fn id_of(p: &[u8]) -> u32 {
    u32::from_be_bytes([p[0], p[1], p[2], p[3]])
}

/// The postings table's size: (rows, postings, bytes, dead postings), dead counted as
/// postings minus the summed document frequencies (see the module docs).
///
/// # Errors
/// [`postgres::Error`] when the archive cannot be read.
pub fn size(client: &mut postgres::Client) -> Result<(i64, i64, i64, i64), postgres::Error> {
    let r = client.query_one(
        &format!(
            "SELECT count(*), coalesce(sum(length(postings)), 0)::bigint,
                    (SELECT coalesce(sum(df), 0)::bigint FROM {KEYWORD_DELTAS})
             FROM {KEYWORD_POSTINGS}"
        ),
        &[],
    )?;
    let (rows, bytes, live): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
    let postings = bytes / i64::try_from(POSTING_BYTES).unwrap_or(i64::MAX);
    Ok((rows, postings, bytes, (postings - live).max(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_is_compacted_past_a_third_dead_or_many_rows() {
        assert!(!needs_compaction(1, 10, 0), "one row: nothing to merge");
        assert!(!needs_compaction(2, 10, 10), "nothing dead");
        assert!(!needs_compaction(2, 10, 7), "dead 3 of 10");
        assert!(needs_compaction(2, 9, 6), "dead 3 of 9");
        assert!(needs_compaction(2, 10, 0));
        assert!(needs_compaction(MAX_ROWS + 1, 100, 100), "many rows");
    }
}
