//! `skills setup`: wiring `skills serve` into MCP clients. Owns the table of clients
//! ([`clients`]: where each keeps its config, in which format, under which key), the
//! two editors that change one server entry while keeping everything else of a file —
//! comments, unknown keys, order — ([`json`] for JSON/JSONC, [`toml`] for TOML), and
//! the plan → write steps: [`plan`] computes the new text and what changes, [`apply`]
//! backs the old file up and replaces it atomically, [`inspect`] reports an entry's
//! state for the listing. Knows nothing of the CLI, the stores or the skills.
//!
//! The entry is named [`ENTRY_NAME`] and runs `<command> serve`. Writing the same entry
//! twice changes nothing (the file is not touched); an entry whose fields differ is
//! updated field by field, so fields people added to it (`env`, timeouts, tool
//! approvals) stay; removing it leaves the server map in place, even when empty.

mod clients;
mod json;
mod toml;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

pub use clients::{
    find, readme_table, Client, ConfigFile, EntryShape, Environment, Format, Marker, Root, CLIENTS,
};

/// The name of the server entry written into every client's config.
pub const ENTRY_NAME: &str = "skills";

/// The arguments after the binary's path in the entry.
pub const SERVE_ARGS: &[&str] = &["serve"];

/// Which of a client's config files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The user-level file (every project).
    User,
    /// The project-level file in the current folder.
    Project,
}

/// What a [`Plan`] does to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Adds the entry (creating the file when it does not exist).
    Added,
    /// Changes the fields of an entry that differed.
    Updated,
    /// Removes the entry.
    Removed,
    /// Nothing: the entry is current (or, removing, absent).
    Unchanged,
}

/// The state of the entry in one config file, for the listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// The file does not exist.
    NoFile,
    /// The file has no `skills` entry.
    Missing,
    /// The entry runs this command.
    Current,
    /// The entry exists but differs (another binary path, another shape).
    Outdated,
    /// The file cannot be read or is not of the expected shape (see the error).
    Invalid,
}

/// Why a config file cannot be changed. The file is never touched when one is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The existing file does not parse as its client's format.
    #[error("`{}` is not valid {format}: {reason}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// `JSON` or `TOML`.
        format: &'static str,
        /// The parser's message (with line and column).
        reason: String,
    },
    /// A key on the way to the entry (or the entry itself) holds the wrong kind of
    /// value, e.g. `"mcpServers": []`.
    #[error("`{}`: {at} is {found}, expected {expected}", .path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// Where: `` `mcpServers` ``, `the top level`.
        at: String,
        /// What was expected there (`an object`, `a table`).
        expected: &'static str,
        /// What was found (`an array`, `a string`).
        found: &'static str,
    },
    /// `--project` for a client that reads no project-level file.
    #[error("{title} has no project-level config file; `skills setup {client}` writes its user-level one")]
    NoProjectFile {
        /// The client's name.
        client: &'static str,
        /// The client's product name.
        title: &'static str,
    },
    /// The client's config folder depends on a home or configuration folder that is
    /// not known.
    #[error("no home folder known to find {title}'s config in: set `HOME`")]
    NoHome {
        /// The client's product name.
        title: &'static str,
    },
    /// The file is not UTF-8 text.
    #[error("`{}` is not UTF-8 text", .path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// The file changed between reading and writing (another program wrote it).
    #[error("`{}` changed while it was being edited; nothing was written", .path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The file is read-only (no write permission bit) and `--force` was not given.
    #[error("`{}` is read-only (mode {mode:o}); nothing was written", .path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// With `--project`, the config path leads out of the project folder (a symlinked
    /// file or folder).
    #[error("`{}` resolves to `{}`, outside the project folder `{}`; nothing was written", .path.display(), .resolved.display(), .project.display())]
    OutsideProject {
        /// The path in the project.
        path: PathBuf,
        /// Where it points.
        resolved: PathBuf,
        /// The project folder (resolved).
        project: PathBuf,
    },
    /// Reading, backing up or writing failed (the message names the file).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What a format editor reports about a text it cannot edit; [`SetupError`] adds the
