//! Meaning on the team archive, on a real PostgreSQL with pgvector (`scripts/postgres`,
//! as tests/archive.rs): the conversations' L1 vectors and the memories' vectors pushed
//! beside their rows (incremental, idempotent, kill-safe, a rewritten conversation's
//! units replaced), schema version 3 upgraded in place, semantic-search's `mode:
//! semantic` on the archive giving the local store's rows in the local order with the
//! same scores, and two machines with different models never mixing vectors.
//!
//! Without a PostgreSQL or the embedding model each test is reported as not run, with
//! the reason ([`common::not_run`]), and returns.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use chrono::TimeZone;
use serde_json::Value;
use skills::embed::Embedder;
use skills::ingest::Message;
use skills::stores::conversations::embeddings::UnitSpec;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

use common::archive::{json_of, run, server, Db};

fn skills(embedder: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_skills"));
    c.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", embedder)
        .env("NO_COLOR", "1");
    c
}

/// `skills archive migrate` from `data` (which registers its models).
fn migrate(data: &Path, db: &Db) -> Value {
    json_of(data, Some(&db.url), &["--json", "archive", "migrate"])
}

fn push(data: &Path, db: &Db, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "archive", "push"];
    args.extend_from_slice(extra);
    json_of(data, Some(&db.url), &args)
}

const SUBJECTS: [&str; 12] = [
    "the deploy pipeline",
    "our login page",
    "the cache layer",
    "a flaky integration test",
    "the billing service",
    "my garden tomatoes",
    "the database migration",
    "a trip to the mountains",
    "the kubernetes cluster",
    "grandma's apple pie recipe",
    "the linker error",
    "the quarterly budget",
];
const PREDICATES: [&str; 9] = [
    "broke again after the upgrade",
    "needs a retry with backoff",
    "was fixed by pinning the version",
    "tastes better with cinnamon",
    "timed out under load",
    "should be reviewed by the team",
    "got much faster with an index",
    "is waiting for approval",
    "made everyone laugh at lunch",
];

/// `n` conversations of `per` messages, each message a different sentence (no two
/// vectors equal), an hour apart per conversation.
fn corpus(prefix: &str, n: usize, per: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for c in 0..n {
        for i in 0..per {
            let k = c * per + i;
            let text = format!(
                "{} {} ({prefix} note {k})",
                SUBJECTS[(c * 5 + i) % SUBJECTS.len()],
                PREDICATES[(c + i * 2) % PREDICATES.len()]
            );
            let mut m = common::message(&format!("{prefix}-c{c}"), i as i64, &text);
            m.timestamp = chrono::Utc
                .timestamp_opt(1_740_000_000 + (c * 3600 + i * 60) as i64, 0)
                .unwrap();
            m.role = if i % 2 == 0 { "user" } else { "assistant" }.into();
            out.push(m);
        }
    }
    out
}

/// Writes `messages` into the store in `dir` and embeds them with `embedder` (units of
/// one message, as `skills ingest` cuts them).
fn embedded_store(dir: &Path, messages: &[Message], embedder: &Arc<Embedder>) {
    let paths = StorePaths::in_dir(dir);
    let mut s = ConversationStore::open_rw(&paths.conversations).unwrap();
    s.embed_with(embedder.clone(), UnitSpec::DEFAULT).unwrap();
    s.insert(messages).unwrap();
    let report = s.close_with(&mut |_, _| {}).unwrap();
    assert!(
        matches!(report.embeddings, Some(Ok(_))),
        "{:?}",
        report.embeddings
    );
}

/// The static model and a migrated-later fresh database, or `None` (not run).
fn setup() -> Option<(Arc<Embedder>, Db)> {
    let embedder = Arc::new(common::embedder()?);
    let db = Db::new(&server()?);
    Some((embedder, db))
}

