//! `skills serve --http` against hostile clients, over raw TCP so every byte of the
//! request is the test's: the one `Host`/`Origin` guard (one table, run against `/mcp`
//! and the pages), a connection flood under a low open-file limit, and a request whose
//! headers never finish.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::serve::{spawn_logging_to, wait_for_log};

/// A running `skills serve --no-ingest --http 127.0.0.1:0`, with stderr in a file;
/// killed on drop.
struct Server {
    child: Child,
    port: u16,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Started by `sh -c 'ulimit -n LIMIT; exec skills serve …'` when `open_files` is
    /// given (soft and hard limit both).
    fn start(open_files: Option<u32>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        let limit = open_files.map_or(String::new(), |n| format!("ulimit -n {n} && "));
        let child = spawn_logging_to(
            Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{limit}exec \"$0\" serve --no-ingest --http 127.0.0.1:0"
                ))
                .arg(common::cli::bin())
                .env("SKILLS_DIR", common::repo_skills())
                .env("SKILLS_DATA_DIR", dir.path().join("data"))
                .env("SKILLS_EMBEDDER", "none"),
            &stderr,
        );
        let address = "pages at http://127.0.0.1:";
        let text = wait_for_log(&stderr, address, Duration::from_secs(60));
        let rest = &text[text.find(address).unwrap() + address.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let port = digits.parse().unwrap();
        Self {
            child,
            port,
            stderr,
            _dir: dir,
        }
    }

    fn stderr_len(&self) -> u64 {
        std::fs::metadata(&self.stderr).map_or(0, |m| m.len())
    }

    /// CPU time (user + system) the server has used, from `/proc/PID/stat`.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after_name.split(' ').collect();
        // Fields 14 and 15 of stat(5) (utime, stime), here counted from field 3.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // SAFETY: sysconf reads a constant.
        let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap();
        Duration::from_millis(ticks * 1000 / per_second)
    }

    /// Sends `request` (with `{port}` replaced) and returns the status code, or `None`
    /// when no status line came within `wait`.
    fn status(&self, request: &str, wait: Duration) -> Option<u16> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(wait)).ok()?;
        stream
            .write_all(request.replace("{port}", &self.port.to_string()).as_bytes())
            .ok()?;
        status_line(&mut stream)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A page request with these `Host` and `Origin` headers.
fn page(host: &str, origin: Option<&str>) -> String {
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    format!("GET / HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n")
}

