//! MCP exposure with real clients: the built `skills serve` runs as a child process
//! and rmcp's client drives it over stdio and over streamable HTTP on loopback.
//! Tool failures must come back as `isError` results naming the argument, never as
//! protocol errors.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::TimeZone;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use skills::ingest::Message;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

use common::mcp::{call, text, Client};

const TOOL: &str = "search_conversations";

fn message(conv: &str, index: i64, role: &str, day: u32, content: &str) -> Message {
    Message {
        project: Some("/work/demo".into()),
        timestamp: chrono::Utc
            .with_ymd_and_hms(2026, 3, day, 12, 0, 0)
            .unwrap(),
        role: role.into(),
        ..common::message(conv, index, content)
    }
}

/// A data folder with a few conversations: "rust" appears in 3 messages (2 user).
fn data_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store = ConversationStore::open_rw(&StorePaths::in_dir(tmp.path()).conversations).unwrap();
    store
        .insert(&[
            message("c1", 0, "user", 1, "How do I write an MCP server in Rust?"),
            message(
                "c1",
                1,
                "assistant",
                1,
                "Use rmcp, the Rust SDK | it has a ServerHandler trait.",
            ),
            message("c2", 0, "user", 2, "Rust borrow checker question: why?"),
            message("c2", 1, "assistant", 2, "Because of aliasing rules."),
            message("c3", 0, "user", 3, "What is DuckDB?"),
        ])
        .unwrap();
    tmp
}

fn serve_command(data: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skills"));
    cmd.args(["serve", "--no-ingest"])
        .args(extra)
        .env("SKILLS_DIR", common::repo_skills())
        .env("SKILLS_DATA_DIR", data);
    cmd
}

/// The checks every transport must pass, then the client's end.
async fn exercise(client: Client) {
    let tools = check_tools(&client).await;
    check_calls(&client, &tools).await;
    check_resources(&client).await;
    client.cancel().await.unwrap();
}

/// [`exercise`] after a first `tools/list`, printing how long `transport` took from
/// `started` (before the server was spawned) to answer it.
async fn exercise_timed(transport: &str, started: Instant, client: Client) {
    client.list_all_tools().await.unwrap();
    eprintln!(
        "{transport}: spawn → initialize → first tools/list in {} ms",
        started.elapsed().as_millis()
    );
    exercise(client).await;
}

/// tools/list: one tool per skill, deterministic order, strict-client schemas.
async fn check_tools(client: &Client) -> Vec<rmcp::model::Tool> {
    let info = client.peer_info().unwrap().server_info.clone().unwrap();
    assert_eq!(info.name, "skills");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));

    // tools/list: one tool per skill, deterministic order, strict-client schemas.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&TOOL), "{names:?}");
    assert_eq!(
        client.list_all_tools().await.unwrap(),
        tools,
        "tools/list is deterministic"
    );
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(schema["type"], "object", "{}: {schema}", tool.name);
        let flat = schema.to_string();
        assert!(
            !flat.contains("$ref") && !flat.contains("$defs"),
            "{}: {flat}",
            tool.name
        );
        assert!(
            !flat.contains(r#""null"]"#),
            "{}: nullable type union in {flat}",
            tool.name
        );
        let ann = tool.annotations.as_ref().unwrap();
        assert_eq!(ann.open_world_hint, Some(false), "{}", tool.name);
        assert!(
            ann.read_only_hint.is_some() && ann.idempotent_hint.is_some(),
            "{}",
            tool.name
        );
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    let search = tools.iter().find(|t| t.name == TOOL).unwrap();
    assert_eq!(search.title.as_deref(), Some("Search conversations"));
    let ann = search.annotations.as_ref().unwrap();
    assert_eq!(
        (ann.read_only_hint, ann.idempotent_hint),
        (Some(true), Some(true))
    );
    let props = search.input_schema["properties"].as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        ["term", "limit", "role", "project", "machine", "user"]
    );
    assert_eq!(search.output_schema.as_ref().unwrap()["type"], "object");

    tools
}

