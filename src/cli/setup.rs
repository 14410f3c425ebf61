//! `skills setup [CLIENT]`: add the `skills` server (this binary, `serve`) to an MCP
//! client's config file, or take it out (`--remove`); `--dry-run` prints the diff
//! only; `--project` edits the client's project-level file in the current folder.
//! Without a client: list the clients, whether each looks installed here, and the
//! state of the `skills` entry in its config. The editing itself is
//! [`skills::setup`]'s.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser};
use serde::Serialize;

use skills::setup::{self, Change, Client, Environment, Inspection, Scope, State, CLIENTS};

use super::{Outcome, Session, UsageError};

/// Arguments of `skills setup`.
#[derive(clap::Args)]
pub struct Args {
    /// The client whose config gets the `skills` server; without one, list the clients
    /// and the state of their configs.
    #[arg(value_name = "CLIENT", value_parser = client_names())]
    client: Option<String>,
    /// Print the change as a unified diff and write nothing.
    #[arg(long, requires = "client")]
    dry_run: bool,
    /// Take the `skills` entry out (other servers and settings stay).
    #[arg(long, requires = "client")]
    remove: bool,
    /// Edit the client's project-level file in the current folder (`.mcp.json`,
    /// `.cursor/mcp.json`, …) instead of the user-level one.
    #[arg(long, requires = "client")]
    project: bool,
    /// Write a read-only config file anyway (its permission bits are kept).
    #[arg(long, requires = "client")]
    force: bool,
    /// The server binary to write into the entry. Default: this binary's absolute path.
    #[arg(long, value_name = "PATH")]
    command: Option<PathBuf>,
}

/// The clients' names, each with its product name, for `--help` and the parser.
fn client_names() -> PossibleValuesParser {
    PossibleValuesParser::new(
        CLIENTS
            .iter()
            .map(|c| PossibleValue::new(c.name).help(c.title)),
    )
}

/// Lists the clients, or changes one client's config.
///
/// # Errors
/// [`setup::SetupError`]: an existing config that is not valid JSON/TOML or not of the
/// expected shape (exit 1; the file is left as it is), `--project` for a client with
/// no project file (exit 2), a read-only file without `--force` (exit 1), a
/// `--project` path leading outside the project (exit 1), a file that cannot be read
/// or written. [`UsageError`] for
/// a `--command` that is not UTF-8.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let env = Environment::current();
    let command = server_command(args.command.as_deref(), &env)?;
    match args.client.as_deref().and_then(setup::find) {
        None => list(session, &env, &command),
        Some(client) => change(session, &env, &command, client, args),
    }
}

/// The binary the entry runs: `--command` (made absolute against the current folder),
/// else this binary, canonicalised.
fn server_command(given: Option<&Path>, env: &Environment) -> Result<String> {
    let path = match given {
        Some(path) if path.is_absolute() => path.to_path_buf(),
        Some(path) => env.project.join(path),
        None => {
            let exe = std::env::current_exe()?;
            fs_err::canonicalize(&exe).unwrap_or(exe)
        }
    };
    path.to_str().map(str::to_owned).ok_or_else(|| {
        UsageError::new(format!(
            "the server path `{}` is not UTF-8, which config files cannot hold",
            path.display()
        ))
        .with_hint("pass `--command PATH` with a UTF-8 path to the `skills` binary")
        .into()
    })
}

/// `skills setup CLIENT --json`: what was (or would be) done.
#[derive(Serialize)]
struct Report<'a> {
    client: &'static str,
    scope: Scope,
    path: &'a Path,
    change: Change,
    dry_run: bool,
    /// Whether the file was written.
    written: bool,
    /// The copy of the old file, when one was written.
    backup: Option<PathBuf>,
    /// The unified diff (empty when nothing changes).
    diff: String,
}

