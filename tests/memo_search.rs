//! Integration tests of the `memo_search` engine on memories imported from the shared
//! corpus (`$SKILLS_CORPUS_DIR/memories`, default `<manifest>/../shared/corpus`) plus
//! the bundled sample (`data/sample/memories`). The clock is fixed at Friday
//! 2026-07-03 12:00 UTC. Tests needing the embedding model run when it is present
//! (`$SKILLS_MODEL_DIR`, see `scripts/fetch-model`) and say they were skipped otherwise.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on failure by design

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use skills::embed::Embedder;
use skills::engines::memo_search::MemoSearch;
use skills::engines::{Context, Engine, EngineError};
use skills::ingest::memories::{import_paths_with, ImportSummary};
use skills::stores::memories::save::{add_memory_with, MemoryInput};
use skills::stores::memories::MemoryStore;
use skills::stores::StorePaths;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-07-03T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn corpus_memories() -> Option<PathBuf> {
    let dir = common::corpus()?.join("memories");
    if dir.is_dir() {
        Some(dir)
    } else {
        common::not_run(&format!("no memories/ in the corpus at {}", dir.display()));
        None
    }
}

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/memories")
}

struct Fixture {
    _dir: tempfile::TempDir,
    paths: StorePaths,
    summary: ImportSummary,
    embedder: Option<Arc<Embedder>>,
}

impl Fixture {
    fn ctx(&self) -> Context {
        Context::new(self.paths.clone())
            .with_now(now())
            .with_embedder(self.embedder.clone())
    }

    fn run(&self, args: Value) -> Value {
        MemoSearch
            .call(&args, &self.ctx())
            .unwrap_or_else(|e| panic!("{args}: {e}"))
    }

    fn try_run(&self, args: Value) -> Result<Value, EngineError> {
        MemoSearch.call(&args, &self.ctx())
    }
}

fn build(embedder: Option<Arc<Embedder>>) -> Option<Fixture> {
    let corpus = corpus_memories()?;
    let dir = tempfile::tempdir().unwrap();
    let paths = StorePaths::in_dir(dir.path());
    let store = MemoryStore::open_rw(&paths.memories).unwrap();
    let summary = import_paths_with(&store, &[corpus, sample_dir()], embedder.as_deref()).unwrap();
    let add = |title: &str, body: &str| {
        let input = MemoryInput {
            title: title.into(),
            body: body.into(),
            kind: Some("fact".into()),
            ..Default::default()
        };
        add_memory_with(&store, input, embedder.as_deref(), now()).unwrap();
    };
    add(
        "Embedded database choice",
        "We picked sqlite for the cache.",
    );
    add("Typo one", "The sqlit driver was mentioned in a log line.");
    add("Typo two", "Someone wrote sqltie in the migration notes.");
    drop(store);
    Some(Fixture {
        _dir: dir,
        paths,
        summary,
        embedder,
    })
}

fn lexical() -> Option<Fixture> {
    build(None)
}

fn titles(out: &Value) -> Vec<String> {
    out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["title"].as_str().unwrap().to_owned())
        .collect()
}

fn note(out: &Value) -> String {
    out["note"].as_str().unwrap_or("").to_owned()
}

fn updated_dates(out: &Value) -> Vec<String> {
    out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["updated"].as_str().unwrap()[..10].to_owned())
        .collect()
}

/// A query whose words each hit one sample memory, so OR-fallback returns them all.
const BROAD: &str = "sqlite fallbacks wrong-book fechas placeholder release budget";

