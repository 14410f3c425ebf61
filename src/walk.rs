//! The one directory walker: every importer, the memory importer and the conformance
//! corpus builder list folders through [`files_below`] (and [`entries`] for one level),
//! so the rules for links, hidden names and unreadable folders are the same everywhere.
//!
//! The rules:
//! - **Links are followed.** A symlinked folder is walked like a real one (a linked
//!   project folder is common); each real folder is walked at most once, so links that
//!   loop, or two links to one folder, end.
//! - **Only regular files are listed** (after following links): no FIFOs, sockets or
//!   devices, which would block or never end when read.
//! - **Hidden names** (starting with `.`) are listed or skipped as the caller asks
//!   ([`Hidden`]); a skipped hidden folder is not entered. The starting folder itself is
//!   never judged.
//! - **Unreadable folders** are skipped and returned in [`Walked::unreadable`], so each
//!   caller decides whether that is silent, a fault or an error.
//! - **Order**: paths sorted (component-wise, as [`PathBuf`]'s `Ord`), so `a/b` comes
//!   before `a.txt`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Whether names starting with `.` are walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// List hidden files and enter hidden folders (tools keep transcripts in `.claude`,
    /// `.system_generated`…).
    Include,
    /// Skip hidden files and folders (editor and VCS clutter in memory and fixture
    /// folders).
    Skip,
}

/// What [`files_below`] found.
#[derive(Debug, Default)]
pub struct Walked {
    /// Regular files below the folder, sorted by path.
    pub files: Vec<PathBuf>,
    /// Folders that could not be read, with the error, in the order met.
    pub unreadable: Vec<(PathBuf, std::io::Error)>,
}

/// All regular files below `dir`, recursively, by the rules of this module. A `dir`
/// that does not exist or cannot be read yields no files and one
/// [`Walked::unreadable`] entry.
pub fn files_below(dir: &Path, hidden: Hidden) -> Walked {
    let mut walked = Walked::default();
    let mut visited = HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if !visited.insert(fs_err::canonicalize(&d).unwrap_or_else(|_| d.clone())) {
            continue;
        }
        let entries = match fs_err::read_dir(&d) {
            Ok(entries) => entries,
            Err(e) => {
                walked.unreadable.push((d, e));
                continue;
            }
        };
        // Sorted, so which of two links to one folder is walked does not depend on the
        // order the file system lists them in.
        let mut subdirs = Vec::new();
        let mut here: Vec<_> = entries.filter_map(Result::ok).collect();
        here.sort_by_key(fs_err::DirEntry::path);
        for entry in here {
            let path = entry.path();
            if hidden == Hidden::Skip && is_hidden(&path) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() || (kind.is_symlink() && path.is_dir()) {
                subdirs.push(path);
            } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
                walked.files.push(path);
            }
        }
        stack.extend(subdirs);
    }
    walked.files.sort();
    walked
}

/// The entries of `dir` (files, folders, links; hidden ones included), sorted; none
/// when it cannot be read. For listings one level deep, such as `tasks/*`.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = fs_err::read_dir(dir)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

/// True when the last component of `path` starts with `.`.
pub fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn follows_linked_folders_once_and_survives_loops() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = dir.path().join("real");
        fs_err::create_dir_all(real.join("sub")).expect("mkdir");
        fs_err::write(real.join("sub/a.jsonl"), "{}").expect("write");
        let root = dir.path().join("root");
        fs_err::create_dir_all(&root).expect("mkdir");
        std::os::unix::fs::symlink(&real, root.join("linked")).expect("link");
        std::os::unix::fs::symlink(&root, root.join("linked/sub/loop")).expect("loop");
        let found = files_below(&root, Hidden::Include);
        assert_eq!(found.files, [root.join("linked/sub/a.jsonl")]);
        assert!(found.unreadable.is_empty());
    }

    #[test]
    fn hidden_names_are_skipped_only_when_asked_and_order_is_by_component() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for file in ["a/b.md", "a.md", ".git/x.md", "c/.hidden.md", "c/d.md"] {
            let path = root.join(file);
            fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs_err::write(&path, "x").expect("write");
        }
        let skip = files_below(root, Hidden::Skip).files;
        assert_eq!(
            skip,
            [root.join("a/b.md"), root.join("a.md"), root.join("c/d.md")]
        );
        let all = files_below(root, Hidden::Include).files;
        assert_eq!(all.len(), 5);
        assert!(all.contains(&root.join(".git/x.md")));
    }

    #[test]
    fn a_missing_folder_is_reported_not_fatal() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing");
        let found = files_below(&missing, Hidden::Include);
        assert!(found.files.is_empty());
        assert_eq!(found.unreadable.len(), 1);
        assert_eq!(found.unreadable[0].0, missing);
        assert!(entries(&missing).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn fifos_are_not_listed() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs_err::write(dir.path().join("a.md"), "x").expect("write");
        let fifo = dir.path().join("pipe.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo on this machine
        }
        assert_eq!(
            files_below(dir.path(), Hidden::Skip).files,
            [dir.path().join("a.md")]
        );
    }
}
