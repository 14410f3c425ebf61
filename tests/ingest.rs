//! Importers against real files: every Claude Code and ChatGPT file of the shared
//! corpus (`$SKILLS_CORPUS_DIR`, default `<manifest>/../shared/corpus`; skipped with a
//! note when absent) and the bundled sample in `data/sample`.
//!
//! The expected counts were taken by reading each file (jq and a small independent
//! script applying the documented rules), not from the importers' output.

use std::path::{Path, PathBuf};

use skills::ingest::{self, FileImport, Format};
use skills::stores::conversations::ConversationStore;

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("SKILLS_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: corpus `{}` not found; set SKILLS_CORPUS_DIR to run this test",
            dir.display()
        );
        None
    }
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample")
}

/// (file name, messages, skipped records, expected fault reasons as substrings).
type Expected = (&'static str, usize, usize, &'static [&'static str]);

const CLAUDE_CODE: &[Expected] = &[
    ("agent-history__real-claude-session-01.jsonl", 2, 3, &[]),
    (
        "ai-engineering-fluency__xss-hostile-claude-session.jsonl",
        3,
        2,
        &[],
    ),
    ("brain-mcp__sample_cc_mixed.jsonl", 10, 0, &[]),
    ("brain-mcp__sample_claude_code.jsonl", 3, 0, &[]),
    ("cass__-test-project__agent-test123.jsonl", 2, 1, &[]),
    ("ccrider__agent-session.jsonl", 2, 0, &[]),
    ("ccrider__sample.jsonl", 2, 1, &[]),
    (
        "claude-code-log__dag_compact_after_rewind.jsonl",
        11,
        1,
        &[],
    ),
    ("episodic-memory__image-paste-conversation.jsonl", 3, 0, &[]),
    ("episodic-memory__large-conversation.jsonl", 154, 306, &[]),
    ("episodic-memory__long-conversation.jsonl", 48, 247, &[]),
    ("episodic-memory__medium-conversation.jsonl", 0, 23, &[]),
    ("episodic-memory__short-conversation.jsonl", 2, 1, &[]),
    ("episodic-memory__tiny-conversation.jsonl", 5, 2, &[]),
    (
        "spotter__258c7280-ae70-4798-800f-63464d01a85d__subagents__agent-a881341.jsonl",
        4,
        6,
        &[],
    ),
    (
        "spotter__258c7280-ae70-4798-800f-63464d01a85d__subagents__agent-acompact-fffbd0.jsonl",
        4,
        0,
        &[],
    ),
    (
        "spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20__subagents__agent-acompact-f46190.jsonl",
        7,
        0,
        &[],
    ),
    (
        "spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04__subagents__agent-aac57f5.jsonl",
        4,
        36,
        &[],
    ),
    (
        "spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04__subagents__agent-acompact-946d2b.jsonl",
        2,
        0,
        &[],
    ),
    (
        "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46__subagents__agent-acompact-70d8e7.jsonl",
        15,
        0,
        &[],
    ),
    ("spotter__short.jsonl", 3, 12, &[]),
    ("spotter__subagent.jsonl", 11, 85, &[]),
    ("spotter__tool_heavy.jsonl", 8, 31, &[]),
];

const CHATGPT: &[Expected] = &[
    ("brain-mcp__sample_chatgpt.json", 2, 0, &[]),
    ("brain-mcp__sample_chatgpt_export.json", 4, 0, &[]),
    ("cass__conv-conversation-id.json", 2, 0, &[]),
    ("cass__conv-multipart.json", 1, 0, &[]),
    ("cass__conv-structured-parts.json", 2, 0, &[]),
    ("chatgpt-export-converter-win__conversations.json", 4, 0, &[]),
    (
        "librechat__chatgpt-citations.json",
        1,
        1,
        &[
            "`current_node` `88a0cf9f-e860-4b34-8e7e-65f8346f4862` is not in `mapping`",
            "node `9e874379-5008-4a2d-aa2e-628d1d705a04` has `parent` `5cc5e87b-2b74-485a-b3a7-23cb25f202db`, which is not in `mapping`",
        ],
    ),
    (
        "librechat__chatgpt-modern-export.json",
        6,
        1,
        &["conversation `6b0f0d9c-0000-4000-8000-000000000002` (#1): no `mapping` object"],
    ),
    ("librechat__chatgpt-tree.json", 6, 1, &[]),
];

const CODEX: &[Expected] = &[
    ("agent-history__real-codex-session-01.jsonl", 3, 8, &[]),
    ("brain-mcp__sample_codex.jsonl", 2, 3, &[]),
    ("brain-mcp__sample_codex_mixed.jsonl", 6, 1, &[]),
    ("cass__2025__11__25__rollout-test.jsonl", 2, 3, &[]),
    ("cass__2025__11__26__rollout-tool-call.jsonl", 2, 3, &[]),
    ("ccrider__subagent_v2.jsonl", 2, 3, &[]),
    (
        "claude-code-log__rollout-44444444-legacy-bare.jsonl",
        2,
        1,
        &[],
    ),
    (
        "claude-code-transcripts__sample_codex_session.jsonl",
        3,
        8,
        &[],
    ),
    (
        "localpush__rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
        53,
        649,
        &[],
    ),
    (
        "localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        301,
        2421,
        &[],
    ),
    (
        "localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
        5,
        14,
        &[],
    ),
    (
        "localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
        9,
        54,
        &[],
    ),
];

const GEMINI_CLI: &[Expected] = &[
    ("agent-history__gemini_with_tool_error.jsonl", 9, 1, &[]),
    ("agent-history__real-gemini-session-01.json", 2, 0, &[]),
    ("brain-mcp__sample_gemini_cli.json", 4, 0, &[]),
    ("cass__hash123__chats__session-test.json", 2, 0, &[]),
];

const PI: &[Expected] = &[
    ("agent-history__real-pi-session-01.jsonl", 2, 4, &[]),
    ("brain-mcp__sample_clawdbot.jsonl", 4, 2, &[]),
    ("brain-mcp__sample_pi.jsonl", 4, 6, &[]),
    (
        "cass__2024-01-15T10-30-00-000Z_abc12345-1234-5678-9abc-def012345678.jsonl",
        4,
        4,
        &[],
    ),
    ("ccrider__redacted_real.jsonl", 2, 4, &[]),
];

fn check_file(
    dir: &Path,
    (name, messages, skipped, faults): &Expected,
    format: Format,
) -> FileImport {
    let path = dir.join(name);
    assert_eq!(
        ingest::detect(&path),
        Some(format),
        "{name}: detected format"
    );
    let import = ingest::import_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        (import.messages.len(), import.skipped),
        (*messages, *skipped),
        "{name}: (messages, skipped)"
    );
    let reasons: Vec<&str> = import.faults.iter().map(|f| f.reason.as_str()).collect();
    assert_eq!(reasons.len(), faults.len(), "{name}: faults {reasons:#?}");
    for (got, want) in reasons.iter().zip(faults.iter()) {
        assert!(
            got.contains(want),
            "{name}: fault `{got}` should contain `{want}`"
        );
    }
    for m in &import.messages {
        assert!(
            !m.content.trim().is_empty(),
            "{name}: empty message {}",
            m.message_id
        );
        assert!(
            matches!(m.role.as_str(), "user" | "assistant"),
            "{name}: role {}",
            m.role
        );
        assert_eq!(m.source, format.source());
    }
    // Alone in a fresh store every message is new; a second insert adds nothing.
    let store = ConversationStore::open_in_memory().expect("in-memory store");
    assert_eq!(
        store.insert(&import.messages).expect("insert").added,
        *messages,
        "{name}: added"
    );
    assert_eq!(
        store.insert(&import.messages).expect("re-insert").added,
        0,
        "{name}: re-import"
    );
    import
}

#[test]
fn corpus_claude_code_per_file() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("claude-code");
    for expected in CLAUDE_CODE {
        check_file(&dir, expected, Format::ClaudeCode);
    }
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(
        on_disk,
        CLAUDE_CODE.len(),
        "every corpus file has an expectation"
    );
}

