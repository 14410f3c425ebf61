//! Engine `compose`: what the host refuses when it loads a composed skill (unknown
//! source, a call to itself, a cycle, undeclared reads, a read-only composition of a
//! writer, an `archive-only` argument missing from the input schema), a composed call
//! through the host's one call path, and `archive-only` arguments refused locally.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use serde_json::json;
use skills::engines::Context;
use skills::host::Host;
use skills::stores::StorePaths;

/// Copies bundled skill `name` into `dir`.
fn copy_skill(dir: &Path, name: &str) {
    let from = common::repo_skills().join(name);
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

/// Writes a composed skill `name` reading `reads`, writing nothing, calling `calls`.
fn composed(dir: &Path, name: &str, reads: &str, calls: &[&str]) {
    let sources: String = calls
        .iter()
        .map(|c| {
            format!(
                "    - skill: {c}\n      args: {{query: \"{{{{ question }}}}\"}}\n      rows: /hits\n      item: {{citation: \"[{{{{ row.id }}}}]\", text: \"{{{{ row.body }}}}\"}}\n"
            )
        })
        .collect();
    let doc = format!(
        "---\nname: {name}\ndescription: test composition\nreads: {reads}\nwrites: []\nengine: compose\nengine-options:\n  sources:\n{sources}input-schema:\n  type: object\n  additionalProperties: false\n  required: [question]\n  properties:\n    question: {{type: string}}\n    max_tokens: {{type: integer, default: 100}}\n---\n# {name}\n\n## Verification checklist\n- [ ] x\n"
    );
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("SKILL.md"), doc).unwrap();
    std::fs::write(folder.join("template.md.j2"), "{{ data.pack }}").unwrap();
}

fn load(dir: &Path, data: &Path) -> Host {
    Host::load(
        dir,
        Context::new(StorePaths::in_dir(data)).with_embedder(None),
    )
}

/// The host over `tmp/skills` holding copies of the bundled skills `bundled` and the
/// compositions `compositions` (name, reads, calls; see [`composed`]), its stores in
/// `tmp/data`.
fn host_with(tmp: &Path, bundled: &[&str], compositions: &[(&str, &str, &[&str])]) -> Host {
    let skills = tmp.join("skills");
    for name in bundled {
        copy_skill(&skills, name);
    }
    for (name, reads, calls) in compositions {
        composed(&skills, name, reads, calls);
    }
    load(&skills, &tmp.join("data"))
}

fn diagnostics(host: &Host) -> String {
    host.diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_composition_calling_itself_or_a_cycle_is_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(
        tmp.path(),
        &["memo-search"],
        &[
            ("self-call", "[memories]", &["self-call"]),
            ("ping", "[memories]", &["pong", "memo-search"]),
            ("pong", "[memories]", &["ping"]),
            ("fine", "[memories]", &["memo-search"]),
        ],
    );
    let diags = diagnostics(&host);
    assert!(
        diags.contains("skill `self-call` cannot call itself"),
        "{diags}"
    );
    assert!(diags.contains("/engine-options"), "{diags}");
    assert!(
        diags.contains("calls form a cycle: ping → pong → ping")
            || diags.contains("calls form a cycle: pong → ping → pong"),
        "{diags}"
    );
    for refused in ["self-call", "ping", "pong"] {
        assert!(host.get(refused).is_none(), "{refused} loaded");
    }
    assert!(host.get("fine").is_some(), "{diags}");
}

#[test]
fn unknown_sources_undeclared_reads_and_writers_are_refused_at_load() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(
        tmp.path(),
        &["memo-search", "memo-save"],
        &[
            ("ghost", "[memories]", &["no-such-skill"]),
            ("sneaky", "[conversations]", &["memo-search"]),
            ("writer", "[memories]", &["memo-save"]),
        ],
    );
    let diags = diagnostics(&host);
    assert!(
        diags.contains("calls skill `no-such-skill`, which is not loaded"),
        "{diags}"
    );
    assert!(
        diags.contains(
            "calls `memo-search`, which reads store `memories`; add `memories` to `reads`"
        ),
        "{diags}"
    );
    assert!(
        diags.contains("calls `memo-save`, which writes store `memories`, but `writes` is empty"),
        "{diags}"
    );
    for refused in ["ghost", "sneaky", "writer"] {
        assert!(host.get(refused).is_none(), "{refused} loaded");
    }
}

