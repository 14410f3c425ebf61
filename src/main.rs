//! `skills` command line: parse arguments, call the library, print, map to an exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use serde_json::{json, Value};

use skills::engines::Context;
use skills::runtime::{args, CallError, Host};
use skills::stores::StorePaths;

/// A spec-driven skill host: skill documents bound to retrieval engines, served over CLI and MCP.
#[derive(Parser)]
#[command(name = "skills", version, about, propagate_version = true)]
struct Cli {
    /// Folder of skill documents (`<dir>/<name>/SKILL.md`). Default: `./skills` when it
    /// exists, else the folder this binary was built from.
    #[arg(long, global = true, env = "SKILLS_DIR")]
    skills_dir: Option<PathBuf>,
    /// Data folder holding `conversations.duckdb` and `memories.sqlite`.
    /// Default: `$XDG_DATA_HOME/skills` (`~/.local/share/skills`).
    #[arg(long, global = true, env = "SKILLS_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the loaded skills.
    List,
    /// Show one skill: frontmatter, parameters and sections.
    Show {
        /// Skill name or MCP tool name.
        name: String,
    },
    /// Validate every skill document; exit 2 when any is invalid.
    Validate,
    /// Import transcripts into the conversations store (default locations when no path is given).
    Ingest {
        /// Files or folders to import (Claude Code, Codex, Gemini CLI and pi sessions,
        /// ChatGPT `conversations.json`…). Unchanged files are not read again.
        paths: Vec<PathBuf>,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
        /// Store text a harness injected under the user role (`<system-reminder>`,
        /// command wrappers, continuation summaries, Codex preambles) as ordinary user
        /// messages instead of setting it aside.
        #[arg(long)]
        keep_injected: bool,
    },
    /// Run a skill once and print its rendered output (or `--json`).
    Run {
        /// Skill name or MCP tool name.
        name: String,
        /// An argument as `key=value`, typed by the skill's input schema (repeatable).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        /// All arguments as one JSON object (instead of `--arg`).
        #[arg(long, value_name = "JSON", conflicts_with = "args")]
        args_json: Option<String>,
    },
    /// Run every skill's verification checklist as conformance tests (or only NAME…).
    Verify {
        /// Skill names (default: every skill).
        names: Vec<String>,
        /// Fixture corpora folder. Default: `tests/conformance/fixtures` of this source tree.
        #[arg(long, env = "SKILLS_FIXTURES_DIR")]
        fixtures_dir: Option<PathBuf>,
        /// List the check vocabulary (id, what it proves, parameter schema) and exit.
        #[arg(long)]
        list_checks: bool,
    },
    /// Serve every skill as an MCP tool (and its SKILL.md as a resource) over stdio,
    /// or over streamable HTTP at `/mcp` with `--http`. Logs go to stderr.
    Serve {
        /// Serve streamable HTTP on this loopback address (e.g. `127.0.0.1:8765`; port 0
        /// picks a free port) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Allow a non-loopback `--http` address and any Host/Origin header (no
        /// DNS-rebinding protection).
        #[arg(long, requires = "http")]
        allow_remote: bool,
    },
    /// Scaffold a new skill folder (document, query, template, conformance binding)
    /// that validates and verifies as generated.
    New {
        /// Skill name: lowercase letters, digits and hyphens (the folder name).
        name: String,
        /// Engine of the new skill.
        #[arg(long, default_value = "sql")]
        engine: String,
    },
    /// Durable memories for memo-search: import notes, add one.
    #[command(subcommand)]
    Memo(MemoCommand),
    /// Generate documentation from the skill documents: markdown and HTML pages
    /// (`--out DIR`), or JSON (`--format json`, the tool definitions as `tools/list` serves them).
    Docs {
        /// Folder to write `index.md`, `<skill>.md`, their `.html` and `style.css` into.
        #[arg(long, value_name = "DIR", required_unless_present = "format")]
        out: Option<PathBuf>,
        /// `site` (markdown + HTML into `--out`) or `json` (to stdout, or `skills.json` in `--out`).
        #[arg(long, value_enum)]
        format: Option<DocsFormat>,
        /// Do not run the verification checklists (items show `not run`).
        #[arg(long)]
        no_verify: bool,
    },
}

