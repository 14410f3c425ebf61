//! The command layer of the `skills` binary: one module per subcommand, a [`Printer`]
//! that owns stdout and stderr, and [`exit`], the one place that turns how a command
//! ended (an [`Outcome`] or an error) into an exit code and hints.

pub mod archive;
pub mod docs;
pub mod exit;
pub mod export;
pub mod ingest;
pub mod list;
pub mod memo;
pub mod new;
pub mod printer;
pub mod run;
pub mod serve;
pub mod serve_ingest;
pub mod setup;
pub mod show;
pub mod status;
pub mod ui;
pub mod validate;
pub mod verify;
pub mod version;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use skills::engines::Context;
use skills::host::{Host, Skill};
use skills::settings;
use skills::stores::StorePaths;

pub use exit::{Outcome, UsageError};
pub use printer::Printer;

/// Options every subcommand takes.
#[derive(clap::Args)]
pub struct GlobalArgs {
    /// Folder of skill documents (`<dir>/<name>/SKILL.md`). Default: `./skills` when it
    /// exists, else the bundled skills installed beside this binary
    /// (`<bin>/../share/skills/skills`, see `scripts/install`), else the folder this
    /// binary was built from.
    #[arg(long, global = true, env = settings::SKILLS_DIR.name)]
    pub skills_dir: Option<PathBuf>,
    /// Data folder holding `conversations.duckdb` and `memories.sqlite`.
    /// Default: `$XDG_DATA_HOME/skills` (`~/.local/share/skills`).
    #[arg(long, global = true, env = settings::DATA_DIR.name)]
    pub data_dir: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The team archive (PostgreSQL, `postgres://user@host:5432/database`; password
    /// from PGPASSWORD or ~/.pgpass rather than the URL): `skills archive` works on it,
    /// and the skills that `run` and `serve` call answer from it instead of the local
    /// stores.
    #[arg(
        long,
        global = true,
        env = settings::ARCHIVE_URL.name,
        hide_env_values = true
    )]
    pub archive: Option<String>,
}

/// One run of the binary: the global options and the [`Printer`].
pub struct Session {
    global: GlobalArgs,
    /// Where the command's output and messages go.
    pub printer: Printer,
}

impl Session {
    /// A session printing JSON when `--json` was given.
    pub fn new(global: GlobalArgs) -> Self {
        let printer = Printer::new(global.json);
        Self { global, printer }
    }

