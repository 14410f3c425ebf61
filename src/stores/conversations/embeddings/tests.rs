//! Unit tests of the embeddings: units, the segment format, both first passes, and the
//! rewrite of version-1 segments.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::format::{segment_version, Builder, Segment, HEADER, VERSION};
use super::query::top_in;
use super::*;
use crate::cancel::Cancel;
use crate::search::{quantized, vectors};
use crate::stores::segments::{u64_at, Live, StoreStamp, Tombstones};

#[test]
fn windows_cover_every_message_once_or_by_stride() {
    let spec = |window, stride| UnitSpec {
        window,
        stride,
        title: false,
    };
    assert_eq!(spec(1, 1).windows(3), vec![(0, 1), (1, 2), (2, 3)]);
    assert_eq!(spec(3, 2).windows(6), vec![(0, 3), (2, 5), (4, 6)]);
    assert_eq!(spec(3, 2).windows(5), vec![(0, 3), (2, 5)]);
    assert_eq!(spec(4, 4).windows(2), vec![(0, 2)]);
    assert!(spec(3, 2).windows(0).is_empty());
}

#[test]
fn a_segment_round_trips_and_search_finds_the_nearest_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let dim = 8;
    let mut b = Builder::new(dim);
    let c = b.conversation("generic", "conv-1");
    let vecs: Vec<Vec<f32>> = (0..5)
        .map(|i| {
            let mut v = vec![0.1f32; dim];
            v[i] = 1.0;
            vectors::normalized(&v)
        })
        .collect();
    for (i, v) in vecs.iter().enumerate() {
        let mut codes = Vec::new();
        let code = quantized::encode(v, &mut codes).unwrap();
        let id = format!("m{i}");
        b.push(c, &codes, code, &[(id.as_str(), i as i64 * 10, role::USER)]);
    }
    let path = tmp.path().join("00000001.vec");
    b.write(&path).unwrap();
    let seg = Segment::open(&path).unwrap();
    assert_eq!(seg.units, 5);
    assert_eq!(seg.conversation(0).unwrap(), ("generic", "conv-1"));
    assert_eq!(seg.unit_messages(3).unwrap()[0].message_id, "m3");
    let view = seg.view().unwrap();
    let top = top_in(&view, None, &vecs[2], 2, &|_| true, 2);
    assert_eq!(top[0].0, 2);
    let top = top_in(&view, None, &vecs[2], 1, &|u| u != 2, 1);
    assert_ne!(top[0].0, 2);
    // A truncated file is refused, not read past its end.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
    assert!(Segment::open(&path).is_err());
}

/// Deterministic pseudo-random numbers in [0, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        #[allow(clippy::cast_precision_loss)]
        let r = (self.0 >> 11) as f32 / (1u64 << 53) as f32;
        r
    }
}

