//! Stopping one call: a deadline, or a stop from outside (the client left or sent
//! `notifications/cancelled`).
//!
//! A [`Cancel`] is made per call by the host ([`crate::host::Host::call_with`]) and
//! handed to engines through their context. Work stops in two ways, both driven by the
//! same state:
//!
//! - **Cooperative checks**: Rust loops (index scans, vector scoring, compositions)
//!   test [`Cancel::is_stopped`] — one relaxed atomic load — every few thousand rows,
//!   and return early with what they have. The host discards that partial result and
//!   answers with the [`Stop`] as the error, so no caller ever sees it.
//! - **Interrupts**: database queries register a hook with [`Cancel::on_stop`]
//!   (DuckDB's `interrupt()`, SQLite's interrupt handle), run once when the call stops.
//!
//! Deadlines are watched by one timer thread for the whole process (a sorted map of
//! the calls running with a deadline; a call leaves it when its `Cancel` is dropped),
//! so arming a deadline costs a lock and an insert, not a thread.
//!
//! Knows nothing of skills, engines or stores; `search`, `stores` and `engines` use it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

/// Why a call stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Its deadline passed; the deadline it had.
    Deadline(Duration),
    /// Stopped from outside: the client disconnected, sent `notifications/cancelled`,
    /// or closed stdin.
    Cancelled,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Deadline(d) => write!(f, "deadline of {} ms passed", d.as_millis()),
            Self::Cancelled => f.write_str("cancelled by the client"),
        }
    }
}

const RUNNING: u8 = 0;
const DEADLINE: u8 = 1;
const CANCELLED: u8 = 2;

type Hook = Box<dyn FnOnce() + Send>;

/// The stop signal of one call; clones share it. See the module docs.
#[derive(Clone)]
pub struct Cancel {
    inner: Arc<Inner>,
}

struct Inner {
    state: AtomicU8,
    /// The deadline armed by [`Cancel::limit`]: its length and its key in the timer.
    deadline: OnceLock<(Duration, (Instant, u64))>,
    hooks: Mutex<Hooks>,
}

#[derive(Default)]
struct Hooks {
    next: u64,
    pending: Vec<(u64, Hook)>,
}

impl Default for Cancel {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("stopped", &self.stopped())
            .field("deadline", &self.deadline())
            .finish()
    }
}

impl Cancel {
    /// A signal with no deadline that stops only when [`Cancel::cancel`] is called.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                state: AtomicU8::new(RUNNING),
                deadline: OnceLock::new(),
                hooks: Mutex::new(Hooks::default()),
            }),
        }
    }

    /// Arms a deadline `limit` from now (once: a later call is ignored, so a nested
    /// call runs under its outermost caller's deadline). The call stops with
    /// [`Stop::Deadline`] when it passes.
    pub fn limit(&self, limit: Duration) {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let at = Instant::now() + limit;
        if self.inner.deadline.set((limit, (at, id))).is_ok() {
            timer().add((at, id), Arc::downgrade(&self.inner));
        }
    }

    /// The deadline armed by [`Cancel::limit`], if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.inner.deadline.get().map(|(d, _)| *d)
    }

    /// Stops the call now ([`Stop::Cancelled`]) unless it already stopped.
    pub fn cancel(&self) {
        self.inner.stop(CANCELLED);
    }

    /// True once the call stopped: a relaxed atomic load, cheap enough for inner loops.
    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.inner.state.load(Ordering::Relaxed) != RUNNING
    }

    /// Why the call stopped, if it did.
    pub fn stopped(&self) -> Option<Stop> {
        match self.inner.state.load(Ordering::Acquire) {
            RUNNING => None,
            DEADLINE => Some(Stop::Deadline(self.deadline().unwrap_or_default())),
            _ => Some(Stop::Cancelled),
        }
    }

    /// `Err` with the reason once the call stopped.
    ///
    /// # Errors
    /// The [`Stop`].
    pub fn check(&self) -> Result<(), Stop> {
        self.stopped().map_or(Ok(()), Err)
    }

    /// Runs `hook` once when the call stops (at once when it already has), until the
    /// returned guard is dropped — e.g. a database connection's interrupt.
    #[must_use = "the hook is removed when the guard is dropped"]
    pub fn on_stop(&self, hook: impl FnOnce() + Send + 'static) -> OnStop {
        let mut hooks = self.inner.lock_hooks();
        if self.is_stopped() {
            drop(hooks);
            hook();
            return OnStop { inner: None, id: 0 };
        }
        let id = hooks.next;
        hooks.next += 1;
        hooks.pending.push((id, Box::new(hook)));
        OnStop {
            inner: Some(Arc::downgrade(&self.inner)),
            id,
        }
    }
}

