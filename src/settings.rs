//! Every environment variable `skills` reads, defined once: its name, what it means,
//! its default, who reads it and whom it is for ([`Audience`]), as the rows of [`ALL`],
//! and typed readers for the program's own `SKILLS_…` variables ([`embedder`],
//! [`now`], [`model_dir`], …).
//!
//! Other modules name a `SKILLS_…` variable only through a [`Setting`] of this module
//! (`tests/architecture.rs` fails on a `"SKILLS_…"` literal anywhere else under
//! `src/`): the command line options that a variable also sets (`--data-dir` /
//! [`DATA_DIR`]) take the name from here as clap's `env`, so one value is read one way.
//! Standard variables (`HOME`, libpq's `PG…`, `HOSTNAME`) stay read where their
//! convention is implemented (`places`, `archive::connect`) and are listed here so the
//! README's environment table ([`readme_table`], kept current by a test) is complete.
//! Build-time variables are read by `build.rs` and by `option_env!` below.
//!
//! This module uses no other module of the crate: every layer may read a setting.

use std::ffi::OsString;
use std::path::PathBuf;

/// Whom a variable is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Set by people to change what the program does.
    User,
    /// A hook for tests and reproducing a case (a fixed clock, no model).
    Test,
    /// Set by the program for its own child processes; never by people.
    Internal,
    /// Read when the binary is built (`build.rs`, `option_env!`), not when it runs.
    Build,
    /// A standard variable of the platform or of a convention (XDG, libpq) that the
    /// program reads as other programs do.
    Standard,
}

impl Audience {
    /// The word the README's table shows.
    pub fn label(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Test => "test hook",
            Self::Internal => "internal",
            Self::Build => "build time",
            Self::Standard => "standard",
        }
    }
}

/// One environment variable the program reads.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The variable's name, e.g. `SKILLS_DATA_DIR`.
    pub name: &'static str,
    /// What it means and the values it takes (markdown, one sentence or a few).
    pub meaning: &'static str,
    /// What holds when it is unset or empty (markdown).
    pub default: &'static str,
    /// The commands or subsystems that read it.
    pub read_by: &'static str,
    /// Whom it is for.
    pub audience: Audience,
}

impl Setting {
    /// Whether the variable is set at all (empty included).
    pub fn is_set(&self) -> bool {
        std::env::var_os(self.name).is_some()
    }

    /// The value when set and not empty, as the OS gives it.
    pub fn os(&self) -> Option<OsString> {
        std::env::var_os(self.name).filter(|v| !v.is_empty())
    }

    /// The value when set, not empty and valid UTF-8.
    pub fn text(&self) -> Option<String> {
        std::env::var(self.name).ok().filter(|v| !v.is_empty())
    }

    /// The value as a path, when set and not empty.
    pub fn path(&self) -> Option<PathBuf> {
        self.os().map(PathBuf::from)
    }
}

/// A setting's value the program cannot use; the message names the variable, the
/// value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Invalid {
    message: String,
    /// Why a time did not parse ([`now`]).
    #[source]
    cause: Option<chrono::ParseError>,
}

impl Invalid {
    fn new(message: String) -> Self {
        Self {
            message,
            cause: None,
        }
    }
}

// ---- The program's own variables (`SKILLS_…`), for people ----

/// `--skills-dir`'s variable.
pub const SKILLS_DIR: Setting = Setting {
    name: "SKILLS_DIR",
    meaning: "Folder of skill documents (`<dir>/<name>/SKILL.md`); `--skills-dir` wins over it.",
    default: "`./skills` when it exists, else the bundled skills beside the binary \
              (`<bin>/../share/skills/skills`), else the source tree's `skills/`",
    read_by: "every command (as `--skills-dir`)",
    audience: Audience::User,
};

/// `--data-dir`'s variable.
pub const DATA_DIR: Setting = Setting {
    name: "SKILLS_DATA_DIR",
    meaning: "Data folder holding `conversations.duckdb` and `memories.sqlite`; \
              `--data-dir` wins over it.",
    default: "`$XDG_DATA_HOME/skills` (`~/.local/share/skills`)",
    read_by: "every command (as `--data-dir`)",
    audience: Audience::User,
};

