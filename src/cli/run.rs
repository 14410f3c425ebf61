//! `skills run NAME`: one call of a skill through `Host::call`.

use anyhow::Result;
use serde_json::Value;

use skills::host::args;

use super::{find_skill, Outcome, Session, UsageError};

/// Arguments of `skills run`.
#[derive(clap::Args)]
pub struct Args {
    /// Skill name or MCP tool name.
    name: String,
    /// An argument as `key=value`, typed by the skill's input schema (repeatable).
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    args: Vec<String>,
    /// All arguments as one JSON object (instead of `--arg`).
    #[arg(long, value_name = "JSON", conflicts_with = "args")]
    args_json: Option<String>,
}

/// Prints the rendered output, or under `--json` the whole call output (`text`, `data`).
///
/// # Errors
/// [`UsageError`] for an unknown skill or malformed `--arg` / `--args-json`;
/// [`skills::host::CallError`] when the arguments are invalid or the engine fails.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let host = session.load_host()?;
    let skill = find_skill(&host, &args.name)?;
    let call_args = match &args.args_json {
        Some(text) => serde_json::from_str::<Value>(text)
            .map_err(|e| UsageError::new(format!("`--args-json` is not valid JSON: {e}")))?,
        None => args::from_pairs(&skill.meta.input_schema, &args.args)
            .map_err(|e| UsageError::new(format!("`--arg {}`: {}", e.argument, e.reason)))?,
    };
    let output = host.call(&args.name, call_args)?;
    let printer = &mut session.printer;
    if printer.json() {
        printer.print_json(&output)?;
    } else {
        printer.line(&output.text)?;
    }
    Ok(Outcome::Success)
}
