//! `skills ingest [PATH…]`: import transcripts into the conversations store.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use skills::embed::{EmbedError, Embedder};
use skills::ingest::IngestOptions;
use skills::settings::{self, EmbedderSetting};
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
    /// Store message text with its secrets (API keys, tokens, private keys,
    /// passwords) as written. By default each is replaced with `[REDACTED:<detector>]`
    /// before storing, so no search can find it; with this flag search finds secrets
    /// by any prefix and only skills' output is redacted. Also `SKILLS_KEEP_SECRETS=1`.
    #[arg(long)]
    keep_secrets: bool,
    /// Redact secrets before storing: the default (accepted for scripts that pass it).
    #[arg(long, hide = true, conflicts_with = "keep_secrets")]
    redact: bool,
    /// Redact the text already stored (conversations and memories) in place, then
    /// update the search index and embeddings: for stores imported before redaction
    /// at store was the default, or with `--keep-secrets`. Imports nothing.
    #[arg(long, conflicts_with_all = ["keep_secrets", "paths"])]
    redact_stored: bool,
    /// Skip the L1 embeddings semantic-search reads (faster; semantic-search then
    /// says "embeddings unavailable — run `skills ingest`" until an ingest without
    /// this flag embeds the store).
    #[arg(long)]
    no_embed: bool,
    /// The model semantic-search's embeddings come from: `static` (the static table,
    /// microseconds per message) or `deep` (the second tier, multilingual-e5-small:
    /// better recall, ~25 ms per message on 2 cores — for stores of thousands, not
    /// millions, of messages). Default: the model the store's embeddings already
    /// have, else `static`. A change re-embeds every message.
    #[arg(long, value_enum)]
    embedder: Option<Tier>,
}

/// `--embedder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tier {
    // (No doc comments on the values: clap would switch the help to its long layout.)
    Static,
    Deep,
}

