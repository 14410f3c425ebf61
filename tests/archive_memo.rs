//! memo-search on the team archive, on a real PostgreSQL (`scripts/postgres`, as
//! tests/archive.rs): one memories store — the real memory files of the corpus
//! (`$SKILLS_CORPUS_DIR/memories`) with the bundled sample, and memories made from
//! the LoCoMo dev half's turns (`$SKILLS_CORPUS_DIR/locomo`; each turn a memory linked
//! to its session, so sequences and neighbours), some superseding others, embedded with
//! the static model — pushed to an archive; then every mode with a set of filters
//! answers from the archive with the local store's hits: the same ids in the same
//! order with the same scores (within 1e-6, the output's rounding), the same rows,
//! links and bodies.
//!
//! Without a PostgreSQL, the embedding model or the corpus the test is reported as not
//! run, with the reason ([`common::not_run`]), and returns.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};

use chrono::TimeZone;
use serde_json::Value;
use skills::ingest::memories::{embed_missing, import_paths_with};
use skills::stores::memories::{Memory, MemoryStore};
use skills::stores::StorePaths;

use common::archive::{json_of, run, server, Db};

/// A memory and the session (conversation) it is linked to.
type Sessioned = (Memory, String);

/// Memories from the LoCoMo dev half's first `max` conversations: each turn a memory
/// (title: the speaker and session; tags: the speaker; type alternating fact and
/// decision; a file on every fifth), linked to its session as a conversation, a turn
/// every 30 s from a day per session; with the questions. `None` (not run) without
/// the corpus.
fn locomo(corpus: &Path, max: usize) -> Option<(Vec<Sessioned>, Vec<String>)> {
    let file = corpus.join("locomo/locomo-dev.json");
    let data: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    let (mut memories, mut questions) = (Vec::new(), Vec::new());
    for (s, sample) in data.iter().take(max).enumerate() {
        let conv = &sample["conversation"];
        for n in 1..=100u32 {
            let Some(turns) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
                continue;
            };
            let session = format!("locomo{s}-s{n}");
            let start = 1_680_000_000 + i64::from(n) * 86_400 + s as i64 * 7;
            for (i, t) in turns.iter().enumerate() {
                let speaker = t["speaker"].as_str().unwrap_or("someone");
                let mut body = t["text"].as_str().unwrap_or("").to_owned();
                if let Some(c) = t.get("blip_caption").and_then(Value::as_str) {
                    body.push_str(&format!(" [shares a photo: {c}]"));
                }
                let at = chrono::Utc.timestamp_opt(start + i as i64 * 30, 0).unwrap();
                let key = format!("{session}/{}", t["dia_id"].as_str().unwrap_or(""));
                memories.push((
                    Memory {
                        id: Memory::stable_id(&key),
                        title: format!("{speaker} in session {n}"),
                        kind: if i % 2 == 0 { "fact" } else { "decision" }.into(),
                        tags: vec![speaker.to_lowercase()],
                        created: at,
                        updated: at,
                        body,
                        files_read: if i % 5 == 0 {
                            vec![format!("notes/{speaker}/Session-{n}.md")]
                        } else {
                            Vec::new()
                        },
                        files_modified: Vec::new(),
                        origin: None,
                    },
                    session.clone(),
                ));
            }
        }
        for q in sample["qa"].as_array().into_iter().flatten() {
            if let Some(q) = q["question"].as_str() {
                questions.push(q.to_owned());
            }
        }
    }
    Some((memories, questions))
}

