//! Claude Code session transcripts: `~/.claude/projects/<dir>/<session>.jsonl`, one
//! JSON object per line, and subagent transcripts (`<session>/subagents/agent-*.jsonl`
//! or older `agent-*.jsonl` next to the session).
//!
//! Mapping to [`Message`](crate::ingest::Message):
//! - only lines with `type` `user` or `assistant` and a `message.content` become
//!   messages; `content` is a string or an array of blocks, and only `text` blocks are
//!   message text (joined by a newline). `tool_use`, `tool_result`, `thinking` and
//!   `image` blocks are not text; an `image` (or `document`) block sets
//!   `has_attachment`. A line whose text is empty or whitespace is skipped (counted);
//! - every other line (`summary`, `file-history-snapshot`, `progress`, `system`,
//!   `queue-operation`, `ai-title`…) is skipped and counted;
//! - a line that is not valid JSON, or not an object, is a [`Fault`](crate::ingest::Fault) with its 1-based
//!   line number; the other lines still import. Lines have no length limit;
//! - `conversation_id` is the file's first `sessionId`, else the file stem. A subagent
//!   file (stem `agent-*`, a line with `isSidechain: true` or an `agentId`) gets
//!   `<sessionId>/agent-<agentId>` so it does not merge into the parent session; its
//!   `source` stays `claude-code`;
//! - `message_id` is the line's `uuid`, else [`stable_id`](crate::ingest::stable_id) of (`claude-code`,
//!   conversation id, line number, text); `parent_id` is `parentUuid`; `model` is
//!   `message.model`; `project` is `cwd`; the title is the last `custom-title` /
//!   `ai-title` line, else the first `summary` line;
//! - the time is the line's `timestamp` in UTC. A message line without one gets the
//!   time of the nearest earlier line that had one, else the file's first time, else
//!   the file's modification time, with `timestamp_is_fallback` set;
//! - a user line with `isMeta: true` (skill bodies, caveats) or `isCompactSummary: true`
//!   (continuation summary), or whose text is injected by the harness
//!   ([`crate::ingest::injected`]), is a message with `is_injected` set.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::injected::is_injected_text;
use crate::ingest::pending::{file_stem, Named, Pending, Records};
use crate::ingest::{
    content_texts, join_texts, parse_time, str_field, Cursor, FileImport, IngestError,
};

const SOURCE: &str = "claude-code";

/// The Claude Code importer (registered in [`super::IMPORTERS`]).
pub(super) struct ClaudeCode;

/// The registry's instance.
pub(super) static IMPORTER: ClaudeCode = ClaudeCode;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "Claude Code",
    unit: "session file",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::VarOrHome { var: "CLAUDE_CONFIG_DIR", home: ".claude" }, &["projects/**/*.jsonl"])],
    note: Some("subagent transcripts included"),
    append_only: true,
    import,
    looks_like: Some(looks_like),
};

impl super::Importer for ClaudeCode {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_jsonl_head(&self, head: &[u8]) -> bool {
        // A first line longer than the peek window: fall back on markers.
        crate::ingest::detect::contains(head, b"\"parentUuid\"")
            || crate::ingest::detect::contains(head, b"\"sessionId\"")
    }
}

/// Line types that are Claude Code records but never messages.
const NON_MESSAGE_TYPES: &[&str] = &[
    "summary",
    "file-history-snapshot",
    "progress",
    "system",
    "queue-operation",
    "ai-title",
    "custom-title",
    "last-prompt",
];

/// True when one parsed line looks like a Claude Code record ([`super::About::looks_like`]).
fn looks_like(obj: &Map<String, Value>) -> bool {
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    let message_line = matches!(kind, "user" | "assistant")
        && obj
            .get("message")
            .is_some_and(|m| m.get("role").is_some() || m.get("content").is_some());
    message_line
        || obj.contains_key("parentUuid")
        || (NON_MESSAGE_TYPES.contains(&kind)
            && (obj.contains_key("sessionId")
                || obj.contains_key("leafUuid")
                || obj.contains_key("snapshot")))
}