#[test]
fn import_corpus_is_idempotent_and_reports_bad_files() {
    let Some(fx) = lexical() else { return };
    let s = &fx.summary;
    assert!(s.files >= 60, "{s}");
    assert_eq!(s.files_skipped, 0, "{s}");
    assert!(s.faults.is_empty(), "{s}");
    // Letta agent files: one memory per core-memory block.
    let out = fx.run(json!({"query": "archival taxonomy", "mode": "exact", "type": "core-memory"}));
    assert!(
        titles(&out)
            .iter()
            .any(|t| t.ends_with(": archival_taxonomy")),
        "{:?}",
        titles(&out)
    );
    assert!(s.memories >= 60, "{s}");
    assert_eq!(s.inserted, s.memories, "{s}");
    let store = MemoryStore::open_rw(&fx.paths.memories).unwrap();
    let again =
        import_paths_with(&store, &[corpus_memories().unwrap(), sample_dir()], None).unwrap();
    assert_eq!(again.inserted, 0, "{again}");
    assert_eq!(again.updated, 0, "{again}");
    assert_eq!(again.unchanged, s.memories, "{again}");
    // A note without frontmatter is titled from its first line.
    let out = fx.run(json!({"query": "gracefully skip validation", "mode": "bm25"}));
    assert_eq!(titles(&out)[0], "A Note Without Frontmatter");
    // Bad files are reported with path and reason, and skipped.
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(bad.path().join("broken.md"), "---\ntitle: [oops\n---\nbody").unwrap();
    std::fs::write(bad.path().join("empty.md"), "").unwrap();
    std::fs::write(bad.path().join("ok.md"), "# Fine\nbody").unwrap();
    let r = import_paths_with(
        &store,
        &[bad.path().to_path_buf(), bad.path().join("missing.md")],
        None,
    )
    .unwrap();
    assert_eq!(r.inserted, 1, "{r}");
    assert_eq!(r.faults.len(), 3, "{r}");
    assert!(r.to_string().contains("broken.md"), "{r}");
    assert!(serde_json::to_value(&r).unwrap()["faults"][0]["reason"].is_string());
}

#[test]
fn bm25_finds_claude_code_memories() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "defensive fallbacks", "mode": "bm25"}));
    assert_eq!(titles(&out)[0], "No defensive fallbacks");
    assert_eq!(out["mode"], "bm25");
    let hit = &out["hits"][0];
    assert_eq!(hit["type"], "feedback");
    assert!(hit["score"].as_f64().unwrap() > 0.0);
    for key in [
        "id",
        "title",
        "type",
        "tags",
        "created",
        "updated",
        "body",
        "score",
        "files_read",
        "files_modified",
    ] {
        assert!(hit.get(key).is_some(), "hit lacks `{key}`");
    }
}

#[test]
fn fts_syntax_in_queries_never_errors() {
    let Some(fx) = lexical() else { return };
    for q in [
        "wrong-book",
        "don't",
        "50%",
        "\"",
        "src/main.py",
        "user@example.com",
        "AND OR NOT",
        "NEAR(a b)",
        "*",
        "a:b",
        "(",
        "title:x",
    ] {
        for mode in ["bm25", "exact", "fuzzy", "hybrid"] {
            let r = fx.try_run(json!({"query": q, "mode": mode}));
            assert!(r.is_ok(), "{mode} {q}: {r:?}");
        }
    }
    let huge: String = (0..5000).map(|i| format!("w{i} ")).collect();
    for mode in ["bm25", "exact", "fuzzy", "hybrid"] {
        let out = fx.run(json!({"query": huge, "mode": mode}));
        assert!(note(&out).contains("only 64 were searched"), "{mode}");
    }
    let first = |q: &str| {
        titles(&fx.run(json!({"query": q, "mode": "bm25"})))
            .first()
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        first("wrong-book"),
        "Importer attached notes to the wrong book"
    );
    assert_eq!(first("user@example.com"), "Contact address in fixtures");
    let top3 = titles(&fx.run(json!({"query": "src/main.py", "mode": "bm25", "limit": 3})));
    assert!(
        top3.contains(&"Contact address in fixtures".to_owned()),
        "{top3:?}"
    );
    assert_eq!(first("50%"), "Release checklist");
    assert!(!titles(&fx.run(json!({"query": "don't", "mode": "exact"}))).is_empty());
    let out = fx.run(json!({"query": "\"", "mode": "bm25"}));
    assert_eq!(out["count"], 0);
    assert!(note(&out).contains("no searchable words"));
}

#[test]
fn empty_and_whitespace_queries_return_no_hits() {
    let Some(fx) = lexical() else { return };
    for q in ["", "   ", "\n\t"] {
        let out = fx.run(json!({"query": q}));
        assert_eq!(out["hits"], json!([]));
        assert!(note(&out).contains("empty query"));
    }
}

