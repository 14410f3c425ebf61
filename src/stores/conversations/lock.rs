//! Waiting for a DuckDB file lock that another process holds, and naming that process.

use std::path::Path;

use duckdb::Connection;

use super::duck;
use crate::stores::StoreError;

/// How long [`super::ConversationStore::open_rw`] waits for other processes' locks.
pub(super) const WRITE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// How long [`super::ConversationStore::open_ro`] waits for a writer's lock.
pub(super) const READ_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `open` until it succeeds, fails for another reason than a file lock held by
/// another process, or `wait` has passed (then [`StoreError::Locked`]). When it has
/// to wait longer than [`WAIT_NOTE_AFTER`], it says once on stderr which process
/// holds the file (DuckDB's lock error names its program and PID).
pub(super) fn wait_for_lock(
    path: &Path,
    wait: std::time::Duration,
    open: impl Fn() -> duckdb::Result<Connection>,
) -> Result<Connection, StoreError> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(10);
    let mut said = false;
    loop {
        match open() {
            Ok(conn) => return Ok(conn),
            Err(e) if e.to_string().contains("Could not set lock on file") => {
                let detail = e.to_string();
                if start.elapsed() >= wait {
                    return Err(StoreError::Locked {
                        path: path.to_path_buf(),
                        waited_secs: wait.as_secs(),
                        holder: lock_holder(&detail),
                        detail,
                    });
                }
                if !said && start.elapsed() >= WAIT_NOTE_AFTER {
                    said = true;
                    crate::terminal::log(format_args!(
                        "note: waiting up to {} s for `{}`: it is held by {}",
                        wait.as_secs(),
                        path.display(),
                        lock_holder(&detail)
                    ));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(250));
            }
            Err(e) => return Err(duck(path, e)),
        }
    }
}

/// How long [`wait_for_lock`] waits before saying who holds the file.
const WAIT_NOTE_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// The process named by DuckDB's lock error (`… Conflicting lock is held in
/// /usr/bin/skills (PID 1234) by user me. See also …` → `/usr/bin/skills (PID 1234)
/// by user me`), or "another process" when the message has no such part.
pub fn lock_holder(detail: &str) -> String {
    const HELD: &str = "lock is held in ";
    let Some(at) = detail.find(HELD) else {
        return "another process".into();
    };
    let rest = &detail[at + HELD.len()..];
    let end = rest
        .find(". See")
        .or_else(|| rest.find('\n'))
        .unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').trim().to_owned()
}
