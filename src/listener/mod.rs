//! The HTTP listener of `skills serve --http` (`/mcp` and the pages): accepting
//! connections so that a flood degrades service instead of breaking it.
//!
//! - **Open files.** [`raise_open_file_limit`] lifts the soft `RLIMIT_NOFILE` to the hard
//!   limit at start; connections are capped at [`connection_cap`] of it (at most
//!   [`MAX_CONNECTIONS`]), leaving [`RESERVED_FDS`] descriptors for the stores, the
//!   watcher and the import child.
//! - **At the cap** a new connection is accepted and then a silent one is closed to
//!   make room, so silent sockets cannot lock out a client that sends a request: first
//!   the keep-alive connection idle longest (it completed a request and sent nothing
//!   since), else the one that has waited longest without sending a byte — never one
//!   that has started sending a request (bytes read, however slowly they come), one
//!   being answered, or the connection just accepted, whose request may still be on its
//!   way (`victim`). When no connection is silent, new ones wait in the kernel's
//!   backlog (not accepted, nothing spins) until one ends; a request that stalls
//!   half-sent is ended by [`HEADER_READ_TIMEOUT`].
//! - **Timeouts.** A request's headers must arrive within [`HEADER_READ_TIMEOUT`]; a
//!   connection with no request in flight is closed after [`KEEP_ALIVE_IDLE`].
//! - **Accept errors** (`EMFILE`: out of file descriptors) back off from
//!   [`ACCEPT_BACKOFF_MIN`] doubling to [`ACCEPT_BACKOFF_MAX`] and close the longest-idle
//!   connection; a repeated warning is printed once per [`LOG_INTERVAL`] with a count
//!   ([`Throttled`]), never once per attempt.

pub mod authority;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Most connections served at once, whatever the open-file limit.
pub const MAX_CONNECTIONS: usize = 1024;
/// File descriptors kept out of the connection cap (stores, index, watcher, child).
pub const RESERVED_FDS: u64 = 64;
/// Time a client has to send a request's headers once the server waits for them.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request in flight this long is closed.
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(30);
/// First pause after a failed `accept`.
pub const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// Longest pause after failed `accept`s in a row.
pub const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A repeated warning is printed at most once per this interval (with a count).
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// An HTTP response as the listener's services return them.
pub type Response = hyper::Response<BoxBody<Bytes, Infallible>>;

/// Raises the soft open-file limit to the hard limit; returns the soft limit in force
/// afterwards (`None` when it cannot be read, or is unlimited).
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) != 0 {
                return None;
            }
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) == 0 {
                    limit.rlim_cur = limit.rlim_max;
                }
            }
        }
        (limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
    }
    #[cfg(not(unix))]
    None
}

/// Connections allowed at once for a soft open-file limit of `soft` (`None`:
/// unknown): half of what [`RESERVED_FDS`] leaves, between 8 and [`MAX_CONNECTIONS`].
pub fn connection_cap(soft: Option<u64>) -> usize {
    soft.map_or(MAX_CONNECTIONS, |soft| {
        let room = usize::try_from(soft.saturating_sub(RESERVED_FDS) / 2).unwrap_or(usize::MAX);
        room.clamp(8, MAX_CONNECTIONS)
    })
}

/// A warning that may repeat: printed on stderr when first seen and then at most once
/// per [`LOG_INTERVAL`], saying how many were left out since.
#[derive(Debug, Default)]
pub struct Throttled {
    last: HashMap<&'static str, (Instant, u64)>,
}

impl Throttled {
    /// Prints `message` (of kind `kind`) unless one of that kind was printed less than
    /// [`LOG_INTERVAL`] ago, in which case it is counted.
    pub fn warn(&mut self, kind: &'static str, message: &str) {
        let now = Instant::now();
        match self.last.get_mut(kind) {
            Some((at, left_out)) if now.duration_since(*at) < LOG_INTERVAL => *left_out += 1,
            Some((at, left_out)) => {
                crate::terminal::log(format_args!(
                    "warning: {message} ({} more like it in the last {} s)",
                    *left_out,
                    now.duration_since(*at).as_secs()
                ));
                *at = now;
                *left_out = 0;
            }
            None => {
                crate::terminal::log(format_args!("warning: {message}"));
                self.last.insert(kind, (now, 0));
            }
        }
    }
}

/// What the listener knows of one open connection.
struct Conn {
    /// Requests in flight (a response whose body has not ended counts).
    in_flight: AtomicUsize,
    /// When the last request ended (or the connection opened), in ms since `epoch`.
    idle_since_ms: AtomicU64,
    /// True once a request ended on it: idle now, it is a keep-alive connection.
    served: AtomicBool,
    /// Bytes read from the client so far.
    read: AtomicU64,
    /// `read` when the last request ended (0 before the first): more read since means
    /// a request is on its way.
    read_at_idle: AtomicU64,
    close: CancellationToken,
}