#[test]
fn corpus_chatgpt_per_file() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("chatgpt-export");
    for expected in CHATGPT {
        check_file(&dir, expected, Format::ChatGpt);
    }
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(
        on_disk,
        CHATGPT.len(),
        "every corpus file has an expectation"
    );
}

#[test]
fn corpus_codex_per_file() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("codex");
    for expected in CODEX {
        check_file(&dir, expected, Format::Codex);
    }
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(on_disk, CODEX.len(), "every corpus file has an expectation");

    // Subagent rollout with two session_meta lines: the first (the child) names it;
    // its messages exist only as events.
    let sub = ingest::import_file(&dir.join("ccrider__subagent_v2.jsonl")).expect("import");
    assert!(sub
        .messages
        .iter()
        .all(|m| m.conversation_id == "0199a001-0000-7000-8000-00000000c41d"));
    assert_eq!(
        sub.messages[1].content,
        "Updated the pins and the lockfile."
    );
    assert_eq!(sub.messages[1].model.as_deref(), Some("gpt-6.1"));
    // Legacy bare rollout: items have no time and take the session's.
    let bare =
        ingest::import_file(&dir.join("claude-code-log__rollout-44444444-legacy-bare.jsonl"))
            .expect("import");
    assert!(bare.messages.iter().all(|m| m.timestamp_is_fallback
        && m.timestamp.to_rfc3339() == "2026-01-04T05:06:07+00:00"
        && m.conversation_id == "44444444-4444-4444-8444-444444444444"));
    // Real rollout: user images set the attachment flag, assistant messages carry the model.
    let real =
        ingest::import_file(&dir.join(
            "localpush__rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        ))
        .expect("import");
    assert!(real.messages.iter().any(|m| m.has_attachment));
    assert!(real
        .messages
        .iter()
        .filter(|m| m.role == "assistant")
        .all(|m| m.model.is_some()));
}

#[test]
fn corpus_gemini_cli_per_file() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("gemini-cli");
    for expected in GEMINI_CLI {
        check_file(&dir, expected, Format::GeminiCli);
    }
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(
        on_disk,
        GEMINI_CLI.len(),
        "every corpus file has an expectation"
    );
    // `type: "model"` (older) is an assistant message too.
    let old =
        ingest::import_file(&dir.join("cass__hash123__chats__session-test.json")).expect("import");
    assert_eq!(old.messages[1].role, "assistant");
    assert_eq!(old.messages[1].conversation_id, "test-session-1");
}

