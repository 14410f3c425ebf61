//! `skills status`: what is stored and whether it is current — per source the
//! conversations, messages and newest message; the search index and embeddings
//! against the table; the memories; the embedding model; the servers keeping the
//! store current; the paths and sizes. The first thing a bug report should paste.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use skills::background_import::push::PushRecord;
use skills::background_import::{self, ServerRecord};
use skills::embed::Embedder;
use skills::redact::at_store::{Secrets, REDACT_IN_PLACE};
use skills::stores::conversations::{embeddings, index, ConversationStore};
use skills::stores::memories::MemoryStore;
use skills::stores::segments::{
    verify_files, writers_check_crc, ManifestOf, SegmentKind, VerifyError,
};

use super::{Outcome, Printer, Session};

/// The whole report; `skills status --json` prints it as one object:
/// `{"version", "data_dir", "conversations": {…}, "memories": {…}, "model": {…},
/// "servers": [{"pid", "started", "watch": {…}}], "archive": {…} | null}`. Sizes are
/// bytes, times RFC 3339 UTC.
#[derive(Debug, Serialize)]
struct Status {
    version: &'static str,
    data_dir: PathBuf,
    conversations: Conversations,
    memories: Memories,
    model: Model,
    servers: Vec<ServerRecord>,
    /// The team archive: present with `--archive` / `SKILLS_ARCHIVE_URL`, or when a
    /// `skills serve --archive-push` ever pushed from this data folder.
    archive: Option<ArchiveSection>,
}

/// The archive section: what the archive holds (with `--archive`) and how the
/// background pushes went. No field ever holds the password.
#[derive(Debug, Serialize)]
struct ArchiveSection {
    /// The archive read (`--archive`), without its password.
    url: Option<String>,
    /// Its status: schema version, size, per machine and source the messages and the
    /// newest one, this machine's last push and what it has not pushed yet.
    status: Option<skills::archive::status::Status>,
    /// Why the status could not be read (unreachable, no schema…).
    error: Option<String>,
    /// The background pushes of `skills serve --archive-push` from this data folder:
    /// the last push, and the last problem.
    background_push: Option<PushRecord>,
}

/// The conversations store.
#[derive(Debug, Serialize)]
struct Conversations {
    path: PathBuf,
    exists: bool,
    /// The database and its WAL.
    bytes: u64,
    /// Last modification of the database or its WAL (the last import's end).
    last_write: Option<String>,
    conversations: u64,
    messages: u64,
    sources: Vec<Source>,
    index: Derived,
    embeddings: Derived,
    /// Whether secrets were redacted before the text was stored (`redacted`, `kept`,
    /// `not_redacted`); `None` when there is no store or it cannot be read.
    secrets: Option<Secrets>,
    /// Secrets replaced before storing, over the store's life.
    secrets_redacted: u64,
    /// Why the table could not be read, if it could not.
    error: Option<String>,
}

/// One `source` value's rows.
#[derive(Debug, Serialize)]
struct Source {
    source: String,
    /// Files imported (table `ingest_files`).
    files: u64,
    conversations: u64,
    messages: u64,
    /// Newest message time (`created`).
    newest: Option<String>,
}

/// The search index or the embeddings: whether they match the table as it is now.
#[derive(Debug, Serialize)]
struct Derived {
    path: PathBuf,
    /// `current` (published against the store as it is), `stale` (the store changed
    /// since: searches answer from DuckDB, semantic-search says so), `missing` or
    /// `damaged`.
    state: &'static str,
    bytes: u64,
    /// Index: live rows. Embeddings: live units.
    rows: Option<u64>,
    /// Embeddings only: the model that made them.
    model: Option<String>,
    /// `damaged`: why.
    error: Option<String>,
}

/// The memories store.
#[derive(Debug, Serialize)]
struct Memories {
    path: PathBuf,
    exists: bool,
    bytes: u64,
    memories: Option<usize>,
    /// The model memo-search embeds queries with (the second tier when fetched), and
    /// how many memories hold a vector from it (the rest are embedded by the next
    /// `skills ingest`; until then only the keyword legs find them).
    model: Option<String>,
    embedded: Option<usize>,
    /// As [`Conversations::secrets`].
    secrets: Option<Secrets>,
    /// As [`Conversations::secrets_redacted`].
    secrets_redacted: u64,
    error: Option<String>,
}

