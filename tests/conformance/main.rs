//! Every skill's verification checklist under `cargo test`: one trial per
//! (skill, checklist item), run by the same [`Verifier`] as `skills verify`, plus
//! trials that break a copy of a skill or binding on purpose and assert the exact
//! failure (missing binding, drifted text, unknown check, bad parameters, failing
//! check) and the `skills verify` exit code and summary line.
//!
//! Each (skill, item) runs twice: on the local stores, and as `archive::<skill>::…` on
//! the team archive the same stores were pushed into (one database per fixture corpus
//! on the test PostgreSQL, `SKILLS_TEST_ARCHIVE_URL`; without one those trials report
//! themselves as not run).

// A test binary (`harness = false`): clippy's `allow-unwrap-in-tests` does not see it.
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use skills::verify::{Options, Report, RunTarget, Status, Verifier};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn options(skills_dir: PathBuf) -> Options {
    Options {
        skills_dir,
        fixtures_dir: repo().join("tests/conformance/fixtures"),
        binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_skills"))),
    }
}

fn main() {
    let args = Arguments::from_args();
    // The archive variant of every item runs on the test PostgreSQL (./scripts/test
    // starts one): each corpus is pushed once, into a database of its own.
    let server = common::archive::server_or_why();
    let mut verifier =
        Verifier::new(options(repo().join("skills"))).expect("temporary data folder");
    if let Ok(url) = &server {
        verifier = verifier.with_archive(
            skills::archive::Target::parse(url)
                .expect("SKILLS_TEST_ARCHIVE_URL is a postgres:// URL"),
        );
    }
    let verifier = Arc::new(verifier);
    let mut trials = Vec::new();
    for target in [RunTarget::Local, RunTarget::Archive] {
        for (n, entry) in verifier
            .entries_on(&[], target)
            .expect("all skills")
            .into_iter()
            .enumerate()
        {
            let v = verifier.clone();
            let prefix = match target {
                RunTarget::Local => "",
                RunTarget::Archive => "archive::",
            };
            let mut name = format!("{prefix}{}::{:02} {}", entry.skill, n + 1, entry.item);
            // An excluded item is reported as ignored, with its reason in the name,
            // never silently passed (`--include-ignored` runs it and fails with the
            // reason).
            let excluded = verifier.exclusion(&entry);
            if let Some(reason) = &excluded {
                name.push_str(&format!(" [excluded: {reason}]"));
            }
            let not_run = match (target, &server) {
                (RunTarget::Archive, Err(why)) => Some((name.clone(), why.clone())),
                _ => None,
            };
            trials.push(
                Trial::test(name, move || {
                    if let Some((name, why)) = not_run {
                        common::not_run::not_run_named(&name, &why);
                        return Ok(());
                    }
                    let report = v.run(&entry);
                    match report.status {
                        Status::Pass => Ok(()),
                        Status::Excluded => Err(Failed::from(format!(
                            "excluded: {}",
                            report.reason.unwrap_or_default()
                        ))),
                        Status::Fail => Err(Failed::from(report.failures().join("\n"))),
                    }
                })
                .with_kind("checklist")
                .with_ignored_flag(excluded.is_some()),
            );
        }
    }
    trials.extend(breakage::trials());
    let conclusion = libtest_mimic::run(&args, trials);
    // Dropped before exiting: its temporary folder and scratch databases go with it.
    drop(verifier);
    conclusion.exit();
}

/// Runs the items of `search-conversations` whose text contains one of `items`.
fn run_items(skills_dir: &Path, items: &[&str]) -> Report {
    let verifier = Verifier::new(options(skills_dir.to_path_buf())).unwrap();
    let mut report = Report::default();
    for entry in verifier
        .entries(&["search-conversations".to_owned()])
        .unwrap()
    {
        if items.iter().any(|i| entry.item.contains(i)) {
            report.push(verifier.run(&entry));
        }
    }
    report
}

mod breakage {
    use super::*;

    const SKILL: &str = "search-conversations";

    /// Replaces `from` (which must occur exactly once) by `to` in a skill file.
    fn edit(dir: &Path, file: &str, from: &str, to: &str) -> PathBuf {
        let path = dir.join(SKILL).join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches(from).count(), 1, "`{from}` in {file}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
        path
    }

    fn one(report: &Report, item: &str) -> Result<(Status, Vec<String>), Failed> {
        let found: Vec<_> = report.items.iter().filter(|r| r.item == item).collect();
        match found.as_slice() {
            [r] => Ok((r.status, r.failures())),
            _ => Err(format!(
                "expected one report for {item:?}, got {}: {report:#?}",
                found.len()
            )
            .into()),
        }
    }

