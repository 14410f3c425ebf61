//! Editing one server entry of a JSON config file without disturbing the rest: the file
//! is parsed into a concrete syntax tree (`jsonc_parser::cst`), which keeps comments,
//! whitespace, key order and trailing commas, and only the entry's nodes are touched.
//! Comments and trailing commas are accepted (JSONC: VS Code, opencode and others
//! allow them); other JSON5 liberties are parse errors.

use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

use super::FormatError;

/// What this module accepts: JSON plus comments and trailing commas.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

fn parse(text: &str) -> Result<CstRootNode, FormatError> {
    CstRootNode::parse(text, &options()).map_err(|e| FormatError::Parse(e.to_string()))
}

/// The top-level object; `None` for a file with no value (empty or only comments).
fn top(root: &CstRootNode) -> Result<Option<CstObject>, FormatError> {
    match root.value() {
        None => Ok(None),
        Some(value) => value
            .as_object()
            .map(Some)
            .ok_or_else(|| FormatError::Shape {
                at: "the top level".into(),
                expected: "an object",
                found: kind(&value),
            }),
    }
}

/// The object at `key` below `object`, following existing keys only: `Ok(None)` when
/// a key is missing, an error when one holds something other than an object.
fn walk(mut object: CstObject, key: &[&str]) -> Result<Option<CstObject>, FormatError> {
    for (depth, k) in key.iter().enumerate() {
        let Some(prop) = object.get(k) else {
            return Ok(None);
        };
        object = child_object(&prop, &key[..=depth])?;
    }
    Ok(Some(object))
}

/// The object value of `prop` (reached by `path`), or a shape error.
fn child_object(
    prop: &jsonc_parser::cst::CstObjectProp,
    path: &[&str],
) -> Result<CstObject, FormatError> {
    match prop.value() {
        Some(value) => value.as_object().ok_or_else(|| FormatError::Shape {
            at: format!("`{}`", path.join(".")),
            expected: "an object",
            found: kind(&value),
        }),
        None => Err(FormatError::Shape {
            at: format!("`{}`", path.join(".")),
            expected: "an object",
            found: "nothing",
        }),
    }
}

/// The entry `name` in the server map at `key`, as JSON; `None` when the file, the map
/// or the entry is absent.
///
/// # Errors
/// [`FormatError::Parse`] when `text` is not JSON(C); [`FormatError::Shape`] when the
/// top level or a key on the way is not an object.
pub(crate) fn entry(text: &str, key: &[&str], name: &str) -> Result<Option<Value>, FormatError> {
    let root = parse(text)?;
    let Some(object) = top(&root)? else {
        return Ok(None);
    };
    let Some(servers) = walk(object, key)? else {
        return Ok(None);
    };
    Ok(servers
        .get(name)
        .and_then(|prop| prop.value())
        .and_then(|value| value.to_serde_value()))
}

/// `text` with the entry `name` of the server map at `key` holding `fields`: a missing
/// map or entry is added (after the existing keys); in an existing entry, each field
/// that differs is replaced and a missing one appended, and other fields are kept.
/// Nothing else changes: when every field already matches, the text comes back as is.
///
/// # Errors
/// As [`entry`]; also a shape error when the entry exists but is not an object.
pub(crate) fn set(
    text: &str,
    key: &[&str],
    name: &str,
    fields: &Map<String, Value>,
) -> Result<String, FormatError> {
    let root = parse(text)?;
    let mut object = match top(&root)? {
        Some(object) => object,
        None => root.object_value_or_set(),
    };
    // Existing keys are followed; the first missing one gets the rest at once.
    let mut path: Vec<&str> = vec![name];
    path.splice(0..0, key.iter().copied());
    for (depth, k) in path.iter().enumerate() {
        let Some(prop) = object.get(k) else {
            let mut value = CstInputValue::Object(input_fields(fields));
            for outer in path[depth + 1..].iter().rev() {
                value = CstInputValue::Object(vec![((*outer).to_owned(), value)]);
            }
            object.append(k, value);
            return Ok(root.to_string());
        };
        object = child_object(&prop, &path[..=depth])?;
    }
    // `object` is the existing entry.
    for (field, want) in fields {
        match object.get(field) {
            Some(prop) if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(want) => {}
            Some(prop) => prop.set_value(input(want)),
            None => {
                object.append(field, input(want));
            }
        }
    }
    Ok(root.to_string())
}

