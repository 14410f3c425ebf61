//! Importers against real files: every Claude Code and ChatGPT file of the shared
//! corpus (`$SKILLS_CORPUS_DIR`, default `<manifest>/../shared/corpus`; skipped with a
//! note when absent) and the bundled sample in `data/sample`.
//!
//! The expected counts were taken by reading each file (jq and a small independent
//! script applying the documented rules), not from the importers' output.

mod common;

use std::path::{Path, PathBuf};

use skills::ingest::{self, FileImport, Format};
use skills::stores::conversations::ConversationStore;

/// The registered format of `source`.
fn format(source: &str) -> Format {
    Format::from_source(source).unwrap_or_else(|| panic!("`{source}` is not registered"))
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("claude-code");
    for expected in CLAUDE_CODE {
        check_file(&dir, expected, format("claude-code"));
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("chatgpt-export");
    for expected in CHATGPT {
        check_file(&dir, expected, format("chatgpt"));
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("codex");
    for expected in CODEX {
        check_file(&dir, expected, format("codex"));
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("gemini-cli");
    for expected in GEMINI_CLI {
        check_file(&dir, expected, format("gemini-cli"));
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("pi");
    for expected in PI {
        check_file(&dir, expected, format("pi"));
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    // Three lines, each a message (2 user, 1 assistant) of `generic-test-001`.
    let import = check_file(
        &corpus.join("other"),
        &("brain-mcp__sample_generic.jsonl", 3, 0, &[]),
        format("generic"),
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
    let Some(corpus) = common::corpus() else {
        return;
    };
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let store = ConversationStore::open_in_memory().expect("in-memory store");
    // Every transcript folder of the corpus (memories/ is for `skills memo import`).
    let paths = [
        "claude-code",
        "chatgpt-export",
        "codex",
        "gemini-cli",
        "pi",
        "aider",
        "cursor",
        "other",
    ]
    .map(|d| corpus.join(d));
    let mut files = Vec::new();
    let first = ingest::ingest_paths(&store, &paths, &mut |path, s| {
        files.push((path.to_path_buf(), s.added))
    });
    let sum = |tables: &[&[Expected]]| -> usize {
        tables.iter().flat_map(|t| t.iter()).map(|e| e.1).sum()
    };
    let parsed_cc = sum(&[CLAUDE_CODE]);
    let parsed_gpt = sum(&[CHATGPT]);
    let parsed_codex = sum(&[CODEX]);
    let parsed_other = sum(&[GEMINI_CLI, PI, AIDER]);
    // Found by content in `cursor/` and `other/` (their flattened names hide the places
    // that identify the Cursor transcript and the Amp thread): the Cursor transcript is
    // read as the Claude Code session its lines look like, the Amp thread is not
    // recognised (ignored, as the aider input history is).
    let cursor_transcript_as_cc = CURSOR_NATIVE.iter().map(|e| e.1).sum::<usize>();
    let parsed_new = sum(&[CURSOR, OTHER_CLAUDE_AI, OTHER_GENERIC]) + sum(OTHER_BY_FORMAT_TABLES);
    let parsed =
        parsed_cc + parsed_gpt + parsed_codex + parsed_other + cursor_transcript_as_cc + parsed_new;
    let new_files = CURSOR.len()
        + CURSOR_NATIVE.len()
        + OTHER_CLAUDE_AI.len()
        + OTHER_GENERIC.len()
        + OTHER_BY_FORMAT_TABLES
            .iter()
            .map(|t| t.len())
            .sum::<usize>();
    assert_eq!(
        first.files_seen,
        CLAUDE_CODE.len()
            + CHATGPT.len()
            + CODEX.len()
            + GEMINI_CLI.len()
            + PI.len()
            + AIDER.len()
            + new_files,
        "{first}"
    );
    assert_eq!(first.files_imported, first.files_seen);
    assert_eq!(
        first.files_ignored,
        1 + OTHER_NATIVE_ONLY.len(),
        "the aider input history and the Amp thread"
    );
    assert_eq!(first.messages_parsed, parsed, "{first}");
    // The ChatGPT files' 3, and the two OpenCode message files whose parts are not
    // beside them in the flattened folder.
    assert_eq!(first.faults.len(), 5, "{first}");
    assert_eq!(
        first
            .faults
            .iter()
            .filter(|f| f.reason.contains("outside its storage layout"))
            .count(),
        2
    );
    // Hand-made fixtures reuse ids (`msg-1`/`msg-2` in both ccrider files and in
    // brain-mcp's ChatGPT sample, `node-user`/`node-assistant` in two cass files) in
    // different conversations: rows are keyed by (source, conversation, message id),
    // so all of them are stored.
    assert_eq!(first.messages_added, parsed, "{first}");
    let added_of = |name: &str| {
        files
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .map(|(_, a)| *a)
    };
    assert_eq!(added_of("ccrider__sample.jsonl"), Some(2));
    assert_eq!(added_of("cass__conv-structured-parts.json"), Some(2));
    assert_eq!(added_of("brain-mcp__sample_chatgpt.json"), Some(2));
    assert_eq!(
        first.sources["claude-code"].files,
        CLAUDE_CODE.len() + CURSOR_NATIVE.len()
    );
    assert_eq!(first.sources["chatgpt"].parsed, parsed_gpt);
    assert_eq!(first.sources["codex"].added, parsed_codex);
    assert_eq!(first.sources["gemini-cli"].files, GEMINI_CLI.len());
    assert_eq!(first.sources["pi"].files, PI.len());
    assert_eq!(first.sources["aider"].files, AIDER.len());
    assert_eq!(first.sources["cursor"].parsed, sum(&[CURSOR]));
    assert_eq!(first.sources["opencode"].files, OTHER_OPENCODE.len());
    assert_eq!(first.sources["opencode"].skipped, 5);
    assert_eq!(first.sources["cline"].parsed, sum(&[OTHER_CLINE]));
    assert_eq!(first.sources["copilot"].added, sum(&[OTHER_COPILOT]));
    assert_eq!(first.sources["antigravity"].parsed, 3);
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
            second.messages_added,
            second.files_ignored
        ),
        (0, 0, 0, first.files_ignored),
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
    let root = dir.path();
    let touch = |rel: &str| {
        let path = root.join(rel);
        fs_err::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs_err::write(&path, "").expect("write");
        path
    };
    let project = root.join("projects/-tmp-demo");
    touch("projects/-tmp-demo/abc/subagents/agent-1.jsonl");
    touch("projects/-tmp-demo/abc.jsonl");
    touch("projects/-tmp-demo/notes.md");
    let export = root.join("export");
    fs_err::create_dir_all(&export).expect("mkdir");
    fs_err::write(export.join("conversations.json"), "[]").expect("write");
    let claude_ai = touch("claude-ai/conversations.json");
    // HOME, XDG and COPILOT_HOME all point into the temp dir.
    let cursor_transcript = touch(".cursor/projects/demo/agent-transcripts/t1/t1.jsonl");
    touch(".cursor/projects/demo/notes.jsonl");
    let vscdb = touch("config/Cursor/User/globalStorage/state.vscdb");
    let opencode = touch("data/opencode/storage/message/ses_1/msg_1.json");
    touch("data/opencode/storage/part/msg_1/prt_1.json");
    let amp = touch("data/amp/threads/T-1.json");
    let cline =
        touch("config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/t1/ui_messages.json");
    touch("config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/t1/api_conversation_history.json");
    let copilot_events = touch("copilot/session-state/s1/events.jsonl");
    let copilot_history = touch("copilot/history-session-state/h1.json");
    let antigravity = touch(".gemini/antigravity/brain/b1/.system_generated/logs/transcript.jsonl");
    std::env::set_var("CLAUDE_CONFIG_DIR", root);
    std::env::set_var("SKILLS_CHATGPT_EXPORT", &export);
    std::env::set_var("SKILLS_CLAUDE_AI_EXPORT", &claude_ai);
    std::env::set_var("CODEX_HOME", root.join("no-codex-here"));
    std::env::set_var("HOME", root); // no ~/.gemini/tmp or ~/.pi here
    std::env::set_var("XDG_CONFIG_HOME", root.join("config"));
    std::env::set_var("XDG_DATA_HOME", root.join("data"));
    std::env::set_var("COPILOT_HOME", root.join("copilot"));
    let found = ingest::discover();
    assert_eq!(
        found,
        [
            // Importer by importer, in the registry's order; each one's files sorted by
            // path: `abc/…` before `abc.jsonl` (components compare first).
            project.join("abc/subagents/agent-1.jsonl"),
            project.join("abc.jsonl"),
            claude_ai,
            export.join("conversations.json"),
            cursor_transcript,
            vscdb,
            opencode.clone(),
            copilot_events,
            copilot_history,
            antigravity,
            amp,
            cline,
        ]
    );
    // With an `opencode.db`, the database replaces the (migrated) JSON files.
    let db = touch("data/opencode/opencode.db");
    let found = ingest::discover();
    assert!(found.contains(&db) && !found.contains(&opencode));
}

#[test]
fn any_corpus_file_or_truncation_never_panics() {
    let Some(corpus) = common::corpus() else {
        return;
    };
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
    // Cursor's sample transcript uses Claude Code's line shape exactly (type, message,
    // uuid, sessionId): only its place (`agent-transcripts/`) tells it apart, and the
    // flattened corpus name has none. The Amp thread is recognised only by its id or
    // place (`T-…`, `threads/`), which its sample lacks.
    assert_eq!(
        outside,
        [
            "cursor/brain-mcp__sample_cursor_transcript.jsonl claude-code",
            "cursor/cass__headers_only_workspace_project_dir.json cursor",
            "other/anthropic-data__claude-ai-conversations.json claude-ai",
            "other/brain-mcp__sample_generic.jsonl generic",
            "other/cass-antigravity__brain__aaaa1111__transcript.jsonl antigravity",
            "other/cass-cline__task1__api_conversation_history.json cline",
            "other/cass-cline__task1__task_metadata.json cline",
            "other/cass-cline__task1__ui_messages.json cline",
            "other/cass-copilot__cli_prompt_output_unicode.events.jsonl copilot",
            "other/cass-copilot__legacy_history_human.json copilot",
            "other/cass-opencode__storage__message__ses_test1__msg_test1.json opencode",
            "other/cass-opencode__storage__message__ses_test1__msg_test2.json opencode",
            "other/cass-opencode__storage__part__msg_test1__part1.json opencode",
            "other/cass-opencode__storage__part__msg_test2__part1.json opencode",
            "other/cass-opencode__storage__session__proj1__ses_test1.json opencode",
        ],
        "files of the other tools, as detected at their corpus names"
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("aider");
    for expected in AIDER {
        check_file(&dir, expected, format("aider"));
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
    let Some(corpus) = common::corpus() else {
        return;
    };
    // One conversation: a human message and an assistant reply (thinking + text).
    let import = check_file(
        &corpus.join("other"),
        &("anthropic-data__claude-ai-conversations.json", 2, 0, &[]),
        format("claude-ai"),
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

/// `cursor/`: the dump of `state.vscdb` rows, recognised by its `composerData:` key.
const CURSOR: &[Expected] = &[
    // Three bubbles in header order: type 1 (user, `rawText`), type 2 (assistant,
    // `content`) and type 99 (tool output, neither the person nor a reply): skipped.
    ("cass__headers_only_workspace_project_dir.json", 2, 1, &[]),
];

/// `cursor/` files recognised only in their native place (`agent-transcripts/`): their
/// lines have Claude Code's shape. Checked in a copy placed there.
const CURSOR_NATIVE: &[Expected] = &[
    // Four lines: two questions and two replies, each one text block.
    ("brain-mcp__sample_cursor_transcript.jsonl", 4, 0, &[]),
];

const OTHER_CLAUDE_AI: &[Expected] = &[("anthropic-data__claude-ai-conversations.json", 2, 0, &[])];
const OTHER_GENERIC: &[Expected] = &[("brain-mcp__sample_generic.jsonl", 3, 0, &[])];

/// OpenCode storage files under their flattened names: a message's text lives in
/// `part/<message>/`, which is not beside the message files here.
const OTHER_OPENCODE: &[Expected] = &[
    (
        "cass-opencode__storage__message__ses_test1__msg_test1.json",
        0,
        1,
        &["outside its storage layout"],
    ),
    (
        "cass-opencode__storage__message__ses_test1__msg_test2.json",
        0,
        1,
        &["outside its storage layout"],
    ),
    // Parts and sessions are read through their message: one record skipped each.
    (
        "cass-opencode__storage__part__msg_test1__part1.json",
        0,
        1,
        &[],
    ),
    (
        "cass-opencode__storage__part__msg_test2__part1.json",
        0,
        1,
        &[],
    ),
    (
        "cass-opencode__storage__session__proj1__ses_test1.json",
        0,
        1,
        &[],
    ),
];

const OTHER_CLINE: &[Expected] = &[
    // Not the unit of import: the API history's one record and the metadata object.
    (
        "cass-cline__task1__api_conversation_history.json",
        0,
        1,
        &[],
    ),
    ("cass-cline__task1__task_metadata.json", 0, 1, &[]),
    // A `user` and an `assistant` record with `content` and `timestamp`.
    ("cass-cline__task1__ui_messages.json", 2, 0, &[]),
];

const OTHER_COPILOT: &[Expected] = &[
    // A `user.message` with `prompt` and an `assistant.message` with `output`.
    (
        "cass-copilot__cli_prompt_output_unicode.events.jsonl",
        2,
        0,
        &[],
    ),
    // A `human` record with `content` and an `assistant` record with `result`.
    ("cass-copilot__legacy_history_human.json", 2, 0, &[]),
];

const OTHER_ANTIGRAVITY: &[Expected] = &[
    // Eight steps: USER_INPUT and the two PLANNER_RESPONSEs are messages;
    // CONVERSATION_HISTORY (no content), EPHEMERAL_MESSAGE, VIEW_FILE and RUN_COMMAND
    // (tool output) and SYSTEM_MESSAGE are skipped.
    (
        "cass-antigravity__brain__aaaa1111__transcript.jsonl",
        3,
        5,
        &[],
    ),
];

/// The tables of `other/` files recognised at their corpus names, one per new format.
const OTHER_BY_FORMAT_TABLES: &[&[Expected]] = &[
    OTHER_OPENCODE,
    OTHER_CLINE,
    OTHER_COPILOT,
    OTHER_ANTIGRAVITY,
];

/// `other/` files recognised only in their native folder (given), checked in a copy
/// placed there.
const OTHER_NATIVE_ONLY: &[(Expected, &str)] = &[
    // Two messages with `text` and `createdAt`; its id `thread-001` lacks Amp's `T-`.
    (("cass-amp__thread-001.json", 2, 0, &[]), "amp/threads"),
];

/// A copy of `dir/name` placed in `rel` under `root` (created), keeping its name.
fn place(dir: &Path, name: &str, root: &Path, rel: &str) -> PathBuf {
    let folder = root.join(rel);
    fs_err::create_dir_all(&folder).expect("mkdir");
    fs_err::copy(dir.join(name), folder.join(name)).expect("copy");
    folder
}

/// The original relative path encoded in a corpus name: the part after the origin
/// prefix, `__` read as `/` (`cass-opencode__storage__part__m__p.json` →
/// `storage/part/m/p.json`).
fn native_path(name: &str) -> PathBuf {
    let (_, rest) = name.split_once("__").expect("an origin prefix");
    rest.split("__").collect()
}

/// One `|`-joined string per row of `sql` (whose one column is a VARCHAR).
fn column(store: &ConversationStore, sql: &str) -> Vec<String> {
    let conn = store.connection().expect("connection");
    let mut stmt = conn.prepare(sql).expect(sql);
    stmt.query_map([], |r| r.get::<_, String>(0))
        .expect(sql)
        .collect::<Result<_, _>>()
        .expect(sql)
}

#[test]
fn corpus_cursor_per_file() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("cursor");
    let dump = check_file(&dir, &CURSOR[0], format("cursor"));
    let m = &dump.messages;
    assert!(m.iter().all(|m| m.conversation_id == "comp-fixture-headers"
        && m.conversation_title.as_deref() == Some("Cursor Headers Fixture")
        && m.project.as_deref() == Some("/workspace/cursor-fixture")));
    let got: Vec<(&str, &str, Option<&str>, String)> = m
        .iter()
        .map(|m| {
            (
                m.role.as_str(),
                m.content.as_str(),
                m.model.as_deref(),
                m.timestamp.to_rfc3339(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "user",
                "User content from rawText",
                None,
                "2023-11-14T22:13:20+00:00".to_owned()
            ),
            (
                "assistant",
                "Assistant content from content",
                Some("claude-3.5-sonnet"),
                "2023-11-14T22:13:21+00:00".to_owned()
            ),
        ]
    );
    assert_eq!(m[1].message_id, "bubble-assistant");

    // The transcript, in its native place.
    let home = tempfile::tempdir().expect("temp dir");
    let transcripts = place(
        &dir,
        CURSOR_NATIVE[0].0,
        home.path(),
        ".cursor/projects/home-me-venv/agent-transcripts",
    );
    let transcript = check_file(&transcripts, &CURSOR_NATIVE[0], format("cursor"));
    let m = &transcript.messages;
    assert!(m.iter().all(|m| m.conversation_id == "cursor-session-abc"
        && m.project.as_deref() == Some("home-me-venv")
        && !m.timestamp_is_fallback));
    assert_eq!(m[0].message_id, "cursor-msg-001");
    assert_eq!(
        m[0].content,
        "How do I set up a Python virtual environment in Cursor?"
    );
    assert_eq!(m[3].model.as_deref(), Some("gpt-4"));
    assert_eq!(m[3].timestamp.to_rfc3339(), "2025-06-15T10:01:10+00:00");

    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(
        on_disk,
        CURSOR.len() + CURSOR_NATIVE.len(),
        "every corpus file has an expectation"
    );
}

#[test]
fn cursor_state_vscdb_built_from_the_dump_rows() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dump_path = corpus.join("cursor").join(CURSOR[0].0);
    let dump: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&dump_path).expect("read")).expect("json");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("globalStorage/state.vscdb");
    fs_err::create_dir_all(db.parent().expect("parent")).expect("mkdir");
    {
        // Cursor's own schema: values are JSON text in a BLOB column.
        let conn = rusqlite::Connection::open(&db).expect("create db");
        conn.execute_batch(
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
             CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);",
        )
        .expect("schema");
        let mut rows = vec![(
            dump["composer_key"].as_str().expect("key").to_owned(),
            dump["composer_data"].to_string(),
        )];
        for row in dump["bubble_rows"].as_array().expect("rows") {
            rows.push((
                row["key"].as_str().expect("key").to_owned(),
                row["value"].to_string(),
            ));
        }
        rows.push(("someOtherKey:1".to_owned(), "{}".to_owned()));
        for (key, value) in rows {
            conn.execute(
                "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                rusqlite::params![key, value.into_bytes()],
            )
            .expect("insert");
        }
    }
    let before = fs_err::read(&db).expect("read db");
    assert_eq!(ingest::detect(&db), Some(format("cursor")));
    let from_db = ingest::import_file(&db).expect("import db");
    let from_dump = ingest::import_file(&dump_path).expect("import dump");
    assert_eq!((from_db.messages.len(), from_db.skipped), (2, 1));
    assert!(from_db.faults.is_empty(), "{:?}", from_db.faults);
    assert_eq!(from_db.messages, from_dump.messages, "one mapping for both");

    let store = ConversationStore::open_in_memory().expect("store");
    let summary = ingest::ingest_paths(&store, &[dir.path().to_path_buf()], &mut |_, _| {});
    assert_eq!(
        (summary.files_seen, summary.messages_added),
        (1, 2),
        "{summary}"
    );
    assert!(summary.is_clean(), "{summary}");
    assert_eq!(fs_err::read(&db).expect("read db"), before, "never written");
}

/// Cursor keeps `state.vscdb` in WAL mode: new chats can sit in `state.vscdb-wal` while
/// the database file itself keeps its size and time. Ingest must still see them.
#[test]
fn cursor_state_vscdb_rows_still_in_the_wal_are_imported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("state.vscdb");
    let conn = rusqlite::Connection::open(&db).expect("create db");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
         CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);",
    )
    .expect("schema");
    let add_chat = |id: &str, text: &str| {
        let composer = serde_json::json!({
            "name": format!("chat {id}"),
            "createdAt": 1_700_000_000_000_i64,
            "fullConversationHeadersOnly": [{"bubbleId": "b1"}],
        });
        let bubble =
            serde_json::json!({"type": 1, "text": text, "createdAt": "2025-01-02T03:04:05Z"});
        for (key, value) in [
            (format!("composerData:{id}"), composer),
            (format!("bubbleId:{id}:b1"), bubble),
        ] {
            conn.execute(
                "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
                rusqlite::params![key, value.to_string().into_bytes()],
            )
            .expect("insert");
        }
    };
    add_chat("c1", "first question about lifetimes");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("checkpoint");
    let store = ConversationStore::open_in_memory().expect("store");
    let first = ingest::ingest_paths(&store, &[dir.path().to_path_buf()], &mut |_, _| {});
    assert_eq!(first.messages_added, 1, "{first}");

    let size = fs_err::metadata(&db).expect("stat").len();
    add_chat("c2", "second question about the borrow checker");
    assert_eq!(
        fs_err::metadata(&db).expect("stat").len(),
        size,
        "still in the WAL"
    );
    let second = ingest::ingest_paths(&store, &[dir.path().to_path_buf()], &mut |_, _| {});
    // A changed database is re-read whole; its conversations are replaced.
    assert_eq!(
        (second.files_imported, second.messages_parsed),
        (1, 2),
        "{second}"
    );
    assert_eq!(store.count().expect("count"), 2);
}

#[test]
fn corpus_other_per_file() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = corpus.join("other");
    for expected in OTHER_CLAUDE_AI {
        check_file(&dir, expected, format("claude-ai"));
    }
    for expected in OTHER_GENERIC {
        check_file(&dir, expected, format("generic"));
    }
    for (table, format) in OTHER_BY_FORMAT_TABLES.iter().zip([
        format("opencode"),
        format("cline"),
        format("copilot"),
        format("antigravity"),
    ]) {
        for expected in *table {
            check_file(&dir, expected, format);
        }
    }
    let placed = tempfile::tempdir().expect("temp dir");
    for (expected, rel) in OTHER_NATIVE_ONLY {
        assert_eq!(
            ingest::detect(&dir.join(expected.0)),
            None,
            "{}",
            expected.0
        );
        let folder = place(&dir, expected.0, placed.path(), rel);
        check_file(&folder, expected, format("amp"));
    }
    let on_disk = fs_err::read_dir(&dir).expect("corpus dir").count();
    assert_eq!(
        on_disk,
        OTHER_CLAUDE_AI.len()
            + OTHER_GENERIC.len()
            + OTHER_BY_FORMAT_TABLES
                .iter()
                .map(|t| t.len())
                .sum::<usize>()
            + OTHER_NATIVE_ONLY.len(),
        "every corpus file has an expectation"
    );

    // Copilot: text byte for byte (e + U+0301 stays two code points), ids and places.
    let events = ingest::import_file(&dir.join(OTHER_COPILOT[0].0)).expect("import");
    let m = &events.messages;
    assert_eq!(
        m[0].content,
        "How should Copilot handle cafe\u{301} ✅ and emoji?"
    );
    assert_eq!(
        m[1].content,
        "Keep Unicode intact: cafe\u{301} ✅ should round-trip."
    );
    assert!(m.iter().all(|m| m.conversation_id == "cli-session-001"
        && m.project.as_deref() == Some("/workspaces/demo-unicode")));
    assert_eq!(m[1].timestamp.to_rfc3339(), "2023-11-14T22:30:01+00:00");
    let legacy = ingest::import_file(&dir.join(OTHER_COPILOT[1].0)).expect("import");
    let m = &legacy.messages;
    assert_eq!(
        (m[0].role.as_str(), m[0].content.as_str()),
        ("user", "Summarize unicode Ω handling 🚀")
    );
    assert_eq!(m[1].content, "Unicode stays normalized and searchable.");
    assert_eq!(m[0].project.as_deref(), Some("/workspaces/legacy-copilot"));

    // Antigravity: only the request is the person's text; thinking is not the reply.
    let steps = ingest::import_file(&dir.join(OTHER_ANTIGRAVITY[0].0)).expect("import");
    let got: Vec<(&str, &str, &str)> = steps
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str(), m.message_id.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "user",
                "Search the codebase for the FLYWHEEL marker and summarize it.",
                "step-0"
            ),
            (
                "assistant",
                "I'll grep for the FLYWHEEL marker now.",
                "step-3"
            ),
            (
                "assistant",
                "Found the FLYWHEEL marker in notes.txt; the associated magic number is 42.",
                "step-6"
            ),
        ]
    );
    assert_eq!(
        steps.messages[2].timestamp.to_rfc3339(),
        "2026-06-11T20:14:47+00:00"
    );

    // Amp: title and times from the thread.
    let amp_dir = placed.path().join("amp/threads");
    let amp = ingest::import_file(&amp_dir.join(OTHER_NATIVE_ONLY[0].0 .0)).expect("import");
    assert!(amp
        .messages
        .iter()
        .all(|m| m.conversation_id == "thread-001"
            && m.conversation_title.as_deref() == Some("Amp sample thread")));
    assert_eq!(
        amp.messages[1].timestamp.to_rfc3339(),
        "2023-11-14T22:13:25+00:00"
    );
}