/// Every unit row of every model's table, as text, in key order.
fn units_dump(db: &Db) -> Vec<String> {
    let mut c = db.client();
    let slots: Vec<i32> = c
        .query(
            "SELECT slot FROM skills_archive.vector_models ORDER BY slot",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut out = Vec::new();
    for s in slots {
        for r in c
            .query(
                &format!(
                    "SELECT '{s} ' || u::text FROM skills_archive.units_{s} u
                     ORDER BY machine, source, conversation_id, unit"
                ),
                &[],
            )
            .unwrap()
        {
            out.push(r.get(0));
        }
    }
    out
}

#[test]
fn vectors_are_pushed_with_their_rows_incrementally_and_replaced_with_a_rewrite() {
    let Some((embedder, db)) = setup() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    embedded_store(&data, &corpus("v", 12, 5), &embedder);
    // A memory saved with the static model: its vector goes too.
    let (ok, _, err) = run(
        &data,
        None,
        &[
            "run",
            "memo-save",
            "--arg",
            "title=cache fix",
            "--arg",
            "body=we fixed the flaky cache with a retry",
        ],
    );
    assert!(ok, "{err}");
    let m = migrate(&data, &db);
    let models = m["migration"]["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{m}");
    assert_eq!(models[0]["model"], embedder.name(), "{m}");
    assert_eq!(models[0]["dim"], embedder.dim(), "{m}");
    // The writer's grants name the model's tables.
    assert!(
        m["grants"].as_str().unwrap().contains(
            "GRANT INSERT, DELETE ON skills_archive.units_1, skills_archive.memory_vectors_1"
        ),
        "{m}"
    );
    // The HNSW indexes exist, with their parameters stated.
    let def: String = db
        .client()
        .query_one(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'units_1_hnsw'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        def.contains("hnsw") && def.contains("halfvec_ip_ops") && def.contains("m='16'"),
        "{def}"
    );

    let first = push(&data, &db, &[]);
    assert_eq!(first["conversations_sent"], 12, "{first}");
    assert_eq!(first["units_sent"], 60, "{first}");
    assert_eq!(first["vector_model"], embedder.name(), "{first}");
    assert_eq!(first["memory_vectors_sent"], 1, "{first}");
    assert_eq!(db.count("SELECT count(*) FROM skills_archive.units_1"), 60);
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.memory_vectors_1"),
        1
    );
    // The pushed codes are the local ones: v̂ = scale · codes, and the halfvec is it.
    let row = db
        .client()
        .query_one(
            "SELECT scale, codes, embedding::text FROM skills_archive.units_1 LIMIT 1",
            &[],
        )
        .unwrap();
    let (scale, codes, half): (f32, Vec<u8>, String) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(codes.len(), embedder.dim());
    let values: Vec<f32> = half
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    for (c, v) in codes.iter().zip(&values) {
        let exact = scale * f32::from(*c as i8);
        assert!(
            (exact - v).abs() <= exact.abs() / 1024.0 + 1e-7,
            "{exact} vs {v}"
        );
    }
    let units_before = units_dump(&db);
    let rows_before = db.dump();

    // Twice: nothing sent, nothing changed.
    let again = push(&data, &db, &[]);
    assert_eq!(again["conversations_sent"], 0, "{again}");
    assert_eq!(again["units_sent"], 0, "{again}");
    assert_eq!(again["memories_sent"], 0, "{again}");
    assert_eq!(units_dump(&db), units_before);
    assert_eq!(db.dump(), rows_before);

    // A conversation rewritten locally (a message appended): it goes again, its units
    // replaced (six now), the others untouched.
    let mut more = common::message("v-c3", 5, "the cache layer finally works after the rewrite");
    more.timestamp = chrono::Utc.timestamp_opt(1_750_000_000, 0).unwrap();
    embedded_store(&data, &[more], &embedder);
    let third = push(&data, &db, &[]);
    assert_eq!(third["conversations_sent"], 1, "{third}");
    assert_eq!(third["units_sent"], 6, "{third}");
    assert_eq!(db.count("SELECT count(*) FROM skills_archive.units_1"), 61);
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.units_1 WHERE conversation_id = 'v-c3'"),
        6
    );
    assert_eq!(
        db.count(
            "SELECT count(*) FROM skills_archive.conversations
             WHERE vector_model IS NOT NULL AND units > 0"
        ),
        12
    );
    // Status: nothing pending once pushed.
    let s = json_of(&data, Some(&db.url), &["--json", "archive", "status"]);
    assert_eq!(s["pending_conversations"], 0, "{s}");
}

