//! The FTS5 legs (`bm25`, its context-aware form for hybrid, `exact`, `fuzzy`): the
//! query folded as the store's tokenizer folds it, one [`TermQuery`] per leg, scored
//! from the store's in-memory postings or by SQLite ([`Scorer`]), filtered and cut to
//! the leg's top n.

use std::cmp::Ordering;

use rusqlite::Connection;
use serde_json::{json, Map, Value};

use super::filter::Filter;
use super::top_n::TopN;
use super::{is_stop_word, Around, Ranked, Scorer, MAX_EXPANSIONS, STOP_CHECK_ROWS};
use crate::search::bm25::Matches;
use crate::search::fuzzy;
use crate::stores::memories::fts::Table;
use crate::stores::memories::SearchIndex;

/// The `fts5vocab` table kinds [`scratch`] reads back.
#[derive(Clone, Copy)]
enum Vocab {
    /// One row per distinct term (`term`, …).
    Row,
    /// One row per token instance (`term`, `doc`, `col`, `offset`).
    Instance,
}

/// A private in-memory database (never the store) holding `texts` (row `i` of an FTS5
/// table `q` is `texts[i]`) tokenized as `table`'s tokenizer does, and `v`, an
/// `fts5vocab` table of kind `vocab` over `q`: what [`fold_tokens`] and [`stems_of`]
/// read their tokens from.
fn scratch(table: Table, vocab: Vocab, texts: &[&str]) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_in_memory()?;
    let kind = match vocab {
        Vocab::Row => "row",
        Vocab::Instance => "instance",
    };
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE q USING fts5(x, tokenize = '{}');
         CREATE VIRTUAL TABLE v USING fts5vocab(q, '{kind}');",
        table.tokenizer()
    ))?;
    for (i, text) in texts.iter().enumerate() {
        conn.execute(
            "INSERT INTO q(rowid, x) VALUES (?1, ?2)",
            rusqlite::params![i64::try_from(i).unwrap_or(i64::MAX), text],
        )?;
    }
    Ok(conn)
}

/// Each of `words` (folded tokens) as [`Table::Stemmed`]'s tokenizer stems it, in
/// order: one row per word, read back through an `instance` table.
pub(super) fn stems_of(words: &[String]) -> Result<Vec<String>, rusqlite::Error> {
    let texts: Vec<&str> = words.iter().map(String::as_str).collect();
    let conn = scratch(Table::Stemmed, Vocab::Instance, &texts)?;
    let mut stems = words.to_vec();
    let mut stmt = conn.prepare("SELECT doc, term FROM v")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (doc, term) = row?;
        if let Some(s) = usize::try_from(doc).ok().and_then(|d| stems.get_mut(d)) {
            *s = term;
        }
    }
    Ok(stems)
}

/// The query's tokens exactly as the store's FTS5 tokenizer (`unicode61
/// remove_diacritics 2`) cuts and folds them: sorted, unique. Uses a private
/// in-memory database, never the store.
pub(super) fn fold_tokens(text: &str) -> Result<Vec<String>, rusqlite::Error> {
    let conn = scratch(Table::Plain, Vocab::Row, &[text])?;
    let mut stmt = conn.prepare("SELECT term FROM v ORDER BY term")?;
    let terms = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(terms)
}

/// `tokens` without [`STOP_WORDS`]; all of them when every one is a stop word (so a
/// query such as "The Who" is still searched).
pub(super) fn content_tokens(tokens: &[String]) -> Vec<String> {
    let kept: Vec<String> = tokens
        .iter()
        .filter(|t| !is_stop_word(t))
        .cloned()
        .collect();
    if kept.is_empty() {
        tokens.to_vec()
    } else {
        kept
    }
}

fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// An FTS5 query in the engine's one shape: groups of folded terms, each quoted (a
/// one-term phrase), OR inside a group, the groups joined by AND — or by OR for the
/// fallback. One value gives both the `MATCH` text SQLite runs and the groups
/// in-memory index scores, so both scorers see the same phrases in the same order.
struct TermQuery {
    groups: Vec<Vec<String>>,
    /// Write each group in parentheses (fuzzy groups: `("a" OR "b")`).
    parenthesized: bool,
    /// What the `MATCH` text writes for each group when it differs from the group's
    /// terms: the stemmed table's tokenizer stems query words again, and Porter is not
    /// idempotent ("decision" → "decis" → "deci"), so SQLite gets the word as written.
    written: Option<Vec<Vec<String>>>,
}

impl TermQuery {
    /// One group per token: `"a" AND "b"`.
    fn tokens(tokens: &[String]) -> Self {
        Self {
            groups: tokens.iter().map(|t| vec![t.clone()]).collect(),
            parenthesized: false,
            written: None,
        }
    }

