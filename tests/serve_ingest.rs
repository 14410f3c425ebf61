//! `skills serve` keeps the conversations store current: in a fake home holding Claude
//! Code and Codex sessions, the real server (stdio and `--http`) imports what is there
//! at start, lines appended to a session and new session files, found through MCP
//! without any `skills ingest`. Polls with a generous timeout: these are behaviour
//! tests, not timing tests.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use common::mcp::{text, Client};

/// Longest wait for a change to be found.
const PATIENCE: Duration = Duration::from_secs(90);

/// A fake home: `~/.claude/projects/-work-demo/` and `~/.codex/sessions/2026/03/01/`,
/// a data folder beside it, and nothing else.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in [
            ".claude/projects/-work-demo",
            ".codex/sessions/2026/03/01",
            ".config",
        ] {
            fs_err::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A new folder `exports` outside the default locations, and its path as an argument.
    fn exports(&self) -> (PathBuf, String) {
        let extra = self.path().join("exports");
        fs_err::create_dir_all(&extra).unwrap();
        let arg = extra.to_string_lossy().into_owned();
        (extra, arg)
    }

    fn claude_session(&self, name: &str) -> PathBuf {
        self.path()
            .join(".claude/projects/-work-demo")
            .join(format!("{name}.jsonl"))
    }

    fn codex_session(&self, name: &str) -> PathBuf {
        self.path()
            .join(".codex/sessions/2026/03/01")
            .join(format!("rollout-2026-03-01T10-00-00-{name}.jsonl"))
    }

    /// `skills serve` (plus `extra`) in this home: every location variable unset or
    /// pointing inside it, the data folder inside it, no embedding model.
    fn serve(&self, extra: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skills"));
        cmd.arg("serve")
            .args(extra)
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join(".config"))
            .env("XDG_DATA_HOME", self.path().join(".local/share"))
            .env("SKILLS_DIR", common::repo_skills())
            .env("SKILLS_DATA_DIR", self.path().join("data"))
            .env("SKILLS_EMBEDDER", "none")
            .env_remove("SKILLS_WATCH");
        for var in common::TOOL_LOCATIONS {
            cmd.env_remove(var);
        }
        cmd
    }
}

impl Home {
    /// An MCP client of [`Home::serve`] (plus `extra`) over stdio, the server's stderr
    /// discarded.
    async fn connect(&self, extra: &[&str]) -> Client {
        let (transport, _stderr) = TokioChildProcess::builder(self.serve(extra))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ().serve(transport).await.unwrap()
    }

    /// `skills status --json` for this home's data folder.
    fn status(&self) -> serde_json::Value {
        common::cli::json(
            common::cli::skills()
                .args(["status", "--json"])
                .env("HOME", self.path())
                .env("SKILLS_DATA_DIR", self.path().join("data"))
                .env_remove("SKILLS_MODEL_DIR"),
        )
    }
}

/// One Claude Code record (the fields the importer reads, as Claude Code writes them).
fn claude_line(
    session: &str,
    uuid: &str,
    parent: Option<&str>,
    role: &str,
    text: &str,
    second: u32,
) -> String {
    let message = if role == "user" {
        json!({"role": "user", "content": text})
    } else {
        json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]})
    };
    let record = json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/work/demo", "sessionId": session, "version": "2.0.0",
        "type": role, "message": message, "uuid": uuid,
        "timestamp": format!("2026-03-01T10:00:{second:02}.000Z"),
    });
    format!("{record}\n")
}

