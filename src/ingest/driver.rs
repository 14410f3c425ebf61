//! The ingest driver: walks the given paths, skips files unchanged since the last
//! run, parses the rest with the importers (resuming grown append-only files) and
//! stores them in batched transactions, summing up what happened per file and per
//! source ([`IngestSummary`]).
//!
//! Kept in one file: the walk, the batching and the retry rules are one state machine around one store transaction.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::{detect, has_ext, import_from, walk, Cursor, Fault, Format, IngestError, Message};
use crate::stores::conversations::{
    ConversationStore, FileBatch, FileState, InsertCounts, Previous,
};
use crate::stores::StoreError;

/// What happened to one file, passed to the `on_file` callback of [`ingest_paths`].
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct FileSummary {
    /// The file (serialised lossily when not UTF-8).
    #[serde(serialize_with = "super::lossy_path")]
    pub path: PathBuf,
    /// Its detected format, `None` when unrecognised or unreadable.
    pub format: Option<Format>,
    /// Messages parsed from it.
    pub parsed: usize,
    /// Of those, messages new to the store.
    pub added: usize,
    /// Of the parsed messages, user messages set aside as injected by a harness
    /// (0 with [`IngestOptions::keep_injected`]).
    pub injected: usize,
    /// Records skipped as not messages (tool calls, snapshots, system…).
    pub skipped: usize,
    /// Secrets replaced before storing (only with [`IngestOptions::redact`]).
    pub redacted: usize,
    /// Faults found in it (malformed lines, dangling references, or one fault for a
    /// file that could not be imported at all).
    pub faults: usize,
    /// 1 when it ended in a line a writer had not finished (left for the next import,
    /// not a fault), else 0.
    pub unfinished: usize,
    /// Bytes the JSON Lines reader read from it ([`super::FileImport::jsonl_bytes_read`]).
    pub jsonl_bytes_read: u64,
    /// False when the file could not be imported or stored at all.
    pub imported: bool,
    /// True when the file had not changed since the last import and was not read.
    pub unchanged: bool,
    /// True when only the lines appended since the last import were read.
    pub resumed: bool,
}

/// Per-source totals of an [`IngestSummary`].
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceCounts {
    /// Files of this source imported.
    pub files: usize,
    /// Messages parsed.
    pub parsed: usize,
    /// Messages new to the store.
    pub added: usize,
    /// Parsed user messages set aside as injected.
    pub injected: usize,
    /// Records skipped as not messages.
    pub skipped: usize,
}

/// Totals of one [`ingest_paths`] run. Serialises to
/// `{"files_seen", "files_imported", "files_unchanged", "files_resumed",
/// "files_reimported", "files_ignored", "messages_parsed", "messages_added", "messages_injected", "skipped", "secrets_redacted", "faults": [{"path", "line", "reason"}], "lines_unfinished", "jsonl_bytes_read",
/// "sources": {"<source>": {"files", "parsed", "added", "injected", "skipped"}}}`.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct IngestSummary {
    /// Files considered: every file path given explicitly, plus files of a
    /// recognised format found in given directories.
    pub files_seen: usize,
    /// Files parsed and stored (possibly with per-record faults).
    pub files_imported: usize,
    /// Files not read because their size and modification time are those of the last
    /// import (not counted in `files_imported`).
    pub files_unchanged: usize,
    /// Of `files_imported`, append-only files read only from where the last import
    /// stopped.
    pub files_resumed: usize,
    /// Files imported again because a rewritten file replaced conversations they had
    /// contributed to (e.g. other OpenCode message files of a session, or the same
    /// session under a second folder); also counted in `files_seen`/`files_imported`.
    pub files_reimported: usize,
    /// Files found in given directories whose format was not recognised (ignored
    /// silently, e.g. `README.md` next to sessions).
    pub files_ignored: usize,
    /// Messages parsed from all files.
    pub messages_parsed: usize,
    /// Messages new to the store (parsed minus already stored).
    pub messages_added: usize,
    /// Parsed user messages set aside as injected harness text (stored with
    /// `is_injected`, left out of user-role search).
    pub messages_injected: usize,
    /// Records skipped as not messages.
    pub skipped: usize,
    /// Secrets replaced before storing ([`IngestOptions::redact`]: `skills ingest`'s
    /// default; 0 with `--keep-secrets`).
    pub secrets_redacted: usize,
    /// Every fault, in file order.
    pub faults: Vec<Fault>,
    /// Files that ended in a line a writer had not finished (a session being written):
    /// that line is read by the next import and is not a fault.
    pub lines_unfinished: usize,
    /// Bytes of JSON Lines files read: from where the last import stopped for grown
    /// append-only files, and of a last line still being written only what was
    /// appended since the last import scanned it.
    pub jsonl_bytes_read: u64,
    /// Totals per `source` value (`claude-code`, `chatgpt`…), sorted by name.
    pub sources: std::collections::BTreeMap<String, SourceCounts>,
}

