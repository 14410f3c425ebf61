//! MCP exposure: every loaded skill served as one MCP tool, and every skill folder as
//! resources and as a SEP-2640 skill (`skills/list`, `skills/get`,
//! `resources/directory/read`), over stdio or streamable HTTP (rmcp).
//!
//! Its parts: [`catalog`] holds what is served at one moment (the [`Host`], one tool
//! per skill from [`tool_for`], the SEP-2640 entries of [`skills_ext`]) and swaps in
//! what [`watch`] reloads; [`served_schema`] makes the client-lenient schemas a tool
//! advertises; on stdio every line passes [`jsonrpc_gate`] first, on HTTP every
//! request passes [`http_guard`] (loopback `Host`/`Origin`, session limits). This file
//! holds the hand-written [`ServerHandler`] ([`SkillServer`]) and the two transports
//! ([`serve_stdio`], [`serve_http`]), which share session and error handling. It runs
//! skills only through [`Host::call`], so arguments are validated exactly as on the
//! CLI; it knows nothing of particular engines or stores.
//!
//! Errors a caller can fix (bad arguments, unknown tool, engine or template failure)
//! come back as tool results with `isError: true` and a message naming the argument;
//! protocol errors are kept for requests that cannot be routed (unknown resource URI).
//! Nothing here writes to stdout: on stdio, stdout is the transport.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetSkillRequestParams,
    GetSkillResult, JsonObject, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub mod catalog;
pub mod http_guard;
pub mod jsonrpc_gate;
pub mod served_schema;
pub mod skills_ext;
pub mod watch;

use crate::host::{CallError, Host};
pub use catalog::tool_for;
use catalog::Catalog;
pub use served_schema::tool_input_schema;

/// The path streamable HTTP is served under.
pub const HTTP_PATH: &str = "/mcp";

/// Why serving stopped or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// `--http` named a non-loopback address without `--allow-remote`.
    #[error("refusing to serve on non-loopback address `{addr}` without `--allow-remote`")]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The HTTP listener could not bind.
    #[error("cannot listen on `{addr}`: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The stdio session failed to start or ended with an error.
    #[error("MCP stdio session failed: {0}")]
    Stdio(String),
}

/// The MCP server over a [`Catalog`]: cheap to clone (everything is shared), one
/// clone per HTTP session.
///
/// Tools, resources and skill entries are computed when the catalog's set is built, in
/// host order (skill folder name), so `tools/list` is deterministic and costs nothing.
#[derive(Clone)]
pub struct SkillServer {
    catalog: Arc<Catalog>,
    /// Bounds the number of skill calls running at once on the blocking pool.
    slots: Arc<Semaphore>,
    /// Cancelled when the transport is gone (stdin closed): every running call stops.
    stopping: CancellationToken,
    /// The semaphore's size.
    slot_count: usize,
}

/// Put in an HTTP request's extensions by [`serve_http`]: cancelled when the response
/// to that request is dropped — the client disconnected (or the response ended).
#[derive(Debug, Clone)]
pub struct ClientGone(pub CancellationToken);

impl SkillServer {
    /// A server over `host` that never reloads: one [`Tool`] per skill ([`tool_for`])
    /// and one resource per file of each skill folder (`skill://<name>/<file>`,
    /// `SKILL.md` first).
    pub fn new(host: Arc<Host>) -> Self {
        Self::with_catalog(Arc::new(Catalog::fixed(host)))
    }

