//! `GET /memories/{id}`: one memory (title, type, tags, times, body as sanitised
//! HTML, files, origin) with its links: the memories it supersedes, those that
//! supersede it, and the conversation it was saved from. The data is the output of
//! the skill feeding the memory page ([`calls`]), already redacted; `?format=json` is
//! the twin.
//!
//! On the team archive a memory is held once per machine that pushed it: `?machine=`
//! (a label or a machine id) picks that machine's copy, else the newest copy is shown.
//! The page names the copy's machine, and its links (the memories it supersedes and
//! that supersede it, the conversation it was saved from) go to that machine's copies.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::calls::{self, Calls, Failed, Role};
use super::html::{self, Linker};
use super::{paths, view, Pages, Response};

/// The page of memory `id`: machine `machine`'s copy when given (the team archive; on
/// the local stores the skill refuses the argument, naming `--archive`).
pub async fn page(pages: &Pages, id: &str, machine: Option<&str>, as_json: bool) -> Response {
    let mut args = json!({"id": id});
    if let Some(machine) = machine {
        args["machine"] = json!(machine);
    }
    let output = match pages.call_role(Role::Memory, args, as_json).await {
        Ok(output) => output,
        Err(Failed::NothingStored(_)) if !as_json => {
            return pages.error(
                StatusCode::NOT_FOUND,
                "No such memory",
                "no memories are stored yet: `skills memo add` or memo-save adds one",
            )
        }
        Err(failed) => return failed.into_response(pages, as_json),
    };
    let Some(memory) = calls::rows(&output).first().cloned() else {
        return calls::fail(
            pages,
            as_json,
            StatusCode::NOT_FOUND,
            "No such memory",
            &format!("no memory `{id}` is stored"),
        );
    };
    let mut calls = Calls::new(as_json);
    calls.add("memory", &output);
    if as_json {
        return calls.twin();
    }
    let now = pages.now();
    let list = |key: &str| -> Vec<String> {
        memory
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    // The copy's machine (its id, from `cites`): its links are that machine's.
    let own = memory
        .get("cites")
        .and_then(super::conversations::cited_machine);
    let linked_memories = |ids: Vec<String>| -> Vec<Value> {
        ids.iter()
            .map(|other| json!({"id": view::Id::of(other), "href": paths::on_machine(&paths::memory(other), own)}))
            .collect()
    };
    let body = calls::text(&memory, "body").unwrap_or("");
    let conversation = calls::text(&memory, "conversation_id").filter(|c| !c.is_empty());
    pages.render(
        StatusCode::OK,
        "memory.html",
        json!({
            "id": calls::text(&memory, "id").unwrap_or(id),
            "title": calls::text(&memory, "title"),
            "type": calls::text(&memory, "type"),
            "tags": list("tags").iter().map(|t| json!({
                "name": t,
                "href": paths::with_query("/memories", &[("tag", t), ("machine", own.unwrap_or(""))]),
            })).collect::<Vec<_>>(),
            "machine": calls::text(&memory, "machine"),
            "machine_href": own.map(|m| paths::with_query("/memories", &[("machine", m)])),
            "created": view::Time::of(calls::text(&memory, "created"), now),
            "updated": view::Time::of(calls::text(&memory, "updated"), now),
            "body_html": html::markdown(body, &mut Linker::default()),
            "cut": calls::count(&memory, "body_chars").saturating_sub(body.chars().count()),
            "files_read": list("files_read"),
            "files_modified": list("files_modified"),
            "origin": calls::text(&memory, "origin"),
            "supersedes": linked_memories(list("supersedes")),
            "superseded_by": linked_memories(list("superseded_by")),
            "conversation": conversation.map(|c| json!({
                "id": view::Id::of(c),
                "href": paths::on_machine(&paths::conversation(None, c, None), own),
            })),
            "redacted": calls.redacted(),
            "json_href": paths::with_query(&paths::memory(id), &[("machine", machine.unwrap_or("")), ("format", "json")]),
        }),
    )
}
