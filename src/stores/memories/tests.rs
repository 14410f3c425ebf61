use chrono::{DateTime, Utc};

use super::*;
use std::collections::HashMap;

use crate::search::vectors::normalized;

fn sample(id: &str, body: &str) -> Memory {
    let t = DateTime::parse_from_rfc3339("2026-07-01T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    Memory {
        id: id.into(),
        title: "Decisión".into(),
        kind: "decision".into(),
        tags: vec!["db".into()],
        created: t,
        updated: t,
        body: body.into(),
        files_read: vec!["src/main.rs".into()],
        files_modified: vec![],
        origin: None,
    }
}

#[test]
fn two_writers_on_one_file_both_commit_every_save() {
    // Two processes saving at once (a server and `skills memo add`): each write
    // reads before it writes, so a deferred transaction's lock upgrade failed at
    // once with "database is locked"; BEGIN IMMEDIATE waits for the other writer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.sqlite");
    drop(MemoryStore::open_rw(&path).unwrap());
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = MemoryStore::open_rw(&path).unwrap();
                for i in 0..200 {
                    let m = sample(&format!("{who}{i}"), &format!("body {who} {i}"));
                    store.save(&m, &[], None).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(MemoryStore::open_ro(&path).unwrap().count().unwrap(), 400);
}

#[test]
fn upsert_is_idempotent_and_updates() {
    let store = MemoryStore::open_in_memory().unwrap();
    assert_eq!(store.upsert(&sample("a", "one")).unwrap(), Upsert::Inserted);
    assert_eq!(
        store.upsert(&sample("a", "one")).unwrap(),
        Upsert::Unchanged
    );
    assert_eq!(store.upsert(&sample("a", "two")).unwrap(), Upsert::Updated);
    assert_eq!(store.count().unwrap(), 1);
    let fts: i64 = store
        .lock()
        .query_row(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'two'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(fts, 1);
    let fold: i64 = store
        .lock()
        .query_row(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'decision'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(fold, 1, "accents fold");
    assert_eq!(
        store.get("a").unwrap().unwrap().files_read,
        vec!["src/main.rs".to_string()]
    );
}

#[test]
fn embeddings_roundtrip_normalised() {
    let store = MemoryStore::open_in_memory().unwrap();
    store.upsert(&sample("a", "one")).unwrap();
    assert!(store.set_embedding("a", &[3.0, 4.0], "m").unwrap());
    assert!(!store.set_embedding("zz", &[1.0], "m").unwrap());
    assert_eq!(store.count_embedded("m").unwrap(), 1);
    assert!(store.missing_embeddings("m").unwrap().is_empty());
    assert_eq!(store.missing_embeddings("other").unwrap().len(), 1);
    let blob: Vec<u8> = store
        .lock()
        .query_row("SELECT embedding FROM memories", [], |r| r.get(0))
        .unwrap();
    assert_eq!(decode_vector(&blob), vec![0.6, 0.8]);
}

/// A deterministic pseudo-random vector (xorshift).
fn noise(seed: u64, dim: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..dim)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

#[test]
fn top_dots_prune_and_keep_the_exact_top_n() {
    let store = MemoryStore::open_in_memory().unwrap();
    let dim = 256;
    for i in 0..3000 {
        let id = format!("m{i}");
        store.upsert(&sample(&id, &format!("body {i}"))).unwrap();
        store.set_embedding(&id, &noise(i, dim), "m").unwrap();
    }
    let conn = store.lock();
    let index = store.search_index(&conn, Some(("m", dim))).unwrap();
    let q = normalized(&noise(99_999, dim));
    for keep_every in [1, 3] {
        let keep = |i: usize| i.is_multiple_of(keep_every);
        let mut all = Vec::new();
        index.for_each_dot(&q, keep, |i, d| all.push((d, i)));
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for n in [1, 5, 20, 100] {
            let mut got = Vec::new();
            let kept = index.for_each_top_dot(&q, n, keep, |i, d| got.push((d, i)));
            assert_eq!(kept, all.len());
            assert!(
                got.len() < all.len() / 2,
                "no pruning: {} of {}",
                got.len(),
                all.len()
            );
            got.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let bits =
                |v: &[(f32, usize)]| v.iter().map(|(d, i)| (d.to_bits(), *i)).collect::<Vec<_>>();
            assert_eq!(
                bits(&got[..n]),
                bits(&all[..n]),
                "n {n}, every {keep_every}"
            );
        }
    }
}

/// Memories of several chunks: the pruned pass ranks the `n` best memories by their
/// best chunk exactly as scoring every chunk does, and computes few chunks.
#[test]
fn top_dots_rank_memories_by_their_best_chunk() {
    let store = MemoryStore::open_in_memory().unwrap();
    let dim = 64;
    let mut items = Vec::new();
    for i in 0..2000u64 {
        let id = format!("m{i}");
        store.upsert(&sample(&id, &format!("body {i}"))).unwrap();
        // Every fourth memory has 1 + i % 7 chunks: many second chunks in all.
        let chunks = if i % 4 == 0 { 1 + (i % 7) as usize } else { 1 };
        let vectors = (0..chunks).map(|c| noise(i * 10 + c as u64, dim)).collect();
        items.push((id, vectors));
    }
    store.set_embeddings(&items, "m").unwrap();
    let conn = store.lock();
    let index = store.search_index(&conn, Some(("m", dim))).unwrap();
    assert!(index.chunk_vectors() > index.embedded() + 1000);
    let best_per_row = |pairs: Vec<(usize, f32)>| {
        let mut best: HashMap<usize, f32> = HashMap::new();
        for (i, d) in pairs {
            let b = best.entry(i).or_insert(d);
            if d > *b {
                *b = d;
            }
        }
        let mut v: Vec<(f32, usize)> = best.into_iter().map(|(i, d)| (d, i)).collect();
        v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        v.into_iter()
            .map(|(d, i)| (d.to_bits(), i))
            .collect::<Vec<_>>()
    };
    for seed in [7, 99_999, 123_456] {
        let q = normalized(&noise(seed, dim));
        for keep_every in [1, 3] {
            let keep = |i: usize| i.is_multiple_of(keep_every);
            let mut all = Vec::new();
            index.for_each_dot(&q, keep, |i, d| all.push((i, d)));
            let total = all.len();
            let all = best_per_row(all);
            for n in [1, 10, 40] {
                let mut got = Vec::new();
                let kept = index.for_each_top_dot(&q, n, keep, |i, d| got.push((i, d)));
                assert_eq!(kept, total);
                assert!(
                    got.len() < total / 4,
                    "no pruning: {} of {total}",
                    got.len()
                );
                let got = best_per_row(got);
                assert_eq!(got[..n], all[..n], "seed {seed}, n {n}, every {keep_every}");
            }
        }
    }
}

/// Everything a search reads of an index, for comparing a refreshed index with a
/// whole reload: rows, superseded flags, every chunk's dot product with a query,
/// the filter columns and the FTS5 postings.
fn snapshot(store: &MemoryStore, dim: usize) -> (usize, String) {
    let conn = store.lock();
    let index = store.search_index(&conn, Some(("m", dim))).unwrap();
    let q = normalized(&noise(4242, dim));
    let mut dots = Vec::new();
    index.for_each_dot(&q, |_| true, |i, d| dots.push((i, d.to_bits())));
    dots.sort_unstable();
    let fts = index.fts(&conn).unwrap().map(|f| format!("{f:?}"));
    let state = format!(
        "{:?}\n{:?}\n{dots:?}\n{:?}\n{fts:?}\n{} {}",
        index.rows(),
        (0..index.rows().len())
            .map(|i| index.is_superseded(i))
            .collect::<Vec<_>>(),
        index.filter_columns(),
        index.embedded(),
        index.superseded_rows(),
    );
    (Arc::as_ptr(&index) as usize, state)
}

/// New memories saved by another connection are appended to a reader's index in
/// place, and the result is what a fresh reader loads; an updated memory makes the
/// reader load whole (a new index), with the same agreement.
#[test]
fn refresh_after_saves_equals_a_whole_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.sqlite");
    let dim = 16;
    let writer = MemoryStore::open_rw(&path).unwrap();
    let memory = |i: u64| {
        let mut m = sample(
            &format!("m{i}"),
            &format!("body {i} tokio serde w{}", i % 13),
        );
        m.kind = ["decision", "fact", "bug"][(i % 3) as usize].into();
        m.updated += chrono::Duration::seconds((i % 17) as i64);
        m.files_modified = vec![format!("src/f{}.rs", i % 5)];
        m
    };
    let chunks = |i: u64| {
        (0..1 + i % 3)
            .map(|c| noise(i * 7 + c, dim))
            .collect::<Vec<_>>()
    };
    for i in 0..200 {
        writer
            .save(&memory(i), &[], Some((&chunks(i), "m")))
            .unwrap();
    }
    let reader = MemoryStore::open_ro(&path).unwrap();
    let (first, _) = snapshot(&reader, dim);
    // memo-save's writes: new memories with vectors, one superseding an older one,
    // one with a new word and a new type.
    for i in 200..205 {
        writer
            .save(&memory(i), &[], Some((&chunks(i), "m")))
            .unwrap();
    }
    let mut odd = memory(205);
    odd.kind = "preference".into();
    odd.body = "zanzibar quokka".into();
    writer
        .save(
            &odd,
            &[(REL_SUPERSEDES, "m3".into())],
            Some((&chunks(205), "m")),
        )
        .unwrap();
    let (refreshed, state) = snapshot(&reader, dim);
    assert_eq!(refreshed, first, "the held index is refreshed in place");
    let (_, fresh) = snapshot(&MemoryStore::open_ro(&path).unwrap(), dim);
    assert_eq!(state, fresh);
    assert!(state.contains("\"preference\"") && state.contains("Some(\"FtsIndex {"));

    // An update of a held row: a whole reload, equal to a fresh reader's.
    let mut changed = memory(7);
    changed.tags = vec!["other".into()];
    writer.save(&changed, &[], Some((&chunks(7), "m"))).unwrap();
    let (reloaded, state) = snapshot(&reader, dim);
    assert_ne!(reloaded, first, "an update reloads");
    let (_, fresh) = snapshot(&MemoryStore::open_ro(&path).unwrap(), dim);
    assert_eq!(state, fresh);

    // A reader whose index is older than the kept change log reloads too.
    let (before, _) = snapshot(&reader, dim);
    let many: Vec<Memory> = (300..300 + CHANGE_LOG_KEEP as u64).map(memory).collect();
    writer.upsert_many(&many).unwrap();
    let (after, state) = snapshot(&reader, dim);
    assert_ne!(after, before);
    let (_, fresh) = snapshot(&MemoryStore::open_ro(&path).unwrap(), dim);
    assert_eq!(state, fresh);
}

#[test]
fn open_ro_missing_file() {
    let err = MemoryStore::open_ro(Path::new("/nonexistent/memories.sqlite")).unwrap_err();
    assert!(matches!(
        err,
        StoreError::Missing {
            store: crate::stores::Store::Memories,
            ..
        }
    ));
}

#[test]
fn a_store_from_before_the_stemmed_table_gets_it_whole_on_its_next_writable_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.sqlite");
    let count = |store: &MemoryStore, sql: &str| -> i64 {
        store.lock().query_row(sql, [], |r| r.get(0)).unwrap()
    };
    {
        let store = MemoryStore::open_rw(&path).unwrap();
        store.upsert(&sample("a", "painting the fence")).unwrap();
        store.upsert(&sample("b", "she paints on Sundays")).unwrap();
        // What a store written by an earlier version looks like.
        store
            .lock()
            .execute_batch("DROP TABLE memories_stem")
            .unwrap();
    }
    {
        // Read-only: the table stays missing, and readers fall back to the plain one.
        let ro = MemoryStore::open_ro(&path).unwrap();
        let conn = ro.lock();
        assert!(!fts::has_table(&conn, fts::Table::Stemmed).unwrap());
        let index = ro.search_index(&conn, None).unwrap();
        assert!(index.fts_of(&conn, fts::Table::Stemmed).unwrap().is_none());
        assert!(index.fts_of(&conn, fts::Table::Plain).unwrap().is_some());
    }
    let store = MemoryStore::open_rw(&path).unwrap();
    assert_eq!(count(&store, "SELECT count(*) FROM memories_stem"), 2);
    // "paint" finds both through their stems; the plain table only "paints" itself.
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM memories_stem WHERE memories_stem MATCH 'paint'"
        ),
        2
    );
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'paint'"
        ),
        0
    );
    // Later writes keep both tables in step.
    store.upsert(&sample("b", "no longer")).unwrap();
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM memories_stem WHERE memories_stem MATCH 'paint'"
        ),
        1
    );
}

