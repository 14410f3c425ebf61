//! `skills ingest [PATH…]`: import transcripts into the conversations store.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use skills::ingest::IngestOptions;
use skills::stores::conversations::embeddings::UnitSpec;
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
    /// Skip the L1 embeddings semantic-search reads (faster; semantic-search then
    /// says "embeddings unavailable — run `skills ingest`" until an ingest without
    /// this flag embeds the store).
    #[arg(long)]
    no_embed: bool,
}

/// Imports `paths` (else every tool's default location) and prints the summary (under
/// `--json` the summary object plus `store`). [`Outcome::Failed`] when faults were
/// all there was: per-record faults do not fail a run that imported something.
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
    };
    let store_path = session.store_paths()?.conversations;
    let mut store = ConversationStore::open_rw(&store_path)?;
    let json = session.json();
    let mut embed_note = None;
    if !args.no_embed {
        let model = if std::env::var("SKILLS_EMBEDDER").as_deref() == Ok("none") {
            Err(skills::embed::EmbedError::Disabled)
        } else {
            skills::embed::Embedder::load_default()
        };
        match model {
            Ok(model) => store.embed_with(std::sync::Arc::new(model), UnitSpec::DEFAULT)?,
            Err(e) => embed_note = Some(format!("embeddings not updated: {e}")),
        }
    }
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
    let closed = store.close_with(&mut |done, total| {
        bar.set_message(format!("embedding messages: {done}/{total}"));
    });
    bar.finish_and_clear();
    let printer = &mut session.printer;
    let (index, embedded) = match closed {
        Ok(report) => (report.index, report.embeddings),
        Err(e) => {
            printer.warning(format_args!("the search index was not updated ({e}); searches answer from DuckDB until the next ingest"));
            (None, None)
        }
    };
    let embedded = match embedded {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            printer.warning(format_args!(
                "the embeddings were not updated ({e}); semantic-search says so until the next ingest"
            ));
            None
        }
        None => None,
    };
    if let Some(note) = &embed_note {
        if !json {
            printer.note(format_args!("{note}"));
        }
    }
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
        if !args.no_embed {
            value["embeddings"] = serde_json::to_value(&embedded)?;
        }
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
        if let Some(e) = &embedded {
            let how = if e.rebuilt { "rebuilt" } else { "updated" };
            printer.line(format_args!(
                "embeddings: {how}, {} messages embedded, {} units in {} segments ({:.1} MB, {})",
                e.messages_embedded,
                e.units,
                e.segments,
                e.bytes as f64 / 1e6,
                e.model
            ))?;
        }
    }
    let imported_nothing = summary.files_imported + summary.files_unchanged == 0;
    Ok(if imported_nothing && !summary.faults.is_empty() {
        Outcome::Failed
    } else {
        Outcome::Success
    })
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
