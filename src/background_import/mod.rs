//! The background importer of `skills serve`, keeping the conversations store current
//! while serving: watches the default transcript locations ([`DefaultLocations`]) and
//! any extra paths, and imports what changed in the background.
//!
//! How, and why so:
//! - **Noticing.** The `notify` crate (inotify on Linux, FSEvents, ReadDirectoryChangesW)
//!   watches each location's fixed folder recursively; when the OS watch limit is hit
//!   (at start or later) or [`Mode::Poll`] is asked for, a thread compares every
//!   file's size and modification time every [`POLL_INTERVAL`] instead. Which one runs is
//!   said once on stderr.
//! - **New folders.** A folder that appears under a watched location (Claude Code
//!   starts a project's history in a new folder) may hold files before its own watch
//!   exists, so their events are never sent: it is walked at once, and again every
//!   [`FRESH_REWALK`] until a walk finds nothing new and it is at least
//!   [`FRESH_SETTLED`] old. Every file found is imported.
//! - **Rescan.** Every [`RESCAN_INTERVAL`], the watched locations are walked and files
//!   whose size or modification time changed since the last walk are imported: a lost
//!   event (an overflowed inotify queue) delays an import by at most that long.
//! - **Debouncing.** Changed transcripts are collected until no change came for
//!   [`SETTLE`], or at the latest [`MAX_DELAY`] after the first one (a session being
//!   written without pause is still imported every couple of seconds).
//! - **Importing.** Each batch is imported by one child process running the
//!   [`IngestCommand`] (`skills ingest --json --quiet PATH…`), one at a time, at most
//!   [`CHUNK`] files per run: the same code path as a manual `skills ingest` (the
//!   store's write lock, incremental reads of appended lines, the index and embeddings
//!   published at close), and the lock is held for one chunk at a time, so calls wait
//!   no longer than they would for a manual ingest. The child gets no stdin and never
//!   serves or watches, so it cannot start more processes, and it dies with the
//!   server even when the server is killed ([`lifeline`]). At start one catch-up run
//!   imports what changed while no server ran (unchanged files are not read).
//! - **Safety.** Files that do not exist (deleted, renamed away) or that no importer
//!   recognises yet (created empty, first line not written) are left for their next
//!   change; the importer keeps stored rows of a truncated or rewritten file and
//!   re-reads a half-written last line, so nothing here deletes rows. Changes under
//!   the ignored folders (the data folder: the store's own writes) are dropped, so an
//!   import never triggers another. A run that could not import at all (store locked
//!   past its wait, child failed to start) is retried after [`RETRY_AFTER`], doubling
//!   up to [`RETRY_MAX`]: nothing spins.
//! - **Stopping.** Dropping the [`IngestWatch`] stops watching, kills a running child
//!   and waits for it: no process outlives the server. A killed import loses at most
//!   its open transaction; the next run goes on from what was committed.
//!
//! - **Pushing.** With [`Options::push`] (`skills serve --archive-push URL`), each
//!   import is followed by a push to the team archive in a child process, retried
//!   with backoff when the archive is down, killed at stop ([`push`]).
//!
//! Nothing here prints to stdout.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher as _};

use crate::ingest::watched::DefaultLocations;

pub mod lifeline;
pub mod push;

/// Quiet time after the last change before a batch is imported.
pub const SETTLE: Duration = Duration::from_millis(100);
/// Longest wait between the first pending change and its import, even while changes
/// keep coming.
pub const MAX_DELAY: Duration = Duration::from_secs(2);
/// How often the poll fallback compares modification times.
pub const POLL_INTERVAL: Duration = Duration::from_secs(5);
/// Pause between two walks of a folder that just appeared.
pub const FRESH_REWALK: Duration = Duration::from_millis(250);
/// A new folder is walked until a walk finds nothing new and it is this old.
pub const FRESH_SETTLED: Duration = Duration::from_secs(1);
/// How often the watched locations are walked for changes the events missed.
pub const RESCAN_INTERVAL: Duration = Duration::from_secs(60);
/// Most files given to one import run.
pub const CHUNK: usize = 256;
/// First wait before a run that could not import is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// Longest wait between retries.
pub const RETRY_MAX: Duration = Duration::from_secs(600);
/// How often a running import is checked for having ended (and stop requests for
/// being due).
const CHILD_CHECK: Duration = Duration::from_millis(50);