/// The store in `data`: the corpus's memory files and the bundled sample (imported as
/// `skills memo import` does, embedded), the LoCoMo memories (linked to their
/// sessions, embedded), every 17th LoCoMo memory superseded by the next one.
fn build_store(data: &Path, corpus: &Path, embedder: &skills::embed::Embedder) -> Vec<String> {
    let paths = StorePaths::in_dir(data);
    std::fs::create_dir_all(data).unwrap();
    let store = MemoryStore::open_rw(&paths.memories).unwrap();
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sample/memories");
    import_paths_with(&store, &[corpus.join("memories"), sample], Some(embedder)).unwrap();
    let (memories, questions) = locomo(corpus, 2).unwrap();
    let only: Vec<Memory> = memories.iter().map(|(m, _)| m.clone()).collect();
    store.upsert_many(&only).unwrap();
    embed_missing(&store, embedder).unwrap();
    {
        let conn = store.lock();
        for (i, (m, session)) in memories.iter().enumerate() {
            conn.execute(
                "INSERT INTO memory_links (id, rel, target) VALUES (?1, 'conversation', ?2)",
                [&m.id, session],
            )
            .unwrap();
            if i % 17 == 3 {
                if let Some((next, _)) = memories.get(i + 1) {
                    conn.execute(
                        "INSERT INTO memory_links (id, rel, target) VALUES (?1, 'supersedes', ?2)",
                        [&next.id, &m.id],
                    )
                    .unwrap();
                }
            }
        }
    }
    questions
}

/// `v` (memo-search's output on the archive) as the local store shows it: without
/// each hit's machine, machine id and user, and without the note (the archive's says
/// which model embedded the query).
fn local_shape(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("note");
    }
    for h in v["hits"].as_array_mut().unwrap() {
        let h = h.as_object_mut().unwrap();
        for k in ["machine", "machine_id", "user"] {
            h.remove(k);
        }
    }
    v
}

