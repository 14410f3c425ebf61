//! `GET /conversations/{source}/{conversation_id}`: one conversation's messages in
//! order, each under an anchor `#m-{message_id}`, [`PAGE_SIZE`] to a page.
//!
//! `?at={message_id}` opens the page holding that message (citations link with it);
//! `?page=N` pages. Source `_` ([`paths::ANY_SOURCE`]) redirects to the source that
//! holds the conversation. Messages are read from the conversations store, opened
//! read-only for the request, and rendered as markdown through [`html::markdown`]:
//! text a harness injected is folded into a `<details>`.

use serde::Serialize;
use serde_json::json;

use super::html::{self, Linker};
use super::paths;
use crate::stores::conversations::ConversationStore;
use crate::stores::{StoreError, StorePaths};

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
    /// UTC time.
    pub time: String,
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
}

/// A conversation's message count, title, project, model, first and last time.
type Header = (
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// What the page needs, or why there is no page.
pub enum Outcome {
    /// The page's context.
    Page(serde_json::Value),
    /// The conversation lives under this source: redirect there.
    Redirect(String),
    /// No such conversation (or no store yet): the message says which.
    NotFound(String),
}

/// Reads page `page` (from 1; or the page holding message `at`) of conversation `id`
/// of `source`.
///
/// # Errors
/// A store that cannot be opened or read.
pub fn read(
    stores: &StorePaths,
    source: &str,
    id: &str,
    page: Option<usize>,
    at: Option<&str>,
) -> Result<Outcome, StoreError> {
    let store = match ConversationStore::open_ro(&stores.conversations) {
        Ok(store) => store,
        Err(StoreError::Missing { .. }) => {
            return Ok(Outcome::NotFound(
                "no conversations are stored yet: run `skills ingest` first".into(),
            ))
        }
        Err(e) => return Err(e),
    };
    let conn = store.connection()?;
    let err = |e| store.error(e);
    if source == paths::ANY_SOURCE {
        let found: Option<String> = conn
            .query_row(
                "SELECT min(source) FROM all_conversations WHERE conversation_id = ?",
                [id],
                |r| r.get(0),
            )
            .map_err(err)?;
        return Ok(match found {
            Some(real) => Outcome::Redirect(paths::conversation(Some(&real), id, at)),
            None => Outcome::NotFound(format!("no conversation `{id}` is stored")),
        });
    }
    let (count, title, project, model, first, last): Header = conn
        .query_row(
            "SELECT count(*), max(conversation_title), max(project), max(model),
                    strftime(min(created), '%Y-%m-%dT%H:%M:%SZ'),
                    strftime(max(created), '%Y-%m-%dT%H:%M:%SZ')
             FROM all_conversations WHERE source = ? AND conversation_id = ?",
            [source, id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .map_err(err)?;
    let count = usize::try_from(count).unwrap_or(0);
    if count == 0 {
        return Ok(Outcome::NotFound(format!(
            "no conversation `{id}` from source `{source}` is stored"
        )));
    }
    let pages = count.div_ceil(PAGE_SIZE).max(1);
    let mut page = page.unwrap_or(1).clamp(1, pages);
    if let Some(at) = at {
        let position: Option<i64> = conn
            .query_row(
                "SELECT rn FROM (SELECT message_id, row_number() OVER
                     (ORDER BY msg_index, created, message_id) AS rn
                   FROM all_conversations WHERE source = ? AND conversation_id = ?)
                 WHERE message_id = ? LIMIT 1",
                [source, id, at],
                |r| r.get(0),
            )
            .map_err(err)
            .or_else(|e| match e {
                StoreError::DuckDb {
                    source: duckdb::Error::QueryReturnedNoRows,
                    ..
                } => Ok(None),
                e => Err(e),
            })?;
        if let Some(n) = position.and_then(|n| usize::try_from(n).ok()) {
            page = (n.saturating_sub(1) / PAGE_SIZE) + 1;
        }
    }
    let injected = if store.marks_injected()? {
        "is_injected"
    } else {
        "false"
    };
    let sql = format!(
        "SELECT message_id, role, strftime(created, '%Y-%m-%dT%H:%M:%SZ'), content_type,
                substr(content, 1, {MAX_MESSAGE_CHARS}), char_count, {injected}
         FROM all_conversations WHERE source = ? AND conversation_id = ?
         ORDER BY msg_index, created, message_id LIMIT {PAGE_SIZE} OFFSET {}",
        (page - 1) * PAGE_SIZE
    );
    let mut statement = conn.prepare(&sql).map_err(err)?;
    let rows = statement
        .query_map([source, id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, bool>(6)?,
            ))
        })
        .map_err(err)?;
    let mut messages = Vec::new();
    for (i, row) in rows.enumerate() {
        let (message_id, role, time, content_type, content, chars, injected) = row.map_err(err)?;
        let chars = usize::try_from(chars).unwrap_or(0);
        let shown = content.chars().count();
        messages.push(Shown {
            id: message_id,
            number: (page - 1) * PAGE_SIZE + i + 1,
            role,
            time,
            content_type,
            html: html::markdown(&content, &mut Linker::default()),
            injected,
            chars,
            cut: chars.saturating_sub(shown),
        });
    }
    let here = paths::conversation(Some(source), id, None);
    let page_href = |n: usize| format!("{here}?page={n}");
    Ok(Outcome::Page(json!({
        "source": source,
        "conversation_id": id,
        "title": title,
        "project": project,
        "model": model,
        "first": first,
        "last": last,
        "count": count,
        "page": page,
        "pages": pages,
        "prev_href": (page > 1).then(|| page_href(page - 1)),
        "next_href": (page < pages).then(|| page_href(page + 1)),
        "messages": messages,
    })))
}
