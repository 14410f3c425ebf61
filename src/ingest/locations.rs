//! Default transcript locations as data: each importer lists [`Location`]s (a
//! [`Root`] the [`Environment`] decides, plus patterns below it); [`find`] turns them into the
//! existing files of this machine and [`readme_table`] into the README's importer
//! table, so the two cannot drift apart.
//!
//! Patterns are `/`-separated segments below the root:
//! - a literal segment (`projects`, `.system_generated`) is joined as is; `{a,b}`
//!   alternatives are tried in the order written;
//! - a segment with `*` (`*`, `*.json`, `*.{json,jsonl}`) matches the folder's entries
//!   by name, hidden ones included;
//! - `**` walks everything below ([`crate::walk::files_below`], hidden names included)
//!   and keeps the files whose path below it matches the rest of the pattern, `**`
//!   there matching any number of folders;
//! - the empty pattern is the root itself.
//!
//! Names are matched exactly, except the last segment (the file name), which is
//! matched ignoring ASCII case (`*.JSONL`, `Conversations.json`). Only regular files
//! are found.

use std::path::{Component, Path, PathBuf};

use crate::places::{Environment, Root};

/// A default location of one tool: patterns below a root.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Location {
    /// Where the patterns start.
    pub root: Root,
    /// Patterns (see the module documentation), searched in order.
    pub patterns: &'static [&'static str],
    /// When true only the first pattern that finds a file is used (a database that
    /// supersedes the files it was migrated from).
    pub first_found: bool,
}

impl Location {
    /// Files of all the patterns.
    pub(crate) const fn all(root: Root, patterns: &'static [&'static str]) -> Self {
        Self {
            root,
            patterns,
            first_found: false,
        }
    }

    /// Files of the first pattern that finds any.
    pub(crate) const fn first_of(root: Root, patterns: &'static [&'static str]) -> Self {
        Self {
            root,
            patterns,
            first_found: true,
        }
    }
}

/// The existing files `location` names in `env`, in pattern order, each pattern's
/// files sorted by path. Reads the environment and lists folders; no file is opened.
pub(crate) fn find(location: &Location, env: &Environment) -> Vec<PathBuf> {
    let Some(root) = env.resolve(location.root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for pattern in location.patterns {
        let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
        let files = expand(&root, &segments, true);
        if location.first_found && !files.is_empty() {
            return files;
        }
        found.extend(files);
    }
    found
}

/// The existing paths to watch for `location` in `env`: per pattern, the root joined
/// with the pattern's leading literal folders (`{a,b}` expanded, the file name left
/// out), e.g. `~/.claude/projects` for `projects/**/*.jsonl`; the root itself for the
/// empty pattern. A file or folder that exists, once each, in pattern order.
pub(crate) fn watch_paths(location: &Location, env: &Environment) -> Vec<PathBuf> {
    let Some(root) = env.resolve(location.root) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for pattern in location.patterns {
        let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
        let folders = segments.len().saturating_sub(1);
        let mut bases = vec![root.clone()];
        for segment in segments.iter().take(folders) {
            if segment.contains('*') {
                break;
            }
            bases = bases
                .iter()
                .flat_map(|b| alternatives(segment).into_iter().map(move |a| b.join(a)))
                .collect();
        }
        for base in bases {
            if base.exists() && !out.contains(&base) {
                out.push(base);
            }
        }
    }
    out
}

/// True when `path` is a file `location` names in `env` ([`find`] would list it, were
/// it to exist): below the root and matching one of the patterns, and for a
/// [`Location::first_of`] location no earlier pattern finds any file. Lists folders
/// only for a `first_of` location's earlier patterns.
pub(crate) fn names(location: &Location, env: &Environment, path: &Path) -> bool {
    let Some(root) = env.resolve(location.root) else {
        return false;
    };
    let Ok(rest) = path.strip_prefix(&root) else {
        return false;
    };
    let mut below = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(n) => below.push(n.to_string_lossy().into_owned()),
            _ => return false,
        }
    }
    for (i, pattern) in location.patterns.iter().enumerate() {
        let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
        if matches_path(&segments, &below) {
            let shadowed = location.first_found
                && location.patterns[..i].iter().any(|earlier| {
                    let segments: Vec<&str> =
                        earlier.split('/').filter(|s| !s.is_empty()).collect();
                    !expand(&root, &segments, true).is_empty()
                });
            return !shadowed;
        }
    }
    false
}

