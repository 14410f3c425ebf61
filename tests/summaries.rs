//! The conversation store's summary tables (`conversation_summary`,
//! `conversation_days`, issue 41) against what they summarise: after every kind of
//! write — new conversations, appended messages, a rewritten file's conversations, a
//! Parquet import, the real corpus — they equal the aggregates recomputed from
//! `all_conversations`, and each skill that reads them (list-conversations,
//! list-projects, message-activity) returns the same rows as its query over the
//! messages before the summaries (kept below as the reference).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use chrono::TimeZone as _;
use serde_json::{json, Value};
use skills::model::Message;
use skills::stores::conversations::ConversationStore;
use skills::stores::conversations::{summary, FileBatch, FileState, Previous};
use skills::stores::StorePaths;

/// The skills' queries over `all_conversations` before the summaries (the reference).
const OLD: [(&str, &str); 3] = [
    (
        "list-conversations",
        include_str!("summaries/list-conversations.sql"),
    ),
    ("list-projects", include_str!("summaries/list-projects.sql")),
    (
        "message-activity",
        include_str!("summaries/message-activity.sql"),
    ),
];

/// Argument cases per skill, covering each template branch and filter.
fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("list-conversations", json!({})),
        ("list-conversations", json!({"source": "claude-code"})),
        ("list-conversations", json!({"source": "codex"})),
        ("list-conversations", json!({"project": "/p/a"})),
        ("list-conversations", json!({"project": "/p/b"})),
        (
            "list-conversations",
            json!({"project": "/p/b", "source": "claude-code", "limit": 1, "offset": 1}),
        ),
        (
            "list-conversations",
            json!({"project": "/p/a", "conversation_id": "c1"}),
        ),
        (
            "list-conversations",
            json!({"since": "2025-03-11", "until": "2025-03-11"}),
        ),
        ("list-conversations", json!({"since": "2025-03-11"})),
        ("list-conversations", json!({"until": "2025-03-10"})),
        (
            "list-conversations",
            json!({"project": "/p/b", "since": "2025-03-10", "until": "2025-03-12"}),
        ),
        ("list-conversations", json!({"conversation_id": "c1"})),
        (
            "list-conversations",
            json!({"source": "claude-code", "conversation_id": "c2"}),
        ),
        (
            "list-conversations",
            json!({"limit": 2, "offset": 1, "preview_chars": 7}),
        ),
        (
            "list-conversations",
            json!({"limit": 200, "preview_chars": 2000}),
        ),
        // Past `max(x, n)`'s bound of n < 1,000,000: the page's oldest time is then
        // the oldest of all (no rows here, and the total still counted).
        ("list-conversations", json!({"limit": 5, "offset": 999_998})),
        (
            "list-conversations",
            json!({"project": "/p/b", "limit": 1, "offset": 2_000_000}),
        ),
        (
            "list-conversations",
            json!({"source": "codex", "conversation_id": "c1"}),
        ),
        (
            "message-activity",
            json!({"by": "day", "project": "/p/b", "source": "claude-code", "since": "2025-03-11"}),
        ),
        ("list-projects", json!({})),
        ("list-projects", json!({"project": "/p/a"})),
        ("list-projects", json!({"project": "/p/c"})),
        ("list-projects", json!({"limit": 1})),
        ("message-activity", json!({"by": "day"})),
        ("message-activity", json!({"by": "month"})),
        ("message-activity", json!({"by": "day", "project": "/p/a"})),
        (
            "message-activity",
            json!({"by": "month", "since": "2025-03-11", "until": "2025-04-30"}),
        ),
        ("message-activity", json!({"by": "day", "source": "codex"})),
        (
            "message-activity",
            json!({"by": "day", "since": "2025-03-11", "until": "2025-03-12"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "since": "2025-03-01"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "since": "2025-03-11"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "source": "claude-code"}),
        ),
        // A project by month over whole months reads `project_monthly_counts`; a
        // range cutting a month, the day rows.
        (
            "message-activity",
            json!({"by": "month", "project": "/p/a"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "project": "/p/b", "since": "2025-03-01", "source": "claude-code"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "project": "/p/b", "since": "2025-03-11"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "project": "/p/a", "since": "2025-03-01", "until": "2025-04-30"}),
        ),
        (
            "message-activity",
            json!({"by": "month", "project": "/p/none"}),
        ),
    ]
}

