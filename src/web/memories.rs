//! `GET /memories`: saved memories, most recently updated first, [`PAGE_SIZE`] to a
//! page, filtered by `type` and `tag` (in the URL) and, on the team archive, `machine`
//! (a label or a machine id); a superseded memory is listed and marked with what
//! replaces it. The data is the output of the skill feeding the memories list
//! ([`calls`]); each row links from its `cites` field. `?format=json` is the twin.
//!
//! On the team archive (`serve --archive`) a memory is listed once per machine that
//! pushed it: the table then shows each row's machine, and the row, its tags and the
//! memories superseding it link to that machine's copies (`?machine=<id>`, the id its
//! `cites` names: labels are host names, not unique).

use hyper::StatusCode;
use serde_json::{json, Value};

use super::calls::{self, Calls, Failed, Role};
use super::{paths, view, Pages, Response};

/// Memories on one page.
pub const PAGE_SIZE: usize = 50;

/// The memory page a row's `cites` object names (`kind: memory`): that machine's copy
/// when it names a `machine_id` (rows from the team archive).
pub fn cited_memory(row: &Value) -> Option<String> {
    let cites = row.get("cites")?;
    (calls::text(cites, "kind") == Some("memory")).then_some(())?;
    calls::text(cites, "id")
        .filter(|id| !id.is_empty())
        .map(|id| paths::on_machine(&paths::memory(id), cited_machine(row)))
}

/// The id of the machine whose copy a row's `cites` names, if any.
fn cited_machine(row: &Value) -> Option<&str> {
    row.get("cites")
        .and_then(super::conversations::cited_machine)
}

/// The list page for `pairs` (the query string).
pub async fn page(pages: &Pages, pairs: &[(String, String)], as_json: bool) -> Response {
    let get = |key: &str| {
        pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let (kind, tag, machine) = (get("type"), get("tag"), get("machine"));
    let number = match paths::page_number(pairs) {
        Ok(number) => number.unwrap_or(1),
        Err(why) => return calls::fail(pages, as_json, StatusCode::BAD_REQUEST, "Bad query", &why),
    };
    let mut args = serde_json::Map::new();
    if !kind.is_empty() {
        args.insert("type".into(), json!(kind));
    }
    if !tag.is_empty() {
        args.insert("tag".into(), json!(tag));
    }
    if !machine.is_empty() {
        args.insert("machine".into(), json!(machine));
    }
    args.insert("limit".into(), json!(PAGE_SIZE));
    args.insert("offset".into(), json!((number - 1) * PAGE_SIZE));
    let filters = json!({"type": kind, "tag": tag, "machine": machine});
    let output = match pages
        .call_role(Role::Memories, Value::Object(args), as_json)
        .await
    {
        Ok(output) => output,
        Err(Failed::NothingStored(_)) if !as_json => {
            return pages.render(
                StatusCode::OK,
                "memories.html",
                json!({"filters": filters, "rows": [], "empty": "No memories are stored yet: `skills memo add` or memo-save adds one."}),
            )
        }
        Err(failed) => return failed.into_response(pages, as_json),
    };
    let mut calls = Calls::new(as_json);
    calls.add("memories", &output);
    if as_json {
        return calls.twin();
    }
    let now = pages.now();
    let href = |extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("type", kind.as_str()),
            ("tag", tag.as_str()),
            ("machine", machine.as_str()),
        ];
        pairs.extend_from_slice(extra);
        paths::with_query("/memories", &pairs)
    };
    let rows: Vec<Value> = calls::rows(&output)
        .iter()
        .map(|r| {
            let list = |key: &str| -> Vec<String> {
                r.get(key)
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default()
            };
            // On the archive a row's links are its own machine's: the memories that
            // supersede it are that machine's (its `superseded_by` lists them).
            let own = cited_machine(r);
            let superseded_by: Vec<Value> = list("superseded_by")
                .iter()
                .map(|id| json!({"id": view::Id::of(id), "href": paths::on_machine(&paths::memory(id), own)}))
                .collect();
            let tags: Vec<Value> = list("tags")
                .iter()
                .map(|t| json!({"name": t, "href": paths::with_query("/memories", &[("type", kind.as_str()), ("tag", t), ("machine", machine.as_str())])}))
                .collect();
            let kind_of = calls::text(r, "type").unwrap_or("");
            json!({
                "href": cited_memory(r),
                "machine": calls::text(r, "machine"),
                "machine_href": own.map(|id| paths::with_query("/memories", &[("machine", id)])),
                "id": view::Id::of(calls::text(r, "id").unwrap_or("")),
                "title": calls::text(r, "title"),
                "type": kind_of,
                "type_href": paths::with_query("/memories", &[("type", kind_of), ("tag", tag.as_str()), ("machine", machine.as_str())]),
                "tags": tags,
                "preview": view::preview(calls::text(r, "preview").unwrap_or("")),
                "updated": view::Time::of(calls::text(r, "updated"), now),
                "created": view::Time::of(calls::text(r, "created"), now),
                "superseded_by": superseded_by,
            })
        })
        .collect();
    let total = calls::rows(&output)
        .first()
        .map_or(0, |r| calls::count(r, "total"));
    let last_page = total.div_ceil(PAGE_SIZE).max(1);
    let page_href = |n: usize| {
        let n = n.to_string();
        href(&[("page", n.as_str())])
    };
    let from = (number - 1) * PAGE_SIZE + 1;
    // The machine filter and column are offered where rows carry a machine (the team
    // archive).
    let team = !machine.is_empty() || rows.iter().any(|r| !r["machine"].is_null());
    pages.render(
        StatusCode::OK,
        "memories.html",
        json!({
            "filters": filters,
            "team": team,
            "total": total,
            "from": from,
            "to": from + rows.len().saturating_sub(1),
            "empty": if rows.is_empty() { Some("No memories match these filters.") } else { None },
            "rows": rows,
            "page": number,
            "pages": last_page,
            "prev_href": (number > 1).then(|| page_href(number - 1)),
            "next_href": (number < last_page).then(|| page_href(number + 1)),
            "redacted": calls.redacted(),
            "json_href": href(&[("format", "json")]),
        }),
    )
}
