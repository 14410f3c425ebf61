//! `skills show NAME`: one skill's metadata, parameters and sections.

use std::fmt::Write as _;

use anyhow::Result;
use serde_json::{json, Value};

use skills::host::Skill;

use super::{find_skill, Outcome, Session};

/// Arguments of `skills show`.
#[derive(clap::Args)]
pub struct Args {
    /// Skill name or MCP tool name.
    name: String,
}

/// Prints the skill as text, or under `--json` as `{path, frontmatter, tool, sections:
/// [{title, markdown, items}]}` (`tool` is the MCP tool name).
///
/// # Errors
/// [`super::UsageError`] for an unknown skill; load or stdout failures.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let host = session.load_host()?;
    let skill = find_skill(&host, &args.name)?;
    let printer = &mut session.printer;
    if printer.json() {
        let sections: Vec<Value> = skill
            .doc
            .sections
            .iter()
            .map(|s| json!({"title": s.title, "markdown": s.markdown, "items": s.items}))
            .collect();
        printer.print_json(&json!({
            "path": skill.doc.path,
            "frontmatter": skill.doc.frontmatter,
            "tool": skill.tool_name(),
            "sections": sections,
        }))?;
    } else {
        printer.text(describe(skill))?;
    }
    Ok(Outcome::Success)
}

/// The text form: header, metadata, parameters, then every section below the title.
fn describe(skill: &Skill) -> String {
    let meta = &skill.meta;
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        text,
        "{} — {}",
        skill.name(),
        meta.title.as_deref().unwrap_or("")
    );
    let _ = writeln!(text, "{}\n", meta.description);
    let _ = writeln!(text, "file:        {}", skill.doc.path.display());
    let _ = writeln!(text, "engine:      {}", meta.engine);
    let _ = writeln!(text, "mcp tool:    {}", skill.tool_name());
    let _ = writeln!(
        text,
        "layer:       {}",
        meta.layer.as_deref().unwrap_or("-")
    );
    let _ = writeln!(text, "reads:       {}", meta.reads.join(", "));
    let writes = if meta.writes.is_empty() {
        "nothing".to_owned()
    } else {
        meta.writes.join(", ")
    };
    let _ = writeln!(text, "writes:      {writes}");
    let determinism = meta.determinism.as_deref().unwrap_or("-");
    let _ = writeln!(text, "determinism: {determinism}");
    let _ = writeln!(text, "\nparameters:");
    parameters(&mut text, &meta.input_schema);
    for s in &skill.doc.sections {
        if s.level >= 2 {
            let _ = writeln!(text, "\n## {}\n{}", s.title, s.markdown);
        }
    }
    text
}

/// One entry per input-schema property: `name: type[ required][ (default …)]` and
/// its description on the next line.
fn parameters(text: &mut String, schema: &Value) {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else {
        return;
    };
    for (name, p) in props {
        let ty = p
            .get("type")
            .map(|t| t.to_string())
            .or_else(|| p.get("enum").map(|e| format!("one of {e}")))
            .unwrap_or_default();
        let default = p
            .get("default")
            .map(|d| format!(" (default {d})"))
            .unwrap_or_default();
        let req = if required.contains(&name.as_str()) {
            " required"
        } else {
            ""
        };
        let _ = writeln!(text, "  {name}: {}{req}{default}", ty.trim_matches('"'));
        if let Some(d) = p.get("description").and_then(Value::as_str) {
            let _ = writeln!(text, "      {d}");
        }
    }
}