/// The embedding model.
#[derive(Debug, Serialize)]
struct Model {
    found: bool,
    /// The folder it was loaded from (or would be looked for first).
    dir: Option<PathBuf>,
    /// `<base model>/static-<dim>`.
    name: Option<String>,
    /// The folders looked in, in order.
    searched: Vec<PathBuf>,
    /// Why none was loaded.
    error: Option<String>,
}

/// Prints the status (under `--json` the [`Status`] object). Reads only: the stores
/// are opened read-only (waiting like a search while `skills ingest` writes).
///
/// # Errors
/// No data folder known; stdout cannot be written. A store that cannot be read is
/// reported in the output, not as an error.
pub fn execute(session: &mut Session) -> Result<Outcome> {
    let paths = session.store_paths()?;
    let data_dir = paths
        .conversations
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let archive = archive_section(session, &paths, &data_dir)?;
    let status = Status {
        archive,
        version: env!("CARGO_PKG_VERSION"),
        conversations: conversations(&paths.conversations),
        memories: memories(&paths.memories),
        model: model(),
        servers: background_import::servers(&data_dir),
        data_dir,
    };
    if session.json() {
        session.printer.print_json(&status)?;
    } else {
        print_text(session, &status)?;
    }
    Ok(Outcome::Success)
}

/// The archive section, or `None` when no archive is given and none was pushed to.
///
/// # Errors
/// A bad `--archive` URL (usage error). An archive that cannot be read is reported in
/// the section, not as an error.
fn archive_section(
    session: &Session,
    paths: &skills::stores::StorePaths,
    data_dir: &Path,
) -> Result<Option<ArchiveSection>> {
    let target = session.archive_target()?;
    let background_push = background_import::push::read(data_dir);
    if target.is_none() && background_push.is_none() {
        return Ok(None);
    }
    let mut out = ArchiveSection {
        url: target.as_ref().map(|t| t.shown().to_owned()),
        status: None,
        error: None,
        background_push,
    };
    if let Some(target) = target {
        let read = skills::archive::Archive::open(&target).and_then(|mut archive| {
            let machine = skills::archive::machine::Machine::of_paths(paths)?;
            skills::archive::status::status(&mut archive, paths, &machine)
        });
        match read {
            Ok(s) => out.status = Some(s),
            Err(e) => out.error = Some(target.scrub(e.message())),
        }
    }
    Ok(Some(out))
}

fn conversations(db: &Path) -> Conversations {
    // Stamps first: the derived files are compared with the store as found.
    let index = derived_index(db);
    let embeddings = derived_embeddings(db);
    let mut wal = db.as_os_str().to_owned();
    wal.push(".wal");
    let files = [db.to_path_buf(), PathBuf::from(wal)];
    let bytes = files.iter().map(|f| file_bytes(f)).sum();
    let last_write = files
        .iter()
        .filter_map(|f| fs_err::metadata(f).and_then(|m| m.modified()).ok())
        .max()
        .map(|t| rfc3339(chrono::DateTime::<chrono::Utc>::from(t)));
    let mut out = Conversations {
        path: db.to_path_buf(),
        exists: db.exists(),
        bytes,
        last_write,
        conversations: 0,
        messages: 0,
        sources: Vec::new(),
        index,
        embeddings,
        secrets: None,
        secrets_redacted: 0,
        error: None,
    };
    if !out.exists {
        return out;
    }
    if let Ok(store) = ConversationStore::open_ro(db) {
        out.secrets = store.secrets().ok();
        out.secrets_redacted = store.secrets_redacted().unwrap_or(0);
    }
    match sources(db) {
        Ok(sources) => {
            out.conversations = sources.iter().map(|s| s.conversations).sum();
            out.messages = sources.iter().map(|s| s.messages).sum();
            out.sources = sources;
        }
        Err(e) => out.error = Some(e),
    }
    out
}