    /// A server over `catalog`, which a watcher may replace.
    ///
    /// At most `max(2 × available CPUs, 4)` calls run at once; further calls wait for
    /// a slot (no lock is held while a query runs).
    pub fn with_catalog(catalog: Arc<Catalog>) -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let slot_count = (cpus * 2).max(4);
        Self {
            catalog,
            slots: Arc::new(Semaphore::new(slot_count)),
            stopping: CancellationToken::new(),
            slot_count,
        }
    }

    /// Stops every call running now or started later (their results say they were
    /// cancelled) — when the transport is gone.
    pub fn stop_calls(&self) {
        self.stopping.cancel();
    }

    /// [`SkillServer::stop_calls`], then waits up to `wait` for their work to end;
    /// false when some call was still running then.
    pub async fn stop_calls_and_wait(&self, wait: std::time::Duration) -> bool {
        self.stop_calls();
        let all = u32::try_from(self.slot_count).unwrap_or(u32::MAX);
        tokio::time::timeout(wait, self.slots.acquire_many(all))
            .await
            .is_ok_and(|permits| permits.is_ok())
    }

    /// The tools served now, in host order.
    #[must_use]
    pub fn tools(&self) -> Vec<Tool> {
        self.catalog.current().tools.clone()
    }

    /// Runs one `tools/call` and maps the outcome to a tool result: on success
    /// `structuredContent` is the engine's JSON and the text content the rendered
    /// markdown; every failure is a result with `isError: true` and one text block.
    pub async fn call(&self, name: &str, arguments: Option<JsonObject>) -> CallToolResult {
        self.call_until(name, arguments, CancellationToken::new())
            .await
    }

    /// [`SkillServer::call`], stopped when `until` is cancelled (the request's
    /// `notifications/cancelled`, its HTTP client disconnecting) or the server stops
    /// its calls ([`SkillServer::stop_calls`]): the call's work is interrupted through
    /// [`Host::call_with`] and its result says it was cancelled. The slot is held
    /// until the work has actually stopped.
    pub async fn call_until(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        until: CancellationToken,
    ) -> CallToolResult {
        let Ok(_slot) = self.slots.acquire().await else {
            return error_result("the server is shutting down".to_owned());
        };
        let served = self.catalog.current();
        let host = Arc::clone(&served.host);
        let tool = name.to_owned();
        let args = arguments.map_or(Value::Null, Value::Object);
        let cancel = crate::cancel::Cancel::new();
        let stop = cancel.clone();
        let mut work = tokio::task::spawn_blocking(move || host.call_with(&tool, args, &stop));
        let outcome = tokio::select! {
            outcome = &mut work => outcome,
            () = until.cancelled() => {
                cancel.cancel();
                work.await
            }
            () = self.stopping.cancelled() => {
                cancel.cancel();
                work.await
            }
        };
        let mut result = match outcome {
            Ok(Ok(output)) => {
                let mut result = CallToolResult::structured(output.data);
                result.content = vec![ContentBlock::text(output.text)];
                result
            }
            Ok(Err(e)) => error_result(call_error_message(&e, &served.tools)),
            Err(join) => error_result(format!(
                "`{name}` failed: the engine stopped unexpectedly ({join})"
            )),
        };
        self.catalog.stamp(&mut result.meta);
        result
    }
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// The message a caller reads for a failed call: each invalid argument on its own
/// line, or the error and its causes.
fn call_error_message(error: &CallError, tools: &[Tool]) -> String {
    match error {
        CallError::InvalidArguments { skill, errors } => {
            let mut msg = format!("invalid arguments for `{skill}`:");
            for e in errors {
                msg.push_str("\n- ");
                msg.push_str(&e.to_string());
            }
            msg.push_str(
                "\nhint: the tool's `inputSchema` lists every argument, its type and default",
            );
            msg
        }
        CallError::UnknownSkill { name, .. } => {
            let known: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            format!(
                "unknown tool `{name}`; available tools: {}",
                known.join(", ")
            )
        }
        other => {
            let mut msg = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                let cause_text = cause.to_string();
                if !msg.contains(&cause_text) {
                    msg.push_str("\ncaused by: ");
                    msg.push_str(&cause_text);
                }
                source = cause.source();
            }
            msg
        }
    }
}

