//! rerank on the team archive, on a real PostgreSQL (`scripts/postgres`, as
//! tests/archive.rs): items naming a memory (`memory_id`) or a message (`source`,
//! `conversation_id`, `message_id`) are read from the archive with the text the local
//! store holds, so the rows — scores, order, texts, parts — equal the local ones.
//!
//! - One machine pushed: every argument set (texts only, memory ids, message ids —
//!   multi-byte, NUL and U+FFFF contents among them —, mixed, every scorer, explain, cut
//!   texts, duplicate items, a quoting attempt) answers on the archive exactly as
//!   locally once the archive's `machine`, `machine_id` and `user` are set aside, and a
//!   missing memory or message fails with the local error, naming the item.
//! - Two machines pushed, sharing memories and conversations: a reference reads its most
//!   recently updated copy (a message: its conversation's), ties by the smallest machine
//!   id; the rows equal a local call whose items are those copies' texts, and name the
//!   copy's machine.
//!
//! Without a PostgreSQL (or the embedding model) the test is reported as not run
//! ([`common::not_run`]).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::Path;

use chrono::TimeZone;
use serde_json::{json, Value};
use skills::ingest::Message;
use skills::stores::memories::{Memory, MemoryStore};
use skills::stores::StorePaths;

use common::archive::{json_of, run, server, Db};

/// The fields only rows from the archive have.
const ARCHIVE_ONLY: [&str; 3] = ["machine", "machine_id", "user"];

/// A memory `id` titled `title` with body `body`, updated `updated` seconds after a
/// base time.
fn memory(id: &str, title: &str, body: &str, updated: i64) -> Memory {
    let base = chrono::Utc.timestamp_opt(1_780_000_000, 0).unwrap();
    let updated = base + chrono::Duration::seconds(updated);
    Memory {
        id: id.to_owned(),
        title: title.to_owned(),
        kind: "fact".into(),
        tags: vec!["k8s".into()],
        created: updated - chrono::Duration::seconds(3_600),
        updated,
        body: body.to_owned(),
        files_read: Vec::new(),
        files_modified: Vec::new(),
        origin: None,
    }
}

/// Message `i` of conversation `conv` (Claude Code) saying `content`, at 2025-03-10
/// 10:00 plus `at` seconds; its id is `<conv>-<i>`.
fn message(conv: &str, i: i64, at: i64, content: &str) -> Message {
    let mut m = common::message(conv, i, content);
    m.timestamp = chrono::Utc.with_ymd_and_hms(2025, 3, 10, 10, 0, 0).unwrap()
        + chrono::Duration::seconds(at);
    if i % 2 == 1 {
        m.role = "assistant".into();
    }
    m
}

/// Writes `memories` and `messages` into data folder `data`.
fn stores(data: &Path, memories: &[Memory], messages: &[Message]) {
    let store = MemoryStore::open_rw(&StorePaths::in_dir(data).memories).unwrap();
    store.upsert_many(memories).unwrap();
    drop(store);
    common::store_messages(data, messages);
}

/// The laptop: memories about the linker and the cluster, two shared with the desktop
/// (shared-1 older there, shared-2 newer) and one at the same second (tie-1);
/// conversations about rpath with multi-byte, NUL and U+FFFF contents, one shared with
/// the desktop (older here) and one at the same times there (conv-tie).
fn laptop(data: &Path) {
    let memories = vec![
        memory(
            "m-linker",
            "Linker path",
            "Set the rpath with -Wl,-rpath in build.rs so the binary finds libduckdb.so.",
            100,
        ),
        memory(
            "m-k8s",
            "Kubernetes ingress",
            "The cluster's ingress needs the TLS secret in the same namespace — naïve café 🦀.",
            200,
        ),
        memory("m-lunch", "Lunch", "We had pasta for lunch on Friday.", 300),
        memory(
            "shared-1",
            "Shared note",
            "laptop: the linker flags live in build.rs",
            400,
        ),
        memory(
            "shared-2",
            "Shared decision",
            "laptop: keep the rpath relative to $ORIGIN",
            9_000,
        ),
        memory(
            "tie-1",
            "Tied note",
            "laptop: libduckdb is found through the rpath",
            5_000,
        ),
    ];
    let messages = vec![
        message("conv-rpath", 0, 0, "How do I fix the linker path for libduckdb?"),
        message(
            "conv-rpath",
            1,
            10,
            "Add -Wl,-rpath,$ORIGIN/../lib to the link arguments in build.rs; the binary then finds libduckdb.so at run time.",
        ),
        message("conv-rpath", 2, 20, "Thanks — naïve question: does it work on macOS? 🦀"),
        message("conv-odd", 0, 30, "nul\0inside the linker text"),
        message("conv-odd", 1, 40, "a \u{FFFF} marker beside the rpath"),
        message("conv-lunch", 0, 50, "Where do we go for lunch?"),
        message("conv-shared", 0, 60, "laptop: what is the linker path?"),
        message("conv-shared", 1, 70, "laptop: the rpath in build.rs"),
        message("conv-tie", 0, 80, "laptop: tie about the linker"),
        message("conv-tie", 1, 90, "laptop: tie answer with rpath"),
    ];
    stores(data, &memories, &messages);
}