#[test]
fn corpus_pi_per_file() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("pi");
    for expected in PI {
        check_file(&dir, expected, Format::Pi);
    }
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(on_disk, PI.len(), "every corpus file has an expectation");
    let v3 = ingest::import_file(&dir.join("brain-mcp__sample_pi.jsonl")).expect("import");
    let last = &v3.messages[2];
    assert_eq!(last.message_id, "a3e5ccf6");
    assert_eq!(last.parent_id.as_deref(), Some("92d4bbe5"));
    assert_eq!(last.model.as_deref(), Some("claude-opus-5"));
    assert_eq!(last.project.as_deref(), Some("/Users/example/my-project"));
    let real =
        ingest::import_file(&dir.join("agent-history__real-pi-session-01.jsonl")).expect("import");
    assert_eq!(
        real.messages[0].conversation_title.as_deref(),
        Some("agent-history pi smoke")
    );
    assert_eq!(real.messages[1].model.as_deref(), Some("gpt-5.5"));
}

#[test]
fn corpus_generic_jsonl() {
    let Some(corpus) = corpus() else { return };
    // Three lines, each a message (2 user, 1 assistant) of `generic-test-001`.
    let import = check_file(
        &corpus.join("other"),
        &("brain-mcp__sample_generic.jsonl", 3, 0, &[]),
        Format::Generic,
    );
    let m = &import.messages;
    assert!(m.iter().all(|m| m.conversation_id == "generic-test-001"
        && m.conversation_title.as_deref() == Some("Docker discussion")));
    assert_eq!(m[1].role, "assistant");
    assert_eq!(m[2].timestamp.to_rfc3339(), "2025-01-20T09:01:00+00:00");
    assert_eq!(m[2].msg_index, 2);
}