/// A read-only store open across the upgrade (a server while `skills memo add` opens
/// the file writable): its snapshot says the stemmed table is missing, then, once
/// the writable open has created and filled it, the next snapshot has it and its
/// postings; the same holds when the snapshot is refreshed in place after a save.
#[test]
fn a_read_only_store_sees_the_stemmed_table_once_another_open_upgrades_the_file() {
    for save_after in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memories.sqlite");
        {
            let store = MemoryStore::open_rw(&path).unwrap();
            store.upsert(&sample("a", "painting the fence")).unwrap();
            store.upsert(&sample("b", "she paints on Sundays")).unwrap();
            store
                .lock()
                .execute_batch("DROP TABLE memories_stem")
                .unwrap();
        }
        let ro = MemoryStore::open_ro(&path).unwrap();
        {
            let conn = ro.lock();
            let index = ro.search_index(&conn, None).unwrap();
            assert!(!index.has_table(fts::Table::Stemmed));
            assert!(index.has_table(fts::Table::Plain));
            assert!(index.fts_of(&conn, fts::Table::Stemmed).unwrap().is_none());
        }
        let rw = MemoryStore::open_rw(&path).unwrap();
        if save_after {
            rw.upsert(&sample("c", "he painted it red")).unwrap();
        }
        let conn = ro.lock();
        let index = ro.search_index(&conn, None).unwrap();
        assert!(
            index.has_table(fts::Table::Stemmed),
            "save_after={save_after}"
        );
        let stemmed = index.fts_of(&conn, fts::Table::Stemmed).unwrap();
        assert_eq!(
            stemmed.map(crate::search::bm25::FtsIndex::rows),
            Some(if save_after { 3 } else { 2 }),
            "save_after={save_after}"
        );
    }
}

