//! The skill host: document parsing ([`doc`]), validation and binding ([`skill`]),
//! argument checking ([`args`]), rendering ([`render`]), the [`Host`] that ties
//! them together, and its MCP exposure ([`mcp`], behind the stdio line gate [`jsonrpc_gate`], with what it serves in [`catalog`],
//! the SEP-2640 skill entries in [`skills_ext`], client-lenient schemas in
//! [`served_schema`] and hot reload in [`watch`]); keeping the store current while
//! serving ([`ingest_watch`], its children ending with the server through [`lifeline`]); Agent Skills portability
//! ([`portable`]: host fields read from `metadata`, `validate --portable`, export);
//! [`yaml_depth`] bounds YAML nesting before parsing.
//! The runtime knows no particular engine: engines come from [`crate::engines::registry`].

pub mod args;
pub mod catalog;
pub mod conformance;
pub mod doc;
pub mod docs;
pub mod host;
pub mod http_guard;
pub mod ingest_watch;
pub mod jsonrpc_gate;
pub mod lifeline;
pub mod mcp;
pub mod portable;
pub mod render;
pub mod scaffold;
pub mod served_schema;
pub mod skill;
pub mod skills_ext;
pub mod watch;
pub mod yaml_depth;

pub use doc::{Diagnostic, SkillDoc};
pub use host::{CallError, CallOutput, Host};
pub use skill::Skill;
