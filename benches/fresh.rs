//! Issue 30's freshness figures: how soon `skills serve` finds a line just written to a
//! watched Claude Code session, what an idle server costs, and whether a steady stream
//! of appends ends in the store one `skills ingest` of the final files gives; each
//! beside the same run's one-shot `skills ingest`.
//!
//! Setup: a generated store of `BENCH_FRESH_MESSAGES` (default 1,000,000) messages with
//! its search index and embeddings (built once under the bench folder as
//! `fresh-base-N-SEED`, copied for each run), a fake home whose `~/.claude/projects/`
//! the server watches, and the embedding model `skills` finds from this environment
//! (`SKILLS_MODEL_DIR`, else the cache), given to the server and to every `skills
//! ingest` by `SKILLS_MODEL_DIR`.
//!
//! 1. **Freshness.** `BENCH_FRESH_APPENDS` (default 20) user lines appended, about
//!    2 s apart, to a session the store already holds; from each append, the time
//!    until `search_conversations` returns the line, then until `semantic_search`
//!    (default mode, hybrid) returns it: one MCP session, polled every 20 ms. Baseline
//!    (server stopped): an append, then one-shot `skills ingest FILE` (with embeddings),
//!    then `skills run search-conversations`, each a process, timed.
//! 2. **Idle.** `BENCH_FRESH_IDLE_SECS` (default 180) of nothing: CPU of the server and
//!    its children (`/proc/<pid>/stat` utime + stime + cutime + cstime) as a share of
//!    one core, and resident memory at the start, the end and the most seen (sampled
//!    every 5 s), for the watching server and, in the same window, `skills serve
//!    --no-ingest`. Baseline: a one-shot `skills ingest` of the watched folder with
//!    nothing changed (what a cron job spends per run).
//! 3. **Load.** `BENCH_FRESH_LOAD_FILES` (default 10) new sessions,
//!    `BENCH_FRESH_LOAD_RATE` (default 20) appends per second in all, for
//!    `BENCH_FRESH_LOAD_SECS` (default 60); then the time until every file's last line
//!    is found; then, the server stopped, those sessions' rows (`to_json` of every
//!    column) and file states compared with one clean `skills ingest` of the final
//!    files into an empty data folder (its time the baseline).
//!
//! Run: `scripts/bench fresh` (or `cargo bench --bench fresh`); `BENCH_SEED`,
//! `BENCH_DIR` as for the other benchmarks.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use common::session::{tool_named, Session, BIN};
use common::{fmt_bytes, fmt_dur, Stats};
use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::stores::conversations::embeddings::UnitSpec;
use skills::stores::conversations::ConversationStore;