fn change(
    session: &mut Session,
    env: &Environment,
    command: &str,
    client: &'static Client,
    args: &Args,
) -> Result<Outcome> {
    let scope = if args.project {
        Scope::Project
    } else {
        Scope::User
    };
    let plan = setup::plan(client, scope, env, command, args.remove)?;
    let write = plan.changed() && !args.dry_run;
    let backup = if write {
        setup::apply(&plan, env, args.force)?
    } else {
        None
    };
    let diff = plan.diff();
    let printer = &mut session.printer;
    if printer.json() {
        printer.print_json(&Report {
            client: client.name,
            scope,
            path: &plan.path,
            change: plan.change,
            dry_run: args.dry_run,
            written: write,
            backup,
            diff,
        })?;
        return Ok(Outcome::Success);
    }
    let path = plan.path.display();
    let entry = format!("`{}.{}`", client.key.join("."), setup::ENTRY_NAME);
    let dry = if args.dry_run {
        " (dry run: nothing written)"
    } else {
        ""
    };
    let verb = |done: &str, planned: &str| {
        if args.dry_run {
            planned.to_owned()
        } else {
            done.to_owned()
        }
    };
    let summary = match plan.change {
        Change::Unchanged if args.remove => format!("no {entry} in `{path}`; nothing changed"),
        Change::Unchanged => format!("{entry} in `{path}` is current; nothing changed"),
        Change::Added => format!("{} {entry} to `{path}`{dry}", verb("added", "would add")),
        Change::Updated => format!(
            "{} {entry} in `{path}`{dry}",
            verb("updated", "would update")
        ),
        Change::Removed => format!(
            "{} {entry} from `{path}`{dry}",
            verb("removed", "would remove")
        ),
    };
    printer.line(format_args!("{}: {summary}", client.name))?;
    if let Some(backup) = &backup {
        printer.line(format_args!("backup: `{}`", backup.display()))?;
    }
    printer.text(&diff)?;
    if write && !args.remove {
        if env.installed(client).is_none() {
            printer.note(format_args!(
                "{} does not look installed here (none of {})",
                client.title,
                env.looked_for(client).join(", ")
            ));
        }
        printer.hint(format_args!(
            "restart {} (or reload its MCP servers) to start `skills serve`",
            client.title
        ));
    }
    Ok(Outcome::Success)
}

/// `skills setup --json`: the command written and every client.
#[derive(Serialize)]
struct Listing<'a> {
    /// The entry's command line.
    command: Vec<&'a str>,
    clients: Vec<ClientState>,
}

/// One client in the listing.
#[derive(Serialize)]
struct ClientState {
    client: &'static str,
    title: &'static str,
    /// Whether a folder or command of the client was found.
    installed: bool,
    /// The first one found.
    found: Option<String>,
    format: setup::Format,
    /// The key path of the server map, dotted.
    key: String,
    user: Inspection,
    /// The project-level file in the current folder; `null` when the client has none.
    project: Option<Inspection>,
    source: &'static str,
}

fn list(session: &mut Session, env: &Environment, command: &str) -> Result<Outcome> {
    let clients: Vec<ClientState> = CLIENTS
        .iter()
        .map(|client| {
            let found = env.installed(client);
            ClientState {
                client: client.name,
                title: client.title,
                installed: found.is_some(),
                found,
                format: client.format,
                key: client.key.join("."),
                user: setup::inspect(client, Scope::User, env, command),
                project: client
                    .project
                    .map(|_| setup::inspect(client, Scope::Project, env, command)),
                source: client.source,
            }
        })
        .collect();
    let mut line = vec![command];
    line.extend(setup::SERVE_ARGS);
    let listing = Listing {
        command: line,
        clients,
    };
    if session.json() {
        session.printer.print_json(&listing)?;
        return Ok(Outcome::Success);
    }
    print_listing(session, &listing)?;
    Ok(Outcome::Success)
}

fn state_label(state: State) -> &'static str {
    match state {
        State::NoFile => "no file",
        State::Missing => "missing",
        State::Current => "current",
        State::Outdated => "outdated",
        State::Invalid => "invalid",
    }
}

/// The listing as a table: one row per client (its user-level file), one more for a
/// project-level file that exists in the current folder; problems as warnings.
fn print_listing(session: &mut Session, listing: &Listing) -> Result<()> {
    let printer = &mut session.printer;
    printer.line(format_args!(
        "`skills` entry: {}",
        listing.command.join(" ")
    ))?;
    printer.line("")?;
    printer.line(format_args!(
        "{:<15} {:<10} {:<9} config",
        "client", "installed", "entry"
    ))?;
    let mut problems = Vec::new();
    for client in &listing.clients {
        let rows = std::iter::once((&client.user, "")).chain(
            client
                .project
                .iter()
                .filter(|p| p.state != State::NoFile)
                .map(|p| (p, " (project)")),
        );
        for (i, (inspection, scope)) in rows.enumerate() {
            let (name, installed) = if i == 0 {
                (client.client, if client.installed { "yes" } else { "no" })
            } else {
                ("", "")
            };
            let path = inspection
                .path
                .as_ref()
                .map_or_else(|| "?".to_owned(), |p| p.display().to_string());
            printer.line(format_args!(
                "{name:<15} {installed:<10} {:<9} {path}{scope}",
                state_label(inspection.state)
            ))?;
            if let Some(error) = &inspection.error {
                problems.push(error.clone());
            }
        }
    }
    printer.line("")?;
    printer.line(
        "`skills setup CLIENT` adds the entry (`--dry-run` shows the diff first, `--project` \
         edits the project's file, `--remove` takes it out)",
    )?;
    for problem in problems {
        printer.warning(problem);
    }
    Ok(())
}
