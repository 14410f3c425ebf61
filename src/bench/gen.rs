//! A deterministic, seeded generator of conversation corpora for benchmarks.
//!
//! The same [`Spec`] always yields the same messages, byte for byte, on every machine:
//! the random source is a fixed xorshift64* seeded through splitmix64, and no clock,
//! environment or hash-map order is read.
//!
//! Shape of the corpus (tuned so that 1,000,000 messages hold about 400 MB of text):
//! - words drawn from a Zipf distribution (exponent 1) over a vocabulary of about
//!   60,000 entries: English function words first, then technical tokens
//!   (`serde`, `tokio`, `user_id`…), some multibyte words (`café`, `CAFÉ`, `Straße`,
//!   `Σοφία`, `東京`, `🚀`…), then syllable-built pseudo-words that never contain `q`,
//!   `x` or `z` (so a term such as [`ABSENT_TERM`] never matches);
//! - mixed lengths: most user messages are short, some assistant messages are long,
//!   and a fifth of assistant messages carry a fenced code block (`async fn …`);
//! - about a third of user messages ask a question (`?`);
//! - conversations of 2–60 alternating user/assistant messages, starting at a uniform
//!   time over the two years 2024-01-01 – 2025-12-31 (UTC), emitted in random time order
//!   (as an importer walking session files by name would store them), across four
//!   sources (`claude-code`, `chatgpt`, `codex`, `gemini-cli`);
//! - [`RARE_TERM`] planted in about 3 messages per 100,000.
//!
//! Entry points: [`Generator`] (an iterator of conversations), [`fill_store`] (rows
//! straight into a [`ConversationStore`]) and [`write_claude_code_tree`] (the same
//! conversations as Claude Code session JSONL files, for the ingest benchmark).
//!
//! Kept in one file: the generator is one deterministic stream (word lists, shapes, seeds) that the benchmarks and tests depend on staying byte-identical.

use std::io::Write;
use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};

use crate::ingest::Message;
use crate::stores::conversations::ConversationStore;
use crate::stores::memories::Memory;
use crate::stores::StoreError;

/// A term planted in about 3 of every 100,000 messages (mixed case: `Persofi`).
pub const RARE_TERM: &str = "persofi";

/// A term no generated message contains.
pub const ABSENT_TERM: &str = "zqxjvkw";

/// A small, fast, deterministic random source (xorshift64*, seeded by splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, including 0).
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Self(z | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (`n` > 0; returns 0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        let wide = u128::from(self.next_u64()) * u128::from(n);
        // The high half of a 64×64 product fits in 64 bits.
        u64::try_from(wide >> 64).unwrap_or(0)
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        let span = u64::try_from(hi.saturating_sub(lo)).unwrap_or(u64::MAX - 1) + 1;
        lo + usize::try_from(self.below(span)).unwrap_or(0)
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // 53 bits fit an f64 mantissa exactly
        let bits = (self.next_u64() >> 11) as f64;
        bits / 9_007_199_254_740_992.0
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let i = usize::try_from(self.below(items.len() as u64)).unwrap_or(0);
        &items[i.min(items.len().saturating_sub(1))]
    }

    /// A lowercase hex id shaped like a UUID (8-4-4-4-12).
    pub fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            (b >> 48) | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }
}

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Exact number of messages.
    pub messages: usize,
    /// Seed; the same seed gives the same corpus.
    pub seed: u64,
}

impl Spec {
    /// `messages` messages with the default seed (`0x5EED`).
    pub fn new(messages: usize) -> Self {
        Self {
            messages,
            seed: 0x5EED,
        }
    }
}

/// Function words, in rough frequency order (the head of the Zipf distribution).
#[rustfmt::skip]
const COMMON: &[&str] = &[
    "the", "to", "and", "a", "of", "is", "in", "it", "that", "for", "you", "this", "i", "with",
    "on", "be", "not", "are", "as", "we", "can", "have", "do", "but", "if", "or", "from", "at",
    "by", "an", "what", "so", "will", "there", "all", "one", "would", "use", "which", "when",
    "how", "then", "should", "about", "like", "just", "also", "need", "file", "code", "function",
    "error", "test", "data", "type", "value", "make", "new", "run", "change", "here", "now",
    "time", "work", "because", "into", "only", "some", "more", "other", "than", "them", "these",
    "each", "first", "way", "see", "check", "let", "get", "set", "add", "fix", "build", "update",
    "my", "your", "our", "was", "were", "has", "had", "does", "did", "no", "yes", "it's", "don't",
    "i'm", "let's", "same", "still", "why", "where", "who", "any", "every", "both", "few", "most",
    "case", "line", "list", "name", "path", "call", "return", "result", "output", "input", "step",
    "issue", "problem", "question", "answer", "think", "know", "want", "try", "look", "good",
    "right", "wrong", "sure", "thanks", "please", "okay", "maybe", "again", "before", "after",
    "while", "without", "between", "over", "under", "same", "different", "small", "large",
];