/// `--archive`'s variable.
pub const ARCHIVE_URL: Setting = Setting {
    name: "SKILLS_ARCHIVE_URL",
    meaning: "The team archive, a `postgres://user@host:5432/database` URL (password from \
              `PGPASSWORD` or `~/.pgpass` rather than the URL); `--archive` wins over it. \
              Never echoed.",
    default: "none: the skills answer from the local stores",
    read_by: "`run`, `serve`, `ui`, `status`, `archive` (as `--archive`)",
    audience: Audience::User,
};

/// The machine's label in the archive.
pub const MACHINE_NAME: Setting = Setting {
    name: "SKILLS_MACHINE_NAME",
    meaning: "This machine's readable label on the rows it pushes to the team archive.",
    default: "the host name (`/etc/hostname`, else `HOSTNAME`), else `unknown`",
    read_by: "`archive push`, `serve --archive-push`",
    audience: Audience::User,
};

/// Where the embedding model is.
pub const MODEL_DIR: Setting = Setting {
    name: "SKILLS_MODEL_DIR",
    meaning: "The embedding model folder (only it is looked in).",
    default: "`<bin>/../share/skills/model` when it holds the model, else \
              `~/.cache/skills/model` (where `scripts/fetch-model` writes)",
    read_by: "`ingest`, semantic-search, memo-search, memo-save, recall, `status`, `--version`",
    audience: Audience::User,
};

/// Which embedding model tier to use.
pub const EMBEDDER: Setting = Setting {
    name: "SKILLS_EMBEDDER",
    meaning: "`none`: run without the embedding model even when one is installed \
              (`skills verify` sets it for `embedder: none` cases); `static`: memories on \
              the static table too; `deep`: conversations on the second tier too.",
    default: "static table for conversations, the second tier for memories when present",
    read_by: "every command that loads skills; `ingest`, `memo add`, `memo import`",
    audience: Audience::User,
};

/// The per-call deadline.
pub const CALL_TIMEOUT_MS: Setting = Setting {
    name: "SKILLS_CALL_TIMEOUT_MS",
    meaning: "Every call's deadline in milliseconds (`0`: none); a skill's `timeout-ms` can \
              only shorten it. A value that is not a number is warned about and the \
              default used.",
    default: "30000",
    read_by: "the skill host (`run`, `serve`, `verify`, the pages)",
    audience: Audience::User,
};

/// DuckDB threads for a skill's query over the conversation store.
pub const QUERY_THREADS: Setting = Setting {
    name: "SKILLS_QUERY_THREADS",
    meaning: "Threads DuckDB may use for one read-only query over the conversation store \
              (every skill call, the pages). `0`: one per core. A value that is not a \
              number is warned about and the default used.",
    default: "`1`: at 1M messages the browse pages answered up to 2× sooner at p95 than \
              with one thread per core on 2 cores, busy or quiet (docs/performance.md \
              \"One thread per query\"); a full scan runs on one core (brain-stats by \
              month at 1M: 144 ms, 141 ms with two threads, on a busy machine; an idle \
              machine with many cores was not measured)",
    read_by: "the skill host (`run`, `serve`, `verify`, the pages)",
    audience: Audience::User,
};

/// How `skills serve` watches transcript folders.
pub const WATCH: Setting = Setting {
    name: "SKILLS_WATCH",
    meaning: "`poll`: compare modification times every 5 s (network filesystems) instead of \
              `notify`'s file events.",
    default: "`notify`",
    read_by: "`serve` (its background import)",
    audience: Audience::User,
};

/// Whether imports store secrets as written.
pub const KEEP_SECRETS: Setting = Setting {
    name: "SKILLS_KEEP_SECRETS",
    meaning: "`1` (or `true`, `yes`): store transcripts and memories with their secrets as \
              written, as `--keep-secrets` does; search can then find a secret by any prefix \
              (only skills' output is redacted). `0`, `false`, `no`: redact before storing.",
    default: "secrets are replaced with `[REDACTED:<detector>]` before they are stored",
    read_by: "`ingest`, `serve` (its background imports, memo-save), `memo import`, `memo add`",
    audience: Audience::User,
};

