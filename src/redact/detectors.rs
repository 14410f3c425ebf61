//! The documented detector set: each detector's id, keywords and pattern, which of
//! them are tried only near their keywords, and the README table and examples
//! generated from it. Data only; [`Redactor`](super::Redactor) compiles it.

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
        id: "npm-token",
        description: "npm access token (`npm_…`, 36 characters after the prefix)",
        keywords: &["npm_"],
        pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        group: 0,
    },
    Detector {
        id: "huggingface-token",
        description: "Hugging Face access token (`hf_…`, 34 letters after the prefix)",
        keywords: &["hf_"],
        pattern: r"(?-u:\b)hf_[A-Za-z]{34}(?-u:\b)",
        group: 0,
    },
    Detector {
        id: "pypi-token",
        description: "PyPI upload token (`pypi-AgEIcHlwaS5vcmc…`)",
        keywords: &["pypi-"],
        pattern: r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
        group: 0,
    },
    Detector {
        id: "digitalocean-token",
        description: "DigitalOcean token (`dop_v1_`, `doo_v1_`, `dor_v1_` and 64 hex digits)",
        keywords: &["dop_v1_", "doo_v1_", "dor_v1_"],
        pattern: r"(?-u:\b)do[por]_v1_[a-f0-9]{64}(?-u:\b)",
        group: 0,
    },
    Detector {
        id: "password-assignment",
        description: "value assigned to a name holding password, passwd, pwd, passphrase, secret, API key or token, optionally followed by `_key`/`_token` (`password=…`, `DB_PASSWORD=…`, `GITHUB_TOKEN=…`, `SECRET_KEY: …`, `\"dbPassword\": \"…\"`, JSON escaped in a shell command), 6+ characters; a value with spaces is cut at the first",
        keywords: &[
            "password", "passwd", "pwd", "passphrase", "secret", "api_key", "apikey",
            "api-key", "token",
        ],
        pattern: r#"(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|token)(?:[_-]?(?:key|token))?(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?([^\s"'`&;,$<{(%\[\]\\](?:[^\s"'`&;,\\]|\\[^\s"'\\]){5,})"#,
        group: 1,
    },
];

/// Detectors whose regex is tried only near keywords, with their reach: every match
/// starts at most `reach` bytes before the start of a keyword occurrence (of any
/// detector) inside it — all three start at a keyword (`password-assignment` at the
/// name part that is its keyword: `DB_PASSWORD=` from `PASSWORD`, `client_secret`
/// from `secret`; `aws-secret-access-key` at `secret`, `azure-storage-key` at
/// `accountkey=`). All three are case-insensitive (`(?i)`), where Unicode folds `k`
/// with the Kelvin sign `K` and `s` with the long s `ſ`: text holding either is
/// searched whole, as the reference does. The other detectors' regexes start with a
/// literal the regex engine finds itself, so a whole pass costs little.
pub(super) const WINDOWED: &[(&str, usize)] = &[
    ("aws-secret-access-key", 0),
    ("azure-storage-key", 0),
    ("password-assignment", 0),
];

/// The detector set as markdown table rows, `| `id` | description |` (README's
/// security section; a test keeps it in step with [`DETECTORS`]).
#[cfg(test)]
pub fn detector_table() -> String {
    DETECTORS
        .iter()
        .map(|d| format!("| `{}` | {} |\n", d.id, d.description))
        .collect()
}

/// One fake secret per detector, as `(detector id, text containing it, the secret)`,
/// assembled at run time from pieces so that no secret-shaped literal sits in the
/// source. For tests and benchmarks (feature `bench`): none of them is a live
/// credential.
#[cfg(any(test, feature = "bench"))]
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
    let npm = format!("{}{}{}", "np", "m_", rep("Ab3dE6", 6));
    let hf = format!("{}{}{}", "h", "f_", rep("AbCdEfGhIjKlMnOpQ", 2));
    let pypi = format!("{}{}{}", "pyp", "i-AgEIcHlwaS5vcmc", b64(60));
    let digitalocean = format!("{}{}{}", "do", "p_v1_", rep("0123456789abcdef", 4));
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
        ("npm-token", format!("//registry.npmjs.org/:_authToken {npm}"), npm),
        ("huggingface-token", format!("huggingface-cli login --token {hf}"), hf),
        ("pypi-token", format!("twine upload -p {pypi} dist/*"), pypi),
        ("digitalocean-token", format!("doctl auth init -t {digitalocean}"), digitalocean),
        ("password-assignment", format!("login with password={password} please"), password),
    ]
}
