//! Hostile MCP clients (issue 19, parts 3 and 4): the built `skills serve` never goes
//! silent on stdio, exits promptly when stdin closes, and its HTTP transport answers
//! parse failures as JSON-RPC, refuses repeated `Host`/`Origin` headers and caps
//! sessions. One regression test per defect of the issue.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

fn empty_store() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store = ConversationStore::open_rw(&StorePaths::in_dir(tmp.path()).conversations).unwrap();
    store.close().unwrap();
    tmp
}

use common::serve::{initialize_request, spawn_stdio, StdioSession};

#[test]
fn garbage_surrogates_1e400_deep_nesting_and_oversize_lines_are_answered_on_stdio() {
    let data = empty_store();
    let mut child = spawn_stdio(&common::repo_skills(), data.path());
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::BufReader::new(stderr)
            .read_to_string(&mut text)
            .unwrap();
        text
    });
    let mut session = StdioSession::new(child);
    // The initialize answer first: rmcp answers it, the gate the bad lines below.
    let mut seen = vec![session.initialize(0)];
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(17 * 1024 * 1024)
    );
    let bad_lines: Vec<(String, i64)> = vec![
        ("this is not json".into(), -32700),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}"#.into(),
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#.into(),
            -32700,
        ),
        (deep, -32700),
        (huge, -32600),
        ("[]".into(), -32600),
        (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.into(), -32600),
    ];
    for (line, _) in &bad_lines {
        session.send_line(line);
    }
    session
        .send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}}));
    session.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    session.close_stdin();
    seen.extend(session.rest());
    assert!(session.child.wait().unwrap().success());
    // initialize, then one answer per bad line, then -32602 and the ping.
    assert_eq!(seen.len(), 1 + bad_lines.len() + 2, "{seen:#?}");
    for (i, (line, code)) in bad_lines.iter().enumerate() {
        let answer = &seen[1 + i];
        assert_eq!(answer["error"]["code"], *code, "line {i}: {answer}");
        // JSON-RPC 2.0: the id is null unless it could be read from the request (the
        // well-formed object with the wrong `jsonrpc` version keeps its id).
        let id = if line.starts_with(r#"{"jsonrpc":"1.0""#) {
            json!(1)
        } else {
            Value::Null
        };
        assert_eq!(answer["id"], id, "line {i}: {answer}");
    }
    let params = &seen[1 + bad_lines.len()];
    assert_eq!(params["error"]["code"], -32602, "{params}");
    assert_eq!(params["id"], 7);
    assert_eq!(seen.last().unwrap()["id"], 8);
    assert!(seen.last().unwrap().get("result").is_some());
    let log = log.join().unwrap();
    assert!(log.contains("stdin line 3: Parse error"), "{log}");
}

#[test]
fn stdio_server_exits_promptly_when_stdin_closes_during_a_busy_call() {
    let data = empty_store();
    let skills = slow_skill();
    let mut session = StdioSession::new(spawn_stdio(skills.path(), data.path()));
    session.initialize(0);
    session.call_tool(1, "slow", json!({}));
    std::thread::sleep(Duration::from_millis(500));
    let closed = Instant::now();
    session.close_stdin();
    loop {
        if session.child.try_wait().unwrap().is_some() {
            break;
        }
        // Well before the slow call's own 60 s timeout: it was cancelled, not waited
        // for (a hang guard, generous for a loaded machine, not a speed target).
        if closed.elapsed() > Duration::from_secs(30) {
            session.child.kill().unwrap();
            panic!("serve still running 30 s after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut log = String::new();
    session
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(
        log.contains("stdin closed; the call still running was cancelled"),
        "{log}"
    );
}

/// A skills folder with skill `slow`: a DuckDB query that runs for minutes (its own
/// `timeout-ms` is a minute), and `quick`.
fn slow_skill() -> tempfile::TempDir {
    let skills = tempfile::tempdir().unwrap();
    for (name, query) in [
        ("slow", "SELECT count(*) AS n FROM range(1000000000000) a"),
        ("quick", "SELECT 1 AS n"),
    ] {
        common::sql_skill(
            skills.path(),
            name,
            "reads: [conversations]\nengine-options: {store: conversations, timeout-ms: 60000}\ninput-schema:\n  type: object\n  properties: {}\n",
            query,
            "{{ data.count }}",
        );
    }
    skills
}

/// CPU time (user + system) the process has used, in seconds (Linux `/proc`, 100
/// ticks a second).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5), counted from the state (field 3) here.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    #[allow(clippy::cast_precision_loss)]
    let seconds = ticks as f64 / 100.0;
    seconds
}

/// CPU seconds `pid` uses during `window`.
/// Waits until process `pid` has used 0.2 CPU seconds more than when called: the slow
/// call runs. Not a timed window: a loaded machine gets there later, not never.
fn until_busy(pid: u32) {
    let before = cpu_seconds(pid);
    let started = Instant::now();
    while cpu_seconds(pid) - before < 0.2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the slow call is not running (under 0.2 CPU s in 60 s)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cpu_during(pid: u32, window: Duration) -> f64 {
    let before = cpu_seconds(pid);
    std::thread::sleep(window);
    cpu_seconds(pid) - before
}

/// Below this many CPU seconds in [`CPU_WINDOW`] the server counts as idle; the slow
/// query, running, uses about one per second per core.
const IDLE_CPU: f64 = 0.5;
const CPU_WINDOW: Duration = Duration::from_secs(3);

#[test]
fn stdio_notifications_cancelled_stops_the_calls_work() {
    let data = empty_store();
    let skills = slow_skill();
    let mut child = spawn_stdio(skills.path(), data.path());
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        std::io::copy(&mut std::io::BufReader::new(stderr), &mut std::io::sink())
    });
    let mut session = StdioSession::new(child);
    session.initialize(0);
    session.call_tool(1, "slow", json!({}));
    let pid = session.child.id();
    until_busy(pid);
    session.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}}));
    std::thread::sleep(Duration::from_secs(1));
    let after = cpu_during(pid, CPU_WINDOW);
    // The server still answers.
    session.call_tool(2, "quick", json!({}));
    let answer = session.next();
    session.close_stdin();
    let _ = session.child.kill();
    let _ = session.child.wait();
    assert!(
        after < IDLE_CPU,
        "the cancelled call kept working: {after} CPU s in {CPU_WINDOW:?}"
    );
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["count"], 1,
        "{answer}"
    );
}

