//! Editing one server entry of a TOML config file without disturbing the rest:
//! `toml_edit` keeps comments, whitespace and key order, and only the entry's keys are
//! touched. A new entry is written as its own table (`[mcp_servers.skills]`) after the
//! other servers; an existing one keeps its form (table, inline table or dotted keys).

use serde_json::{Map, Value};
use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike};

use super::FormatError;

fn parse(text: &str) -> Result<DocumentMut, FormatError> {
    text.parse::<DocumentMut>()
        .map_err(|e| FormatError::Parse(e.to_string().trim_end().replace('\n', " ")))
}

/// What an item is, for messages (`an array`, `a string`).
fn kind(item: &Item) -> &'static str {
    match item.type_name() {
        "table" => "a table",
        "inline table" => "an inline table",
        "array of tables" => "an array of tables",
        "array" => "an array",
        "string" => "a string",
        "integer" => "an integer",
        "float" => "a float",
        "boolean" => "a boolean",
        "datetime" => "a datetime",
        _ => "nothing",
    }
}

fn shape(path: &[&str], item: &Item) -> FormatError {
    FormatError::Shape {
        at: format!("`{}`", path.join(".")),
        expected: "a table",
        found: kind(item),
    }
}

/// The table at `path` below `table`, following existing keys only: `Ok(None)` when a
/// key is missing, an error when one holds something other than a table.
fn walk<'t>(
    mut table: &'t mut dyn TableLike,
    path: &[&str],
) -> Result<Option<&'t mut dyn TableLike>, FormatError> {
    for (depth, k) in path.iter().enumerate() {
        let Some(item) = table.get_mut(k) else {
            return Ok(None);
        };
        if item.as_table_like().is_none() {
            return Err(shape(&path[..=depth], item));
        }
        table = item.as_table_like_mut().expect("checked as a table above");
    }
    Ok(Some(table))
}

/// The entry `name` in the server map at `key`, as JSON; `None` when the file, the map
/// or the entry is absent.
///
/// # Errors
/// [`FormatError::Parse`] when `text` is not TOML; [`FormatError::Shape`] when a key on
/// the way is not a table.
pub(crate) fn entry(text: &str, key: &[&str], name: &str) -> Result<Option<Value>, FormatError> {
    let mut doc = parse(text)?;
    let Some(servers) = walk(doc.as_table_mut(), key)? else {
        return Ok(None);
    };
    Ok(servers.get(name).and_then(to_json))
}

/// `text` with the entry `name` of the server map at `key` holding `fields`: a missing
/// entry is added as its own table (the map as an implicit table when it is missing
/// too); in an existing entry each field that differs is replaced (keeping its
/// comments) and a missing one appended, and other keys are kept. When every field
/// already matches, the text comes back as is.
///
/// # Errors
/// As [`entry`]; also a shape error when the entry exists but is not a table.
pub(crate) fn set(
    text: &str,
    key: &[&str],
    name: &str,
    fields: &Map<String, Value>,
) -> Result<String, FormatError> {
    let mut doc = parse(text)?;
    let mut table: &mut dyn TableLike = doc.as_table_mut();
    for (depth, k) in key.iter().enumerate() {
        if !table.contains_key(k) {
            let mut map = Table::new();
            map.set_implicit(true);
            table.insert(k, Item::Table(map));
        }
        let item = table
            .get_mut(k)
            .expect("present: inserted above when missing");
        if item.as_table_like().is_none() {
            return Err(shape(&key[..=depth], item));
        }
        table = item.as_table_like_mut().expect("checked as a table above");
    }
    match table.get_mut(name) {
        None => {
            let mut entry = Table::new();
            for (field, want) in fields {
                entry.insert(field, Item::Value(to_toml(want)));
            }
            table.insert(name, Item::Table(entry));
        }
        Some(item) => {
            let mut path: Vec<&str> = key.to_vec();
            path.push(name);
            if item.as_table_like().is_none() {
                return Err(shape(&path, item));
            }
            let entry = item.as_table_like_mut().expect("checked as a table above");
            for (field, want) in fields {
                match entry.get_mut(field) {
                    Some(have) if to_json(have).as_ref() == Some(want) => {}
                    Some(Item::Value(have)) => {
                        let decor = have.decor().clone();
                        *have = to_toml(want);
                        *have.decor_mut() = decor;
                    }
                    Some(have) => *have = Item::Value(to_toml(want)),
                    None => {
                        entry.insert(field, Item::Value(to_toml(want)));
                    }
                }
            }
        }
    }
    Ok(doc.to_string())
}

