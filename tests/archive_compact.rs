//! Compaction of the team archive's keyword postings (`src/archive/compact.rs`) on a
//! real PostgreSQL (`scripts/postgres`, as tests/archive.rs) over a real corpus sample
//! (the LoCoMo dev half's conversations, `$SKILLS_CORPUS_DIR/locomo`): a push that
//! rewrites a conversation leaves dead postings, `skills archive compact` replaces
//! every term's rows by one row of exactly its live postings without changing one
//! keyword-leg result, and the compaction at the end of each push keeps repeated
//! rewrites from growing the table.
//!
//! Without a PostgreSQL or the corpus each test is reported as not run, with the
//! reason ([`common::not_run`]), and returns.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use skills::archive::keyword;
use skills::cancel::Cancel;
use skills::ingest::Message;
use skills::stores::conversations::index::KeywordQuery;

use common::archive::{json_of, locomo_sample, push_no_redact, run, server, Db};

/// A fresh database and the corpus sample, or `None` (not run).
fn setup(max: usize) -> Option<(Db, Vec<Message>, Vec<String>)> {
    let (messages, questions) = locomo_sample(max, false)?;
    let db = Db::new(&server()?);
    Some((db, messages, questions))
}

/// A new last turn of conversation `conv` (round `round`): appending rewrites it.
fn appended(messages: &[Message], conv: &str, round: usize) -> Message {
    let last = messages
        .iter()
        .filter(|m| m.conversation_id == conv)
        .max_by_key(|m| m.timestamp)
        .unwrap();
    let mut m = last.clone();
    m.message_id = format!("{conv}-more{round}");
    m.msg_index += 1 + round as i64;
    m.timestamp += chrono::Duration::seconds(30 * (1 + round as i64));
    m.content = format!("and one more thing, round {round}: the pottery class was fun");
    m
}

/// Appends a turn to every conversation of `conversations` in the store of `data`
/// (round `round`, [`appended`]; `all` holds the store's messages and gains them) and
/// pushes it into `db`: every conversation is rewritten. The push's report.
fn rewrite_push(
    data: &Path,
    db: &Db,
    all: &mut Vec<Message>,
    conversations: &BTreeSet<String>,
    round: usize,
) -> serde_json::Value {
    let more: Vec<Message> = conversations
        .iter()
        .map(|c| appended(all, c, round))
        .collect();
    common::store_messages(data, &more);
    all.extend(more);
    push_no_redact(data, db)
}

/// One posting as stored: (id, count, length).
type Posting = (u32, u32, u16);

/// Every row of `keyword_postings`: (term, its postings), in table order.
fn postings_rows(db: &Db) -> Vec<(String, Vec<Posting>)> {
    db.client()
        .query(
            "SELECT term, postings FROM skills_archive.keyword_postings",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| {
            let bytes: &[u8] = r.get(1);
            assert_eq!(bytes.len() % 10, 0);
            let p = bytes
                .chunks_exact(10)
                .map(|p| {
                    (
                        u32::from_be_bytes([p[0], p[1], p[2], p[3]]),
                        u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
                        u16::from_be_bytes([p[8], p[9]]),
                    )
                })
                .collect();
            (r.get(0), p)
        })
        .collect()
}

/// The postings the rows of `message_terms` call for: per term, (id, count, length)
/// of every live message holding it.
fn live_postings(db: &Db) -> BTreeMap<String, Vec<Posting>> {
    let mut out: BTreeMap<String, Vec<Posting>> = BTreeMap::new();
    for r in db
        .client()
        .query(
            "SELECT t.term, m.id, t.n, least(m.length, 65535)
             FROM skills_archive.message_terms m, unnest(m.terms, m.counts) AS t(term, n)
             ORDER BY t.term, m.id",
            &[],
        )
        .unwrap()
    {
        let (id, n, len): (i64, i32, i64) = (r.get(1), r.get(2), r.get(3));
        out.entry(r.get(0)).or_default().push((
            u32::try_from(id).unwrap(),
            u32::try_from(n).unwrap(),
            u16::try_from(len).unwrap(),
        ));
    }
    out
}

/// Postings whose id has no `message_terms` row.
fn dead(db: &Db) -> usize {
    let live: BTreeSet<u32> = db
        .client()
        .query("SELECT id FROM skills_archive.message_terms", &[])
        .unwrap()
        .iter()
        .map(|r| u32::try_from(r.get::<_, i64>(0)).unwrap())
        .collect();
    postings_rows(db)
        .iter()
        .flat_map(|(_, p)| p)
        .filter(|(id, _, _)| !live.contains(id))
        .count()
}

/// Asserts the table is compact: one row per term, holding exactly the term's live
/// postings in ascending id.
fn assert_compact(db: &Db) {
    let rows = postings_rows(db);
    let terms: BTreeSet<&str> = rows.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(terms.len(), rows.len(), "one row per term");
    let held: BTreeMap<String, Vec<Posting>> = rows.into_iter().collect();
    for p in held.values() {
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0), "ascending ids");
    }
    let live = live_postings(db);
    assert_eq!(held.len(), live.len(), "terms");
    assert!(
        held == live,
        "the postings are not the live messages' terms"
    );
}

