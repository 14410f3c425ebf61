//! Stores that recover and share (issue 19, part 5): a running server holds no DuckDB
//! lock between calls, an ingest that must wait names the process holding the store,
//! a hot SQLite journal left by a crash is rolled back on open, a failed ingest exits
//! 1, read-only opens leave the search index's stamp of the store unchanged, and run each
//! query on one DuckDB thread.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::serve::StdioSession;
use serde_json::{json, Value};
use skills::engines::Context;
use skills::stores::conversations::index::{Index, StoreStamp};
use skills::stores::memories::{Memory, MemoryStore};
use skills::stores::StorePaths;

fn skills(data: &Path, args: &[&str]) -> Output {
    common::cli::with_data(data)
        .args(args)
        .env("SKILLS_EMBEDDER", "none")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A generic JSON Lines transcript of `n` messages in conversation `conv`.
fn transcript(path: &Path, conv: &str, n: usize, word: &str) {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(
            &json!({
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": format!("{word} message {i} of {conv}"),
                "timestamp": format!("2026-03-{:02}T10:{:02}:00Z", 1 + i % 28, i % 60),
                "conversation_id": conv,
                "id": format!("{conv}-{i}"),
            })
            .to_string(),
        );
        text.push('\n');
    }
    fs_err::write(path, text).unwrap();
}

