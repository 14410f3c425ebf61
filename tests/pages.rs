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
//! markup; a skill created with `skills new` while the server runs gets its page.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_skills")
}

fn repo_skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
}

/// A running `skills serve --http 127.0.0.1:0`, killed on drop.
struct Server {
    child: tokio::process::Child,
    /// `http://127.0.0.1:<port>` (no trailing slash).
    base: String,
}

impl Server {
    async fn start(skills: &Path, data: &Path) -> Self {
        let mut child = tokio::process::Command::new(bin())
            .args(["serve", "--no-ingest", "--http", "127.0.0.1:0"])
            .env("SKILLS_DIR", skills)
            .env("SKILLS_DATA_DIR", data)
            .env("SKILLS_EMBEDDER", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(at) = line.find("pages at http://") {
                    let url = line[at + "pages at ".len()..].trim();
                    return url.trim_end_matches('/').to_owned();
                }
            }
            panic!("serve exited without printing the pages' address")
        })
        .await
        .unwrap();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, base }
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

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
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
    let out = Command::new(bin())
        .arg("ingest")
        .arg("--quiet")
        .arg("--no-embed")
        .args(paths)
        .env("SKILLS_DATA_DIR", data.path())
        .env("SKILLS_EMBEDDER", "none")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ingest failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

/// The bundled skills' names and input schemas, as the host loads them.
fn bundled() -> Vec<(String, Value)> {
    let data = tempfile::tempdir().unwrap();
    let host = skills::runtime::Host::load(
        &repo_skills(),
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
    let server = Server::start(&repo_skills(), data.path()).await;
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
    let (status, _) = server.get("/nothing/here").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bundled_form_has_one_field_per_property_with_its_bounds() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(&repo_skills(), data.path()).await;
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
    let server = Server::start(&repo_skills(), data.path()).await;
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
async fn a_recall_result_links_to_the_conversation_page_showing_the_cited_message() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let data = ingested(&[corpus.join("claude-code"), corpus.join("codex")]);
    let server = Server::start(&repo_skills(), data.path()).await;
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
    let server = Server::start(&repo_skills(), data.path()).await;
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
    let server = Server::start(&repo_skills(), data.path()).await;
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
    copy_dir(&repo_skills(), skills.path());
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(skills.path(), data.path()).await;
    let (status, _) = server.get("/skills/fresh-pages").await;
    assert_eq!(status, 404);
    let out = Command::new(bin())
        .args(["new", "fresh-pages"])
        .env("SKILLS_DIR", skills.path())
        .env("SKILLS_DATA_DIR", data.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
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