/// Rebuilds the native layout of the `other/` files whose names start with `prefix`
/// under `root/into`, and returns `root/into`.
fn rebuild(other: &Path, prefix: &str, root: &Path, into: &str) -> PathBuf {
    let base = root.join(into);
    for entry in fs_err::read_dir(other).expect("corpus dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !name.starts_with(prefix) {
            continue;
        }
        let target = base.join(native_path(&name));
        fs_err::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        fs_err::copy(other.join(&name), &target).expect("copy");
    }
    base
}

const OPENCODE_ROWS: &str = "SELECT concat_ws('|', conversation_id, coalesce(conversation_title, '-'), \
     coalesce(project, '-'), msg_index, role, content, strftime(created, '%Y-%m-%d %H:%M:%S'), \
     coalesce(model, '-'), message_id) FROM all_conversations WHERE source = 'opencode' ORDER BY msg_index";

const OPENCODE_WANT: [&str; 2] = [
    "ses_test1|OpenCode JSON Session|/tmp/test-project|0|user|Hello, can you help me with Rust?|2023-11-14 22:13:21|-|msg_test1",
    "ses_test1|OpenCode JSON Session|/tmp/test-project|1|assistant|Of course! I'd be happy to help you with Rust. What would you like to know?|2023-11-14 22:13:22|claude-3-opus|msg_test2",
];

