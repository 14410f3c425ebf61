//! Declared effects enforced by the host (issue 17, part 2): each call gets store
//! handles matching its document — read-only ones when `writes` is empty, none for a
//! store `reads` does not name — a document whose engine reads an undeclared store
//! does not bind, and `skills verify` fails a read-only skill that wrote anyway.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use skills::engines::{Context, Engine, EngineError};
use skills::host::Host;
use skills::stores::conversations::ConversationStore;
use skills::stores::memories::{Memory, MemoryStore};
use skills::stores::StorePaths;
use skills::verify::{Options, Status, Verifier, READ_ONLY_ITEM};

/// An engine made to write, in the way its `how` argument says.
struct Poke;

fn memory(id: &str) -> Memory {
    let t = chrono::DateTime::parse_from_rfc3339("2026-07-01T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    Memory {
        id: id.into(),
        title: "written by a read-only skill".into(),
        kind: "fact".into(),
        tags: vec![],
        created: t,
        updated: t,
        body: "should never be stored".into(),
        files_read: vec![],
        files_modified: vec![],
        origin: None,
    }
}

impl Engine for Poke {
    fn name(&self) -> &'static str {
        "poke"
    }

    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        let query = |e: &dyn std::fmt::Display| EngineError::Query(e.to_string());
        match args["how"].as_str().unwrap_or("") {
            // Ask the context for a writable store.
            "writable" => {
                ctx.memories_writable()?.upsert(&memory("w1"))?;
            }
            // Write through the read-only SQLite handle the context gives.
            "sqlite" => {
                ctx.memories()?.upsert(&memory("s1"))?;
            }
            // Write through the read-only DuckDB handle the context gives.
            "duckdb" => {
                let store = ctx.conversations()?;
                let conn = store.connection()?;
                conn.execute_batch("CREATE TABLE pwned (x INTEGER); DELETE FROM all_conversations")
                    .map_err(|e| query(&e))?;
            }
            // Only read.
            "read" => {
                let n = ctx.conversations()?.count()?;
                return Ok(json!({ "messages": n }));
            }
            // Go around the context: open the file itself and write.
            "bypass" => {
                let conn =
                    rusqlite::Connection::open(ctx.memories_path()).map_err(|e| query(&e))?;
                conn.execute("UPDATE memories SET title = 'changed'", [])
                    .map_err(|e| query(&e))?;
            }
            other => return Err(EngineError::Query(format!("unknown `how` {other}"))),
        }
        Ok(json!({ "wrote": true }))
    }
}

fn engines() -> Vec<Arc<dyn Engine>> {
    vec![Arc::new(Poke)]
}

/// A skills folder holding one `poke` skill with these `reads` and `writes`.
fn skill_dir(reads: &str, writes: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("poke");
    fs_err::create_dir_all(&folder).unwrap();
    fs_err::write(
        folder.join("SKILL.md"),
        format!(
            "---\nname: poke\ndescription: Test skill whose engine tries to write.\n\
             reads: {reads}\nwrites: {writes}\nengine: poke\ninput-schema:\n  type: object\n  \
             properties:\n    how: {{type: string}}\n  required: [how]\n---\n# poke\n\n\
             ## Verification checklist\n\n- [ ] It answers\n"
        ),
    )
    .unwrap();
    fs_err::write(folder.join("template.md.j2"), "{{ data }}\n").unwrap();
    fs_err::write(
        folder.join("conformance.yaml"),
        "skill: poke\ncorpus: both\nitems:\n  - item: It answers\n    checks:\n      \
         - check: output_schema\n        cases:\n          - args: {how: read}\n          \
         - args: {how: bypass}\n",
    )
    .unwrap();
    dir
}