#[test]
fn times_are_utc_and_missing_times_say_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("times.jsonl");
    fs_err::write(
        &path,
        concat!(
            r#"{"role":"user","content":"epoch seconds","timestamp":1700000000}"#,
            "\n",
            r#"{"role":"assistant","content":"epoch ms","timestamp":1700000001500}"#,
            "\n",
            r#"{"role":"user","content":"iso offset","timestamp":"2023-11-15T01:00:00+02:00"}"#,
            "\n",
            r#"{"role":"assistant","content":"iso naive","timestamp":"2023-11-14T23:30:00"}"#,
            "\n",
            r#"{"role":"user","content":"no time"}"#,
            "\n",
        ),
    )
    .expect("write");
    let store = ConversationStore::open_in_memory().expect("store");
    let summary = ingest::ingest_paths(&store, &[path], &mut |_, _| {});
    assert_eq!(summary.messages_added, 5, "{summary}");
    let conn = store.connection().expect("connection");
    let mut stmt = conn
        .prepare(
            "SELECT strftime(created, '%Y-%m-%d %H:%M:%S.%g'), msg_timestamp IS NULL, temporal_precision \
             FROM all_conversations ORDER BY msg_index",
        )
        .expect("prepare");
    let rows: Vec<(String, bool, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let want = [
        ("2023-11-14 22:13:20.000", false, "message"),
        ("2023-11-14 22:13:21.500", false, "message"),
        ("2023-11-14 23:00:00.000", false, "message"),
        ("2023-11-14 23:30:00.000", false, "message"),
        // No time: the conversation's (its nearest earlier) time, flagged, never the clock.
        ("2023-11-14 23:30:00.000", true, "conversation"),
    ];
    let got: Vec<(&str, bool, &str)> = rows
        .iter()
        .map(|(a, b, c)| (a.as_str(), *b, c.as_str()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn corpus_details() {
    let Some(corpus) = corpus() else { return };
    let cc = corpus.join("claude-code");

    // Subagent transcripts get their own conversation under the parent session.
    let sub = ingest::import_file(
        &cc.join("spotter__258c7280-ae70-4798-800f-63464d01a85d__subagents__agent-a881341.jsonl"),
    )
    .expect("import");
    assert!(sub
        .messages
        .iter()
        .all(|m| m.conversation_id == "258c7280-ae70-4798-800f-63464d01a85d/agent-a881341"));

    // Image block: attachment flag on the message that also has text.
    let img = ingest::import_file(&cc.join("episodic-memory__image-paste-conversation.jsonl"))
        .expect("import");
    assert_eq!(img.messages.iter().filter(|m| m.has_attachment).count(), 1);

    // No uuid / sessionId: conversation is the file stem, ids are 64-hex hashes, times are the lines' own.
    let mixed = ingest::import_file(&cc.join("brain-mcp__sample_cc_mixed.jsonl")).expect("import");
    assert!(mixed
        .messages
        .iter()
        .all(|m| m.conversation_id == "brain-mcp__sample_cc_mixed"
            && m.message_id.len() == 64
            && !m.timestamp_is_fallback));
    assert_eq!(
        mixed.messages[0].project.as_deref(),
        Some("/Users/test/proj")
    );

    // A 343 KB line parses (no line-length limit).
    let long =
        ingest::import_file(&cc.join("episodic-memory__long-conversation.jsonl")).expect("import");
    assert!(long.faults.is_empty());

    // ChatGPT tree: the current_node branch, not the other edit / regeneration.
    let tree = ingest::import_file(&corpus.join("chatgpt-export/librechat__chatgpt-tree.json"))
        .expect("import");
    let texts: Vec<&str> = tree.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts[..5],
        [
            "hi there",
            "Hello! How can I assist you today?",
            "hi again",
            "Hey! Welcome back. What's on your mind?",
            "tell me a joke"
        ]
    );
    assert!(!texts.contains(&"tell me a story"));
    assert_eq!(
        tree.messages[5].message_id,
        "f63b8e17-aa5c-4ca6-a1bf-d4d285e269b8"
    );
    assert!(tree
        .messages
        .iter()
        .all(|m| m.message_id != "d0d2a7df-d2fc-4df9-bf0a-1c5121e227ae"));
    assert_eq!(
        tree.messages[0].timestamp.to_rfc3339(),
        "2024-05-01T17:37:11.150442+00:00"
    );

    // Structured parts: strings and {content_type: text} objects, image → attachment.
    let parts =
        ingest::import_file(&corpus.join("chatgpt-export/cass__conv-structured-parts.json"))
            .expect("import");
    assert!(parts.messages[0].has_attachment);
    assert!(parts.messages[1]
        .content
        .contains("Assistant structured-only block"));

    // Citations survive the dangling references.
    let cites =
        ingest::import_file(&corpus.join("chatgpt-export/librechat__chatgpt-citations.json"))
            .expect("import");
    assert!(cites.messages[0].has_citation);
    assert!(cites.messages[0].content.starts_with("Signal Sciences"));
}

#[test]
fn corpus_in_one_store_and_reimport_adds_nothing() {
    let Some(corpus) = corpus() else { return };
    let store = ConversationStore::open_in_memory().expect("in-memory store");
    let paths =
        ["claude-code", "chatgpt-export", "codex", "gemini-cli", "pi"].map(|d| corpus.join(d));
    let mut files = Vec::new();
    let first = ingest::ingest_paths(&store, &paths, &mut |path, s| {
        files.push((path.to_path_buf(), s.added))
    });
    let parsed_cc: usize = CLAUDE_CODE.iter().map(|e| e.1).sum();
    let parsed_gpt: usize = CHATGPT.iter().map(|e| e.1).sum();
    let parsed_codex: usize = CODEX.iter().map(|e| e.1).sum();
    let parsed_other: usize = GEMINI_CLI.iter().chain(PI).map(|e| e.1).sum();
    assert_eq!(
        first.files_seen,
        CLAUDE_CODE.len() + CHATGPT.len() + CODEX.len() + GEMINI_CLI.len() + PI.len(),
        "{first}"
    );
    assert_eq!(first.files_imported, first.files_seen);
    assert_eq!(
        first.messages_parsed,
        parsed_cc + parsed_gpt + parsed_codex + parsed_other
    );
    assert_eq!(first.faults.len(), 3, "{first}");
    // Hand-made fixtures reuse ids (`msg-1`/`msg-2` in both ccrider files and in
    // brain-mcp's ChatGPT sample, `node-user`/`node-assistant` in two cass files) in
    // different conversations: rows are keyed by (source, conversation, message id),
    // so all of them are stored.
    assert_eq!(
        first.messages_added,
        parsed_cc + parsed_gpt + parsed_codex + parsed_other,
        "{first}"
    );
    let added_of = |name: &str| {
        files
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .map(|(_, a)| *a)
    };
    assert_eq!(added_of("ccrider__sample.jsonl"), Some(2));
    assert_eq!(added_of("cass__conv-structured-parts.json"), Some(2));
    assert_eq!(added_of("brain-mcp__sample_chatgpt.json"), Some(2));
    assert_eq!(first.sources["claude-code"].files, CLAUDE_CODE.len());
    assert_eq!(first.sources["chatgpt"].parsed, parsed_gpt);
    assert_eq!(first.sources["codex"].added, parsed_codex);
    assert_eq!(first.sources["gemini-cli"].files, GEMINI_CLI.len());
    assert_eq!(first.sources["pi"].files, PI.len());
    assert_eq!(
        store.count().expect("count"),
        u64::try_from(first.messages_added).expect("small")
    );

    // Nothing changed: no file is read again and nothing is added.
    let second = ingest::ingest_paths(&store, &paths, &mut |_, _| {});
    assert_eq!(second.files_unchanged, first.files_seen, "{second}");
    assert_eq!(
        (
            second.files_imported,
            second.messages_parsed,
            second.messages_added
        ),
        (0, 0, 0),
        "{second}"
    );
    assert!(second.is_clean(), "{second}");
}

#[test]
fn bundled_sample_imports_cleanly() {
    let store = ConversationStore::open_in_memory().expect("in-memory store");
    let mut seen = Vec::new();
    let summary = ingest::ingest_paths(&store, &[sample()], &mut |path, s| {
        assert!(s.imported && s.faults == 0, "{}: {s:?}", path.display());
        seen.push(s.clone());
    });
    assert!(summary.is_clean(), "{summary}");
    assert_eq!(summary.files_seen, 5, "{summary}");
    // The README next to the data, and the memory notes of `data/sample/memories`
    // (imported by the memories importer, not this one).
    let memory_notes = fs_err::read_dir(sample().join("memories")).map_or(0, Iterator::count);
    assert_eq!(
        summary.files_ignored,
        1 + memory_notes,
        "README.md and memory notes"
    );
    assert_eq!(
        (
            summary.messages_parsed,
            summary.messages_added,
            summary.skipped
        ),
        (41, 41, 13)
    );
    assert_eq!(summary.sources["claude-code"].parsed, 23);
    assert_eq!(summary.sources["chatgpt"].parsed, 18);
    assert_eq!(seen.len(), 5);
    let text = summary.to_string();
    assert!(
        text.starts_with(
            "5 of 5 files imported: 41 messages parsed, 41 new, 0 injected set aside, 13 records skipped, 0 faults"
        ),
        "{text}"
    );
    let json = serde_json::to_value(&summary).expect("serialise");
    assert_eq!(json["sources"]["chatgpt"]["added"], 18);

    let conn = store.connection().expect("connection");
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).expect(sql) };
    assert_eq!(
        count("SELECT count(*) FROM all_conversations WHERE content LIKE '%REGENERATED-AWAY%'"),
        0
    );
    assert_eq!(
        count("SELECT count(*) FROM all_conversations WHERE content ILIKE '%duckdb%'"),
        12
    );
    assert_eq!(
        count("SELECT count(DISTINCT conversation_id) FROM all_conversations"),
        7
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM all_conversations WHERE conversation_id LIKE '%/agent-a4f2c91'"
        ),
        2
    );
    assert_eq!(
        count("SELECT count(*) FROM all_conversations WHERE has_attachment = 1"),
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM all_conversations WHERE has_citation = 1"),
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM all_conversations WHERE timestamp_is_fallback"),
        0
    );
    assert_eq!(count("SELECT count(*) FROM all_conversations WHERE created = TIMESTAMP '2025-03-13 10:00:00'"), 2);
    assert_eq!(
        count("SELECT count(*) - count(DISTINCT created) FROM all_conversations"),
        1,
        "one deliberate tie"
    );
    assert_eq!(count("SELECT count(*) FROM all_conversations WHERE length(content) > 200 AND substr(content, 200, 1) = 'è'"), 1);
    assert_eq!(
        count("SELECT count(DISTINCT strftime(created, '%Y-%m-%d')) FROM all_conversations"),
        11
    );

    let again = ingest::ingest_paths(&store, &[sample()], &mut |_, _| {});
    assert_eq!(again.messages_added, 0);
}

