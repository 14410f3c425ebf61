//! `skills`: a spec-driven tool-plugin host.
//!
//! Skill documents (`skills/<name>/SKILL.md`) are parsed and validated by [`runtime`],
//! bound to a Rust engine from [`engines`], which reads the data in [`stores`] that
//! [`ingest`] imported from real transcript and memory formats. Retrieval machinery
//! (BM25 postings, vectors, filters, typo lookup) is [`search`]; the records both
//! ingest and stores handle are [`model`], times are read by [`time`], a call is
//! stopped through [`cancel`], folders listed by [`walk`], text for a terminal escaped
//! by [`terminal`], the user's folders that
//! tools keep their files in (transcripts, MCP configs) named by [`places`], and text
//! is embedded by [`embed`]; [`listener`] accepts HTTP connections (limits, the
//! `Host`/`Origin` guard); [`web`] serves pages for people beside `/mcp`, and [`setup`]
//! wires `skills serve` into MCP clients' config files. Every entry point
//! (CLI, MCP, `verify`, the pages) goes through [`runtime::Host::call`].
#![warn(missing_docs)]

pub mod archive;
#[cfg(feature = "bench")]
pub mod bench;
pub mod cancel;
pub mod confine;
pub mod embed;
pub mod engines;
pub mod ingest;
pub mod listener;
pub mod model;
pub mod places;
pub mod redact;
pub mod runtime;
pub mod search;
pub mod setup;
pub mod stores;
pub mod terminal;
pub mod time;
pub mod walk;
pub mod web;