impl std::fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} of {} files imported: {} messages parsed, {} new, {} injected set aside, {} records skipped, {} faults",
            self.files_imported,
            self.files_seen,
            self.messages_parsed,
            self.messages_added,
            self.messages_injected,
            self.skipped,
            self.faults.len()
        )?;
        for (source, c) in &self.sources {
            writeln!(
                f,
                "  {source}: {} files, {} messages parsed, {} new, {} injected, {} skipped",
                c.files, c.parsed, c.added, c.injected, c.skipped
            )?;
        }
        if self.files_unchanged > 0 || self.files_resumed > 0 {
            writeln!(
                f,
                "  {} files unchanged since the last import, {} read from where it stopped",
                self.files_unchanged, self.files_resumed
            )?;
        }
        if self.lines_unfinished > 0 {
            writeln!(
                f,
                "  {} files end in a line still being written, left for the next import",
                self.lines_unfinished
            )?;
        }
        if self.secrets_redacted > 0 {
            writeln!(
                f,
                "  {} secrets redacted before storing",
                self.secrets_redacted
            )?;
        }
        if self.files_reimported > 0 {
            writeln!(
                f,
                "  {} files imported again: a rewritten file replaced conversations they shared",
                self.files_reimported
            )?;
        }
        if self.files_ignored > 0 {
            writeln!(
                f,
                "  {} files of unknown format ignored",
                self.files_ignored
            )?;
        }
        for fault in &self.faults {
            writeln!(f, "  fault: {fault}")?;
        }
        Ok(())
    }
}

impl IngestSummary {
    /// True when every file seen was imported (or unchanged) and no record was malformed.
    pub fn is_clean(&self) -> bool {
        self.faults.is_empty() && self.files_imported + self.files_unchanged == self.files_seen
    }
}

/// Options of [`ingest_paths_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct IngestOptions<'a> {
    /// Store injected harness text as ordinary messages (`is_injected` false) instead
    /// of setting it aside (`skills ingest --keep-injected`).
    pub keep_injected: bool,
    /// Replace secrets in message text and titles with `[REDACTED:<detector>]` before
    /// storing ([`crate::redact::at_store`]): what `skills ingest` does unless
    /// `--keep-secrets`. Without it the store keeps text as written (and is marked so
    /// for `skills status`), and only skills' output is redacted.
    pub redact: bool,
    /// The key of id markers ([`crate::redact::ids`]): with [`IngestOptions::redact`],
    /// secrets in a message's project, conversation id, message id, parent id, model
    /// and source are replaced with keyed markers. [`ingest_paths_with`] sets it from
    /// the store's data folder when `None`.
    pub id_key: Option<&'a crate::redact::ids::IdKey>,
    /// Test hook (`$SKILLS_INGEST_PAUSE`, read by `skills ingest`): store the first
    /// file alone as the first batch, then write this file; parsing stops until it is
    /// removed, as it would on a huge file (the store lets go of its database file
    /// meanwhile, see [`ingest_paths_with`]). A test kills the import at that known
    /// point (one file committed, the rest not), or calls a tool during it, instead of
    /// racing a timer. `None` in every real run.
    pub pause_at: Option<&'a Path>,
}

/// [`ingest_paths_with`] with default [`IngestOptions`].
pub fn ingest_paths(
    store: &ConversationStore,
    paths: &[PathBuf],
    on_file: &mut dyn FnMut(&Path, &FileSummary),
) -> IngestSummary {
    ingest_paths_with(store, paths, IngestOptions::default(), on_file)
}