#[test]
fn a_push_of_vectors_killed_mid_way_completes_on_the_next_one() {
    let Some((embedder, killed)) = setup() else {
        return;
    };
    let clean = Db::new(&server().unwrap());
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    embedded_store(&data, &corpus("k", 300, 8), &embedder);
    migrate(&data, &killed);
    migrate(&data, &clean);
    common::archive::kill_pushes(
        || {
            let mut push = skills("static");
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
        &[200, 400, 600],
    );
    // Whole conversations only: every conversation in the archive has all its units.
    assert_eq!(
        killed.count(
            "SELECT count(*) FROM skills_archive.conversations c
             WHERE c.units <> (SELECT count(*) FROM skills_archive.units_1 u
                               WHERE u.machine = c.machine AND u.source = c.source
                                 AND u.conversation_id = c.conversation_id)"
        ),
        0
    );
    push(&data, &killed, &["--batch-rows", "40"]);
    push(&data, &clean, &[]);
    assert_eq!(
        killed.count("SELECT count(*) FROM skills_archive.units_1"),
        2400
    );
    assert_eq!(units_dump(&killed), units_dump(&clean));
    assert_eq!(killed.dump(), clean.dump());
}

#[test]
fn an_archive_of_version_3_is_upgraded_in_place_and_the_next_push_sends_the_vectors() {
    let Some((embedder, db)) = setup() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    embedded_store(&data, &corpus("u", 10, 4), &embedder);
    // Made from a folder without stores: no model registered, so this push sends the
    // rows alone, as a version 3 push did, and says why.
    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    migrate(&empty, &db);
    let first = push(&data, &db, &[]);
    assert_eq!(first["messages_sent"], 40, "{first}");
    assert_eq!(first["units_sent"], 0, "{first}");
    let note = first["notes"][0].as_str().unwrap();
    assert!(note.contains("skills archive migrate"), "{first}");
    // The archive as version 3 left it.
    db.client()
        .batch_execute(
            "DROP TABLE skills_archive.vector_models;
             ALTER TABLE skills_archive.conversations DROP COLUMN vector_model,
                 DROP COLUMN units, DROP COLUMN vector_unit, DROP COLUMN keyword_terms;
             DROP TABLE skills_archive.message_terms, skills_archive.keyword_deltas,
                 skills_archive.keyword_totals, skills_archive.memory_terms,
                 skills_archive.keyword_postings, skills_archive.memory_deltas,
             skills_archive.memory_totals;
             DROP SEQUENCE skills_archive.message_ids;
             DROP VIEW skills_sql.all_memories;
             UPDATE skills_archive.meta SET value = '3' WHERE key = 'schema_version';",
        )
        .unwrap();
    let before = db.dump();
    let (ok, _, err) = run(&data, Some(&db.url), &["archive", "push"]);
    assert!(!ok, "a push refuses an older schema");
    assert!(err.contains("skills archive migrate"), "{err}");
    let m = migrate(&data, &db);
    assert_eq!(m["migration"]["from"], 3, "{m}");
    assert_eq!(
        m["migration"]["to"],
        skills::archive::schema::VERSION,
        "{m}"
    );
    assert_eq!(
        m["migration"]["models_registered"][0]["model"],
        embedder.name(),
        "{m}"
    );
    assert_eq!(db.dump(), before, "the upgrade keeps every row");
    // Every conversation goes again, now with its vectors.
    let next = push(&data, &db, &[]);
    assert_eq!(next["conversations_sent"], 10, "{next}");
    assert_eq!(next["units_sent"], 40, "{next}");
    assert_eq!(db.dump(), before, "the same rows");
    let last = push(&data, &db, &[]);
    assert_eq!(last["conversations_sent"], 0, "{last}");
}

/// semantic-search's rows without what only the archive has.
fn local_shape(v: &Value) -> Value {
    let mut v = v.clone();
    for row in v["rows"].as_array_mut().unwrap() {
        let o = row.as_object_mut().unwrap();
        for k in ["machine", "machine_id", "user"] {
            assert!(o.remove(k).is_some(), "{k} missing");
        }
        o["cites"]
            .as_object_mut()
            .unwrap()
            .remove("machine_id")
            .unwrap();
    }
    v.as_object_mut().unwrap().remove("note");
    v
}

#[test]
fn semantic_mode_on_the_archive_equals_the_local_store() {
    let Some((embedder, db)) = setup() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    // Projects for the `project` filter: a third of the conversations in `Ferris`,
    // a third in a notes folder, a third with only their first half in `Ferris` (partly
    // in scope: a unit is kept by one of its messages).
    let mut messages = corpus("d", 40, 6);
    for (k, m) in messages.iter_mut().enumerate() {
        let (c, i) = (k / 6, k % 6);
        m.project = match c % 3 {
            0 => Some("/home/dev/Ferris-app".into()),
            1 => Some("/srv/notes".into()),
            _ if i < 3 => Some("/home/dev/FERRIS".into()),
            _ => None,
        };
    }
    embedded_store(&data, &messages, &embedder);
    migrate(&data, &db);
    push(&data, &db, &["--no-redact"]);
    let queries = [
        "how did we fix the flaky deploy?",
        "cinnamon dessert",
        "database index performance",
        "team review approval",
        "hiking holiday",
        "kubernetes timeout under load",
        "budget",
        "linker",
    ];
    let mut compared = 0;
    for q in queries {
        for extra in [
            vec!["limit=15"],
            vec!["limit=40", "role=user"],
            vec!["limit=5", "since=2025-02-20T00:00:00Z", "until=2025-02-21"],
            vec!["limit=10", "min_score=0.3"],
            vec!["limit=15", "project=ferris"],
            vec!["limit=8", "project= /srv/NOTES ", "role=assistant"],
            vec!["limit=5", "project=no_such%"],
        ] {
            let mut args = vec!["--json", "run", "semantic-search", "--arg"];
            let query = format!("query={q}");
            args.push(&query);
            args.extend(["--arg", "mode=semantic"]);
            for e in &extra {
                args.extend(["--arg", e]);
            }
            let local = json_of(&data, None, &args)["data"].clone();
            let remote = json_of(&data, Some(&db.url), &args)["data"].clone();
            assert_eq!(local_shape(&remote), local, "{q} {extra:?}");
            if extra.contains(&"project=ferris") {
                let rows = remote["rows"].as_array().unwrap();
                assert!(!rows.is_empty(), "{q}: {remote}");
                for row in rows {
                    let project = row["project"].as_str().unwrap_or("").to_lowercase();
                    assert!(project.contains("ferris"), "{row}");
                }
            }
            compared += local["rows"].as_array().unwrap().len();
            for row in remote["rows"].as_array().unwrap() {
                assert_eq!(row["machine"], "laptop");
                assert_eq!(row["cites"]["machine_id"], row["machine_id"]);
            }
            assert!(remote.get("note").is_none(), "{remote}");
        }
    }
    assert!(compared > 200, "{compared}");

    // The HNSW path (a large ef_search) finds the exact ranking on this store too.
    let pool = skills::archive::search::Pool::new(skills::archive::Target::parse(&db.url).unwrap());
    let models = skills::archive::meaning::models(&pool).unwrap();
    let q = embedder.embed_query("how did we fix the flaky deploy?");
    let filter = skills::stores::conversations::embeddings::Filter::default();
    let exact = skills::archive::meaning::nearest_units(
        &pool,
        &models[0],
        &q,
        20,
        &filter,
        &skills::archive::meaning::Whose::default(),
        f32::NEG_INFINITY,
        skills::archive::meaning::Scan::Exact,
        240,
    )
    .unwrap();
    let hnsw = skills::archive::meaning::nearest_units(
        &pool,
        &models[0],
        &q,
        20,
        &filter,
        &skills::archive::meaning::Whose::default(),
        f32::NEG_INFINITY,
        skills::archive::meaning::Scan::Hnsw { ef_search: 400 },
        240,
    )
    .unwrap();
    assert_eq!(exact.0.len(), 20);
    assert_eq!(exact.0, hnsw.0);

    // Hybrid (the default) answers from the archive too (tests/archive_keyword.rs
    // compares it with the local store's).
    let hybrid = json_of(
        &data,
        Some(&db.url),
        &["--json", "run", "semantic-search", "--arg", "query=cache"],
    )["data"]
        .clone();
    assert_eq!(hybrid["mode"], "hybrid", "{hybrid}");
    assert_eq!(
        local_shape(&hybrid),
        json_of(
            &data,
            None,
            &["--json", "run", "semantic-search", "--arg", "query=cache"]
        )["data"]
    );
}

#[test]
fn two_machines_with_different_models_never_mix_vectors() {
    let Some((embedder, db)) = setup() else {
        return;
    };
    let deep = match Embedder::load_tier(skills::embed::Tier::Deep) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            common::not_run(&format!("no second-tier model ({e}; scripts/fetch-model)"));
            return;
        }
    };
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("laptop"), root.path().join("desktop"));
    embedded_store(&a, &corpus("a", 6, 3), &embedder);
    embedded_store(&b, &corpus("b", 4, 5), &deep);
    let ma = migrate(&a, &db);
    let mb = migrate(&b, &db);
    assert_eq!(ma["migration"]["models"].as_array().unwrap().len(), 1);
    assert_eq!(
        mb["migration"]["models"].as_array().unwrap().len(),
        2,
        "{mb}"
    );
    assert_eq!(push(&a, &db, &[])["units_sent"], 18);
    let pb = push(&b, &db, &[]);
    assert_eq!(pb["units_sent"], 20, "{pb}");
    assert_eq!(pb["vector_model"], deep.name(), "{pb}");
    // Each model's table holds its machine's vectors only.
    assert_eq!(
        db.count("SELECT count(DISTINCT machine) FROM skills_archive.units_1"),
        1
    );
    assert_eq!(
        db.count("SELECT count(DISTINCT machine) FROM skills_archive.units_2"),
        1
    );
    // A search from the static machine ranks the static vectors and says how many
    // conversations it could not rank.
    let v = json_of(
        &a,
        Some(&db.url),
        &[
            "--json",
            "run",
            "semantic-search",
            "--arg",
            "query=deploy",
            "--arg",
            "mode=semantic",
            "--arg",
            "limit=50",
        ],
    )["data"]
        .clone();
    assert_eq!(v["model"], embedder.name());
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 18, "{v}");
    assert!(rows.iter().all(|r| r["machine"] == "laptop"), "{v}");
    let note = v["note"].as_str().unwrap();
    assert!(
        note.starts_with("4 of the archive's 10 conversations (20 messages)"),
        "{note}"
    );
}