/// How changes are noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The platform's file events (inotify, FSEvents, ReadDirectoryChangesW); falls
    /// back to [`Mode::Poll`] when the watch limit is reached.
    Notify,
    /// Modification times compared every [`POLL_INTERVAL`] (network filesystems, or
    /// when the watch limit is reached).
    Poll,
}

impl Mode {
    /// The mode `SKILLS_WATCH` asks for: unset, empty or `notify` → [`Mode::Notify`],
    /// `poll` → [`Mode::Poll`].
    ///
    /// # Errors
    /// Any other value, named with the accepted ones.
    pub fn from_env() -> Result<Self, String> {
        match crate::settings::watch() {
            Ok(crate::settings::WatchChoice::Notify) => Ok(Self::Notify),
            Ok(crate::settings::WatchChoice::Poll) => Ok(Self::Poll),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The command that imports files: `program args… PATH…`, which must print
/// `skills ingest --json`'s summary object on stdout.
#[derive(Debug, Clone)]
pub struct IngestCommand {
    /// The executable (the running `skills` binary).
    pub program: PathBuf,
    /// Arguments before the paths, e.g. `--data-dir D ingest --json --quiet`.
    pub args: Vec<OsString>,
}

/// What to watch and how to import it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The default transcript locations (`None`: only [`Options::extra`]).
    pub defaults: Option<DefaultLocations>,
    /// Further files or folders to watch (`skills serve --watch PATH`); every file of
    /// a recognised format below them is imported.
    pub extra: Vec<PathBuf>,
    /// Folders whose changes are never imported (the data folder).
    pub ignore: Vec<PathBuf>,
    /// The import command.
    pub command: IngestCommand,
    /// How changes are noticed.
    pub mode: Mode,
    /// The data folder: the watcher's [`State`] is kept in
    /// `<data_dir>/servers/<pid>.json` while it runs, for `skills status`
    /// ([`servers`]); `None` keeps it in memory only.
    pub data_dir: Option<PathBuf>,
    /// Push to the team archive after each import ([`push`]); `None`: no pushing.
    pub push: Option<push::PushCommand>,
}

/// A running server's record in `<data_dir>/servers/<pid>.json`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ServerRecord {
    /// The server's process id.
    pub pid: u32,
    /// When it started watching, RFC 3339 UTC.
    pub started: String,
    /// What its watcher has done.
    pub watch: State,
}

/// The records of the servers watching for the store in `data_dir`, by pid; records
/// left by processes that no longer run are skipped (checked on Linux through
/// `/proc/<pid>`; elsewhere every record counts). Unreadable records are skipped.
pub fn servers(data_dir: &Path) -> Vec<ServerRecord> {
    let mut out: Vec<ServerRecord> = crate::walk::entries(&data_dir.join(SERVERS))
        .iter()
        .filter(|p| crate::ingest::has_ext(p, "json"))
        .filter_map(|p| fs_err::read(p).ok())
        .filter_map(|bytes| serde_json::from_slice::<ServerRecord>(&bytes).ok())
        .filter(|r| is_running(r.pid))
        .collect();
    out.sort_by_key(|r| r.pid);
    out
}

/// The folder of [`ServerRecord`]s inside the data folder.
const SERVERS: &str = "servers";

/// Whether process `pid` runs (Linux: `/proc/<pid>` exists; elsewhere assumed).
fn is_running(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// What the watcher has done so far, for `skills status` and logs.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// How changes are noticed now (`None` before watching started).
    pub mode: Option<Mode>,
    /// The watched files and folders.
    pub paths: Vec<PathBuf>,
    /// Import runs finished (whatever their result).
    pub runs: u64,
    /// Messages added by all runs.
    pub messages_added: u64,
    /// End of the last run, RFC 3339 UTC.
    pub last_run: Option<String>,
    /// Files waiting for the next run.
    pub pending: usize,
    /// Files the last run found ending in a line still being written (read when the
    /// writer finishes it and the file changes again; not a fault).
    #[serde(default)]
    pub unfinished: u64,
    /// The last run's problem, if it had one (faults or failure).
    pub last_problem: Option<String>,
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// An extra path does not exist.
    #[error("--watch `{0}`: no such file or folder")]
    Missing(PathBuf),
    /// The watcher thread could not be started.
    #[error("cannot start the transcript watcher: {0}")]
    Thread(std::io::Error),
}

/// A running watcher; dropping it stops watching and ends a running import.
pub struct IngestWatch {
    tx: mpsc::Sender<Msg>,
    thread: Option<std::thread::JoinHandle<()>>,
    state: Arc<Mutex<State>>,
    record: Option<PathBuf>,
}

impl IngestWatch {
    /// What the watcher has done so far.
    pub fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Drop for IngestWatch {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(record) = &self.record {
            let _ = fs_err::remove_file(record);
        }
    }
}

/// Messages to the worker thread.
enum Msg {
    /// Paths a file event named.
    Changed(Vec<PathBuf>),
    /// The OS watch limit was reached: switch to polling.
    Limit,
    /// Stop.
    Stop,
}

/// Starts watching and runs the catch-up import in the background; returns at once.
///
/// # Errors
/// [`WatchError::Missing`] for an extra path that does not exist;
/// [`WatchError::Thread`] when the worker thread cannot start. Watch failures after
/// that (a folder removed, the limit reached) are said on stderr, never fatal.
pub fn start(options: Options) -> Result<IngestWatch, WatchError> {
    if let Some(missing) = options.extra.iter().find(|p| !p.exists()) {
        return Err(WatchError::Missing(missing.clone()));
    }
    let (tx, rx) = mpsc::channel();
    let state = Arc::new(Mutex::new(State::default()));
    let record = options
        .data_dir
        .as_ref()
        .map(|d| d.join(SERVERS).join(format!("{}.json", std::process::id())));
    let worker = Worker::new(options, tx.clone(), Arc::clone(&state), record.clone());
    let thread = std::thread::Builder::new()
        .name("skills-ingest-watch".into())
        .spawn(move || worker.run(&rx))
        .map_err(WatchError::Thread)?;
    Ok(IngestWatch {
        tx,
        thread: Some(thread),
        state,
        record,
    })
}

/// The worker thread: owns the OS watcher, the pending paths and the child.
struct Worker {
    options: Options,
    /// The ignored folders, also canonicalised.
    ignore: Vec<PathBuf>,
    tx: mpsc::Sender<Msg>,
    state: Arc<Mutex<State>>,
    watcher: Option<Box<dyn notify::Watcher + Send>>,
    /// The poll fallback's thread, when polling.
    poller: Option<Poller>,
    pending: BTreeSet<PathBuf>,
    /// When the first pending change and the last change arrived.
    first: Option<Instant>,
    last: Instant,
    /// Paths of a run that could not import, the time to try again and the next wait.
    retry: Option<(Instant, Duration)>,
    failed: BTreeSet<PathBuf>,
    /// Where the [`ServerRecord`] is written, and when watching started.
    record: Option<PathBuf>,
    started: String,
    /// Folders that appeared: what their last walk found, when they appeared and when
    /// to walk them next.
    fresh: std::collections::HashMap<PathBuf, (Snapshot, Instant, Instant)>,
    /// What the last rescan found, and when the next is due (file events only).
    seen: Snapshot,
    rescan_at: Option<Instant>,
    /// The archive push after imports, when asked for.
    pusher: Option<push::Pusher>,
}

/// Size and modification time of files, by path.
type Snapshot = std::collections::HashMap<PathBuf, (u64, Option<std::time::SystemTime>)>;

/// Why a run ended early.
enum Ended {
    /// Asked to stop.
    Stop,
}

impl Worker {
    fn new(
        options: Options,
        tx: mpsc::Sender<Msg>,
        state: Arc<Mutex<State>>,
        record: Option<PathBuf>,
    ) -> Self {
        let mut ignore = options.ignore.clone();
        ignore.extend(
            options
                .ignore
                .iter()
                .filter_map(|p| fs_err::canonicalize(p).ok()),
        );
        let pusher = options
            .push
            .clone()
            .map(|c| push::Pusher::new(c, options.data_dir.as_deref()));
        Self {
            pusher,
            options,
            ignore,
            tx,
            state,
            watcher: None,
            poller: None,
            pending: BTreeSet::new(),
            first: None,
            last: Instant::now(),
            retry: None,
            failed: BTreeSet::new(),
            record,
            started: now(),
            fresh: std::collections::HashMap::new(),
            seen: Snapshot::new(),
            rescan_at: None,
        }
    }