#[test]
fn malformed_line_is_reported_and_the_rest_imports() {
    let source = sample().join(
        "claude-code/-home-dev-src-transcript-search/bf902dde-903f-5c67-a070-a568ea4e7e8b.jsonl",
    );
    let text = fs_err::read_to_string(&source).expect("sample");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(
        4,
        r#"{"type":"user","message":{"role":"user","content":"cut off"#,
    );
    lines.insert(7, "\u{FFFD}garbage");
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("broken.jsonl");
    fs_err::write(&copy, lines.join("\n") + "\n").expect("write");

    let import = ingest::import_file(&copy).expect("import");
    let at: Vec<Option<usize>> = import.faults.iter().map(|f| f.line).collect();
    assert_eq!(at, [Some(5), Some(8)]);
    assert!(
        import.faults[0]
            .reason
            .starts_with("invalid JSON: EOF while parsing"),
        "{}",
        import.faults[0]
    );
    assert!(import.faults[0]
        .to_string()
        .contains("broken.jsonl`:5: invalid JSON"));
    assert_eq!((import.messages.len(), import.skipped), (8, 4));

    let store = ConversationStore::open_in_memory().expect("in-memory store");
    let summary = ingest::ingest_paths(&store, &[copy], &mut |_, _| {});
    assert_eq!(
        (
            summary.files_imported,
            summary.messages_added,
            summary.faults.len()
        ),
        (1, 8, 2)
    );
}

