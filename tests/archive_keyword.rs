//! semantic-search's keyword leg and its default `hybrid` mode on the team archive, on a
//! real PostgreSQL (`scripts/postgres`, as tests/archive.rs) over a real corpus sample
//! (the LoCoMo dev half's conversations, `$SKILLS_CORPUS_DIR/locomo`): the archive's
//! BM25 (with neighbour documents, every filter) gives the local index's rows in the
//! local order with the same scores, the statistics push keeps stay those of the rows
//! through appends and rewrites, and hybrid on the archive answers as the local store.
//!
//! Without a PostgreSQL, the embedding model or the corpus each test is reported as
//! not run, with the reason ([`common::not_run`]), and returns.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};
use skills::archive::keyword;
use skills::cancel::Cancel;
use skills::embed::Embedder;
use skills::ingest::Message;
use skills::stores::conversations::embeddings::UnitSpec;
use skills::stores::conversations::index::{Index, KeywordQuery};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

use common::archive::{json_of, locomo_sample, push_no_redact, run, server, Db};

/// Writes `messages` into the store in `dir` and embeds them (units of one message).
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

/// What a test runs with: the model, a fresh database, the corpus sample's messages
/// and questions.
type Setup = (Arc<Embedder>, Db, Vec<Message>, Vec<String>);

/// The model, a fresh database and the corpus sample, or `None` (not run).
fn setup(max: usize) -> Option<Setup> {
    let embedder = Arc::new(common::embedder()?);
    let (messages, questions) = locomo_sample(max, true)?;
    let db = Db::new(&server()?);
    Some((embedder, db, messages, questions))
}

/// A filter of the differential: (role, conversation, since, until).
type Variant = (
    Option<&'static str>,
    Option<&'static str>,
    Option<i64>,
    Option<i64>,
);

const VARIANTS: [Variant; 5] = [
    (None, None, None, None),
    (Some("user"), None, None, None),
    (Some("assistant"), None, None, None),
    (None, Some("locomo0-s3"), None, None),
    (
        None,
        None,
        Some(1_680_000_000 + 5 * 86_400),
        Some(1_680_000_000 + 12 * 86_400),
    ),
];

/// Compares the archive's keyword leg with the local index's for every question ×
/// variant × neighbourhood; returns the rows compared.
fn assert_same_keyword_leg(data: &Path, db: &Db, questions: &[String]) -> usize {
    let index = Index::open(&StorePaths::in_dir(data).conversations).unwrap();
    assert!(index.has_postings());
    let pool = skills::archive::search::Pool::new(skills::archive::Target::parse(&db.url).unwrap());
    let stop = Cancel::new();
    let context = skills::engines::semantic_search::CONTEXT;
    let (mut compared, mut identical) = (0, 0);
    for question in questions {
        let terms = skills::search::words::query_terms(question, 16);
        if terms.is_empty() {
            continue;
        }
        for (role, conversation, since, until) in VARIANTS {
            let (since_us, until_us) = (since.map(|s| s * 1_000_000), until.map(|u| u * 1_000_000));
            for around in [Some(context), None] {
                let limit = 60;
                let q = KeywordQuery {
                    role,
                    conversation_id: conversation,
                    since_us,
                    until_us,
                    ..KeywordQuery::new(&terms, limit, &stop)
                };
                let local = match around {
                    Some(n) => index.keyword_in_context(&q, n).unwrap().unwrap(),
                    None => index
                        .keyword(&q)
                        .unwrap()
                        .unwrap()
                        .into_iter()
                        .map(
                            |(score, hit)| skills::stores::conversations::index::KeywordHit {
                                score,
                                own: score,
                                hit,
                            },
                        )
                        .collect(),
                };
                let (remote, _) = keyword::search(&pool, &q, around).unwrap();
                let what = format!(
                    "{question:?} {terms:?} {role:?} {conversation:?} {since:?} {around:?}"
                );
                let keys = |k: &[(String, String, i64)]| k.to_vec();
                let local_keys: Vec<(String, String, i64)> = local
                    .iter()
                    .map(|h| {
                        (
                            h.hit.conversation_id.clone(),
                            h.hit.message_id.clone(),
                            h.hit.created_us,
                        )
                    })
                    .collect();
                let remote_keys: Vec<(String, String, i64)> = remote
                    .iter()
                    .map(|f| {
                        (
                            f.conversation_id.clone(),
                            f.message_id.clone(),
                            f.created_us,
                        )
                    })
                    .collect();
                if remote_keys != local_keys {
                    let at = remote_keys
                        .iter()
                        .zip(&local_keys)
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    let show = |i: usize| {
                        format!(
                            "local {:?} {} {} / archive {:?} {} {}",
                            local_keys.get(i),
                            local.get(i).map_or(0.0, |h| h.score),
                            local.get(i).map_or(0.0, |h| h.own),
                            remote_keys.get(i),
                            remote.get(i).map_or(0.0, |h| h.score),
                            remote.get(i).map_or(0.0, |h| h.own)
                        )
                    };
                    panic!(
                        "{what}: first difference at {at}:\n{}\n{}",
                        show(at),
                        show(at + 1)
                    );
                }
                assert_eq!(keys(&remote_keys), local_keys, "{what}");
                for (l, r) in local.iter().zip(&remote) {
                    if l.score.to_bits() == r.score.to_bits() && l.own.to_bits() == r.own.to_bits()
                    {
                        identical += 1;
                    }
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
                    assert!(
                        close(l.score, r.score),
                        "{what}: score {} vs {}",
                        l.score,
                        r.score
                    );
                    assert!(close(l.own, r.own), "{what}: own {} vs {}", l.own, r.own);
                }
                compared += local.len();
            }
        }
    }
    println!("keyword leg: {identical} of {compared} rows with bit-identical scores");
    compared
}