    /// Writes the [`ServerRecord`] (best effort: a read-only data folder only loses
    /// `skills status` its watcher line).
    fn write_record(&self) {
        let Some(path) = &self.record else {
            return;
        };
        let record = ServerRecord {
            pid: std::process::id(),
            started: self.started.clone(),
            watch: self.state(),
        };
        let Ok(bytes) = serde_json::to_vec_pretty(&record) else {
            return;
        };
        if let Some(dir) = path.parent() {
            let _ = fs_err::create_dir_all(dir);
        }
        let tmp = path.with_extension("json.tmp");
        if fs_err::write(&tmp, bytes).is_ok() {
            let _ = fs_err::rename(&tmp, path);
        }
    }

    fn run(mut self, rx: &mpsc::Receiver<Msg>) {
        let paths = self.watch_paths();
        self.set_state(|s| s.paths = paths.clone());
        let mode = self.options.mode;
        self.watch(&paths, mode);
        if self.poller.is_none() {
            self.seen = scan(&paths);
            self.rescan_at = Some(Instant::now() + RESCAN_INTERVAL);
        }
        // Catch up with what changed while no server ran.
        let mut catch_up: Vec<PathBuf> = self
            .options
            .defaults
            .as_ref()
            .map(DefaultLocations::files)
            .unwrap_or_default();
        catch_up.extend(self.options.extra.iter().cloned());
        if !catch_up.is_empty() && matches!(self.import(catch_up, rx), Err(Ended::Stop)) {
            return;
        }
        // What no server pushed yet (imports while none ran, a push that failed).
        if matches!(self.push(rx), Err(Ended::Stop)) {
            return;
        }
        loop {
            let msg = match self.next_due() {
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => rx.recv_timeout(due.saturating_duration_since(Instant::now())),
            };
            match msg {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(msg) => self.take(msg),
                Err(RecvTimeoutError::Timeout) => {
                    self.rewalk_fresh();
                    self.rescan_if_due();
                    if self.first.is_some_and(|first| {
                        Instant::now() < (self.last + SETTLE).min(first + MAX_DELAY)
                    }) {
                        continue;
                    }
                    let mut batch: Vec<PathBuf> =
                        std::mem::take(&mut self.pending).into_iter().collect();
                    self.first = None;
                    if self.retry.is_some_and(|(at, _)| at <= Instant::now()) {
                        batch.extend(std::mem::take(&mut self.failed));
                        batch.sort();
                        batch.dedup();
                    }
                    let imported = !batch.is_empty();
                    if imported && matches!(self.import(batch, rx), Err(Ended::Stop)) {
                        return;
                    }
                    // After each import, and when a failed push is due again.
                    let retry_due = self
                        .pusher
                        .as_ref()
                        .and_then(push::Pusher::retry_at)
                        .is_some_and(|at| at <= Instant::now());
                    if (imported || retry_due) && matches!(self.push(rx), Err(Ended::Stop)) {
                        return;
                    }
                }
            }
        }
    }

