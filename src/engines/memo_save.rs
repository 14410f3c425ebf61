//! Engine `memo_save`: writes one durable memory into the memories store — the write
//! half of the save → recall loop, over MCP as well as the CLI.
//!
//! The memory goes through [`crate::stores::memories::save::save_memory`], the same path as
//! `skills memo add`: a deterministic id (`m-` + 16 hex digits of the SHA-256 of title
//! and body), an upsert that leaves an identical memory untouched (so saving twice
//! changes nothing and says `created: false`, `status: "already stored"`), the
//! memory's links (`supersedes`, `conversation_id`) in the same transaction, and an
//! embedding from the local model when one is available (`SKILLS_EMBEDDER=none`: none).
//!
//! A running server's memo-search sees the memory on its next call: the write goes
//! through its own connection, which bumps SQLite's `PRAGMA data_version` for the
//! server's read-only connection, and [`MemoryStore::search_index`] appends the new
//! row to its held index on that (the change log `memories_changes` says which).
//! Memory, links and embedding are one transaction: one commit per save.
//!
//! [`MemoryStore::search_index`]: crate::stores::memories::MemoryStore::search_index

use serde_json::{json, Value};

use super::{Context, Effects, Engine, EngineError};
use crate::stores::memories::save::{save_memory, AddMemoryError, MemoryInput, SaveLinks};
use crate::stores::Store;

/// Largest `body`, in characters (the input schema's `maxLength` says the same).
pub const MAX_BODY_CHARS: usize = 65_536;

/// The engine (stateless; the store, clock and model come from the [`Context`]).
pub struct MemoSave;

fn text(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn list(args: &Value, key: &str) -> Vec<String> {
    args.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

impl Engine for MemoSave {
    fn name(&self) -> &'static str {
        "memo_save"
    }

    /// Reads and writes the memories store.
    fn effects(&self) -> Effects {
        Effects {
            reads: vec![Store::Memories],
            writes: vec![Store::Memories],
        }
    }

    /// Output shape: `{"id", "created": bool, "changed": bool, "status": "created" |
    /// "updated" | "already stored", "superseded": [id], "embedded": bool,
    /// "stored_created": "YYYY-MM-DDTHH:MM:SSZ", "note"?: str}`.
    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        // On the team archive: a role that may not write it is refused before anything
        // is saved (see [`into_archive`]).
        let mut archive = match ctx.archive() {
            Some(pool) => Some(writable_archive(ctx, pool)?),
            None => None,
        };
        let body = text(args, "body");
        if body.chars().count() > MAX_BODY_CHARS {
            return Err(EngineError::Argument {
                name: "body".into(),
                reason: format!("at most {MAX_BODY_CHARS} characters; it was not saved"),
            });
        }
        let source = text(args, "source");
        let input = MemoryInput {
            title: text(args, "title"),
            kind: Some(text(args, "type")).filter(|k| !k.trim().is_empty()),
            tags: list(args, "tags"),
            body,
            files_read: list(args, "files_read"),
            files_modified: list(args, "files_modified"),
            origin: Some(source.trim().to_owned()).filter(|s| !s.is_empty()),
            ..MemoryInput::default()
        };
        let links = SaveLinks {
            supersedes: list(args, "supersedes"),
            conversation_id: Some(text(args, "conversation_id")).filter(|c| !c.trim().is_empty()),
        };
        let store = ctx.memories_writable()?;
        let (embedder, note) = match ctx.memory_embedder() {
            Ok(e) => (Some(e), None),
            Err(why) => (
                None,
                Some(format!(
                    "embedding unavailable ({why}): saved without an embedding; memo-search finds it by keyword, and `skills memo import` embeds it once a model is present"
                )),
            ),
        };
        let outcome = save_memory(&store, input, &links, embedder.as_deref(), ctx.now()).map_err(
            |e| match e {
                AddMemoryError::Empty => EngineError::Argument {
                    name: "body".into(),
                    reason: "a memory needs a non-empty `title` or `body`".into(),
                },
                AddMemoryError::UnknownSupersedes(id) => EngineError::Argument {
                    name: "supersedes".into(),
                    reason: format!("no memory has id `{id}`"),
                },
                AddMemoryError::SupersedesItself(id) => EngineError::Argument {
                    name: "supersedes".into(),
                    reason: format!("memory `{id}` cannot supersede itself"),
                },
                AddMemoryError::Store(e) => EngineError::Store(e),
            },
        )?;
        let status = if outcome.created {
            "created"
        } else if outcome.changed {
            "updated"
        } else {
            "already stored"
        };
        let mut out = json!({
            "id": outcome.id,
            "created": outcome.created,
            "changed": outcome.changed,
            "status": status,
            "superseded": outcome.superseded,
            "embedded": outcome.embedded,
            "stored_created": outcome.stored_created,
        });
        if let Some(note) = note {
            out["note"] = json!(note);
        }
        if let Some(archive) = archive.as_mut() {
            out["archive"] = into_archive(ctx, archive, &outcome.id)?;
        }
        Ok(out)
    }
}

