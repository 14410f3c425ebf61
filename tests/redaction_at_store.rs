//! Secrets are redacted before they are stored (issue 43, finding 6). With redaction
//! only at output, `search-conversations` found a stored key by each of its prefixes
//! (`term=<key minus its last character>` returned the row, a wrong last character
//! none), so a key could be read out one character at a time. Now `skills ingest`
//! (transcripts and Parquet), `memo import`, `memo add` and `memo-save` store the
//! redacted text, so no search — ILIKE (with and without the search index), BM25,
//! exact or semantic — finds a secret; `--keep-secrets` / `SKILLS_KEEP_SECRETS` opts
//! out (search then finds it again: the documented trade-off); a store written before
//! says so in `skills status` until `skills ingest --redact-stored` redacts it in
//! place. Secrets come from `skills::redact::examples` (no secret-shaped literal in the
//! repository).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::cli;
use serde_json::{json, Value};

/// `skills` on the data folder `data`, without the setting this file tests.
fn skills(data: &Path) -> Command {
    let mut cmd = cli::with_data(data);
    cmd.env("SKILLS_EMBEDDER", "none")
        .env_remove("SKILLS_KEEP_SECRETS")
        .env_remove("SKILLS_SEARCH_INDEX");
    cmd
}

/// The AWS access key example: a fixed `AKIA` prefix, so every prefix is a valid probe.
fn aws_key() -> String {
    skills::redact::examples()
        .into_iter()
        .find(|(id, _, _)| id.starts_with("aws-access"))
        .map(|(_, _, secret)| secret)
        .unwrap()
}

/// One message holding `key` (and the word `deploy`).
fn transcript(dir: &Path, key: &str) -> PathBuf {
    let path = dir.join("t.jsonl");
    let line = json!({"role": "user", "content": format!("deploy with {key} please"),
        "timestamp": "2026-03-01T10:00:00Z", "conversation_id": "c1", "id": "m1"});
    fs_err::write(&path, format!("{line}\n")).unwrap();
    path
}

/// Rows `search-conversations` returns for `term` (`index`: through the search index,
/// else DuckDB's ILIKE scan).
fn rows(data: &Path, term: &str, index: bool) -> usize {
    let mut cmd = skills(data);
    if !index {
        cmd.env("SKILLS_SEARCH_INDEX", "off");
    }
    let args = json!({ "term": term }).to_string();
    let value = cli::json(cmd.args([
        "run",
        "search-conversations",
        "--json",
        "--args-json",
        &args,
    ]));
    value["data"]["rows"].as_array().map_or(0, Vec::len)
}

/// Whether `search-conversations` finds the message by any prefix of `key`, through
/// the search index or DuckDB's scan (both must agree).
fn found_by_prefix(data: &Path, key: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for cut in [4, 8, 12, key.len() - 1, key.len()] {
        let (indexed, scanned) = (
            rows(data, &key[..cut], true),
            rows(data, &key[..cut], false),
        );
        assert_eq!(indexed, scanned, "prefix of {cut}: index and scan disagree");
        if indexed > 0 {
            found.push(cut);
        }
    }
    found
}

fn status(data: &Path) -> Value {
    cli::json(skills(data).args(["status", "--json"]))
}

fn status_text(data: &Path) -> String {
    String::from_utf8(cli::ok(skills(data).arg("status")).stdout).unwrap()
}

