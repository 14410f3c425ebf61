//! Ingest behaviour beyond parsing, on real corpus files (`$SKILLS_CORPUS_DIR`, default
//! `<manifest>/../shared/corpus`; skipped with a note when absent): injected harness
//! text is set aside, a second run reads nothing, appended lines are read from the
//! offset reached, a rewritten file replaces its rows, and phrases are found by the
//! `search_conversations` engine with the right source and role.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use skills::engines::search_conversations::SearchConversations;
use skills::engines::{Context, Engine};
use skills::ingest::{self, IngestOptions, IngestSummary};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

fn run(store: &ConversationStore, paths: &[PathBuf], options: IngestOptions) -> IngestSummary {
    ingest::ingest_paths_with(store, paths, options, &mut |_, _| {})
}

fn count(store: &ConversationStore, sql: &str) -> i64 {
    let conn = store.connection().expect("connection");
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

/// Runs `search_conversations` on the store file in `dir`.
fn search(dir: &Path, args: Value) -> Value {
    let ctx = Context::new(StorePaths::in_dir(dir));
    SearchConversations.call(&args, &ctx).expect("search")
}

fn previews(result: &Value) -> Vec<String> {
    let mut v: Vec<String> = result["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["preview"].as_str().expect("preview").to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn injected_text_is_set_aside_and_searchable_without_role() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let cc = corpus.join("claude-code/brain-mcp__sample_cc_mixed.jsonl");
    let codex = corpus.join("codex/brain-mcp__sample_codex_mixed.jsonl");

    let import = ingest::import_file(&cc).expect("import");
    let injected: Vec<bool> = import.messages.iter().map(|m| m.is_injected).collect();
    // Lines 3-9: isMeta skill body, slash command, task notification, compact summary,
    // Caveat note, interruption, system reminder. Lines 1, 2 and 10 are the person and
    // the assistant.
    assert_eq!(
        injected,
        [false, false, true, true, true, true, true, true, true, false]
    );
    let import = ingest::import_file(&codex).expect("import");
    let texts: Vec<(&str, bool)> = import
        .messages
        .iter()
        .map(|m| (m.content.as_str(), m.is_injected))
        .collect();
    assert_eq!(texts.len(), 6);
    assert!(texts[0].1 && texts[1].1 && texts[2].1, "{texts:?}");
    // The voice hand-off keeps only the spoken input.
    assert_eq!(
        texts[3],
        ("find every okapi sighting from last week", false)
    );
    assert_eq!(texts[4], ("how many okapi live in the reserve", false));

    let dir = tempfile::tempdir().expect("temp dir");
    let paths = [cc.clone(), codex.clone()];
    {
        let store =
            ConversationStore::open_rw(&dir.path().join("conversations.duckdb")).expect("store");
        let summary = run(&store, &paths, IngestOptions::default());
        assert_eq!(summary.messages_injected, 10, "{summary}");
        assert_eq!(summary.sources["claude-code"].injected, 7);
        assert_eq!(summary.sources["codex"].injected, 3);
        assert!(summary.to_string().contains("10 injected set aside"));
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM all_conversations WHERE is_injected"
            ),
            10
        );
    }
    let user = search(dir.path(), json!({"term": "giraffe", "role": "user"}));
    assert_eq!(
        previews(&user),
        [
            "and what about giraffe calves in october",
            "please explain the giraffe migration routes"
        ]
    );
    let user = search(dir.path(), json!({"term": "okapi", "role": "user"}));
    assert_eq!(
        previews(&user),
        [
            "find every okapi sighting from last week",
            "how many okapi live in the reserve"
        ]
    );
    // Without a role filter the harness text is still there.
    let all = search(dir.path(), json!({"term": "giraffe", "limit": 50}));
    assert_eq!(all["count"], 10);
    // Questions mode leaves injected text out too.
    let questions = search(dir.path(), json!({"term": "", "role": "user", "limit": 50}));
    assert!(previews(&questions).iter().all(|p| !p.starts_with('<')));

    // --keep-injected: a fresh store keeps them as ordinary user messages.
    let kept = tempfile::tempdir().expect("temp dir");
    {
        let store =
            ConversationStore::open_rw(&kept.path().join("conversations.duckdb")).expect("store");
        let summary = run(
            &store,
            &paths,
            IngestOptions {
                keep_injected: true,
                ..IngestOptions::default()
            },
        );
        assert_eq!(summary.messages_injected, 0);
    }
    let user = search(kept.path(), json!({"term": "giraffe", "role": "user"}));
    assert_eq!(user["count"], 9);
}