fn scores(v: &Value) -> Vec<(String, f64)> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_owned(),
                h["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn memo_search_on_the_archive_equals_the_local_store() {
    let Some(embedder) = common::embedder() else {
        return;
    };
    let Some(corpus) = common::corpus() else {
        return;
    };
    if !corpus.join("locomo/locomo-dev.json").is_file() {
        common::not_run("no LoCoMo dev half in the corpus");
        return;
    }
    let Some(server) = server() else {
        return;
    };
    let db = Db::new(&server);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    let questions = build_store(&data, &corpus, &embedder);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    let pushed = json_of(
        &data,
        Some(&db.url),
        &["--json", "archive", "push", "--no-redact"],
    );
    let held = db.count("SELECT count(*) FROM skills_archive.memories");
    assert!(held > 500, "{pushed}");
    assert_eq!(
        db.count("SELECT count(*) FROM skills_archive.memory_terms"),
        held
    );
    assert_eq!(
        pushed["memory_vectors_sent"].as_i64(),
        Some(held),
        "{pushed}"
    );

    let mut queries: Vec<String> = questions.into_iter().step_by(23).take(6).collect();
    queries.extend(
        [
            "sqlite memories decision",
            "grace hoper compiler",
            "When did Caroline go to the support group?",
            "zyxxyzzy pottery",
            "the",
        ]
        .map(str::to_owned),
    );
    let filters: [&[&str]; 7] = [
        &["limit=10"],
        &["limit=40", "explain=true"],
        &["limit=10", "type=decision"],
        &["limit=10", "date_from=2023-03-29", "date_to=2023-04-03"],
        &["limit=10", "when=2023-03-30"],
        &["limit=10", "file=session-1"],
        &["limit=25", "include_superseded=true"],
    ];
    let (mut compared, mut calls) = (0, 0);
    for mode in ["hybrid", "vec", "bm25", "exact", "fuzzy"] {
        for q in &queries {
            for extra in filters {
                let query = format!("query={q}");
                let mode_arg = format!("mode={mode}");
                let mut args = vec![
                    "--json",
                    "run",
                    "memo-search",
                    "--arg",
                    &query,
                    "--arg",
                    &mode_arg,
                ];
                for e in extra {
                    args.extend(["--arg", e]);
                }
                let local = json_of(&data, None, &args)["data"].clone();
                let remote = json_of(&data, Some(&db.url), &args)["data"].clone();
                let (a, b) = (scores(&local), scores(&remote));
                assert_eq!(
                    a.iter().map(|s| &s.0).collect::<Vec<_>>(),
                    b.iter().map(|s| &s.0).collect::<Vec<_>>(),
                    "{mode} `{q}` {extra:?}: ids"
                );
                for ((id, x), (_, y)) in a.iter().zip(&b) {
                    assert!(
                        (x - y).abs() <= 1e-6,
                        "{mode} `{q}` {extra:?}: {id} {x} vs {y}"
                    );
                }
                let mut local_trace = local.clone();
                let mut remote_shape = local_shape(&remote);
                // Traces say how each source read its rows; the rest is equal.
                for v in [&mut local_trace, &mut remote_shape] {
                    if let Some(o) = v.as_object_mut() {
                        o.remove("trace");
                        o.remove("note");
                    }
                }
                assert_eq!(remote_shape, local_trace, "{mode} `{q}` {extra:?}");
                if mode == "vec" || mode == "hybrid" {
                    let note = remote["note"].as_str().unwrap_or("");
                    assert!(note.contains(embedder.name()), "{note}");
                    assert!(note.contains("0 of the archive's"), "{note}");
                }
                for h in remote["hits"].as_array().unwrap() {
                    assert_eq!(h["machine"], "laptop");
                }
                compared += a.len();
                calls += 1;
            }
        }
    }
    // `machine` and `user`: this machine's (by label or id) and this user's memories
    // are every memory here; another's are none; on the local store both are refused.
    let user = pushed["user"].as_str().unwrap().to_owned();
    let id = pushed["machine"].as_str().unwrap().to_owned();
    for mode in ["hybrid", "vec", "bm25", "exact", "fuzzy"] {
        for q in &queries[..4] {
            let query = format!("query={q}");
            let mode_arg = format!("mode={mode}");
            let base = [
                "--json",
                "run",
                "memo-search",
                "--arg",
                &query,
                "--arg",
                &mode_arg,
            ];
            let with = |extra: &str| -> Value {
                let mut args = base.to_vec();
                args.extend(["--arg", extra]);
                json_of(&data, Some(&db.url), &args)["data"].clone()
            };
            let all = scores(&json_of(&data, None, &base)["data"]);
            for keep in [
                "machine=laptop".to_owned(),
                format!("machine={id}"),
                format!("user={user}"),
            ] {
                assert_eq!(scores(&with(&keep)), all, "{mode} `{q}` {keep}");
            }
            for drop in ["machine=desktop", "user=nobody-else"] {
                assert_eq!(with(drop)["count"], 0, "{mode} `{q}` {drop}");
            }
            let mut args = base.to_vec();
            args.extend(["--arg", "machine=laptop"]);
            let (ok, _, err) = run(&data, None, &args);
            assert!(
                !ok && err.contains("`machine`") && err.contains("--archive"),
                "{err}"
            );
        }
    }
    println!("memo-search: {held} memories, {calls} calls, {compared} hits compared");
    assert!(compared > 1000, "{compared}");
}

/// memo-save's output of `args` (JSON) from `data`, on the archive `archive` when given.
fn memo_save(data: &Path, archive: Option<&str>, args: &Value) -> Value {
    json_of(
        data,
        archive,
        &[
            "--json",
            "run",
            "memo-save",
            "--args-json",
            &args.to_string(),
        ],
    )["data"]
        .clone()
}