#[test]
fn bm25_ranks_the_disjunction_but_exact_is_strict_and() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "sqlite zebracornish", "mode": "bm25", "explain": true}));
    assert!(out["count"].as_u64().unwrap() > 0);
    let legs = common::items_where(&out["trace"], "stage", "leg");
    assert_eq!(legs[0]["fts_query"], "\"sqlite\" OR \"zebracornish\"");
    let out = fx.run(json!({"query": "sqlite zebracornish", "mode": "exact"}));
    assert_eq!(out["count"], 0);
    // Memories holding both words rank above those holding one (the BM25 sum), and
    // those holding one are still returned.
    let out =
        fx.run(json!({"query": "python virtual", "mode": "bm25", "body_chars": -1, "limit": 50}));
    let both: Vec<bool> = out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let text = format!("{} {} {}", h["title"], h["tags"], h["body"]).to_lowercase();
            text.contains("python") && text.contains("virtual")
        })
        .collect();
    assert!(both.first() == Some(&true), "{both:?}");
    let exact = fx.run(json!({"query": "python virtual", "mode": "exact", "limit": 50}));
    assert!(exact["count"].as_u64() <= out["count"].as_u64());
}

#[test]
fn exact_boosts_title_and_tags() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "release", "mode": "exact"}));
    assert_eq!(titles(&out)[0], "Release checklist");
    let out = fx.run(json!({"query": "fts5", "mode": "exact"}));
    assert_eq!(titles(&out)[0], "Store memories in SQLite with FTS5");
}

#[test]
fn accents_fold_both_ways() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "decision", "mode": "bm25", "limit": 100}));
    assert!(titles(&out).contains(&"Decisión — fechas en español".to_owned()));
    let out = fx.run(json!({"query": "decisión", "mode": "bm25", "limit": 100}));
    assert!(
        titles(&out).contains(&"Installing from PyPI vs Local Source".to_owned()),
        "{:?}",
        titles(&out)
    );
    let out = fx.run(json!({"query": "dias tildes", "mode": "exact"}));
    assert_eq!(titles(&out), vec!["Decisión — fechas en español"]);
}

#[test]
fn fuzzy_tolerates_typos() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "sqlite", "mode": "fuzzy", "limit": 50, "explain": true}));
    let t = titles(&out);
    for want in ["Embedded database choice", "Typo one", "Typo two"] {
        assert!(t.contains(&want.to_owned()), "{want} missing from {t:?}");
    }
    let expand = out["trace"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "expand")
        .unwrap();
    let terms = expand["expansions"]["sqlite"].as_array().unwrap();
    for term in ["sqlite", "sqlit", "sqltie"] {
        assert!(terms.contains(&json!(term)), "{terms:?}");
    }
    let bm25 = titles(&fx.run(json!({"query": "sqlite", "mode": "bm25", "limit": 50})));
    assert!(!bm25.contains(&"Typo two".to_owned()));
    let out = fx.run(json!({"query": "defensiev fallbakcs", "mode": "fuzzy"}));
    assert_eq!(titles(&out)[0], "No defensive fallbacks");
    // Short tokens get no expansion.
    assert_eq!(fx.run(json!({"query": "zq", "mode": "fuzzy"}))["count"], 0);
}

#[test]
fn vec_without_model_is_a_clear_error_and_hybrid_notes_it() {
    let Some(fx) = lexical() else { return };
    let err = fx
        .try_run(json!({"query": "database", "mode": "vec"}))
        .unwrap_err();
    assert!(matches!(err, EngineError::Unavailable(_)));
    assert!(err.to_string().contains("embedding unavailable"), "{err}");
    let out = fx.run(json!({"query": "defensive fallbacks"}));
    assert_eq!(out["mode"], "hybrid");
    assert!(
        note(&out).contains("embedding unavailable"),
        "{}",
        note(&out)
    );
    assert_eq!(titles(&out)[0], "No defensive fallbacks");
    let score = out["hits"][0]["score"].as_f64().unwrap();
    assert!(
        score > 0.0 && score <= 1.0 + 1e-9,
        "bm25-only hybrid score {score}"
    );
}

#[test]
fn unrecognised_mode_behaves_as_hybrid() {
    let Some(fx) = lexical() else { return };
    let a = fx.run(json!({"query": "python package setup", "mode": "semantic-ish"}));
    let b = fx.run(json!({"query": "python package setup", "mode": "hybrid"}));
    assert_eq!(a["hits"], b["hits"]);
    assert_eq!(a["mode"], "hybrid");
    assert!(note(&a).contains("unrecognised mode `semantic-ish`"));
}

