//! Benchmark support: a deterministic corpus generator ([`gen`]) and the LoCoMo
//! benchmark's loader ([`locomo`]) for quality harnesses.
//!
//! Nothing here is used by the runtime, the engines or the CLI: the `benches/` runners
//! and the tests are the only callers. This module may read and write stores through
//! their public API (it fills stores with generated data), but it never changes how
//! engines answer a call.

pub mod gen;
pub mod locomo;