/// Whether searches use the search index.
pub const SEARCH_INDEX: Setting = Setting {
    name: "SKILLS_SEARCH_INDEX",
    meaning: "`off`: every search-conversations call scans DuckDB instead of the search index.",
    default: "on",
    read_by: "search-conversations, semantic-search",
    audience: Audience::User,
};

/// Debug lines on stderr.
pub const LOG: Setting = Setting {
    name: "SKILLS_LOG",
    meaning: "A value containing `debug` prints debug lines on stderr (which `source` called \
              memo-search).",
    default: "no debug lines",
    read_by: "memo-search",
    audience: Audience::User,
};

/// Where a ChatGPT export was unpacked.
pub const CHATGPT_EXPORT: Setting = Setting {
    name: "SKILLS_CHATGPT_EXPORT",
    meaning: "A ChatGPT export (`conversations.json`, or a folder holding one) that \
              `skills ingest` with no path reads.",
    default: "none: exports are imported by path",
    read_by: "`ingest`, `serve` (watched)",
    audience: Audience::User,
};

/// Where a Claude.ai export was unpacked.
pub const CLAUDE_AI_EXPORT: Setting = Setting {
    name: "SKILLS_CLAUDE_AI_EXPORT",
    meaning: "A Claude.ai export (`conversations.json`, or a folder holding one) that \
              `skills ingest` with no path reads.",
    default: "none: exports are imported by path",
    read_by: "`ingest`, `serve` (watched)",
    audience: Audience::User,
};

// ---- Hooks for tests ----

/// The clock natural-language dates resolve against.
pub const NOW: Setting = Setting {
    name: "SKILLS_NOW",
    meaning: "A fixed clock (RFC 3339, e.g. `2026-07-03T12:00:00Z`) that dates such as \
              `yesterday` resolve against; `skills verify` sets it for fresh-process cases.",
    default: "the system clock",
    read_by: "every command that loads skills",
    audience: Audience::Test,
};

/// Fixture corpora of `verify` and `docs`.
pub const FIXTURES_DIR: Setting = Setting {
    name: "SKILLS_FIXTURES_DIR",
    meaning: "The fixture corpora the checklists' stores are built from; `--fixtures-dir` \
              wins over it.",
    default: "`tests/conformance/fixtures` beside the skills folder, else in the source tree",
    read_by: "`verify`, `docs` (as `--fixtures-dir`)",
    audience: Audience::Test,
};

/// The real transcripts the quality harnesses read.
pub const CORPUS_DIR: Setting = Setting {
    name: "SKILLS_CORPUS_DIR",
    meaning: "The folder of real transcripts (LoCoMo, memories) that quality harnesses and \
              differential tests read.",
    default: "`../shared/corpus` beside the source tree",
    read_by: "benchmarks, memo-search's differential test",
    audience: Audience::Test,
};

/// The made-up importer's folder.
pub const MADE_UP_HOME: Setting = Setting {
    name: "SKILLS_MADE_UP_HOME",
    meaning: "The folder of the test-only `made-up` transcript format.",
    default: "none",
    read_by: "`ingest` (the test-only importer)",
    audience: Audience::Test,
};

/// Where a test pauses an import.
pub const INGEST_PAUSE: Setting = Setting {
    name: "SKILLS_INGEST_PAUSE",
    meaning: "A file path: `ingest` stores the first file alone, then writes this file and \
              parses nothing more until it is removed, as on a huge file (a test kills the \
              import, or calls a tool, at that known point).",
    default: "none: no pause",
    read_by: "`ingest`",
    audience: Audience::Test,
};

// ---- Set by the program for its children ----

/// The pid a child of `skills serve` ends with.
pub const EXIT_WITH_PARENT: Setting = Setting {
    name: "SKILLS_EXIT_WITH_PARENT",
    meaning: "The pid of the `skills serve` that started this background `skills ingest`: \
              the child ends when that process does, also when it is killed.",
    default: "none: the process ends on its own",
    read_by: "`ingest` started by `serve`",
    audience: Audience::Internal,
};

// ---- Build time ----

/// The commit a release was built from.
pub const COMMIT: Setting = Setting {
    name: "SKILLS_COMMIT",
    meaning: "The commit the binary was built from, shown by `--version` (`scripts/release` \
              sets it).",
    default: "not stamped (a plain `cargo build`)",
    read_by: "the build, for `--version`",
    audience: Audience::Build,
};

