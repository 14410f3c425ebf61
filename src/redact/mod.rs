//! Secret redaction: finds credentials people pasted into transcripts and memories
//! (cloud keys, service tokens, JWTs, private keys, passwords) and replaces each with
//! `[REDACTED:<detector>]`.
//!
//! The host applies it to every skill's output — the engine's structured JSON (every
//! string in it) and the rendered text — unless the skill's document sets
//! `redact-secrets: false`. Text is also redacted before it is stored, unless
//! `--keep-secrets` ([`at_store`]).
//!
//! [`DETECTORS`] is the documented detector set. Each detector's pattern follows the
//! format its vendor documents (fixed prefixes such as `AKIA`, `ghp_`, `glpat-`,
//! `xoxb-`, `sk_live_`, `sk-ant-`; JWT's three base64url parts; PEM's `-----BEGIN …
//! PRIVATE KEY-----`), written for this project. Word boundaries are ASCII
//! (`(?-u:\b)`): every keyword is ASCII, and a Unicode `\b` would make the regex
//! engine leave its DFA for the slow one on any text holding a non-ASCII character (it
//! made redaction cost half a search on such output).
//!
//! What a string gets, defined by [`Redactor::redact_reference`]: the detectors with a
//! keyword in it (ASCII case-insensitive) run their regexes over it, in [`DETECTORS`]
//! order, and a match overlapping an earlier one is dropped. [`Redactor::redact`] and
//! [`Redactor::redact_json`] find exactly that (`tests/redaction.rs` compares them on
//! the corpus and on seeded secrets), cheaper:
//!
//! - strings shorter than the shortest match any pattern allows are skipped;
//! - keywords are found through rare substrings of theirs
//!   ([`ANCHORS`](keywords::ANCHORS)) by a SIMD multi-literal searcher over a
//!   lower-cased copy, instead of an automaton stepping through every byte;
//! - all strings of a JSON result share one search (one buffer, NUL-separated);
//! - the three case-insensitive detectors, whose regexes have no literal prefix the
//!   regex engine could skip to, are tried only at the few places before a keyword
//!   where a match can start ([`WINDOWED`](detectors::WINDOWED)).
//!
//! The rendered text is redacted on its own, after the structured data: a template
//! joins values with its own text (`password=` before a value) and transforms them
//! (`cell` turns newlines into `<br>`), so a secret can appear in the text that no
//! single value held, and clean values do not prove clean text.
//!
//! What it does not do: entropy scoring, or secrets without a recognisable shape (a
//! bare random string with no keyword before it is left alone).
//!
//! One concern per file: `detectors` is the data, `keywords` the prefilter, this file
//! the redactor that runs them.

pub mod at_store;
mod detectors;
pub mod ids;
mod keywords;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex_automata::{meta, Anchored, Input};
use serde_json::Value;

#[cfg(test)]
pub use detectors::detector_table;
#[cfg(any(test, feature = "bench"))]
pub use detectors::examples;
use detectors::WINDOWED;
pub use detectors::{Detector, DETECTORS};
use keywords::KeywordSearch;

/// The compiled detector set. Build once ([`Redactor::global`]) and share.
pub struct Redactor {
    /// Keywords of every detector, in [`DETECTORS`] order (the reference path).
    prefilter: AhoCorasick,
    /// For each keyword (prefilter pattern), the detector it belongs to.
    keyword_owner: Vec<usize>,
    /// Each detector's pattern, compiled as the `regex` crate compiles it, as
    /// the `regex-automata` regex that also takes anchored searches.
    meta: Vec<meta::Regex>,
    /// Per detector: [`WINDOWED`]'s reach.
    reach: Vec<Option<usize>>,
    /// Fewest bytes any detector's pattern matches: shorter strings hold no secret.
    min_len: usize,
    /// The keyword search of the fast path.
    keywords: KeywordSearch,
}