#[test]
fn a_stored_secret_cannot_be_read_out_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let path = transcript(dir.path(), &key);
    let data = dir.path().join("data");
    let summary = cli::json(skills(&data).args(["ingest", "--json", path.to_str().unwrap()]));
    assert_eq!(summary["secrets_redacted"], 1, "{summary}");
    assert_eq!(rows(&data, "deploy", true), 1, "the message is stored");
    assert_eq!(found_by_prefix(&data, &key), Vec::<usize>::new());
    let s = status(&data);
    assert_eq!(s["conversations"]["secrets"], "redacted", "{s}");
    assert_eq!(s["conversations"]["secrets_redacted"], 1, "{s}");

    // `--keep-secrets`: stored as written, so the finding's oracle works again (the
    // trade-off the README states): every prefix finds it, a wrong last character not.
    let kept = dir.path().join("kept");
    cli::ok(skills(&kept).args([
        "ingest",
        "--keep-secrets",
        "--quiet",
        path.to_str().unwrap(),
    ]));
    assert_eq!(
        found_by_prefix(&kept, &key),
        vec![4, 8, 12, key.len() - 1, key.len()]
    );
    let wrong = format!(
        "{}{}",
        &key[..key.len() - 1],
        if key.ends_with('Z') { 'Y' } else { 'Z' }
    );
    assert_eq!(rows(&kept, &wrong, true), 0);
    let text = status_text(&kept);
    assert!(
        text.contains("--keep-secrets") && text.contains("skills ingest --redact-stored"),
        "{text}"
    );
    assert_eq!(status(&kept)["conversations"]["secrets"], "kept");

    // Redacted in place: the index follows, search no longer finds it.
    let done = cli::json(skills(&kept).args(["ingest", "--redact-stored", "--json"]));
    assert_eq!(done["conversations_secrets_redacted"], 1, "{done}");
    assert_eq!(found_by_prefix(&kept, &key), Vec::<usize>::new());
    assert_eq!(rows(&kept, "deploy", true), 1);
    assert_eq!(status(&kept)["conversations"]["secrets"], "redacted");
}

#[test]
fn the_setting_keeps_secrets_and_a_bad_value_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let path = transcript(dir.path(), &key);
    let data = dir.path().join("data");
    cli::ok(skills(&data).env("SKILLS_KEEP_SECRETS", "1").args([
        "ingest",
        "--quiet",
        path.to_str().unwrap(),
    ]));
    assert_eq!(rows(&data, &key[..12], true), 1);
    // `--redact` wins over the setting.
    let other = dir.path().join("other");
    cli::ok(skills(&other).env("SKILLS_KEEP_SECRETS", "yes").args([
        "ingest",
        "--redact",
        "--quiet",
        path.to_str().unwrap(),
    ]));
    assert_eq!(rows(&other, &key[..12], true), 0);
    let out = skills(&data)
        .env("SKILLS_KEEP_SECRETS", "maybe")
        .args(["ingest", "--quiet", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SKILLS_KEEP_SECRETS `maybe`"), "{err}");
}

/// A Parquet import (brain-mcp's export) is redacted too, its counts following the text.
#[test]
fn a_parquet_import_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let parquet = dir.path().join("all_conversations.parquet");
    let conn = duckdb::Connection::open_in_memory().unwrap();
    conn.execute(
        &format!(
            "COPY (SELECT 'chatgpt' AS source, 'c1' AS conversation_id, 'm1' AS message_id, \
             'user' AS role, ? AS content, TIMESTAMP '2026-03-01 10:00:00' AS created) \
             TO '{}' (FORMAT parquet)",
            parquet.display()
        ),
        [format!("deploy with {key} please")],
    )
    .unwrap();
    let data = dir.path().join("data");
    let summary = cli::json(skills(&data).args(["ingest", "--json", parquet.to_str().unwrap()]));
    assert_eq!(summary["secrets_redacted"], 1, "{summary}");
    assert_eq!(found_by_prefix(&data, &key), Vec::<usize>::new());
    let store = skills::stores::conversations::ConversationStore::open_ro(
        &skills::stores::StorePaths::in_dir(&data).conversations,
    )
    .unwrap();
    let (content, chars): (String, i64) = store
        .connection()
        .unwrap()
        .query_row(
            "SELECT content, char_count FROM all_conversations",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(content.contains("[REDACTED:"), "{content}");
    assert_eq!(chars, i64::try_from(content.chars().count()).unwrap());
}

#[test]
fn a_store_written_before_says_so_until_redacted_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let path = transcript(dir.path(), &key);
    let memo = dir.path().join("m.jsonl");
    let memory = json!({"id": "mem-1", "title": "Okapi credentials", "type": "fact",
        "created": "2026-05-01T10:00:00Z", "body": format!("okapi deploy key {key}")});
    fs_err::write(&memo, format!("{memory}\n")).unwrap();
    let data = dir.path().join("data");
    cli::ok(skills(&data).args([
        "ingest",
        "--keep-secrets",
        "--quiet",
        path.to_str().unwrap(),
    ]));
    cli::ok(skills(&data).args(["memo", "import", "--keep-secrets", memo.to_str().unwrap()]));
    // What an earlier version left: text as written, no mark.
    let paths = skills::stores::StorePaths::in_dir(&data);
    {
        let store = skills::stores::conversations::ConversationStore::open_rw(&paths.conversations)
            .unwrap();
        store
            .connection()
            .unwrap()
            .execute_batch("DROP TABLE store_meta")
            .unwrap();
        store.close().unwrap();
        let memories = rusqlite::Connection::open(&paths.memories).unwrap();
        memories.execute_batch("DROP TABLE store_meta").unwrap();
    }
    let text = status_text(&data);
    assert_eq!(
        text.matches("imported before secrets were redacted at store")
            .count(),
        2,
        "{text}"
    );
    assert!(text.contains("skills ingest --redact-stored"), "{text}");
    let s = status(&data);
    assert_eq!(s["conversations"]["secrets"], "not_redacted", "{s}");
    assert_eq!(s["memories"]["secrets"], "not_redacted", "{s}");
    // It keeps working: search, and a new import (which redacts the new text only).
    assert_eq!(rows(&data, &key[..12], true), 1);
    cli::ok(skills(&data).args(["ingest", "--quiet", path.to_str().unwrap()]));
    assert_eq!(status(&data)["conversations"]["secrets"], "not_redacted");

    let done = cli::json(skills(&data).args(["ingest", "--redact-stored", "--json"]));
    assert_eq!(done["conversations_secrets_redacted"], 1, "{done}");
    assert_eq!(done["memories_secrets_redacted"], 1, "{done}");
    assert_eq!(found_by_prefix(&data, &key), Vec::<usize>::new());
    assert_eq!(memo_hits(&data, &key, "bm25"), 0);
    let s = status(&data);
    assert_eq!(s["conversations"]["secrets"], "redacted", "{s}");
    assert_eq!(s["memories"]["secrets"], "redacted", "{s}");
    assert!(!status_text(&data).contains("imported before"));
}