/// tools/call with good and bad arguments.
async fn check_calls(client: &Client, tools: &[rmcp::model::Tool]) {
    // Good call: structured rows plus the rendered table.
    let result = call(client, TOOL, json!({"term": "rust", "limit": 5})).await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let data = result.structured_content.clone().unwrap();
    assert_eq!(data["count"], 3, "{data}");
    let convs = common::strings(&data["rows"], "conversation_id");
    assert_eq!(convs, ["c2", "c1", "c1"], "newest first");
    let table = text(&result);
    assert!(
        table.starts_with("| Date | Source | Role | conv_id |"),
        "{table}"
    );
    assert!(table.contains("the Rust SDK \\| it has"), "{table}");
    let users = call(client, TOOL, json!({"term": "rust", "role": "user"})).await;
    assert_eq!(users.structured_content.unwrap()["count"], 2);
    let none = call(client, TOOL, json!({"term": "no-such-word"})).await;
    assert_eq!(
        text(&none),
        "No conversations found containing 'no-such-word'"
    );

    // Bad calls: tool results with isError, naming the argument and what was expected.
    let wrong_type = call(client, TOOL, json!({"term": "rust", "limit": "five"})).await;
    assert_eq!(wrong_type.is_error, Some(true));
    let msg = text(&wrong_type);
    assert!(msg.contains("`limit`") && msg.contains("integer"), "{msg}");
    let out_of_range = call(client, TOOL, json!({"limit": 0})).await;
    assert!(out_of_range.is_error == Some(true) && text(&out_of_range).contains("`limit`"));
    let bad_enum = call(client, TOOL, json!({"role": "system"})).await;
    assert!(bad_enum.is_error == Some(true) && text(&bad_enum).contains("`role`"));
    for tool in tools {
        let unknown = call(client, &tool.name, json!({"no_such_arg": 1})).await;
        assert_eq!(unknown.is_error, Some(true), "{}", tool.name);
        let msg = text(&unknown);
        assert!(
            msg.contains("`no_such_arg`") && msg.contains("expected one of"),
            "{}: {msg}",
            tool.name
        );
    }
    let missing_tool = call(client, "no_such_tool", json!({})).await;
    assert_eq!(missing_tool.is_error, Some(true));
    assert!(text(&missing_tool).contains("`no_such_tool`") && text(&missing_tool).contains(TOOL));
}

/// Resources: each skill's SKILL.md, readable as markdown.
async fn check_resources(client: &Client) {
    let resources = client.list_all_resources().await.unwrap();
    let uri = "skill://search-conversations/SKILL.md";
    let doc = resources.iter().find(|r| r.uri == uri).unwrap();
    assert_eq!(doc.mime_type.as_deref(), Some("text/markdown"));
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents {
        text, mime_type, ..
    } = &read.contents[0]
    else {
        panic!("not text")
    };
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(
        text,
        &std::fs::read_to_string(common::repo_skills().join("search-conversations/SKILL.md"))
            .unwrap()
    );
    assert!(client
        .read_resource(ReadResourceRequestParams::new("skill://nope/SKILL.md"))
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_client_lists_calls_and_reads() {
    let data = data_dir();
    let started = Instant::now();
    let (transport, _stderr) = TokioChildProcess::builder(serve_command(data.path(), &[]))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    exercise_timed("stdio", started, ().serve(transport).await.unwrap()).await;
}

/// A running server does not keep `skills ingest` out of the store (DuckDB allows one
/// writing process or several reading ones), and its next call sees what was imported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_runs_while_the_server_is_up_and_the_server_sees_it() {
    let data = data_dir();
    let (transport, _stderr) = TokioChildProcess::builder(serve_command(data.path(), &[]))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let before = call(&client, TOOL, json!({"term": "okapi"})).await;
    assert_eq!(before.is_error, Some(false), "{}", text(&before));
    assert!(!text(&before).contains("Where do okapi live?"));

    let transcript = data.path().join("new.jsonl");
    fs_err::write(
        &transcript,
        r#"{"role":"user","content":"Where do okapi live?","timestamp":"2026-03-09T10:00:00Z"}"#,
    )
    .unwrap();
    let ingest = tokio::process::Command::new(env!("CARGO_BIN_EXE_skills"))
        .arg("ingest")
        .arg(&transcript)
        .env("SKILLS_DATA_DIR", data.path())
        .output()
        .await
        .unwrap();
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );

    let after = call(&client, TOOL, json!({"term": "okapi"})).await;
    assert!(
        text(&after).contains("Where do okapi live?"),
        "{}",
        text(&after)
    );
    client.cancel().await.unwrap();
}

