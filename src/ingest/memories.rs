//! Importers of durable memories into [`MemoryStore`].
//!
//! Formats:
//! - Markdown with optional YAML frontmatter: Claude Code `memory/*.md` topic files
//!   (`name`, `description`, `type`), basic-memory notes (`title`, `type`, `tags`,
//!   `permalink`), memo-style vault files (`id`, `title`, `type`, `tags`, `created`,
//!   `updated`, `files_read`, `files_modified`). A note without frontmatter is titled
//!   from its first line. A Claude Code `MEMORY.md` index is split into one memory per
//!   `## ` section.
//! - JSONL: one JSON object per line with the same keys (`body`, `content` or `text` for
//!   the body).
//! - Letta agent files (`.af`, JSON): each non-empty core-memory block (`blocks[]`,
//!   `label`/`value`/`description`) becomes a memory of type `core-memory`.
//!
//! Each memory is completed by [`MemoryInput::into_memory`], the same step as the one
//! write path of a single memory ([`crate::stores::memories::save`]: `skills memo add`
//! and the `memo_save` engine).
//!
//! Ids are stable (frontmatter `id`, else a hash of the origin path, else of title and
//! body), so importing the same files again changes nothing. A bad file or line is
//! reported as a [`Fault`] and skipped; the run goes on. When an embedding model is
//! available, every memory lacking an embedding from it is embedded at the end of an
//! import, so a model fetched later is picked up by the next import.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::Fault;
use crate::embed::Embedder;
use crate::model::Memory;
use crate::stores::memories::save::{first_line_title, MemoryInput};
use crate::stores::memories::{MemoryStore, Upsert};
use crate::stores::StoreError;
use crate::time::parse_when;

/// What an import did. Serialises to JSON for `--json`; `Display` gives the
/// human summary (one line, then one line per fault).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportSummary {
    /// Files read (markdown and JSONL).
    pub files: usize,
    /// Files passed over in folders because their format is not a memory format.
    pub files_skipped: usize,
    /// Memories parsed from the files.
    pub memories: usize,
    /// Memories that were new.
    pub inserted: usize,
    /// Memories whose stored content changed.
    pub updated: usize,
    /// Memories already stored with identical content.
    pub unchanged: usize,
    /// Memories (new or old) that received an embedding during this import.
    pub embedded: usize,
    /// Why nothing was embedded, when no model was available.
    pub embedding_note: Option<String>,
    /// Secrets replaced in titles and bodies before storing (0 with `--keep-secrets`;
    /// [`crate::redact::at_store`]).
    pub secrets_redacted: usize,
    /// Bad files and lines, each reported and skipped.
    pub faults: Vec<Fault>,
}

impl std::fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} file(s): {} memories ({} new, {} updated, {} unchanged), {} embedded",
            self.files, self.memories, self.inserted, self.updated, self.unchanged, self.embedded
        )?;
        if self.files_skipped > 0 {
            write!(f, ", {} other file(s) skipped", self.files_skipped)?;
        }
        if self.secrets_redacted > 0 {
            write!(
                f,
                ", {} secret(s) redacted before storing",
                self.secrets_redacted
            )?;
        }
        if let Some(note) = &self.embedding_note {
            write!(f, "\nnote: {note}")?;
        }
        if !self.faults.is_empty() {
            write!(f, "\n{} fault(s):", self.faults.len())?;
            for fault in &self.faults {
                write!(f, "\n  {fault}")?;
            }
        }
        Ok(())
    }
}

impl ImportSummary {
    fn count(&mut self, outcome: Upsert) {
        self.memories += 1;
        match outcome {
            Upsert::Inserted => self.inserted += 1,
            Upsert::Updated => self.updated += 1,
            Upsert::Unchanged => self.unchanged += 1,
        }
    }
}

