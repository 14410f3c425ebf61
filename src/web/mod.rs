//! Pages for people: a web UI generated from the skill documents, served by
//! `skills serve --http` on the same listener as `/mcp` (behind the same `Host`/`Origin`
//! check, see [`crate::mcp::serve_http_with`]).
//!
//! Routes, one module per kind of page:
//! - `GET /` ([`index`]): activity at a glance and every served skill; every page
//!   has a search box running the skill whose document says `page: {search-box: true}`.
//! - `GET /skills/{name}` ([`skill`]): a form generated from the input schema
//!   ([`form`]); with arguments it runs the skill through [`Host::call_with`] (the same
//!   validation, access scoping, deadline and redaction as MCP) and shows the rendered
//!   template as sanitised HTML ([`html`]), a result table with links to what each row
//!   cites ([`results`]) and a JSON twin (`?format=json` or `Accept: application/json`).
//!   A skill that writes is a POST form, accepted only from this server's own pages
//!   with the per-server token ([`guard`]).
//! - `GET /conversations` ([`conversations`]), `/projects` and `/projects/{project}`
//!   ([`projects`]), `/memories` ([`memories`]): what there is to browse.
//! - `GET /conversations/{source}/{id}` ([`conversation`]) and `GET /memories/{id}`
//!   ([`memory`]): what citations link to.
//! - Every page has a JSON twin (`?format=json` or `Accept: application/json`): the
//!   outputs of the skill calls behind it.
//!
//! Every page's data is a skill's output, called through [`Host::call_with`]
//! ([`calls`]): the skill documents say which skill feeds which page; `src/web` holds
//! no SQL, opens no store and names no skill.
//! - `GET /static/style.css`, `/static/app.js`, `/static/favicon.svg` (also at
//!   `/favicon.ico`): embedded assets ([`respond`]).
//!
//! Nothing is written per skill: every page is built from the catalog current at the
//! request, so a skill dropped into the folder (hot reload) gets its page at once.
//! Page templates are `templates/web/*.html` (minijinja, HTML auto-escaping on),
//! compiled into the binary.
//!
//! [`Host::call_with`]: crate::host::Host::call_with

pub mod activity;
pub mod calls;
pub mod conversation;
pub mod conversations;
pub mod form;
pub mod guard;
pub mod html;
pub mod index;
pub mod memories;
pub mod memory;
pub mod paths;
pub mod projects;
pub mod respond;
pub mod results;
pub mod skill;
pub mod view;

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, StatusCode};
use minijinja::{AutoEscape, Environment};
use serde_json::{json, Value};

use crate::mcp::catalog::Catalog;
pub use respond::Response;

/// Page templates, by name: compiled into the binary.
const TEMPLATES: [(&str, &str); 13] = [
    ("base.html", include_str!("../../templates/web/base.html")),
    (
        "macros.html",
        include_str!("../../templates/web/macros.html"),
    ),
    ("index.html", include_str!("../../templates/web/index.html")),
    ("skill.html", include_str!("../../templates/web/skill.html")),
    (
        "conversation.html",
        include_str!("../../templates/web/conversation.html"),
    ),
    (
        "memory.html",
        include_str!("../../templates/web/memory.html"),
    ),
    ("error.html", include_str!("../../templates/web/error.html")),
    (
        "conversations.html",
        include_str!("../../templates/web/conversations.html"),
    ),
    (
        "conversation_rows.html",
        include_str!("../../templates/web/conversation_rows.html"),
    ),
    (
        "projects.html",
        include_str!("../../templates/web/projects.html"),
    ),
    (
        "project.html",
        include_str!("../../templates/web/project.html"),
    ),
    (
        "memories.html",
        include_str!("../../templates/web/memories.html"),
    ),
    (
        "activity.html",
        include_str!("../../templates/web/activity.html"),
    ),
];

/// Largest POST body read (a memo-save body is at most 64 K characters).
pub const MAX_FORM_BYTES: usize = 1 << 20;

/// Skill calls from pages running at once; further ones wait.
pub const CALL_SLOTS: usize = 4;

/// Why the pages could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PagesError {
    /// A page template does not parse (a build defect).
    #[error("page template `{name}` does not parse: {source}")]
    Template {
        /// Template name.
        name: &'static str,
        /// minijinja error.
        #[source]
        source: minijinja::Error,
    },
    /// No randomness for the write-form token.
    #[error("cannot make the write-form token: {0}")]
    Token(getrandom::Error),
}

