//! The default transcript locations as something to watch (`skills serve` keeps the
//! store current with them): the folders to watch, and whether a changed path is one
//! of the transcripts [`super::discover`] would list. Both come from the importers'
//! [`super::locations::Location`] data, so watching and `skills ingest` with no path
//! cover the same files.

use std::path::{Path, PathBuf};

use super::locations;
use crate::places::Environment;

/// The default locations of every importer, resolved in one environment (home,
/// configuration folder, variables) captured at [`DefaultLocations::current`].
#[derive(Debug, Clone)]
pub struct DefaultLocations {
    env: Environment,
}

impl DefaultLocations {
    /// The locations in this process's environment.
    pub fn current() -> Self {
        Self {
            env: Environment::current(),
        }
    }

    /// The locations for home folder `home` and configuration folder `config`, with
    /// no environment variables (tests).
    pub fn in_home(home: &Path, config: &Path) -> Self {
        Self {
            env: Environment {
                home: Some(home.to_path_buf()),
                config: Some(config.to_path_buf()),
                ..Environment::default()
            },
        }
    }

    /// Existing folders (or single files) to watch, each the deepest fixed folder of a
    /// location's pattern (`~/.claude/projects` for `projects/**/*.jsonl`), without
    /// duplicates or paths inside another one listed. Lists no folder's entries.
    pub fn watch_paths(&self) -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = super::formats::IMPORTERS
            .iter()
            .flat_map(|importer| importer.about().locations)
            .flat_map(|location| locations::watch_paths(location, &self.env))
            .collect();
        all.sort();
        all.dedup();
        let mut out: Vec<PathBuf> = Vec::new();
        for path in all {
            // Sorted: a folder comes before the paths inside it.
            if !out.iter().any(|kept| path.starts_with(kept)) {
                out.push(path);
            }
        }
        out
    }

    /// True when `path` (absolute) is a transcript of a default location: the files
    /// `skills ingest` with no path would import, were `path` to exist.
    pub fn names(&self, path: &Path) -> bool {
        super::formats::IMPORTERS
            .iter()
            .flat_map(|importer| importer.about().locations)
            .any(|location| locations::names(location, &self.env, path))
    }

    /// The existing transcripts of every default location ([`super::discover`] in
    /// this environment).
    pub fn files(&self) -> Vec<PathBuf> {
        super::discover_in(&self.env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_projects_are_watched_and_their_sessions_named() {
        let home = tempfile::tempdir().expect("temp dir");
        let config = home.path().join(".config");
        let projects = home.path().join(".claude/projects");
        fs_err::create_dir_all(projects.join("-work-demo")).expect("mkdir");
        let locations = DefaultLocations::in_home(home.path(), &config);
        assert_eq!(locations.watch_paths(), vec![projects.clone()]);
        assert!(locations.names(&projects.join("-work-demo/s1.jsonl")));
        assert!(locations.names(&projects.join("a/b/subagents/s2.jsonl")));
        assert!(!locations.names(&projects.join("-work-demo/notes.txt")));
        assert!(!locations.names(&home.path().join(".claude/settings.jsonl")));
        assert!(!locations.names(Path::new("/elsewhere/s1.jsonl")));
    }

    #[test]
    fn fixed_folders_with_alternatives_are_watched_only_where_they_exist() {
        let home = tempfile::tempdir().expect("temp dir");
        let config = home.path().join(".config");
        // Cline: `{Code,…,Windsurf}/User/globalStorage/saoudrizwan.claude-dev/tasks/*/ui_messages.json`.
        let tasks = config.join("Windsurf/User/globalStorage/saoudrizwan.claude-dev/tasks");
        fs_err::create_dir_all(&tasks).expect("mkdir");
        let locations = DefaultLocations::in_home(home.path(), &config);
        assert_eq!(locations.watch_paths(), vec![tasks.clone()]);
        assert!(locations.names(&tasks.join("t1/ui_messages.json")));
        assert!(!locations.names(&tasks.join("t1/api_history.json")));
        // The whole configuration folder is never watched.
        assert!(!locations.watch_paths().contains(&config));
    }

    #[test]
    fn a_database_that_supersedes_files_shadows_them() {
        let home = tempfile::tempdir().expect("temp dir");
        let config = home.path().join(".config");
        let opencode = home.path().join(".local/share/opencode");
        let message = opencode.join("storage/message/s1/m1.json");
        fs_err::create_dir_all(message.parent().expect("parent")).expect("mkdir");
        let locations = DefaultLocations::in_home(home.path(), &config);
        assert!(locations.names(&message));
        fs_err::write(opencode.join("opencode.db"), b"").expect("write");
        assert!(!locations.names(&message));
        assert!(locations.names(&opencode.join("opencode.db")));
    }
}
