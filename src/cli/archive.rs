//! `skills archive migrate | push | compact | status`: the team archive on PostgreSQL
//! (`--archive URL` or `SKILLS_ARCHIVE_URL`; see [`skills::archive`]).

use anyhow::Result;

use skills::archive::machine::Machine;
use skills::archive::push::{PushOptions, DEFAULT_BATCH_ROWS, DEFAULT_CONNECTIONS};
use skills::archive::{schema, Archive};

use super::{Outcome, Session, UsageError};

/// `skills archive …`.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Creates or upgrades the archive's schema (the only command that changes it),
    /// creates pg_trgm and vector when allowed, and prints the GRANTs for a read-only
    /// role and a pushing role.
    Migrate {
        /// Name of the read-only role in the printed GRANTs.
        #[arg(long, default_value = "skills_reader")]
        reader: String,
        /// Name of the pushing role in the printed GRANTs.
        #[arg(long, default_value = "skills_writer")]
        writer: String,
    },
    /// Sends this data folder's conversations and memories (what changed since the
    /// last push to this archive), secrets redacted.
    Push {
        /// Delete this machine's conversations and memories from the archive that are
        /// gone locally (kept otherwise).
        #[arg(long)]
        prune: bool,
        /// Send text as stored, without redacting secrets.
        #[arg(long)]
        no_redact: bool,
        /// Rows per transaction.
        #[arg(long, default_value_t = DEFAULT_BATCH_ROWS, hide = true)]
        batch_rows: usize,
        /// Connections sending batches side by side.
        #[arg(long, default_value_t = DEFAULT_CONNECTIONS, hide = true)]
        connections: usize,
        /// Leave the keyword postings uncompacted (to measure without).
        #[arg(long, hide = true)]
        no_compact: bool,
    },
    /// Merges every keyword term's postings rows into one and drops the dead postings
    /// (of rewritten or pruned conversations); a push does it for the terms it wrote
    /// when they have many dead postings or rows.
    Compact,
    /// What the archive holds, per machine and source, and what this machine has not
    /// pushed yet.
    Status,
}

/// Runs one `skills archive` command.
///
/// # Errors
/// [`UsageError`] without an archive address; the archive's errors (never holding
/// the password).
pub fn execute(session: &mut Session, command: &Command) -> Result<Outcome> {
    // A push started by `skills serve --archive-push` ends with the server.
    skills::background_import::lifeline::hold();
    let Some(target) = session.archive_target()? else {
        return Err(UsageError::new(format!(
            "no archive: give `--archive postgres://user@host/database` or set {}",
            skills::settings::ARCHIVE_URL.name
        ))
        .into());
    };
    let mut archive = Archive::open(&target)?;
    match command {
        Command::Migrate { reader, writer } => {
            // The vectors this data folder would push get their tables (none without one).
            let models = session
                .store_paths()
                .map(|p| schema::local_models(&p))
                .unwrap_or_default();
            let m = schema::migrate(&mut archive, &models)?;
            let grants = schema::grants(target.database(), reader, writer, &m.models);
            let p = &mut session.printer;
            if p.json() {
                p.print_json(&serde_json::json!({
                    "archive": target.shown(),
                    "migration": m,
                    "grants": grants,
                }))?;
            } else {
                let what = if m.from == m.to {
                    format!("schema version {} (already current)", m.to)
                } else if m.from == 0 {
                    format!("schema version {} created", m.to)
                } else {
                    format!("schema upgraded from version {} to {}", m.from, m.to)
                };
                p.line(format!(
                    "archive {}: {what}; {} monthly partitions added ({} rows moved out of \
                     the default partition); extensions: {}; trigram index: {}",
                    target.shown(),
                    m.partitions_created,
                    m.rows_moved,
                    if m.extensions.is_empty() {
                        "none".to_owned()
                    } else {
                        m.extensions.join(", ")
                    },
                    if m.trigram_index { "yes" } else { "no" },
                ))?;
                for r in &m.models {
                    let new = m.models_registered.contains(&r.model);
                    p.line(format!(
                        "vectors of `{}` ({} dimensions): tables units_{} and memory_vectors_{}{}",
                        r.model.model,
                        r.model.dim,
                        r.slot,
                        r.slot,
                        if new { " (created)" } else { "" }
                    ))?;
                }
                for note in &m.notes {
                    p.warning(note);
                }
                p.line("")?;
                p.line(grants)?;
            }
        }
        Command::Push {
            prune,
            no_redact,
            batch_rows,
            connections,
            no_compact,
        } => {
            let paths = session.store_paths()?;
            let machine = Machine::of_paths(&paths)?;
            let options = PushOptions {
                redact: !no_redact,
                prune: *prune,
                batch_rows: (*batch_rows).max(1),
                connections: (*connections).max(1),
                compact: !no_compact,
            };
            let bar = if session.json() {
                indicatif::ProgressBar::hidden()
            } else {
                let b = indicatif::ProgressBar::new(0);
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "pushing {bar:30} {pos}/{len} messages ({per_sec}, {eta} left)",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                b
            };
            let report = skills::archive::push::push(
                &mut archive,
                &paths,
                &machine,
                &options,
                &mut |done, total| {
                    bar.set_length(total);
                    bar.set_position(done);
                },
            )?;
            bar.finish_and_clear();
            let p = &mut session.printer;
            if p.json() {
                p.print_json(&report)?;
            } else {
                p.line(format!(
                    "pushed to {}: {} conversations ({} messages) of {} sent, {} memories sent, \
                     {} pruned, {} secrets redacted{}, {} transactions, {:.1} s (machine {} \
                     `{}`, user {})",
                    report.archive,
                    report.conversations_sent,
                    report.messages_sent,
                    report.conversations_local,
                    report.memories_sent,
                    report.conversations_pruned + report.memories_pruned,
                    report.secrets_redacted,
                    if report.redacted {
                        ""
                    } else {
                        " (--no-redact)"
                    },
                    report.batches,
                    report.seconds,
                    &report.machine[..8.min(report.machine.len())],
                    report.label,
                    report.user,
                ))?;
                if let Some(model) = &report.vector_model {
                    p.line(format!(
                        "vectors: {} units of `{model}`, {} memories' vectors",
                        report.units_sent, report.memory_vectors_sent
                    ))?;
                }
                if let Some(c) = report.compacted.as_ref().filter(|c| c.terms_compacted > 0) {
                    p.line(format!("keyword postings: {}", compact_text(c)))?;
                }
                for note in &report.notes {
                    p.warning(note);
                }
            }
        }
        Command::Compact => {
            skills::archive::schema::check(&mut archive)?;
            let c = skills::archive::compact::compact(
                &mut archive,
                skills::archive::compact::Scope::All,
            )?;
            let p = &mut session.printer;
            if p.json() {
                p.print_json(&c)?;
            } else {
                p.line(format!("compacted {}: {}", c.archive, compact_text(&c)))?;
            }
        }
        Command::Status => {
            let paths = session.store_paths()?;
            let machine = Machine::of_paths(&paths)?;
            let s = skills::archive::status::status(&mut archive, &paths, &machine)?;
            let p = &mut session.printer;
            if p.json() {
                p.print_json(&s)?;
            } else {
                p.line(status_text(&s))?;
            }
        }
    }
    Ok(Outcome::Success)
}