/// file.
#[derive(Debug)]
pub(crate) enum FormatError {
    /// Not valid JSON(C) / TOML: the parser's message.
    Parse(String),
    /// A value of the wrong kind on the way to the entry.
    Shape {
        at: String,
        expected: &'static str,
        found: &'static str,
    },
}

impl FormatError {
    fn at(self, path: &Path, format: Format) -> SetupError {
        match self {
            FormatError::Parse(reason) => SetupError::Parse {
                path: path.to_path_buf(),
                format: format.label(),
                reason,
            },
            FormatError::Shape {
                at,
                expected,
                found,
            } => SetupError::Shape {
                path: path.to_path_buf(),
                at,
                expected,
                found,
            },
        }
    }
}

fn read_entry(format: Format, text: &str, key: &[&str]) -> Result<Option<Value>, FormatError> {
    match format {
        Format::Json => json::entry(text, key, ENTRY_NAME),
        Format::Toml => toml::entry(text, key, ENTRY_NAME),
    }
}

fn set_entry(
    format: Format,
    text: &str,
    key: &[&str],
    fields: &Map<String, Value>,
) -> Result<String, FormatError> {
    match format {
        Format::Json => json::set(text, key, ENTRY_NAME, fields),
        Format::Toml => toml::set(text, key, ENTRY_NAME, fields),
    }
}

fn remove_entry(format: Format, text: &str, key: &[&str]) -> Result<String, FormatError> {
    match format {
        Format::Json => json::remove(text, key, ENTRY_NAME),
        Format::Toml => toml::remove(text, key, ENTRY_NAME),
    }
}

/// Whether `entry` holds every field of `fields` with the same value.
fn is_current(entry: &Value, fields: &Map<String, Value>) -> bool {
    entry
        .as_object()
        .is_some_and(|have| fields.iter().all(|(k, v)| have.get(k) == Some(v)))
}

/// One computed change to one config file; nothing is written until [`apply`].
#[derive(Debug, Clone)]
pub struct Plan {
    /// The client.
    pub client: &'static Client,
    /// Which of its files.
    pub scope: Scope,
    /// The file.
    pub path: PathBuf,
    /// Its text now; `None` when it does not exist.
    pub before: Option<String>,
    /// Its text after the change (equal to `before` when nothing changes).
    pub after: String,
    /// What the change does.
    pub change: Change,
}

impl Plan {
    /// Whether the file would change.
    pub fn changed(&self) -> bool {
        self.change != Change::Unchanged
    }

    /// A unified diff of the change (3 lines of context; `/dev/null` for a new file);
    /// empty when nothing changes.
    pub fn diff(&self) -> String {
        if !self.changed() {
            return String::new();
        }
        let path = self.path.display().to_string();
        let old = if self.before.is_some() {
            path.as_str()
        } else {
            "/dev/null"
        };
        similar::TextDiff::from_lines(self.before.as_deref().unwrap_or(""), &self.after)
            .unified_diff()
            .context_radius(3)
            .header(old, &path)
            .to_string()
    }
}

/// The file of `client` for `scope` in `env`.
///
/// # Errors
/// [`SetupError::NoProjectFile`], [`SetupError::NoHome`].
pub fn config_path(
    client: &Client,
    scope: Scope,
    env: &Environment,
) -> Result<PathBuf, SetupError> {
    let file = match scope {
        Scope::User => client.user,
        Scope::Project => client.project.ok_or(SetupError::NoProjectFile {
            client: client.name,
            title: client.title,
        })?,
    };
    env.file(&file).ok_or(SetupError::NoHome {
        title: client.title,
    })
}

