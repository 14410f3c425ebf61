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
//! PRIVATE KEY-----`), written for this project. Cost: one Aho-Corasick pass over the
//! text for every detector's keywords (ASCII case-insensitive); a detector's regex
//! runs only on text holding one of its keywords, so text without any costs a single
//! linear scan. Word boundaries are ASCII (`(?-u:\b)`): every keyword is ASCII, and a
//! Unicode `\b` would make the regex engine leave its DFA for the slow one on any
//! text holding a non-ASCII character (it made redaction cost half a search on such
//! output).
//!
//! What it does not do: entropy scoring, or secrets without a recognisable shape (a
//! bare random string with no keyword before it is left alone).

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::Regex;
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

/// The compiled detector set. Build once ([`Redactor::global`]) and share.
pub struct Redactor {
    /// Keywords of every detector, in [`DETECTORS`] order.
    prefilter: AhoCorasick,
    /// For each prefilter pattern, the detector it belongs to.
    keyword_owner: Vec<usize>,
    regexes: Vec<Regex>,
}

/// Text with its secrets replaced, and how many were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text (borrowed when nothing was found).
    pub text: Cow<'a, str>,
    /// Number of secrets replaced.
    pub count: usize,
}

impl Redactor {
    /// Compiles [`DETECTORS`].
    ///
    /// # Errors
    /// A message naming the detector whose pattern or keywords do not compile (a bug
    /// in this module; the unit tests compile every one).
    pub fn new() -> Result<Self, String> {
        let mut keywords = Vec::new();
        let mut keyword_owner = Vec::new();
        let mut regexes = Vec::new();
        for (i, d) in DETECTORS.iter().enumerate() {
            for k in d.keywords {
                keywords.push(*k);
                keyword_owner.push(i);
            }
            regexes.push(Regex::new(d.pattern).map_err(|e| format!("detector `{}`: {e}", d.id))?);
        }
        let prefilter = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&keywords)
            .map_err(|e| format!("detector keywords: {e}"))?;
        Ok(Self {
            prefilter,
            keyword_owner,
            regexes,
        })
    }

    /// The process-wide redactor, compiled on first use; `None` only if a detector
    /// failed to compile (never with the shipped set: see the unit tests).
    pub fn global() -> Option<&'static Self> {
        static GLOBAL: OnceLock<Option<Redactor>> = OnceLock::new();
        GLOBAL.get_or_init(|| Self::new().ok()).as_ref()
    }

    /// Replaces every secret in `text` with `[REDACTED:<detector id>]`.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
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
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        for (i, re) in self.regexes.iter().enumerate() {
            if candidates & (1 << i) == 0 {
                continue;
            }
            let group = DETECTORS[i].group;
            for caps in re.captures_iter(text) {
                let Some(m) = caps.get(group) else { continue };
                if m.is_empty() {
                    continue;
                }
                let overlaps = spans.iter().any(|&(s, e, _)| m.start() < e && s < m.end());
                if !overlaps {
                    spans.push((m.start(), m.end(), i));
                }
            }
        }
        if spans.is_empty() {
            return Redacted {
                text: Cow::Borrowed(text),
                count: 0,
            };
        }
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

    /// Redacts every string inside `value` (object keys are left as they are) and
    /// returns how many secrets were replaced.
    pub fn redact_json(&self, value: &mut Value) -> usize {
        match value {
            Value::String(s) => {
                let r = self.redact(s);
                let count = r.count;
                if let Cow::Owned(new) = r.text {
                    *s = new;
                }
                count
            }
            Value::Array(items) => items.iter_mut().map(|v| self.redact_json(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.redact_json(v)).sum(),
            _ => 0,
        }
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
}
