//! `skills serve --archive-push URL`: after each background import, the store is
//! pushed to the team archive ([`crate::archive::push`]) by a child process running
//! [`PushCommand`] (`skills --data-dir D --json archive push`), one at a time, in the
//! importer's worker thread, between imports.
//!
//! How PostgreSQL being down or slow is kept away from local serving:
//! - The push runs in its own process; the server's MCP calls never wait for it
//!   (they read the store read-only, as the push does).
//! - A push that fails (archive unreachable, refused, schema missing) is retried after
//!   [`RETRY_AFTER`], doubling up to [`RETRY_MAX`]; imports meanwhile do not push
//!   again before the retry is due, so a down archive costs one refused connection
//!   per retry, not one per import. A connection attempt gives up after
//!   [`crate::archive::connect::CONNECT_TIMEOUT`].
//! - A push still running after [`DEADLINE`] (a stalled network) is killed: every
//!   batch it committed stays, and the next push sends the rest.
//! - At stop (and when the server dies, through [`super::lifeline`]) a running push is
//!   killed and reaped: no process outlives the server, nothing waits for PostgreSQL.
//!
//! What happened is kept in `<data_dir>/archive-push.json` ([`PushRecord`], also after
//! the server exits), which `skills status` shows: the last push, the last problem
//! (its text scrubbed of the password) and whether the last attempt failed.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::archive::Target;

/// First wait before a failed push is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Longest wait between retries.
pub const RETRY_MAX: Duration = Duration::from_secs(300);
/// Longest a push may run before it is killed (what it committed stays).
pub const DEADLINE: Duration = Duration::from_secs(600);
/// File name of the [`PushRecord`] in the data folder.
pub const RECORD: &str = "archive-push.json";

/// The command that pushes: `program args…` with the archive's URL in the child's
/// environment (`SKILLS_ARCHIVE_URL`), never on its command line, where `ps` would
/// show the password. It must print `skills archive push --json`'s report on stdout.
#[derive(Clone)]
pub struct PushCommand {
    /// The executable (the running `skills` binary).
    pub program: PathBuf,
    /// Arguments, e.g. `--data-dir D --json archive push`.
    pub args: Vec<OsString>,
    /// The archive (its [`Target`] scrubs the password from the child's messages).
    pub target: Target,
    /// The URL as given (may hold the password; only put in the child's environment).
    url: String,
}

impl PushCommand {
    /// A push of the archive at `url` (already parsed as `target`) by `program args…`.
    pub fn new(program: PathBuf, args: Vec<OsString>, target: Target, url: String) -> Self {
        Self {
            program,
            args,
            target,
            url,
        }
    }
}

impl std::fmt::Debug for PushCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("archive", &self.target.shown())
            .finish_non_exhaustive()
    }
}

/// What the background pushes did, kept in `<data_dir>/archive-push.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PushRecord {
    /// The archive (no password).
    pub archive: String,
    /// Pushes tried.
    pub attempts: u64,
    /// Pushes that failed.
    pub failures: u64,
    /// Start of the last push tried, RFC 3339 UTC.
    pub last_attempt: Option<String>,
    /// End of the last push that completed.
    pub last_success: Option<String>,
    /// Messages the last completed push sent.
    pub last_messages_sent: u64,
    /// Whether the last push tried failed (then [`PushRecord::last_problem`] says why
    /// and [`PushRecord::next_retry`] when it is tried again).
    pub failing: bool,
    /// The last failure's reason (kept after later successes), without the password.
    pub last_problem: Option<String>,
    /// When it happened.
    pub last_problem_at: Option<String>,
    /// When a failed push is tried again.
    pub next_retry: Option<String>,
}