/// A data folder with one small conversation imported by `skills ingest`.
fn ingested() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("first.jsonl");
    transcript(&file, "c1", 6, "okapi");
    let o = skills(dir.path(), &["ingest", "--quiet", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    dir
}

/// True when a writer can take the DuckDB file's lock right now (one try, no wait).
fn write_lock_is_free(db: &Path) -> bool {
    match duckdb::Connection::open(db) {
        Ok(conn) => {
            drop(conn);
            true
        }
        Err(e) => {
            assert!(
                e.to_string().contains("Could not set lock"),
                "unexpected DuckDB error: {e}"
            );
            false
        }
    }
}

/// Regression, issue 19 "the server holds DuckDB 1–2 s after each call" (so `skills
/// ingest` failed after 30 s while `skills serve` answered one call a second): the
/// server keeps the store attached read-only between calls (its blocks cached), but
/// as soon as a writer takes the store's writer lock (`conversations.index/LOCK`, as
/// every `skills` writer does first) it lets go of DuckDB's lock, and an ingest run
/// succeeds without waiting, its rows seen by the server's next call.
#[test]
fn serve_lets_go_of_the_store_as_soon_as_a_writer_wants_it() {
    let data = ingested();
    let db = StorePaths::in_dir(data.path()).conversations;
    let mut session = StdioSession::spawn(
        common::cli::skills()
            .args(["serve", "--no-ingest"])
            .env("SKILLS_DIR", common::repo_skills())
            .env("SKILLS_DATA_DIR", data.path())
            // DuckDB answers every search: the path that opens the store.
            .env("SKILLS_SEARCH_INDEX", "off")
            .stderr(Stdio::null()),
    );
    session.initialize(1);
    let answer = |session: &mut StdioSession, id: u64, tool: &str, args: Value| -> String {
        session.call_tool(id, tool, args);
        let answer = session.next();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let call = |session: &mut StdioSession, id: u64, term: &str| -> String {
        answer(session, id, "search_conversations", json!({"term": term}))
    };
    // A `sql` skill's call too: its connections (and the statements they prepared)
    // are kept with the attachment between calls, and must go with it.
    let listed = |session: &mut StdioSession, id: u64| -> String {
        answer(session, id, "list_conversations", json!({}))
    };
    let writer_lock = db.with_extension("index").join("LOCK");
    for id in 2..5 {
        assert!(call(&mut session, id, "okapi").contains("okapi message"));
        assert!(!listed(&mut session, 100 + id).contains("giraffe"));
        // Between calls the server keeps the store attached (its blocks cached)…
        assert!(
            !write_lock_is_free(&db),
            "after call {id} the server let go of `{}` with no writer waiting",
            db.display()
        );
        // …until a writer takes the writer lock first: the server detaches within a few
        // tens of milliseconds (its watcher looks every 20 ms).
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&writer_lock)
            .unwrap();
        lock.lock().unwrap();
        let wanted = std::time::Instant::now();
        while !write_lock_is_free(&db) {
            assert!(
                wanted.elapsed() < std::time::Duration::from_secs(5),
                "after call {id} the server still holds `{}` with a writer waiting",
                db.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        eprintln!(
            "call {id}: the file was free {:?} after the writer lock",
            wanted.elapsed()
        );
        drop(lock);
    }
    let second = data.path().join("second.jsonl");
    transcript(&second, "c2", 4, "giraffe");
    let o = skills(
        data.path(),
        &["ingest", "--quiet", second.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("waiting"),
        "ingest waited for the server: {}",
        stderr(&o)
    );
    assert!(call(&mut session, 5, "giraffe").contains("giraffe message"));
    // The list answers from the file as ingest left it, not from a kept connection's
    // view of the file before.
    assert!(
        listed(&mut session, 6).contains("giraffe"),
        "{}",
        listed(&mut session, 7)
    );
    // The server's stdin closed ends it.
    session.close_stdin();
    session.rest();
    assert!(session.child.wait().unwrap().success());
}

/// Issue 19 "if ingest must wait, it says which process holds the store": while this
/// process holds the write lock, `skills ingest` waits, says on stderr that the store
/// is held and by which PID, and succeeds once the lock is released.
#[test]
fn ingest_waiting_for_the_store_names_the_process_holding_it() {
    let data = ingested();
    let db = StorePaths::in_dir(data.path()).conversations;
    let holder = duckdb::Connection::open(&db).unwrap();
    let second = data.path().join("second.jsonl");
    transcript(&second, "c2", 4, "giraffe");
    let mut ingest = Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["ingest", "--quiet", second.to_str().unwrap()])
        .env("SKILLS_DATA_DIR", data.path())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // The lock is released once ingest said it waits (not after a guessed time: a
    // slow start must not make it miss the lock).
    let mut said = String::new();
    let mut lines = std::io::BufReader::new(ingest.stderr.take().unwrap()).lines();
    while !said.contains("waiting up to 30 s for") {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("ingest ended without waiting: {said}"));
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    drop(holder);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let err = format!("{said}{}", rest.join("\n"));
    assert!(ingest.wait().unwrap().success(), "{err}");
    assert!(
        err.contains(&format!("(PID {})", std::process::id())),
        "the note does not name this test's PID {}: {err}",
        std::process::id()
    );
}

/// Makes a memories store with one memory whose body is `body`.
fn memories_store(dir: &Path, body: &str) -> PathBuf {
    let path = StorePaths::in_dir(dir).memories;
    let store = MemoryStore::open_rw(&path).unwrap();
    let t = chrono::DateTime::parse_from_rfc3339("2026-07-01T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    store
        .upsert(&Memory {
            id: "m1".into(),
            title: "Pagination decision".into(),
            kind: "decision".into(),
            tags: vec!["api".into()],
            created: t,
            updated: t,
            body: body.into(),
            files_read: vec![],
            files_modified: vec![],
            origin: None,
        })
        .unwrap();
    drop(store);
    path
}

/// Copies `db` and its hot journal as a crash would leave them: a writer's transaction
/// is half written to the database file (its cache spilled) and its journal holds the
/// pages to roll back; the copies are not locked by any process.
fn crash_copy(db: &Path, into: &Path) -> PathBuf {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch("PRAGMA cache_size = 1; BEGIN;").unwrap();
    let filler = "x".repeat(4000);
    for i in 0..200 {
        conn.execute(
            "INSERT INTO memories (id, title, type, tags, created, updated, body, files_read, \
             files_modified, content_hash) VALUES (?1, 't', 'fact', '[]', '2026-07-01T10:00:00Z', \
             '2026-07-01T10:00:00Z', ?2, '[]', '[]', 'h')",
            rusqlite::params![format!("crash-{i}"), filler],
        )
        .unwrap();
    }
    let journal = PathBuf::from(format!("{}-journal", db.display()));
    assert!(
        fs_err::metadata(&journal).unwrap().len() > 0,
        "the transaction left no journal"
    );
    fs_err::create_dir_all(into).unwrap();
    let copy = into.join(db.file_name().unwrap());
    fs_err::copy(db, &copy).unwrap();
    fs_err::copy(&journal, into.join(journal.file_name().unwrap())).unwrap();
    conn.execute_batch("ROLLBACK").unwrap();
    copy
}

/// Regression, issue 19 "a leftover `memories.sqlite-journal` makes every search fail
/// with 'attempt to write a readonly database' until something writes": the journal
/// is rolled back when the store is opened for a search, which then answers from the
/// last committed state, and nobody is told to run a write.
#[test]
fn hot_journal_left_by_a_crash_is_rolled_back_and_search_works() {
    let data = tempfile::tempdir().unwrap();
    let db = memories_store(data.path(), "We chose cursor pagination over offsets.");
    let crashed = data.path().join("crashed");
    let copy = crash_copy(&db, &crashed);
    // The defect reproduced: a plain read-only open cannot read past the hot journal.
    let plain =
        rusqlite::Connection::open_with_flags(&copy, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let err = plain
        .query_row("SELECT count(*) FROM memories", [], |r| r.get::<_, i64>(0))
        .unwrap_err();
    assert!(err.to_string().contains("readonly"), "{err}");
    drop(plain);

    let o = skills(
        &crashed,
        &[
            "run",
            "memo-search",
            "--json",
            "--arg",
            "query=pagination",
            "--arg",
            "mode=bm25",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(out["data"]["count"], 1, "{out}");
    assert_eq!(out["data"]["hits"][0]["id"], "m1");
    assert!(!stderr(&o).contains("readonly"), "{}", stderr(&o));
    // Rolled back: the half-written memories are gone, the committed one is intact.
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
    let journal = crashed.join("memories.sqlite-journal");
    assert!(
        !journal.exists() || fs_err::metadata(&journal).unwrap().len() == 0,
        "the journal is still hot"
    );
}

/// The same recovery inside a long-running process: a context that opened the store
/// before the crash keeps answering after a hot journal appears beside it.
#[test]
fn hot_journal_is_rolled_back_for_a_store_opened_before_the_crash() {
    let data = tempfile::tempdir().unwrap();
    let db = memories_store(data.path(), "We chose cursor pagination over offsets.");
    let ctx = Context::new(StorePaths::in_dir(data.path()));
    assert_eq!(ctx.memories().unwrap().count().unwrap(), 1);
    // The crash, as seen by the running server: the file torn, the journal hot.
    let torn = crash_copy(&db, &data.path().join("torn"));
    fs_err::copy(&torn, &db).unwrap();
    fs_err::copy(
        data.path().join("torn/memories.sqlite-journal"),
        data.path().join("memories.sqlite-journal"),
    )
    .unwrap();
    assert_eq!(
        ctx.memories().unwrap().count().unwrap(),
        1,
        "the hot journal was not rolled back"
    );
}

/// Regression, issue 19 "a full disk during ingest exits 0": with the file size limit
/// of a nearly full disk (`ulimit -f`, writes past it fail with EFBIG), `skills ingest`
/// reports the failure and exits 1.
#[test]
fn ingest_on_a_full_disk_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let small = dir.path().join("small.jsonl");
    transcript(&small, "c1", 4, "okapi");
    let big = dir.path().join("big.jsonl");
    transcript(&big, "c2", 60_000, &"bulk ".repeat(40));
    let script = format!(
        "trap '' XFSZ; ulimit -f 2048; exec '{}' ingest --quiet '{}' '{}'",
        env!("CARGO_BIN_EXE_skills"),
        small.display(),
        big.display()
    );
    let o = Command::new("bash")
        .args(["-c", &script])
        .env("SKILLS_DATA_DIR", &data)
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.contains("fault") || all.contains("error"), "{all}");
}

/// Issue 19 "a failed ingest (any file failing) exits 1": one good file and one that
/// cannot be imported (given by path, of no known format) — the good one is stored,
/// the run exits 1 and names the other.
#[test]
fn ingest_with_a_file_that_fails_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    transcript(&good, "c1", 4, "okapi");
    let bad = dir.path().join("broken.json");
    fs_err::write(&bad, "{\"mapping\": [1, 2").unwrap();
    let o = skills(
        &dir.path().join("data"),
        &[
            "ingest",
            "--quiet",
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("broken.json"), "{out}");
    assert!(out.contains("1 of 2 files imported"), "{out}");
}

/// The search index records the DuckDB file's size, time and inode; the per-call
/// read-only opens of a server must not change them, or every search after the first
/// would fall back to a full scan.
#[test]
fn read_only_opens_keep_the_search_index_stamp() {
    let data = ingested();
    let paths = StorePaths::in_dir(data.path());
    let before = StoreStamp::of(&paths.conversations);
    assert!(Index::open(&paths.conversations).is_ok());
    let ctx = Context::new(paths.clone());
    for _ in 0..3 {
        let store = ctx.conversations().unwrap();
        assert_eq!(store.count().unwrap(), 6);
    }
    let host = skills::host::Host::load(&common::repo_skills(), Context::new(paths.clone()));
    for (skill, args) in [
        ("brain-stats", json!({})),
        ("get-conversation", json!({"conversation_id": "c1"})),
        ("search-conversations", json!({"term": "okapi"})),
    ] {
        host.call(skill, args).unwrap();
    }
    assert_eq!(StoreStamp::of(&paths.conversations), before);
    assert!(Index::open(&paths.conversations).is_ok());
}

/// README "Speed" (the pages): a read-only store runs each query on one DuckDB thread
/// (`SKILLS_QUERY_THREADS` unset), and skill SQL cannot change it (the kept
/// instance's configuration is locked).
#[test]
fn read_queries_run_on_one_duckdb_thread() {
    assert!(
        std::env::var_os("SKILLS_QUERY_THREADS").is_none(),
        "the test checks the default"
    );
    let data = ingested();
    let ctx = Context::new(StorePaths::in_dir(data.path()));
    let store = ctx.conversations().unwrap();
    let conn = store.connection().unwrap();
    let threads: i64 = conn
        .query_row("SELECT current_setting('threads')::BIGINT", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(threads, 1);
    assert!(
        conn.execute_batch("SET threads = 2").is_err(),
        "a query may not change the instance's threads"
    );
}
