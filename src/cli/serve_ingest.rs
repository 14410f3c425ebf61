//! The background import of `skills serve` ([`skills::runtime::ingest_watch`]) set up
//! from the command line: this binary runs `skills ingest` on the same data folder.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context as _, Result};

use skills::ingest::watched::DefaultLocations;
use skills::runtime::ingest_watch::{self, IngestCommand, IngestWatch, Mode};

use super::{Session, UsageError};

/// Starts watching the default transcript locations and `extra` (`--watch PATH`),
/// importing changes with this binary's `skills --data-dir D ingest --json --quiet`.
///
/// # Errors
/// [`UsageError`] for a `--watch` path that does not exist or a bad `SKILLS_WATCH`;
/// no data folder; the path of this binary unknown; the watcher thread not started.
pub fn start(session: &Session, extra: &[PathBuf]) -> Result<IngestWatch> {
    let mode = Mode::from_env().map_err(UsageError::new)?;
    let conversations = session.store_paths()?.conversations;
    let data_dir = conversations
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let program = std::env::current_exe()
        .context("cannot find the path of this `skills` binary to run `skills ingest`")?;
    let mut args: Vec<OsString> = vec!["--data-dir".into(), data_dir.clone().into()];
    args.extend(["ingest", "--json", "--quiet"].map(OsString::from));
    let extra = extra
        .iter()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let options = ingest_watch::Options {
        defaults: Some(DefaultLocations::current()),
        extra,
        ignore: vec![data_dir.clone()],
        command: IngestCommand { program, args },
        mode,
        data_dir: Some(data_dir),
    };
    ingest_watch::start(options).map_err(|e| match e {
        ingest_watch::WatchError::Missing(_) => UsageError::new(e.to_string()).into(),
        other => anyhow::Error::from(other),
    })
}
