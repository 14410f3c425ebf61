//! semantic-search end to end through the real binary: `skills ingest` writes the L1
//! embeddings (incrementally: unchanged files embed nothing, an appended transcript
//! re-embeds only its conversation, the model's id and dimension are recorded), `skills
//! run semantic-search` reads them, `--no-embed` makes the skill say "embeddings
//! unavailable — run `skills ingest`". Skipped with a note when the embedding model is
//! absent (`scripts/fetch-model`).
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use skills::embed::Embedder;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/fixtures/transcripts")
}

fn model() -> Option<Embedder> {
    common::embedder()
}

fn skills(data: &Path, args: &[&str]) -> (bool, String, String) {
    common::cli::run(common::cli::with_data(data).args(args))
}

fn ingest_json(data: &Path, paths: &[&Path], extra: &[&str]) -> Value {
    let mut args = vec!["--json", "ingest", "--quiet"];
    args.extend_from_slice(extra);
    let owned: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    args.extend(owned.iter().map(String::as_str));
    let (ok, out, err) = skills(data, &args);
    assert!(ok, "ingest failed: {err}");
    serde_json::from_str(&out).expect("ingest --json")
}

fn search(data: &Path, query: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "run", "semantic-search", "--arg"];
    let q = format!("query={query}");
    args.push(&q);
    args.extend_from_slice(extra);
    let (ok, out, err) = skills(data, &args);
    assert!(ok, "semantic-search failed: {err}");
    serde_json::from_str(&out).expect("run --json")
}

#[test]
fn ingest_embeds_incrementally_and_the_skill_finds_by_meaning() {
    let Some(model) = model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let src = tmp.path().join("src");
    common::copy_dir(&fixtures(), &src);
    let first = ingest_json(&data, &[&src], &[]);
    let e = &first["embeddings"];
    assert_eq!(e["model"], model.name());
    assert_eq!(e["messages_embedded"], 16, "{e}");
    assert!(e["units"].as_u64().unwrap() > 0);
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(data.join("conversations.embeddings/MANIFEST")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["model"], model.name());
    assert_eq!(manifest["dim"], model.dim());

    // Nothing changed: nothing embedded again.
    let again = ingest_json(&data, &[&src], &[]);
    assert_eq!(again["embeddings"]["messages_embedded"], 0, "{again}");
    assert_eq!(again["embeddings"]["units"], e["units"]);

    // A paraphrase finds the rpath answer.
    let found = search(
        &data,
        "executable cannot locate dynamic lib",
        &["--arg", "limit=3"],
    );
    let previews = common::strings(&found["data"]["rows"], "preview");
    assert!(previews.iter().any(|p| p.contains("rpath")), "{previews:?}");

    // Appending to one Claude Code session re-embeds that conversation only.
    let session = walk(&src)
        .into_iter()
        .find(|p| p.to_string_lossy().contains("c3d4e5f6"))
        .expect("notes session");
    let conv_msgs = 2;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&session)
        .unwrap();
    writeln!(
        f,
        r#"{{"type":"user","uuid":"b0000002-9999-4000-8000-000000000001","sessionId":"c3d4e5f6-1a2b-4c3d-8e4f-5a6b7c8d9e0f","timestamp":"2026-07-04T09:00:00Z","message":{{"role":"user","content":"Please water the zucchini plants in the greenhouse"}}}}"#
    )
    .unwrap();
    drop(f);
    let third = ingest_json(&data, &[&src], &[]);
    assert_eq!(
        third["embeddings"]["messages_embedded"],
        conv_msgs + 1,
        "{}",
        third["embeddings"]
    );
    let garden = search(
        &data,
        "gardening chores for vegetables",
        &["--arg", "limit=1"],
    );
    assert_eq!(
        garden["data"]["rows"][0]["message_id"], "b0000002-9999-4000-8000-000000000001",
        "{garden}"
    );
}

#[test]
fn without_embeddings_the_skill_says_to_run_ingest() {
    let Some(_model) = model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = ingest_json(&data, &[&fixtures()], &["--no-embed"]);
    assert!(out.get("embeddings").is_none(), "{out}");
    let (ok, _, err) = skills(
        &data,
        &["run", "semantic-search", "--arg", "query=deadline"],
    );
    assert!(!ok);
    assert!(
        err.contains("embeddings unavailable — run `skills ingest`"),
        "{err}"
    );
    // A later ingest without the flag embeds everything.
    let again = ingest_json(&data, &[&fixtures()], &[]);
    assert_eq!(again["embeddings"]["messages_embedded"], 16, "{again}");
    assert_eq!(again["embeddings"]["rebuilt"], true);
    let (ok, _, err) = skills(
        &data,
        &["run", "semantic-search", "--arg", "query=deadline"],
    );
    assert!(ok, "{err}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `explain` on the default (hybrid) mode, as an insta snapshot of what does not depend
/// on the fetched model: the call-wide fusion (method, weights, the keyword leg's
/// stemmed terms, the neighbourhood, the temporal boost) and, per row (by message id),
/// the legs that found it with the keyword and literal legs' ranks and shares; the
/// semantic leg's cosine, rank and share are the model's and are replaced by `"…"`.
#[test]
fn explain_shows_each_rows_legs_and_the_fusion() {
    let Some(_model) = model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    ingest_json(&data, &[&fixtures()], &[]);
    let out = search(
        &data,
        "when did the linker flags get passed from the build scripts",
        &["--arg", "limit=50", "--arg", "explain=true"],
    );
    let d = &out["data"];
    let mut rows: Vec<Value> = d["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut legs = r["explain"]["legs"].clone();
            if let Some(sem) = legs.get_mut("semantic").and_then(Value::as_object_mut) {
                for v in sem.values_mut() {
                    *v = Value::from("…");
                }
            }
            serde_json::json!({"message_id": r["message_id"], "legs": legs})
        })
        .collect();
    rows.sort_by(|a, b| a["message_id"].as_str().cmp(&b["message_id"].as_str()));
    insta::assert_json_snapshot!(
        "semantic_search_explain",
        serde_json::json!({"mode": d["mode"], "explain": d["explain"], "rows": rows})
    );
}