/// `skills memo …`.
#[derive(Subcommand)]
enum MemoCommand {
    /// Import memory files: markdown with YAML frontmatter (Claude Code `memory/*.md`,
    /// `MEMORY.md`, basic-memory notes, vault files), JSONL, Letta `.af`. Re-importing
    /// updates changed memories and adds nothing twice.
    Import {
        /// Files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Add one memory.
    Add {
        /// Title (else the body's first line).
        #[arg(long)]
        title: Option<String>,
        /// Body text; `-` reads it from stdin.
        #[arg(long)]
        body: String,
        /// Memory type, e.g. decision, fact, bug, feedback, preference, note, procedure.
        #[arg(long = "type")]
        kind: Option<String>,
        /// A tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// A file the memory was read from (repeatable).
        #[arg(long = "file-read")]
        files_read: Vec<String>,
        /// A file the memory is about / modified (repeatable).
        #[arg(long = "file-modified")]
        files_modified: Vec<String>,
    },
}

/// Output of `skills docs`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DocsFormat {
    Site,
    Json,
}

/// How a command ended: 0 ok, 1 the call/check/import failed, 2 bad usage or invalid documents.
enum Outcome {
    Ok,
    Failed,
    Usage,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Not locked: `serve` hands stdout to the MCP stdio transport on another thread.
    let mut out = std::io::stdout();
    match run(&cli, &mut out) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::Usage) => ExitCode::from(2),
        Err(err) => {
            let _ = out.flush();
            print_chain(err.as_ref());
            if let Some(CallError::InvalidArguments { .. } | CallError::UnknownSkill { .. }) =
                err.downcast_ref()
            {
                return ExitCode::from(2);
            }
            ExitCode::from(1)
        }
    }
}

fn skills_dir(cli: &Cli) -> PathBuf {
    if let Some(dir) = &cli.skills_dir {
        return dir.clone();
    }
    let local = PathBuf::from("skills");
    if local.join(".").is_dir() && local.read_dir().is_ok() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
}

fn store_paths(cli: &Cli) -> Result<StorePaths> {
    let dir = match &cli.data_dir {
        Some(d) => d.clone(),
        None => StorePaths::default_dir()
            .context("no data folder: set `--data-dir` or `SKILLS_DATA_DIR`")?,
    };
    Ok(StorePaths::in_dir(dir))
}

fn load_host(cli: &Cli) -> Result<Host> {
    Ok(Host::load(&skills_dir(cli), context(store_paths(cli)?)?))
}

/// The engines' context. Two environment variables exist as testing aids (used by
/// `skills verify` for fresh-process checks, so a new process sees the same world as
/// the case): `SKILLS_NOW` (RFC 3339, e.g. `2026-07-03T12:00:00Z`) fixes the clock that
/// natural-language dates resolve against; `SKILLS_EMBEDDER=none` runs without the
/// embedding model even when one is installed.
fn context(paths: StorePaths) -> Result<Context> {
    let mut ctx = Context::new(paths);
    if let Some(now) = std::env::var_os("SKILLS_NOW").filter(|v| !v.is_empty()) {
        let now = now.to_string_lossy();
        let t = chrono::DateTime::parse_from_rfc3339(&now).with_context(|| {
            format!("SKILLS_NOW `{now}` is not an RFC 3339 time (e.g. 2026-07-03T12:00:00Z)")
        })?;
        ctx = ctx.with_now(t.with_timezone(&chrono::Utc));
    }
    match std::env::var("SKILLS_EMBEDDER").as_deref() {
        Err(_) | Ok("") => {}
        Ok("none") => ctx = ctx.with_embedder(None),
        Ok(other) => anyhow::bail!("SKILLS_EMBEDDER `{other}`: the only value is `none`"),
    }
    Ok(ctx)
}

/// The skill named `name` (skill or MCP tool name), or `None` after printing which
/// skills are loaded.
fn find_skill<'h>(host: &'h Host, name: &str) -> Option<&'h skills::runtime::Skill> {
    let skill = host.get(name);
    if skill.is_none() {
        let known: Vec<&str> = host.skills().iter().map(|s| s.name()).collect();
        eprintln!(
            "error: unknown skill `{name}`; loaded skills: {}",
            known.join(", ")
        );
    }
    skill
}

fn warn_diagnostics(host: &Host) {
    for d in host.diagnostics() {
        eprintln!("warning: {d}");
    }
}

fn print_json(out: &mut impl Write, value: &Value) -> Result<()> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

