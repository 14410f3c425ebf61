//! The SQL sandbox (issue 19, part 1): SQL from a skill folder — the `sql` engine's
//! query and the conformance checks' reference SQL — reads the store and nothing else.
//!
//! Each hostile query runs as a drop-in skill on a real store (DuckDB conversations or
//! SQLite memories) and through the checks' query path. The suite proves: every attempt
//! is refused with an error naming a sandbox rule, no sentinel file's content comes
//! back, no file appears in or changes under the watched folders (stores included), and
//! no socket is opened (a loopback listener the URLs point at accepts nothing; the
//! process's socket count does not grow).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::TimeZone;
use common::message;
use serde_json::{json, Value};
use skills::engines::Context;
use skills::host::Host;
use skills::model::Memory;
use skills::stores::conversations::ConversationStore;
use skills::stores::memories::MemoryStore;
use skills::stores::StorePaths;
use skills::verify::checks::params::StoreName;
use skills::verify::checks::Probe;

const SECRET: &str = "sentinel-secret-7f3a9c";

/// Stores, a skills folder, sentinel files outside it and a folder writes would land in.
struct Sandbox {
    root: tempfile::TempDir,
    port: u16,
}

impl Sandbox {
    fn new(port: u16) -> Self {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let store = ConversationStore::open_rw(&data.join("conversations.duckdb")).unwrap();
        store
            .insert(&[message("a", 0, "hello there"), message("a", 1, "bye")])
            .unwrap();
        store.close().unwrap();
        let memories = MemoryStore::open_rw(&data.join("memories.sqlite")).unwrap();
        let t = chrono::Utc.with_ymd_and_hms(2026, 7, 1, 10, 0, 0).unwrap();
        memories
            .upsert(&Memory {
                id: "m1".into(),
                title: "A decision".into(),
                kind: "decision".into(),
                tags: vec![],
                created: t,
                updated: t,
                body: "use sqlite".into(),
                files_read: vec![],
                files_modified: vec![],
                origin: None,
            })
            .unwrap();
        drop(memories);
        let outside = root.path().join("outside");
        fs_err::create_dir_all(outside.join("out")).unwrap();
        fs_err::write(outside.join("secret.txt"), format!("{SECRET}\n")).unwrap();
        fs_err::write(outside.join("secret.csv"), format!("a\n{SECRET}\n")).unwrap();
        fs_err::write(
            outside.join("secret.json"),
            format!("{{\"a\": \"{SECRET}\"}}"),
        )
        .unwrap();
        let other = ConversationStore::open_rw(&outside.join("other.duckdb")).unwrap();
        other.insert(&[message("z", 0, SECRET)]).unwrap();
        other.close().unwrap();
        fs_err::create_dir_all(root.path().join("skills")).unwrap();
        Self { root, port }
    }

    fn outside(&self) -> PathBuf {
        self.root.path().join("outside")
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// `text` with `{dir}` (the outside folder), `{out}` (a folder writes would land
    /// in) and `{port}` (the loopback listener) filled in.
    fn fill(&self, text: &str) -> String {
        text.replace("{dir}", &self.outside().display().to_string())
            .replace("{out}", &self.outside().join("out").display().to_string())
            .replace("{port}", &self.port.to_string())
    }

    fn add_skill(&self, name: &str, store: &str, query: &str) {
        let d = self.root.path().join("skills").join(name);
        fs_err::create_dir_all(&d).unwrap();
        fs_err::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: hostile query\nengine: sql\nreads: [{store}]\nengine-options: {{store: {store}}}\ninput-schema:\n  type: object\n  properties: {{}}\n---\n# {name}\n"),
        )
        .unwrap();
        fs_err::write(d.join("template.md.j2"), "{{ data | tojson }}").unwrap();
        fs_err::write(d.join("query.sql"), self.fill(query)).unwrap();
    }

    fn host(&self) -> Host {
        Host::load(
            &self.root.path().join("skills"),
            Context::new(StorePaths::in_dir(self.data())),
        )
    }

    /// Every file under the root except the skills folder, with size and content.
    fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs_err::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.ends_with("skills") {
                    continue;
                }
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.insert(path.clone(), fs_err::read(&path).unwrap_or_default());
                }
            }
        }
        out
    }
}

/// Open sockets of this process (Linux `/proc/self/fd`; `None` elsewhere).
fn socket_count() -> Option<usize> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        entries
            .filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.to_string_lossy().starts_with("socket:"))
            .count(),
    )
}