/// A measurement, not a check (`--ignored`; docs/performance.md "Semantic search on
/// the team archive"): recall@15 of the HNSW path against the proven-exact scan on a
/// store of `SKILLS_RECALL_MESSAGES` (default 20,000) one-message units cut from this
/// repository's README at seeded random offsets, for 100 queries of four to six of its
/// words, at several `ef_search`.
#[test]
#[ignore = "a measurement: cargo test --release --test archive_meaning -- --ignored --nocapture"]
fn hnsw_recall_at_15_against_the_exact_scan() {
    let Some((embedder, db)) = setup() else {
        return;
    };
    let n: usize = std::env::var("SKILLS_RECALL_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let words: Vec<&str> = include_str!("../README.md").split_whitespace().collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |m: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m as u64) as usize
    };
    let per = 20;
    let mut messages = Vec::with_capacity(n);
    for k in 0..n {
        let len = 8 + next(12);
        let at = next(words.len() - len);
        let mut m = common::message(
            &format!("r-c{}", k / per),
            (k % per) as i64,
            &words[at..at + len].join(" "),
        );
        m.timestamp = chrono::Utc
            .timestamp_opt(1_700_000_000 + k as i64 * 60, 0)
            .unwrap();
        messages.push(m);
    }
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    let started = std::time::Instant::now();
    embedded_store(&data, &messages, &embedder);
    let embedded = started.elapsed();
    migrate(&data, &db);
    let started = std::time::Instant::now();
    let p = push(&data, &db, &["--no-redact"]);
    let pushed = started.elapsed();
    let units = p["units_sent"].as_i64().unwrap();
    println!(
        "{n} messages: embedded in {:.1} s, pushed with {units} units in {:.1} s",
        embedded.as_secs_f64(),
        pushed.as_secs_f64()
    );
    let pool = skills::archive::search::Pool::new(skills::archive::Target::parse(&db.url).unwrap());
    let model = skills::archive::meaning::models(&pool).unwrap().remove(0);
    let filter = skills::stores::conversations::embeddings::Filter::default();
    let queries: Vec<Vec<f32>> = (0..100)
        .map(|_| {
            let len = 4 + next(3);
            let at = next(words.len() - len);
            embedder.embed_query(&words[at..at + len].join(" "))
        })
        .collect();
    let search = |q: &[f32], scan| {
        let started = std::time::Instant::now();
        let (found, _) = skills::archive::meaning::nearest_units(
            &pool,
            &model,
            q,
            15,
            &filter,
            &skills::archive::meaning::Whose::default(),
            f32::NEG_INFINITY,
            scan,
            units,
        )
        .unwrap();
        let keys: Vec<(String, i32)> = found
            .into_iter()
            .map(|u| (u.conversation_id, u.unit))
            .collect();
        (keys, started.elapsed().as_secs_f64() * 1000.0)
    };
    let mut exact = Vec::new();
    let mut exact_ms = Vec::new();
    for q in &queries {
        let (k, ms) = search(q, skills::archive::meaning::Scan::Exact);
        exact.push(k);
        exact_ms.push(ms);
    }
    let p50 = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("exact scan: p50 {:.1} ms", p50(&mut exact_ms));
    for ef in [40usize, 100, 200, 400, 1000] {
        let (mut hit, mut total, mut ms) = (0usize, 0usize, Vec::new());
        for (q, want) in queries.iter().zip(&exact) {
            let (got, t) = search(q, skills::archive::meaning::Scan::Hnsw { ef_search: ef });
            ms.push(t);
            total += want.len();
            hit += want.iter().filter(|k| got.contains(k)).count();
        }
        println!(
            "hnsw ef_search {ef}: recall@15 {:.4}, p50 {:.1} ms",
            hit as f64 / total as f64,
            p50(&mut ms)
        );
    }
}