/// The statistics the deltas sum to equal those of the rows held.
fn assert_statistics_of_the_rows(db: &Db) {
    let mut c = db.client();
    let totals = c
        .query_one(
            "SELECT (SELECT coalesce(sum(messages), 0)::bigint FROM skills_archive.keyword_totals),
                    (SELECT coalesce(sum(words), 0)::bigint FROM skills_archive.keyword_totals),
                    (SELECT count(*) FROM skills_archive.message_terms),
                    (SELECT coalesce(sum(length), 0)::bigint FROM skills_archive.message_terms),
                    (SELECT count(*) FROM skills_archive.messages)",
            &[],
        )
        .unwrap();
    let (n, words, rows, lengths, messages): (i64, i64, i64, i64, i64) = (
        totals.get(0),
        totals.get(1),
        totals.get(2),
        totals.get(3),
        totals.get(4),
    );
    assert_eq!((n, words), (rows, lengths));
    assert_eq!(rows, messages, "a terms row per message");
    let differing = db.count(
        "SELECT count(*) FROM (
           SELECT term, sum(df) AS df FROM skills_archive.keyword_deltas GROUP BY term
           HAVING sum(df) <> 0) d
         FULL JOIN (
           SELECT t AS term, count(*) AS df FROM skills_archive.message_terms, unnest(terms) t
           GROUP BY t) r USING (term)
         WHERE d.df IS DISTINCT FROM r.df",
    );
    assert_eq!(differing, 0, "document frequencies differ from the rows'");
}

#[test]
fn the_archives_keyword_leg_scores_as_the_local_leg_on_locomo() {
    let Some((embedder, db, messages, questions)) = setup(usize::MAX) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    // Most of the sample first, the rest later: an incremental push (new
    // conversations, a conversation appended to, so rewritten) must keep the
    // statistics those of the rows.
    let split = messages.len() * 4 / 5;
    let (first, rest) = messages.split_at(split);
    let cut_conv = first.last().unwrap().conversation_id.clone();
    embedded_store(&data, first, &embedder);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    let p = push_no_redact(&data, &db);
    assert_eq!(p["messages_sent"], split, "{p}");
    assert_statistics_of_the_rows(&db);
    embedded_store(&data, rest, &embedder);
    let p = push_no_redact(&data, &db);
    assert!(rest.iter().any(|m| m.conversation_id == cut_conv));
    assert!(
        p["messages_sent"].as_u64().unwrap() > rest.len() as u64,
        "the appended conversation is sent whole: {p}"
    );
    assert_statistics_of_the_rows(&db);
    let again = push_no_redact(&data, &db);
    assert_eq!(again["messages_sent"], 0, "{again}");
    // The local index still counts the rewritten conversation's old rows in its
    // statistics until a merge drops them (as Lucene counts deleted documents); the
    // archive counts the rows it holds: those of a store written in one pass.
    let fresh = root.path().join("fresh");
    common::store_messages(&fresh, &messages);
    let questions: Vec<String> = questions.into_iter().step_by(5).take(60).collect();
    let compared = assert_same_keyword_leg(&fresh, &db, &questions);
    println!(
        "keyword leg: {} messages, {} questions, {compared} rows compared",
        messages.len(),
        questions.len()
    );
    assert!(compared > 10_000, "{compared}");
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
    if let Some(e) = v.get_mut("explain") {
        e.as_object_mut().unwrap().remove("archive");
    }
    v.as_object_mut().unwrap().remove("note");
    v
}

