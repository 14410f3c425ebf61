//! `skills verify [NAME…]`: run the verification checklists as conformance tests.

use std::path::PathBuf;

use anyhow::Result;

use skills::verify::{checks, Options, Verifier};

use super::{Outcome, Session};

/// Arguments of `skills verify`.
#[derive(clap::Args)]
pub struct Args {
    /// Skill names (default: every skill).
    names: Vec<String>,
    /// Fixture corpora folder. Default: `tests/conformance/fixtures` beside the skills
    /// folder, else that folder of the source tree this binary was built from.
    #[arg(long, env = skills::settings::FIXTURES_DIR.name)]
    fixtures_dir: Option<PathBuf>,
    /// List the check vocabulary (id, what it proves, parameter schema) and exit.
    #[arg(long)]
    list_checks: bool,
}

/// Prints the report (the target, then PASS / FAIL / EXCLUDED per item, or `--json`),
/// on the local stores or, with `--archive`, on the team archive; or with
/// `--list-checks` the check vocabulary as JSON. [`Outcome::Failed`] when an item fails.
///
/// # Errors
/// [`skills::verify::VerifyError`] for an unknown skill name (exit 2) or
/// no temporary folder; load failures.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    if args.list_checks {
        session.printer.print_json(&checks::describe())?;
        return Ok(Outcome::Success);
    }
    let mut verifier = verifier(session, args.fixtures_dir.as_deref())?;
    // `--archive` / SKILLS_ARCHIVE_URL names the server the scratch archives are made on.
    if let Some(server) = session.archive_target()? {
        verifier = verifier.with_archive(server);
    }
    session.warn_diagnostics(verifier.host());
    let report = verifier.run_all(&args.names)?;
    let printer = &mut session.printer;
    if printer.json() {
        printer.print_json(&report)?;
    } else {
        printer.line(report.to_text())?;
    }
    Ok(if report.failed == 0 {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

/// A verifier over the session's skills and the fixtures (`fixtures_dir` or
/// [`Session::fixtures_dir`]'s default); fresh-process checks run this binary.
///
/// # Errors
/// When the skills or the fixtures cannot be loaded.
pub fn verifier(session: &Session, fixtures_dir: Option<&std::path::Path>) -> Result<Verifier> {
    let options = Options {
        skills_dir: session.skills_dir()?,
        fixtures_dir: session.fixtures_dir(fixtures_dir),
        binary: std::env::current_exe().ok(),
    };
    Ok(Verifier::new(options)?)
}
