//! The exit-code policy, in one place: 0 success, 1 the call, check or import failed,
//! 2 bad usage or invalid skill documents. A command either completes with an
//! [`Outcome`] (its report already printed) or fails with an error whose type says
//! which code it earns and which hint helps.

use std::process::ExitCode;

use anyhow::Error;

use skills::engines::EngineError;
use skills::host::CallError;
use skills::mcp::ServeError;
use skills::setup::SetupError;
use skills::site::scaffold::ScaffoldError;
use skills::stores::memories::save::AddMemoryError;
use skills::stores::{Store, StoreError};
use skills::verify::VerifyError;

use super::Printer;

/// How a command that ran to the end went; its report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything succeeded (exit 0).
    Success,
    /// The report says what failed: a check, or an import that read nothing (exit 1).
    Failed,
    /// The report lists invalid skill documents (exit 2).
    Invalid,
}

/// A command line the command cannot act on: a malformed argument, a name that does
/// not exist, a missing option. Exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UsageError {
    message: String,
    hint: Option<String>,
}

impl UsageError {
    /// A usage error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
        }
    }

    /// The same error with a hint on what to do instead.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Prints the error (if any) with its hint and gives the exit code.
pub fn finish(printer: &mut Printer, result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::Invalid) => ExitCode::from(2),
        Err(err) => {
            report(printer, &err);
            if let Some(hint) = hint(&err) {
                printer.hint(hint);
            }
            ExitCode::from(if is_usage(&err) { 2 } else { 1 })
        }
    }
}

/// Prints the error: invalid arguments one per line, anything else with its causes.
fn report(printer: &mut Printer, err: &Error) {
    if let Some(CallError::InvalidArguments { skill, errors }) = err.downcast_ref() {
        for e in errors {
            printer.error(format!("{skill}: {e}"));
        }
        return;
    }
    printer.error_chain(err.as_ref());
}

/// Whether the error is the caller's: exit 2 rather than 1.
fn is_usage(err: &Error) -> bool {
    err.chain().any(|e| {
        e.is::<UsageError>()
            || matches!(
                e.downcast_ref(),
                Some(CallError::InvalidArguments { .. } | CallError::UnknownSkill { .. })
            )
            || matches!(e.downcast_ref(), Some(VerifyError::UnknownSkill { .. }))
            || matches!(e.downcast_ref(), Some(ServeError::NotLoopback { .. }))
            || matches!(
                e.downcast_ref(),
                Some(
                    ScaffoldError::InvalidName(_)
                        | ScaffoldError::Exists(_)
                        | ScaffoldError::UnknownEngine(_)
                )
            )
            || matches!(e.downcast_ref(), Some(AddMemoryError::Empty))
            || matches!(e.downcast_ref(), Some(SetupError::NoProjectFile { .. }))
    })
}

/// What to do about the error, when its type knows.
fn hint(err: &Error) -> Option<String> {
    for e in err.chain() {
        if let Some(usage) = e.downcast_ref::<UsageError>() {
            return usage.hint.clone();
        }
        if let Some(CallError::InvalidArguments { skill, .. }) = e.downcast_ref() {
            return Some(format!("`skills show {skill}` lists the parameters"));
        }
        if let Some(ServeError::NotLoopback { .. }) = e.downcast_ref() {
            return Some(
                "bind `127.0.0.1:PORT`, or pass `--allow-remote` to accept remote clients".into(),
            );
        }
        if let Some(SetupError::ReadOnly { .. }) = e.downcast_ref() {
            return Some(
                "make it writable, or pass `--force` to write it anyway (its permissions are kept)"
                    .into(),
            );
        }
        if let Some(SetupError::OutsideProject { .. }) = e.downcast_ref() {
            return Some(
                "a symlink in the project leads elsewhere: remove it, or run `skills setup` without `--project`"
                    .into(),
            );
        }
        if let Some(
            SetupError::Parse { .. } | SetupError::Shape { .. } | SetupError::NotText { .. },
        ) = e.downcast_ref()
        {
            return Some(
                "the file was left as it is: fix it (or move it aside) and run `skills setup` \
                 again"
                    .into(),
            );
        }
        // Engines wrap store errors transparently, so the store error is not in the chain.
        let store_error = e.downcast_ref::<StoreError>().or(match e.downcast_ref() {
            Some(EngineError::Store(store_error)) => Some(store_error),
            _ => None,
        });
        if let Some(StoreError::Missing { store, .. }) = store_error {
            return Some(missing_store_hint(*store).into());
        }
    }
    None
}

/// How to create a store that does not exist yet.
fn missing_store_hint(store: Store) -> &'static str {
    match store {
        Store::Conversations => "import transcripts with `skills ingest [PATH…]`",
        Store::Memories => {
            "import memories with `skills memo import PATH…`, or add one with `skills memo add`"
        }
    }
}
