//! The JSON Schemas served to MCP clients: a document's `input-schema` and
//! `output-schema` rewritten into the conservative subset real clients accept.
//!
//! The host never validates against what is served here: calls are checked against the
//! document's own schema (`Skill::validator`), so a leniency here loosens nothing.
//! This module knows nothing of skills, MCP types or transports: JSON in, JSON out.
//!
//! Why each rule exists:
//! - clients that convert schemas to their own types (google-genai's MCP converter,
//!   OpenAI-style function definitions) read `additionalProperties` as a schema and
//!   crash on `false`, and need a `type` beside every `enum`;
//! - several clients reject `null` inside `enum` and `type: [X, "null"]` unions in the
//!   schemas of arguments (an output schema keeps them: clients validate
//!   `structuredContent` against it, and a `null` the engine returns must pass);
//! - `$ref` / `$defs` are not followed by most converters.

use serde_json::{Map, Value};

use crate::host::args::MAX_STRING_CHARS;

/// The served `inputSchema` of a document's `input-schema`.
///
/// - The root is an object schema: `type: "object"` and `properties` (empty when absent).
/// - `type: [X, "null"]` becomes `type: X` (several non-null types stay a list without
///   `"null"`); a `default: null` that no longer fits is dropped.
/// - `anyOf`/`oneOf` of one schema and `{type: "null"}` becomes that schema (its siblings
///   such as `description` and `default` are kept).
/// - Local `$ref`s (`#/$defs/…`, `#/definitions/…`) are inlined, and `$defs` /
///   `definitions` removed; a recursive reference becomes `{}` (any value).
/// - `enum`: `null` is removed (an absent argument means "any"); an enum of `null` alone
///   is removed; every enum gets a `type` from its values (`string`, `integer`,
///   `number`, `boolean`, or a list when they mix); a `default: null` is dropped.
/// - `const` gets a `type` the same way.
/// - `additionalProperties: false` is removed (at every level).
/// - Every string-typed schema (`type` `"string"` or a list holding it, at any depth)
///   declares `maxLength`: one the document omits becomes the longest value of its
///   `enum`/`const` when those are all strings, else the host's own bound
///   [`MAX_STRING_CHARS`] (which calls are held to whatever the document says); one
///   above that bound is lowered to it.
///
/// Input `{"type":"object","additionalProperties":false,"properties":{"role":{"enum":["user",null],"default":null}}}`
/// gives `{"type":"object","properties":{"role":{"enum":["user"],"type":"string","maxLength":4}}}`.
pub fn served_input_schema(schema: &Value) -> Value {
    let mut out = object_root(sanitise_root(schema, Mode::Input));
    lenient(&mut out, Mode::Input);
    out
}

/// The served `outputSchema` of a document's `output-schema`: the same rewriting as
/// [`served_input_schema`] for the root and `$ref`s, and every `enum`/`const` typed,
/// but nullability stays — `type: [X, "null"]` unions, `anyOf`/`oneOf` with a
/// `{type: "null"}` branch and `null` in enums (typed `[X, "null"]`) are kept — and so
/// is `additionalProperties`: clients validate `structuredContent` against it, and the
/// engine's output does carry those nulls.
pub fn served_output_schema(schema: &Value) -> Value {
    let mut out = object_root(sanitise_root(schema, Mode::Output));
    lenient(&mut out, Mode::Output);
    out
}

/// The rewrite shared by input and output schemas, without the enum and
/// `additionalProperties` rules; kept for callers of the old name.
pub fn tool_input_schema(schema: &Value) -> Value {
    object_root(sanitise_root(schema, Mode::Input))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Input,
    Output,
}

fn sanitise_root(schema: &Value, mode: Mode) -> Value {
    let defs = collect_defs(schema);
    Sanitise { defs, mode }.schema(schema, &mut Vec::new())
}

fn object_root(mut out: Value) -> Value {
    if let Value::Object(map) = &mut out {
        map.remove("$defs");
        map.remove("definitions");
        if map.get("type").and_then(Value::as_str) != Some("object") {
            map.insert("type".into(), Value::String("object".into()));
        }
        if !map.get("properties").is_some_and(Value::is_object) {
            map.insert("properties".into(), Value::Object(Map::new()));
        }
        out
    } else {
        let mut map = Map::new();
        map.insert("type".into(), Value::String("object".into()));
        map.insert("properties".into(), Value::Object(Map::new()));
        Value::Object(map)
    }
}

