//! The `skills` binary end to end on real imported data: ingest the bundled sample
//! (and the shared corpus when present), then check every statement of the
//! search-conversations seed through `skills run`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

fn skills(data: &Path, args: &[&str]) -> Output {
    common::cli::with_data(data).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A data folder with the bundled sample imported once for all tests.
fn sample_data() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample");
        let o = skills(dir.path(), &["ingest", "--json", sample.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dir
    })
    .path()
}

fn run_json(data: &Path, args: &str) -> Value {
    let o = skills(
        data,
        &["run", "search-conversations", "--json", "--args-json", args],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn rows(v: &Value) -> &Vec<Value> {
    v["data"]["rows"].as_array().unwrap()
}

/// Full message content of a result row, read from the store with DuckDB itself.
fn content_of(data: &Path, row: &Value) -> (String, i32) {
    let store = skills::stores::conversations::ConversationStore::open_ro(
        &data.join("conversations.duckdb"),
    )
    .unwrap();
    let conn = store.connection().unwrap();
    conn.query_row(
        "SELECT content, has_question FROM all_conversations WHERE conversation_id = ? AND message_id = ?",
        [row["conversation_id"].as_str().unwrap(), row["message_id"].as_str().unwrap()],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

#[test]
fn ingest_is_idempotent_and_reports_counts() {
    let dir = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample");
    let first: Value = serde_json::from_str(&stdout(&skills(
        dir.path(),
        &["ingest", "--json", sample.to_str().unwrap()],
    )))
    .unwrap();
    assert_eq!(first["messages_parsed"], 41);
    assert_eq!(first["messages_added"], 41);
    let o = skills(dir.path(), &["ingest", "--json", sample.to_str().unwrap()]);
    assert!(o.status.success());
    let second: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(second["messages_added"], 0);
}

#[test]
fn rows_are_newest_first_and_cite_their_conversation() {
    let v = run_json(sample_data(), r#"{"term": "duckdb", "limit": 500}"#);
    let rows = rows(&v);
    assert!(rows.len() >= 5);
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (ca, cb) = (
            a["created"].as_str().unwrap(),
            b["created"].as_str().unwrap(),
        );
        let key = |r: &Value| {
            (
                r["conversation_id"].as_str().unwrap().to_owned(),
                r["message_id"].as_str().unwrap().to_owned(),
            )
        };
        assert!(ca > cb || (ca == cb && key(a) < key(b)), "{a} before {b}");
    }
    for r in rows {
        assert!(!r["conversation_id"].as_str().unwrap().is_empty());
        let (content, _) = content_of(sample_data(), r);
        assert!(content.to_lowercase().contains("duckdb"));
    }
}

#[test]
fn preview_is_first_200_characters_even_for_multibyte_text() {
    let v = run_json(sample_data(), r#"{"term": "", "limit": 500}"#);
    let mut long = 0;
    for r in rows(&v) {
        let (content, _) = content_of(sample_data(), r);
        let expected: String = content.chars().take(200).collect();
        assert_eq!(r["preview"].as_str().unwrap(), expected);
        if content.chars().count() > 200 && content.len() > content.chars().count() {
            long += 1;
        }
    }
    assert!(long >= 1, "the sample must hold a long multibyte message");
}

#[test]
fn no_match_prints_the_exact_message() {
    let o = skills(
        sample_data(),
        &[
            "run",
            "search-conversations",
            "--arg",
            "term=zzqx-not-there",
        ],
    );
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        "No conversations found containing 'zzqx-not-there'\n"
    );
}

#[test]
fn role_filter_and_questions_mode() {
    for role in ["user", "assistant"] {
        let v = run_json(
            sample_data(),
            &format!(r#"{{"term": "duckdb", "role": "{role}"}}"#),
        );
        assert!(!rows(&v).is_empty());
        assert!(rows(&v).iter().all(|r| r["role"] == role));
    }
    let v = run_json(
        sample_data(),
        r#"{"term": "", "role": "user", "limit": 500}"#,
    );
    assert_eq!(v["data"]["mode"], "questions");
    assert!(!rows(&v).is_empty());
    for r in rows(&v) {
        assert_eq!(r["role"], "user");
        let (content, has_question) = content_of(sample_data(), r);
        assert_eq!(has_question, 1);
        assert!(content.contains('?'));
    }
}

#[test]
fn percent_and_underscore_are_ilike_wildcards() {
    // `c_f` is not in any message literally, but `_` matches one character: "café", "cafe".
    let v = run_json(sample_data(), r#"{"term": "c_f", "limit": 500}"#);
    assert!(!rows(&v).is_empty());
    for r in rows(&v) {
        let (content, _) = content_of(sample_data(), r);
        assert!(!content.to_lowercase().contains("c_f"));
    }
    // `%` in the middle matches any run of characters.
    let v = run_json(sample_data(), r#"{"term": "binary%runpath"}"#);
    assert!(!rows(&v).is_empty());
}

#[test]
fn pipes_and_newlines_never_break_the_table() {
    let o = skills(
        sample_data(),
        &[
            "run",
            "search-conversations",
            "--arg",
            "term=About 50% of rows",
        ],
    );
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let unescaped = |l: &str| l.replace("\\|", "").matches('|').count();
    assert!(lines.iter().all(|l| unescaped(l) == 6), "{text}");
    assert!(
        lines[2].contains("\\| source \\|") && lines[2].contains("<br>"),
        "{text}"
    );
    // The structured output keeps the raw preview.
    let v = run_json(sample_data(), r#"{"term": "About 50% of rows"}"#);
    assert!(rows(&v)[0]["preview"]
        .as_str()
        .unwrap()
        .starts_with("| source | files | messages |\n"));
}

#[test]
fn identical_arguments_give_byte_identical_output_across_processes() {
    let args = [
        "run",
        "search-conversations",
        "--arg",
        "term=e",
        "--arg",
        "limit=40",
    ];
    let a = skills(sample_data(), &args);
    let b = skills(sample_data(), &args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(stdout(&a).lines().count(), 42);
}

/// `skills ingest` of paths none of which exists is a usage error naming them, and
/// leaves no store behind (it used to create an empty one and exit 1); one missing
/// path beside a real one is a fault of the run, the real one imported.
#[test]
fn ingest_of_only_missing_paths_names_them_and_creates_no_store() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let missing = tmp.path().join("no-such.jsonl");
    let o = skills(&data, &["ingest", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no-such.jsonl") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!data.join("conversations.duckdb").exists());
    let sample = common::repo().join("data/sample/claude-code");
    let o = skills(
        &data,
        &[
            "ingest",
            missing.to_str().unwrap(),
            sample.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stdout(&o).contains("no-such.jsonl"), "{}", stdout(&o));
    assert!(data.join("conversations.duckdb").exists());
}

/// A date that matches YYYY-MM-DD but is no calendar date is refused by the input
/// schema (`format: date`, asserted) with the argument's name, exit 2 — not DuckDB's
/// cast error with a SQL excerpt after the query started.
#[test]
fn an_impossible_date_is_an_argument_error() {
    for (skill, arg) in [
        ("conversations-by-date", "date=2026-02-30"),
        ("list-conversations", "since=2025-13-01"),
        ("message-activity", "until=2023-02-29"),
    ] {
        let o = skills(sample_data(), &["run", skill, "--arg", arg]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{skill} {arg}: {err}");
        let name = arg.split('=').next().unwrap();
        assert!(err.contains(&format!("argument `{name}`")), "{err}");
        assert!(!err.contains("LINE") && !err.contains("CAST"), "{err}");
    }
    let o = skills(
        sample_data(),
        &["run", "conversations-by-date", "--arg", "date=2024-02-29"],
    );
    assert!(o.status.success(), "a leap day is a date: {o:?}");
}

#[test]
fn exit_codes_distinguish_usage_from_failure() {
    let o = skills(
        sample_data(),
        &["run", "search-conversations", "--arg", "limit=0"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("argument `limit`"));
    let o = skills(
        sample_data(),
        &["run", "search-conversations", "--arg", "colour=red"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("argument `colour`: unknown argument; expected one of: term, limit, role"));
    let o = skills(sample_data(), &["run", "no-such-skill"]);
    assert_eq!(o.status.code(), Some(2));
    let empty = tempfile::tempdir().unwrap();
    let o = skills(
        empty.path(),
        &["run", "search-conversations", "--arg", "term=x"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("run `skills ingest` first"));
    let o = skills(sample_data(), &["validate"]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn searches_transcripts_imported_from_the_shared_corpus() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = skills(
        dir.path(),
        &[
            "ingest",
            "--json",
            corpus.join("claude-code").to_str().unwrap(),
            corpus.join("chatgpt-export").to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = run_json(dir.path(), r#"{"term": "phx.server", "role": "user"}"#);
    let r = &rows(&v)[0];
    assert_eq!(r["source"], "claude-code");
    assert_eq!(r["preview"], "mix phx.server doesnt seem to start");
    let v = run_json(dir.path(), r#"{"term": "capital of France", "limit": 500}"#);
    assert!(rows(&v)
        .iter()
        .any(|r| r["source"] == "chatgpt" && r["role"] == "user"));
}

/// `skills ARGS` with the skills folder `skills_dir` and the data folder `data`.
fn in_folders(skills_dir: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(args)
        .env("SKILLS_DIR", skills_dir)
        .env("SKILLS_DATA_DIR", data)
        .output()
        .unwrap()
}

/// `verify` exited 0 and ended its report with `summary`.
fn assert_verified(o: &Output, summary: &str) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout(o).trim_end().ends_with(summary), "{}", stdout(o));
}

#[test]
fn new_compose_skill_validates_and_verifies_as_generated() {
    let tmp = tempfile::tempdir().unwrap();
    let skills_dir = tmp.path().join("skills");
    // The composition calls memo-search and search-conversations: bundled skills.
    for name in ["memo-search", "search-conversations"] {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("skills")
            .join(name);
        let to = skills_dir.join(name);
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
    let run = |args: &[&str]| in_folders(&skills_dir, &tmp.path().join("data"), args);
    let o = run(&["new", "my-recall", "--engine", "compose"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["SKILL.md", "template.md.j2", "conformance.yaml"] {
        assert!(skills_dir.join("my-recall").join(f).is_file(), "{f}");
    }
    let o = run(&["validate"]);
    assert!(stdout(&o).contains("ok      my-recall"), "{}", stdout(&o));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/fixtures");
    let o = run(&[
        "verify",
        "my-recall",
        "--fixtures-dir",
        fixtures.to_str().unwrap(),
    ]);
    assert_verified(&o, "4 passed, 0 failed, 0 excluded");
    assert_eq!(
        run(&["new", "other", "--engine", "nope"]).status.code(),
        Some(2)
    );
}

#[test]
fn new_sql_skill_validates_and_verifies_as_generated() {
    let tmp = tempfile::tempdir().unwrap();
    let skills_dir = tmp.path().join("skills");
    std::fs::create_dir_all(&skills_dir).unwrap();
    let run = |args: &[&str]| in_folders(&skills_dir, &tmp.path().join("data"), args);
    let o = run(&["new", "recent-messages"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "SKILL.md",
        "query.sql",
        "template.md.j2",
        "conformance.yaml",
    ] {
        assert!(skills_dir.join("recent-messages").join(f).is_file(), "{f}");
    }
    let o = run(&["validate"]);
    // The sql engine is bound; other registered engines have no document here.
    assert!(
        stdout(&o).contains("ok      recent-messages"),
        "{}",
        stdout(&o)
    );
    let o = run(&["verify", "recent-messages"]);
    assert_verified(&o, "5 passed, 0 failed, 0 excluded");
    assert_eq!(
        run(&["new", "recent-messages"]).status.code(),
        Some(2),
        "never overwrites"
    );
    assert_eq!(run(&["new", "Bad_Name"]).status.code(), Some(2));
}

/// `SKILLS_EMBEDDER=none` ("run without the embedding model even when one is
/// installed", README) holds for `skills memo add` and `skills memo import`: no model
/// is read, so a model folder that is there but broken is not even opened — the
/// memory is stored without an embedding and the output says the model is disabled.
/// Without the setting the same folder is read, and its fault is what the output says.
#[test]
fn skills_embedder_none_reads_no_model_in_memo_add_and_import() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model");
    fs_err::create_dir_all(&model).unwrap();
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        fs_err::write(model.join(file), "not a model").unwrap();
    }
    let notes = tmp.path().join("notes");
    fs_err::create_dir_all(&notes).unwrap();
    fs_err::write(
        notes.join("cache.md"),
        "---\ntitle: Cache decision\ntype: decision\n---\nThe cache stays on disk.\n",
    )
    .unwrap();
    let data = tmp.path().join("data");
    let run = |embedder: Option<&str>, args: &[&str]| -> Value {
        let mut cmd = common::cli::with_data(&data);
        cmd.arg("--json").args(args).env("SKILLS_MODEL_DIR", &model);
        match embedder {
            Some(value) => cmd.env("SKILLS_EMBEDDER", value),
            None => cmd.env_remove("SKILLS_EMBEDDER"),
        };
        common::cli::json(&mut cmd)
    };
    let model_named = model.display().to_string();
    let added = run(
        Some("none"),
        &["memo", "add", "--body", "The deploy runs at noon."],
    );
    let imported = run(Some("none"), &["memo", "import", notes.to_str().unwrap()]);
    assert_eq!(added["embedded"], false, "{added}");
    assert_eq!(imported["embedded"], 0, "{imported}");
    assert_eq!(imported["inserted"], 1, "{imported}");
    for (what, out) in [("memo add", &added), ("memo import", &imported)] {
        let note = out["embedding_note"].as_str().unwrap_or_default();
        assert!(note.contains("disabled"), "{what}: {out}");
        assert!(
            !note.contains(&model_named) && !note.contains("could not be loaded"),
            "{what} read the model although SKILLS_EMBEDDER=none: {out}"
        );
    }
    // Without the setting the folder is read (and found broken).
    let added = run(
        None,
        &["memo", "add", "--body", "The release is on Friday."],
    );
    assert_eq!(added["embedded"], false, "{added}");
    let note = added["embedding_note"].as_str().unwrap_or_default();
    assert!(note.contains("could not be loaded"), "{added}");
}