    /// One group per distinct stem of `words` (folded, in order; the first word of each
    /// stem is the one SQLite gets): `stems[i]` is `words[i]`'s stem.
    fn stems(words: &[String], stems: &[String]) -> Self {
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut written: Vec<Vec<String>> = Vec::new();
        for (w, s) in words.iter().zip(stems) {
            if !groups.iter().any(|g| &g[0] == s) {
                groups.push(vec![s.clone()]);
                written.push(vec![w.clone()]);
            }
        }
        Self {
            groups,
            parenthesized: false,
            written: Some(written),
        }
    }

    /// The `MATCH` text: groups joined by `AND` when `every`, else by `OR`.
    fn expr(&self, every: bool) -> String {
        let groups: Vec<String> = self
            .written
            .as_ref()
            .unwrap_or(&self.groups)
            .iter()
            .map(|g| {
                let terms = g.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" OR ");
                if self.parenthesized {
                    format!("({terms})")
                } else {
                    terms
                }
            })
            .collect();
        groups.join(if every { " AND " } else { " OR " })
    }
}

/// The fuzzy leg's groups for `tokens`: per content word ([`content_tokens`]) the
/// indexed terms of `vocab` within its edit distance, closest first, at most
/// [`MAX_EXPANSIONS`] (the word itself when none); with each word's expansions for
/// the trace. Stops early once `stop` has stopped.
pub(super) fn fuzzy_groups(
    vocab: &crate::search::vocabulary::Vocabulary,
    tokens: &[String],
    stop: &crate::cancel::Cancel,
) -> (Vec<Vec<String>>, Map<String, Value>) {
    let mut groups = Vec::new();
    let mut expansions = Map::new();
    for token in &content_tokens(tokens) {
        if stop.is_stopped() {
            break;
        }
        let max = if is_stop_word(token) {
            0
        } else {
            fuzzy::max_distance(token)
        };
        let mut near = fuzzy::near(vocab, token, max);
        near.sort_unstable();
        near.truncate(MAX_EXPANSIONS);
        let mut terms: Vec<String> = near.iter().map(|(_, t)| (*t).to_owned()).collect();
        if terms.is_empty() {
            terms.push(token.clone());
        }
        expansions.insert(token.clone(), json!(terms));
        groups.push(terms);
    }
    (groups, expansions)
}

/// What the FTS5 legs of one search share: the locked connection, the store's index,
/// the filters and the scorer.
pub(super) struct Leg<'a> {
    pub(super) conn: &'a Connection,
    pub(super) index: &'a SearchIndex,
    pub(super) filter: Filter,
    pub(super) scorer: Scorer,
    /// The FTS5 table scored: [`Table::Plain`] but for hybrid's context-aware leg
    /// ([`Leg::bm25_in_context`]), which reads [`Table::Stemmed`] when the store has it.
    pub(super) table: Table,
}

