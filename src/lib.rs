//! `skills`: a spec-driven tool-plugin host.
//!
//! Skill documents (`skills/<name>/SKILL.md`) are parsed and validated by [`runtime`],
//! bound to a Rust engine from [`engines`], which reads the data in [`stores`] that
//! [`ingest`] imported from real transcript and memory formats. Every entry point
//! (CLI, MCP, `verify`) goes through [`runtime::Host::call`].
#![warn(missing_docs)]

pub mod bench;
pub mod engines;
pub mod ingest;
pub mod runtime;
pub mod stores;