/// How often a tool is called while waiting for a line.
const POLL: Duration = Duration::from_millis(20);
/// Longest wait for one line to be found.
const PATIENCE: Duration = Duration::from_secs(120);

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = common::env_usize("BENCH_FRESH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let appends = common::env_usize("BENCH_FRESH_APPENDS", 20);
    let idle_secs = common::env_usize("BENCH_FRESH_IDLE_SECS", 180);
    let load_files = common::env_usize("BENCH_FRESH_LOAD_FILES", 10);
    let load_rate = common::env_usize("BENCH_FRESH_LOAD_RATE", 20);
    let load_secs = common::env_usize("BENCH_FRESH_LOAD_SECS", 60);
    let Some(model) = Embedder::default_dir().filter(|d| Embedder::load(d).is_ok()) else {
        println!(
            "## skills serve freshness\n\nskipped: no embedding model (run scripts/fetch-model)\n"
        );
        return Ok(());
    };
    println!("## `skills serve` keeps the store current (issue 30) at {n} messages\n");
    println!(
        "machine: {}; load average at start: {}\n",
        common::machine(),
        common::loadavg()
    );
    let base = base_store(n, seed, &model)?;
    let root = common::bench_dir().join("fresh-run");
    let _ = std::fs::remove_dir_all(&root);
    let (data, home) = (root.join("data"), root.join("home"));
    eprintln!("copying the {n}-message store …");
    common::copy_dir(&base, &data)?;
    let env = Env {
        home: home.clone(),
        data: data.clone(),
        model: model.clone(),
    };

    // The session the freshness part appends to, imported once.
    let projects = home.join(".claude/projects");
    let session = projects.join("-work-fresh/fresh-session.jsonl");
    std::fs::create_dir_all(session.parent().unwrap())?;
    let mut chain = Chain::new("fresh-session");
    for i in 0..2 {
        append(
            &session,
            &chain.line(&format!("opening line {i} of the session")),
        )?;
    }
    let t = Instant::now();
    env.ingest(&data, &[&projects])?;
    eprintln!("first import of the session: {}", fmt_dur(t.elapsed()));

    // 1. Freshness, with the watching server.
    let log = std::fs::File::create(root.join("serve.log"))?;
    let mut server = env.serve(&[], log)?;
    let tools = server.handshake()?;
    let search = tool_named(&tools, "search-conversations").context("no search tool")?;
    let semantic = tool_named(&tools, "semantic-search").context("no semantic tool")?;
    wait_idle(&data, server.pid(), 1)?;
    let mut found_keyword = Vec::new();
    let mut found_semantic = Vec::new();
    let mut missed = 0usize;
    for i in 0..appends {
        let token = format!("qzfresh{i:04}k");
        append(
            &session,
            &chain.line(&format!("the capybara code word is {token} for tonight")),
        )?;
        let t0 = Instant::now();
        let expected = format!("{token} for tonight");
        match wait_found(&mut server, &search, json!({"term": token}), &expected) {
            Some(()) => found_keyword.push(t0.elapsed()),
            None => missed += 1,
        }
        match wait_found(&mut server, &semantic, json!({"query": token}), &expected) {
            Some(()) => found_semantic.push(t0.elapsed()),
            None => missed += 1,
        }
        std::thread::sleep(Duration::from_millis(1500));
    }

    // 2. Idle: the watching server and a `--no-ingest` one, side by side.
    wait_idle(&data, server.pid(), 0)?;
    let quiet = env.serve(
        &["--no-ingest"],
        std::fs::File::create(root.join("quiet.log"))?,
    )?;
    let mut quiet = quiet;
    quiet.handshake()?;
    std::thread::sleep(Duration::from_secs(5));
    eprintln!("idle for {idle_secs} s …");
    let idle = idle_window(
        &[server.pid(), quiet.pid()],
        Duration::from_secs(idle_secs as u64),
    );
    quiet.close();

    // 3. Load: appends to new sessions at a steady rate.
    let runs_before = record(&data, server.pid())
        .and_then(|r| r["watch"]["runs"].as_u64())
        .unwrap_or(0);
    let load_dir = projects.join("-work-load");
    std::fs::create_dir_all(&load_dir)?;
    let mut chains: Vec<(PathBuf, Chain)> = (0..load_files)
        .map(|f| {
            let id = format!("load-session-{f:02}");
            (load_dir.join(format!("{id}.jsonl")), Chain::new(&id))
        })
        .collect();
    let total = load_rate * load_secs;
    eprintln!("{total} appends to {load_files} files over {load_secs} s …");
    let start = Instant::now();
    let mut last_token = vec![String::new(); load_files];
    let mut late = Duration::ZERO;
    for k in 0..total {
        let due = start + Duration::from_secs_f64(k as f64 / load_rate as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else {
            late = late.max(now - due);
        }
        let f = k % load_files;
        let token = format!("qzload{f:02}n{k:06}k");
        let (path, chain) = &mut chains[f];
        append(
            path,
            &chain.line(&format!("load line {token} of the stream")),
        )?;
        last_token[f] = token;
    }
    let written = start.elapsed();
    let t = Instant::now();
    for token in &last_token {
        let expected = format!("{token} of the stream");
        if wait_found(&mut server, &search, json!({"term": token}), &expected).is_none() {
            bail!("`{token}` was never found");
        }
    }
    let caught_up = t.elapsed();
    wait_idle(&data, server.pid(), 0)?;
    let runs_after = record(&data, server.pid())
        .and_then(|r| r["watch"]["runs"].as_u64())
        .unwrap_or(0);
    let peak = server.peak_rss();
    server.close();
    std::thread::sleep(Duration::from_secs(1));

    let clean = root.join("clean");
    let t = Instant::now();
    env.ingest(&clean, &[&load_dir])?;
    let clean_time = t.elapsed();
    let ids: Vec<String> = (0..load_files)
        .map(|f| format!("'load-session-{f:02}'"))
        .collect();
    let served_rows = rows(&data, &ids)?;
    let clean_rows = rows(&clean, &ids)?;
    let same_rows = served_rows == clean_rows;
    let served_files = file_states(&data, "%/-work-load/%")?;
    let clean_files = file_states(&clean, "%/-work-load/%")?;
    let same_files = served_files == clean_files;

    // Baselines, no server running: an append then a one-shot ingest (and a search).
    let mut ingest_times = Vec::new();
    let mut ingest_search_times = Vec::new();
    for i in 0..5 {
        let token = format!("qzbase{i:04}k");
        append(
            &session,
            &chain.line(&format!("the capybara code word is {token} for tonight")),
        )?;
        let t0 = Instant::now();
        env.ingest(&data, &[&session])?;
        ingest_times.push(t0.elapsed());
        let out = env
            .command(&data, &["run", "search-conversations", "--arg"])
            .arg(format!("term={token}"))
            .output()?;
        ingest_search_times.push(t0.elapsed());
        if !String::from_utf8_lossy(&out.stdout).contains(&token) {
            bail!("the one-shot search did not find `{token}`");
        }
    }
    let mut noop = Vec::new();
    for _ in 0..3 {
        let t0 = Instant::now();
        env.ingest(&data, &[&projects])?;
        noop.push(t0.elapsed());
    }

    let kw = Stats::of(found_keyword.clone());
    let sem = Stats::of(found_semantic.clone());
    let base_ingest = Stats::of(ingest_times);
    let base_both = Stats::of(ingest_search_times);
    println!("### Freshness: a line appended to a watched Claude Code session\n");
    common::table(
        &["measure", "runs", "median", "p95", "max", "target"],
        &[
            vec![
                "append → found by `search_conversations` (server)".into(),
                kw.runs.to_string(),
                fmt_dur(kw.median),
                fmt_dur(kw.p95),
                fmt_dur(found_keyword.iter().max().copied().unwrap_or_default()),
                "≤ 1 s p95".into(),
            ],
            vec![
                "append → found by `semantic_search` (server)".into(),
                sem.runs.to_string(),
                fmt_dur(sem.median),
                fmt_dur(sem.p95),
                fmt_dur(found_semantic.iter().max().copied().unwrap_or_default()),
                "≤ 3 s p95".into(),
            ],
            vec![
                "baseline: append → one-shot `skills ingest FILE` done".into(),
                base_ingest.runs.to_string(),
                fmt_dur(base_ingest.median),
                fmt_dur(base_ingest.p95),
                String::new(),
                String::new(),
            ],
            vec![
                "baseline: … then `skills run search-conversations` done".into(),
                base_both.runs.to_string(),
                fmt_dur(base_both.median),
                fmt_dur(base_both.p95),
                String::new(),
                String::new(),
            ],
        ],
    );
    println!(
        "lines not found within {} s: {missed}\n",
        PATIENCE.as_secs()
    );

    println!("### Idle: {idle_secs} s of nothing\n");
    let noop = Stats::of(noop);
    common::table(
        &[
            "server",
            "CPU (share of one core)",
            "RSS at start",
            "RSS at end",
            "RSS max",
        ],
        &[
            idle_row("`skills serve` (watching, background import)", &idle[0]),
            idle_row("`skills serve --no-ingest` (same window)", &idle[1]),
        ],
    );
    println!(
        "baseline: a one-shot `skills ingest` of the watched folder with nothing changed takes {} (median of {}), what a cron job would spend per run.\n",
        fmt_dur(noop.median),
        noop.runs
    );

    println!("### Load: {load_rate} appends per second to {load_files} files for {load_secs} s\n");
    common::table(
        &["measure", "value"],
        &[
            vec![
                "appends written".into(),
                format!("{total} in {}", fmt_dur(written)),
            ],
            vec!["writer's worst lateness".into(), fmt_dur(late)],
            vec![
                "background import runs during the load".into(),
                (runs_after - runs_before).to_string(),
            ],
            vec![
                "last append → every file's last line found".into(),
                fmt_dur(caught_up),
            ],
            vec!["server peak RSS (whole run)".into(), fmt_bytes(peak)],
            vec![
                "rows of those sessions: server / clean `skills ingest`".into(),
                format!("{} / {}", served_rows.len(), clean_rows.len()),
            ],
            vec![
                "rows identical (every column)".into(),
                if same_rows { "yes" } else { "**no**" }.into(),
            ],
            vec![
                "file states identical (size, mtime, offset, line, next index, tail hash, messages)"
                    .into(),
                if same_files { "yes" } else { "**no**" }.into(),
            ],
            vec![
                "baseline: one clean `skills ingest` of the final files".into(),
                fmt_dur(clean_time),
            ],
        ],
    );
    println!("load average at end: {}\n", common::loadavg());
    if !same_rows || !same_files {
        bail!("the served store differs from a clean import");
    }
    Ok(())
}

/// The store every run starts from: `n` generated messages, index and embeddings
/// current; built once (about 2–3 min at 1M on 2 cores).
fn base_store(n: usize, seed: u64, model: &Path) -> Result<PathBuf> {
    let dir = common::bench_dir().join(format!("fresh-base-{n}-{seed:x}"));
    let done = dir.join("complete");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    eprintln!("generating {n} messages into {} …", dir.display());
    let t = Instant::now();
    let mut store = ConversationStore::open_rw(&dir.join("conversations.duckdb"))?;
    gen::fill_store(&store, Spec { messages: n, seed }, 50_000)?;
    store.embed_with(
        std::sync::Arc::new(Embedder::load(model)?),
        UnitSpec::DEFAULT,
    )?;
    store.close()?;
    eprintln!("built in {}", fmt_dur(t.elapsed()));
    std::fs::write(&done, b"")?;
    Ok(dir)
}

/// The environment every `skills` process of the run gets.
struct Env {
    home: PathBuf,
    data: PathBuf,
    model: PathBuf,
}

impl Env {
    fn vars(&self) -> Vec<(&'static str, String)> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        vec![
            ("HOME", s(&self.home)),
            ("XDG_CONFIG_HOME", s(&self.home.join(".config"))),
            ("XDG_DATA_HOME", s(&self.home.join(".local/share"))),
            ("SKILLS_MODEL_DIR", s(&self.model)),
            ("SKILLS_WATCH", "notify".into()),
        ]
    }

    /// `skills ARGS` on data folder `data`.
    fn command(&self, data: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("--data-dir")
            .arg(data)
            .args(args)
            .env(
                "SKILLS_DIR",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("skills"),
            )
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .stdin(Stdio::null());
        for (k, v) in self.vars() {
            cmd.env(k, v);
        }
        cmd
    }

    /// One-shot `skills ingest --quiet PATHS` into `data`.
    fn ingest(&self, data: &Path, paths: &[&Path]) -> Result<()> {
        let out = self
            .command(data, &["ingest", "--quiet"])
            .args(paths)
            .output()?;
        if !out.status.success() {
            bail!("skills ingest: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// `skills serve ARGS` on the run's data folder, stderr to `log`.
    fn serve(&self, args: &[&str], log: std::fs::File) -> Result<Session> {
        let vars = self.vars();
        let env: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Session::start_with(&self.data, args, &env, Stdio::from(log))
    }
}

/// Claude Code records of one session, each answering the one before.
struct Chain {
    session: String,
    n: usize,
}

impl Chain {
    fn new(session: &str) -> Self {
        Self {
            session: session.to_owned(),
            n: 0,
        }
    }

    /// The next record (user and assistant turns alternating) saying `text`.
    fn line(&mut self, text: &str) -> String {
        let uuid = format!("{}-{:06}", self.session, self.n);
        let parent = (self.n > 0).then(|| format!("{}-{:06}", self.session, self.n - 1));
        let role = if self.n.is_multiple_of(2) {
            "user"
        } else {
            "assistant"
        };
        let message = if role == "user" {
            json!({"role": "user", "content": text})
        } else {
            json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]})
        };
        let time = chrono::DateTime::from_timestamp(1_772_359_200 + self.n as i64, 0)
            .unwrap_or_default()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ");
        self.n += 1;
        let record = json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/work/fresh", "sessionId": self.session, "version": "2.0.0",
            "type": role, "message": message, "uuid": uuid, "timestamp": time.to_string(),
        });
        format!("{record}\n")
    }
}

