//! The test PostgreSQL (`scripts/postgres`, started by `./scripts/test`, which exports
//! `SKILLS_TEST_ARCHIVE_URL`) and a fresh database on it per test.

use std::path::Path;
use std::process::{Command, Stdio};

use super::not_run;

/// The server's superuser URL, or `None` after saying why the test does not run.
pub fn server() -> Option<String> {
    let found = server_or_why();
    if let Err(why) = &found {
        not_run(why);
    }
    found.ok()
}

/// The server's superuser URL, or why there is none (the text [`server`] records).
pub fn server_or_why() -> Result<String, String> {
    match std::env::var("SKILLS_TEST_ARCHIVE_URL") {
        Ok(url) if !url.is_empty() => Ok(url),
        _ => Err(
            std::env::var("SKILLS_TEST_POSTGRES_UNAVAILABLE").unwrap_or_else(|_| {
                "no PostgreSQL: SKILLS_TEST_ARCHIVE_URL is unset (./scripts/test starts one; \
                 or eval \"$(scripts/postgres start)\")"
                    .into()
            }),
        ),
    }
}

/// The test server's superuser password (in `SKILLS_TEST_ARCHIVE_URL`).
pub fn server_password() -> String {
    password(&std::env::var("SKILLS_TEST_ARCHIVE_URL").unwrap())
}

/// A server `scripts/postgres` started for one test (`start`, or `replica URL`): its
/// folder and superuser URL. Stopped and its folder removed when dropped.
pub struct Scripted {
    /// The server's folder (what `scripts/postgres stop` takes).
    pub dir: String,
    /// Its superuser URL.
    pub url: String,
}

impl Scripted {
    /// Runs `scripts/postgres args…` and reads the folder and URL from the exports it
    /// prints as `dir_var` and `url_var`; `None` after saying why the test does not run
    /// (the script's `SKILLS_TEST_POSTGRES_UNAVAILABLE`, else `failed`).
    pub fn start(args: &[&str], dir_var: &str, url_var: &str, failed: &str) -> Option<Self> {
        let out = Command::new(super::repo().join("scripts/postgres"))
            .args(args)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let var = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(|v| v.replace('\\', ""))
        };
        if !out.status.success() {
            not_run(&var("SKILLS_TEST_POSTGRES_UNAVAILABLE").unwrap_or_else(|| failed.into()));
            return None;
        }
        Some(Self {
            dir: var(dir_var).unwrap(),
            url: var(url_var).unwrap(),
        })
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        let _ = Command::new(super::repo().join("scripts/postgres"))
            .args(["stop", &self.dir])
            .status();
    }
}

/// `url` (a `postgres://…/db` URL) with its database replaced by `db` and TLS off.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/{db}?sslmode=disable")
}

/// The password in a `postgres://user:password@…` URL.
pub fn password(url: &str) -> String {
    let (_, rest) = url.split_once("://").unwrap();
    let (auth, _) = rest.split_once('@').unwrap();
    auth.split_once(':').unwrap().1.to_owned()
}

/// A fresh database on the test server (named `t_` and 12 random hex digits), dropped
/// when this goes out of scope.
pub struct Db {
    admin: String,
    /// The database's name.
    pub name: String,
    /// Its URL (the superuser's, TLS off).
    pub url: String,
}

impl Db {
    /// Creates one on the server whose superuser URL is `admin`.
    pub fn new(admin: &str) -> Self {
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).unwrap();
        let name = format!("t_{}", hex::encode(bytes));
        let mut c = postgres::Client::connect(admin, postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Self {
            admin: admin.to_owned(),
            url: with_database(admin, &name),
            name,
        }
    }

    /// A new connection to it.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }

    /// Every message row of the archive (all columns), in key order, as text.
    pub fn dump(&self) -> Vec<String> {
        self.client()
            .query(
                "SELECT m::text FROM skills_archive.messages m
                 ORDER BY machine, source, conversation_id, message_id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// The `bigint` that `sql` (one row, one column) returns.
    pub fn count(&self, sql: &str) -> i64 {
        self.client().query_one(sql, &[]).unwrap().get(0)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// For the kill -9 tests: runs the push `push` makes once per entry of `waits_ms`,
/// killing it (SIGKILL) that many milliseconds after it started, and says how many
/// were still running when killed (the others had finished).
pub fn kill_pushes(push: impl Fn() -> Command, waits_ms: &[u64]) -> usize {
    let mut kills = 0;
    for &wait_ms in waits_ms {
        let mut child = push()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(wait_ms));
        if child.try_wait().unwrap().is_none() {
            kills += 1;
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
    }
    println!("pushes killed mid-way: {kills}");
    kills
}

/// Runs `skills` from data folder `data` (its name is the machine's label) with the
/// archive `archive` (none: the local stores) and the static model; (ok, stdout, stderr).
pub fn run(data: &Path, archive: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_skills"));
    c.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "static")
        .env("NO_COLOR", "1")
        .arg("--data-dir")
        .arg(data);
    if let Some(url) = archive {
        c.args(["--archive", url]);
    }
    let out = c
        .args(args)
        .env("SKILLS_MACHINE_NAME", data.file_name().unwrap())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `skills --json run SKILL --arg …` from data folder `data` (machine name `laptop`, no
/// embedder) on the local stores (`archive` `None`) or the archive: (success, the
/// JSON's `data` — `null` when stdout is not JSON —, stdout and stderr together).
pub fn run_skill(
    data: &Path,
    archive: Option<&str>,
    skill: &str,
    args: &[String],
) -> (bool, serde_json::Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skills"));
    cmd.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "none")
        .env("NO_COLOR", "1")
        .env("SKILLS_MACHINE_NAME", "laptop")
        .arg("--data-dir")
        .arg(data);
    if let Some(url) = archive {
        cmd.args(["--archive", url]);
    }
    cmd.args(["--json", "run", skill]);
    for a in args {
        cmd.args(["--arg", a]);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let data = serde_json::from_str::<serde_json::Value>(&stdout)
        .map(|v| v["data"].clone())
        .unwrap_or(serde_json::Value::Null);
    (out.status.success(), data, format!("{stdout}{stderr}"))
}

/// The fields only rows from the archive have.
pub const ARCHIVE_ONLY: [&str; 3] = ["machine", "machine_id", "user"];

/// `data` (a skill's output on the archive) without what only the archive has: each
/// row's [`ARCHIVE_ONLY`] fields and their names in `columns`, and the machine id in
/// each row's `cites`.
pub fn without_machine(data: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let mut data = data.clone();
    if let Some(rows) = data.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(row) = row.as_object_mut() {
                for name in ARCHIVE_ONLY {
                    row.remove(name);
                }
                if let Some(cites) = row.get_mut("cites").and_then(Value::as_object_mut) {
                    cites.remove("machine_id");
                }
            }
        }
    }
    if let Some(columns) = data.get_mut("columns").and_then(Value::as_array_mut) {
        columns.retain(|c| !ARCHIVE_ONLY.contains(&c.as_str().unwrap_or("")));
    }
    data
}

/// The machine id of data folder `dir` (made by its first push).
pub fn machine_id_of(dir: &Path) -> String {
    fs_err::read_to_string(dir.join(skills::archive::machine::MACHINE_ID_FILE))
        .unwrap()
        .trim()
        .to_owned()
}

/// [`run`]'s stdout as JSON, asserting the run succeeded.
pub fn json_of(data: &Path, archive: Option<&str>, args: &[&str]) -> serde_json::Value {
    let (ok, out, err) = run(data, archive, args);
    assert!(ok, "{args:?} failed: {out}\n{err}");
    serde_json::from_str(&out).unwrap()
}

/// `skills --json archive push --no-redact` of the store in `data` into `db`; its report.
pub fn push_no_redact(data: &Path, db: &Db) -> serde_json::Value {
    json_of(
        data,
        Some(&db.url),
        &["--json", "archive", "push", "--no-redact"],
    )
}

/// The LoCoMo dev half's first `max` conversations as messages — each session a
/// conversation, a turn every 30 s from a day per session — and their questions. With
/// `marked`, a shared photo's caption is appended to its turn and every 13th user turn
/// is marked injected (harness text, no one's neighbour). `None` (not run) without the
/// corpus.
pub fn locomo_sample(
    max: usize,
    marked: bool,
) -> Option<(Vec<skills::ingest::Message>, Vec<String>)> {
    use chrono::TimeZone;
    use serde_json::Value;
    let corpus = super::corpus()?;
    let file = corpus.join("locomo/locomo-dev.json");
    let data: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    let (mut messages, mut questions) = (Vec::new(), Vec::new());
    for (s, sample) in data.iter().take(max).enumerate() {
        let conv = &sample["conversation"];
        let a = conv["speaker_a"].as_str().unwrap_or("");
        for n in 1..=100u32 {
            let Some(turns) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
                continue;
            };
            let id = format!("locomo{s}-s{n}");
            let start = 1_680_000_000 + i64::from(n) * 86_400 + s as i64 * 7;
            for (i, t) in turns.iter().enumerate() {
                let mut text = t["text"].as_str().unwrap_or("").to_owned();
                if marked {
                    if let Some(c) = t.get("blip_caption").and_then(Value::as_str) {
                        text.push_str(&format!(" [shares a photo: {c}]"));
                    }
                }
                let mut m = super::message(&id, i as i64, &text);
                m.message_id = t["dia_id"].as_str().unwrap_or("").to_owned();
                m.timestamp = chrono::Utc.timestamp_opt(start + i as i64 * 30, 0).unwrap();
                m.role = if t["speaker"].as_str() == Some(a) {
                    "user"
                } else {
                    "assistant"
                }
                .into();
                m.is_injected = marked && m.role == "user" && i % 13 == 5;
                messages.push(m);
            }
        }
        for q in sample["qa"].as_array().into_iter().flatten() {
            if let Some(q) = q["question"].as_str() {
                questions.push(q.to_owned());
            }
        }
    }
    Some((messages, questions))
}