#[test]
fn opencode_storage_layout_rebuilt_from_the_corpus() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let root = tempfile::tempdir().expect("temp dir");
    let data = rebuild(
        &corpus.join("other"),
        "cass-opencode__",
        root.path(),
        "opencode",
    );
    assert!(data.join("storage/part/msg_test1/part1.json").is_file());
    let store = ConversationStore::open_in_memory().expect("store");
    let summary = ingest::ingest_paths(&store, std::slice::from_ref(&data), &mut |_, _| {});
    // Two message files (one message each), two parts and a session (one skipped each).
    assert_eq!(
        (
            summary.files_seen,
            summary.messages_added,
            summary.skipped,
            summary.faults.len()
        ),
        (5, 2, 3, 0),
        "{summary}"
    );
    assert_eq!(column(&store, OPENCODE_ROWS), OPENCODE_WANT);

    // A part that changes after its message was imported is not seen (only the part
    // file changed, and parts yield nothing); the message is re-read when its own file
    // changes.
    let part = data.join("storage/part/msg_test1/part1.json");
    let edited = fs_err::read_to_string(&part)
        .expect("read")
        .replace("help me with Rust", "help me with Rust lifetimes");
    fs_err::write(&part, edited).expect("write");
    let again = ingest::ingest_paths(&store, std::slice::from_ref(&data), &mut |_, _| {});
    assert_eq!(
        (again.files_imported, again.messages_added),
        (1, 0),
        "{again}"
    );
    assert_eq!(column(&store, OPENCODE_ROWS), OPENCODE_WANT);
    let message = data.join("storage/message/ses_test1/msg_test1.json");
    let text = fs_err::read_to_string(&message).expect("read");
    fs_err::write(&message, format!("{text}\n")).expect("write");
    // The store replaces a changed file's conversation whole; the other files of that
    // conversation are imported again in the same run, so no message goes missing.
    let rewritten = ingest::ingest_paths(&store, std::slice::from_ref(&data), &mut |_, _| {});
    assert_eq!(rewritten.files_reimported, 1, "{rewritten}");
    assert!(rewritten.is_clean(), "{rewritten}");
    let rows = column(&store, OPENCODE_ROWS);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let after = ingest::ingest_paths(&store, &[data], &mut |_, _| {});
    assert_eq!(
        (after.files_imported, after.messages_added),
        (0, 0),
        "{after}"
    );
    let rows = column(&store, OPENCODE_ROWS);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(
        rows[0].contains("help me with Rust lifetimes?"),
        "{rows:#?}"
    );
    assert_eq!(rows[1], OPENCODE_WANT[1]);
}

