//! Secret redaction: finds credentials people pasted into transcripts and memories
//! (cloud keys, service tokens, JWTs, private keys, passwords) and replaces each with
//! `[REDACTED:<detector>]`.
//!
//! The host applies it to every skill's output — the engine's structured JSON (every
//! string in it) and the rendered text — unless the skill's document sets
//! `redact-secrets: false`; `skills ingest --redact` applies it to message text before
//! it is stored. Stores otherwise keep the raw text.
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
//! - keywords are found through rare substrings of theirs ([`ANCHORS`]) by a SIMD
//!   multi-literal searcher over a lower-cased copy, instead of an automaton stepping
//!   through every byte;
//! - all strings of a JSON result share one search (one buffer, NUL-separated);
//! - the three case-insensitive detectors, whose regexes have no literal prefix the
//!   regex engine could skip to, are tried only at the few places before a keyword
//!   where a match can start ([`WINDOWED`]).
//!
//! The rendered text is redacted on its own, after the structured data: a template
//! joins values with its own text (`password=` before a value) and transforms them
//! (`cell` turns newlines into `<br>`), so a secret can appear in the text that no
//! single value held, and clean values do not prove clean text.
//!
//! What it does not do: entropy scoring, or secrets without a recognisable shape (a
//! bare random string with no keyword before it is left alone).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick};
use regex_automata::{meta, Anchored, Input};
use serde_json::Value;

/// One kind of secret.
#[derive(Debug)]
pub struct Detector {
    /// Stable id, shown in the replacement: `[REDACTED:<id>]`.
    pub id: &'static str,
    /// What it finds, for documentation.
    pub description: &'static str,
    /// Substrings (matched ASCII case-insensitively) one of which every match contains;
    /// the regex runs only on text holding one.
    pub keywords: &'static [&'static str],
    /// The pattern (Rust `regex` syntax).
    pub pattern: &'static str,
    /// Capture group holding the secret (0: the whole match). For `password=…` and
    /// URL credentials only the value is replaced, so the text stays readable.
    pub group: usize,
}

