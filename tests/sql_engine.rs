//! Engine `sql`: drop-in skills with no Rust. Values are bound, never spliced; queries
//! are read-only and bounded; broken query files are reported when the skill binds.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use chrono::TimeZone;
use serde_json::{json, Value};
use skills::engines::Context;
use skills::host::{CallError, Host};
use skills::ingest::Message;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

fn message(conv: &str, i: i64, role: &str, day: u32, content: &str) -> Message {
    Message {
        timestamp: chrono::Utc
            .with_ymd_and_hms(2025, 3, day, 10, 0, u32::try_from(i).unwrap())
            .unwrap(),
        role: role.into(),
        ..common::message(conv, i, content)
    }
}

/// A temp folder with the repository's skills copied in and a small store.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let src = common::repo_skills();
        for entry in std::fs::read_dir(src).unwrap() {
            let entry = entry.unwrap();
            let dest = dir.path().join("skills").join(entry.file_name());
            std::fs::create_dir_all(&dest).unwrap();
            for f in std::fs::read_dir(entry.path()).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), dest.join(f.file_name())).unwrap();
            }
        }
        let store =
            ConversationStore::open_rw(&dir.path().join("data/conversations.duckdb")).unwrap();
        store
            .insert(&[
                message("a", 0, "user", 10, "How do I use ILIKE?"),
                message(
                    "a",
                    1,
                    "assistant",
                    10,
                    "Use ILIKE with % on both sides: café ünïcode text",
                ),
                message("b", 0, "user", 11, "Second conversation"),
            ])
            .unwrap();
        Self { dir }
    }

    fn skills(&self) -> PathBuf {
        self.dir.path().join("skills")
    }

    fn host(&self) -> Host {
        Host::load(
            &self.skills(),
            Context::new(StorePaths::in_dir(self.dir.path().join("data"))),
        )
    }

    /// Adds a drop-in `sql` skill with the given query and options.
    fn add_sql_skill(&self, name: &str, options: &str, query: &str) -> PathBuf {
        common::sql_skill(
            &self.skills(),
            name,
            &format!("reads: [conversations, memories]\nengine-options: {options}\ninput-schema:\n  type: object\n  properties:\n    id: {{type: string, default: x}}\n"),
            query,
            "{{ data.count }}",
        )
        .join("SKILL.md")
    }
}

#[test]
fn ported_skills_load_and_answer() {
    let f = Fixture::new();
    let host = f.host();
    assert!(host.diagnostics().is_empty(), "{:#?}", host.diagnostics());
    let out = host.call("brain-stats", json!({})).unwrap();
    assert_eq!(out.data["rows"][0]["key"], "claude-code");
    assert_eq!(out.data["rows"][0]["messages"], 3);
    assert_eq!(out.data["rows"][0]["conversations"], 2);
    let out = host
        .call("conversations_by_date", json!({"date": "2025-03-10"}))
        .unwrap();
    assert_eq!(out.data["count"], 1);
    assert_eq!(out.data["rows"][0]["conversation_id"], "a");
    let out = host
        .call(
            "get-conversation",
            json!({"conversation_id": "a", "max_chars": 12}),
        )
        .unwrap();
    let rows = out.data["rows"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["msg_index"].clone())
            .collect::<Vec<_>>(),
        [json!(0), json!(1)]
    );
    assert_eq!(rows[1]["content"], "Use ILIKE wi");
    assert!(
        out.text
            .contains("### 2. assistant — 2025-03-10T10:00:01Z\n\nUse ILIKE wi…"),
        "{}",
        out.text
    );
}

#[test]
fn argument_values_cannot_change_the_query() {
    let f = Fixture::new();
    let host = f.host();
    for evil in [
        "a' OR '1'='1",
        "a'; DROP TABLE all_conversations; --",
        "a\" OR 1=1 --",
        "$conversation_id",
    ] {
        let out = host
            .call("get-conversation", json!({"conversation_id": evil}))
            .unwrap();
        assert_eq!(out.data["count"], 0, "{evil}");
        assert_eq!(out.text, format!("No messages in conversation '{evil}'"));
    }
    // The table is still there and whole.
    let out = host.call("brain-stats", json!({})).unwrap();
    assert_eq!(out.data["rows"][0]["messages"], 3);
}

