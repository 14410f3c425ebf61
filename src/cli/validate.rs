//! `skills validate`: every skill document, valid or not.

use anyhow::Result;
use serde_json::json;

use super::{Outcome, Session};

/// Prints `ok` per valid document and `invalid` per problem (under `--json`
/// `{valid: [names], diagnostics}`); [`Outcome::Invalid`] when there is a problem.
///
/// # Errors
/// When the skills cannot be loaded or stdout cannot be written.
pub fn execute(session: &mut Session) -> Result<Outcome> {
    let host = session.load_host_quietly()?;
    let diagnostics = host.diagnostics();
    let printer = &mut session.printer;
    if printer.json() {
        let names: Vec<&str> = host.skills().iter().map(|s| s.name()).collect();
        printer.print_json(&json!({"valid": names, "diagnostics": diagnostics}))?;
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
        printer.line(format_args!(
            "{} valid, {} problems",
            host.skills().len(),
            diagnostics.len()
        ))?;
    }
    Ok(if diagnostics.is_empty() {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}
