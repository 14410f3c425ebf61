//! `GET /conversations`: every stored conversation, newest activity first,
//! [`PAGE_SIZE`] to a page — source, project, title or first user message, message
//! count, first and last time — filtered by `source`, `project`, a UTC date range
//! (`since`, `until`) and, on the team archive, `machine` (a label or a machine id),
//! all in the URL. The data is the output of the skill feeding the
//! conversations list ([`calls`]); each row links from its `cites` field. Also the
//! table a project page shows ([`rows`]). `?format=json` is the twin. Rows from the
//! team archive (`serve --archive`) carry their `machine`: the table then shows its
//! label and each row links to that machine's copy of the conversation by the id its
//! `cites` names (`?machine=<id>`: labels are host names, not unique).

use hyper::StatusCode;
use serde::Serialize;
use serde_json::{json, Value};

use super::calls::{self, Calls, Failed, Role};
use super::{paths, view, Pages, Response};

/// Conversations on one page.
pub const PAGE_SIZE: usize = 50;

/// The filters of the list, as the URL holds them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Filters {
    /// Source (`claude-code`, `chatgpt`…).
    pub source: String,
    /// Project, as stored.
    pub project: String,
    /// First UTC date, `YYYY-MM-DD`.
    pub since: String,
    /// Last UTC date, inclusive.
    pub until: String,
    /// One machine's conversations (the team archive): a label or a machine id. On the
    /// local stores the skill refuses it, naming `--archive`.
    pub machine: String,
}

impl Filters {
    /// The filters in `pairs` (the query string; the last value of a key wins).
    pub fn from_pairs(pairs: &[(String, String)]) -> Self {
        let get = |key: &str| {
            pairs
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        Self {
            source: get("source"),
            project: get("project"),
            since: get("since"),
            until: get("until"),
            machine: get("machine"),
        }
    }

    /// The filters as call arguments (empty ones left out).
    fn args(&self) -> serde_json::Map<String, Value> {
        let mut args = serde_json::Map::new();
        for (key, value) in self.pairs() {
            if !value.is_empty() {
                args.insert(key.to_owned(), Value::from(value));
            }
        }
        args
    }

    fn pairs(&self) -> [(&'static str, &str); 5] {
        [
            ("source", self.source.as_str()),
            ("project", self.project.as_str()),
            ("since", self.since.as_str()),
            ("until", self.until.as_str()),
            ("machine", self.machine.as_str()),
        ]
    }

    /// The list's URL with these filters and `extra` pairs.
    pub fn href(&self, extra: &[(&str, &str)]) -> String {
        let mut pairs: Vec<(&str, &str)> = self.pairs().to_vec();
        pairs.extend_from_slice(extra);
        paths::with_query("/conversations", &pairs)
    }
}

/// One conversation as a list row.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Its page (from the row's `cites`), or `None` when the row cites nothing.
    pub href: Option<String>,
    /// Title, or the first user message's first line.
    pub title: String,
    /// The first user message, line breaks kept up to [`view::PREVIEW_LINES`].
    pub preview: String,
    /// Source.
    pub source: String,
    /// Project and its page.
    pub project: Option<(String, String)>,
    /// Conversation id.
    pub id: view::Id,
    /// The machine that pushed it (rows from the team archive), else `None`.
    pub machine: Option<String>,
    /// The list of that machine's conversations (`?machine=<id>`), when the row cites
    /// its machine's id.
    pub machine_href: Option<String>,
    /// Messages.
    pub messages: usize,
    /// First and last message time.
    pub first: view::Time,
    /// Last message time.
    pub last: view::Time,
}

/// The list rows of a call's output.
pub fn rows(output: &crate::host::CallOutput, now: chrono::DateTime<chrono::Utc>) -> Vec<Row> {
    calls::rows(output)
        .iter()
        .map(|r| {
            let preview = calls::text(r, "preview").unwrap_or("");
            let title = calls::text(r, "title")
                .filter(|t| !t.trim().is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| first_line(preview));
            Row {
                href: cited_conversation(r),
                machine: calls::text(r, "machine")
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned),
                machine_href: r
                    .get("cites")
                    .and_then(cited_machine)
                    .map(|id| paths::with_query("/conversations", &[("machine", id)])),
                title,
                preview: view::preview(preview),
                source: calls::text(r, "source").unwrap_or("").to_owned(),
                project: calls::text(r, "project")
                    .filter(|p| !p.is_empty())
                    .map(|p| (p.to_owned(), paths::project(p))),
                id: view::Id::of(calls::text(r, "conversation_id").unwrap_or("")),
                messages: calls::count(r, "messages"),
                first: view::Time::of(calls::text(r, "first_message"), now),
                last: view::Time::of(calls::text(r, "last_message"), now),
            }
        })
        .collect()
}

