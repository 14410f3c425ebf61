//! Helpers shared by the integration tests (each test file that needs them declares
//! `mod common;`).
//!
//! A test that cannot run here (no corpus, browser, MCP client, model, PostgreSQL)
//! calls [`not_run`] with the reason and returns: `./scripts/test` then reports it as
//! not run instead of passed (see [`not_run`](mod@not_run) for how).
#![allow(dead_code, clippy::unwrap_used, clippy::print_stdout)]

pub mod archive;
pub mod cli;
pub mod mcp;
pub mod not_run;
pub mod serve;
pub use not_run::not_run;

use std::path::{Path, PathBuf};

use chrono::TimeZone;
use skills::ingest::Message;

/// The repository (`CARGO_MANIFEST_DIR`).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The bundled skills folder, `<repo>/skills`.
pub fn repo_skills() -> PathBuf {
    repo().join("skills")
}

/// The host over the bundled skills with its stores in the data folder `data`.
pub fn bundled_host(data: &Path) -> skills::host::Host {
    skills::host::Host::load(
        &repo_skills(),
        skills::engines::Context::new(skills::stores::StorePaths::in_dir(data)),
    )
}

/// Writes drop-in `sql` skill `name` into the skills folder `skills`: its `SKILL.md`
/// (name, description `test`, `engine: sql`, then `frontmatter`: YAML lines each
/// ending in a newline), `query.sql` and `template.md.j2`. Returns the skill's folder.
pub fn sql_skill(
    skills: &Path,
    name: &str,
    frontmatter: &str,
    query: &str,
    template: &str,
) -> PathBuf {
    let dir = skills.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: test\nengine: sql\n{frontmatter}---\n# {name}\n"),
    )
    .unwrap();
    std::fs::write(dir.join("template.md.j2"), template).unwrap();
    std::fs::write(dir.join("query.sql"), query).unwrap();
    dir
}

/// The variables that point a tool at its transcripts elsewhere than under `$HOME`:
/// a test with a fake home removes them all.
pub const TOOL_LOCATIONS: [&str; 5] = [
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "SKILLS_CHATGPT_EXPORT",
    "SKILLS_CLAUDE_AI_EXPORT",
];

/// Field `field` (a string) of every item of the JSON array `array`.
///
/// # Panics
/// When `array` is not an array or an item's `field` is not a string.
pub fn strings<'a>(array: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .map(|v| {
            v[field]
                .as_str()
                .unwrap_or_else(|| panic!("`{field}` is not a string in {v}"))
        })
        .collect()
}

/// Every file below `dir` (subfolders included), sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The items of the JSON array `array` whose field `field` is the string `value`.
pub fn items_where<'a>(
    array: &'a serde_json::Value,
    field: &str,
    value: &str,
) -> Vec<&'a serde_json::Value> {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
        .iter()
        .filter(|v| v[field] == value)
        .collect()
}

/// xorshift64*: a small seeded generator, enough to pick fuzz mutations.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is taken as 1: xorshift never leaves 0).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap()
    }
}

/// Copies folder `from` into `to` (created), subfolders included.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Writes `messages` into the conversations store of data folder `dir` (created),
/// closed so its search index is published.
pub fn store_messages(dir: &Path, messages: &[Message]) {
    let paths = skills::stores::StorePaths::in_dir(dir);
    let s =
        skills::stores::conversations::ConversationStore::open_rw(&paths.conversations).unwrap();
    s.insert(messages).unwrap();
    s.close().unwrap();
}

/// A temporary folder holding a copy of the bundled skills, for a test to break one.
pub fn copy_skills() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&repo_skills(), tmp.path());
    tmp
}

/// A user text message `content`, number `i` of conversation `conv` from Claude Code,
/// at 2025-03-10 10:00:`i` UTC.
pub fn message(conv: &str, i: i64, content: &str) -> Message {
    Message {
        source: "claude-code".into(),
        model: None,
        project: None,
        conversation_id: conv.into(),
        conversation_title: None,
        message_id: format!("{conv}-{i}"),
        parent_id: None,
        msg_index: i,
        timestamp: chrono::Utc
            .with_ymd_and_hms(2025, 3, 10, 10, 0, u32::try_from(i).unwrap())
            .unwrap(),
        timestamp_is_fallback: false,
        role: "user".into(),
        content_type: "text".into(),
        content: content.into(),
        chars_cut: 0,
        has_attachment: false,
        has_citation: false,
        is_injected: false,
    }
}

/// The shared corpus of real transcripts (`$SKILLS_CORPUS_DIR`, default
/// `<manifest>/../shared/corpus`), or `None` after recording the running test as
/// [`not_run`]: `let Some(corpus) = common::corpus() else { return };`.
pub fn corpus() -> Option<PathBuf> {
    let dir = corpus_dir();
    if dir.is_dir() {
        Some(dir)
    } else {
        not_run(&format!(
            "no corpus at {} (set SKILLS_CORPUS_DIR)",
            dir.display()
        ));
        None
    }
}

/// Where the corpus is looked for, whether or not it is there (for a test that uses it
/// when present and runs without it too).
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("SKILLS_CORPUS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

/// The embedding model `skills` loads by default (`$SKILLS_MODEL_DIR`, else the
/// cache; `scripts/fetch-model`), or `None` after recording the test as [`not_run`].
pub fn embedder() -> Option<skills::embed::Embedder> {
    match skills::embed::Embedder::load_default() {
        Ok(e) => Some(e),
        Err(e) => {
            not_run(&format!(
                "no embedding model ({e}; run scripts/fetch-model)"
            ));
            None
        }
    }
}