    /// The archive named by `--archive` / `SKILLS_ARCHIVE_URL`, parsed (not connected).
    ///
    /// # Errors
    /// [`UsageError`] (exit 2) saying what is wrong with the address (never echoing
    /// it: it may hold the password).
    pub fn archive_target(&self) -> Result<Option<skills::archive::Target>> {
        match self
            .global
            .archive
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        {
            None => Ok(None),
            Some(url) => skills::archive::Target::parse(url).map(Some).map_err(|e| {
                UsageError::new(format!("`--archive` / {}: {e}", settings::ARCHIVE_URL.name)).into()
            }),
        }
    }

    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.global.json
    }

    /// The folder of skill documents to read: [`Session::skills_dir_unchecked`], checked
    /// when `--skills-dir` / `SKILLS_DIR` names it.
    ///
    /// # Errors
    /// [`UsageError`] (exit 2) naming the folder when the one given does not exist, is
    /// not a folder or cannot be read.
    pub fn skills_dir(&self) -> Result<PathBuf> {
        let dir = self.skills_dir_unchecked();
        if self.global.skills_dir.is_some() {
            if let Err(why) = readable_folder(&dir) {
                return Err(UsageError::new(format!(
                    "skills folder `{}` (`--skills-dir` / `{}`) {why}",
                    dir.display(),
                    settings::SKILLS_DIR.name
                ))
                .with_hint(format!(
                    "give a folder of `<name>/SKILL.md` folders, or unset `--skills-dir` and \
                     `{}` to use the default",
                    settings::SKILLS_DIR.name
                ))
                .into());
            }
        }
        Ok(dir)
    }

    /// The folder of skill documents, unchecked (`skills new` creates a missing one):
    /// `--skills-dir`, else `./skills` when it can be read, else
    /// [`installed_skills_dir`] when it exists, else the `skills/` folder of the source
    /// tree this binary was built from.
    pub fn skills_dir_unchecked(&self) -> PathBuf {
        if let Some(dir) = &self.global.skills_dir {
            return dir.clone();
        }
        let local = PathBuf::from("skills");
        if local.join(".").is_dir() && local.read_dir().is_ok() {
            return local;
        }
        if let Some(installed) = installed_skills_dir().filter(|d| d.is_dir()) {
            return installed;
        }
        Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
    }

    /// The fixture corpora `verify` and `docs` build their stores from: `given`
    /// (`--fixtures-dir`), else `tests/conformance/fixtures` beside the skills folder
    /// (the layout of a checkout), else that folder of the source tree this binary was
    /// built from.
    pub fn fixtures_dir(&self, given: Option<&Path>) -> PathBuf {
        if let Some(dir) = given {
            return dir.to_path_buf();
        }
        const FIXTURES: &str = "tests/conformance/fixtures";
        let skills_dir = self.skills_dir_unchecked();
        let beside = skills_dir
            .parent()
            .map(|parent| parent.join(FIXTURES))
            .filter(|dir| dir.is_dir());
        beside.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURES))
    }

    /// The store files: in `--data-dir`, else in the default data folder.
    ///
    /// # Errors
    /// When no data folder is given and no home folder is known.
    pub fn store_paths(&self) -> Result<StorePaths> {
        let dir = match &self.global.data_dir {
            Some(dir) => dir.clone(),
            None => StorePaths::default_dir().with_context(|| {
                format!(
                    "no data folder: set `--data-dir` or `{}`",
                    settings::DATA_DIR.name
                )
            })?,
        };
        Ok(StorePaths::in_dir(dir))
    }

    /// Loads the skills over the stores, without reporting invalid documents.
    ///
    /// # Errors
    /// A skills folder given that cannot be read ([`Session::skills_dir`]), bad
    /// `SKILLS_NOW` / `SKILLS_EMBEDDER` values or no data folder.
    pub fn load_host_quietly(&self) -> Result<Host> {
        let ctx = context(self.store_paths()?)?.with_archive(self.archive_pool()?);
        Ok(Host::load(&self.skills_dir()?, ctx))
    }

    /// A connection pool for `--archive` (connected on first use), or `None`.
    ///
    /// # Errors
    /// As [`Session::archive_target`].
    pub fn archive_pool(&self) -> Result<Option<std::sync::Arc<skills::archive::search::Pool>>> {
        Ok(self
            .archive_target()?
            .map(|t| std::sync::Arc::new(skills::archive::search::Pool::new(t))))
    }

    /// A function that loads the skills folder again over the same stores (hot reload
    /// in `skills serve`); each call makes a fresh engine context.
    ///
    /// # Errors
    /// As [`Session::load_host_quietly`].
    pub fn host_loader(&self) -> Result<impl Fn() -> Host + Send + 'static> {
        let dir = self.skills_dir()?;
        let paths = self.store_paths()?;
        context(paths.clone())?;
        let archive = self.archive_pool()?;
        Ok(move || {
            let ctx = context(paths.clone()).unwrap_or_else(|_| Context::new(paths.clone()));
            Host::load(&dir, ctx.with_archive(archive.clone()))
        })
    }

    /// Loads the skills over the stores and warns about every invalid document (the
    /// valid ones still load).
    ///
    /// # Errors
    /// As [`Session::load_host_quietly`].
    pub fn load_host(&mut self) -> Result<Host> {
        let host = self.load_host_quietly()?;
        self.warn_diagnostics(&host);
        Ok(host)
    }

    /// Prints a warning per invalid skill document.
    pub fn warn_diagnostics(&mut self, host: &Host) {
        for diagnostic in host.diagnostics() {
            self.printer.warning(diagnostic);
        }
    }

    /// Prints the error (if any) and gives the exit code; see [`exit`].
    pub fn finish(mut self, result: Result<Outcome>) -> ExitCode {
        exit::finish(&mut self.printer, result)
    }
}

/// Why `dir` cannot serve as a skills folder (`does not exist`, `is not a folder`,
/// `cannot be read: <reason>`), or `Ok` when its entries can be listed.
fn readable_folder(dir: &Path) -> std::result::Result<(), String> {
    match std::fs::read_dir(dir) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("does not exist".into()),
        Err(_) if dir.exists() && !dir.is_dir() => Err("is not a folder".into()),
        Err(e) => Err(format!("cannot be read: {e}")),
    }
}

/// Where `scripts/install` puts the bundled skills: `<bin>/../share/skills/skills` for
/// the running binary `<bin>/skills` (`~/.local/share/skills/skills` for
/// `~/.local/bin/skills`); `None` when the binary's path is unknown.
pub fn installed_skills_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = fs_err::canonicalize(&exe).unwrap_or(exe);
    Some(exe.parent()?.parent()?.join("share/skills/skills"))
}

/// The skill named `name` (skill or MCP tool name).
///
/// # Errors
/// [`UsageError`] naming the loaded skills when there is none of that name.
pub fn find_skill<'h>(host: &'h Host, name: &str) -> Result<&'h Skill> {
    host.get(name).ok_or_else(|| {
        let known: Vec<&str> = host.skills().iter().map(|s| s.name()).collect();
        UsageError::new(format!(
            "unknown skill `{name}`; loaded skills: {}",
            known.join(", ")
        ))
        .into()
    })
}

/// The engines' context, with the two testing aids of [`settings`] applied (used by
/// `skills verify` for fresh-process checks, so a new process sees the same world as
/// the case): [`settings::NOW`] fixes the clock that natural-language dates resolve
/// against; [`settings::EMBEDDER`] `none` runs without the embedding model even when
/// one is installed.
fn context(paths: StorePaths) -> Result<Context> {
    let mut ctx = Context::new(paths);
    if let Some(now) = settings::now()? {
        ctx = ctx.with_now(now);
    }
    match settings::embedder()? {
        Some(settings::EmbedderSetting::None) => ctx = ctx.with_embedder(None),
        // Read by `Embedder::load_default` / `load_for_memories` when the models load.
        Some(settings::EmbedderSetting::Static | settings::EmbedderSetting::Deep) | None => {}
    }
    Ok(ctx)
}