#[test]
fn unreadable_and_unknown_files_are_faults() {
    let dir = tempfile::tempdir().expect("temp dir");
    let notes = dir.path().join("notes.txt");
    fs_err::write(&notes, "hello").expect("write");
    let broken = dir.path().join("conversations.json");
    fs_err::write(&broken, "[{\"mapping\": ").expect("write");
    let missing = dir.path().join("missing.jsonl");

    let store = ConversationStore::open_in_memory().expect("in-memory store");
    let summary = ingest::ingest_paths(&store, &[notes, broken, missing], &mut |_, _| {});
    assert_eq!((summary.files_seen, summary.files_imported), (3, 0));
    let reasons: Vec<String> = summary.faults.iter().map(ToString::to_string).collect();
    assert_eq!(reasons.len(), 3, "{reasons:#?}");
    assert!(
        reasons[0].ends_with("notes.txt`: not a recognised transcript format"),
        "{}",
        reasons[0]
    );
    assert!(
        reasons[1].contains("conversations.json`: invalid JSON: EOF while parsing"),
        "{}",
        reasons[1]
    );
    assert!(
        reasons[2].contains("missing.jsonl`: cannot read"),
        "{}",
        reasons[2]
    );
}

#[test]
fn discover_honours_claude_config_dir() {
    // Only this test touches the environment in this binary.
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("projects/-tmp-demo");
    fs_err::create_dir_all(project.join("abc/subagents")).expect("mkdir");
    fs_err::write(project.join("abc.jsonl"), "").expect("write");
    fs_err::write(project.join("abc/subagents/agent-1.jsonl"), "").expect("write");
    fs_err::write(project.join("notes.md"), "").expect("write");
    let export = dir.path().join("export");
    fs_err::create_dir_all(&export).expect("mkdir");
    fs_err::write(export.join("conversations.json"), "[]").expect("write");
    std::env::set_var("CLAUDE_CONFIG_DIR", dir.path());
    std::env::set_var("SKILLS_CHATGPT_EXPORT", &export);
    std::env::set_var("CODEX_HOME", dir.path().join("no-codex-here"));
    std::env::set_var("HOME", dir.path()); // no ~/.gemini or ~/.pi here
    let found = ingest::discover();
    assert_eq!(
        found,
        [
            // Sorted by path: `abc/…` before `abc.jsonl` (components compare first).
            project.join("abc/subagents/agent-1.jsonl"),
            project.join("abc.jsonl"),
            export.join("conversations.json")
        ]
    );
}

