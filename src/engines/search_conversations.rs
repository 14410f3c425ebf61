//! Engine `search_conversations`: deterministic `ILIKE` keyword search over
//! `all_conversations`, newest first.
//!
//! SQL (per the seed): `WHERE content ILIKE '%' || term || '%' [AND role = ?]
//! ORDER BY created DESC LIMIT ?`, with (`source`, `conversation_id`, `message_id`) as
//! the tie-break so equal times still give one order.
//!
//! Two paths, same rows and bytes: the store's search index
//! ([`crate::stores::conversations::index`], memory-mapped, microseconds to
//! milliseconds) when it matches the store, else the SQL above on DuckDB (a full
//! scan), with a note on stderr saying why. With `role = "user"` (and in the
//! questions mode) `AND NOT is_injected` is added, so user means what the person typed:
//! harness text (reminders, command wrappers, continuation summaries, Codex preambles)
//! is stored but only found without a role filter. The term's `%` and `_` are deliberately not escaped: they act
//! as `ILIKE` wildcards. Empty term with `role = "user"` returns recent user
//! questions (`has_question = 1`).
//!
//! `project` (optional, [`Project`]) adds `AND project ILIKE '%' || x || '%' ESCAPE '\'`
//! with `x`'s `\`, `%` and `_` escaped: a case-insensitive literal substring of the
//! stored project path, as memo-search's `file`. Without it the rows are the seed's.

use serde_json::{json, Value};

use super::{Context, Engine, EngineError};
use crate::stores::conversations::index::{Hit, Query, Unavailable};
use crate::stores::conversations::project::Project;

/// Characters of message content kept in each row's `preview` (Unicode scalar values).
pub use crate::stores::conversations::index::segment::PREVIEW_CHARS;

/// Most `%` wildcards a term may hold. DuckDB's `ILIKE` (the path used when the search
/// index is unavailable) backtracks exponentially in them, per row and without
/// checking for interrupts: at 100,000 messages 14 `%` took 18 s and 50 more than a
/// minute, past any deadline. The index's matcher is linear; the bound keeps both
/// paths giving the same answer.
pub const MAX_TERM_WILDCARDS: usize = 4;

/// Refuses a `term` with more than [`MAX_TERM_WILDCARDS`] `%` (argument `name`).
///
/// # Errors
/// [`EngineError::Argument`] naming the limit (never echoing the value).
pub fn check_wildcards(name: &str, term: &str) -> Result<(), EngineError> {
    let n = term.matches('%').count();
    if n > MAX_TERM_WILDCARDS {
        return Err(EngineError::Argument {
            name: name.into(),
            reason: format!(
                "at most {MAX_TERM_WILDCARDS} `%` wildcards, got {n} (each `%` makes the \
                 match costlier; `_` and plain text are not limited)"
            ),
        });
    }
    Ok(())
}

/// The engine (stateless; the store comes from the [`Context`]).
pub struct SearchConversations;