/// A write connection to the archive `pool` reads, with this machine: refused
/// ([`EngineError::Unavailable`]) when the schema is not this build's or the role may
/// not write memories (a reader role: the `--writer` role of `skills archive
/// migrate` may).
fn writable_archive(
    ctx: &Context,
    pool: &crate::archive::search::Pool,
) -> Result<(crate::archive::Archive, crate::archive::machine::Machine), EngineError> {
    let unavailable = |e: crate::archive::ArchiveError| {
        EngineError::Unavailable(format!("memo-save: {e}; the memory was not saved"))
    };
    let target = pool.target();
    let mut archive = crate::archive::Archive::open(target).map_err(unavailable)?;
    if !crate::archive::push::may_push_memories(&mut archive).map_err(unavailable)? {
        return Err(EngineError::Unavailable(format!(
            "memo-save: role `{}` may not write the archive {} (a reader role); save with \
             the pushing role (`skills archive migrate --writer NAME` prints its GRANTs), \
             or without `--archive` / {} to save on this machine only; the memory was not \
             saved",
            target.user(),
            target.shown(),
            crate::settings::ARCHIVE_URL.name
        )));
    }
    let machine = crate::archive::machine::Machine::of_paths(ctx.paths()).map_err(unavailable)?;
    Ok((archive, machine))
}

/// Pushes this machine's changed memories (the one just saved among them, with its
/// links, terms and vector) into the archive: the `archive` member of the output,
/// `{"pushed": true, "archive", "machine", "machine_id", "user", "memories_sent"}`.
/// The memory is saved locally first, so a failed push leaves it there for the next
/// `skills archive push` (the error says so).
fn into_archive(
    ctx: &Context,
    (archive, machine): &mut (crate::archive::Archive, crate::archive::machine::Machine),
    id: &str,
) -> Result<Value, EngineError> {
    let options = crate::archive::push::PushOptions::default();
    let report = crate::archive::push::push_memories_only(archive, ctx.paths(), machine, &options)
        .map_err(|e| {
            EngineError::Unavailable(format!(
                "memo-save: memory `{id}` was saved on this machine but not pushed to the \
                 archive: {e}; `skills archive push` sends it"
            ))
        })?;
    Ok(json!({
        "pushed": true,
        "archive": report.archive,
        "machine": report.label,
        "machine_id": report.machine,
        "user": report.user,
        "memories_sent": report.memories_sent,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::StorePaths;

    fn ctx(dir: &std::path::Path) -> Context {
        Context::new(StorePaths::in_dir(dir))
            .with_embedder(None)
            .scoped(super::super::Access::declared(
                "memo-save",
                &[Store::Memories],
                &[Store::Memories],
            ))
    }

    #[test]
    fn saving_twice_is_a_no_op_and_supersedes_are_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let args = json!({"title": "Use rpath", "body": "We link duckdb with an rpath.", "type": "decision", "tags": ["build"]});
        let first = MemoSave.call(&args, &ctx).unwrap();
        assert_eq!(first["created"], json!(true));
        assert_eq!(first["status"], json!("created"));
        let bytes = std::fs::read(tmp.path().join("memories.sqlite")).unwrap();
        let again = MemoSave.call(&args, &ctx).unwrap();
        assert_eq!(again["created"], json!(false));
        assert_eq!(again["changed"], json!(false));
        assert_eq!(again["status"], json!("already stored"));
        assert_eq!(again["id"], first["id"]);
        assert_eq!(
            std::fs::read(tmp.path().join("memories.sqlite")).unwrap(),
            bytes
        );
        let bad = json!({"body": "x", "supersedes": ["m-nope"]});
        let err = MemoSave.call(&bad, &ctx).unwrap_err().to_string();
        assert!(
            err.contains("`supersedes`") && err.contains("m-nope"),
            "{err}"
        );
        let newer = json!({"body": "We bundle duckdb now.", "supersedes": [first["id"]]});
        let out = MemoSave.call(&newer, &ctx).unwrap();
        assert_eq!(out["superseded"], json!([first["id"]]));
        let store = ctx.memories_writable().unwrap();
        let links = store
            .links(&[first["id"].as_str().unwrap().to_owned()])
            .unwrap();
        assert_eq!(
            links.values().next().unwrap().superseded_by,
            vec![out["id"].as_str().unwrap().to_owned()]
        );
    }

    #[test]
    fn an_empty_memory_and_a_huge_body_name_the_field() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ctx(tmp.path());
        let err = MemoSave
            .call(&json!({"body": "   "}), &ctx)
            .unwrap_err()
            .to_string();
        assert!(err.contains("argument `body`"), "{err}");
        let huge = "x".repeat(MAX_BODY_CHARS + 1);
        let err = MemoSave
            .call(&json!({"body": huge}), &ctx)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("argument `body`") && err.contains("65536"),
            "{err}"
        );
        assert!(
            !tmp.path().join("memories.sqlite").exists() || {
                let store = ctx.memories_writable().unwrap();
                store.count().unwrap() == 0
            }
        );
    }
}