#[test]
fn hybrid_on_the_archive_equals_the_local_store() {
    let Some((embedder, db, mut messages, questions)) = setup(1) else {
        return;
    };
    with_projects(&mut messages);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    embedded_store(&data, &messages, &embedder);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    push_no_redact(&data, &db);
    let mut queries: Vec<String> = questions.into_iter().step_by(9).take(12).collect();
    // A literal hit and a term no message holds.
    queries.push("adoption".into());
    queries.push("zyxxyzzy pottery".into());
    let mut compared = 0;
    for q in &queries {
        for extra in [
            vec!["limit=15"],
            vec!["limit=60", "role=user", "explain=true"],
            vec!["limit=10", "conversation_id=locomo0-s2"],
            vec!["limit=5", "since=2023-03-31", "until=2023-04-10"],
            vec!["limit=15", "project=ferris"],
            vec![
                "limit=10",
                "project=/SRV/notes",
                "role=user",
                "explain=true",
            ],
            vec!["limit=5", "project=50%_off"],
        ] {
            let mut args = vec!["--json", "run", "semantic-search", "--arg"];
            let query = format!("query={q}");
            args.push(&query);
            for e in &extra {
                args.extend(["--arg", e]);
            }
            let local = json_of(&data, None, &args)["data"].clone();
            let remote = json_of(&data, Some(&db.url), &args)["data"].clone();
            assert_eq!(remote["mode"], "hybrid");
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
            }
        }
    }
    println!(
        "hybrid: {} queries, {compared} rows compared",
        queries.len()
    );
    assert!(compared > 300, "{compared}");
}

/// Gives the messages projects for the `project` filter: odd sessions `Ferris`'s,
/// even ones a notes folder's, and in session 2 only its first ten turns one (the rest
/// none: a conversation partly in scope).
fn with_projects(messages: &mut [Message]) {
    for m in messages {
        let session: u32 = m
            .conversation_id
            .rsplit("-s")
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let turn: usize = m
            .message_id
            .rsplit(':')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        m.project = match session {
            2 if turn > 10 => None,
            n if n % 2 == 1 => Some("/home/dev/Ferris-app".into()),
            _ => Some("/srv/notes".into()),
        };
    }
}

/// recall's output without what only the archive has: its items are fused from its
/// sources' rows, so they must not differ but for the machine a conversation's
/// citation names on the archive; the notes may (the archive's sources say which model
/// embedded the query).
fn recall_items(v: &Value, archive: bool) -> Value {
    let mut items = v["items"].clone();
    for item in items.as_array_mut().unwrap() {
        let cites = item["cites"].as_object_mut().unwrap();
        if cites["kind"] == "conversation" {
            assert_eq!(cites.remove("machine_id").is_some(), archive, "{v}");
        }
    }
    json!({"items": items, "pack": v["pack"], "count": v["count"], "dropped": v["dropped"]})
}

#[test]
fn recall_on_the_archive_equals_the_local_store() {
    let Some((embedder, db, messages, questions)) = setup(1) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    embedded_store(&data, &messages, &embedder);
    // Memories too: recall fuses memo-search's hits with the conversations' rows.
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/memories");
    let (ok, _, err) = run(&data, None, &["memo", "import", sample.to_str().unwrap()]);
    assert!(ok, "{err}");
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    push_no_redact(&data, &db);
    let mut queries: Vec<String> = questions.into_iter().step_by(13).take(8).collect();
    queries.push("decision about the database".into());
    queries.push("zyxxyzzy pottery".into());
    let mut compared = 0;
    for q in &queries {
        let question = format!("question={q}");
        let args = ["--json", "run", "recall", "--arg", &question];
        let local = json_of(&data, None, &args)["data"].clone();
        let remote = json_of(&data, Some(&db.url), &args)["data"].clone();
        assert_eq!(
            recall_items(&remote, true),
            recall_items(&local, false),
            "{q}"
        );
        compared += local["items"].as_array().unwrap().len();
    }
    println!(
        "recall: {} queries, {compared} items compared",
        queries.len()
    );
    assert!(compared > 40, "{compared}");
}

#[test]
fn a_push_killed_mid_way_keeps_the_statistics_those_of_the_rows() {
    let Some((embedder, killed, messages, questions)) = setup(2) else {
        return;
    };
    let clean = Db::new(&server().unwrap());
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("m");
    embedded_store(&data, &messages, &embedder);
    for db in [&killed, &clean] {
        json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    }
    common::archive::kill_pushes(
        || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_skills"));
            c.env_remove("SKILLS_ARCHIVE_URL")
                .env("SKILLS_EMBEDDER", "static")
                .arg("--data-dir")
                .arg(&data)
                .args(["--archive", &killed.url, "archive", "push", "--no-redact"])
                .args(["--batch-rows", "40"])
                .env("SKILLS_MACHINE_NAME", "m");
            c
        },
        &[300, 600, 900],
    );
    // Each batch's rows and deltas commit together: consistent after every kill.
    assert_statistics_of_the_rows(&killed);
    push_no_redact(&data, &killed);
    push_no_redact(&data, &clean);
    assert_statistics_of_the_rows(&killed);
    let pool = |db: &Db| {
        skills::archive::search::Pool::new(skills::archive::Target::parse(&db.url).unwrap())
    };
    let (a, b) = (pool(&killed), pool(&clean));
    let stop = Cancel::new();
    for question in questions.iter().step_by(7).take(20) {
        let terms = skills::search::words::query_terms(question, 16);
        let q = KeywordQuery::new(&terms, 60, &stop);
        let around = Some(skills::engines::semantic_search::CONTEXT);
        assert_eq!(
            keyword::search(&a, &q, around).unwrap(),
            keyword::search(&b, &q, around).unwrap(),
            "{question}"
        );
    }
}
