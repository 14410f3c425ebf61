//! `skills export --agent-skills DIR`: spec-clean copies of every loaded skill, for
//! Agent Skills hosts (Claude Code, Codex, `skills-ref validate`) and for this host.

use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;

use skills::host::Skill;
use skills::site::{docs, portable};

use super::{Outcome, Session};

/// Arguments of `skills export`.
#[derive(clap::Args)]
pub struct Args {
    /// Folder to write `<name>/SKILL.md` and the skill's other files into (created when
    /// missing; files of the same name are replaced).
    #[arg(long, value_name = "DIR")]
    agent_skills: PathBuf,
}

/// Writes each valid skill to `DIR/<name>/`: the frontmatter with every host field in
/// `metadata` (schemas as `references/input-schema.json` / `output-schema.json`), the
/// rendered reference page as `references/REFERENCE.md`, the body and every other file
/// unchanged. The copy validates with `skills-ref validate` and loads here with
/// `--skills-dir DIR`. Invalid documents are warned about and not exported
/// ([`Outcome::Invalid`]).
///
/// # Errors
/// Load failures, a docs template failure, or a file that cannot be written.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let host = session.load_host()?;
    let tool_of = |s: &Skill| serde_json::to_value(skills::mcp::tool_for(s)).unwrap_or_default();
    let data = docs::docs_data(&host, &tool_of, &|_| Vec::new());
    let pages = tempfile::tempdir()?;
    docs::write_site(&data, pages.path())?;
    let mut exported = Vec::new();
    for skill in host.skills() {
        let page = fs_err::read_to_string(pages.path().join(format!("{}.md", skill.name())))?;
        let extra = [("references/REFERENCE.md".to_owned(), page)];
        let files = portable::export(&skill.doc, skill.name(), &args.agent_skills, &extra)?;
        exported.push(json!({"name": skill.name(), "files": files}));
    }
    let printer = &mut session.printer;
    if printer.json() {
        printer.print_json(&json!({"exported": exported, "diagnostics": host.diagnostics()}))?;
    } else {
        for e in &exported {
            printer.line(format_args!(
                "exported {}  ({} files)",
                e["name"].as_str().unwrap_or(""),
                e["files"].as_array().map_or(0, Vec::len)
            ))?;
        }
        printer.line(format_args!(
            "{} skills exported to {}",
            exported.len(),
            args.agent_skills.display()
        ))?;
    }
    Ok(if host.diagnostics().is_empty() {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}
