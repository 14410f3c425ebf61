//! A made-up format, registered only under `cargo test`, that shows what a new format
//! costs: this file and one line in the registry. Its files are JSON Lines of
//! `{"speaker": "me"|"bot", "said": "…", "at": <time>}` in a folder named `made-up`,
//! found by default below `$SKILLS_MADE_UP_HOME`.
//!
//! The tests below go through the public entry points only ([`crate::ingest::detect`],
//! [`crate::ingest::import_file`], [`crate::ingest::discover`]'s environment form and
//! [`crate::ingest::ingest_paths`]), none of which names this format.

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::ingest::pending::{file_stem, Named, Records};
use crate::ingest::{parse_time, str_field, FileImport, IngestError};

const SOURCE: &str = "made-up";

/// The made-up importer (registered in [`super::IMPORTERS`] under `cfg(test)`): its
/// records are all its evidence, so its [`super::About`] is the whole importer.
pub(super) static IMPORTER: super::About = super::About {
    source: SOURCE,
    tool: "Made Up",
    unit: "chat file",
    locations: &[crate::ingest::locations::Location::all(
        crate::places::Root::Var(crate::settings::MADE_UP_HOME.name),
        &["**/made-up/*.jsonl"],
    )],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: Some(|line| line.get("speaker").is_some() && line.get("said").is_some()),
};

/// Reads one chat file: a message per `me`/`bot` line, any other speaker skipped.
fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, None);
    records.jsonl(|records, line, obj| {
        let at = records.record(line, obj.get("at").and_then(parse_time));
        let role = match str_field(&obj, "speaker") {
            Some("me") => "user",
            Some("bot") => "assistant",
            _ => return records.skip(),
        };
        let text = str_field(&obj, "said").unwrap_or_default().to_owned();
        records.push(at.message(role, text));
    })?;
    let id = file_stem(path);
    let time = records.first_time_or(fallback);
    Ok(records.finish(&Named::new(SOURCE, &id), time, None))
}

#[cfg(test)]
mod tests {
    use crate::ingest;
    use crate::places::Environment;

    #[test]
    fn a_registered_format_is_detected_imported_discovered_and_stored() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("somewhere/made-up/chat-1.jsonl");
        fs_err::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        fs_err::write(
            &file,
            concat!(
                r#"{"speaker":"me","said":"does the registry work?","at":"2026-07-03T10:00:00Z"}"#,
                "\n",
                r#"{"speaker":"narrator","said":"(not a message)"}"#,
                "\n",
                r#"{"speaker":"bot","said":"one file and one line","at":1783072860}"#,
                "\n",
            ),
        )
        .expect("write");

        let format = ingest::detect(&file).expect("detected");
        assert_eq!(format.source(), "made-up");
        assert!(!format.is_append_only());

        let import = ingest::import_file(&file).expect("import");
        assert_eq!(import.skipped, 1);
        let texts: Vec<(&str, &str)> = import
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                ("user", "does the registry work?"),
                ("assistant", "one file and one line")
            ]
        );
        assert_eq!(import.messages[0].conversation_id, "chat-1");

        let mut env = Environment::default();
        env.vars
            .insert(crate::settings::MADE_UP_HOME.name.to_owned(), dir.path().into());
        assert_eq!(ingest::discover_in(&env), std::slice::from_ref(&file));

        let store = crate::stores::conversations::ConversationStore::open_rw(
            &dir.path().join("conversations.duckdb"),
        )
        .expect("store");
        let summary = ingest::ingest_paths(&store, &[dir.path().join("somewhere")], &mut |_, _| {});
        assert_eq!(summary.messages_added, 2, "{summary:?}");
        assert!(summary.faults.is_empty(), "{:?}", summary.faults);
    }
}