    /// When the next run is due: the pending batch's settle or delay limit, or a retry.
    fn next_due(&self) -> Option<Instant> {
        let batch = self
            .first
            .filter(|_| !self.pending.is_empty())
            .map(|first| (self.last + SETTLE).min(first + MAX_DELAY));
        let retry = self
            .retry
            .map(|(at, _)| at)
            .filter(|_| !self.failed.is_empty());
        let fresh = self.fresh.values().map(|(_, _, at)| *at).min();
        let rescan = self.rescan_at.filter(|_| self.poller.is_none());
        let push = self.pusher.as_ref().and_then(push::Pusher::retry_at);
        [batch, retry, fresh, rescan, push]
            .into_iter()
            .flatten()
            .min()
    }

    /// Queues the wanted files of `files` whose size or time differ from `before`.
    fn queue_changed(&mut self, files: &Snapshot, before: &Snapshot) {
        let changed: Vec<PathBuf> = files
            .iter()
            .filter(|(path, stamp)| before.get(*path) != Some(*stamp))
            .map(|(path, _)| path.clone())
            .collect();
        if !changed.is_empty() {
            self.take(Msg::Changed(changed));
        }
    }

    /// Walks the new folders that are due again; forgets those that settled.
    fn rewalk_fresh(&mut self) {
        let now = Instant::now();
        let due: Vec<PathBuf> = self
            .fresh
            .iter()
            .filter(|(_, (_, _, at))| *at <= now)
            .map(|(dir, _)| dir.clone())
            .collect();
        for dir in due {
            let Some((before, born, _)) = self.fresh.remove(&dir) else {
                continue;
            };
            let files = scan(std::slice::from_ref(&dir));
            let same = files == before;
            self.queue_changed(&files, &before);
            if !same || now.duration_since(born) < FRESH_SETTLED {
                self.fresh.insert(dir, (files, born, now + FRESH_REWALK));
            }
        }
    }

