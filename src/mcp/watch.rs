//! Hot reload: watches a skills folder (the `notify` crate: inotify on Linux) and,
//! after each burst of changes, loads the skills again and swaps them into a
//! [`Catalog`], which wakes every MCP session to send `list_changed` notifications.
//!
//! The last good set keeps serving when a document breaks: a reload whose diagnostics
//! name a file inside the folder of a skill served now is refused as a whole, and the
//! diagnostics are printed on stderr. New broken folders are reported too, while the
//! rest of the reload applies. Nothing here prints to stdout.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};

use super::catalog::{Catalog, Served};
use crate::host::{Diagnostic, Host};

/// How long the folder must stay quiet before a reload starts: editors write a file in
/// several steps, and `cp -r` of a skill folder is many events.
pub const SETTLE: Duration = Duration::from_millis(150);

/// A running watch; dropping it stops watching (the reload thread then ends).
pub struct Watch {
    _watcher: notify::RecommendedWatcher,
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch skills folder `{dir}`: {source}")]
pub struct WatchError {
    /// The folder.
    pub dir: PathBuf,
    /// notify's error.
    #[source]
    pub source: notify::Error,
}

/// What one reload did.
#[derive(Debug, PartialEq, Eq)]
pub enum Reload {
    /// The new set is served.
    Applied,
    /// The new set would drop or break a served skill: the previous set keeps serving.
    Kept,
}

/// Starts watching `dir` recursively; after each burst of changes `load` is called on
/// a dedicated thread and the result goes through [`reload`].
///
/// # Errors
/// [`WatchError`] when the folder cannot be watched (missing, or the inotify limit
/// reached).
pub fn watch(
    dir: &Path,
    catalog: Arc<Catalog>,
    load: impl Fn() -> Host + Send + 'static,
) -> Result<Watch, WatchError> {
    let (tx, rx) = mpsc::channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if is_change(&event) {
                let _ = tx.send(());
            }
        }
    })
    .map_err(|source| WatchError {
        dir: dir.to_path_buf(),
        source,
    })?;
    watcher
        .watch(dir, RecursiveMode::Recursive)
        .map_err(|source| WatchError {
            dir: dir.to_path_buf(),
            source,
        })?;
    std::thread::Builder::new()
        .name("skills-reload".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // Wait for the burst to end.
                loop {
                    match rx.recv_timeout(SETTLE) {
                        Ok(()) => {}
                        Err(mpsc::RecvTimeoutError::Timeout) => break,
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                reload(&catalog, load());
            }
        })
        .map_err(|e| WatchError {
            dir: dir.to_path_buf(),
            source: notify::Error::io(e),
        })?;
    Ok(Watch { _watcher: watcher })
}

/// Events that can change what is served: creations, content changes, renames and
/// removals of non-hidden paths (reads and attribute changes are not).
fn is_change(event: &notify::Event) -> bool {
    let kind = matches!(
        event.kind,
        EventKind::Create(_) | EventKind::Remove(_) | EventKind::Any
    ) || matches!(event.kind, EventKind::Modify(m) if !matches!(m, notify::event::ModifyKind::Metadata(_)));
    kind && event.paths.iter().any(|p| !crate::walk::is_hidden(p))
}

/// Swaps `host` into `catalog` unless it breaks a served skill (see the module docs);
/// prints what happened on stderr.
pub fn reload(catalog: &Catalog, host: Host) -> Reload {
    let current = catalog.current();
    let served_dirs: Vec<&Path> = current.host.skills().iter().map(|s| s.dir()).collect();
    let breaks_served = |d: &Diagnostic| served_dirs.iter().any(|dir| d.file.starts_with(dir));
    let broken: Vec<&Diagnostic> = host
        .diagnostics()
        .iter()
        .filter(|d| breaks_served(d))
        .collect();
    if !broken.is_empty() {
        eprintln!(
            "skills: reload refused, the previous {} skills keep serving:",
            current.host.skills().len()
        );
        for d in broken {
            eprintln!("  invalid {d}");
        }
        return Reload::Kept;
    }
    for d in host.diagnostics() {
        eprintln!("warning: {d}");
    }
    let (served, problems) = Served::new(Arc::new(host));
    for p in problems {
        eprintln!("warning: {p}");
    }
    let names: Vec<&str> = served.host.skills().iter().map(|s| s.name()).collect();
    eprintln!(
        "skills: reloaded {} skills: {}",
        names.len(),
        names.join(", ")
    );
    catalog.replace(served);
    Reload::Applied
}
