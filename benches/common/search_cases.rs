//! The twelve cases of the search-conversations benchmarks (`benches/search.rs` on the
//! local store, `benches/archive.rs` on the team archive) and the rows DuckDB's own
//! query returns for each, which every path must return too.

use serde_json::Value;
use skills::bench::gen;

/// (label, term, role); an empty term with role `user` is the questions mode.
pub const CASES: &[(&str, &str, Option<&str>)] = &[
    ("common `the`", "the", None),
    ("common `serde`", "serde", None),
    ("rare `persofi`", gen::RARE_TERM, None),
    ("absent `zqxjvkw`", gen::ABSENT_TERM, None),
    ("multi-word `async fn`", "async fn", None),
    ("underscore `user_id`", "user_id", None),
    ("wildcard `serde%json`", "serde%json", None),
    ("multibyte `CAFÉ`", "CAFÉ", None),
    ("multibyte `café`", "café", None),
    ("role=user `serde`", "serde", Some("user")),
    (
        "role=assistant `persofi`",
        gen::RARE_TERM,
        Some("assistant"),
    ),
    ("questions mode", "", Some("user")),
];

/// Rows asked of every case.
pub const LIMIT: usize = 15;

/// The keys DuckDB returns for the engine's query (`ILIKE` mode, or questions mode
/// when `term` is empty and `role` is `user`), with the engine's order.
pub fn duckdb_keys(
    conn: &duckdb::Connection,
    term: &str,
    role: Option<&str>,
    limit: usize,
) -> duckdb::Result<Vec<(String, String)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let order = " ORDER BY created DESC, source, conversation_id, message_id LIMIT ?";
    let map = |r: &duckdb::Row<'_>| Ok((r.get(0)?, r.get(1)?));
    if term.is_empty() && role == Some("user") {
        let sql = format!(
            "SELECT conversation_id, message_id FROM all_conversations \
             WHERE role = 'user' AND NOT is_injected AND has_question = 1{order}"
        );
        return conn
            .prepare(&sql)?
            .query_map(duckdb::params![limit], map)?
            .collect();
    }
    let mut sql = String::from(
        "SELECT conversation_id, message_id FROM all_conversations \
         WHERE content ILIKE '%' || ? || '%'",
    );
    if let Some(role) = role {
        sql.push_str(" AND role = ?");
        if role == "user" {
            sql.push_str(" AND NOT is_injected");
        }
        sql.push_str(order);
        return conn
            .prepare(&sql)?
            .query_map(duckdb::params![term, role, limit], map)?
            .collect();
    }
    sql.push_str(order);
    conn.prepare(&sql)?
        .query_map(duckdb::params![term, limit], map)?
        .collect()
}

/// The (conversation_id, message_id) of each row of a search-conversations answer.
pub fn engine_keys(data: &Value) -> Vec<(String, String)> {
    data["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["conversation_id"].as_str().unwrap_or("").to_owned(),
                        r["message_id"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}
