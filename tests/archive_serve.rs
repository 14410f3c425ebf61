//! `skills serve --archive-push URL` against a PostgreSQL of the test's own
//! (`scripts/postgres start`, so stopping it disturbs no other test): pushes after the
//! background imports; with PostgreSQL stopped, local MCP calls keep answering and the
//! failure is shown by `skills status`; once it is back, the next push completes. An
//! archive that accepts connections and never answers neither blocks serving nor
//! holds the server at shutdown, and no process outlives it. The password appears in
//! no log or status.
//!
//! Without PostgreSQL (or the wheel `scripts/postgres` fetches) each test is reported
//! as not run, with the reason ([`common::not_run`]).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

use common::archive::{password, Scripted};
use common::mcp::{call, text, Client};

/// Longest wait for an import, a push or a status change.
const PATIENCE: Duration = Duration::from_secs(120);

/// A PostgreSQL of this test's own, stopped and removed when dropped.
struct Pg(Scripted);

impl Pg {
    /// Starts one; `None` after saying why the test does not run.
    fn start() -> Option<Self> {
        if let Ok(why) = std::env::var("SKILLS_TEST_POSTGRES_UNAVAILABLE") {
            common::not_run(&why);
            return None;
        }
        Scripted::start(
            &["start"],
            "SKILLS_TEST_POSTGRES_DIR",
            "SKILLS_TEST_ARCHIVE_URL",
            "scripts/postgres could not start PostgreSQL",
        )
        .map(Self)
    }

    fn script(&self, what: &str) {
        let status = Command::new(common::repo().join("scripts/postgres"))
            .args([what, &self.0.dir])
            .status()
            .unwrap();
        assert!(status.success(), "scripts/postgres {what} failed");
    }

    /// Messages in the archive whose content holds `word`; `None` while it is down.
    /// (On a thread of its own: the blocking client cannot run inside the test's
    /// runtime.)
    fn count(&self, word: &str) -> Option<i64> {
        let (url, pattern) = (self.0.url.clone(), format!("%{word}%"));
        std::thread::spawn(move || {
            let mut c = postgres::Client::connect(&url, postgres::NoTls).ok()?;
            c.query_one(
                "SELECT count(*) FROM skills_archive.messages WHERE content LIKE $1",
                &[&pattern],
            )
            .ok()
            .map(|r| r.get(0))
        })
        .join()
        .unwrap()
    }
}

/// A fake home with one Claude Code session, and its data folder.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in [".claude/projects/-work-demo", ".config"] {
            fs_err::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let home = Self { dir };
        fs_err::write(
            home.session(),
            claude_line("u1", None, "user", "Where do marmoset monkeys sleep?", 1),
        )
        .unwrap();
        home
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.path().join("data")
    }

    fn session(&self) -> PathBuf {
        self.path().join(".claude/projects/-work-demo/s1.jsonl")
    }

    fn append(&self, line: &str) {
        use std::io::Write;
        let mut f = fs_err::OpenOptions::new()
            .append(true)
            .open(self.session())
            .unwrap();
        f.write_all(line.as_bytes()).unwrap();
    }

    /// `skills serve --archive-push URL` over stdio in this home, its stderr in `log`.
    async fn serve(&self, url: &str, log: &Path) -> Client {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_skills"));
        cmd.args(["serve", "--archive-push", url])
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join(".config"))
            .env("XDG_DATA_HOME", self.path().join(".local/share"))
            .env("SKILLS_DIR", common::repo_skills())
            .env("SKILLS_DATA_DIR", self.data())
            .env("SKILLS_EMBEDDER", "none")
            .env("SKILLS_MACHINE_NAME", "served")
            .env_remove("SKILLS_ARCHIVE_URL")
            .env_remove("SKILLS_WATCH");
        for var in common::TOOL_LOCATIONS {
            cmd.env_remove(var);
        }
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        ().serve(transport).await.unwrap()
    }

    /// `skills status --json` (no `--archive`: the background push's record only).
    fn status(&self) -> (Value, String) {
        let out = common::cli::skills()
            .args(["status", "--json"])
            .env("HOME", self.path())
            .env("SKILLS_DATA_DIR", self.data())
            .env_remove("SKILLS_ARCHIVE_URL")
            .env_remove("SKILLS_MODEL_DIR")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (serde_json::from_str(&text).unwrap(), text)
    }

    /// The pids of processes whose command line or environment names this home (the
    /// server and its children).
    fn processes(&self) -> Vec<u32> {
        let needle = self.path().to_string_lossy().into_owned();
        let mut out = Vec::new();
        for entry in fs_err::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Ok(mut cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            cmdline.extend(std::fs::read(entry.path().join("environ")).unwrap_or_default());
            let zombie = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.split_whitespace().next() == Some("Z"))
                })
                .unwrap_or(true);
            if !zombie && String::from_utf8_lossy(&cmdline).contains(&needle) {
                out.push(pid);
            }
        }
        out
    }

    /// Waits until no process names this home; panics with them after 10 s.
    async fn all_gone(&self) {
        let started = Instant::now();
        while !self.processes().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "processes outlived the server: {:?}",
                self.processes()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn claude_line(uuid: &str, parent: Option<&str>, role: &str, text: &str, second: u32) -> String {
    let message = if role == "user" {
        json!({"role": "user", "content": text})
    } else {
        json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]})
    };
    let record = json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/work/demo", "sessionId": "s1", "version": "2.0.0",
        "type": role, "message": message, "uuid": uuid,
        "timestamp": format!("2026-03-01T10:00:{second:02}.000Z"),
    });
    format!("{record}\n")
}

