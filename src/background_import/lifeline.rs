//! Ending with the parent process: a child that `skills serve` starts (the background
//! `skills ingest` of [`super`]) must not outlive the server, also when
//! the server is killed with SIGKILL and gets no chance to stop it.
//!
//! The parent names its pid in the child's environment ([`ENV`], see [`mark`]); the
//! child calls [`hold`] before it does any work. On Linux the kernel kills the child
//! with SIGKILL when the parent thread that started it ends
//! (`prctl(PR_SET_PDEATHSIG)`), and a parent already gone before that call is caught
//! by comparing the parent pid once; on other Unix systems a thread compares the parent
//! pid every [`CHECK`] and exits the process when it changed (the child was adopted).
//! Either way the child dies as a killed process does: an import loses at most its
//! open transaction, and the next run goes on from what was committed. Elsewhere
//! (Windows) [`hold`] does nothing.
//!
//! This module knows no command and no store: only processes.

use std::process::Command;
use std::time::Duration;

/// The environment variable naming the parent's pid: set by [`mark`], read by [`hold`].
pub const ENV: &str = crate::settings::EXIT_WITH_PARENT.name;

/// How often the parent pid is compared where the kernel cannot watch it (Unix other
/// than Linux).
pub const CHECK: Duration = Duration::from_millis(200);

/// Marks `command` so that the process it starts, once it calls [`hold`], ends with
/// this process.
pub fn mark(command: &mut Command) -> &mut Command {
    command.env(ENV, std::process::id().to_string())
}

/// Ties this process to the parent named in [`ENV`], if any (see the module docs); with
/// [`ENV`] unset or not a pid it does nothing. When the parent is already gone, exits
/// at once with status 1.
pub fn hold() {
    let Some(parent) = crate::settings::exit_with_parent() else {
        return;
    };
    imp::hold(parent);
}

#[cfg(target_os = "linux")]
mod imp {
    /// Asks the kernel for SIGKILL when the parent ends, then checks it has not ended
    /// already (adopted: the parent pid is no longer `parent`).
    pub(super) fn hold(parent: u32) {
        // SAFETY: `prctl(PR_SET_PDEATHSIG, sig)` takes two integers, touches no memory
        // of this process and only sets the signal the kernel sends on the parent's end.
        #[allow(unsafe_code)]
        let set = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        if set != 0 {
            super::poll(parent);
            return;
        }
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(1);
        }
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
mod imp {
    pub(super) fn hold(parent: u32) {
        super::poll(parent);
    }
}

#[cfg(not(unix))]
mod imp {
    pub(super) fn hold(_parent: u32) {}
}

/// Exits when the parent pid is no longer `parent`: once now, then every [`CHECK`] on
/// a thread of its own (none when the thread cannot start).
#[cfg(unix)]
fn poll(parent: u32) {
    if std::os::unix::process::parent_id() != parent {
        std::process::exit(1);
    }
    let _ = std::thread::Builder::new()
        .name("skills-lifeline".into())
        .spawn(move || loop {
            std::thread::sleep(CHECK);
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(1);
            }
        });
}
