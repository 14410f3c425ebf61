//! MCP exposure: every loaded skill served as one MCP tool, and every skill folder as
//! resources, over stdio or streamable HTTP (rmcp).
//!
//! This module owns the mapping from a [`Skill`] to MCP shapes ([`tool_for`],
//! [`tool_input_schema`]), the hand-written [`ServerHandler`] ([`SkillServer`]) and the
//! two transports ([`serve_stdio`], [`serve_http`]). It runs skills only through
//! [`Host::call`], so arguments are validated exactly as on the CLI; it knows nothing
//! of particular engines or stores.
//!
//! Errors a caller can fix (bad arguments, unknown tool, engine or template failure)
//! come back as tool results with `isError: true` and a message naming the argument;
//! protocol errors are kept for requests that cannot be routed (unknown resource URI).
//! Nothing here writes to stdout: on stdio, stdout is the transport.
//!
//! Kept in one file (738 lines): one ServerHandler and both of its transports, which share session and error handling.

use std::borrow::Cow;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::host::{CallError, Host};
use super::skill::Skill;

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

/// One resource served for a skill folder: a file and its `skill://` URI.
#[derive(Debug, Clone)]
struct SkillFile {
    resource: Resource,
    path: PathBuf,
    mime_type: &'static str,
}

/// The MCP server over a loaded [`Host`]: cheap to clone (everything is shared), one
/// clone per HTTP session.
///
/// Tools and resources are computed once at construction, in host order (skill folder
/// name), so `tools/list` is deterministic and costs nothing.
#[derive(Clone)]
pub struct SkillServer {
    host: Arc<Host>,
    tools: Arc<Vec<Tool>>,
    files: Arc<Vec<SkillFile>>,
    /// Bounds the number of skill calls running at once on the blocking pool.
    slots: Arc<Semaphore>,
}

impl SkillServer {
    /// Builds the server: one [`Tool`] per skill ([`tool_for`]) and one resource per
    /// file of each skill folder (`skill://<name>/<file>`, `SKILL.md` first).
    ///
    /// At most `max(2 × available CPUs, 4)` calls run at once; further calls wait for
    /// a slot (no lock is held while a query runs).
    pub fn new(host: Arc<Host>) -> Self {
        let tools = host.skills().iter().map(tool_for).collect();
        let files = host.skills().iter().flat_map(skill_files).collect();
        let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        Self {
            host,
            tools: Arc::new(tools),
            files: Arc::new(files),
            slots: Arc::new(Semaphore::new((cpus * 2).max(4))),
        }
    }

