//! A call's structured output as a result table, and the links its rows cite.
//!
//! The table is generated from the data, whatever the skill: the first top-level array
//! of objects (`rows`, `hits`, `items`…) gives one row per object and one column per
//! key (in first-seen order). Each row links to what its `cites` field names
//! ([`row_links`]; an object, or a list of them, as the skill's output schema says): a
//! conversation page at the cited message, or a memory page. Nothing is read from a
//! row's text. The same links go to the [`Linker`] so the row's citation text in the
//! rendered template becomes a link too.

use serde::Serialize;
use serde_json::Value;

use super::html::Linker;
use super::{paths, view};

/// Columns shown at most; further keys stay in the JSON twin.
const MAX_COLUMNS: usize = 12;

/// Characters of a cell shown; the JSON twin has the rest.
const MAX_CELL_CHARS: usize = 400;

/// The field of a row that says what it cites (not shown as a column).
pub const CITES: &str = "cites";

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
    /// One entry per row: its cells and its links.
    pub rows: Vec<Row>,
}

/// One table row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Cells, one per column.
    pub cells: Vec<Cell>,
    /// What the row cites.
    pub links: Vec<RowLink>,
}

/// One cell: text (line breaks kept), or a long id shortened, or a time.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Cell {
    /// The text shown (cut to [`MAX_CELL_CHARS`]).
    pub text: String,
    /// Set when the value is a long id: shown shortened, whole in a tooltip.
    pub id: Option<view::Id>,
    /// Set when the value is a UTC time: shown relative, exact on hover.
    pub time: Option<view::Time>,
}