#[test]
fn phrases_in_codex_gemini_and_pi_are_found_with_source_and_role() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store =
            ConversationStore::open_rw(&dir.path().join("conversations.duckdb")).expect("store");
        let paths = ["codex", "gemini-cli", "pi"].map(|d| corpus.join(d));
        let summary = run(&store, &paths, IngestOptions::default());
        assert!(summary.is_clean(), "{summary}");
    }
    for (term, role, source, conversation) in [
        (
            "rewind the kafka consumer offsets",
            "user",
            "codex",
            "11111111-2222-3333-4444-555555555555",
        ),
        (
            "reset its kafka offsets with the admin tool",
            "assistant",
            "codex",
            "11111111-2222-3333-4444-555555555555",
        ),
        (
            "reading line by line for large files",
            "user",
            "gemini-cli",
            "test-session-gemini-001",
        ),
        ("handle empty input files gracefully", "user", "pi", ""),
        (
            "return an empty result set on empty input",
            "assistant",
            "pi",
            "",
        ),
    ] {
        let out = search(dir.path(), json!({"term": term, "role": role}));
        assert_eq!(out["count"], 1, "{term}: {out}");
        let row = &out["rows"][0];
        assert_eq!(row["source"], source, "{term}");
        assert_eq!(row["role"], role, "{term}");
        assert!(row["preview"].as_str().expect("preview").contains(term));
        if !conversation.is_empty() {
            assert_eq!(row["conversation_id"], conversation, "{term}");
        }
        // The other role does not match.
        let other = if role == "user" { "assistant" } else { "user" };
        let none = search(dir.path(), json!({"term": term, "role": other}));
        assert_eq!(none["count"], 0, "{term} as {other}");
    }
}

#[test]
fn second_run_reads_nothing_and_appends_read_only_new_lines() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let source = corpus.join("claude-code/spotter__short.jsonl");
    let text = fs_err::read_to_string(&source).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 15);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("session.jsonl");
    // First 10 lines, the 10th without its newline: it is imported but not consumed.
    fs_err::write(&file, lines[..10].join("\n")).expect("write");
    let store = ConversationStore::open_in_memory().expect("store");
    let first = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    let full = ingest::import_file(&source).expect("import");
    assert_eq!(first.messages_parsed + first.skipped, 10, "{first}");
    let stored_first = store.count().expect("count");
    assert_eq!(
        stored_first,
        u64::try_from(first.messages_added).expect("small")
    );

    // No change: nothing read, nothing added.
    let again = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(
        (
            again.files_unchanged,
            again.messages_parsed,
            again.messages_added
        ),
        (1, 0, 0)
    );

    // Append the rest: only lines from the offset (line 10 again, then 11-15) are read.
    {
        let mut f = fs_err::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open");
        f.write_all(format!("\n{}\n", lines[10..].join("\n")).as_bytes())
            .expect("append");
    }
    let grown = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(grown.files_resumed, 1, "{grown}");
    // Only lines 10-15 are read (10 again: it had no newline before).
    assert_eq!(grown.messages_parsed + grown.skipped, 6, "{grown}");
    assert_eq!(store.count().expect("count"), 3);
    // The stored rows equal a one-shot import of the whole file, msg_index included.
    let conn = store.connection().expect("connection");
    let mut stmt = conn
        .prepare("SELECT message_id, msg_index, is_first, is_last FROM all_conversations ORDER BY msg_index")
        .expect("prepare");
    let rows: Vec<(String, i64, bool, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let want: Vec<(String, i64)> = full
        .messages
        .iter()
        .map(|m| (m.message_id.clone(), m.msg_index))
        .collect();
    let got: Vec<(String, i64)> = rows.iter().map(|r| (r.0.clone(), r.1)).collect();
    assert_eq!(got, want);
    assert!(rows[0].2 && rows[2].3);
}

