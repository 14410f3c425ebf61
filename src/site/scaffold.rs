//! `skills new`: scaffolds a drop-in skill folder that validates and verifies as
//! generated: `sql` (document, query, template, conformance binding) or `compose` (a
//! composition of memo-search and search-conversations: document, template, binding).

use std::path::{Path, PathBuf};

const SQL_SKILL: &str = include_str!("../../templates/new-sql/SKILL.md.j2");
const SQL_QUERY: &str = include_str!("../../templates/new-sql/query.sql");
const SQL_TEMPLATE: &str = include_str!("../../templates/new-sql/template.md.j2");
const SQL_CONFORMANCE: &str = include_str!("../../templates/new-sql/conformance.yaml.j2");
const COMPOSE_SKILL: &str = include_str!("../../templates/new-compose/SKILL.md.j2");
const COMPOSE_TEMPLATE: &str = include_str!("../../templates/new-compose/template.md.j2");
const COMPOSE_CONFORMANCE: &str = include_str!("../../templates/new-compose/conformance.yaml.j2");

/// Engines `skills new --engine` scaffolds.
pub const ENGINES: &[&str] = &["sql", "compose"];

/// Why a skill could not be scaffolded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaffoldError {
    /// The name breaks the Agent Skills rules.
    #[error("invalid skill name `{0}`: use lowercase letters, digits and single hyphens, at most 64 characters")]
    InvalidName(String),
    /// The folder already exists; nothing is overwritten.
    #[error("`{0}` already exists; choose another name or remove it")]
    Exists(PathBuf),
    /// No scaffold for this engine.
    #[error("no scaffold for engine `{0}`; available: sql, compose")]
    UnknownEngine(String),
    /// A scaffold template failed to render.
    #[error("scaffold template: {0:#}")]
    Template(#[from] minijinja::Error),
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// True when `name` follows the Agent Skills rules (lowercase letters, digits and
/// single hyphens, 1–64 characters, no leading or trailing hyphen).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Creates `<skills_dir>/<name>/` for `engine` and returns the files written.
///
/// # Errors
/// [`ScaffoldError`]: bad name, existing folder (never overwritten), unknown engine, IO.
pub fn new_skill(
    skills_dir: &Path,
    name: &str,
    engine: &str,
) -> Result<Vec<PathBuf>, ScaffoldError> {
    if !valid_name(name) {
        return Err(ScaffoldError::InvalidName(name.to_owned()));
    }
    if !ENGINES.contains(&engine) {
        return Err(ScaffoldError::UnknownEngine(engine.to_owned()));
    }
    let dir = skills_dir.join(name);
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir));
    }
    let title = {
        let words: Vec<String> = name.split('-').map(str::to_owned).collect();
        let mut t = words.join(" ");
        if let Some(first) = t.get(..1) {
            t = format!("{}{}", first.to_uppercase(), &t[1..]);
        }
        t
    };
    let ctx = minijinja::context! { name => name, title => title, tool => name.replace('-', "_") };
    let env = minijinja::Environment::new();
    let files = if engine == "compose" {
        vec![
            ("SKILL.md", env.render_str(COMPOSE_SKILL, &ctx)?),
            ("template.md.j2", COMPOSE_TEMPLATE.to_owned()),
            (
                "conformance.yaml",
                env.render_str(COMPOSE_CONFORMANCE, &ctx)?,
            ),
        ]
    } else {
        vec![
            ("SKILL.md", env.render_str(SQL_SKILL, &ctx)?),
            ("query.sql", SQL_QUERY.to_owned()),
            ("template.md.j2", SQL_TEMPLATE.to_owned()),
            ("conformance.yaml", env.render_str(SQL_CONFORMANCE, &ctx)?),
        ]
    };
    fs_err::create_dir_all(&dir)?;
    let mut written = Vec::new();
    for (file, text) in files {
        let path = dir.join(file);
        fs_err::write(&path, format!("{}\n", text.trim_end()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_agent_skills_rules() {
        assert!(valid_name("recent-messages"));
        assert!(valid_name("a1"));
        for bad in ["", "Upper", "a--b", "-a", "a-", "a_b", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
