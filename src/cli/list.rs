//! `skills list`: one line per loaded skill, or each skill's summary as JSON.

use anyhow::Result;
use serde_json::{json, Value};

use skills::site::docs::skill_summary;

use super::{Outcome, Session};

/// Prints the loaded skills: name, layer, MCP tool name and the description's first
/// sentence; under `--json` an array of [`skill_summary`] objects plus each `path`.
///
/// # Errors
/// When the skills cannot be loaded or stdout cannot be written.
pub fn execute(session: &mut Session) -> Result<Outcome> {
    let host = session.load_host()?;
    let printer = &mut session.printer;
    if printer.json() {
        let list: Vec<Value> = host
            .skills()
            .iter()
            .map(|s| {
                let mut summary = skill_summary(s);
                summary["path"] = json!(s.doc.path);
                summary
            })
            .collect();
        printer.print_json(&list)?;
        return Ok(Outcome::Success);
    }
    for s in host.skills() {
        let first_sentence = s.meta.description.split(". ").next().unwrap_or("");
        printer.line(format_args!(
            "{:<24} {:<8} {:<22} {}",
            s.name(),
            s.meta.layer.as_deref().unwrap_or("-"),
            s.tool_name(),
            first_sentence.trim_end_matches('.')
        ))?;
    }
    Ok(Outcome::Success)
}