/// Hits of `memo-search` for `query` in `mode`.
fn memo_hits(data: &Path, query: &str, mode: &str) -> usize {
    let args = json!({"query": query, "mode": mode}).to_string();
    let value =
        cli::json(skills(data).args(["run", "memo-search", "--json", "--args-json", &args]));
    value["data"]["hits"].as_array().map_or(0, Vec::len)
}

#[test]
fn memories_are_stored_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let data = dir.path().join("data");
    let added = String::from_utf8(
        cli::ok(skills(&data).args([
            "memo",
            "add",
            "--body",
            &format!("the okapi deploy key is {key}"),
        ]))
        .stdout,
    )
    .unwrap();
    assert!(added.contains("1 secret(s) redacted"), "{added}");
    let file = dir.path().join("m.jsonl");
    let memory = json!({"id": "mem-1", "title": "Okapi credentials", "type": "fact",
        "created": "2026-05-01T10:00:00Z", "body": format!("okapi again: {key}")});
    fs_err::write(&file, format!("{memory}\n")).unwrap();
    let imported =
        cli::json(skills(&data).args(["memo", "import", "--json", file.to_str().unwrap()]));
    assert_eq!(imported["secrets_redacted"], 1, "{imported}");
    let save =
        json!({"title": "okapi third", "body": format!("okapi once more {key}")}).to_string();
    cli::ok(skills(&data).args(["run", "memo-save", "--args-json", &save]));
    for mode in ["bm25", "exact", "fuzzy"] {
        assert_eq!(memo_hits(&data, &key, mode), 0, "{mode} found the key");
    }
    assert_eq!(memo_hits(&data, "okapi", "bm25"), 3);
    let store = skills::stores::memories::MemoryStore::open_ro(
        &skills::stores::StorePaths::in_dir(&data).memories,
    )
    .unwrap();
    assert_eq!(store.secrets_redacted().unwrap(), 3);
    let okapi = store.get("mem-1").unwrap().unwrap();
    assert!(
        !okapi.body.contains(&key) && okapi.body.contains("[REDACTED:"),
        "{}",
        okapi.body
    );
    let s = status(&data);
    assert_eq!(s["memories"]["secrets"], "redacted", "{s}");

    // `--keep-secrets`: found by its whole token again.
    let kept = dir.path().join("kept");
    cli::ok(skills(&kept).args(["memo", "import", "--keep-secrets", file.to_str().unwrap()]));
    assert_eq!(memo_hits(&kept, &key, "bm25"), 1);
    assert_eq!(status(&kept)["memories"]["secrets"], "kept");
}