/// Text with its secrets replaced, and how many were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text (borrowed when nothing was found).
    pub text: Cow<'a, str>,
    /// Number of secrets replaced.
    pub count: usize,
}

/// `(start, end, detector)` of each secret to replace.
type Spans = Vec<(usize, usize, usize)>;

impl Redactor {
    /// Compiles [`DETECTORS`].
    ///
    /// # Errors
    /// A message naming the detector whose pattern or keywords do not compile (a bug
    /// in this module; the unit tests compile every one).
    pub fn new() -> Result<Self, String> {
        let mut keywords = Vec::new();
        let mut keyword_owner = Vec::new();
        let mut metas = Vec::new();
        let mut min_len = usize::MAX;
        for (i, d) in DETECTORS.iter().enumerate() {
            for k in d.keywords {
                keywords.push(*k);
                keyword_owner.push(i);
            }
            let named = |e: &dyn std::fmt::Display| format!("detector `{}`: {e}", d.id);
            metas.push(compile_meta(d.pattern).map_err(|e| named(&e))?);
            let hir = regex_syntax::parse(d.pattern).map_err(|e| named(&e))?;
            min_len = min_len.min(hir.properties().minimum_len().unwrap_or(usize::MAX));
        }
        let reach = DETECTORS
            .iter()
            .map(|d| WINDOWED.iter().find(|w| w.0 == d.id).map(|w| w.1))
            .collect();
        let prefilter = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&keywords)
            .map_err(|e| format!("detector keywords: {e}"))?;
        Ok(Self {
            prefilter,
            keywords: KeywordSearch::new(&keywords)?,
            keyword_owner,
            meta: metas,
            reach,
            min_len,
        })
    }

    /// The process-wide redactor, compiled on first use; `None` only if a detector
    /// failed to compile (never with the shipped set: see the unit tests).
    pub fn global() -> Option<&'static Self> {
        static GLOBAL: OnceLock<Option<Redactor>> = OnceLock::new();
        GLOBAL.get_or_init(|| Self::new().ok()).as_ref()
    }

    /// Replaces every secret in `text` with `[REDACTED:<detector id>]`.
    ///
    /// Finds exactly what [`Redactor::redact_reference`] finds, faster: text shorter
    /// than the shortest possible match is not scanned; keywords are found through
    /// rare anchors with a SIMD searcher over a lower-cased copy; a case-insensitive
    /// detector's regex is tried only just before its keywords ([`WINDOWED`]).
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        if text.len() < self.min_len {
            return Redacted {
                text: Cow::Borrowed(text),
                count: 0,
            };
        }
        let found = self.keywords.find(&text.as_bytes().to_ascii_lowercase());
        let spans = self.spans(text, &found);
        replace(text, &spans)
    }

    /// [`Redactor::redact`] for an identifier or a metadata value (a project folder, a
    /// session or message id, a tag, a path): each secret becomes
    /// `[REDACTED:<detector>#<16 hex>]`, a digest keyed by `key`, so distinct ids stay
    /// distinct and one id is stored the same way every time ([`ids`]).
    pub fn redact_id<'a>(&self, text: &'a str, key: &ids::IdKey) -> Redacted<'a> {
        if text.len() < self.min_len {
            return Redacted {
                text: Cow::Borrowed(text),
                count: 0,
            };
        }
        let found = self.keywords.find(&text.as_bytes().to_ascii_lowercase());
        let spans = self.spans(text, &found);
        replace_with(text, &spans, |i, secret| {
            key.marker(DETECTORS[i].id, secret)
        })
    }

    /// The reference path, kept to test [`Redactor::redact`] against: one
    /// Aho-Corasick pass (ASCII case-insensitive, overlapping) for every detector's
    /// keywords, then the whole-text regex of every detector with a keyword in
    /// `text`.
    pub fn redact_reference<'a>(&self, text: &'a str) -> Redacted<'a> {
        // Which detectors can match: those with a keyword in the text.
        let mut candidates = 0u64;
        for m in self.prefilter.find_overlapping_iter(text) {
            candidates |= 1 << self.keyword_owner[m.pattern().as_usize()];
        }
        if candidates == 0 {
            return Redacted {
                text: Cow::Borrowed(text),
                count: 0,
            };
        }
        // Spans to replace: (start, end, detector), first come first served.
        let mut spans: Spans = Vec::new();
        for (i, re) in self.meta.iter().enumerate() {
            if candidates & (1 << i) == 0 {
                continue;
            }
            let group = DETECTORS[i].group;
            for caps in re.captures_iter(text) {
                let Some(m) = caps.get_group(group) else {
                    continue;
                };
                if m.is_empty() {
                    continue;
                }
                let overlaps = spans.iter().any(|&(s, e, _)| m.start < e && s < m.end);
                if !overlaps {
                    spans.push((m.start, m.end, i));
                }
            }
        }
        replace(text, &spans)
    }

    /// The spans [`Redactor::redact_reference`] replaces in `text`, given `found`, the
    /// keyword occurrences of `text` (`(start, keyword)`, sorted).
    fn spans(&self, text: &str, found: &[(usize, usize)]) -> Spans {
        let mut candidates = 0u64;
        for &(_, k) in found {
            candidates |= 1 << self.keyword_owner[k];
        }
        let mut spans: Spans = Vec::new();
        if candidates == 0 {
            return spans;
        }
        // Unicode case folding reaches ASCII `k` and `s` from these two only (a unit
        // test checks).
        let fold_cell = OnceCell::new();
        let folds =
            || *fold_cell.get_or_init(|| text.contains('\u{212A}') || text.contains('\u{17F}'));
        let push = |spans: &mut Spans, start: usize, end: usize, i: usize| {
            if start < end && !spans.iter().any(|&(s, e, _)| start < e && s < end) {
                spans.push((start, end, i));
            }
        };
        for (i, re) in self.meta.iter().enumerate() {
            if candidates & (1 << i) == 0 {
                continue;
            }
            let group = DETECTORS[i].group;
            // Every match starts at one of these.
            let starts = self.reach[i].filter(|_| !folds()).map(|reach| {
                let mut starts: Vec<usize> = found
                    .iter()
                    .flat_map(|&(at, _)| at.saturating_sub(reach)..=at)
                    .collect();
                starts.sort_unstable();
                starts.dedup();
                starts
            });
            // Unless one pass over the text costs less: an anchored try costs roughly
            // what 30 bytes of a whole pass of these regexes do.
            let starts = starts.filter(|s| s.len() <= text.len() / 32);
            match starts {
                Some(starts) => {
                    // Try each, left to right, past the end of the last match: the
                    // matches `captures_iter` gives.
                    let mut caps = re.create_captures();
                    let mut after = 0;
                    for start in starts {
                        if start < after {
                            continue;
                        }
                        let input = Input::new(text)
                            .span(start..text.len())
                            .anchored(Anchored::Yes);
                        // The DFA says whether and where; captures only then.
                        let Some(whole) = re.search(&input) else {
                            continue;
                        };
                        after = whole.end();
                        if group == 0 {
                            push(&mut spans, whole.start(), whole.end(), i);
                            continue;
                        }
                        re.search_captures(&input, &mut caps);
                        if let Some(m) = caps.get_group(group) {
                            push(&mut spans, m.start, m.end, i);
                        }
                    }
                }
                _ if group == 0 => {
                    for m in re.find_iter(text) {
                        push(&mut spans, m.start(), m.end(), i);
                    }
                }
                _ => {
                    for caps in re.captures_iter(text) {
                        if let Some(m) = caps.get_group(group) {
                            push(&mut spans, m.start, m.end, i);
                        }
                    }
                }
            }
        }
        spans
    }

    /// Redacts every string inside `value` (object keys are left as they are) and
    /// returns how many secrets were replaced.
    ///
    /// Finds exactly what [`Redactor::redact`] finds in each string, in one keyword
    /// search over all of them (each string lower-cased into one buffer, NUL between
    /// two: no keyword holds a NUL, so no occurrence spans two strings); strings
    /// without a keyword are neither searched again nor copied.
    pub fn redact_json(&self, value: &mut Value) -> usize {
        let mut strings: Vec<&mut String> = Vec::new();
        collect_strings(value, self.min_len, &mut strings);
        if strings.is_empty() {
            return 0;
        }
        let mut lower = Vec::with_capacity(strings.iter().map(|s| s.len() + 1).sum());
        for s in &strings {
            lower.extend_from_slice(s.as_bytes());
            lower.push(0);
        }
        lower.make_ascii_lowercase();
        let found = self.keywords.find(&lower);
        let mut count = 0;
        let (mut base, mut next) = (0, 0);
        let mut local = Vec::new();
        for s in strings {
            let end = base + s.len();
            local.clear();
            while next < found.len() && found[next].0 < end {
                local.push((found[next].0 - base, found[next].1));
                next += 1;
            }
            if !local.is_empty() {
                let spans = self.spans(s, &local);
                if let Redacted {
                    text: Cow::Owned(new),
                    count: n,
                } = replace(s, &spans)
                {
                    *s = new;
                    count += n;
                }
            }
            base = end + 1;
        }
        count
    }

    /// [`Redactor::redact_json`] through [`Redactor::redact_reference`], one string at
    /// a time (the reference it is tested against).
    pub fn redact_json_reference(&self, value: &mut Value) -> usize {
        match value {
            Value::String(s) => {
                let r = self.redact_reference(s);
                let count = r.count;
                if let Cow::Owned(new) = r.text {
                    *s = new;
                }
                count
            }
            Value::Array(items) => items
                .iter_mut()
                .map(|v| self.redact_json_reference(v))
                .sum(),
            Value::Object(map) => map
                .values_mut()
                .map(|v| self.redact_json_reference(v))
                .sum(),
            _ => 0,
        }
    }
}