/// Imports every memory file under `paths` (files or folders, walked recursively in
/// name order; hidden folders are skipped) and embeds with the memories' model
/// ([`Embedder::load_for_memories`]: the second tier when fetched) when one is
/// available.
///
/// # Errors
/// Only store failures; bad files are faults in the summary.
pub fn import_paths(store: &MemoryStore, paths: &[PathBuf]) -> Result<ImportSummary, StoreError> {
    match Embedder::load_for_memories() {
        Ok(embedder) => import_paths_with(store, paths, Some(&embedder)),
        Err(e) => {
            let mut summary = import_paths_with(store, paths, None)?;
            summary.embedding_note = Some(format!("no embeddings stored: {e}"));
            Ok(summary)
        }
    }
}

/// [`import_paths`] with an explicit embedder (or none).
///
/// # Errors
/// Only store failures; bad files are faults in the summary.
pub fn import_paths_with(
    store: &MemoryStore,
    paths: &[PathBuf],
    embedder: Option<&Embedder>,
) -> Result<ImportSummary, StoreError> {
    let mut summary = ImportSummary::default();
    let mut seen = HashMap::new();
    for path in paths {
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files, &mut summary);
            for file in files {
                if is_memory_file(&file) {
                    import_file(store, &file, &mut summary, &mut seen)?;
                } else {
                    summary.files_skipped += 1;
                }
            }
        } else if path.is_file() {
            if is_memory_file(path) {
                import_file(store, path, &mut summary, &mut seen)?;
            } else {
                summary.faults.push(Fault::new(
                    path,
                    None,
                    "not a memory file (expected .md, .markdown, .jsonl or .af)",
                ));
            }
        } else {
            summary
                .faults
                .push(Fault::new(path, None, "no such file or folder"));
        }
    }
    if let Some(embedder) = embedder {
        summary.embedded += embed_missing(store, embedder)?;
    }
    Ok(summary)
}

/// Memories embedded and stored per transaction by [`embed_missing`].
const EMBED_BATCH: usize = 1024;

/// Embeds every memory of `store` lacking an embedding from `embedder`'s model (one
/// vector per chunk, [`Embedder::embed_chunks`]) and stores them in transactions of
/// [`EMBED_BATCH`]. Returns how many were embedded.
///
/// # Errors
/// Store failures.
pub fn embed_missing(store: &MemoryStore, embedder: &Embedder) -> Result<usize, StoreError> {
    let missing = store.missing_embeddings(embedder.name())?;
    for batch in missing.chunks(EMBED_BATCH) {
        let vectors: Vec<(String, Vec<Vec<f32>>)> = batch
            .iter()
            .map(|(id, text)| (id.clone(), embedder.embed_chunks(text)))
            .collect();
        store.set_embeddings(&vectors, embedder.name())?;
    }
    Ok(missing.len())
}

