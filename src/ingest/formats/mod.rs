//! The transcript formats: one file per tool, each an [`Importer`], and the one
//! ordered list of them, [`IMPORTERS`].
//!
//! Adding a format is one new file here (a `pub(super) static IMPORTER`: its [`About`]
//! itself when its JSON Lines records are all its evidence ([`About::looks_like`]), else
//! a unit type implementing [`Importer`]) and one line in the [`registry!`] call below. Its
//! parser runs the one record loop of [`crate::ingest::pending::Records`] (clock,
//! skipped count, faults with path and line, resumption) and says only how its records
//! read and what names the conversation. The
//! order of that list is the detection priority: when two importers recognise the same
//! evidence, the earlier one wins (see [`crate::ingest::detect`] for the stages). The
//! default locations each importer declares ([`About::locations`]) are what
//! [`crate::ingest::discover`] searches and what the README's importer table is
//! generated from (`ingest::readme_table`).

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::locations::Location;
use super::{Cursor, FileImport, IngestError};

/// What an importer tells people about itself: the README row and the places
/// [`crate::ingest::discover`] looks in.
#[derive(Debug)]
pub(crate) struct About {
    /// Value of the `source` column, e.g. `claude-code`; unique among importers.
    pub source: &'static str,
    /// The tool as people name it, e.g. "Claude Code".
    // Read only by the README table's generator (a test): data, not dead code.
    #[cfg_attr(not(test), allow(dead_code))]
    pub tool: &'static str,
    /// What one imported file is, e.g. "session file".
    // Read only by the README table's generator (a test): data, not dead code.
    #[cfg_attr(not(test), allow(dead_code))]
    pub unit: &'static str,
    /// Default locations, searched in order.
    pub locations: &'static [Location],
    /// Said after the locations in the README (or instead of them when there are none).
    // Read only by the README table's generator (a test): data, not dead code.
    #[cfg_attr(not(test), allow(dead_code))]
    pub note: Option<&'static str>,
    /// True for JSON Lines formats written only by appending: a grown file is imported
    /// from where the last import stopped ([`FileImport::cursor`]).
    pub append_only: bool,
    /// Parses one file: see [`Importer::import`].
    pub import: ImportFn,
    /// True when one parsed JSON Lines record (a JSON object; a record that is not one
    /// is no format's) is this format's: the default [`Importer::recognise_line`]
    /// answers [`LineMatch::Yes`] for it. `None` for a format whose records never decide
    /// (documents, databases, paths).
    pub looks_like: Option<RecordTest>,
}

/// An importer's test of one parsed JSON Lines record (a JSON object): true when it is
/// this format's ([`About::looks_like`]).
pub(crate) type RecordTest = fn(&Map<String, Value>) -> bool;

/// An importer's parser of one file: the file, the time of a file whose records carry
/// none, and (append-only formats) where a previous import stopped.
pub(crate) type ImportFn =
    fn(&Path, DateTime<Utc>, Option<&Cursor>) -> Result<FileImport, IngestError>;

/// How one JSON Lines record speaks for an importer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineMatch {
    /// Not this format's record.
    No,
    /// This format's record: decides the file.
    Yes,
    /// Could be this format's record, but decides only when no record of the peeked
    /// lines is a [`LineMatch::Yes`] of any importer (generic JSON Lines).
    Fallback,
}

impl LineMatch {
    /// [`LineMatch::Yes`] when `mine`, else [`LineMatch::No`].
    pub(crate) fn yes_if(mine: bool) -> Self {
        if mine {
            Self::Yes
        } else {
            Self::No
        }
    }
}

/// The first bytes of a `.json` file, for [`Importer::recognise_document`].
#[derive(Debug)]
pub(crate) struct Document<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its first bytes (at most the detection window).
    pub head: &'a [u8],
    /// True when `head` is the whole file.
    pub whole: bool,
    /// The parsed document, when `whole` and it is valid JSON.
    pub parsed: Option<Value>,
}

impl Document<'_> {
    /// True when the first bytes contain `needle` (e.g. a quoted key).
    pub(crate) fn contains(&self, needle: &[u8]) -> bool {
        memchr::memmem::find(self.head, needle).is_some()
    }
}