/// A segment of `units` clustered unit vectors in `convs` conversations, roles
/// and times varying, written in format `version`; returns the opened embeddings
/// and the queries' source vectors.
fn generated(dir: &Path, units: usize, version: u32) -> (Embeddings, Vec<Vec<f32>>) {
    let dim = 128;
    let mut rng = Rng(0x5EED_1234_5678_9ABC);
    let centers: Vec<Vec<f32>> = (0..40)
        .map(|_| (0..dim).map(|_| rng.next() - 0.3).collect())
        .collect();
    let mut b = Builder::new(dim);
    let convs = 50;
    let per = units.div_ceil(convs);
    let mut kept = Vec::new();
    let mut codes = Vec::new();
    for u in 0..units {
        if u % per == 0 {
            b.conversation("generic", &format!("conv-{}", u / per));
        }
        let c = &centers[(rng.next() * 40.0) as usize % 40];
        let v: Vec<f32> = c.iter().map(|x| x + 0.6 * (rng.next() - 0.5)).collect();
        let v = vectors::normalized(&v);
        codes.clear();
        let code = quantized::encode(&v, &mut codes).unwrap();
        let id = format!("m{u}");
        let r = [role::USER, role::ASSISTANT, role::OTHER][u % 3];
        b.push(
            u32::try_from(u / per).unwrap(),
            &codes,
            code,
            &[(id.as_str(), i64::try_from(u).unwrap() * 10, r)],
        );
        if u % 97 == 0 {
            kept.push(v);
        }
    }
    let file = format!("0000000{version}.vec");
    let bytes = b.write_as(&dir.join(&file), version).unwrap();
    let manifest = Manifest {
        version: MANIFEST_VERSION,
        generation: 1,
        next_file: 2,
        kind: VectorMeta {
            model: "test".into(),
            dim: dim as u32,
            unit: UnitSpec::DEFAULT,
            units: units as u64,
        },
        segments: vec![SegmentEntry {
            file: file.clone(),
            kind: VectorEntry {
                units: units as u64,
            },
            live: units as u64,
            bytes,
            tombstones: None,
        }],
        store: StoreStamp::default(),
        content: None,
    };
    let mut dead = vec![0u64; units.div_ceil(64)];
    for u in (0..units).step_by(7) {
        dead[u / 64] |= 1 << (u % 64);
    }
    let seg = Segment::open(&dir.join(&file)).unwrap();
    let e = Embeddings::from_parts(
        manifest,
        vec![Live {
            seg,
            dead: Tombstones::from_words(dead),
        }],
    );
    (e, kept)
}

fn key(h: &UnitHit) -> String {
    h.messages[0].message_id.clone()
}

#[test]
fn the_one_bit_pass_agrees_with_the_exact_pass_under_filters() {
    let tmp = tempfile::tempdir().unwrap();
    let units = 140_000;
    let (e, queries) = generated(tmp.path(), units, VERSION);
    assert!(e.segments()[0].seg.has_bits);
    let stop = Cancel::new();
    let fast = FirstPass::Bits {
        min_units: 0,
        oversample: 20,
        floor: 2000,
    };
    let filters = [
        Filter::default(),
        Filter {
            roles: role::USER,
            ..Filter::default()
        },
        Filter {
            since_us: Some(200_000),
            until_us: Some(900_000),
            ..Filter::default()
        },
        Filter {
            conversation_id: Some("conv-3"),
            roles: role::ASSISTANT,
            ..Filter::default()
        },
    ];
    let n = 15;
    let (mut found, mut wanted) = (0usize, 0usize);
    for (qi, q) in queries.iter().enumerate().take(120) {
        let f = &filters[qi % filters.len()];
        let exact = e
            .search_with(q, n, f, -1.0, 2, &stop, FirstPass::Exact)
            .unwrap();
        let got = e.search_with(q, n, f, -1.0, 2, &stop, fast).unwrap();
        // As many results, every one passing the filters, scored exactly.
        assert_eq!(got.len(), exact.len());
        assert_eq!(exact.len(), n);
        for h in &got {
            let u: usize = h.messages[0].message_id[1..].parse().unwrap();
            assert!(!u.is_multiple_of(7), "a masked unit came back");
            let created = h.messages[0].created_us;
            assert!(f.since_us.is_none_or(|s| created >= s));
            assert!(f.until_us.is_none_or(|s| created < s));
            assert!(f.roles == 0 || role::bit(h.messages[0].role) & f.roles != 0);
            assert!(f.conversation_id.is_none_or(|c| c == h.conversation_id));
            let v = e.segments()[0].seg.vector(u).unwrap();
            let want: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
            assert!((h.score - want).abs() < 1e-5);
        }
        for w in got.windows(2) {
            assert!(w[0].score >= w[1].score);
        }
        let exact_keys: HashSet<String> = exact.iter().map(key).collect();
        found += got.iter().filter(|h| exact_keys.contains(&key(h))).count();
        wanted += exact.len();
    }
    let recall = found as f64 / wanted as f64;
    assert!(recall >= 0.99, "recall@15 of the 1-bit pass: {recall}");
    // The default keeps a store this small exact (below `BITS_MIN_UNITS`)...
    let tmp_small = tempfile::tempdir().unwrap();
    let small = generated(tmp_small.path(), 5_000, VERSION).0;
    let q = &queries[0];
    let a = small
        .search(q, n, &Filter::default(), -1.0, 2, &stop)
        .unwrap();
    let b = small
        .search_with(q, n, &Filter::default(), -1.0, 2, &stop, FirstPass::Exact)
        .unwrap();
    assert_eq!(a, b);
    // ...and a stopped call scores nothing more.
    stop.cancel();
    assert!(
        e.search_with(q, n, &Filter::default(), -1.0, 2, &stop, fast)
            .unwrap()
            .len()
            < n
    );
}