/// The non-hidden regular files below `dir` ([`crate::walk`]'s rules); an unreadable
/// folder is a fault.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, summary: &mut ImportSummary) {
    let walked = crate::walk::files_below(dir, crate::walk::Hidden::Skip);
    out.extend(walked.files);
    for (folder, e) in walked.unreadable {
        summary
            .faults
            .push(Fault::new(&folder, None, e.to_string()));
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Whether `path` has a memory file extension (`.md`, `.markdown`, `.jsonl`, `.af`);
/// the importers decide from there whether its content is usable.
pub fn is_memory_file(path: &Path) -> bool {
    matches!(extension(path).as_str(), "md" | "markdown" | "jsonl" | "af")
}

/// The line number in an origin ending in `#L<n>` (JSONL memories).
fn line_of(origin: Option<&str>) -> Option<usize> {
    origin?.rsplit_once("#L")?.1.parse().ok()
}

/// Imports one file; `seen` maps the ids imported so far in this run to where they
/// came from.
fn import_file(
    store: &MemoryStore,
    path: &Path,
    summary: &mut ImportSummary,
    seen: &mut HashMap<String, String>,
) -> Result<(), StoreError> {
    summary.files += 1;
    let bytes = match fs_err::read(path) {
        Ok(b) => b,
        Err(e) => {
            summary.faults.push(Fault::new(path, None, e.to_string()));
            return Ok(());
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        summary
            .faults
            .push(Fault::new(path, None, "not UTF-8 text"));
        return Ok(());
    };
    let mtime = fs_err::metadata(path)
        .ok()
        .and_then(|m| m.modified().ok())
        .map_or_else(Utc::now, DateTime::<Utc>::from);
    let origin = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut origin = origin.to_string_lossy().into_owned();
    // Secrets in ids and metadata get keyed markers (`crate::redact::ids`); the origin
    // before parsing, so ids derived from it hold none either and stay stable.
    let key = if crate::redact::at_store::keep_secrets() {
        None
    } else {
        Some(crate::redact::ids::IdKey::of_store(store.path()).map_err(StoreError::Io)?)
    };
    let origin_secrets = key
        .as_ref()
        .map_or(0, |k| crate::redact::at_store::id_in_place(&mut origin, k));
    let parsed = if extension(path) == "jsonl" {
        parse_jsonl(&text, &origin, mtime, path, &mut summary.faults)
    } else if extension(path) == "af" {
        match parse_letta(&text, &origin, mtime) {
            Ok(memories) => memories,
            Err(reason) => {
                summary.faults.push(Fault::new(path, None, reason));
                Vec::new()
            }
        }
    } else {
        match parse_markdown(&text, &origin, mtime) {
            Ok(memories) => memories,
            Err(reason) => {
                summary.faults.push(Fault::new(path, None, reason));
                Vec::new()
            }
        }
    };
    // One transaction per file; an id met earlier in this import is a fault (the
    // first memory with it is kept), so no memory silently replaces another.
    // Secrets are replaced before storing (and counted for the memories written).
    let mut fresh = Vec::with_capacity(parsed.len());
    let mut found = Vec::with_capacity(parsed.len());
    for (i, mut memory) in parsed.into_iter().enumerate() {
        let mut redacted = crate::redact::at_store::for_store(&mut memory.title)
            + crate::redact::at_store::for_store(&mut memory.body);
        if let Some(key) = &key {
            redacted += crate::redact::at_store::id_in_place(&mut memory.id, key)
                + crate::stores::memories::save::redact_metadata(&mut memory, key);
            if i == 0 {
                redacted += origin_secrets;
            }
        }
        match seen.get(&memory.id) {
            Some(first) => summary.faults.push(Fault::new(
                path,
                line_of(memory.origin.as_deref()),
                format!(
                    "duplicate id `{}` (first in `{first}`): this memory was not imported",
                    memory.id
                ),
            )),
            None => {
                seen.insert(
                    memory.id.clone(),
                    memory.origin.clone().unwrap_or_else(|| origin.clone()),
                );
                fresh.push(memory);
                found.push(redacted);
            }
        }
    }
    let mut wrote = false;
    let mut redacted = 0;
    for (outcome, secrets) in store.upsert_many(&fresh)?.into_iter().zip(found) {
        if outcome != Upsert::Unchanged {
            wrote = true;
            redacted += secrets;
        }
        summary.count(outcome);
    }
    summary.secrets_redacted += redacted;
    if !crate::redact::at_store::keep_secrets() {
        store.count_secrets_redacted(redacted)?;
    } else if wrote {
        store.mark_secrets_kept()?;
    }
    Ok(())
}

/// Parses one markdown memory file (see the module docs). `origin` names the file in
/// ids and the `origin` column; `mtime` dates memories whose frontmatter has no date.
///
/// # Errors
/// A reason string when the file is empty or its frontmatter is not a YAML mapping.
pub fn parse_markdown(
    text: &str,
    origin: &str,
    mtime: DateTime<Utc>,
) -> Result<Vec<Memory>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err("empty file".into());
    }
    let (front, body) = split_frontmatter(text)?;
    let file_stem = Path::new(origin)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("memory")
        .to_owned();
    let is_index = Path::new(origin)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "MEMORY.md" || n.ends_with("__MEMORY.md"));
    if is_index && front.is_none() {
        return Ok(split_index(body, origin, mtime));
    }
    let fm = front.unwrap_or(Value::Null);
    // Newer Claude Code memory files nest `type` under `metadata`.
    let meta = fm.get("metadata").cloned().unwrap_or(Value::Null);
    let get = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| fm.get(*k).and_then(scalar_string))
            .or_else(|| {
                keys.iter()
                    .find_map(|k| meta.get(*k).and_then(scalar_string))
            })
    };
    let description = get(&["description", "summary"]);
    let mut body = body.trim().to_owned();
    if let Some(desc) = &description {
        if !body.contains(desc.as_str()) {
            body = if body.is_empty() {
                desc.clone()
            } else {
                format!("{desc}\n\n{body}")
            };
        }
    }
    let title = get(&["title", "name"])
        .or_else(|| first_line_title(&body))
        .unwrap_or(file_stem);
    let created = get(&["created", "created_at", "date"]).and_then(|s| parse_when(&s));
    let updated =
        get(&["updated", "updated_at", "modified", "last_modified"]).and_then(|s| parse_when(&s));
    let created = created.or(updated).unwrap_or(mtime);
    let input = MemoryInput {
        id: get(&["id"]).or_else(|| Some(Memory::stable_id(origin))),
        title,
        kind: get(&["type", "memory_type", "kind"]),
        tags: string_list(fm.get("tags").or_else(|| meta.get("tags"))),
        created: Some(created),
        updated: Some(updated.unwrap_or(created)),
        body,
        files_read: string_list(fm.get("files_read")),
        files_modified: string_list(fm.get("files_modified")),
        origin: Some(origin.to_owned()),
    };
    Ok(input.into_memory(mtime).into_iter().collect())
}