impl ServerHandler for SkillServer {
    fn get_info(&self) -> ServerConfig {
        let served = self.catalog.current();
        let names: Vec<&str> = served.tools.iter().map(|t| t.name.as_ref()).collect();
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_skills_with_directory_read();
        if self.catalog.watched() {
            capabilities = capabilities
                .enable_tool_list_changed()
                .enable_resources_list_changed();
        }
        ServerConfig::new(capabilities.build())
            .with_server_info(self.catalog.server_info().clone())
            .with_instructions(format!(
                "Each tool is a skill documented by a SKILL.md (resources `skill://<name>/SKILL.md`; `skills/list` gives every skill with its files' digests). Tools: {}.",
                names.join(", ")
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut result = ListToolsResult::with_all_items(self.catalog.current().tools.clone())
            .with_ttl_ms(self.catalog.ttl_ms())
            .with_cache_scope(self.catalog.cache_scope());
        self.catalog.stamp(&mut result.meta);
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalog
            .current()
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// Runs the call until it ends, the client cancels it (`notifications/cancelled`,
    /// the session or stdio transport ending) or its HTTP client disconnects.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let until = context.ct.clone();
        if let Some(ClientGone(gone)) = context
            .extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<ClientGone>())
        {
            let (gone, until) = (gone.clone(), until.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = gone.cancelled() => until.cancel(),
                    () = until.cancelled() => {}
                }
            });
        }
        Ok(self
            .call_until(&request.name, request.arguments, until)
            .await
            .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let served = self.catalog.current();
        let mut result = ListResourcesResult::with_all_items(served.skills.resources().to_vec())
            .with_ttl_ms(self.catalog.ttl_ms())
            .with_cache_scope(self.catalog.cache_scope());
        self.catalog.stamp(&mut result.meta);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(mut result) = self.catalog.current().skills.read(&request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "unknown resource `{}`; skill documents are `skill://<name>/SKILL.md`",
                    request.uri
                ),
                Some(serde_json::json!({"uri": request.uri})),
            ));
        };
        result.ttl_ms = Some(self.catalog.ttl_ms());
        result.cache_scope = Some(self.catalog.cache_scope());
        self.catalog.stamp(&mut result.meta);
        Ok(result.into())
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let mut result = self
            .catalog
            .current()
            .skills
            .list()
            .with_ttl_ms(self.catalog.ttl_ms())
            .with_cache_scope(self.catalog.cache_scope());
        self.catalog.stamp(&mut result.meta);
        Ok(result)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let mut result = self
            .catalog
            .current()
            .skills
            .get(&request.uri)?
            .with_ttl_ms(self.catalog.ttl_ms())
            .with_cache_scope(self.catalog.cache_scope());
        self.catalog.stamp(&mut result.meta);
        Ok(result)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        let mut result = self.catalog.current().skills.read_directory(&request.uri)?;
        self.catalog.stamp(&mut result.meta);
        Ok(result)
    }

    /// Sessions that began with `initialize` get `notifications/tools/list_changed` and
    /// `notifications/resources/list_changed` after every reload.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.catalog.watched() {
            return;
        }
        let mut changes = self.catalog.changes();
        let peer = context.peer;
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err()
                    || peer.notify_resource_list_changed().await.is_err()
                {
                    break;
                }
            }
        });
    }

    /// 2026-07-28 sessions subscribe with `subscriptions/listen`: tool and resource
    /// list changes are offered while the folder is watched.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.catalog.watched().then(|| {
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resources_list_changed()
                .build()
        })
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.catalog.changes();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    // A category the client did not ask for is refused by the sink: fine.
                    let _ = context.sink().notify_tool_list_changed().await;
                    let _ = context.sink().notify_resource_list_changed().await;
                }
            }
        }
    }
}

/// Serves `catalog` over stdio until the client closes stdin. A client that closes
/// before `initialize` (for example after only `server/discover`) ends the session
/// normally.
///
/// Lines pass through [`jsonrpc_gate`] first: any line that is not a valid
/// JSON-RPC message is answered there (never dropped). When stdin closes, calls still
/// running get [`STDIN_CLOSE_GRACE`] to answer, then they are cancelled (their work
/// interrupted, up to another grace period to stop) and the server stops without them.
///
/// # Errors
/// [`ServeError::Stdio`] when the handshake fails or the session ends with an error.
pub async fn serve_stdio(catalog: Arc<Catalog>) -> Result<(), ServeError> {
    let server = SkillServer::with_catalog(catalog);
    let calls = server.clone();
    let (gate, transport) = jsonrpc_gate::Gate::start(tokio::io::stdin(), tokio::io::stdout());
    let running = match server.serve(transport).await {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            gate.drain(STDIN_CLOSE_GRACE).await;
            return Ok(());
        }
        Err(e) => return Err(ServeError::Stdio(e.to_string())),
    };
    let closed = gate.closed.clone();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        ended = &mut waiting => {
            ended.map_err(|e| ServeError::Stdio(e.to_string()))?;
            gate.drain(STDIN_CLOSE_GRACE).await;
        }
        () = async {
            closed.cancelled().await;
            tokio::time::sleep(STDIN_CLOSE_GRACE).await;
        } => {
            // Nobody will read the answer: the running call's work is interrupted
            // (its query, its scan) rather than left burning CPU until exit.
            let stopped = calls.stop_calls_and_wait(STDIN_CLOSE_GRACE).await;
            crate::terminal::log(format_args!(
                "skills: stdin closed; {}",
                if stopped {
                    "the call still running was cancelled"
                } else {
                    "stopping with a call still running (cancelled, not yet stopped)"
                }
            ));
        }
    }
    Ok(())
}

