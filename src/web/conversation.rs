//! `GET /conversations/{source}/{conversation_id}`: one conversation's messages in
//! order, each under an anchor `#m-{message_id}`, [`PAGE_SIZE`] to a page.
//!
//! `?at={message_id}` opens the page holding that message (citations link with it);
//! `?page=N` pages. Source `_` ([`paths::ANY_SOURCE`]) redirects to the source that
//! holds the conversation. The data is two skill calls ([`calls`]): the
//! conversations list's row of this conversation (title, project, model, count, first
//! and last time) and the conversation skill's page of messages, already redacted;
//! messages are rendered as markdown through [`html::markdown`], text a harness
//! injected folded into a `<details>`. `?format=json` is the twin.
//!
//! On the team archive (`serve --archive`) a conversation may be held by several
//! machines: `?machine=` (a label or an id; the list's rows link with the id) picks the
//! list's row of that machine, and the messages are that row's machine's copy, asked
//! for by its id (without `machine`, the copy of the machine whose row the list gives
//! first). Labels are host names and not unique: two machines sharing one never mix,
//! and the page's links carry the id. The page shows the label; each message its
//! machine's label.

use hyper::StatusCode;
use serde::Serialize;
use serde_json::{json, Value};

use super::calls::{self, Calls, Failed, Role};
use super::html::{self, Linker};
use super::{conversations, paths, respond, view, Pages, Response};

/// Messages on one page.
pub const PAGE_SIZE: usize = 200;

/// Characters of one message shown; the rest is counted.
pub const MAX_MESSAGE_CHARS: usize = 20_000;

/// One message as the page shows it.
#[derive(Debug, Serialize)]
pub struct Shown {
    /// Its `message_id` (the anchor is `m-` followed by it).
    pub id: String,
    /// Its position in the conversation, from 1.
    pub number: usize,
    /// `user`, `assistant`, `system`, `tool`…
    pub role: String,
    /// UTC time, relative to now and exact.
    pub time: view::Time,
    /// `text`, `tool_use`…
    pub content_type: String,
    /// The content as sanitised HTML.
    pub html: String,
    /// Text a harness injected (shown folded).
    pub injected: bool,
    /// Characters in the stored content.
    pub chars: usize,
    /// Characters left out ([`MAX_MESSAGE_CHARS`]).
    pub cut: usize,
    /// Of those, the characters cut at import (the call's `cut_at_import`): beyond
    /// [`crate::ingest::MAX_STORED_CHARS`], counted in `char_count` but never stored.
    pub cut_at_import: usize,
    /// The machine that pushed it (messages from the team archive), else `None`.
    pub machine: Option<String>,
}

/// The arguments of the call for page `page` (from 1) of conversation `id`'s messages.
fn messages_args(
    id: &str,
    source: &str,
    page: usize,
    at: Option<&str>,
    machine: Option<&str>,
) -> Value {
    let mut args = json!({
        "conversation_id": id,
        "source": source,
        "limit": PAGE_SIZE,
        "offset": (page.max(1) - 1) * PAGE_SIZE,
        "max_chars": MAX_MESSAGE_CHARS,
    });
    if let Some(at) = at.filter(|a| !a.is_empty()) {
        args["at"] = json!(at);
    }
    if let Some(machine) = machine {
        args["machine"] = json!(machine);
    }
    args
}

