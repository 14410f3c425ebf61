//! `skills ingest [PATH…]`: import transcripts into the conversations store.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use skills::ingest::IngestOptions;
use skills::stores::conversations::ConversationStore;

use super::{Outcome, Session, UsageError};

/// Arguments of `skills ingest`.
#[derive(clap::Args)]
pub struct Args {
    /// Files or folders to import (Claude Code, Codex, Gemini CLI and pi sessions,
    /// ChatGPT `conversations.json`…). Unchanged files are not read again.
    paths: Vec<PathBuf>,
    /// Hide the progress bar.
    #[arg(long)]
    quiet: bool,
    /// Store text a harness injected under the user role (`<system-reminder>`,
    /// command wrappers, continuation summaries, Codex preambles) as ordinary user
    /// messages instead of setting it aside.
    #[arg(long)]
    keep_injected: bool,
    /// Replace secrets (API keys, tokens, private keys, passwords) in message text
    /// with `[REDACTED:<detector>]` before storing. Without it the store keeps raw
    /// text and skills redact their output.
    #[arg(long)]
    redact: bool,
}

/// Imports `paths` (else every tool's default location) and prints the summary (under
/// `--json` the summary object plus `store`). [`Outcome::Failed`] when a file could
/// not be imported or stored, or the store could not be closed (see
/// [`failed_files`]); per-record faults inside an imported file do not fail the run.
///
/// # Errors
/// [`UsageError`] when no path is given and no default location holds transcripts;
/// store failures.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let paths = if args.paths.is_empty() {
        let found = skills::ingest::discover();
        if found.is_empty() {
            return Err(UsageError::new("no transcripts found in the default locations of Claude Code, Codex, Gemini CLI, pi, Cursor, OpenCode, Cline, Copilot, Amp or Antigravity, nor in $SKILLS_CHATGPT_EXPORT / $SKILLS_CLAUDE_AI_EXPORT (see README, \"Importing transcripts\")")
                .with_hint("give files or folders: `skills ingest PATH…`")
                .into());
        }
        found
    } else {
        args.paths.clone()
    };
    let options = IngestOptions {
        keep_injected: args.keep_injected,
        redact: args.redact,
    };
    let store_path = session.store_paths()?.conversations;
    let store = ConversationStore::open_rw(&store_path)?;
    let json = session.json();
    let bar = progress_bar(args.quiet || json);
    let mut messages = 0usize;
    let mut added = 0usize;
    let summary = skills::ingest::ingest_paths_with(&store, &paths, options, &mut |_path, file| {
        messages += file.parsed;
        added += file.added;
        bar.inc(1);
        bar.set_message(format!("{messages} messages ({added} new)"));
    });
    bar.set_message("updating the search index");
    let index = store.close();
    bar.finish_and_clear();
    let printer = &mut session.printer;
    // A failed close (checkpoint or index write: a full disk) fails the run; the
    // rows committed before it are intact.
    let mut close_failed = false;
    let index = match index {
        Ok(report) => report,
        Err(e) => {
            close_failed = true;
            printer.error(format_args!("the store was not closed cleanly ({e}); the files imported before it are stored, searches answer from DuckDB until the next ingest"));
            None
        }
    };
    if options.keep_injected && summary.files_unchanged > 0 && !json {
        printer.note(format_args!(
            "--keep-injected applies to files read in this run; the {} unchanged files keep their earlier classification (to apply it to everything, ingest into a new --data-dir)",
            summary.files_unchanged
        ));
    }
    if json {
        let mut value = serde_json::to_value(&summary)?;
        value["store"] = json!(store_path);
        value["index"] = serde_json::to_value(&index)?;
        printer.print_json(&value)?;
    } else {
        printer.text(&summary)?;
        printer.line(format_args!("store: {}", store_path.display()))?;
        if let Some(ix) = &index {
            let how = if ix.rebuilt { "rebuilt" } else { "updated" };
            printer.line(format_args!(
                "search index: {how}, {} rows in {} segments ({:.1} MB)",
                ix.rows,
                ix.segments,
                ix.bytes as f64 / 1e6
            ))?;
        }
    }
    Ok(if close_failed || failed_files(&summary) > 0 {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

/// Files seen that were neither imported nor unchanged: unreadable, of no known
/// format when given by path, or not stored (a write failed, e.g. a full disk). Any
/// makes the run fail (exit 1); faults in single records of an imported file do not.
fn failed_files(summary: &skills::ingest::IngestSummary) -> usize {
    summary
        .files_seen
        .saturating_sub(summary.files_imported + summary.files_unchanged)
}

/// A spinner with files and messages counted, or a hidden bar.
fn progress_bar(hidden: bool) -> indicatif::ProgressBar {
    let bar = if hidden {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {pos} files, {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    // Files are reported batch by batch; keep the spinner moving in between.
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