/// Per source: conversations, messages, newest time, files imported.
fn sources(db: &Path) -> Result<Vec<Source>, String> {
    let store = ConversationStore::open_ro(db).map_err(|e| e.to_string())?;
    let conn = store.connection().map_err(|e| e.to_string())?;
    let mut stmt = conn
        .prepare(
            "SELECT source, count(DISTINCT conversation_id), count(*),
                    strftime(max(created), '%Y-%m-%dT%H:%M:%SZ')
             FROM all_conversations GROUP BY source ORDER BY source",
        )
        .map_err(|e| store.error(e).to_string())?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Source {
                source: r.get(0)?,
                files: 0,
                conversations: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                messages: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                newest: r.get(3)?,
            })
        })
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| store.error(e).to_string())?;
    let mut rows = rows;
    // Stores written before file tracking have no `ingest_files`: no counts then.
    if let Ok(mut stmt) = conn.prepare("SELECT format, count(*) FROM ingest_files GROUP BY format")
    {
        let files: Vec<(String, i64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(Iterator::collect)
            .unwrap_or_default();
        for (format, n) in files {
            if let Some(row) = rows.iter_mut().find(|s| s.source == format) {
                row.files = u64::try_from(n).unwrap_or(0);
            }
        }
    }
    Ok(rows)
}

fn derived_index(db: &Path) -> Derived {
    let dir = index::dir_of(db);
    let mut out = derived(&dir);
    match index::Manifest::read(&dir) {
        Ok(m) => {
            out.state = if m.holds_for(db) { "current" } else { "stale" };
            out.rows = Some(m.stamp.rows);
            // Every file read and its CRC-32 compared: a flipped byte would otherwise
            // drop rows from searches while this said "current".
            if out.state == "current" {
                if let Some(why) =
                    damage::<index::IndexKind>(&dir, m, ("the search index is", "it"))
                {
                    set_unavailable(&mut out, &why, false);
                }
            }
        }
        Err(e) => set_unavailable(&mut out, &e.to_string(), e == index::Unavailable::Missing),
    }
    out
}

fn derived_embeddings(db: &Path) -> Derived {
    let dir = embeddings::dir_of(db);
    let mut out = derived(&dir);
    match embeddings::Manifest::read(&dir) {
        Ok(m) => {
            out.state = if m.holds_for(db) { "current" } else { "stale" };
            out.rows = Some(m.units);
            out.model = Some(m.kind.model.clone());
            if out.state == "current" {
                if let Some(why) =
                    damage::<embeddings::VectorKind>(&dir, m, ("the embeddings are", "them"))
                {
                    set_unavailable(&mut out, &why, false);
                }
            }
        }
        Err(e) => set_unavailable(&mut out, &e.to_string(), e == index::Unavailable::Missing),
    }
    out
}

/// What is wrong with the files of the set in `dir` whose manifest was read as `m`
/// ([`verify_files`], CRC included), with what to do; `None` when nothing is. A file
/// gone because an ingest published a new manifest meanwhile is checked again
/// against that one.
fn damage<K: SegmentKind>(
    dir: &Path,
    mut m: ManifestOf<K>,
    (what, it): (&str, &str),
) -> Option<String> {
    for _ in 0..3 {
        let why = match verify_files::<K>(dir, &m, true) {
            Ok(()) => return None,
            Err(e @ VerifyError::Gone(_)) => match ManifestOf::<K>::read(dir) {
                Ok(newer) if newer != m => {
                    m = newer;
                    continue;
                }
                _ => e.to_string(),
            },
            Err(e) => e.to_string(),
        };
        let fix = if writers_check_crc(&m) {
            format!("the next `skills ingest` rebuilds {it}")
        } else {
            // Writable opens check only the lengths of a set this large.
            format!(
                "remove `{}`, then `skills ingest` rebuilds {it}",
                dir.display()
            )
        };
        return Some(format!("{what} damaged ({why}); {fix}"));
    }
    Some(format!("{what} changing while it was checked; try again"))
}

fn derived(dir: &Path) -> Derived {
    Derived {
        path: dir.to_path_buf(),
        state: "missing",
        bytes: dir_bytes(dir),
        rows: None,
        model: None,
        error: None,
    }
}

fn set_unavailable(out: &mut Derived, why: &str, missing: bool) {
    if missing {
        out.state = "missing";
    } else {
        out.state = "damaged";
        out.error = Some(why.to_owned());
    }
}

