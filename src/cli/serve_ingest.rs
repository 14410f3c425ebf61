//! The background import of `skills serve` ([`skills::background_import`]) set up
//! from the command line: this binary runs `skills ingest` on the same data folder.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context as _, Result};

use skills::background_import::push::PushCommand;
use skills::background_import::{self, IngestCommand, IngestWatch, Mode};
use skills::ingest::watched::DefaultLocations;

use super::{Session, UsageError};

/// What to watch: the default transcript locations and `extra` (`--watch PATH`),
/// changes imported with this binary's `skills --data-dir D ingest --json --quiet`
/// plus `--keep-secrets` when `keep_secrets` (`skills serve --keep-secrets`), else
/// `--redact` (secrets replaced before storing, whatever the child's environment
/// says). With `archive_push` (`--archive-push URL`), each import is followed by
/// `skills --data-dir D --json archive push` with the URL in the child's environment.
/// Start it with [`start`] once the server listens.
///
/// # Errors
/// [`UsageError`] for a `--watch` path that does not exist, a bad `SKILLS_WATCH` or a
/// bad `--archive-push` URL (never echoed); no data folder; the path of this binary
/// unknown.
pub fn options(
    session: &Session,
    extra: &[PathBuf],
    keep_secrets: bool,
    archive_push: Option<&str>,
) -> Result<background_import::Options> {
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
    args.push(
        if keep_secrets {
            "--keep-secrets"
        } else {
            "--redact"
        }
        .into(),
    );
    if let Some(missing) = extra.iter().find(|p| !p.exists()) {
        return Err(UsageError::new(
            background_import::WatchError::Missing(missing.clone()).to_string(),
        )
        .into());
    }
    let extra = extra
        .iter()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let push = match archive_push.filter(|u| !u.trim().is_empty()) {
        None => None,
        Some(url) => {
            let target = skills::archive::Target::parse(url)
                .map_err(|e| UsageError::new(format!("`--archive-push`: {e}")))?;
            let args = vec![
                "--data-dir".into(),
                data_dir.clone().into(),
                "--json".into(),
                "archive".into(),
                "push".into(),
            ];
            Some(PushCommand::new(
                program.clone(),
                args,
                target,
                url.to_owned(),
            ))
        }
    };
    let options = background_import::Options {
        defaults: Some(DefaultLocations::current()),
        extra,
        ignore: vec![data_dir.clone()],
        command: IngestCommand { program, args },
        mode,
        data_dir: Some(data_dir),
        push,
    };
    Ok(options)
}

/// Starts the background import; a failure is said on stderr and the server goes on
/// without it.
pub fn start(options: background_import::Options) -> Option<IngestWatch> {
    background_import::start(options)
        .map_err(|e| {
            super::Printer::log(format_args!(
                "warning: {e}; the store is updated by `skills ingest` only"
            ))
        })
        .ok()
}