/// `$ref` targets by reference string (`#/$defs/Name`, `#/definitions/Name`).
fn collect_defs(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(entries)) = schema.get(key) {
            for (name, def) in entries {
                defs.insert(format!("#/{key}/{name}"), def.clone());
            }
        }
    }
    defs
}

/// Keywords whose value is one schema.
const SCHEMA_KEYS: [&str; 7] = [
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
];
/// Keywords whose value is a list of schemas.
const LIST_KEYS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const MAP_KEYS: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];

/// The structural rewrite: `$ref`s inlined against `defs`, and in [`Mode::Input`]
/// nullable unions narrowed.
struct Sanitise {
    /// `$ref` targets ([`collect_defs`]).
    defs: Map<String, Value>,
    mode: Mode,
}

impl Sanitise {
    /// `schema` rewritten; `stack` holds the references being inlined (a recursive one
    /// becomes `{}`).
    fn schema(&self, schema: &Value, stack: &mut Vec<String>) -> Value {
        let Value::Object(map) = schema else {
            return schema.clone();
        };
        // Inline a local reference, merging any sibling keywords over the target.
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            let target = self
                .defs
                .get(reference)
                .filter(|_| !stack.iter().any(|r| r == reference));
            let Some(target) = target else {
                return Value::Object(Map::new());
            };
            stack.push(reference.to_owned());
            let mut merged = match self.schema(target, stack) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            stack.pop();
            for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
                merged.insert(k.clone(), self.keyword(k, v, stack));
            }
            return Value::Object(merged);
        }
        let mut out = Map::new();
        for (key, value) in map {
            if key == "$defs" || key == "definitions" {
                continue;
            }
            out.insert(key.clone(), self.keyword(key, value, stack));
        }
        if self.mode == Mode::Input {
            drop_null(&mut out);
        }
        Value::Object(out)
    }

    fn keyword(&self, key: &str, value: &Value, stack: &mut Vec<String>) -> Value {
        if SCHEMA_KEYS.contains(&key) {
            return self.schema(value, stack);
        }
        if LIST_KEYS.contains(&key) {
            if let Value::Array(items) = value {
                return Value::Array(items.iter().map(|s| self.schema(s, stack)).collect());
            }
        }
        if MAP_KEYS.contains(&key) {
            if let Value::Object(entries) = value {
                return Value::Object(
                    entries
                        .iter()
                        .map(|(k, s)| (k.clone(), self.schema(s, stack)))
                        .collect(),
                );
            }
        }
        value.clone()
    }
}

/// An argument's nullable unions narrowed: `type: [X, "null"]` → `type: X`,
/// `anyOf: [S, {type: null}]` → S merged with the siblings, and a `default: null` that
/// no longer fits dropped.
fn drop_null(out: &mut Map<String, Value>) {
    let mut dropped_null = false;
    // `type: [X, "null"]` → `type: X`.
    if let Some(Value::Array(types)) = out.get("type") {
        let non_null: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        dropped_null = non_null.len() < types.len();
        match non_null.len() {
            0 => {}
            1 => {
                out.insert("type".into(), non_null[0].clone());
            }
            _ => {
                out.insert("type".into(), Value::Array(non_null));
            }
        }
    }
    // `anyOf: [S, {type: null}]` → S merged with the siblings.
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = out.get(key) else {
            continue;
        };
        let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null_schema(b)).collect();
        if non_null.len() == 1 && branches.len() == 2 {
            let branch = non_null[0].clone();
            out.remove(key);
            dropped_null = true;
            if let Value::Object(branch) = branch {
                for (k, v) in branch {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
    if dropped_null && out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        && schema.as_object().is_some_and(|m| m.len() == 1)
}

/// The enum, `const` and `additionalProperties` rules, applied at every level.
fn lenient(schema: &mut Value, mode: Mode) {
    let Value::Object(map) = schema else {
        return;
    };
    for (key, value) in map.iter_mut() {
        if SCHEMA_KEYS.contains(&key.as_str()) {
            lenient(value, mode);
        } else if LIST_KEYS.contains(&key.as_str()) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|s| lenient(s, mode));
            }
        } else if MAP_KEYS.contains(&key.as_str()) {
            if let Value::Object(entries) = value {
                entries.values_mut().for_each(|s| lenient(s, mode));
            }
        }
    }
    if mode == Mode::Input && map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        let mut values = values.clone();
        let had_null = values.iter().any(Value::is_null);
        if mode == Mode::Input {
            values.retain(|v| !v.is_null());
            if had_null && map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
        }
        if values.is_empty() {
            map.remove("enum");
        } else {
            if !map.contains_key("type") {
                if let Some(t) = type_of_values(&values) {
                    map.insert("type".into(), t);
                }
            }
            map.insert("enum".into(), Value::Array(values));
        }
    }
    if let Some(value) = map.get("const").cloned() {
        if !map.contains_key("type") {
            if let Some(t) = type_of_values(std::slice::from_ref(&value)) {
                map.insert("type".into(), t);
            }
        }
    }
    if mode == Mode::Input {
        bound_string(map);
    }
}