#[test]
fn opencode_db_built_from_the_storage_files() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let other = corpus.join("other");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&fs_err::read_to_string(other.join(name)).expect("read"))
            .expect("json")
    };
    let session = read("cass-opencode__storage__session__proj1__ses_test1.json");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("opencode.db");
    {
        // OpenCode 1.2's tables (the columns read, plus a few); `data` is the file's
        // JSON without the ids that became columns.
        let conn = rusqlite::Connection::open(&db).expect("create db");
        conn.execute_batch(
            "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT,
                directory TEXT, title TEXT, version TEXT, time_created INTEGER, time_updated INTEGER);
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
                time_updated INTEGER, data TEXT);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
                time_created INTEGER, time_updated INTEGER, data TEXT);",
        )
        .expect("schema");
        conn.execute(
            "INSERT INTO session (id, project_id, directory, title, time_created, time_updated)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                session["id"].as_str(),
                session["projectID"].as_str(),
                session["directory"].as_str(),
                session["title"].as_str(),
                session["time"]["created"].as_i64(),
                session["time"]["updated"].as_i64(),
            ],
        )
        .expect("session");
        for n in ["1", "2"] {
            let mut message = read(&format!(
                "cass-opencode__storage__message__ses_test1__msg_test{n}.json"
            ));
            let mut part = read(&format!(
                "cass-opencode__storage__part__msg_test{n}__part1.json"
            ));
            let id = message["id"].as_str().expect("id").to_owned();
            let created = message["time"]["created"].as_i64();
            for key in ["id", "sessionID"] {
                message.as_object_mut().expect("object").remove(key);
            }
            for key in ["id", "messageID"] {
                part.as_object_mut().expect("object").remove(key);
            }
            conn.execute(
                "INSERT INTO message VALUES (?1, 'ses_test1', ?2, ?2, ?3)",
                rusqlite::params![id, created, message.to_string()],
            )
            .expect("message");
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, 'ses_test1', ?3, ?3, ?4)",
                rusqlite::params![format!("prt_{n}"), id, created, part.to_string()],
            )
            .expect("part");
        }
    }
    assert_eq!(ingest::detect(&db), Some(format("opencode")));
    let store = ConversationStore::open_in_memory().expect("store");
    let summary = ingest::ingest_paths(&store, &[db], &mut |_, _| {});
    assert!(summary.is_clean(), "{summary}");
    assert_eq!(summary.messages_added, 2, "{summary}");
    assert_eq!(column(&store, OPENCODE_ROWS), OPENCODE_WANT);
}