#[test]
fn any_corpus_file_or_truncation_never_panics() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut detected = Vec::new();
    for sub in fs_err::read_dir(&corpus)
        .expect("corpus")
        .filter_map(Result::ok)
    {
        if !sub.path().is_dir() {
            continue;
        }
        for file in fs_err::read_dir(sub.path())
            .expect("dir")
            .filter_map(Result::ok)
        {
            let path = file.path();
            let bytes = fs_err::read(&path).expect("read");
            let format = ingest::detect(&path);
            if let Some(format) = format {
                detected.push(format!(
                    "{}/{} {format}",
                    sub.file_name().to_string_lossy(),
                    file.file_name().to_string_lossy()
                ));
            }
            let _ = ingest::import_file(&path);
            for cut in [
                bytes.len() / 3,
                bytes.len() / 2,
                bytes.len().saturating_sub(1),
            ] {
                let copy = dir.path().join(file.file_name());
                fs_err::write(&copy, &bytes[..cut]).expect("write");
                if let Some(format) = format {
                    let _ = ingest::import_as(&copy, format);
                }
                let _ = ingest::import_file(&copy);
            }
        }
    }
    detected.sort();
    let ours = [
        "claude-code/",
        "chatgpt-export/",
        "codex/",
        "gemini-cli/",
        "pi/",
        "aider/",
    ];
    let outside: Vec<&String> = detected
        .iter()
        .filter(|d| !ours.iter().any(|p| d.starts_with(p)))
        .collect();
    // Cursor's agent transcripts use Claude Code's line shape exactly (type, message,
    // uuid, sessionId); only their location tells them apart.
    assert_eq!(
        outside,
        [
            "cursor/brain-mcp__sample_cursor_transcript.jsonl claude-code",
            "other/anthropic-data__claude-ai-conversations.json claude-ai",
            "other/brain-mcp__sample_generic.jsonl generic"
        ],
        "files of other tools detected as ours"
    );
}