/// The desktop: shared-1 newer than the laptop's, shared-2 older, tie-1 at the same
/// second, all with other bodies; conv-shared with a later message (so newer), and
/// conv-tie at the laptop's times with other contents; one memory and one conversation
/// of its own.
fn desktop(data: &Path) {
    let memories = vec![
        memory(
            "shared-1",
            "Shared note",
            "desktop: linker flags moved to .cargo/config.toml",
            800,
        ),
        memory(
            "shared-2",
            "Shared decision",
            "desktop: an absolute rpath",
            600,
        ),
        memory(
            "tie-1",
            "Tied note",
            "desktop: LD_LIBRARY_PATH instead of an rpath",
            5_000,
        ),
        memory(
            "d-only",
            "Desk only",
            "The desktop's own linker memory.",
            700,
        ),
    ];
    let messages = vec![
        message("conv-shared", 0, 60, "desktop: what is the linker path?"),
        message(
            "conv-shared",
            1,
            70,
            "desktop: set the rpath in .cargo/config.toml",
        ),
        message("conv-shared", 2, 500, "desktop: a later follow-up"),
        message("conv-tie", 0, 80, "desktop: tie about the linker"),
        message("conv-tie", 1, 90, "desktop: tie answer, no flags"),
        message("conv-desk", 0, 100, "desktop: its own linker question"),
    ];
    stores(data, &memories, &messages);
}

/// `{source, conversation_id, message_id}` of message `<conv>-<i>`.
fn msg(conv: &str, i: i64) -> Value {
    json!({"source": "claude-code", "conversation_id": conv, "message_id": format!("{conv}-{i}")})
}

fn mem(id: &str) -> Value {
    json!({"memory_id": id})
}

/// rerank on `data`'s local stores (`archive` `None`) or the archive: (success, the
/// output's `data`, the whole output).
fn rerank(data: &Path, archive: Option<&str>, args: &Value) -> (bool, Value, String) {
    let (ok, out, err) = run(
        data,
        archive,
        &["--json", "run", "rerank", "--args-json", &args.to_string()],
    );
    let data = serde_json::from_str::<Value>(&out)
        .map(|v| v["data"].clone())
        .unwrap_or(Value::Null);
    (ok, data, format!("{out}{err}"))
}

/// The line of a failed call's output that names the item.
fn item_error(said: &str) -> String {
    said.lines()
        .find(|l| l.contains("item "))
        .unwrap_or_else(|| panic!("no item named in: {said}"))
        .trim()
        .to_owned()
}

/// `data` without what only the archive has: each row's [`ARCHIVE_ONLY`] fields and the
/// machine id in its `cites`.
fn without_machine(data: &Value) -> Value {
    let mut data = data.clone();
    for row in data["rows"].as_array_mut().unwrap() {
        let row = row.as_object_mut().unwrap();
        for name in ARCHIVE_ONLY {
            row.remove(name);
        }
        if let Some(cites) = row.get_mut("cites").and_then(Value::as_object_mut) {
            cites.remove("machine_id");
        }
    }
    data
}