/// Plans adding (or, with `remove`, removing) the entry that runs `command serve` in
/// `client`'s config file for `scope`. Reads the file; writes nothing.
///
/// # Errors
/// [`SetupError::Parse`] or [`SetupError::Shape`] when the existing file cannot be
/// edited; [`SetupError::NotText`], [`SetupError::Io`] when it cannot be read; those of
/// [`config_path`].
pub fn plan(
    client: &'static Client,
    scope: Scope,
    env: &Environment,
    command: &str,
    remove: bool,
) -> Result<Plan, SetupError> {
    let path = config_path(client, scope, env)?;
    if scope == Scope::Project {
        inside_project(&path, &env.project)?;
    }
    let before = read_text(&path)?;
    let (bom, body) = split_bom(before.as_deref().unwrap_or(""));
    let fields = client.entry.fields(command, SERVE_ARGS);
    let existing =
        read_entry(client.format, body, client.key).map_err(|e| e.at(&path, client.format))?;
    let change = match (remove, &existing) {
        (true, Some(_)) => Change::Removed,
        (false, None) => Change::Added,
        (false, Some(entry)) if !is_current(entry, &fields) => Change::Updated,
        _ => Change::Unchanged,
    };
    let after = match change {
        Change::Unchanged => Ok(before.clone().unwrap_or_default()),
        Change::Removed => remove_entry(client.format, body, client.key),
        Change::Added | Change::Updated => set_entry(client.format, body, client.key, &fields),
    }
    .map_err(|e| e.at(&path, client.format))?;
    let mut after = if change == Change::Unchanged {
        after
    } else {
        format!("{bom}{after}")
    };
    if before.is_none() && change == Change::Added && !after.ends_with('\n') {
        after.push('\n');
    }
    Ok(Plan {
        client,
        scope,
        path,
        before,
        after,
        change,
    })
}

/// Writes a changed [`Plan`]: the old file is copied to a backup first (see
/// [`backup_path`]), then the new text replaces it atomically (a temporary file in the
/// same folder, renamed over it). The backup and the temporary file are created with
/// the old file's permission bits from their first byte (a new file: `0600`), so a
/// private config is never readable by others, not even briefly. A symlinked config is
/// written through the link. Missing folders are created. An unchanged plan writes
/// nothing. Returns the backup's path (`None` when the file is new or unchanged).
///
/// # Errors
/// [`SetupError::ReadOnly`] when the file has no write permission and `force` is
/// false; [`SetupError::Changed`] when the file is no longer what [`plan`] read;
/// [`SetupError::OutsideProject`] when a project file now leads outside the project;
/// [`SetupError::Io`] naming the file when a read or write fails.
pub fn apply(plan: &Plan, env: &Environment, force: bool) -> Result<Option<PathBuf>, SetupError> {
    if !plan.changed() {
        return Ok(None);
    }
    if plan.scope == Scope::Project {
        inside_project(&plan.path, &env.project)?;
    }
    let target = write_target(&plan.path)?;
    if read_text(&target)? != plan.before {
        return Err(SetupError::Changed { path: target });
    }
    let mode = file_mode(&target);
    if let Some(mode) = mode {
        if mode & 0o222 == 0 && !force {
            return Err(SetupError::ReadOnly { path: target, mode });
        }
    }
    if let Some(dir) = target.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let mode = mode.unwrap_or(PRIVATE_MODE);
    let backup = match &plan.before {
        Some(before) => Some(backup(&target, before, mode)?),
        None => None,
    };
    write_atomic(&target, plan.after.as_bytes(), mode)?;
    Ok(backup)
}

/// The permission bits of a new config file, and of backups when a file's own cannot
/// be read: owner read and write only.
pub const PRIVATE_MODE: u32 = 0o600;

/// The permission bits of `path` (`None` when it does not exist or is not on Unix).
fn file_mode(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Opens a new file `path` (never an existing one or a link) with permission bits
/// `mode` from its creation, then sets them exactly (the umask can only have narrowed
/// them).
fn create_private(path: &Path, mode: u32) -> std::io::Result<fs_err::File> {
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode & 0o777);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    Ok(file)
}

