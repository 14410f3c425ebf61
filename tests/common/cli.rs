//! Runs of the built `skills` binary (or any program): a command to configure, and the
//! checks every caller made by hand (it succeeded, naming its arguments and stderr when
//! not; its stdout as text or as JSON).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// The built binary (`CARGO_BIN_EXE_skills`).
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_skills")
}

/// `skills`, to be given arguments and environment.
pub fn skills() -> Command {
    Command::new(bin())
}

/// `skills` with the bundled skills (`SKILLS_DIR`) and the data folder `data`
/// (`SKILLS_DATA_DIR`).
pub fn with_data(data: &Path) -> Command {
    let mut cmd = skills();
    cmd.env("SKILLS_DATA_DIR", data)
        .env("SKILLS_DIR", super::repo_skills());
    cmd
}

/// Runs `cmd` and returns its output.
///
/// # Panics
/// When it cannot start, or exits unsuccessfully (naming the program, its arguments,
/// its stdout and its stderr).
pub fn ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
    assert!(
        out.status.success(),
        "{:?} {:?} failed ({}): {}{}",
        cmd.get_program(),
        cmd.get_args().collect::<Vec<_>>(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// [`ok`], then its stdout.
///
/// # Panics
/// As [`ok`]; also when stdout is not UTF-8.
pub fn stdout_of_success(cmd: &mut Command) -> String {
    let out = ok(cmd);
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("stdout is not UTF-8: {e}"))
}

/// Runs `cmd`: whether it succeeded, its stdout and its stderr (lossy UTF-8).
pub fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`ok`], then its stdout parsed as JSON.
pub fn json(cmd: &mut Command) -> Value {
    let out = ok(cmd);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