fn memories(path: &Path) -> Memories {
    let mut out = Memories {
        path: path.to_path_buf(),
        exists: path.exists(),
        bytes: file_bytes(path),
        memories: None,
        model: Embedder::name_for_memories().ok(),
        embedded: None,
        secrets: None,
        secrets_redacted: 0,
        error: None,
    };
    if out.exists {
        let store = MemoryStore::open_ro(path);
        match store.as_ref().map_err(ToString::to_string).and_then(|s| {
            let n = s.count().map_err(|e| e.to_string())?;
            let embedded = match &out.model {
                Some(model) => Some(s.count_embedded(model).map_err(|e| e.to_string())?),
                None => None,
            };
            Ok((n, embedded))
        }) {
            Ok((n, embedded)) => {
                out.memories = Some(n);
                out.embedded = embedded;
                if let Ok(store) = &store {
                    out.secrets = store.secrets().ok();
                    out.secrets_redacted = store.secrets_redacted().unwrap_or(0);
                }
            }
            Err(e) => out.error = Some(e),
        }
    }
    out
}

fn model() -> Model {
    let searched = Embedder::search_dirs();
    let dir = Embedder::default_dir();
    match Embedder::default_name() {
        Ok(name) => Model {
            found: true,
            dir,
            name: Some(name),
            searched,
            error: None,
        },
        Err(e) => Model {
            found: false,
            dir,
            name: None,
            searched,
            error: Some(e.to_string()),
        },
    }
}

fn file_bytes(path: &Path) -> u64 {
    fs_err::metadata(path).map_or(0, |m| m.len())
}

