//! MCP exposure with real clients: the built `skills serve` runs as a child process
//! and rmcp's client drives it over stdio and over streamable HTTP on loopback.
//! Tool failures must come back as `isError` results naming the argument, never as
//! protocol errors.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use chrono::TimeZone;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, JsonObject, ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use skills::ingest::Message;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;
use tokio::io::{AsyncBufReadExt, BufReader};

type Client = RunningService<RoleClient, ()>;

const TOOL: &str = "search_conversations";

fn repo_skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
}

fn message(conv: &str, index: i64, role: &str, day: u32, content: &str) -> Message {
    Message {
        source: "claude-code".into(),
        model: None,
        project: Some("/work/demo".into()),
        conversation_id: conv.into(),
        conversation_title: None,
        message_id: format!("{conv}-{index}"),
        parent_id: None,
        msg_index: index,
        timestamp: chrono::Utc
            .with_ymd_and_hms(2026, 3, day, 12, 0, 0)
            .unwrap(),
        timestamp_is_fallback: false,
        role: role.into(),
        content_type: "text".into(),
        content: content.into(),
        has_attachment: false,
        has_citation: false,
        is_injected: false,
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
        .env("SKILLS_DIR", repo_skills())
        .env("SKILLS_DATA_DIR", data);
    cmd
}

fn args(value: &Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(&arguments)))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The checks every transport must pass.
async fn exercise(client: &Client) {
    let tools = check_tools(client).await;
    check_calls(client, &tools).await;
    check_resources(client).await;
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
    let convs: Vec<&str> = data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["conversation_id"].as_str().unwrap())
        .collect();
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
        &std::fs::read_to_string(repo_skills().join("search-conversations/SKILL.md")).unwrap()
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
    let client = ().serve(transport).await.unwrap();
    client.list_all_tools().await.unwrap();
    eprintln!(
        "stdio: spawn → initialize → first tools/list in {} ms",
        started.elapsed().as_millis()
    );
    exercise(&client).await;
    client.cancel().await.unwrap();
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
    use std::io::{BufRead, Write};
    let data = data_dir();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["serve", "--no-ingest"])
        .env("SKILLS_DIR", repo_skills())
        .env("SKILLS_DATA_DIR", data.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": TOOL, "arguments": {"limit": true}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    writeln!(stdin, "{list}\n{bad}").unwrap();
    stdin.flush().unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = stdout.lines();
    let mut seen = Vec::new();
    let mut read_one = |line: std::io::Result<String>| {
        let line = line.unwrap();
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {line}"));
        seen.push(msg);
    };
    for line in lines.by_ref().take(3) {
        read_one(line);
    }
    drop(stdin);
    // Keep reading to EOF: closing stdout early would make a late write fail the server.
    for line in lines {
        read_one(line);
    }
    assert!(
        child.wait().unwrap().success(),
        "serve exits 0 when stdin closes"
    );
    assert_eq!(
        seen[1]["result"]["tools"][0]["inputSchema"]["type"],
        "object"
    );
    assert_eq!(seen[2]["result"]["isError"], true, "{}", seen[2]);
    assert!(seen[2]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("`limit`"));
}

/// A running `skills serve --http 127.0.0.1:0`, killed on drop.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    _data: tempfile::TempDir,
}

impl HttpServer {
    async fn start(extra: &[&str]) -> Self {
        let data = data_dir();
        let mut args = vec!["--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = serve_command(data.path(), &args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(at) = line.find("http://") {
                    return line[at..].trim().to_owned();
                }
            }
            panic!("serve exited without printing its address")
        })
        .await
        .unwrap();
        // Keep draining stderr so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            url,
            _data: data,
        }
    }

    async fn client(&self) -> Client {
        ().serve(StreamableHttpClientTransport::from_uri(self.url.clone()))
            .await
            .unwrap()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
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
    let client = server.client().await;
    client.list_all_tools().await.unwrap();
    eprintln!(
        "http: spawn → initialize → first tools/list in {} ms",
        started.elapsed().as_millis()
    );
    exercise(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_rejects_foreign_host_and_origin() {
    let server = HttpServer::start(&[]).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let post = |url: &str| {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&init)
    };
    let ok = post(&server.url).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let rebound = post(&server.url)
        .header("host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403, "foreign Host header");
    let origin = post(&server.url)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(origin.status(), 403, "foreign Origin header");
    let local_origin = post(&server.url)
        .header("origin", "http://localhost:6274")
        .send()
        .await
        .unwrap();
    assert_eq!(
        local_origin.status(),
        200,
        "loopback Origin (e.g. MCP Inspector)"
    );
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
        .env("SKILLS_DIR", repo_skills())
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
    use skills::engines::Context;
    use skills::host::Host;
    use skills::mcp::SkillServer;
    let data = data_dir();
    let host = Host::load(
        &repo_skills(),
        Context::new(StorePaths::in_dir(data.path())),
    );
    let server = SkillServer::new(std::sync::Arc::new(host));
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let running =
        tokio::spawn(async move { server.serve(server_io).await.unwrap().waiting().await });
    let client = ().serve(client_io).await.unwrap();
    exercise(&client).await;
    client.cancel().await.unwrap();
    running.await.unwrap().unwrap();
}
