//! The conversations search index answers exactly as DuckDB: the engine is run both
//! ways (index on, index off) on generated stores with Unicode traps, on the whole
//! real corpus, after appends, rewrites and merges; `fold` is compared with DuckDB's
//! `lower()` over every code point; stale and damaged indexes fall back to DuckDB.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::engines::search_conversations::SearchConversations;
use skills::engines::{Context, Engine};
use skills::model::Message;
use skills::search::scan::fold;
use skills::stores::conversations::index::segment;
use skills::stores::conversations::index::{self, Index, Unavailable};
use skills::stores::conversations::ConversationStore;
use skills::stores::segments::verify_files;
use skills::stores::StorePaths;

/// Probe terms: wildcards, escapes, case-folding traps, emoji, the questions mode ("").
const TERMS: &[&str] = &[
    "the",
    "serde",
    "async fn",
    "user_id",
    "user%id",
    "persofi",
    gen::ABSENT_TERM,
    "CAFÉ",
    "café",
    "Café",
    "cafe",
    "caf_",
    "caf_s",
    "caf__s",
    "caf%s",
    "İSTANBUL",
    "istanbul",
    "i̇stanbul",
    "ΣΟΦΊΑ",
    "σοφια",
    "σοφία",
    "ς",
    "k",
    "\u{212A}",
    "STRASSE",
    "ß",
    "ǆ",
    "ǅ",
    "ǅemal",
    "file",
    "ﬁ",
    "50%",
    "%",
    "%%",
    "_",
    "__",
    "a_b",
    "a\\_b",
    "back\\slash",
    "\\",
    "😀",
    "🚀 ",
    "_😀",
    "%_%",
    "% off_",
    "e%e%e%e",
    "_x_",
    "",
    "Q",
    "?",
    "```",
    " fn ",
    // Phrases with whole words inside (answered from the rarest one's postings).
    "tokio::spawn(async move",
    ".iter() {",
    "let mut ",
    "(id: u64)",
    "why does the build fail to link",
    " strasse ",
    "and ΣΟΦΙΑ and",
    "and σοφία and",
    "a long one: αβγδ",
    "% ǅemal %",
    "_.iter()_",
    "x an absent-word-zq7 y",
    // Whole words whose stems are other words (postings hold stems: `builds` is
    // looked up as `build`, whose list holds more rows than `builds` matches).
    "the builds failed ",
    " running tests ",
    " errors in ",
];

const TRICKY: &[&str] = &[
    "Un CAFÉ au lait", "café crème", "CAFE without accent", "cafés en terrasse",
    "İstanbul and istanbul", "ΣΟΦΙΑ and σοφία and Σοφίας", "Kelvin 5\u{212A}",
    "Straße STRASSE", "ǅemal", "50% off_sale", "a_b and a-b", "back\\slash", "user_id = 1",
    "ﬁle ligature", "emoji 😀 and 🚀", "x", "Is this a QUESTION?",
    "A long one: ΑΒΓΔ ÀÉÎÕÜ \u{212A}\u{212B} İİİ ǅǈǋ ＡＢＣ 𐐀𐐁 and then more text past two hundred characters \
     so that the preview cut lands after the exceptions: ÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉÉ",
];

fn context(dir: &Path, index: bool) -> Context {
    Context::new(StorePaths::in_dir(dir)).with_search_index(index)
}

fn call(ctx: &Context, term: &str, role: Option<&str>, limit: i64) -> Value {
    SearchConversations
        .call(&json!({"term": term, "role": role, "limit": limit}), ctx)
        .unwrap()
}

/// Every term × role × limit gives the same output both ways; returns how many
/// calls were compared. Fails when the index is not in use.
fn assert_same(dir: &Path, what: &str) -> usize {
    assert_same_on(dir, what, TERMS)
}

/// A shorter probe list for the repeated rounds: every kind of pattern once.
const SOME_TERMS: &[&str] = &[
    "the", "persofi", "CAFÉ", "caf_s", "e%e%e%e", "%", "ς", "\u{212A}", "", "?", "zqxjvkw",
];