/// The argument sets compared on one machine: text items only, memory ids, message
/// ids, mixed, every scorer, explain, cut texts, duplicates; then the missing ids.
fn cases() -> (Vec<Value>, Vec<Value>) {
    let q = "how do I fix the linker path";
    let texts = json!([
        {"text": "The weather is sunny and warm today.", "id": "weather"},
        {"text": "Set the rpath in build.rs so the binary finds libduckdb.so.", "id": "rpath"},
        {"text": "The linker path is set by -Wl,-rpath.", "id": "linker"},
        {"text": "The weather is sunny and warm today.", "id": "again"}
    ]);
    let memories = json!([
        mem("m-lunch"),
        mem("m-linker"),
        mem("m-k8s"),
        mem("shared-1"),
        mem("tie-1")
    ]);
    let messages = json!([
        msg("conv-lunch", 0),
        msg("conv-rpath", 1),
        msg("conv-rpath", 0),
        msg("conv-rpath", 2),
        msg("conv-odd", 0),
        msg("conv-odd", 1),
        msg("conv-shared", 1),
        msg("conv-tie", 1)
    ]);
    let mixed = json!([
        mem("m-linker"), msg("conv-rpath", 1), {"text": "An unrelated note about lunch."},
        msg("conv-odd", 0), mem("m-k8s"), msg("conv-lunch", 0), mem("m-linker")
    ]);
    let ok = vec![
        json!({"query": q, "items": texts, "limit": 100, "explain": true}),
        json!({"query": q, "items": texts, "scorer": "bm25"}),
        json!({"query": q, "items": memories, "limit": 100, "explain": true, "text_chars": -1}),
        json!({"query": q, "items": memories, "scorer": "semantic", "text_chars": 12}),
        json!({"query": q, "items": messages, "limit": 100, "explain": true, "text_chars": -1}),
        json!({"query": "rpath linker", "items": messages, "scorer": "bm25", "explain": true, "text_chars": 7}),
        json!({"query": q, "items": messages, "scorer": "semantic", "limit": 3}),
        json!({"query": "libduckdb rpath", "items": mixed, "limit": 100, "explain": true, "text_chars": -1}),
        json!({"query": "lunch", "items": mixed, "scorer": "bm25", "limit": 2}),
        json!({"query": "naïve 🦀", "items": mixed, "text_chars": 0}),
    ];
    let missing = vec![
        json!({"query": q, "items": [mem("m-linker"), mem("no-such-memory")]}),
        json!({"query": q, "items": [{"text": "a"}, mem("' OR '1'='1")]}),
        json!({"query": q, "items": [{"text": "a"}, {"text": "b"}, msg("conv-rpath", 9)]}),
        json!({"query": q, "items": [msg("conv-rpath", 0), {"source": "chatgpt", "conversation_id": "conv-rpath", "message_id": "conv-rpath-0"}]}),
        json!({"query": q, "items": [msg("no-such-conversation", 0), mem("no-such-memory")]}),
    ];
    (ok, missing)
}

/// The scored text of `item` (a reference) in `data`'s local stores.
fn local_text(data: &Path, item: &Value) -> String {
    let args = json!({"query": "x", "scorer": "bm25", "text_chars": -1, "items": [item]});
    let (ok, out, said) = rerank(data, None, &args);
    assert!(ok, "{said}");
    out["rows"][0]["text"].as_str().unwrap().to_owned()
}

/// Each row's rank, position, score, text, cut mark and parts.
fn ranking(data: &Value) -> Vec<Value> {
    data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            json!([
                r["rank"],
                r["position"],
                r["score"],
                r["text"],
                r["text_truncated"],
                r["explain"]
            ])
        })
        .collect()
}

