//! `skills memo import|add`: write the memories store that memo-search reads.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use skills::ingest::memories::import_paths;
use skills::stores::memories::save::{save_memory, AddMemoryError, MemoryInput, SaveLinks};
use skills::stores::memories::MemoryStore;

use super::{Outcome, Session, UsageError};

/// `skills memo …`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Import memory files: markdown with YAML frontmatter (Claude Code `memory/*.md`,
    /// `MEMORY.md`, basic-memory notes, vault files), JSONL, Letta `.af`. Re-importing
    /// updates changed memories and adds nothing twice.
    Import {
        /// Files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Store the memories' text with its secrets as written (by default they are
        /// redacted before storing; see `skills ingest --keep-secrets`).
        #[arg(long)]
        keep_secrets: bool,
    },
    /// Add one memory.
    Add(AddArgs),
}

/// Arguments of `skills memo add`.
#[derive(clap::Args)]
pub struct AddArgs {
    /// Title (else the body's first line).
    #[arg(long)]
    title: Option<String>,
    /// Body text; `-` reads it from stdin.
    #[arg(long)]
    body: String,
    /// Memory type, e.g. decision, fact, bug, feedback, preference, note, procedure.
    #[arg(long = "type")]
    kind: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// A file the memory was read from (repeatable).
    #[arg(long = "file-read")]
    files_read: Vec<String>,
    /// A file the memory is about / modified (repeatable).
    #[arg(long = "file-modified")]
    files_modified: Vec<String>,
    /// Store the text with its secrets as written (by default they are redacted
    /// before storing; see `skills ingest --keep-secrets`).
    #[arg(long)]
    keep_secrets: bool,
}

/// Runs `memo import` or `memo add` against the memories store (created if needed).
///
/// # Errors
/// [`UsageError`] for a memory with neither title nor body; store and stdin failures.
pub fn execute(session: &mut Session, command: &Command) -> Result<Outcome> {
    let keep_secrets = match command {
        Command::Import { keep_secrets, .. } => *keep_secrets,
        Command::Add(args) => args.keep_secrets,
    };
    skills::redact::at_store::configure(false, keep_secrets)
        .map_err(|e| UsageError::new(e.to_string()))?;
    let path = session.store_paths()?.memories;
    let store = MemoryStore::open_rw(&path)?;
    let printer = &mut session.printer;
    match command {
        Command::Import { paths, .. } => {
            let summary = import_paths(&store, paths)?;
            if printer.json() {
                let mut value = serde_json::to_value(&summary)?;
                value["store"] = json!(path);
                printer.print_json(&value)?;
            } else {
                printer.line(&summary)?;
                printer.line(format_args!("store: {}", path.display()))?;
            }
            // Faults are reported; only a run that read no file at all fails.
            Ok(if summary.files == 0 && !summary.faults.is_empty() {
                Outcome::Failed
            } else {
                Outcome::Success
            })
        }
        Command::Add(args) => {
            // `SKILLS_EMBEDDER=none`: no model is read (`Embedder::load_tier`).
            let (embedder, why_none) = match skills::embed::Embedder::load_for_memories() {
                Ok(embedder) => (Some(embedder), None),
                Err(e) => (None, Some(format!("no embedding stored: {e}"))),
            };
            let saved = save_memory(
                &store,
                memory_input(args)?,
                &SaveLinks::default(),
                embedder.as_ref(),
                chrono::Utc::now(),
            )
            .map_err(|e| match e {
                AddMemoryError::Empty => {
                    UsageError::new("a memory needs `--title` or a non-empty `--body`").into()
                }
                other => anyhow::Error::from(other),
            })?;
            let (id, secrets) = (saved.id, saved.secrets_redacted);
            if printer.json() {
                let mut out = json!({ "id": id, "store": path, "secrets_redacted": secrets, "embedded": saved.embedded });
                if let Some(why) = why_none {
                    out["embedding_note"] = json!(why);
                }
                printer.print_json(&out)?;
            } else if secrets > 0 {
                printer.line(format_args!(
                    "added {id} ({secrets} secret(s) redacted before storing)"
                ))?;
            } else {
                printer.line(format_args!("added {id}"))?;
            }
            Ok(Outcome::Success)
        }
    }
}

/// The memory `memo add` describes; `--body -` is read from stdin.
fn memory_input(args: &AddArgs) -> Result<MemoryInput> {
    let body = if args.body == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
        text
    } else {
        args.body.clone()
    };
    Ok(MemoryInput {
        title: args.title.clone().unwrap_or_default(),
        kind: args.kind.clone(),
        tags: args.tags.clone(),
        body,
        files_read: args.files_read.clone(),
        files_modified: args.files_modified.clone(),
        ..MemoryInput::default()
    })
}