/// Stores with one conversation and one memory.
fn stores() -> (tempfile::TempDir, StorePaths) {
    let dir = tempfile::tempdir().unwrap();
    let paths = StorePaths::in_dir(dir.path());
    let conv = ConversationStore::open_rw(&paths.conversations).unwrap();
    let t = chrono::DateTime::parse_from_rfc3339("2026-03-01T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    conv.insert(&[skills::model::Message {
        source: "generic".into(),
        model: None,
        project: None,
        conversation_id: "c1".into(),
        conversation_title: None,
        message_id: "m1".into(),
        parent_id: None,
        msg_index: 0,
        timestamp: t,
        timestamp_is_fallback: false,
        role: "user".into(),
        content_type: "text".into(),
        content: "hello".into(),
        has_attachment: false,
        has_citation: false,
        is_injected: false,
    }])
    .unwrap();
    conv.close().unwrap();
    let mem = MemoryStore::open_rw(&paths.memories).unwrap();
    mem.upsert(&memory("m0")).unwrap();
    drop(mem);
    (dir, paths)
}

/// Every file under `dir` with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in fs_err::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                pending.push(p);
            } else {
                out.push((p.clone(), fs_err::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Issue 17 "a skill that declares `writes: []` is read-only only because its engine
/// happens to be": with `writes: []`, every way the engine tries to write through its
/// context fails — no writable handle, and the handles it gets refuse writes — and the
/// store files stay byte-identical.
#[test]
fn read_only_skill_cannot_write_even_by_mistake() {
    let (data, paths) = stores();
    let skills = skill_dir(r#"["memories", "conversations"]"#, "[]");
    let host = Host::load_with(skills.path(), Context::new(paths), &engines());
    assert!(host.get("poke").is_some(), "{:?}", host.diagnostics());
    let before = files(data.path());
    for (how, expected) in [
        ("writable", "may not write store `memories`"),
        ("sqlite", "readonly"),
        ("duckdb", "read-only"),
    ] {
        let err = host
            .call("poke", json!({ "how": how }))
            .err()
            .unwrap_or_else(|| panic!("`{how}`: the write went through"))
            .to_string();
        assert!(
            err.to_lowercase().contains(expected),
            "`{how}`: {err} (expected {expected:?})"
        );
    }
    assert!(
        files(data.path()) == before,
        "a store changed under a read-only skill"
    );
}

/// The other side: the same engine in a skill whose `writes` names `memories` gets a
/// writable memories store, so the refusal above comes from the declaration.
#[test]
fn skill_declaring_writes_gets_a_writable_store() {
    let (_data, paths) = stores();
    let skills = skill_dir(r#"["memories"]"#, r#"["memories"]"#);
    let host = Host::load_with(skills.path(), Context::new(paths.clone()), &engines());
    host.call("poke", json!({"how": "writable"})).unwrap();
    let store = MemoryStore::open_ro(&paths.memories).unwrap();
    assert_eq!(store.count().unwrap(), 2);
}

/// A store the document does not declare in `reads` cannot be opened by its calls.
#[test]
fn undeclared_store_is_refused_at_call_time() {
    let (_data, paths) = stores();
    let skills = skill_dir(r#"["memories"]"#, "[]");
    let host = Host::load_with(skills.path(), Context::new(paths), &engines());
    let err = host
        .call("poke", json!({"how": "read"}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("may not read store `conversations`: its `reads` does not name it"),
        "{err}"
    );
}

/// A copy of a bundled drop-in skill (`sql` on the conversations store) whose
/// frontmatter line `reads: …` is replaced by `reads`.
fn sql_skill_with_reads(reads: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/brain-stats");
    let dst = dir.path().join("brain-stats");
    fs_err::create_dir_all(&dst).unwrap();
    for e in fs_err::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        fs_err::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
    }
    let doc = fs_err::read_to_string(dst.join("SKILL.md")).unwrap();
    let doc = doc.replace(
        r#"reads: ["L0.all_conversations"]"#,
        &format!("reads: {reads}"),
    );
    fs_err::write(dst.join("SKILL.md"), doc).unwrap();
    dir
}

/// Issue 17 "a skill that reads a store it did not declare in `reads` fails at bind
/// time with a clear diagnostic": a `sql` skill on `conversations` declaring only
/// `memories` does not load, and the diagnostic names the field, the store and the fix.
#[test]
fn sql_skill_reading_an_undeclared_store_fails_at_bind_time() {
    let skills = sql_skill_with_reads(r#"["memories"]"#);
    let host = Host::load(
        skills.path(),
        Context::new(StorePaths::in_dir(skills.path())),
    );
    assert!(host.get("brain-stats").is_none());
    let d = host
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .find(|d| d.contains("/reads"))
        .unwrap_or_else(|| panic!("{:?}", host.diagnostics()));
    assert!(
        d.contains("engine `sql` reads store `conversations`, which `reads` does not declare; add `conversations` to `reads`"),
        "{d}"
    );
}

/// An entry of `reads` that names no store is reported with its index.
#[test]
fn unknown_store_in_reads_is_a_diagnostic() {
    let skills = sql_skill_with_reads(r#"["L0.all_conversations", "passwords"]"#);
    let host = Host::load(
        skills.path(),
        Context::new(StorePaths::in_dir(skills.path())),
    );
    assert!(host.get("brain-stats").is_none());
    let all: Vec<String> = host.diagnostics().iter().map(ToString::to_string).collect();
    assert!(
        all.iter()
            .any(|d| d.contains("/reads/1") && d.contains("`passwords` names no store")),
        "{all:?}"
    );
}

/// Issue 17 "`skills verify` gains a check that a read-only skill leaves every store
/// byte-identical … the enforcement check fails when a read-only skill's engine is made
/// to write": an engine that goes around its read-only handles and writes the file
/// itself fails the host's read-only entry, naming the file that changed.
#[test]
fn verify_fails_when_a_read_only_skills_engine_writes() {
    let skills = skill_dir(r#"["memories", "conversations"]"#, "[]");
    let fixtures = tempfile::tempdir().unwrap();
    let corpus = fixtures.path().join("both");
    fs_err::create_dir_all(&corpus).unwrap();
    fs_err::write(
        corpus.join("session.jsonl"),
        "{\"role\":\"user\",\"content\":\"hello\",\"timestamp\":\"2026-03-01T10:00:00Z\"}\n",
    )
    .unwrap();
    fs_err::write(
        corpus.join("notes.md"),
        "---\ntitle: A note\ntype: fact\n---\nBody of the note.\n",
    )
    .unwrap();
    let verifier = Verifier::with_engines(
        Options {
            skills_dir: skills.path().to_path_buf(),
            fixtures_dir: fixtures.path().to_path_buf(),
            binary: None,
        },
        engines(),
    )
    .unwrap();
    let entries = verifier.entries(&[]).unwrap();
    let entry = entries
        .iter()
        .find(|e| e.item == READ_ONLY_ITEM)
        .expect("a read-only skill gets the host's read-only entry");
    let report = verifier.run(entry);
    assert_eq!(report.status, Status::Fail, "{report:?}");
    let why = report.failures().join("\n");
    assert!(
        why.contains("memories.sqlite") && why.contains("a skill with `writes: []` wrote"),
        "{why}"
    );
}

/// Every bundled read-only skill gets the host's read-only entry (the conformance
/// suite runs those entries, one trial each); memo-save, the one bundled writer, gets
/// none and declares `writes: ["memories"]`.
#[test]
fn every_bundled_read_only_skill_gets_the_read_only_entry() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let verifier = Verifier::new(Options {
        skills_dir: repo.join("skills"),
        fixtures_dir: repo.join("tests/conformance/fixtures"),
        binary: None,
    })
    .unwrap();
    let entries = verifier.entries(&[]).unwrap();
    for skill in verifier.host().skills() {
        let entry = entries
            .iter()
            .any(|e| e.skill == skill.name() && e.item == READ_ONLY_ITEM);
        if skill.name() == "memo-save" {
            assert!(!skill.is_read_only());
            assert!(skill.access.writes(skills::stores::Store::Memories));
            assert!(!entry, "a writing skill has no read-only entry");
            continue;
        }
        assert!(skill.is_read_only(), "`{}`", skill.name());
        assert!(
            entries
                .iter()
                .any(|e| e.skill == skill.name() && e.item == READ_ONLY_ITEM),
            "`{}` has no read-only entry",
            skill.name()
        );
    }
}
