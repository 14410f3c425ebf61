//! The keyword prefilter of the fast path: every detector keyword found through a
//! rare substring of it ([`ANCHORS`]) by a SIMD multi-literal searcher over
//! ASCII-lower-cased text.

use aho_corasick::{packed, AhoCorasick};

/// Where each keyword is looked for by [`Redactor::redact`]'s keyword search: a
/// substring of the (lower-case) keyword, `(keyword, anchor)`. The search looks for
/// anchors only (SIMD "Teddy", which keys on an anchor's first three bytes), so each
/// is chosen to be rare in prose and code: `"sia"` for `asia` (`basic` would match
/// `asi`), `"ecret"` for every `secret…`, `"k_live_"` shared by `sk_live_` and
/// `rk_live_`. An anchor of one byte is found with `memchr` instead (`~` of `q~`:
/// Teddy's fingerprints are as short as its shortest pattern). A unit test checks
/// that every keyword has exactly one anchor inside it.
pub(super) const ANCHORS: &[(&str, &str)] = &[
    ("-----begin", "-begin"),
    ("akia", "kia"),
    ("asia", "sia"),
    ("abia", "bia"),
    ("acca", "cca"),
    ("secret_access_key", "ecret"),
    ("secretaccesskey", "ecret"),
    ("secret-access-key", "ecret"),
    ("aiza", "aiza"),
    ("accountkey=", "ntkey="),
    ("q~", "~"),
    ("ghp_", "ghp_"),
    ("gho_", "gho_"),
    ("ghu_", "ghu_"),
    ("ghs_", "ghs_"),
    ("ghr_", "ghr_"),
    ("github_pat_", "b_pat_"),
    ("glpat-", "glpat-"),
    ("gldt-", "gldt-"),
    ("glrt-", "glrt-"),
    ("glptt-", "glptt-"),
    ("glcbt-", "glcbt-"),
    ("glft-", "glft-"),
    ("gloas-", "oas-"),
    ("xox", "xox"),
    ("hooks.slack.com", "k.com"),
    ("sk_live_", "k_live_"),
    ("sk_test_", "k_test_"),
    ("rk_live_", "k_live_"),
    ("rk_test_", "k_test_"),
    ("sk-ant-", "sk-"),
    ("sk-", "sk-"),
    ("eyj", "eyj"),
    ("://", "://"),
    ("npm_", "npm_"),
    ("hf_", "hf_"),
    ("pypi-", "pypi-"),
    ("dop_v1_", "_v1_"),
    ("doo_v1_", "_v1_"),
    ("dor_v1_", "_v1_"),
    ("password", "ssw"),
    ("passwd", "ssw"),
    ("pwd", "pwd"),
    ("passphrase", "ssph"),
    ("secret", "ecret"),
    ("api_key", "pi_k"),
    ("apikey", "pik"),
    ("api-key", "pi-k"),
    ("token", "token"),
];

/// Finds every occurrence (overlapping ones included) of every keyword, ASCII
/// case-insensitively, in ASCII-lower-cased text: anchors ([`ANCHORS`]) with a
/// packed SIMD searcher, each hit checked against the keywords anchored there.
pub(super) struct KeywordSearch {
    /// Lower-case keywords, by keyword number (the reference prefilter's order).
    keywords: Vec<Vec<u8>>,
    /// Anchors of two bytes or more, by anchor number.
    anchors: Vec<Vec<u8>>,
    /// Leftmost-first search for [`KeywordSearch::anchors`]: Teddy where the CPU has
    /// it, else an Aho-Corasick automaton.
    packed: Option<packed::Searcher>,
    automaton: AhoCorasick,
    /// Per anchor: `(keyword, offset of the anchor in it)`.
    anchored: Vec<Vec<(usize, usize)>>,
    /// Per anchor: the other anchors that are a prefix of it or have it as a prefix
    /// (the only ones that can match where it does).
    related: Vec<Vec<usize>>,
    /// One-byte anchors: `(byte, keyword, offset)`.
    bytes: Vec<(u8, usize, usize)>,
}

