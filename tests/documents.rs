//! Document loading and validation: a broken document is reported with file, field,
//! line and reason while the good ones beside it still load.

#![allow(clippy::unwrap_used)]

mod common;
use std::path::{Path, PathBuf};

use skills::engines::Context;
use skills::host::Host;
use skills::stores::StorePaths;

fn load(dir: &Path) -> Host {
    Host::load(dir, Context::new(StorePaths::in_dir(dir.join("data"))))
}

/// The host's diagnostic about `file`.
fn diagnostic<'h>(host: &'h Host, file: &Path) -> &'h skills::host::Diagnostic {
    host.diagnostics()
        .iter()
        .find(|d| d.file == file)
        .unwrap_or_else(|| panic!("no diagnostic about {}", file.display()))
}

fn add_doc(dir: &Path, folder: &str, text: &str) -> PathBuf {
    let d = dir.join(folder);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("template.md.j2"), "{{ data }}").unwrap();
    let p = d.join("SKILL.md");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn repository_skills_are_all_valid() {
    let host = common::bundled_host(Path::new("/nonexistent"));
    assert!(host.diagnostics().is_empty(), "{:#?}", host.diagnostics());
    assert!(host.get("search-conversations").is_some());
    assert_eq!(
        host.get("search_conversations").unwrap().name(),
        "search-conversations"
    );
}

#[test]
fn broken_document_is_reported_and_others_still_load() {
    let tmp = common::copy_skills();
    let good_count = load(tmp.path()).skills().len();
    let bad = add_doc(
        tmp.path(),
        "bad-limit",
        "---\nname: bad-limit\ndescription: x\nengine: search_conversations\nlayer: L9\ninput-schema:\n  type: object\n  properties: {}\n---\n# body\n",
    );
    let host = load(tmp.path());
    assert_eq!(host.skills().len(), good_count);
    let d = host
        .diagnostics()
        .iter()
        .find(|d| d.file == bad)
        .expect("diagnostic for the broken document");
    assert_eq!(d.field, "/layer");
    assert_eq!(d.line, Some(5));
    assert!(d.reason.contains("L9"), "{}", d.reason);
}

#[test]
fn yaml_syntax_error_names_the_line() {
    let tmp = common::copy_skills();
    let bad = add_doc(
        tmp.path(),
        "bad-yaml",
        "---\nname: bad-yaml\ndescription: [oops\nengine: x\n---\n",
    );
    let host = load(tmp.path());
    let d = host.diagnostics().iter().find(|d| d.file == bad).unwrap();
    assert!(
        d.reason.starts_with("invalid YAML frontmatter"),
        "{}",
        d.reason
    );
    assert!(d.line.is_some_and(|l| l >= 3), "{d:?}");
    assert!(host.get("search-conversations").is_some());
}

#[test]
fn name_rules_follow_agent_skills() {
    let tmp = common::copy_skills();
    let upper = add_doc(tmp.path(), "Upper", "---\nname: Upper\ndescription: x\nengine: search_conversations\ninput-schema: {type: object, properties: {}}\n---\n");
    let mismatch = add_doc(tmp.path(), "folder-a", "---\nname: folder-b\ndescription: x\nengine: search_conversations\ninput-schema: {type: object, properties: {}}\n---\n");
    let long = "d".repeat(1025);
    let long_desc = add_doc(tmp.path(), "long-desc", &format!("---\nname: long-desc\ndescription: {long}\nengine: search_conversations\ninput-schema: {{type: object, properties: {{}}}}\n---\n"));
    let host = load(tmp.path());
    let field_of = |p: &Path| {
        host.diagnostics()
            .iter()
            .find(|d| d.file == p)
            .map(|d| d.field.clone())
    };
    assert_eq!(field_of(&upper).as_deref(), Some("/name"));
    assert_eq!(field_of(&mismatch).as_deref(), Some("/name"));
    assert_eq!(field_of(&long_desc).as_deref(), Some("/description"));
    let d = diagnostic(&host, &mismatch);
    assert!(
        d.reason.contains("must equal the folder name `folder-a`"),
        "{}",
        d.reason
    );
}

#[test]
fn unknown_engine_and_missing_field_are_reported() {
    let tmp = common::copy_skills();
    let unknown = add_doc(tmp.path(), "ghost", "---\nname: ghost\ndescription: x\nengine: no_such_engine\ninput-schema: {type: object, properties: {}}\n---\n");
    let missing = add_doc(
        tmp.path(),
        "no-engine",
        "---\nname: no-engine\ndescription: x\ninput-schema: {type: object, properties: {}}\n---\n",
    );
    let host = load(tmp.path());
    let d = diagnostic(&host, &unknown);
    assert_eq!(d.field, "/engine");
    assert_eq!(d.line, Some(4));
    assert!(
        d.reason.contains("unknown engine `no_such_engine`"),
        "{}",
        d.reason
    );
    let d = diagnostic(&host, &missing);
    assert_eq!(d.field, "/engine");
    assert!(d.reason.contains("required"), "{}", d.reason);
}

#[test]
fn engine_without_document_is_reported() {
    let tmp = common::copy_skills();
    std::fs::remove_dir_all(tmp.path().join("search-conversations")).unwrap();
    let host = load(tmp.path());
    assert!(
        host.diagnostics().iter().any(|d| d.reason
            == "engine `search_conversations` is registered but no skill document binds to it"),
        "{:#?}",
        host.diagnostics()
    );
}

#[test]
fn invalid_input_schema_and_bad_template_are_reported() {
    let tmp = common::copy_skills();
    let bad_schema = add_doc(tmp.path(), "bad-schema", "---\nname: bad-schema\ndescription: x\nengine: search_conversations\ninput-schema:\n  type: object\n  properties:\n    limit: {type: integer, minimum: \"one\"}\n---\n");
    let bad_tpl = add_doc(tmp.path(), "bad-template", "---\nname: bad-template\ndescription: x\nengine: search_conversations\nreads: [conversations]\nallowed-tools: mcp__x__bad_template\ninput-schema: {type: object, properties: {}}\n---\n");
    std::fs::write(bad_tpl.with_file_name("template.md.j2"), "{% for %}").unwrap();
    let host = load(tmp.path());
    let d = diagnostic(&host, &bad_schema);
    assert!(d.field.starts_with("/input-schema"), "{d:?}");
    assert!(
        host.diagnostics()
            .iter()
            .any(|d| d.file.ends_with("bad-template/template.md.j2")
                && d.reason.contains("template does not parse")),
        "{:#?}",
        host.diagnostics()
    );
}
