//! Running `skills serve`: over HTTP ([`HttpServer`]: started from a configured
//! command, its address read from the first stderr line naming one, killed on drop),
//! over stdio spoken to line by line ([`StdioSession`]), or with its stderr in a log
//! file a test waits on ([`spawn_logging_to`], [`wait_for_log`]).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `skills serve --no-ingest` on stdio for `skills` and `data`, stdin, stdout and
/// stderr piped: for tests that speak raw JSON-RPC lines.
pub fn spawn_stdio(skills: &std::path::Path, data: &std::path::Path) -> Child {
    super::cli::skills()
        .args(["serve", "--no-ingest"])
        .env("SKILLS_DIR", skills)
        .env("SKILLS_DATA_DIR", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Spawns `cmd` with its stderr written to the file `log` (created), stdout discarded
/// and stdin a pipe the returned child holds (so a stdio server waits for input
/// instead of ending): for a server whose log a test reads with [`wait_for_log`].
///
/// # Panics
/// When `log` cannot be created or `cmd` cannot start.
pub fn spawn_logging_to(cmd: &mut Command, log: &Path) -> Child {
    let file = std::fs::File::create(log)
        .unwrap_or_else(|e| panic!("cannot create the log {}: {e}", log.display()));
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()))
}

/// Waits until the file `log` contains `awaited`, reading it every 50 ms, and returns
/// its text (lossy UTF-8) from then.
///
/// # Panics
/// When `within` passes first: the message names what was awaited and shows the log.
pub fn wait_for_log(log: &Path, awaited: &str, within: Duration) -> String {
    let started = Instant::now();
    loop {
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
        if text.contains(awaited) {
            return text;
        }
        assert!(
            started.elapsed() < within,
            "`{awaited}` not logged within {within:?} in {}:\n{text}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The MCP `initialize` request with id `id` (protocol 2025-06-18, client `raw`, no
/// capabilities), as a raw client sends it.
pub fn initialize_request(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// How long [`StdioSession`] waits for a line of the server's output.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// An MCP client over a child's stdin and stdout, one JSON-RPC message a line: for the
/// tests that speak the raw protocol to `skills serve` on stdio. Its output is read by
/// a thread from the start, so a large write never waits on an unread answer.
pub struct StdioSession {
    /// The server (its stdin and stdout belong to the session; its stderr is left as
    /// the command set it).
    pub child: Child,
    stdin: Option<ChildStdin>,
    /// Each line of its stdout, or why one could not be read (then the last).
    lines: Receiver<Result<String, String>>,
}

impl StdioSession {
    /// Spawns `cmd` with stdin and stdout piped (stderr as `cmd` sets it).
    ///
    /// # Panics
    /// When `cmd` cannot start.
    pub fn spawn(cmd: &mut Command) -> Self {
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
        Self::new(child)
    }

    /// The session over `child`, whose stdin and stdout are piped (as
    /// [`spawn_stdio`]'s are).
    pub fn new(mut child: Child) -> Self {
        let stdin = child.stdin.take().expect("the child's stdin is piped");
        let stdout = child.stdout.take().expect("the child's stdout is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let failed = line.is_err();
                if tx.send(line.map_err(|e| e.to_string())).is_err() || failed {
                    break;
                }
            }
        });
        Self {
            child,
            stdin: Some(stdin),
            lines,
        }
    }

    /// Writes `line` and a newline to the server, flushed: any bytes, valid JSON-RPC
    /// or not.
    ///
    /// # Panics
    /// When stdin was closed ([`StdioSession::close_stdin`]) or the write fails.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `message` as one line ([`StdioSession::send_line`]).
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// The MCP handshake: `initialize` as request `id`, its answer awaited, then
    /// `notifications/initialized`. Returns the answer.
    ///
    /// # Panics
    /// As [`StdioSession::next`], and when the server's first message is not the answer.
    pub fn initialize(&mut self, id: u64) -> Value {
        self.send(&initialize_request(id));
        let answer = self.next();
        assert_eq!(
            answer["id"], id,
            "the first message answers `initialize`: {answer}"
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Sends `tools/call` of tool `name` with `arguments` as request `id` (the answer is
    /// not awaited).
    pub fn call_tool(&mut self, id: u64, name: &str, arguments: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
    }

    /// The next message the server writes.
    ///
    /// # Panics
    /// When none comes within a minute, the output ends, or the line is not JSON
    /// (or not UTF-8).
    pub fn next(&mut self) -> Value {
        self.try_next()
            .unwrap_or_else(|| panic!("the server's output ended before the next message"))
    }

    /// The messages after `id`'s skipped up to and including the answer to request `id`.
    ///
    /// # Panics
    /// As [`StdioSession::next`].
    pub fn answer(&mut self, id: u64) -> Value {
        loop {
            let message = self.next();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Every message the server writes until its output ends.
    ///
    /// # Panics
    /// As [`StdioSession::next`], except at the end of the output.
    pub fn rest(&mut self) -> Vec<Value> {
        std::iter::from_fn(|| self.try_next()).collect()
    }

    /// Closes the server's stdin: its input ends.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next message, or `None` when the output ended.
    fn try_next(&mut self) -> Option<Value> {
        match self.lines.recv_timeout(ANSWER_WITHIN) {
            Ok(Ok(line)) => Some(serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the server wrote a line that is not JSON ({e}): {line}")
            })),
            Ok(Err(e)) => panic!("the server's output is not UTF-8 lines: {e}"),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                panic!("the server wrote nothing within {ANSWER_WITHIN:?}")
            }
        }
    }
}

/// `GET path` over HTTP/1.0 from the server at `base` (`http://127.0.0.1:port`), asking
/// for HTML: (status, body).
pub fn get(base: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let authority = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: text/html\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

/// A server process and where it listens.
pub struct HttpServer {
    /// The process (its stdout discarded, its stderr drained by a thread).
    pub child: Child,
    /// `http://127.0.0.1:<port>` (no trailing slash): the pages' root.
    pub base: String,
    /// The MCP endpoint, `<base>/mcp`.
    pub mcp: String,
}

impl HttpServer {
    /// `skills serve --no-ingest --http 127.0.0.1:0` plus `extra`, for `skills` (the
    /// skills folder) and `data` (the data folder).
    pub fn command(skills: &std::path::Path, data: &std::path::Path, extra: &[&str]) -> Command {
        let mut cmd = super::cli::skills();
        cmd.args(["serve", "--no-ingest", "--http", "127.0.0.1:0"])
            .args(extra)
            .env("SKILLS_DIR", skills)
            .env("SKILLS_DATA_DIR", data);
        cmd
    }

    /// Starts `cmd` (a `skills serve --http …`) and waits for it to print its address.
    ///
    /// # Panics
    /// When it cannot start, or exits before printing an address.
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = Vec::new();
        let mcp = loop {
            let Some(line) = lines.next().map(Result::unwrap) else {
                let _ = child.wait();
                panic!("serve exited without printing its address: {said:?}");
            };
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_owned();
            }
            said.push(line);
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let authority_end = mcp["http://".len()..]
            .find('/')
            .map_or(mcp.len(), |i| i + "http://".len());
        let base = mcp[..authority_end].to_owned();
        Self { child, base, mcp }
    }

    /// `<base><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.authority()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// The port-qualified authority (`127.0.0.1:<port>`), as a browser sends it in `Host`.
    pub fn authority(&self) -> &str {
        self.base.trim_start_matches("http://")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
