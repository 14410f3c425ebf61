//! Paths a skill document names (its query, its template, the files served as its
//! resources) resolved and confined to the document's own folder.
//!
//! A skill folder is untrusted input: `engine-options.query: /etc/passwd`,
//! `template: ../../x` or a symbolic link inside the folder pointing elsewhere must not
//! make the host read a file outside it. [`inside`] canonicalises both the folder and
//! the named file (every link resolved) and accepts the file only when it lies under
//! the folder. Errors name the field's value and the folder, never any content of the
//! file, which is not read.

use std::path::{Path, PathBuf};

/// Why a named path was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfineError {
    /// The path is absolute or climbs out with `..`, or resolves (through links)
    /// outside the folder.
    #[error("`{name}` is outside the skill folder `{}`; a skill may only name files inside its own folder (links included)", folder.display())]
    Outside {
        /// The path as the document wrote it.
        name: String,
        /// The skill folder.
        folder: PathBuf,
    },
    /// The file does not exist or cannot be resolved.
    #[error("`{name}` in the skill folder `{}`: {source}", folder.display())]
    Io {
        /// The path as the document wrote it.
        name: String,
        /// The skill folder.
        folder: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Resolves `name` (relative to `folder`) and returns its canonical path when it is a
/// file inside `folder`'s canonical path.
///
/// # Errors
/// [`ConfineError::Outside`] for an absolute path, a `..` that leaves the folder or a
/// link that resolves outside it; [`ConfineError::Io`] when the file cannot be
/// resolved (missing, unreadable folder).
pub fn inside(folder: &Path, name: &str) -> Result<PathBuf, ConfineError> {
    let outside = || ConfineError::Outside {
        name: name.to_owned(),
        folder: folder.to_path_buf(),
    };
    let relative = Path::new(name);
    if relative.is_absolute() || relative.has_root() {
        return Err(outside());
    }
    let io = |source| ConfineError::Io {
        name: name.to_owned(),
        folder: folder.to_path_buf(),
        source,
    };
    let root = fs_err::canonicalize(folder).map_err(io)?;
    let resolved = fs_err::canonicalize(folder.join(relative)).map_err(|e| {
        // A missing file reached through `..` is still reported as outside.
        if relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            outside()
        } else {
            io(e)
        }
    })?;
    if resolved.starts_with(&root) && resolved != root {
        Ok(resolved)
    } else {
        Err(outside())
    }
}

/// True when `path` (an entry of `folder`) resolves to a regular file inside
/// `folder` — the test for files served as resources.
pub fn is_file_inside(folder: &Path, path: &Path) -> bool {
    // The path relative to the folder, so `references/x.md` is checked as itself and
    // not as `x.md` at the top.
    let Some(name) = path.strip_prefix(folder).ok().and_then(|r| r.to_str()) else {
        return false;
    };
    inside(folder, name).is_ok_and(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_in_subfolders_are_inside() {
        let outer = tempfile::tempdir().unwrap();
        let folder = outer.path().join("skill");
        fs_err::create_dir_all(folder.join("references")).unwrap();
        fs_err::write(folder.join("references/REFERENCE.md"), "x").unwrap();
        assert!(is_file_inside(
            &folder,
            &folder.join("references/REFERENCE.md")
        ));
        assert!(!is_file_inside(&folder, &folder.join("references")));
        assert!(!is_file_inside(&folder, &folder.join("REFERENCE.md")));
        assert!(!is_file_inside(&folder, &outer.path().join("skill")));
    }

    #[test]
    fn absolute_parent_and_linked_paths_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        let folder = outer.path().join("skill");
        fs_err::create_dir(&folder).unwrap();
        fs_err::write(folder.join("query.sql"), "SELECT 1").unwrap();
        fs_err::write(outer.path().join("secret.txt"), "hunter2").unwrap();
        assert!(inside(&folder, "query.sql").is_ok());
        for name in ["/etc/passwd", "../secret.txt", "./../secret.txt", "."] {
            let err = inside(&folder, name).unwrap_err();
            assert!(matches!(err, ConfineError::Outside { .. }), "{name}: {err}");
            assert!(!err.to_string().contains("hunter2"));
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outer.path().join("secret.txt"), folder.join("link.sql"))
                .unwrap();
            let err = inside(&folder, "link.sql").unwrap_err();
            assert!(matches!(err, ConfineError::Outside { .. }), "{err}");
            assert!(!is_file_inside(&folder, &folder.join("link.sql")));
            std::os::unix::fs::symlink(folder.join("query.sql"), folder.join("inner.sql")).unwrap();
            assert!(inside(&folder, "inner.sql").is_ok());
        }
        assert!(matches!(
            inside(&folder, "missing.sql").unwrap_err(),
            ConfineError::Io { .. }
        ));
    }
}