/// The oldest glibc of a portable build.
pub const GLIBC: Setting = Setting {
    name: "SKILLS_GLIBC",
    meaning: "The oldest glibc a portable release links against (`scripts/release`'s \
              cargo-zigbuild build); also makes `build.rs` link the bundled DuckDB.",
    default: "built for this machine's glibc",
    read_by: "`build.rs`, for `--version`",
    audience: Audience::Build,
};

/// The target triple.
pub const TARGET: Setting = Setting {
    name: "SKILLS_TARGET",
    meaning: "The target triple, set by `build.rs` from cargo's `TARGET` for `--version`.",
    default: "always set by `build.rs`",
    read_by: "the build, for `--version`",
    audience: Audience::Build,
};

/// A prebuilt DuckDB to link against.
pub const DUCKDB_LIB_DIR: Setting = Setting {
    name: "DUCKDB_LIB_DIR",
    meaning: "A folder holding a prebuilt `libduckdb` to link against (`scripts/env.sh` \
              sets it), ignored by a portable (`SKILLS_GLIBC`) build.",
    default: "DuckDB built from source (`--features bundled`)",
    read_by: "`build.rs`",
    audience: Audience::Build,
};

/// [`COMMIT`]'s value when this binary was built.
pub const BUILT_COMMIT: Option<&str> = option_env!("SKILLS_COMMIT");
/// [`GLIBC`]'s value when this binary was built.
pub const BUILT_GLIBC: Option<&str> = option_env!("SKILLS_GLIBC");
/// [`TARGET`]'s value when this binary was built.
pub const BUILT_TARGET: &str = env!("SKILLS_TARGET");

// ---- Standard variables ----

/// The user's home folder.
pub const HOME: Setting = Setting {
    name: "HOME",
    meaning: "The home folder (`~`): default locations of transcripts, MCP client configs, \
              the model cache.",
    default: "the platform's account database",
    read_by: "`ingest`, `serve`, `setup`, the model lookup",
    audience: Audience::Standard,
};

/// XDG's data folder.
pub const XDG_DATA_HOME: Setting = Setting {
    name: "XDG_DATA_HOME",
    meaning: "Base of the default data folder and of tools that keep transcripts there.",
    default: "`~/.local/share`",
    read_by: "every command (the data folder), `ingest`",
    audience: Audience::Standard,
};

/// XDG's configuration folder.
pub const XDG_CONFIG_HOME: Setting = Setting {
    name: "XDG_CONFIG_HOME",
    meaning: "Base of the configuration folders of tools that keep transcripts or MCP \
              configs there.",
    default: "`~/.config`",
    read_by: "`ingest`, `serve`, `setup`",
    audience: Audience::Standard,
};

/// Windows' roaming application data folder.
pub const APPDATA: Setting = Setting {
    name: "APPDATA",
    meaning: "The configuration folder on Windows (VS Code-based editors, Claude Desktop).",
    default: "none",
    read_by: "`ingest`, `setup` (Windows)",
    audience: Audience::Standard,
};

/// Claude Code's folder.
pub const CLAUDE_CONFIG_DIR: Setting = Setting {
    name: "CLAUDE_CONFIG_DIR",
    meaning: "Claude Code's folder, as Claude Code reads it.",
    default: "`~/.claude`",
    read_by: "`ingest`, `serve`, `setup`",
    audience: Audience::Standard,
};

/// Codex's folder.
pub const CODEX_HOME: Setting = Setting {
    name: "CODEX_HOME",
    meaning: "Codex's folder, as Codex reads it.",
    default: "`~/.codex`",
    read_by: "`ingest`, `serve`, `setup`",
    audience: Audience::Standard,
};

/// GitHub Copilot CLI's folder.
pub const COPILOT_HOME: Setting = Setting {
    name: "COPILOT_HOME",
    meaning: "GitHub Copilot CLI's folder, as it reads it.",
    default: "`~/.copilot`",
    read_by: "`ingest`, `serve`",
    audience: Audience::Standard,
};

/// The program search path.
pub const PATH: Setting = Setting {
    name: "PATH",
    meaning: "Where `skills setup` looks for the MCP clients' programs.",
    default: "none",
    read_by: "`setup`",
    audience: Audience::Standard,
};

