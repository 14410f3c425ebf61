//! The output: the fused hits' rows read back from SQLite (a temporal question's with
//! the bodies its routing read), bodies truncated, the per-hit `explain`, and the
//! result object with its notes and trace.

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

/// A memory's output columns as stored (its lists still JSON text), read by
/// [`load_rows`]; [`Row::into_hit`] makes its hit.
pub(super) struct Row {
    pub(super) id: String,
    title: String,
    kind: String,
    tags: String,
    created: String,
    updated: String,
    body: String,
    files_read: String,
    files_modified: String,
}

impl Row {
    /// The hit's fields, in output order.
    pub(super) fn into_hit(self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("id".into(), json!(self.id));
        m.insert("title".into(), json!(self.title));
        m.insert("type".into(), json!(self.kind));
        m.insert("tags".into(), json!(json_list(&self.tags)));
        m.insert("created".into(), json!(self.created));
        m.insert("updated".into(), json!(self.updated));
        m.insert("body".into(), json!(self.body));
        m.insert("files_read".into(), json!(json_list(&self.files_read)));
        m.insert(
            "files_modified".into(),
            json!(json_list(&self.files_modified)),
        );
        m.insert("cites".into(), crate::engines::cites_memory(&self.id));
        m
    }
}

/// The output columns of the memories at `rowids` (at most [`MAX_LIMIT`]), by rowid (a
/// rowid no longer stored is absent). `bodies`: the bodies already read (a temporal
/// question's routing read every candidate's, [`load_bodies`]), taken from it instead
/// of read again; the caller holds one read transaction over both reads, so each row
/// is one version.
///
/// [`MAX_LIMIT`]: super::MAX_LIMIT
pub(super) fn load_rows(
    conn: &Connection,
    rowids: &[i64],
    mut bodies: Option<&mut HashMap<i64, String>>,
) -> Result<HashMap<i64, Row>, rusqlite::Error> {
    let mut out = HashMap::with_capacity(rowids.len());
    if rowids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; rowids.len()].join(",");
    let body = if bodies.is_some() { "NULL" } else { "body" };
    let sql = format!(
        "SELECT rowid, id, title, type, tags, created, updated, {body}, files_read, \
         files_modified FROM memories WHERE rowid IN ({marks})"
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params_from_iter(rowids.iter()))?;
    while let Some(r) = rows.next()? {
        let rowid: i64 = r.get(0)?;
        let body = match r.get::<_, Option<String>>(7)? {
            Some(body) => body,
            None => bodies
                .as_deref_mut()
                .and_then(|b| b.remove(&rowid))
                .unwrap_or_default(),
        };
        let row = Row {
            id: r.get(1)?,
            title: r.get(2)?,
            kind: r.get(3)?,
            tags: r.get(4)?,
            created: r.get(5)?,
            updated: r.get(6)?,
            body,
            files_read: r.get(8)?,
            files_modified: r.get(9)?,
        };
        out.insert(rowid, row);
    }
    Ok(out)
}

/// The bodies of the memories at `rowids`, by rowid (a rowid no longer stored is
/// absent).
pub(super) fn load_bodies(
    conn: &Connection,
    rowids: &[i64],
) -> Result<HashMap<i64, String>, rusqlite::Error> {
    let mut out = HashMap::with_capacity(rowids.len());
    // SQLite binds at most 32,766 parameters per statement.
    for chunk in rowids.chunks(1000) {
        let marks = vec!["?"; chunk.len()].join(",");
        let mut stmt = conn.prepare(&format!(
            "SELECT rowid, body FROM memories WHERE rowid IN ({marks})"
        ))?;
        let mut rows = stmt.query(params_from_iter(chunk.iter()))?;
        while let Some(r) = rows.next()? {
            out.insert(r.get(0)?, r.get(1)?);
        }
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