    fn expect(actual: (Status, Vec<String>), expected: &[String]) -> Result<(), Failed> {
        if actual.0 != Status::Fail || actual.1 != expected {
            return Err(format!(
                "expected FAIL with {expected:#?}\ngot {:?} with {:#?}",
                actual.0, actual.1
            )
            .into());
        }
        Ok(())
    }

    const ROLE_ITEM: &str = "The role filter returns only rows of that role";
    const ORDER_ITEM: &str = "Rows are ordered by created DESC (newest first)";

    /// The 1-based line of the checklist item `item` in the repository's SKILL.md.
    fn item_line(item: &str) -> usize {
        let doc = repo().join("skills").join(SKILL).join("SKILL.md");
        let text = std::fs::read_to_string(&doc).unwrap();
        let needle = format!("- [ ] {item}");
        1 + text
            .lines()
            .position(|l| l.trim_start().starts_with(&needle))
            .unwrap_or_else(|| panic!("no item `{item}` in {}", doc.display()))
    }
    const CONV_ID_ITEM: &str = "Every row has conv_id (L2 consumers need it for citations)";
    const NO_MATCH_ITEM: &str =
        "If term has no match, output is f\"No conversations found containing '{term}'\" — not an empty table";

    fn missing_binding() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        let path = edit(
            tmp.path(),
            "conformance.yaml",
            &format!("  - item: {ROLE_ITEM}\n"),
            "  - item: Something else entirely\n",
        );
        let report = run_items(tmp.path(), &[ROLE_ITEM]);
        expect(
            one(&report, ROLE_ITEM)?,
            &[format!(
                "no binding: no item of `{}` has this exact text",
                path.display()
            )],
        )
    }

    fn missing_binding_file() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        let path = tmp.path().join(SKILL).join("conformance.yaml");
        std::fs::remove_file(&path).unwrap();
        let report = run_items(tmp.path(), &[""]);
        if report.failed != 12 || report.passed != 0 {
            return Err(format!("expected 12 failures, got {}", report.to_text()).into());
        }
        expect(
            one(&report, ROLE_ITEM)?,
            &[format!("no binding: `{}` does not exist", path.display())],
        )
    }

    fn drifted_text() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        let new = "Rows are ordered by created DESC (most recent first)";
        edit(
            tmp.path(),
            "SKILL.md",
            &format!("- [ ] {ORDER_ITEM}"),
            &format!("- [ ] {new}"),
        );
        let report = run_items(tmp.path(), &["Rows are ordered"]);
        expect(
            one(&report, ORDER_ITEM)?,
            &[format!(
                "binding text matches no checklist item (drift); closest item (line {}): \"{new}\"",
                item_line(ORDER_ITEM)
            )],
        )?;
        let path = tmp.path().join(SKILL).join("conformance.yaml");
        expect(
            one(&report, new)?,
            &[format!(
                "no binding: no item of `{}` has this exact text",
                path.display()
            )],
        )
    }

    fn unknown_check() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "check: every_row_has",
            "check: every_row_hass",
        );
        let report = run_items(tmp.path(), &[CONV_ID_ITEM]);
        let known = skills::verify::checks::vocabulary()
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>()
            .join(", ");
        expect(
            one(&report, CONV_ID_ITEM)?,
            &[format!(
                "unknown check `every_row_hass`; known checks: {known}"
            )],
        )
    }

    fn bad_params() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "params: {field: created, direction: desc}\n",
            "params: {field: created, direction: newest}\n",
        );
        let report = run_items(tmp.path(), &[ORDER_ITEM]);
        expect(
            one(&report, ORDER_ITEM)?,
            &[r#"check `ordered_by`: bad params: `/direction`: "newest" is not one of "asc" or "desc""#.to_owned()],
        )
    }

    const REPEAT_ITEM: &str =
        "Re-running with identical args returns identical rows in identical order";
    const TABLE_ITEM: &str =
        "A `|` or line break inside a preview never breaks the rendered table row";

    /// A misspelt parameter is named, with the parameters the check knows.
    fn unknown_param() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "params: {runs: 3, fresh_process: true}",
            "params: {runs: 3, fresh_proces: true}",
        );
        let report = run_items(tmp.path(), &[REPEAT_ITEM]);
        expect(
            one(&report, REPEAT_ITEM)?,
            &["check `deterministic`: bad params: unknown parameter `fresh_proces` (known parameters: runs, fresh_process)".to_owned()],
        )
    }

    /// A parameter of the wrong type is named with the type expected.
    fn mistyped_param() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "params: {columns: 5, header_lines: 2}",
            "params: {columns: five, header_lines: 2}",
        );
        let report = run_items(tmp.path(), &[TABLE_ITEM]);
        expect(
            one(&report, TABLE_ITEM)?,
            &[r#"check `text_rows_intact`: bad params: `/columns`: "five" is not of type "integer""#.to_owned()],
        )
    }

    /// A missing required parameter is named; the other checks of the item still run.
    fn missing_param() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "params: {field: conversation_id}",
            "params: {}",
        );
        let report = run_items(tmp.path(), &[CONV_ID_ITEM]);
        expect(
            one(&report, CONV_ID_ITEM)?,
            &[r#"check `every_row_has`: bad params: "field" is a required property"#.to_owned()],
        )?;
        let r = report
            .items
            .iter()
            .find(|r| r.item == CONV_ID_ITEM)
            .unwrap();
        if r.checks.is_empty()
            || r.checks
                .iter()
                .any(|c| c.check != "output_schema" || c.failure.is_some())
        {
            return Err(format!("{r:#?}").into());
        }
        Ok(())
    }

    fn failing_check() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "{template: \"No conversations found",
            "{template: \"No conversation found",
        );
        let report = run_items(tmp.path(), &[NO_MATCH_ITEM]);
        expect(
            one(&report, NO_MATCH_ITEM)?,
            &[
                r#"`text_equals` on {"term":"no-such-term-zq"} [transcripts]: text is "\"No conversations found containing 'no-such-term-zq'\"", expected "No conversation found containing 'no-such-term-zq'""#.to_owned(),
                r#"`text_equals` on {"term":"50%nothing_here","role":"assistant"} [transcripts]: text is "\"No conversations found containing '50%nothing_here'\"", expected "No conversation found containing '50%nothing_here'""#.to_owned(),
                r#"`text_equals` on {"term":"naïve 🦀 | pipe"} [transcripts]: text is "\"No conversations found containing 'naïve 🦀 | pipe'\"", expected "No conversation found containing 'naïve 🦀 | pipe'""#.to_owned(),
            ],
        )
    }

    fn cli_exit_code_and_summary() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        edit(
            tmp.path(),
            "conformance.yaml",
            "check: every_row_has",
            "check: every_row_hass",
        );
        let out = assert_cmd::cargo::cargo_bin_cmd!("skills")
            .arg("--skills-dir")
            .arg(tmp.path())
            .args(["verify", SKILL])
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        if out.status.code() != Some(1)
            || stdout.lines().last() != Some("12 passed, 1 failed, 0 excluded")
        {
            return Err(format!("exit {:?}, stdout:\n{stdout}", out.status.code()).into());
        }
        let out = assert_cmd::cargo::cargo_bin_cmd!("skills")
            .args(["--json", "verify", SKILL])
            .output()
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if out.status.code() != Some(0) || json["passed"] != 13 || json["failed"] != 0 {
            return Err(format!("exit {:?}, json:\n{json:#}", out.status.code()).into());
        }
        let out = assert_cmd::cargo::cargo_bin_cmd!("skills")
            .args(["verify", "no-such-skill"])
            .output()
            .unwrap();
        if out.status.code() != Some(2) {
            return Err(format!("unknown skill: exit {:?}", out.status.code()).into());
        }
        Ok(())
    }

    type Breakage = fn() -> Result<(), Failed>;

    pub fn trials() -> Vec<Trial> {
        let cases: [(&str, Breakage); 14] = [
            ("missing_binding", missing_binding),
            ("missing_binding_file", missing_binding_file),
            ("drifted_text", drifted_text),
            ("unknown_check", unknown_check),
            ("bad_params", bad_params),
            ("unknown_param", unknown_param),
            ("mistyped_param", mistyped_param),
            ("missing_param", missing_param),
            ("failing_check", failing_check),
            ("cli_exit_code_and_summary", cli_exit_code_and_summary),
            ("excluded_item_is_reported", excluded_item_is_reported),
            ("fixtures_import_cleanly", fixtures_import_cleanly),
            (
                "memory_fixtures_import_cleanly",
                memory_fixtures_import_cleanly,
            ),
            ("new_item_needs_only_yaml", new_item_needs_only_yaml),
        ];
        cases
            .into_iter()
            .map(|(name, f)| Trial::test(format!("breakage::{name}"), f))
            .collect()
    }

    /// The transcripts corpus goes through the real importers without faults and
    /// yields every message the fixtures hold (tool calls and summaries skipped).
    fn fixtures_import_cleanly() -> Result<(), Failed> {
        use skills::stores::conversations::ConversationStore;
        use skills::verify::corpus::build_stores;
        let tmp = tempfile::tempdir().unwrap();
        let paths = build_stores(
            &repo().join("tests/conformance/fixtures/transcripts"),
            tmp.path(),
        )?;
        let store = ConversationStore::open_ro(&paths.conversations).unwrap();
        let conn = store.connection().unwrap();
        let counts: (i64, i64, i64, i64) = conn
            .query_row(
                "SELECT count(*), count(DISTINCT source), count(DISTINCT conversation_id), \
                 count(*) FILTER (WHERE role = 'user' AND has_question = 1) FROM all_conversations",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        if counts != (16, 2, 4, 4) {
            return Err(
                format!("(messages, sources, conversations, user questions) = {counts:?}").into(),
            );
        }
        Ok(())
    }

    /// The memories corpus goes through the memory importer without faults: every
    /// file format yields its memories (MEMORY.md one per section, JSONL one per line),
    /// and no transcript store is built from it.
    fn memory_fixtures_import_cleanly() -> Result<(), Failed> {
        use skills::verify::corpus::build_stores;
        let tmp = tempfile::tempdir().unwrap();
        let paths = build_stores(
            &repo().join("tests/conformance/fixtures/memories"),
            tmp.path(),
        )?;
        if paths.conversations.exists() {
            return Err("a conversations store was built from memory files".into());
        }
        let conn = rusqlite::Connection::open_with_flags(
            &paths.memories,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let counts: (i64, i64, i64, i64) = conn
            .query_row(
                "SELECT count(*), count(DISTINCT type), count(*) FILTER (WHERE type = 'index'), \
                 count(*) FILTER (WHERE origin LIKE '%memories.jsonl#L%') FROM memories",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        if counts != (47, 10, 3, 27) {
            return Err(
                format!("(memories, types, index sections, JSONL lines) = {counts:?}").into(),
            );
        }
        Ok(())
    }

    /// A new checklist item becomes executable with YAML only (here: argument errors),
    /// and a wrong expectation fails with the argument the host actually named.
    fn new_item_needs_only_yaml() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        let item = "Invalid arguments are rejected before the engine runs, naming the argument";
        let doc = tmp.path().join(SKILL).join("SKILL.md");
        let mut text = std::fs::read_to_string(&doc).unwrap();
        text.push_str(&format!("- [ ] {item}\n"));
        std::fs::write(&doc, text).unwrap();
        let binding = tmp.path().join(SKILL).join("conformance.yaml");
        let mut yaml = std::fs::read_to_string(&binding).unwrap();
        yaml.push_str(&format!(
            "\n  - item: {item}\n    checks:\n      - check: argument_error\n        params: {{argument: limit}}\n        cases:\n          - args: {{limit: 0}}\n          - args: {{limit: \"ten\"}}\n      - check: argument_error\n        params: {{argument: role, reason_contains: system}}\n        cases:\n          - args: {{role: system}}\n      - check: argument_error\n        params: {{argument: term}}\n        cases:\n          - args: {{trem: rpath}}\n"
        ));
        std::fs::write(&binding, yaml).unwrap();
        let report = run_items(tmp.path(), &[item]);
        expect(
            one(&report, item)?,
            &[
                r#"`argument_error` on {"trem":"rpath"} [transcripts]: errors name `trem` instead of `term`"#
                    .to_owned(),
            ],
        )?;
        if report.items[0].checks.len() != 4 {
            return Err(format!("{:#?}", report.items[0]).into());
        }
        Ok(())
    }

    fn excluded_item_is_reported() -> Result<(), Failed> {
        let tmp = crate::common::copy_skills();
        let path = edit(
            tmp.path(),
            "conformance.yaml",
            &format!("  - item: {ROLE_ITEM}\n"),
            &format!("  - item: {ROLE_ITEM}\n    excluded: covered by hand\n"),
        );
        // `excluded` with checks/cases is rejected by the schema: the file is unusable.
        let report = run_items(tmp.path(), &["conformance.yaml"]);
        let (status, failures) = one(&report, "conformance.yaml")?;
        if status != Status::Fail
            || !failures[0].starts_with(&format!(
                "`{}` does not match `schemas/conformance.schema.json`: `/items/8`",
                path.display()
            ))
        {
            return Err(format!("{status:?} {failures:#?}").into());
        }
        // A bare exclusion is reported as EXCLUDED with its reason.
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find(&format!("  - item: {ROLE_ITEM}\n")).unwrap();
        let end = start + text[start..].find("\n\n").unwrap();
        std::fs::write(
            &path,
            format!(
                "{}  - item: {ROLE_ITEM}\n    excluded: covered by hand{}",
                &text[..start],
                &text[end..]
            ),
        )
        .unwrap();
        let report = run_items(tmp.path(), &[ROLE_ITEM]);
        let r = &report.items[0];
        if r.status != Status::Excluded
            || r.reason.as_deref() != Some("covered by hand")
            || report.excluded != 1
        {
            return Err(format!("{r:#?}").into());
        }
        let line = item_line(ROLE_ITEM);
        if !report.to_text().contains(&format!(
            "  EXCLUDED {ROLE_ITEM} (SKILL.md:{line})\n           reason: covered by hand\n"
        )) {
            return Err(report.to_text().into());
        }
        Ok(())
    }
}