/// One transcript format. Only [`Importer::about`] is required (it names the parser,
/// [`About::import`], and the record test, [`About::looks_like`]); the other
/// `recognise_*` methods default to "not mine", so an importer answers only for the
/// evidence it has.
pub(crate) trait Importer: Sync {
    /// Name, README row, default locations, parser and record test.
    fn about(&self) -> &About;

    /// True for JSON Lines formats written only by appending ([`About::append_only`]).
    fn is_append_only(&self) -> bool {
        self.about().append_only
    }

    /// True when the path alone (name, extension, folder, magic bytes) says the file is
    /// this format. Asked first, for every file.
    fn recognise_path(&self, _path: &Path) -> bool {
        false
    }

    /// How one parsed record of a `.jsonl` file speaks for this format: by default
    /// [`LineMatch::Yes`] when the record is an object [`About::looks_like`] says is
    /// this format's, else [`LineMatch::No`].
    fn recognise_line(&self, line: &Value) -> LineMatch {
        let mine = self.about().looks_like;
        LineMatch::yes_if(
            mine.zip(line.as_object())
                .is_some_and(|(mine, obj)| mine(obj)),
        )
    }

    /// Last resort for a `.jsonl` file no record decided (e.g. a first line longer than
    /// the detection window): true when its first bytes still say this format.
    fn recognise_jsonl_head(&self, _head: &[u8]) -> bool {
        false
    }

    /// True when a `.json` document is this format.
    fn recognise_document(&self, _doc: &Document<'_>) -> bool {
        false
    }

    /// Parses one file with [`About::import`]. `fallback` is the time for a file whose
    /// records carry none; `start` (append-only formats only) is where a previous import
    /// stopped.
    ///
    /// # Errors
    /// [`IngestError::Io`] when the file cannot be read; whole-document formats also
    /// [`IngestError::Json`] / [`IngestError::Shape`] / [`IngestError::Sqlite`].
    fn import(
        &self,
        path: &Path,
        fallback: DateTime<Utc>,
        start: Option<&Cursor>,
    ) -> Result<FileImport, IngestError> {
        (self.about().import)(path, fallback, start)
    }
}

/// A format whose JSON Lines records are all its evidence is its [`About`]: every
/// other `recognise_*` says "not mine".
impl Importer for About {
    fn about(&self) -> &About {
        self
    }
}

/// Declares the format modules and [`IMPORTERS`] from one list, so a format is one line.
macro_rules! registry {
    ($($(#[$attr:meta])* $module:ident),* $(,)?) => {
        $($(#[$attr])* mod $module;)*

        /// Every importer, in detection priority (earlier wins).
        pub(crate) static IMPORTERS: &[&dyn Importer] = &[$($(#[$attr])* &$module::IMPORTER),*];
    };
}

registry![
    claude_code,
    codex,
    // Before ChatGPT: a Claude.ai export may quote a "mapping" key in its text.
    claude_ai,
    chatgpt,
    gemini,
    pi,
    cursor,
    opencode,
    // Before Antigravity: an event may also carry `step_index` and `source`.
    copilot,
    antigravity,
    amp,
    cline,
    aider,
    generic,
    #[cfg(test)]
    made_up,
];

/// What `importer` makes of a file named `name` holding `bytes`, imported whole with
/// the epoch as the fallback time: the importers' unit tests run their fixtures
/// through it, so each test says only its file name and text.
#[cfg(test)]
pub(super) fn import_fixture(importer: &dyn Importer, name: &str, bytes: &[u8]) -> FileImport {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    fs_err::write(&path, bytes).expect("write");
    importer
        .import(&path, DateTime::UNIX_EPOCH, None)
        .expect("import")
}

/// True when `importer` claims the JSON Lines record `line` ([`LineMatch::Yes`]): the
/// importers' unit tests of their record test go through it, as detection does.
#[cfg(test)]
pub(super) fn claims(importer: &dyn Importer, line: &Value) -> bool {
    importer.recognise_line(line) == LineMatch::Yes
}

/// The importer whose source name is `source`.
pub(crate) fn by_source(source: &str) -> Option<&'static dyn Importer> {
    IMPORTERS
        .iter()
        .copied()
        .find(|i| i.about().source == source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_are_unique_and_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for importer in IMPORTERS {
            let source = importer.about().source;
            assert!(seen.insert(source), "`{source}` twice");
            assert!(
                source
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "`{source}`"
            );
            assert_eq!(by_source(source).map(|i| i.about().source), Some(source));
        }
    }
}