/// Splits YAML frontmatter from the body by [`crate::yaml::split_frontmatter`]'s
/// rules. `Ok((None, text))` when there is none; an empty block is an empty mapping.
fn split_frontmatter(text: &str) -> Result<(Option<Value>, &str), String> {
    let Some(split) = crate::yaml::split_frontmatter(text).map_err(|e| e.to_string())? else {
        return Ok((None, text));
    };
    if split.is_empty() {
        return Ok((Some(Value::Object(serde_json::Map::new())), split.body));
    }
    let value: yaml_serde::Value = split
        .parse()
        .map_err(|e| format!("invalid YAML frontmatter: {e}"))?;
    let json =
        serde_json::to_value(value).map_err(|e| format!("unsupported YAML frontmatter: {e}"))?;
    if !json.is_object() {
        return Err("YAML frontmatter is not a mapping".into());
    }
    Ok((Some(json), split.body))
}

/// Splits a Claude Code `MEMORY.md` index into one memory per `## ` section (headings
/// inside code fences do not count). Text before the first section becomes a memory
/// of its own when it holds more than the `# ` title.
fn split_index(body: &str, origin: &str, mtime: DateTime<Utc>) -> Vec<Memory> {
    let mut doc_title: Option<String> = None;
    let mut sections: Vec<(Option<String>, String)> = vec![(None, String::new())];
    let mut in_fence = false;
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence {
            if let Some(h) = line.strip_prefix("## ") {
                sections.push((Some(h.trim().to_owned()), String::new()));
                continue;
            }
            if doc_title.is_none() {
                if let Some(h) = line.strip_prefix("# ") {
                    doc_title = Some(h.trim().to_owned());
                    continue;
                }
            }
        }
        if let Some((_, text)) = sections.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    let doc_title = doc_title.unwrap_or_else(|| "MEMORY.md".into());
    let mut out = Vec::new();
    for (i, (heading, text)) in sections.into_iter().enumerate() {
        let text = text.trim();
        if heading.is_none() && text.is_empty() {
            continue;
        }
        let title = match &heading {
            Some(h) => format!("{doc_title}: {h}"),
            None => doc_title.clone(),
        };
        let input = MemoryInput {
            id: Some(Memory::stable_id(&format!(
                "{origin}#{i}:{}",
                heading.as_deref().unwrap_or("")
            ))),
            title,
            kind: Some("index".into()),
            tags: vec!["memory-index".into()],
            created: Some(mtime),
            updated: Some(mtime),
            body: text.to_owned(),
            origin: Some(format!("{origin}#{}", heading.as_deref().unwrap_or(""))),
            ..MemoryInput::default()
        };
        out.extend(input.into_memory(mtime));
    }
    out
}