/// settings), as the `regex-automata` regex that takes anchored searches.
fn compile_meta(pattern: &str) -> Result<meta::Regex, Box<meta::BuildError>> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .nfa_size_limit(Some(10 * (1 << 20)))
                .hybrid_cache_capacity(2 * (1 << 20))
                .match_kind(regex_automata::MatchKind::LeftmostFirst)
                .utf8_empty(true),
        )
        .syntax(regex_automata::util::syntax::Config::new().utf8(true))
        .build(pattern)
        .map_err(Box::new)
}

/// The strings inside `value` at least `min_len` bytes long, in document order.
fn collect_strings<'v>(value: &'v mut Value, min_len: usize, out: &mut Vec<&'v mut String>) {
    match value {
        Value::String(s) if s.len() >= min_len => out.push(s),
        Value::Array(items) => {
            for v in items {
                collect_strings(v, min_len, out);
            }
        }
        Value::Object(map) => {
            for v in map.values_mut() {
                collect_strings(v, min_len, out);
            }
        }
        _ => {}
    }
}

/// `text` with each of `spans` (disjoint) replaced by its detector's marker.
fn replace<'a>(text: &'a str, spans: &[(usize, usize, usize)]) -> Redacted<'a> {
    replace_with(text, spans, |i, _| {
        format!("[REDACTED:{}]", DETECTORS[i].id)
    })
}