/// Hostile DuckDB queries (conversations store), by class.
const DUCKDB_HOSTILE: &[(&str, &str)] = &[
    // File readers.
    ("read_text", "SELECT content FROM read_text('{dir}/secret.txt')"),
    ("read_text_passwd", "SELECT content FROM read_text('/etc/passwd')"),
    ("read_text_list", "SELECT content FROM read_text(['{dir}/secret.txt'])"),
    ("read_blob", "SELECT content FROM read_blob('{dir}/secret.txt')"),
    ("read_csv", "SELECT * FROM read_csv('{dir}/secret.csv')"),
    ("read_csv_auto", "SELECT * FROM read_csv_auto('{dir}/secret.csv')"),
    ("sniff_csv", "SELECT * FROM sniff_csv('{dir}/secret.csv')"),
    ("read_json", "SELECT * FROM read_json('{dir}/secret.json')"),
    ("read_parquet", "SELECT * FROM read_parquet('{dir}/*.parquet')"),
    ("replacement_scan", "SELECT * FROM '{dir}/secret.csv'"),
    ("glob", "SELECT * FROM glob('{dir}/*')"),
    ("cte_reader", "WITH x AS (SELECT 1) SELECT content FROM read_text('{dir}/secret.txt')"),
    ("query_function", "SELECT * FROM query('SELECT content FROM read_text(''{dir}/secret.txt'')')"),
    // Writers.
    ("copy_to", "COPY (SELECT 'owned' AS line) TO '{out}/x.txt'"),
    (
        "copy_after_wrapper",
        "SELECT 1 AS a) AS q; COPY (SELECT 'owned' AS line) TO '{out}/x.txt' (FORMAT csv); SELECT * FROM (SELECT 1 AS a",
    ),
    ("export_database", "EXPORT DATABASE '{out}/dump'"),
    (
        "export_after_wrapper",
        "SELECT 1 AS a) AS q; EXPORT DATABASE '{out}/dump'; SELECT * FROM (SELECT 1 AS a",
    ),
    ("create_table", "CREATE TABLE t AS SELECT 1 AS a"),
    ("delete", "DELETE FROM all_conversations"),
    (
        "delete_after_wrapper",
        "SELECT 1 AS a) AS q; DELETE FROM all_conversations; SELECT * FROM (SELECT 1 AS a",
    ),
    // Other databases.
    ("attach", "ATTACH '{dir}/other.duckdb' AS o (READ_WRITE)"),
    (
        "attach_after_wrapper",
        "SELECT 1 AS a) AS q; ATTACH '{dir}/other.duckdb' AS o (READ_WRITE); DELETE FROM o.all_conversations; SELECT * FROM (SELECT 1 AS a",
    ),
    ("attach_new_file", "SELECT 1 AS a) AS q; ATTACH '{out}/new.duckdb' AS n; SELECT * FROM (SELECT 1 AS a"),
    // Extensions.
    ("install", "INSTALL httpfs"),
    ("install_after_wrapper", "SELECT 1 AS a) AS q; INSTALL httpfs; LOAD httpfs; SELECT * FROM (SELECT 1 AS a"),
    ("load_path", "SELECT 1 AS a) AS q; LOAD '{dir}/evil.duckdb_extension'; SELECT * FROM (SELECT 1 AS a"),
    // URLs.
    ("http_csv", "SELECT * FROM read_csv('http://127.0.0.1:{port}/x.csv')"),
    ("https_scan", "SELECT * FROM 'https://127.0.0.1:{port}/x.parquet'"),
    ("http_text", "SELECT content FROM read_text('http://127.0.0.1:{port}/x.txt')"),
    ("s3", "SELECT * FROM read_parquet('s3://bucket/x.parquet')"),
    // Settings.
    ("set", "SET enable_external_access = true"),
    (
        "set_after_wrapper",
        "SELECT 1 AS a) AS q; SET enable_external_access = true; SELECT * FROM (SELECT 1 AS a",
    ),
    ("reset_lock", "SELECT 1 AS a) AS q; RESET lock_configuration; SELECT * FROM (SELECT 1 AS a"),
    ("pragma", "PRAGMA enable_profiling"),
    // Several statements without the wrapper trick.
    ("two_selects", "SELECT 1; SELECT content FROM read_text('{dir}/secret.txt')"),
];

