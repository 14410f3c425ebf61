//! Fusion of the legs' rankings into one: hybrid's weighted, normalised sum (with its
//! tie-breaks), or a single leg's scores as they are.

use std::collections::{HashMap, HashSet};

use rusqlite::{params_from_iter, Connection};

use serde_json::{json, Value};

use super::{Mode, Norm, Ranked, Tuning};
use crate::engines::temporal;

/// Hybrid's fusion under one [`Tuning`]: each leg's scores put on [0, 1] (bm25: over
/// its best; vec: by `vec_norm`), weighted, summed per memory. Weights chosen on the
/// LoCoMo dev half (`cargo bench --bench quality`, docs/performance.md "Retrieval
/// quality", "Second tier"); `exact` is not a hybrid leg (it is almost always empty
/// on natural-language questions, and when not it counts bm25's all-word matches twice).
#[derive(Debug, Clone, Copy)]
pub(super) struct Fusion<'a>(pub(super) &'a Tuning);

impl Fusion<'_> {
    pub(super) fn weight(&self, leg: &str) -> f64 {
        match leg {
            "vec" => self.0.vec_weight,
            "bm25" => self.0.bm25_weight,
            _ => 0.0,
        }
    }

    fn norm(&self, leg: &str) -> Norm {
        if leg == "vec" {
            self.0.vec_norm
        } else {
            Norm::Best
        }
    }
}

/// One fused hit: rowid, final score and its `(leg, rank, leg score)` provenance.
pub(super) struct Fused {
    pub(super) rowid: i64,
    pub(super) score: f64,
    pub(super) legs: Vec<(&'static str, usize, f64)>,
    /// Hybrid: each leg's score over that leg's best.
    pub(super) normalised: Vec<(&'static str, f64)>,
    /// What a temporal question's routing added ([`boost_times`]; 0: nothing).
    pub(super) temporal: f64,
}

pub(super) fn fuse(
    mode: Mode,
    legs: &[(&'static str, Ranked)],
    limit: usize,
    tuning: &Tuning,
    trace: &mut Vec<Value>,
) -> Vec<Fused> {
    let fusion = Fusion(tuning);
    let mut by_row: HashMap<i64, Fused> = HashMap::new();
    let mut order: Vec<i64> = Vec::new();
    for (name, ranked) in legs {
        for (i, (rowid, score)) in ranked.iter().enumerate() {
            let entry = by_row.entry(*rowid).or_insert_with(|| {
                order.push(*rowid);
                Fused {
                    rowid: *rowid,
                    score: 0.0,
                    legs: Vec::new(),
                    normalised: Vec::new(),
                    temporal: 0.0,
                }
            });
            entry.legs.push((name, i + 1, *score));
            let norm = fusion.norm(name);
            if mode == Mode::Hybrid {
                entry
                    .normalised
                    .push((name, normalised(ranked, *score, norm)));
            }
            entry.score += if mode == Mode::Hybrid {
                fusion.weight(name) * normalised(ranked, *score, norm)
            } else {
                *score
            };
        }
    }
    let candidates = order.len();
    let mut fused: Vec<Fused> = order
        .into_iter()
        .filter_map(|r| by_row.remove(&r))
        .collect();
    if mode == Mode::Hybrid {
        // Ties: best single-leg rank, then first-seen order (legs are already ordered
        // by score, newer `updated`, smaller id).
        let first_seen: HashMap<i64, usize> = fused
            .iter()
            .enumerate()
            .map(|(i, f)| (f.rowid, i))
            .collect();
        fused.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| best_rank(a).cmp(&best_rank(b)))
                .then_with(|| first_seen.get(&a.rowid).cmp(&first_seen.get(&b.rowid)))
        });
        trace.push(json!({"stage": "fuse", "method": "normalised", "weights": {"vec": fusion.weight("vec"), "bm25": fusion.weight("bm25")}, "candidates": candidates}));
    }
    fused.truncate(limit);
    fused
}

/// Continues hybrid's ranking `fused` (of the legs' first `candidates`: `pooled`) up to
/// `limit` hits, when it holds fewer: the bm25 leg's further hits in its order, then,
/// once the bm25 leg is exhausted, the vec leg's, each hit not already ranked, scored
/// as the fusion would score it from that leg alone. No order depends on `limit`:
/// with each leg taken max(`candidates`, `limit`) deep, the bm25 leg alone fills
/// `limit` unless it holds fewer hits than that depth, and then it is complete.
pub(super) fn beyond(
    fused: &mut Vec<Fused>,
    legs: &[(&'static str, Ranked)],
    pooled: &[(&'static str, Ranked)],
    candidates: usize,
    limit: usize,
    tuning: &Tuning,
) {
    let fusion = Fusion(tuning);
    if fused.len() >= limit {
        return;
    }
    let mut seen: HashSet<i64> = fused.iter().map(|f| f.rowid).collect();
    let depth = candidates.max(limit);
    for name in ["bm25", "vec"] {
        let Some((_, ranked)) = legs.iter().find(|l| l.0 == name) else {
            continue;
        };
        let pool = pooled.iter().find(|l| l.0 == name).map(|l| &l.1);
        for (i, &(rowid, score)) in ranked.iter().enumerate().skip(candidates) {
            if fused.len() >= limit {
                return;
            }
            if !seen.insert(rowid) {
                continue;
            }
            // Normalised as in the fusion, against the leg's candidates.
            let normal = pool.map_or(0.0, |p| normalised(p, score, fusion.norm(name)));
            fused.push(Fused {
                rowid,
                score: fusion.weight(name) * normal,
                legs: vec![(name, i + 1, score)],
                normalised: vec![(name, normal)],
                temporal: 0.0,
            });
        }
        if ranked.len() >= depth {
            // This leg was cut at the depth: the next leg's hits cannot follow it
            // without depending on `limit`.
            return;
        }
    }
}

/// `score` of leg `ranked` (best first) on [0, 1] by `norm` ([`Norm::apply`]).
fn normalised(ranked: &Ranked, score: f64, norm: Norm) -> f64 {
    let top = ranked.first().map_or(0.0, |f| f.1);
    let low = ranked.last().map_or(0.0, |f| f.1);
    norm.apply(score, top, low)
}

fn best_rank(f: &Fused) -> usize {
    f.legs.iter().map(|l| l.1).min().unwrap_or(usize::MAX)
}

/// Routes a temporal question ([`temporal`]): each candidate whose body refers to a
/// time gains `boost`; the order is then by score again (ties keep fusion's order).
pub(super) fn boost_times(
    conn: &Connection,
    fused: &mut [Fused],
    boost: f64,
    trace: &mut Vec<Value>,
) -> Result<(), rusqlite::Error> {
    let rowids: Vec<i64> = fused.iter().map(|f| f.rowid).collect();
    let mut timed = HashSet::new();
    // SQLite binds at most 32,766 parameters per statement.
    for chunk in rowids.chunks(1000) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT rowid, body FROM memories WHERE rowid IN ({marks})"
        ))?;
        let rows = stmt.query_map(params_from_iter(chunk.iter()), |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        for row in rows {
            let (rowid, body) = row?;
            if temporal::refers_to_time(&body) {
                timed.insert(rowid);
            }
        }
    }
    for f in fused.iter_mut() {
        if timed.contains(&f.rowid) {
            f.score += boost;
            f.temporal = boost;
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    trace.push(json!({"stage": "temporal", "boost": boost, "candidates": fused.len(), "refer_to_time": timed.len()}));
    Ok(())
}