impl Leg<'_> {
    pub(super) fn bm25(
        &self,
        tokens: &[String],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let query = self.content_query(tokens)?;
        self.any_term("bm25", &query, [5, 3, 1], n, trace)
    }

    /// What the bm25 legs search for `tokens` (folded by [`fold_tokens`]): the content
    /// words ([`content_tokens`]), one group each — by Porter stem when the leg reads
    /// [`Table::Stemmed`] (stemmed after the stop words are left out: "was" → "wa").
    fn content_query(&self, tokens: &[String]) -> Result<TermQuery, rusqlite::Error> {
        let content = content_tokens(tokens);
        Ok(match self.table {
            Table::Plain => TermQuery::tokens(&content),
            Table::Stemmed => TermQuery::stems(&content, &stems_of(&content)?),
        })
    }

    /// The bm25 leg with each memory scored together with its neighbours ([`CONTEXT`]):
    /// every row any content word matches is scored (−bm25, > 0), then each row
    /// holding a word or next to one that does scores its own plus `around.weight` ×
    /// its neighbours' (they count whether the filters keep them or not); the `n` best
    /// rows the filters keep, as `(rowid, score)`. Ties as [`Leg::top`].
    pub(super) fn bm25_in_context(
        &self,
        tokens: &[String],
        n: usize,
        around: Around,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let query = self.content_query(tokens)?;
        let weights = [5, 3, 1];
        let matches = self.in_memory(&query, weights)?;
        let or = query.expr(false);
        let scored = self.every_score(&or, matches.as_ref(), weights)?;
        let meta = self.index.rows();
        let mut own = vec![0f64; meta.len()];
        for &(i, s) in &scored {
            own[i] = s;
        }
        let neighbours = self.index.neighbours();
        let mask = self.filter.mask(self.index);
        let mut seen = vec![false; meta.len()];
        let mut near: Vec<usize> = Vec::new();
        let mut hits = TopN::new(n, |a: &(f64, usize), b: &(f64, usize)| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(Ordering::Equal)
                .then_with(|| meta[b.1].updated.cmp(&meta[a.1].updated))
                .then_with(|| meta[a.1].id.cmp(&meta[b.1].id))
        });
        let mut candidates = 0usize;
        for &(t, _) in &scored {
            near.clear();
            near.push(t);
            neighbours.around(t, around.window, &mut near);
            for c in near.clone() {
                if std::mem::replace(&mut seen[c], true) || !mask.is_none_or(|m| m[c]) {
                    continue;
                }
                candidates += 1;
                let mut ctx = Vec::new();
                neighbours.around(c, around.window, &mut ctx);
                let score = own[c] + around.weight * ctx.iter().map(|&j| own[j]).sum::<f64>();
                if score > 0.0 {
                    hits.push((-score, c));
                }
            }
        }
        let ranked: Ranked = hits
            .into_sorted()
            .into_iter()
            .map(|(s, i)| (meta[i].rowid, -s))
            .collect();
        trace.push(json!({
            "stage": "leg", "leg": "bm25", "fts_query": or, "candidates": ranked.len(),
            "context": {"window": around.window, "weight": around.weight, "matched": scored.len(), "scored": candidates},
        }));
        Ok(ranked)
    }

    pub(super) fn exact(
        &self,
        tokens: &[String],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let query = TermQuery::tokens(tokens);
        self.all_terms("exact", &query, [10, 8, 1], n, trace)
    }

    pub(super) fn fuzzy(
        &self,
        tokens: &[String],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let vocab = self.index.vocab(self.conn)?;
        let (groups, expansions) = fuzzy_groups(vocab, tokens, &self.filter.stop);
        if self.filter.stop.is_stopped() {
            return Ok(Vec::new());
        }
        trace.push(json!({"stage": "expand", "leg": "fuzzy", "vocabulary": vocab.len(), "expansions": expansions}));
        let query = TermQuery {
            groups,
            parenthesized: true,
            written: None,
        };
        self.any_term("fuzzy", &query, [5, 3, 1], n, trace)
    }

    /// BM25 over the disjunction of `query`'s groups: every row matching any term,
    /// ranked by `bm25()` alone (rows matching more terms score higher through the
    /// sum; nothing is filtered on AND-ness).
    fn any_term(
        &self,
        leg: &str,
        query: &TermQuery,
        weights: [u32; 3],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let matches = self.in_memory(query, weights)?;
        let or = query.expr(false);
        let ranked = self.top(&or, false, matches.as_ref(), weights, n)?;
        trace
            .push(json!({"stage": "leg", "leg": leg, "fts_query": or, "candidates": ranked.len()}));
        Ok(ranked)
    }

    /// The strict AND of `query`'s groups (no fallback).
    fn all_terms(
        &self,
        leg: &str,
        query: &TermQuery,
        weights: [u32; 3],
        n: usize,
        trace: &mut Vec<Value>,
    ) -> Result<Ranked, rusqlite::Error> {
        let matches = self.in_memory(query, weights)?;
        let and = query.expr(true);
        let ranked = self.top(&and, true, matches.as_ref(), weights, n)?;
        trace.push(
            json!({"stage": "leg", "leg": leg, "fts_query": and, "candidates": ranked.len()}),
        );
        Ok(ranked)
    }

    /// `query` scored from the in-memory postings (FTS5's `bm25()` bit for bit), or
    /// `None` when SQLite must answer: the reference scorer asked for, or postings
    /// unavailable.
    fn in_memory(
        &self,
        query: &TermQuery,
        weights: [u32; 3],
    ) -> Result<Option<Matches<'_>>, rusqlite::Error> {
        Ok(match self.scorer {
            Scorer::Fast => self
                .index
                .fts_of(self.conn, self.table)?
                .map(|fts| fts.query(&query.groups, weights)),
            Scorer::Reference => None,
        })
    }

    /// Every row that `expr` (the OR form of the query) matches, filters not applied:
    /// `(row, −bm25)`. From `matches` when the in-memory scorer produced them, else
    /// from SQLite.
    fn every_score(
        &self,
        expr: &str,
        matches: Option<&Matches>,
        weights: [u32; 3],
    ) -> Result<Vec<(usize, f64)>, rusqlite::Error> {
        let mut out = Vec::new();
        match matches {
            Some(matches) => matches.any_group(&self.filter.stop, |i, bm25| out.push((i, -bm25))),
            None => self.sqlite_scores(expr, weights, |i, bm25| out.push((i, -bm25)))?,
        }
        Ok(out)
    }

    /// `f(row, bm25)` for every stored row that `expr` matches, as SQLite's
    /// `bm25(memories_fts, weights…)` scores it (negative, lower is better), until the
    /// search stops.
    fn sqlite_scores(
        &self,
        expr: &str,
        weights: [u32; 3],
        mut f: impl FnMut(usize, f64),
    ) -> Result<(), rusqlite::Error> {
        let [w0, w1, w2] = weights;
        let t = self.table.name();
        let sql = format!("SELECT rowid, bm25({t}, {w0}, {w1}, {w2}) FROM {t} WHERE {t} MATCH ?1");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        // A stop interrupts the statement (its next step fails) and ends the loop.
        let handle = self.conn.get_interrupt_handle();
        let _interrupt = self.filter.stop.on_stop(move || handle.interrupt());
        let mut rows = stmt.query([expr])?;
        let mut seen = 0usize;
        loop {
            // Also before the first row: an interrupt sent before the statement
            // started is forgotten when it starts.
            if seen.is_multiple_of(STOP_CHECK_ROWS) && self.filter.stop.is_stopped() {
                break;
            }
            seen += 1;
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) if self.filter.stop.is_stopped() => break,
                Err(e) => return Err(e),
            };
            if let Some(i) = self.index.position(r.get(0)?) {
                f(i, r.get(1)?);
            }
        }
        Ok(())
    }

    /// The `n` best rows that `expr` matches (`every`: the AND form of the query) and
    /// the filters keep, ordered by `bm25(memories_fts, weights…)` ascending, newer
    /// `updated`, smaller id; as `(rowid, −bm25)`. From `matches` when the in-memory
    /// scorer produced them, else from SQLite.
    fn top(
        &self,
        expr: &str,
        every: bool,
        matches: Option<&Matches>,
        weights: [u32; 3],
        n: usize,
    ) -> Result<Ranked, rusqlite::Error> {
        let meta = self.index.rows();
        // ORDER BY bm25 ASC, updated DESC, id ASC (SQLite compares REALs numerically).
        let mut hits = TopN::new(n, |a: &(f64, usize), b: &(f64, usize)| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(Ordering::Equal)
                .then_with(|| meta[b.1].updated.cmp(&meta[a.1].updated))
                .then_with(|| meta[a.1].id.cmp(&meta[b.1].id))
        });
        if let Some(matches) = matches {
            if every {
                // Few rows, as a rule: test them one by one.
                matches.every_group(&self.filter.stop, |i, bm25| {
                    if self.filter.keep(&meta[i]) && !self.filter.hidden(self.index, i) {
                        hits.push((bm25, i));
                    }
                });
            } else {
                let mask = self.filter.mask(self.index);
                matches.any_group(&self.filter.stop, |i, bm25| {
                    if mask.is_none_or(|m| m[i]) {
                        hits.push((bm25, i));
                    }
                });
            }
        } else {
            self.sqlite_scores(expr, weights, |i, bm25| {
                if self.filter.keep(&meta[i]) && !self.filter.hidden(self.index, i) {
                    hits.push((bm25, i));
                }
            })?;
        }
        Ok(hits
            .into_sorted()
            .into_iter()
            .map(|(s, i)| (meta[i].rowid, -s))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::bench::gen::{self, Spec};
    use crate::engines::memo_search::Request;
    use crate::stores::memories::MemoryStore;

    /// The checks inside the legs, not only between them: with the call stopped,
    /// every FTS5 leg of both scorers returns no candidate although rows match.
    #[test]
    fn stopped_legs_return_early_without_candidates() {
        let store = MemoryStore::open_in_memory().unwrap();
        for m in gen::memories(Spec {
            messages: 500,
            seed: 3,
        }) {
            store.upsert(&m).unwrap();
        }
        let conn = store.lock();
        let index = store.search_index(&conn, None).unwrap();
        let tokens = fold_tokens("serde tokio").unwrap();
        for scorer in [Scorer::Fast, Scorer::Reference] {
            for stopped in [false, true] {
                let mut req =
                    Request::from_args(&json!({"query": "serde tokio"}), Utc::now()).unwrap();
                req.scorer = scorer;
                if stopped {
                    req.stop.cancel();
                }
                let leg = Leg {
                    conn: &conn,
                    index: index.as_ref(),
                    filter: Filter::new(&req),
                    scorer,
                    table: Table::Plain,
                };
                let mut trace = Vec::new();
                let legs = [
                    ("bm25", leg.bm25(&tokens, 10, &mut trace).unwrap()),
                    ("exact", leg.exact(&tokens[..1], 10, &mut trace).unwrap()),
                    ("fuzzy", leg.fuzzy(&tokens, 10, &mut trace).unwrap()),
                ];
                for (name, ranked) in legs {
                    assert_eq!(
                        ranked.is_empty(),
                        stopped,
                        "{name} {scorer:?} stopped={stopped}: {} candidates",
                        ranked.len()
                    );
                }
            }
        }
    }
}