/// Hostile SQLite queries (memories store).
const SQLITE_HOSTILE: &[(&str, &str)] = &[
    ("sqlite_attach", "ATTACH '{out}/x.sqlite' AS x"),
    (
        "sqlite_attach_then_write",
        "SELECT 1; ATTACH '{out}/x.sqlite' AS x",
    ),
    ("sqlite_two_statements", "SELECT 1; DELETE FROM memories"),
    ("sqlite_vacuum_into", "VACUUM INTO '{out}/copy.sqlite'"),
    (
        "sqlite_cte_write",
        "WITH x AS (SELECT 1) DELETE FROM memories",
    ),
    ("sqlite_pragma", "PRAGMA query_only = 0"),
    ("sqlite_insert", "INSERT INTO memories(id) VALUES ('x')"),
    (
        "sqlite_load_extension",
        "SELECT load_extension('{dir}/evil')",
    ),
];

#[test]
fn hostile_queries_read_write_and_connect_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let sandbox = Sandbox::new(listener.local_addr().unwrap().port());
    for (name, query) in DUCKDB_HOSTILE {
        sandbox.add_skill(&name.replace('_', "-"), "conversations", query);
    }
    for (name, query) in SQLITE_HOSTILE {
        sandbox.add_skill(&name.replace('_', "-"), "memories", query);
    }
    let before = sandbox.files();
    let host = sandbox.host();
    assert_eq!(
        host.skills().len(),
        DUCKDB_HOSTILE.len() + SQLITE_HOSTILE.len(),
        "{:#?}",
        host.diagnostics()
    );
    let sockets = socket_count();
    let mut failures = Vec::new();
    for (name, _) in DUCKDB_HOSTILE.iter().chain(SQLITE_HOSTILE) {
        match host.call(&name.replace('_', "-"), json!({})) {
            Ok(out) => failures.push(format!("{name}: ran and returned {}", out.text)),
            Err(e) => {
                let message = format!("{e:#}");
                if message.contains(SECRET) {
                    failures.push(format!("{name}: the error leaks the sentinel: {message}"));
                }
                if !message.contains("sandbox rule") {
                    failures.push(format!("{name}: refused without naming a rule: {message}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(sandbox.files(), before, "a file was written or changed");
    assert!(
        listener.accept().is_err(),
        "a query connected to the listener"
    );
    assert_eq!(socket_count(), sockets, "a socket was left open");
    // The store is still readable through the same sandboxed connection.
    sandbox.add_skill(
        "plain",
        "conversations",
        "SELECT count(*) AS n FROM all_conversations",
    );
    let host = sandbox.host();
    assert_eq!(
        host.call("plain", json!({})).unwrap().data["rows"][0]["n"],
        2
    );
}

#[test]
fn closing_the_wrappers_parenthesis_runs_no_extra_statement() {
    let sandbox = Sandbox::new(9);
    sandbox.add_skill(
        "escape",
        "conversations",
        "SELECT 1 AS a) AS q; COPY (SELECT 'owned' AS line) TO '{out}/x.txt'; SELECT * FROM (SELECT 1 AS a",
    );
    let err = sandbox.host().call("escape", json!({})).unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.contains("sandbox rule `one statement`"),
        "{message}"
    );
    assert!(message.contains("found 3 statements"), "{message}");
    assert!(!sandbox.outside().join("out/x.txt").exists());
}

#[test]
fn read_text_of_an_outside_file_names_the_external_access_rule() {
    let sandbox = Sandbox::new(9);
    sandbox.add_skill(
        "reader",
        "conversations",
        "SELECT content FROM read_text('{dir}/secret.txt')",
    );
    let message = format!(
        "{:#}",
        sandbox.host().call("reader", json!({})).unwrap_err()
    );
    assert!(
        message.contains("sandbox rule `no external access`"),
        "{message}"
    );
    assert!(!message.contains(SECRET), "{message}");
}

/// Issue 43: the connection skill SQL runs on may read the store's own file (it is
/// attached read-only through `allowed_paths`), so a file reader pointed at the store
/// would return its raw bytes — text from before `--redact-stored` left in free pages
/// included. Every reader is refused by name before anything runs, and the store stays
/// readable as tables.
#[test]
fn file_readers_of_the_store_itself_are_refused() {
    let sandbox = Sandbox::new(9);
    let store = sandbox.data().join("conversations.duckdb");
    let store = store.display().to_string();
    let queries = [
        (
            "store-blob",
            format!("SELECT content FROM read_blob('{store}')"),
        ),
        (
            "store-text",
            format!("SELECT content FROM read_text('{store}')"),
        ),
        (
            "store-csv",
            format!("SELECT * FROM read_csv('{store}', all_varchar = true, header = false)"),
        ),
        (
            "store-wal",
            format!("SELECT content FROM read_blob('{store}.wal')"),
        ),
        (
            "store-nested",
            format!(
                "WITH n AS (SELECT count(*) AS n FROM all_conversations) \
                 SELECT n, (SELECT size FROM READ_BLOB('{store}')) AS size FROM n"
            ),
        ),
        (
            "store-query",
            format!("SELECT * FROM query('SELECT content FROM read_blob(''{store}'')')"),
        ),
        ("store-scan", format!("SELECT * FROM '{store}'")),
    ];
    for (name, query) in &queries {
        sandbox.add_skill(name, "conversations", query);
    }
    sandbox.add_skill(
        "plain",
        "conversations",
        "SELECT count(*) AS n FROM all_conversations, range(1)",
    );
    let host = sandbox.host();
    let mut failures = Vec::new();
    for (name, _) in &queries {
        match host.call(name, json!({})) {
            Ok(out) => failures.push(format!("{name}: ran and returned {} bytes", out.text.len())),
            Err(e) => {
                let message = format!("{e:#}");
                if !message.contains("sandbox rule `no external access`") {
                    failures.push(format!(
                        "{name}: refused without naming the rule: {message}"
                    ));
                }
                if message.contains("hello there") {
                    failures.push(format!("{name}: the error leaks stored text: {message}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        host.call("plain", json!({})).unwrap().data["rows"][0]["n"],
        2
    );
}

#[test]
fn sqlite_memories_queries_keep_holding() {
    let sandbox = Sandbox::new(9);
    sandbox.add_skill("ok", "memories", "SELECT id, title FROM memories");
    sandbox.add_skill("attach", "memories", "ATTACH '{out}/x.sqlite' AS x");
    sandbox.add_skill("multi", "memories", "SELECT 1; DELETE FROM memories");
    let host = sandbox.host();
    assert_eq!(
        host.call("ok", json!({})).unwrap().data["rows"][0]["id"],
        "m1"
    );
    let attach = format!("{:#}", host.call("attach", json!({})).unwrap_err());
    assert!(
        attach.contains("sandbox rule `read-only select`"),
        "{attach}"
    );
    let multi = format!("{:#}", host.call("multi", json!({})).unwrap_err());
    assert!(multi.contains("sandbox rule `one statement`"), "{multi}");
    assert!(!sandbox.outside().join("out/x.sqlite").exists());
    assert_eq!(host.call("ok", json!({})).unwrap().data["count"], 1);
}

/// The checks' query path (`rows_match_sql`, `store_predicate`, …) under the same rules.
#[test]
fn verify_reference_sql_cannot_write_files() {
    let sandbox = Sandbox::new(9);
    sandbox.add_skill(
        "plain",
        "conversations",
        "SELECT count(*) AS n FROM all_conversations",
    );
    let host = sandbox.host();
    let skill = host.get("plain").unwrap();
    let skills_dir = sandbox.root.path().join("skills");
    let data_dir = sandbox.data();
    let probe = Probe {
        host: &host,
        skill,
        args: &Value::Null,
        skills_dir: &skills_dir,
        data_dir: &data_dir,
        binary: None,
        now: None,
        embedder: Default::default(),
        archive: None,
        archive_server: None,
    };
    let before = sandbox.files();
    for (store, sql) in [
        (StoreName::Conversations, "COPY (SELECT 'owned' AS line) TO '{out}/x.csv'"),
        (
            StoreName::Conversations,
            "SELECT count(*) FROM all_conversations; COPY (SELECT 'owned' AS line) TO '{out}/x.csv'",
        ),
        (StoreName::Conversations, "SELECT content FROM read_text('{dir}/secret.txt')"),
        (StoreName::Memories, "SELECT 1; ATTACH '{out}/x.sqlite' AS x"),
        (StoreName::Memories, "VACUUM INTO '{out}/x.sqlite'"),
    ] {
        let sql = sandbox.fill(sql);
        let err = probe.query(store, &sql, &[]).unwrap_err();
        assert!(err.contains("sandbox rule"), "{sql}: {err}");
        assert!(!err.contains(SECRET), "{err}");
    }
    assert_eq!(sandbox.files(), before);
    let rows = probe
        .query(
            StoreName::Conversations,
            "SELECT count(*) FROM all_conversations",
            &[],
        )
        .unwrap();
    assert_eq!(rows, vec![vec![json!(2)]]);
}

#[test]
fn store_paths_stay_where_they_are() {
    // The sandbox is applied at open: the store file itself stays readable.
    let sandbox = Sandbox::new(9);
    let store = ConversationStore::open_ro(&sandbox.data().join("conversations.duckdb")).unwrap();
    assert_eq!(store.count().unwrap(), 2);
}
