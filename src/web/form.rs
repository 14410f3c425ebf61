//! A skill's form, generated from its input schema, and the arguments a submitted form
//! (a query string or a POST body) stands for.
//!
//! One field per schema property: `enum` → a select, `integer`/`number` → a number
//! input with the schema's `minimum`/`maximum`, `boolean` → a checkbox, `array` → a
//! text area with one item per line, `object` → a text area of JSON, `string` → a text
//! input (a text area past 2000 characters) with `minLength`/`maxLength`. A property
//! that is not required, or allows `null`, is optional; `description` is the help text
//! and `default` the value shown until the form is submitted.
//!
//! Values are typed as the CLI types `key=value` ([`crate::host::args::coerce`]),
//! so a value that does not fit stays a string and validation names the argument.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::host::args::{self, ArgError};

/// Above this `maxLength` a string field is a text area.
const TEXTAREA_CHARS: u64 = 2000;

/// One form field.
#[derive(Debug, Clone, Serialize)]
pub struct Field {
    /// The property name (the input's `name`).
    pub name: String,
    /// `text`, `textarea`, `integer`, `number`, `checkbox`, `select`, `lines` or `json`.
    pub kind: &'static str,
    /// The schema's type, as shown beside the name (`integer`, `string or null`…).
    pub type_label: String,
    /// Listed in the schema's `required`.
    pub required: bool,
    /// `minimum` (number inputs).
    pub min: Option<String>,
    /// `maximum` (number inputs).
    pub max: Option<String>,
    /// `minLength` (text inputs).
    pub minlength: Option<u64>,
    /// `maxLength` (text inputs).
    pub maxlength: Option<u64>,
    /// The property's `description`.
    pub help: String,
    /// The value shown: what was submitted, else the default.
    pub value: String,
    /// For checkboxes: checked.
    pub checked: bool,
    /// For selects: the choices.
    pub options: Vec<Choice>,
    /// What was wrong with the submitted value.
    pub error: Option<String>,
}

/// One option of a select.
#[derive(Debug, Clone, Serialize)]
pub struct Choice {
    /// The submitted value (`""` for none).
    pub value: String,
    /// What the person reads.
    pub label: String,
    /// Shown selected.
    pub selected: bool,
}

/// The schema's types for a property, `null` left out, and whether `null` is allowed.
fn types(prop: &Value) -> (Vec<String>, bool) {
    let mut list: Vec<String> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let enum_null = prop
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.contains(&Value::Null));
    let nullable = list.iter().any(|t| t == "null") || enum_null;
    list.retain(|t| t != "null");
    (list, nullable)
}

fn kind_of(prop: &Value) -> &'static str {
    if prop.get("enum").and_then(Value::as_array).is_some() {
        return "select";
    }
    let (types, _) = types(prop);
    match types.first().map(String::as_str) {
        Some("boolean") => "checkbox",
        Some("integer") => "integer",
        Some("number") => "number",
        Some("array") => "lines",
        Some("object") => "json",
        _ => {
            let long = prop
                .get("maxLength")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > TEXTAREA_CHARS);
            if long {
                "textarea"
            } else {
                "text"
            }
        }
    }
}

/// How a value is written in a field.
fn display(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(display).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    }
}

/// The properties of `schema`, in schema order.
fn properties(schema: &Value) -> Vec<(&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().collect())
        .unwrap_or_default()
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The form of `schema`: one [`Field`] per property, showing the `submitted` pairs
/// (else the defaults) and the `errors` of the argument each names.
pub fn fields(schema: &Value, submitted: &[(String, String)], errors: &[ArgError]) -> Vec<Field> {
    let required = required(schema);
    let was_submitted = !submitted.is_empty();
    properties(schema)
        .into_iter()
        .map(|(name, prop)| {
            let kind = kind_of(prop);
            let (type_list, nullable) = types(prop);
            let given: Vec<&str> = submitted
                .iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .collect();
            let default = prop.get("default").cloned().unwrap_or(Value::Null);
            let value = match (kind, given.last()) {
                ("lines", Some(_)) => given.join("\n"),
                (_, Some(last)) => (*last).to_owned(),
                _ => display(&default),
            };
            let checked = if kind == "checkbox" {
                match given.last() {
                    Some(last) => truthy(last),
                    None if was_submitted => false,
                    None => default == Value::Bool(true),
                }
            } else {
                false
            };
            let options = if kind == "select" {
                choices(prop, &value, required.contains(&name.as_str()))
            } else {
                Vec::new()
            };
            let mut type_label = if type_list.is_empty() {
                if kind == "select" {
                    "one of".to_owned()
                } else {
                    "any".to_owned()
                }
            } else {
                type_list.join(" or ")
            };
            if nullable {
                type_label.push_str(" or null");
            }
            let error = errors
                .iter()
                .filter(|e| e.argument == *name || e.argument.starts_with(&format!("{name}/")))
                .map(|e| e.reason.clone())
                .collect::<Vec<_>>();
            Field {
                name: name.clone(),
                kind,
                type_label,
                required: required.contains(&name.as_str()),
                min: prop.get("minimum").map(Value::to_string),
                max: prop.get("maximum").map(Value::to_string),
                minlength: prop.get("minLength").and_then(Value::as_u64),
                maxlength: prop.get("maxLength").and_then(Value::as_u64),
                help: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                value,
                checked,
                options,
                error: (!error.is_empty()).then(|| error.join("; ")),
            }
        })
        .collect()
}

