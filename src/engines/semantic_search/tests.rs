//! Unit tests of semantic-search's fusion, time arguments and query terms.

use super::*;

fn hit(id: &str) -> Hit {
    Hit {
        created_us: 0,
        source: "s".into(),
        role: "user".into(),
        conversation_id: "c".into(),
        message_id: id.into(),
        project: None,
        preview: id.into(),
    }
}

fn keyword_hit((score, hit): (f64, Hit)) -> KeywordHit {
    KeywordHit {
        score,
        own: score,
        hit,
    }
}

fn fused(semantic: Vec<Row>, literal: Vec<Hit>, keyword: Vec<(f64, Hit)>) -> Vec<Row> {
    let keyword = keyword.into_iter().map(keyword_hit).collect();
    let (s, l, k) = shares(semantic, literal, keyword, &Tuning::DEFAULT);
    fuse(s, l, k, 0.0)
}

fn sem(id: &str, window: &[&str]) -> Row {
    Row {
        hit: hit(id),
        first: window[0].into(),
        last: window[window.len() - 1].into(),
        score: 0.5,
        semantic: true,
        literal: None,
        keyword: false,
        window: window.iter().map(|s| (*s).to_owned()).collect(),
        absorbed: Vec::new(),
        legs: serde_json::Map::new(),
    }
}

#[test]
fn literal_hits_come_first_in_the_literal_legs_order() {
    let semantic: Vec<Row> = (0..5)
        .map(|i| {
            let id = format!("m{i}");
            sem(&id, &[id.as_str()])
        })
        .collect();
    // The keyword hit scores 1, above either literal hit's 0.5: they still lead.
    let literal = vec![hit("x2"), hit("x1")];
    let fused = fused(semantic, literal, vec![(3.0, hit("kw"))]);
    let ids: Vec<&str> = fused.iter().map(|r| r.hit.message_id.as_str()).collect();
    assert_eq!(ids[..3], ["x2", "x1", "kw"], "{ids:?}");
    assert_eq!(fused.len(), 8);
    assert!(fused[2..].windows(2).all(|w| w[0].score >= w[1].score));
}

/// One hybrid ranking over synthetic legs: 40 semantic windows (some of two
/// messages), 3 literal hits (one inside a window) and 300 keyword hits (some inside
/// windows, some repeated as literal hits), with depths small enough that limits
/// past them take the keyword leg deeper, more than once.
fn ranked(limit: usize, tuning: &Tuning) -> Vec<String> {
    ranked_rows(limit, tuning)
        .into_iter()
        .map(|r| r.hit.message_id)
        .collect()
}

/// The neighbours of a synthetic message: `kN` and `wN` are next to `k(N±1)` /
/// `w(N±1)`, up to `window` each side.
fn neighbours(h: &Hit, window: usize) -> Vec<String> {
    let id = h.message_id.trim_end_matches('b');
    let (prefix, n) = id.split_at(1);
    let Ok(n) = n.parse::<usize>() else {
        return Vec::new();
    };
    (1..=window)
        .flat_map(|d| [n.checked_sub(d), Some(n + d)])
        .flatten()
        .map(|m| format!("{prefix}{m}"))
        .collect()
}

fn ranked_rows(limit: usize, tuning: &Tuning) -> Vec<Row> {
    let semantic: Vec<Row> = (0..40)
        .map(|i| {
            let id = format!("w{i}");
            let next = format!("w{i}b");
            let mut r = if i % 3 == 0 {
                sem(&id, &[id.as_str(), next.as_str()])
            } else {
                sem(&id, &[id.as_str()])
            };
            r.score = 0.9 - f64::from(i) * 0.01;
            r
        })
        .collect();
    let literal = vec![hit("k5"), hit("w3b"), hit("lit")];
    let keyword: Vec<KeywordHit> = (0..300)
        .map(|i| {
            // Every message once: 7·m mod 40 differ for m < 40.
            let id = if i % 7 == 0 && i < 280 {
                format!("w{}b", i % 40)
            } else {
                format!("k{i}")
            };
            keyword_hit((300.0 - f64::from(i), hit(&id)))
        })
        .collect();
    let keyword_at = |depth: usize| keyword[..depth.min(keyword.len())].to_vec();
    let boost = tuning.temporal_boost;
    let around = |h: &Hit| neighbours(h, tuning.absorb);
    hybrid_rows(
        semantic,
        literal,
        &keyword_at,
        &around,
        &|_| Vec::new(),
        tuning,
        boost,
        limit,
    )
}

#[test]
fn a_row_absorbs_its_lower_neighbours_whatever_the_limit() {
    let tuning = Tuning {
        candidates: 40,
        keyword_candidates: 12,
        absorb: 1,
        ..Tuning::DEFAULT
    };
    let plain = ranked_rows(
        400,
        &Tuning {
            absorb: 0,
            ..tuning
        },
    );
    let most = ranked_rows(400, &tuning);
    assert!(most.len() < plain.len(), "{} {}", most.len(), plain.len());
    // Every message of the plain ranking is shown once, as a row or absorbed.
    let mut shown: Vec<String> = most
        .iter()
        .flat_map(|r| {
            std::iter::once(r.hit.message_id.clone())
                .chain(r.absorbed.iter().map(|a| a.0.message_id.clone()))
        })
        .collect();
    let mut want: Vec<String> = plain.iter().map(|r| r.hit.message_id.clone()).collect();
    shown.sort();
    want.sort();
    assert_eq!(shown, want);
    // An absorbed message is next to its row's and ranked below it.
    for (i, r) in most.iter().enumerate() {
        for (a, rank, _) in &r.absorbed {
            let near = neighbours(&r.hit, 1);
            assert!(
                near.contains(&a.message_id) || r.window.contains(&a.message_id),
                "{} absorbed {}",
                r.hit.message_id,
                a.message_id
            );
            let own = plain
                .iter()
                .position(|p| p.hit.message_id == r.hit.message_id)
                .unwrap_or(usize::MAX);
            assert!(own < *rank, "row {i}");
        }
    }
    let key = |rows: &[Row]| -> Vec<(String, Vec<String>)> {
        rows.iter()
            .map(|r| {
                (
                    r.hit.message_id.clone(),
                    r.absorbed.iter().map(|a| a.0.message_id.clone()).collect(),
                )
            })
            .collect()
    };
    for limit in 1..=most.len() + 5 {
        let rows = ranked_rows(limit, &tuning);
        assert_eq!(
            key(&rows),
            key(&most[..limit.min(most.len())]),
            "limit {limit}"
        );
    }
}