#[test]
fn a_composed_call_goes_through_the_host_and_skips_missing_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let host = host_with(
        tmp.path(),
        &["memo-search", "memo-save"],
        &[("fine", "[memories]", &["memo-search"])],
    );
    assert!(
        host.diagnostics().is_empty() || !diagnostics(&host).contains("fine"),
        "{}",
        diagnostics(&host)
    );
    let out = host.call("fine", json!({"question": "okapi"})).unwrap();
    assert_eq!(out.data["count"], 0);
    assert!(
        out.data["notes"][0]
            .as_str()
            .unwrap()
            .contains("`memo-search` skipped"),
        "{}",
        out.data
    );
    // Once the store exists the source's hits come back as cited entries.
    host.call(
        "memo-save",
        json!({"body": "Okapi live in the Ituri rainforest."}),
    )
    .unwrap();
    let out = host
        .call("fine", json!({"question": "okapi", "max_tokens": 100}))
        .unwrap();
    assert_eq!(out.data["count"], 1);
    assert!(
        out.data["pack"].as_str().unwrap().starts_with("- [m-"),
        "{}",
        out.data
    );
    assert!(out.data["tokens"].as_u64().unwrap() <= 100);
    // The composed skill's own arguments are validated first.
    let err = host
        .call("fine", json!({"question": 3}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`question`"), "{err}");
}

/// A source that refuses the arguments the composition passes on (the caller's
/// 1,500-character question as search-conversations' `term`, at most 1,000) is skipped
/// and named in `notes`; the other sources still answer.
#[test]
fn a_source_refusing_the_passed_on_arguments_is_skipped_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    for s in ["memo-search", "memo-save", "search-conversations"] {
        copy_skill(&skills, s);
    }
    let doc = "---\nname: both\ndescription: test composition\nreads: [memories, conversations]\nwrites: []\nengine: compose\nengine-options:\n  sources:\n    - skill: memo-search\n      args: {query: \"{{ question }}\"}\n      rows: /hits\n      item: {citation: \"[{{ row.id }}]\", text: \"{{ row.body }}\"}\n    - skill: search-conversations\n      args: {term: \"{{ question }}\"}\n      rows: /rows\n      item: {citation: \"[{{ row.conversation_id }}]\", text: \"{{ row.preview }}\"}\ninput-schema:\n  type: object\n  additionalProperties: false\n  required: [question]\n  properties:\n    question: {type: string, maxLength: 2000}\n    max_tokens: {type: integer, default: 100}\n---\n# both\n\n## Verification checklist\n- [ ] x\n";
    std::fs::create_dir_all(skills.join("both")).unwrap();
    std::fs::write(skills.join("both/SKILL.md"), doc).unwrap();
    std::fs::write(skills.join("both/template.md.j2"), "{{ data.pack }}").unwrap();
    let host = load(&skills, &tmp.path().join("data"));
    host.call(
        "memo-save",
        json!({"body": "Okapi live in the Ituri rainforest."}),
    )
    .unwrap();
    let question = "okapi ".repeat(250);
    let out = host
        .call("both", json!({"question": question, "max_tokens": 100}))
        .unwrap();
    assert_eq!(out.data["count"], 1, "{}", out.data);
    let notes = out.data["notes"].to_string();
    assert!(
        notes.contains("`search-conversations` skipped") && notes.contains("`term`"),
        "{notes}"
    );
}

#[test]
fn archive_only_arguments_come_from_the_document_and_are_refused_locally() {
    let tmp = tempfile::tempdir().unwrap();
    let skills = tmp.path().join("skills");
    copy_skill(&skills, "memo-search");
    composed(&skills, "team", "[memories]", &["memo-search"]);
    composed(&skills, "typo", "[memories]", &["memo-search"]);
    let add_option = |name: &str, option: &str, property: &str| {
        let file = skills.join(name).join("SKILL.md");
        let doc = std::fs::read_to_string(&file).unwrap();
        let doc = doc
            .replace("input-schema:", &format!("  {option}\ninput-schema:"))
            .replace(
                "    max_tokens:",
                &format!("    {property}: {{type: string}}\n    max_tokens:"),
            );
        std::fs::write(&file, doc).unwrap();
    };
    add_option("team", "archive-only: [machine]", "machine");
    add_option("typo", "archive-only: [machin]", "machine");
    let host = load(&skills, &tmp.path().join("data"));
    let diags = diagnostics(&host);
    assert!(
        diags.contains("`archive-only`: `machin` is not an argument of the input schema"),
        "{diags}"
    );
    assert!(host.get("typo").is_none());

    // Without the argument the local call answers; with it, an argument error naming it.
    host.call("team", json!({"question": "serde"})).unwrap();
    let err = host
        .call("team", json!({"question": "serde", "machine": "laptop"}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("machine") && err.contains("--archive"),
        "{err}"
    );
}