/// Parses a Letta agent file: one memory per non-empty block of `blocks[]`, titled
/// `<agent name>: <label>`, typed `core-memory`, tagged `letta` and the label.
///
/// # Errors
/// A reason string when the file is not JSON or has no `blocks` array.
pub fn parse_letta(text: &str, origin: &str, mtime: DateTime<Utc>) -> Result<Vec<Memory>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let blocks = doc
        .get("blocks")
        .and_then(Value::as_array)
        .ok_or("not a Letta agent file (no `blocks` array)")?;
    let agent = doc
        .pointer("/agents/0/name")
        .and_then(scalar_string)
        .unwrap_or_else(|| "agent".into());
    let created = doc
        .get("created_at")
        .and_then(scalar_string)
        .and_then(|s| parse_when(&s))
        .unwrap_or(mtime);
    let mut out = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let get = |k: &str| block.get(k).and_then(scalar_string);
        let Some(value) = get("value") else { continue };
        let label = get("label").unwrap_or_else(|| format!("block-{i}"));
        let body = match get("description") {
            Some(d) if d != "None" => format!("{d}\n\n{value}"),
            _ => value,
        };
        let input = MemoryInput {
            id: Some(Memory::stable_id(&format!("{origin}#{label}"))),
            title: format!("{agent}: {label}"),
            kind: Some("core-memory".into()),
            tags: vec!["letta".into(), label.clone()],
            created: Some(created),
            updated: Some(created),
            body,
            origin: Some(format!("{origin}#{label}")),
            ..MemoryInput::default()
        };
        out.extend(input.into_memory(mtime));
    }
    Ok(out)
}