/// `text` with each of `spans` (disjoint) replaced by `marker(detector, secret)`.
fn replace_with<'a>(
    text: &'a str,
    spans: &[(usize, usize, usize)],
    marker: impl Fn(usize, &str) -> String,
) -> Redacted<'a> {
    if spans.is_empty() {
        return Redacted {
            text: Cow::Borrowed(text),
            count: 0,
        };
    }
    let mut spans = spans.to_vec();
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for &(start, end, i) in &spans {
        out.push_str(&text[at..start]);
        out.push_str(&marker(i, &text[start..end]));
        at = end;
    }
    out.push_str(&text[at..]);
    Redacted {
        text: Cow::Owned(out),
        count: spans.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::keywords::ANCHORS;
    use super::*;

    fn redactor() -> Redactor {
        Redactor::new().unwrap()
    }

    #[test]
    fn every_detector_compiles_and_has_an_example_it_finds() {
        let r = redactor();
        let examples = examples();
        assert_eq!(DETECTORS.len(), examples.len());
        assert!(DETECTORS.len() <= 64, "the candidate mask is a u64");
        for d in DETECTORS {
            let (_, text, secret) = examples.iter().find(|(id, ..)| *id == d.id).unwrap();
            let out = r.redact(text);
            assert!(out.count >= 1, "{}: nothing found in {text:?}", d.id);
            assert!(
                !out.text.contains(secret.as_str()),
                "{}: secret still in {:?}",
                d.id,
                out.text
            );
            assert!(
                out.text.contains(&format!("[REDACTED:{}]", d.id)),
                "{}: {:?}",
                d.id,
                out.text
            );
        }
    }

    #[test]
    fn readme_lists_the_detector_set_as_generated() {
        let readme = fs_err::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
        )
        .unwrap();
        assert!(
            readme.contains(&detector_table()),
            "README.md's detector table is stale; paste skills::redact::detector_table():\n{}",
            detector_table()
        );
    }

    #[test]
    fn ordinary_text_is_left_alone_and_borrowed() {
        let r = redactor();
        for text in [
            "",
            "the deadline moved to Friday; see https://example.com/docs?a=1",
            "task-list and risk-free, sk-short, password: abc",
            "SELECT * FROM t WHERE token IS NULL",
            "set the password = $PASSWORD from the environment",
            "eyJ alone is not a token, nor is AKIA",
        ] {
            let out = r.redact(text);
            assert_eq!(out.count, 0, "{text:?} -> {:?}", out.text);
            assert!(matches!(out.text, Cow::Borrowed(_)));
        }
    }

    #[test]
    fn only_the_value_of_an_assignment_or_url_password_is_replaced() {
        let r = redactor();
        let out = r.redact("db: postgres://me:pa55word@host/x and password=\"abcdefgh\"");
        assert_eq!(out.count, 2);
        assert_eq!(
            out.text,
            "db: postgres://me:[REDACTED:url-credentials]@host/x and password=\"[REDACTED:password-assignment]\""
        );
    }

    #[test]
    fn truncated_private_key_is_still_redacted() {
        let r = redactor();
        let text = format!(
            "{}{} MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
            "-----BEGIN PRIVATE", " KEY-----"
        );
        let out = r.redact(&text);
        assert_eq!(out.text, "[REDACTED:private-key]");
    }

    #[test]
    fn json_strings_are_redacted_in_place_and_counted() {
        let r = redactor();
        let (_, text, secret) = examples().remove(6);
        let mut v = serde_json::json!({"rows": [{"preview": text, "n": 3}], "term": "x"});
        assert_eq!(r.redact_json(&mut v), 1);
        assert!(!v.to_string().contains(&secret));
        assert_eq!(v["rows"][0]["n"], 3);
    }

    #[test]
    fn every_keyword_has_one_anchor_inside_it() {
        let keywords: Vec<String> = DETECTORS
            .iter()
            .flat_map(|d| d.keywords.iter().map(|k| k.to_ascii_lowercase()))
            .collect();
        for k in &keywords {
            let anchors: Vec<&str> = ANCHORS
                .iter()
                .filter(|(kw, _)| kw == k)
                .map(|(_, a)| *a)
                .collect();
            assert_eq!(anchors.len(), 1, "`{k}`: {anchors:?}");
            assert!(
                k.contains(anchors[0]),
                "`{k}` does not hold `{}`",
                anchors[0]
            );
            assert!(
                anchors[0].len() == 1 || anchors[0].len() >= 3,
                "`{}`: Teddy keys on 3 bytes; a shorter anchor shortens every fingerprint",
                anchors[0]
            );
        }
        for (kw, _) in ANCHORS {
            assert!(keywords.iter().any(|k| k == kw), "`{kw}` is no keyword");
        }
        for (id, _) in WINDOWED {
            let d = DETECTORS.iter().find(|d| d.id == *id).unwrap();
            assert!(
                d.pattern.starts_with("(?i)"),
                "{id}: only (?i) detectors are windowed"
            );
        }
    }

    /// The premise of the [`WINDOWED`] fallback: under `(?i)`, the only non-ASCII
    /// characters matching an ASCII letter are the Kelvin sign (`k`) and the long s
    /// (`s`).
    #[test]
    fn unicode_case_folding_reaches_ascii_letters_only_from_kelvin_and_long_s() {
        let hir = regex_syntax::parse("(?i)[a-z]").unwrap();
        let regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) =
            hir.kind()
        else {
            panic!("not a Unicode class: {hir:?}");
        };
        let extra: Vec<char> = class
            .iter()
            .flat_map(|r| r.start()..=r.end())
            .filter(|c| !c.is_ascii())
            .collect();
        assert_eq!(extra, vec!['\u{17F}', '\u{212A}']);
    }

    /// The forms `.env` files, compose files, shell exports and agents' tool calls
    /// give secrets in (the adversarial run of 2026-12-05 found 14 of these 16 kept).
    #[test]
    fn assignments_to_names_holding_a_secret_word_are_redacted() {
        let r = redactor();
        for (text, secret) in [
            ("DB_PASSWORD=Sup3rSecretPw1", "Sup3rSecretPw1"),
            ("POSTGRES_PASSWORD=Sup3rSecretPw2", "Sup3rSecretPw2"),
            ("PGPASSWORD=Sup3rSecretPw3 psql", "Sup3rSecretPw3"),
            ("MYSQL_ROOT_PASSWORD: Sup3rSecretPw4", "Sup3rSecretPw4"),
            ("GITHUB_TOKEN=Sup3rSecretTok5", "Sup3rSecretTok5"),
            ("SECRET_KEY=Sup3rSecretKey6", "Sup3rSecretKey6"),
            ("JWT_SECRET=Sup3rSecretKey7", "Sup3rSecretKey7"),
            ("OPENAI_API_KEY=Sup3rSecretKey8", "Sup3rSecretKey8"),
            ("STRIPE_SECRET=Sup3rSecretKey9", "Sup3rSecretKey9"),
            ("password=Sup3rSecretPw10", "Sup3rSecretPw10"),
            ("api_key=Sup3rSecretKey11", "Sup3rSecretKey11"),
            ("my_password=Sup3rSecretPw12", "Sup3rSecretPw12"),
            ("adminPassword=Sup3rSecretPw13", "Sup3rSecretPw13"),
            (r#""dbPassword": "Sup3rSecretPw14""#, "Sup3rSecretPw14"),
            ("token=Sup3rSecretTok15", "Sup3rSecretTok15"),
            ("TOKEN: Sup3rSecretTok16", "Sup3rSecretTok16"),
            (
                r#"curl -d "{\"username\":\"bob\",\"password\":\"Esc4pedSecretZZ\"}""#,
                "Esc4pedSecretZZ",
            ),
        ] {
            for out in [r.redact(text), r.redact_reference(text)] {
                assert_eq!(out.count, 1, "{text:?} -> {:?}", out.text);
                assert!(!out.text.contains(secret), "{text:?} -> {:?}", out.text);
                assert!(
                    out.text.contains("[REDACTED:password-assignment]"),
                    "{:?}",
                    out.text
                );
            }
        }
        // Names that only contain the word, and counts, stay.
        for text in [
            "tokenizer: bert-base-uncased",
            "max_tokens=4096 and token_count = 1234567",
            "secretary: Janet Smith",
            "password_hash_algorithm is argon2id",
        ] {
            assert_eq!(r.redact(text).count, 0, "{text:?}");
        }
    }

    #[test]
    fn shortest_match_is_what_the_patterns_allow() {
        let r = redactor();
        // `pwd=` and a 6-character value.
        assert_eq!(r.min_len, 10);
        assert_eq!(r.redact("pwd=abcdef").count, 1);
        assert_eq!(r.redact_reference("pwd=abcdef").count, 1);
    }

    /// Cases built to separate the fast path from the reference: overlapping and
    /// nested keywords, keywords of one detector inside another's match, case, the
    /// windowed reach at its limits, Kelvin sign and long s, NUL bytes, keywords
    /// split across two strings of one JSON value.
    #[test]
    fn fast_path_finds_what_the_reference_finds_on_traps() {
        let r = redactor();
        let all = examples();
        let gh_text = &all[6].1;
        let pem = &all[0].1;
        let traps = [
            "sk-----BEGIN PRIVATE KEY----- abc".to_owned(),
            format!("x{pem}y sk-ant-api03-{} and sk-{}", "a".repeat(30), "b".repeat(40)),
            "secret_accesskey = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY and secret-access-key".into(),
            "SECRET_ACCESS_KEY: \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"".into(),
            "refresh_token=abcdefgh; REFRESH-TOKEN: abcdefghij; refreshtoken=abcdefgh".into(),
            "client_secret: zyxwvu987 client-secret=\"q1w2e3r4\" xclient_secret=nope123".into(),
            "api_key=123456 API-KEY: abcdefg apikey=zzzzzzzz Api_Key = '1234567'".into(),
            "paſſword=hunter22 token x".into(),
            "password=hunter22 api_\u{212A}ey=abcdefgh token".into(),
            "passphrase = correct-horse pwd:abcdefg\0password=abc\0defgh".into(),
            "acca ACCAABCDEF234567ABCD asia ASIAQ3EGUSXAMPLE7NBZ".into(),
            "hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXX https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX".into(),
            "DefaultEndpointsProtocol=https;ACCOUNTKEY=".to_owned() + &"A".repeat(86) + "==",
            "postgres://u:pw1@h http://a:b@c ftp://user:secret99@host x://y:zzz@w".into(),
            "abc8Q~".to_owned() + &"x".repeat(33) + " q~ Q~~ ~",
            format!("{gh_text} ghp_short github_pat_{}", "A".repeat(70)),
            "eyJabcdefghi.eyJabcdefghi.abcdefghij TOKEN=abcdef tok token:".into(),
            "password password password=x password=xxxxxxxxx".into(),
            "caféé password=«secretvalue» naïve token=日本語のトークン".into(),
            "DB_PASSWORD=abcdefgh PGPASSWORD=abcdefgh xPassword: 'abcdefg' SECRET_KEY=abcdefgh".into(),
            r#"curl -d "{\"password\":\"abcdefgh\"}" GITHUB_TOKEN=abcdef tokenizer=abcdefgh"#.into(),
            "npm_short hf_ pypi- dop_v1_ doo_v1_abc".into(),
        ];
        // Padded, so that the windowed detectors take their anchored tries rather
        // than one pass (short texts with many keywords get the pass).
        let filler = " lorem ipsum dolor".repeat(200);
        for t in traps
            .iter()
            .flat_map(|t| [t.clone(), format!("{t}{filler}")])
        {
            assert_eq!(r.redact(&t), r.redact_reference(&t), "{t:?}");
        }
        let mut a = serde_json::json!({
            "a": "password=", "b": "hunter2hunter2", "c": [traps[4].clone(), "pwd", "x"],
            "d": {"e": traps[8].clone(), "f": traps[9].clone()}, "g": 3,
            "h": traps.to_vec(), "i": traps.iter().map(|t| format!("{filler}{t}")).collect::<Vec<_>>(),
        });
        let mut b = a.clone();
        assert_eq!(r.redact_json(&mut a), r.redact_json_reference(&mut b));
        assert_eq!(a, b);
    }
}