/// What a compaction did, as one line.
fn compact_text(c: &skills::archive::compact::CompactReport) -> String {
    format!(
        "{} terms, rows {} → {}, postings {} → {} ({} dead dropped), {:.1} → {:.1} MB, \
         {} transactions, {:.1} s",
        c.terms_compacted,
        c.rows_before,
        c.rows_after,
        c.postings_before,
        c.postings_after,
        c.postings_before.saturating_sub(c.postings_after),
        c.bytes_before as f64 / 1e6,
        c.bytes_after as f64 / 1e6,
        c.transactions,
        c.seconds
    )
}

/// The archive section as text (also used by `skills status`).
pub fn status_text(s: &skills::archive::status::Status) -> String {
    let mut out = format!(
        "archive {} (schema version {}, {:.1} MB, {} memories)\n",
        s.archive,
        s.schema_version,
        s.size_bytes as f64 / 1e6,
        s.memories
    );
    for slice in &s.slices {
        out.push_str(&format!(
            "  {} ({}, {}) {}: {} messages, newest {}\n",
            slice.label,
            &slice.machine[..8.min(slice.machine.len())],
            slice.user,
            slice.source,
            slice.messages,
            slice.newest
        ));
    }
    out.push_str(&format!(
        "  keyword postings: {} rows, {} postings ({:.1} MB), {} dead{}\n",
        s.postings_rows,
        s.postings,
        s.postings_bytes as f64 / 1e6,
        s.dead_postings,
        if s.dead_postings > 0 {
            " (`skills archive compact` drops them)"
        } else {
            ""
        }
    ));
    if s.default_partition_rows > 0 {
        out.push_str(&format!(
            "  {} messages in the default partition: `skills archive migrate` moves them \
             into monthly ones\n",
            s.default_partition_rows
        ));
    }
    out.push_str(&format!(
        "  this machine ({}): last push {}; not pushed yet: {} conversations ({} messages)",
        &s.machine[..8.min(s.machine.len())],
        s.last_push.as_deref().unwrap_or("never"),
        s.pending_conversations,
        s.pending_messages
    ));
    out
}