/// Calls `search_conversations` for `term` until a row holds it; each call must
/// answer within 5 s. Panics after [`PATIENCE`].
async fn find(client: &Client, term: &str) {
    let started = Instant::now();
    loop {
        let asked = Instant::now();
        let answer = text(&call(client, "search_conversations", json!({"term": term})).await);
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "a local call took {:?}",
            asked.elapsed()
        );
        if answer.contains(term) {
            return;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "`{term}` not found; last answer: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls `what` until it is true; panics naming `doing` after [`PATIENCE`].
async fn until(doing: &str, mut what: impl FnMut() -> bool) {
    let started = Instant::now();
    while !what() {
        assert!(started.elapsed() < PATIENCE, "timed out {doing}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_goes_on_while_the_archive_is_down_and_the_next_push_completes() {
    let Some(pg) = Pg::start() else { return };
    let password = password(&pg.0.url);
    let home = Home::new();
    common::cli::ok(
        common::cli::skills()
            .arg("--data-dir")
            .arg(home.data())
            .args(["--archive", &pg.0.url, "archive", "migrate"]),
    );
    let log = home.path().join("serve.log");
    let client = home.serve(&pg.0.url, &log).await;

    // Imported, then pushed.
    find(&client, "marmoset").await;
    until("for the first push", || pg.count("marmoset") == Some(1)).await;

    // PostgreSQL stopped: local calls keep answering, imports go on, and the failed
    // push is shown by `skills status`.
    pg.script("pause");
    home.append(&claude_line(
        "a2",
        Some("u1"),
        "assistant",
        "In tree holes; the capybara does not.",
        2,
    ));
    find(&client, "capybara").await;
    until("for status to show the failed push", || {
        home.status().0["archive"]["background_push"]["failing"] == true
    })
    .await;
    let (status, status_text) = home.status();
    let push = &status["archive"]["background_push"];
    assert!(
        push["last_problem"].as_str().unwrap().contains("archive"),
        "{status}"
    );
    assert!(push["next_retry"].is_string(), "{status}");
    find(&client, "marmoset").await;
    let text_status = common::cli::stdout_of_success(
        common::cli::skills()
            .arg("status")
            .env("HOME", home.path())
            .env("SKILLS_DATA_DIR", home.data())
            .env_remove("SKILLS_ARCHIVE_URL"),
    );
    assert!(text_status.contains("FAILING since"), "{text_status}");

    // Back: the next push completes (the retry, with backoff).
    pg.script("resume");
    until("for the push after PostgreSQL came back", || {
        pg.count("capybara") == Some(1)
    })
    .await;
    until("for status to show the push completed", || {
        home.status().0["archive"]["background_push"]["failing"] == false
    })
    .await;
    let (status, _) = home.status();
    assert!(
        status["archive"]["background_push"]["last_success"].is_string(),
        "{status}"
    );

    client.cancel().await.unwrap();
    home.all_gone().await;
    let logged = fs_err::read_to_string(&log).unwrap();
    assert!(
        logged.contains("archive push failed"),
        "the failure is logged: {logged}"
    );
    for shown in [&logged, &status_text, &text_status] {
        assert!(!shown.contains(&password), "the password leaked:\n{shown}");
    }
}

/// An "archive" that accepts connections and never answers (a stalled network or a
/// hung server): the push waits on it, local calls do not, and stopping the server
/// ends the push at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_never_answers_blocks_neither_serving_nor_shutdown() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&accepted);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(conn); // never read, never answered, never closed
        }
    });
    let home = Home::new();
    let log = home.path().join("serve.log");
    let url = format!("postgres://someone:hung-pw-1@127.0.0.1:{port}/db?sslmode=disable");
    let client = home.serve(&url, &log).await;
    find(&client, "marmoset").await;
    until("for the push to connect", || {
        accepted.load(std::sync::atomic::Ordering::SeqCst) > 0
    })
    .await;
    // The push hangs on the archive; local calls answer meanwhile.
    find(&client, "marmoset").await;
    assert!(
        home.processes().len() >= 2,
        "the push is running beside the server"
    );
    let stopping = Instant::now();
    client.cancel().await.unwrap();
    home.all_gone().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(5),
        "the server took {:?} to stop",
        stopping.elapsed()
    );
    let logged = fs_err::read_to_string(&log).unwrap();
    assert!(!logged.contains("hung-pw-1"), "{logged}");
}
