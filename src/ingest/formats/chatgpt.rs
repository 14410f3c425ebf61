//! ChatGPT data export: `conversations.json`, a JSON array of conversations (a single
//! conversation object is accepted too). Each conversation holds a `mapping` of node id
//! to `{id, message, parent, children}`, a tree in which edits and regenerations are
//! sibling branches.
//!
//! Which branch: the one the person saw last. The walk starts at `current_node` and
//! follows `parent` links up to the root, then is reversed. Without a `current_node`
//! the walk starts at the newest leaf: among nodes that are no node's `parent`, the one
//! whose `message.create_time` is greatest (a leaf without a time counts as oldest),
//! ties broken by the greatest node id. A `current_node` missing from `mapping` is a
//! [`Fault`](crate::ingest::Fault) and the newest leaf is used instead; a `parent` missing from `mapping` (or
//! a cycle) is a [`Fault`](crate::ingest::Fault) and the conversation starts below it.
//!
//! Mapping to [`Message`]:
//! - only `user` and `assistant` authors with non-empty text are messages; `system`
//!   and `tool` nodes, hidden nodes (`metadata.is_visually_hidden_from_conversation`),
//!   assistant calls to tools (`recipient` other than `all`) and non-text content
//!   (`code`, `execution_output`, `user_editable_context`…) are skipped and counted.
//!   Nodes with `message: null` (roots) are not records and are not counted;
//! - text is `content.parts` joined by a newline: string parts, and object parts with a
//!   `text` (`content_type` `text`, `audio_transcription`); an `image_asset_pointer`
//!   part (or `metadata.attachments`) sets `has_attachment`; `metadata.citations` or
//!   `metadata.content_references` set `has_citation`;
//! - `conversation_id` is `conversation_id`, else `id`, else `<file stem>#<index>`;
//!   `conversation_title` is `title`; `message_id` is the node id; `parent_id` the
//!   node's `parent`; `model` is `metadata.model_slug` (for assistant messages without
//!   one, the conversation's `default_model_slug`);
//! - `message.create_time` (epoch seconds, fractional) is the time in UTC. Without it
//!   the conversation's `create_time` is used (else its earliest message time, else
//!   `update_time`, else the file's modification time), with `timestamp_is_fallback`.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::ingest::pending::{each_conversation, file_stem};
use crate::ingest::{join_texts, kind_of, parse_time, part_texts, Fault, FileImport, IngestError, Message};

const SOURCE: &str = "chatgpt";

/// The ChatGPT export importer (registered in [`super::IMPORTERS`]).
pub(super) struct ChatGpt;

/// The registry's instance.
pub(super) static IMPORTER: ChatGpt = ChatGpt;

static ABOUT: super::About = super::About {
    source: SOURCE,
    tool: "ChatGPT export",
    unit: "export file",
    locations: &[crate::ingest::locations::Location::all(crate::places::Root::Var(crate::settings::CHATGPT_EXPORT.name), &["", "**/conversations.json"])],
    note: None,
    append_only: false,
    import: |path, fallback, _| import(path, fallback),
    looks_like: None,
};

impl super::Importer for ChatGpt {
    fn about(&self) -> &super::About {
        &ABOUT
    }

    fn recognise_document(&self, doc: &super::Document<'_>) -> bool {
        doc.contains(b"\"mapping\"")
    }
}

/// Imports one export file. `fallback` is the last-resort time (see module docs).
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] when it is
/// not JSON, [`IngestError::Shape`] when it is neither an array nor an object.
pub(super) fn import(path: &Path, fallback: DateTime<Utc>) -> Result<FileImport, IngestError> {
    let stem = file_stem(path);
    each_conversation(path, |index, conv, out| {
        import_conversation(path, &stem, index, conv, fallback, out);
    })
}