    /// Every [`RESCAN_INTERVAL`]: queues the files that changed since the last rescan.
    fn rescan_if_due(&mut self) {
        let Some(at) = self.rescan_at else {
            return;
        };
        if at > Instant::now() || self.poller.is_some() {
            return;
        }
        let files = scan(&self.watch_paths());
        let before = std::mem::take(&mut self.seen);
        self.queue_changed(&files, &before);
        self.seen = files;
        self.rescan_at = Some(Instant::now() + RESCAN_INTERVAL);
    }

    /// True for a folder inside a watched location (not an ignored one).
    fn watched_folder(&self, path: &Path) -> bool {
        path.is_dir()
            && !self.ignore.iter().any(|dir| path.starts_with(dir))
            && self
                .watch_paths()
                .iter()
                .any(|root| path.starts_with(root) && path != root)
    }

    /// Files and folders to watch: the default locations' fixed folders and the extra
    /// paths (a file through its folder, so a file replaced by rename stays watched).
    fn watch_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self
            .options
            .defaults
            .as_ref()
            .map(DefaultLocations::watch_paths)
            .unwrap_or_default();
        paths.extend(self.options.extra.iter().cloned());
        paths.sort();
        paths.dedup();
        paths
    }

    /// Starts the OS watcher (or the poller) on `paths`, saying on stderr which.
    fn watch(&mut self, paths: &[PathBuf], mode: Mode) {
        self.watcher = None;
        let tx = self.tx.clone();
        let handler = move |event: notify::Result<notify::Event>| match event {
            Ok(event) if is_change(&event) => {
                let _ = tx.send(Msg::Changed(event.paths));
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                let _ = tx.send(Msg::Limit);
            }
            Err(_) => {}
        };
        self.poller = None;
        if mode == Mode::Poll {
            self.poller = poll(paths.to_vec(), self.tx.clone());
            self.announce(paths, mode);
            return;
        }
        let mut watcher = match notify::recommended_watcher(handler) {
            Ok(w) => w,
            Err(e) => {
                crate::terminal::log(format_args!("skills: cannot watch transcripts ({e}); the store is updated by `skills ingest` only"));
                return;
            }
        };
        for path in paths {
            let (target, recursive) = if path.is_dir() {
                (path.as_path(), RecursiveMode::Recursive)
            } else {
                (path.parent().unwrap_or(path), RecursiveMode::NonRecursive)
            };
            if let Err(e) = watcher.watch(target, recursive) {
                if mode == Mode::Notify && matches!(e.kind, notify::ErrorKind::MaxFilesWatch) {
                    crate::terminal::log(format_args!(
                        "skills: the OS file watch limit is reached; polling transcripts for changes every {} s instead (raise fs.inotify.max_user_watches to watch)",
                        POLL_INTERVAL.as_secs()
                    ));
                    drop(watcher);
                    return self.watch(paths, Mode::Poll);
                }
                crate::terminal::log(format_args!(
                    "skills: cannot watch `{}`: {e}",
                    target.display()
                ));
            }
        }
        self.watcher = Some(Box::new(watcher));
        self.announce(paths, mode);
    }