/// What a row cites, from its `cites` field: `{kind: conversation, source?,
/// conversation_id, message_id?, machine_id?}` → that conversation (at that message;
/// that machine's copy on the team archive), `{kind: memory, id}` → that memory; a
/// list of such objects gives one link each.
pub fn row_links(row: &Value) -> Vec<RowLink> {
    let cites = match row.get(CITES) {
        Some(Value::Array(items)) => items.iter().collect::<Vec<_>>(),
        Some(one @ Value::Object(_)) => vec![one],
        _ => return Vec::new(),
    };
    let text = |object: &Value, key: &str| -> Option<String> {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    cites
        .into_iter()
        .filter_map(|cite| match cite.get("kind").and_then(Value::as_str)? {
            "conversation" => {
                let conversation = text(cite, "conversation_id")?;
                let source = text(cite, "source").filter(|s| is_plain_name(s));
                Some(RowLink {
                    kind: "conversation",
                    href: paths::on_machine(
                        &paths::conversation(
                            source.as_deref(),
                            &conversation,
                            text(cite, "message_id").as_deref(),
                        ),
                        super::conversations::cited_machine(cite),
                    ),
                })
            }
            "memory" => Some(RowLink {
                kind: "memory",
                href: paths::on_machine(
                    &paths::memory(&text(cite, "id")?),
                    super::conversations::cited_machine(cite),
                ),
            }),
            _ => None,
        })
        .collect()
}

/// A source name as ingest writes them (`claude-code`, `chatgpt`): not a label such
/// as `transcript (keyword)`.
fn is_plain_name(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// The result table of `data` and, into `linker`, the links of its rows.
pub fn table(
    data: &Value,
    linker: &mut Linker,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Table> {
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
                if columns.len() < MAX_COLUMNS && !columns.contains(name) && name != CITES {
                    columns.push(name.clone());
                }
            }
        }
    }
    let rows = items
        .iter()
        .map(|item| {
            let links = row_links(item);
            note_links(item, &links, linker);
            Row {
                cells: columns
                    .iter()
                    .map(|c| cell(c, item.get(c).unwrap_or(&Value::Null), now))
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
/// `citation` text, and the cited ids (a table cell holding one).
fn note_links(item: &Value, links: &[RowLink], linker: &mut Linker) {
    let cites: Vec<&Value> = match item.get(CITES) {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    for (link, cite) in links.iter().zip(cites) {
        if let Some(citation) = item.get("citation").and_then(Value::as_str) {
            linker.within(citation, link.href.clone());
        }
        let id = match link.kind {
            "conversation" => cite.get("conversation_id"),
            _ => cite.get("id"),
        };
        if let Some(id) = id.and_then(Value::as_str) {
            linker.whole(id, link.href.clone());
        }
    }
}

/// A value as a table cell: strings as they are (line breaks kept), arrays of
/// scalars joined, anything else as JSON; cut to [`MAX_CELL_CHARS`]. A long value of
/// an id column (`id`, `*_id`) is shortened; a UTC time is shown relative to `now`.
fn cell(column: &str, value: &Value, now: chrono::DateTime<chrono::Utc>) -> Cell {
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
    let is_id_column = column == "id" || column.ends_with("_id");
    if let Value::String(s) = value {
        if is_id_column && !s.contains(char::is_whitespace) {
            return Cell {
                text: s.clone(),
                id: Some(view::Id::of(s)),
                time: None,
            };
        }
        if s.len() >= 19 && s.as_bytes().get(4) == Some(&b'-') {
            if let Some(_t) = crate::time::parse_timestamp(s) {
                return Cell {
                    text: s.clone(),
                    id: None,
                    time: Some(view::Time::of(Some(s), now)),
                };
            }
        }
    }
    let text = if text.chars().count() > MAX_CELL_CHARS {
        let cut: String = text.chars().take(MAX_CELL_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    };
    Cell {
        text,
        id: None,
        time: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_link_to_what_their_cites_field_names_and_never_from_text() {
        let row = json!({"cites": {"kind": "conversation", "source": "claude-code", "conversation_id": "c/1", "message_id": "m 1"}});
        assert_eq!(
            row_links(&row),
            [RowLink {
                kind: "conversation",
                href: "/conversations/claude-code/c%2F1?at=m%201#m-m%201".into()
            }]
        );
        let labelled = json!({"cites": {"kind": "conversation", "source": "transcript (keyword)", "conversation_id": "c1", "message_id": "m1"}});
        assert_eq!(
            row_links(&labelled)[0].href,
            "/conversations/_/c1?at=m1#m-m1"
        );
        let memory = json!({"cites": [{"kind": "memory", "id": "m-1"}, {"kind": "conversation", "conversation_id": "c9"}]});
        let links = row_links(&memory);
        assert_eq!(links[0].href, "/memories/m-1");
        assert_eq!(links[1].href, "/conversations/_/c9");
        // A citation in the text, or an id, is not a link: only `cites` is.
        let text_only =
            json!({"id": "m-2", "citation": "[memory m-2 · 2026-01-01]", "conversation_id": "c9"});
        assert!(row_links(&text_only).is_empty());
        assert!(row_links(&json!({"cites": {"kind": "elsewhere", "id": "x"}})).is_empty());
    }

    #[test]
    fn the_first_array_of_objects_is_the_table() {
        let data =
            json!({"count": 2, "rows": [{"a": 1, "b": ["x", "y"]}, {"a": 2, "c": {"k": 1}}]});
        let now = chrono::Utc::now();
        let table = table(&data, &mut Linker::default(), now).unwrap();
        assert_eq!(table.key, "rows");
        assert_eq!(table.columns, ["a", "b", "c"]);
        let texts = |r: &Row| r.cells.iter().map(|c| c.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&table.rows[0]), ["1", "x, y", ""]);
        assert_eq!(texts(&table.rows[1]), ["2", "", "{\"k\":1}"]);
        assert!(super::table(&json!({"rows": []}), &mut Linker::default(), now).is_none());
        let ids = json!({"rows": [{"conversation_id": "5b1c0d2e-7f3a-4c9b-9e1d-0a1b2c3d4e5f", "created": "2026-03-01T09:00:00Z", "cites": {"kind": "memory", "id": "m"}}]});
        let table = super::table(&ids, &mut Linker::default(), now).unwrap();
        assert_eq!(table.columns, ["conversation_id", "created"]);
        assert!(table.rows[0].cells[0].id.as_ref().is_some_and(|i| i.cut));
        assert!(table.rows[0].cells[1].time.is_some());
    }
}