    /// The tools served, in host order.
    #[must_use]
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Runs one `tools/call` and maps the outcome to a tool result: on success
    /// `structuredContent` is the engine's JSON and the text content the rendered
    /// markdown; every failure is a result with `isError: true` and one text block.
    pub async fn call(&self, name: &str, arguments: Option<JsonObject>) -> CallToolResult {
        let Ok(_slot) = self.slots.acquire().await else {
            return error_result("the server is shutting down".to_owned());
        };
        let host = Arc::clone(&self.host);
        let tool = name.to_owned();
        let args = arguments.map_or(Value::Null, Value::Object);
        let outcome = tokio::task::spawn_blocking(move || host.call(&tool, args)).await;
        match outcome {
            Ok(Ok(output)) => {
                let mut result = CallToolResult::structured(output.data);
                result.content = vec![ContentBlock::text(output.text)];
                result
            }
            Ok(Err(e)) => error_result(call_error_message(&e, &self.tools)),
            Err(join) => error_result(format!(
                "`{name}` failed: the engine stopped unexpectedly ({join})"
            )),
        }
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

/// The MCP tool for a skill.
///
/// Shape: `name` = [`Skill::tool_name`], `title`, `description`, `inputSchema` =
/// [`tool_input_schema`] of the document's `input-schema`, `outputSchema` = the
/// sanitised `output-schema` when its root is an object, and annotations
/// `readOnlyHint` ([`Skill::is_read_only`]), `idempotentHint` (the document's
/// `annotations.idempotent`, else [`Skill::is_deterministic`]), `destructiveHint` (the document's
/// `annotations.destructive`, else false for read-only skills) and `openWorldHint`
/// (the document's `annotations.open-world`, else false).
pub fn tool_for(skill: &Skill) -> Tool {
    let input = as_object(tool_input_schema(&skill.meta.input_schema));
    let mut tool = Tool::new_with_raw(
        skill.tool_name().to_owned(),
        Some(Cow::Owned(skill.meta.description.clone())),
        Arc::new(input),
    );
    if let Some(title) = &skill.meta.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(out) = &skill.meta.output_schema {
        let out = tool_input_schema(out);
        if out.get("type").and_then(Value::as_str) == Some("object") {
            tool = tool.with_raw_output_schema(Arc::new(as_object(out)));
        }
    }
    let declared = &skill.meta.annotations;
    let read_only = skill.is_read_only();
    let mut annotations = ToolAnnotations::new()
        .read_only(read_only)
        .idempotent(
            declared
                .idempotent
                .unwrap_or_else(|| skill.is_deterministic()),
        )
        .open_world(declared.open_world.unwrap_or(false));
    if let Some(title) = &skill.meta.title {
        annotations.title = Some(title.clone());
    }
    if let Some(destructive) = declared.destructive.or(read_only.then_some(false)) {
        annotations = annotations.destructive(destructive);
    }
    tool.with_annotations(annotations)
}

fn as_object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Rewrites a document's JSON Schema into the shape strict MCP clients accept, for
/// `inputSchema` (and `outputSchema`). The host still validates against the original.
///
/// - The root is an object schema: `type: "object"` and `properties` (empty when absent).
/// - `type: [X, "null"]` becomes `type: X` (several non-null types stay a list
///   without `"null"`); a `default: null` that no longer fits is dropped.
/// - `anyOf`/`oneOf` of one schema and `{type: "null"}` becomes that schema (its
///   siblings such as `description` and `default` are kept).
/// - Local `$ref`s (`#/$defs/…`, `#/definitions/…`) are inlined, and `$defs` /
///   `definitions` removed; a recursive reference becomes `{}` (any value).
/// - `enum` lists are kept as they are, `null` included.
///
/// Input `{"type":"object","properties":{"q":{"type":["string","null"],"default":null}}}`
/// gives `{"type":"object","properties":{"q":{"type":"string"}}}`.
pub fn tool_input_schema(schema: &Value) -> Value {
    let defs = collect_defs(schema);
    let mut out = sanitise(schema, &defs, &mut Vec::new());
    if let Value::Object(map) = &mut out {
        map.remove("$defs");
        map.remove("definitions");
        if map.get("type").and_then(Value::as_str) != Some("object") {
            map.insert("type".into(), Value::String("object".into()));
        }
        if !map.get("properties").is_some_and(Value::is_object) {
            map.insert("properties".into(), Value::Object(Map::new()));
        }
        out
    } else {
        let mut map = Map::new();
        map.insert("type".into(), Value::String("object".into()));
        map.insert("properties".into(), Value::Object(Map::new()));
        Value::Object(map)
    }
}

/// `$ref` targets by reference string (`#/$defs/Name`, `#/definitions/Name`).
fn collect_defs(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(entries)) = schema.get(key) {
            for (name, def) in entries {
                defs.insert(format!("#/{key}/{name}"), def.clone());
            }
        }
    }
    defs
}

/// Keywords whose value is one schema.
const SCHEMA_KEYS: [&str; 7] = [
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
];
/// Keywords whose value is a list of schemas.
const LIST_KEYS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const MAP_KEYS: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];