/// The regular files below `base` matching `segments`; `last` is true while the
/// remaining segments end the pattern at the file name.
fn expand(base: &Path, segments: &[&str], last: bool) -> Vec<PathBuf> {
    let Some((&segment, rest)) = segments.split_first() else {
        return if base.is_file() {
            vec![base.to_path_buf()]
        } else {
            Vec::new()
        };
    };
    let is_name = last && rest.is_empty();
    if segment == "**" {
        return crate::walk::files_below(base, crate::walk::Hidden::Include)
            .files
            .into_iter()
            .filter(|file| {
                let below: Vec<String> = file
                    .strip_prefix(base)
                    .map(|p| {
                        p.components()
                            .filter_map(|c| match c {
                                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                                _ => None,
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                // `segments` still starts with this `**`: it may match no folder or many.
                matches_path(segments, &below)
            })
            .collect();
    }
    if segment.contains('*') {
        return crate::walk::entries(base)
            .into_iter()
            .filter(|entry| {
                entry
                    .file_name()
                    .is_some_and(|n| matches_name(segment, &n.to_string_lossy(), is_name))
            })
            .flat_map(|entry| expand(&entry, rest, last))
            .collect();
    }
    alternatives(segment)
        .iter()
        .flat_map(|literal| expand(&base.join(literal), rest, last))
        .collect()
}

/// True when path components `below` match pattern `segments`, `**` matching any
/// number of components; the last component is a file name.
fn matches_path(segments: &[&str], below: &[String]) -> bool {
    match (segments.split_first(), below.split_first()) {
        (None, None) => true,
        (Some((&"**", rest)), _) => {
            (0..=below.len()).any(|skip| matches_path(rest, &below[skip..]))
        }
        (Some((&segment, rest)), Some((name, more))) => {
            matches_name(segment, name, more.is_empty()) && matches_path(rest, more)
        }
        _ => false,
    }
}

/// True when `name` matches one segment pattern (`*` any run of characters, `{a,b}`
/// alternatives); a file name (`is_file_name`) ignoring ASCII case.
fn matches_name(pattern: &str, name: &str, is_file_name: bool) -> bool {
    alternatives(pattern).iter().any(|alt| {
        if is_file_name {
            wildcard(&alt.to_ascii_lowercase(), &name.to_ascii_lowercase())
        } else {
            wildcard(alt, name)
        }
    })
}

/// `*`-only matching of `text` against `pattern`.
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = parts.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty(); // no `*` at all
    };
    for piece in middle {
        match rest.find(piece) {
            Some(i) => rest = &rest[i + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The alternatives of one `{a,b}` group in `segment` (the segment itself without
/// one), in the order written.
fn alternatives(segment: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (segment.find('{'), segment.find('}')) else {
        return vec![segment.to_owned()];
    };
    if close < open {
        return vec![segment.to_owned()];
    }
    let (before, after) = (&segment[..open], &segment[close + 1..]);
    segment[open + 1..close]
        .split(',')
        .map(|alt| format!("{before}{alt}{after}"))
        .collect()
}

#[cfg(test)]
/// A location as people read it, e.g. ``~/.claude/projects/**/*.jsonl` (`CLAUDE_CONFIG_DIR`)``.
fn describe(location: &Location) -> String {
    let (prefix, var) = location.root.shown();
    let paths: Vec<String> = location
        .patterns
        .iter()
        .map(|p| format!("`{}`", crate::places::join(&prefix, p)))
        .collect();
    let joined = paths.join(if location.first_found {
        ", else "
    } else {
        ", "
    });
    match var {
        Some(var) => format!("{joined} (`{var}`)"),
        None => joined,
    }
}

/// The README row of brain-mcp's Parquet export, which the driver reads directly (it is
/// not an [`super::formats::Importer`]).
#[cfg(test)]
const PARQUET_ROW: &str =
    "| brain-mcp export | as stored | none: `all_conversations.parquet`, read by DuckDB directly | file |";

/// The README's importer table (markdown, header included, one line per importer in
/// registry order, then the Parquet row), from the importers' own data.
#[cfg(test)]
pub(crate) fn readme_table() -> String {
    let mut out = String::from(
        "| tool | source | default location (env var) | unit of import |\n|---|---|---|---|\n",
    );
    for importer in super::formats::IMPORTERS {
        let about = importer.about();
        if about.source == "made-up" {
            continue; // the test-only format of `formats::made_up`
        }
        let mut location: Vec<String> = about.locations.iter().map(describe).collect();
        location.extend(about.note.map(str::to_owned));
        let unit = if importer.is_append_only() {
            format!("{} (append-only)", about.unit)
        } else {
            about.unit.to_owned()
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {unit} |\n",
            about.tool,
            about.source,
            location.join(", ")
        ));
    }
    out.push_str(PARQUET_ROW);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_patterns() {
        assert!(matches_name("*.{json,jsonl}", "a.JSONL", true));
        assert!(!matches_name("*.json", "a.jsonl", true));
        assert!(matches_name("chats", "chats", false));
        assert!(!matches_name("chats", "Chats", false));
        assert!(matches_name("T-*.json", "t-1.json", true));
        assert!(wildcard("*", ""));
        assert!(!wildcard("a*a", "a"));
        assert_eq!(alternatives("{a,b c}/x"), ["a/x", "b c/x"]);
        let path = |s: &str| s.split('/').map(str::to_owned).collect::<Vec<_>>();
        assert!(matches_path(
            &["**", "chats", "*.json"],
            &path("chats/a.json")
        ));
        assert!(matches_path(
            &["**", "chats", "*.json"],
            &path("p/q/chats/a.json")
        ));
        assert!(!matches_path(
            &["**", "chats", "*.json"],
            &path("p/chats/x/a.json")
        ));
        assert!(matches_path(
            &["**", "agent-transcripts", "**", "*.jsonl"],
            &path("p/agent-transcripts/s/t.jsonl")
        ));
    }

    #[test]
    fn the_readme_table_is_generated_from_the_importers() {
        let readme =
            fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
                .expect("README.md");
        let table = readme_table();
        assert!(
            readme.contains(&table),
            "README.md's importer table is not the generated one; replace it with:\n{table}"
        );
    }
}