/// The machine's host name.
pub const HOSTNAME: Setting = Setting {
    name: "HOSTNAME",
    meaning: "The host name, when `/etc/hostname` has none, for the machine's label.",
    default: "`unknown`",
    read_by: "`archive push`",
    audience: Audience::Standard,
};

/// The user name, as the shell sets it.
pub const USER: Setting = Setting {
    name: "USER",
    meaning: "The user name on pushed rows and the archive's default role (libpq's rule), \
              else `LOGNAME`.",
    default: "`LOGNAME`",
    read_by: "`archive`, `--archive`",
    audience: Audience::Standard,
};

/// The user name, as login sets it.
pub const LOGNAME: Setting = Setting {
    name: "LOGNAME",
    meaning: "The user name when `USER` is unset.",
    default: "none",
    read_by: "`archive`, `--archive`",
    audience: Audience::Standard,
};

/// An X11 display.
pub const DISPLAY: Setting = Setting {
    name: "DISPLAY",
    meaning: "A desktop to open the pages in (`xdg-open`).",
    default: "no desktop: the URL is printed only",
    read_by: "`ui`",
    audience: Audience::Standard,
};

/// A Wayland display.
pub const WAYLAND_DISPLAY: Setting = Setting {
    name: "WAYLAND_DISPLAY",
    meaning: "A desktop to open the pages in (`xdg-open`), as `DISPLAY`.",
    default: "no desktop: the URL is printed only",
    read_by: "`ui`",
    audience: Audience::Standard,
};

/// libpq's variables, each read where the archive's URL leaves the value out.
const fn libpq(name: &'static str, meaning: &'static str, default: &'static str) -> Setting {
    Setting {
        name,
        meaning,
        default,
        read_by: "`archive`, `--archive`",
        audience: Audience::Standard,
    }
}

/// libpq's `PGHOST`.
pub const PGHOST: Setting = libpq("PGHOST", "The archive's host (libpq).", "`localhost`");
/// libpq's `PGPORT`.
pub const PGPORT: Setting = libpq("PGPORT", "The archive's port (libpq).", "5432");
/// libpq's `PGUSER`.
pub const PGUSER: Setting = libpq(
    "PGUSER",
    "The archive's role (libpq).",
    "`USER`, else `LOGNAME`, else `postgres`",
);
/// libpq's `PGDATABASE`.
pub const PGDATABASE: Setting = libpq(
    "PGDATABASE",
    "The archive's database (libpq).",
    "the role's name",
);
/// libpq's `PGPASSWORD`.
pub const PGPASSWORD: Setting = libpq(
    "PGPASSWORD",
    "The archive's password (libpq); never shown in any output.",
    "the password file",
);
/// libpq's `PGPASSFILE`.
pub const PGPASSFILE: Setting = libpq("PGPASSFILE", "The password file (libpq).", "`~/.pgpass`");
/// libpq's `PGSSLMODE`.
pub const PGSSLMODE: Setting = libpq(
    "PGSSLMODE",
    "TLS to the archive: `disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full` \
     (libpq; `require` with a CA file verifies the CA).",
    "`prefer`",
);
/// libpq's `PGSSLROOTCERT`.
pub const PGSSLROOTCERT: Setting = libpq(
    "PGSSLROOTCERT",
    "The CA file for `verify-ca` / `verify-full` (libpq; `system`: the system's CAs).",
    "`~/.postgresql/root.crt`",
);

/// The system's CA bundle, OpenSSL's convention.
pub const SSL_CERT_FILE: Setting = Setting {
    name: "SSL_CERT_FILE",
    meaning: "The system's CA bundle, used for the archive when `sslrootcert=system`.",
    default: "`/etc/ssl/certs/ca-certificates.crt`",
    read_by: "`archive`, `--archive`",
    audience: Audience::Standard,
};