/// An MCP `initialize` with these `Host` and `Origin` headers.
fn initialize(host: &str, origin: Option<&str>) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn one_host_and_origin_table_holds_for_mcp_and_the_pages() {
    let server = Server::start(None);
    // (Host, Origin, accepted); `{port}` is the server's port.
    let table: &[(&str, Option<&str>, bool)] = &[
        ("127.0.0.1:{port}", None, true),
        ("localhost:{port}", None, true),
        ("LOCALHOST:{port}", None, true),
        ("[::1]:{port}", None, true),
        ("localhost", None, true),
        ("127.0.0.1:{port}", Some("http://127.0.0.1:{port}"), true),
        ("127.0.0.1:{port}", Some("http://LOCALHOST:{port}"), true),
        ("127.0.0.1:{port}", Some("https://[::1]"), true),
        ("[::1]evil.example", None, false),
        ("localhost:evil", None, false),
        ("127.0.0.1:{port}@evil.example", None, false),
        ("evil.example:{port}", None, false),
        ("localhost.evil.example", None, false),
        ("127.0.0.1 :{port}", None, false),
        ("127.0.0.1:{port}", Some("http://evil.example"), false),
        ("127.0.0.1:{port}", Some("null"), false),
        (
            "127.0.0.1:{port}",
            Some("http://localhost:{port}@evil.example"),
            false,
        ),
        ("127.0.0.1:{port}", Some("http://localhost:{port}/x"), false),
    ];
    let wait = Duration::from_secs(20);
    let mut wrong = Vec::new();
    for &(host, origin, accepted) in table {
        for (what, request) in [
            ("pages", page(host, origin)),
            ("/mcp", initialize(host, origin)),
        ] {
            let status = server.status(&request, wait);
            let ok = if accepted {
                status == Some(200)
            } else {
                status == Some(403)
            };
            if !ok {
                wrong.push(format!(
                    "{what}: Host `{host}`, Origin {origin:?}: status {status:?}, expected {}",
                    if accepted { "200" } else { "403" }
                ));
            }
        }
    }
    // A request with no Host at all (HTTP/1.0) is refused too.
    let status = server.status("GET / HTTP/1.0\r\n\r\n", wait);
    if status != Some(403) {
        wrong.push(format!("no Host: status {status:?}"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_flood_of_idle_connections_under_a_low_open_file_limit_degrades_gracefully() {
    let server = Server::start(Some(128));
    let mut flood = Vec::new();
    for _ in 0..200 {
        if let Ok(stream) = TcpStream::connect(("127.0.0.1", server.port)) {
            flood.push(stream);
        }
    }
    assert!(flood.len() >= 150, "the flood opened {}", flood.len());
    let cpu_before = server.cpu();
    let started = Instant::now();
    // During the flood the pages and /mcp still answer, at the first try: at the cap
    // the listener closes an idle flood connection, never the one just accepted,
    // whose request may not be read yet (issue 43: before, a fresh probe was closed so
    // about once in six runs).
    let answer = |request: &str| server.status(request, Duration::from_secs(30));
    for _ in 0..3 {
        let host = "127.0.0.1:{port}";
        assert_eq!(
            answer(&page(host, None)),
            Some(200),
            "a page during the flood"
        );
        assert_eq!(
            answer(&initialize(host, None)),
            Some(200),
            "/mcp during the flood"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let elapsed = started.elapsed();
    let cpu = server.cpu() - cpu_before;
    assert!(
        cpu < elapsed / 2,
        "the server used {cpu:?} of CPU in {elapsed:?} while flooded (busy loop?)"
    );
    let logged = server.stderr_len();
    assert!(
        logged < 16 * 1024,
        "stderr grew to {logged} bytes during the flood"
    );
    drop(flood);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        server.status(&page("localhost:{port}", None), Duration::from_secs(30)),
        Some(200),
        "a page after the flood"
    );
}

/// Sends `pieces` one by one, `pause` apart, on a new connection; returns the status
/// code, or `None` when the connection closed (or no status line came in 30 s).
fn slow_status(port: u16, pieces: &[String], pause: Duration) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(pause);
        }
        stream.write_all(piece.as_bytes()).ok()?;
    }
    status_line(&mut stream)
}

/// The status code of the response read from `stream`, or `None` when it closed (or
/// its read timeout passed) before the status line ended.
fn status_line(stream: &mut TcpStream) -> Option<u16> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

/// `request` cut into four pieces, the last one holding the end of the headers.
fn in_pieces(request: &str) -> Vec<String> {
    let end = request.find("\r\n\r\n").unwrap();
    let cuts = [0, end / 3, 2 * end / 3, end, request.len()];
    cuts.windows(2)
        .map(|w| request[w[0]..w[1]].to_owned())
        .collect()
}

/// Issue 43: while silent connections keep arriving (each past the cap makes the
/// listener close one), a request sent slowly, in pieces, is never the one closed: only
/// connections that sent nothing, or idle keep-alive ones, make room. Before, the
/// oldest connection without a request in flight was closed, and a request whose
/// headers were still arriving was one.
#[test]
fn a_slow_request_is_answered_while_silent_connections_keep_coming() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let server = Server::start(Some(128));
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut open = std::collections::VecDeque::new();
            let mut opened = 0usize;
            while !stop.load(Ordering::SeqCst) {
                if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
                    opened += 1;
                    open.push_back(stream);
                }
                // Held open, up to 300 at a time (the server's cap is 32).
                if open.len() > 300 {
                    open.pop_front();
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            opened
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let cpu_before = server.cpu();
    let started = Instant::now();
    let host = "127.0.0.1:{port}";
    let pause = Duration::from_millis(400);
    let fill = |r: String| r.replace("{port}", &port.to_string());
    let mut wrong = Vec::new();
    for round in 0..2 {
        let checks = [
            (
                "a page sent in pieces",
                slow_status(port, &in_pieces(&fill(page(host, None))), pause),
            ),
            (
                "/mcp sent in pieces",
                slow_status(port, &in_pieces(&fill(initialize(host, None))), pause),
            ),
            (
                "a page",
                server.status(&page(host, None), Duration::from_secs(30)),
            ),
            (
                "/mcp",
                server.status(&initialize(host, None), Duration::from_secs(30)),
            ),
        ];
        for (what, status) in checks {
            if status != Some(200) {
                wrong.push(format!(
                    "round {round}: {what} during the flood: status {status:?}"
                ));
            }
        }
    }
    let elapsed = started.elapsed();
    let cpu = server.cpu() - cpu_before;
    stop.store(true, Ordering::SeqCst);
    let opened = flood.join().unwrap();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(opened >= 500, "the flood opened only {opened} connections");
    // Accepting and closing flood connections costs some CPU; a busy loop costs a core.
    assert!(
        cpu < elapsed * 3 / 4,
        "the server used {cpu:?} of CPU in {elapsed:?} while flooded (busy loop?)"
    );
    let logged = server.stderr_len();
    assert!(
        logged < 16 * 1024,
        "stderr grew to {logged} bytes during the flood"
    );
}

#[test]
fn a_request_whose_headers_never_finish_is_closed() {
    let server = Server::start(None);
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", server.port).as_bytes())
        .unwrap();
    stream
        .set_read_timeout(Some(
            skills::listener::HEADER_READ_TIMEOUT + Duration::from_secs(10),
        ))
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let read = stream.read_to_end(&mut rest);
    assert!(
        read.is_ok(),
        "the connection was still open after {:?}: {read:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() >= skills::listener::HEADER_READ_TIMEOUT - Duration::from_secs(1),
        "closed after {:?}, before the header-read timeout",
        started.elapsed()
    );
}

/// Issue 43, "Done when": README's Security section states the limits as the code has
/// them — the header and keep-alive timeouts, the connection cap, the stored message
/// size cap — with setup's file-mode rule and redaction at store as the default.
#[test]
fn the_readme_security_section_states_the_limits_in_force() {
    use skills::listener::{
        connection_cap, HEADER_READ_TIMEOUT, KEEP_ALIVE_IDLE, MAX_CONNECTIONS, RESERVED_FDS,
    };
    let readme = std::fs::read_to_string(common::repo().join("README.md")).unwrap();
    let start = readme.find("## Security\n").unwrap();
    let end = readme[start + 1..]
        .find("\n## ")
        .map_or(readme.len(), |e| start + 1 + e);
    let security = &readme[start..end];
    let thousands = |n: usize| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let expected = [
        format!(
            "A request's headers must arrive within **{} s**",
            HEADER_READ_TIMEOUT.as_secs()
        ),
        format!(
            "a connection with no request in flight is closed after **{} s**",
            KEEP_ALIVE_IDLE.as_secs()
        ),
        format!("after {RESERVED_FDS} descriptors kept for the stores"),
        format!(
            "at most {} connections; {} under a limit of 128",
            thousands(MAX_CONNECTIONS),
            connection_cap(Some(128))
        ),
        format!(
            "One message stores at most {} characters",
            thousands(skills::ingest::MAX_STORED_CHARS)
        ),
        "**`skills setup` never widens a file's mode.**".to_owned(),
        "**Redacted at store, by default.**".to_owned(),
    ];
    let missing: Vec<&String> = expected
        .iter()
        .filter(|s| !security.contains(s.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "README's Security section does not say: {missing:#?}"
    );
}