/// The page of conversation `id` of `source` (`page` from 1, or the page holding
/// message `at`), only machine `machine`'s messages when given (the team archive).
pub async fn page(
    pages: &Pages,
    source: &str,
    id: &str,
    page: Option<usize>,
    at: Option<&str>,
    machine: Option<&str>,
    as_json: bool,
) -> Response {
    let mut calls = Calls::new(as_json);
    let nothing = |why: String| pages.error(StatusCode::NOT_FOUND, "No such conversation", &why);
    let any = source == paths::ANY_SOURCE;
    let mut header_args = json!({"conversation_id": id, "limit": 1});
    if !any {
        header_args["source"] = json!(source);
    }
    if let Some(machine) = machine {
        header_args["machine"] = json!(machine);
    }
    // The messages' call needs the header's row (its page count, its machine), but for
    // the usual first page its arguments can be guessed: both run at once, and the
    // guess is used only when it equals what the header then asks for.
    let guess = (!any && page.unwrap_or(1) == 1).then(|| messages_args(id, source, 1, at, machine));
    let (header, guessed) = tokio::join!(
        pages.call_role(Role::Conversations, header_args, as_json),
        async {
            match &guess {
                Some(args) => Some(
                    pages
                        .call_role(Role::Conversation, args.clone(), as_json)
                        .await,
                ),
                None => None,
            }
        }
    );
    let header = match header {
        Ok(output) => output,
        Err(Failed::NothingStored(_)) if !as_json => {
            return nothing("no conversations are stored yet: run `skills ingest` first".into())
        }
        Err(failed) => return failed.into_response(pages, as_json),
    };
    let Some(row) = calls::rows(&header).first().cloned() else {
        let why = if any {
            format!("no conversation `{id}` is stored")
        } else {
            format!("no conversation `{id}` from source `{source}` is stored")
        };
        return calls::fail(
            pages,
            as_json,
            StatusCode::NOT_FOUND,
            "No such conversation",
            &why,
        );
    };
    // On the archive, the messages of the machine whose row heads the page (the newest
    // copy when the URL names none), by its id: never several machines' copies
    // interleaved, even when they share a label.
    let machine = row
        .get("cites")
        .and_then(conversations::cited_machine)
        .or(machine)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    let machine = machine.as_deref();
    let label = calls::text(&row, "machine")
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    // The page lives at its real source; the JSON twin answers here, so a client
    // reading it needs no redirect (which would drop `format=json`).
    let real = calls::text(&row, "source")
        .unwrap_or(paths::ANY_SOURCE)
        .to_owned();
    if any && !as_json {
        return respond::redirect(&paths::on_machine(
            &paths::conversation(Some(&real), id, at),
            machine,
        ));
    }
    let source = if any { real.as_str() } else { source };
    calls.add("conversation", &header);
    let count = calls::count(&row, "messages").max(1);
    let pages_count = count.div_ceil(PAGE_SIZE).max(1);
    let wanted = page.unwrap_or(1).clamp(1, pages_count);
    let args = messages_args(id, source, wanted, at, machine);
    let called = match guessed.filter(|_| guess.as_ref() == Some(&args)) {
        Some(called) => called,
        None => pages.call_role(Role::Conversation, args, as_json).await,
    };
    let output = match called {
        Ok(output) => output,
        Err(failed) => return failed.into_response(pages, as_json),
    };
    calls.add("messages", &output);
    if as_json {
        return calls.twin();
    }
    let now = pages.now();
    let rows = calls::rows(&output);
    let first_position = rows
        .first()
        .map_or(1, |r| calls::count(r, "position").max(1));
    let current = (first_position - 1) / PAGE_SIZE + 1;
    let messages: Vec<Shown> = rows
        .iter()
        .map(|r| {
            let content = calls::text(r, "content").unwrap_or("");
            let chars = calls::count(r, "char_count");
            Shown {
                id: calls::text(r, "message_id").unwrap_or("").to_owned(),
                number: calls::count(r, "position"),
                role: calls::text(r, "role").unwrap_or("").to_owned(),
                time: view::Time::of(calls::text(r, "created"), now),
                content_type: calls::text(r, "content_type").unwrap_or("text").to_owned(),
                html: html::markdown(content, &mut Linker::default()),
                injected: r.get("is_injected").and_then(serde_json::Value::as_bool) == Some(true),
                chars,
                cut: chars.saturating_sub(content.chars().count()),
                cut_at_import: calls::count(r, "cut_at_import"),
                machine: calls::text(r, "machine")
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned),
            }
        })
        .collect();
    let here = paths::conversation(Some(source), id, None);
    let page_href = |n: usize| {
        let n = n.to_string();
        paths::with_query(
            &here,
            &[("page", n.as_str()), ("machine", machine.unwrap_or(""))],
        )
    };
    let project = calls::text(&row, "project");
    let current_text = current.to_string();
    pages.render(
        StatusCode::OK,
        "conversation.html",
        json!({
            "source": source,
            "conversation_id": id,
            "id": view::Id::of(id),
            "title": calls::text(&row, "title"),
            "project": project,
            "project_href": project.map(paths::project),
            "model": calls::text(&row, "model"),
            "first": view::Time::of(calls::text(&row, "first_message"), now),
            "last": view::Time::of(calls::text(&row, "last_message"), now),
            "count": count,
            "page": current,
            "pages": pages_count,
            "prev_href": (current > 1).then(|| page_href(current - 1)),
            "next_href": (current < pages_count).then(|| page_href(current + 1)),
            "messages": messages,
            "redacted": calls.redacted(),
            "machine": label,
            "json_href": paths::with_query(&here, &[
                ("format", "json"),
                ("page", if current > 1 { current_text.as_str() } else { "" }),
                ("machine", machine.unwrap_or("")),
            ]),
        }),
    )
}
