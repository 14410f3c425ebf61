//! Lets the `skills` binary find a prebuilt `libduckdb.so` at run time, and names the
//! target for `skills --version`.
//!
//! When `DUCKDB_LIB_DIR` points at a prebuilt DuckDB (see `scripts/env.sh`), the
//! dynamic linker must find the library again when the binary runs; an rpath to
//! that folder does it without `LD_LIBRARY_PATH`. Two more rpaths find the copy an
//! install puts near the binary (`$ORIGIN` is `@executable_path` on macOS):
//! `$ORIGIN/../lib/skills` (the release archive's and the Python wheel's
//! `lib/skills/libduckdb.so`: a folder of its own, so an install under `/usr/local`
//! never replaces another program's `lib/libduckdb.so`) and `$ORIGIN`
//! (`scripts/install`, beside it).
//!
//! `SKILLS_GLIBC` (set by `scripts/release` for its portable build) leaves out the
//! rpath to this machine's folder: a binary for other machines must not look there.

fn main() {
    println!("cargo:rerun-if-env-changed=DUCKDB_LIB_DIR");
    println!("cargo:rerun-if-env-changed=SKILLS_GLIBC");
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo:rustc-env=SKILLS_TARGET={target}");
    }
    if std::env::var_os("CARGO_FEATURE_BUNDLED").is_some() {
        return;
    }
    let portable = std::env::var_os("SKILLS_GLIBC").is_some_and(|v| !v.is_empty());
    if let Some(dir) = std::env::var_os("DUCKDB_LIB_DIR").filter(|_| !portable) {
        let dir = std::path::PathBuf::from(dir);
        let dir = dir.canonicalize().unwrap_or(dir);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    // Wherever the files are copied, after the build folder is gone.
    let origin = match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("linux") => "$ORIGIN",
        Ok("macos") => "@executable_path",
        _ => return,
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{origin}/../lib/skills");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{origin}");
}
