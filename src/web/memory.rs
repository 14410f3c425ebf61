//! `GET /memories/{id}`: one memory (title, type, tags, times, body as sanitised
//! HTML, files, origin) with its links: the memories it supersedes, those that
//! supersede it, and the conversation it was saved from.

use serde_json::json;

use super::html::{self, Linker};
use super::paths;
use crate::stores::memories::MemoryStore;
use crate::stores::{StoreError, StorePaths};

/// The page's context, or `Err(message)` when there is no such memory (or no store).
///
/// # Errors
/// The outer error: a store that cannot be opened or read.
pub fn read(
    stores: &StorePaths,
    id: &str,
) -> Result<Result<serde_json::Value, String>, StoreError> {
    let store = match MemoryStore::open_ro(&stores.memories) {
        Ok(store) => store,
        Err(StoreError::Missing { .. }) => {
            return Ok(Err(
                "no memories are stored yet: `skills memo add` or memo-save adds one".into(),
            ))
        }
        Err(e) => return Err(e),
    };
    let Some(memory) = store.get(id)? else {
        return Ok(Err(format!("no memory `{id}` is stored")));
    };
    let links = store
        .links(&[id.to_owned()])?
        .remove(id)
        .unwrap_or_default();
    let memory_links = |ids: &[String]| -> Vec<serde_json::Value> {
        ids.iter()
            .map(|other| json!({"id": other, "href": paths::memory(other)}))
            .collect()
    };
    Ok(Ok(json!({
        "id": memory.id,
        "title": memory.title,
        "type": memory.kind,
        "tags": memory.tags,
        "created": crate::stores::memories::format_time(&memory.created),
        "updated": crate::stores::memories::format_time(&memory.updated),
        "body_html": html::markdown(&memory.body, &mut Linker::default()),
        "files_read": memory.files_read,
        "files_modified": memory.files_modified,
        "origin": memory.origin,
        "supersedes": memory_links(&links.supersedes),
        "superseded_by": memory_links(&links.superseded_by),
        "conversation": links.conversation_id.as_ref().map(|c| json!({
            "id": c,
            "href": paths::conversation(None, c, None),
        })),
    })))
}