#[test]
fn a_version_one_segment_is_read_and_searched_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, queries) = generated(tmp.path(), 3_000, 1);
    assert!(!old.segments()[0].seg.has_bits);
    assert!(old.segments()[0].seg.bit_view().unwrap().is_none());
    let (new, _) = generated(tmp.path(), 3_000, VERSION);
    let v1 = std::fs::metadata(tmp.path().join("00000001.vec"))
        .unwrap()
        .len();
    let v2 = std::fs::metadata(tmp.path().join("00000002.vec"))
        .unwrap()
        .len();
    // 128 dimensions: two sign words and one factor per unit, the centroid, three
    // more table entries and up to 7 bytes of alignment.
    let added = 3_000 * 20 + 128 * 4 + 3 * 16;
    assert!((added..added + 8).contains(&(v2 - v1)), "{v1} → {v2}");
    assert_eq!(segment_version(&tmp.path().join("00000001.vec")), Some(1));
    let stop = Cancel::new();
    let always = FirstPass::Bits {
        min_units: 0,
        oversample: 1,
        floor: 1,
    };
    for q in &queries {
        let a = old
            .search_with(q, 10, &Filter::default(), -1.0, 2, &stop, always)
            .unwrap();
        let b = new
            .search_with(q, 10, &Filter::default(), -1.0, 2, &stop, FirstPass::Exact)
            .unwrap();
        assert_eq!(a, b);
    }
}

/// A store whose embeddings were written before the 1-bit sections: the next close
/// of a writable store rewrites the segment in the current format (codes copied,
/// nothing re-embedded), and search returns the same hits as before.
#[test]
fn the_next_close_rewrites_a_version_one_segment_with_bits() {
    use crate::bench::gen::{Generator, Spec};
    use crate::stores::conversations::ConversationStore;
    let Ok(embedder) = Embedder::load_default() else {
        crate::not_run::not_run("no embedding model (run scripts/fetch-model)");
        return;
    };
    let embedder = Arc::new(embedder);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("conversations.duckdb");
    let messages: Vec<_> = Generator::new(Spec {
        messages: 400,
        seed: 0x0bad,
    })
    .flatten()
    .collect();
    let mut store = ConversationStore::open_rw(&db).unwrap();
    store.insert(&messages).unwrap();
    store
        .embed_with(embedder.clone(), UnitSpec::DEFAULT)
        .unwrap();
    store.close_with(&mut |_, _| {}).unwrap();

    // Rewrite the one segment as version 1, as an older build left it.
    let dir = dir_of(&db);
    let mut manifest = Manifest::read(&dir).unwrap();
    assert_eq!(manifest.segments.len(), 1);
    let part = Live::open::<VectorKind>(&dir, &manifest.segments[0], &manifest.kind).unwrap();
    let entry = &mut manifest.segments[0];
    let v2 = dir.join(&entry.file);
    let builder = merged(embedder.dim(), &[part], &v2).unwrap();
    let old_name = "00000099.vec".to_owned();
    entry.bytes = builder.write_as(&dir.join(&old_name), 1).unwrap();
    entry.file = old_name.clone();
    std::fs::remove_file(&v2).unwrap();
    std::fs::write(dir.join(MANIFEST), serde_json::to_vec(&manifest).unwrap()).unwrap();
    assert_eq!(segment_version(&dir.join(&old_name)), Some(1));

    let q = embedder.embed("tokio runtime serde error");
    let stop = Cancel::new();
    let hits = |e: &Embeddings| {
        e.search_with(&q, 10, &Filter::default(), -1.0, 2, &stop, FirstPass::Exact)
            .unwrap()
    };
    let before = hits(&Embeddings::open(&db).unwrap());
    assert_eq!(before.len(), 10);

    let mut store = ConversationStore::open_rw(&db).unwrap();
    store
        .embed_with(embedder.clone(), UnitSpec::DEFAULT)
        .unwrap();
    let report = store.close_with(&mut |_, _| {}).unwrap();
    let r = report.embeddings.unwrap().unwrap();
    assert_eq!(r.messages_embedded, 0, "{r:?}");
    let after = Embeddings::open(&db).unwrap();
    let m = after.manifest();
    assert_eq!(m.segments.len(), 1);
    assert_ne!(m.segments[0].file, old_name);
    assert_eq!(
        segment_version(&dir.join(&m.segments[0].file)),
        Some(VERSION)
    );
    assert!(!dir.join(&old_name).exists());
    assert_eq!(hits(&after), before);
    let always = FirstPass::Bits {
        min_units: 0,
        oversample: 1,
        floor: 1_000,
    };
    let fast = after
        .search_with(&q, 10, &Filter::default(), -1.0, 2, &stop, always)
        .unwrap();
    assert_eq!(fast, before);
}