/// memo-search's hits for `query` (`include_superseded`) from `data`.
fn memo_hits(data: &Path, archive: Option<&str>, query: &str, superseded: bool) -> Vec<Value> {
    let args = serde_json::json!({"query": query, "limit": 20, "include_superseded": superseded});
    json_of(
        data,
        archive,
        &[
            "--json",
            "run",
            "memo-search",
            "--args-json",
            &args.to_string(),
        ],
    )["data"]["hits"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn memo_save_writes_into_the_archive_with_the_same_id_and_links() {
    let Some(admin) = server() else {
        return;
    };
    if common::embedder().is_none() {
        return;
    }
    let db = Db::new(&admin);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    // A first memory locally (its model registered by migrate), then the archive.
    let seed = memo_save(
        &data,
        None,
        &serde_json::json!({"title": "cache note", "body": "the cache layer needs a retry"}),
    );
    assert_eq!(seed["status"], "created", "{seed}");
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);

    // Saved into the archive: this machine's changed memories go (the seed too).
    let first = memo_save(
        &data,
        Some(&db.url),
        &serde_json::json!({"title": "deploy fix", "body": "we pinned the zeppelin deploy tool to 2.4"}),
    );
    assert_eq!(first["status"], "created", "{first}");
    assert_eq!(first["archive"]["pushed"], true, "{first}");
    assert_eq!(first["archive"]["machine"], "laptop", "{first}");
    assert_eq!(first["archive"]["memories_sent"], 2, "{first}");
    let id1 = first["id"].as_str().unwrap().to_owned();
    let remote = memo_hits(&data, Some(&db.url), "zeppelin deploy", false);
    let local = memo_hits(&data, None, "zeppelin deploy", false);
    assert_eq!(remote[0]["id"], id1, "{remote:?}");
    assert_eq!(local[0]["id"], id1, "{local:?}");
    assert_eq!(remote[0]["machine"], "laptop");
    assert_eq!(remote[0]["machine_id"], first["archive"]["machine_id"]);

    // A superseding save links both on the archive, as locally.
    let second = memo_save(
        &data,
        Some(&db.url),
        &serde_json::json!({
            "title": "deploy fix", "body": "we bundle the zeppelin deploy tool now",
            "supersedes": [id1],
        }),
    );
    assert_eq!(second["superseded"], serde_json::json!([id1]), "{second}");
    // The link is the new memory's (the older one's row is unchanged).
    assert_eq!(second["archive"]["memories_sent"], 1, "{second}");
    let id2 = second["id"].as_str().unwrap().to_owned();
    for archive in [Some(db.url.as_str()), None] {
        let hits = memo_hits(&data, archive, "zeppelin deploy", true);
        let of = |id: &str| hits.iter().find(|h| h["id"] == id).cloned().unwrap();
        assert_eq!(
            of(&id1)["superseded_by"],
            serde_json::json!([id2]),
            "{hits:?}"
        );
        assert_eq!(of(&id2)["supersedes"], serde_json::json!([id1]), "{hits:?}");
        // The default ranking leaves the superseded memory out.
        let ids: Vec<Value> = memo_hits(&data, archive, "zeppelin deploy", false)
            .iter()
            .map(|h| h["id"].clone())
            .collect();
        assert!(
            ids.contains(&Value::from(id2.clone())) && !ids.contains(&Value::from(id1.clone()))
        );
    }
    assert_eq!(db.count("SELECT count(*) FROM skills_archive.memories"), 3);
    // Saving the same memory again sends nothing.
    let again = memo_save(
        &data,
        Some(&db.url),
        &serde_json::json!({"title": "deploy fix", "body": "we bundle the zeppelin deploy tool now"}),
    );
    assert_eq!(again["status"], "already stored", "{again}");
    assert_eq!(again["archive"]["memories_sent"], 0, "{again}");

    // A reader role is refused, and nothing is saved.
    let role = format!("r_{}", db.name);
    let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'reader-pw';
         GRANT CONNECT ON DATABASE {} TO {role};",
        db.name
    ))
    .unwrap();
    db.client()
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA skills_archive TO {role};
             GRANT SELECT ON ALL TABLES IN SCHEMA skills_archive TO {role};"
        ))
        .unwrap();
    let (_, rest) = db.url.split_once("://").unwrap();
    let (_, host) = rest.split_once('@').unwrap();
    let reader = format!("postgres://{role}:reader-pw@{host}");
    let args = serde_json::json!({"title": "never", "body": "a reader cannot write this"});
    let (ok, out, err) = run(
        &data,
        Some(&reader),
        &[
            "--json",
            "run",
            "memo-save",
            "--args-json",
            &args.to_string(),
        ],
    );
    let said = format!("{out}{err}");
    assert!(!ok, "{said}");
    assert!(
        said.contains("may not write") && said.contains("--writer") && said.contains("not saved"),
        "{said}"
    );
    let hits = memo_hits(&data, None, "reader cannot write", false);
    assert!(hits.iter().all(|h| h["title"] != "never"), "{hits:?}");
    db.client()
        .batch_execute(&format!("DROP OWNED BY {role}"))
        .unwrap();
    c.batch_execute(&format!("DROP ROLE {role}")).unwrap();
}