/// The `href` filter: a URL the pages built ([`paths`]: ids percent-encoded) written
/// into an attribute with `&`, quotes and angle brackets escaped — `/` stays readable.
fn href(url: &str) -> minijinja::Value {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    minijinja::Value::from_safe_string(out)
}

/// True when the request asks for the JSON twin: `format=json` or `_format=json` in
/// the query, or an `Accept` naming JSON and not HTML.
pub fn wants_json(headers: &hyper::HeaderMap, pairs: &[(String, String)]) -> bool {
    headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"))
        || pairs
            .iter()
            .any(|(k, v)| (k == "format" || k == "_format") && v == "json")
}

/// The pages over a [`Catalog`]: one per server, shared by every connection.
pub struct Pages {
    catalog: Arc<Catalog>,
    env: Environment<'static>,
    token: String,
    slots: tokio::sync::Semaphore,
}

impl Pages {
    /// Pages over `catalog`, with a fresh write-form token.
    ///
    /// # Errors
    /// [`PagesError`]: a template that does not parse, no randomness.
    pub fn new(catalog: Arc<Catalog>) -> Result<Self, PagesError> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        env.add_filter("href", href);
        for (name, source) in TEMPLATES {
            env.add_template(name, source)
                .map_err(|source| PagesError::Template { name, source })?;
        }
        Ok(Self {
            catalog,
            env,
            token: guard::new_token().map_err(PagesError::Token)?,
            slots: tokio::sync::Semaphore::new(CALL_SLOTS),
        })
    }

    /// These pages as the listener's handler for every path but `/mcp`.
    pub fn handler(self: Arc<Self>) -> crate::mcp::Pages {
        Arc::new(move |request| {
            let pages = Arc::clone(&self);
            Box::pin(async move { pages.respond(request).await })
        })
    }

    /// Answers one request (never panics, never a stack: every failure is a page
    /// saying what was wrong).
    pub async fn respond(&self, request: hyper::Request<Incoming>) -> Response {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_owned();
        let query = parts.uri.query().unwrap_or("").to_owned();
        let Some(segments) = paths::segments(&path) else {
            return self.error(
                StatusCode::BAD_REQUEST,
                "Bad path",
                "the path is not UTF-8 once decoded",
            );
        };
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let reading = parts.method == Method::GET || parts.method == Method::HEAD;
        // A skill's page reads its own arguments (`format` may be one of them).
        if !matches!(segments.first(), Some(&("skills" | "static"))) {
            let pairs = paths::pairs(&query);
            if let Err(why) = paths::check_format(&pairs) {
                let as_json = wants_json(&parts.headers, &pairs);
                return calls::fail(self, as_json, StatusCode::BAD_REQUEST, "Bad query", &why);
            }
        }
        match (segments.as_slice(), reading) {
            ([], true) => index::page(self, wants_json(&parts.headers, &paths::pairs(&query))).await,
            (["conversations"], true) => {
                let query = paths::pairs(&query);
                conversations::page(self, &query, wants_json(&parts.headers, &query)).await
            }
            (["projects"], true) => {
                projects::list(self, wants_json(&parts.headers, &paths::pairs(&query))).await
            }
            (["projects", project], true) => {
                let as_json = wants_json(&parts.headers, &paths::pairs(&query));
                projects::page(self, project, as_json).await
            }
            (["memories"], true) => {
                let query = paths::pairs(&query);
                memories::page(self, &query, wants_json(&parts.headers, &query)).await
            }
            (["favicon.ico"], true) => respond::asset("favicon.svg")
                .unwrap_or_else(|| self.error(StatusCode::NOT_FOUND, "Not found", "no such file")),
            (["static", name], true) => respond::asset(name)
                .unwrap_or_else(|| self.error(StatusCode::NOT_FOUND, "Not found", "no such file")),
            (["skills", name], true) => {
                skill::page(self, name, paths::pairs(&query), &parts.headers, None).await
            }
            (["skills", name], false) if parts.method == Method::POST => {
                let body = match http_body_util::Limited::new(body, MAX_FORM_BYTES)
                    .collect()
                    .await
                {
                    Ok(collected) => collected.to_bytes(),
                    Err(e) => {
                        return self.error(
                            StatusCode::PAYLOAD_TOO_LARGE,
                            "Form not read",
                            &format!("the form could not be read (at most {MAX_FORM_BYTES} bytes): {e}"),
                        )
                    }
                };
                let pairs = paths::pairs(&String::from_utf8_lossy(&body));
                skill::page(self, name, pairs, &parts.headers, Some(())).await
            }
            (["conversations", source, id], true) => {
                let query = paths::pairs(&query);
                let get = |key: &str| {
                    query
                        .iter()
                        .rev()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.as_str())
                };
                let as_json = wants_json(&parts.headers, &query);
                let page = match paths::page_number(&query) {
                    Ok(page) => page,
                    Err(why) => {
                        return calls::fail(self, as_json, StatusCode::BAD_REQUEST, "Bad query", &why)
                    }
                };
                let at = get("at");
                let machine = get("machine").filter(|m| !m.is_empty());
                conversation::page(self, source, id, page, at, machine, as_json).await
            }
            (["memories", id], true) => {
                let query = paths::pairs(&query);
                let as_json = wants_json(&parts.headers, &query);
                memory::page(self, id, paths::param(&query, "machine"), as_json).await
            }
            (
                [] | ["conversations" | "projects" | "memories"]
                | ["static" | "skills" | "memories" | "projects", _]
                | ["conversations", _, _],
                false,
            ) => {
                let writes = |name: &str| {
                    self.catalog
                        .current()
                        .host
                        .get(name)
                        .is_some_and(|skill| !skill.is_read_only())
                };
                let allowed = match segments.as_slice() {
                    ["skills", name] if writes(name) => "GET, HEAD, POST",
                    _ => "GET, HEAD",
                };
                respond::allow(
                    self.error(
                        StatusCode::METHOD_NOT_ALLOWED,
                        "Method not allowed",
                        &format!("`{}` is not served at `{path}`: pages are read with GET; only skills that write take a POST", parts.method),
                    ),
                    allowed,
                )
            }
            _ => self.error(
                StatusCode::NOT_FOUND,
                "Not found",
                &format!("nothing at `{path}`: the pages are `/`, `/conversations`, `/conversations/<source>/<id>`, `/projects`, `/projects/<project>`, `/memories`, `/memories/<id>` and `/skills/<name>`; MCP is `/mcp`"),
            ),
        }
    }

    /// The catalog the pages show.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The host's clock (`SKILLS_NOW` fixes it): what relative times count from.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.catalog.current().host.context().now()
    }

    /// The write-form token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Renders page template `name` with `context` (plus `nav`: the version and the
    /// search box's skill, the one whose document says `page: {search-box: true}`); a
    /// template failure is a plain-text 500 naming it.
    pub fn render(&self, status: StatusCode, name: &str, context: Value) -> Response {
        let mut context = context;
        if let Value::Object(map) = &mut context {
            let served = self.catalog.current();
            let search = calls::search_box(served.host.skills()).map(|skill| {
                json!({
                    "href": paths::skill(skill.name()),
                    "name": skill.name(),
                    "label": skill.meta.title.as_deref().unwrap_or(skill.name()),
                })
            });
            map.entry("nav").or_insert_with(|| json!({}));
            if let Some(Value::Object(nav)) = map.get_mut("nav") {
                nav.insert("search".into(), search.unwrap_or(Value::Null));
                nav.insert("version".into(), Value::from(env!("CARGO_PKG_VERSION")));
            }
        }
        let rendered = self.env.get_template(name).and_then(|t| t.render(&context));
        match rendered {
            // Whatever a value holds, no bidirectional control reorders the page.
            Ok(body) => respond::html(status, view::bidi_visible(&body).into_owned()),
            Err(e) => respond::text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("page template `{name}` failed: {e:#}\n"),
            ),
        }
    }

    /// A page saying what went wrong.
    pub fn error(&self, status: StatusCode, title: &str, message: &str) -> Response {
        self.render(
            status,
            "error.html",
            json!({"status": status.as_u16(), "title": title, "message": message}),
        )
    }

    /// Runs blocking store work off the async threads; a panic there is a 500 page.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Response> {
        tokio::task::spawn_blocking(work).await.map_err(|e| {
            self.error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Failed",
                &format!("the page's work stopped unexpectedly ({e})"),
            )
        })
    }
}
