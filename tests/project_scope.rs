//! Issue 30 item 6, project scoping: search-conversations, semantic-search and recall
//! take `project`, a case-insensitive literal fragment of the stored project path
//! (Claude Code's `cwd`). Real inputs: Claude Code session files of several projects
//! (one session changes folder half-way) and a ChatGPT export (no project), imported
//! by `skills ingest`. search-conversations with `project` is compared with DuckDB's
//! `project ILIKE '%x%' ESCAPE '\'` (index on and off); semantic-search applies it
//! before the top `limit` in every mode; recall passes it to its transcript sources.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use skills::engines::search_conversations::SearchConversations;
use skills::engines::{Context, Engine};
use skills::stores::StorePaths;

const ALPHA: &str = "/home/me/Alpha_Repo";
const ALPHA_X: &str = "/home/me/alphaXrepo";
const BETA: &str = "/home/me/beta%repo";

const TOPICS: &[&str] = &[
    "the deploy cache keeps stale assets after a release",
    "why does the linker fail to find libduckdb at runtime",
    "rename the config loader and keep the old path working",
    "the flaky test in the importer times out on CI",
    "should we store timestamps in UTC or local time",
    "the login flow redirects twice after the password reset",
];

fn skills(data: &Path, args: &[&str]) -> (bool, String, String) {
    common::cli::run(
        common::cli::with_data(data)
            .env("SKILLS_NOW", "2026-07-03T12:00:00Z")
            .args(args),
    )
}

fn run(data: &Path, skill: &str, args: &[String]) -> Value {
    let mut a = vec!["--json", "run", skill];
    for x in args {
        a.push("--arg");
        a.push(x);
    }
    let (ok, out, err) = skills(data, &a);
    assert!(ok, "{skill} {args:?} failed: {err}");
    let v: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{skill} --json: {e}\n{out}"));
    v["data"].clone()
}

/// One Claude Code session file: `turns` user/assistant pairs, the folder `cwd(i)`
/// for message `i`.
fn session(
    dir: &Path,
    id: &str,
    start_minute: u32,
    turns: usize,
    cwd: &dyn Fn(usize) -> &'static str,
) {
    let mut lines = Vec::new();
    let mut parent = Value::Null;
    for i in 0..turns * 2 {
        let uuid = format!("{id}-{i:04}");
        let topic = TOPICS[(i / 2 + id.len()) % TOPICS.len()];
        let ts = format!(
            "2026-03-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + start_minute / 600,
            (start_minute / 60) % 10,
            start_minute % 60,
            i % 60
        );
        let line = if i % 2 == 0 {
            json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
                "cwd": cwd(i), "sessionId": id, "version": "2.1.0", "type": "user",
                "message": {"role": "user", "content": format!("{topic}? (turn {i} in {id})")},
                "uuid": uuid, "timestamp": ts})
        } else {
            json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
                "cwd": cwd(i), "sessionId": id, "version": "2.1.0", "type": "assistant",
                "message": {"model": "claude-opus-4-1", "id": format!("msg_{uuid}"), "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": format!("About {topic}: here is what I found in turn {i}.")}],
                    "stop_reason": "end_turn"},
                "uuid": uuid, "timestamp": ts})
        };
        parent = json!(uuid);
        lines.push(line.to_string());
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

/// Imports sessions of three projects (one session moves from alpha to beta half-way)
/// and a ChatGPT export (NULL project) into a fresh data folder.
fn store(tmp: &Path) -> PathBuf {
    let src = tmp.join("src");
    let cc = src.join("claude-code");
    session(&cc.join("-home-me-Alpha-Repo"), "a1", 0, 10, &|_| ALPHA);
    session(&cc.join("-home-me-Alpha-Repo"), "a2", 90, 8, &|_| ALPHA);
    session(&cc.join("-home-me-alphaXrepo"), "x1", 200, 8, &|_| ALPHA_X);
    session(&cc.join("-home-me-beta-repo"), "b1", 300, 10, &|_| BETA);
    session(&cc.join("-home-me-Alpha-Repo"), "m1", 400, 8, &|i| {
        if i < 8 {
            ALPHA
        } else {
            BETA
        }
    });
    let chatgpt = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance/fixtures/transcripts/chatgpt");
    std::fs::create_dir_all(src.join("chatgpt")).unwrap();
    for f in std::fs::read_dir(chatgpt).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, src.join("chatgpt").join(f.file_name().unwrap())).unwrap();
    }
    let data = tmp.join("data");
    let (ok, _, err) = skills(&data, &["ingest", "--quiet", &src.display().to_string()]);
    assert!(ok, "ingest: {err}");
    data
}

