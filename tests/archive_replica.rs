//! The team archive read from a hot standby (a PostgreSQL read replica, streaming
//! from the primary `./scripts/test` starts; `scripts/postgres replica` makes it with
//! `pg_basebackup`): every read the archive serves — search-conversations, the `sql`
//! skills behind the pages, `archive status` — answers from the replica exactly as
//! from the primary, what is pushed to the primary reaches it, and a push or migrate
//! sent to it fails naming the archive, saying it is read-only and where writes go,
//! never showing the password.
//!
//! Without PostgreSQL (or when the standby cannot be made) the test is reported as not
//! run, with the reason ([`common::not_run`]).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::archive::{password, server, with_database, Db, Scripted};

/// Longest wait for the standby to replay what the primary committed.
const PATIENCE: Duration = Duration::from_secs(60);

/// A hot standby of the primary, stopped and removed when dropped.
struct Replica(Scripted);

impl Replica {
    /// Starts one; `None` after saying why the test does not run.
    fn start(primary: &str) -> Option<Self> {
        Scripted::start(
            &["replica", primary],
            "SKILLS_TEST_REPLICA_DIR",
            "SKILLS_TEST_REPLICA_URL",
            "scripts/postgres could not start a hot standby",
        )
        .map(Self)
    }

    /// Waits until the standby has replayed everything the primary has committed: up
    /// to the primary's WAL *insert* position (the test server runs with
    /// `synchronous_commit = off`, so a commit may not be written yet when its
    /// transaction returns, and the write position can be behind it).
    fn catch_up(&self, primary: &str) {
        let mut p = postgres::Client::connect(primary, postgres::NoTls).unwrap();
        let lsn: String = p
            .query_one("SELECT pg_current_wal_insert_lsn()::text", &[])
            .unwrap()
            .get(0);
        let mut r = postgres::Client::connect(&self.0.url, postgres::NoTls).unwrap();
        let start = Instant::now();
        loop {
            let done: bool = r
                .query_one(
                    "SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), $1::text::pg_lsn) >= 0",
                    &[&lsn],
                )
                .unwrap()
                .get(0);
            if done {
                return;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "the standby did not replay {lsn} in {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Runs `skills --data-dir data [--archive archive] args…`: (success, stdout, stderr).
fn skills(data: &Path, archive: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skills"));
    cmd.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "none")
        .env("SKILLS_MACHINE_NAME", "laptop")
        .env("NO_COLOR", "1")
        .arg("--data-dir")
        .arg(data);
    if let Some(url) = archive {
        cmd.args(["--archive", url]);
    }
    let out = cmd.args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Imports a generic JSONL transcript of `lines` (role, content, minute, conversation).
fn ingest(data: &Path, name: &str, lines: &[(&str, &str, u32, &str)]) {
    let file = data.join(name);
    let text: String = lines
        .iter()
        .enumerate()
        .map(|(i, (role, content, minute, conv))| {
            format!(
                "{}\n",
                serde_json::json!({"role": role, "content": content,
                    "timestamp": format!("2026-11-0{}T10:{minute:02}:00Z", 1 + i % 3),
                    "conversation_id": conv, "project": "infra", "id": format!("{name}-{i}")})
            )
        })
        .collect();
    fs_err::write(&file, text).unwrap();
    let (ok, out, err) = skills(data, None, &["ingest", "--quiet", file.to_str().unwrap()]);
    assert!(ok, "ingest failed: {out}\n{err}");
}

/// The JSON `data` of `skills --json run skill --arg …` on `archive`; it must succeed.
fn answer(data: &Path, archive: &str, skill: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json", "run", skill];
    for a in args {
        all.extend(["--arg", a]);
    }
    let (ok, out, err) = skills(data, Some(archive), &all);
    assert!(ok, "{skill} on {archive} failed: {out}\n{err}");
    serde_json::from_str::<Value>(&out).unwrap()["data"].clone()
}

/// Every read the archive serves, as (skill, arguments).
const READS: &[(&str, &[&str])] = &[
    ("search-conversations", &["term=cache"]),
    ("search-conversations", &["term=worker", "machine=laptop"]),
    (
        "get-conversation",
        &["source=generic", "conversation_id=deploy"],
    ),
    ("conversations-by-date", &["date=2026-11-02"]),
    ("list-conversations", &[]),
    ("list-projects", &[]),
    ("message-activity", &[]),
    ("brain-stats", &[]),
];

#[test]
fn a_hot_standby_answers_every_read_as_the_primary_and_refuses_writes_with_a_hint() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin);
    let primary = with_database(&admin, &db.name);
    let home = tempfile::tempdir().unwrap();
    let data = home.path();
    let (ok, out, err) = skills(data, Some(&primary), &["archive", "migrate"]);
    assert!(ok, "migrate failed: {out}\n{err}");
    ingest(
        data,
        "first.jsonl",
        &[
            ("user", "the cache was flaky again", 1, "deploy"),
            ("assistant", "restart the cache worker", 2, "deploy"),
            ("user", "the worker key is AKIAIOSFODNN7EXAMPLE", 3, "keys"),
            (
                "assistant",
                "rotate it and keep it out of the cache",
                4,
                "keys",
            ),
        ],
    );
    let (ok, out, err) = skills(data, Some(&primary), &["archive", "push"]);
    assert!(ok, "push failed: {out}\n{err}");

    let Some(replica) = Replica::start(&admin) else {
        return;
    };
    replica.catch_up(&admin);
    let standby = with_database(&replica.0.url, &db.name);
    let mut r = postgres::Client::connect(&standby, postgres::NoTls).unwrap();
    assert!(
        r.query_one("SELECT pg_is_in_recovery()", &[])
            .unwrap()
            .get::<_, bool>(0),
        "the replica is not a standby"
    );

    for (skill, args) in READS {
        let from_primary = answer(data, &primary, skill, args);
        let from_standby = answer(data, &standby, skill, args);
        assert_eq!(
            from_standby, from_primary,
            "{skill} {args:?}: the standby answered differently"
        );
        assert!(
            from_primary["rows"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
                || from_primary.get("rows").is_none(),
            "{skill} {args:?}: no rows to compare: {from_primary}"
        );
    }
    let hits = answer(data, &standby, "search-conversations", &["term=cache"]);
    assert_eq!(hits["rows"].as_array().unwrap().len(), 3, "{hits}");
    let text = hits.to_string();
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"), "{text}");

    let (ok, out, err) = skills(data, Some(&standby), &["archive", "status"]);
    assert!(ok, "status on the standby failed: {out}\n{err}");
    assert!(out.contains("laptop") && out.contains("generic"), "{out}");

    // Writes go to the primary only, and the standby says so.
    for args in [&["archive", "push"][..], &["archive", "migrate"][..]] {
        let (ok, out, err) = skills(data, Some(&standby), args);
        assert!(!ok, "{args:?} on the standby succeeded: {out}");
        let said = format!("{out}{err}");
        assert!(
            said.contains("read-only") && said.contains("primary"),
            "{args:?}: {said}"
        );
        assert!(said.contains(&db.name), "{args:?} names no archive: {said}");
        assert!(!said.contains(&password(&admin)), "{args:?}: {said}");
    }

    // What the primary takes reaches the standby.
    ingest(
        data,
        "second.jsonl",
        &[(
            "user",
            "the cache is fine since the worker restart",
            9,
            "later",
        )],
    );
    let (ok, out, err) = skills(data, Some(&primary), &["archive", "push"]);
    assert!(ok, "second push failed: {out}\n{err}");
    replica.catch_up(&admin);
    let hits = answer(data, &standby, "search-conversations", &["term=cache"]);
    assert_eq!(
        hits["rows"].as_array().unwrap().len(),
        4,
        "push said {out}: {hits}"
    );
    assert_eq!(
        hits,
        answer(data, &primary, "search-conversations", &["term=cache"])
    );
    drop(r);
}
