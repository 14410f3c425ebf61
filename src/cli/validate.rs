//! `skills validate`: every skill document, valid or not; with `--portable`, also what
//! a strict Agent Skills host would reject.

use anyhow::Result;
use serde_json::json;

use skills::host::{Diagnostic, SkillDoc};
use skills::site::portable;

use super::{Outcome, Session};

/// Arguments of `skills validate`.
#[derive(clap::Args)]
pub struct Args {
    /// Also report what a strict Agent Skills host (`skills-ref validate`, Claude Code,
    /// Codex) would reject: fields outside the Agent Skills specification, non-string
    /// `metadata` values, name rules. `skills export --agent-skills DIR` writes copies
    /// that pass.
    #[arg(long)]
    portable: bool,
}

/// Prints `ok` per valid document and `invalid` per problem (under `--json`
/// `{valid: [names], diagnostics}`, plus `portability` with `--portable`);
/// [`Outcome::Invalid`] when there is a problem.
///
/// # Errors
/// When the skills cannot be loaded or stdout cannot be written.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let host = session.load_host_quietly()?;
    let diagnostics = host.diagnostics();
    let portability: Vec<Diagnostic> = if args.portable {
        portability_of_folder(&session.skills_dir()?)
    } else {
        Vec::new()
    };
    let printer = &mut session.printer;
    if printer.json() {
        let names: Vec<&str> = host.skills().iter().map(|s| s.name()).collect();
        let mut out = json!({"valid": names, "diagnostics": diagnostics});
        if args.portable {
            out["portability"] = json!(portability);
        }
        printer.print_json(&out)?;
    } else {
        for s in host.skills() {
            printer.line(format_args!(
                "ok      {}  ({})",
                s.name(),
                s.doc.path.display()
            ))?;
        }
        for d in diagnostics {
            printer.line(format_args!("invalid {d}"))?;
        }
        for d in &portability {
            printer.line(format_args!("not portable {d}"))?;
        }
        if args.portable {
            printer.line(format_args!(
                "{} valid, {} problems, {} portability problems",
                host.skills().len(),
                diagnostics.len(),
                portability.len()
            ))?;
            if !portability.is_empty() {
                printer.line(format_args!(
                    "hint: `skills export --agent-skills DIR` writes copies that Agent Skills hosts accept"
                ))?;
            }
        } else {
            printer.line(format_args!(
                "{} valid, {} problems",
                host.skills().len(),
                diagnostics.len()
            ))?;
        }
    }
    Ok(if diagnostics.is_empty() && portability.is_empty() {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}

/// [`portable::portability_problems`] of every `<dir>/<name>/SKILL.md` that parses
/// (one that does not parse is already an `invalid` line).
fn portability_of_folder(dir: &std::path::Path) -> Vec<Diagnostic> {
    let mut folders = skills::walk::entries(dir);
    folders.sort();
    folders
        .iter()
        .map(|f| f.join("SKILL.md"))
        .filter(|p| p.is_file())
        .filter_map(|p| SkillDoc::read(&p).ok())
        .flat_map(|doc| portable::portability_problems(&doc))
        .collect()
}
