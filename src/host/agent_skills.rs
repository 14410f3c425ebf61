//! The Agent Skills format as this host reads it: the fields the specification
//! defines ([`AGENT_SKILLS_FIELDS`]) and the host's own fields (`engine`,
//! `input-schema`, …) written inside `metadata`, Agent Skills' extension point, so one
//! document is valid for strict Agent Skills hosts and runnable here
//! ([`effective_frontmatter`]). `metadata` values are strings: a plain string for
//! string fields; JSON or YAML text, or the path of a `.json`/`.yaml` file in the
//! skill folder (e.g. `references/input-schema.json`), for lists and schemas. A
//! top-level field wins over the same key in `metadata`.
//!
//! Checking a document against strict hosts and exporting a spec-clean copy is
//! [`crate::site::portable`]; the MCP skill entries use the field list too.

use std::path::Path;

use serde_json::Value;

use super::document::{Diagnostic, SkillDoc};

/// Frontmatter fields the Agent Skills specification defines; every other field is
/// this host's (served under the SEP-2640 `_meta` prefix on the `SKILL.md` resource,
/// moved into `metadata` by an export).
pub const AGENT_SKILLS_FIELDS: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// How a host field is written inside `metadata`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The string itself.
    Text,
    /// JSON/YAML text, or a path to a `.json`/`.yaml`/`.yml` file in the skill folder.
    Structured,
}

/// The host's frontmatter fields that may come from `metadata`, and how each is written.
const HOST_FIELDS: [(&str, Kind); 13] = [
    ("title", Kind::Text),
    ("layer", Kind::Text),
    ("reads", Kind::Structured),
    ("writes", Kind::Structured),
    ("citations", Kind::Text),
    ("determinism", Kind::Text),
    ("engine", Kind::Text),
    ("engine-options", Kind::Structured),
    ("template", Kind::Text),
    ("annotations", Kind::Structured),
    ("page", Kind::Structured),
    ("input-schema", Kind::Structured),
    ("output-schema", Kind::Structured),
];

/// The frontmatter the host validates and binds: the document's own, with each host
/// field absent at the top level taken from `metadata` (see the module docs).
///
/// # Errors
/// One [`Diagnostic`] per `metadata` entry that cannot be read: a structured field
/// whose text parses as neither JSON nor YAML, or names a file that cannot be read.
pub fn effective_frontmatter(doc: &SkillDoc) -> Result<Value, Vec<Diagnostic>> {
    let Value::Object(top) = &doc.frontmatter else {
        return Ok(doc.frontmatter.clone());
    };
    let Some(Value::Object(metadata)) = top.get("metadata") else {
        return Ok(doc.frontmatter.clone());
    };
    let dir = doc.path.parent().unwrap_or_else(|| Path::new("."));
    let mut out = top.clone();
    let mut diags = Vec::new();
    for (field, kind) in HOST_FIELDS {
        if top.contains_key(field) {
            continue;
        }
        let Some(Value::String(text)) = metadata.get(field) else {
            continue;
        };
        let value = match kind {
            Kind::Text => Ok(Value::String(text.clone())),
            Kind::Structured => structured(dir, text),
        };
        match value {
            Ok(v) => {
                out.insert(field.to_owned(), v);
            }
            Err(reason) => diags.push(Diagnostic::new(
                &doc.path,
                format!("/metadata/{field}"),
                doc.field_line("metadata"),
                reason,
            )),
        }
    }
    if diags.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(diags)
    }
}

/// A structured `metadata` value: a file in the skill folder, or JSON/YAML text.
fn structured(dir: &Path, text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let is_path = !trimmed.contains('\n')
        && [".json", ".yaml", ".yml"]
            .iter()
            .any(|ext| trimmed.ends_with(ext));
    if is_path {
        // Resolved with every link followed: a `references/` entry linking outside the
        // folder is refused like `../x.json`.
        let path = crate::confine::inside(dir, trimmed).map_err(|e| match e {
            crate::confine::ConfineError::Outside { .. } => format!(
                "{e}; write a path inside the skill folder, e.g. `references/input-schema.json`"
            ),
            other => format!("cannot read: {other}"),
        })?;
        let source = fs_err::read_to_string(&path).map_err(|e| format!("cannot read: {e}"))?;
        return crate::yaml::parse::<Value>(&source)
            .map_err(|e| format!("`{trimmed}` is not JSON or YAML: {e}"));
    }
    match crate::yaml::parse::<Value>(text) {
        Ok(v @ (Value::Array(_) | Value::Object(_))) => Ok(v),
        Ok(_) => Err(
            "expected a list or mapping as JSON or YAML text, or the path of a `.json`/`.yaml` file in the skill folder"
                .to_owned(),
        ),
        Err(e) => Err(format!("not JSON or YAML: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(dir: &Path, text: &str) -> SkillDoc {
        SkillDoc::parse(&dir.join("SKILL.md"), text).unwrap()
    }

    #[test]
    fn host_fields_come_from_metadata() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        fs_err::create_dir_all(dir.join("references")).unwrap();
        fs_err::write(
            dir.join("references/input-schema.json"),
            r#"{"type": "object", "properties": {"q": {"type": "string"}}}"#,
        )
        .unwrap();
        let d = doc(
            &dir,
            "---\nname: demo\ndescription: d\nmetadata:\n  engine: sql\n  reads: '[\"L0.x\"]'\n  input-schema: references/input-schema.json\n  annotations: '{read-only: true}'\n  version: '2'\n---\nbody\n",
        );
        let fm = effective_frontmatter(&d).unwrap();
        assert_eq!(fm["engine"], "sql");
        assert_eq!(fm["reads"], serde_json::json!(["L0.x"]));
        assert_eq!(fm["input-schema"]["properties"]["q"]["type"], "string");
        assert_eq!(fm["annotations"]["read-only"], true);
        assert!(
            fm.get("version").is_none(),
            "other metadata stays in metadata"
        );
    }

    #[test]
    fn top_level_fields_win_and_bad_metadata_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        let d = doc(
            &dir,
            "---\nname: demo\ndescription: d\nengine: sql\nmetadata:\n  engine: other\n  reads: just words\n  input-schema: references/missing.json\n---\n",
        );
        let errs = effective_frontmatter(&d).unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["/metadata/reads", "/metadata/input-schema"]);
        assert!(errs[1].reason.contains("cannot read"), "{}", errs[1].reason);
    }

    #[cfg(unix)]
    #[test]
    fn a_metadata_file_linking_outside_the_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        fs_err::create_dir_all(dir.join("references")).unwrap();
        fs_err::write(tmp.path().join("schema.json"), r#"{"type": "object"}"#).unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("schema.json"),
            dir.join("references/input-schema.json"),
        )
        .unwrap();
        let d = doc(
            &dir,
            "---\nname: demo\ndescription: d\nmetadata:\n  input-schema: references/input-schema.json\n  reads: ../schema.json\n---\n",
        );
        let errs = effective_frontmatter(&d).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        for e in &errs {
            assert!(e.reason.contains("outside the skill folder"), "{e}");
        }
    }

    #[test]
    fn deep_metadata_text_is_refused_before_parsing() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = "[".repeat(100_000);
        let d = doc(
            &tmp.path().join("demo"),
            &format!("---\nname: demo\ndescription: d\nmetadata:\n  reads: '{deep}'\n---\n"),
        );
        let errs = effective_frontmatter(&d).unwrap_err();
        assert!(errs[0].reason.contains("nested deeper"), "{}", errs[0]);
    }
}