/// Every variable the program reads, in the README's order: its own for people, test
/// hooks, internal, build time, then the standard ones.
pub const ALL: &[Setting] = &[
    SKILLS_DIR,
    DATA_DIR,
    ARCHIVE_URL,
    MACHINE_NAME,
    MODEL_DIR,
    EMBEDDER,
    CALL_TIMEOUT_MS,
    QUERY_THREADS,
    WATCH,
    KEEP_SECRETS,
    SEARCH_INDEX,
    LOG,
    CHATGPT_EXPORT,
    CLAUDE_AI_EXPORT,
    NOW,
    FIXTURES_DIR,
    CORPUS_DIR,
    MADE_UP_HOME,
    INGEST_PAUSE,
    EXIT_WITH_PARENT,
    COMMIT,
    GLIBC,
    TARGET,
    DUCKDB_LIB_DIR,
    HOME,
    XDG_DATA_HOME,
    XDG_CONFIG_HOME,
    APPDATA,
    CLAUDE_CONFIG_DIR,
    CODEX_HOME,
    COPILOT_HOME,
    PATH,
    HOSTNAME,
    USER,
    LOGNAME,
    DISPLAY,
    WAYLAND_DISPLAY,
    PGHOST,
    PGPORT,
    PGUSER,
    PGDATABASE,
    PGPASSWORD,
    PGPASSFILE,
    PGSSLMODE,
    PGSSLROOTCERT,
    SSL_CERT_FILE,
];

/// The setting named `name`, if the program reads one of that name.
pub fn find(name: &str) -> Option<&'static Setting> {
    ALL.iter().find(|s| s.name == name)
}

// ---- Typed readers ----

/// What [`EMBEDDER`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedderSetting {
    /// `none`: no embedding model.
    None,
    /// `static`: the static table, memories included.
    Static,
    /// `deep`: the second tier, conversations included.
    Deep,
}

/// [`EMBEDDER`]: `None` when unset or empty.
///
/// # Errors
/// [`Invalid`] naming the value and the accepted ones.
pub fn embedder() -> Result<Option<EmbedderSetting>, Invalid> {
    match EMBEDDER.text().as_deref() {
        None => Ok(None),
        Some("none") => Ok(Some(EmbedderSetting::None)),
        Some("static") => Ok(Some(EmbedderSetting::Static)),
        Some("deep") => Ok(Some(EmbedderSetting::Deep)),
        Some(other) => Err(Invalid::new(format!(
            "{} `{other}`: expected `none` (no model), `static` (the static table for \
             memories too) or `deep` (the second tier for conversations too)",
            EMBEDDER.name
        ))),
    }
}

/// [`NOW`] as a UTC time; `None` when unset or empty.
///
/// # Errors
/// [`Invalid`] when the value is not an RFC 3339 time.
pub fn now() -> Result<Option<chrono::DateTime<chrono::Utc>>, Invalid> {
    let Some(now) = NOW.os() else {
        return Ok(None);
    };
    let now = now.to_string_lossy();
    chrono::DateTime::parse_from_rfc3339(&now)
        .map(|t| Some(t.with_timezone(&chrono::Utc)))
        .map_err(|e| Invalid {
            message: format!(
                "{} `{now}` is not an RFC 3339 time (e.g. 2026-07-03T12:00:00Z)",
                NOW.name
            ),
            cause: Some(e),
        })
}

/// [`CALL_TIMEOUT_MS`]: `None` when unset, else its milliseconds (`0`: no deadline).
///
/// # Errors
/// [`Invalid`] when set to anything but a whole number of milliseconds (empty
/// included).
pub fn call_timeout_ms() -> Option<Result<u64, Invalid>> {
    let text = std::env::var_os(CALL_TIMEOUT_MS.name)?;
    let text = text.to_string_lossy();
    Some(text.trim().parse::<u64>().map_err(|_| {
        Invalid::new(format!(
            "{}=`{text}` is not a number of milliseconds",
            CALL_TIMEOUT_MS.name
        ))
    }))
}

/// [`QUERY_THREADS`]: `None` when unset or empty, `Some(Ok(0))` for one per core.
///
/// # Errors
/// [`Invalid`] when set to anything but a whole number.
pub fn query_threads() -> Option<Result<u16, Invalid>> {
    let text = QUERY_THREADS.text()?;
    Some(text.trim().parse::<u16>().map_err(|_| {
        Invalid::new(format!(
            "{}=`{text}` is not a number of threads",
            QUERY_THREADS.name
        ))
    }))
}

/// How [`WATCH`] asks `skills serve` to notice file changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchChoice {
    /// `notify` (also unset or empty): the OS's file events.
    Notify,
    /// `poll`: modification times compared on a timer.
    Poll,
}