fn dir_bytes(dir: &Path) -> u64 {
    skills::walk::files_below(dir, skills::walk::Hidden::Include)
        .files
        .iter()
        .map(|f| file_bytes(f))
        .sum()
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// One store's line about secrets in its text: how many were redacted before storing,
/// or that it holds text as written and how to redact it in place.
fn secrets_line(p: &mut Printer, store: &str, secrets: Option<Secrets>, count: u64) -> Result<()> {
    match secrets {
        None => Ok(()),
        Some(Secrets::Redacted) => p.line(format_args!(
            "  secrets: redacted before storing ({count} replaced)"
        )),
        Some(Secrets::Kept) => p.line(format_args!(
            "  secrets: some {store} were stored with their secrets (`--keep-secrets`), so search can find them — `{REDACT_IN_PLACE}` redacts them in place"
        )),
        Some(Secrets::NotRedacted) => p.line(format_args!(
            "  secrets: these {store} were imported before secrets were redacted at store; their text holds them as written and search can find them — `{REDACT_IN_PLACE}` redacts them in place"
        )),
    }
}

fn print_text(session: &mut Session, s: &Status) -> Result<()> {
    let p = &mut session.printer;
    p.line(format_args!(
        "skills {} — data folder `{}`",
        s.version,
        s.data_dir.display()
    ))?;
    let c = &s.conversations;
    if c.exists {
        p.line(format_args!(
            "conversations: `{}` ({}), last written {}",
            c.path.display(),
            mb(c.bytes),
            c.last_write.as_deref().unwrap_or("?")
        ))?;
    } else {
        p.line(format_args!(
            "conversations: `{}` does not exist yet: run `skills ingest` or `skills serve`",
            c.path.display()
        ))?;
    }
    if let Some(e) = &c.error {
        p.line(format_args!("  cannot read the table: {e}"))?;
    }
    for src in &c.sources {
        p.line(format_args!(
            "  {:<14} {:>8} conversations {:>10} messages {:>7} files  newest {}",
            src.source,
            src.conversations,
            src.messages,
            src.files,
            src.newest.as_deref().unwrap_or("-")
        ))?;
    }
    if c.sources.len() > 1 {
        p.line(format_args!(
            "  {:<14} {:>8} conversations {:>10} messages",
            "total", c.conversations, c.messages
        ))?;
    }
    if c.exists {
        secrets_line(p, "conversations", c.secrets, c.secrets_redacted)?;
    }
    if c.exists {
        for (what, d) in [("search index", &c.index), ("embeddings", &c.embeddings)] {
            let mut line = format!("{what}: {}", d.state);
            if let Some(rows) = d.rows {
                let unit = if what == "embeddings" {
                    "units"
                } else {
                    "rows"
                };
                line.push_str(&format!(", {rows} {unit}"));
            }
            if let Some(model) = &d.model {
                line.push_str(&format!(" by `{model}`"));
            }
            line.push_str(&format!(" ({})", mb(d.bytes)));
            if let Some(e) = &d.error {
                line.push_str(&format!(": {e}"));
            }
            match d.state {
                "stale" | "missing" if what == "embeddings" && !s.model.found => {
                    line.push_str(" — no model to make them (see `model:` below)");
                }
                "stale" | "missing" => {
                    line.push_str(" — the next `skills ingest` brings it up to date")
                }
                "damaged" => line.push_str(" — the next `skills ingest` rebuilds it"),
                _ => {}
            }
            p.line(line)?;
        }
    }
    let m = &s.memories;
    match (m.exists, m.memories, &m.error) {
        (false, _, _) => p.line(format_args!(
            "memories: `{}` does not exist yet",
            m.path.display()
        ))?,
        (true, Some(n), _) => {
            let vectors = match (&m.model, m.embedded) {
                (Some(model), Some(e)) => format!(", {e} with vectors from `{model}`"),
                _ => String::new(),
            };
            p.line(format_args!(
                "memories: `{}` ({}), {n} memories{vectors}",
                m.path.display(),
                mb(m.bytes)
            ))?
        }
        (true, None, e) => p.line(format_args!(
            "memories: `{}`: {}",
            m.path.display(),
            e.as_deref().unwrap_or("cannot be read")
        ))?,
    }
    if m.exists {
        secrets_line(p, "memories", m.secrets, m.secrets_redacted)?;
    }
    let model = &s.model;
    match (&model.name, &model.dir) {
        (Some(name), Some(dir)) => {
            p.line(format_args!("model: `{name}` in `{}`", dir.display()))?
        }
        _ => {
            let searched: Vec<String> = model
                .searched
                .iter()
                .map(|d| format!("`{}`", d.display()))
                .collect();
            p.line(format_args!(
                "model: none ({}); looked in {}",
                model.error.as_deref().unwrap_or("not found"),
                searched.join(", ")
            ))?;
        }
    }
    if s.servers.is_empty() {
        p.line("servers: none keeping this store current (`skills serve` does while it runs)")?;
    }
    for server in &s.servers {
        let w = &server.watch;
        let how = match w.mode {
            Some(background_import::Mode::Notify) => "file events",
            Some(background_import::Mode::Poll) => "polling",
            None => "starting",
        };
        p.line(format_args!(
            "server pid {} since {}: watching {} paths ({how}), {} imports, {} new messages, last {}{}",
            server.pid,
            server.started,
            w.paths.len(),
            w.runs,
            w.messages_added,
            w.last_run.as_deref().unwrap_or("-"),
            w.last_problem
                .as_deref()
                .map(|e| format!("; last problem: {e}"))
                .unwrap_or_default()
        ))?;
    }
    if let Some(a) = &s.archive {
        archive_text(p, a)?;
    }
    Ok(())
}

/// The archive section as text.
fn archive_text(p: &mut Printer, a: &ArchiveSection) -> Result<()> {
    match (&a.status, &a.error, &a.url) {
        (Some(st), _, _) => p.line(super::archive::status_text(st))?,
        (None, Some(e), _) => p.line(format_args!("archive: cannot be read: {e}"))?,
        (None, None, _) => {}
    }
    if let Some(b) = &a.background_push {
        let last = match &b.last_success {
            Some(t) => format!("last push {t} ({} messages sent)", b.last_messages_sent),
            None => "no push completed yet".to_owned(),
        };
        let problem = match (&b.last_problem, &b.last_problem_at) {
            (Some(why), at) if b.failing => format!(
                "; FAILING since {}: {why}; next try {}",
                at.as_deref().unwrap_or("?"),
                b.next_retry.as_deref().unwrap_or("?")
            ),
            (Some(why), at) => format!("; last problem {}: {why}", at.as_deref().unwrap_or("?")),
            (None, _) => String::new(),
        };
        p.line(format_args!(
            "background push (skills serve --archive-push) to {}: {last}; {} tried, {} \
             failed{problem}",
            b.archive, b.attempts, b.failures
        ))?;
    }
    Ok(())
}
