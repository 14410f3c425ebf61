//! Untrusted skill folders and hostile arguments (issue 19, parts 2 and 3): files stay
//! inside the skill folder, work is bounded, arguments are bounded. One regression test
//! per defect of the issue.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use skills::engines::Context;
use skills::host::{CallError, Host};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

struct Folder {
    dir: tempfile::TempDir,
}

impl Folder {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(dir.path().join("skills")).unwrap();
        let store =
            ConversationStore::open_rw(&dir.path().join("data/conversations.duckdb")).unwrap();
        store.close().unwrap();
        Self { dir }
    }

    fn skills(&self) -> PathBuf {
        self.dir.path().join("skills")
    }

    /// A `sql` skill; `extra` is more frontmatter, `template` the template text.
    fn add(&self, name: &str, extra: &str, query: &str, template: &str) -> PathBuf {
        let d = self.skills().join(name);
        fs_err::create_dir_all(&d).unwrap();
        fs_err::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: test\nengine: sql\nreads: [conversations]\n{extra}input-schema:\n  type: object\n  properties:\n    term: {{type: string, default: x}}\n---\n# {name}\n"),
        )
        .unwrap();
        fs_err::write(d.join("template.md.j2"), template).unwrap();
        fs_err::write(d.join("query.sql"), query).unwrap();
        d
    }

    fn host(&self) -> Host {
        Host::load(
            &self.skills(),
            Context::new(StorePaths::in_dir(self.dir.path().join("data"))),
        )
    }
}

#[test]
fn engine_options_query_etc_passwd_is_refused_without_leaking_its_first_word() {
    let f = Folder::new();
    let secret = f.dir.path().join("secret.sql");
    fs_err::write(&secret, "hunter2secret is the first word\n").unwrap();
    f.add(
        "absolute",
        "engine-options: {store: conversations, query: /etc/passwd}\n",
        "SELECT 1",
        "x",
    );
    f.add(
        "climbing",
        "engine-options: {store: conversations, query: ../../secret.sql}\n",
        "SELECT 1",
        "x",
    );
    let host = f.host();
    assert!(host.skills().is_empty());
    // The two documents' diagnostics (not the notes on engines no document binds).
    let text: Vec<String> = host
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .filter(|d| d.contains("SKILL.md"))
        .collect();
    assert_eq!(text.len(), 2, "{text:#?}");
    for d in &text {
        assert!(d.contains("outside the skill folder"), "{d}");
        assert!(!d.contains("root:") && !d.contains("hunter2secret"), "{d}");
    }
}

#[cfg(unix)]
#[test]
fn symlinks_leave_the_skill_folder_neither_as_query_template_nor_resource() {
    let f = Folder::new();
    let outside = f.dir.path().join("outside.txt");
    fs_err::write(&outside, "SELECT 'leaked-content' AS x").unwrap();
    let d = f.add(
        "linked",
        "engine-options: {store: conversations, query: link.sql}\n",
        "SELECT 1",
        "x",
    );
    std::os::unix::fs::symlink(&outside, d.join("link.sql")).unwrap();
    let t = f.add(
        "linked-template",
        "engine-options: {store: conversations}\ntemplate: t.j2\n",
        "SELECT 1",
        "x",
    );
    std::os::unix::fs::symlink(&outside, t.join("t.j2")).unwrap();
    let host = f.host();
    assert!(host.skills().is_empty(), "{:?}", host.diagnostics());
    // The documents' diagnostics (not the notes on engines no document binds).
    for d in host
        .diagnostics()
        .iter()
        .filter(|d| d.file.ends_with("SKILL.md"))
    {
        let text = d.to_string();
        assert!(text.contains("outside the skill folder"), "{text}");
        assert!(!text.contains("leaked-content"), "{text}");
    }
    // As a resource: the link inside a valid skill's folder is not served.
    let ok = f.add(
        "ok",
        "engine-options: {store: conversations}\n",
        "SELECT 1 AS n",
        "{{ data.count }}",
    );
    std::os::unix::fs::symlink(&outside, ok.join("notes.md")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ok.join("passwd.md")).unwrap();
    fs_err::write(ok.join("real.md"), "inside").unwrap();
    let host = f.host();
    let server = skills::mcp::SkillServer::new(std::sync::Arc::new(host));
    let uris = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            use rmcp::ServiceExt;
            let (client_io, server_io) = tokio::io::duplex(64 * 1024);
            tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
            let client = ().serve(client_io).await.unwrap();
            let listed = client.list_all_resources().await.unwrap();
            let read = client
                .read_resource(rmcp::model::ReadResourceRequestParams::new(
                    "skill://ok/notes.md",
                ))
                .await;
            assert!(read.is_err(), "the linked file was served: {read:?}");
            client.cancel().await.unwrap();
            listed
                .into_iter()
                .map(|r| r.uri.clone())
                .collect::<Vec<_>>()
        });
    assert!(uris.contains(&"skill://ok/real.md".to_owned()), "{uris:?}");
    assert!(
        !uris
            .iter()
            .any(|u| u.ends_with("notes.md") || u.ends_with("passwd.md")),
        "{uris:?}"
    );
}