/// Files are stored in batches (one DuckDB transaction each) of up to this many parsed
/// messages (about one DuckDB row group, which DuckDB then writes straight to the
/// file instead of its WAL)…
const BATCH_MESSAGES: usize = 125_000;
/// …or this many files…
const BATCH_FILES: usize = 10_000;
/// …or this age, whichever comes first: an interrupted run loses at most a few
/// seconds of work, and the progress display moves at least that often.
const BATCH_TIME: std::time::Duration = std::time::Duration::from_secs(10);
/// When the parser has sent nothing for this long (a long file, e.g. one 300 MB line),
/// the files parsed so far are stored and the store lets go of its database file
/// until the next file is ready: readers (`skills serve`'s tool calls) wait at most
/// about this plus one batch's write, not the whole run.
const RELEASE_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// Imports `paths` into `store`: each path is a file, or a directory walked recursively
/// (files of unrecognised format inside directories are ignored, except a `.jsonl`
/// file whose first record is too long for its format to be told; an explicitly given
/// file of unknown format is a fault). A file reached twice (given twice, or inside two
/// given directories) is imported once. `on_file` is called once per file seen, after
/// it was stored, in walk order (sorted by path); use it for progress.
///
/// Incremental: the store remembers per file (by canonical path) its size, modification
/// time and, for append-only formats, the byte offset of the last complete line read
/// (table `ingest_files`). A file with the same size and time is not opened at all
/// (counted in [`IngestSummary::files_unchanged`]); an append-only file that grew, with
/// the same bytes before that offset, is read from the offset on; any other change is
/// a rewrite: the file's conversations are replaced by its new content (other files
/// that shared them are imported again in the same run), while conversations it no
/// longer holds keep their rows. An append-only file that now holds fewer messages
/// than were imported from it is a fault (it looks truncated) and is left as stored.
///
/// Atomicity: files are stored in batches (up to 125,000 messages, 10,000 files or 10 s
/// of parsing) of one transaction each, a file's rows always together with its state.
/// When a batch fails, its files are stored again one transaction each, so a failure
/// loses at most the failing file, whose previous state is left as it was.
///
/// Readers: parsing runs on its own thread. While it sends nothing for
/// 250 ms (a long file), what is parsed is stored and the store's database
/// file let go ([`ConversationStore::release`]) until the next file is ready, so a
/// reader waits for one batch's write, never for a long file's parsing.
///
/// Never fails as a whole: unreadable paths, unparsable files and store errors become
/// [`Fault`]s in the returned summary.
pub fn ingest_paths_with(
    store: &ConversationStore,
    paths: &[PathBuf],
    options: IngestOptions<'_>,
    on_file: &mut dyn FnMut(&Path, &FileSummary),
) -> IngestSummary {
    let mut summary = IngestSummary::default();
    // Secrets in ids are replaced by markers keyed per data folder: without the key
    // nothing can be stored redacted, so nothing is imported.
    let key = match (options.redact, options.id_key) {
        (true, None) => match crate::redact::ids::IdKey::of_store(store.path()) {
            Ok(key) => Some(key),
            Err(e) => {
                let fault = IngestError::Io(e).to_fault(store.path());
                summary.faults.push(fault);
                return summary;
            }
        },
        _ => None,
    };
    let options = IngestOptions {
        id_key: options.id_key.or(key.as_deref()),
        ..options
    };
    let states = match store.file_states() {
        Ok(states) => states,
        Err(e) => {
            let fault = IngestError::Store(e).to_fault(store.path());
            summary.faults.push(fault);
            HashMap::new()
        }
    };
    // One thread walks and parses, this one stores: parsing overlaps the store's work.
    // The parser may run a whole batch ahead, so it keeps going while a batch commits.
    let (sender, steps) = std::sync::mpsc::sync_channel::<Step>(BATCH_FILES);
    // The test hook: the storer says when the first file is stored.
    let (paused, first_stored) = std::sync::mpsc::channel::<()>();
    let mut storer = Storer {
        store,
        options,
        summary,
        batch: Batch::default(),
        reimported: HashSet::new(),
        unchanged: HashSet::new(),
        paused: options.pause_at.map(|_| paused),
    };
    std::thread::scope(|scope| {
        let states = &states;
        let parser = Parser {
            states,
            options,
            steps: sender,
            first_stored,
        };
        scope.spawn(move || parser.walk_and_parse(paths));
        loop {
            let step = match steps.recv_timeout(RELEASE_AFTER) {
                Ok(step) => step,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    // A long file: store what is parsed, let readers in meanwhile.
                    storer.flush(on_file);
                    store.release();
                    match steps.recv() {
                        Ok(step) => step,
                        Err(_) => break,
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            storer.take(step, on_file);
        }
    });
    storer.flush(on_file);
    // What `skills status` reads: whether the store holds secrets as written, and
    // how many were replaced.
    let recorded = if options.redact {
        store.count_secrets_redacted(storer.summary.secrets_redacted)
    } else if storer.summary.messages_added > 0 {
        store.mark_secrets_kept()
    } else {
        Ok(())
    };
    if let Err(e) = recorded {
        let fault = IngestError::Store(e).to_fault(store.path());
        storer.summary.faults.push(fault);
    }
    storer.summary
}

/// The storing side of [`ingest_paths_with`]: batches what the parsing thread sends,
/// stores it, and imports again the files whose conversations a rewritten file took
/// along ([`StoredBatch::forgotten`](crate::stores::conversations::StoredBatch::forgotten)).
struct Storer<'a> {
    store: &'a ConversationStore,
    options: IngestOptions<'a>,
    summary: IngestSummary,
    batch: Batch,
    /// State keys of the files imported again in this run: the walk's later news
    /// about them is stale (read before they were re-imported) and is dropped.
    reimported: HashSet<String>,
    /// State keys of the files counted as unchanged in this run: one imported again
    /// afterwards is counted as imported instead.
    unchanged: HashSet<String>,
    /// With [`IngestOptions::pause_at`], until the first file is stored: how to tell
    /// the parser so.
    paused: Option<std::sync::mpsc::Sender<()>>,
}

impl Storer<'_> {
    fn take(&mut self, step: Step, on_file: &mut dyn FnMut(&Path, &FileSummary)) {
        match step {
            Step::Unchanged { summary, key } => {
                if self.reimported.contains(&key) {
                    return;
                }
                self.summary.files_seen += 1;
                self.summary.files_unchanged += 1;
                self.unchanged.insert(key);
                self.batch.push(Entry::Done(summary), Vec::new());
            }
            Step::Ignored => self.summary.files_ignored += 1,
            Step::Parquet { file, stat, known } => {
                if stat
                    .as_ref()
                    .is_some_and(|s| self.reimported.contains(&s.key))
                {
                    return;
                }
                self.flush(on_file);
                let (fs, forgotten) = ingest_parquet(
                    self.store,
                    &file,
                    stat,
                    known,
                    self.options,
                    &mut self.summary,
                );
                on_file(&file, &fs);
                self.reimport(forgotten, on_file);
                self.flush(on_file);
            }
            Step::File { entry, faults, key } => {
                // (Dropped unused, it lets the parser go on.)
                let pause = self.paused.take();
                if key.as_ref().is_some_and(|k| self.reimported.contains(k)) {
                    return;
                }
                self.add(entry, faults);
                if pause.is_some()
                    || self.batch.messages >= BATCH_MESSAGES
                    || self.batch.ready >= BATCH_FILES
                    || self
                        .batch
                        .started
                        .is_some_and(|t| t.elapsed() >= BATCH_TIME)
                {
                    self.flush(on_file);
                }
                if let (Some(parser), Some(checkpoint)) = (pause, self.options.pause_at) {
                    // When it cannot be written the import goes on (the waiting test
                    // then fails naming the missing checkpoint).
                    let _ = std::fs::write(checkpoint, "paused after the first file\n");
                    let _ = parser.send(());
                }
            }
        }
    }

    fn add(&mut self, entry: Entry, faults: Vec<Fault>) {
        self.summary.files_seen += 1;
        if let Entry::Ready(r) = &entry {
            self.summary.messages_parsed += r.summary.parsed;
            self.summary.messages_injected += r.summary.injected;
            self.summary.skipped += r.summary.skipped;
            self.summary.secrets_redacted += r.summary.redacted;
            self.summary.lines_unfinished += r.summary.unfinished;
            self.summary.jsonl_bytes_read += r.summary.jsonl_bytes_read;
            self.summary.files_resumed += usize::from(r.summary.resumed);
        }
        self.batch.push(entry, faults);
    }

    /// Stores the batch, and the files it made forget, until nothing is pending.
    fn flush(&mut self, on_file: &mut dyn FnMut(&Path, &FileSummary)) {
        loop {
            let forgotten = self.batch.flush(self.store, &mut self.summary, on_file);
            if forgotten.is_empty() {
                return;
            }
            self.reimport(forgotten, on_file);
        }
    }

    /// Parses the forgotten files again, from the top, into the batch. Each file is
    /// re-imported at most once per run, and as a first import (nothing replaced), so
    /// this ends.
    fn reimport(&mut self, forgotten: Vec<PathBuf>, on_file: &mut dyn FnMut(&Path, &FileSummary)) {
        for path in forgotten {
            let key = path.to_string_lossy().into_owned();
            if self.unchanged.remove(&key) {
                self.summary.files_seen -= 1;
                self.summary.files_unchanged -= 1;
            }
            if !self.reimported.insert(key) {
                continue;
            }
            self.summary.files_reimported += 1;
            let stat = Stat::of(&path);
            if has_ext(&path, "parquet") {
                // A first import replaces nothing, so it makes no file forget.
                let (fs, _) = ingest_parquet(
                    self.store,
                    &path,
                    stat,
                    false,
                    self.options,
                    &mut self.summary,
                );
                on_file(&path, &fs);
                continue;
            }
            let (entry, faults) = prepare(&path, detect(&path), stat, None, self.options);
            self.add(entry, faults);
        }
    }
}