/// The conversations' embedding model for this ingest: `--embedder`, else the tier
/// the store's embeddings already have (a plain `skills ingest`, or `serve`'s
/// background one, never switches a deep store back), else the static table.
fn conversation_embedder(
    store_path: &std::path::Path,
    chosen: Option<Tier>,
) -> Result<Embedder, EmbedError> {
    use skills::embed::Tier as Model;
    use skills::stores::conversations::embeddings::{dir_of, Manifest};
    let tier = match chosen {
        Some(Tier::Deep) => Model::Deep,
        Some(Tier::Static) => Model::Static,
        None if Manifest::read(&dir_of(store_path))
            .is_ok_and(|m| m.model == skills::embed::deep::NAME) =>
        {
            Model::Deep
        }
        None => Model::Static,
    };
    Embedder::load_tier(tier)
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
    // Started by `skills serve`: end with it.
    skills::background_import::lifeline::hold();
    let keep_secrets = skills::redact::at_store::configure(args.redact, args.keep_secrets)
        .map_err(|e| UsageError::new(e.to_string()))?;
    if args.redact_stored {
        return redact_stored(session, args);
    }
    let paths = if args.paths.is_empty() {
        let found = skills::ingest::discover();
        if found.is_empty() {
            return Err(UsageError::new(format!("no transcripts found in the default locations of Claude Code, Codex, Gemini CLI, pi, Cursor, OpenCode, Cline, Copilot, Amp or Antigravity, nor in ${} / ${} (see README, \"Importing transcripts\")", settings::CHATGPT_EXPORT.name, settings::CLAUDE_AI_EXPORT.name))
                .with_hint("give files or folders: `skills ingest PATH…`")
                .into());
        }
        found
    } else {
        // Nothing to read: say so before a store is created or opened. (Some missing
        // among others are faults of the run, as any unreadable file is.)
        if args.paths.iter().all(|p| {
            std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        }) {
            let shown: Vec<String> = args
                .paths
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect();
            return Err(UsageError::new(format!(
                "nothing to import: {} {} not exist",
                shown.join(", "),
                if shown.len() == 1 { "does" } else { "do" }
            ))
            .with_hint("give transcript files or folders, or no path for the default locations")
            .into());
        }
        args.paths.clone()
    };
    // The test hook of `tests/serve_ingest.rs`' kill test (see `IngestOptions::pause_at`).
    let pause_at = skills::settings::ingest_pause();
    let options = IngestOptions {
        keep_injected: args.keep_injected,
        redact: !keep_secrets,
        pause_at: pause_at.as_deref(),
        id_key: None,
    };
    let store_path = session.store_paths()?.conversations;
    let mut store = ConversationStore::open_rw(&store_path)?;
    let json = session.json();
    let embed_note = embed(&mut store, args)?;
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
    // A failed close (checkpoint, index or embeddings write: a full disk) fails the
    // run; the rows committed before it are intact.
    let mut close_failed = false;
    let (index, embedded) = match closed {
        Ok(report) => (report.index, report.embeddings),
        Err(e) => {
            close_failed = true;
            printer.error(format_args!("the store was not closed cleanly ({e}); the files imported before it are stored, searches answer from DuckDB until the next ingest"));
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
            let how = match (&ix.reason, ix.rebuilt) {
                // Damage repaired is news; the other reasons (first build, an older
                // store) are routine.
                (Some(why), true) if why.starts_with("damaged") => format!("rebuilt ({why})"),
                (_, true) => "rebuilt".to_owned(),
                (_, false) => "updated".to_owned(),
            };
            printer.line(format_args!(
                "search index: {how}, {} rows in {} segments ({:.1} MB)",
                ix.rows,
                ix.segments,
                ix.bytes as f64 / 1e6
            ))?;
        }
        if let Some(note) = &embed_note {
            printer.line(format_args!("{note}"))?;
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
    Ok(if close_failed || failed_files(&summary) > 0 {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

/// Asks `store` to bring its embeddings up to date at close (unless `--no-embed`);
/// returns why they are skipped when no model can be loaded.
fn embed(store: &mut ConversationStore, args: &Args) -> Result<Option<String>> {
    if args.no_embed {
        return Ok(None);
    }
    let model = if matches!(settings::embedder(), Ok(Some(EmbedderSetting::None))) {
        Err(EmbedError::Disabled)
    } else {
        conversation_embedder(store.path(), args.embedder)
    };
    match model {
        Ok(model) => {
            store.embed_with(std::sync::Arc::new(model), UnitSpec::DEFAULT)?;
            Ok(None)
        }
        Err(e) => Ok(Some(format!("embeddings: skipped — {e}"))),
    }
}

/// `skills ingest --redact-stored`: redacts the conversations and memories already
/// stored, in place (one transaction per store), and brings the search index, the
/// conversations' embeddings and the memories' embeddings up to date. Prints the
/// secrets replaced per store (`--json`: `conversations_secrets_redacted`,
/// `memories_secrets_redacted`).
fn redact_stored(session: &mut Session, args: &Args) -> Result<Outcome> {
    let paths = session.store_paths()?;
    let bar = if args.quiet || session.json() {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut conversations = 0;
    if paths.conversations.exists() {
        bar.set_message("redacting the stored conversations");
        let mut store = ConversationStore::open_rw(&paths.conversations)?;
        embed(&mut store, args)?;
        conversations = store.redact_stored()?;
        bar.set_message("updating the search index");
        store.close_with(&mut |done, total| {
            bar.set_message(format!("embedding messages: {done}/{total}"));
        })?;
    }
    let mut memories = 0;
    if paths.memories.exists() {
        bar.set_message("redacting the stored memories");
        let store = skills::stores::memories::MemoryStore::open_rw(&paths.memories)?;
        memories = store.redact_stored()?;
        if memories > 0 && !args.no_embed {
            if let Ok(embedder) = Embedder::load_for_memories() {
                skills::ingest::memories::embed_missing(&store, &embedder)?;
            }
        }
    }
    bar.finish_and_clear();
    let printer = &mut session.printer;
    if printer.json() {
        printer.print_json(&json!({
            "conversations_secrets_redacted": conversations,
            "memories_secrets_redacted": memories,
        }))?;
    } else {
        printer.line(format_args!(
            "redacted in place: {conversations} secrets in conversations, {memories} in memories"
        ))?;
    }
    Ok(Outcome::Success)
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