/// Semantic search reads the same stored text: what its windows show (through a copy
/// of semantic-search that opts out of output redaction) holds no secret, unless
/// `--keep-secrets`. Needs the embedding model.
#[test]
fn semantic_search_finds_no_stored_secret() {
    if skills::embed::Embedder::default_name().is_err() {
        common::not_run("no embedding model (scripts/fetch-model)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let path = transcript(dir.path(), &key);
    let skills_dir = dir.path().join("skills");
    let dst = skills_dir.join("semantic-search");
    fs_err::create_dir_all(&dst).unwrap();
    for e in fs_err::read_dir(common::repo_skills().join("semantic-search")).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            fs_err::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
        }
    }
    let doc = fs_err::read_to_string(dst.join("SKILL.md")).unwrap();
    let doc = doc.replacen("\nengine:", "\nredact-secrets: false\nengine:", 1);
    fs_err::write(dst.join("SKILL.md"), doc).unwrap();
    let search = |data: &Path| -> String {
        let args = json!({"query": format!("deploy key {}", &key[..12])}).to_string();
        let out = cli::json(
            cli::with_data(data)
                .env("SKILLS_DIR", &skills_dir)
                .env_remove("SKILLS_EMBEDDER")
                .args(["run", "semantic-search", "--json", "--args-json", &args]),
        );
        assert!(out["data"]["count"].as_u64().unwrap_or(0) > 0, "{out}");
        out.to_string()
    };
    for (name, flags) in [("redacted", &[][..]), ("kept", &["--keep-secrets"][..])] {
        let data = dir.path().join(name);
        let mut cmd = cli::with_data(&data);
        cmd.env_remove("SKILLS_EMBEDDER")
            .env_remove("SKILLS_KEEP_SECRETS");
        cmd.args(["ingest", "--quiet"]).args(flags).arg(&path);
        cli::ok(&mut cmd);
        let found = search(&data);
        assert_eq!(found.contains(&key), name == "kept", "{name}: {found}");
    }
}

/// A Claude Code record of session `session` in folder `cwd`.
fn claude_record(session: &str, cwd: &str, uuid: &str, parent: Option<&str>, text: &str) -> String {
    json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": cwd, "sessionId": session, "version": "2.0.14",
        "type": "user", "message": {"role": "user", "content": text},
        "uuid": uuid, "timestamp": "2025-03-10T09:14:02.118Z"
    })
    .to_string()
}

/// Every stored value of the conversations store's text columns, and the memories
/// store's file as text: where a secret must not be.
fn stored_everywhere(data: &Path) -> String {
    let paths = skills::stores::StorePaths::in_dir(data);
    let store =
        skills::stores::conversations::ConversationStore::open_ro(&paths.conversations).unwrap();
    let conn = store.connection().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT concat_ws(' ', source, model, project, conversation_id, conversation_title, \
             message_id, parent_id, content) FROM all_conversations",
        )
        .unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let memories = String::from_utf8_lossy(&fs_err::read(&paths.memories).unwrap()).into_owned();
    rows.join("\n") + &memories
}

