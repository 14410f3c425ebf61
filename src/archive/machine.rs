//! Who pushes: a stable machine id made once per data folder (file `machine-id`, 16
//! random bytes as hex), the host's name as a readable label, and the user. Every row
//! a push writes carries the id and the user; the archive's `machines` table maps the
//! id to its label (`SKILLS_MACHINE_NAME`, else the host name). Two data folders on one host are two machines (they hold
//! different stores); a host renamed keeps its id.

use std::path::Path;

use super::ArchiveError;
use crate::settings;

/// File in the data folder holding the machine id.
pub const MACHINE_ID_FILE: &str = "machine-id";

/// This data folder's identity in the archive.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Machine {
    /// 32 lowercase hex digits, made once per data folder.
    pub id: String,
    /// The host's name (`/etc/hostname`, `HOSTNAME`), for people.
    pub label: String,
    /// The user name (`USER`, `LOGNAME`).
    pub user: String,
}

impl Machine {
    /// The machine of the data folder holding `paths`' stores.
    ///
    /// # Errors
    /// As [`Machine::of_data_dir`].
    pub fn of_paths(paths: &crate::stores::StorePaths) -> Result<Self, ArchiveError> {
        let dir = paths
            .conversations
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        Self::of_data_dir(dir)
    }

    /// The machine of data folder `dir`: its id read from `dir/machine-id`, made (and
    /// the folder created) when missing; label and user from the system.
    ///
    /// # Errors
    /// [`ArchiveError`] when the file cannot be read or written, or holds something
    /// other than an id.
    pub fn of_data_dir(dir: &Path) -> Result<Self, ArchiveError> {
        let file = dir.join(MACHINE_ID_FILE);
        let id = match std::fs::read_to_string(&file) {
            Ok(text) => {
                let id = text.trim().to_owned();
                if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(ArchiveError::new(format!(
                        "{} does not hold a machine id (32 hex digits); remove it to make a \
                         new one (this data folder then counts as a new machine)",
                        file.display()
                    )));
                }
                id.to_ascii_lowercase()
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => make_id(dir, &file)?,
            Err(e) => {
                return Err(ArchiveError::new(format!(
                    "cannot read {}: {e}",
                    file.display()
                )))
            }
        };
        Ok(Self {
            id,
            label: host_label(),
            user: super::connect::os_user().unwrap_or_else(|| "unknown".into()),
        })
    }
}

/// Writes a new id to `file` (atomically: a temp file renamed, and never over an id
/// another process wrote first).
fn make_id(dir: &Path, file: &Path) -> Result<String, ArchiveError> {
    let fail = |e: &dyn std::fmt::Display| {
        ArchiveError::new(format!("cannot write {}: {e}", file.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| fail(&e))?;
    let id = hex::encode(bytes);
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
    std::fs::write(tmp.path(), format!("{id}\n")).map_err(|e| fail(&e))?;
    match tmp.persist_noclobber(file) {
        Ok(_) => Ok(id),
        // Another process made one first: use it.
        Err(_) => {
            let text = std::fs::read_to_string(file).map_err(|e| fail(&e))?;
            Ok(text.trim().to_owned())
        }
    }
}

/// The machine's label: `SKILLS_MACHINE_NAME` when set (e.g. `laptop`), else the
/// host's name (`/etc/hostname`, else `HOSTNAME`), else `unknown`.
pub fn host_label() -> String {
    if let Some(name) = settings::machine_name() {
        return name;
    }
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| settings::HOSTNAME.text())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = Machine::of_data_dir(&dir.path().join("data")).unwrap();
        let b = Machine::of_data_dir(&dir.path().join("data")).unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        let other = Machine::of_data_dir(&dir.path().join("other")).unwrap();
        assert_ne!(a.id, other.id, "another data folder is another machine");
        std::fs::write(dir.path().join("data").join(MACHINE_ID_FILE), "garbage").unwrap();
        let e = Machine::of_data_dir(&dir.path().join("data")).unwrap_err();
        assert!(e.to_string().contains("machine id"), "{e}");
    }
}