#[test]
fn appended_session_without_ids_continues_msg_index() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    // brain-mcp's mixed sample: no uuid, no sessionId, so ids hash the line number.
    let source = corpus.join("claude-code/brain-mcp__sample_cc_mixed.jsonl");
    let text = fs_err::read_to_string(&source).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("brain-mcp__sample_cc_mixed.jsonl");
    fs_err::write(&file, lines[..4].join("\n") + "\n").expect("write");
    let store = ConversationStore::open_in_memory().expect("store");
    let first = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(first.messages_added, 4);
    // Half a line (a writer mid-record): pending, not a fault (issue 30), imported
    // once completed.
    let rest = lines[4..].join("\n") + "\n";
    let (head, tail) = rest.split_at(30);
    fs_err::OpenOptions::new()
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(head.as_bytes()))
        .expect("append");
    let partial = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(
        (
            partial.messages_added,
            partial.faults.len(),
            partial.lines_unfinished
        ),
        (0, 0, 1)
    );
    fs_err::OpenOptions::new()
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(tail.as_bytes()))
        .expect("append");
    let done = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(done.files_resumed, 1);
    assert_eq!(done.messages_added, 6, "{done}");
    assert!(done.faults.is_empty(), "{done}");
    let whole = ingest::import_file(&source).expect("import");
    let ids: Vec<(String, i64)> = whole
        .messages
        .iter()
        .map(|m| (m.message_id.clone(), m.msg_index))
        .collect();
    let conn = store.connection().expect("connection");
    let mut stmt = conn
        .prepare("SELECT message_id, msg_index FROM all_conversations ORDER BY msg_index")
        .expect("prepare");
    let got: Vec<(String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(got, ids);
}

#[test]
fn rewritten_file_replaces_its_rows_and_two_folders_store_once() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let source = corpus.join("claude-code/brain-mcp__sample_cc_mixed.jsonl");
    let text = fs_err::read_to_string(&source).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a/brain-mcp__sample_cc_mixed.jsonl");
    fs_err::create_dir_all(dir.path().join("a")).expect("mkdir");
    fs_err::write(&file, text.as_bytes()).expect("write");
    let store = ConversationStore::open_in_memory().expect("store");
    assert_eq!(
        run(
            &store,
            std::slice::from_ref(&file),
            IngestOptions::default()
        )
        .messages_added,
        10
    );
    let explain = |store: &ConversationStore, verb: &str| {
        count(
            store,
            &format!("SELECT count(*) FROM all_conversations WHERE content LIKE '{verb} explain%'"),
        )
    };
    // Truncated (the first two lines gone, as a crash could leave it): fewer messages
    // than were imported, so nothing stored is dropped and a fault says so, on every
    // run until the file holds as many again.
    fs_err::write(&file, lines[2..].join("\n") + "\n").expect("truncate");
    for _ in 0..2 {
        let truncated = run(
            &store,
            std::slice::from_ref(&file),
            IngestOptions::default(),
        );
        assert_eq!(truncated.files_imported, 0, "{truncated}");
        assert_eq!(truncated.faults.len(), 1, "{truncated}");
        assert!(
            truncated.faults[0].reason.contains("looks truncated"),
            "{truncated}"
        );
        assert_eq!(store.count().expect("count"), 10);
        assert_eq!(explain(&store, "please"), 1);
    }

    // Rewritten with one line edited: ids that hash the line's text change, yet the
    // session's rows are replaced, not duplicated.
    let edited = text.replacen("please explain", "kindly explain", 1);
    fs_err::write(&file, &edited).expect("edit");
    let rewritten = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(
        (rewritten.files_imported, rewritten.files_resumed),
        (1, 0),
        "{rewritten}"
    );
    assert_eq!(store.count().expect("count"), 10, "{rewritten}");
    assert_eq!(
        (explain(&store, "please"), explain(&store, "kindly")),
        (0, 1)
    );

    // The same session copied under a second folder is stored once.
    let copy = dir.path().join("b/brain-mcp__sample_cc_mixed.jsonl");
    fs_err::create_dir_all(dir.path().join("b")).expect("mkdir");
    fs_err::copy(&file, &copy).expect("copy");
    let both = run(
        &store,
        &[dir.path().to_path_buf()],
        IngestOptions::default(),
    );
    assert_eq!(
        (
            both.files_unchanged,
            both.files_imported,
            both.messages_added
        ),
        (1, 1, 0)
    );
    assert_eq!(store.count().expect("count"), 10);

    // One copy edited again: the session's rows are replaced by that copy's, and the
    // other copy, which shared the session, is imported again in the same run, so its
    // messages stay (its older wording of the edited line included).
    fs_err::write(&file, text.replacen("please explain", "do explain", 1)).expect("edit");
    let one = run(
        &store,
        &[dir.path().to_path_buf()],
        IngestOptions::default(),
    );
    assert_eq!(
        (one.files_seen, one.files_imported, one.files_reimported),
        (2, 2, 1),
        "{one}"
    );
    assert_eq!(store.count().expect("count"), 11, "{one}");
    assert_eq!((explain(&store, "kindly"), explain(&store, "do")), (1, 1));
    let quiet = run(
        &store,
        &[dir.path().to_path_buf()],
        IngestOptions::default(),
    );
    assert_eq!(
        (quiet.files_unchanged, quiet.files_imported),
        (2, 0),
        "{quiet}"
    );
}