/// Aider chat logs: user messages are runs of `#### ` lines, `> ` lines are aider's
/// own output (skipped), other runs of lines are replies (counted by reading the files).
const AIDER: &[Expected] = &[
    // No session line; `/add src/main.rs`, then two replies around a `>` note.
    ("cass__.aider.chat.history.md", 3, 2, &[]),
    // One session: 37 user messages, 50 replies, 442 `>` lines.
    ("simple-calculator__.aider.chat.history.md", 87, 442, &[]),
    // Four sessions, eight commands, no replies.
    ("zen-mcp-server__.aider.chat.history.md", 8, 71, &[]),
];

#[test]
fn corpus_aider_per_file() {
    let Some(corpus) = corpus() else { return };
    let dir = corpus.join("aider");
    for expected in AIDER {
        check_file(&dir, expected, Format::Aider);
    }
    // The input history (what was typed, no replies) is not a chat log.
    let input = dir.join("simple-calculator__.aider.input.history");
    assert_eq!(ingest::detect(&input), None);
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(
        on_disk,
        AIDER.len() + 1,
        "every corpus file has an expectation"
    );

    let calc = ingest::import_file(&dir.join("simple-calculator__.aider.chat.history.md"))
        .expect("import");
    let m = &calc.messages;
    assert_eq!(m[0].role, "user");
    assert_eq!(
        m[0].content,
        "give me a quick summarized overview of this repo"
    );
    assert_eq!(m[1].role, "assistant");
    assert!(m[1]
        .content
        .starts_with("This repository contains a simple web-based"));
    assert_eq!(
        m[1].model.as_deref(),
        Some("gemini/gemini-2.5-pro-exp-03-25")
    );
    assert!(m.iter().all(|m| m.timestamp_is_fallback
        && m.timestamp.to_rfc3339() == "2025-05-04T17:02:36+00:00"
        && m.conversation_id == "simple-calculator__@2025-05-04 17:02:36"));
    let zen =
        ingest::import_file(&dir.join("zen-mcp-server__.aider.chat.history.md")).expect("import");
    let conversations: std::collections::BTreeSet<&str> = zen
        .messages
        .iter()
        .map(|m| m.conversation_id.as_str())
        .collect();
    assert_eq!(
        conversations.len(),
        2,
        "two of the four sessions have messages"
    );
}

#[test]
fn corpus_claude_ai_export() {
    let Some(corpus) = corpus() else { return };
    // One conversation: a human message and an assistant reply (thinking + text).
    let import = check_file(
        &corpus.join("other"),
        &("anthropic-data__claude-ai-conversations.json", 2, 0, &[]),
        Format::ClaudeAi,
    );
    let m = &import.messages;
    assert!(m.iter().all(
        |m| m.conversation_id == "b49c0fc0-85d8-475c-bd2d-ee89f31f592c"
            && m.conversation_title.as_deref() == Some("Bleep bloop")
    ));
    assert_eq!(
        (m[0].role.as_str(), m[1].role.as_str()),
        ("user", "assistant")
    );
    assert_eq!(m[0].message_id, "f5885afd-1881-4093-9616-c296a8d71fa6");
    assert!(
        m[1].content.starts_with("Dog saliva does contain"),
        "no thinking"
    );
    assert_eq!(
        m[1].timestamp.to_rfc3339(),
        "2025-07-06T03:10:24.798798+00:00"
    );
    assert!(!m[1].timestamp_is_fallback);
    assert_eq!(m[1].msg_index, 1);
}
