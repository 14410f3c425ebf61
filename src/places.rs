//! Folders of the user's environment that tools keep their files in, as data: a
//! [`Root`] names one (the home folder, a variable that moves it, the platform's or
//! XDG's configuration and data folders, the project), an [`Environment`] — home,
//! configuration folder, project folder and variables, captured once — resolves it.
//!
//! The importers' default transcript locations (`ingest::locations`) and the MCP
//! clients' config files (`setup::clients`) are both written as roots, so they follow
//! the same rules and a test points either at a fake home with one value.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// Where a folder starts.
#[derive(Debug, Clone, Copy)]
pub enum Root {
    /// `~/<path>` (`""`: the home itself).
    Home(&'static str),
    /// `$<var>` when set and not empty, else `~/<home>`.
    VarOrHome {
        /// The variable that moves the whole folder.
        var: &'static str,
        /// The folder below the home directory otherwise (`""`: the home itself).
        home: &'static str,
    },
    /// `<config>/<path>`: the platform's configuration folder (`$XDG_CONFIG_HOME`,
    /// default `~/.config`, on Linux; `~/Library/Application Support` on macOS;
    /// `%APPDATA%` on Windows), where VS Code-based editors keep `User/`.
    AppConfig(&'static str),
    /// `$XDG_CONFIG_HOME/<path>`, default `~/.config/<path>`, on every platform (tools
    /// that follow the XDG layout on macOS and Windows too).
    XdgConfig(&'static str),
    /// `$XDG_DATA_HOME/<path>`, default `~/.local/share/<path>`, on every platform.
    XdgData(&'static str),
    /// `$<var>` when set and not empty; nothing otherwise (exports people unzip
    /// anywhere).
    Var(&'static str),
    /// `<project>/<path>`: the project folder (the current folder; `""`: the folder
    /// itself).
    Project(&'static str),
}

impl Root {
    /// The folder as people read it, and the variable that moves it when one does:
    /// `~/.codex` and `CODEX_HOME`, `<config>/Code/User`, `~/.config/opencode` and
    /// `XDG_CONFIG_HOME`, `$SKILLS_CHATGPT_EXPORT`, `.cursor` (below the project).
    pub fn shown(self) -> (String, Option<&'static str>) {
        match self {
            Root::Home(rel) => (join("~", rel), None),
            Root::VarOrHome { var, home } => (join("~", home), Some(var)),
            Root::AppConfig(rel) => (join("<config>", rel), None),
            Root::XdgConfig(rel) => (join("~/.config", rel), Some("XDG_CONFIG_HOME")),
            Root::XdgData(rel) => (join("~/.local/share", rel), Some("XDG_DATA_HOME")),
            Root::Var(var) => (format!("${var}"), None),
            Root::Project(rel) => (rel.to_owned(), None),
        }
    }
}

/// `a/b`, or the one of them that is not empty.
pub fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a}/{b}"),
    }
}

/// What roots depend on: the home, configuration and project folders and the
/// environment variables.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// The home folder (`~`).
    pub home: Option<PathBuf>,
    /// The platform's configuration folder (see [`Root::AppConfig`]).
    pub config: Option<PathBuf>,
    /// The project folder ([`Root::Project`]).
    pub project: PathBuf,
    /// Environment variables (`PATH` among them).
    pub vars: BTreeMap<String, OsString>,
}

impl Environment {
    /// This process's environment: `HOME`, `dirs::config_dir()`, the current folder,
    /// the variables.
    pub fn current() -> Self {
        Self {
            home: dirs::home_dir(),
            config: dirs::config_dir(),
            project: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
                .collect(),
        }
    }

    /// A variable's value as a path, when set and not empty.
    pub fn var(&self, name: &str) -> Option<PathBuf> {
        self.vars
            .get(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// The folder `root` names here; `None` when the folder or variable it needs is
    /// unknown. An XDG variable holding a relative path is ignored, as the XDG base
    /// directory specification says.
    pub fn resolve(&self, root: Root) -> Option<PathBuf> {
        let below = |base: &PathBuf, rel: &str| {
            if rel.is_empty() {
                base.clone()
            } else {
                base.join(rel)
            }
        };
        let home = |rel: &str| self.home.as_ref().map(|h| below(h, rel));
        let xdg = |var: &str, default: &str, rel: &str| {
            self.var(var)
                .filter(|d| d.is_absolute())
                .or_else(|| home(default))
                .map(|d| below(&d, rel))
        };
        match root {
            Root::Home(rel) => home(rel),
            Root::VarOrHome { var, home: rel } => self.var(var).or_else(|| home(rel)),
            Root::AppConfig(rel) => self.config.as_ref().map(|c| below(c, rel)),
            Root::XdgConfig(rel) => xdg("XDG_CONFIG_HOME", ".config", rel),
            Root::XdgData(rel) => xdg("XDG_DATA_HOME", ".local/share", rel),
            Root::Var(var) => self.var(var),
            Root::Project(rel) => Some(below(&self.project, rel)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_resolve_against_the_environment() {
        let mut env = Environment {
            home: Some(PathBuf::from("/h")),
            config: Some(PathBuf::from("/h/.config")),
            project: PathBuf::from("/p"),
            vars: BTreeMap::new(),
        };
        let resolve = |env: &Environment, root| env.resolve(root).map(|p| p.display().to_string());
        assert_eq!(resolve(&env, Root::Home("")).as_deref(), Some("/h"));
        assert_eq!(resolve(&env, Root::Home(".pi")).as_deref(), Some("/h/.pi"));
        let codex = Root::VarOrHome {
            var: "CODEX_HOME",
            home: ".codex",
        };
        assert_eq!(resolve(&env, codex).as_deref(), Some("/h/.codex"));
        assert_eq!(resolve(&env, Root::Var("X")), None);
        assert_eq!(
            resolve(&env, Root::XdgData("amp")).as_deref(),
            Some("/h/.local/share/amp")
        );
        assert_eq!(resolve(&env, Root::Project("")).as_deref(), Some("/p"));
        env.vars.insert("CODEX_HOME".into(), "/c".into());
        env.vars.insert("X".into(), "".into());
        env.vars.insert("XDG_DATA_HOME".into(), "relative".into());
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        assert_eq!(resolve(&env, codex).as_deref(), Some("/c"));
        assert_eq!(resolve(&env, Root::Var("X")), None, "empty is unset");
        assert_eq!(
            resolve(&env, Root::XdgData("amp")).as_deref(),
            Some("/h/.local/share/amp"),
            "a relative XDG path is ignored"
        );
        assert_eq!(
            resolve(&env, Root::XdgConfig("opencode")).as_deref(),
            Some("/x/opencode")
        );
        assert_eq!(Root::Home("").shown(), ("~".to_owned(), None));
        assert_eq!(codex.shown(), ("~/.codex".to_owned(), Some("CODEX_HOME")));
        assert_eq!(Root::AppConfig("").shown(), ("<config>".to_owned(), None));
    }
}