impl Inner {
    fn stop(&self, why: u8) {
        if self
            .state
            .compare_exchange(RUNNING, why, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        // Taken under the lock `on_stop` checks the state under: every hook either
        // sees the new state or is here.
        let hooks = std::mem::take(&mut self.lock_hooks().pending);
        for (_, hook) in hooks {
            hook();
        }
    }

    fn lock_hooks(&self) -> std::sync::MutexGuard<'_, Hooks> {
        self.hooks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some((_, key)) = self.deadline.get() {
            timer().remove(*key);
        }
    }
}

/// Keeps a hook registered by [`Cancel::on_stop`]; dropping it removes the hook.
pub struct OnStop {
    inner: Option<Weak<Inner>>,
    id: u64,
}

impl Drop for OnStop {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take().and_then(|w| w.upgrade()) {
            inner.lock_hooks().pending.retain(|(id, _)| *id != self.id);
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The process's deadline watcher: calls with a deadline, by (deadline, id).
struct Timer {
    calls: Mutex<BTreeMap<(Instant, u64), Weak<Inner>>>,
    wake: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            calls: Mutex::new(BTreeMap::new()),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("skills-deadlines".into())
            .spawn(move || timer.run());
        if let Err(e) = spawned {
            // Deadlines then only show through the host's check after the engine returns.
            crate::terminal::log(format_args!(
                "warning: cannot start the call-deadline thread: {e}"
            ));
        }
        timer
    })
}

impl Timer {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Instant, u64), Weak<Inner>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, key: (Instant, u64), call: Weak<Inner>) {
        let mut calls = self.lock();
        let earliest = calls.first_key_value().is_none_or(|(k, _)| key < *k);
        calls.insert(key, call);
        drop(calls);
        if earliest {
            self.wake.notify_one();
        }
    }

    fn remove(&self, key: (Instant, u64)) {
        self.lock().remove(&key);
    }

    fn run(&self) {
        let mut calls = self.lock();
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = calls.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            if !due.is_empty() {
                // Hooks run, and the calls' last handles may drop (which takes this
                // lock), outside the lock.
                drop(calls);
                for call in due.iter().filter_map(Weak::upgrade) {
                    call.stop(DEADLINE);
                }
                drop(due);
                calls = self.lock();
                continue;
            }
            calls = match calls.first_key_value().map(|(k, _)| k.0) {
                Some(next) => {
                    let wait = next.saturating_duration_since(now);
                    self.wake
                        .wait_timeout(calls, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .wake
                    .wait(calls)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_deadline_stops_the_call_and_runs_its_hooks() {
        let cancel = Cancel::new();
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let _guard = cancel.on_stop(move || {
            f.fetch_add(1, Ordering::SeqCst);
        });
        cancel.limit(Duration::from_millis(20));
        let start = Instant::now();
        while !cancel.is_stopped() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            cancel.stopped(),
            Some(Stop::Deadline(Duration::from_millis(20)))
        );
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        cancel.cancel();
        assert_eq!(
            cancel.stopped(),
            Some(Stop::Deadline(Duration::from_millis(20))),
            "the first reason stays"
        );
    }

    #[test]
    fn cancel_runs_hooks_once_and_late_hooks_at_once() {
        let cancel = Cancel::new();
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let _a = cancel.on_stop(move || {
            f.fetch_add(1, Ordering::SeqCst);
        });
        let f = fired.clone();
        let removed = cancel.on_stop(move || {
            f.fetch_add(100, Ordering::SeqCst);
        });
        drop(removed);
        assert!(cancel.check().is_ok());
        cancel.cancel();
        cancel.cancel();
        assert_eq!(cancel.check(), Err(Stop::Cancelled));
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        let f = fired.clone();
        let _late = cancel.on_stop(move || {
            f.fetch_add(10, Ordering::SeqCst);
        });
        assert_eq!(fired.load(Ordering::SeqCst), 11);
    }

    #[test]
    fn a_finished_call_leaves_the_timer() {
        let cancel = Cancel::new();
        cancel.limit(Duration::from_secs(3600));
        let key = cancel.inner.deadline.get().map(|(_, k)| *k);
        assert!(key.is_some_and(|k| timer().lock().contains_key(&k)));
        drop(cancel);
        assert!(key.is_some_and(|k| !timer().lock().contains_key(&k)));
    }
}