#[test]
fn limit_defaults_to_ten_and_an_unreadable_one_is_an_argument_error() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": BROAD, "mode": "bm25"}));
    assert_eq!(out["count"], 10);
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 1}));
    assert_eq!(out["count"], 1);
    let out = fx.run(json!({"query": "the", "mode": "bm25", "limit": 500}));
    assert!(out["count"].as_u64().unwrap() <= 500);
    for limit in [
        json!(0),
        json!(-7),
        json!(501),
        json!(i64::MAX),
        json!("ten"),
        json!(2.5),
    ] {
        match fx.try_run(json!({"query": "the", "mode": "bm25", "limit": limit})) {
            Err(EngineError::Argument { name, reason }) => {
                assert_eq!(name, "limit");
                assert!(reason.contains("1..=500"), "{reason}");
            }
            other => panic!("limit {limit}: {other:?}"),
        }
    }
}

/// An unreadable `limit` from the command line (`--arg limit=…`) and over MCP is an
/// argument error naming `limit` and what it takes (exit 2 / a tool error), as for
/// the other skills; nothing is searched.
#[test]
fn an_unreadable_limit_is_refused_from_the_cli_and_over_mcp() {
    let data = tempfile::tempdir().unwrap();
    for limit in ["abc", "-1", "0", "501", "99999999999999999999999", "2.5"] {
        let out = common::cli::with_data(data.path())
            .args(["run", "memo-search", "--arg", "query=cache"])
            .arg("--arg")
            .arg(format!("limit={limit}"))
            .env("SKILLS_EMBEDDER", "none")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "limit={limit}: {said}");
        assert!(said.contains("`limit`"), "limit={limit}: {said}");
    }
    let mut session = common::serve::StdioSession::spawn(
        common::cli::with_data(data.path())
            .args(["serve", "--no-ingest"])
            .env("SKILLS_EMBEDDER", "none")
            .stderr(std::process::Stdio::null()),
    );
    session.initialize(1);
    for (id, limit) in [
        (2, json!("abc")),
        (3, json!(-1)),
        (4, json!(0)),
        (5, json!(501)),
    ] {
        session.call_tool(id, "memo_search", json!({"query": "cache", "limit": limit}));
        let answer = session.answer(id);
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "limit {limit}: {answer}");
        let said = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(said.contains("`limit`"), "limit {limit}: {answer}");
    }
    session.close_stdin();
    session.child.wait().unwrap();
}

#[test]
fn body_truncation_edges() {
    let Some(fx) = lexical() else { return };
    let q = json!({"query": "Basic Memory Technical Architecture", "mode": "exact"});
    let full = fx.run(json!({"query": q["query"], "mode": "exact", "body_chars": -1}));
    let body = full["hits"][0]["body"].as_str().unwrap();
    assert!(body.chars().count() > 280);
    assert!(full["hits"][0].get("body_truncated").is_none());
    let def = fx.run(q.clone());
    let cut = def["hits"][0]["body"].as_str().unwrap();
    assert_eq!(cut.chars().count(), 281);
    assert!(cut.ends_with('…'));
    assert_eq!(def["hits"][0]["body_truncated"], true);
    let zero = fx.run(json!({"query": q["query"], "mode": "exact", "body_chars": 0}));
    assert_eq!(zero["hits"][0]["body"], "…");
    assert_eq!(zero["hits"][0]["body_truncated"], true);
    let exact_len = body.chars().count();
    let same = fx.run(json!({"query": q["query"], "mode": "exact", "body_chars": exact_len}));
    assert_eq!(same["hits"][0]["body"], body);
    assert!(same["hits"][0].get("body_truncated").is_none());
}

#[test]
fn type_filter_and_filters_do_not_starve() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "the", "mode": "bm25", "type": "feedback", "limit": 50}));
    assert!(out["count"].as_u64().unwrap() >= 2);
    assert!(out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["type"] == "feedback"));
    let out = fx.run(json!({"query": "the", "type": "Feedback", "limit": 2}));
    assert_eq!(
        out["count"], 2,
        "hybrid legs filter in SQL, so 2 feedback hits come back"
    );
    let out = fx.run(json!({"query": "the", "type": "no-such-type"}));
    assert_eq!(out["count"], 0);
}