/// Technical tokens (identifiers, tools, paths), ranked after [`COMMON`].
#[rustfmt::skip]
const TECH: &[&str] = &[
    "serde", "tokio", "async", "fn", "struct", "impl", "trait", "Result", "Option", "Vec",
    "String", "DuckDB", "SQLite", "query", "index", "cargo", "clippy", "rustc", "python",
    "JSON", "schema", "MCP", "server", "client", "user_id", "max_tokens", "created_at",
    "conversation_id", "message_id", "HashMap", "Arc", "Mutex", "GitHub", "README.md",
    "src/main.rs", "Cargo.toml", "https://docs.rs/serde", "http://localhost:8080", "unwrap",
    "expect", "panic", "lifetime", "borrow", "closure", "iterator", "generic", "macro",
    "module", "crate", "feature", "dependency", "benchmark", "latency", "throughput",
    "memory", "thread", "runtime", "request", "response", "endpoint", "token", "embedding",
    "vector", "search", "ILIKE", "SELECT", "WHERE", "ORDER", "LIMIT", "table", "column", "row",
    "transaction", "commit", "branch", "merge", "rebase", "docker", "kubernetes", "deploy",
    "config", "env", "log", "debug", "release", "compile", "link", "binary", "library",
    "snake_case", "__init__", "self", "mut", "ref", "pub", "use", "mod", "match", "enum",
    "npm", "node", "react", "typescript", "javascript", "API", "REST", "HTTP", "TCP", "stdio",
    "stdin", "stdout", "stderr", "JSONL", "parquet", "arrow", "pandas", "numpy", "regex",
    "memchr", "SIMD", "cache", "buffer", "offset", "bytes", "UTF-8", "unicode", "tests",
    "fixture", "snapshot", "insta", "assert_eq", "Ok", "Err", "None", "Some", "await",
    "spawn", "channel", "stream", "future", "poll", "wake", "pin", "box", "dyn", "Send",
    "Sync", "Clone", "Debug", "Default", "Display", "From", "Into", "TryFrom", "AsRef",
];

/// Multibyte words, including case variants whose folding differs by script.
#[rustfmt::skip]
const MULTIBYTE: &[&str] = &[
    "café", "Café", "CAFÉ", "naïve", "résumé", "Straße", "Zürich", "Ελληνικά", "Σοφία",
    "ΣΟΦΙΑ", "日本語", "東京", "中文", "привет", "Москва", "ПРИВЕТ", "🚀", "✓", "→", "İstanbul",
    "Ærø", "façade", "jalapeño", "Ōsaka", "한국어", "emoji😀", "coöperate", "ﬁle", "crème",
];

#[rustfmt::skip]
const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "br", "ch",
    "cl", "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr",
];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"];
const CODAS: &[&str] = &["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st"];

const SOURCES: &[(&str, u64)] = &[
    ("claude-code", 50),
    ("chatgpt", 25),
    ("codex", 15),
    ("gemini-cli", 10),
];
const MODELS: &[&str] = &[
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "gpt-4o",
    "gpt-5",
    "gemini-2.5-pro",
];
const PROJECTS: &[&str] = &[
    "/home/dev/skills",
    "/home/dev/brain-mcp",
    "/home/dev/website",
    "/home/dev/notes",
    "/home/dev/ml-pipeline",
    "/home/dev/infra",
    "/home/dev/game",
    "/home/dev/dotfiles",
];

