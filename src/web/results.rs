//! A call's structured output as a result table, and the links its rows cite.
//!
//! The table is generated from the data, whatever the skill: the first top-level array
//! of objects (`rows`, `hits`, `items`…) gives one row per object and one column per
//! key (in first-seen order). Each row links to what it cites ([`row_links`]): a
//! conversation page at the cited message, or a memory page. The same links go to the
//! [`Linker`] so citations in the rendered template become links too.

use serde::Serialize;
use serde_json::Value;

use super::html::Linker;
use super::paths;

/// Columns shown at most; further keys stay in the JSON twin.
const MAX_COLUMNS: usize = 12;

/// Characters of a cell shown; the JSON twin has the rest.
const MAX_CELL_CHARS: usize = 400;

/// One link of a row.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RowLink {
    /// `conversation` or `memory`.
    pub kind: &'static str,
    /// Where it goes (a path on this server).
    pub href: String,
}

/// The result table.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Table {
    /// The data key the rows came from (`rows`, `hits`…).
    pub key: String,
    /// Column names.
    pub columns: Vec<String>,
    /// One entry per row: its cells (text) and its links.
    pub rows: Vec<Row>,
}

/// One table row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Cell texts, one per column.
    pub cells: Vec<String>,
    /// What the row cites.
    pub links: Vec<RowLink>,
}

/// What a row cites. `reads_memories`: the skill reads the memories store, so an
/// object with an `id` and no message is a memory.
///
/// - a `citation` `[memory <id> · …]` → that memory;
/// - a `conversation_id` → that conversation at `message_id` (source from `source`
///   when it is a plain name, else any source);
/// - an `id` `<conversation>/<message>` whose citation starts with `[<conversation>` →
///   that message;
/// - an `id` in a skill reading memories, without `message_id` or `/` → that memory.
pub fn row_links(row: &Value, reads_memories: bool) -> Vec<RowLink> {
    let text = |key: &str| {
        row.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let mut links = Vec::new();
    let citation = text("citation").unwrap_or("");
    let mut memory = citation
        .strip_prefix("[memory ")
        .and_then(|rest| rest.split([' ', ']']).next())
        .map(str::to_owned);
    if let Some(conversation) = text("conversation_id") {
        let source = text("source").filter(|s| is_plain_name(s));
        links.push(RowLink {
            kind: "conversation",
            href: paths::conversation(source, conversation, text("message_id")),
        });
    } else if let Some((conversation, message)) = text("id").and_then(|id| id.split_once('/')) {
        if citation.starts_with(&format!("[{conversation} ")) {
            links.push(RowLink {
                kind: "conversation",
                href: paths::conversation(None, conversation, Some(message)),
            });
        }
    }
    if memory.is_none() && reads_memories && text("message_id").is_none() {
        memory = text("id").filter(|id| !id.contains('/')).map(str::to_owned);
    }
    if let Some(id) = memory {
        links.insert(
            0,
            RowLink {
                kind: "memory",
                href: paths::memory(&id),
            },
        );
    }
    links
}

/// A source name as ingest writes them (`claude-code`, `chatgpt`): not a label such
/// as `transcript (keyword)`.
fn is_plain_name(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// The result table of `data` and, into `linker`, the links of its rows.
pub fn table(data: &Value, reads_memories: bool, linker: &mut Linker) -> Option<Table> {
    let (key, items) = data.as_object()?.iter().find_map(|(key, value)| {
        let items = value.as_array()?;
        items
            .first()
            .is_some_and(Value::is_object)
            .then_some((key, items))
    })?;
    let mut columns: Vec<String> = Vec::new();
    for item in items {
        if let Some(object) = item.as_object() {
            for name in object.keys() {
                if columns.len() < MAX_COLUMNS && !columns.contains(name) {
                    columns.push(name.clone());
                }
            }
        }
    }
    let rows = items
        .iter()
        .map(|item| {
            let links = row_links(item, reads_memories);
            note_links(item, &links, linker);
            Row {
                cells: columns
                    .iter()
                    .map(|c| cell(item.get(c).unwrap_or(&Value::Null)))
                    .collect(),
                links,
            }
        })
        .collect();
    Some(Table {
        key: key.clone(),
        columns,
        rows,
    })
}

/// Tells `linker` how the rendered template may show what `item` cites: its
/// citation, its conversation id (a table cell), its memory id.
fn note_links(item: &Value, links: &[RowLink], linker: &mut Linker) {
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    for link in links {
        if let Some(citation) = item.get("citation").and_then(Value::as_str) {
            linker.within(citation, link.href.clone());
        }
        match link.kind {
            "conversation" => linker.whole(text("conversation_id"), link.href.clone()),
            _ => linker.whole(text("id"), link.href.clone()),
        }
    }
}

/// A value as table text: strings as they are, arrays of scalars joined, anything
/// else as JSON; cut to [`MAX_CELL_CHARS`].
fn cell(value: &Value) -> String {
    let text = match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    if text.chars().count() > MAX_CELL_CHARS {
        let cut: String = text.chars().take(MAX_CELL_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_link_to_what_they_cite() {
        let row = json!({"source": "claude-code", "conversation_id": "c/1", "message_id": "m 1"});
        assert_eq!(
            row_links(&row, false),
            [RowLink {
                kind: "conversation",
                href: "/conversations/claude-code/c%2F1?at=m%201#m-m%201".into()
            }]
        );
        let recall = json!({"source": "transcript (keyword)", "id": "c1/m1", "citation": "[c1 · 2026-01-01]"});
        assert_eq!(
            row_links(&recall, true)[0].href,
            "/conversations/_/c1?at=m1#m-m1"
        );
        let memory = json!({"id": "m-1", "citation": "[memory m-1 · 2026-01-01]"});
        assert_eq!(row_links(&memory, true)[0].href, "/memories/m-1");
        let hit = json!({"id": "m-2", "body": "x", "conversation_id": "c9"});
        let links = row_links(&hit, true);
        assert_eq!(links[0].href, "/memories/m-2");
        assert_eq!(links[1].href, "/conversations/_/c9");
        assert!(row_links(&json!({"id": "x"}), false).is_empty());
    }

    #[test]
    fn the_first_array_of_objects_is_the_table() {
        let data =
            json!({"count": 2, "rows": [{"a": 1, "b": ["x", "y"]}, {"a": 2, "c": {"k": 1}}]});
        let table = table(&data, false, &mut Linker::default()).unwrap();
        assert_eq!(table.key, "rows");
        assert_eq!(table.columns, ["a", "b", "c"]);
        assert_eq!(table.rows[0].cells, ["1", "x, y", ""]);
        assert_eq!(table.rows[1].cells, ["2", "", "{\"k\":1}"]);
        assert!(super::table(&json!({"rows": []}), false, &mut Linker::default()).is_none());
    }
}