#[test]
fn date_bounds_are_inclusive_on_updated() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "date_from": "2026-06-23", "date_to": "2026-06-25"}));
    let mut d = updated_dates(&out);
    d.sort();
    assert_eq!(d, vec!["2026-06-23", "2026-06-25"]);
    // A bare date_to covers its whole day; a datetime bound is exact.
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "date_from": "2026-06-23", "date_to": "2026-06-23"}));
    assert_eq!(updated_dates(&out), vec!["2026-06-23"]);
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "date_from": "2026-06-23T09:15:01", "date_to": "2026-06-25T08:30:00Z"}));
    assert_eq!(updated_dates(&out), vec!["2026-06-25"]);
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "date_to": "2026-05-31"}));
    assert!(updated_dates(&out)
        .iter()
        .all(|d| d.as_str() <= "2026-05-31"));
    for (name, args) in [
        (
            "date_from",
            json!({"query": "x", "date_from": "last tuesday"}),
        ),
        ("date_to", json!({"query": "x", "date_to": "2026-13-45"})),
    ] {
        match fx.try_run(args) {
            Err(EngineError::Argument { name: n, .. }) => assert_eq!(n, name),
            other => panic!("expected an argument error for {name}, got {other:?}"),
        }
    }
}

#[test]
fn when_phrases_against_fixed_clock() {
    let Some(fx) = lexical() else { return };
    let dates = |w: &str| {
        let mut d =
            updated_dates(&fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "when": w})));
        d.sort();
        d
    };
    assert_eq!(dates("yesterday"), vec!["2026-07-02"]);
    assert_eq!(dates("ayer"), vec!["2026-07-02"]);
    // The three memories added in `build` are dated now() = 2026-07-03; one matches BROAD.
    assert_eq!(dates("today"), vec!["2026-07-03", "2026-07-03"]);
    assert_eq!(dates("last week"), vec!["2026-06-23", "2026-06-25"]);
    assert_eq!(dates("la semana pasada"), vec!["2026-06-23", "2026-06-25"]);
    assert_eq!(dates("hace 10 días"), vec!["2026-06-23"]);
    assert_eq!(dates("hace 10 dias"), vec!["2026-06-23"]);
    assert_eq!(
        dates("el mes pasado"),
        vec!["2026-06-10", "2026-06-23", "2026-06-25", "2026-06-30"]
    );
    assert_eq!(
        dates("this week"),
        vec!["2026-06-30", "2026-07-02", "2026-07-03", "2026-07-03"]
    );
    // Unrecognised phrase: no filter, and a note.
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "when": "sometime soon"}));
    assert!(updated_dates(&out).contains(&"2026-05-20".to_owned()));
    assert!(note(&out).contains("not recognised"));
    // Explicit dates win over when.
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "when": "yesterday", "date_from": "2026-07-03", "date_to": "2026-07-03"}));
    assert_eq!(updated_dates(&out), vec!["2026-07-03", "2026-07-03"]);
    assert!(note(&out).contains("`when`"));
}

#[test]
fn file_mode_filters_paths_and_ignores_dates_and_explain() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "file": "SRC/INGEST"}));
    assert_eq!(
        titles(&out),
        vec!["Importer attached notes to the wrong book"]
    );
    let out = fx.run(json!({"query": BROAD, "mode": "bm25", "limit": 50, "file": "cargo.toml"}));
    let mut t = titles(&out);
    t.sort();
    assert_eq!(
        t,
        vec!["Release checklist", "Store memories in SQLite with FTS5"]
    );
    let out = fx.run(json!({"query": BROAD, "limit": 50, "file": "cargo.toml", "date_from": "2026-07-01", "when": "today", "explain": true}));
    assert_eq!(out["count"], 2, "dates not applied in file mode");
    assert!(out.get("trace").is_none());
    assert!(out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h.get("explain").is_none()));
    let n = note(&out);
    assert!(
        n.contains("`date_from`") && n.contains("`when`") && n.contains("`explain`"),
        "{n}"
    );
    assert!(!n.contains("`date_to`"), "{n}");
}