#[test]
fn the_first_rows_do_not_depend_on_limit() {
    let tuning = Tuning {
        candidates: 40,
        keyword_candidates: 12,
        ..Tuning::DEFAULT
    };
    let most = ranked(400, &tuning);
    // Every row the legs found, once: the keyword leg was read to its end.
    let distinct: std::collections::HashSet<&String> = most.iter().collect();
    assert_eq!(distinct.len(), most.len(), "{most:?}");
    assert!(most.len() > 300, "{}", most.len());
    assert_eq!(most[..3], ["k5", "w3b", "lit"], "literal hits first");
    for limit in 1..=most.len() + 5 {
        let rows = ranked(limit, &tuning);
        assert_eq!(
            rows,
            most[..limit.min(most.len())],
            "limit {limit} against the first rows of limit 400"
        );
    }
    // The shipped depths: the same property.
    let most = ranked(500, &Tuning::DEFAULT);
    for limit in [1, 3, 5, 10, 15, 37, 50, 61, 99, 120, 250] {
        assert_eq!(
            ranked(limit, &Tuning::DEFAULT),
            most[..limit.min(most.len())]
        );
    }
}

#[test]
fn a_literal_hit_inside_a_window_becomes_its_message() {
    let fused = fused(vec![sem("a", &["a", "b"])], vec![hit("b")], Vec::new());
    assert_eq!(fused.len(), 1);
    assert_eq!(fused[0].hit.message_id, "b");
    assert!(fused[0].semantic && fused[0].literal.is_some());
}

#[test]
fn shares_are_each_legs_score_over_its_best_weighted() {
    let mut near = sem("near", &["near"]);
    near.score = 0.8;
    let mut far = sem("far", &["far"]);
    far.score = 0.4;
    let fused = fused(
        vec![near, far],
        Vec::new(),
        vec![(9.0, hit("kw")), (4.5, hit("far"))],
    );
    let got: Vec<(&str, f64)> = fused
        .iter()
        .map(|r| (r.hit.message_id.as_str(), r.score))
        .collect();
    // kw: 9/9; far: 0.3 × 0.4/0.8 + 4.5/9; near: 0.3 × 0.8/0.8.
    let want = [("kw", 1.0), ("far", 0.65), ("near", 0.3)];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((id, score), (wid, wscore)) in got.iter().zip(want) {
        assert_eq!(*id, wid, "{got:?}");
        assert!((score - wscore).abs() < 1e-12, "{got:?}");
    }
}

#[test]
fn bare_dates_take_the_whole_day() {
    let args = json!({"since": "2026-07-01", "until": "2026-07-01"});
    let since = time_arg(&args, "since").unwrap().unwrap();
    let until = time_arg(&args, "until").unwrap().unwrap();
    assert_eq!(until - since, 86_400_000_000);
    let bad = time_arg(&json!({"since": "yesterday"}), "since").unwrap_err();
    assert!(bad.to_string().contains("`since`"), "{bad}");
}

#[test]
fn query_terms_fold_stem_and_drop_stop_words_short_words_and_repeats() {
    assert_eq!(
        query_terms("What did Caroline research about ADOPTION? Caroline's adoption!"),
        ["carolin", "research", "adopt"]
    );
    // Words of one stem are one term.
    assert_eq!(query_terms("adopting adopted adoptions"), ["adopt"]);
    assert!(query_terms("is the a of?").is_empty());
    assert_eq!(query_terms(&"word ".repeat(3)).len(), 1);
    let many: String = (0..40).map(|i| format!("term{i} ")).collect();
    assert_eq!(query_terms(&many).len(), KEYWORD_WORDS);
}

#[test]
fn keyword_hits_add_to_their_window_and_rank_a_word_match_above_a_weaker_window() {
    // Two semantic windows; the keyword leg's best hit lies in the second one.
    let semantic = vec![sem("a", &["a"]), sem("b", &["b", "c"])];
    let fused = fused(semantic, Vec::new(), vec![(2.0, hit("c")), (0.2, hit("z"))]);
    let ids: Vec<&str> = fused.iter().map(|r| r.hit.message_id.as_str()).collect();
    assert_eq!(ids, ["b", "a", "z"], "window b gains the keyword share");
    assert!(fused[0].semantic && fused[0].keyword && fused[0].literal.is_none());
    assert_eq!(row_json(&fused[0])["match"], "both");
    assert_eq!(row_json(&fused[2])["match"], "keyword");
    assert_eq!(row_json(&fused[1])["match"], "semantic");
}
