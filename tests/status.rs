//! `skills status`: what is stored and whether it is current, from the real binary.
//! `--json` is snapshotted (insta) with the temp folder, sizes and write times
//! replaced; the text form and the states of the index and embeddings are asserted.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `skills ARGS` with the data folder `data` and no embedding model.
fn skills(data: &Path, args: &[&str]) -> Output {
    common::cli::ok(
        common::cli::with_data(data)
            .args(args)
            .env("SKILLS_MODEL_DIR", data.join("no-model"))
            .env_remove("SKILLS_EMBEDDER"),
    )
}

fn status_json(data: &Path) -> Value {
    serde_json::from_slice(&skills(data, &["status", "--json"]).stdout).unwrap()
}

/// Replaces what differs between runs: sizes (bytes) and the store's write time.
fn stable(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, x) in map.iter_mut() {
                    if (k == "bytes" || k == "last_write") && !x.is_null() {
                        *x = Value::String(format!("[{k}]"));
                    } else {
                        walk(x);
                    }
                }
            }
            Value::Array(xs) => xs.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

#[test]
fn status_json_reports_sources_index_embeddings_model_and_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Before any import: nothing stored, nothing current.
    let empty = status_json(&data);
    assert_eq!(empty["conversations"]["exists"], false);
    assert_eq!(empty["conversations"]["index"]["state"], "missing");
    assert_eq!(empty["servers"], serde_json::json!([]));

    let sample = common::repo().join("data/sample");
    skills(
        &data,
        &[
            "ingest",
            "--quiet",
            sample.join("claude-code").to_str().unwrap(),
            sample.join("chatgpt").to_str().unwrap(),
        ],
    );
    let status = status_json(&data);
    assert_eq!(status["conversations"]["index"]["state"], "current");
    // No model: no embeddings, and the model's absence names where it was looked for.
    assert_eq!(status["conversations"]["embeddings"]["state"], "missing");
    assert_eq!(status["model"]["found"], false);
    let messages: u64 = status["conversations"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["messages"].as_u64().unwrap())
        .sum();
    assert_eq!(status["conversations"]["messages"].as_u64(), Some(messages));
    assert!(messages > 0);

    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(
        &regex_syntax::escape(&tmp.path().display().to_string()),
        "[TMP]",
    );
    settings.add_filter(
        &regex_syntax::escape(&format!("\"{}\"", env!("CARGO_PKG_VERSION"))),
        "\"[VERSION]\"",
    );
    settings.bind(|| insta::assert_json_snapshot!("status_json", stable(status)));

    // The text form says the same.
    let text = String::from_utf8(skills(&data, &["status"]).stdout).unwrap();
    assert!(text.contains("claude-code"), "{text}");
    assert!(text.contains("search index: current"), "{text}");
    assert!(text.contains("embeddings: missing"), "{text}");
    assert!(text.contains("model: none"), "{text}");
}

#[test]
fn status_says_when_the_index_is_older_than_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let sample = common::repo().join("data/sample/claude-code");
    skills(&data, &["ingest", "--quiet", sample.to_str().unwrap()]);
    // Another writer changes the database after the index was published.
    {
        let conn = duckdb::Connection::open(data.join("conversations.duckdb")).unwrap();
        conn.execute_batch("DELETE FROM all_conversations WHERE msg_index = 0; CHECKPOINT;")
            .unwrap();
    }
    let status = status_json(&data);
    assert_eq!(status["conversations"]["index"]["state"], "stale");
}

/// One byte changed inside a segment of the search index (its length and structure
/// intact, so readers still open it): `skills status` says "damaged" and names the
/// file and the CRC-32 that differs, where it used to say "current"; the next
/// `skills ingest`, with nothing new to import, rebuilds it and status is current.
#[test]
fn status_finds_a_changed_byte_in_the_index_and_the_next_ingest_rebuilds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let sample = common::repo().join("data/sample/claude-code");
    skills(&data, &["ingest", "--quiet", sample.to_str().unwrap()]);
    assert_eq!(
        status_json(&data)["conversations"]["index"]["state"],
        "current"
    );
    let dir = data.join("conversations.index");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("MANIFEST")).unwrap()).unwrap();
    let file = manifest["segments"][0]["file"].as_str().unwrap().to_owned();
    let seg = dir.join(&file);
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&seg, &bytes).unwrap();

    let index = &status_json(&data)["conversations"]["index"];
    assert_eq!(index["state"], "damaged", "{index}");
    let error = index["error"].as_str().unwrap();
    assert!(error.contains(&file) && error.contains("CRC-32"), "{error}");
    let text = String::from_utf8(skills(&data, &["status"]).stdout).unwrap();
    assert!(text.contains("damaged"), "{text}");

    let again = skills(&data, &["ingest", sample.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&again.stdout).to_string()
        + &String::from_utf8_lossy(&again.stderr);
    assert!(
        said.contains("CRC-32"),
        "the ingest says why it rebuilt: {said}"
    );
    assert_eq!(
        status_json(&data)["conversations"]["index"]["state"],
        "current"
    );
}