/// Code lines; `{}` is replaced by a random identifier piece.
const CODE_LINES: &[&str] = &[
    "async fn {}_{}(id: u64) -> Result<{}, Error> {",
    "    let {}_id = {}.get(\"{}\")?;",
    "    for {} in {}.iter() {",
    "        if {}.is_empty() { continue; }",
    "    }",
    "    let mut {} = Vec::with_capacity(16);",
    "    {}.push({}_{});",
    "    tokio::spawn(async move { {}.await });",
    "    Ok({})",
    "}",
    "def {}_{}(self, {}):",
    "    return {}[\"{}\"]",
    "SELECT {} FROM {} WHERE user_id = ? ORDER BY created_at DESC;",
    "const {} = await fetch(`/api/{}`);",
];

/// The vocabulary and its Zipf cumulative distribution.
struct Vocabulary {
    words: Vec<String>,
    /// `cdf[i]` = P(rank ≤ i), increasing, last = 1.
    cdf: Vec<f64>,
}

/// Size of the vocabulary, including the syllable-built pseudo-words.
const VOCABULARY: usize = 60_000;

impl Vocabulary {
    fn new(rng: &mut Rng) -> Self {
        let mut words: Vec<String> = COMMON.iter().map(|w| (*w).to_owned()).collect();
        words.extend(TECH.iter().map(|w| (*w).to_owned()));
        words.extend(MULTIBYTE.iter().map(|w| (*w).to_owned()));
        let mut seen: std::collections::BTreeSet<String> = words.iter().cloned().collect();
        while words.len() < VOCABULARY {
            let syllables = rng.range(1, 4);
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(rng.pick::<&str>(ONSETS));
                w.push_str(rng.pick::<&str>(VOWELS));
                w.push_str(rng.pick::<&str>(CODAS));
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut cdf = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for rank in 1..=words.len() {
            #[allow(clippy::cast_precision_loss)] // ranks < 2^53
            let weight = 1.0 / rank as f64;
            total += weight;
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        Self { words, cdf }
    }

    fn word(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        let i = self.cdf.partition_point(|&c| c < u);
        &self.words[i.min(self.words.len() - 1)]
    }
}

/// An endless-until-`spec.messages` iterator of generated conversations; each item is
/// one conversation's messages in order (the last one may be cut short so the total is
/// exactly `spec.messages`).
pub struct Generator {
    rng: Rng,
    vocab: Vocabulary,
    remaining: usize,
    start: DateTime<Utc>,
    span_secs: u64,
}

impl Generator {
    /// A generator for `spec`.
    pub fn new(spec: Spec) -> Self {
        let mut rng = Rng::new(spec.seed);
        let vocab = Vocabulary::new(&mut rng);
        let start = Utc
            .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or(DateTime::UNIX_EPOCH);
        Self {
            rng,
            vocab,
            remaining: spec.messages,
            start,
            span_secs: 2 * 365 * 86_400,
        }
    }

    fn sentence(&mut self, words: usize, question: bool, out: &mut String) {
        for i in 0..words {
            if i > 0 {
                out.push(' ');
            }
            let w = self.vocab.word(&mut self.rng);
            if i == 0 {
                let mut chars = w.chars();
                if let Some(c) = chars.next() {
                    out.extend(c.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push_str(w);
            }
        }
        out.push(if question { '?' } else { '.' });
    }

    fn code_block(&mut self, out: &mut String) {
        let lang = *self.rng.pick(&["rust", "python", "sql", "ts", ""]);
        out.push_str("\n\n```");
        out.push_str(lang);
        out.push('\n');
        let lines = self.rng.range(3, 12);
        for _ in 0..lines {
            let template = *self.rng.pick(CODE_LINES);
            let mut pieces = template.split("{}");
            if let Some(first) = pieces.next() {
                out.push_str(first);
            }
            for rest in pieces {
                let w = self.ident();
                out.push_str(&w);
                out.push_str(rest);
            }
            out.push('\n');
        }
        out.push_str("```\n");
    }

    /// A lowercase ASCII identifier piece (vocabulary words that are plain ASCII letters).
    fn ident(&mut self) -> String {
        loop {
            let w = self.vocab.word(&mut self.rng);
            if !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphabetic()) {
                return w.to_ascii_lowercase();
            }
        }
    }

    fn content(&mut self, user: bool) -> String {
        let words = if user {
            match self.rng.below(100) {
                0..=69 => self.rng.range(3, 18),
                70..=94 => self.rng.range(18, 70),
                _ => self.rng.range(70, 350),
            }
        } else {
            match self.rng.below(100) {
                0..=29 => self.rng.range(8, 28),
                30..=84 => self.rng.range(28, 90),
                _ => self.rng.range(90, 320),
            }
        };
        let question = if user {
            self.rng.chance(0.35)
        } else {
            self.rng.chance(0.05)
        };
        let mut out = String::with_capacity(words * 6);
        let mut left = words;
        while left > 0 {
            let n = self.rng.range(4, 18).min(left);
            left -= n;
            if !out.is_empty() {
                out.push_str(if self.rng.chance(0.15) { "\n\n" } else { " " });
            }
            self.sentence(n, question && left == 0, &mut out);
        }
        if !user && self.rng.chance(0.2) {
            self.code_block(&mut out);
        }
        if self.rng.chance(3e-5) {
            out.push_str(" Persofi");
        }
        out
    }

    fn conversation(&mut self, len: usize) -> Vec<Message> {
        let weights: u64 = SOURCES.iter().map(|(_, w)| w).sum();
        let mut draw = self.rng.below(weights);
        let mut source = SOURCES[0].0;
        for (name, w) in SOURCES {
            if draw < *w {
                source = name;
                break;
            }
            draw -= w;
        }
        let conversation_id = self.rng.uuid();
        let project = (*self.rng.pick(PROJECTS)).to_owned();
        let model = (*self.rng.pick(MODELS)).to_owned();
        let offset = i64::try_from(self.rng.below(self.span_secs)).unwrap_or(0);
        let mut t = self.start + chrono::Duration::seconds(offset);
        let mut messages: Vec<Message> = Vec::with_capacity(len);
        let mut parent: Option<String> = None;
        let mut title = None;
        for i in 0..len {
            let user = i % 2 == 0;
            let micros = i64::try_from(self.rng.below(600_000_000)).unwrap_or(0) + 2_000_000;
            t += chrono::Duration::microseconds(micros);
            let content = self.content(user);
            if title.is_none() {
                title = Some(content.chars().take(40).collect::<String>());
            }
            let message_id = self.rng.uuid();
            messages.push(Message {
                source: source.to_owned(),
                model: (!user).then(|| model.clone()),
                project: Some(project.clone()),
                conversation_id: conversation_id.clone(),
                conversation_title: None,
                message_id: message_id.clone(),
                parent_id: parent.replace(message_id),
                msg_index: i64::try_from(i).unwrap_or(i64::MAX),
                timestamp: t,
                timestamp_is_fallback: false,
                role: if user { "user" } else { "assistant" }.to_owned(),
                content_type: "text".to_owned(),
                content,
                chars_cut: 0,
                has_attachment: false,
                has_citation: false,
                is_injected: false,
            });
        }
        for m in &mut messages {
            m.conversation_title.clone_from(&title);
        }
        messages
    }
}

/// Memory types drawn by [`memories`], in order of frequency weight (first = most).
pub const MEMORY_TYPES: &[&str] = &["note", "fact", "decision", "bug", "feedback", "preference"];

/// `spec.messages` generated memories for the `memo_search` benchmark, from the same
/// vocabulary as the conversations: a title of 3–8 words, a type from
/// [`MEMORY_TYPES`], 1–4 tags, a body like a message (short to long, some code), 0–3
/// read and 0–2 modified paths (`src/<word>.rs`), created uniformly over 2024–2025 and
/// updated up to 30 days later (second precision). Ids are
/// [`Memory::stable_id`] of `bench-<seed>-<index>`.
pub fn memories(spec: Spec) -> impl Iterator<Item = Memory> {
    let mut g = Generator::new(spec);
    (0..spec.messages).map(move |i| g.memory(spec.seed, i))
}

impl Generator {
    fn memory(&mut self, seed: u64, i: usize) -> Memory {
        let mut title = String::new();
        let n = self.rng.range(3, 8);
        self.sentence(n, false, &mut title);
        title.pop();
        let kind =
            MEMORY_TYPES[usize::try_from(self.rng.below(100)).unwrap_or(0) % 21 / 4].to_owned();
        let tags: Vec<String> = {
            let mut t: Vec<String> = (0..self.rng.range(1, 4)).map(|_| self.ident()).collect();
            t.dedup();
            t
        };
        let offset = i64::try_from(self.rng.below(self.span_secs)).unwrap_or(0);
        let created = self.start + chrono::Duration::seconds(offset);
        let later = i64::try_from(self.rng.below(30 * 86_400)).unwrap_or(0);
        let updated = created + chrono::Duration::seconds(later);
        let user = self.rng.chance(0.5);
        let body = self.content(user);
        let files_read = (0..self.rng.range(0, 3))
            .map(|_| format!("src/{}.rs", self.ident()))
            .collect();
        let files_modified = (0..self.rng.range(0, 2))
            .map(|_| format!("src/{}.rs", self.ident()))
            .collect();
        Memory {
            id: Memory::stable_id(&format!("bench-{seed}-{i}")),
            title,
            kind,
            tags,
            created,
            updated,
            body,
            files_read,
            files_modified,
            origin: None,
        }
    }
}

impl Iterator for Generator {
    type Item = Vec<Message>;

    fn next(&mut self) -> Option<Vec<Message>> {
        if self.remaining == 0 {
            return None;
        }
        let len = self.rng.range(2, 60).min(self.remaining);
        self.remaining -= len;
        Some(self.conversation(len))
    }
}

/// What a generation run produced.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    /// Messages generated.
    pub messages: usize,
    /// Conversations (or session files) generated.
    pub conversations: usize,
    /// Bytes of message text (UTF-8).
    pub text_bytes: u64,
    /// Bytes written to files (JSONL); 0 for [`fill_store`].
    pub file_bytes: u64,
}

/// Inserts the corpus of `spec` into `store` through [`ConversationStore::insert`], in
/// batches of whole conversations of at least `batch` messages.
///
/// # Errors
/// [`StoreError`] from the first batch the store refuses.
pub fn fill_store(
    store: &ConversationStore,
    spec: Spec,
    batch: usize,
) -> Result<Generated, StoreError> {
    let mut out = Generated::default();
    let mut pending: Vec<Message> = Vec::with_capacity(batch + 64);
    for conversation in Generator::new(spec) {
        out.conversations += 1;
        out.messages += conversation.len();
        out.text_bytes += conversation
            .iter()
            .map(|m| m.content.len() as u64)
            .sum::<u64>();
        pending.extend(conversation);
        if pending.len() >= batch {
            store.insert(&pending)?;
            pending.clear();
        }
    }
    store.insert(&pending)?;
    Ok(out)
}

/// Writes the corpus of `spec` as Claude Code session files
/// `<dir>/projects/<project-dir>/<session-id>.jsonl` (one conversation per file; a
/// `summary` line, then one line per message; a tenth of assistant turns are preceded
/// by a `tool_use`-only line that the importer skips). Every message's source becomes
/// `claude-code` on import.
///
/// # Errors
/// IO errors (naming the file) from creating directories or writing files.
pub fn write_claude_code_tree(dir: &Path, spec: Spec) -> std::io::Result<Generated> {
    use serde_json::json;
    let mut out = Generated::default();
    let mut tool_rng = Rng::new(spec.seed ^ 0x7001);
    for conversation in Generator::new(spec) {
        let Some(first) = conversation.first() else {
            continue;
        };
        let project = first.project.clone().unwrap_or_default();
        let folder = dir.join("projects").join(project.replace('/', "-"));
        fs_err::create_dir_all(&folder)?;
        let path = folder.join(format!("{}.jsonl", first.conversation_id));
        let mut file = std::io::BufWriter::new(fs_err::File::create(&path)?);
        let mut write = |value: &serde_json::Value| -> std::io::Result<u64> {
            let line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
            file.write_all(&line)?;
            file.write_all(b"\n")?;
            Ok(line.len() as u64 + 1)
        };
        let title = first.conversation_title.clone().unwrap_or_default();
        out.file_bytes +=
            write(&json!({"type": "summary", "summary": title, "leafUuid": first.message_id}))?;
        for m in &conversation {
            let ts = m.timestamp.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            let common = |kind: &str, message: serde_json::Value, uuid: &str| {
                json!({
                    "parentUuid": m.parent_id, "isSidechain": false, "userType": "external",
                    "cwd": project, "sessionId": m.conversation_id, "version": "2.0.35",
                    "gitBranch": "main", "type": kind, "message": message,
                    "uuid": uuid, "timestamp": ts,
                })
            };
            if m.role == "user" {
                let message = json!({"role": "user", "content": m.content});
                out.file_bytes += write(&common("user", message, &m.message_id))?;
            } else {
                if tool_rng.chance(0.1) {
                    let tool = json!({"model": m.model, "role": "assistant", "content": [
                        {"type": "tool_use", "id": tool_rng.uuid(), "name": "Read",
                         "input": {"file_path": format!("{project}/src/lib.rs")}}]});
                    out.file_bytes += write(&common("assistant", tool, &tool_rng.uuid()))?;
                }
                let message = json!({
                    "model": m.model, "id": format!("msg_{}", &m.message_id[..8]),
                    "role": "assistant",
                    "content": [{"type": "text", "text": m.content}],
                    "usage": {"input_tokens": 1200, "output_tokens": 300},
                });
                out.file_bytes += write(&common("assistant", message, &m.message_id))?;
            }
            out.messages += 1;
            out.text_bytes += m.content.len() as u64;
        }
        file.flush()?;
        out.conversations += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_corpus_other_seed_other_corpus() {
        let a: Vec<_> = Generator::new(Spec::new(500)).flatten().collect();
        let b: Vec<_> = Generator::new(Spec::new(500)).flatten().collect();
        let c: Vec<_> = Generator::new(Spec {
            messages: 500,
            seed: 7,
        })
        .flatten()
        .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 500);
    }

    #[test]
    fn corpus_has_the_promised_shape() {
        let all: Vec<_> = Generator::new(Spec::new(20_000)).flatten().collect();
        assert_eq!(all.len(), 20_000);
        let bytes: usize = all.iter().map(|m| m.content.len()).sum();
        let mean = bytes / all.len();
        assert!(
            (300..=500).contains(&mean),
            "mean message size {mean} bytes"
        );
        let has = |p: &dyn Fn(&Message) -> bool| all.iter().filter(|m| p(m)).count();
        assert!(has(&|m| m.role == "user") > 9_000);
        assert!(has(&|m| m.content.contains('?')) > 2_000);
        assert!(has(&|m| m.content.contains("```")) > 1_000);
        assert!(has(&|m| m.content.contains("async fn")) > 100);
        assert!(has(&|m| !m.content.is_ascii()) > 1_000);
        assert!(has(&|m| m.content.contains("user_id")) > 100);
        assert_eq!(has(&|m| m.content.to_lowercase().contains(ABSENT_TERM)), 0);
        let sources: std::collections::BTreeSet<_> = all.iter().map(|m| &m.source).collect();
        assert_eq!(sources.len(), 4);
        let years: std::collections::BTreeSet<_> = all
            .iter()
            .map(|m| chrono::Datelike::year(&m.timestamp))
            .collect();
        assert!(years.contains(&2024) && years.contains(&2025), "{years:?}");
    }

    #[test]
    fn claude_code_tree_imports_every_message() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(300);
        let written = write_claude_code_tree(dir.path(), spec).unwrap();
        assert_eq!(written.messages, 300);
        let store = ConversationStore::open_in_memory().unwrap();
        let summary =
            crate::ingest::ingest_paths(&store, &[dir.path().to_path_buf()], &mut |_, _| {});
        assert!(summary.is_clean(), "{summary}");
        assert_eq!(summary.messages_added, 300);
        let expected: Vec<_> = Generator::new(spec).flatten().map(|m| m.content).collect();
        let conn = store.connection().unwrap();
        let mut stmt = conn
            .prepare("SELECT content FROM all_conversations")
            .unwrap();
        let mut stored: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut expected = expected;
        stored.sort();
        expected.sort();
        assert_eq!(stored, expected);
    }

    #[test]
    fn memories_are_deterministic_and_varied() {
        let a: Vec<_> = memories(Spec::new(300)).collect();
        let b: Vec<_> = memories(Spec::new(300)).collect();
        assert_eq!(a, b);
        let kinds: std::collections::BTreeSet<_> = a.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(kinds.len(), MEMORY_TYPES.len(), "{kinds:?}");
        let ids: std::collections::BTreeSet<_> = a.iter().map(|m| &m.id).collect();
        assert_eq!(ids.len(), 300);
        assert!(a.iter().all(|m| !m.title.is_empty() && !m.tags.is_empty()));
    }

    #[test]
    fn fill_store_stores_every_message() {
        let store = ConversationStore::open_in_memory().unwrap();
        let g = fill_store(&store, Spec::new(1_000), 300).unwrap();
        assert_eq!(g.messages, 1_000);
        assert_eq!(store.count().unwrap(), 1_000);
    }
}
