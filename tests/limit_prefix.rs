//! The first rows of a call do not depend on `limit`: for every skill that ranks
//! (semantic-search, memo-search, search-conversations), every mode and filter, the
//! first k rows of a call with `limit: n > k` are the rows of the call with `limit: k`
//! (issue 44, item 2: a client paging or asking for more sees the same first rows).
//! recall takes no `limit`: its pack is cut to `max_tokens`, so the items of a smaller
//! budget are the first items of a larger one.
//!
//! The stores are the corpus's claude-code and codex transcripts (`skills ingest`) and
//! its memories (`skills memo import`), imported by the real binary with the static
//! embedder (`SKILLS_EMBEDDER=static`); the calls go through the host in process,
//! with the same model. Not run without the corpus (`$SKILLS_CORPUS_DIR`) or the
//! model.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use serde_json::{json, Value};

/// The limits compared: each call's rows against the first rows of every larger one.
const LIMITS: [usize; 6] = [1, 3, 5, 10, 20, 37];

/// Runs `skills args…` with the static embedder against the data folder `data`.
fn skills(data: &Path, args: &[&str]) {
    common::cli::ok(
        common::cli::with_data(data)
            .env("SKILLS_EMBEDDER", "static")
            .args(args),
    );
}

/// The recall budgets compared (`max_tokens`).
const BUDGETS: [usize; LIMITS.len()] = [200, 1000, 4000, 8000, 16000, 32000];

/// The identity of a row: what distinguishes it from every other row of the skill.
fn key(skill: &str, row: &Value) -> String {
    match skill {
        "memo-search" | "recall" => row["id"].to_string(),
        _ => format!("{}/{}", row["conversation_id"], row["message_id"]),
    }
}

/// Where a skill's rows are in its output.
fn rows_of<'a>(skill: &str, data: &'a Value) -> &'a [Value] {
    let field = match skill {
        "memo-search" => "hits",
        "recall" => "items",
        _ => "rows",
    };
    data[field].as_array().map_or(&[], Vec::as_slice)
}

/// The argument that says how many rows: `limit`, recall's `max_tokens`.
fn size_arg(skill: &str) -> &'static str {
    if skill == "recall" {
        "max_tokens"
    } else {
        "limit"
    }
}

/// The rows' keys of `skill` called with `args` and `limit` (recall: `max_tokens`).
fn call(host: &skills::host::Host, skill: &str, args: &Value, limit: usize) -> Vec<String> {
    let mut args = args.clone();
    args[size_arg(skill)] = json!(limit);
    let out = host
        .call(skill, args.clone())
        .unwrap_or_else(|e| panic!("{skill} {args}: {e}"));
    rows_of(skill, &out.data)
        .iter()
        .map(|r| key(skill, r))
        .collect()
}

/// Checks the prefix property of `skill` for one query's `args` over [`LIMITS`]
/// (recall: [`BUDGETS`]); returns how many rows the largest call gave and the
/// failures found.
fn check(host: &skills::host::Host, skill: &str, args: &Value) -> (usize, Vec<String>) {
    let sizes: &[usize] = if skill == "recall" { &BUDGETS } else { &LIMITS };
    let calls: Vec<(usize, Vec<String>)> = sizes
        .iter()
        .map(|&n| (n, call(host, skill, args, n)))
        .collect();
    let mut failures = Vec::new();
    for (i, (k, small)) in calls.iter().enumerate() {
        for (n, large) in &calls[i + 1..] {
            // A budget holds as many items as fit: compare the ones the smaller holds.
            let rows = if skill == "recall" { small.len() } else { *k };
            let first = &large[..large.len().min(rows)];
            if small.as_slice() != first {
                failures.push(format!(
                    "{skill} {args}: limit {k} gave {small:?}, the first {k} of limit {n} are {first:?}"
                ));
            }
        }
    }
    (calls.last().map_or(0, |c| c.1.len()), failures)
}

