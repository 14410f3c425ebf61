//! The pages for people (`src/web/`), over the real server: `skills serve --http` is
//! started as a process, the shared corpus (`$SKILLS_CORPUS_DIR`, default
//! `<manifest>/../shared/corpus`; tests needing it skip with a note when absent) is
//! imported with `skills ingest`, and pages are fetched over HTTP.
//!
//! Checked: the index lists every skill; each bundled skill's form has one field per
//! schema property with its bounds; a recall result links to a conversation page that
//! shows the cited message; a bad argument is a 400 naming it; a forged `Host` and a
//! cross-origin POST to memo-save are refused and store nothing (a same-origin POST
//! with the token stores one); the hostile transcript's markup never comes out as
//! markup; a skill created with `skills new` while the server runs gets its page; a
//! memory's page shows it escaped with its links (supersedes, superseded by, the
//! conversation), and a missing one is a readable 404.
//!
//! `skills ui` (in a fake home, with a fake `xdg-open` on `PATH` instead of a browser):
//! it serves, records `pages.url`, prints the URL and opens it on a desktop; a second
//! `skills ui` (or one beside `skills serve --http`) prints the running server's URL
//! and exits; a stale record is ignored; Ctrl-C removes the record.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A running `skills serve --http 127.0.0.1:0` without an embedding model, killed
/// on drop.
struct Server {
    /// `http://127.0.0.1:<port>` (no trailing slash).
    base: String,
    _server: common::serve::HttpServer,
}

