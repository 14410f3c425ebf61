//! Benchmark support: a deterministic corpus generator ([`gen`]) and the LoCoMo
//! benchmark's loader ([`locomo`]) for quality harnesses.
//!
//! Nothing here is used by the runtime, the engines or the CLI: the `benches/` runners
//! and the tests are the only callers. This module may read and write stores through
//! their public API (it fills stores with generated data), but it never changes how
//! engines answer a call.
//!
//! Compiled only with the cargo feature `bench`, which `cargo test` and `cargo bench`
//! turn on (Cargo.toml's dev-dependency of the package on itself) and a release build
//! of the binary leaves off, so the installed `skills` does not carry it.

pub mod gen;
pub mod locomo;
