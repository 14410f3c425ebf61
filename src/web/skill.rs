//! `GET|POST /skills/{name}`: a skill's form, and with arguments its result.
//!
//! A read-only skill runs on GET when the query string holds arguments (the form sends
//! `_run=1`, so a form left at its defaults runs too). A skill whose `writes` is not
//! empty shows a POST form and runs only on a POST that [`guard::same_origin_post`]
//! accepts; a GET never runs it.
//!
//! Outcomes: the result (200); invalid arguments (refused by the input schema, or by
//! the engine as [`EngineError::Argument`]) — 400, the form shown again with each
//! argument's problem beside its field; an unknown skill — 404; a read-only skill
//! POSTed — 405 with `Allow: GET, HEAD`; a call stopped by its
//! deadline — 504; any other failure — 500, a page with the error and its causes. The
//! JSON twin (`?format=json`, `_format=json`, or `Accept: application/json`) has the
//! same statuses, with `{skill, args, data, text}` or `{error, errors}`.

use hyper::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use super::calls::{self, with_causes};
use super::html::{self, Linker};
use super::{form, guard, paths, respond, results, Pages, Response};
use crate::engines::EngineError;
use crate::host::args::ArgError;
use crate::host::Skill;
use crate::host::{CallError, CallOutput};

/// Query names that ask for JSON instead of a page.
const FORMAT_KEYS: [&str; 2] = ["format", "_format"];

/// The page of skill `name` for `pairs` (the query string, or the POST body when
/// `post` is `Some`).
pub async fn page(
    pages: &Pages,
    name: &str,
    mut pairs: Vec<(String, String)>,
    headers: &HeaderMap,
    post: Option<()>,
) -> Response {
    let served = pages.catalog().current();
    let mut as_json = headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"));
    let Some(skill) = served.host.get(name) else {
        let known: Vec<&str> = served.host.skills().iter().map(|s| s.name()).collect();
        let message = format!("no skill `{name}` is served; skills: {}", known.join(", "));
        let json_asked = as_json
            || pairs
                .iter()
                .any(|(k, v)| FORMAT_KEYS.contains(&k.as_str()) && v == "json");
        if json_asked {
            return respond::json(StatusCode::NOT_FOUND, &json!({"error": message}));
        }
        return pages.error(StatusCode::NOT_FOUND, "No such skill", &message);
    };
    let schema = &skill.meta.input_schema;
    let is_property = |key: &str| schema.get("properties").and_then(|p| p.get(key)).is_some();
    pairs.retain(|(key, value)| {
        let control =
            FORMAT_KEYS.contains(&key.as_str()) && (key.starts_with('_') || !is_property(key));
        if control && value == "json" {
            as_json = true;
        }
        !control
    });
    let writes = !skill.is_read_only();
    let token = post
        .is_some()
        .then(|| {
            pairs
                .iter()
                .find(|(k, _)| k == "_token")
                .map(|(_, v)| v.clone())
        })
        .flatten();
    let show =
        |status: StatusCode, extra: Value, pairs: &[(String, String)], errors: &[ArgError]| {
            render(pages, skill, status, extra, pairs, errors)
        };
    if post.is_some() {
        if !writes {
            return respond::allow(
                fail(
                    pages,
                    as_json,
                    StatusCode::METHOD_NOT_ALLOWED,
                    &format!("`{name}` only reads: run it with GET (its form's query string)"),
                ),
                "GET, HEAD",
            );
        }
        if let Err(why) = guard::same_origin_post(headers, pages.token(), token.as_deref()) {
            return fail(
                pages,
                as_json,
                StatusCode::FORBIDDEN,
                &format!("refused, nothing was written: {why}"),
            );
        }
    }
    let has_arguments = pairs
        .iter()
        .any(|(k, _)| k == "_run" || !k.starts_with('_'));
    if !has_arguments || (writes && post.is_none()) {
        let note = (writes && has_arguments)
            .then_some("This skill writes: check the values, then submit the form to run it.");
        return show(StatusCode::OK, json!({"note": note}), &pairs, &[]);
    }
    let args = form::arguments(schema, &pairs);
    let host = std::sync::Arc::clone(&served.host);
    let tool = skill.name().to_owned();
    let called = {
        let Ok(_slot) = pages.slots.acquire().await else {
            return fail(
                pages,
                as_json,
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down",
            );
        };
        pages
            .blocking(move || host.call_with(&tool, args, &crate::cancel::Cancel::new()))
            .await
    };
    let outcome = match called {
        Ok(outcome) => outcome,
        Err(response) => return response,
    };
    match outcome {
        Ok(output) => {
            if as_json {
                return respond::json(StatusCode::OK, &json!(output));
            }
            result(pages, skill, &pairs, &output)
        }
        Err(CallError::InvalidArguments { errors, .. }) => {
            invalid(pages, skill, as_json, &pairs, &errors)
        }
        // The engine refused a value the schema cannot express (a `%` too many, a
        // superseded id that is not stored): the caller's mistake, shown like one.
        Err(CallError::Engine {
            source: EngineError::Argument { name, reason },
            ..
        }) => invalid(
            pages,
            skill,
            as_json,
            &pairs,
            &[ArgError {
                argument: name,
                reason,
            }],
        ),
        Err(e @ CallError::UnknownSkill { .. }) => {
            fail(pages, as_json, StatusCode::NOT_FOUND, &e.to_string())
        }
        Err(e @ CallError::Stopped { .. }) => fail(
            pages,
            as_json,
            StatusCode::GATEWAY_TIMEOUT,
            &with_causes(&e),
        ),
        Err(e) => fail(
            pages,
            as_json,
            StatusCode::INTERNAL_SERVER_ERROR,
            &with_causes(&e),
        ),
    }
}

