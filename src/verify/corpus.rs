//! Fixture corpora: a corpus is a folder `tests/conformance/fixtures/<corpus>/` of
//! files in real native formats. [`build_stores`] imports it into fresh stores in a
//! temporary data folder, through the importers of [`crate::ingest`].

use std::path::{Path, PathBuf};

use crate::stores::conversations::ConversationStore;
use crate::stores::memories::MemoryStore;
use crate::stores::StorePaths;

/// Builds every store a corpus feeds into `data_dir` and returns their paths. Each
/// file goes to the importer that recognises it, exactly as the CLI would import it:
///
/// - conversations (`conversations.duckdb`): transcript files ([`crate::ingest::detect`]:
///   Claude Code `*.jsonl`, ChatGPT `conversations.json`, …), imported by
///   [`crate::ingest::ingest_paths`], the importer `skills ingest` uses; built only
///   when the corpus holds transcripts;
/// - memories (`memories.sqlite`): every other memory file (markdown with or without
///   YAML frontmatter, `MEMORY.md`, JSONL, Letta `.af`), imported by
///   [`crate::ingest::memories::import_paths_with`], the importer `skills memo import`
///   uses (embedding with the static table when it is present: the model conformance
///   cases query with); built only when the corpus holds memory files.
///
/// Stores are written and closed before this returns, so engines open them read-only.
///
/// # Errors
/// A message naming what failed: the folder is missing, a store cannot be created,
/// a fixture file has a fault (fixtures must import cleanly; the first fault is
/// named), or nothing was imported at all.
pub fn build_stores(corpus_dir: &Path, data_dir: &Path) -> Result<StorePaths, String> {
    if !corpus_dir.is_dir() {
        return Err(format!(
            "corpus folder `{}` does not exist",
            corpus_dir.display()
        ));
    }
    let paths = StorePaths::in_dir(data_dir);
    let mut files = Vec::new();
    walk(corpus_dir, &mut files).map_err(|e| format!("`{}`: {e}", corpus_dir.display()))?;
    let (transcripts, others): (Vec<PathBuf>, Vec<PathBuf>) = files
        .into_iter()
        .partition(|f| crate::ingest::detect(f).is_some());
    let memory_files: Vec<PathBuf> = others
        .into_iter()
        .filter(|f| crate::ingest::memories::is_memory_file(f))
        .collect();
    let mut imported = 0;
    if !transcripts.is_empty() {
        let mut store =
            ConversationStore::open_rw(&paths.conversations).map_err(|e| e.to_string())?;
        // With the local model present the L1 embeddings are written as `skills
        // ingest` writes them (semantic-search's cases need them).
        if let Ok(model) = crate::embed::Embedder::load_default() {
            store
                .embed_with(
                    std::sync::Arc::new(model),
                    crate::stores::conversations::embeddings::UnitSpec::DEFAULT,
                )
                .map_err(|e| e.to_string())?;
        }
        let summary =
            crate::ingest::ingest_paths(&store, &[corpus_dir.to_path_buf()], &mut |_, _| {});
        // Closing publishes the search index, so checks exercise the engine's index path.
        let closed = store
            .close_with(&mut |_, _| {})
            .map_err(|e| e.to_string())?;
        if let Some(Err(e)) = closed.embeddings {
            return Err(format!("embeddings: {e}"));
        }
        if let Some(fault) = summary.faults.first() {
            return Err(format!("fixture import fault: {fault}"));
        }
        imported += summary.messages_added;
    }
    if !memory_files.is_empty() {
        let store = MemoryStore::open_rw(&paths.memories).map_err(|e| e.to_string())?;
        // Embedded by the static table, the model conformance cases query with.
        let model = crate::embed::Embedder::load_default().ok();
        let summary =
            crate::ingest::memories::import_paths_with(&store, &memory_files, model.as_ref())
                .map_err(|e| e.to_string())?;
        drop(store);
        if let Some(fault) = summary.faults.first() {
            return Err(format!("fixture import fault: {fault}"));
        }
        imported += summary.memories;
    }
    if imported == 0 {
        return Err(format!(
            "no message or memory imported from `{}`",
            corpus_dir.display()
        ));
    }
    Ok(paths)
}

/// Every non-hidden regular file under `dir`, recursively, in path order
/// ([`crate::walk`]'s rules); the first unreadable folder is an error.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let walked = crate::walk::files_below(dir, crate::walk::Hidden::Skip);
    if let Some((_, e)) = walked.unreadable.into_iter().next() {
        return Err(e);
    }
    out.extend(walked.files);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_corpus_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let err = build_stores(&tmp.path().join("nope"), tmp.path()).unwrap_err();
        assert!(err.starts_with("corpus folder `"), "{err}");
    }
}