/// `text` without the entry `name` of the server map at `key` (the map itself stays,
/// empty or not); the text as is when there is no such entry.
///
/// # Errors
/// As [`entry`].
pub(crate) fn remove(text: &str, key: &[&str], name: &str) -> Result<String, FormatError> {
    let root = parse(text)?;
    let Some(object) = top(&root)? else {
        return Ok(text.to_owned());
    };
    let Some(servers) = walk(object, key)? else {
        return Ok(text.to_owned());
    };
    match servers.get(name) {
        Some(prop) => {
            prop.remove();
            Ok(root.to_string())
        }
        None => Ok(text.to_owned()),
    }
}

/// `value` as the CST's input value.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => CstInputValue::Object(input_fields(map)),
    }
}

fn input_fields(map: &Map<String, Value>) -> Vec<(String, CstInputValue)> {
    map.iter().map(|(k, v)| (k.clone(), input(v))).collect()
}

/// What a value node is, for messages (`an array`, `a string`).
fn kind(node: &CstNode) -> &'static str {
    if node.as_array().is_some() {
        "an array"
    } else if node.as_object().is_some() {
        "an object"
    } else if node.as_string_lit().is_some() {
        "a string"
    } else if node.as_number_lit().is_some() {
        "a number"
    } else if node.as_boolean_lit().is_some() {
        "a boolean"
    } else if node.as_null_keyword().is_some() {
        "null"
    } else {
        "a value"
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

    const WITH_COMMENTS: &str = r#"{
  // my servers
  "theme": "dark",
  "mcpServers": {
    "other": { "command": "npx", "args": ["-y", "other"] }, // keep me
  },
}
"#;

    #[test]
    fn adds_beside_other_servers_keeping_comments() {
        let out = set(WITH_COMMENTS, &["mcpServers"], "skills", &fields()).expect("set");
        assert!(
            out.contains("// my servers") && out.contains("// keep me"),
            "{out}"
        );
        assert!(out.contains(r#""other": { "command": "npx", "args": ["-y", "other"] }"#));
        assert_eq!(
            entry(&out, &["mcpServers"], "skills").expect("parses"),
            Some(Value::Object(fields()))
        );
        // Idempotent: the same fields leave the text as it is.
        assert_eq!(
            set(&out, &["mcpServers"], "skills", &fields()).expect("set"),
            out
        );
        // Removal gives back the other servers and the comments.
        let back = remove(&out, &["mcpServers"], "skills").expect("remove");
        assert!(
            back.contains("// keep me") && !back.contains("skills"),
            "{back}"
        );
        assert!(entry(&back, &["mcpServers"], "other")
            .expect("parses")
            .is_some());
    }

    #[test]
    fn creates_the_map_and_the_file() {
        let out = set("", &["mcp"], "skills", &fields()).expect("set");
        let value: Value = serde_json::from_str(&out).expect("plain JSON");
        assert_eq!(value["mcp"]["skills"], Value::Object(fields()));
        let out = set("{\n  \"a\": 1\n}\n", &["servers"], "skills", &fields()).expect("set");
        let value: Value = serde_json::from_str(&out).expect("plain JSON");
        assert_eq!(value["a"], 1);
        assert_eq!(value["servers"]["skills"]["args"][0], "serve");
    }

    #[test]
    fn updates_only_the_fields_that_differ() {
        let old = r#"{"mcpServers": {"skills": {"command": "/old/skills", "args": ["serve"], "env": {"A": "1"}}}}"#;
        let out = set(old, &["mcpServers"], "skills", &fields()).expect("set");
        let value: Value = serde_json::from_str(&out).expect("plain JSON");
        assert_eq!(value["mcpServers"]["skills"]["command"], "/bin/skills");
        assert_eq!(value["mcpServers"]["skills"]["env"]["A"], "1");
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(matches!(
            set("{ 'a': 1 }", &["x"], "s", &fields()),
            Err(FormatError::Parse(_))
        ));
        assert!(matches!(
            set(r#"{"mcpServers": []}"#, &["mcpServers"], "s", &fields()),
            Err(FormatError::Shape {
                found: "an array",
                ..
            })
        ));
        assert!(matches!(
            entry("[1]", &["mcpServers"], "s"),
            Err(FormatError::Shape { .. })
        ));
    }
}
