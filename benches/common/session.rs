//! A `skills serve` process over stdio, driven like an MCP client with
//! newline-delimited JSON-RPC written by hand, so timings include nothing but the
//! server and the pipe.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde_json::{json, Value};

/// The `skills` binary cargo built for this benchmark.
pub const BIN: &str = env!("CARGO_BIN_EXE_skills");

/// One running `skills serve` (bundled skills, data folder given at start).
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    /// Starts `skills serve` over the bundled `skills/` folder with `SKILLS_DATA_DIR`
    /// = `data_dir`; `env` adds variables (e.g. `SKILLS_EMBEDDER`).
    pub fn start(data_dir: &Path, env: &[(&str, &str)]) -> Result<Self> {
        Self::start_with(data_dir, &["--no-ingest"], env, Stdio::null())
    }

    /// Starts `skills serve ARGS` like [`Session::start`], its stderr going to `stderr`.
    pub fn start_with(
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> Result<Self> {
        let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .env("SKILLS_DIR", skills_dir)
            .env("SKILLS_DATA_DIR", data_dir)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .context("spawning `skills serve`")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        })
    }

    fn send(&mut self, value: &Value) -> Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        self.stdin.write_all(&line)?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends a request and reads lines until the answer with its id; the `result`.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                bail!("server closed stdout while waiting for `{method}`");
            }
            let value: Value = serde_json::from_str(&line)?;
            if value.get("id") == Some(&json!(id)) {
                if let Some(err) = value.get("error") {
                    bail!("`{method}` failed: {err}");
                }
                return Ok(value["result"].clone());
            }
        }
    }

    /// `tools/call` of `tool`; a result with `isError` is an error.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result.get("isError") == Some(&json!(true)) {
            bail!("`{tool}` failed: {result}");
        }
        Ok(result)
    }

    /// `initialize`, `notifications/initialized`, then `tools/list`'s result.
    pub fn handshake(&mut self) -> Result<Value> {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "skills-bench", "version": "0"}}),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        self.request("tools/list", json!({}))
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's peak RSS (`VmHWM`), bytes.
    pub fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    /// Closes stdin and waits up to 5 s for the server to exit, then kills it.
    pub fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The served name of skill `skill` in a `tools/list` result (tool names may carry a
/// prefix), if listed.
pub fn tool_named(tools: &Value, skill: &str) -> Option<String> {
    let underscored = skill.replace('-', "_");
    tools["tools"].as_array()?.iter().find_map(|t| {
        let name = t["name"].as_str()?;
        (name == skill || name.ends_with(&underscored) || name.ends_with(skill))
            .then(|| name.to_owned())
    })
}