    /// Says on stderr how `paths` are watched, and records it.
    fn announce(&mut self, paths: &[PathBuf], mode: Mode) {
        let how = match mode {
            Mode::Notify => "file events".to_owned(),
            Mode::Poll => format!("polling every {} s", POLL_INTERVAL.as_secs()),
        };
        let names: Vec<String> = paths.iter().map(|p| format!("`{}`", p.display())).collect();
        if names.is_empty() {
            crate::terminal::log(format_args!("skills: no transcript location to watch; the store is updated by `skills ingest` only"));
        } else {
            crate::terminal::log(format_args!(
                "skills: keeping the store current ({how}): {}",
                names.join(", ")
            ));
        }
        self.set_state(|s| s.mode = Some(mode));
        self.write_record();
    }

    /// Handles a message other than [`Msg::Stop`].
    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Changed(paths) => {
                let now = Instant::now();
                let mut added = false;
                for path in paths {
                    // A SQLite source (Cursor, OpenCode) changes through its WAL.
                    let path = database_of_wal(&path).unwrap_or(path);
                    if self.wanted(&path) {
                        added |= self.pending.insert(path.clone());
                    }
                    // A folder that appeared: its files may predate its watch.
                    if !self.fresh.contains_key(&path) && self.watched_folder(&path) {
                        let files = scan(std::slice::from_ref(&path));
                        for file in files.keys() {
                            if self.wanted(file) {
                                added |= self.pending.insert(file.clone());
                            }
                        }
                        self.fresh.insert(path, (files, now, now + FRESH_REWALK));
                    }
                }
                if added {
                    self.last = now;
                    self.first.get_or_insert(now);
                    let n = self.pending.len();
                    self.set_state(|s| s.pending = n);
                }
            }
            Msg::Limit => {
                if self.state().mode == Some(Mode::Notify) {
                    crate::terminal::log(format_args!(
                        "skills: the OS file watch limit is reached; polling transcripts for changes every {} s instead (raise fs.inotify.max_user_watches to watch)",
                        POLL_INTERVAL.as_secs()
                    ));
                    let paths = self.watch_paths();
                    self.watch(&paths, Mode::Poll);
                }
            }
            Msg::Stop => {}
        }
    }

    /// True when a change of `path` may need importing: not in an ignored folder, and
    /// a default location's transcript or inside an extra path.
    fn wanted(&self, path: &Path) -> bool {
        if self.ignore.iter().any(|dir| path.starts_with(dir)) {
            return false;
        }
        let extra = self.options.extra.iter().any(|p| path.starts_with(p));
        extra
            || self
                .options
                .defaults
                .as_ref()
                .is_some_and(|d| d.names(path))
    }

    fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_state(&self, f: impl FnOnce(&mut State)) {
        f(&mut self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    /// Imports `paths` (files that exist and are recognised, and folders), newest
    /// first, [`CHUNK`] at a time; changes arriving meanwhile are queued.
    fn import(&mut self, paths: Vec<PathBuf>, rx: &mpsc::Receiver<Msg>) -> Result<(), Ended> {
        let mut ready: Vec<(std::time::SystemTime, PathBuf)> = paths
            .into_iter()
            .filter(|p| p.is_dir() || (p.is_file() && importable(p)))
            .map(|p| {
                let mtime = fs_err::metadata(&p)
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (mtime, p)
            })
            .collect();
        ready.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let ready: Vec<PathBuf> = ready.into_iter().map(|(_, p)| p).collect();
        for chunk in ready.chunks(CHUNK) {
            let outcome = self.run_child(chunk, rx)?;
            self.finish_run(chunk, outcome);
        }
        let n = self.pending.len();
        self.set_state(|s| s.pending = n);
        self.write_record();
        Ok(())
    }

    /// Runs the import command on `paths` until it ends; [`Ended::Stop`] (after
    /// killing it) when asked to stop meanwhile.
    fn run_child(
        &mut self,
        paths: &[PathBuf],
        rx: &mpsc::Receiver<Msg>,
    ) -> Result<RunOutcome, Ended> {
        let command = &self.options.command;
        let mut cmd = Command::new(&command.program);
        lifeline::mark(&mut cmd);
        let spawned = cmd
            .args(&command.args)
            .args(paths)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                return Ok(RunOutcome::Failed(format!(
                    "cannot start `{}`: {e}",
                    command.program.display()
                )))
            }
        };
        // Read stdout on its own thread: a summary bigger than the pipe must not
        // block the child while this thread waits for it to end.
        let reader = child.stdout.take().map(|mut out| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = out.read_to_string(&mut text);
                text
            })
        });
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            match rx.recv_timeout(CHILD_CHECK) {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    stop_child(&mut child);
                    return Err(Ended::Stop);
                }
                Ok(msg) => self.take(msg),
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        let out = reader.and_then(|r| r.join().ok()).unwrap_or_default();
        Ok(match serde_json::from_str::<serde_json::Value>(&out) {
            Ok(summary) if summary.is_object() => RunOutcome::Ran(summary),
            _ => RunOutcome::Failed(match status {
                Some(s) => format!("`skills ingest` ended ({s}) without a summary"),
                None => "`skills ingest` could not be waited for".to_owned(),
            }),
        })
    }

    /// Pushes to the archive when asked for and no failed push waits for its retry:
    /// runs the push child until it ends or passes [`push::DEADLINE`] (killed then);
    /// [`Ended::Stop`] (after killing it) when asked to stop meanwhile. Changes arriving
    /// meanwhile are queued.
    fn push(&mut self, rx: &mpsc::Receiver<Msg>) -> Result<(), Ended> {
        let Some(pusher) = self.pusher.as_mut().filter(|p| p.may_push()) else {
            return Ok(());
        };
        let mut child = match pusher.spawn() {
            Ok(child) => child,
            Err(why) => {
                pusher.finish(push::Outcome::Failed(why));
                return Ok(());
            }
        };
        let stdout = push::drain(child.stdout.take());
        let stderr = push::drain(child.stderr.take());
        let started = Instant::now();
        let mut late = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            if started.elapsed() >= push::DEADLINE {
                late = true;
                stop_child(&mut child);
                break None;
            }
            match rx.recv_timeout(CHILD_CHECK) {
                Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    stop_child(&mut child);
                    return Err(Ended::Stop);
                }
                Ok(msg) => self.take(msg),
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        let text = |h: Option<std::thread::JoinHandle<String>>| {
            h.and_then(|h| h.join().ok()).unwrap_or_default()
        };
        let (out, err) = (text(stdout), text(stderr));
        let Some(pusher) = self.pusher.as_mut() else {
            return Ok(());
        };
        let outcome = if late {
            push::Outcome::Failed(format!(
                "the push was stopped after {} s (the archive is slow or unreachable); \
                 what it committed stays and the next push sends the rest",
                push::DEADLINE.as_secs()
            ))
        } else {
            pusher.outcome(status, &out, &err)
        };
        pusher.finish(outcome);
        Ok(())
    }

    /// Records a run's result, logs what it added or what went wrong, and schedules a
    /// retry of a run that could not import.
    fn finish_run(&mut self, paths: &[PathBuf], outcome: RunOutcome) {
        let now = now();
        match outcome {
            RunOutcome::Ran(summary) => {
                let count = |k: &str| {
                    summary
                        .get(k)
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(0)
                };
                let added = count("messages_added");
                let imported = count("files_imported");
                let faults: Vec<String> = summary
                    .get("faults")
                    .and_then(serde_json::Value::as_array)
                    .map(|fs| fs.iter().map(describe_fault).collect())
                    .unwrap_or_default();
                if added > 0 {
                    let plural = |n: u64| if n == 1 { "" } else { "s" };
                    crate::terminal::log(format_args!(
                        "skills: imported {added} new message{} from {imported} changed file{}",
                        plural(added),
                        plural(imported)
                    ));
                }
                for fault in faults.iter().take(5) {
                    crate::terminal::log(format_args!("skills: import fault: {fault}"));
                }
                if faults.len() > 5 {
                    crate::terminal::log(format_args!(
                        "skills: … and {} more import faults",
                        faults.len() - 5
                    ));
                }
                for path in paths {
                    self.failed.remove(path);
                }
                if self.failed.is_empty() {
                    self.retry = None;
                }
                self.set_state(|s| {
                    s.runs += 1;
                    s.messages_added += added;
                    s.last_run = Some(now);
                    s.last_problem = faults.first().cloned();
                    s.unfinished = count("lines_unfinished");
                });
            }
            RunOutcome::Failed(why) => {
                let wait = self
                    .retry
                    .map_or(RETRY_AFTER, |(_, w)| (w * 2).min(RETRY_MAX));
                crate::terminal::log(format_args!(
                    "skills: background import failed ({why}); trying again in {} s",
                    wait.as_secs()
                ));
                self.failed.extend(paths.iter().cloned());
                self.retry = Some((Instant::now() + wait, wait));
                self.set_state(|s| {
                    s.runs += 1;
                    s.last_run = Some(now);
                    s.last_problem = Some(why);
                });
            }
        }
    }
}