/// A Codex rollout: session meta and one user message.
fn codex_rollout(id: &str, text: &str) -> String {
    let meta = json!({"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
        "payload": {"id": id, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/work/demo",
                    "originator": "codex_cli_rs", "cli_version": "0.0.0"}});
    let user = json!({"timestamp": "2026-03-01T10:00:02.000Z", "type": "response_item",
        "payload": {"type": "message", "id": "m1", "role": "user",
                    "content": [{"type": "input_text", "text": text}]}});
    format!("{meta}\n{user}\n")
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = fs_err::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Calls `search_conversations` for `term` until a row holds `expected`; panics with
/// the last answer after [`PATIENCE`].
async fn find(client: &Client, term: &str, expected: &str) {
    let started = Instant::now();
    loop {
        let arguments = json!({"term": term}).as_object().unwrap().clone();
        let result = client
            .call_tool(CallToolRequestParams::new("search_conversations").with_arguments(arguments))
            .await
            .unwrap();
        let answer = text(&result);
        if answer.contains(expected) {
            return;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "`{term}` not found within {} s; last answer: {answer}",
            PATIENCE.as_secs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Sessions there at start, a turn appended to one, a new Claude Code session and a
/// new Codex rollout: each found through MCP, without `skills ingest`.
async fn keeps_current(client: &Client, home: &Home) {
    find(client, "marmoset", "Where do marmoset monkeys sleep?").await;
    find(client, "kafka", "rewind the kafka consumer").await;

    // A user turn appended to the running session (the assistant still writing).
    let session = home.claude_session("s1");
    append(
        &session,
        &claude_line(
            "s1",
            "u3",
            Some("a2"),
            "user",
            "And what about the capybara?",
            3,
        ),
    );
    find(client, "capybara", "And what about the capybara?").await;

    // A half-written line is not lost: finished later, it is found.
    let line = claude_line(
        "s1",
        "a4",
        Some("u3"),
        "assistant",
        "Capybaras doze near water, the axolotl does not.",
        4,
    );
    let (head, tail) = line.split_at(line.len() / 2);
    append(&session, head);
    tokio::time::sleep(Duration::from_millis(800)).await;
    append(&session, tail);
    find(client, "axolotl", "the axolotl does not").await;

    // A new session file and a new Codex rollout.
    fs_err::write(
        home.claude_session("s2"),
        claude_line("s2", "v1", None, "user", "How heavy is a quokka?", 1),
    )
    .unwrap();
    find(client, "quokka", "How heavy is a quokka?").await;
    fs_err::write(
        home.codex_session("c2"),
        codex_rollout(
            "22222222-0000-0000-0000-000000000002",
            "tune the zookeeper session timeout",
        ),
    )
    .unwrap();
    find(client, "zookeeper", "tune the zookeeper session timeout").await;

    // Deleting a session keeps its stored rows.
    fs_err::remove_file(home.claude_session("s2")).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    find(client, "quokka", "How heavy is a quokka?").await;
}

fn seed(home: &Home) {
    let mut s1 = claude_line(
        "s1",
        "u1",
        None,
        "user",
        "Where do marmoset monkeys sleep?",
        1,
    );
    s1.push_str(&claude_line(
        "s1",
        "a2",
        Some("u1"),
        "assistant",
        "In tree holes, huddled together.",
        2,
    ));
    fs_err::write(home.claude_session("s1"), s1).unwrap();
    fs_err::write(
        home.codex_session("c1"),
        codex_rollout(
            "11111111-0000-0000-0000-000000000001",
            "how do I rewind the kafka consumer offsets",
        ),
    )
    .unwrap();
    // serve imports the newest first (by the modification time of each location it
    // walks): the Codex rollout and its folders are made older, so the Claude Code
    // session is imported first whatever tick each write fell in (under load the
    // rollout, written second, was newer and the paused import held only it).
    let older = std::time::SystemTime::now() - Duration::from_secs(600);
    let codex_root = home.path().join(".codex");
    let mut path = home.codex_session("c1");
    while path.starts_with(&codex_root) {
        fs_err::File::open(&path)
            .and_then(|f| f.file().set_modified(older))
            .unwrap();
        path.pop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_server_imports_sessions_as_they_change() {
    let home = Home::new();
    seed(&home);
    let (transport, _stderr) = TokioChildProcess::builder(home.serve(&[]))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    keeps_current(&client, &home).await;
    // `skills status` shows the running server's watcher and what it imported.
    let status = home.status();
    let server = &status["servers"][0];
    assert_eq!(server["watch"]["mode"], "notify", "{status}");
    assert!(server["watch"]["runs"].as_u64().unwrap() >= 2, "{status}");
    assert!(
        server["watch"]["messages_added"].as_u64().unwrap() >= 6,
        "{status}"
    );
    client.cancel().await.unwrap();
    // Once the server is gone, so is its record.
    let started = Instant::now();
    while home.status()["servers"] != json!([]) {
        assert!(
            started.elapsed() < PATIENCE,
            "the server's record outlived it"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_imports_sessions_as_they_change_and_polling_works_too() {
    let home = Home::new();
    seed(&home);
    let mut cmd = home.serve(&["--http", "127.0.0.1:0"]);
    // The poll fallback (network filesystems, the OS watch limit reached).
    cmd.env("SKILLS_WATCH", "poll")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut url = None;
    while let Some(line) = lines.next_line().await.unwrap() {
        said.lock().unwrap().push(line.clone());
        if let Some(at) = line.find("http://") {
            url = Some(line[at..].trim().to_owned());
            break;
        }
    }
    let url = url.expect("serve printed its address");
    let drain = std::sync::Arc::clone(&said);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            drain.lock().unwrap().push(line);
        }
    });
    let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
    keeps_current(&client, &home).await;
    client.cancel().await.unwrap();
    child.kill().await.unwrap();
    let said = said.lock().unwrap().join("\n");
    assert!(
        said.contains("(polling every 5 s)"),
        "the poll mode is said on stderr:\n{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_ingest_leaves_the_store_alone_and_a_missing_watch_path_is_named() {
    let home = Home::new();
    seed(&home);
    let out = home
        .serve(&["--watch", "/no/such/folder"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--watch `/no/such/folder`"), "{stderr}");

    let client = home.connect(&["--no-ingest"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let arguments = json!({"term": "marmoset"}).as_object().unwrap().clone();
    let result = client
        .call_tool(CallToolRequestParams::new("search_conversations").with_arguments(arguments))
        .await
        .unwrap();
    assert!(
        !text(&result).contains("marmoset monkeys"),
        "{}",
        text(&result)
    );
    client.cancel().await.unwrap();
    assert!(!home.path().join("data/conversations.duckdb").exists());
}

/// `--watch PATH` imports a folder outside the default locations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_path_imports_a_folder_of_transcripts() {
    let home = Home::new();
    let (extra, arg) = home.exports();
    let client = home.connect(&["--watch", &arg]).await;
    let generic = json!({"role": "user", "content": "Where do okapi live?", "timestamp": "2026-03-09T10:00:00Z"});
    fs_err::write(extra.join("notes.jsonl"), format!("{generic}\n")).unwrap();
    find(&client, "okapi", "Where do okapi live?").await;
    client.cancel().await.unwrap();
}

/// Waits until serve's background import (`SKILLS_INGEST_PAUSE` = `checkpoint`) has
/// reached its checkpoint; returns its one `skills ingest` child of `pid`.
#[cfg(target_os = "linux")]
async fn import_child_at_checkpoint(checkpoint: &Path, pid: u32) -> u32 {
    let started = Instant::now();
    while !checkpoint.exists() {
        assert!(
            started.elapsed() < PATIENCE,
            "the background import did not reach its checkpoint {}",
            checkpoint.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let importing = children_of(pid);
    assert_eq!(
        importing.len(),
        1,
        "one `skills ingest` child: {importing:?}"
    );
    importing[0]
}

/// `skills serve` over stdio with its background import paused after the first file
/// (`SKILLS_INGEST_PAUSE` = `checkpoint`): its client and the import child's pid, once
/// the import has reached the checkpoint.
#[cfg(target_os = "linux")]
async fn serve_paused_at(home: &Home, checkpoint: &Path) -> (Client, u32) {
    let mut serve = home.serve(&[]);
    serve.env("SKILLS_INGEST_PAUSE", checkpoint);
    let (transport, _stderr) = TokioChildProcess::builder(serve)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();
    let child = import_child_at_checkpoint(checkpoint, pid).await;
    (client, child)
}

/// The pids of the running children of process `parent` (Linux: `/proc/*/stat`).
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the name may hold spaces, so split after `)`.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        if state != "Z" && fields.next().and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// Whether process `pid` runs (and is not a zombie).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

/// Every row of `all_conversations` and every file state of `ingest_files`, as JSON
/// text in a fixed order: what "the same store" means here.
fn store_rows(data: &Path) -> (Vec<String>, Vec<String>) {
    let conn = duckdb::Connection::open_with_flags(
        data.join("conversations.duckdb"),
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .unwrap(),
    )
    .unwrap();
    let rows = |sql: &str| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    (
        rows("SELECT to_json(t)::VARCHAR AS j FROM all_conversations t ORDER BY source, conversation_id, msg_index, message_id"),
        rows("SELECT to_json(f)::VARCHAR AS j FROM (SELECT path, format, size, mtime_ns, byte_offset, line, next_index, tail_hash, messages FROM ingest_files) f ORDER BY j"),
    )
}

/// Issue 30: the server killed (SIGKILL) while its background `skills ingest` is half
/// done takes that import with it (no orphan), and the next start brings the store to
/// what one clean `skills ingest` of the same files gives: the same rows, the same file
/// states, the search index current. The kill comes at a known point, whatever the
/// machine's speed: the import's test hook (`SKILLS_INGEST_PAUSE`) stores the first
/// file alone, writes the checkpoint and waits there.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_import_leaves_no_child_and_the_next_start_completes_it() {
    use skills::bench::gen::{self, Spec};
    let home = Home::new();
    seed(&home);
    // Many sessions: most of them are still to import at the checkpoint.
    gen::write_claude_code_tree(
        &home.path().join(".claude"),
        Spec {
            messages: 6_000,
            seed: 30,
        },
    )
    .unwrap();

    let checkpoint = home.path().join("paused");
    let mut first = home.serve(&[]);
    first
        .env("SKILLS_INGEST_PAUSE", &checkpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut server = first.spawn().unwrap();
    let pid = server.id().unwrap();
    // The background import has stored its first file and waits.
    let child = import_child_at_checkpoint(&checkpoint, pid).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    // The import dies with the server.
    let killed = Instant::now();
    while alive(child) {
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "`skills ingest` (pid {child}) outlived the killed server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Killed half done: the first file is stored, the others are not.
    let (_, killed_files) = store_rows(&home.path().join("data"));
    assert_eq!(killed_files.len(), 1, "{killed_files:?}");

    // One clean import of the same files into another data folder.
    let clean = home.path().join("clean");
    common::cli::ok(
        common::cli::skills()
            .arg("--data-dir")
            .arg(&clean)
            .args(["ingest", "--quiet"])
            .arg(home.path().join(".claude/projects"))
            .arg(home.path().join(".codex/sessions"))
            .env("SKILLS_EMBEDDER", "none"),
    );
    let (clean_rows, clean_files) = store_rows(&clean);
    assert!(clean_rows.len() > 5_000, "{} rows", clean_rows.len());
    assert!(clean_files.len() > 100, "{} files", clean_files.len());

    // The next start's catch-up runs complete the store: as many messages as the clean
    // import, no import running, the search index current.
    let client = home.connect(&[]).await;
    let started = Instant::now();
    loop {
        let status = home.status();
        let server = &status["servers"][0];
        let idle = server["pid"]
            .as_u64()
            .is_some_and(|pid| children_of(u32::try_from(pid).unwrap()).is_empty());
        if idle
            && server["watch"]["runs"].as_u64().unwrap_or(0) >= 1
            && status["conversations"]["messages"].as_u64() == Some(clean_rows.len() as u64)
            && status["conversations"]["index"]["state"] == "current"
        {
            break;
        }
        assert!(
            started.elapsed() < PATIENCE * 2,
            "the catch-up run did not finish: {status}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    find(&client, "marmoset", "Where do marmoset monkeys sleep?").await;
    client.cancel().await.unwrap();

    let (rows, files) = store_rows(&home.path().join("data"));
    assert_eq!(rows.len(), clean_rows.len());
    assert!(rows == clean_rows, "the rows differ from a clean import");
    assert_eq!(files, clean_files);
}

/// Issue 43: tool calls answer while `skills serve`'s background import is busy with
/// a long file (a 300 MB line takes many seconds to parse): the import lets go of the
/// store's database file while it parses, so a call does not queue behind it. The
/// import's test hook (`SKILLS_INGEST_PAUSE`) stores the first file, then stops parsing
/// until the checkpoint is removed, as a huge file would, for as long as the test
/// wants: the call must answer, from what is stored, while the import still waits.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_answer_while_the_background_import_parses_a_long_file() {
    let home = Home::new();
    seed(&home);
    let checkpoint = home.path().join("paused");
    let (client, child) = serve_paused_at(&home, &checkpoint).await;
    // The Claude Code session (walked first) is stored; the import waits before the
    // Codex rollout.
    let asked = Instant::now();
    let arguments = json!({"term": "marmoset"}).as_object().unwrap().clone();
    let result = client
        .call_tool(CallToolRequestParams::new("search_conversations").with_arguments(arguments))
        .await
        .unwrap();
    let took = asked.elapsed();
    let answer = text(&result);
    assert!(
        answer.contains("Where do marmoset monkeys sleep?"),
        "the call during the import answered after {took:?}: {answer}"
    );
    assert!(
        checkpoint.exists() && alive(child),
        "the import went on before the call answered"
    );
    eprintln!("a call during the paused import answered in {took:?}");
    fs_err::remove_file(&checkpoint).unwrap();
    find(&client, "kafka", "rewind the kafka consumer").await;
    client.cancel().await.unwrap();
}

/// Issue 43: with a search index published by an earlier ingest, a call made while
/// serve's background import has stored the first file of its run and is still busy
/// (paused before the next) answers at once from what is stored — DuckDB, exactly —
/// instead of waiting [`skills::stores::conversations::index::PUBLISH_WAIT`] for a
/// writer that is not about to publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_during_an_import_does_not_wait_for_the_index() {
    let home = Home::new();
    // An earlier ingest, outside the watched locations: the store and its index.
    let (extra, _) = home.exports();
    let line = json!({"role": "user", "content": "the capybara grazes at dusk",
                      "timestamp": "2026-03-08T10:00:00Z"});
    fs_err::write(extra.join("notes.jsonl"), format!("{line}\n")).unwrap();
    common::cli::ok(
        common::cli::skills()
            .arg("ingest")
            .arg(&extra)
            .env("HOME", home.path())
            .env("SKILLS_DATA_DIR", home.path().join("data"))
            .env("SKILLS_EMBEDDER", "none"),
    );
    let index = home.path().join("data/conversations.index/MANIFEST");
    assert!(index.exists(), "the earlier ingest published no index");
    seed(&home);
    let checkpoint = home.path().join("paused");
    let (client, child) = serve_paused_at(&home, &checkpoint).await;
    let mut took = Vec::new();
    for (term, expected) in [
        ("marmoset", "Where do marmoset monkeys sleep?"),
        ("capybara", "the capybara grazes at dusk"),
    ] {
        let asked = Instant::now();
        let arguments = json!({"term": term}).as_object().unwrap().clone();
        let result = client
            .call_tool(CallToolRequestParams::new("search_conversations").with_arguments(arguments))
            .await
            .unwrap();
        took.push(asked.elapsed());
        let answer = text(&result);
        assert!(answer.contains(expected), "{term}: {answer}");
        assert!(!answer.contains("kafka"), "{term}: {answer}");
    }
    assert!(
        checkpoint.exists() && alive(child),
        "the import went on before the calls answered"
    );
    eprintln!("calls during the paused import answered in {took:?}");
    for t in &took {
        assert!(
            *t < skills::stores::conversations::index::PUBLISH_WAIT,
            "a call during the import took {t:?}: it waited for the index writer"
        );
    }
    fs_err::remove_file(&checkpoint).unwrap();
    find(&client, "kafka", "rewind the kafka consumer").await;
    client.cancel().await.unwrap();
}

/// `skills serve` imports in the background as `skills ingest` does: secrets are
/// redacted before storing, so the secret never reaches the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_imports_redact_secrets_by_default() {
    let home = Home::new();
    let (extra, arg) = home.exports();
    let client = home.connect(&["--watch", &arg]).await;
    let secret = "ghp_Zq8Xv3Lm9Tr2Kp7Wn4Hs6Jd1Fb5Gc0Ye2Ua9";
    let line = json!({"role": "user", "content": format!("the pangolin token is {secret}"),
                      "timestamp": "2026-03-09T10:00:00Z"});
    fs_err::write(extra.join("notes.jsonl"), format!("{line}\n")).unwrap();
    find(&client, "pangolin", "the pangolin token is").await;
    client.cancel().await.unwrap();
    let (rows, _) = store_rows(&home.path().join("data"));
    let row = rows.iter().find(|r| r.contains("pangolin")).unwrap();
    assert!(!row.contains(secret), "{row}");
    assert!(row.contains("[REDACTED:"), "{row}");
}
