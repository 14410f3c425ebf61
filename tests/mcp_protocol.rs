//! Hostile MCP clients (issue 19, parts 3 and 4): the built `skills serve` never goes
//! silent on stdio, exits promptly when stdin closes, and its HTTP transport answers
//! parse failures as JSON-RPC, refuses repeated `Host`/`Origin` headers and caps
//! sessions. One regression test per defect of the issue.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

fn repo_skills() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
}

fn empty_store() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let store = ConversationStore::open_rw(&StorePaths::in_dir(tmp.path()).conversations).unwrap();
    store.close().unwrap();
    tmp
}

fn spawn_stdio(skills: &Path, data: &Path) -> Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["serve"])
        .env("SKILLS_DIR", skills)
        .env("SKILLS_DATA_DIR", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn initialize(stdin: &mut impl Write) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
}

#[test]
fn garbage_surrogates_1e400_deep_nesting_and_oversize_lines_are_answered_on_stdio() {
    let data = empty_store();
    let mut child = spawn_stdio(&repo_skills(), data.path());
    let mut stdin = child.stdin.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::BufReader::new(stderr)
            .read_to_string(&mut text)
            .unwrap();
        text
    });
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    initialize(&mut stdin);
    stdin.flush().unwrap();
    // The initialize answer first: rmcp answers it, the gate the bad lines below.
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let lines = std::thread::spawn(move || {
        let mut seen = vec![serde_json::from_str::<Value>(&first).unwrap()];
        for line in stdout.lines() {
            seen.push(serde_json::from_str::<Value>(&line.unwrap()).unwrap());
        }
        seen
    });
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
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}})
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})
    )
    .unwrap();
    stdin.flush().unwrap();
    drop(stdin);
    let seen = lines.join().unwrap();
    assert!(child.wait().unwrap().success());
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
    let skills = tempfile::tempdir().unwrap();
    let d = skills.path().join("slow");
    fs_err::create_dir_all(&d).unwrap();
    fs_err::write(
        d.join("SKILL.md"),
        "---\nname: slow\ndescription: a query that runs for a minute\nengine: sql\nreads: [conversations]\nengine-options: {store: conversations, timeout-ms: 60000}\ninput-schema:\n  type: object\n  properties: {}\n---\n# slow\n",
    )
    .unwrap();
    fs_err::write(
        d.join("query.sql"),
        "SELECT count(*) AS n FROM range(1000000000000) a",
    )
    .unwrap();
    fs_err::write(d.join("template.md.j2"), "{{ data.count }}").unwrap();
    let mut child = spawn_stdio(skills.path(), data.path());
    let mut stdin = child.stdin.take().unwrap();
    initialize(&mut stdin);
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let closed = Instant::now();
    drop(stdin);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if closed.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("serve still running 10 s after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = closed.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "exited {took:?} after stdin closed"
    );
}

/// A running `skills serve --http 127.0.0.1:0`, killed on drop.
struct HttpServer {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl HttpServer {
    fn start() -> Self {
        let data = empty_store();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_skills"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .env("SKILLS_DIR", repo_skills())
            .env("SKILLS_DATA_DIR", data.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines.next().expect("serve printed no address").unwrap();
            if let Some(at) = line.find("http://127.0.0.1:") {
                let rest = &line[at + "http://127.0.0.1:".len()..];
                break rest.split('/').next().unwrap().parse().unwrap();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            port,
            _data: data,
        }
    }

    /// Sends one raw HTTP/1.1 request; returns (status, content type, body).
    fn raw(&self, head: &str, body: &str) -> (u16, String, String) {
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
        let content_type = response
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-type:")
                    .map(|v| v.trim().to_owned())
            })
            .unwrap_or_default();
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, content_type, body)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
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
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let cap = skills::runtime::http_guard::MAX_SESSIONS;
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