/// Imports one session file. `fallback` is the time used when no line has one.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened or read.
pub(super) fn import(
    path: &Path,
    fallback: DateTime<Utc>,
    start: Option<&Cursor>,
) -> Result<FileImport, IngestError> {
    let mut records = Records::new(path, start);
    let mut session_id: Option<String> = records.saved("session_id");
    let mut agent_id: Option<String> = records.saved("agent_id");
    let mut sidechain = records.saved("sidechain").is_some();
    // Titles seen before the resumption point still name the lines after it.
    let mut custom_title: Option<String> = records.saved("custom_title");
    let mut ai_title: Option<String> = records.saved("ai_title");
    let mut summary_title: Option<String> = records.saved("summary_title");

    let end = records.jsonl(|records, line_no, obj| {
        let field = |key: &str| str_field(&obj, key);
        let flag = |key: &str| obj.get(key).and_then(Value::as_bool).unwrap_or(false);
        if session_id.is_none() {
            session_id = field("sessionId").map(str::to_owned);
        }
        if agent_id.is_none() {
            agent_id = field("agentId").map(str::to_owned);
        }
        sidechain |= obj
            .get("isSidechain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let at = records.record(line_no, obj.get("timestamp").and_then(parse_time));

        let kind = field("type").unwrap_or("");
        match kind {
            "custom-title" => {
                custom_title = field("customTitle")
                    .map(str::to_owned)
                    .or(custom_title.take());
            }
            "ai-title" => ai_title = field("aiTitle").map(str::to_owned).or(ai_title.take()),
            "summary" if summary_title.is_none() => {
                summary_title = field("summary").map(str::to_owned);
            }
            _ => {}
        }
        if !matches!(kind, "user" | "assistant") {
            records.skip();
            return;
        }
        let message = obj.get("message");
        let Some((text, has_attachment)) = message.and_then(|m| m.get("content")).map(extract)
        else {
            records.skip();
            return;
        };
        if text.trim().is_empty() {
            records.skip();
            return;
        }
        let role = match message.and_then(|m| m.get("role")).and_then(Value::as_str) {
            Some("user") => "user",
            Some("assistant") => "assistant",
            _ if kind == "user" => "user",
            _ => "assistant",
        };
        let injected = role == "user"
            && (flag("isMeta") || flag("isCompactSummary") || is_injected_text(&text));
        records.push(Pending {
            id: field("uuid").map(str::to_owned),
            parent: field("parentUuid").map(str::to_owned),
            model: message
                .and_then(|m| m.get("model"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            project: field("cwd").map(str::to_owned),
            has_attachment,
            injected,
            ..at.message(role, text)
        });
    })?;

    let stem = file_stem(path);
    let is_agent_file = stem.starts_with("agent-") || sidechain || agent_id.is_some();
    let conversation_id = match (session_id.clone(), is_agent_file) {
        (Some(session), true) => {
            let agent = agent_id
                .clone()
                .map_or_else(|| stem.clone(), |a| format!("agent-{a}"));
            format!("{session}/{agent}")
        }
        (Some(session), false) => session,
        (None, _) => stem,
    };
    let saved = [
        ("custom_title", custom_title.as_deref()),
        ("ai_title", ai_title.as_deref()),
        ("summary_title", summary_title.as_deref()),
        ("session_id", session_id.as_deref()),
        ("agent_id", agent_id.as_deref()),
        ("sidechain", sidechain.then_some("true")),
    ];
    // A title the person set wins over a generated one, which wins over a summary.
    let title = custom_title.as_deref().or(ai_title.as_deref()).or(summary_title.as_deref());
    let time = records.first_time_or(fallback);
    // Each message keeps its own line's `cwd` as project.
    Ok(records.finish(
        &Named {
            title,
            ..Named::new(SOURCE, &conversation_id)
        },
        time,
        Some((end, &saved)),
    ))
}

/// Text and attachment flag of a `message.content` value (string or block array).
fn extract(content: &Value) -> (String, bool) {
    match content {
        Value::String(s) => (s.clone(), false),
        Value::Array(_) => {
            let (texts, attachment) = content_texts(Some(content), &["text"], &["image", "document"]);
            (join_texts(texts), attachment)
        }
        _ => (String::new(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &str) -> FileImport {
        super::super::import_fixture(&IMPORTER, "s.jsonl", lines.as_bytes())
    }

    #[test]
    fn string_and_block_content() {
        let out = run(concat!(
            r#"{"type":"summary","summary":"Fixing rpath","leafUuid":"x"}"#,
            "\n",
            r#"{"type":"user","uuid":"u1","sessionId":"s1","cwd":"/p","timestamp":"2025-01-02T03:04:05+02:00","message":{"role":"user","content":"Why café?"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","timestamp":"2025-01-02T01:04:06Z","message":{"role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Because."},{"type":"tool_use","id":"t","name":"Read","input":{}}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"u2","sessionId":"s1","timestamp":"2025-01-02T01:05:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"file"}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"u3","sessionId":"s1","timestamp":"2025-01-02T01:06:00Z","message":{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"see this"}]}}"#,
            "\n",
        ));
        assert!(out.faults.is_empty(), "{:?}", out.faults);
        assert_eq!(out.skipped, 2);
        let m = &out.messages;
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].content, "Why café?");
        assert_eq!(m[0].timestamp.to_rfc3339(), "2025-01-02T01:04:05+00:00");
        assert_eq!(m[0].project.as_deref(), Some("/p"));
        assert_eq!(m[0].conversation_title.as_deref(), Some("Fixing rpath"));
        assert_eq!(m[1].content, "Because.");
        assert_eq!(m[1].model.as_deref(), Some("claude-x"));
        assert_eq!(m[1].parent_id.as_deref(), Some("u1"));
        assert_eq!(m[1].msg_index, 1);
        assert!(m[2].has_attachment);
        assert_eq!(m[2].conversation_id, "s1");
    }

    #[test]
    fn malformed_line_is_a_fault_and_rest_imports() {
        let out = run(concat!(
            r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"one"}}"#,
            "\n",
            "{not json\n",
            "\n",
            "[1,2]\n",
            r#"{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}"#,
        ));
        assert_eq!(out.messages.len(), 2);
        assert_eq!(out.faults.len(), 2);
        assert_eq!(out.faults[0].line, Some(2));
        assert!(
            out.faults[0].reason.starts_with("invalid JSON"),
            "{}",
            out.faults[0].reason
        );
        assert_eq!(out.faults[1].line, Some(4));
        assert_eq!(
            out.faults[1].reason,
            "expected a JSON object, found an array"
        );
    }

    #[test]
    fn missing_time_falls_back_without_wall_clock() {
        let out = run(concat!(
            r#"{"type":"user","message":{"role":"user","content":"first, no time"}}"#,
            "\n",
            r#"{"type":"assistant","timestamp":"2024-05-01T10:00:00Z","message":{"role":"assistant","content":"timed"}}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":"later, no time"}}"#,
            "\n",
        ));
        let m = &out.messages;
        assert!(m[0].timestamp_is_fallback && m[2].timestamp_is_fallback);
        assert!(!m[1].timestamp_is_fallback);
        assert_eq!(m[0].timestamp, m[1].timestamp);
        assert_eq!(m[2].timestamp, m[1].timestamp);
        // No uuid: ids are stable hashes, equal on a second import.
        let again = run(concat!(
            r#"{"type":"user","message":{"role":"user","content":"first, no time"}}"#,
            "\n",
        ));
        assert_eq!(again.messages[0].message_id, m[0].message_id);
        assert_eq!(m[0].message_id.len(), 64);
        assert_eq!(m[0].conversation_id, "s");
    }

    #[test]
    fn no_time_anywhere_uses_file_fallback() {
        let out = run(r#"{"type":"user","message":{"role":"user","content":"x"}}"#);
        assert_eq!(out.messages[0].timestamp, DateTime::UNIX_EPOCH);
        assert!(out.messages[0].timestamp_is_fallback);
    }

    #[test]
    fn whitespace_only_text_is_skipped() {
        let out = run(concat!(
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"  \n"}]}}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":"   "}}"#,
            "\n",
            r#"{"type":"user"}"#,
            "\n",
        ));
        assert!(out.messages.is_empty());
        assert_eq!(out.skipped, 3);
    }

    #[test]
    fn subagent_gets_own_conversation() {
        let out = run(concat!(
            r#"{"type":"user","isSidechain":true,"agentId":"a77","sessionId":"parent","uuid":"x","message":{"role":"user","content":"Warmup"}}"#,
            "\n",
        ));
        assert_eq!(out.messages[0].conversation_id, "parent/agent-a77");
        assert_eq!(out.messages[0].source, "claude-code");
    }

    #[test]
    fn custom_title_beats_ai_title() {
        let out = run(concat!(
            r#"{"type":"custom-title","customTitle":"Mine","sessionId":"s"}"#,
            "\n",
            r#"{"type":"ai-title","aiTitle":"Generated","sessionId":"s"}"#,
            "\n",
            r#"{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}"#,
            "\n",
        ));
        assert_eq!(out.messages[0].conversation_title.as_deref(), Some("Mine"));
        assert_eq!(out.skipped, 2);
    }

    #[test]
    fn looks_like_recognises_lines() {
        let yes = serde_json::json!({"type":"user","message":{"role":"user","content":"x"}});
        let snapshot =
            serde_json::json!({"type":"file-history-snapshot","messageId":"m","snapshot":{}});
        let no = serde_json::json!({"type":"session_meta","payload":{}});
        assert!(super::super::claims(&IMPORTER, &yes) && super::super::claims(&IMPORTER, &snapshot));
        assert!(!super::super::claims(&IMPORTER, &no));
    }
}