/// DuckDB's own answer: the rows of `term` (and `role`) whose project ILIKE-contains
/// `project` with `\`, `%` and `_` escaped, in search order.
fn duckdb_rows(
    data: &Path,
    term: &str,
    role: Option<&str>,
    project: &str,
    limit: i64,
) -> Vec<Value> {
    let conn = duckdb::Connection::open_with_flags(
        StorePaths::in_dir(data).conversations,
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .unwrap(),
    )
    .unwrap();
    let escaped = project
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    let mut sql = String::from(
        "SELECT source, conversation_id, message_id, project, substr(content, 1, 200) \
         FROM all_conversations WHERE content ILIKE '%' || ? || '%'",
    );
    let mut params: Vec<String> = vec![term.to_owned()];
    if let Some(r) = role {
        sql.push_str(" AND role = ?");
        params.push(r.to_owned());
        if r == "user" {
            sql.push_str(" AND NOT is_injected");
        }
    }
    sql.push_str(" AND project ILIKE '%' || ? || '%' ESCAPE '\\'");
    params.push(escaped);
    sql.push_str(&format!(
        " ORDER BY created DESC, source ASC, conversation_id ASC, message_id ASC LIMIT {limit}"
    ));
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows = stmt
        .query_map(duckdb::params_from_iter(params.iter()), |r| {
            Ok(json!({
                "source": r.get::<_, String>(0)?,
                "conversation_id": r.get::<_, String>(1)?,
                "message_id": r.get::<_, String>(2)?,
                "project": r.get::<_, Option<String>>(3)?,
                "preview": r.get::<_, String>(4)?,
            }))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

fn shown(rows: &Value) -> Vec<Value> {
    rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            json!({
                "source": r["source"], "conversation_id": r["conversation_id"],
                "message_id": r["message_id"], "project": r["project"], "preview": r["preview"],
            })
        })
        .collect()
}

fn search(ctx: &Context, args: Value) -> Value {
    SearchConversations.call(&args, ctx).unwrap()
}

#[test]
fn search_conversations_project_matches_duckdb_ilike_with_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = store(tmp.path());
    let fast = Context::new(StorePaths::in_dir(&data)).with_search_index(true);
    let slow = Context::new(StorePaths::in_dir(&data)).with_search_index(false);
    let fragments = [
        "alpha",
        "ALPHA_REPO",
        "Alpha_",
        "alpha_r",
        "alphax",
        "a_r",
        "beta%",
        "%",
        "_",
        "%repo",
        "/home/me/",
        "repo",
        "\\",
        "me/beta%re",
        "no-such-project",
        "ALPHAXREPO",
    ];
    let mut compared = 0;
    for fragment in fragments {
        for term in ["", "deploy", "LINKER", "turn 1", "e_p"] {
            for role in [None, Some("user"), Some("assistant")] {
                for limit in [1i64, 7, 500] {
                    let args =
                        json!({"term": term, "role": role, "limit": limit, "project": fragment});
                    let (a, b) = (search(&fast, args.clone()), search(&slow, args));
                    assert_eq!(
                        a, b,
                        "index vs DuckDB path: {fragment:?} {term:?} {role:?} {limit}"
                    );
                    if term.is_empty() && role == Some("user") {
                        continue; // the questions mode: no ILIKE term
                    }
                    let want = duckdb_rows(&data, term, role, fragment, limit);
                    assert_eq!(shown(&a), want, "{fragment:?} {term:?} {role:?} {limit}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 600, "{compared}");
}

#[test]
fn project_narrows_is_case_insensitive_literal_and_absent_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = store(tmp.path());
    let ctx = Context::new(StorePaths::in_dir(&data)).with_search_index(true);
    let all = search(&ctx, json!({"term": "", "limit": 500}));
    let total = all["count"].as_u64().unwrap();
    // Every row shows its project; the ChatGPT rows have none.
    let projects: std::collections::BTreeSet<String> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["project"].as_str().unwrap_or("NULL").to_owned())
        .collect();
    assert_eq!(
        projects.into_iter().collect::<Vec<_>>(),
        [
            "/home/me/Alpha_Repo",
            "/home/me/alphaXrepo",
            "/home/me/beta%repo",
            "NULL"
        ]
    );
    // Narrows, case-insensitively.
    let alpha = search(
        &ctx,
        json!({"term": "", "limit": 500, "project": "alpha_repo"}),
    );
    let upper = search(
        &ctx,
        json!({"term": "", "limit": 500, "project": "  ALPHA_REPO "}),
    );
    assert_eq!(alpha["rows"], upper["rows"]);
    let n = alpha["count"].as_u64().unwrap();
    // a1 (20) + a2 (16) + the first 8 messages of m1.
    assert_eq!(n, 44, "{alpha}");
    assert!(alpha["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["project"] == ALPHA));
    // `_` is literal: alphaXrepo is not matched by "alpha_repo" but by "alpha".
    let loose = search(&ctx, json!({"term": "", "limit": 500, "project": "ALPHA"}));
    assert_eq!(loose["count"].as_u64().unwrap(), n + 16);
    // `%` is literal: only the beta folder holds one.
    let pct = search(&ctx, json!({"term": "", "limit": 500, "project": "%"}));
    assert_eq!(pct["count"].as_u64().unwrap(), 20 + 8);
    assert!(pct["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["project"] == BETA));
    // As a wildcard `a%e` would match nearly every path; literally none holds it
    // (while `a%r`, inside beta%repo, is found).
    assert_eq!(
        search(&ctx, json!({"term": "", "limit": 500, "project": "a%e"}))["count"],
        0
    );
    assert_eq!(
        search(&ctx, json!({"term": "", "limit": 500, "project": "A%R"}))["count"],
        28
    );
    assert!(n < total);
    // Absent, null, empty and blank are the same unfiltered search.
    for none in [json!(null), json!(""), json!("   ")] {
        let same = search(&ctx, json!({"term": "", "limit": 500, "project": none}));
        assert_eq!(same["rows"], all["rows"]);
    }
    // The rendered table is the seed's: no project column.
    let (ok, out, err) = skills(
        &data,
        &[
            "run",
            "search-conversations",
            "--arg",
            "term=deploy",
            "--arg",
            "project=beta",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        out.starts_with("| Date | Source | Role | conv_id | Preview (200ch) |"),
        "{out}"
    );
    assert!(out.contains("b1"), "{out}");
    assert!(!out.contains("| a1 |"), "{out}");
}

#[test]
fn an_overlong_project_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let data = store(tmp.path());
    let long = format!("project={}", "p".repeat(1025));
    for (skill, first) in [
        ("search-conversations", "term=deploy"),
        ("semantic-search", "query=deploy"),
        ("recall", "question=deploy"),
    ] {
        let (ok, out, err) = skills(&data, &["run", skill, "--arg", first, "--arg", &long]);
        assert!(!ok, "{skill}: {out}");
        assert!(
            err.contains("project") && err.contains("1024"),
            "{skill}: {err}"
        );
    }
    // 1024 characters are accepted (and match nothing).
    let ok_len = format!("project={}", "p".repeat(1024));
    let out = run(
        &data,
        "search-conversations",
        &["term=deploy".into(), ok_len],
    );
    assert_eq!(out["count"], 0);
}

/// [`store`] in a temporary folder, when the embedding model is here (else the test
/// is recorded as not run).
fn store_with_model() -> Option<(tempfile::TempDir, PathBuf)> {
    common::embedder()?;
    let tmp = tempfile::tempdir().unwrap();
    let data = store(tmp.path());
    Some((tmp, data))
}

fn ids(v: &Value) -> Vec<String> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["conversation_id"].as_str().unwrap(),
                r["message_id"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn semantic_search_filters_by_project_before_the_cut_in_every_mode() {
    let Some((_tmp, data)) = store_with_model() else {
        return;
    };
    let q = "query=the linker cannot find the duckdb library".to_owned();
    // Semantic mode ranks by exact cosine: the filtered top k is the first k rows of
    // the whole ranking that pass the filter.
    let everything = run(
        &data,
        "semantic-search",
        &[q.clone(), "limit=500".into(), "mode=semantic".into()],
    );
    for fragment in ["beta%", "ALPHA_repo", "alphax"] {
        let keep: Vec<String> = everything["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                r["project"]
                    .as_str()
                    .is_some_and(|p| p.to_lowercase().contains(&fragment.to_lowercase()))
            })
            .map(|r| {
                format!(
                    "{}/{}",
                    r["conversation_id"].as_str().unwrap(),
                    r["message_id"].as_str().unwrap()
                )
            })
            .collect();
        assert!(keep.len() >= 5, "{fragment}: {}", keep.len());
        let top = run(
            &data,
            "semantic-search",
            &[
                q.clone(),
                "limit=5".into(),
                "mode=semantic".into(),
                format!("project={fragment}"),
            ],
        );
        assert_eq!(top["project"], fragment);
        assert_eq!(ids(&top), keep[..5].to_vec(), "{fragment}");
        // Hybrid: still k rows, every one of the project.
        let hybrid = run(
            &data,
            "semantic-search",
            &[q.clone(), "limit=5".into(), format!("project={fragment}")],
        );
        assert_eq!(hybrid["count"], 5, "{fragment}: {hybrid}");
        for r in hybrid["rows"].as_array().unwrap() {
            let p = r["project"].as_str().unwrap();
            assert!(
                p.to_lowercase().contains(&fragment.to_lowercase()),
                "{fragment}: {r}"
            );
        }
    }
    // The switching session: only its beta half is kept for "beta".
    let beta = run(
        &data,
        "semantic-search",
        &[q.clone(), "limit=500".into(), "project=BETA".into()],
    );
    let m1 = common::items_where(&beta["rows"], "conversation_id", "m1");
    assert!(!m1.is_empty());
    assert!(m1.iter().all(|r| r["project"] == BETA));
    // Literal hits of the hybrid leg obey it too, and a `%` fragment is literal.
    let lit = run(
        &data,
        "semantic-search",
        &[
            "query=turn 3 in".into(),
            "limit=50".into(),
            "project=/home/me/beta%repo".into(),
        ],
    );
    assert!(lit["count"].as_u64().unwrap() > 0);
    assert!(lit["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["project"] == BETA));
    let none = run(&data, "semantic-search", &[q.clone(), "project=a%e".into()]);
    assert_eq!(none["count"], 0);
    // Absent: unchanged (no project echoed, same rows as an empty fragment).
    let plain = run(&data, "semantic-search", std::slice::from_ref(&q));
    let empty = run(&data, "semantic-search", &[q, "project=".into()]);
    assert_eq!(plain["rows"], empty["rows"]);
    assert_eq!(plain["project"], Value::Null);
}

#[test]
fn recall_passes_project_to_its_transcript_sources() {
    let Some((_tmp, data)) = store_with_model() else {
        return;
    };
    let args = |p: Option<&str>| {
        let mut a = vec![
            "question=the linker cannot find the duckdb library".to_owned(),
            "term=linker".to_owned(),
            "per_source=20".to_owned(),
            "max_tokens=32000".to_owned(),
        ];
        if let Some(p) = p {
            a.push(format!("project={p}"));
        }
        a
    };
    let all = run(&data, "recall", &args(None));
    let convs = |v: &Value| -> std::collections::BTreeSet<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["source"].as_str().unwrap().starts_with("transcript"))
            .map(|i| {
                i["id"]
                    .as_str()
                    .unwrap()
                    .split('/')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    assert!(convs(&all).len() >= 3, "{:?}", convs(&all));
    let scoped = run(&data, "recall", &args(Some("BETA%")));
    let c = convs(&scoped);
    assert!(!c.is_empty());
    assert!(c.iter().all(|c| c == "b1" || c == "m1"), "{c:?}");
    let sources: std::collections::BTreeSet<String> = scoped["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| {
            i["sources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
        })
        .collect();
    assert!(
        sources.contains("transcript (meaning)") && sources.contains("transcript (keyword)"),
        "{sources:?}"
    );
}
