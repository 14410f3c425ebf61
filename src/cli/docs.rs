//! `skills docs`: the generated reference pages (markdown + HTML) or their JSON.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;

use skills::host::Skill;
use skills::site::docs::{self, ItemStatus};
use skills::verify::{Report, Status};

use super::{verify, Outcome, Session, UsageError};

/// Arguments of `skills docs`.
#[derive(clap::Args)]
pub struct Args {
    /// Folder to write `index.md`, `<skill>.md`, their `.html` and `style.css` into.
    #[arg(long, value_name = "DIR", required_unless_present = "format")]
    out: Option<PathBuf>,
    /// `site` (markdown + HTML into `--out`) or `json` (to stdout, or `skills.json` in `--out`).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Do not run the verification checklists (items show `not run`).
    #[arg(long)]
    no_verify: bool,
    /// Fixture corpora folder for the checklists (as `skills verify --fixtures-dir`).
    #[arg(long, env = skills::settings::FIXTURES_DIR.name)]
    fixtures_dir: Option<PathBuf>,
}

/// Output of `skills docs`: `site` (markdown and HTML pages) or `json`.
// The variants carry no doc comments: clap would turn them into a long help.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Site,
    Json,
}

/// Writes the docs site or prints its JSON. Unless `--no-verify`, the checklists are
/// run first (as `skills verify` does) so each item shows its result.
///
/// # Errors
/// [`UsageError`] for `--format site` without `--out`; load, verification, template
/// or write failures.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let format = args.format.unwrap_or(Format::Site);
    if format == Format::Site && args.out.is_none() {
        return Err(UsageError::new("`--out DIR` is needed to write the site").into());
    }
    let host = session.load_host()?;
    let report = if args.no_verify {
        None
    } else {
        Some(verify::verifier(session, args.fixtures_dir.as_deref())?.run_all(&[])?)
    };
    let status_of = |s: &Skill| checklist_status(report.as_ref(), s);
    let tool_of = |s: &Skill| serde_json::to_value(skills::mcp::tool_for(s)).unwrap_or_default();
    let data = docs::docs_data(&host, &tool_of, &status_of);
    let printer = &mut session.printer;
    match (format, args.out.as_deref()) {
        (Format::Json, None) => printer.text(docs::to_json_text(&data))?,
        (Format::Json, Some(dir)) => {
            let file = dir.join("skills.json");
            fs_err::create_dir_all(dir)?;
            fs_err::write(&file, docs::to_json_text(&data))?;
            printer.line(format_args!("wrote {}", file.display()))?;
        }
        (Format::Site, dir) => {
            let dir = dir.unwrap_or(Path::new("."));
            let files = docs::write_site(&data, dir)?;
            if printer.json() {
                printer.print_json(&json!({ "files": files }))?;
            } else {
                printer.line(format_args!(
                    "wrote {} files to {}",
                    files.len(),
                    dir.display()
                ))?;
            }
        }
    }
    Ok(Outcome::Success)
}

/// The skill's checklist items as the docs show them; empty when nothing was run.
fn checklist_status(report: Option<&Report>, skill: &Skill) -> Vec<ItemStatus> {
    let Some(report) = report else {
        return Vec::new();
    };
    report
        .items
        .iter()
        .filter(|i| i.skill == skill.name())
        .map(|i| {
            let (status, detail) = match i.status {
                Status::Pass => ("pass", None),
                Status::Excluded => ("excluded", i.reason.clone()),
                Status::Fail => ("fail", i.failures().first().cloned()),
            };
            ItemStatus {
                text: i.item.clone(),
                status: status.into(),
                detail,
            }
        })
        .collect()
}