#[test]
fn rerank_answers_from_the_archive_as_from_the_local_stores() {
    let Some(server) = server() else { return };
    let Some(_model) = common::embedder() else {
        return;
    };
    let db = Db::new(&server);
    let root = tempfile::tempdir().unwrap();
    let (lap, desk) = (root.path().join("laptop"), root.path().join("desktop"));
    laptop(&lap);
    desktop(&desk);
    json_of(&lap, Some(&db.url), &["--json", "archive", "migrate"]);
    let push = |dir: &Path| {
        json_of(
            dir,
            Some(&db.url),
            &["--json", "archive", "push", "--no-redact"],
        )
    };

    // One machine pushed: the archive's answer is the local one.
    push(&lap);
    let lap_id = common::archive::machine_id_of(&lap);
    let (ok_cases, missing) = cases();
    let mut references = 0;
    for args in &ok_cases {
        let (ok, local, said) = rerank(&lap, None, args);
        assert!(ok, "{args} locally: {said}");
        let (ok, archive, said) = rerank(&lap, Some(&db.url), args);
        assert!(ok, "{args} on the archive: {said}");
        assert_eq!(
            without_machine(&archive),
            local,
            "{args}: the archive's rerank differs from the local one"
        );
        if args["scorer"] != "bm25" {
            assert!(local["model"].is_string(), "{args}: no model ran: {local}");
        }
        for row in archive["rows"].as_array().unwrap() {
            if row["kind"] == "text" {
                assert!(row.get("machine").is_none(), "{row}");
                continue;
            }
            references += 1;
            assert_eq!(row["machine"], "laptop", "{row}");
            assert_eq!(row["machine_id"], lap_id.as_str(), "{row}");
            assert_eq!(row["cites"]["machine_id"], lap_id.as_str(), "{row}");
            assert!(row["user"].is_string(), "{row}");
        }
    }
    assert!(references >= 40, "{references} reference rows compared");
    // The contents push stores specially came back exact.
    let (_, odd, _) = rerank(
        &lap,
        Some(&db.url),
        &json!({"query": "x", "scorer": "bm25", "text_chars": -1,
                "items": [msg("conv-odd", 0), msg("conv-odd", 1)]}),
    );
    assert_eq!(odd["rows"][0]["text"], "nul\0inside the linker text");
    assert_eq!(odd["rows"][1]["text"], "a \u{FFFF} marker beside the rpath");
    for args in &missing {
        let (ok, _, local) = rerank(&lap, None, args);
        assert!(!ok, "{args} answered locally: {local}");
        let (ok, _, archive) = rerank(&lap, Some(&db.url), args);
        assert!(!ok, "{args} answered on the archive: {archive}");
        assert_eq!(item_error(&archive), item_error(&local), "{args}");
    }
    println!(
        "{} argument sets equal on one machine ({references} reference rows), {} missing ids refused alike",
        ok_cases.len(),
        missing.len()
    );

    // Two machines pushed: each reference reads its newest copy, ties by machine id.
    push(&desk);
    let desk_id = common::archive::machine_id_of(&desk);
    let (tie_dir, tie_label, tie_id) = if desk_id < lap_id {
        (&desk, "desktop", &desk_id)
    } else {
        (&lap, "laptop", &lap_id)
    };
    let expected: Vec<(Value, &Path, &str, &String)> = vec![
        (mem("shared-1"), &desk, "desktop", &desk_id),
        (mem("shared-2"), &lap, "laptop", &lap_id),
        (mem("tie-1"), tie_dir, tie_label, tie_id),
        (mem("m-linker"), &lap, "laptop", &lap_id),
        (mem("d-only"), &desk, "desktop", &desk_id),
        (msg("conv-shared", 1), &desk, "desktop", &desk_id),
        (msg("conv-shared", 2), &desk, "desktop", &desk_id),
        (msg("conv-tie", 1), tie_dir, tie_label, tie_id),
        (msg("conv-rpath", 1), &lap, "laptop", &lap_id),
        (msg("conv-desk", 0), &desk, "desktop", &desk_id),
    ];
    let mut items: Vec<Value> = expected.iter().map(|e| e.0.clone()).collect();
    items.push(json!({"text": "The linker path is set by -Wl,-rpath."}));
    let mut texts: Vec<Value> = expected
        .iter()
        .map(|(item, dir, _, _)| json!({"text": local_text(dir, item)}))
        .collect();
    texts.push(items.last().unwrap().clone());
    for (scorer, explain) in [("fusion", true), ("semantic", false), ("bm25", true)] {
        let args = |items: &[Value]| {
            json!({"query": "how do I fix the linker path", "items": items, "scorer": scorer,
                   "explain": explain, "limit": 100, "text_chars": -1})
        };
        let (ok, archive, said) = rerank(&lap, Some(&db.url), &args(&items));
        assert!(ok, "{scorer} on the archive: {said}");
        let (ok, local, said) = rerank(&lap, None, &args(&texts));
        assert!(ok, "{scorer} locally: {said}");
        assert_eq!(
            ranking(&archive),
            ranking(&local),
            "{scorer}: the archive did not score the newest copies"
        );
        for row in archive["rows"].as_array().unwrap() {
            let position = usize::try_from(row["position"].as_u64().unwrap()).unwrap();
            let Some((item, _, label, id)) = expected.get(position) else {
                assert_eq!(row["kind"], "text");
                continue;
            };
            assert_eq!(row["machine"], *label, "{item}: {row}");
            assert_eq!(row["machine_id"], id.as_str(), "{item}: {row}");
            assert_eq!(row["cites"]["machine_id"], id.as_str(), "{item}: {row}");
        }
    }
    // A missing id (held by neither machine) is still refused as the laptop refuses
    // it, whichever machine asks.
    for args in &missing {
        let (_, _, local) = rerank(&lap, None, args);
        let (ok, _, archive) = rerank(&desk, Some(&db.url), args);
        assert!(!ok, "{args} answered on the archive: {archive}");
        assert_eq!(item_error(&archive), item_error(&local), "{args}");
    }
    println!(
        "two machines: {} references read from their newest copy (tie broken towards {tie_label})",
        expected.len()
    );
}