/// The detector set, in the order they are tried; where two matches overlap, the one
/// that starts first wins.
pub const DETECTORS: &[Detector] = &[
    Detector {
        id: "private-key",
        description: "PEM private-key block (RSA, EC, DSA, OpenSSH, PKCS#8, PGP), also when cut short",
        keywords: &["-----BEGIN"],
        pattern: r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
        group: 0,
    },
    Detector {
        id: "aws-access-key-id",
        description: "AWS access key id (`AKIA…`, `ASIA…`, 20 characters)",
        keywords: &["akia", "asia", "abia", "acca"],
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?-u:\b)",
        group: 0,
    },
    Detector {
        id: "aws-secret-access-key",
        description: "AWS secret access key after `aws_secret_access_key` (40 base64 characters)",
        keywords: &["secret_access_key", "secretaccesskey", "secret-access-key"],
        pattern: r#"(?i)secret[_-]?access[_-]?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})"#,
        group: 1,
    },
    Detector {
        id: "gcp-api-key",
        description: "Google Cloud / Firebase API key (`AIza…`, 39 characters)",
        keywords: &["aiza"],
        pattern: r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}",
        group: 0,
    },
    Detector {
        id: "azure-storage-key",
        description: "Azure storage account key in a connection string (`AccountKey=…`)",
        keywords: &["accountkey="],
        pattern: r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)",
        group: 1,
    },
    Detector {
        id: "azure-client-secret",
        description: "Azure AD (Entra ID) client secret (`…Q~…`, 40 characters)",
        keywords: &["q~"],
        pattern: r"(?-u:\b)[A-Za-z0-9_.\-]{3}[0-9]Q~[A-Za-z0-9_.~\-]{31,34}",
        group: 0,
    },
    Detector {
        id: "github-token",
        description: "GitHub token: classic and app tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) and fine-grained (`github_pat_`)",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})",
        group: 0,
    },
    Detector {
        id: "gitlab-token",
        description: "GitLab token (`glpat-`, `gldt-`, `glrt-`, `glptt-`, `glcbt-`, `glft-`, `gloas-`)",
        keywords: &["glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "gloas-"],
        pattern: r"(?-u:\b)(?:glpat|gldt|glrt|glptt|glcbt|glft|gloas)-[0-9A-Za-z_\-]{20,}",
        group: 0,
    },
    Detector {
        id: "slack-token",
        description: "Slack token (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxo-`) or incoming-webhook URL",
        keywords: &["xox", "hooks.slack.com"],
        pattern: r"(?-u:\b)xox[abposr]-[0-9A-Za-z\-]{10,}|https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}",
        group: 0,
    },
    Detector {
        id: "stripe-key",
        description: "Stripe secret or restricted key (`sk_live_`, `sk_test_`, `rk_live_`, `rk_test_`)",
        keywords: &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        pattern: r"(?-u:\b)[rs]k_(?:live|test)_[0-9A-Za-z]{20,}",
        group: 0,
    },
    Detector {
        id: "anthropic-key",
        description: "Anthropic API key (`sk-ant-…`)",
        keywords: &["sk-ant-"],
        pattern: r"(?-u:\b)sk-ant-[a-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}",
        group: 0,
    },
    Detector {
        id: "openai-key",
        description: "OpenAI API key (`sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`, legacy `sk-…` of 32+ characters)",
        keywords: &["sk-"],
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{32,})",
        group: 0,
    },
    Detector {
        id: "jwt",
        description: "JSON Web Token (three base64url parts, the first two JSON objects: `eyJ….eyJ….…`)",
        keywords: &["eyj"],
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        group: 0,
    },
    Detector {
        id: "url-credentials",
        description: "password in a URL's user information (`scheme://user:password@host`)",
        keywords: &["://"],
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@"'<>]{1,100}:([^\s:/@"'<>]{3,200})@"#,
        group: 1,
    },
    Detector {
        id: "password-assignment",
        description: "value assigned to a password, secret, API key or token name (`password=…`, `\"api_key\": \"…\"`, `client_secret: …`), 6+ characters",
        keywords: &[
            "password", "passwd", "pwd", "passphrase", "secret", "api_key", "apikey",
            "api-key", "token",
        ],
        pattern: r#"(?i)(?-u:\b)(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token)["']?\s*[:=]\s*["']?([^\s"'`&;,$<{(%\[\]][^\s"'`&;,]{5,})"#,
        group: 1,
    },
];