/// A skills folder holding the bundled skills and, as `old-<name>`, each changed
/// skill with its reference query.
fn skills_with_references() -> tempfile::TempDir {
    let dir = common::copy_skills();
    for (name, query) in OLD {
        let from = dir.path().join(name);
        let to = dir.path().join(format!("old-{name}"));
        common::copy_dir(&from, &to);
        let doc = std::fs::read_to_string(to.join("SKILL.md")).unwrap();
        let doc: String = doc
            .lines()
            .filter(|l| !l.starts_with("allowed-tools:"))
            .map(|l| {
                if l == format!("name: {name}") {
                    format!("name: old-{name}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(to.join("SKILL.md"), doc).unwrap();
        std::fs::write(to.join("query.sql"), query).unwrap();
    }
    dir
}

/// Asserts that the summaries of the store in `data` are exact and that every case
/// gives the same rows from each changed skill and its reference; returns how many
/// cases returned rows (so a test sees that it compared something).
fn check(data: &Path, skills: &Path) -> usize {
    {
        let store = ConversationStore::open_rw(&StorePaths::in_dir(data).conversations).unwrap();
        assert_eq!(
            summary::mismatches(&store).unwrap(),
            0,
            "summary rows differ"
        );
    }
    let host = skills::host::Host::load(
        skills,
        skills::engines::Context::new(StorePaths::in_dir(data)),
    );
    let mut nonempty = 0;
    for (name, args) in cases() {
        let new = host.call(name, args.clone()).unwrap().data["rows"].clone();
        let old = host
            .call(&format!("old-{name}"), args.clone())
            .unwrap()
            .data["rows"]
            .clone();
        assert_eq!(new, old, "{name} {args}: rows differ from the reference");
        if new.as_array().is_some_and(|r| !r.is_empty()) {
            nonempty += 1;
        }
    }
    nonempty
}

/// Message `i` of conversation `conv` of `source`, on 2025-03-`day`, in `project`.
fn msg(source: &str, conv: &str, i: i64, day: u32, project: Option<&str>, role: &str) -> Message {
    let mut m = common::message(conv, i, &format!("{role} text {i} of {conv} ✓"));
    m.source = source.into();
    m.project = project.map(Into::into);
    m.role = role.into();
    m.model = Some(format!("model-{}", i % 3));
    m.conversation_title = (i == 0).then(|| format!("Title of {conv}"));
    m.timestamp = chrono::Utc
        .with_ymd_and_hms(2025, 3, day, 23, 59, u32::try_from(i % 60).unwrap())
        .unwrap();
    m
}

/// A few conversations over several days, sources and projects (one conversation
/// changes project and spans midnight; one starts with an injected user message).
fn batch(first: i64, n: i64) -> Vec<Message> {
    let mut out = Vec::new();
    for i in first..first + n {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let day = 10 + u32::try_from(i / 4).unwrap();
        let project = if i < 5 { Some("/p/a") } else { Some("/p/b") };
        out.push(msg("claude-code", "c1", i, day, project, role));
        out.push(msg("claude-code", "c2", i, 12, None, role));
        let mut m = msg("codex", "c1", i, day + 1, Some("/p/b"), role);
        m.is_injected = i == 0;
        out.push(m);
    }
    out
}

fn state(path: &str, messages: u64) -> FileState {
    FileState {
        path: path.into(),
        format: "test".into(),
        size: messages,
        mtime_ns: 0,
        offset: 0,
        line: 0,
        next_index: 0,
        tail_hash: String::new(),
        context: String::new(),
        messages,
    }
}

#[test]
fn summaries_follow_every_write_and_skills_match_the_old_queries() {
    let skills = skills_with_references();
    let data = tempfile::tempdir().unwrap();
    let path = StorePaths::in_dir(data.path()).conversations;
    // New conversations, then messages appended to them.
    {
        let store = ConversationStore::open_rw(&path).unwrap();
        store.insert(&batch(0, 6)).unwrap();
        store.insert(&batch(6, 6)).unwrap();
        // The same rows again: nothing added, nothing changed.
        store.insert(&batch(0, 3)).unwrap();
    }
    assert!(check(data.path(), skills.path()) >= 19);
    // A file stored, then rewritten with fewer messages of one conversation (its rows
    // are replaced) and a new one.
    {
        let store = ConversationStore::open_rw(&path).unwrap();
        let first: Vec<Message> = (0..8)
            .map(|i| msg("gemini", "g1", i, 14, Some("/p/a"), "user"))
            .collect();
        let s = state("/f/g.jsonl", 8);
        store
            .store_files(&[FileBatch {
                messages: &first,
                state: &s,
                previous: Previous::Keep,
            }])
            .unwrap();
        let mut second: Vec<Message> = (0..3)
            .map(|i| msg("gemini", "g1", i, 15, Some("/p/c"), "assistant"))
            .collect();
        second.push(msg("gemini", "g2", 0, 15, None, "user"));
        let s = state("/f/g.jsonl", 4);
        store
            .store_files(&[FileBatch {
                messages: &second,
                state: &s,
                previous: Previous::Replace,
            }])
            .unwrap();
        let rows: i64 = store
            .connection()
            .unwrap()
            .query_row(
                "SELECT messages FROM conversation_summary WHERE conversation_id = 'g1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            rows, 3,
            "the rewritten conversation's summary counts its new rows"
        );
    }
    check(data.path(), skills.path());
    // A Parquet import (columns it lacks are derived), then the same file rewritten.
    let parquet = data.path().join("in.parquet");
    {
        let conn = duckdb::Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!(
            "COPY (SELECT 'chatgpt' AS source, 'q' || (i % 3) AS conversation_id,
                          'm' || i AS message_id, TIMESTAMP '2025-03-20 12:00:00' + i * INTERVAL 7 HOUR AS created,
                          CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END AS role,
                          'parquet text ' || i AS content, '/p/q' AS project
                   FROM range(20) t(i)) TO '{}' (FORMAT parquet)",
            parquet.display()
        ))
        .unwrap();
        let store = ConversationStore::open_rw(&path).unwrap();
        let s = state("/f/in.parquet", 20);
        store
            .import_parquet(&parquet, Some(&s), Previous::Keep, false)
            .unwrap();
        store
            .import_parquet(&parquet, Some(&s), Previous::Replace, false)
            .unwrap();
    }
    assert!(check(data.path(), skills.path()) >= 19);
    // Secrets redacted in the stored rows, one in a conversation id: that
    // conversation's rows move to the marker id, and so does its summary.
    let secret_id = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    {
        let store = ConversationStore::open_rw(&path).unwrap();
        let mut ms: Vec<Message> = (0..3)
            .map(|i| msg("claude-code", secret_id, i, 16, Some("/p/a"), "user"))
            .collect();
        ms[0].content = "the key AKIAIOSFODNN7EXAMPLE is here".into();
        store.insert(&ms).unwrap();
        assert!(store.redact_stored().unwrap() >= 2);
        let left: i64 = store
            .connection()
            .unwrap()
            .query_row(
                "SELECT count(*) FROM conversation_summary WHERE conversation_id = ?",
                [secret_id],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            left, 0,
            "the summary still holds the id the redaction replaced"
        );
    }
    assert!(check(data.path(), skills.path()) >= 19);
}

#[test]
fn a_store_from_before_the_summaries_gets_them() {
    an_older_store_answers_and_is_upgraded(
        "DROP TABLE conversation_summary; DROP TABLE conversation_days;",
    );
}

/// A store as the version before `project_monthly_counts` left it: that table missing
/// and `conversation_projects` without the preview column.
#[test]
fn a_store_from_before_the_project_months_gets_them() {
    an_older_store_answers_and_is_upgraded(
        "DROP TABLE project_monthly_counts;
         ALTER TABLE conversation_projects DROP COLUMN preview;",
    );
}

/// The previews are kept uncompressed (a list reads its page's rows without
/// decompressing every preview of the blocks it scans): a new store's are, and a
/// store whose summary tables were made before (FSST-compressed previews, no
/// marker) answers the same read-only and gets them remade on its next writable open.
#[test]
fn previews_are_stored_uncompressed_and_an_older_store_is_remade() {
    /// The comment on each table's `preview` and the compressions of its segments,
    /// after a checkpoint.
    fn previews(store: &ConversationStore) -> Vec<(String, Option<String>, Vec<String>)> {
        let conn = store.connection().unwrap();
        conn.execute_batch("CHECKPOINT").unwrap();
        ["conversation_summary", "conversation_projects"]
            .iter()
            .map(|table| {
                let comment: Option<String> = conn
                    .query_row(
                        "SELECT comment FROM duckdb_columns()
                         WHERE table_name = ? AND column_name = 'preview'",
                        [table],
                        |r| r.get(0),
                    )
                    .unwrap();
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT DISTINCT compression FROM pragma_storage_info('{table}')
                         WHERE column_name = 'preview' AND segment_type = 'VARCHAR'
                         ORDER BY 1"
                    ))
                    .unwrap();
                let kinds = stmt
                    .query_map([], |r| r.get::<_, String>(0))
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
                ((*table).to_owned(), comment, kinds)
            })
            .collect()
    }
    let uncompressed = |found: &[(String, Option<String>, Vec<String>)]| {
        found.iter().all(|(_, comment, kinds)| {
            comment.as_deref() == Some(summary::PREVIEW_COMMENT) && kinds == &["Uncompressed"]
        })
    };
    let skills = skills_with_references();
    let data = tempfile::tempdir().unwrap();
    let path = StorePaths::in_dir(data.path()).conversations;
    {
        let store = ConversationStore::open_rw(&path).unwrap();
        // Long, repetitive previews: DuckDB would compress them (FSST) if it chose.
        let mut messages = batch(0, 10);
        for m in &mut messages {
            m.content = format!("{} {}", m.content, "the same words again ".repeat(90));
        }
        store.insert(&messages).unwrap();
        let found = previews(&store);
        assert!(uncompressed(&found), "a new store's previews: {found:?}");
        // As the version before left them: the same rows, made by `CREATE TABLE … AS`.
        store
            .connection()
            .unwrap()
            .execute_batch(
                "CREATE OR REPLACE TABLE conversation_summary AS SELECT * FROM conversation_summary;
                 CREATE OR REPLACE TABLE conversation_projects AS SELECT * FROM conversation_projects;",
            )
            .unwrap();
        let found = previews(&store);
        assert!(
            found.iter().all(|(_, comment, _)| comment.is_none()),
            "{found:?}"
        );
    }
    // Read-only (serve), the older tables answer as the reference queries.
    let host = skills::host::Host::load(
        skills.path(),
        skills::engines::Context::new(StorePaths::in_dir(data.path())),
    );
    for (name, args) in cases() {
        let new = host.call(name, args.clone()).unwrap().data["rows"].clone();
        let old = host
            .call(&format!("old-{name}"), args.clone())
            .unwrap()
            .data["rows"]
            .clone();
        assert_eq!(
            new, old,
            "{name} {args} on a store with compressed previews"
        );
    }
    drop(host);
    // The next writable open makes them again, uncompressed, and exact.
    assert!(check(data.path(), skills.path()) >= 19);
    let store = ConversationStore::open_rw(&path).unwrap();
    let found = previews(&store);
    assert!(uncompressed(&found), "after the writable open: {found:?}");
}