/// What the parsing thread hands to the storing thread, in walk order.
enum Step {
    /// A file parsed ([`Entry::Ready`]) or that could not be imported
    /// ([`Entry::Done`]); its faults go to the summary.
    /// `key` is its state key when it could be read.
    File {
        entry: Entry,
        faults: Vec<Fault>,
        key: Option<String>,
    },
    /// A file unchanged since the last import (not opened), with its state key.
    Unchanged { summary: FileSummary, key: String },
    /// A Parquet file: the store reads it itself. `known` when an earlier version of
    /// it was imported.
    Parquet {
        file: PathBuf,
        stat: Option<Stat>,
        known: bool,
    },
    /// A file of unknown format found in a directory.
    Ignored,
}

/// The parsing side of [`ingest_paths_with`].
struct Parser<'a> {
    /// The files' states at the start of the run.
    states: &'a HashMap<String, FileState>,
    options: IngestOptions<'a>,
    /// Where each file's [`Step`] goes, in walk order.
    steps: std::sync::mpsc::SyncSender<Step>,
    /// [`IngestOptions::pause_at`]: told when the first file is stored.
    first_stored: std::sync::mpsc::Receiver<()>,
}

impl Parser<'_> {
    /// Sends `step`; false when the receiver is gone. With [`IngestOptions::pause_at`],
    /// after the first file: waits until the storer stored it and wrote the checkpoint,
    /// then until the checkpoint is removed (the storer stores nothing more meanwhile
    /// and lets go of the database file, as it does while a long file is parsed).
    fn send(&self, step: Step, first_file: &mut bool) -> bool {
        let is_file = matches!(step, Step::File { .. });
        if self.steps.send(step).is_err() {
            return false;
        }
        if let Some(checkpoint) = self.options.pause_at.filter(|_| is_file && *first_file) {
            *first_file = false;
            if self.first_stored.recv().is_ok() {
                while checkpoint.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        }
        true
    }

    /// Walks `paths` in order, deciding per file what to do, and parses the files to
    /// import; stops early when the receiver is gone.
    fn walk_and_parse(&self, paths: &[PathBuf]) {
        let (states, options) = (self.states, self.options);
        let mut first_file = true;
        let mut reached = HashSet::new();
        for root in paths {
            let explicit = !root.is_dir();
            let files = if explicit {
                vec![root.clone()]
            } else {
                walk(root)
            };
            for file in files {
                // Reading a FIFO or a device would block or never end.
                if explicit && file.exists() && !file.is_file() {
                    let fault = Fault::new(
                        &file,
                        None,
                        "not a regular file (a FIFO, socket or device): give files or folders",
                    );
                    let summary = FileSummary {
                        path: file.clone(),
                        faults: 1,
                        ..FileSummary::default()
                    };
                    let step = Step::File {
                        entry: Entry::Done(summary),
                        faults: vec![fault],
                        key: None,
                    };
                    if !self.send(step, &mut first_file) {
                        return;
                    }
                    continue;
                }
                let stat = Stat::of(&file);
                if let Some(st) = &stat {
                    if !reached.insert(st.key.clone()) {
                        continue;
                    }
                }
                let state = stat.as_ref().and_then(|s| states.get(&s.key));
                let step = match (&stat, state) {
                    (Some(stat), Some(state))
                        if stat.size == state.size && stat.mtime_ns == state.mtime_ns =>
                    {
                        Step::Unchanged {
                            summary: FileSummary {
                                path: file.clone(),
                                format: Format::from_source(&state.format),
                                unchanged: true,
                                imported: true,
                                ..FileSummary::default()
                            },
                            key: stat.key.clone(),
                        }
                    }
                    _ if has_ext(&file, "parquet") => Step::Parquet {
                        file,
                        stat,
                        known: state.is_some(),
                    },
                    _ => {
                        let format = detect(&file);
                        // Unknown files in folders are ignored, but not ones we cannot read
                        // nor `.jsonl` files whose huge first record cannot be told.
                        if format.is_none()
                            && !explicit
                            && fs_err::File::open(&file).is_ok()
                            && super::detect::untold(&file).is_none()
                        {
                            Step::Ignored
                        } else {
                            let key = stat.as_ref().map(|s| s.key.clone());
                            let (entry, faults) =
                                prepare(&file, format, stat, state.cloned(), options);
                            Step::File { entry, faults, key }
                        }
                    }
                };
                if !self.send(step, &mut first_file) {
                    return;
                }
            }
        }
    }
}