impl KeywordSearch {
    pub(super) fn new(keywords: &[&str]) -> Result<Self, String> {
        let keywords: Vec<Vec<u8>> = keywords
            .iter()
            .map(|k| k.to_ascii_lowercase().into_bytes())
            .collect();
        let mut anchors: Vec<Vec<u8>> = Vec::new();
        let mut anchored: Vec<Vec<(usize, usize)>> = Vec::new();
        let mut bytes = Vec::new();
        for (k, keyword) in keywords.iter().enumerate() {
            let anchor = ANCHORS
                .iter()
                .find(|(kw, _)| kw.as_bytes() == keyword.as_slice())
                .map(|(_, a)| a.as_bytes())
                .ok_or_else(|| {
                    format!(
                        "keyword `{}` has no anchor",
                        String::from_utf8_lossy(keyword)
                    )
                })?;
            let offset = memchr::memmem::find(keyword, anchor).ok_or_else(|| {
                format!(
                    "anchor of `{}` is not inside it",
                    String::from_utf8_lossy(keyword)
                )
            })?;
            if let [byte] = anchor {
                bytes.push((*byte, k, offset));
                continue;
            }
            match anchors.iter().position(|a| a.as_slice() == anchor) {
                Some(a) => anchored[a].push((k, offset)),
                None => {
                    anchors.push(anchor.to_vec());
                    anchored.push(vec![(k, offset)]);
                }
            }
        }
        let related = anchors
            .iter()
            .enumerate()
            .map(|(a, x)| {
                (0..anchors.len())
                    .filter(|&b| {
                        b != a && (x.starts_with(&anchors[b]) || anchors[b].starts_with(x))
                    })
                    .collect()
            })
            .collect();
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(&anchors)
            .build();
        let automaton = AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build(&anchors)
            .map_err(|e| format!("keyword anchors: {e}"))?;
        Ok(Self {
            keywords,
            anchors,
            packed,
            automaton,
            anchored,
            related,
            bytes,
        })
    }

    /// The leftmost anchor starting at or after `from` in `hay`: (start, anchor).
    fn next_anchor(&self, hay: &[u8], from: usize) -> Option<(usize, usize)> {
        let span = aho_corasick::Span::from(from..hay.len());
        let m = match &self.packed {
            Some(p) => p.find_in(hay, span),
            None => self
                .automaton
                .find(aho_corasick::Input::new(hay).span(span)),
        }?;
        Some((m.start(), m.pattern().as_usize()))
    }

    /// Every keyword occurrence in `lower` (ASCII-lower-cased text) as `(start,
    /// keyword)`, sorted, each once.
    pub(super) fn find(&self, lower: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let check = |at: usize, offset: usize, k: usize, out: &mut Vec<(usize, usize)>| {
            if let Some(s) = at.checked_sub(offset) {
                if lower[s..].starts_with(&self.keywords[k]) {
                    out.push((s, k));
                }
            }
        };
        let mut from = 0;
        while from < lower.len() {
            let Some((at, a)) = self.next_anchor(lower, from) else {
                break;
            };
            for &(k, offset) in &self.anchored[a] {
                check(at, offset, k, &mut out);
            }
            for &b in &self.related[a] {
                if lower[at..].starts_with(&self.anchors[b]) {
                    for &(k, offset) in &self.anchored[b] {
                        check(at, offset, k, &mut out);
                    }
                }
            }
            // Anchors may overlap: the next one may start inside this one.
            from = at + 1;
        }
        for &(byte, k, offset) in &self.bytes {
            for at in memchr::memchr_iter(byte, lower) {
                check(at, offset, k, &mut out);
            }
        }
        // Each occurrence is found once (one anchor per keyword, each position
        // visited once); dedup only guards that.
        out.sort_unstable();
        out.dedup();
        out
    }
}