#[test]
fn explain_adds_leg_ranks_and_trace() {
    let Some(fx) = lexical() else { return };
    let out = fx.run(json!({"query": "defensive fallbacks", "explain": true}));
    let hit = &out["hits"][0];
    assert_eq!(hit["explain"]["legs"]["bm25"]["rank"], 1);
    assert_eq!(hit["explain"]["legs"]["bm25"]["weight"], 1.0);
    assert_eq!(hit["explain"]["fusion"]["method"], "normalised");
    let stages = common::strings(&out["trace"], "stage");
    // Without a model, hybrid has one leg (bm25); `exact` is not a hybrid leg.
    assert_eq!(stages, vec!["parse", "leg", "fuse", "output"]);
    let plain = fx.run(json!({"query": "defensive fallbacks"}));
    assert!(plain.get("trace").is_none());
    assert!(plain["hits"][0].get("explain").is_none());
}

#[test]
fn results_are_deterministic() {
    let Some(fx) = lexical() else { return };
    for mode in ["hybrid", "bm25", "exact", "fuzzy"] {
        let a = fx.run(json!({"query": "python setup the", "mode": mode, "limit": 40}));
        let b = fx.run(json!({"query": "python setup the", "mode": mode, "limit": 40}));
        assert_eq!(a, b, "{mode}");
    }
}

#[test]
fn searches_leave_the_database_byte_identical() {
    let Some(fx) = build(Embedder::load_default().ok().map(Arc::new)) else {
        return;
    };
    let digest = |p: &Path| Sha256::digest(std::fs::read(p).unwrap());
    let listing = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let dir = fx.paths.memories.parent().unwrap().to_path_buf();
    let state = || {
        (
            digest(&fx.paths.memories),
            listing(&dir),
            std::fs::metadata(&fx.paths.memories)
                .unwrap()
                .modified()
                .unwrap(),
        )
    };
    let before = state();
    for mode in ["hybrid", "vec", "bm25", "exact", "fuzzy", "bogus"] {
        for q in ["sqlite", "wrong-book", "", "\"", "décision"] {
            let _ =
                fx.try_run(json!({"query": q, "mode": mode, "explain": true, "source": "test"}));
            let _ =
                fx.try_run(json!({"query": q, "mode": mode, "file": "src", "when": "last week"}));
        }
    }
    assert_eq!(before, state());
}

#[test]
fn skill_document_parses_and_template_renders() {
    let Some(fx) = lexical() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/memo-search");
    let doc = std::fs::read_to_string(root.join("SKILL.md")).unwrap();
    let front = doc
        .strip_prefix("---\n")
        .unwrap()
        .split("\n---\n")
        .next()
        .unwrap();
    let fm: Value =
        serde_json::to_value(yaml_serde::from_str::<yaml_serde::Value>(front).unwrap()).unwrap();
    assert_eq!(fm["name"], "memo-search");
    assert_eq!(fm["engine"], "memo_search");
    let props = fm["input-schema"]["properties"].as_object().unwrap();
    assert_eq!(props.len(), 14);
    assert_eq!(props["include_superseded"]["default"], false);
    // The archive-only filters (an argument error on the local stores).
    assert_eq!(props["machine"]["type"], json!(["string", "null"]));
    assert_eq!(props["user"]["type"], json!(["string", "null"]));
    assert_eq!(props["limit"]["default"], 10);
    assert_eq!(props["body_chars"]["default"], 280);
    assert_eq!(props["mode"]["default"], "hybrid");
    assert_eq!(fm["input-schema"]["required"], json!(["query"]));
    for section in [
        "## When to invoke",
        "## Input",
        "## Execution",
        "## Output contract",
        "## Does NOT do",
        "## Verification checklist",
    ] {
        assert!(doc.contains(section), "{section}");
    }
    let template = std::fs::read_to_string(root.join("template.md.j2")).unwrap();
    // The runtime's settings: no auto-escaping, strict undefined.
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_filter("cell", |s: String| s.replace('|', "\\|").replace('\n', " "));
    env.add_template("t", &template).unwrap();
    let args = json!({"query": "defensive fallbacks", "explain": true});
    let data = fx.run(args.clone());
    let text = env
        .get_template("t")
        .unwrap()
        .render(minijinja::context! { data => data, args => args })
        .unwrap();
    assert!(text.contains("1. **No defensive fallbacks**"), "{text}");
    assert!(text.contains("_Note: embedding unavailable"), "{text}");
    let none = fx.run(json!({"query": "zzzqqqxxx", "mode": "exact"}));
    let text = env
        .get_template("t")
        .unwrap()
        .render(minijinja::context! { data => none, args => json!({"query": "zzzqqqxxx"}) })
        .unwrap();
    assert!(text.starts_with("No memories found"), "{text}");
}

