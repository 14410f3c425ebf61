//! Agent Skills portability: one document valid for strict Agent Skills hosts (the
//! reference validator `skills-ref`, Claude Code, Codex) and runnable here. How the
//! host reads its own fields from `metadata` is [`crate::host::agent_skills`].
//!
//! - [`portability_problems`]: what a strict Agent Skills host rejects (the rules of
//!   `skills-ref validate` 0.1.5, plus string-only `metadata` values).
//! - [`export`]: a spec-clean copy of a skill folder: every host field moved into
//!   `metadata`, schemas into `references/*.json`, the body and other files unchanged.
//!
//! Knows nothing of engines, MCP or the CLI.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::confine::{inside, ConfineError};
use crate::host::agent_skills::AGENT_SKILLS_FIELDS;
use crate::host::{Diagnostic, SkillDoc};
use crate::walk::{files_below, Hidden};

/// Fields written as files under `references/` by [`export`].
const SCHEMA_FIELDS: [&str; 2] = ["input-schema", "output-schema"];

/// The first YAML anchor (`&a`), alias (`*a`) or tag (`!t`) in `src`, outside quoted
/// strings and comments: `(1-based line, "anchor"|"alias"|"tag")`. A lexical scan: a
/// node property starts a value (after `: `, `- `, `[`, `{`, `,` or at the line start)
/// and is followed at once by a name character.
fn yaml_node_properties(src: &str) -> Option<(usize, &'static str)> {
    for (i, line) in src.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        let chars: Vec<char> = line.chars().collect();
        for (j, &c) in chars.iter().enumerate() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '"' || c == '\'' => quote = Some(c),
                None if c == '#' && prev.is_whitespace() => break,
                None if matches!(c, '&' | '*' | '!')
                    && (j == 0 || matches!(prev, ' ' | '\t' | '[' | '{' | ','))
                    && chars.get(j + 1).is_some_and(|n| {
                        n.is_alphanumeric() || matches!(n, '_' | '-' | '!' | '<')
                    }) =>
                {
                    let what = match c {
                        '&' => "anchor",
                        '*' => "alias",
                        _ => "tag",
                    };
                    return Some((i + 1, what));
                }
                None => {}
            }
            prev = c;
        }
    }
    None
}

/// What a strict Agent Skills host would reject in `doc` (empty when portable): fields
/// outside `name`, `description`, `license`, `compatibility`, `metadata`,
/// `allowed-tools`; a name that is not lowercase letters, digits and single inner
/// hyphens, longer than 64 characters, or not the folder's name; an empty or over-long
/// (1024) description; a `compatibility` that is not a string of at most 500
/// characters; `metadata` that is not a mapping of strings; YAML anchors, aliases or
/// tags (which skill clients refuse to read); a file of the folder (e.g. under
/// `references/`) that resolves through a link outside it (one diagnostic on that file).
pub fn portability_problems(doc: &SkillDoc) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (file, confined) in folder_files(doc) {
        if let Err(e) = confined {
            out.push(Diagnostic::new(&file, "", None, e.to_string()));
        }
    }
    if let Some((line, what)) = yaml_node_properties(&doc.frontmatter_src) {
        // Lines of the frontmatter start at the document's line 2.
        out.push(Diagnostic::new(
            &doc.path,
            "",
            Some(line + 1),
            format!(
                "YAML {what} in the frontmatter: skill clients reject them (the MCP TypeScript SDK's SkillsClient: \"anchors, aliases and tags are not supported\"); write the values out"
            ),
        ));
    }
    let mut problem = |field: &str, reason: String| {
        let top = field
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("");
        out.push(Diagnostic::new(
            &doc.path,
            field,
            doc.field_line(top).or(Some(2)),
            reason,
        ));
    };
    let Value::Object(top) = &doc.frontmatter else {
        problem("", "frontmatter must be a YAML mapping".to_owned());
        return out;
    };
    let extra: Vec<&str> = top
        .keys()
        .map(String::as_str)
        .filter(|k| !AGENT_SKILLS_FIELDS.contains(k))
        .collect();
    if !extra.is_empty() {
        problem(
            "",
            format!(
                "fields outside the Agent Skills specification: {}; only {} are allowed (move them into `metadata`: `skills export --agent-skills DIR` does it)",
                extra.join(", "),
                AGENT_SKILLS_FIELDS.join(", ")
            ),
        );
    }
    match top.get("name").and_then(Value::as_str) {
        None => problem("/name", "`name` must be a non-empty string".to_owned()),
        Some(name) => {
            if let Some(reason) = name_problem(name) {
                problem("/name", reason);
            }
            let folder = doc
                .path
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .unwrap_or("");
            if name != folder {
                problem(
                    "/name",
                    format!("name `{name}` must equal the folder name `{folder}`"),
                );
            }
        }
    }
    match top.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => {
            let n = d.chars().count();
            if n > 1024 {
                problem(
                    "/description",
                    format!("description has {n} characters, at most 1024 are allowed"),
                );
            }
        }
        _ => problem(
            "/description",
            "`description` must be a non-empty string".to_owned(),
        ),
    }
    if let Some(c) = top.get("compatibility") {
        match c.as_str() {
            Some(c) if c.chars().count() <= 500 => {}
            Some(c) => problem(
                "/compatibility",
                format!(
                    "compatibility has {} characters, at most 500 are allowed",
                    c.chars().count()
                ),
            ),
            None => problem(
                "/compatibility",
                "`compatibility` must be a string".to_owned(),
            ),
        }
    }
    match top.get("metadata") {
        None => {}
        Some(Value::Object(entries)) => {
            for (key, value) in entries {
                if !value.is_string() {
                    problem(
                        &format!("/metadata/{key}"),
                        format!(
                            "metadata values must be strings, `{key}` is {}",
                            json_kind(value)
                        ),
                    );
                }
            }
        }
        Some(other) => problem(
            "/metadata",
            format!("`metadata` must be a mapping, found {}", json_kind(other)),
        ),
    }
    out
}

fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("`name` must be a non-empty string".to_owned());
    }
    if name.chars().count() > 64 {
        return Some(format!("name `{name}` is longer than 64 characters"));
    }
    if name != name.to_lowercase() {
        return Some(format!("name `{name}` must be lowercase"));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some(format!(
            "name `{name}` must not start or end with a hyphen or contain `--`"
        ));
    }
    if !name.chars().all(|c| c.is_alphanumeric() || c == '-') {
        return Some(format!(
            "name `{name}` may contain only letters, digits and hyphens"
        ));
    }
    None
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The non-hidden files of the folder holding `doc`, each with
/// [`crate::confine::inside`]'s answer: the canonical path inside the folder, or why
/// it is not (a link resolving outside, a name that cannot be resolved).
fn folder_files(doc: &SkillDoc) -> Vec<(PathBuf, Result<PathBuf, ConfineError>)> {
    let folder = doc.path.parent().unwrap_or_else(|| Path::new("."));
    files_below(folder, Hidden::Skip)
        .files
        .into_iter()
        .filter_map(|file| {
            let rel = file
                .strip_prefix(folder)
                .ok()?
                .to_string_lossy()
                .into_owned();
            let confined = inside(folder, &rel);
            Some((file, confined))
        })
        .collect()
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Reading the source folder or writing the copy failed (the error names the file).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A file of the skill folder resolves (through a link) outside it, or cannot be
    /// resolved; nothing was written.
    #[error(transparent)]
    Outside(#[from] ConfineError),
    /// The rewritten frontmatter could not be written as YAML.
    #[error("`{file}`: cannot write the frontmatter as YAML: {reason}")]
    Yaml {
        /// The document.
        file: PathBuf,
        /// The serializer's message.
        reason: String,
    },
}

/// The portable frontmatter of `doc` and the reference files it points to: Agent
/// Skills fields kept in order; every other field moved into `metadata` (strings as
/// they are, lists and mappings as compact JSON text, `input-schema` and
/// `output-schema` as `references/<field>.json`); existing non-string `metadata`
/// values become JSON text.
///
/// Returns (frontmatter, [(relative path, file text)]).
pub fn portable_frontmatter(doc: &SkillDoc) -> (Value, Vec<(String, String)>) {
    let Value::Object(top) = &doc.frontmatter else {
        return (doc.frontmatter.clone(), Vec::new());
    };
    let mut out = Map::new();
    let mut metadata = Map::new();
    if let Some(Value::Object(existing)) = top.get("metadata") {
        for (k, v) in existing {
            metadata.insert(k.clone(), Value::String(as_text(v)));
        }
    }
    let mut files = Vec::new();
    for (key, value) in top {
        if key == "metadata" {
            continue;
        }
        if AGENT_SKILLS_FIELDS.contains(&key.as_str()) {
            out.insert(key.clone(), value.clone());
            continue;
        }
        let text = if SCHEMA_FIELDS.contains(&key.as_str()) {
            let rel = format!("references/{key}.json");
            let mut json = serde_json::to_string_pretty(value).unwrap_or_default();
            json.push('\n');
            files.push((rel.clone(), json));
            rel
        } else {
            as_text(value)
        };
        metadata.insert(key.clone(), Value::String(text));
    }
    if !metadata.is_empty() {
        out.insert("metadata".to_owned(), Value::Object(metadata));
    }
    (Value::Object(out), files)
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Writes a spec-clean copy of the skill folder holding `doc` into `out/<name>/`:
/// `SKILL.md` with [`portable_frontmatter`] and the body unchanged, the reference
/// files, `extra` files (relative path, text; e.g. the rendered docs page), and every
/// other non-hidden file copied as is. Returns the files written, sorted.
///
/// # Errors
/// [`ExportError::Outside`] before anything is written when a file of the folder
/// resolves outside it (a link under `references/` to `/etc/passwd` is not copied);
/// [`ExportError::Io`] when a file cannot be read or written.
pub fn export(
    doc: &SkillDoc,
    name: &str,
    out: &Path,
    extra: &[(String, String)],
) -> Result<Vec<PathBuf>, ExportError> {
    let src = doc.path.parent().unwrap_or_else(|| Path::new("."));
    let dest = out.join(name);
    let mut files = Vec::new();
    for (file, confined) in folder_files(doc) {
        confined?;
        files.push(file);
    }
    let mut written = Vec::new();
    for file in files {
        let Ok(rel) = file.strip_prefix(src) else {
            continue;
        };
        if rel == Path::new("SKILL.md") {
            continue;
        }
        let target = dest.join(rel);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::copy(&file, &target)?;
        written.push(target);
    }
    let (frontmatter, references) = portable_frontmatter(doc);
    for (rel, text) in references.iter().chain(extra) {
        let target = dest.join(rel);
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&target, text)?;
        if !written.contains(&target) {
            written.push(target);
        }
    }
    let yaml = yaml_serde::to_string(&frontmatter).map_err(|e| ExportError::Yaml {
        file: doc.path.clone(),
        reason: e.to_string(),
    })?;
    let skill_md = dest.join("SKILL.md");
    fs_err::create_dir_all(&dest)?;
    fs_err::write(&skill_md, format!("---\n{yaml}---\n{}", doc.body))?;
    written.push(skill_md);
    written.sort();
    Ok(written)
}

#[cfg(test)]
mod tests {

    #[test]
    fn yaml_anchors_aliases_and_tags_are_found_outside_quotes() {
        assert_eq!(
            yaml_node_properties("a: 1\nitem: &m\n  x: 1"),
            Some((2, "anchor"))
        );
        assert_eq!(yaml_node_properties("- item: *m"), Some((1, "alias")));
        assert_eq!(yaml_node_properties("x: !!str 3"), Some((1, "tag")));
        assert_eq!(yaml_node_properties("x: [a, *b]"), Some((1, "alias")));
        for clean in [
            "d: \"a &b *c !d\"",
            "d: 'x *y'",
            "d: a * b & c",
            "d: x # *comment",
            "citation: \"[memory {{ row.id }}]\"",
            "d: a&b",
        ] {
            assert_eq!(yaml_node_properties(clean), None, "{clean}");
        }
    }

    use super::*;

    fn doc(dir: &Path, text: &str) -> SkillDoc {
        SkillDoc::parse(&dir.join("SKILL.md"), text).unwrap()
    }

    #[test]
    fn portability_problems_follow_the_reference_validator() {
        let tmp = tempfile::tempdir().unwrap();
        let d = doc(
            &tmp.path().join("Demo"),
            "---\nname: Demo\ndescription: ''\nlayer: L1\nengine: sql\nmetadata:\n  n: 3\n---\n",
        );
        let problems = portability_problems(&d);
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 4, "{text:#?}");
        assert!(text[0].contains("layer, engine"), "{}", text[0]);
        assert!(text[1].contains("must be lowercase"), "{}", text[1]);
        assert!(text[2].contains("non-empty"), "{}", text[2]);
        assert!(text[3].contains("must be strings"), "{}", text[3]);
        let ok = doc(
            &tmp.path().join("demo"),
            "---\nname: demo\ndescription: d\nlicense: MIT\nmetadata:\n  engine: sql\n---\n",
        );
        assert!(portability_problems(&ok).is_empty());
    }

    #[test]
    fn exported_frontmatter_reads_back_to_the_same_fields() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src/demo");
        fs_err::create_dir_all(&src).unwrap();
        let text = "---\nname: demo\ndescription: d\nlayer: L1\nreads: [a, b]\nengine: sql\nannotations: {read-only: true}\ninput-schema:\n  type: object\n  properties: {q: {enum: [x, null]}}\nmetadata:\n  version: 2\n---\n# body\n";
        fs_err::write(src.join("SKILL.md"), text).unwrap();
        fs_err::write(src.join("query.sql"), "SELECT 1").unwrap();
        let original = SkillDoc::read(&src.join("SKILL.md")).unwrap();
        let out = tmp.path().join("out");
        let files = export(&original, "demo", &out, &[]).unwrap();
        assert_eq!(
            files,
            [
                out.join("demo/SKILL.md"),
                out.join("demo/query.sql"),
                out.join("demo/references/input-schema.json")
            ]
        );
        let copy = SkillDoc::read(&out.join("demo/SKILL.md")).unwrap();
        assert!(
            portability_problems(&copy).is_empty(),
            "{:?}",
            portability_problems(&copy)
        );
        assert_eq!(copy.body, original.body);
        let fm = crate::host::agent_skills::effective_frontmatter(&copy).unwrap();
        for field in ["layer", "reads", "engine", "annotations", "input-schema"] {
            assert_eq!(fm[field], original.frontmatter[field], "{field}");
        }
        assert_eq!(fm["metadata"]["version"], "2");
    }

    #[cfg(unix)]
    #[test]
    fn a_reference_linking_outside_the_folder_is_refused_by_export_and_validate() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src/demo");
        fs_err::create_dir_all(src.join("references")).unwrap();
        fs_err::write(tmp.path().join("secret.txt"), "hunter2").unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("secret.txt"),
            src.join("references/notes.md"),
        )
        .unwrap();
        fs_err::write(
            src.join("SKILL.md"),
            "---\nname: demo\ndescription: d\n---\n# body\n",
        )
        .unwrap();
        let original = SkillDoc::read(&src.join("SKILL.md")).unwrap();
        let problems = portability_problems(&original);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, src.join("references/notes.md"));
        assert!(
            problems[0].reason.contains("outside the skill folder"),
            "{}",
            problems[0]
        );
        let out = tmp.path().join("out");
        let err = export(&original, "demo", &out, &[]).unwrap_err();
        assert!(matches!(err, ExportError::Outside(_)), "{err}");
        assert!(err.to_string().contains("references/notes.md"), "{err}");
        assert!(!err.to_string().contains("hunter2"));
        assert!(!out.exists(), "nothing is written");
        // A link that stays inside the folder is an ordinary file of the skill.
        fs_err::remove_file(src.join("references/notes.md")).unwrap();
        fs_err::write(src.join("notes.md"), "inside").unwrap();
        std::os::unix::fs::symlink(src.join("notes.md"), src.join("references/notes.md")).unwrap();
        assert!(portability_problems(&original).is_empty());
        export(&original, "demo", &out, &[]).unwrap();
        assert_eq!(
            fs_err::read_to_string(out.join("demo/references/notes.md")).unwrap(),
            "inside"
        );
    }
}