/// The time now, RFC 3339 UTC to the second.
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// How one child run ended.
enum RunOutcome {
    /// It printed its summary (files it could not import are faults in it).
    Ran(serde_json::Value),
    /// It could not run or import at all.
    Failed(String),
}

/// A fault of the summary as `path:line: reason`.
fn describe_fault(fault: &serde_json::Value) -> String {
    let path = fault.get("path").and_then(|v| v.as_str()).unwrap_or("?");
    let reason = fault.get("reason").and_then(|v| v.as_str()).unwrap_or("?");
    match fault.get("line").and_then(serde_json::Value::as_u64) {
        Some(line) => format!("`{path}`:{line}: {reason}"),
        None => format!("`{path}`: {reason}"),
    }
}

/// True when an importer recognises the file now (a file created empty is not yet).
fn importable(path: &Path) -> bool {
    crate::ingest::has_ext(path, "parquet") || crate::ingest::detect(path).is_some()
}

/// The poll fallback's thread; dropping this ends it.
struct Poller {
    _stop: mpsc::Sender<()>,
}

/// Every [`POLL_INTERVAL`], compares the size and modification time (to the
/// nanosecond) of every file in `paths` with the previous look and sends the changed
/// and new ones as [`Msg::Changed`]. `None` when the thread cannot start.
fn poll(paths: Vec<PathBuf>, tx: mpsc::Sender<Msg>) -> Option<Poller> {
    let (stop, stopped) = mpsc::channel::<()>();
    let mut seen = scan(&paths);
    std::thread::Builder::new()
        .name("skills-ingest-poll".into())
        .spawn(move || loop {
            match stopped.recv_timeout(POLL_INTERVAL) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            let now = scan(&paths);
            let changed: Vec<PathBuf> = now
                .iter()
                .filter(|(path, stamp)| seen.get(*path) != Some(*stamp))
                .map(|(path, _)| path.clone())
                .collect();
            seen = now;
            if !changed.is_empty() && tx.send(Msg::Changed(changed)).is_err() {
                return;
            }
        })
        .ok()?;
    Some(Poller { _stop: stop })
}

/// Size and modification time of every file in `paths` (folders walked).
fn scan(paths: &[PathBuf]) -> Snapshot {
    paths
        .iter()
        .flat_map(|p| {
            if p.is_dir() {
                crate::walk::files_below(p, crate::walk::Hidden::Include).files
            } else {
                vec![p.clone()]
            }
        })
        .filter_map(|f| {
            let meta = fs_err::metadata(&f).ok()?;
            Some((f, (meta.len(), meta.modified().ok())))
        })
        .collect()
}

/// `x.db` for a write-ahead log `x.db-wal`; `None` for any other path.
fn database_of_wal(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let db = name.strip_suffix("-wal")?;
    (!db.is_empty()).then(|| path.with_file_name(db))
}

/// Kills the child and reaps it.
fn stop_child(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Events that can change a transcript: creations, content changes, renames and
/// removals (opens, reads and attribute changes are not — the import's own reads
/// must not trigger another import).
fn is_change(event: &notify::Event) -> bool {
    matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any
    ) || matches!(event.kind, EventKind::Modify(m) if !matches!(m, notify::event::ModifyKind::Metadata(_)))
}