/// Imports a Parquet file shaped like `all_conversations` (brain-mcp's export) with
/// [`ConversationStore::import_parquet`](ConversationStore::import_parquet).
/// Counted under source `parquet`. Tracked in the incremental state like any file:
/// unchanged, it is not read again; changed (`known`), it replaces the conversations
/// its earlier version stored. Returns the file's summary and the files it made
/// forget ([`StoredBatch::forgotten`](crate::stores::conversations::StoredBatch::forgotten)).
fn ingest_parquet(
    store: &ConversationStore,
    path: &Path,
    stat: Option<Stat>,
    known: bool,
    options: IngestOptions<'_>,
    summary: &mut IngestSummary,
) -> (FileSummary, Vec<PathBuf>) {
    summary.files_seen += 1;
    let mut fs = FileSummary {
        path: path.to_path_buf(),
        ..FileSummary::default()
    };
    let state = stat.map(|st| FileState {
        path: st.key,
        format: "parquet".to_owned(),
        size: st.size,
        mtime_ns: st.mtime_ns,
        offset: st.size,
        context: "{}".to_owned(),
        ..FileState::default()
    });
    let previous = if known {
        Previous::Replace
    } else {
        Previous::Keep
    };
    let mut forgotten = Vec::new();
    match store.import_parquet(path, state.as_ref(), previous, options.redact) {
        Ok(stored) => {
            forgotten = stored.forgotten;
            fs.redacted = stored.secrets_redacted;
            summary.secrets_redacted += stored.secrets_redacted;
            let counts = stored.counts.first().copied().unwrap_or_default();
            fs.parsed = counts.offered;
            fs.added = counts.added;
            fs.imported = true;
            summary.files_imported += 1;
            summary.messages_parsed += counts.offered;
            summary.messages_added += counts.added;
            let c = summary.sources.entry("parquet".to_owned()).or_default();
            c.files += 1;
            c.parsed += counts.offered;
            c.added += counts.added;
        }
        Err(e) => {
            summary.faults.push(IngestError::Store(e).to_fault(path));
            fs.faults = 1;
        }
    }
    (fs, forgotten)
}