fn assert_same_on(dir: &Path, what: &str, terms: &[&str]) -> usize {
    let db = StorePaths::in_dir(dir).conversations;
    let ix = Index::open(&db).unwrap_or_else(|e| panic!("{what}: index not usable: {e}"));
    // The stamp, key hashes included, is the table's.
    let conn = duckdb::Connection::open_with_flags(
        &db,
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        ix.manifest().stamp,
        index::Stamp::of_table(&conn).unwrap(),
        "{what}: stamp"
    );
    drop(conn);
    let (fast, slow) = (context(dir, true), context(dir, false));
    let mut mismatches = Vec::new();
    let mut n = 0;
    for term in terms {
        for role in [None, Some("user"), Some("assistant")] {
            for limit in [1, 15, 500] {
                let (a, b) = (
                    call(&fast, term, role, limit),
                    call(&slow, term, role, limit),
                );
                n += 1;
                if a != b {
                    mismatches.push(format!(
                        "{term:?} {role:?} {limit}: index {} rows, duckdb {} rows\n index {}\n duckdb {}",
                        a["count"], b["count"], a["rows"].get(0).unwrap_or(&Value::Null), b["rows"].get(0).unwrap_or(&Value::Null)
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{what}: {} mismatches\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(5)].join("\n")
    );
    n
}

fn tricky_rows(prefix: &str, at: &str) -> Vec<Message> {
    let template = gen::Generator::new(Spec::new(2)).next().unwrap()[0].clone();
    TRICKY
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut m = template.clone();
            m.conversation_id = format!("{prefix}-{}", i % 3);
            m.message_id = format!("m-{i}");
            m.content = (*t).to_owned();
            m.timestamp = chrono::DateTime::parse_from_rfc3339(at).unwrap().into();
            m.role = if i % 2 == 0 { "user" } else { "assistant" }.to_owned();
            m.is_injected = i % 5 == 4;
            m
        })
        .collect()
}

fn open(dir: &Path) -> ConversationStore {
    ConversationStore::open_rw(&StorePaths::in_dir(dir).conversations).unwrap()
}

/// A store in a temporary folder holding `messages` generated messages (inserted 500
/// at a time) and closed, its search index built: the folder and the store's file.
fn generated(messages: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    gen::fill_store(&store, Spec::new(messages), 500).unwrap();
    let report = store.close().unwrap();
    assert!(report.is_some(), "no search index was built");
    let db = StorePaths::in_dir(tmp.path()).conversations;
    (tmp, db)
}

#[test]
fn index_answers_as_duckdb_after_builds_appends_and_merges() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let store = open(dir);
    gen::fill_store(&store, Spec::new(3_000), 1_000).unwrap();
    // Same `created` for many rows, two sources sharing ids: the tie-break decides.
    store
        .insert(&tricky_rows("tricky", "2026-06-01T00:00:00Z"))
        .unwrap();
    let mut twin = tricky_rows("tricky", "2026-06-01T00:00:00Z");
    for m in &mut twin {
        m.source = "aaa-twin".into();
    }
    store.insert(&twin).unwrap();
    let report = store.close().unwrap().unwrap();
    assert!(report.rebuilt, "{report:?}");
    let calls = assert_same(dir, "fresh build");
    assert_eq!(calls, TERMS.len() * 9);

    // Appends: new conversations, rows added to stored ones, older than the newest
    // rows and newer; then enough rounds to merge tiers.
    for round in 0..6 {
        let store = open(dir);
        let spec = Spec {
            messages: 40,
            seed: 100 + round,
        };
        gen::fill_store(&store, spec, 10).unwrap();
        let mut more = tricky_rows("tricky", &format!("2025-0{}-15T10:00:00Z", round + 1));
        for m in &mut more {
            m.message_id = format!("r{round}-{}", m.message_id);
        }
        store.insert(&more).unwrap();
        let report = store.close().unwrap().unwrap();
        assert!(!report.rebuilt, "round {round}: {report:?}");
        assert_same_on(dir, &format!("append round {round}"), SOME_TERMS);
    }
    let m = index::Manifest::read(&index::dir_of(&StorePaths::in_dir(dir).conversations)).unwrap();
    assert!(
        m.segments.len() < 7,
        "tiers were merged: {} segments",
        m.segments.len()
    );
    assert!(m.segments.iter().any(|s| s.tombstones.is_some()) || m.segments.len() < 7);

    // A write without close leaves the index stale: answers still equal, from DuckDB.
    let store = open(dir);
    store
        .insert(&tricky_rows("late", "2027-01-01T00:00:00Z"))
        .unwrap();
    drop(store);
    let db = StorePaths::in_dir(dir).conversations;
    assert_eq!(Index::open(&db).unwrap_err(), Unavailable::Stale);
    let (fast, slow) = (context(dir, true), context(dir, false));
    assert_eq!(
        call(&fast, "café", None, 500),
        call(&slow, "café", None, 500)
    );
    // The next writable close rebuilds it.
    let report = open(dir).close().unwrap().unwrap();
    assert!(report.rebuilt);
    assert_same(dir, "rebuilt after a stale index");
}

/// An index written before stemming (segment format 3: postings of words as written,
/// which stemmed lookups would miss) is not read for BM25 nor for the postings
/// prefilter, still answers as DuckDB does, and the next writable close rewrites it in
/// the current format.
#[test]
fn an_index_from_before_stemming_is_not_read_for_postings_and_is_rewritten() {
    let (tmp, db) = generated(2_000);
    let dir = tmp.path();
    let mut patched = 0;
    for e in std::fs::read_dir(index::dir_of(&db)).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "seg") {
            let mut b = std::fs::read(&p).unwrap();
            let version = u32::from_le_bytes(b[8..12].try_into().unwrap());
            assert_eq!(version, segment::VERSION);
            b[8..12].copy_from_slice(&segment::VERSION_3.to_le_bytes());
            std::fs::write(&p, b).unwrap();
            patched += 1;
        }
    }
    assert!(patched > 0);
    let ix = Index::open(&db).unwrap();
    assert!(ix.has_projects() && !ix.has_postings());
    drop(ix);
    assert_same(dir, "format 3 segments");

    let report = open(dir).close().unwrap().unwrap();
    let ix = Index::open(&db).unwrap();
    assert!(ix.has_postings(), "not rewritten: {report:?}");
    drop(ix);
    assert_same(dir, "rewritten in the current format");
}