impl Engine for SearchConversations {
    fn name(&self) -> &'static str {
        "search_conversations"
    }

    /// Reads the conversations store (its search index, else DuckDB).
    fn effects(&self) -> super::Effects {
        super::Effects::reads(&[crate::stores::Store::Conversations])
    }

    /// Output shape:
    /// `{"term": str, "role": str|null, "limit": int, "mode": "keyword"|"questions",
    ///   "count": int, "rows": [{"date": "YYYY-MM-DD", "created": "YYYY-MM-DDTHH:MM:SS[.ffffff]Z",
    ///   "source", "role", "conversation_id", "message_id", "project": str|null, "preview"}],
    ///   "project": str|null}`.
    /// `preview` is `substr(content, 1, 200)` — raw, unescaped.
    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        let term = args.get("term").and_then(Value::as_str).unwrap_or("");
        let role = args.get("role").and_then(Value::as_str);
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(15);
        if !(1..=500).contains(&limit) {
            return Err(EngineError::Argument {
                name: "limit".into(),
                reason: format!("expected an integer in 1..=500, got {limit}"),
            });
        }
        check_wildcards("term", term)?;
        let project = Project::from_arg(args.get("project").and_then(Value::as_str));
        let questions = term.is_empty() && role == Some("user");
        let done = |rows: Vec<Value>| {
            json!({
                "term": term,
                "role": role,
                "limit": limit,
                "mode": if questions { "questions" } else { "keyword" },
                "count": rows.len(),
                "rows": rows,
                "project": project.as_ref().map(Project::fragment),
            })
        };
        let machine = args.get("machine").and_then(Value::as_str);
        let user = args.get("user").and_then(Value::as_str);
        if let Some(pool) = ctx.archive() {
            ctx.may_read(crate::stores::Store::Conversations)?;
            let q = crate::archive::search::Query {
                term: (!questions).then_some(term),
                role,
                project: project.as_ref().map(Project::fragment),
                machine,
                user,
                limit,
            };
            let mut rows = crate::archive::search::search(pool, &q)
                .map_err(|e| EngineError::Query(e.to_string()))?;
            for row in &mut rows {
                let field = |k: &str| row[k].as_str().unwrap_or_default().to_owned();
                let mut cites = super::cites_message(
                    &field("source"),
                    &field("conversation_id"),
                    &field("message_id"),
                );
                // The machine whose copy holds the message: pages link to that copy.
                cites["machine_id"] = row["machine_id"].clone();
                row["cites"] = cites;
            }
            return Ok(done(rows));
        }
        for name in ["machine", "user"] {
            ctx.archive_only_argument(name, args.get(name).unwrap_or(&Value::Null))?;
        }
        match ctx.conversations_index() {
            Ok(index) if !index.has_projects() => {
                note("the search index predates the project column");
            }
            Ok(index) => {
                let q = Query {
                    term: (!questions).then_some(term),
                    role,
                    exclude_injected: true,
                    limit: usize::try_from(limit).unwrap_or(15),
                    stop: ctx.cancel(),
                };
                match index.search_in(&q, project.as_ref()) {
                    Ok(hits) => return Ok(done(hits.iter().map(row_of_hit).collect())),
                    Err(e) => note(&format!("the search index is damaged ({e})")),
                }
            }
            Err(Unavailable::Missing) if !ctx.paths().conversations.exists() => {}
            Err(Unavailable::Missing) if !ctx.uses_search_index() => {}
            Err(why) => note(&why.to_string()),
        }
        let store = ctx.conversations()?;
        // Stores written before `is_injected` existed have no such column (and no
        // injected rows marked).
        let not_injected = if store.marks_injected()? {
            " AND NOT is_injected"
        } else {
            ""
        };

        let mut sql = String::from(
            "SELECT strftime(created, '%Y-%m-%d'), strftime(created, '%Y-%m-%dT%H:%M:%S.%fZ'), \
             source, role, conversation_id, message_id, substr(content, 1, 200), project \
             FROM all_conversations WHERE ",
        );
        let mut params: Vec<Box<dyn duckdb::ToSql>> = Vec::new();
        if questions {
            sql.push_str("role = 'user'");
            sql.push_str(not_injected);
            sql.push_str(" AND has_question = 1");
        } else {
            sql.push_str("content ILIKE '%' || ? || '%'");
            params.push(Box::new(term.to_owned()));
            if let Some(role) = role {
                sql.push_str(" AND role = ?");
                params.push(Box::new(role.to_owned()));
                if role == "user" {
                    sql.push_str(not_injected);
                }
            }
        }
        if let Some(p) = &project {
            sql.push_str(" AND ");
            sql.push_str(Project::SQL);
            params.push(Box::new(p.sql_param()));
        }
        sql.push_str(
            " ORDER BY created DESC, source ASC, conversation_id ASC, message_id ASC LIMIT ?",
        );
        params.push(Box::new(limit));

        let conn = store.connection()?;
        let mut stmt = conn.prepare(&sql).map_err(|e| store.error(e))?;
        let refs: Vec<&dyn duckdb::ToSql> = params.iter().map(AsRef::as_ref).collect();
        let rows = stmt
            .query_map(refs.as_slice(), |r| {
                let (source, conversation_id, message_id): (String, String, String) =
                    (r.get(2)?, r.get(4)?, r.get(5)?);
                Ok(json!({
                    "date": r.get::<_, String>(0)?,
                    "created": r.get::<_, String>(1)?,
                    "cites": super::cites_message(&source, &conversation_id, &message_id),
                    "source": source,
                    "role": r.get::<_, String>(3)?,
                    "conversation_id": conversation_id,
                    "message_id": message_id,
                    "project": r.get::<_, Option<String>>(7)?,
                    "preview": r.get::<_, String>(6)?,
                }))
            })
            .map_err(|e| store.error(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| store.error(e))?;
        Ok(done(rows))
    }
}

/// A result row from the index, shaped and formatted as the SQL path's.
fn row_of_hit(h: &Hit) -> Value {
    let t = chrono::DateTime::from_timestamp_micros(h.created_us).unwrap_or_default();
    json!({
        "date": t.format("%Y-%m-%d").to_string(),
        "created": t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        "source": h.source,
        "role": h.role,
        "conversation_id": h.conversation_id,
        "message_id": h.message_id,
        "project": h.project,
        "preview": h.preview,
        "cites": super::cites_message(&h.source, &h.conversation_id, &h.message_id),
    })
}

/// Says on stderr why this search answers from DuckDB, once per reason per process.
fn note(why: &str) {
    super::note_once(format!(
        "note: search-conversations: {why}; answering from DuckDB (a full scan). \
         `skills ingest` brings the index up to date."
    ));
}