/// `text` without the entry `name` of the server map at `key` (its sub-tables go with
/// it; the map stays); the text as is when there is no such entry.
///
/// # Errors
/// As [`entry`].
pub(crate) fn remove(text: &str, key: &[&str], name: &str) -> Result<String, FormatError> {
    let mut doc = parse(text)?;
    let Some(servers) = walk(doc.as_table_mut(), key)? else {
        return Ok(text.to_owned());
    };
    if servers.remove(name).is_none() {
        return Ok(text.to_owned());
    }
    Ok(doc.to_string())
}

/// A JSON value as a TOML value (`null` becomes an empty string: TOML has none).
fn to_toml(value: &Value) -> toml_edit::Value {
    match value {
        Value::Null => "".into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => toml_edit::Value::Array(items.iter().map(to_toml).collect()),
        Value::Object(map) => toml_edit::Value::InlineTable(
            map.iter()
                .map(|(k, v)| (k.as_str(), to_toml(v)))
                .collect::<InlineTable>(),
        ),
    }
}

/// A TOML item as JSON (datetimes as their text); `None` for an empty item.
fn to_json(item: &Item) -> Option<Value> {
    match item {
        Item::None => None,
        Item::Value(value) => Some(value_json(value)),
        Item::Table(table) => Some(Value::Object(
            table
                .iter()
                .filter_map(|(k, v)| Some((k.to_owned(), to_json(v)?)))
                .collect(),
        )),
        Item::ArrayOfTables(tables) => Some(Value::Array(
            tables
                .iter()
                .filter_map(|t| to_json(&Item::Table(t.clone())))
                .collect(),
        )),
    }
}

fn value_json(value: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match value {
        V::String(s) => Value::from(s.value().as_str()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => Value::from(*f.value()),
        V::Boolean(b) => Value::from(*b.value()),
        V::Datetime(d) => Value::from(d.value().to_string()),
        V::Array(items) => Value::Array(items.iter().map(value_json).collect()),
        V::InlineTable(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.to_owned(), value_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Map<String, Value> {
        match serde_json::json!({"command": "/bin/skills", "args": ["serve"]}) {
            Value::Object(map) => map,
            _ => unreachable!("an object literal"),
        }
    }

    const CONFIG: &str = r#"# Codex settings
model = "gpt-5"

[mcp_servers.other]
command = "npx" # the runner
args = ["-y", "other"]

[mcp_servers.other.env]
TOKEN = "x"

[profiles.fast]
model = "mini"
"#;

    #[test]
    fn adds_after_the_other_servers_and_removes_cleanly() {
        let out = set(CONFIG, &["mcp_servers"], "skills", &fields()).expect("set");
        assert!(out.starts_with("# Codex settings\n"), "{out}");
        assert!(out.contains("command = \"npx\" # the runner"), "{out}");
        let at = out.find("[mcp_servers.skills]").expect("new table");
        assert!(
            at > out.find("TOKEN").expect("env")
                && at < out.find("[profiles.fast]").expect("profiles"),
            "{out}"
        );
        assert_eq!(
            entry(&out, &["mcp_servers"], "skills").expect("parses"),
            Some(Value::Object(fields()))
        );
        assert_eq!(
            set(&out, &["mcp_servers"], "skills", &fields()).expect("set"),
            out
        );
        assert_eq!(
            remove(&out, &["mcp_servers"], "skills").expect("remove"),
            CONFIG
        );
    }

    #[test]
    fn creates_the_map_and_updates_in_place() {
        let out = set("", &["mcp_servers"], "skills", &fields()).expect("set");
        assert_eq!(
            out,
            "[mcp_servers.skills]\ncommand = \"/bin/skills\"\nargs = [\"serve\"]\n"
        );
        let old = "[mcp_servers]\nskills = { command = \"/old\", args = [\"serve\"], env = { A = \"1\" } }\n";
        let out = set(old, &["mcp_servers"], "skills", &fields()).expect("set");
        assert_eq!(
            out,
            "[mcp_servers]\nskills = { command = \"/bin/skills\", args = [\"serve\"], env = { A = \"1\" } }\n"
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(matches!(
            set("a = ", &["m"], "s", &fields()),
            Err(FormatError::Parse(_))
        ));
        assert!(matches!(
            set("mcp_servers = 3\n", &["mcp_servers"], "s", &fields()),
            Err(FormatError::Shape {
                found: "an integer",
                ..
            })
        ));
    }
}