fn choices(prop: &Value, value: &str, required: bool) -> Vec<Choice> {
    let members = prop
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    let has_none = members.contains(&Value::Null);
    if !has_none && !required && prop.get("default").is_none() {
        out.push(Choice {
            value: String::new(),
            label: "—".into(),
            selected: value.is_empty(),
        });
    }
    for member in &members {
        let shown = display(member);
        out.push(Choice {
            label: if member.is_null() {
                "— any —".into()
            } else {
                shown.clone()
            },
            selected: shown == value,
            value: shown,
        });
    }
    out
}

fn truthy(raw: &str) -> bool {
    matches!(raw.trim(), "on" | "true" | "1" | "yes")
}

/// The arguments `pairs` (query string or form body, in order) stand for under
/// `schema`. Names starting with `_` are the form's own (`_run`, `_token`) and are
/// skipped. An empty value leaves an optional argument out (its default applies); for
/// a required string it is the empty string. A boolean takes the last value (the form
/// sends `false` before its checkbox), an array one item per line of every value.
pub fn arguments(schema: &Value, pairs: &[(String, String)]) -> Value {
    let required = required(schema);
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in pairs {
        if !name.starts_with('_') && !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    let mut out = Map::new();
    for name in names {
        let values: Vec<&str> = pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        let prop = schema.get("properties").and_then(|p| p.get(name));
        let Some(prop) = prop else {
            // Unknown: passed on, so validation names it.
            out.insert(name.to_owned(), Value::String(values.join("\n")));
            continue;
        };
        let last = values.last().copied().unwrap_or("");
        let value = match kind_of(prop) {
            "checkbox" => Some(Value::Bool(truthy(last))),
            "lines" => {
                let items_schema = prop.get("items");
                let items: Vec<Value> = values
                    .iter()
                    .flat_map(|v| v.lines())
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .map(|line| args::coerce(items_schema, line))
                    .collect();
                (!items.is_empty() || required.contains(&name)).then_some(Value::Array(items))
            }
            "select" => {
                let members = prop.get("enum").and_then(Value::as_array);
                match members.and_then(|m| m.iter().find(|v| !v.is_null() && display(v) == last)) {
                    Some(member) => Some(member.clone()),
                    None if last.is_empty() => None,
                    None => Some(Value::String(last.to_owned())),
                }
            }
            kind => {
                if last.is_empty() {
                    let is_string = matches!(kind, "text" | "textarea");
                    (is_string && required.contains(&name)).then(|| Value::String(String::new()))
                } else {
                    Some(args::coerce(Some(prop), last))
                }
            }
        };
        if let Some(value) = value {
            out.insert(name.to_owned(), value);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["q"], "properties": {
            "q": {"type": "string", "minLength": 1, "maxLength": 200, "description": "what"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 15},
            "role": {"enum": ["user", "assistant", null], "default": null},
            "explain": {"type": "boolean", "default": false},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
            "since": {"type": ["string", "null"], "default": null}
        }})
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn one_field_per_property_with_bounds() {
        let fields = fields(&schema(), &[], &[]);
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["q", "limit", "role", "explain", "tags", "since"]);
        assert_eq!(fields[0].kind, "text");
        assert!(fields[0].required);
        assert_eq!(fields[0].maxlength, Some(200));
        assert_eq!(fields[1].kind, "integer");
        assert_eq!(fields[1].min.as_deref(), Some("1"));
        assert_eq!(fields[1].max.as_deref(), Some("500"));
        assert_eq!(fields[1].value, "15");
        assert_eq!(fields[2].kind, "select");
        assert_eq!(fields[2].options.len(), 3);
        assert!(fields[2].options[2].selected, "null default selects none");
        assert_eq!(fields[3].kind, "checkbox");
        assert_eq!(fields[4].kind, "lines");
        assert_eq!(fields[5].type_label, "string or null");
    }

    #[test]
    fn submitted_values_become_typed_arguments() {
        let args = arguments(
            &schema(),
            &pairs(&[
                ("q", "rust"),
                ("limit", "5"),
                ("role", "user"),
                ("explain", "false"),
                ("explain", "on"),
                ("tags", "a\r\nb\n\n"),
                ("since", ""),
                ("_run", "1"),
            ]),
        );
        assert_eq!(
            args,
            json!({"q": "rust", "limit": 5, "role": "user", "explain": true, "tags": ["a", "b"]})
        );
        let args = arguments(
            &schema(),
            &pairs(&[("q", ""), ("limit", "ten"), ("role", "")]),
        );
        assert_eq!(args, json!({"q": "", "limit": "ten"}));
        let args = arguments(&schema(), &pairs(&[("limt", "3")]));
        assert_eq!(args, json!({"limt": "3"}));
    }

    #[test]
    fn errors_land_on_their_field() {
        let errors = [ArgError {
            argument: "limit".into(),
            reason: "0 is less than the minimum of 1".into(),
        }];
        let fields = fields(&schema(), &pairs(&[("limit", "0")]), &errors);
        assert_eq!(fields[1].value, "0");
        assert!(fields[1].error.as_deref().unwrap_or("").contains("minimum"));
        assert!(fields[0].error.is_none());
    }
}