#[test]
fn a_damaged_bit_section_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    generated(tmp.path(), 500, VERSION);
    let path = tmp.path().join("00000002.vec");
    let good = std::fs::read(&path).unwrap();
    for section in [15usize, 16, 17] {
        let mut bad = good.clone();
        let at = HEADER + section * 16 + 8;
        let len = u64_at(&bad, at) - 8;
        bad[at..at + 8].copy_from_slice(&len.to_le_bytes());
        std::fs::write(&path, &bad).unwrap();
        assert!(Segment::open(&path).is_err(), "section {section}");
    }
    let mut bad = good.clone();
    bad[36..40].copy_from_slice(&15u32.to_le_bytes());
    std::fs::write(&path, &bad).unwrap();
    assert!(Segment::open(&path).is_err());
}

/// A manifest as the code before `stores::segments` wrote it (its fields in that
/// order) reads into the same values and writes back the same JSON object.
#[test]
fn a_manifest_written_before_the_segment_set_reads_unchanged() {
    let old = r#"{
  "version": 1,
  "generation": 2,
  "next_file": 4,
  "model": "e5-small",
  "dim": 384,
  "unit": { "window": 1, "stride": 1, "title": false },
  "segments": [
    { "file": "00000003.vec", "units": 5, "live": 4, "bytes": 999, "tombstones": "00000002.del" }
  ],
  "units": 4,
  "store": { "db": null, "wal": null }
}"#;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(MANIFEST), old).unwrap();
    let m = Manifest::read(tmp.path()).unwrap();
    assert_eq!((m.model.as_str(), m.dim, m.units), ("e5-small", 384, 4));
    assert_eq!(m.unit, UnitSpec::DEFAULT);
    assert_eq!(m.segments[0].kind.units, 5);
    assert_eq!(m.segments[0].live, 4);
    let before: serde_json::Value = serde_json::from_str(old).unwrap();
    assert_eq!(serde_json::to_value(&m).unwrap(), before);
}

/// A damaged embeddings manifest is the embeddings' rebuild reason, named as such (the
/// reason once said "the search index is damaged").
#[test]
fn a_damaged_manifest_is_named_by_its_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("conversations.duckdb");
    let dir = crate::stores::segments::dir_of::<VectorKind>(&db);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(crate::stores::segments::MANIFEST), b"not json").unwrap();
    let shown = format!("{:?}", Base::read(&db));
    assert!(shown.contains("damaged embeddings ("), "{shown}");
    assert!(!shown.contains("search index"), "{shown}");
}