/// Invalid arguments: 400, the form shown again with each error beside its field
/// (JSON: `{error, errors}`).
fn invalid(
    pages: &Pages,
    skill: &Skill,
    as_json: bool,
    pairs: &[(String, String)],
    errors: &[ArgError],
) -> Response {
    if as_json {
        let message = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        return respond::json(
            StatusCode::BAD_REQUEST,
            &json!({"error": format!("invalid arguments for `{}`: {message}", skill.name()), "errors": errors}),
        );
    }
    let listed: Vec<String> = errors.iter().map(ToString::to_string).collect();
    render(
        pages,
        skill,
        StatusCode::BAD_REQUEST,
        json!({"errors": listed}),
        pairs,
        errors,
    )
}

/// The page of `output`, a successful call of `skill` whose form held `pairs` (the
/// query string or POST body without the `format` keys): the form with those values,
/// the call's arguments, a result table whose rows link to what they cite
/// ([`results::table`]), the skill's own rendered template as sanitised HTML
/// ([`html::markdown`]) with its citations linked, and the link to the JSON twin.
///
/// This is all the server does to show a result once the call returned (no store is
/// read): `benches/pages.rs` measures it.
pub fn result(
    pages: &Pages,
    skill: &Skill,
    pairs: &[(String, String)],
    output: &CallOutput,
) -> Response {
    let mut linker = Linker::default();
    let table = results::table(&output.data, &mut linker, pages.now());
    let rendered = html::markdown(&output.text, &mut linker);
    let args: Vec<Value> = output
        .args
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| json!({"name": k, "value": v.to_string()}))
                .collect()
        })
        .unwrap_or_default();
    let format_is_argument = skill
        .meta
        .input_schema
        .get("properties")
        .and_then(|p| p.get("format"))
        .is_some();
    let json_href = twin(skill.name(), pairs, format_is_argument);
    render(
        pages,
        skill,
        StatusCode::OK,
        json!({"result": {
            "html": rendered,
            "table": table,
            "args": args,
            "json_href": json_href,
            "redacted": output.redacted,
        }}),
        pairs,
        &[],
    )
}

/// The skill page (`skill.html`) with status `status`: the skill's header, its form
/// filled from `pairs` with `errors` beside their fields, and `extra` (`note`,
/// `errors`, `result`).
fn render(
    pages: &Pages,
    skill: &Skill,
    status: StatusCode,
    extra: Value,
    pairs: &[(String, String)],
    errors: &[ArgError],
) -> Response {
    let writes = !skill.is_read_only();
    let question = if skill.meta.page.search_box {
        pairs
            .iter()
            .find(|(k, _)| k == "question")
            .map_or("", |(_, v)| v.as_str())
    } else {
        ""
    };
    let mut context = json!({
        "skill": {
            "name": skill.name(),
            "title": skill.meta.title,
            "description": skill.meta.description,
            "layer": skill.meta.layer,
            "reads": skill.meta.reads,
            "writes": skill.meta.writes,
            "tool": skill.tool_name(),
            "href": paths::skill(skill.name()),
        },
        "write": writes,
        "token": if writes { pages.token() } else { "" },
        "nav": {"question": question},
        "fields": form::fields(&skill.meta.input_schema, pairs, errors),
    });
    if let (Value::Object(map), Value::Object(extra)) = (&mut context, extra) {
        map.extend(extra);
    }
    pages.render(status, "skill.html", context)
}

/// A failure as a page or as JSON `{error}`, titled by its status.
fn fail(pages: &Pages, as_json: bool, status: StatusCode, message: &str) -> Response {
    let title = match status {
        StatusCode::FORBIDDEN => "Refused",
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::GATEWAY_TIMEOUT => "Stopped",
        _ => "The call failed",
    };
    calls::fail(pages, as_json, status, title, message)
}

/// The same result as JSON: the page's arguments plus `format=json` (`_format` when
/// the skill has an argument named `format`).
fn twin(name: &str, pairs: &[(String, String)], format_is_argument: bool) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs.iter().filter(|(k, _)| k != "_token") {
        query.append_pair(k, v);
    }
    query.append_pair(
        if format_is_argument {
            "_format"
        } else {
            "format"
        },
        "json",
    );
    format!("{}?{}", paths::skill(name), query.finish())
}