/// `skills status` names the memories' model from the files: with the second tier's
/// files in the model folder it names the second tier, without loading its engine
/// (a library that leaves a mark when loaded) or its weights just to print a name.
/// Skipped, with a note, without a C compiler (`cc`) to build that library.
#[cfg(target_os = "linux")]
#[test]
fn status_names_the_second_tier_without_loading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let e5 = tmp.path().join("model/e5");
    std::fs::create_dir_all(&e5).unwrap();
    let source = tmp.path().join("mark.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n#include <stdlib.h>\n\
         __attribute__((constructor)) static void loaded(void) {\n\
         const char *mark = getenv(\"SKILLS_TEST_E5_MARK\");\n\
         if (mark) { FILE *f = fopen(mark, \"w\"); if (f) fclose(f); }\n}\n",
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(e5.join("libe5.so"))
        .arg(&source)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        common::not_run("no C compiler (`cc`) to build a marking libe5.so");
        return;
    }
    std::fs::write(e5.join("e5-small-q4.bin"), b"not loaded").unwrap();
    let mark = tmp.path().join("loaded");
    let data = tmp.path().join("data");
    let status = common::cli::json(
        common::cli::with_data(&data)
            .args(["status", "--json"])
            .env("SKILLS_MODEL_DIR", tmp.path().join("model"))
            .env("SKILLS_TEST_E5_MARK", &mark)
            .env_remove("SKILLS_EMBEDDER"),
    );
    assert_eq!(
        status["memories"]["model"],
        skills::embed::deep::NAME,
        "{status}"
    );
    assert!(!mark.exists(), "status loaded the second tier's engine");
}

/// A copy of the data folder (`cp -r`: new inodes and modification times, the same
/// bytes) keeps its search index and embeddings: status says current and the copy
/// answers search-conversations and semantic-search as the original does. A write by
/// another tool to the copy, or an older version of the store copied over a copy that
/// was written since, still makes them stale.
#[test]
fn a_copied_data_folder_keeps_its_index_and_embeddings_until_its_store_changes() {
    if common::embedder().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let original = tmp.path().join("original");
    let sample = common::repo().join("data/sample/claude-code");
    let with_model = |data: &Path, args: &[&str]| {
        common::cli::ok(
            common::cli::with_data(data)
                .args(args)
                .env_remove("SKILLS_EMBEDDER"),
        )
    };
    with_model(&original, &["ingest", "--quiet", sample.to_str().unwrap()]);
    let states = |data: &Path| {
        let v: Value =
            serde_json::from_slice(&with_model(data, &["status", "--json"]).stdout).unwrap();
        (
            v["conversations"]["index"]["state"].clone(),
            v["conversations"]["embeddings"]["state"].clone(),
        )
    };
    assert_eq!(states(&original), ("current".into(), "current".into()));
    let answer = |data: &Path, skill: &str, arg: &str| {
        let out = with_model(data, &["--json", "run", skill, "--arg", arg]);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["data"].clone()
    };

    let copy = tmp.path().join("copy");
    common::copy_dir(&original, &copy);
    let (a, b) = (
        std::fs::metadata(original.join("conversations.duckdb")).unwrap(),
        std::fs::metadata(copy.join("conversations.duckdb")).unwrap(),
    );
    assert_ne!(
        (
            a.modified().unwrap(),
            std::os::unix::fs::MetadataExt::ino(&a)
        ),
        (
            b.modified().unwrap(),
            std::os::unix::fs::MetadataExt::ino(&b)
        ),
        "the copy kept the file's stamp, so it tests nothing"
    );
    assert_eq!(states(&copy), ("current".into(), "current".into()));
    for (skill, arg) in [
        ("search-conversations", "term=the"),
        (
            "semantic-search",
            "query=what did we decide about the build",
        ),
    ] {
        let here = answer(&copy, skill, arg);
        assert!(
            here["rows"].as_array().is_some_and(|r| !r.is_empty()),
            "{skill}: {here}"
        );
        assert_eq!(here, answer(&original, skill, arg), "{skill} on the copy");
    }

    // The copy written since (a new identity), then the original's file copied over it.
    let more = tmp.path().join("more.jsonl");
    std::fs::write(
        &more,
        "{\"role\":\"user\",\"content\":\"only in the copy\",\"conversation_id\":\"c9\",\"id\":\"m9\"}\n",
    )
    .unwrap();
    with_model(&copy, &["ingest", "--quiet", more.to_str().unwrap()]);
    assert_eq!(states(&copy), ("current".into(), "current".into()));
    std::fs::copy(
        original.join("conversations.duckdb"),
        copy.join("conversations.duckdb"),
    )
    .unwrap();
    assert_eq!(states(&copy), ("stale".into(), "stale".into()));

    // Another tool's write to a fresh copy.
    let other = tmp.path().join("other");
    common::copy_dir(&original, &other);
    {
        let conn = duckdb::Connection::open(other.join("conversations.duckdb")).unwrap();
        conn.execute_batch("DELETE FROM all_conversations WHERE msg_index = 0; CHECKPOINT;")
            .unwrap();
    }
    assert_eq!(states(&other), ("stale".into(), "stale".into()));
}