/// What [`victim`] weighs of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Idle {
    /// Accept order (higher: accepted later).
    id: u64,
    /// A request is in flight: never closed to make room.
    busy: bool,
    /// Bytes of a request were read (its headers may still be arriving): never closed
    /// to make room either.
    sending: bool,
    /// A request ended on it (a keep-alive connection), else it still waits for its
    /// first one.
    served: bool,
    /// When its last request ended (or it opened), in ms.
    since_ms: u64,
}

/// The connection to close to make room, of `conns`, leaving out `newest` (the one
/// just accepted) and every connection that is sending a request or being answered: the
/// keep-alive connection idle longest, else the silent connection that has waited
/// longest for its first request (ties go to the one accepted first); `None` when no
/// other connection is silent.
fn victim(conns: impl IntoIterator<Item = Idle>, newest: Option<u64>) -> Option<u64> {
    conns
        .into_iter()
        .filter(|c| c.silent() && Some(c.id) != newest)
        .min_by_key(|c| (!c.served, c.since_ms, c.id))
        .map(|c| c.id)
}

impl Idle {
    fn silent(&self) -> bool {
        !self.busy && !self.sending
    }
}

impl Conn {
    fn idle(&self, id: u64) -> Idle {
        Idle {
            id,
            busy: self.in_flight.load(Ordering::SeqCst) > 0,
            sending: self.read.load(Ordering::SeqCst) > self.read_at_idle.load(Ordering::SeqCst),
            served: self.served.load(Ordering::SeqCst),
            since_ms: self.idle_since_ms.load(Ordering::SeqCst),
        }
    }
}

/// The open connections.
struct Registry {
    epoch: Instant,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    ended: tokio::sync::Notify,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn len(&self) -> usize {
        self.conns.lock().map_or(0, |c| c.len())
    }

    /// True when some connection is silent (one can make room).
    fn any_silent(&self) -> bool {
        self.conns
            .lock()
            .is_ok_and(|conns| conns.iter().any(|(id, c)| c.idle(*id).silent()))
    }

    /// Closes the silent connection [`victim`] picks, never `newest`; false when no
    /// other one is silent.
    fn close_idle(&self, newest: Option<u64>) -> bool {
        let Ok(mut conns) = self.conns.lock() else {
            return false;
        };
        let idle = conns.iter().map(|(id, c)| c.idle(*id));
        match victim(idle, newest).and_then(|id| conns.remove(&id)) {
            Some(conn) => {
                conn.close.cancel();
                true
            }
            None => false,
        }
    }
}

/// Ends a request in flight when dropped (with the response body).
struct InFlight {
    conn: Arc<Conn>,
    registry: Arc<Registry>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.conn
            .idle_since_ms
            .store(self.registry.now_ms(), Ordering::SeqCst);
        self.conn.served.store(true, Ordering::SeqCst);
        self.conn
            .read_at_idle
            .store(self.conn.read.load(Ordering::SeqCst), Ordering::SeqCst);
        self.conn.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request in flight until it ends or is dropped. Its
/// size hint is the inner body's, so a body of known length keeps its
/// `Content-Length` (not chunked).
struct Guarded {
    body: BoxBody<Bytes, Infallible>,
    _guard: InFlight,
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Serves HTTP/1.1 on `listener` until `shutdown` is cancelled, answering each request
/// with `service` (called once per request), under the limits in the module docs.
/// At shutdown, connections are told to close and dropped.
pub async fn serve<S, F>(listener: TcpListener, shutdown: CancellationToken, service: S)
where
    S: Fn(hyper::Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Response> + Send + 'static,
{
    let cap = connection_cap(raise_open_file_limit());
    let registry = Arc::new(Registry {
        epoch: Instant::now(),
        conns: Mutex::new(HashMap::new()),
        ended: tokio::sync::Notify::new(),
    });
    let log = Arc::new(Mutex::new(Throttled::default()));
    let mut backoff = ACCEPT_BACKOFF_MIN;
    let mut next_id = 0u64;
    loop {
        // Room for one more: a silent connection to close once the new one is in, else
        // wait for one to end.
        while registry.len() >= cap && !registry.any_silent() {
            let ended = registry.ended.notified();
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = ended => {}
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    backoff = ACCEPT_BACKOFF_MIN;
                    stream
                }
                Err(e) => {
                    if let Ok(mut log) = log.lock() {
                        log.warn("accept", &format!("accepting a connection failed: {e}"));
                    }
                    registry.close_idle(None);
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                    continue;
                }
            },
        };
        next_id += 1;
        let id = next_id;
        let conn = Arc::new(Conn {
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(registry.now_ms()),
            served: AtomicBool::new(false),
            read: AtomicU64::new(0),
            read_at_idle: AtomicU64::new(0),
            close: CancellationToken::new(),
        });
        if let Ok(mut conns) = registry.conns.lock() {
            conns.insert(id, Arc::clone(&conn));
        }
        // Over the cap: close another, silent one (the new one's request may be on its way).
        if registry.len() > cap {
            registry.close_idle(Some(id));
        }
        let registry = Arc::clone(&registry);
        let service = service.clone();
        let shutdown = shutdown.clone();
        let log = Arc::clone(&log);
        tokio::spawn(async move {
            serve_connection(stream, &conn, &registry, service, &shutdown, &log).await;
            if let Ok(mut conns) = registry.conns.lock() {
                conns.remove(&id);
            }
            registry.ended.notify_waiters();
        });
    }
}

async fn serve_connection<S, F>(
    stream: tokio::net::TcpStream,
    conn: &Arc<Conn>,
    registry: &Arc<Registry>,
    service: S,
    shutdown: &CancellationToken,
    log: &Mutex<Throttled>,
) where
    S: Fn(hyper::Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Response> + Send + 'static,
{
    let handler = {
        let conn = Arc::clone(conn);
        let registry = Arc::clone(registry);
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            conn.in_flight.fetch_add(1, Ordering::SeqCst);
            let guard = InFlight {
                conn: Arc::clone(&conn),
                registry: Arc::clone(&registry),
            };
            let answer = service(request);
            async move {
                let response = answer.await;
                Ok::<_, Infallible>(response.map(|body| {
                    Guarded {
                        body,
                        _guard: guard,
                    }
                    .boxed()
                }))
            }
        })
    };
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(
            TokioIo::new(Counted {
                stream,
                conn: Arc::clone(conn),
            }),
            handler,
        );
    tokio::pin!(connection);
    let idle_check = Duration::from_secs(1).min(KEEP_ALIVE_IDLE);
    let idle_for = || {
        let since = conn.idle_since_ms.load(Ordering::SeqCst);
        Duration::from_millis(registry.now_ms().saturating_sub(since))
    };
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    if !e.is_incomplete_message() && !e.is_timeout() {
                        if let Ok(mut log) = log.lock() {
                            log.warn("connection", &format!("HTTP connection: {e}"));
                        }
                    }
                }
                return;
            }
            () = shutdown.cancelled() => {
                connection.as_mut().graceful_shutdown();
                return;
            }
            () = conn.close.cancelled() => return,
            () = tokio::time::sleep(idle_check) => {
                if conn.in_flight.load(Ordering::SeqCst) == 0 && idle_for() >= KEEP_ALIVE_IDLE {
                    return;
                }
            }
        }
    }
}