/// The record in `data_dir`, if a server ever pushed from it.
pub fn read(data_dir: &Path) -> Option<PushRecord> {
    let bytes = fs_err::read(data_dir.join(RECORD)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The pushing side of the importer's worker.
pub(super) struct Pusher {
    command: PushCommand,
    record: PushRecord,
    /// Where the record is written (`None`: memory only).
    path: Option<PathBuf>,
    /// When a failed push is tried again, and the wait after that one.
    retry: Option<(Instant, Duration)>,
}

/// How one push ended.
pub(super) enum Outcome {
    /// Completed: messages sent.
    Pushed(u64),
    /// Failed, with the reason (scrubbed).
    Failed(String),
}

impl Pusher {
    pub(super) fn new(command: PushCommand, data_dir: Option<&Path>) -> Self {
        let path = data_dir.map(|d| d.join(RECORD));
        let archive = command.target.shown().to_owned();
        // A record of another archive starts over; the same archive's is continued.
        let record = data_dir
            .and_then(read)
            .filter(|r| r.archive == archive)
            .unwrap_or(PushRecord {
                archive,
                ..PushRecord::default()
            });
        Self {
            command,
            record,
            path,
            retry: None,
        }
    }

    /// Whether a push may start now: not while a failed one waits for its retry.
    pub(super) fn may_push(&self) -> bool {
        self.retry.is_none_or(|(at, _)| at <= Instant::now())
    }

    /// When a failed push is due again.
    pub(super) fn retry_at(&self) -> Option<Instant> {
        self.retry.map(|(at, _)| at)
    }

    /// The child that pushes, started (stdin closed, stdout and stderr piped).
    ///
    /// # Errors
    /// The reason it could not start.
    pub(super) fn spawn(&mut self) -> Result<std::process::Child, String> {
        self.record.attempts += 1;
        self.record.last_attempt = Some(super::now());
        let c = &self.command;
        let mut cmd = Command::new(&c.program);
        super::lifeline::mark(&mut cmd);
        cmd.args(&c.args)
            .env(crate::settings::ARCHIVE_URL.name, &c.url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", c.program.display()))
    }

    /// Reads what a finished (or killed) child said: its report, else its error.
    pub(super) fn outcome(
        &self,
        status: Option<std::process::ExitStatus>,
        stdout: &str,
        stderr: &str,
    ) -> Outcome {
        if status.is_some_and(|s| s.success()) {
            if let Ok(report) = serde_json::from_str::<serde_json::Value>(stdout) {
                let sent = report
                    .get("messages_sent")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                return Outcome::Pushed(sent);
            }
        }
        let said: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let why = match said.last() {
            Some(line) => line.trim_start_matches("error:").trim().to_owned(),
            None => match status {
                Some(s) => format!("`skills archive push` ended ({s}) without a report"),
                None => "`skills archive push` could not be waited for".to_owned(),
            },
        };
        Outcome::Failed(self.command.target.scrub(&why))
    }

    /// Records how a push ended, logs it, and schedules the retry of a failed one.
    pub(super) fn finish(&mut self, outcome: Outcome) {
        let now = super::now();
        match outcome {
            Outcome::Pushed(sent) => {
                if sent > 0 {
                    crate::terminal::log(format_args!(
                        "skills: pushed {sent} message{} to the archive {}",
                        if sent == 1 { "" } else { "s" },
                        self.record.archive
                    ));
                }
                if self.record.failing {
                    crate::terminal::log(format_args!(
                        "skills: the archive {} is reachable again",
                        self.record.archive
                    ));
                }
                self.retry = None;
                self.record.failing = false;
                self.record.next_retry = None;
                self.record.last_success = Some(now);
                self.record.last_messages_sent = sent;
            }
            Outcome::Failed(why) => {
                let wait = self
                    .retry
                    .map_or(RETRY_AFTER, |(_, w)| (w * 2).min(RETRY_MAX));
                crate::terminal::log(format_args!(
                    "skills: archive push failed ({why}); local serving goes on; trying again in \
                     {} s",
                    wait.as_secs()
                ));
                self.retry = Some((Instant::now() + wait, wait));
                self.record.failures += 1;
                self.record.failing = true;
                self.record.last_problem = Some(why);
                self.record.last_problem_at = Some(now);
                let next = chrono::Utc::now()
                    + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::zero());
                self.record.next_retry =
                    Some(next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
            }
        }
        self.write();
    }

    /// Writes the record (best effort, atomically).
    fn write(&self) {
        let Some(path) = &self.path else {
            return;
        };
        let Ok(bytes) = serde_json::to_vec_pretty(&self.record) else {
            return;
        };
        let tmp = path.with_extension("json.tmp");
        if fs_err::write(&tmp, bytes).is_ok() {
            let _ = fs_err::rename(&tmp, path);
        }
    }
}

/// Reads `from` to its end on a thread of its own (a report bigger than the pipe must
/// not block the child while the worker waits for it).
pub(super) fn drain(
    from: Option<impl Read + Send + 'static>,
) -> Option<std::thread::JoinHandle<String>> {
    from.map(|mut out| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pusher(dir: &Path) -> Pusher {
        let url = "postgres://alice:pw-s3cret@db.example:5432/team?sslmode=disable";
        let target = Target::parse_with(url, &|_| None).unwrap();
        Pusher::new(
            PushCommand::new(PathBuf::from("skills"), Vec::new(), target, url.into()),
            Some(dir),
        )
    }

    #[test]
    fn a_failure_is_recorded_scrubbed_and_retried_later_doubling() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = pusher(dir.path());
        assert!(p.may_push());
        let out = p.outcome(
            None,
            "",
            "note\nerror: archive postgres://alice@db.example:5432/team: cannot connect: \
             password pw-s3cret refused\n",
        );
        p.finish(out);
        assert!(!p.may_push(), "a failed push waits for its retry");
        let first = p.retry.unwrap().1;
        assert_eq!(first, RETRY_AFTER);
        let r = read(dir.path()).unwrap();
        assert!(r.failing);
        let problem = r.last_problem.unwrap();
        assert!(
            problem.starts_with("archive postgres://alice@"),
            "{problem}"
        );
        assert!(!problem.contains("pw-s3cret"), "{problem}");
        assert!(format!("{:?}", p.command).contains("db.example"));
        assert!(!format!("{:?}", p.command).contains("pw-s3cret"));
        p.finish(Outcome::Failed("again".into()));
        assert_eq!(p.retry.unwrap().1, RETRY_AFTER * 2);
        p.finish(Outcome::Pushed(7));
        assert!(p.may_push());
        let r = read(dir.path()).unwrap();
        assert!(!r.failing);
        assert_eq!(r.last_messages_sent, 7);
        assert_eq!((r.attempts, r.failures), (0, 2));
        assert_eq!(r.last_problem.as_deref(), Some("again"));
        // The next server on the same archive continues the record.
        assert_eq!(pusher(dir.path()).record, r);
    }

    #[test]
    fn a_report_on_stdout_is_a_completed_push() {
        let dir = tempfile::tempdir().unwrap();
        let p = pusher(dir.path());
        let ok = std::process::Command::new("true").status().unwrap();
        match p.outcome(Some(ok), r#"{"messages_sent": 12}"#, "") {
            Outcome::Pushed(n) => assert_eq!(n, 12),
            Outcome::Failed(why) => panic!("{why}"),
        }
        match p.outcome(Some(ok), "not json", "") {
            Outcome::Pushed(_) => panic!("no report is no push"),
            Outcome::Failed(why) => assert!(why.contains("without a report"), "{why}"),
        }
    }
}