/// The conversation page a row's `cites` object names (`kind: conversation`), on the
/// machine whose copy it cites (`machine_id`, rows from the team archive).
pub fn cited_conversation(row: &Value) -> Option<String> {
    let cites = row.get("cites")?;
    (calls::text(cites, "kind") == Some("conversation")).then_some(())?;
    let id = calls::text(cites, "conversation_id").filter(|s| !s.is_empty())?;
    Some(paths::on_machine(
        &paths::conversation(
            calls::text(cites, "source").filter(|s| !s.is_empty()),
            id,
            calls::text(cites, "message_id").filter(|s| !s.is_empty()),
        ),
        cited_machine(cites),
    ))
}

/// The id of the machine whose copy `cites` (a `cites` object) names, if any.
pub fn cited_machine(cites: &Value) -> Option<&str> {
    calls::text(cites, "machine_id").filter(|m| !m.is_empty())
}

/// The first non-empty line of `text`, cut to 120 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if line.chars().count() > 120 {
        format!("{}…", line.chars().take(120).collect::<String>())
    } else {
        line.trim().to_owned()
    }
}

/// The list page for `pairs` (the query string).
pub async fn page(pages: &Pages, pairs: &[(String, String)], as_json: bool) -> Response {
    let filters = Filters::from_pairs(pairs);
    let number = match paths::page_number(pairs) {
        Ok(number) => number.unwrap_or(1),
        Err(why) => return calls::fail(pages, as_json, StatusCode::BAD_REQUEST, "Bad query", &why),
    };
    let mut args = filters.args();
    args.insert("limit".into(), json!(PAGE_SIZE));
    args.insert("offset".into(), json!((number - 1) * PAGE_SIZE));
    let empty_store = |pages: &Pages| {
        pages.render(
            StatusCode::OK,
            "conversations.html",
            json!({"filters": filters, "rows": [], "empty": "No conversations are stored yet: run `skills ingest` first."}),
        )
    };
    let output = match pages
        .call_role(Role::Conversations, Value::Object(args), as_json)
        .await
    {
        Ok(output) => output,
        Err(Failed::NothingStored(_)) if !as_json => return empty_store(pages),
        Err(failed) => return failed.into_response(pages, as_json),
    };
    let mut calls = Calls::new(as_json);
    calls.add("conversations", &output);
    if as_json {
        return calls.twin();
    }
    let total = calls::rows(&output)
        .first()
        .map_or(0, |r| calls::count(r, "total"));
    let last_page = total.div_ceil(PAGE_SIZE).max(1);
    let page_href = |n: usize| {
        let n = n.to_string();
        filters.href(&[("page", n.as_str())])
    };
    let rows = rows(&output, pages.now());
    // The machine filter is offered where rows carry a machine (the team archive).
    let team = !filters.machine.is_empty() || rows.iter().any(|r| r.machine.is_some());
    let shown_from = (number - 1) * PAGE_SIZE + 1;
    pages.render(
        StatusCode::OK,
        "conversations.html",
        json!({
            "filters": filters,
            "team": team,
            "rows": rows,
            "total": total,
            "from": shown_from,
            "to": shown_from + rows.len().saturating_sub(1),
            "page": number,
            "pages": last_page,
            "prev_href": (number > 1).then(|| page_href(number - 1)),
            "next_href": (number < last_page).then(|| page_href(number + 1)),
            "clear_href": "/conversations",
            "redacted": calls.redacted(),
            "json_href": filters.href(&[("format", "json")]),
            "empty": if total == 0 { Some("No conversations match these filters.") } else { None },
        }),
    )
}