/// semantic-search's rows of one call: (machine label, machine id) of each.
fn machines_of(v: &Value) -> Vec<(String, String)> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["machine"].as_str().unwrap().to_owned(),
                r["machine_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn machine_and_user_filters_keep_one_machines_rows_in_semantic_search_and_recall() {
    let Some((embedder, db)) = setup() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("laptop"), root.path().join("desktop"));
    embedded_store(&a, &corpus("a", 10, 4), &embedder);
    embedded_store(&b, &corpus("b", 10, 4), &embedder);
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/memories");
    for data in [&a, &b] {
        let (ok, _, err) = run(data, None, &["memo", "import", sample.to_str().unwrap()]);
        assert!(ok, "{err}");
    }
    migrate(&a, &db);
    push(&a, &db, &[]);
    push(&b, &db, &[]);
    let semantic = |data: &Path, archive: bool, extra: &[&str]| -> Value {
        let mut args = vec!["--json", "run", "semantic-search"];
        for e in extra {
            args.extend(["--arg", e]);
        }
        json_of(data, archive.then_some(db.url.as_str()), &args)["data"].clone()
    };
    let mut laptop_id = String::new();
    for mode in ["mode=hybrid", "mode=semantic"] {
        for q in ["query=deploy pipeline upgrade", "query=cinnamon pie"] {
            let all = semantic(&a, true, &[q, mode, "limit=60"]);
            let labels: std::collections::BTreeSet<String> =
                machines_of(&all).into_iter().map(|(l, _)| l).collect();
            assert_eq!(
                labels.into_iter().collect::<Vec<_>>(),
                ["desktop", "laptop"],
                "{q} {mode}: {all}"
            );
            let user = all["rows"][0]["user"].as_str().unwrap().to_owned();
            // A filter that keeps every row: the unfiltered answer.
            let by_user = format!("user={user}");
            assert_eq!(
                semantic(&a, true, &[q, mode, "limit=60", &by_user]),
                all,
                "{q} {mode}"
            );
            assert_eq!(
                semantic(&a, true, &[q, mode, "limit=60", "user=nobody-else"])["count"],
                0
            );
            for (label, other) in [("laptop", "desktop"), ("desktop", "laptop")] {
                let by_label = format!("machine={label}");
                let one = semantic(&a, true, &[q, mode, "limit=60", &by_label]);
                let found = machines_of(&one);
                assert!(!found.is_empty(), "{q} {mode} {label}");
                assert!(found.iter().all(|(l, _)| l == label), "{q} {mode}: {one}");
                assert!(found.iter().all(|(l, _)| l != other));
                let mid = found[0].1.clone();
                if label == "laptop" {
                    laptop_id.clone_from(&mid);
                }
                // By the machine's id: the same rows.
                let by_id = format!("machine={mid}");
                assert_eq!(semantic(&a, true, &[q, mode, "limit=60", &by_id]), one);
                if mode == "mode=semantic" {
                    // Meaning alone: one machine's rows are its local store's.
                    let data = if label == "laptop" { &a } else { &b };
                    assert_eq!(
                        local_shape(&one),
                        semantic(data, false, &[q, mode, "limit=60"]),
                        "{q} {label}"
                    );
                }
            }
        }
    }
    // Locally the filters are an argument error naming them and `--archive`.
    for (skill, arg, extra) in [
        ("semantic-search", "query=deploy", "machine=laptop"),
        ("semantic-search", "query=deploy", "user=alice"),
        ("recall", "question=deploy", "machine=laptop"),
        ("recall", "question=deploy", "user=alice"),
    ] {
        let (ok, out, err) = run(
            &a,
            None,
            &["--json", "run", skill, "--arg", arg, "--arg", extra],
        );
        assert!(!ok, "{skill} {extra}: {out}");
        let name = extra.split('=').next().unwrap();
        let said = format!("{out}{err}");
        assert!(
            said.contains(&format!("`{name}`")) && said.contains("--archive"),
            "{said}"
        );
    }
    // recall passes them to every source.
    let recall = |extra: &[&str]| -> Value {
        let mut args = vec![
            "--json",
            "run",
            "recall",
            "--arg",
            "question=deploy pipeline upgrade",
        ];
        for e in extra {
            args.extend(["--arg", e]);
        }
        json_of(&a, Some(&db.url), &args)["data"].clone()
    };
    let conversation_machines = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["cites"]["kind"] == "conversation")
            .map(|i| i["cites"]["machine_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = recall(&["max_tokens=32000", "per_source=40"]);
    let everyone: std::collections::BTreeSet<String> =
        conversation_machines(&all).into_iter().collect();
    assert_eq!(everyone.len(), 2, "{all}");
    let one = recall(&["max_tokens=32000", "per_source=40", "machine=laptop"]);
    let kept = conversation_machines(&one);
    assert!(!kept.is_empty(), "{one}");
    assert!(kept.iter().all(|m| *m == laptop_id), "{one}");
    assert_eq!(
        recall(&["max_tokens=32000", "per_source=40", "user=nobody-else"])["count"],
        0
    );
}
