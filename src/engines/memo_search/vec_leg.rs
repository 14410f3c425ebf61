//! The vec leg: cosine similarity between the query's embedding and every stored
//! chunk vector the filters keep; a memory scores by its best chunk.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::{json, Value};

use super::top_n::TopN;
use super::{Ranked, Scorer};
use crate::cancel::Cancel;
use crate::stores::memories::SearchIndex;

/// Cosine ranking over stored embeddings from model `model` against `q`, the query's
/// embedding by it; `None` when the index holds none from it at all (filters aside)
/// or there is no `q`. Once `stop` has stopped, no further vector passes and fewer
/// candidates come back.
#[allow(clippy::too_many_arguments)]
pub(super) fn vec_leg_until(
    index: &SearchIndex,
    model: &str,
    q: Option<&[f32]>,
    mask: Option<&[bool]>,
    n: usize,
    scorer: Scorer,
    trace: &mut Vec<Value>,
    stop: &Cancel,
) -> Option<Ranked> {
    let model = model.to_owned();
    let any = index.embedded();
    let Some(q) = q.filter(|_| any > 0) else {
        trace.push(
            json!({"stage": "leg", "leg": "vec", "model": model, "embedded": 0, "candidates": 0}),
        );
        return None;
    };
    // No timings in the trace: the skill is a pure function, `explain` included.
    let meta = index.rows();
    // Cosine descending, newer `updated`, smaller id.
    let mut scored = TopN::new(n, |a: &(f64, usize), b: &(f64, usize)| {
        b.0.total_cmp(&a.0)
            .then_with(|| meta[b.1].updated.cmp(&meta[a.1].updated))
            .then_with(|| meta[a.1].id.cmp(&meta[b.1].id))
    });
    let keep = |i: usize| !stop.is_stopped() && mask.is_none_or(|m| m[i]);
    // A memory scores by its best chunk; the pruned pass gives the best chunk of each
    // of the `n` best memories, and any memory it leaves out ranks below them.
    let mut best: HashMap<usize, f32> = HashMap::new();
    let mut chunk = |i: usize, dot: f32| {
        best.entry(i)
            .and_modify(|b| {
                if dot.total_cmp(b) == Ordering::Greater {
                    *b = dot;
                }
            })
            .or_insert(dot);
    };
    let scanned = match scorer {
        // Only chunks that can reach the top are scored (exactly); `scanned` still
        // counts every chunk vector of the rows the filters keep.
        Scorer::Fast => index.for_each_top_dot(q, n, keep, &mut chunk),
        Scorer::Reference => {
            let mut scanned = 0;
            index.for_each_dot(q, keep, |i, dot| {
                scanned += 1;
                chunk(i, dot);
            });
            scanned
        }
    };
    for (i, dot) in best {
        scored.push((f64::from(dot).clamp(0.0, 1.0), i));
    }
    let scored = scored.into_sorted();
    trace.push(json!({
        "stage": "leg", "leg": "vec", "model": model, "embedded": any, "scanned": scanned,
        "candidates": scored.len(),
    }));
    Some(
        scored
            .into_iter()
            .map(|(s, i)| (meta[i].rowid, s))
            .collect(),
    )
}