/// Every byte the stdio server writes to stdout is a JSON-RPC message.
#[test]
fn stdio_stdout_carries_only_json_rpc() {
    let data = data_dir();
    // Every line it writes is parsed as JSON: the session panics on any other.
    let mut session = common::serve::StdioSession::new(common::serve::spawn_stdio(
        &common::repo_skills(),
        data.path(),
    ));
    let mut seen = vec![session.initialize(1)];
    session.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    session.call_tool(3, TOOL, json!({"limit": true}));
    seen.push(session.next());
    seen.push(session.next());
    session.close_stdin();
    // Keep reading to EOF: closing stdout early would make a late write fail the server.
    seen.extend(session.rest());
    assert!(
        session.child.wait().unwrap().success(),
        "serve exits 0 when stdin closes"
    );
    // The server answers requests concurrently: find each answer by its id, not its place.
    let answer = |id: u64| {
        seen.iter()
            .find(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("no answer to request {id} in {seen:?}"))
    };
    assert_eq!(
        answer(2)["result"]["tools"][0]["inputSchema"]["type"],
        "object",
        "{}",
        answer(2)
    );
    let call = answer(3);
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert!(call["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("`limit`"));
}

/// A running `skills serve --http 127.0.0.1:0` over [`data_dir`], killed on drop.
struct HttpServer {
    /// Its MCP endpoint.
    url: String,
    _server: common::serve::HttpServer,
    _data: tempfile::TempDir,
}

impl HttpServer {
    async fn start(extra: &[&str]) -> Self {
        let data = data_dir();
        let cmd = common::serve::HttpServer::command(&common::repo_skills(), data.path(), extra);
        let server = common::serve::HttpServer::start(cmd);
        Self {
            url: server.mcp.clone(),
            _server: server,
            _data: data,
        }
    }

    async fn client(&self) -> Client {
        ().serve(StreamableHttpClientTransport::from_uri(self.url.clone()))
            .await
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_client_lists_calls_and_reads() {
    let started = Instant::now();
    let server = HttpServer::start(&[]).await;
    assert!(
        server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"),
        "{}",
        server.url
    );
    exercise_timed("http", started, server.client().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rejects_foreign_host_and_origin() {
    let server = HttpServer::start(&[]).await;
    let http = reqwest::Client::new();
    let init = common::serve::initialize_request(1);
    let post = |url: &str| {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&init)
    };
    let ok = post(&server.url).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    for (header, value, status, what) in [
        ("host", "evil.example:80", 403, "foreign Host header"),
        (
            "origin",
            "http://evil.example",
            403,
            "foreign Origin header",
        ),
        (
            "origin",
            "http://localhost:6274",
            200,
            "loopback Origin (e.g. MCP Inspector)",
        ),
    ] {
        let answer = post(&server.url)
            .header(header, value)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{what}");
    }
    let elsewhere = post(&server.url.replace("/mcp", "/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 404);
}

#[test]
fn http_refuses_non_loopback_bind_without_allow_remote() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["serve", "--http", "0.0.0.0:0"])
        .env("SKILLS_DIR", common::repo_skills())
        .env("SKILLS_DATA_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("non-loopback") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// 1,000 concurrent tool calls (10 sessions × 100 in flight) over HTTP on loopback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_load_1000_concurrent_calls() {
    const SESSIONS: usize = 10;
    const PER_SESSION: usize = 100;
    let server = HttpServer::start(&[]).await;
    let mut clients = Vec::new();
    for _ in 0..SESSIONS {
        clients.push(server.client().await);
    }
    let cases = [
        (json!({"term": "rust", "limit": 5}), 3),
        (json!({"term": "rust", "limit": 1}), 1),
        (json!({"term": "rust", "role": "user"}), 2),
        (json!({"term": "duckdb"}), 1),
        (json!({"term": "zzz"}), 0),
    ];
    let started = Instant::now();
    let run = futures::future::join_all(clients.iter().enumerate().flat_map(|(s, client)| {
        let cases = &cases;
        (0..PER_SESSION).map(move |i| async move {
            let (arguments, expected) = &cases[(s + i) % cases.len()];
            let result = call(client, TOOL, arguments.clone()).await;
            assert_eq!(result.is_error, Some(false), "{}", text(&result));
            assert_eq!(
                result.structured_content.unwrap()["count"],
                *expected,
                "{arguments}"
            );
        })
    }));
    let done = tokio::time::timeout(Duration::from_secs(120), run).await;
    let elapsed = started.elapsed();
    assert!(done.is_ok(), "1,000 calls did not finish within 120 s");
    assert_eq!(done.unwrap().len(), SESSIONS * PER_SESSION);
    eprintln!(
        "http load: {} concurrent tools/call in {} ms ({:.0} calls/s)",
        SESSIONS * PER_SESSION,
        elapsed.as_millis(),
        f64::from(u32::try_from(SESSIONS * PER_SESSION).unwrap()) / elapsed.as_secs_f64()
    );
    for client in clients {
        client.cancel().await.unwrap();
    }
}

/// The same server in-process over `tokio::io::duplex`: no binary, no sockets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_duplex_server() {
    use skills::mcp::SkillServer;
    let data = data_dir();
    let host = common::bundled_host(data.path());
    let server = SkillServer::new(std::sync::Arc::new(host));
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let running =
        tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
    exercise(().serve(client_io).await.unwrap()).await;
    running.await.unwrap().unwrap();
}