/// Gives a string-typed schema its `maxLength` (see [`served_input_schema`]).
fn bound_string(map: &mut Map<String, Value>) {
    let string_typed = match map.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some("string")),
        _ => false,
    };
    if !string_typed {
        return;
    }
    let declared = map.get("maxLength").and_then(Value::as_u64);
    let bound = match declared {
        Some(n) => usize::try_from(n).map_or(MAX_STRING_CHARS, |n| n.min(MAX_STRING_CHARS)),
        None => longest_listed_string(map).unwrap_or(MAX_STRING_CHARS),
    };
    map.insert("maxLength".into(), Value::from(bound));
}

/// The length in characters of the longest value of `enum` / `const`, when every one of
/// them is a string; `None` otherwise.
fn longest_listed_string(map: &Map<String, Value>) -> Option<usize> {
    let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().collect(),
        (None, Some(value)) => vec![value],
        _ => return None,
    };
    values
        .iter()
        .map(|v| v.as_str().map(|s| s.chars().count()))
        .collect::<Option<Vec<usize>>>()?
        .into_iter()
        .max()
}

/// The JSON Schema `type` covering every value: one name, or a list when they mix
/// (integers and other numbers give `number`). `None` for no values.
fn type_of_values(values: &[Value]) -> Option<Value> {
    let mut types: Vec<&'static str> = Vec::new();
    for value in values {
        let t = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        if !types.contains(&t) {
            types.push(t);
        }
    }
    if types.contains(&"number") {
        types.retain(|t| *t != "integer");
    }
    match types.as_slice() {
        [] => None,
        [one] => Some(Value::String((*one).to_owned())),
        many => Some(Value::Array(
            many.iter()
                .map(|t| Value::String((*t).to_owned()))
                .collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_type_unions_become_single_types() {
        let schema = json!({"type": "object", "properties": {
            "q": {"type": ["string", "null"], "default": null, "description": "d"},
            "n": {"type": ["integer", "number", "null"]},
            "k": {"type": "integer", "default": 3}
        }});
        assert_eq!(
            served_input_schema(&schema),
            json!({"type": "object", "properties": {
                "q": {"type": "string", "description": "d", "maxLength": MAX_STRING_CHARS},
                "n": {"type": ["integer", "number"]},
                "k": {"type": "integer", "default": 3}
            }})
        );
    }

    #[test]
    fn input_enums_lose_null_and_gain_a_type() {
        let schema = json!({"type": "object", "additionalProperties": false, "properties": {
            "role": {"enum": ["user", "assistant", null], "default": null},
            "by": {"enum": ["source", "role"], "default": "source"},
            "n": {"enum": [1, 2.5]},
            "only_null": {"enum": [null]},
            "typed": {"type": "string", "enum": ["a"]},
            "fixed": {"const": true},
            "nested": {"type": "object", "additionalProperties": false,
                       "properties": {"x": {"enum": [1, 2]}}}
        }});
        assert_eq!(
            served_input_schema(&schema),
            json!({"type": "object", "properties": {
                "role": {"enum": ["user", "assistant"], "type": "string", "maxLength": 9},
                "by": {"enum": ["source", "role"], "default": "source", "type": "string", "maxLength": 6},
                "n": {"enum": [1, 2.5], "type": "number"},
                "only_null": {},
                "typed": {"type": "string", "enum": ["a"], "maxLength": 1},
                "fixed": {"const": true, "type": "boolean"},
                "nested": {"type": "object", "properties": {"x": {"enum": [1, 2], "type": "integer"}}}
            }})
        );
    }

    #[test]
    fn output_enums_keep_null_and_additional_properties() {
        let schema = json!({"type": "object", "additionalProperties": false, "properties": {
            "role": {"enum": ["user", "assistant", null]},
            "mode": {"enum": ["keyword", "questions"]}
        }});
        assert_eq!(
            served_output_schema(&schema),
            json!({"type": "object", "additionalProperties": false, "properties": {
                "role": {"enum": ["user", "assistant", null], "type": ["string", "null"]},
                "mode": {"enum": ["keyword", "questions"], "type": "string"}
            }})
        );
    }

    #[test]
    fn output_schemas_keep_nullable_types() {
        let schema = json!({"type": "object", "properties": {
            "project": {"type": ["string", "null"]},
            "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}
        }, "$defs": {"Row": {"type": "object", "required": ["project"],
            "properties": {"project": {"type": ["string", "null"]}}}}});
        let served = served_output_schema(&schema);
        assert_eq!(
            served,
            json!({"type": "object", "properties": {
                "project": {"type": ["string", "null"]},
                "rows": {"type": "array", "items": {"type": "object", "required": ["project"],
                    "properties": {"project": {"type": ["string", "null"]}}}},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}
            }})
        );
        // What the engine returns for a message whose source records no project passes.
        let output = json!({"project": null, "rows": [{"project": null}, {"project": "/w"}],
            "limit": null});
        let validator = jsonschema::validator_for(&served).expect("a valid schema");
        assert!(validator.is_valid(&output), "{served}");
        // Arguments still narrow: an absent argument is the null.
        assert_eq!(
            served_input_schema(&schema)["properties"]["project"],
            json!({"type": "string", "maxLength": MAX_STRING_CHARS})
        );
    }

    #[test]
    fn schema_valued_additional_properties_are_kept() {
        let schema = json!({"type": "object", "properties": {},
            "additionalProperties": {"enum": ["a", null]}});
        assert_eq!(
            served_input_schema(&schema),
            json!({"type": "object", "properties": {},
                "additionalProperties": {"enum": ["a"], "type": "string", "maxLength": 1}})
        );
    }

    #[test]
    fn refs_are_inlined_and_defs_removed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "when": {"$ref": "#/$defs/Range", "description": "period"},
                "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
                "tree": {"$ref": "#/$defs/Node"}
            },
            "$defs": {
                "Range": {"type": "object", "properties": {"from": {"type": ["string", "null"]}}},
                "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}
            },
            "definitions": {"Tag": {"type": "string"}}
        });
        assert_eq!(
            served_input_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "when": {"type": "object", "properties": {"from": {"type": "string", "maxLength": MAX_STRING_CHARS}}, "description": "period"},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": MAX_STRING_CHARS}},
                    "tree": {"type": "object", "properties": {"child": {}}}
                }
            })
        );
    }

    #[test]
    fn optional_any_of_is_flattened() {
        let schema = json!({"type": "object", "properties": {
            "limit": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": null, "title": "Limit"},
            "either": {"oneOf": [{"type": "integer"}, {"type": "string"}]}
        }});
        assert_eq!(
            served_input_schema(&schema),
            json!({"type": "object", "properties": {
                "limit": {"title": "Limit", "type": "integer", "minimum": 1},
                "either": {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": MAX_STRING_CHARS}]}
            }})
        );
    }

    #[test]
    fn every_input_string_declares_a_max_length() {
        let schema = json!({"type": "object", "properties": {
            "free": {"type": ["string", "null"], "default": null},
            "tight": {"type": "string", "maxLength": 10},
            "loose": {"type": "string", "maxLength": 1_000_000},
            "either": {"type": ["string", "integer"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"enum": ["exact", "fuzzy", null]},
            "fixed": {"const": "always"},
            "mixed": {"enum": ["a", 1]},
            "count": {"type": "integer"}
        }});
        assert_eq!(
            served_input_schema(&schema),
            json!({"type": "object", "properties": {
                "free": {"type": "string", "maxLength": MAX_STRING_CHARS},
                "tight": {"type": "string", "maxLength": 10},
                "loose": {"type": "string", "maxLength": MAX_STRING_CHARS},
                "either": {"type": ["string", "integer"], "maxLength": MAX_STRING_CHARS},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": MAX_STRING_CHARS}},
                "mode": {"enum": ["exact", "fuzzy"], "type": "string", "maxLength": 5},
                "fixed": {"const": "always", "type": "string", "maxLength": 6},
                "mixed": {"enum": ["a", 1], "type": ["string", "integer"], "maxLength": MAX_STRING_CHARS},
                "count": {"type": "integer"}
            }})
        );
        // Output schemas describe what the engine returns: no bound is added there.
        assert_eq!(
            served_output_schema(
                &json!({"type": "object", "properties": {"s": {"type": "string"}}})
            ),
            json!({"type": "object", "properties": {"s": {"type": "string"}}})
        );
    }

    #[test]
    fn root_is_always_an_object_schema() {
        assert_eq!(
            served_input_schema(&json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            served_input_schema(&json!(true)),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            served_input_schema(&json!({"type": ["object", "null"], "required": ["a"]})),
            json!({"type": "object", "required": ["a"], "properties": {}})
        );
    }
}
