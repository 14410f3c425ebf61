//! `skills`: a spec-driven tool-plugin host.
//!
//! Skill documents (`skills/<name>/SKILL.md`) are parsed, validated, bound and called
//! by the [`host`], bound to a Rust engine from [`engines`], which reads the data in
//! [`stores`] that [`ingest`] imported from real transcript and memory formats. The
//! host is served over MCP by [`mcp`], its documents' checklists are run as tests by
//! [`verify`], and [`site`] makes documentation pages, new-skill scaffolds and
//! Agent Skills exports from skill folders; [`background_import`] keeps the store
//! current while `skills serve` runs. Retrieval machinery (BM25 postings, vectors,
//! filters, typo lookup) is [`search`]; the records both ingest and stores handle are
//! [`model`], times are read by [`time`], YAML is parsed with a nesting bound by
//! [`yaml`], a call is stopped through [`cancel`], folders listed by [`walk`], paths
//! kept inside a folder by [`confine`], text for a terminal escaped by [`terminal`], the user's folders that tools keep their files
//! in (transcripts, MCP configs) named by [`places`], and text is embedded by
//! [`embed`]; [`listener`] accepts HTTP connections (limits, the `Host`/`Origin`
//! guard); [`web`] serves pages for people beside `/mcp`, [`setup`] wires `skills
//! serve` into MCP clients' config files, and [`archive`] pushes to and searches a
//! team's archive on PostgreSQL. Every environment variable the program reads is
//! defined once in [`settings`]. Every entry point (CLI, MCP, `verify`, the pages)
//! runs skills through [`host::Host::call`].
#![warn(missing_docs)]

pub mod archive;
pub mod background_import;
#[cfg(feature = "bench")]
pub mod bench;
pub mod cancel;
pub mod confine;
pub mod embed;
pub mod engines;
pub mod host;
pub mod ingest;
pub mod listener;
pub mod mcp;
pub mod model;
pub mod places;
pub mod redact;
pub mod search;
pub mod settings;
pub mod setup;
pub mod site;
pub mod stores;
pub mod terminal;
pub mod time;
pub mod verify;
pub mod walk;
pub mod web;
pub mod yaml;