#[test]
fn whole_document_formats_are_skipped_when_unchanged_and_replaced_when_rewritten() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("conversations.json");
    fs_err::copy(
        corpus.join("chatgpt-export/librechat__chatgpt-tree.json"),
        &file,
    )
    .expect("copy");
    let store = ConversationStore::open_in_memory().expect("store");
    assert_eq!(
        run(
            &store,
            std::slice::from_ref(&file),
            IngestOptions::default()
        )
        .messages_added,
        6
    );
    assert_eq!(
        run(
            &store,
            std::slice::from_ref(&file),
            IngestOptions::default()
        )
        .files_unchanged,
        1
    );
    // A different export written over it: its conversations are added, and the old
    // conversation, which it no longer holds (deleted in the app), keeps its rows.
    fs_err::copy(
        corpus.join("chatgpt-export/brain-mcp__sample_chatgpt_export.json"),
        &file,
    )
    .expect("copy");
    let replaced = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(replaced.messages_added, 4, "{replaced}");
    assert_eq!(store.count().expect("count"), 10);
    // The first export again: its conversation is replaced, not duplicated.
    fs_err::copy(
        corpus.join("chatgpt-export/librechat__chatgpt-tree.json"),
        &file,
    )
    .expect("copy");
    let back = run(
        &store,
        std::slice::from_ref(&file),
        IngestOptions::default(),
    );
    assert_eq!(back.files_imported, 1, "{back}");
    assert_eq!(store.count().expect("count"), 10);
}

#[test]
fn parquet_export_imports_directly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let parquet = dir.path().join("all_conversations.parquet");
    // A brain-mcp-like export with only some columns: the rest are derived.
    {
        let conn = duckdb::Connection::open_in_memory().expect("duckdb");
        conn.execute_batch(&format!(
            "COPY (SELECT * FROM (VALUES
               ('chatgpt', 'c1', 'm1', 'user', 'How do parquet files store columns?', TIMESTAMP '2024-02-03 04:05:06', 'Parquet'),
               ('chatgpt', 'c1', 'm2', 'assistant', 'In column chunks, see https://parquet.apache.org', TIMESTAMP '2024-02-03 04:05:09', 'Parquet'),
               ('claude-code', 's9', 'u1', 'user', 'zebra stripes', TIMESTAMP '2024-03-01 00:00:00', NULL))
               AS t(source, conversation_id, message_id, role, content, created, conversation_title))
             TO '{}' (FORMAT parquet)",
            parquet.display()
        ))
        .expect("write parquet");
    }
    let store = ConversationStore::open_in_memory().expect("store");
    let summary = run(
        &store,
        std::slice::from_ref(&parquet),
        IngestOptions::default(),
    );
    assert_eq!(
        (summary.files_imported, summary.messages_added),
        (1, 3),
        "{summary}"
    );
    assert_eq!(summary.sources["parquet"].added, 3);
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM all_conversations WHERE conversation_id = 'c1' \
             AND conversation_msg_count = 2 AND year = 2024 AND NOT is_injected"
        ),
        2
    );
    assert_eq!(
        count(
            &store,
            "SELECT has_url FROM all_conversations WHERE message_id = 'm2'"
        ),
        1
    );
    assert_eq!(
        count(
            &store,
            "SELECT msg_index FROM all_conversations WHERE message_id = 'm2'"
        ),
        1
    );
    // Unchanged: not read again.
    let again = run(
        &store,
        std::slice::from_ref(&parquet),
        IngestOptions::default(),
    );
    assert_eq!(
        (
            again.files_unchanged,
            again.messages_parsed,
            again.messages_added
        ),
        (1, 0, 0),
        "{again}"
    );
    // Rewritten with one conversation edited: its rows are replaced, not duplicated.
    {
        let conn = duckdb::Connection::open_in_memory().expect("duckdb");
        conn.execute_batch(&format!(
            "COPY (SELECT * FROM (VALUES
               ('chatgpt', 'c1', 'm1', 'user', 'How do parquet row groups work?', TIMESTAMP '2024-02-03 04:05:06', 'Parquet'),
               ('claude-code', 's9', 'u1', 'user', 'zebra stripes', TIMESTAMP '2024-03-01 00:00:00', NULL))
               AS t(source, conversation_id, message_id, role, content, created, conversation_title))
             TO '{}' (FORMAT parquet)",
            parquet.display()
        ))
        .expect("rewrite parquet");
    }
    let rewritten = run(
        &store,
        std::slice::from_ref(&parquet),
        IngestOptions::default(),
    );
    assert_eq!(rewritten.files_imported, 1, "{rewritten}");
    assert_eq!(store.count().expect("count"), 2);
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM all_conversations WHERE content LIKE '%row groups%' \
             AND conversation_msg_count = 1"
        ),
        1
    );
    // A parquet file that is not shaped like the table is a fault, nothing stored.
    let bad = dir.path().join("bad.parquet");
    {
        let conn = duckdb::Connection::open_in_memory().expect("duckdb");
        conn.execute_batch(&format!(
            "COPY (SELECT 1 AS x) TO '{}' (FORMAT parquet)",
            bad.display()
        ))
        .expect("write parquet");
    }
    let summary = run(&store, &[bad], IngestOptions::default());
    assert_eq!((summary.files_imported, summary.faults.len()), (0, 1));
    assert_eq!(store.count().expect("count"), 2);
}