/// A store written, then changed by `older` (statements that make it look like an
/// older version's): read-only, the skills answer as the reference queries; the next
/// writable open makes the summaries exact again.
fn an_older_store_answers_and_is_upgraded(older: &str) {
    let skills = skills_with_references();
    let data = tempfile::tempdir().unwrap();
    let path = StorePaths::in_dir(data.path()).conversations;
    {
        let store = ConversationStore::open_rw(&path).unwrap();
        store.insert(&batch(0, 10)).unwrap();
        store.connection().unwrap().execute_batch(older).unwrap();
    }
    // Read-only (serve), the skills answer from views of the same aggregates.
    let host = skills::host::Host::load(
        skills.path(),
        skills::engines::Context::new(StorePaths::in_dir(data.path())),
    );
    for (name, args) in cases() {
        let new = host.call(name, args.clone()).unwrap().data["rows"].clone();
        let old = host
            .call(&format!("old-{name}"), args.clone())
            .unwrap()
            .data["rows"]
            .clone();
        assert_eq!(new, old, "{name} {args} on a store without summaries");
    }
    // The next writable open builds them.
    assert!(check(data.path(), skills.path()) >= 19);
}

#[test]
fn summaries_of_the_real_corpus_are_exact() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let skills = skills_with_references();
    let data = tempfile::tempdir().unwrap();
    common::cli::ok(
        common::cli::skills()
            .args(["ingest", "--quiet", "--no-embed"])
            .arg(&corpus)
            .env("SKILLS_DATA_DIR", data.path())
            .env("SKILLS_EMBEDDER", "none"),
    );
    // At least the unfiltered cases return rows on the corpus.
    assert!(check(data.path(), skills.path()) >= 4);
}