/// Parses JSONL memories; bad lines become faults (with their 1-based line number).
fn parse_jsonl(
    text: &str,
    origin: &str,
    mtime: DateTime<Utc>,
    path: &Path,
    faults: &mut Vec<Fault>,
) -> Vec<Memory> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                faults.push(Fault::new(path, Some(i + 1), format!("invalid JSON: {e}")));
                continue;
            }
        };
        if !value.is_object() {
            faults.push(Fault::new(path, Some(i + 1), "expected a JSON object"));
            continue;
        }
        let get = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| value.get(*k).and_then(scalar_string))
        };
        let mut bad_date = None;
        let mut date = |keys: &[&str]| {
            let raw = get(keys)?;
            let parsed = parse_when(&raw);
            if parsed.is_none() {
                bad_date = Some(raw);
            }
            parsed
        };
        let created = date(&["created", "created_at", "date"]);
        let updated = date(&["updated", "updated_at", "modified"]);
        if let Some(raw) = bad_date {
            faults.push(Fault::new(
                path,
                Some(i + 1),
                format!("unparseable date `{raw}`"),
            ));
            continue;
        }
        let input = MemoryInput {
            id: get(&["id"]),
            title: get(&["title", "name"]).unwrap_or_default(),
            kind: get(&["type", "kind", "memory_type"]),
            tags: string_list(value.get("tags")),
            created,
            updated,
            body: get(&["body", "content", "text"]).unwrap_or_default(),
            files_read: string_list(value.get("files_read")),
            files_modified: string_list(value.get("files_modified")),
            origin: Some(format!("{origin}#L{}", i + 1)),
        };
        match input.into_memory(mtime) {
            Some(m) => out.push(m),
            None => faults.push(Fault::new(
                path,
                Some(i + 1),
                "a memory needs a title or a body",
            )),
        }
    }
    out
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A list of strings from a YAML/JSON list, or a comma- or space-separated string; a
/// list item holding commas (`- a,b,c`, as basic-memory writes) is split too.
fn string_list(v: Option<&Value>) -> Vec<String> {
    let split = |s: &str| -> Vec<String> {
        let sep: &[char] = if s.contains(',') {
            &[',']
        } else {
            &[' ', '\t']
        };
        s.split(sep)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(scalar_string)
            .flat_map(|s| if s.contains(',') { split(&s) } else { vec![s] })
            .collect(),
        Some(Value::String(s)) => split(s),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> DateTime<Utc> {
        parse_when("2026-07-03T12:00:00Z").unwrap()
    }

    #[test]
    fn claude_code_topic_file() {
        let text = "---\nname: No defensive fallbacks\ndescription: Let errors surface\ntype: feedback\n---\n\nDo not add fallbacks.\n";
        let m = parse_markdown(text, "/x/feedback.md", t0()).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].title, "No defensive fallbacks");
        assert_eq!(m[0].kind, "feedback");
        assert!(m[0].body.starts_with("Let errors surface\n\nDo not add"));
        assert_eq!(m[0].updated, t0());
        assert_eq!(m[0].id, Memory::stable_id("/x/feedback.md"));
    }

    #[test]
    fn claude_code_metadata_type() {
        let text = "---\nname: x\ndescription: d\nmetadata: \n  node_type: memory\n  type: feedback\n---\nbody";
        assert_eq!(
            parse_markdown(text, "/x.md", t0()).unwrap()[0].kind,
            "feedback"
        );
    }

    #[test]
    fn vault_file_with_dates_and_files() {
        let text = "---\nid: dec-1\ntitle: Use SQLite\ntype: Decision\ntags: [db, storage]\ncreated: 2026-06-01\nupdated: 2026-06-02T10:30:00\nfiles_read: [src/main.rs]\nfiles_modified: Cargo.toml\n---\nBody";
        let m = &parse_markdown(text, "/v/a.md", t0()).unwrap()[0];
        assert_eq!(m.id, "dec-1");
        assert_eq!(m.kind, "decision");
        assert_eq!(m.tags, vec!["db", "storage"]);
        assert_eq!(m.updated, parse_when("2026-06-02T10:30:00Z").unwrap());
        assert_eq!(m.files_modified, vec!["Cargo.toml"]);
        let text = "---\ntitle: t\ntags:\n- architecture,technical\n- two words\n---\nx";
        let m = &parse_markdown(text, "/v/b.md", t0()).unwrap()[0];
        assert_eq!(m.tags, vec!["architecture", "technical", "two words"]);
    }

    #[test]
    fn no_frontmatter_titles_from_first_line() {
        let m = &parse_markdown("\n# A Note\n\ntext", "/n.md", t0()).unwrap()[0];
        assert_eq!(m.title, "A Note");
        assert_eq!(m.kind, "note");
    }

    #[test]
    fn frontmatter_after_a_byte_order_mark_and_closed_by_dots_is_read() {
        let text = "\u{feff}---\r\ntitle: Dotted\r\ntype: decision\r\n...\r\nThe body.\r\n";
        let m = &parse_markdown(text, "/dots.md", t0()).unwrap()[0];
        assert_eq!((m.title.as_str(), m.kind.as_str()), ("Dotted", "decision"));
        assert!(!m.body.contains("title:"), "{}", m.body);
        assert!(m.body.contains("The body."), "{}", m.body);
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(parse_markdown("", "/e.md", t0()).is_err());
        assert!(parse_markdown("---\ntitle: [unclosed\n---\nx", "/b.md", t0()).is_err());
        let unclosed = parse_markdown("---\ntitle: x\n", "/c.md", t0()).unwrap_err();
        assert!(
            unclosed.contains("line 1") && unclosed.contains("not closed"),
            "{unclosed}"
        );
        assert!(parse_markdown("---\n- a\n- b\n---\nx", "/d.md", t0()).is_err());
        // Nesting far past the bound is refused by line, before the parser recurses.
        let deep = format!(
            "---\ntitle: {}{}\n---\nx",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let err = parse_markdown(&deep, "/deep.md", t0()).unwrap_err();
        assert!(
            err.contains("invalid YAML frontmatter") && err.contains("line"),
            "{err}"
        );
    }

    #[test]
    fn letta_blocks() {
        let text = r#"{"agents":[{"name":"void"}],"created_at":"2026-06-01T00:00:00Z","blocks":[{"label":"human","value":"Likes tea","description":"About the user"},{"label":"empty","value":""}]}"#;
        let m = parse_letta(text, "/a.af", t0()).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].title, "void: human");
        assert_eq!(m[0].kind, "core-memory");
        assert_eq!(m[0].body, "About the user\n\nLikes tea");
        assert!(parse_letta("{}", "/b.af", t0()).is_err());
        assert!(parse_letta("nope", "/c.af", t0()).is_err());
    }

    #[test]
    fn memory_index_splits_sections() {
        let text = "# Project\n\n## One\n- a\n```\n## not a heading\n```\n## Two\n- b\n";
        let m = parse_markdown(text, "/p/MEMORY.md", t0()).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].title, "Project: One");
        assert!(m[0].body.contains("## not a heading"));
        assert_eq!(m[1].title, "Project: Two");
    }

    #[test]
    fn jsonl_lines_and_faults() {
        let mut faults = Vec::new();
        let text = "{\"title\":\"A\",\"body\":\"x\",\"type\":\"fact\",\"updated\":\"2026-07-01\"}\nnot json\n{\"body\":\"\"}\n{\"title\":\"B\",\"updated\":\"someday\"}\n";
        let m = parse_jsonl(text, "/j.jsonl", t0(), Path::new("/j.jsonl"), &mut faults);
        assert_eq!(m.len(), 1);
        assert_eq!(
            faults.iter().map(|f| f.line).collect::<Vec<_>>(),
            vec![Some(2), Some(3), Some(4)]
        );
    }

    /// Issue 19.6: NUL bytes survive, duplicate ids are reported and the first kept,
    /// and a second import of the same files changes nothing and says so.
    #[test]
    fn import_fidelity_nul_duplicates_and_reimport() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("m.jsonl");
        std::fs::write(
            &jsonl,
            concat!(
                "{\"id\":\"n\",\"title\":\"nul\",\"body\":\"before\\u0000after the nul\"}\n",
                "{\"id\":\"d\",\"title\":\"first\",\"body\":\"one\"}\n",
                "{\"id\":\"d\",\"title\":\"second\",\"body\":\"two\"}\n",
            ),
        )
        .unwrap();
        let md = dir.path().join("note.md");
        std::fs::write(&md, "---\nid: d\ntitle: third\n---\nthree\n").unwrap();
        let store = MemoryStore::open_in_memory().unwrap();
        let paths = [jsonl.clone(), md.clone()];
        let first = import_paths_with(&store, &paths, None).unwrap();
        assert_eq!((first.inserted, first.updated), (2, 0), "{first}");
        let dups: Vec<&Fault> = first
            .faults
            .iter()
            .filter(|f| f.reason.contains("duplicate id `d`"))
            .collect();
        assert_eq!(dups.len(), 2, "{first}");
        assert_eq!(dups[0].line, Some(3));
        assert!(dups[1].path.ends_with("note.md"));
        let nul = store.get("n").unwrap().unwrap();
        assert_eq!(nul.body, "before\0after the nul");
        assert_eq!(store.get("d").unwrap().unwrap().title, "first");
        let again = import_paths_with(&store, &paths, None).unwrap();
        assert_eq!(
            (again.inserted, again.updated, again.unchanged),
            (0, 0, 2),
            "{again}"
        );
        let hits: i64 = store
            .lock()
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'after'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hits, 1, "the text after the NUL is indexed");
    }
}