fn import_conversation(
    path: &Path,
    stem: &str,
    index: usize,
    conv: &Map<String, Value>,
    fallback: DateTime<Utc>,
    out: &mut FileImport,
) {
    let str_field = |key: &str| {
        conv.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let conversation_id = str_field("conversation_id")
        .or_else(|| str_field("id"))
        .map_or_else(|| format!("{stem}#{index}"), str::to_owned);
    let label = format!("conversation `{conversation_id}` (#{index})");
    let fault = |reason: String| Fault::new(path, None, format!("{label}: {reason}"));

    let Some(mapping) = conv.get("mapping").and_then(Value::as_object) else {
        let found = conv.get("mapping").map_or("nothing", kind_of);
        out.faults.push(fault(format!(
            "no `mapping` object (found {found}); conversation skipped"
        )));
        return;
    };

    let current = match conv.get("current_node").and_then(Value::as_str) {
        Some(id) if mapping.contains_key(id) => Some(id.to_owned()),
        Some(id) => {
            out.faults.push(fault(format!(
                "`current_node` `{id}` is not in `mapping`; following the newest leaf instead"
            )));
            None
        }
        None => None,
    };
    let Some(start) = current.or_else(|| newest_leaf(mapping)) else {
        return; // empty mapping: nothing to import
    };

    // Walk up from the start node, stopping at the root, a dangling parent or a cycle.
    let mut path_ids: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut cursor: Option<&str> = mapping
        .get_key_value(start.as_str())
        .map(|(k, _)| k.as_str());
    while let Some(id) = cursor {
        if !seen.insert(id) {
            out.faults.push(fault(format!(
                "`parent` links form a cycle at node `{id}`; the conversation starts below it"
            )));
            break;
        }
        path_ids.push(id);
        let parent = mapping
            .get(id)
            .and_then(|n| n.get("parent"))
            .and_then(Value::as_str);
        cursor = parent.and_then(|p| {
            let found = mapping.get_key_value(p).map(|(k, _)| k.as_str());
            if found.is_none() {
                out.faults.push(fault(format!(
                    "node `{id}` has `parent` `{p}`, which is not in `mapping`; the conversation starts at `{id}`"
                )));
            }
            found
        });
    }
    path_ids.reverse();

    let title = str_field("title").map(str::to_owned);
    let default_model = str_field("default_model_slug").map(str::to_owned);
    let conversation_time = conv
        .get("create_time")
        .and_then(parse_time)
        .or_else(|| {
            path_ids
                .iter()
                .filter_map(|id| message_of(mapping, id))
                .filter_map(|m| m.get("create_time").and_then(parse_time))
                .min()
        })
        .or_else(|| conv.get("update_time").and_then(parse_time))
        .unwrap_or(fallback);

    let mut msg_index = 0i64;
    for id in path_ids {
        let Some(message) = message_of(mapping, id) else {
            continue;
        };
        let Some(role) = role_if_message(message) else {
            out.skipped += 1;
            continue;
        };
        let (text, parts_attachment) = text_of(message);
        if text.trim().is_empty() {
            out.skipped += 1;
            continue;
        }
        let metadata = message.get("metadata").and_then(Value::as_object);
        let non_empty = |key: &str| {
            metadata
                .and_then(|m| m.get(key))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        };
        let model = metadata
            .and_then(|m| m.get("model_slug"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .or_else(|| {
                if role == "assistant" {
                    default_model.clone()
                } else {
                    None
                }
            });
        let (timestamp, timestamp_is_fallback) =
            match message.get("create_time").and_then(parse_time) {
                Some(t) => (t, false),
                None => (conversation_time, true),
            };
        out.messages.push(Message {
            source: SOURCE.to_owned(),
            model,
            project: None,
            conversation_id: conversation_id.clone(),
            conversation_title: title.clone(),
            message_id: id.to_owned(),
            parent_id: mapping
                .get(id)
                .and_then(|n| n.get("parent"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            msg_index,
            timestamp,
            timestamp_is_fallback,
            role: role.to_owned(),
            content_type: "text".to_owned(),
            content: text,
            chars_cut: 0,
            has_attachment: parts_attachment || non_empty("attachments"),
            has_citation: non_empty("citations") || non_empty("content_references"),
            is_injected: false,
        });
        msg_index += 1;
    }
}

/// The node's `message` object, when it has one.
fn message_of<'a>(mapping: &'a Map<String, Value>, id: &str) -> Option<&'a Map<String, Value>> {
    mapping.get(id)?.get("message")?.as_object()
}

/// `Some("user" | "assistant")` when the message is one the person saw as such.
fn role_if_message(message: &Map<String, Value>) -> Option<&str> {
    let role = message.get("author")?.get("role")?.as_str()?;
    if !matches!(role, "user" | "assistant") {
        return None;
    }
    let metadata = message.get("metadata");
    let hidden = metadata
        .and_then(|m| m.get("is_visually_hidden_from_conversation"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let recipient = message
        .get("recipient")
        .and_then(Value::as_str)
        .unwrap_or("all");
    let content_type = message
        .get("content")
        .and_then(|c| c.get("content_type"))
        .and_then(Value::as_str);
    let texty = matches!(content_type, None | Some("text" | "multimodal_text"));
    (!hidden && recipient == "all" && texty).then_some(role)
}

/// The message text (parts joined by a newline) and whether a part is an attachment.
fn text_of(message: &Map<String, Value>) -> (String, bool) {
    let Some(content) = message.get("content") else {
        return (String::new(), false);
    };
    let (texts, attachment) = match content.get("parts").and_then(Value::as_array) {
        Some(parts) => part_texts(parts, |p| {
            p.contains_key("asset_pointer")
                || p.get("content_type")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.ends_with("asset_pointer"))
        }),
        None => (content.get("text").and_then(Value::as_str).into_iter().collect(), false),
    };
    (join_texts(texts), attachment)
}

/// The newest leaf (see module docs), or `None` for an empty mapping.
fn newest_leaf(mapping: &Map<String, Value>) -> Option<String> {
    let parents: HashSet<&str> = mapping
        .values()
        .filter_map(|n| n.get("parent").and_then(Value::as_str))
        .collect();
    let time = |id: &str| {
        message_of(mapping, id)
            .and_then(|m| m.get("create_time"))
            .and_then(parse_time)
    };
    mapping
        .keys()
        .map(String::as_str)
        .filter(|id| !parents.contains(id))
        .max_by_key(|id| (time(id), *id)) // `None` (no time) sorts first
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(doc: &Value) -> FileImport {
        let bytes = serde_json::to_vec(doc).expect("json");
        super::super::import_fixture(&IMPORTER, "conversations.json", &bytes)
    }

    fn node(id: &str, parent: Option<&str>, role: &str, text: &str, time: Option<f64>) -> Value {
        json!({"id": id, "parent": parent, "children": [], "message": {
            "id": id, "author": {"role": role}, "create_time": time,
            "content": {"content_type": "text", "parts": [text]}, "recipient": "all",
            "metadata": {}}})
    }

    fn tree(current: Option<&str>) -> Value {
        let mut conv = json!({
            "id": "c1", "title": "Regenerated", "create_time": 1_700_000_000.5,
            "mapping": {
                "root": {"id": "root", "parent": null, "children": ["sys"], "message": null},
                "sys": node("sys", Some("root"), "system", "", None),
                "u1": node("u1", Some("sys"), "user", "Question?", Some(1_700_000_001.0)),
                "a-old": node("a-old", Some("u1"), "assistant", "first answer", Some(1_700_000_002.0)),
                "a-new": node("a-new", Some("u1"), "assistant", "second answer", Some(1_700_000_003.0)),
            }
        });
        if let Some(c) = current {
            conv["current_node"] = json!(c);
        }
        conv
    }

    #[test]
    fn follows_current_node_branch() {
        let out = run(&json!([tree(Some("a-old"))]));
        let texts: Vec<_> = out.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["Question?", "first answer"]);
        assert_eq!(out.skipped, 1); // the system node on the path
        assert!(out.faults.is_empty());
        assert_eq!(out.messages[1].parent_id.as_deref(), Some("u1"));
        assert_eq!(out.messages[1].msg_index, 1);
    }

    #[test]
    fn without_current_node_takes_newest_leaf() {
        let out = run(&tree(None));
        let texts: Vec<_> = out.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["Question?", "second answer"]);
        assert_eq!(out.messages[0].timestamp.timestamp(), 1_700_000_001);
        assert_eq!(
            out.messages[0].conversation_title.as_deref(),
            Some("Regenerated")
        );
    }

    #[test]
    fn dangling_references_are_faults() {
        let mut conv = tree(Some("gone"));
        conv["mapping"]["u1"]["parent"] = json!("missing");
        let out = run(&conv);
        assert_eq!(out.faults.len(), 2, "{:?}", out.faults);
        assert!(out.faults[0]
            .reason
            .contains("`current_node` `gone` is not in `mapping`"));
        assert!(out.faults[1].reason.contains("`parent` `missing`"));
        // Newest leaf `a-new`, cut at `u1`.
        assert_eq!(out.messages.len(), 2);
        assert_eq!(out.messages[1].content, "second answer");
    }

    #[test]
    fn cycle_is_a_fault_not_a_hang() {
        let mut conv = tree(Some("a-new"));
        conv["mapping"]["sys"]["parent"] = json!("a-new");
        let out = run(&conv);
        assert_eq!(out.faults.len(), 1);
        assert!(out.faults[0].reason.contains("cycle"));
    }

    #[test]
    fn structured_parts_and_fallback_time() {
        let conv = json!({"conversation_id": "c2", "create_time": 1_600_000_000, "mapping": {
            "n": {"id": "n", "parent": null, "message": {"author": {"role": "user"},
              "content": {"content_type": "multimodal_text", "parts": [
                 {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                 {"content_type": "text", "text": "naïve 🙂"}, "plain"]}}}}});
        let out = run(&conv);
        let m = &out.messages[0];
        assert_eq!(m.content, "naïve 🙂\nplain");
        assert!(m.has_attachment);
        assert!(m.timestamp_is_fallback);
        assert_eq!(m.timestamp.timestamp(), 1_600_000_000);
        assert_eq!(m.conversation_id, "c2");
    }

    #[test]
    fn tool_and_hidden_nodes_are_skipped() {
        let mut conv = tree(Some("a-new"));
        conv["mapping"]["u1"]["message"]["metadata"]["is_visually_hidden_from_conversation"] =
            json!(true);
        conv["mapping"]["a-new"]["message"]["recipient"] = json!("browser");
        let out = run(&conv);
        assert!(out.messages.is_empty());
        assert_eq!(out.skipped, 3);
    }

    #[test]
    fn broken_shapes_do_not_panic() {
        let out = run(&json!([1, {"id": "x"}, {"id": "y", "mapping": {}}]));
        assert!(out.messages.is_empty());
        assert_eq!(out.faults.len(), 2);
        assert!(out.faults[0]
            .reason
            .contains("expected an object, found a number"));
        assert!(out.faults[1].reason.contains("no `mapping`"));
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("conversations.json");
        fs_err::write(&path, "42").expect("write");
        assert!(matches!(
            import(&path, DateTime::UNIX_EPOCH),
            Err(IngestError::Shape { .. })
        ));
        fs_err::write(&path, "[{").expect("write");
        assert!(matches!(
            import(&path, DateTime::UNIX_EPOCH),
            Err(IngestError::Json { .. })
        ));
    }
}