/// The batched path computes `is_first`, `is_last`, `conversation_msg_count`, `updated`
/// and missing titles in Rust for new conversations, and in SQL for rows appended to
/// stored ones; the staging path (`ConversationStore::insert`, one file at a time)
/// computes them in SQL. Over the whole corpus, half of every log imported first and
/// the rest appended, both give the same table, row for row.
#[test]
fn batched_ingest_matches_the_staging_path_row_for_row() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dirs: Vec<PathBuf> = ["claude-code", "chatgpt-export", "codex", "gemini-cli", "pi"]
        .iter()
        .map(|d| corpus.join(d))
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    // The batched store gets every append-only file in two goes: its first half, then
    // the rest appended (read from the offset reached: new rows of stored
    // conversations), everything else in one go (rows of new conversations).
    let copies: Vec<PathBuf> = dirs
        .iter()
        .map(|d| {
            let to = dir.path().join("copy").join(d.file_name().expect("name"));
            fs_err::create_dir_all(&to).expect("mkdir");
            to
        })
        .collect();
    let mut halves = Vec::new();
    for (from, to) in dirs.iter().zip(&copies) {
        for entry in fs_err::read_dir(from).expect("corpus dir") {
            let path = entry.expect("entry").path();
            let target = to.join(path.file_name().expect("name"));
            let text = fs_err::read(&path).expect("read");
            let lines = text.split_inclusive(|&b| b == b'\n').count();
            if path.extension().is_some_and(|e| e == "jsonl") && lines > 1 {
                let half: Vec<u8> = text
                    .split_inclusive(|&b| b == b'\n')
                    .take(lines / 2)
                    .flatten()
                    .copied()
                    .collect();
                fs_err::write(&target, half).expect("write half");
                halves.push((target, text));
            } else {
                fs_err::write(&target, text).expect("write");
            }
        }
    }
    let batched = ConversationStore::open_rw(&dir.path().join("batched.duckdb")).expect("store");
    let first = run(&batched, &copies, IngestOptions::default());
    assert!(first.faults.len() <= 3, "{first}");
    for (path, text) in &halves {
        fs_err::write(path, text).expect("write whole");
    }
    let summary = run(&batched, &copies, IngestOptions::default());
    assert!(summary.files_resumed > 20, "{summary}");
    drop(batched);

    let staged = ConversationStore::open_rw(&dir.path().join("staged.duckdb")).expect("store");
    let mut files = Vec::new();
    for d in &dirs {
        let mut here: Vec<PathBuf> = fs_err::read_dir(d)
            .expect("corpus dir")
            .map(|e| e.expect("entry").path())
            .collect();
        here.sort();
        files.extend(here);
    }
    for f in files {
        if let Ok(import) = ingest::import_file(&f) {
            staged.insert(&import.messages).expect("insert");
        }
    }
    let conn = staged.connection().expect("connection");
    conn.execute_batch(&format!(
        "ATTACH '{}' AS b (READ_ONLY)",
        dir.path().join("batched.duckdb").display()
    ))
    .expect("attach");
    let differing = |a: &str, b: &str| -> i64 {
        conn.query_row(
            &format!("SELECT count(*) FROM (SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b})"),
            [],
            |r| r.get(0),
        )
        .expect("compare")
    };
    let rows = |table: &str| -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    };
    assert!(rows("all_conversations") > 300);
    assert_eq!(rows("all_conversations"), rows("b.all_conversations"));
    assert_eq!(differing("all_conversations", "b.all_conversations"), 0);
    assert_eq!(differing("b.all_conversations", "all_conversations"), 0);
}