#[test]
fn cline_task_folder_rebuilt_from_the_corpus() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let root = tempfile::tempdir().expect("temp dir");
    let tasks = rebuild(&corpus.join("other"), "cass-cline__", root.path(), "tasks");
    assert!(tasks.join("task1/ui_messages.json").is_file());
    let store = ConversationStore::open_in_memory().expect("store");
    let summary = ingest::ingest_paths(&store, &[tasks], &mut |_, _| {});
    assert!(summary.is_clean(), "{summary}");
    // The UI file's two messages; the API history's record and the metadata skipped.
    assert_eq!(
        (summary.files_seen, summary.messages_added, summary.skipped),
        (3, 2, 2),
        "{summary}"
    );
    assert_eq!(
        column(
            &store,
            "SELECT concat_ws('|', conversation_id, conversation_title, msg_index, role, content, \
             strftime(created, '%Y-%m-%d %H:%M:%S')) FROM all_conversations ORDER BY msg_index"
        ),
        [
            "task1|Cline fixture task|0|user|Hello Cline|2023-11-14 22:13:20",
            "task1|Cline fixture task|1|assistant|Hi from Cline|2023-11-14 22:13:21",
        ]
    );
}

#[test]
fn phrases_from_cursor_opencode_and_copilot_are_found() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let other = corpus.join("other");
    let root = tempfile::tempdir().expect("temp dir");
    let transcripts = place(
        &corpus.join("cursor"),
        CURSOR_NATIVE[0].0,
        root.path(),
        ".cursor/projects/demo/agent-transcripts",
    );
    let opencode = rebuild(&other, "cass-opencode__", root.path(), "opencode");
    let paths = [
        transcripts,
        corpus.join("cursor").join(CURSOR[0].0),
        opencode,
        other.join(OTHER_COPILOT[0].0),
        other.join(OTHER_COPILOT[1].0),
    ];
    let store = ConversationStore::open_in_memory().expect("store");
    let summary = ingest::ingest_paths(&store, &paths, &mut |_, _| {});
    assert!(summary.is_clean(), "{summary}");
    let found = |phrase: &str| {
        column(
            &store,
            &format!(
                "SELECT concat_ws('|', source, role) FROM all_conversations \
                 WHERE content ILIKE '%{phrase}%' ORDER BY source, role"
            ),
        )
    };
    assert_eq!(
        found("how do i set up a python virtual environment"),
        ["cursor|user"]
    );
    assert_eq!(found("select interpreter"), ["cursor|assistant"]);
    assert_eq!(
        found("assistant content from content"),
        ["cursor|assistant"]
    );
    assert_eq!(found("help me with rust"), ["opencode|user"]);
    assert_eq!(found("happy to help you with rust"), ["opencode|assistant"]);
    assert_eq!(found("cafe\u{301} ✅ and emoji"), ["copilot|user"]);
    assert_eq!(found("unicode ω handling"), ["copilot|user"]);
    assert_eq!(
        found("stays normalized and searchable"),
        ["copilot|assistant"]
    );
    // Stored byte for byte: the combining accent is not composed into `é`.
    assert_eq!(found("café"), Vec::<String>::new());
    assert_eq!(
        column(
            &store,
            "SELECT content FROM all_conversations WHERE source = 'copilot' \
             AND conversation_id = 'cli-session-001' AND role = 'user'"
        ),
        ["How should Copilot handle cafe\u{301} ✅ and emoji?"]
    );
}