// ---- with the embedding model ---------------------------------------------------

fn with_model() -> Option<Fixture> {
    match Embedder::load_default() {
        Ok(e) => build(Some(Arc::new(e))),
        Err(e) => {
            eprintln!("SKIPPED (no embedding model): {e}");
            None
        }
    }
}

#[test]
fn model_vec_mode_is_semantic_with_cosine_scores() {
    let Some(fx) = with_model() else { return };
    assert_eq!(fx.summary.embedded, fx.summary.memories);
    let out = fx.run(
        json!({"query": "which database engine keeps the saved notes", "mode": "vec", "limit": 5}),
    );
    assert_eq!(out["count"], 5);
    for h in out["hits"].as_array().unwrap() {
        let s = h["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&s), "{s}");
    }
    let t = titles(&out);
    assert!(
        t.iter()
            .any(|t| t.contains("SQLite") || t.contains("database")),
        "{t:?}"
    );
    let out = fx.run(
        json!({"query": "don't hide errors behind default values", "mode": "vec", "limit": 5}),
    );
    assert!(
        titles(&out).iter().any(|t| t.contains("fallbacks")),
        "{:?}",
        titles(&out)
    );
}

#[test]
fn model_hybrid_fuses_vec_and_bm25() {
    let Some(fx) = with_model() else { return };
    let out = fx.run(json!({"query": "defensive fallbacks", "explain": true}));
    assert!(!note(&out).contains("embedding unavailable"));
    assert_eq!(titles(&out)[0], "No defensive fallbacks");
    let legs = out["hits"][0]["explain"]["legs"].as_object().unwrap();
    assert!(legs.contains_key("vec") && legs.contains_key("bm25") && !legs.contains_key("exact"));
    let stages = common::strings(&out["trace"], "stage");
    assert_eq!(stages, vec!["parse", "leg", "leg", "fuse", "output"]);
    // Filters still apply to the vec leg.
    let out = fx.run(json!({"query": "storage", "type": "bug"}));
    assert!(out["hits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["type"] == "bug"));
    let out = fx.run(json!({"query": "storage", "when": "yesterday", "mode": "vec"}));
    assert_eq!(updated_dates(&out), vec!["2026-07-02"]);
}

#[test]
fn model_timing_report() {
    let Some(fx) = with_model() else { return };
    let ctx = fx.ctx();
    let e = ctx.embedder().unwrap();
    let started = std::time::Instant::now();
    for i in 0..1000 {
        let _ = e.embed(&format!(
            "sentence number {i} about sqlite memories and search"
        ));
    }
    let per_embed = started.elapsed() / 1000;
    let pairs = [
        (
            "the database file is locked",
            "sqlite reports database is locked",
        ),
        ("how do I install the package", "pip install from PyPI"),
        (
            "tests must not read ignored data",
            "committed tests use inline fixtures",
        ),
        (
            "meeting notes from the standup",
            "team sync decisions and action items",
        ),
    ];
    let cos =
        |a: &str, b: &str| f64::from(skills::search::vectors::cosine(&e.embed(a), &e.embed(b)));
    let n = pairs.len() as f64;
    let related: f64 = pairs.iter().map(|(a, b)| cos(a, b)).sum::<f64>() / n;
    let unrelated: f64 = (0..pairs.len())
        .map(|i| cos(pairs[i].0, pairs[(i + 1) % pairs.len()].1))
        .sum::<f64>()
        / n;
    eprintln!("probe: mean cosine related {related:.2}, unrelated {unrelated:.2}");
    assert!(related > unrelated + 0.15, "{related} vs {unrelated}");
    let started = std::time::Instant::now();
    for _ in 0..50 {
        MemoSearch
            .call(&json!({"query": "python virtual environment setup"}), &ctx)
            .unwrap();
    }
    let per_query = started.elapsed() / 50;
    eprintln!(
        "timing: embed {per_embed:?}/sentence, hybrid query {per_query:?} over {} memories",
        fx.summary.memories
    );
}
