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
use skills::ingest::memories::import_paths_with;
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
    let vectors: Vec<_> = store
        .missing_embeddings(embedder.name())
        .unwrap()
        .into_iter()
        .map(|(id, text)| (id, embedder.embed_chunks(&text)))
        .collect();
    store.set_embeddings(&vectors, embedder.name()).unwrap();
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
