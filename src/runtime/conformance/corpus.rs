//! Fixture corpora: a corpus is a folder `tests/conformance/fixtures/<corpus>/` of
//! files in real native formats. [`build_stores`] imports it into fresh stores in a
//! temporary data folder, through the importers of [`crate::ingest`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::ingest::Message;
use crate::stores::conversations::ConversationStore;
use crate::stores::StorePaths;

/// A temporary folder removed (with its contents) when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `<system temp>/skills-verify-<pid>-<n>-<label>`.
    ///
    /// # Errors
    /// The IO error when the folder cannot be created.
    pub fn new(label: &str) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "skills-verify-{}-{nanos}-{n}-{label}",
            std::process::id()
        ));
        fs_err::create_dir_all(&path)?;
        Ok(Self { path })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Builds every store a corpus feeds into `data_dir` and returns their paths.
///
/// - conversations (`conversations.duckdb`): every transcript file under `corpus_dir`
///   (Claude Code `*.jsonl`, ChatGPT `conversations.json`) imported by the transcript
///   importers;
/// - memories (`memories.sqlite`): not built yet (the memories importer has not landed).
///
/// The store is written and closed before this returns, so engines open it read-only.
///
/// # Errors
/// A message naming the corpus and what failed (unreadable folder, a fault in a
/// fixture file, a store error). Fixtures are expected to import without faults.
pub fn build_stores(corpus_dir: &Path, data_dir: &Path) -> Result<StorePaths, String> {
    if !corpus_dir.is_dir() {
        return Err(format!(
            "corpus folder `{}` does not exist",
            corpus_dir.display()
        ));
    }
    let paths = StorePaths::in_dir(data_dir);
    let store = ConversationStore::open_rw(&paths.conversations).map_err(|e| e.to_string())?;
    let messages = read_transcripts(corpus_dir)?;
    store.insert(&messages).map_err(|e| e.to_string())?;
    drop(store);
    Ok(paths)
}

/// Interim transcript reader (until `crate::ingest::ingest_paths` lands): the subset of
/// the Claude Code and ChatGPT mapping rules the fixtures use.
fn read_transcripts(dir: &Path) -> Result<Vec<Message>, String> {
    let mut files = Vec::new();
    walk(dir, &mut files).map_err(|e| e.to_string())?;
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".jsonl") {
            out.extend(claude_code(&file)?);
        } else if name == "conversations.json" {
            out.extend(chatgpt(&file)?);
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in fs_err::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn claude_code(path: &Path) -> Result<Vec<Message>, String> {
    let text = fs_err::read_to_string(path).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| format!("`{}`:{}: {e}", path.display(), i + 1))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let content = text_of(&v["message"]["content"]);
        if content.trim().is_empty() {
            continue;
        }
        let ts = v["timestamp"].as_str().unwrap_or("");
        let timestamp = DateTime::parse_from_rfc3339(ts)
            .map_err(|e| format!("`{}`:{}: timestamp: {e}", path.display(), i + 1))?
            .with_timezone(&Utc);
        let str_of = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        out.push(Message {
            source: "claude-code".into(),
            model: v["message"]
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned),
            project: str_of("cwd"),
            conversation_id: str_of("sessionId").unwrap_or_default(),
            conversation_title: None,
            message_id: str_of("uuid").unwrap_or_default(),
            parent_id: str_of("parentUuid"),
            msg_index: i64::try_from(out.len()).unwrap_or(0),
            timestamp,
            timestamp_is_fallback: false,
            role: kind.into(),
            content_type: "text".into(),
            content,
            has_attachment: false,
            has_citation: false,
        });
    }
    Ok(out)
}

fn chatgpt(path: &Path) -> Result<Vec<Message>, String> {
    let text = fs_err::read_to_string(path).map_err(|e| e.to_string())?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("`{}`: {e}", path.display()))?;
    let mut out = Vec::new();
    for conv in doc.as_array().map_or(&[][..], Vec::as_slice) {
        let mapping = &conv["mapping"];
        let mut chain = Vec::new();
        let mut node = conv["current_node"].as_str();
        while let Some(id) = node {
            chain.push(id);
            node = mapping[id]["parent"].as_str();
        }
        chain.reverse();
        let conv_id = conv["conversation_id"].as_str().unwrap_or_default();
        let mut index = 0i64;
        for id in chain {
            let m = &mapping[id]["message"];
            let role = m["author"]["role"].as_str().unwrap_or("");
            if role != "user" && role != "assistant" {
                continue;
            }
            let content = m["content"]["parts"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            let secs = m["create_time"].as_f64().unwrap_or(0.0);
            #[allow(clippy::cast_possible_truncation)]
            let micros = (secs * 1e6).round() as i64;
            let timestamp = DateTime::from_timestamp_micros(micros).unwrap_or_default();
            out.push(Message {
                source: "chatgpt".into(),
                model: m["metadata"]["model_slug"].as_str().map(str::to_owned),
                project: None,
                conversation_id: conv_id.to_owned(),
                conversation_title: conv["title"].as_str().map(str::to_owned),
                message_id: id.to_owned(),
                parent_id: mapping[id]["parent"].as_str().map(str::to_owned),
                msg_index: index,
                timestamp,
                timestamp_is_fallback: false,
                role: role.into(),
                content_type: "text".into(),
                content,
                has_attachment: false,
                has_citation: false,
            });
            index += 1;
        }
    }
    Ok(out)
}
