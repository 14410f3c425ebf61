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

fn fused(
    semantic: Vec<Row>,
    literal: Vec<Hit>,
    keyword: Vec<(f64, Hit)>,
    limit: usize,
) -> Vec<Row> {
    let keyword = keyword
        .into_iter()
        .map(|(score, hit)| KeywordHit {
            score,
            own: score,
            hit,
        })
        .collect();
    let (s, l, k) = shares(semantic, literal, keyword, &Tuning::DEFAULT);
    fuse(s, l, k, 0.0, limit)
}

fn sem(id: &str, window: &[&str]) -> Row {
    Row {
        hit: hit(id),
        first: window[0].into(),
        last: window[window.len() - 1].into(),
        score: 0.5,
        semantic: true,
        literal: false,
        keyword: false,
        window: window.iter().map(|s| (*s).to_owned()).collect(),
        legs: serde_json::Map::new(),
    }
}

#[test]
fn every_literal_hit_survives_fusion() {
    let semantic: Vec<Row> = (0..5)
        .map(|i| {
            let id = format!("m{i}");
            sem(&id, &[id.as_str()])
        })
        .collect();
    let literal = vec![hit("x1"), hit("x2")];
    let fused = fused(semantic, literal, Vec::new(), 3);
    assert_eq!(fused.len(), 3);
    let ids: Vec<&str> = fused.iter().map(|r| r.hit.message_id.as_str()).collect();
    assert!(ids.contains(&"x1") && ids.contains(&"x2"), "{ids:?}");
    assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn a_literal_hit_inside_a_window_becomes_its_message() {
    let fused = fused(vec![sem("a", &["a", "b"])], vec![hit("b")], Vec::new(), 5);
    assert_eq!(fused.len(), 1);
    assert_eq!(fused[0].hit.message_id, "b");
    assert!(fused[0].semantic && fused[0].literal);
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
        5,
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
    let fused = fused(
        semantic,
        Vec::new(),
        vec![(2.0, hit("c")), (0.2, hit("z"))],
        5,
    );
    let ids: Vec<&str> = fused.iter().map(|r| r.hit.message_id.as_str()).collect();
    assert_eq!(ids, ["b", "a", "z"], "window b gains the keyword share");
    assert!(fused[0].semantic && fused[0].keyword && !fused[0].literal);
    assert_eq!(row_json(&fused[0])["match"], "both");
    assert_eq!(row_json(&fused[2])["match"], "keyword");
    assert_eq!(row_json(&fused[1])["match"], "semantic");
}