/// How long calls still running may take to answer once stdin has closed.
pub const STDIN_CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Options of [`serve_http`].
#[derive(Debug, Clone, Copy)]
pub struct HttpOptions {
    /// Address to listen on; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Allow a non-loopback bind and any `Host`/`Origin` header. Off: only loopback
    /// binds, and requests whose `Host` is not `localhost`/`127.0.0.1`/`[::1]` or
    /// whose `Origin` is not a loopback `http(s)` origin get `403` (DNS-rebinding
    /// protection, done by rmcp).
    pub allow_remote: bool,
}

/// Serves `catalog` as streamable HTTP under [`HTTP_PATH`] (other paths: `404`) until
/// `shutdown` is cancelled. Calls `on_listen` with the bound address (useful with
/// port 0) once the socket accepts connections.
///
/// # Errors
/// [`ServeError::NotLoopback`] for a non-loopback address without `allow_remote`;
/// [`ServeError::Bind`] when the socket cannot be bound.
pub async fn serve_http(
    catalog: Arc<Catalog>,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    serve_http_with(catalog, options, shutdown, on_listen, None).await
}

/// What answers the paths other than [`HTTP_PATH`] on the same listener (the web
/// pages): called only after the `Host`/`Origin` check `/mcp` gets
/// ([`http_guard::foreign_host_or_origin`], unless `allow_remote`) and the
/// duplicate-header check.
pub type Pages = Arc<
    dyn Fn(
            hyper::Request<Incoming>,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = http_guard::Response> + Send>>
        + Send
        + Sync,
>;

/// [`serve_http`] with `pages` answering every path but [`HTTP_PATH`] (`None`: `404`).
/// An MCP request takes the same path as without pages.
///
/// # Errors
/// As [`serve_http`].
pub async fn serve_http_with(
    catalog: Arc<Catalog>,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_listen: impl FnOnce(SocketAddr),
    pages: Option<Pages>,
) -> Result<(), ServeError> {
    let HttpOptions { addr, allow_remote } = options;
    if !allow_remote && !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback { addr });
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let server = SkillServer::with_catalog(catalog);
    // Host/Origin are checked by our one guard (crate::listener::authority) for every
    // path, so rmcp's own checks are off.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(http_guard::SESSION_IDLE);
    let sessions = Arc::new(sessions);
    let service: StreamableHttpService<SkillServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&sessions), config);
    on_listen(bound);
    let handler = move |mut request: hyper::Request<Incoming>| {
        let mut service = service.clone();
        let sessions = Arc::clone(&sessions);
        let pages = pages.clone();
        async move {
            let headers = request.headers();
            if let Some(refused) = http_guard::duplicate_headers(headers).or_else(|| {
                (!allow_remote)
                    .then(|| http_guard::foreign_host_or_origin(headers))
                    .flatten()
            }) {
                return refused;
            }
            if request.uri().path() != HTTP_PATH {
                return match pages {
                    Some(pages) => pages(request).await,
                    None => not_found(),
                };
            }
            if http_guard::opens_session(&request)
                && sessions.sessions.read().await.len() >= http_guard::MAX_SESSIONS
            {
                return http_guard::too_many_sessions();
            }
            // A call stops when its client disconnects: hyper drops the response body
            // (the SSE stream of a `tools/call`) when the connection closes, which
            // cancels the token the call watches.
            let gone = CancellationToken::new();
            request.extensions_mut().insert(ClientGone(gone.clone()));
            let response = match tower_service::Service::call(&mut service, request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let response = http_guard::as_jsonrpc(response).await;
            http_guard::cancel_when_dropped(response, gone)
        }
    };
    crate::listener::serve(listener, shutdown, handler).await;
    Ok(())
}

fn not_found() -> hyper::Response<BoxBody<Bytes, Infallible>> {
    let body = Full::new(Bytes::from(format!(
        "not found: the MCP endpoint is `{HTTP_PATH}`\n"
    )))
    .boxed();
    let mut response = hyper::Response::new(body);
    *response.status_mut() = hyper::StatusCode::NOT_FOUND;
    response
}
