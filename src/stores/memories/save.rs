//! The one write path of a single memory: [`save_memory`] (with its input
//! [`MemoryInput`], links [`SaveLinks`] and result [`SaveOutcome`]), which `skills memo
//! add`, the `memo_save` engine and the importers of [`crate::ingest::memories`] share
//! through [`MemoryInput::into_memory`].
//!
//! A saved memory gets a deterministic id (`m-` + 16 hex digits of the SHA-256 of title
//! and body, unless given), trimmed and deduplicated tags and file lists, times cut to
//! the second, and a lowercased type ([`DEFAULT_TYPE`] when none); saving an identical
//! memory again writes nothing.

use chrono::{DateTime, Utc};

use super::{format_time, MemoryStore, Upsert, REL_CONVERSATION, REL_SUPERSEDES};
use crate::embed::Embedder;
use crate::model::Memory;
use crate::stores::StoreError;

/// Type given to a memory whose source names none.
pub const DEFAULT_TYPE: &str = "note";

/// One memory to add, as a caller (CLI, JSONL line) describes it. Only `title` or
/// `body` is needed; everything else has a default.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemoryInput {
    /// Stable id; default `m-<16 hex>` from a SHA-256 of title and body.
    pub id: Option<String>,
    /// Title; default the body's first line.
    pub title: String,
    /// Type (`decision`, `fact`, `bug`…), lowercased; default [`DEFAULT_TYPE`].
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Creation time; default now.
    pub created: Option<DateTime<Utc>>,
    /// Update time; default `created`.
    pub updated: Option<DateTime<Utc>>,
    /// Markdown body.
    pub body: String,
    /// Paths read when the memory was captured.
    pub files_read: Vec<String>,
    /// Paths modified when the memory was captured.
    pub files_modified: Vec<String>,
    /// Where it came from (file path…), when known.
    pub origin: Option<String>,
}

/// Why [`add_memory`] or [`save_memory`] refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddMemoryError {
    /// The input has neither a title nor a body.
    #[error("a memory needs a title or a body")]
    Empty,
    /// A `supersedes` id names no stored memory.
    #[error("`supersedes`: no memory has id `{0}`")]
    UnknownSupersedes(String),
    /// A memory cannot supersede itself.
    #[error("`supersedes`: memory `{0}` cannot supersede itself")]
    SupersedesItself(String),
    /// The store could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What [`save_memory`] adds beside the memory itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaveLinks {
    /// Ids of stored memories the new one replaces: they stay stored and are marked
    /// superseded.
    pub supersedes: Vec<String>,
    /// The conversation the memory was saved from (a transcript's `conversation_id`).
    pub conversation_id: Option<String>,
}

/// What [`save_memory`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SaveOutcome {
    /// The memory's id (deterministic: from title and body unless given).
    pub id: String,
    /// True when no memory had this id before.
    pub created: bool,
    /// True when anything was written (a new or changed memory, or a new link).
    pub changed: bool,
    /// Ids this save newly marked superseded.
    pub superseded: Vec<String>,
    /// True when an embedding was computed and stored.
    pub embedded: bool,
    /// Creation time kept for the memory (UTC `YYYY-MM-DDTHH:MM:SSZ`).
    pub stored_created: String,
    /// Secrets replaced in title and body before storing (0 with `--keep-secrets`;
    /// [`crate::redact::at_store`]). Not part of `memo-save`'s output.
    #[serde(skip)]
    pub secrets_redacted: usize,
}

/// Adds (or updates, by id) one memory and embeds it when the memories' model
/// ([`Embedder::load_for_memories`]) is available. Returns the memory's id. Adding the same
/// memory again changes nothing (see [`save_memory`]).
///
/// # Errors
/// [`AddMemoryError::Empty`] without title and body, [`AddMemoryError::Store`] when the
/// store cannot be written.
pub fn add_memory(store: &MemoryStore, input: MemoryInput) -> Result<String, AddMemoryError> {
    let embedder = Embedder::load_for_memories().ok();
    add_memory_with(store, input, embedder.as_ref(), Utc::now())
}

/// [`add_memory`] with an explicit embedder (or none) and clock (`now` is the default
/// `created`).
///
/// # Errors
/// As [`add_memory`].
pub fn add_memory_with(
    store: &MemoryStore,
    input: MemoryInput,
    embedder: Option<&Embedder>,
    now: DateTime<Utc>,
) -> Result<String, AddMemoryError> {
    save_memory(store, input, &SaveLinks::default(), embedder, now).map(|o| o.id)
}