#[test]
fn http_client_disconnecting_mid_call_stops_the_calls_work() {
    let skills = slow_skill();
    let server = HttpServer::start_in(skills.path());
    let pid = server.server.child.id();
    let init = initialize_request(1).to_string();
    let (status, head, _) = server.raw_with_headers(JSON_HEADERS, &init);
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {head}"));
    let headers =
        format!("{JSON_HEADERS}Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, _) = server.raw_with_headers(&headers, &initialized);
    assert_eq!(status, 202);
    // The slow call, on a connection this test then drops without reading the answer.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
        .to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\n{headers}Content-Length: {}\r\n\r\n{call}",
        call.len()
    )
    .unwrap();
    until_busy(pid);
    drop(stream);
    std::thread::sleep(Duration::from_secs(1));
    let after = cpu_during(pid, CPU_WINDOW);
    assert!(
        after < IDLE_CPU,
        "the call kept working after its client left: {after} CPU s in {CPU_WINDOW:?}"
    );
    // The session and the server still answer.
    let quick = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "quick", "arguments": {}}})
        .to_string();
    let (status, _, body) = server.raw_with_headers(&headers, &quick);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"count\":1"), "{body}");
}

/// A running `skills serve --http 127.0.0.1:0` over an empty store, killed on drop.
struct HttpServer {
    server: common::serve::HttpServer,
    port: u16,
    _data: tempfile::TempDir,
}

impl HttpServer {
    fn start() -> Self {
        Self::start_in(&common::repo_skills())
    }

    fn start_in(skills: &Path) -> Self {
        let data = empty_store();
        let server = common::serve::HttpServer::start(common::serve::HttpServer::command(
            skills,
            data.path(),
            &[],
        ));
        Self {
            port: server.port(),
            server,
            _data: data,
        }
    }

    fn raw(&self, head: &str, body: &str) -> (u16, String, String) {
        let (status, head, body) = self.raw_with_headers(head, body);
        let content_type = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-type:")
                    .map(|v| v.trim().to_owned())
            })
            .unwrap_or_default();
        (status, content_type, body)
    }

    /// Sends one raw HTTP/1.1 request; returns (status, response head, body).
    fn raw_with_headers(&self, head: &str, body: &str) -> (u16, String, String) {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\n{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let (head, body) = response
            .split_once("\r\n\r\n")
            .map(|(h, b)| (h.to_owned(), b.to_owned()))
            .unwrap_or_default();
        (status, head, body)
    }
}

const JSON_HEADERS: &str =
    "Host: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";

#[test]
fn http_bodies_that_fail_to_parse_get_json_rpc_errors_not_plain_text() {
    let server = HttpServer::start();
    for body in [
        "not json at all",
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#,
    ] {
        let (status, content_type, text) = server.raw(JSON_HEADERS, body);
        assert!((400..500).contains(&status), "{status} {text}");
        assert!(
            content_type.starts_with("application/json"),
            "{content_type}: {text}"
        );
        let value: Value =
            serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(value["id"], Value::Null, "{value}");
        assert!(
            value["error"]["code"].as_i64().unwrap() <= -32600,
            "{value}"
        );
    }
}

#[test]
fn http_duplicate_host_or_origin_headers_are_refused() {
    let server = HttpServer::start();
    let init = initialize_request(1).to_string();
    let (ok, _, _) = server.raw(JSON_HEADERS, &init);
    assert_eq!(ok, 200);
    let two_hosts = format!("{JSON_HEADERS}Host: evil.example\r\n");
    let (status, _, body) = server.raw(&two_hosts, &init);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("-32600") && body.to_lowercase().contains("host"),
        "{body}"
    );
    let two_origins =
        format!("{JSON_HEADERS}Origin: http://localhost:1\r\nOrigin: http://evil.example\r\n");
    let (status, _, body) = server.raw(&two_origins, &init);
    assert_eq!(status, 400, "{body}");
}

#[test]
fn http_initialize_flood_is_capped_at_max_sessions() {
    let server = HttpServer::start();
    let init = initialize_request(1).to_string();
    let cap = skills::mcp::http_guard::MAX_SESSIONS;
    let mut refused = 0;
    for _ in 0..cap + 20 {
        let (status, _, body) = server.raw(JSON_HEADERS, &init);
        match status {
            200 => {}
            503 => {
                assert!(body.contains("sessions"), "{body}");
                refused += 1;
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(refused, 20);
}