/// The keyword leg's answers (with and without neighbours) for `questions`.
fn keyword_answers(db: &Db, questions: &[String]) -> Vec<Vec<keyword::Found>> {
    let pool = skills::archive::search::Pool::new(skills::archive::Target::parse(&db.url).unwrap());
    let stop = Cancel::new();
    let mut out = Vec::new();
    for question in questions {
        let terms = skills::search::words::query_terms(question, 16);
        if terms.is_empty() {
            continue;
        }
        for role in [None, Some("user")] {
            for around in [Some(skills::engines::semantic_search::CONTEXT), None] {
                let q = KeywordQuery {
                    role,
                    ..KeywordQuery::new(&terms, 60, &stop)
                };
                out.push(keyword::search(&pool, &q, around).unwrap().0);
            }
        }
    }
    out
}

#[test]
fn compact_keeps_exactly_the_live_postings_and_the_keyword_leg() {
    let Some((db, messages, questions)) = setup(2) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    common::store_messages(&data, &messages);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    let p = push_no_redact(&data, &db);
    assert_eq!(p["messages_sent"], messages.len(), "{p}");
    assert_eq!(dead(&db), 0);
    assert_compact(&db);
    // Two conversations rewritten (one more turn each): their old postings are dead.
    let rewritten = ["locomo0-s2", "locomo1-s5"];
    let more: Vec<Message> = rewritten
        .iter()
        .map(|c| appended(&messages, c, 0))
        .collect();
    common::store_messages(&data, &more);
    let p = push_no_redact(&data, &db);
    assert_eq!(p["conversations_sent"], 2, "{p}");
    // The push compacted the terms mostly in the rewritten conversations, not the
    // common ones (a small share of theirs is dead).
    let auto = &p["compacted"];
    assert!(auto["terms_compacted"].as_u64().unwrap() > 0, "{p}");
    let before = dead(&db);
    assert!(before > 0, "no dead postings left by the rewrite");
    let status = json_of(&data, Some(&db.url), &["--json", "archive", "status"]);
    assert_eq!(status["dead_postings"], before, "{status}");
    let rows_before = postings_rows(&db).len();
    let questions: Vec<String> = questions.into_iter().step_by(4).take(40).collect();
    let answers = keyword_answers(&db, &questions);
    assert!(answers.iter().map(Vec::len).sum::<usize>() > 500);

    let c = json_of(&data, Some(&db.url), &["--json", "archive", "compact"]);
    println!("compact: {c}");
    assert_compact(&db);
    assert_eq!(dead(&db), 0);
    let after = postings_rows(&db).len();
    assert!(after < rows_before, "{after} rows of {rows_before}");
    let n = |k: &str| c[k].as_u64().unwrap();
    assert_eq!(
        n("postings_before") - n("postings_after"),
        before as u64,
        "{c}"
    );
    assert_eq!(n("bytes_before") - n("bytes_after"), 10 * before as u64);
    assert_eq!(n("rows_after"), n("terms_compacted"), "{c}");
    assert!(
        keyword_answers(&db, &questions) == answers,
        "the keyword leg answers otherwise after compaction"
    );
    let status = json_of(&data, Some(&db.url), &["--json", "archive", "status"]);
    assert_eq!(status["dead_postings"], 0, "{status}");
    assert_eq!(status["postings_rows"], after, "{status}");

    // Nothing left to do; the text form says what it did.
    let again = json_of(&data, Some(&db.url), &["--json", "archive", "compact"]);
    assert_eq!(again["terms_compacted"], 0, "{again}");
    let (ok, out, err) = run(&data, Some(&db.url), &["archive", "compact"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("compacted "), "{out}");
    assert!(out.contains(": 0 terms,"), "{out}");
}

#[test]
fn pushes_that_rewrite_every_conversation_keep_the_table_compact() {
    let Some((db, messages, _)) = setup(1) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    common::store_messages(&data, &messages);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    push_no_redact(&data, &db);
    let conversations: BTreeSet<String> =
        messages.iter().map(|m| m.conversation_id.clone()).collect();
    let mut all = messages.clone();
    let mut sizes = Vec::new();
    for round in 0..4 {
        // Every conversation one turn longer: each push rewrites all of them, so
        // most terms it writes have half their postings dead (the new turn's words,
        // in every conversation, less).
        let p = rewrite_push(&data, &db, &mut all, &conversations, round);
        assert_eq!(p["conversations_sent"], conversations.len(), "{p}");
        assert!(
            p["compacted"]["terms_compacted"].as_u64().unwrap() > 0,
            "{p}"
        );
        let (postings, live) = assert_bounded(&db, true);
        println!(
            "round {round}: {postings} postings, {live} live, {}",
            p["compacted"]
        );
        sizes.push((postings, live));
    }
    // Without compaction the table would hold one copy per push (5 of each live
    // posting); with it, at most a third more than the live ones.
    for (postings, live) in sizes {
        assert!(postings * 2 < live * 3, "{postings} postings, {live} live");
    }
}

/// Asserts that each live posting is held exactly once and, with `share`, what the
/// compaction at the end of a push guarantees for the terms it wrote (here every
/// term): a term with more than one row has less than a third of its postings dead.
/// Returns (postings held, live postings).
fn assert_bounded(db: &Db, share: bool) -> (usize, usize) {
    let mut held: BTreeMap<String, (usize, Vec<Posting>)> = BTreeMap::new();
    for (term, p) in postings_rows(db) {
        let h = held.entry(term).or_default();
        h.0 += 1;
        h.1.extend(p);
    }
    let live = live_postings(db);
    let (mut total, mut alive) = (0, 0);
    for (term, (rows, mut p)) in held {
        let l = live.get(&term).map_or(&[][..], Vec::as_slice);
        total += p.len();
        alive += l.len();
        let dead = p.len() - l.len();
        assert!(
            rows <= skills::archive::compact::MAX_ROWS as usize,
            "{term}: {rows} rows"
        );
        assert!(
            !share || rows == 1 || dead * 3 < p.len(),
            "{term}: {rows} rows, {dead} of {} postings dead",
            p.len()
        );
        let n = p.len();
        p.sort_unstable();
        p.dedup_by_key(|x| x.0);
        assert_eq!(p.len(), n, "{term}: an id twice");
        assert!(
            l.iter().all(|x| p.binary_search(x).is_ok()),
            "{term}: a live posting missing"
        );
    }
    assert_eq!(
        alive,
        live.values().map(Vec::len).sum::<usize>(),
        "a live term without postings"
    );
    (total, alive)
}

/// Two connections compact everything in a loop while six pushes rewrite every
/// conversation and a third reads, per term, its postings and its live messages in one
/// snapshot (as a search reads). A compaction that deleted by term instead of by the
/// rows' `ctid` (a push's row committed between its read and its delete lost) failed
/// this twice in two runs ("message … posted 0 times").
#[test]
fn compactions_beside_pushes_and_searches_lose_and_double_nothing() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let Some((db, messages, _)) = setup(1) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    common::store_messages(&data, &messages);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    push_no_redact(&data, &db);
    // The most frequent terms (in every push's batch) and a rare one.
    let terms: Vec<String> = db
        .client()
        .query(
            "SELECT t FROM skills_archive.message_terms, unnest(terms) t
             GROUP BY t ORDER BY count(*) DESC, t LIMIT 12",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .chain(["potteri".to_owned()])
        .collect();
    let conversations: BTreeSet<String> =
        messages.iter().map(|m| m.conversation_id.clone()).collect();
    let target = skills::archive::Target::parse(&db.url).unwrap();
    let stop = AtomicBool::new(false);
    let (compactions, checks) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut a = skills::archive::Archive::open(&target).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    skills::archive::compact::compact(&mut a, skills::archive::compact::Scope::All)
                        .unwrap();
                    compactions.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        s.spawn(|| {
            // What a search reads, one statement (one snapshot) beside the rows of
            // that snapshot: every live message's posting exactly once.
            let mut c = db.client();
            while !stop.load(Ordering::Relaxed) {
                for term in &terms {
                    let r = c
                        .query_one(
                            "SELECT ARRAY(SELECT postings FROM skills_archive.keyword_postings
                                          WHERE term = $1),
                                    ARRAY(SELECT id FROM skills_archive.message_terms
                                          WHERE $1 = ANY(terms))",
                            &[term],
                        )
                        .unwrap();
                    let rows: Vec<Vec<u8>> = r.get(0);
                    let live: Vec<i64> = r.get(1);
                    let mut held: BTreeMap<u32, usize> = BTreeMap::new();
                    for p in rows.iter().flat_map(|r| r.chunks_exact(10)) {
                        *held
                            .entry(u32::from_be_bytes([p[0], p[1], p[2], p[3]]))
                            .or_default() += 1;
                    }
                    for id in live {
                        let n = held.get(&u32::try_from(id).unwrap()).copied().unwrap_or(0);
                        assert_eq!(n, 1, "{term}: message {id} posted {n} times");
                    }
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let mut all = messages.clone();
        for round in 0..6 {
            let p = rewrite_push(&data, &db, &mut all, &conversations, round);
            assert_eq!(p["notes"], serde_json::json!([]), "{p}");
        }
        stop.store(true, Ordering::Relaxed);
    });
    let (compactions, checks) = (compactions.into_inner(), checks.into_inner());
    println!("{compactions} compactions and {checks} checks beside 6 pushes");
    assert!(compactions > 2 && checks > 10, "{compactions} {checks}");
    assert_bounded(&db, false);
    json_of(&data, Some(&db.url), &["--json", "archive", "compact"]);
    assert_compact(&db);
}