/// A store last written before column `is_injected` existed still answers user-role
/// searches (its rows count as not injected); the next ingest adds the column.
#[test]
fn store_without_the_injected_column_is_still_searchable() {
    use skills::stores::conversations::COLUMNS;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = StorePaths::in_dir(dir.path()).conversations;
    {
        // The table as the first release created it: every column but `is_injected`.
        let store = ConversationStore::open_rw(&path).expect("store");
        store
            .insert(&[skills::ingest::Message {
                message_id: "m1".into(),
                timestamp: chrono::DateTime::from_timestamp(1_700_000_000, 0).expect("time"),
                ..common::message("c1", 0, "Is the legacy store searchable?")
            }])
            .expect("insert");
        let conn = store.connection().expect("connection");
        let old: Vec<&str> = COLUMNS
            .iter()
            .copied()
            .filter(|c| *c != "is_injected")
            .collect();
        conn.execute_batch(&format!(
            "CREATE TABLE old AS SELECT {} FROM all_conversations;
             DROP TABLE all_conversations;
             ALTER TABLE old RENAME TO all_conversations;",
            old.join(", ")
        ))
        .expect("old schema");
    }
    for args in [
        json!({"term": "legacy", "role": "user"}),
        json!({"term": "", "role": "user"}),
    ] {
        let found = search(dir.path(), args.clone());
        assert_eq!(
            previews(&found),
            ["Is the legacy store searchable?"],
            "{args}"
        );
    }
}

/// Issue 43: a last line that grows in several appends without a newline is no fault
/// on any import, and each import reads only the bytes appended since the one before
/// (not the whole line again: quadratic on a line growing for a minute); the message
/// is imported once, when its newline arrives, and that import reads the line once.
#[test]
fn a_growing_last_line_costs_each_import_only_its_new_bytes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("notes.jsonl");
    let first = json!({"role": "user", "content": "what does the quokka eat?",
                       "timestamp": "2026-03-09T10:00:00Z"})
    .to_string()
        + "\n";
    let head = r#"{"role": "assistant", "timestamp": "2026-03-09T10:00:05Z", "content": "leaves"#;
    fs_err::write(&file, format!("{first}{head}")).expect("write");
    let store = ConversationStore::open_in_memory().expect("store");
    let files = std::slice::from_ref(&file);
    let started = run(&store, files, IngestOptions::default());
    assert_eq!(
        (
            started.messages_added,
            started.faults.len(),
            started.lines_unfinished
        ),
        (1, 0, 1),
        "{started}"
    );
    assert_eq!(started.jsonl_bytes_read, (first.len() + head.len()) as u64);
    let append = |text: &str| {
        fs_err::OpenOptions::new()
            .append(true)
            .open(&file)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .expect("append");
    };
    let chunk = " and grass".repeat(20_000);
    for _ in 0..4 {
        append(&chunk);
        let grown = run(&store, files, IngestOptions::default());
        assert_eq!(
            (
                grown.files_resumed,
                grown.messages_added,
                grown.faults.len(),
                grown.lines_unfinished
            ),
            (1, 0, 0, 1),
            "{grown}"
        );
        assert_eq!(
            grown.jsonl_bytes_read,
            chunk.len() as u64,
            "an import reads what was appended, not the line so far"
        );
    }
    let tail = "\"}\n";
    append(tail);
    let done = run(&store, files, IngestOptions::default());
    assert_eq!(
        (
            done.messages_added,
            done.faults.len(),
            done.lines_unfinished
        ),
        (1, 0, 0),
        "{done}"
    );
    let line = head.len() + 4 * chunk.len() + tail.len();
    // The new bytes scanned for the newline, then the line read once.
    assert_eq!(done.jsonl_bytes_read, (tail.len() + line) as u64);
    let again = run(&store, files, IngestOptions::default());
    assert_eq!((again.files_unchanged, again.jsonl_bytes_read), (1, 0));
    assert_eq!(count(&store, "SELECT count(*) FROM all_conversations"), 2);
    assert_eq!(
        count(
            &store,
            "SELECT max(char_count) FROM all_conversations WHERE role = 'assistant'"
        ),
        i64::try_from("leaves".len() + 4 * chunk.len()).expect("length")
    );
}