/// Saves one memory — the one write path of `skills memo add` and the `memo-save`
/// skill — with its links, in one transaction, then embeds it with `embedder` when it
/// is new or changed.
///
/// Idempotent: when the id (from title and body unless `input.id` is set) is already
/// stored with the same title, type, tags, body, files and origin, the stored times are
/// kept and nothing is written unless a link is new. A changed memory keeps its stored
/// `created` (unless `input.created` is set) and gets `updated = now`.
///
/// Secrets in title and body are replaced before anything else
/// ([`crate::redact::at_store::for_store`]; not with `--keep-secrets`), so the id,
/// the stored text and the embedding never hold one.
///
/// # Errors
/// [`AddMemoryError::Empty`] without title and body; [`AddMemoryError::UnknownSupersedes`]
/// / [`AddMemoryError::SupersedesItself`] for a bad `supersedes` id (nothing written);
/// [`AddMemoryError::Store`] when the store cannot be read or written.
pub fn save_memory(
    store: &MemoryStore,
    input: MemoryInput,
    links: &SaveLinks,
    embedder: Option<&Embedder>,
    now: DateTime<Utc>,
) -> Result<SaveOutcome, AddMemoryError> {
    let explicit = Explicit {
        created: input.created.is_some(),
        updated: input.updated.is_some(),
    };
    // Before the id is derived from title and body: the stored text is what it hashes.
    let mut input = input;
    let mut secrets_redacted = crate::redact::at_store::for_store(&mut input.title)
        + crate::redact::at_store::for_store(&mut input.body);
    // Ids and metadata get keyed markers (ids stay distinct and stable, see
    // `crate::redact::ids`): a given id, the origin, tags, files, the links.
    let mut links = links.clone();
    if !crate::redact::at_store::keep_secrets() {
        use crate::redact::at_store::{id_in_place, opt_id_in_place};
        let key = crate::redact::ids::IdKey::of_store(store.path()).map_err(StoreError::Io)?;
        secrets_redacted += opt_id_in_place(&mut input.id, &key)
            + opt_id_in_place(&mut links.conversation_id, &key);
        for id in &mut links.supersedes {
            secrets_redacted += id_in_place(id, &key);
        }
        let mut memory = input.into_memory(now).ok_or(AddMemoryError::Empty)?;
        secrets_redacted += redact_metadata(&mut memory, &key);
        return save_redacted(
            store,
            memory,
            &links,
            embedder,
            now,
            secrets_redacted,
            explicit,
        );
    }
    let memory = input.into_memory(now).ok_or(AddMemoryError::Empty)?;
    save_redacted(
        store,
        memory,
        &links,
        embedder,
        now,
        secrets_redacted,
        explicit,
    )
}

/// `created` and `updated` were given by the caller (not defaulted).
#[derive(Clone, Copy)]
struct Explicit {
    created: bool,
    updated: bool,
}

/// [`save_memory`] once the memory is complete and redacted.
fn save_redacted(
    store: &MemoryStore,
    mut memory: Memory,
    links: &SaveLinks,
    embedder: Option<&Embedder>,
    now: DateTime<Utc>,
    secrets_redacted: usize,
    explicit: Explicit,
) -> Result<SaveOutcome, AddMemoryError> {
    let (explicit_created, explicit_updated) = (explicit.created, explicit.updated);
    for old in &links.supersedes {
        if *old == memory.id {
            return Err(AddMemoryError::SupersedesItself(old.clone()));
        }
        if !store.contains(old)? {
            return Err(AddMemoryError::UnknownSupersedes(old.clone()));
        }
    }
    if let Some(existing) = store.get(&memory.id)? {
        let same = existing.title == memory.title
            && existing.kind == memory.kind
            && existing.tags == memory.tags
            && existing.body == memory.body
            && existing.files_read == memory.files_read
            && existing.files_modified == memory.files_modified
            && existing.origin == memory.origin;
        if !explicit_created {
            memory.created = existing.created;
        }
        if same && !explicit_updated {
            memory.updated = existing.updated;
        } else if !explicit_updated {
            memory.updated = truncate_seconds(now).max(memory.created);
        }
    }
    let mut pairs: Vec<(&str, String)> = links
        .supersedes
        .iter()
        .map(|old| (REL_SUPERSEDES, old.clone()))
        .collect();
    if let Some(conv) = links
        .conversation_id
        .as_ref()
        .filter(|c| !c.trim().is_empty())
    {
        pairs.push((REL_CONVERSATION, conv.trim().to_owned()));
    }
    let before = store.links(std::slice::from_ref(&memory.id))?;
    // Embedded before the write so memory, links and vectors commit together (one
    // transaction, one sync); an unchanged memory keeps the vectors it has.
    let embedding = embedder.map(|e| (e.embed_chunks(&memory.embedding_text()), e.name()));
    let (outcome, added) = store.save(
        &memory,
        &pairs,
        embedding.as_ref().map(|(v, model)| (v.as_slice(), *model)),
    )?;
    let already: Vec<String> = before
        .get(&memory.id)
        .map(|l| l.supersedes.clone())
        .unwrap_or_default();
    let superseded: Vec<String> = links
        .supersedes
        .iter()
        .filter(|id| !already.contains(id))
        .cloned()
        .collect();
    let embedded = embedding.is_some() && outcome != Upsert::Unchanged;
    if crate::redact::at_store::keep_secrets() {
        if outcome != Upsert::Unchanged {
            store.mark_secrets_kept()?;
        }
    } else if outcome != Upsert::Unchanged {
        store.count_secrets_redacted(secrets_redacted)?;
    }
    Ok(SaveOutcome {
        id: memory.id,
        created: outcome == Upsert::Inserted,
        changed: outcome != Upsert::Unchanged || added > 0,
        superseded,
        embedded,
        stored_created: format_time(&memory.created),
        secrets_redacted,
    })
}