/// A Claude Code transcript of one user message: `text`, then a short assistant reply.
fn huge_transcript(dir: &Path, text: &str) -> PathBuf {
    let session = "5e0d7a11-0000-4000-8000-000000000001";
    let record = |kind: &str, uuid: &str, parent: Option<&str>, text: &str| {
        serde_json::json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/huge", "sessionId": session, "version": "2.0.14",
            "type": kind, "message": {"role": kind, "content": text},
            "uuid": uuid, "timestamp": "2025-03-10T09:14:02.118Z"
        })
        .to_string()
    };
    let path = dir.join(format!("{session}.jsonl"));
    let lines = [
        record("user", "00000000-0000-4000-8000-0000000000a1", None, text),
        record(
            "assistant",
            "00000000-0000-4000-8000-0000000000a2",
            Some("00000000-0000-4000-8000-0000000000a1"),
            "short reply",
        ),
    ];
    fs_err::write(&path, lines.join("\n") + "\n").expect("write transcript");
    path
}

#[test]
fn a_message_longer_than_the_cap_is_stored_cut_and_counted_whole() {
    let cap = ingest::MAX_STORED_CHARS;
    // Multi-byte characters across the cut: it must fall on a character boundary.
    let mut text = String::from("beforecutword ");
    while text.chars().count() < cap - 3 {
        text.push_str("é ");
    }
    text.truncate(
        text.char_indices()
            .nth(cap - 3)
            .map_or(text.len(), |(i, _)| i),
    );
    text.push_str("ωωω aftercutword ");
    let full = text.chars().count();
    assert_eq!(full, cap + 14);
    let files = tempfile::tempdir().expect("temp dir");
    let path = huge_transcript(files.path(), &text);

    let data = tempfile::tempdir().expect("data dir");
    common::cli::ok(common::cli::with_data(data.path()).args([
        "ingest",
        "--json",
        path.to_str().expect("utf-8 path"),
    ]));

    let store =
        ConversationStore::open_ro(&data.path().join("conversations.duckdb")).expect("store");
    let conn = store.connection().expect("connection");
    let (content, chars): (String, i64) = conn
        .query_row(
            "SELECT content, char_count FROM all_conversations WHERE role = 'user'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the user message");
    assert_eq!(content.chars().count(), cap);
    assert!(text.starts_with(&content));
    assert!(content.ends_with("ωωω"), "cut inside the multi-byte run");
    assert_eq!(chars, i64::try_from(full).expect("count"));
    drop(conn);
    drop(store);

    let found = |term: &str| {
        let v = common::cli::json(
            common::cli::with_data(data.path())
                .args(["run", "search-conversations", "--json", "--arg"])
                .arg(format!("term={term}")),
        );
        v["data"]["rows"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(found("beforecutword"), 1);
    assert_eq!(found("aftercutword"), 0);
    assert_eq!(found("short reply"), 1);

    // get-conversation says the message was cut at import, and by how much.
    let shown = get_conversation_text(data.path(), "5e0d7a11-0000-4000-8000-000000000001");
    assert!(
        shown.contains("…\n\n(14 characters cut at import: not stored)"),
        "{shown}"
    );
    assert_eq!(shown.matches("cut at import").count(), 1, "{shown}");
    // The count is a field of the output (not the cap repeated by the template).
    let rows = get_conversation_rows(data.path(), "5e0d7a11-0000-4000-8000-000000000001");
    let cut: Vec<i64> = rows
        .iter()
        .map(|r| r["cut_at_import"].as_i64().expect("cut_at_import"))
        .collect();
    assert_eq!(cut, [14, 0]);
}

/// The rows of `skills run get-conversation --json` for `id` in the store in `data`.
fn get_conversation_rows(data: &Path, id: &str) -> Vec<serde_json::Value> {
    let v = common::cli::json(
        common::cli::with_data(data)
            .args(["run", "get-conversation", "--json", "--arg"])
            .arg(format!("conversation_id={id}")),
    );
    v["data"]["rows"].as_array().expect("rows").clone()
}

/// The text `skills run get-conversation` prints for `id` in the store in `data`.
fn get_conversation_text(data: &Path, id: &str) -> String {
    common::cli::stdout_of_success(
        common::cli::with_data(data)
            .args(["run", "get-conversation", "--arg"])
            .arg(format!("conversation_id={id}")),
    )
}

/// Issue 43: a transcript holding the characters of a cut mark (U+FDD0, a count,
/// U+FDD1; noncharacters are valid text) cannot forge a cut at import: its text is
/// stored as written, `char_count` is its length, and get-conversation reports no cut.
#[test]
fn a_transcript_cannot_forge_a_cut_at_import() {
    let text = "see \u{FDD0}123\u{FDD1} and \u{FDD0}0123456789abcdef:45\u{FDD1} here";
    let files = tempfile::tempdir().expect("temp dir");
    let path = huge_transcript(files.path(), text);
    let data = tempfile::tempdir().expect("data dir");
    common::cli::ok(
        common::cli::with_data(data.path())
            .args(["ingest", "--json", "--keep-secrets"])
            .arg(&path),
    );
    let rows = get_conversation_rows(data.path(), "5e0d7a11-0000-4000-8000-000000000001");
    let user = &rows[0];
    assert_eq!(user["content"], text);
    assert_eq!(
        user["char_count"].as_u64(),
        Some(text.chars().count() as u64)
    );
    assert_eq!(user["cut_at_import"], 0);
    let shown = get_conversation_text(data.path(), "5e0d7a11-0000-4000-8000-000000000001");
    assert!(!shown.contains("cut at import"), "{shown}");
}

/// A text of about `bytes` bytes (UTF-8) mixing what a string's skeleton must cut
/// around: multi-byte characters, escaped quotes and backslashes, a control character
/// (written `\u0001`) and an emoji (a surrogate pair when escaped).
fn long_mixed_text(bytes: usize) -> String {
    let piece = "pasted log line é \"quoted\" back\\slash \u{1} 😀 ";
    piece.repeat(bytes / piece.len() + 1)
}

/// A `.jsonl` transcript whose first record is longer than the detection window (here
/// 60 MB: a pasted log) is told by that record's keys, not ignored as of unknown
/// format: a generic file whose key telling it comes after the text, and a Claude
/// Code session opening with a file-history snapshot, where no marker of its format
/// is among its first bytes. Both import from a folder, the text cut at the cap.
#[test]
fn a_first_record_longer_than_the_detection_window_is_still_told() {
    let files = tempfile::tempdir().expect("temp dir");
    let text = long_mixed_text(60 * 1024 * 1024);
    let generic = files.path().join("pasted.jsonl");
    let lines = [
        serde_json::json!({"content": text, "role": "user", "conversation_id": "huge-first-generic",
            "timestamp": "2026-03-01T10:00:00Z"}),
        serde_json::json!({"role": "assistant", "content": "generic short reply",
            "conversation_id": "huge-first-generic", "timestamp": "2026-03-01T10:00:01Z"}),
    ];
    let text_of =
        |lines: &[serde_json::Value]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    fs_err::write(&generic, text_of(&lines)).expect("write");
    let session = "5e0d7a11-0000-4000-8000-0000000000f1";
    let claude = files.path().join(format!("{session}.jsonl"));
    let lines = [
        serde_json::json!({"type": "file-history-snapshot", "messageId": "m0",
            "snapshot": {"trackedFileBackups": {"log.txt": {"backupFileName": text}}},
            "isSnapshotUpdate": false}),
        serde_json::json!({"parentUuid": null, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/huge", "sessionId": session, "version": "2.0.14", "type": "user",
            "message": {"role": "user", "content": "claude after the snapshot"},
            "uuid": "00000000-0000-4000-8000-0000000000b1",
            "timestamp": "2026-03-01T10:00:02Z"}),
    ];
    fs_err::write(&claude, text_of(&lines)).expect("write");
    drop(text);

    assert_eq!(
        ingest::detect(&generic).map(Format::source),
        Some("generic")
    );
    assert_eq!(
        ingest::detect(&claude).map(Format::source),
        Some("claude-code")
    );

    let data = tempfile::tempdir().expect("data dir");
    let summary = common::cli::json(
        common::cli::with_data(data.path())
            .args(["ingest", "--json", "--no-embed"])
            .arg(files.path()),
    );
    assert_eq!(summary["files_ignored"], 0, "{summary}");
    assert_eq!(summary["files_imported"], 2, "{summary}");
    let store =
        ConversationStore::open_ro(&data.path().join("conversations.duckdb")).expect("store");
    assert_eq!(
        column(
            &store,
            "SELECT concat_ws('|', source, conversation_id, role, length(content)) \
             FROM all_conversations ORDER BY source, msg_index"
        ),
        [
            format!("claude-code|{session}|user|25"),
            format!(
                "generic|huge-first-generic|user|{}",
                ingest::MAX_STORED_CHARS
            ),
            "generic|huge-first-generic|assistant|19".to_owned(),
        ]
    );
}

/// A `.jsonl` file whose first record is longer than the detection window and whose
/// format even its skeleton cannot tell (here 300 KiB of structure before any text) is
/// not skipped silently when found in a folder: the import reports a fault naming it
/// and why, and fails.
#[test]
fn a_first_record_whose_format_cannot_be_told_is_a_fault_naming_the_file() {
    let files = tempfile::tempdir().expect("temp dir");
    let numbers = vec![1; 150 * 1024];
    let line = serde_json::json!({"numbers": numbers, "role": "user", "content": "hidden"});
    let untold = files.path().join("untold.jsonl");
    fs_err::write(&untold, format!("{line}\n")).expect("write");
    assert_eq!(ingest::detect(&untold), None);

    let data = tempfile::tempdir().expect("data dir");
    let (ok, stdout, stderr) = common::cli::run(
        common::cli::with_data(data.path())
            .args(["ingest", "--json", "--no-embed"])
            .arg(files.path()),
    );
    assert!(!ok, "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
    assert_eq!(summary["files_ignored"], 0, "{summary}");
    let faults = summary["faults"].as_array().expect("faults");
    assert_eq!(faults.len(), 1, "{summary}");
    assert!(
        faults[0]["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("untold.jsonl")),
        "{summary}"
    );
    let reason = faults[0]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("its first record is longer than 256 KiB")
            && reason.contains("its format cannot be told"),
        "{reason}"
    );
}