impl Server {
    async fn start(skills: &Path, data: &Path) -> Self {
        let mut cmd = common::serve::HttpServer::command(skills, data, &[]);
        cmd.env("SKILLS_EMBEDDER", "none");
        let server = common::serve::HttpServer::start(cmd);
        Self {
            base: server.base.clone(),
            _server: server,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The port-qualified authority, as a browser sends it in `Host`.
    fn authority(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    async fn get(&self, path: &str) -> (u16, String) {
        let response = client().get(self.url(path)).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .unwrap()
}

/// A data folder with `paths` imported by `skills ingest --no-embed`.
fn ingested(paths: &[PathBuf]) -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    common::cli::ok(
        common::cli::skills()
            .args(["ingest", "--quiet", "--no-embed"])
            .args(paths)
            .env("SKILLS_DATA_DIR", data.path())
            .env("SKILLS_EMBEDDER", "none"),
    );
    data
}

/// The bundled skills' names and input schemas, as the host loads them.
fn bundled() -> Vec<(String, Value)> {
    let data = tempfile::tempdir().unwrap();
    let host = skills::host::Host::load(
        &common::repo_skills(),
        skills::engines::Context::new(skills::stores::StorePaths::in_dir(data.path())),
    );
    host.skills()
        .iter()
        .map(|s| (s.name().to_owned(), s.meta.input_schema.clone()))
        .collect()
}

/// The text of the element opened at the first occurrence of `marker` up to the
/// first `until` after it.
fn section<'a>(page: &'a str, marker: &str, until: &str) -> &'a str {
    let start = page
        .find(marker)
        .unwrap_or_else(|| panic!("`{marker}` not in page:\n{page}"));
    let rest = &page[start..];
    let end = rest.find(until).map_or(rest.len(), |i| i + until.len());
    &rest[..end]
}

/// Every tag of `page` (`<…>`).
fn tags(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(open) = rest.find('<') {
        let after = &rest[open..];
        let Some(close) = after.find('>') else { break };
        out.push(&after[..=close]);
        rest = &after[close + 1..];
    }
    out
}

/// Fails when `page` holds markup a transcript could have put there: a script other
/// than the pages' own, an image, an event-handler attribute or a `javascript:` URL.
fn assert_no_hostile_markup(page: &str, what: &str) {
    for tag in tags(page) {
        // Attribute values (quoted; quotes inside are escaped) may hold any text.
        let lower: String = tag
            .split('"')
            .step_by(2)
            .collect::<Vec<_>>()
            .join("\"\"")
            .to_ascii_lowercase();
        if lower.starts_with("<script") {
            assert_eq!(
                tag, "<script src=\"/static/app.js\" defer>",
                "{what}: a script the pages do not own"
            );
        }
        assert!(!lower.starts_with("<img"), "{what}: an image tag {tag}");
        assert!(
            !lower.contains("onerror"),
            "{what}: an event handler in {tag}"
        );
        assert!(
            !tag.to_ascii_lowercase().contains("href=\"javascript:"),
            "{what}: a javascript: URL in {tag}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_lists_every_skill_and_serves_its_assets_under_the_csp() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(&common::repo_skills(), data.path()).await;
    let response = client().get(server.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    let page = response.text().await.unwrap();
    for (name, _) in bundled() {
        assert!(
            page.contains(&format!("<a href=\"/skills/{name}\">{name}</a>")),
            "index does not link {name}"
        );
    }
    assert!(
        page.contains("action=\"/skills/recall\""),
        "the search box runs recall"
    );
    let (status, css) = server.get("/static/style.css").await;
    assert_eq!(status, 200);
    assert!(css.contains("prefers-color-scheme: dark"));
    // The icon the page links, and the one browsers ask for unprompted (a 404
    // there is a console error in every browser).
    assert!(page.contains("<link rel=\"icon\" href=\"/static/favicon.svg\""));
    for icon in ["/static/favicon.svg", "/favicon.ico"] {
        let response = client().get(server.url(icon)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{icon}");
        assert_eq!(
            response.headers()["content-type"],
            "image/svg+xml",
            "{icon}"
        );
        assert!(response.text().await.unwrap().starts_with("<svg"), "{icon}");
    }
    let (status, _) = server.get("/nothing/here").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bundled_form_has_one_field_per_property_with_its_bounds() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(&common::repo_skills(), data.path()).await;
    for (name, schema) in bundled() {
        let (status, page) = server.get(&format!("/skills/{name}")).await;
        assert_eq!(status, 200, "{name}");
        let properties = schema["properties"].as_object().unwrap();
        assert_eq!(
            page.matches("<div class=\"field").count(),
            properties.len(),
            "{name}: one field per property"
        );
        for (prop, spec) in properties {
            let field = section(&page, &format!("id=\"field-{prop}\""), "</div>");
            assert!(
                field.contains(&format!("name=\"{prop}\"")),
                "{name}.{prop}: {field}"
            );
            for (key, attr) in [("minimum", "min"), ("maximum", "max")] {
                if let Some(bound) = spec.get(key) {
                    assert!(
                        field.contains(&format!(" {attr}=\"{bound}\"")),
                        "{name}.{prop}: {key} {bound} missing in {field}"
                    );
                }
            }
            if let (Some(max), Some("string")) = (spec.get("maxLength"), spec["type"].as_str()) {
                assert!(
                    field.contains(&format!("maxlength=\"{max}\"")),
                    "{name}.{prop}: maxLength {max} missing in {field}"
                );
            }
            if spec.get("enum").is_some() {
                assert!(field.contains("<select"), "{name}.{prop}: enum → select");
            }
            if spec["type"] == "boolean" {
                assert!(
                    field.contains("type=\"checkbox\""),
                    "{name}.{prop}: checkbox"
                );
            }
            let required = schema["required"]
                .as_array()
                .is_some_and(|r| r.iter().any(|v| v == prop));
            assert_eq!(
                field.contains(", required</span>"),
                required,
                "{name}.{prop}: required shown as in the schema"
            );
            if let Some(help) = spec["description"].as_str() {
                let first_word = help.split_whitespace().next().unwrap_or("");
                assert!(field.contains("class=\"help\""), "{name}.{prop}: help text");
                assert!(!first_word.is_empty());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_argument_is_a_400_naming_it_and_a_failed_call_a_readable_page() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(&common::repo_skills(), data.path()).await;
    let (status, page) = server
        .get("/skills/search-conversations?term=x&limit=0&_run=1")
        .await;
    assert_eq!(status, 400);
    let field = section(&page, "id=\"field-limit\"", "</div>");
    assert!(
        field.contains("class=\"error\""),
        "the field says what is wrong: {field}"
    );
    assert!(page.contains("argument `limit`"), "{page}");
    assert!(
        page.contains("<form class=\"skill-form\""),
        "the form is shown again"
    );
    assert!(
        field.contains("value=\"0\""),
        "the value given is kept: {field}"
    );
    let response = client()
        .get(server.url("/skills/search-conversations?limit=ten"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["errors"][0]["argument"], "limit", "{body}");
    let (status, page) = server.get("/skills/search-conversations?colour=red").await;
    assert_eq!(status, 400);
    assert!(page.contains("argument `colour`"), "{page}");
    // No store yet: the call fails, and the page says why (no stack, no panic).
    let (status, page) = server
        .get("/skills/get-conversation?conversation_id=nope")
        .await;
    assert!(status >= 500, "{status}");
    assert!(page.contains("get-conversation"), "{page}");
    assert!(page.contains("conversations"), "{page}");
    assert!(!page.contains("panicked"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_requests_get_readable_answers_never_a_stack() {
    let data = tempfile::tempdir().unwrap();
    let store = skills::stores::conversations::ConversationStore::open_rw(
        &skills::stores::StorePaths::in_dir(data.path()).conversations,
    )
    .unwrap();
    store
        .insert(&[
            common::message(
                "c-1",
                0,
                "東京🚀 was the meeting place <script>alert(1)</script>",
            ),
            common::message("c-1", 1, "ok"),
        ])
        .unwrap();
    drop(store);
    let server = Server::start(&common::repo_skills(), data.path()).await;
    // A value the engine refuses (more `%` than a term may hold) is the caller's
    // mistake: 400, the form again, the error beside the field.
    let (status, page) = server
        .get("/skills/search-conversations?term=%25a%25b%25c%25d%25e&_run=1")
        .await;
    assert_eq!(status, 400, "{page}");
    let field = section(&page, "id=\"field-term\"", "</div>");
    assert!(field.contains("class=\"error\""), "{field}");
    assert!(page.contains("argument `term`"), "{page}");
    // Methods a page does not take: 405 with `Allow`.
    for (method, path, allowed) in [
        (
            reqwest::Method::POST,
            "/skills/search-conversations",
            "GET, HEAD",
        ),
        (reqwest::Method::PUT, "/", "GET, HEAD"),
        (
            reqwest::Method::DELETE,
            "/skills/memo-save",
            "GET, HEAD, POST",
        ),
        (reqwest::Method::PATCH, "/memories/x", "GET, HEAD"),
    ] {
        let response = client()
            .request(method.clone(), server.url(path))
            .header("origin", server.base.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method} {path}");
        assert_eq!(response.headers()["allow"], allowed, "{method} {path}");
    }
    // HEAD: the status and headers of the GET, no body.
    let response = client().head(server.url("/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("content-security-policy"));
    assert!(response.bytes().await.unwrap().is_empty());
    // The JSON twin of an unknown skill is JSON.
    let response = client()
        .get(server.url("/skills/nope?format=json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("`nope`"), "{body}");
    // Traversal, bad encodings, unicode, huge and empty values: an answer page each.
    let long = "why ".repeat(600);
    for (path, expected) in [
        ("/conversations/..%2F..%2Fetc/passwd", 404),
        ("/conversations/_/..%2F..%2Fmemories.sqlite", 404),
        ("/static/..%2F..%2FCargo.toml", 404),
        ("/skills/..%2Fskills%2Frecall", 404),
        ("/memories/%FF", 400),
        (
            "/skills/search-conversations?term=%E6%9D%B1%E4%BA%AC%F0%9F%9A%80&_run=1",
            200,
        ),
        (
            "/conversations/_/c-1?page=99999999999999999999999&at=nope",
            400,
        ),
        (
            "/skills/search-conversations?limit=99999999999999999999&_run=1",
            400,
        ),
        ("/skills/recall?question=", 400),
        (&format!("/skills/recall?question={long}"), 400),
    ] {
        let (status, page) = server.get(path).await;
        assert_eq!(status, expected, "{path}: {page}");
        assert!(page.contains("<h1"), "{path}: a page: {page}");
        assert!(
            !page.contains("panicked") && !page.contains("RUST_BACKTRACE"),
            "{path}: {page}"
        );
        assert_no_hostile_markup(&page, path);
    }
    let (_, page) = server
        .get("/skills/search-conversations?term=%E6%9D%B1%E4%BA%AC%F0%9F%9A%80&_run=1")
        .await;
    assert!(
        page.contains("東京🚀 was the meeting place &lt;script&gt;"),
        "{page}"
    );
}

/// `?page=` and `?format=` values a page cannot read (a word, 0, negative, past the
/// last page a list may have, an unknown format) are a 400 naming the parameter and
/// what it takes, as a page or as JSON; never a silent first page or a 500.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_query_parameters_are_a_400_naming_them() {
    let data = tempfile::tempdir().unwrap();
    common::store_messages(
        data.path(),
        &[
            common::message("c-1", 0, "hello"),
            common::message("c-1", 1, "ok"),
        ],
    );
    let server = Server::start(&common::repo_skills(), data.path()).await;
    for (path, parameter, value) in [
        ("/conversations?page=abc", "page", "abc"),
        ("/conversations?source=generic&page=0", "page", "0"),
        ("/conversations?page=-2", "page", "-2"),
        ("/conversations?page=1e3", "page", "1e3"),
        ("/memories?page=two", "page", "two"),
        ("/conversations/_/c-1?page=x", "page", "x"),
        (
            "/conversations/generic/c-1?page=99999999999999999999",
            "page",
            "99999999999999999999",
        ),
        ("/conversations?format=xml", "format", "xml"),
        ("/?format=yaml", "format", "yaml"),
        ("/projects?_format=csv", "_format", "csv"),
    ] {
        let (status, page) = server.get(path).await;
        assert_eq!(status, 400, "{path}: {page}");
        assert!(page.contains("<h1"), "{path}: a page: {page}");
        assert!(
            page.contains(&format!("`{parameter}`")) && page.contains(value),
            "{path}: {page}"
        );
        let response = client()
            .get(server.url(path))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{path}");
        let body: Value = response.json().await.unwrap();
        let error = body["error"].as_str().unwrap();
        assert!(error.contains(&format!("`{parameter}`")), "{path}: {body}");
    }
    // What it takes still works: a page number, an empty one, the JSON twin.
    for path in [
        "/conversations?page=1",
        "/conversations?page=",
        "/conversations?page=3",
        "/conversations/_/c-1?page=1&format=json",
        "/?format=html",
    ] {
        let (status, page) = server.get(path).await;
        assert_eq!(status, 200, "{path}: {page}");
    }
}

/// Transcript text holding bidirectional embeddings, overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069, "Trojan Source") reorders nothing on any page: in
/// the text, the title, the project, the ids and a memory, every such control shows
/// as a visible escape (`\u{202E}`); the JSON twins keep the text as stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bidirectional_controls_in_a_transcript_show_as_escapes_on_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let id = "trojan\u{202E}doc";
    let transcript = dir.path().join("trojan.jsonl");
    let mut text = String::new();
    for (i, (role, content)) in [
        (
            "user",
            "is this admin check right? if access_level != \"user\u{202E} \u{2066}// admins only\u{2069} \u{2066}\" {",
        ),
        (
            "assistant",
            "It hides an \u{202D}override\u{202C}, an \u{202A}embedding\u{202C}, \u{202B}another\u{202C}, \u{2067}an isolate\u{2069} and \u{2068}one more\u{2069}.",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let line = serde_json::json!({
            "role": role, "content": content, "conversation_id": id, "id": format!("m{i}"),
            "timestamp": format!("2026-03-01T10:00:0{i}Z"), "title": "Review \u{202E}kcehc\u{202C}",
            "project": "/work/\u{2067}evil\u{2069}",
        });
        text.push_str(&format!("{line}\n"));
    }
    fs_err::write(&transcript, text).unwrap();
    let data = ingested(&[transcript]);
    let memory = save_memory(
        data.path(),
        &serde_json::json!({"title": "bidi \u{202E}note", "body": "remember \u{2066}this\u{2069} check", "type": "note"}),
    );
    let server = Server::start(&common::repo_skills(), data.path()).await;
    let encoded = |s: &str| skills::web::paths::encode(s);
    let conversation = format!("/conversations/generic/{}", encoded(id));
    let pages = [
        "/".to_owned(),
        "/conversations".to_owned(),
        conversation.clone(),
        "/projects".to_owned(),
        format!("/projects/{}", encoded("/work/\u{2067}evil\u{2069}")),
        "/skills/search-conversations?term=admin&_run=1".to_owned(),
        format!("/skills/get-conversation?conversation_id={}", encoded(id)),
        "/skills/conversations-by-date?date=2026-03-01".to_owned(),
        "/memories".to_owned(),
        format!("/memories/{}", encoded(&memory)),
        "/skills/memo-search?query=remember&mode=bm25".to_owned(),
        format!("/conversations/generic/{}?page=nope", encoded(id)),
    ];
    let is_control = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    let mut escapes = 0;
    for path in &pages {
        let (status, page) = server.get(path).await;
        assert!(
            status == 200 || path.ends_with("nope"),
            "{path}: {status} {page}"
        );
        assert!(
            !page.chars().any(is_control),
            "{path} holds a bidirectional control: {page}"
        );
        escapes += page.matches("\\u{20").count();
    }
    let (_, page) = server.get(&conversation).await;
    for escape in [
        "\\u{202E}",
        "\\u{2066}",
        "\\u{2069}",
        "\\u{202D}",
        "\\u{202C}",
        "\\u{202A}",
        "\\u{202B}",
        "\\u{2067}",
        "\\u{2068}",
    ] {
        assert!(
            page.contains(escape),
            "{conversation} does not show {escape}: {page}"
        );
    }
    assert!(escapes >= 30, "{escapes} escapes shown");
    // The twin is the data as stored.
    let (status, twin) = server.get(&format!("{conversation}?format=json")).await;
    assert_eq!(status, 200, "{twin}");
    assert!(
        twin.contains("user\u{202E} \u{2066}// admins only"),
        "{twin}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recall_result_links_to_the_conversation_page_showing_the_cited_message() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let data = ingested(&[corpus.join("claude-code"), corpus.join("codex")]);
    let server = Server::start(&common::repo_skills(), data.path()).await;
    let (status, page) = server.get("/skills/recall?question=calculator").await;
    assert_eq!(status, 200, "{page}");
    let table = section(&page, "<table class=\"results\"", "</table>");
    let href = table
        .split("<a class=\"cite\" href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap_or(""))
        .find(|href| href.starts_with("/conversations/"))
        .unwrap_or_else(|| panic!("no result links to a conversation:\n{table}"))
        .replace("&amp;", "&");
    let message = href.split("#m-").nth(1).unwrap().to_owned();
    let response = client().get(server.url(&href)).send().await.unwrap();
    assert_eq!(response.status(), 200, "{href}");
    assert!(
        !response.url().path().contains("/_/"),
        "any-source link redirects to the source: {}",
        response.url()
    );
    let conversation = response.text().await.unwrap();
    let message_id = percent_decode(&message);
    let article = section(
        &conversation,
        &format!("id=\"m-{}\"", html_escape(&message_id)),
        "</li>",
    );
    assert!(article.contains("class=\"content\""), "{article}");
    // The rendered answer links its citations too.
    let rendered = section(&page, "<div class=\"rendered\">", "</section>");
    assert!(rendered.contains("href=\"/conversations/"), "{rendered}");
    // The JSON twin is the same call's output.
    let (status, json) = server
        .get("/skills/recall?question=calculator&format=json")
        .await;
    assert_eq!(status, 200);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["skill"], "recall");
    assert!(json["data"]["count"].as_u64().unwrap() > 0, "{json}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_host_and_cross_origin_posts_to_memo_save_are_refused_and_store_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(&common::repo_skills(), data.path()).await;
    let (status, form) = server.get("/skills/memo-save").await;
    assert_eq!(status, 200);
    assert!(
        form.contains("method=\"post\""),
        "a write skill is a POST form"
    );
    let token = section(&form, "name=\"_token\" value=\"", "\">")
        .trim_start_matches("name=\"_token\" value=\"")
        .trim_end_matches("\">")
        .to_owned();
    assert_eq!(token.len(), 64, "{token}");
    let own_origin = server.base.clone();
    let post = |headers: &[(&str, String)], token: &str| {
        let mut request = client()
            .post(server.url("/skills/memo-save"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(
                form_urlencoded::Serializer::new(String::new())
                    .append_pair("body", "remember the forged write")
                    .append_pair("_token", token)
                    .finish(),
            );
        for (k, v) in headers {
            request = request.header(*k, v.clone());
        }
        request
    };
    let refused = [
        (
            "forged Host",
            vec![
                ("host", "evil.example".to_owned()),
                ("origin", own_origin.clone()),
            ],
            token.as_str(),
        ),
        (
            "foreign Origin",
            vec![("origin", "http://evil.example".to_owned())],
            token.as_str(),
        ),
        (
            "other loopback origin",
            vec![(
                "origin",
                format!(
                    "http://localhost:{}",
                    server.authority().rsplit(':').next().unwrap()
                ),
            )],
            token.as_str(),
        ),
        (
            "cross-site fetch",
            vec![("sec-fetch-site", "cross-site".to_owned())],
            token.as_str(),
        ),
        ("no origin at all", vec![], token.as_str()),
        ("wrong token", vec![("origin", own_origin.clone())], "0000"),
    ];
    for (what, headers, token) in &refused {
        let response = post(headers, token).send().await.unwrap();
        assert_eq!(response.status(), 403, "{what}");
    }
    let memories = skills::stores::StorePaths::in_dir(data.path()).memories;
    let stored = || match skills::stores::memories::MemoryStore::open_ro(&memories) {
        Ok(store) => store.count().unwrap(),
        Err(skills::stores::StoreError::Missing { .. }) => 0,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(stored(), 0, "a refused POST wrote nothing");
    // A GET with arguments never runs a write skill.
    let (status, page) = server.get("/skills/memo-save?body=sneaky&_run=1").await;
    assert_eq!(status, 200);
    assert!(!page.contains("id=\"result\""), "{page}");
    assert_eq!(stored(), 0);
    // The form itself, from this server's page, does store.
    let response = post(&[("origin", own_origin.clone())], &token)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let page = response.text().await.unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Saved"), "{page}");
    assert_eq!(stored(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hostile_transcript_never_comes_out_as_markup() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let hostile =
        corpus.join("claude-code/ai-engineering-fluency__xss-hostile-claude-session.jsonl");
    let data = ingested(std::slice::from_ref(&hostile));
    let server = Server::start(&common::repo_skills(), data.path()).await;
    let mut seen_escaped = false;
    for path in [
        "/skills/search-conversations?term=script&_run=1",
        "/skills/search-conversations?term=onerror&_run=1",
        "/skills/recall?question=pwned+script",
        "/skills/conversations-by-date?date=2026-03-27",
        "/skills/get-conversation?conversation_id=xss-test-session",
        "/conversations/_/xss-test-session",
        "/skills/search-conversations?term=%3Cscript%3E&_run=1",
    ] {
        let (status, page) = server.get(path).await;
        assert_eq!(status, 200, "{path}: {page}");
        assert_no_hostile_markup(&page, path);
        seen_escaped |= page.contains("&lt;script&gt;");
    }
    assert!(seen_escaped, "the hostile text is shown, as text");
    let (_, page) = server.get("/conversations/_/xss-test-session").await;
    assert!(page.contains("Please review this repo"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_created_while_serving_gets_its_page() {
    let skills = tempfile::tempdir().unwrap();
    common::copy_dir(&common::repo_skills(), skills.path());
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(skills.path(), data.path()).await;
    let (status, _) = server.get("/skills/fresh-pages").await;
    assert_eq!(status, 404);
    common::cli::ok(
        common::cli::skills()
            .args(["new", "fresh-pages"])
            .env("SKILLS_DIR", skills.path())
            .env("SKILLS_DATA_DIR", data.path()),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, page) = server.get("/skills/fresh-pages").await;
        if status == 200 {
            assert!(page.contains("<form class=\"skill-form\""), "{page}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no page for the new skill after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, index) = server.get("/").await;
    assert!(index.contains("href=\"/skills/fresh-pages\""));
}

/// `skills run memo-save --json` with `args` over data folder `data`: the new id.
fn save_memory(data: &Path, args: &Value) -> String {
    let out = common::cli::ok(
        common::cli::skills()
            .args(["run", "memo-save", "--json", "--args-json"])
            .arg(args.to_string())
            .env("SKILLS_DIR", common::repo_skills())
            .env("SKILLS_DATA_DIR", data)
            .env("SKILLS_EMBEDDER", "none"),
    );
    let output: Value = serde_json::from_slice(&out.stdout).unwrap();
    output["data"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_page_shows_the_memory_escaped_with_its_links() {
    let data = tempfile::tempdir().unwrap();
    // A real conversation to be saved from, when the corpus is here (the rest runs
    // without it).
    let corpus = Some(common::corpus_dir()).filter(|d| d.is_dir());
    if let Some(corpus) = &corpus {
        let hostile =
            corpus.join("claude-code/ai-engineering-fluency__xss-hostile-claude-session.jsonl");
        common::cli::ok(
            common::cli::skills()
                .args(["ingest", "--quiet", "--no-embed"])
                .arg(&hostile)
                .env("SKILLS_DATA_DIR", data.path())
                .env("SKILLS_EMBEDDER", "none"),
        );
    }
    let server = Server::start(&common::repo_skills(), data.path()).await;
    // No memory stored yet: a 404 page saying so.
    let (status, page) = server.get("/memories/anything").await;
    assert_eq!(status, 404, "{page}");
    assert!(page.contains("no memories are stored yet"), "{page}");

    let old = save_memory(
        data.path(),
        &serde_json::json!({
            "title": "Link <script>alert('title')</script> duckdb",
            "body": "We link libduckdb statically.\n\n<script>alert('body')</script>\n\
                     <img src=x onerror=alert(1)> [click](javascript:alert(2))\n\n\
                     ```sh\ncargo build --release\n```",
            "type": "decision",
            "tags": ["build", "<b>bold</b>"],
            "files_read": ["src/build.rs"],
        }),
    );
    // The replacement goes through the page's own form: a same-origin POST with the
    // token; its lines field carries the superseded id.
    let (_, form) = server.get("/skills/memo-save").await;
    let token = section(&form, "name=\"_token\" value=\"", "\">")
        .trim_start_matches("name=\"_token\" value=\"")
        .trim_end_matches("\">")
        .to_owned();
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("_token", &token)
        .append_pair("title", "Link duckdb with an rpath")
        .append_pair(
            "body",
            "We link libduckdb with an `$ORIGIN` rpath <svg onload=alert(3)>.",
        )
        .append_pair("type", "decision")
        .append_pair("supersedes", &old)
        .append_pair("conversation_id", "xss-test-session")
        .append_pair("source", "claude-code")
        .append_pair("format", "json")
        .finish();
    let response = client()
        .post(server.url("/skills/memo-save"))
        .header("origin", server.base.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let saved: Value = response.json().await.unwrap();
    let new = saved["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        saved["data"]["superseded"],
        serde_json::json!([old]),
        "{saved}"
    );

    let (status, page) = server.get(&format!("/memories/{new}")).await;
    assert_eq!(status, 200, "{page}");
    assert_no_hostile_markup(&page, "the new memory");
    assert!(
        page.contains("<h1>Link duckdb with an rpath</h1>"),
        "{page}"
    );
    assert!(
        page.contains("<code>$ORIGIN</code>"),
        "markdown renders: {page}"
    );
    assert!(page.contains("&lt;svg onload=alert(3)&gt;"), "{page}");
    let supersedes = section(&page, "<dt>Supersedes</dt>", "</dd>");
    assert!(
        supersedes.contains(&format!("href=\"/memories/{old}\"")),
        "{supersedes}"
    );
    let saved_from = section(&page, "<dt>Saved from</dt>", "</dd>");
    assert!(
        saved_from.contains("href=\"/conversations/_/xss-test-session\""),
        "{saved_from}"
    );
    assert!(page.contains("<code>claude-code</code>"), "origin: {page}");

    let (status, page) = server.get(&format!("/memories/{old}")).await;
    assert_eq!(status, 200, "{page}");
    assert_no_hostile_markup(&page, "the old memory");
    assert!(
        page.contains("Link &lt;script&gt;alert(&#x27;title&#x27;)&lt;&#x2f;script&gt; duckdb"),
        "the title is text: {page}"
    );
    assert!(
        page.contains("&lt;script&gt;alert('body')&lt;/script&gt;"),
        "{page}"
    );
    assert!(
        page.contains("#&lt;b&gt;bold&lt;&#x2f;b&gt;"),
        "the tag is text: {page}"
    );
    assert!(page.contains("<pre><code"), "code block: {page}");
    let note = section(&page, "Superseded by", "</p>");
    assert!(
        note.contains(&format!("href=\"/memories/{new}\"")),
        "{note}"
    );
    assert!(page.contains("<code>src&#x2f;build.rs</code>"), "{page}");

    // memo-search cites the memory, and its row links to the memory's page.
    let (status, page) = server
        .get("/skills/memo-search?query=rpath&mode=bm25&_run=1")
        .await;
    assert_eq!(status, 200, "{page}");
    let table = section(&page, "<table class=\"results\"", "</table>");
    assert!(
        table.contains(&format!(
            "<a class=\"cite\" href=\"/memories/{new}\">memory</a>"
        )),
        "{table}"
    );

    // The conversation it was saved from opens (the any-source link redirects).
    if corpus.is_some() {
        let (status, page) = server.get("/conversations/_/xss-test-session").await;
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("Please review this repo"), "{page}");
    }

    // Missing and odd ids: a readable 404 page, the id shown as text.
    for (path, shown) in [
        ("/memories/no-such-id", "no memory `no-such-id` is stored"),
        (
            "/memories/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
            "no memory `&lt;script&gt;alert(1)&lt;&#x2f;script&gt;` is stored",
        ),
        (
            "/memories/..%2F..%2Fmemories.sqlite",
            "no memory `..&#x2f;..&#x2f;memories.sqlite` is stored",
        ),
    ] {
        let response = client().get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        let page = response.text().await.unwrap();
        assert!(page.contains("<h1>No such memory</h1>"), "{path}: {page}");
        assert!(page.contains(shown), "{path}: {page}");
        assert_no_hostile_markup(&page, path);
    }
}

/// An isolated home for `skills ui`, which imports from the default transcript
/// locations: every location inside it, a data folder inside it, and a fake
/// `xdg-open` (on `PATH`) that appends each URL it is asked to open to `opened`.
struct UiHome {
    dir: tempfile::TempDir,
}

impl UiHome {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let opener = bin.join("xdg-open");
        std::fs::write(
            &opener,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
                dir.path().join("opened").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The URLs the fake `xdg-open` was given.
    fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("opened"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `skills ui` plus `extra`; `desktop`: `DISPLAY` set (the fake opener runs).
    fn ui(&self, extra: &[&str], desktop: bool) -> tokio::process::Command {
        let home = self.dir.path();
        let mut cmd = tokio::process::Command::new(common::cli::bin());
        cmd.arg("ui")
            .args(extra)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("SKILLS_DIR", common::repo_skills())
            .env("SKILLS_DATA_DIR", self.data())
            .env("SKILLS_EMBEDDER", "none")
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    home.join("bin").display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in common::TOOL_LOCATIONS
            .iter()
            .chain(&["SKILLS_WATCH", "WAYLAND_DISPLAY"])
        {
            cmd.env_remove(var);
        }
        if desktop {
            cmd.env("DISPLAY", ":99");
        } else {
            cmd.env_remove("DISPLAY");
        }
        cmd
    }

    /// Starts a serving `skills ui`: the process, the URL it printed on stdout, and its
    /// stderr so far (collected into the shared buffer as it comes).
    async fn serving(
        &self,
        extra: &[&str],
        desktop: bool,
    ) -> (
        tokio::process::Child,
        String,
        std::sync::Arc<std::sync::Mutex<String>>,
    ) {
        let mut child = self.ui(extra, desktop).spawn().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = std::sync::Arc::clone(&stderr);
        let mut err_lines = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = err_lines.next_line().await {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let mut out_lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(60), out_lines.next_line())
            .await
            .expect("`skills ui` printed no URL within 60 s")
            .unwrap()
            .unwrap_or_else(|| panic!("`skills ui` exited: {}", stderr.lock().unwrap()));
        (child, url, stderr)
    }

    /// Runs a `skills ui` that should find the running server and exit at once.
    async fn finding(&self, extra: &[&str], desktop: bool) -> (String, String) {
        let out = tokio::time::timeout(Duration::from_secs(30), self.ui(extra, desktop).output())
            .await
            .expect("`skills ui` did not exit: it should have found the running server")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    }
}

/// Waits up to 10 s for `check`.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_ui_serves_records_prints_and_opens_the_pages_once() {
    let home = UiHome::new();
    let (mut first, url, _stderr) = home.serving(&[], true).await;
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("not a loopback URL: {url}"));
    assert!(port.parse::<u16>().is_ok_and(|p| p > 0), "{url}");
    let recorded = || std::fs::read_to_string(home.data().join("pages.url")).ok();
    assert_eq!(recorded().as_deref().map(str::trim), Some(url.as_str()));
    eventually("the desktop opener gets the URL", || {
        home.opened() == [url.clone()]
    })
    .await;
    let page = client().get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page
        .text()
        .await
        .unwrap()
        .contains("href=\"/skills/recall\""));

    // A second `skills ui` over the same data folder prints the running server's URL
    // and exits; `--no-open` leaves the browser alone, without it the URL is opened.
    let (out, err) = home.finding(&["--no-open"], true).await;
    assert_eq!(out.trim(), url);
    assert!(err.contains("already running"), "{err}");
    assert_eq!(home.opened().len(), 1, "--no-open opened nothing");
    let (out, _) = home.finding(&[], true).await;
    assert_eq!(out.trim(), url);
    eventually("the URL opened again", || home.opened().len() == 2).await;

    // Ctrl-C stops the server, which withdraws its record.
    let pid = first.id().unwrap().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(Duration::from_secs(20), first.wait())
        .await
        .expect("`skills ui` did not stop on SIGINT")
        .unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(recorded(), None, "pages.url is removed at exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_ui_ignores_a_stale_record_and_opens_nothing_unasked_or_without_a_desktop() {
    let home = UiHome::new();
    // A record left by a server that was killed: nothing listens there any more.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stale = format!("http://{}/", dead.local_addr().unwrap());
    drop(dead);
    std::fs::create_dir_all(home.data()).unwrap();
    std::fs::write(home.data().join("pages.url"), format!("{stale}\n")).unwrap();
    // `--no-open`: the URL is printed, nothing is opened even on a desktop.
    let (mut child, url, _stderr) = home.serving(&["--no-open"], true).await;
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert_ne!(url, stale);
    assert_eq!(
        std::fs::read_to_string(home.data().join("pages.url"))
            .unwrap()
            .trim(),
        url,
        "the record names the new server"
    );
    assert!(child.try_wait().unwrap().is_none(), "it keeps serving");
    assert_eq!(client().get(&url).send().await.unwrap().status(), 200);
    // Without a desktop a second `skills ui` prints the URL and says why it opens nothing.
    let (out, err) = home.finding(&[], false).await;
    assert_eq!(out.trim(), url);
    assert!(err.contains("no desktop found"), "{err}");
    assert!(home.opened().is_empty(), "nothing was opened");
    // `--port` with a port in use: an error naming it, not a hang.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    std::fs::remove_file(home.data().join("pages.url")).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        home.ui(&["--no-open", "--port", &busy_port], false)
            .output(),
    )
    .await
    .expect("`skills ui --port <busy>` hung")
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&busy_port), "{err}");
    drop(busy);
    std::fs::write(home.data().join("pages.url"), format!("{url}\n")).unwrap();
    // `SIGTERM` (a plain `kill`) stops it as Ctrl-C does: its record goes with it.
    let pid = child.id().unwrap().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("`skills ui` did not stop on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(!home.data().join("pages.url").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_ui_finds_a_running_skills_serve() {
    let home = UiHome::new();
    let server = Server::start(&common::repo_skills(), &home.data()).await;
    let url = format!("{}/", server.base);
    let recorded = std::fs::read_to_string(home.data().join("pages.url")).unwrap();
    assert_eq!(
        recorded.trim(),
        url,
        "`skills serve --http` records its pages"
    );
    let (out, _) = home.finding(&["--no-open"], false).await;
    assert_eq!(out.trim(), url);
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

/// Text escaped as minijinja's HTML auto-escaping writes it.
fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

/// An id as long as an id may be stored (`skills::ingest::MAX_ID_CHARS`; here 2,000
/// characters, past the 512 the skills once accepted) opens everywhere it is listed:
/// the conversation page, the page at a message with a long id, the get-conversation
/// and list-conversations skills. A longer one is refused at import, the fault naming
/// the file and the id's length, never stored where nothing could open it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_conversation_id_opens_on_its_page_and_in_the_skills() {
    let dir = tempfile::tempdir().unwrap();
    let id = format!("long-{}", "c".repeat(1995));
    let message = format!("msg-{}", "m".repeat(1996));
    assert_eq!((id.len(), message.len()), (2000, 2000));
    let transcript = dir.path().join("long-ids.jsonl");
    let lines = [
        serde_json::json!({"role": "user", "content": "the question under a long id",
            "conversation_id": id, "id": message, "timestamp": "2026-03-01T10:00:00Z"}),
        serde_json::json!({"role": "assistant", "content": "the answer under a long id",
            "conversation_id": id, "id": "a1", "timestamp": "2026-03-01T10:00:01Z"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs_err::write(&transcript, text).unwrap();
    let data = ingested(&[transcript]);

    let too_long = "x".repeat(skills::ingest::MAX_ID_CHARS + 1);
    let refused = dir.path().join("too-long.jsonl");
    let line = serde_json::json!({"role": "user", "content": "never stored",
        "conversation_id": too_long});
    fs_err::write(&refused, format!("{line}\n")).unwrap();
    let (_, stdout, stderr) = common::cli::run(
        common::cli::with_data(data.path())
            .args(["ingest", "--json", "--no-embed"])
            .arg(&refused)
            .env("SKILLS_EMBEDDER", "none"),
    );
    let summary: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
    let faults = summary["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 1, "{summary}");
    assert!(
        faults[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("too-long.jsonl"),
        "{summary}"
    );
    let reason = faults[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("a conversation id of 4097 characters is longer than the 4096"),
        "{reason}"
    );
    assert!(!reason.contains(&too_long), "the fault echoes the id");
    assert_eq!(summary["messages_added"], 0, "{summary}");

    let rows = |skill: &str| {
        let v = common::cli::json(
            common::cli::with_data(data.path())
                .args(["run", skill, "--json", "--arg"])
                .arg(format!("conversation_id={id}")),
        );
        v["data"]["rows"].as_array().unwrap().len()
    };
    assert_eq!(rows("get-conversation"), 2);
    assert_eq!(rows("list-conversations"), 1);

    let server = Server::start(&common::repo_skills(), data.path()).await;
    let encoded = |s: &str| skills::web::paths::encode(s);
    let conversation = format!("/conversations/generic/{}", encoded(&id));
    for path in [
        conversation.clone(),
        format!("{conversation}?at={}", encoded(&message)),
        format!("/conversations/_/{}", encoded(&id)),
        format!(
            "/skills/get-conversation?conversation_id={}&at={}",
            encoded(&id),
            encoded(&message)
        ),
    ] {
        let (status, page) = server.get(&path).await;
        assert_eq!(status, 200, "{path}: {page}");
        assert!(
            page.contains("the question under a long id"),
            "{path}: {page}"
        );
    }
}
