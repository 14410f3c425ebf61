//! `GET /`: activity at a glance — a calendar heatmap of messages per day over the
//! last year and messages per month by source ([`activity`]) — links to the lists,
//! and every served skill (name, title, description, layer, what it reads and
//! writes), each linking to its page. `?format=json` is the twin: the charts' data.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::activity::{self, Charts};
use super::calls::Calls;
use super::{paths, Pages, Response};

/// The index page of what `pages` serves now.
pub async fn page(pages: &Pages, as_json: bool) -> Response {
    let mut calls = Calls::new(as_json);
    let charts = match activity::charts(pages, None, &mut calls, as_json).await {
        Ok(charts) => charts,
        Err(response) => return response,
    };
    if as_json {
        return calls.twin();
    }
    let served = pages.catalog().current();
    let skills: Vec<Value> = served
        .host
        .skills()
        .iter()
        .map(|skill| {
            json!({
                "name": skill.name(),
                "href": paths::skill(skill.name()),
                "title": skill.meta.title,
                "description": skill.meta.description,
                "layer": skill.meta.layer,
                "reads": skill.meta.reads,
                "writes": skill.meta.writes,
                "tool": skill.tool_name(),
            })
        })
        .collect();
    let problems = served.host.diagnostics().len();
    let (heatmap, months, messages, missing) = match charts {
        Charts::Drawn {
            heatmap,
            months,
            messages,
        } => (Some(heatmap), Some(months), Some(messages), None),
        Charts::Missing(why) => (None, None, None, Some(why)),
    };
    pages.render(
        StatusCode::OK,
        "index.html",
        json!({
            "skills": skills,
            "problems": problems,
            "heatmap": heatmap,
            "months": months,
            "messages": messages,
            "charts_missing": missing,
            "redacted": calls.redacted(),
            "json_href": "/?format=json",
        }),
    )
}