/// A writer from before `memories_stem` (rows in `memories` and `memories_fts` only)
/// leaves the tables out of step; the next writable open fills the stemmed table
/// again from the plain one.
#[test]
fn rows_written_without_the_stemmed_table_are_filled_on_the_next_writable_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.sqlite");
    let stemmed = |store: &MemoryStore, word: &str| -> i64 {
        store
            .lock()
            .query_row(
                "SELECT count(*) FROM memories_stem WHERE memories_stem MATCH ?1",
                [word],
                |r| r.get(0),
            )
            .unwrap()
    };
    {
        let store = MemoryStore::open_rw(&path).unwrap();
        store.upsert(&sample("a", "painting the fence")).unwrap();
        let conn = store.lock();
        // What `upsert` wrote before the stemmed table existed.
        conn.execute_batch(
            "INSERT INTO memories(id, title, type, tags, created, updated, body, files_read, \
             files_modified, content_hash) VALUES ('b', 'b', 'fact', '[]', \
             '2026-07-01T10:00:00Z', '2026-07-01T10:00:00Z', 'she paints on Sundays', '[]', \
             '[]', 'h'); \
             INSERT INTO memories_fts(rowid, title, tags, body) \
             SELECT rowid, title, '', body FROM memories WHERE id = 'b';",
        )
        .unwrap();
    }
    {
        let ro = MemoryStore::open_ro(&path).unwrap();
        assert_eq!(stemmed(&ro, "paint"), 1);
    }
    let store = MemoryStore::open_rw(&path).unwrap();
    assert_eq!(stemmed(&store, "paint"), 2);
    assert_eq!(
        store
            .lock()
            .query_row("SELECT count(*) FROM memories_stem_docsize", [], |r| r
                .get::<_, i64>(0))
            .unwrap(),
        2
    );
}