/// Where each keyword is looked for by [`Redactor::redact`]'s keyword search: a
/// substring of the (lower-case) keyword, `(keyword, anchor)`. The search looks for
/// anchors only (SIMD "Teddy", which keys on an anchor's first three bytes), so each
/// is chosen to be rare in prose and code: `"sia"` for `asia` (`basic` would match
/// `asi`), `"ecret"` for every `secret…`, `"k_live_"` shared by `sk_live_` and
/// `rk_live_`. An anchor of one byte is found with `memchr` instead (`~` of `q~`:
/// Teddy's fingerprints are as short as its shortest pattern). A unit test checks
/// that every keyword has exactly one anchor inside it.
const ANCHORS: &[(&str, &str)] = &[
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

/// Detectors whose regex is tried only near keywords, with their reach: every match
/// starts at most `reach` bytes before the start of a keyword occurrence (of any
/// detector) inside it — `password-assignment`'s longest name before its keyword is
/// `refresh_` (8 bytes before `token`), `client_` before `secret` 7, the others 0;
/// `aws-secret-access-key` starts with `secret`, `azure-storage-key` with
/// `accountkey=`. All three are case-insensitive (`(?i)`), where Unicode folds `k`
/// with the Kelvin sign `K` and `s` with the long s `ſ`: text holding either is
/// searched whole, as the reference does. The other detectors' regexes start with a
/// literal the regex engine finds itself, so a whole pass costs little.
const WINDOWED: &[(&str, usize)] = &[
    ("aws-secret-access-key", 0),
    ("azure-storage-key", 0),
    ("password-assignment", 8),
];

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

/// Finds every occurrence (overlapping ones included) of every keyword, ASCII
/// case-insensitively, in ASCII-lower-cased text: anchors ([`ANCHORS`]) with a
/// packed SIMD searcher, each hit checked against the keywords anchored there.
struct KeywordSearch {
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
    fn new(keywords: &[&str]) -> Result<Self, String> {
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
    fn find(&self, lower: &[u8]) -> Vec<(usize, usize)> {
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

/// `pattern` compiled as the `regex` crate's `Regex::new` compiles it (same syntax and engine
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
        out.push_str("[REDACTED:");
        out.push_str(DETECTORS[i].id);
        out.push(']');
        at = end;
    }
    out.push_str(&text[at..]);
    Redacted {
        text: Cow::Owned(out),
        count: spans.len(),
    }
}

/// The detector set as markdown table rows, `| `id` | description |` (README's
/// security section; a test keeps it in step with [`DETECTORS`]).
pub fn detector_table() -> String {
    DETECTORS
        .iter()
        .map(|d| format!("| `{}` | {} |\n", d.id, d.description))
        .collect()
}

/// One fake secret per detector, as `(detector id, text containing it, the secret)`,
/// assembled at run time from pieces so that no secret-shaped literal sits in the
/// source. For tests and benchmarks: none of them is a live credential.
pub fn examples() -> Vec<(&'static str, String, String)> {
    let rep = |c: &str, n: usize| c.repeat(n);
    let b64 = |n: usize| {
        "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZg"
            .chars()
            .cycle()
            .take(n)
            .collect::<String>()
    };
    let key_line = format!("{}{}", "-----BEGIN RSA PRIVATE", " KEY-----");
    let key_end = format!("{}{}", "-----END RSA PRIVATE", " KEY-----");
    let pem = format!("{key_line}\n{}\n{}\n{key_end}", b64(64), b64(40));
    let aws_id = format!("{}{}", "AK", "IAQ3EGUSXAMPLE7NBZ");
    let aws_secret = format!("{}{}", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY");
    let gcp = format!("{}{}{}", "AI", "za", b64(35));
    let azure_key = format!("{}==", b64(86));
    let azure_secret = format!("{}{}{}", "abc8Q", "~", b64(32));
    let github = format!("{}{}{}", "gh", "p_", b64(36));
    let gitlab = format!("{}{}{}", "glp", "at-", b64(20));
    let slack = format!("{}{}-{}", "xo", "xb-123456789012-1234567890123", b64(24));
    let stripe = format!("{}{}{}", "sk_li", "ve_", b64(24));
    let anthropic = format!("{}{}{}", "sk-an", "t-api03-", rep("Ab3dE", 18));
    let openai = format!("{}{}{}", "sk-pr", "oj-", b64(40));
    let jwt = format!(
        "{}{}.{}{}.{}",
        "eyJhbGciOiJIUzI1NiIs",
        "InR5cCI6IkpXVCJ9",
        "eyJzdWIiOiIxMjM0NTY3",
        "ODkwIiwibmFtZSI6IkphbmUifQ",
        b64(43)
    );
    let url_password = "s3cr3tP4ss".to_owned();
    let password = "hunter2-Correct-Horse".to_owned();
    vec![
        ("private-key", format!("my key:\n{pem}\nend"), pem),
        ("aws-access-key-id", format!("export AWS_ACCESS_KEY_ID={aws_id}"), aws_id),
        (
            "aws-secret-access-key",
            format!("aws_secret_access_key = {aws_secret}"),
            aws_secret,
        ),
        ("gcp-api-key", format!("key={gcp}&q=1"), gcp),
        (
            "azure-storage-key",
            format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={azure_key};EndpointSuffix=core.windows.net"),
            azure_key,
        ),
        ("azure-client-secret", format!("client secret is {azure_secret} ok"), azure_secret),
        ("github-token", format!("git clone https://x:{github}@github.com/o/r"), github),
        ("gitlab-token", format!("use token {gitlab} for CI"), gitlab),
        ("slack-token", format!("SLACK_BOT_TOKEN {slack}"), slack),
        ("stripe-key", format!("stripe.api_key = '{stripe}'"), stripe),
        ("anthropic-key", format!("ANTHROPIC_API_KEY {anthropic}"), anthropic),
        ("openai-key", format!("OPENAI key {openai} here"), openai),
        ("jwt", format!("Authorization: Bearer {jwt}"), jwt),
        (
            "url-credentials",
            format!("postgres://admin:{url_password}@db.internal:5432/app"),
            url_password,
        ),
        ("password-assignment", format!("login with password={password} please"), password),
    ]
}

#[cfg(test)]
mod tests {
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