/// `Ok` when `path` (following symlinks of the file and its folders, as far as they
/// exist) stays inside `project`.
fn inside_project(path: &Path, project: &Path) -> Result<(), SetupError> {
    let project = fs_err::canonicalize(project)?;
    let resolved = resolve(path, 0);
    if resolved.starts_with(&project) {
        Ok(())
    } else {
        Err(SetupError::OutsideProject {
            path: path.to_path_buf(),
            resolved,
            project,
        })
    }
}

/// `path` with every symlink resolved, as far as its parts exist (a missing tail is
/// kept as written, a dangling link is followed to where it points).
fn resolve(path: &Path, depth: u32) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return path.to_path_buf();
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let parent = resolve(parent, depth + 1);
    let joined = parent.join(name);
    match std::fs::read_link(&joined) {
        Ok(target) if depth < 40 => resolve(&parent.join(target), depth + 1),
        _ => joined,
    }
}

/// The state of the entry in one file of a client, for the listing.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    /// The file (`None` when no home folder is known).
    pub path: Option<PathBuf>,
    /// The entry's state.
    pub state: State,
    /// Why the state is [`State::Invalid`].
    pub error: Option<String>,
}

/// Inspects `client`'s file for `scope`: whether it exists and holds a current entry
/// running `command serve`. Reads only; a file that cannot be read is reported as
/// [`State::Invalid`] with the reason.
pub fn inspect(client: &Client, scope: Scope, env: &Environment, command: &str) -> Inspection {
    let invalid = |path: Option<PathBuf>, error: SetupError| Inspection {
        path,
        state: State::Invalid,
        error: Some(error.to_string()),
    };
    let path = match config_path(client, scope, env) {
        Ok(path) => path,
        Err(e) => return invalid(None, e),
    };
    let text = match read_text(&path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Inspection {
                path: Some(path),
                state: State::NoFile,
                error: None,
            }
        }
        Err(e) => return invalid(Some(path), e),
    };
    let fields = client.entry.fields(command, SERVE_ARGS);
    match read_entry(client.format, split_bom(&text).1, client.key) {
        Ok(entry) => Inspection {
            path: Some(path),
            state: match entry {
                None => State::Missing,
                Some(entry) if is_current(&entry, &fields) => State::Current,
                Some(_) => State::Outdated,
            },
            error: None,
        },
        Err(e) => {
            let error = e.at(&path, client.format);
            invalid(Some(path), error)
        }
    }
}

/// The text of `path`; `None` when it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, SetupError> {
    match fs_err::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| SetupError::NotText {
                path: path.to_path_buf(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A leading byte order mark and the rest of `text`.
fn split_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    }
}

/// The file to write for `path`: the file a symlink points to, else `path`.
fn write_target(path: &Path) -> Result<PathBuf, SetupError> {
    match fs_err::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Ok(fs_err::canonicalize(path)?),
        _ => Ok(path.to_path_buf()),
    }
}

/// Where the backup of `path` goes: `<file>.skills-backup`, else the first free
/// `<file>.skills-backup.N` (N from 1), so no backup is ever overwritten.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".skills-backup");
    let first = PathBuf::from(&name);
    if !first.exists() {
        return first;
    }
    (1u32..)
        .map(|n| {
            let mut numbered = name.clone();
            numbered.push(format!(".{n}"));
            PathBuf::from(numbered)
        })
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Copies `text` (the file's content) to a new [`backup_path`] created with
/// permission bits `mode`.
fn backup(path: &Path, text: &str, mode: u32) -> Result<PathBuf, SetupError> {
    let to = backup_path(path);
    let mut file = create_private(&to, mode)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    Ok(to)
}

/// Replaces `path` with `bytes` through a temporary file in the same folder, created
/// with permission bits `mode`.
fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), SetupError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "config".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.skills-tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let result = (|| -> std::io::Result<()> {
        let mut file = create_private(&tmp, mode)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs_err::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(result?)
}