/// Issue 43, finding 6, in ids and metadata: a secret in a Claude Code `cwd` (the
/// stored `project`), a session id, a message id, a memory's tags, files, source and
/// conversation id is stored as a keyed marker. The `project` filter, memo-search's
/// `file` filter and exact search find nothing by any prefix of it;
/// two sessions whose ids differ only in their secret stay two conversations; a
/// re-import adds nothing; nothing printed holds a secret.
#[test]
fn secrets_in_ids_and_metadata_are_stored_as_keyed_markers() {
    let dir = tempfile::tempdir().unwrap();
    let key = aws_key();
    let (pw1, pw2) = ("hunter2hunter2", "hunter2hunter3");
    let cwd = format!("/home/u/{key}/app");
    let transcripts = dir.path().join("t");
    fs_err::create_dir_all(&transcripts).unwrap();
    for (n, pw) in [(1, pw1), (2, pw2)] {
        let session = format!("run-password={pw}");
        let (a, b) = (format!("msg-{key}-{n}a"), format!("msg-{key}-{n}b"));
        let lines = [
            claude_record(&session, &cwd, &a, None, "okapi first question"),
            claude_record(&session, &cwd, &b, Some(&a), "okapi second question"),
        ];
        fs_err::write(
            transcripts.join(format!("s{n}.jsonl")),
            lines.join("\n") + "\n",
        )
        .unwrap();
    }
    let data = dir.path().join("data");
    let mut printed = String::new();
    let summary =
        cli::json(skills(&data).args(["ingest", "--json", transcripts.to_str().unwrap()]));
    printed += &summary.to_string();
    assert_eq!(summary["messages_added"], 4, "{summary}");
    // cwd, session id and message id (and parent id) of each of 4 messages.
    assert!(
        summary["secrets_redacted"].as_u64().unwrap() >= 12,
        "{summary}"
    );
    let again = cli::json(skills(&data).args(["ingest", "--json", transcripts.to_str().unwrap()]));
    assert_eq!(again["messages_added"], 0, "{again}");
    // Touched files are imported again and still add nothing (same stored ids).
    for n in [1, 2] {
        let f = transcripts.join(format!("s{n}.jsonl"));
        let text = fs_err::read_to_string(&f).unwrap();
        fs_err::write(&f, text + "\n").unwrap();
    }
    let again = cli::json(skills(&data).args(["ingest", "--json", transcripts.to_str().unwrap()]));
    assert_eq!(again["messages_added"], 0, "{again}");
    {
        let paths = skills::stores::StorePaths::in_dir(&data);
        let store = skills::stores::conversations::ConversationStore::open_ro(&paths.conversations)
            .unwrap();
        let conn = store.connection().unwrap();
        let (conversations, messages, threaded): (i64, i64, i64) = conn
            .query_row(
                "SELECT count(DISTINCT conversation_id), count(*), \
                 count(*) FILTER (WHERE parent_id IN (SELECT message_id FROM all_conversations)) \
                 FROM all_conversations",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((conversations, messages, threaded), (2, 4, 2));
    }

    // Memories: memo add and memo-save with the secret in every metadata field.
    let file = format!("/srv/{key}/deploy.rs");
    printed += &String::from_utf8(
        cli::ok(skills(&data).args([
            "memo",
            "add",
            "--title",
            "okapi deploy",
            "--body",
            "okapi deploy notes",
            "--tag",
            &key,
            "--file-read",
            &file,
            "--file-modified",
            &file,
        ]))
        .stdout,
    )
    .unwrap();
    let save = json!({"title": "okapi rollout", "body": "okapi rollout notes",
        "tags": [key.clone(), format!("password={pw1}")], "files_read": [file.clone()],
        "files_modified": [file.clone()], "source": format!("{cwd}/notes.md"),
        "conversation_id": format!("run-password={pw1}")})
    .to_string();
    // Its `args` echo what the caller sent; what it answers is `data` and `text`.
    let saved = cli::json(skills(&data).args(["run", "memo-save", "--json", "--args-json", &save]));
    printed += &saved["data"].to_string();
    printed += &saved["text"].to_string();

    let stored = stored_everywhere(&data);
    for secret in [key.as_str(), pw1, pw2] {
        assert!(!stored.contains(secret), "stored: {secret} in {stored}");
    }
    assert!(stored.contains("[REDACTED:aws-access-key-id#"), "{stored}");

    // Probes: every prefix longer than what a marker shares finds nothing.
    let project_rows = |fragment: &str, index: bool| -> usize {
        let mut cmd = skills(&data);
        if !index {
            cmd.env("SKILLS_SEARCH_INDEX", "off");
        }
        let args = json!({"term": "okapi", "project": fragment}).to_string();
        let out = cli::json(cmd.args([
            "run",
            "search-conversations",
            "--json",
            "--args-json",
            &args,
        ]));
        out["data"]["rows"].as_array().map_or(0, Vec::len)
    };
    let memo = |args: Value| -> usize {
        let out = cli::json(skills(&data).args([
            "run",
            "memo-search",
            "--json",
            "--args-json",
            &args.to_string(),
        ]));
        out["data"]["hits"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(project_rows("/home/u/", true), 4, "the filter works");
    assert_eq!(project_rows("/home/u/", false), 4);
    assert_eq!(
        memo(json!({"query": "okapi", "file": "/srv/"})),
        2,
        "the filter works"
    );
    for cut in 5..=key.len() {
        let probe = &key[..cut];
        for index in [true, false] {
            assert_eq!(
                project_rows(probe, index),
                0,
                "project {probe} (index {index})"
            );
            assert_eq!(
                project_rows(&format!("/home/u/{probe}"), index),
                0,
                "{probe}"
            );
        }
        assert_eq!(
            memo(json!({"query": "okapi", "file": format!("/srv/{probe}")})),
            0,
            "{probe}"
        );
        assert_eq!(
            memo(json!({"query": probe, "mode": "exact"})),
            0,
            "exact {probe}"
        );
    }
    for cut in 5..=pw1.len() {
        let probe = format!("password={}", &pw1[..cut]);
        assert_eq!(
            memo(json!({"query": probe, "mode": "exact"})),
            0,
            "exact {probe}"
        );
        let args = json!({"term": "okapi", "project": probe}).to_string();
        let out = cli::json(skills(&data).args([
            "run",
            "search-conversations",
            "--json",
            "--args-json",
            &args,
        ]));
        assert_eq!(out["data"]["rows"].as_array().map_or(0, Vec::len), 0);
    }

    // Nothing printed holds a secret: search, get-conversation, memo-search, status.
    let search = cli::json(skills(&data).args([
        "run",
        "search-conversations",
        "--json",
        "--args-json",
        &json!({"term": "okapi"}).to_string(),
    ]));
    let conversation = search["data"]["rows"][0]["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        conversation.contains("[REDACTED:password-assignment#"),
        "{conversation}"
    );
    printed += &search.to_string();
    // The id printed is the stored id: it finds the conversation.
    let got = cli::json(skills(&data).args([
        "run",
        "get-conversation",
        "--json",
        "--args-json",
        &json!({"conversation_id": conversation}).to_string(),
    ]));
    assert!(got.to_string().contains("okapi first question"), "{got}");
    printed += &got.to_string();
    printed += &cli::json(skills(&data).args([
        "run",
        "memo-search",
        "--json",
        "--args-json",
        &json!({"query": "okapi", "explain": true}).to_string(),
    ]))
    .to_string();
    printed += &status_text(&data);
    for secret in [key.as_str(), pw1, pw2] {
        assert!(!printed.contains(secret), "printed: {secret} in {printed}");
    }

    // `--keep-secrets` stores them as written (the documented trade-off).
    let kept = dir.path().join("kept");
    cli::ok(skills(&kept).args([
        "ingest",
        "--keep-secrets",
        "--quiet",
        transcripts.to_str().unwrap(),
    ]));
    assert!(stored_everywhere_conversations(&kept).contains(&key));
    // …and `--redact-stored` then redacts the ids in place, into the same markers a
    // fresh import of that folder would store.
    cli::ok(skills(&kept).args(["ingest", "--redact-stored", "--quiet"]));
    let redacted = stored_everywhere_conversations(&kept);
    assert!(
        !redacted.contains(&key) && !redacted.contains(pw1),
        "{redacted}"
    );
    for cut in [5, 10, key.len()] {
        assert_eq!(
            {
                let args = json!({"term": "okapi", "project": &key[..cut]}).to_string();
                let out = cli::json(skills(&kept).args([
                    "run",
                    "search-conversations",
                    "--json",
                    "--args-json",
                    &args,
                ]));
                out["data"]["rows"].as_array().map_or(0, Vec::len)
            },
            0
        );
    }
    let again = cli::json(skills(&kept).args(["ingest", "--json", transcripts.to_str().unwrap()]));
    assert_eq!(again["messages_added"], 0, "{again}");
}

/// The conversations store's ids and text, as [`stored_everywhere`] reads them.
fn stored_everywhere_conversations(data: &Path) -> String {
    let paths = skills::stores::StorePaths::in_dir(data);
    let store =
        skills::stores::conversations::ConversationStore::open_ro(&paths.conversations).unwrap();
    let conn = store.connection().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT concat_ws(' ', project, conversation_id, message_id, parent_id, content) \
             FROM all_conversations",
        )
        .unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.join("\n")
}
