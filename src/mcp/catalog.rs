//! What the MCP server serves at one moment — a loaded [`Host`], its tools and its
//! SEP-2640 [`SkillSet`] — and the [`Catalog`] that holds the current one, swaps in a
//! reloaded one atomically, and tells sessions that it changed.
//!
//! A call or read takes the current [`Served`] once (an `Arc`) and finishes on it, so a
//! reload never changes a request half-way. This module knows nothing of file watching
//! (see [`super::watch`]) or transports (see [`crate::mcp`]).

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

use rmcp::model::{CacheScope, Implementation, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::served_schema::{served_input_schema, served_output_schema};
use super::skills_ext::SkillSet;
use crate::host::{Diagnostic, Host, Skill};

/// `ttlMs` served while the skills folder is watched: clients may cache lists this long,
/// and are told sooner through `list_changed` notifications.
pub const WATCHED_TTL_MS: u64 = 30_000;

/// `ttlMs` served when nothing is watched: what is served cannot change until the
/// server restarts.
pub const FIXED_TTL_MS: u64 = 300_000;

/// The `_meta` key of the server's `Implementation` on every result (2026-07-28).
pub const SERVER_INFO_META_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// One consistent set of what is served.
pub struct Served {
    /// The loaded skills and their engines.
    pub host: Arc<Host>,
    /// One MCP tool per skill, in host order ([`tool_for`]).
    pub tools: Vec<Tool>,
    /// SEP-2640 entries and `skill://` files.
    pub skills: SkillSet,
}

impl Served {
    /// Builds tools and skill entries for `host`; the diagnostics name skills whose
    /// folder could not be served as SEP-2640 skills (their tools still are).
    pub fn new(host: Arc<Host>) -> (Self, Vec<Diagnostic>) {
        let tools = host.skills().iter().map(tool_for).collect();
        let (skills, problems) = SkillSet::from_skills(host.skills());
        (
            Self {
                host,
                tools,
                skills,
            },
            problems,
        )
    }
}

/// The current [`Served`], replaced as a whole on reload.
pub struct Catalog {
    current: RwLock<Arc<Served>>,
    /// Counts replacements; sessions wait on it to send `list_changed`.
    generation: watch::Sender<u64>,
    watched: bool,
    server_info: Implementation,
}

impl Catalog {
    /// A catalog serving `served`; `watched` says whether a watcher may replace it
    /// (it sets `ttlMs` and the `listChanged` capabilities).
    pub fn new(served: Served, watched: bool) -> Self {
        Self {
            current: RwLock::new(Arc::new(served)),
            generation: watch::Sender::new(0),
            watched,
            server_info: server_info(),
        }
    }

    /// A catalog over `host` that never changes (tests, `--no-watch`); problems with
    /// SEP-2640 entries are printed on stderr.
    pub fn fixed(host: Arc<Host>) -> Self {
        let (served, problems) = Served::new(host);
        for p in problems {
            eprintln!("warning: {p}");
        }
        Self::new(served, false)
    }

    /// What is served now.
    pub fn current(&self) -> Arc<Served> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves `served` from now on and wakes every session waiting on [`Self::changes`].
    pub fn replace(&self, served: Served) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(served);
        self.generation.send_modify(|g| *g += 1);
    }

    /// A receiver that sees every [`Self::replace`] after this call.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Whether a watcher replaces what is served.
    pub fn watched(&self) -> bool {
        self.watched
    }

    /// The `ttlMs` of cacheable results: [`WATCHED_TTL_MS`] or [`FIXED_TTL_MS`].
    pub fn ttl_ms(&self) -> u64 {
        if self.watched {
            WATCHED_TTL_MS
        } else {
            FIXED_TTL_MS
        }
    }

    /// The cache scope of every result: the same for every client.
    pub fn cache_scope(&self) -> CacheScope {
        CacheScope::Public
    }

    /// The server's `Implementation` (`serverInfo`).
    pub fn server_info(&self) -> &Implementation {
        &self.server_info
    }

    /// `meta` with [`SERVER_INFO_META_KEY`] set to the server's `Implementation`.
    pub fn stamp(&self, meta: &mut Option<MetaObject>) {
        let info = serde_json::to_value(&self.server_info).unwrap_or(Value::Null);
        meta.get_or_insert_with(MetaObject::default)
            .0
            .insert(SERVER_INFO_META_KEY.to_owned(), info);
    }
}

/// This server's `Implementation`: name `skills`, the crate version.
pub fn server_info() -> Implementation {
    Implementation::new("skills", env!("CARGO_PKG_VERSION"))
        .with_title("Skills")
        .with_description("Skill documents bound to retrieval engines")
}

/// The MCP tool for a skill.
///
/// Shape: `name` = [`Skill::tool_name`], `title`, `description`, `inputSchema` =
/// [`served_input_schema`] of the document's `input-schema` (the client-lenient
/// subset), `outputSchema` = [`served_output_schema`] when its root is an object, and
/// annotations `readOnlyHint` ([`Skill::is_read_only`]), `idempotentHint` (the
/// document's `annotations.idempotent`, else [`Skill::is_deterministic`]),
/// `destructiveHint` (the document's
/// `annotations.destructive`, else false for read-only skills) and `openWorldHint`
/// (the document's `annotations.open-world`, else false).
pub fn tool_for(skill: &Skill) -> Tool {
    let input = as_object(served_input_schema(&skill.meta.input_schema));
    let mut tool = Tool::new_with_raw(
        skill.tool_name().to_owned(),
        Some(Cow::Owned(skill.meta.description.clone())),
        Arc::new(input),
    );
    if let Some(title) = &skill.meta.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(out) = &skill.meta.output_schema {
        let out = served_output_schema(out);
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
