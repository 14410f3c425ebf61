//! Benchmark support: a deterministic corpus generator ([`gen`]) and measured
//! prototypes of faster search paths ([`scan`]).
//!
//! Nothing here is used by the runtime, the engines or the CLI: the `benches/` runners
//! and the unit tests are the only callers. This module may read and write stores
//! through their public API (it fills stores with generated data), but it never
//! changes how engines answer a call. A prototype that proves itself here moves into
//! an engine in its own change, with its differential tests.

pub mod gen;
pub mod scan;
