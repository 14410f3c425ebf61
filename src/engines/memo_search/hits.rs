//! The output: the fused hits' rows read back from SQLite, bodies truncated, the
//! per-hit `explain`, and the result object with its notes and trace.

use std::collections::HashMap;

use rusqlite::{params_from_iter, Connection};
use serde_json::{json, Map, Value};

use super::fuse::{Fused, Fusion};
use super::{Mode, Request, Tuning};
use crate::stores::memories::json_list;

/// The result object: hits, mode, count, and the notes and trace when there are any.
pub(super) fn finish(
    req: &Request,
    hits: Vec<Value>,
    notes: Vec<String>,
    trace: Option<Vec<Value>>,
) -> Value {
    let mut out = json!({"hits": hits, "mode": req.mode.as_str(), "count": hits.len()});
    if !notes.is_empty() {
        out["note"] = json!(notes.join("; "));
    }
    if let Some(trace) = trace {
        out["trace"] = json!(trace);
    }
    out
}

/// `x` to six decimals (scores in the output).
pub(super) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Cuts the hit's `body` to `max` characters (marked `…` and `body_truncated`).
pub(super) fn truncate_body(hit: &mut Map<String, Value>, max: usize) {
    let Some(body) = hit.get("body").and_then(Value::as_str) else {
        return;
    };
    if body.chars().count() > max {
        let cut: String = body.chars().take(max).collect();
        hit.insert("body".into(), json!(format!("{cut}…")));
        hit.insert("body_truncated".into(), json!(true));
    }
}

/// The output columns of the memories at `rowids`, by rowid.
pub(super) fn load_rows(
    conn: &Connection,
    rowids: &[i64],
) -> Result<HashMap<i64, Map<String, Value>>, rusqlite::Error> {
    let mut out = HashMap::new();
    if rowids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; rowids.len()].join(",");
    let sql = format!(
        "SELECT rowid, id, title, type, tags, created, updated, body, files_read, files_modified \
         FROM memories WHERE rowid IN ({marks})"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(rowids.iter()), |r| {
        let mut m = Map::new();
        m.insert("id".into(), json!(r.get::<_, String>(1)?));
        m.insert("title".into(), json!(r.get::<_, String>(2)?));
        m.insert("type".into(), json!(r.get::<_, String>(3)?));
        m.insert("tags".into(), json!(json_list(&r.get::<_, String>(4)?)));
        m.insert("created".into(), json!(r.get::<_, String>(5)?));
        m.insert("updated".into(), json!(r.get::<_, String>(6)?));
        m.insert("body".into(), json!(r.get::<_, String>(7)?));
        m.insert(
            "files_read".into(),
            json!(json_list(&r.get::<_, String>(8)?)),
        );
        m.insert(
            "files_modified".into(),
            json!(json_list(&r.get::<_, String>(9)?)),
        );
        let cites = crate::engines::cites_memory(&r.get::<_, String>(1)?);
        m.insert("cites".into(), cites);
        Ok((r.get::<_, i64>(0)?, m))
    })?;
    for row in rows {
        let (rowid, m) = row?;
        out.insert(rowid, m);
    }
    Ok(out)
}

/// A hit's `explain`: each leg's rank and score, plus in hybrid the leg's weight and
/// normalised score and the fusion's method and score.
pub(super) fn explain(f: &Fused, mode: Mode, tuning: &Tuning) -> Value {
    let mut legs_json = Map::new();
    for (name, rank, score) in &f.legs {
        let mut leg = json!({"rank": rank, "score": round6(*score)});
        if mode == Mode::Hybrid {
            leg["weight"] = json!(Fusion(tuning).weight(name));
            if let Some(n) = f.normalised.iter().find(|n| n.0 == *name) {
                leg["normalised"] = json!(round6(n.1));
            }
        }
        legs_json.insert((*name).into(), leg);
    }
    let mut explain = json!({"legs": legs_json});
    if mode == Mode::Hybrid {
        explain["fusion"] = json!({"method": "normalised", "score": round6(f.score)});
        if f.temporal > 0.0 {
            explain["fusion"]["temporal"] = json!(round6(f.temporal));
        }
    }
    explain
}