/// Redacts a memory's metadata in place with keyed markers ([`crate::redact::ids`]):
/// type, tags, files read and modified, and origin — what memo-search's `type`,
/// `tag` and `file` filters match, so a secret in them would be read out one
/// character at a time. (Title and body get the usual markers, by the caller.)
/// Returns how many secrets were replaced.
pub fn redact_metadata(memory: &mut Memory, key: &crate::redact::ids::IdKey) -> usize {
    use crate::redact::at_store::{id_in_place, opt_id_in_place};
    let mut n = id_in_place(&mut memory.kind, key) + opt_id_in_place(&mut memory.origin, key);
    for item in memory
        .tags
        .iter_mut()
        .chain(memory.files_read.iter_mut())
        .chain(memory.files_modified.iter_mut())
    {
        n += id_in_place(item, key);
    }
    n
}

impl MemoryInput {
    /// The memory this input describes, completed as [`save_memory`] stores it: body
    /// trimmed, title from the body's first line when empty ([`first_line_title`]),
    /// `created` = `now` and `updated` = `created` when absent (both cut to the second),
    /// type lowercased or [`DEFAULT_TYPE`], id from title and body when absent
    /// ([`Memory::stable_id`]), tags without a leading `#`, empty and repeated items
    /// dropped. `None` when it has neither title nor body.
    pub fn into_memory(self, now: DateTime<Utc>) -> Option<Memory> {
        let body = self.body.trim().to_owned();
        let title = match self.title.trim() {
            "" => first_line_title(&body)?,
            t => t.to_owned(),
        };
        let created = truncate_seconds(self.created.unwrap_or(now));
        let updated = truncate_seconds(self.updated.unwrap_or(created));
        let kind = self
            .kind
            .map(|k| k.trim().to_lowercase())
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| DEFAULT_TYPE.into());
        let id = self
            .id
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| Memory::stable_id(&format!("{title}\u{0}{body}")));
        Some(Memory {
            id,
            title,
            kind,
            tags: dedup(
                self.tags
                    .iter()
                    .map(|t| t.trim().trim_start_matches('#').to_owned()),
            ),
            created,
            updated,
            body,
            files_read: dedup(self.files_read.into_iter()),
            files_modified: dedup(self.files_modified.into_iter()),
            origin: self.origin,
        })
    }
}

fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !item.is_empty() && !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn truncate_seconds(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)
}

/// The first non-empty line of `body` (a `---` line does not count), without markdown
/// heading marks, cut to 120 characters; `None` when there is none.
pub fn first_line_title(body: &str) -> Option<String> {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "---")?;
    let line = line.trim_start_matches('#').trim();
    if line.is_empty() {
        return None;
    }
    Some(line.chars().take(120).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> DateTime<Utc> {
        crate::time::parse_when("2026-07-03T12:00:00Z").unwrap()
    }

    #[test]
    fn add_memory_is_idempotent() {
        let store = MemoryStore::open_in_memory().unwrap();
        let input = MemoryInput {
            title: "T".into(),
            body: "B".into(),
            ..MemoryInput::default()
        };
        let a = add_memory_with(&store, input.clone(), None, t0()).unwrap();
        let b = add_memory_with(&store, input, None, t0()).unwrap();
        assert_eq!(a, b);
        assert_eq!(store.count().unwrap(), 1);
        assert!(matches!(
            add_memory_with(&store, MemoryInput::default(), None, t0()),
            Err(AddMemoryError::Empty)
        ));
    }

    #[test]
    fn an_input_is_completed_into_the_stored_memory() {
        let input = MemoryInput {
            title: "  ".into(),
            kind: Some(" Decision ".into()),
            tags: vec!["#rust".into(), "rust".into(), String::new()],
            body: "\n## Use serde\n\nbecause it is fast ".into(),
            ..MemoryInput::default()
        };
        let m = input.into_memory(t0()).unwrap();
        assert_eq!(m.title, "Use serde");
        assert_eq!(m.kind, "decision");
        assert_eq!(m.tags, ["rust"]);
        assert_eq!(m.body, "## Use serde\n\nbecause it is fast");
        assert_eq!((m.created, m.updated), (t0(), t0()));
        assert_eq!(
            m.id,
            Memory::stable_id("Use serde\u{0}## Use serde\n\nbecause it is fast")
        );
        assert_eq!(MemoryInput::default().into_memory(t0()), None);
    }
}
