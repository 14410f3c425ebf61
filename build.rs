//! Lets the `skills` binary find a prebuilt `libduckdb.so` at run time.
//!
//! When `DUCKDB_LIB_DIR` points at a prebuilt DuckDB (see `scripts/bootstrap`), the
//! dynamic linker must find the library again when the binary runs; an rpath to
//! that folder does it without `LD_LIBRARY_PATH`. A second rpath, `$ORIGIN`, finds the
//! copy `scripts/install` puts beside the installed binary.

fn main() {
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    if std::env::var_os("CARGO_FEATURE_BUNDLED").is_some() {
        return;
    }
    if let Some(dir) = std::env::var_os("DUCKDB_LIB_DIR") {
        let dir = std::path::PathBuf::from(dir);
        let dir = dir.canonicalize().unwrap_or(dir);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    // `scripts/install` puts `libduckdb.so` beside the binary: `$ORIGIN` finds it there
    // wherever the two are copied, after the build folder is gone.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN");
    }
}
