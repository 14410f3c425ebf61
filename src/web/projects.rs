//! `GET /projects`: every project with its conversations, messages and last activity;
//! `GET /projects/{project}`: one project's activity (heatmap and month chart, as on
//! the index) and its newest conversations. The data is the output of the skills
//! feeding the projects list, the activity charts and the conversations list
//! ([`calls`]); `?format=json` is the twin.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::activity::{self, Charts};
use super::calls::{self, Calls, Failed, Role};
use super::conversations::{self, Filters};
use super::{paths, view, Pages, Response};

/// Projects listed at most.
pub const MAX_PROJECTS: usize = 500;

/// The projects list.
pub async fn list(pages: &Pages, as_json: bool) -> Response {
    let output = match pages
        .call_role(Role::Projects, json!({"limit": MAX_PROJECTS}), as_json)
        .await
    {
        Ok(output) => output,
        Err(Failed::NothingStored(_)) if !as_json => {
            return pages.render(
                StatusCode::OK,
                "projects.html",
                json!({"rows": [], "empty": "No conversations are stored yet: run `skills ingest` first."}),
            )
        }
        Err(failed) => return failed.into_response(pages, as_json),
    };
    let mut calls = Calls::new(as_json);
    calls.add("projects", &output);
    if as_json {
        return calls.twin();
    }
    let now = pages.now();
    let rows: Vec<Value> = calls::rows(&output)
        .iter()
        .map(|r| {
            let project = calls::text(r, "project").unwrap_or("");
            json!({
                "name": project,
                "href": cited_project(r),
                "conversations": calls::count(r, "conversations"),
                "messages": calls::count(r, "messages"),
                "sources": calls::text(r, "sources"),
                "first": view::Time::of(calls::text(r, "first_message"), now),
                "last": view::Time::of(calls::text(r, "last_message"), now),
            })
        })
        .collect();
    let truncated = output.data.get("truncated").and_then(Value::as_bool) == Some(true);
    pages.render(
        StatusCode::OK,
        "projects.html",
        json!({
            "rows": rows,
            "truncated": truncated,
            "empty": if rows.is_empty() { Some("No conversation has a project.") } else { None },
            "redacted": calls.redacted(),
            "json_href": "/projects?format=json",
        }),
    )
}

/// The project page a row's `cites` object names (`kind: project`).
fn cited_project(row: &Value) -> Option<String> {
    let cites = row.get("cites")?;
    (calls::text(cites, "kind") == Some("project")).then_some(())?;
    calls::text(cites, "project")
        .filter(|p| !p.is_empty())
        .map(paths::project)
}

/// One project's page.
pub async fn page(pages: &Pages, project: &str, as_json: bool) -> Response {
    // The header, the charts and the list at once (the page waits for the slowest,
    // not for the sum); the charts' outputs are added to the page's calls after the
    // header's, as the twin lists them.
    let mut chart_calls = Calls::new(as_json);
    let (header, charts, listed) = tokio::join!(
        pages.call_role(
            Role::Projects,
            json!({"project": project, "limit": 1}),
            as_json,
        ),
        activity::charts(pages, Some(project), &mut chart_calls, as_json),
        pages.call_role(
            Role::Conversations,
            json!({"project": project, "limit": conversations::PAGE_SIZE}),
            as_json,
        ),
    );
    let header = match header {
        Ok(output) => output,
        Err(Failed::NothingStored(_)) if !as_json => {
            return pages.error(
                StatusCode::NOT_FOUND,
                "No such project",
                "no conversations are stored yet: run `skills ingest` first",
            )
        }
        Err(failed) => return failed.into_response(pages, as_json),
    };
    let Some(row) = calls::rows(&header).first().cloned() else {
        return calls::fail(
            pages,
            as_json,
            StatusCode::NOT_FOUND,
            "No such project",
            &format!("no conversation of project `{project}` is stored"),
        );
    };
    let mut calls = Calls::new(as_json);
    calls.add("project", &header);
    calls.extend(chart_calls);
    let charts = match charts {
        Ok(charts) => charts,
        Err(response) => return response,
    };
    let filters = Filters {
        project: project.to_owned(),
        ..Filters::default()
    };
    let listed = match listed {
        Ok(output) => output,
        Err(failed) => return failed.into_response(pages, as_json),
    };
    calls.add("conversations", &listed);
    if as_json {
        return calls.twin();
    }
    let now = pages.now();
    let rows = conversations::rows(&listed, now);
    let total = calls::rows(&listed)
        .first()
        .map_or(0, |r| calls::count(r, "total"));
    let (heatmap, months, missing) = match charts {
        Charts::Drawn {
            heatmap, months, ..
        } => (Some(heatmap), Some(months), None),
        Charts::Missing(why) => (None, None, Some(why)),
    };
    pages.render(
        StatusCode::OK,
        "project.html",
        json!({
            "project": project,
            "conversations": calls::count(&row, "conversations"),
            "messages": calls::count(&row, "messages"),
            "sources": calls::text(&row, "sources"),
            "first": view::Time::of(calls::text(&row, "first_message"), now),
            "last": view::Time::of(calls::text(&row, "last_message"), now),
            "heatmap": heatmap,
            "months": months,
            "charts_missing": missing,
            "rows": rows,
            "total": total,
            "from": 1,
            "to": rows.len(),
            "all_href": filters.href(&[]),
            "redacted": calls.redacted(),
            "json_href": format!("{}?format=json", paths::project(project)),
        }),
    )
}