/// Size, modification time and state key of a file.
struct Stat {
    key: String,
    size: u64,
    mtime_ns: i64,
}

impl Stat {
    /// The file's size and modification time. For a SQLite database (Cursor's
    /// `state.vscdb`, `opencode.db`) new rows may sit in its `-wal` file until SQLite
    /// checkpoints, leaving the main file untouched: the WAL's size is added and the
    /// later of the two times is taken, so such a database counts as changed.
    fn of(path: &Path) -> Option<Self> {
        let meta = fs_err::metadata(path).ok()?;
        let mtime = |m: &std::fs::Metadata| {
            m.modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        };
        let (mut size, mut mtime_ns) = (meta.len(), mtime(&meta));
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        if let Ok(w) = fs_err::metadata(Path::new(&wal)) {
            size += w.len();
            mtime_ns = mtime_ns.max(mtime(&w));
        }
        let key = fs_err::canonicalize(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .to_string_lossy()
            .into_owned();
        Some(Self {
            key,
            size,
            mtime_ns,
        })
    }
}

/// Bytes hashed before a cursor's offset to tell an append from a rewrite.
const TAIL_BYTES: u64 = 4096;

/// Lowercase-hex SHA-256 of the up to [`TAIL_BYTES`] bytes before `offset` (empty
/// string when the file cannot be read that far).
fn tail_hash(path: &Path, offset: u64) -> String {
    use sha2::{Digest, Sha256};
    use std::io::{Read, Seek};
    let from = offset.saturating_sub(TAIL_BYTES);
    let read = || -> std::io::Result<Vec<u8>> {
        let mut file = fs_err::File::open(path)?;
        file.seek(std::io::SeekFrom::Start(from))?;
        let mut buf = Vec::new();
        file.take(offset - from).read_to_end(&mut buf)?;
        Ok(buf)
    };
    match read() {
        Ok(buf) if buf.len() as u64 == offset - from => hex::encode(Sha256::digest(&buf)),
        _ => String::new(),
    }
}

/// A file parsed and waiting to be stored with its batch.
struct Ready {
    summary: FileSummary,
    format: Format,
    messages: Vec<Message>,
    state: FileState,
    previous: Previous,
}

/// A file of the current batch, in walk order.
enum Entry {
    /// Nothing to store (unchanged, or could not be imported): only reported.
    Done(FileSummary),
    /// Parsed; stored when the batch is flushed.
    Ready(Box<Ready>),
}

/// Files waiting to be stored in one transaction.
#[derive(Default)]
struct Batch {
    /// Files in walk order, each with the faults found while parsing it.
    entries: Vec<(Entry, Vec<Fault>)>,
    /// Messages in the `Ready` entries.
    messages: usize,
    /// Number of `Ready` entries.
    ready: usize,
    /// When the first entry of this batch arrived.
    started: Option<std::time::Instant>,
}

impl Batch {
    fn push(&mut self, entry: Entry, faults: Vec<Fault>) {
        self.started.get_or_insert_with(std::time::Instant::now);
        if let Entry::Ready(r) = &entry {
            self.messages += r.messages.len();
            self.ready += 1;
        }
        self.entries.push((entry, faults));
    }

