//! `GET /`: every served skill — name, title, description, layer, what it reads and
//! writes — each linking to its page; the layout's search box runs `recall`.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::{paths, Pages, Response};

/// The index page of what `pages` serves now.
pub fn page(pages: &Pages) -> Response {
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
    pages.render(
        StatusCode::OK,
        "index.html",
        json!({"skills": skills, "problems": problems}),
    )
}