#[test]
fn index_answers_as_duckdb_on_the_real_corpus_with_rewrites() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    // Copy the corpus so files can be rewritten.
    let src = dir.join("src");
    copy_tree(&corpus, &src);
    let store = open(&data);
    skills::ingest::ingest_paths(&store, std::slice::from_ref(&src), &mut |_, _| {});
    store.close().unwrap();
    assert_same(&data, "whole corpus");
    // Rewrite a whole-document export and append to an append-only log.
    let chatgpt = Some(src.join("chatgpt-export/chatgpt-export-converter-win__conversations.json"))
        .filter(|p| p.is_file());
    let rewritten = chatgpt.is_some();
    if let Some(p) = chatgpt {
        let text = std::fs::read_to_string(&p).unwrap();
        // A changed message: the conversation is replaced, its old text must not match.
        let changed = match text.find("\"parts\": [") {
            Some(i) => {
                let at = i + "\"parts\": [".len();
                let q = text[at..].find('"').map_or(at, |j| at + j + 1);
                format!("{}REWRITTEN persofi {}", &text[..q], &text[q..])
            }
            None => text.clone(),
        };
        assert_ne!(changed, text, "{}: no message text to change", p.display());
        std::fs::write(&p, changed).unwrap();
    }
    let jsonl = walk(&src.join("claude-code"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"));
    if let Some(p) = jsonl {
        let line = json!({"type": "user", "uuid": "appended-1", "sessionId": "s-appended",
            "timestamp": "2027-02-02T00:00:00Z",
            "message": {"role": "user", "content": "An appended CAFÉ question about serde?"}});
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str(&format!("{line}\n"));
        std::fs::write(&p, text).unwrap();
    }
    let store = open(&data);
    skills::ingest::ingest_paths(&store, &[src], &mut |_, _| {});
    let report = store.close().unwrap().unwrap();
    assert!(!report.rebuilt, "{report:?}");
    assert_same(&data, "corpus after a rewrite and an append");
    let fast = context(&data, true);
    assert!(call(&fast, "appended café question", None, 15)["count"] == 1);
    if rewritten {
        assert!(call(&fast, "rewritten PERSOFI", None, 15)["count"].as_u64() >= Some(1));
    }
}

#[test]
fn damaged_or_foreign_indexes_fall_back_to_duckdb() {
    let (tmp, db) = generated(500);
    let dir = tmp.path();
    let ixdir = index::dir_of(&db);
    let m = index::Manifest::read(&ixdir).unwrap();
    let seg = ixdir.join(&m.segments[0].file);
    let slow = call(&context(dir, false), "the", None, 15);
    // Overwrite bytes in the text region, the header, then truncate: never a panic, and
    // the answer is DuckDB's whenever the damage is detectable.
    let original = std::fs::read(&seg).unwrap();
    let mut bad = original.clone();
    bad[0] = b'X';
    std::fs::write(&seg, &bad).unwrap();
    assert!(matches!(Index::open(&db), Err(Unavailable::Corrupt(_))));
    assert_eq!(call(&context(dir, true), "the", None, 15), slow);
    std::fs::write(&seg, &original[..original.len() / 2]).unwrap();
    assert!(matches!(Index::open(&db), Err(Unavailable::Corrupt(_))));
    assert_eq!(call(&context(dir, true), "the", None, 15), slow);
    // Garbage in the offsets (header intact): searching must not panic.
    let mut bad = original.clone();
    let mid = bad.len() / 3;
    for b in &mut bad[mid..mid + 4096] {
        *b = 0xFF;
    }
    std::fs::write(&seg, &bad).unwrap();
    if let Ok(ix) = Index::open(&db) {
        for t in ["the", "%", "_", ""] {
            let _ = ix.search(&index::Query {
                term: Some(t),
                role: None,
                exclude_injected: true,
                limit: 500,
                stop: &skills::cancel::Cancel::new(),
            });
        }
    }
    std::fs::write(ixdir.join(index::MANIFEST), b"{not json").unwrap();
    assert!(matches!(Index::open(&db), Err(Unavailable::Corrupt(_))));
    assert_eq!(call(&context(dir, true), "the", None, 15), slow);
    // And the next ingest rebuilds it.
    let report = open(dir).close().unwrap().unwrap();
    assert!(report.rebuilt);
    assert_same(dir, "rebuilt after damage");
}

/// A byte changed in the text region leaves a segment its readers still open (the
/// structure is intact) but whose rows are wrong: the byte-for-byte check names the
/// file, the next writable open rebuilds the index for that reason, and searches
/// then equal DuckDB's again. A file grown by one byte is refused by readers.
#[test]
fn a_changed_byte_is_caught_by_the_crc_and_the_next_write_rebuilds() {
    let (tmp, db) = generated(500);
    let dir = tmp.path();
    let ixdir = index::dir_of(&db);
    let m = index::Manifest::read(&ixdir).unwrap();
    assert_eq!(verify_files::<index::IndexKind>(&ixdir, &m, true), Ok(()));
    let seg = ixdir.join(&m.segments[0].file);
    let original = std::fs::read(&seg).unwrap();
    let mut bad = original.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0x01;
    std::fs::write(&seg, &bad).unwrap();
    let why = verify_files::<index::IndexKind>(&ixdir, &m, true)
        .unwrap_err()
        .to_string();
    assert!(
        why.contains(&m.segments[0].file) && why.contains("CRC-32"),
        "{why}"
    );
    let report = open(dir).close().unwrap().unwrap();
    assert!(report.rebuilt, "{report:?}");
    assert!(
        report.reason.as_deref().unwrap_or("").contains("CRC-32"),
        "{report:?}"
    );
    assert_same(dir, "rebuilt after a changed byte");

    let m = index::Manifest::read(&ixdir).unwrap();
    let seg = ixdir.join(&m.segments[0].file);
    let mut longer = std::fs::read(&seg).unwrap();
    longer.push(0);
    std::fs::write(&seg, &longer).unwrap();
    match Index::open(&db) {
        Err(Unavailable::Corrupt(why)) => assert!(why.contains("bytes"), "{why}"),
        other => panic!("a grown segment was opened: {other:?}"),
    }
}

/// `fold` equals DuckDB's `lower()` on every Unicode scalar value (checked in chunks;
/// folding maps one code point to one, so a chunk compares position by position).
#[test]
fn fold_matches_duckdb_lower_on_every_code_point() {
    let conn = duckdb::Connection::open_in_memory().unwrap();
    let chars: Vec<char> = (0u32..=0x10FFFF)
        .filter_map(char::from_u32)
        .filter(|c| *c != '\0')
        .collect();
    let mut differing = 0;
    let mut mismatches = Vec::new();
    for chunk in chars.chunks(4096) {
        let s: String = chunk.iter().collect();
        let lower: String = conn
            .query_row("SELECT lower(?)", [&s], |r| r.get(0))
            .unwrap();
        let mut folded = Vec::new();
        fold(&s, &mut folded);
        let folded = String::from_utf8(folded).unwrap();
        differing += chunk
            .iter()
            .filter(|c| skills::search::scan::fold_char(**c) != **c)
            .count();
        if folded != lower {
            for (c, (a, b)) in chunk.iter().zip(folded.chars().zip(lower.chars())) {
                if a != b {
                    mismatches.push(format!("U+{:04X}: fold {:?}, duckdb {:?}", *c as u32, a, b));
                }
            }
            if folded.chars().count() != lower.chars().count() {
                mismatches.push(format!(
                    "chunk at U+{:04X}: lengths differ",
                    chunk[0] as u32
                ));
            }
        }
    }
    assert!(differing > 1000, "{differing} code points fold");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for f in walk(from) {
        let rel = f.strip_prefix(from).unwrap();
        // The benchmark half of LoCoMo is not transcripts; leave it out.
        if rel.starts_with("locomo") {
            continue;
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&f, &dest).unwrap();
    }
}