/// A memory of the statistics test: `words` as its body, tagged `tags`.
fn small(id: &str, title: &str, tags: &[&str], body: &str, at: i64) -> Memory {
    let at = chrono::Utc.timestamp_opt(1_780_000_000 + at, 0).unwrap();
    Memory {
        id: id.to_owned(),
        title: title.to_owned(),
        kind: "fact".into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        created: at,
        updated: at,
        body: body.to_owned(),
        files_read: Vec::new(),
        files_modified: Vec::new(),
        origin: None,
    }
}

/// Upserts `memories` into the store of `data` (embedded by `embedder`), adds `links`
/// (`(id, rel, target)`) and deletes the memories `gone`.
fn write_store(
    data: &Path,
    embedder: &skills::embed::Embedder,
    memories: &[Memory],
    links: &[(&str, &str, &str)],
    gone: &[&str],
) {
    std::fs::create_dir_all(data).unwrap();
    let store = MemoryStore::open_rw(&StorePaths::in_dir(data).memories).unwrap();
    store.upsert_many(memories).unwrap();
    embed_missing(&store, embedder).unwrap();
    let conn = store.lock();
    for (id, rel, target) in links {
        conn.execute(
            "INSERT OR IGNORE INTO memory_links (id, rel, target) VALUES (?1, ?2, ?3)",
            [id, rel, target],
        )
        .unwrap();
    }
    for id in gone {
        conn.execute("DELETE FROM memories WHERE id = ?1", [id])
            .unwrap();
        conn.execute("DELETE FROM memory_links WHERE id = ?1", [id])
            .unwrap();
    }
}

/// The statistics push keeps (schema version 9) and the same recomputed from the rows
/// the archive holds: per tokenizer and term the document frequency, then the totals
/// (memories, with terms, plain tokens, stemmed tokens), as text lines.
fn kept_and_recomputed(db: &Db) -> (Vec<String>, Vec<String>) {
    let lines = |sql: &str| -> Vec<String> {
        db.client()
            .query(sql, &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let kept = lines(
        "SELECT * FROM (
           SELECT format('%s %s %s', tokenizer, term, sum(df)) FROM skills_archive.memory_deltas
           GROUP BY tokenizer, term HAVING sum(df) <> 0 ORDER BY tokenizer, term) d
         UNION ALL
         SELECT format('totals %s %s %s %s', sum(memories), sum(with_terms), sum(plain_tokens),
                       sum(stem_tokens)) FROM skills_archive.memory_totals",
    );
    let recomputed = lines(
        "SELECT * FROM (
           SELECT format('%s %s %s', k, w, n) FROM (
             SELECT 0 AS k, w, count(*) AS n FROM skills_archive.memory_terms, unnest(plain_terms) w
             GROUP BY w
             UNION ALL
             SELECT 1, w, count(*) FROM skills_archive.memory_terms, unnest(stem_terms) w
             GROUP BY w) s ORDER BY k, w) d
         UNION ALL
         SELECT format('totals %s %s %s %s', (SELECT count(*) FROM skills_archive.memories),
                       count(*), sum(plain_sizes[1] + plain_sizes[2] + plain_sizes[3]),
                       sum(stem_sizes[1] + stem_sizes[2] + stem_sizes[3]))
         FROM skills_archive.memory_terms",
    );
    (kept, recomputed)
}