#[test]
fn the_first_rows_do_not_depend_on_limit() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let embedder = match skills::embed::Embedder::load_tier(skills::embed::Tier::Static) {
        Ok(e) => std::sync::Arc::new(e),
        Err(e) => {
            common::not_run(&format!(
                "no embedding model ({e}; run scripts/fetch-model)"
            ));
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let folder = |name: &str| corpus.join(name).display().to_string();
    skills(
        &data,
        &[
            "ingest",
            "--quiet",
            &folder("claude-code"),
            &folder("codex"),
        ],
    );
    skills(&data, &["memo", "import", &folder("memories")]);
    let host = skills::host::Host::load(
        &common::repo_skills(),
        skills::engines::Context::new(skills::stores::StorePaths::in_dir(&data))
            .with_embedder(Some(embedder)),
    );

    // Queries in words the corpus holds and in words it does not hold as written.
    let queries = [
        "error when running the tests",
        "how do I configure the database connection",
        "refactor the parser",
        "what did we decide about memory",
    ];
    // search-conversations' terms: words the transcripts hold often.
    let terms = ["error", "file", "test", "run"];
    // A conversation and a memory type the stores hold, as filters.
    let some_row = host
        .call("search-conversations", json!({"term": "test", "limit": 1}))
        .unwrap();
    let conversation = some_row.data["rows"][0]["conversation_id"].clone();
    assert!(conversation.is_string(), "{}", some_row.data);
    let some_memory = host
        .call(
            "memo-search",
            json!({"query": "memory", "mode": "bm25", "limit": 1}),
        )
        .unwrap();
    let kind = some_memory.data["hits"][0]["type"].clone();
    assert!(kind.is_string(), "{}", some_memory.data);

    let mut cases: Vec<(&str, Value)> = Vec::new();
    for mode in ["hybrid", "semantic"] {
        for filter in [
            json!({}),
            json!({"role": "user"}),
            json!({"role": "assistant"}),
            json!({"source": "codex"}),
            json!({"since": "2025-06-01"}),
            json!({"conversation_id": conversation}),
        ] {
            let mut args = filter;
            args["mode"] = json!(mode);
            cases.push(("semantic-search", args));
        }
    }
    for mode in ["hybrid", "vec", "bm25", "exact", "fuzzy"] {
        for filter in [json!({}), json!({"type": kind})] {
            let mut args = filter;
            args["mode"] = json!(mode);
            cases.push(("memo-search", args));
        }
    }
    for filter in [json!({}), json!({"role": "user"})] {
        cases.push(("search-conversations", filter));
    }
    cases.push(("recall", json!({})));

    let mut failures = Vec::new();
    // Per skill, the most rows one call at the largest limit gave: the property must
    // have been checked on full pages, not on empty results.
    let mut most: std::collections::BTreeMap<&str, usize> = Default::default();
    for (skill, filter) in &cases {
        for (i, q) in queries.iter().enumerate() {
            let mut args = filter.clone();
            let field = match *skill {
                // search-conversations matches its term as written.
                "search-conversations" => "term",
                "recall" => "question",
                _ => "query",
            };
            let text = if *skill == "search-conversations" {
                terms[i]
            } else {
                q
            };
            args[field] = json!(text);
            let (rows, found) = check(&host, skill, &args);
            let best = most.entry(skill).or_default();
            *best = (*best).max(rows);
            failures.extend(found);
        }
    }
    for skill in ["semantic-search", "memo-search", "search-conversations"] {
        assert_eq!(
            most.get(skill).copied(),
            Some(LIMITS[LIMITS.len() - 1]),
            "{skill}: no call filled the largest limit"
        );
    }
    assert!(
        most.get("recall").copied().unwrap_or(0) >= 15,
        "recall: no pack held fifteen items"
    );
    assert!(
        failures.is_empty(),
        "{} of {} comparisons differ:\n{}",
        failures.len(),
        cases.len() * queries.len() * LIMITS.len() * (LIMITS.len() - 1) / 2,
        failures.join("\n")
    );
}