    /// Stores the ready files in one transaction (one each when that fails), then
    /// adds every entry's faults to `summary` and reports it to `on_file`, in order.
    /// Returns the files the batch made forget.
    fn flush(
        &mut self,
        store: &ConversationStore,
        summary: &mut IngestSummary,
        on_file: &mut dyn FnMut(&Path, &FileSummary),
    ) -> Vec<PathBuf> {
        let ready: Vec<FileBatch<'_>> = self
            .entries
            .iter()
            .filter_map(|(e, _)| match e {
                Entry::Ready(r) => Some(FileBatch {
                    messages: &r.messages,
                    state: &r.state,
                    previous: r.previous,
                }),
                Entry::Done(_) => None,
            })
            .collect();
        let mut forgotten = Vec::new();
        let results: Vec<Result<InsertCounts, StoreError>> = if ready.is_empty() {
            Vec::new()
        } else {
            match store.store_files(&ready) {
                Ok(stored) => {
                    forgotten = stored.forgotten;
                    stored.counts.into_iter().map(Ok).collect()
                }
                // Find the file that fails: the others are stored on their own.
                Err(_) => ready
                    .iter()
                    .map(|f| {
                        let stored = store.store_file(f.messages, f.state, f.previous)?;
                        forgotten.extend(stored.forgotten);
                        Ok(stored.counts.first().copied().unwrap_or_default())
                    })
                    .collect(),
            }
        };
        drop(ready);
        let mut results = results.into_iter();
        for (entry, faults) in self.entries.drain(..) {
            summary.faults.extend(faults);
            let fs = match entry {
                Entry::Done(fs) => fs,
                Entry::Ready(r) => stored(*r, results.next(), summary),
            };
            on_file(&fs.path, &fs);
        }
        self.messages = 0;
        self.ready = 0;
        self.started = None;
        forgotten
    }
}

/// Accounts for a ready file once its batch was stored (`result`).
fn stored(
    ready: Ready,
    result: Option<Result<InsertCounts, StoreError>>,
    summary: &mut IngestSummary,
) -> FileSummary {
    let mut fs = ready.summary;
    match result {
        Some(Ok(counts)) => {
            fs.added = counts.added;
            fs.imported = true;
            summary.files_imported += 1;
            summary.messages_added += counts.added;
            let c = summary
                .sources
                .entry(ready.format.source().to_owned())
                .or_default();
            c.files += 1;
            c.parsed += fs.parsed;
            c.added += fs.added;
            c.injected += fs.injected;
            c.skipped += fs.skipped;
        }
        Some(Err(e)) => {
            summary
                .faults
                .push(IngestError::Store(e).to_fault(&fs.path));
            fs.faults += 1;
        }
        None => {
            let e = std::io::Error::other("the batch lost track of this file");
            summary.faults.push(IngestError::Io(e).to_fault(&fs.path));
            fs.faults += 1;
        }
    }
    fs
}

/// Parses one file (from where the last import stopped, when it only grew); the
/// result is stored later with its batch. Returns the file's entry and its faults.
/// Drops the messages of `import` whose conversation or message id (as it would be
/// stored) is longer than [`super::MAX_ID_CHARS`] characters, with one fault per id
/// naming `path` and the id's length (never the id: it may be huge): no skill or page
/// could open them.
fn refuse_long_ids(path: &Path, import: &mut super::FileImport) {
    let too_long =
        |id: &str| id.len() > super::MAX_ID_CHARS && id.chars().count() > super::MAX_ID_CHARS;
    if !import
        .messages
        .iter()
        .any(|m| too_long(&m.conversation_id) || too_long(&m.message_id))
    {
        return;
    }
    // Per refused id: what it is, its length and the messages it took.
    let mut refused: Vec<(&'static str, String, usize)> = Vec::new();
    let mut count = |kind: &'static str, id: &str| match refused
        .iter_mut()
        .find(|(k, i, _)| *k == kind && i == id)
    {
        Some(entry) => entry.2 += 1,
        None => refused.push((kind, id.to_owned(), 1)),
    };
    import.messages.retain(|m| {
        if too_long(&m.conversation_id) {
            count("conversation", &m.conversation_id);
            false
        } else if too_long(&m.message_id) {
            count("message", &m.message_id);
            false
        } else {
            true
        }
    });
    for (kind, id, messages) in refused {
        import.faults.push(Fault::new(
            path,
            None,
            format!(
                "a {kind} id of {} characters is longer than the {} an id may hold: \
                 {messages} message(s) not imported",
                id.chars().count(),
                super::MAX_ID_CHARS
            ),
        ));
    }
}

fn prepare(
    path: &Path,
    format: Option<Format>,
    stat: Option<Stat>,
    state: Option<FileState>,
    options: IngestOptions<'_>,
) -> (Entry, Vec<Fault>) {
    let mut fs = FileSummary {
        path: path.to_path_buf(),
        format,
        ..FileSummary::default()
    };
    // Resume an append-only file that grew and whose bytes before the offset are the same.
    let resume = match (format, &stat, &state) {
        (Some(f), Some(st), Some(old))
            if f.is_append_only()
                && old.format == f.source()
                && st.size >= old.offset
                && !old.tail_hash.is_empty()
                && tail_hash(path, old.offset) == old.tail_hash =>
        {
            Some(Cursor {
                offset: old.offset,
                line: usize::try_from(old.line).unwrap_or(usize::MAX),
                next_index: old.next_index,
                // The bytes after the last complete line when it was read: they held
                // no newline (the state's size was taken before reading).
                partial: old.size.saturating_sub(old.offset),
                context: serde_json::from_str(&old.context).unwrap_or_default(),
            })
        }
        _ => None,
    };
    let result = match format {
        None if !path.exists() => Err(IngestError::Io(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("`{}` does not exist", path.display()),
        ))),
        None => match fs_err::File::open(path) {
            Err(e) => Err(IngestError::Io(e)),
            Ok(_) => Err(match super::detect::untold(path) {
                Some(reason) => IngestError::Shape {
                    path: path.to_path_buf(),
                    reason,
                },
                None => IngestError::UnknownFormat(path.to_path_buf()),
            }),
        },
        Some(format) => import_from(path, format, resume.as_ref()),
    };
    let (mut import, format, stat) = match (result, format, stat) {
        (Ok(import), Some(format), Some(stat)) => (import, format, stat),
        (Err(e), _, _) => {
            fs.faults = 1;
            return (Entry::Done(fs), vec![e.to_fault(path)]);
        }
        (Ok(_), _, _) => {
            let e = std::io::Error::other(format!("`{}` vanished while read", path.display()));
            fs.faults = 1;
            return (Entry::Done(fs), vec![IngestError::Io(e).to_fault(path)]);
        }
    };
    // An append-only log that now holds fewer messages than were imported from it was
    // truncated (a crash, a full disk), not edited: keep what is stored and say so, on
    // every run, until it holds at least as many again.
    if let Some(old) = state
        .as_ref()
        .filter(|_| format.is_append_only() && resume.is_none())
    {
        if (import.messages.len() as u64) < old.messages {
            let mut faults = import.faults;
            faults.push(Fault::new(
                path,
                None,
                format!(
                    "holds {} messages, fewer than the {} imported from it before: it looks \
                     truncated, so the stored messages are kept and it is not imported again \
                     until it holds as many",
                    import.messages.len(),
                    old.messages
                ),
            ));
            fs.faults = faults.len();
            return (Entry::Done(fs), faults);
        }
    }
    if options.keep_injected {
        for m in &mut import.messages {
            m.is_injected = false;
        }
    }
    if options.redact {
        if let Some(key) = options.id_key {
            use crate::redact::at_store::{id_in_place, opt_id_in_place};
            for m in &mut import.messages {
                fs.redacted += id_in_place(&mut m.source, key)
                    + opt_id_in_place(&mut m.model, key)
                    + opt_id_in_place(&mut m.project, key)
                    + id_in_place(&mut m.conversation_id, key)
                    + id_in_place(&mut m.message_id, key)
                    + opt_id_in_place(&mut m.parent_id, key);
            }
        }
        if let Some(r) = crate::redact::Redactor::global() {
            for m in &mut import.messages {
                let out = r.redact(&m.content);
                if out.count > 0 {
                    fs.redacted += out.count;
                    m.content = out.text.into_owned();
                }
                if let Some(title) = &m.conversation_title {
                    let out = r.redact(title);
                    if out.count > 0 {
                        fs.redacted += out.count;
                        m.conversation_title = Some(out.text.into_owned());
                    }
                }
            }
        }
    }
    refuse_long_ids(path, &mut import);
    fs.resumed = resume.is_some();
    fs.parsed = import.messages.len();
    fs.injected = import.messages.iter().filter(|m| m.is_injected).count();
    fs.skipped = import.skipped;
    fs.faults = import.faults.len();
    fs.unfinished = import.unfinished;
    fs.jsonl_bytes_read = import.jsonl_bytes_read;
    let (offset, line, next_index, context) = match &import.cursor {
        Some(c) => (
            c.offset,
            u64::try_from(c.line).unwrap_or(u64::MAX),
            c.next_index,
            serde_json::to_string(&c.context).unwrap_or_else(|_| "{}".to_owned()),
        ),
        None => (stat.size, 0, 0, "{}".to_owned()),
    };
    let new_state = FileState {
        path: stat.key,
        format: format.source().to_owned(),
        size: stat.size,
        mtime_ns: stat.mtime_ns,
        offset,
        line,
        next_index,
        tail_hash: tail_hash(path, offset),
        context,
        messages: state
            .as_ref()
            .filter(|_| fs.resumed)
            .map_or(0, |s| s.messages)
            + fs.parsed as u64,
    };
    let previous = if state.is_some() && !fs.resumed {
        Previous::Replace
    } else {
        Previous::Keep
    };
    let ready = Ready {
        summary: fs,
        format,
        messages: import.messages,
        state: new_state,
        previous,
    };
    (Entry::Ready(Box::new(ready)), import.faults)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_display() {
        let mut s = IngestSummary {
            files_seen: 2,
            files_imported: 1,
            messages_parsed: 3,
            ..Default::default()
        };
        s.faults.push(Fault::new(
            Path::new("x.jsonl"),
            Some(4),
            "invalid JSON: oops",
        ));
        s.sources.insert(
            "pi".into(),
            SourceCounts {
                files: 1,
                parsed: 3,
                added: 3,
                injected: 0,
                skipped: 0,
            },
        );
        assert_eq!(
            s.to_string(),
            "1 of 2 files imported: 3 messages parsed, 0 new, 0 injected set aside, 0 records skipped, 1 faults\n  \
             pi: 1 files, 3 messages parsed, 3 new, 0 injected, 0 skipped\n  fault: `x.jsonl`:4: invalid JSON: oops\n"
        );
        assert!(!s.is_clean());
    }
}
