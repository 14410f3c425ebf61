//! semantic-search answered from the team archive (`--archive`): `mode: semantic`
//! ranks the archive's units of the model this machine embeds the query with
//! ([`crate::archive::meaning`]); each unit is shown as the local engine shows it
//! ([`super::best_message`]), with its machine. `mode: hybrid` needs the keyword leg
//! (BM25 over the search index's postings) that the archive does not hold yet: it
//! says so instead of answering from the local stores.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{best_message, explain_json, row_json, unit_json, Row, Texts, Tuning};
use crate::archive::meaning::{self, Scan};
use crate::archive::search::Pool;
use crate::engines::{Context, EngineError};
use crate::stores::conversations::embeddings::{Filter, UnitHit, UnitSpec};

/// The arguments of one call, as the engine parsed them.
pub(super) struct Call<'a> {
    pub query: &'a str,
    pub limit: usize,
    pub hybrid: bool,
    pub role: Option<&'a str>,
    pub min_score: f32,
    pub filter: Filter<'a>,
    pub project: bool,
    pub explain: bool,
}

fn unavailable(pool: &Pool, what: &str) -> EngineError {
    EngineError::Unavailable(format!(
        "semantic-search: {what} is not available on the archive yet ({}); run it without \
         `--archive` / {} to answer from this machine's stores",
        pool.target().shown(),
        crate::settings::ARCHIVE_URL.name
    ))
}

/// Answers `call` from `pool`.
pub(super) fn call(ctx: &Context, pool: &Pool, call: &Call<'_>) -> Result<Value, EngineError> {
    ctx.may_read(crate::stores::Store::Conversations)?;
    if call.hybrid {
        return Err(unavailable(
            pool,
            "mode `hybrid` (the default) — its keyword leg, BM25 over the search index's \
             postings with neighbour context, has no copy in the archive; `mode: semantic` \
             ranks by meaning from the archive",
        ));
    }
    if call.project {
        return Err(unavailable(pool, "the `project` filter"));
    }
    let query_err = |e: crate::archive::ArchiveError| EngineError::Query(e.to_string());
    let embedder = ctx
        .embedder()
        .map_err(|e| EngineError::Unavailable(format!("embedding unavailable: {e}")))?;
    let models = meaning::models(pool).map_err(query_err)?;
    let Some(model) = models
        .iter()
        .find(|m| m.model.model == embedder.name() && m.model.dim as usize == embedder.dim())
    else {
        let held: Vec<String> = models
            .iter()
            .map(|m| format!("`{}` ({})", m.model.model, m.model.dim))
            .collect();
        return Err(EngineError::Unavailable(format!(
            "semantic-search: the archive {} holds no vectors of `{}`, the model this machine \
             embeds the query with ({}); {}",
            pool.target().shown(),
            embedder.name(),
            if held.is_empty() {
                "it holds none".to_owned()
            } else {
                format!("it holds {}", held.join(", "))
            },
            "a machine with this model runs `skills archive migrate` then `skills archive push`"
        )));
    };
    let coverage = meaning::coverage(pool, model).map_err(query_err)?;
    let q = embedder.embed_query(call.query);
    let (units, ran) = meaning::nearest_units(
        pool,
        model,
        &q,
        call.limit,
        &call.filter,
        call.min_score,
        Scan::Auto,
        coverage.units,
    )
    .map_err(query_err)?;
    ctx.cancel().check().map_err(EngineError::Stopped)?;
    let keys: Vec<(String, String, String, String)> = units
        .iter()
        .flat_map(|u| {
            u.messages.iter().map(|m| {
                (
                    u.machine.clone(),
                    u.source.clone(),
                    u.conversation_id.clone(),
                    m.message_id.clone(),
                )
            })
        })
        .collect();
    // Per machine: its messages as the local engine's texts, its label and user.
    let mut texts: HashMap<String, Texts> = HashMap::new();
    let mut who: HashMap<String, (String, String)> = HashMap::new();
    for m in meaning::messages(pool, &keys).map_err(query_err)? {
        who.insert(m.machine.clone(), (m.label.clone(), m.user.clone()));
        let hit = m.hit;
        let key = (
            hit.source.clone(),
            hit.conversation_id.clone(),
            hit.message_id.clone(),
        );
        texts
            .entry(m.machine)
            .or_insert_with(|| Texts(HashMap::new()))
            .0
            .insert(key, (hit, m.folded));
    }
    let empty = Texts(HashMap::new());
    let mut rows: Vec<(Row, String)> = Vec::with_capacity(units.len());
    for u in units {
        let hit = UnitHit {
            score: u.score,
            source: u.source,
            conversation_id: u.conversation_id,
            messages: u.messages,
        };
        let t = texts.get(&u.machine).unwrap_or(&empty);
        if let Some(row) = best_message(&hit, t, &call.filter, call.role, &q, &embedder) {
            rows.push((row, u.machine));
        }
    }
    let out: Vec<Value> = rows
        .iter_mut()
        .enumerate()
        .map(|(i, (r, machine))| {
            r.legs
                .insert("semantic".into(), json!({"rank": i + 1, "cosine": r.score}));
            let mut row = row_json(r);
            let (label, user) = who.get(machine.as_str()).cloned().unwrap_or_default();
            row["machine"] = json!(label);
            row["machine_id"] = json!(machine);
            row["user"] = json!(user);
            row["cites"]["machine_id"] = json!(machine);
            if call.explain {
                row["explain"] = json!({"legs": r.legs});
            }
            row
        })
        .collect();
    // The unit the model's units were cut with (the first, should machines differ).
    let unit = coverage
        .unit_specs
        .first()
        .and_then(|u| serde_json::from_str::<UnitSpec>(u).ok())
        .unwrap_or(UnitSpec::DEFAULT);
    let unit = unit_json(unit);
    let mut result = json!({
        "query": call.query,
        "mode": "semantic",
        "limit": call.limit,
        "count": out.len(),
        "model": model.model.model,
        "unit": unit,
        "rows": out,
        "project": Value::Null,
    });
    if coverage.conversations_without > 0 {
        result["note"] = json!(format!(
            "{} of the archive's {} conversations ({} messages) have no vectors of `{}` \
             (pushed without embeddings, or embedded with another model): they are not \
             ranked",
            coverage.conversations_without,
            coverage.conversations + coverage.conversations_without,
            coverage.messages_without,
            model.model.model
        ));
    }
    if call.explain {
        result["explain"] = explain_json(false, &Tuning::DEFAULT, call.query);
        result["explain"]["archive"] = json!({
            "scan": ran,
            "units": coverage.units,
        });
    }
    Ok(result)
}
