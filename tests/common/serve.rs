//! A running `skills serve --http 127.0.0.1:0`: started from a configured command,
//! its address read from the first stderr line naming one, killed on drop.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

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

/// Writes the MCP handshake to a raw stdio server: `initialize` as request `id`, then
/// `notifications/initialized`.
pub fn initialize(stdin: &mut impl std::io::Write, id: u64) {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    writeln!(stdin, "{init}\n{initialized}").unwrap();
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