fn run(cli: &Cli, out: &mut impl Write) -> Result<Outcome> {
    match &cli.command {
        Command::List => {
            let host = load_host(cli)?;
            warn_diagnostics(&host);
            if cli.json {
                let list: Vec<Value> = host.skills().iter().map(skill_summary).collect();
                print_json(out, &Value::Array(list))?;
            } else {
                for s in host.skills() {
                    let desc = s.meta.description.split(". ").next().unwrap_or("");
                    writeln!(
                        out,
                        "{:<24} {:<8} {:<22} {}",
                        s.name(),
                        s.meta.layer.as_deref().unwrap_or("-"),
                        s.tool_name(),
                        desc.trim_end_matches('.')
                    )?;
                }
            }
            Ok(Outcome::Ok)
        }
        Command::Show { name } => {
            let host = load_host(cli)?;
            warn_diagnostics(&host);
            let Some(skill) = find_skill(&host, name) else {
                return Ok(Outcome::Usage);
            };
            if cli.json {
                let sections: Vec<Value> = skill
                    .doc
                    .sections
                    .iter()
                    .map(|s| json!({"title": s.title, "markdown": s.markdown, "items": s.items}))
                    .collect();
                print_json(
                    out,
                    &json!({"path": skill.doc.path, "frontmatter": skill.doc.frontmatter, "tool": skill.tool_name(), "sections": sections}),
                )?;
            } else {
                writeln!(
                    out,
                    "{} — {}",
                    skill.name(),
                    skill.meta.title.as_deref().unwrap_or("")
                )?;
                writeln!(out, "{}\n", skill.meta.description)?;
                writeln!(out, "file:        {}", skill.doc.path.display())?;
                writeln!(out, "engine:      {}", skill.meta.engine)?;
                writeln!(out, "mcp tool:    {}", skill.tool_name())?;
                writeln!(
                    out,
                    "layer:       {}",
                    skill.meta.layer.as_deref().unwrap_or("-")
                )?;
                writeln!(out, "reads:       {}", skill.meta.reads.join(", "))?;
                writeln!(
                    out,
                    "writes:      {}",
                    if skill.meta.writes.is_empty() {
                        "nothing".to_owned()
                    } else {
                        skill.meta.writes.join(", ")
                    }
                )?;
                writeln!(
                    out,
                    "determinism: {}",
                    skill.meta.determinism.as_deref().unwrap_or("-")
                )?;
                writeln!(out, "\nparameters:")?;
                let schema = &skill.meta.input_schema;
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(props) = schema["properties"].as_object() {
                    for (pname, p) in props {
                        let ty = p
                            .get("type")
                            .map(|t| t.to_string())
                            .or_else(|| p.get("enum").map(|e| format!("one of {e}")))
                            .unwrap_or_default();
                        let default = p
                            .get("default")
                            .map(|d| format!(" (default {d})"))
                            .unwrap_or_default();
                        let req = if required.contains(&pname.as_str()) {
                            " required"
                        } else {
                            ""
                        };
                        writeln!(out, "  {pname}: {}{req}{default}", ty.trim_matches('"'))?;
                        if let Some(d) = p.get("description").and_then(Value::as_str) {
                            writeln!(out, "      {d}")?;
                        }
                    }
                }
                for s in &skill.doc.sections {
                    if s.level >= 2 {
                        writeln!(out, "\n## {}\n{}", s.title, s.markdown)?;
                    }
                }
            }
            Ok(Outcome::Ok)
        }
        Command::Validate => {
            let host = load_host(cli)?;
            let diags = host.diagnostics();
            if cli.json {
                let names: Vec<&str> = host.skills().iter().map(|s| s.name()).collect();
                print_json(out, &json!({"valid": names, "diagnostics": diags}))?;
            } else {
                for s in host.skills() {
                    writeln!(out, "ok      {}  ({})", s.name(), s.doc.path.display())?;
                }
                for d in diags {
                    writeln!(out, "invalid {d}")?;
                }
                writeln!(
                    out,
                    "{} valid, {} problems",
                    host.skills().len(),
                    diags.len()
                )?;
            }
            Ok(if diags.is_empty() {
                Outcome::Ok
            } else {
                Outcome::Usage
            })
        }
        Command::Ingest {
            paths,
            quiet,
            keep_injected,
        } => {
            let options = skills::ingest::IngestOptions {
                keep_injected: *keep_injected,
            };
            ingest(cli, paths, *quiet, options, out)
        }
        Command::Verify {
            names,
            fixtures_dir,
            list_checks,
        } => {
            if *list_checks {
                let checks = skills::runtime::conformance::checks::describe();
                print_json(out, &checks)?;
                return Ok(Outcome::Ok);
            }
            verify(cli, names, fixtures_dir.as_deref(), out)
        }
        Command::Serve { http, allow_remote } => serve(cli, *http, *allow_remote),
        Command::Memo(command) => memo(cli, command, out),
        Command::New { name, engine } => {
            use skills::runtime::scaffold::{new_skill, ScaffoldError};
            match new_skill(&skills_dir(cli), name, engine) {
                Ok(files) => {
                    if cli.json {
                        print_json(out, &json!({ "files": files }))?;
                    } else {
                        for f in &files {
                            writeln!(out, "created {}", f.display())?;
                        }
                        writeln!(out, "next: edit query.sql and SKILL.md, then `skills validate` and `skills verify {name}`")?;
                    }
                    Ok(Outcome::Ok)
                }
                Err(
                    e @ (ScaffoldError::InvalidName(_)
                    | ScaffoldError::Exists(_)
                    | ScaffoldError::UnknownEngine(_)),
                ) => {
                    eprintln!("error: {e}");
                    Ok(Outcome::Usage)
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Docs {
            out: dir,
            format,
            no_verify,
        } => docs(cli, dir.as_deref(), *format, !*no_verify, out),
        Command::Run {
            name,
            args: pairs,
            args_json,
        } => {
            let host = load_host(cli)?;
            warn_diagnostics(&host);
            let Some(skill) = find_skill(&host, name) else {
                return Ok(Outcome::Usage);
            };
            let args = match args_json {
                Some(text) => match serde_json::from_str::<Value>(text) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("error: `--args-json` is not valid JSON: {e}");
                        return Ok(Outcome::Usage);
                    }
                },
                None => match args::from_pairs(&skill.meta.input_schema, pairs) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("error: `--arg {}`: {}", e.argument, e.reason);
                        return Ok(Outcome::Usage);
                    }
                },
            };
            match host.call(name, args) {
                Ok(output) => {
                    if cli.json {
                        print_json(out, &serde_json::to_value(&output)?)?;
                    } else {
                        writeln!(out, "{}", output.text)?;
                    }
                    Ok(Outcome::Ok)
                }
                Err(CallError::InvalidArguments { skill, errors }) => {
                    for e in &errors {
                        eprintln!("error: {skill}: {e}");
                    }
                    eprintln!("hint: `skills show {skill}` lists the parameters");
                    Ok(Outcome::Usage)
                }
                Err(e @ CallError::Engine { .. }) => {
                    print_chain(&e);
                    if e.to_string().contains("run `skills ingest` first") {
                        eprintln!("hint: import transcripts with `skills ingest [PATH…]`");
                    }
                    Ok(Outcome::Failed)
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// Prints `error:` and the `Caused by:` chain once, skipping causes whose text the
/// message before already contains (transparent wrappers repeat their source).
fn print_chain(err: &(dyn std::error::Error + 'static)) {
    let mut last = err.to_string();
    eprintln!("error: {last}");
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !last.contains(&text) {
            eprintln!("  Caused by: {text}");
        }
        last = text;
        source = cause.source();
    }
}

fn skill_summary(s: &skills::runtime::Skill) -> Value {
    json!({
        "name": s.name(),
        "title": s.meta.title,
        "description": s.meta.description,
        "layer": s.meta.layer,
        "reads": s.meta.reads,
        "writes": s.meta.writes,
        "determinism": s.meta.determinism,
        "citations": s.meta.citations,
        "engine": s.meta.engine,
        "tool": s.tool_name(),
        "path": s.doc.path,
    })
}

fn verify(
    cli: &Cli,
    names: &[String],
    fixtures_dir: Option<&Path>,
    out: &mut impl Write,
) -> Result<Outcome> {
    use skills::runtime::conformance::{Options, Verifier, VerifyError};
    let fixtures_dir = fixtures_dir.map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/fixtures"),
        Path::to_path_buf,
    );
    let options = Options {
        skills_dir: skills_dir(cli),
        fixtures_dir,
        binary: std::env::current_exe().ok(),
    };
    let verifier = Verifier::new(options)?;
    warn_diagnostics(verifier.host());
    let report = match verifier.run_all(names) {
        Ok(report) => report,
        Err(e @ VerifyError::UnknownSkill { .. }) => {
            eprintln!("error: {e}");
            return Ok(Outcome::Usage);
        }
        Err(e) => return Err(e.into()),
    };
    if cli.json {
        print_json(out, &serde_json::to_value(&report)?)?;
    } else {
        writeln!(out, "{}", report.to_text())?;
    }
    Ok(if report.failed == 0 {
        Outcome::Ok
    } else {
        Outcome::Failed
    })
}

/// `skills docs`: writes the docs site or prints its JSON. Unless `--no-verify`, the
/// checklists are run first (as `skills verify` does) so each item shows its result.
fn docs(
    cli: &Cli,
    dir: Option<&Path>,
    format: Option<DocsFormat>,
    verify: bool,
    out: &mut impl Write,
) -> Result<Outcome> {
    use skills::runtime::conformance::{Options, Status, Verifier};
    use skills::runtime::docs::{self, ItemStatus};
    let host = load_host(cli)?;
    warn_diagnostics(&host);
    let report = if verify {
        let options = Options {
            skills_dir: skills_dir(cli),
            fixtures_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/fixtures"),
            binary: std::env::current_exe().ok(),
        };
        Some(Verifier::new(options)?.run_all(&[])?)
    } else {
        None
    };
    let status_of = |s: &skills::runtime::Skill| -> Vec<ItemStatus> {
        let Some(report) = &report else {
            return Vec::new();
        };
        report
            .items
            .iter()
            .filter(|i| i.skill == s.name())
            .map(|i| {
                let (status, detail) = match i.status {
                    Status::Pass => ("pass", None),
                    Status::Excluded => ("excluded", i.reason.clone()),
                    Status::Fail => ("fail", i.failures().first().cloned()),
                };
                ItemStatus {
                    text: i.item.clone(),
                    status: status.into(),
                    detail,
                }
            })
            .collect()
    };
    let tool_of = |s: &skills::runtime::Skill| {
        serde_json::to_value(skills::runtime::mcp::tool_for(s)).unwrap_or_default()
    };
    let data = docs::docs_data(&host, &tool_of, &status_of);
    match (format.unwrap_or(DocsFormat::Site), dir) {
        (DocsFormat::Json, None) => write!(out, "{}", docs::to_json_text(&data))?,
        (DocsFormat::Json, Some(dir)) => {
            fs_err::create_dir_all(dir)?;
            fs_err::write(dir.join("skills.json"), docs::to_json_text(&data))?;
            writeln!(out, "wrote {}", dir.join("skills.json").display())?;
        }
        (DocsFormat::Site, Some(dir)) => {
            let files = docs::write_site(&data, dir)?;
            if cli.json {
                print_json(out, &json!({ "files": files }))?;
            } else {
                writeln!(out, "wrote {} files to {}", files.len(), dir.display())?;
            }
        }
        (DocsFormat::Site, None) => {
            eprintln!("error: `--out DIR` is needed to write the site");
            return Ok(Outcome::Usage);
        }
    }
    Ok(Outcome::Ok)
}

/// `skills memo import|add`: writes the memories store.
fn memo(cli: &Cli, command: &MemoCommand, out: &mut impl Write) -> Result<Outcome> {
    use skills::ingest::memories::{add_memory, import_paths, MemoryInput};
    use skills::stores::memories::MemoryStore;
    let path = store_paths(cli)?.memories;
    let store = MemoryStore::open_rw(&path)?;
    match command {
        MemoCommand::Import { paths } => {
            let summary = import_paths(&store, paths)?;
            if cli.json {
                let mut value = serde_json::to_value(&summary)?;
                value["store"] = json!(path);
                print_json(out, &value)?;
            } else {
                writeln!(out, "{summary}")?;
                writeln!(out, "store: {}", path.display())?;
            }
            Ok(if summary.files == 0 && !summary.faults.is_empty() {
                Outcome::Failed
            } else {
                Outcome::Ok
            })
        }
        MemoCommand::Add {
            title,
            body,
            kind,
            tags,
            files_read,
            files_modified,
        } => {
            let body = if body == "-" {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
                text
            } else {
                body.clone()
            };
            let input = MemoryInput {
                title: title.clone().unwrap_or_default(),
                kind: kind.clone(),
                tags: tags.clone(),
                body,
                files_read: files_read.clone(),
                files_modified: files_modified.clone(),
                ..MemoryInput::default()
            };
            match add_memory(&store, input) {
                Ok(id) => {
                    if cli.json {
                        print_json(out, &json!({ "id": id, "store": path }))?;
                    } else {
                        writeln!(out, "added {id}")?;
                    }
                    Ok(Outcome::Ok)
                }
                Err(skills::ingest::memories::AddMemoryError::Empty) => {
                    eprintln!("error: a memory needs `--title` or a non-empty `--body`");
                    Ok(Outcome::Usage)
                }
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// `skills serve`: runs the MCP server until stdin closes (stdio) or Ctrl-C (HTTP).
fn serve(cli: &Cli, http: Option<std::net::SocketAddr>, allow_remote: bool) -> Result<Outcome> {
    use skills::runtime::mcp;
    let host = std::sync::Arc::new(load_host(cli)?);
    warn_diagnostics(&host);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async move {
        let tools = host.skills().len();
        let Some(addr) = http else {
            eprintln!("skills: serving {tools} tools over stdio");
            return mcp::serve_stdio(host).await.map_err(anyhow::Error::from);
        };
        let shutdown = tokio_util::sync::CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            on_signal.cancel();
        });
        let options = mcp::HttpOptions { addr, allow_remote };
        mcp::serve_http(host, options, shutdown, |bound| {
            eprintln!(
                "skills: serving {tools} tools over streamable HTTP at http://{bound}{}",
                mcp::HTTP_PATH
            );
        })
        .await
        .map_err(anyhow::Error::from)
    });
    match result {
        Err(e) if matches!(e.downcast_ref(), Some(mcp::ServeError::NotLoopback { .. })) => {
            eprintln!("error: {e}");
            eprintln!(
                "hint: bind `127.0.0.1:PORT`, or pass `--allow-remote` to accept remote clients"
            );
            Ok(Outcome::Usage)
        }
        other => other.map(|()| Outcome::Ok),
    }
}

fn ingest(
    cli: &Cli,
    paths: &[PathBuf],
    quiet: bool,
    options: skills::ingest::IngestOptions,
    out: &mut impl Write,
) -> Result<Outcome> {
    let paths = if paths.is_empty() {
        let found = skills::ingest::discover();
        if found.is_empty() {
            eprintln!("error: no transcripts found in the default locations of Claude Code, Codex, Gemini CLI, pi, Cursor, OpenCode, Cline, Copilot, Amp or Antigravity, nor in $SKILLS_CHATGPT_EXPORT / $SKILLS_CLAUDE_AI_EXPORT (see README, \"Importing transcripts\")");
            eprintln!("hint: give files or folders: `skills ingest PATH…`");
            return Ok(Outcome::Usage);
        }
        found
    } else {
        paths.to_vec()
    };
    let store_path = store_paths(cli)?.conversations;
    let store = skills::stores::conversations::ConversationStore::open_rw(&store_path)?;
    let bar = if quiet || cli.json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{elapsed}] {pos} files, {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    // Files are reported batch by batch; keep the spinner moving in between.
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut messages = 0usize;
    let mut added = 0usize;
    let summary = skills::ingest::ingest_paths_with(&store, &paths, options, &mut |_path, file| {
        messages += file.parsed;
        added += file.added;
        bar.inc(1);
        bar.set_message(format!("{messages} messages ({added} new)"));
    });
    bar.set_message("updating the search index");
    let index = store.close();
    bar.finish_and_clear();
    let index = match index {
        Ok(report) => report,
        Err(e) => {
            eprintln!("warning: the search index was not updated ({e}); searches answer from DuckDB until the next ingest");
            None
        }
    };
    if options.keep_injected && summary.files_unchanged > 0 && !cli.json {
        eprintln!(
            "note: --keep-injected applies to files read in this run; the {} unchanged files keep their earlier classification (to apply it to everything, ingest into a new --data-dir)",
            summary.files_unchanged
        );
    }
    if cli.json {
        let mut value = serde_json::to_value(&summary)?;
        value["store"] = json!(store_path);
        value["index"] = serde_json::to_value(&index)?;
        print_json(out, &value)?;
    } else {
        write!(out, "{summary}")?;
        writeln!(out, "store: {}", store_path.display())?;
        if let Some(ix) = &index {
            let how = if ix.rebuilt { "rebuilt" } else { "updated" };
            writeln!(
                out,
                "search index: {how}, {} rows in {} segments ({:.1} MB)",
                ix.rows,
                ix.segments,
                ix.bytes as f64 / 1e6
            )?;
        }
    }
    // Per-record faults are reported but do not fail a run that imported something.
    Ok(
        if summary.files_imported + summary.files_unchanged == 0 && !summary.faults.is_empty() {
            Outcome::Failed
        } else {
            Outcome::Ok
        },
    )
}
