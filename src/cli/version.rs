//! `skills --version`: which build this is and what it found, so a person with two
//! `skills` commands on the PATH (the npm Agent Skills installer has one too) can tell
//! them apart, and a bug report says what ran.
//!
//! `-V` prints one line (`skills 0.1.0 (commit 1a2b3c4d5e6f, x86_64-unknown-linux-gnu)`);
//! `--version` adds the binary's path, the glibc it was built for and the model tiers
//! present, found as the commands find them (no model is loaded).

use std::path::Path;

use skills::embed::{deep, Embedder};

/// The commit the binary was built from: `SKILLS_COMMIT` at build time (set by
/// `scripts/release`); plain `cargo build`s are not stamped, so a commit never goes
/// stale in an incremental build.
const COMMIT: Option<&str> = skills::settings::BUILT_COMMIT;
/// The oldest glibc the build links against (`SKILLS_GLIBC` at build time, set by
/// `scripts/release` for its cargo-zigbuild build); `None` for a build for this machine.
const GLIBC: Option<&str> = skills::settings::BUILT_GLIBC;
/// The target triple (from `build.rs`).
const TARGET: &str = skills::settings::BUILT_TARGET;

/// The one-line version (`-V`).
pub fn short() -> String {
    format!(
        "{} (commit {}, {TARGET})",
        env!("CARGO_PKG_VERSION"),
        COMMIT.unwrap_or("not stamped")
    )
}

/// The long version (`--version`): [`short`]'s facts one per line, then the binary's
/// path and the model tiers present in the model folder the commands would use.
pub fn long() -> String {
    let mut out = format!("{}\n", env!("CARGO_PKG_VERSION"));
    let commit = COMMIT.unwrap_or("not stamped (a cargo build; scripts/release stamps it)");
    out.push_str(&format!("commit: {commit}\n"));
    let glibc = GLIBC.map_or_else(
        || "built for this machine's glibc".to_owned(),
        |g| format!("glibc {g} or newer"),
    );
    out.push_str(&format!("target: {TARGET} ({glibc})\n"));
    if let Ok(exe) = std::env::current_exe() {
        let exe = fs_err::canonicalize(&exe).unwrap_or(exe);
        out.push_str(&format!("binary: {}\n", exe.display()));
    }
    out.push_str(&model_lines());
    out
}

/// `model: <folder>` and one line per tier: present (with the engine build the CPU
/// runs, for the second tier) or missing.
fn model_lines() -> String {
    let Some(dir) = Embedder::default_dir() else {
        return format!(
            "model: none (no model folder is known: set {})\n",
            skills::settings::MODEL_DIR.name
        );
    };
    let mut out = format!("model: {}\n", dir.display());
    let static_tier = if Embedder::has_files(&dir) {
        format!("present ({})", skills::embed::MODEL)
    } else {
        "missing (run scripts/fetch-model, or install a release)".to_owned()
    };
    out.push_str(&format!("  static tier: {static_tier}\n"));
    out.push_str(&format!("  second tier: {}\n", second_tier(&dir)));
    out
}

/// The second tier's state in `dir`.
fn second_tier(dir: &Path) -> String {
    let weights = dir.join(deep::SUBDIR).join(deep::WEIGHTS).is_file();
    match deep::engine(dir) {
        Some((engine, _)) if weights => {
            let file = engine.file_name().map(|f| f.to_string_lossy().into_owned());
            format!(
                "present ({}, engine {})",
                deep::NAME,
                file.unwrap_or_default()
            )
        }
        Some(_) => format!("missing ({} not found)", deep::WEIGHTS),
        None if weights => "missing (no engine build this CPU runs)".to_owned(),
        None => "missing".to_owned(),
    }
}
