//! `skills` command line: parse the arguments and dispatch to the subcommand's module
//! in `cli/`, which does the work; `cli::Session` prints and decides the exit code.

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// A spec-driven skill host: skill documents bound to retrieval engines, served over CLI and MCP.
#[derive(Parser)]
#[command(name = "skills", about, propagate_version = true)]
struct Args {
    #[command(flatten)]
    global: cli::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the loaded skills.
    List,
    /// Show one skill: frontmatter, parameters and sections.
    Show(cli::show::Args),
    /// Validate every skill document; exit 2 when any is invalid (`--portable`: also
    /// what a strict Agent Skills host would reject).
    Validate(cli::validate::Args),
    /// Import transcripts into the conversations store (default locations when no path is given).
    Ingest(cli::ingest::Args),
    /// Run a skill once and print its rendered output (or `--json`).
    Run(cli::run::Args),
    /// Run every skill's verification checklist as conformance tests (or only NAME…).
    #[command(
        after_help = format!(
            "With `--archive URL` (or {}) the calls answer from the team archive instead: each \
             fixture corpus is pushed into a scratch database of its own on that server (the \
             role needs CREATEDB; the databases are dropped afterwards), and what a binding \
             excludes there (`archive: {{excluded: why}}`) is reported as excluded.",
            skills::settings::ARCHIVE_URL.name
        )
    )]
    Verify(cli::verify::Args),
    /// Serve every skill as an MCP tool (and its SKILL.md as a resource) over stdio,
    /// or over streamable HTTP at `/mcp` with `--http`. Logs go to stderr.
    Serve(cli::serve::Args),
    /// Scaffold a new skill folder (document, query, template, conformance binding)
    /// that validates and verifies as generated.
    New(cli::new::Args),
    /// Durable memories for memo-search: import notes, add one.
    #[command(subcommand)]
    Memo(cli::memo::Command),
    /// Write portable copies of every skill (`--agent-skills DIR`): host fields moved
    /// into `metadata` and `references/`, valid for any Agent Skills host.
    Export(cli::export::Args),
    /// Open the pages for people: print (and on a desktop open) the URL of the running
    /// `skills serve --http`, or start one on a free loopback port.
    Ui(cli::ui::Args),
    /// Generate documentation from the skill documents: markdown and HTML pages
    /// (`--out DIR`), or JSON (`--format json`, the tool definitions as `tools/list` serves them).
    Docs(cli::docs::Args),
    /// What is stored and whether it is current: per source the conversations,
    /// messages and newest message, the search index and embeddings, memories, the
    /// embedding model, servers keeping the store current, paths and sizes.
    Status,
    /// Add the `skills` server (this binary, `serve`) to an MCP client's config —
    /// claude-code, codex, cursor, gemini-cli, vscode, claude-desktop, opencode,
    /// windsurf — keeping comments and other servers; without a client, list them and
    /// their state.
    Setup(cli::setup::Args),
    /// The team archive on PostgreSQL (`--archive URL` or SKILLS_ARCHIVE_URL): `migrate`
    /// its schema, `push` this data folder into it, its `status`.
    #[command(subcommand)]
    Archive(cli::archive::Command),
}

fn main() -> ExitCode {
    // The version is computed at run time: `--version` names the model tiers present.
    let matches = Args::command()
        .version(cli::version::short())
        .long_version(cli::version::long())
        .get_matches();
    let Args { global, command } = match Args::from_arg_matches(&matches) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    let mut session = cli::Session::new(global);
    let result = match &command {
        Command::List => cli::list::execute(&mut session),
        Command::Show(args) => cli::show::execute(&mut session, args),
        Command::Validate(args) => cli::validate::execute(&mut session, args),
        Command::Export(args) => cli::export::execute(&mut session, args),
        Command::Ingest(args) => cli::ingest::execute(&mut session, args),
        Command::Run(args) => cli::run::execute(&mut session, args),
        Command::Verify(args) => cli::verify::execute(&mut session, args),
        Command::Serve(args) => cli::serve::execute(&mut session, args),
        Command::New(args) => cli::new::execute(&mut session, args),
        Command::Memo(command) => cli::memo::execute(&mut session, command),
        Command::Docs(args) => cli::docs::execute(&mut session, args),
        Command::Status => cli::status::execute(&mut session),
        Command::Ui(args) => cli::ui::execute(&mut session, args),
        Command::Setup(args) => cli::setup::execute(&mut session, args),
        Command::Archive(command) => cli::archive::execute(&mut session, command),
    };
    session.finish(result)
}