/// memo-search's statistics kept by push (schema version 9) equal those recomputed
/// from the rows after every step: two machines' first pushes side by side, memories
/// replaced, superseding and superseded, pruned, pushed again side by side, a
/// memo-save; the migration from version 8 fills them (and the long memories' chunk
/// vectors) from the rows; fuzzy mode (the vocabulary), exact mode (the document
/// frequencies) and bm25 answer from them, and the vec leg (long memories by their
/// chunks) gives this machine's memories the local scores.
#[test]
fn memo_statistics_kept_by_push_equal_the_rows() {
    let Some(embedder) = common::embedder() else {
        return;
    };
    let Some(server) = server() else {
        return;
    };
    let db = Db::new(&server);
    let root = tempfile::tempdir().unwrap();
    let (lap, desk) = (root.path().join("laptop"), root.path().join("desktop"));
    let words = [
        "serde", "tokio", "runtime", "errors", "retry", "cache", "deploy", "zeppelin", "running",
        "runs", "the", "a", "naïve", "café",
    ];
    let body = |i: usize, n: usize| -> String {
        (0..n)
            .map(|j| words[(i * 7 + j * 3) % words.len()])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let laptop: Vec<Memory> = (0..40)
        .map(|i| {
            small(
                &format!("lap-{i:02}"),
                &format!("laptop note {}", words[i % words.len()]),
                &[words[(i + 3) % words.len()]],
                // A few long memories (several chunk vectors).
                &body(i, if i % 13 == 7 { 400 } else { 5 + i % 9 }),
                i as i64 * 60,
            )
        })
        .collect();
    let desktop: Vec<Memory> = (0..25)
        .map(|i| {
            // Two ids shared with the laptop, other text.
            let id = if i < 2 {
                format!("lap-{i:02}")
            } else {
                format!("desk-{i:02}")
            };
            small(
                &id,
                &format!("desktop {}", words[(i + 5) % words.len()]),
                &[],
                &body(i + 11, if i == 7 { 300 } else { 3 + i % 6 }),
                i as i64 * 90,
            )
        })
        .collect();
    write_store(
        &lap,
        &embedder,
        &laptop,
        &[("lap-05", "supersedes", "lap-04")],
        &[],
    );
    write_store(&desk, &embedder, &desktop, &[], &[]);
    json_of(&lap, Some(&db.url), &["--json", "archive", "migrate"]);
    let both = |args: &[&str]| {
        std::thread::scope(|s| {
            let a = s.spawn(|| json_of(&lap, Some(&db.url), args));
            let b = s.spawn(|| json_of(&desk, Some(&db.url), args));
            (a.join().unwrap(), b.join().unwrap())
        })
    };
    let push = ["--json", "archive", "push", "--no-redact"];
    let (a, b) = both(&push);
    assert_eq!(a["memories_sent"], 40, "{a}");
    assert_eq!(b["memories_sent"], 25, "{b}");
    let check = |step: &str| {
        let (kept, recomputed) = kept_and_recomputed(&db);
        assert!(kept.len() > 20, "{step}: {kept:?}");
        assert_eq!(kept, recomputed, "{step}");
    };
    check("first pushes");

    // Replaced (new text), superseding (a new link), new, and deleted locally.
    let mut changed: Vec<Memory> = laptop[10..16].to_vec();
    for m in &mut changed {
        m.body = format!("{} rewritten with deploy retries", m.body);
    }
    changed.push(small(
        "lap-new",
        "a new one",
        &["cache"],
        "the cache runs",
        9_000,
    ));
    write_store(
        &lap,
        &embedder,
        &changed,
        &[
            ("lap-new", "supersedes", "lap-20"),
            ("lap-21", "supersedes", "lap-22"),
        ],
        &["lap-30", "lap-31", "lap-32"],
    );
    let mut changed: Vec<Memory> = desktop[3..6].to_vec();
    for m in &mut changed {
        m.title = "desktop retitled zeppelin".into();
    }
    write_store(&desk, &embedder, &changed, &[], &["desk-10"]);
    // Without --prune the deleted memories stay; with it they go.
    let (a, b) = both(&push);
    assert_eq!(a["memories_pruned"], 0, "{a}");
    assert_eq!(b["memories_pruned"], 0, "{b}");
    check("replaced and superseding");
    let (a, b) = both(&["--json", "archive", "push", "--no-redact", "--prune"]);
    assert_eq!(a["memories_pruned"], 3, "{a}");
    assert_eq!(b["memories_pruned"], 1, "{b}");
    check("pruned");
    // A memo-save pushes this machine's changed memories alone.
    let saved = json_of(
        &lap,
        Some(&db.url),
        &[
            "--json",
            "run",
            "memo-save",
            "--args-json",
            &serde_json::json!({"title": "saved", "body": "serde errors in the tokio runtime"})
                .to_string(),
        ],
    )["data"]
        .clone();
    assert_eq!(saved["archive"]["pushed"], true, "{saved}");
    check("memo-save");

    // fuzzy (the vocabulary), exact (the document frequencies) and bm25 find this
    // machine's memories (the scores are the team's: both machines count).
    for (mode, q) in [
        ("fuzzy", "zepelin retrys"),
        ("exact", "the cache"),
        ("bm25", "tokio runtime"),
    ] {
        let args = [
            "--json",
            "run",
            "memo-search",
            "--arg",
            &format!("query={q}"),
            "--arg",
            &format!("mode={mode}"),
            "--arg",
            "machine=laptop",
        ];
        let remote = scores(&json_of(&lap, Some(&db.url), &args)["data"]);
        let local = scores(&json_of(&lap, None, &args[..7])["data"]);
        assert!(!local.is_empty(), "{mode} `{q}`");
        assert!(!remote.is_empty(), "{mode} `{q}`");
    }
    let chunks = || -> Vec<String> {
        db.client()
            .query(
                "SELECT format('%s %s %s %s', machine, id, chunk, embedding)
                 FROM skills_archive.memory_chunks_1 ORDER BY machine, id, chunk",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let held = chunks();
    assert!(held.len() >= 8, "{held:?}");
    // The vec leg does not depend on the team's statistics: this machine's memories
    // score as locally, long ones by their best chunk.
    for q in [
        "serde errors in the tokio runtime",
        "deploy the zeppelin cache",
    ] {
        for limit in ["limit=5", "limit=30"] {
            let args = [
                "--json",
                "run",
                "memo-search",
                "--arg",
                &format!("query={q}"),
                "--arg",
                "mode=vec",
                "--arg",
                limit,
                "--arg",
                "machine=laptop",
            ];
            let remote = scores(&json_of(&lap, Some(&db.url), &args)["data"]);
            let local = scores(&json_of(&lap, None, &args[..9])["data"]);
            assert_eq!(
                remote.iter().map(|s| &s.0).collect::<Vec<_>>(),
                local.iter().map(|s| &s.0).collect::<Vec<_>>(),
                "vec `{q}` {limit}"
            );
            for ((id, x), (_, y)) in local.iter().zip(&remote) {
                assert!((x - y).abs() <= 1e-6, "vec `{q}`: {id} {x} vs {y}");
            }
        }
    }

    // The archive as version 8 left it: the migration fills the statistics from the rows.
    let before = kept_and_recomputed(&db).0;
    db.client()
        .batch_execute(
            "DROP TABLE skills_archive.memory_deltas, skills_archive.memory_totals,
                 skills_archive.memory_chunks_1;
             DROP INDEX skills_archive.memories_superseding;
             UPDATE skills_archive.meta SET value = '8' WHERE key = 'schema_version';",
        )
        .unwrap();
    let m = json_of(&lap, Some(&db.url), &["--json", "archive", "migrate"]);
    assert_eq!(m["migration"]["from"], 8, "{m}");
    check("migrated from version 8");
    assert_eq!(kept_and_recomputed(&db).0, before);
    assert_eq!(chunks(), held);
}
