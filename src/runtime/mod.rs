//! The skill host: document parsing ([`doc`]), validation and binding ([`skill`]),
//! argument checking ([`args`]), rendering ([`render`]), the [`Host`] that ties
//! them together, and its MCP exposure ([`mcp`], behind the stdio line gate [`jsonrpc_gate`]); [`yaml_depth`] bounds YAML nesting
//! before parsing. The runtime knows no particular
//! engine: engines come from [`crate::engines::registry`].

pub mod args;
pub mod conformance;
pub mod doc;
pub mod docs;
pub mod host;
pub mod http_guard;
pub mod jsonrpc_gate;
pub mod mcp;
pub mod render;
pub mod scaffold;
pub mod skill;
pub mod yaml_depth;

pub use doc::{Diagnostic, SkillDoc};
pub use host::{CallError, CallOutput, Host};
pub use skill::Skill;