fn sanitise(schema: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    // Inline a local reference, merging any sibling keywords over the target.
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = defs
            .get(reference)
            .filter(|_| !stack.iter().any(|r| r == reference));
        let Some(target) = target else {
            return Value::Object(Map::new());
        };
        stack.push(reference.to_owned());
        let mut merged = match sanitise(target, defs, stack) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        stack.pop();
        for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
            merged.insert(k.clone(), sanitise_keyword(k, v, defs, stack));
        }
        return Value::Object(merged);
    }
    let mut out = Map::new();
    for (key, value) in map {
        if key == "$defs" || key == "definitions" {
            continue;
        }
        out.insert(key.clone(), sanitise_keyword(key, value, defs, stack));
    }
    let mut dropped_null = false;
    // `type: [X, "null"]` → `type: X`.
    if let Some(Value::Array(types)) = out.get("type") {
        let non_null: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        dropped_null = non_null.len() < types.len();
        match non_null.len() {
            0 => {}
            1 => {
                out.insert("type".into(), non_null[0].clone());
            }
            _ => {
                out.insert("type".into(), Value::Array(non_null));
            }
        }
    }
    // `anyOf: [S, {type: null}]` → S merged with the siblings.
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = out.get(key) else {
            continue;
        };
        let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null_schema(b)).collect();
        if non_null.len() == 1 && branches.len() == 2 {
            let branch = non_null[0].clone();
            out.remove(key);
            dropped_null = true;
            if let Value::Object(branch) = branch {
                for (k, v) in branch {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
    if dropped_null && out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
    Value::Object(out)
}

fn sanitise_keyword(
    key: &str,
    value: &Value,
    defs: &Map<String, Value>,
    stack: &mut Vec<String>,
) -> Value {
    if SCHEMA_KEYS.contains(&key) {
        return sanitise(value, defs, stack);
    }
    if LIST_KEYS.contains(&key) {
        if let Value::Array(items) = value {
            return Value::Array(items.iter().map(|s| sanitise(s, defs, stack)).collect());
        }
    }
    if MAP_KEYS.contains(&key) {
        if let Value::Object(entries) = value {
            return Value::Object(
                entries
                    .iter()
                    .map(|(k, s)| (k.clone(), sanitise(s, defs, stack)))
                    .collect(),
            );
        }
    }
    value.clone()
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        && schema.as_object().is_some_and(|m| m.len() == 1)
}

/// The resources of one skill folder: `SKILL.md` first, then the other top-level
/// files in name order (templates, references), each as `skill://<name>/<file>`.
fn skill_files(skill: &Skill) -> Vec<SkillFile> {
    let mut names: Vec<String> = fs_err::read_dir(skill.dir())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| crate::confine::is_file_inside(skill.dir(), &e.path()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n != "SKILL.md" && !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.insert(0, "SKILL.md".to_owned());
    names
        .into_iter()
        .map(|file| {
            let path = skill.dir().join(&file);
            let mime_type = mime_for(&file);
            let mut resource = Resource::new(
                format!("skill://{}/{file}", skill.name()),
                format!("{}/{file}", skill.name()),
            )
            .with_mime_type(mime_type);
            if file == "SKILL.md" {
                resource = resource.with_description(skill.meta.description.clone());
                if let Some(title) = &skill.meta.title {
                    resource = resource.with_title(title.clone());
                }
            }
            if let Ok(meta) = fs_err::metadata(&path) {
                resource = resource.with_size(meta.len());
            }
            SkillFile {
                resource,
                path,
                mime_type,
            }
        })
        .collect()
}

fn mime_for(file: &str) -> &'static str {
    match file.rsplit('.').next().unwrap_or("") {
        "md" => "text/markdown",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        _ => "text/plain",
    }
}

impl ServerHandler for SkillServer {
    fn get_info(&self) -> ServerConfig {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(
                Implementation::new("skills", env!("CARGO_PKG_VERSION"))
                    .with_title("Skills")
                    .with_description("Skill documents bound to retrieval engines"),
            )
            .with_instructions(format!(
                "Each tool is a skill documented by a SKILL.md (resources `skill://<name>/SKILL.md`). Tools: {}.",
                names.join(", ")
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.call(&request.name, request.arguments).await.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            self.files.iter().map(|f| f.resource.clone()).collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(file) = self.files.iter().find(|f| f.resource.uri == request.uri) else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "unknown resource `{}`; skill documents are `skill://<name>/SKILL.md`",
                    request.uri
                ),
                None,
            ));
        };
        let path = file.path.clone();
        let text = tokio::task::spawn_blocking(move || {
            // Checked again at read time: a link may have been swapped in since start.
            let folder = path.parent().unwrap_or_else(|| std::path::Path::new("."));
            if !crate::confine::is_file_inside(folder, &path) {
                return Err(std::io::Error::other(format!(
                    "`{}` is no longer a file inside its skill folder",
                    path.display()
                )));
            }
            fs_err::read_to_string(path)
        })
        .await
        .map_err(|e| {
            ErrorData::internal_error(format!("reading `{}` stopped: {e}", request.uri), None)
        })?
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let contents = ResourceContents::text(text, request.uri).with_mime_type(file.mime_type);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Serves `host` over stdio until the client closes stdin.
///
/// Lines pass through [`super::jsonrpc_gate`] first: any line that is not a valid
/// JSON-RPC message is answered there (never dropped). When stdin closes, calls still
/// running get [`STDIN_CLOSE_GRACE`] to answer, then the server stops without them.
///
/// # Errors
/// [`ServeError::Stdio`] when the handshake fails or the session ends with an error.
pub async fn serve_stdio(host: Arc<Host>) -> Result<(), ServeError> {
    let server = SkillServer::new(host);
    let (gate, transport) =
        super::jsonrpc_gate::Gate::start(tokio::io::stdin(), tokio::io::stdout());
    let running = server
        .serve(transport)
        .await
        .map_err(|e| ServeError::Stdio(e.to_string()))?;
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        ended = &mut waiting => {
            ended.map_err(|e| ServeError::Stdio(e.to_string()))?;
        }
        () = async {
            gate.closed.cancelled().await;
            tokio::time::sleep(STDIN_CLOSE_GRACE).await;
        } => {
            eprintln!("skills: stdin closed; stopping with a call still running");
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

/// Serves `host` as streamable HTTP under [`HTTP_PATH`] (other paths: `404`) until
/// `shutdown` is cancelled. Calls `on_listen` with the bound address (useful with
/// port 0) once the socket accepts connections.
///
/// # Errors
/// [`ServeError::NotLoopback`] for a non-loopback address without `allow_remote`;
/// [`ServeError::Bind`] when the socket cannot be bound.
pub async fn serve_http(
    host: Arc<Host>,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_listen: impl FnOnce(SocketAddr),
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
    let server = SkillServer::new(host);
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
    config = if allow_remote {
        config.disable_allowed_hosts().disable_allowed_origins()
    } else {
        config
            .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
            .with_allowed_origins([
                "http://localhost:*",
                "http://127.0.0.1:*",
                "http://[::1]:*",
                "https://localhost:*",
                "https://127.0.0.1:*",
                "https://[::1]:*",
            ])
    };
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(super::http_guard::SESSION_IDLE);
    let sessions = Arc::new(sessions);
    let service: StreamableHttpService<SkillServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&sessions), config);
    on_listen(bound);
    loop {
        let (stream, _peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    eprintln!("warning: accepting a connection failed: {e}");
                    continue;
                }
            },
        };
        let service = service.clone();
        let shutdown = shutdown.clone();
        let sessions = Arc::clone(&sessions);
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let mut service = service.clone();
                let sessions = Arc::clone(&sessions);
                async move {
                    if request.uri().path() != HTTP_PATH {
                        return Ok::<_, Infallible>(not_found());
                    }
                    if let Some(refused) = super::http_guard::duplicate_headers(request.headers()) {
                        return Ok(refused);
                    }
                    if super::http_guard::opens_session(&request)
                        && sessions.sessions.read().await.len() >= super::http_guard::MAX_SESSIONS
                    {
                        return Ok(super::http_guard::too_many_sessions());
                    }
                    let response = tower_service::Service::call(&mut service, request).await?;
                    Ok(super::http_guard::as_jsonrpc(response).await)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        if !e.is_incomplete_message() {
                            eprintln!("warning: HTTP connection: {e}");
                        }
                    }
                }
                () = shutdown.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_type_unions_become_single_types() {
        let schema = json!({"type": "object", "properties": {
            "q": {"type": ["string", "null"], "default": null, "description": "d"},
            "n": {"type": ["integer", "number", "null"]},
            "k": {"type": "integer", "default": 3}
        }});
        assert_eq!(
            tool_input_schema(&schema),
            json!({"type": "object", "properties": {
                "q": {"type": "string", "description": "d"},
                "n": {"type": ["integer", "number"]},
                "k": {"type": "integer", "default": 3}
            }})
        );
    }

    #[test]
    fn enums_with_null_are_kept() {
        let schema = json!({"type": "object", "additionalProperties": false, "properties": {
            "role": {"enum": ["user", "assistant", null], "default": null}
        }});
        assert_eq!(tool_input_schema(&schema), schema);
    }

    #[test]
    fn refs_are_inlined_and_defs_removed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "when": {"$ref": "#/$defs/Range", "description": "period"},
                "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
                "tree": {"$ref": "#/$defs/Node"}
            },
            "$defs": {
                "Range": {"type": "object", "properties": {"from": {"type": ["string", "null"]}}},
                "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}
            },
            "definitions": {"Tag": {"type": "string"}}
        });
        assert_eq!(
            tool_input_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "when": {"type": "object", "properties": {"from": {"type": "string"}}, "description": "period"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "tree": {"type": "object", "properties": {"child": {}}}
                }
            })
        );
    }

    #[test]
    fn optional_any_of_is_flattened() {
        let schema = json!({"type": "object", "properties": {
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": null, "title": "Limit"},
            "either": {"oneOf": [{"type": "integer"}, {"type": "string"}]}
        }});
        assert_eq!(
            tool_input_schema(&schema),
            json!({"type": "object", "properties": {
                "limit": {"title": "Limit", "type": "integer", "minimum": 1},
                "either": {"oneOf": [{"type": "integer"}, {"type": "string"}]}
            }})
        );
    }

    #[test]
    fn root_is_always_an_object_schema() {
        assert_eq!(
            tool_input_schema(&json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            tool_input_schema(&json!(true)),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            tool_input_schema(&json!({"type": ["object", "null"], "required": ["a"]})),
            json!({"type": "object", "required": ["a"], "properties": {}})
        );
    }

    #[test]
    fn mime_types_follow_extensions() {
        assert_eq!(mime_for("SKILL.md"), "text/markdown");
        assert_eq!(mime_for("template.md.j2"), "text/plain");
        assert_eq!(mime_for("schema.json"), "application/json");
    }
}