/// A connection's stream that counts the bytes read from the client into
/// [`Conn::read`], so that [`victim`] can tell a request on its way from silence.
struct Counted {
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.stream).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            self.conn
                .read
                .fetch_add(u64::try_from(read).unwrap_or(u64::MAX), Ordering::SeqCst);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 43: at the cap, a keep-alive connection is closed before one still
    /// waiting for its first request, the longest idle first; the connection just
    /// accepted never, nor one with a request in flight; among fresh connections of
    /// the same millisecond (a flood), the one accepted first.
    #[test]
    fn the_victim_is_an_idle_keep_alive_connection_then_the_oldest_fresh_one() {
        let idle = |id, busy, served, since_ms| Idle {
            id,
            busy,
            sending: false,
            served,
            since_ms,
        };
        // Fresh connections accepted in the same millisecond, the newest last.
        let flood: Vec<Idle> = (1..=40).map(|id| idle(id, false, false, 7)).collect();
        assert_eq!(victim(flood.iter().copied(), Some(40)), Some(1));
        assert_eq!(victim(flood.iter().rev().copied(), Some(40)), Some(1));
        // A keep-alive connection idle for less time goes before older fresh ones.
        let mut conns = flood.clone();
        conns.push(idle(41, false, true, 900));
        conns.push(idle(42, false, true, 800));
        assert_eq!(victim(conns.iter().copied(), Some(43)), Some(42));
        // Busy connections and the newest are left alone.
        let busy = [idle(1, true, true, 0), idle(2, false, false, 5)];
        assert_eq!(victim(busy, Some(2)), None);
        assert_eq!(victim(busy, None), Some(2));
    }

    /// Issue 43: a connection that has started sending a request (its headers still
    /// arriving, slowly) is never closed to make room, however old; with only such
    /// connections (and the newest), none is.
    #[test]
    fn a_connection_sending_its_request_is_never_the_victim() {
        let conn = |id, sending, served, since_ms| Idle {
            id,
            busy: false,
            sending,
            served,
            since_ms,
        };
        let conns = [
            conn(1, true, false, 0),
            conn(2, true, true, 1),
            conn(3, false, false, 50),
            conn(4, false, false, 60),
        ];
        assert_eq!(victim(conns, Some(4)), Some(3));
        assert_eq!(
            victim(conns[..2].iter().copied().chain([conns[3]]), Some(4)),
            None
        );
    }

    #[test]
    fn the_cap_leaves_room_below_the_limit() {
        assert_eq!(connection_cap(Some(128)), 32);
        assert_eq!(connection_cap(Some(1 << 20)), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(16)), 8);
        assert_eq!(connection_cap(None), MAX_CONNECTIONS);
    }
}