#[test]
fn enum_arguments_choose_structure_and_bad_values_are_argument_errors() {
    let f = Fixture::new();
    let host = f.host();
    let out = host.call("brain-stats", json!({"by": "role"})).unwrap();
    let keys = common::strings(&out.data["rows"], "key");
    assert_eq!(keys, ["assistant", "user"]);
    match host.call("brain-stats", json!({"by": "source; DROP TABLE x"})) {
        Err(CallError::InvalidArguments { errors, .. }) => assert_eq!(errors[0].argument, "by"),
        other => panic!("expected an argument error, got {other:?}"),
    }
    match host.call("conversations-by-date", json!({"date": "10/03/2025"})) {
        Err(CallError::InvalidArguments { errors, .. }) => assert_eq!(errors[0].argument, "date"),
        other => panic!("expected an argument error, got {other:?}"),
    }
    // The pattern lets these through, `format: date` (asserted) does not: the
    // caller's mistake, an argument error naming `date` before any query runs.
    for date in ["9999-99-99", "2025-02-30"] {
        match host.call("conversations-by-date", json!({"date": date})) {
            Err(CallError::InvalidArguments { errors, .. }) => {
                assert_eq!(errors[0].argument, "date");
                assert!(errors[0].reason.contains(date), "{:?}", errors[0]);
            }
            other => panic!("{date}: expected an argument error, got {other:?}"),
        }
    }
}

#[test]
fn writing_queries_fail_clearly() {
    let f = Fixture::new();
    f.add_sql_skill(
        "writer",
        "{store: conversations}",
        "DELETE FROM all_conversations",
    );
    f.add_sql_skill(
        "sneaky",
        "{store: conversations}",
        "-- looks harmless\nINSERT INTO all_conversations SELECT * FROM all_conversations",
    );
    let host = f.host();
    for name in ["writer", "sneaky"] {
        let err = host.call(name, json!({})).unwrap_err().to_string();
        assert!(
            err.contains("skill queries must be one read-only SELECT"),
            "{err}"
        );
    }
    assert_eq!(
        host.call("brain-stats", json!({})).unwrap().data["rows"][0]["messages"],
        3
    );
}

#[test]
fn slow_queries_are_interrupted_and_rows_capped() {
    let f = Fixture::new();
    f.add_sql_skill(
        "slow",
        "{store: conversations, timeout-ms: 200}",
        "SELECT count(*) AS n FROM range(100000000000) a",
    );
    f.add_sql_skill(
        "many",
        "{store: conversations, max-rows: 7}",
        "SELECT range AS n FROM range(100)",
    );
    let host = f.host();
    let started = std::time::Instant::now();
    let err = host.call("slow", json!({})).unwrap_err().to_string();
    assert!(err.contains("interrupted after 200 ms"), "{err}");
    eprintln!("interrupted after {:?}", started.elapsed());
    let out = host.call("many", json!({})).unwrap();
    assert_eq!(out.data["count"], 7);
    assert_eq!(out.data["truncated"], true);
    assert_eq!(out.data["columns"], json!(["n"]));
}

#[test]
fn broken_query_files_are_reported_at_load() {
    let f = Fixture::new();
    let splice = f.add_sql_skill(
        "splice",
        "{store: conversations}",
        "SELECT *\nFROM all_conversations WHERE conversation_id = '{{ id }}'",
    );
    let unknown = f.add_sql_skill(
        "unknown-param",
        "{store: conversations}",
        "SELECT * FROM all_conversations WHERE role = $role",
    );
    let store = f.add_sql_skill("bad-store", "{store: postgres}", "SELECT 1");
    let no_twin = f.add_sql_skill(
        "archive-only-without-twin",
        "{store: conversations, archive-only: [id]}",
        "SELECT 1 AS n",
    );
    let not_an_argument = f.add_sql_skill(
        "archive-only-unknown",
        "{store: conversations, archive-query: query.sql, archive-only: [machine]}",
        "SELECT 1 AS n",
    );
    let host = f.host();
    let reason = |p: &Path| -> String {
        let d = host
            .diagnostics()
            .iter()
            .find(|d| d.file == p)
            .unwrap_or_else(|| panic!("no diagnostic for {}", p.display()));
        assert_eq!(d.field, "/engine-options");
        d.reason.clone()
    };
    assert!(
        reason(&splice).contains("`query.sql`:2: `{{ … }}` would splice text into SQL"),
        "{}",
        reason(&splice)
    );
    assert_eq!(
        reason(&unknown),
        "`query.sql`: `$role` is not an argument of the input schema"
    );
    assert!(reason(&store).contains("unknown store `postgres`"));
    assert_eq!(
        reason(&no_twin),
        "`archive-only`: the skill has no `archive-query` to use them"
    );
    assert_eq!(
        reason(&not_an_argument),
        "`archive-only`: `machine` is not an argument of the input schema"
    );
    assert!(host.get("brain-stats").is_some());
}

#[test]
fn empty_results_keep_their_columns() {
    let f = Fixture::new();
    let out = f
        .host()
        .call("conversations-by-date", json!({"date": "1999-01-01"}))
        .unwrap();
    assert_eq!(out.text, "No conversations on 1999-01-01");
    let cols: Vec<Value> = out.data["columns"].as_array().unwrap().clone();
    assert_eq!(cols[0], "conversation_id");
}
