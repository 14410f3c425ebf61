//! `skills new NAME`: scaffold a skill folder that validates and verifies as generated.

use anyhow::Result;
use serde_json::json;

use skills::site::scaffold::new_skill;

use super::{Outcome, Session};

/// Arguments of `skills new`.
#[derive(clap::Args)]
pub struct Args {
    /// Skill name: lowercase letters, digits and hyphens (the folder name).
    name: String,
    /// Engine of the new skill: `sql` (one query) or `compose` (a composition of other
    /// skills).
    #[arg(long, default_value = "sql")]
    engine: String,
}

/// Writes the folder into the skills folder and lists the files created.
///
/// # Errors
/// [`skills::site::scaffold::ScaffoldError`]: a bad name, an existing folder (never
/// overwritten) or an unknown engine (exit 2), or a write failure.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let files = new_skill(&session.skills_dir_unchecked(), &args.name, &args.engine)?;
    let printer = &mut session.printer;
    if printer.json() {
        printer.print_json(&json!({ "files": files }))?;
    } else {
        for f in &files {
            printer.line(format_args!("created {}", f.display()))?;
        }
        let edit = if args.engine == "compose" {
            "engine-options in SKILL.md"
        } else {
            "query.sql and SKILL.md"
        };
        printer.line(format_args!(
            "next: edit {edit}, then `skills validate` and `skills verify {}`",
            args.name
        ))?;
    }
    Ok(Outcome::Success)
}