#[test]
fn template_with_nested_range_loops_fails_with_the_render_budget() {
    let f = Folder::new();
    f.add(
        "loops",
        "engine-options: {store: conversations}\n",
        "SELECT 1 AS n",
        "{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}",
    );
    let host = f.host();
    let start = Instant::now();
    let err = host.call("loops", json!({})).unwrap_err();
    assert!(matches!(err, CallError::Render { .. }), "{err}");
    assert!(format!("{err:#}").contains("render budget"), "{err:#}");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn deeply_nested_yaml_document_is_rejected_in_milliseconds_with_the_file_named() {
    let f = Folder::new();
    let d = f.skills().join("deep");
    fs_err::create_dir_all(&d).unwrap();
    fs_err::write(
        d.join("SKILL.md"),
        format!(
            "---\nname: deep\ndescription: x\nengine: sql\nmetadata: {}{}\n---\n# deep\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    )
    .unwrap();
    let start = Instant::now();
    let host = f.host();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    let d = &host.diagnostics()[0];
    assert!(d.file.ends_with(Path::new("deep/SKILL.md")), "{d}");
    assert!(d.reason.contains("nested deeper than"), "{d}");
    assert_eq!(d.line, Some(5));
}

#[test]
fn nul_inside_term_is_refused_not_dropped() {
    let f = Folder::new();
    f.add(
        "plain",
        "engine-options: {store: conversations}\n",
        "SELECT $term AS t",
        "{{ data.rows[0].t }}",
    );
    let host = f.host();
    match host.call("plain", json!({"term": "a\u{0}b"})) {
        Err(CallError::InvalidArguments { errors, .. }) => {
            assert_eq!(errors[0].argument, "term");
            assert!(errors[0].reason.contains("NUL"), "{}", errors[0].reason);
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert_eq!(
        host.call("plain", json!({"term": "ab"})).unwrap().text,
        "ab"
    );
}

#[test]
fn long_term_is_refused_by_its_declared_max_length() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("skills"),
        Context::new(StorePaths::in_dir(dir.path())),
    );
    let start = Instant::now();
    match host.call("search-conversations", json!({"term": "x".repeat(100_000)})) {
        Err(CallError::InvalidArguments { errors, .. }) => {
            assert_eq!(errors[0].argument, "term");
            assert!(errors[0].reason.contains("1000"), "{}", errors[0].reason);
            assert!(errors[0].reason.len() < 100);
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn every_bundled_free_text_argument_declares_max_length() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("skills"),
        Context::new(StorePaths::in_dir(dir.path())),
    );
    let mut missing = Vec::new();
    for skill in host.skills() {
        let props = skill.meta.input_schema["properties"].as_object().unwrap();
        for (name, prop) in props {
            let free_text = prop["type"] == "string" && prop.get("enum").is_none();
            if free_text
                && prop
                    .get("maxLength")
                    .and_then(serde_json::Value::as_u64)
                    .is_none()
            {
                missing.push(format!("{}.{name}", skill.name()));
            }
        }
    }
    assert!(missing.is_empty(), "no maxLength: {missing:?}");
}