/// Appends `text` to `path` in one write (created when missing).
fn append(path: &Path, text: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// Calls `tool` with `args` every [`POLL`] until its result holds `expected`; `None`
/// after [`PATIENCE`].
fn wait_found(server: &mut Session, tool: &str, args: Value, expected: &str) -> Option<()> {
    let started = Instant::now();
    while started.elapsed() < PATIENCE {
        if let Ok(result) = server.request("tools/call", json!({"name": tool, "arguments": args})) {
            if result.to_string().contains(expected) {
                return Some(());
            }
        }
        std::thread::sleep(POLL);
    }
    None
}

/// The server's record (`<data>/servers/<pid>.json`), if written.
fn record(data: &Path, pid: u32) -> Option<Value> {
    let bytes = std::fs::read(data.join("servers").join(format!("{pid}.json"))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Waits until the server has finished at least `runs` imports, none is running and
/// nothing is pending.
fn wait_idle(data: &Path, pid: u32, runs: u64) -> Result<()> {
    let started = Instant::now();
    let mut calm = 0;
    while calm < 3 {
        let rec = record(data, pid);
        let done = rec.as_ref().is_some_and(|r| {
            r["watch"]["runs"].as_u64().unwrap_or(0) >= runs && r["watch"]["pending"] == 0
        });
        calm = if done && children_of(pid).is_empty() {
            calm + 1
        } else {
            0
        };
        if started.elapsed() > Duration::from_secs(600) {
            bail!("the server never settled: {rec:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// The running children of `parent` (`/proc/*/stat`).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let mut f = stat.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?;
            let ppid: u32 = f.next()?.parse().ok()?;
            (ppid == parent && state != "Z").then_some(pid)
        })
        .collect()
}

/// utime + stime + cutime + cstime of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // After `)`: state is field 3; utime..cstime are fields 14..17.
    rest.split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum()
}

/// The resident set size of `pid`, bytes.
fn rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// One process's idle figures.
struct Idle {
    cpu_share: f64,
    rss_start: u64,
    rss_end: u64,
    rss_max: u64,
}

/// CPU share and memory of each of `pids` over `window`.
fn idle_window(pids: &[u32], window: Duration) -> Vec<Idle> {
    let ticks_per_s = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(100.0);
    let cpu0: Vec<u64> = pids
        .iter()
        .map(|&p| cpu_ticks(p) + children_ticks(p))
        .collect();
    let mut out: Vec<Idle> = pids
        .iter()
        .map(|&p| {
            let r = rss(p);
            Idle {
                cpu_share: 0.0,
                rss_start: r,
                rss_end: r,
                rss_max: r,
            }
        })
        .collect();
    let t = Instant::now();
    while t.elapsed() < window {
        std::thread::sleep(Duration::from_secs(5).min(window.saturating_sub(t.elapsed())));
        for (i, &p) in pids.iter().enumerate() {
            let r = rss(p);
            out[i].rss_end = r;
            out[i].rss_max = out[i].rss_max.max(r);
        }
    }
    let secs = t.elapsed().as_secs_f64();
    for (i, &p) in pids.iter().enumerate() {
        let used = (cpu_ticks(p) + children_ticks(p)).saturating_sub(cpu0[i]);
        out[i].cpu_share = used as f64 / ticks_per_s / secs;
    }
    out
}

/// CPU ticks of the running children of `pid` (finished ones are in its cutime).
fn children_ticks(pid: u32) -> u64 {
    children_of(pid).into_iter().map(cpu_ticks).sum()
}

fn idle_row(label: &str, i: &Idle) -> Vec<String> {
    vec![
        label.to_owned(),
        format!("{:.2} %", i.cpu_share * 100.0),
        fmt_mb(i.rss_start),
        fmt_mb(i.rss_end),
        fmt_mb(i.rss_max),
    ]
}

fn fmt_mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// `to_json` of every row of the conversations `ids` (quoted SQL literals).
fn rows(data: &Path, ids: &[String]) -> Result<Vec<String>> {
    query(
        data,
        &format!(
            "SELECT to_json(t)::VARCHAR FROM all_conversations t WHERE conversation_id IN ({}) \
             ORDER BY source, conversation_id, msg_index, message_id",
            ids.join(", ")
        ),
    )
}

/// The stored state of every imported file whose path is `LIKE` `pattern`.
fn file_states(data: &Path, pattern: &str) -> Result<Vec<String>> {
    query(
        data,
        &format!(
            "SELECT to_json(f)::VARCHAR AS j FROM (SELECT path, format, size, mtime_ns, \
             byte_offset, line, next_index, tail_hash, messages FROM ingest_files \
             WHERE path LIKE '{pattern}') f ORDER BY j"
        ),
    )
}

fn query(data: &Path, sql: &str) -> Result<Vec<String>> {
    let conn = duckdb::Connection::open_with_flags(
        data.join("conversations.duckdb"),
        duckdb::Config::default().access_mode(duckdb::AccessMode::ReadOnly)?,
    )?;
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