/// [`WATCH`]: unset, empty or `notify` → [`WatchChoice::Notify`], `poll` →
/// [`WatchChoice::Poll`].
///
/// # Errors
/// [`Invalid`] for any other value, naming the accepted ones.
pub fn watch() -> Result<WatchChoice, Invalid> {
    match WATCH.text().as_deref() {
        None | Some("notify") => Ok(WatchChoice::Notify),
        Some("poll") => Ok(WatchChoice::Poll),
        Some(other) => Err(Invalid::new(format!(
            "{} `{other}`: expected `notify` (the default) or `poll`",
            WATCH.name
        ))),
    }
}

/// [`KEEP_SECRETS`]: true for `1`, `true`, `yes`; false when unset, empty or `0`,
/// `false`, `no` (any case).
///
/// # Errors
/// [`Invalid`] for any other value, naming the accepted ones.
pub fn keep_secrets() -> Result<bool, Invalid> {
    let Some(text) = KEEP_SECRETS.text() else {
        return Ok(false);
    };
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "" | "0" | "false" | "no" => Ok(false),
        _ => Err(Invalid::new(format!(
            "{} `{text}`: expected `1`, `true` or `yes` (store secrets as written) or `0`, \
             `false` or `no` (redact them before storing, the default)",
            KEEP_SECRETS.name
        ))),
    }
}

/// [`SEARCH_INDEX`]: false only for `off`.
pub fn search_index() -> bool {
    SEARCH_INDEX.text().as_deref() != Some("off")
}

/// [`LOG`]: whether debug lines are asked for.
pub fn debug_log() -> bool {
    std::env::var(LOG.name).is_ok_and(|v| v.contains("debug"))
}

/// [`MODEL_DIR`], when set and not empty.
pub fn model_dir() -> Option<PathBuf> {
    MODEL_DIR.path()
}

/// [`CORPUS_DIR`], when set and not empty (callers fall back to
/// `<source tree>/../shared/corpus`).
pub fn corpus_dir() -> Option<PathBuf> {
    CORPUS_DIR.path()
}

/// [`MACHINE_NAME`], trimmed, when not blank.
pub fn machine_name() -> Option<String> {
    MACHINE_NAME
        .text()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// [`INGEST_PAUSE`], when set and not empty.
pub fn ingest_pause() -> Option<PathBuf> {
    INGEST_PAUSE.path()
}

/// [`EXIT_WITH_PARENT`]: the parent's pid, when set to one.
pub fn exit_with_parent() -> Option<u32> {
    EXIT_WITH_PARENT.text()?.parse().ok()
}

/// The README's environment table: one row per entry of [`ALL`] (variable, for whom,
/// meaning, default, read by). A test fails when README.md does not hold it verbatim.
pub fn readme_table() -> String {
    let mut out = String::from(
        "| Variable | For | Meaning | Default | Read by |\n\
         |---|---|---|---|---|\n",
    );
    for s in ALL {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.name,
            s.audience.label(),
            s.meaning,
            s.default,
            s.read_by
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_own_ones_are_prefixed() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "a variable is listed twice");
        for s in ALL {
            let own = s.name.starts_with("SKILLS_");
            match s.audience {
                Audience::Standard => assert!(!own, "{}: a standard variable", s.name),
                Audience::Build => {}
                _ => assert!(
                    own,
                    "{}: the program's own variables are `SKILLS_…`",
                    s.name
                ),
            }
            assert!(
                !s.meaning.contains('|') && !s.default.contains('|') && !s.read_by.contains('|'),
                "{}: a `|` breaks the README's table",
                s.name
            );
        }
        assert_eq!(find("SKILLS_DATA_DIR").map(|s| s.name), Some(DATA_DIR.name));
        assert!(find("SKILLS_NOPE").is_none());
    }

    #[test]
    fn the_readme_table_is_generated_from_the_settings() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
        )
        .expect("README.md");
        let table = readme_table();
        assert!(
            readme.contains(&table),
            "README.md's environment table is not the generated one; replace it with \
             skills::settings::readme_table() (print it with `cargo test --release --lib \
             settings -- --nocapture`):\n{table}"
        );
    }
}
