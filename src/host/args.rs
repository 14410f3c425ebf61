//! Call arguments: coercion of CLI `key=value` strings, defaults, and validation
//! against a skill's input schema (JSON Schema 2020-12).
//!
//! Host-wide bounds apply whatever a schema says: a string argument (at any depth) may
//! hold at most [`MAX_STRING_CHARS`] characters and no NUL (U+0000) — a NUL would be
//! cut or dropped by the C libraries below, so it is refused instead. Schemas declare
//! tighter `maxLength`s (every bundled free-text argument has one, so clients see it).

use serde_json::{Map, Value};

/// One invalid argument: its name (or JSON pointer for nested values, "" for the
/// whole object) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArgError {
    /// Argument name or JSON pointer; empty for the argument object itself.
    pub argument: String,
    /// What is wrong and what was expected.
    pub reason: String,
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.argument.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "argument `{}`: {}", self.argument, self.reason)
        }
    }
}

/// Longest string argument accepted, in characters, whatever the schema says.
pub const MAX_STRING_CHARS: usize = 65_536;

/// Longest reason quoted from the schema validator (it may echo the value).
const MAX_REASON_CHARS: usize = 300;

/// Validates `args` against `schema` (compiled as `validator`), filling defaults first.
///
/// Returns the arguments with every missing property that has a `default` filled in.
///
/// # Errors
/// Every problem found: not an object, unknown properties (when the schema sets
/// `additionalProperties: false`; the message lists the known names), then each JSON
/// Schema violation (wrong type, out of range, missing required, not in enum…).
pub fn check(
    schema: &Value,
    validator: &jsonschema::Validator,
    args: Value,
) -> Result<Value, Vec<ArgError>> {
    let Value::Object(mut map) = (if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    }) else {
        return Err(vec![ArgError {
            argument: String::new(),
            reason: "arguments must be a JSON object".into(),
        }]);
    };
    let props = schema.get("properties").and_then(Value::as_object);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let mut errors = Vec::new();
    if let (Some(props), true) = (props, closed) {
        for key in map.keys().filter(|k| !props.contains_key(*k)) {
            let known: Vec<&str> = props.keys().map(String::as_str).collect();
            errors.push(ArgError {
                argument: key.clone(),
                reason: format!("unknown argument; expected one of: {}", known.join(", ")),
            });
        }
    }
    if let Some(props) = props {
        for (name, prop) in props {
            if let (false, Some(default)) = (map.contains_key(name), prop.get("default")) {
                map.insert(name.clone(), default.clone());
            }
        }
    }
    let args = Value::Object(map);
    let before = errors.len();
    bounded_strings(&args, &mut String::new(), &mut errors);
    if errors.len() > before {
        // A string too long for the host is not handed to the validator (which would
        // quote it).
        return Err(errors);
    }
    for error in validator.iter_errors(&args) {
        let pointer = error.instance_path().to_string();
        let argument = pointer
            .trim_start_matches('/')
            .replace("~1", "/")
            .replace("~0", "~");
        let reason = error.to_string();
        // `additionalProperties` failures were already reported with the known names.
        if closed && reason.contains("Additional properties are not allowed") {
            continue;
        }
        let argument = if argument.is_empty() {
            required_name(&reason).unwrap_or_default()
        } else {
            argument
        };
        errors.push(ArgError {
            argument,
            reason: describe(&reason, schema),
        });
    }
    if errors.is_empty() {
        Ok(args)
    } else {
        Err(errors)
    }
}

/// For "\"query\" is a required property" → `query`.
fn required_name(reason: &str) -> Option<String> {
    let rest = reason.strip_suffix(" is a required property")?;
    Some(rest.trim_matches('"').to_owned())
}

fn describe(reason: &str, _schema: &Value) -> String {
    if let Some(name) = required_name(reason) {
        return format!("missing required argument `{name}`");
    }
    if let Some((_, limit)) = reason.rsplit_once(" is longer than ") {
        return format!("is longer than {limit} (`maxLength`)");
    }
    if reason.chars().count() > MAX_REASON_CHARS {
        let cut: String = reason.chars().take(MAX_REASON_CHARS).collect();
        return format!("{cut}…");
    }
    reason.to_owned()
}

/// Reports every string in `value` (pointer `at`) longer than [`MAX_STRING_CHARS`] or
/// holding a NUL.
fn bounded_strings(value: &Value, at: &mut String, errors: &mut Vec<ArgError>) {
    match value {
        Value::String(s) => {
            let argument = at.trim_start_matches('/').to_owned();
            if s.contains('\0') {
                errors.push(ArgError {
                    argument,
                    reason: "contains a NUL character (U+0000), which arguments may not hold"
                        .into(),
                });
            } else if s.len() > MAX_STRING_CHARS && s.chars().count() > MAX_STRING_CHARS {
                errors.push(ArgError {
                    argument,
                    reason: format!(
                        "is {} characters long; arguments hold at most {MAX_STRING_CHARS}",
                        s.chars().count()
                    ),
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                bounded_strings(item, at, errors);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = at.len();
                at.push('/');
                at.push_str(key);
                bounded_strings(item, at, errors);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// Turns CLI `key=value` pairs into a JSON object, typing each value by the schema's
/// declared type for that property: integers, numbers and booleans are parsed,
/// `null` becomes JSON null when the property allows it, anything else stays a string
/// (so a bad value is reported by validation, naming the argument).
///
/// # Errors
/// A pair without `=`, or a key given twice.
pub fn from_pairs(schema: &Value, pairs: &[String]) -> Result<Value, ArgError> {
    let mut map = Map::new();
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(ArgError {
                argument: pair.clone(),
                reason: "expected `key=value`".into(),
            });
        };
        let prop = schema.get("properties").and_then(|p| p.get(key));
        let value = coerce(prop, raw);
        if map.insert(key.to_owned(), value).is_some() {
            return Err(ArgError {
                argument: key.to_owned(),
                reason: "given more than once".into(),
            });
        }
    }
    Ok(Value::Object(map))
}

/// Types one text value by its property's schema `prop` as [`from_pairs`] does:
/// integers, numbers and booleans parsed, `null` kept as JSON null where allowed, JSON
/// for arrays and objects; anything else (and a value that does not parse) stays a
/// string, so validation reports it naming the argument. Web forms use it too.
pub fn coerce(prop: Option<&Value>, raw: &str) -> Value {
    let Some(prop) = prop else {
        return Value::String(raw.to_owned());
    };
    let types: Vec<&str> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let allows_null = types.contains(&"null")
        || prop
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null));
    if raw == "null" && allows_null {
        return Value::Null;
    }
    for t in &types {
        match *t {
            "integer" => {
                if let Ok(n) = raw.trim().parse::<i64>() {
                    return Value::from(n);
                }
            }
            "number" => {
                if let Some(n) = raw
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                {
                    return Value::Number(n);
                }
            }
            "boolean" => match raw.trim() {
                "true" => return Value::Bool(true),
                "false" => return Value::Bool(false),
                _ => {}
            },
            "array" | "object" => {
                if let Ok(v) = serde_json::from_str::<Value>(raw) {
                    return v;
                }
            }
            _ => {}
        }
    }
    Value::String(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": false, "properties": {
            "term": {"type": "string", "default": ""},
            "limit": {"type": "integer", "default": 15, "minimum": 1, "maximum": 500},
            "role": {"enum": ["user", "assistant", null], "default": null}
        }})
    }

    fn run(args: Value) -> Result<Value, Vec<ArgError>> {
        let s = schema();
        let v = jsonschema::validator_for(&s).unwrap();
        check(&s, &v, args)
    }

    #[test]
    fn nul_in_a_string_argument_is_refused_not_dropped() {
        let errs = run(json!({"term": "a\u{0}b"})).unwrap_err();
        assert_eq!(errs[0].argument, "term");
        assert!(errs[0].reason.contains("NUL"), "{}", errs[0].reason);
    }

    #[test]
    fn long_strings_are_refused_without_being_echoed() {
        let long = "x".repeat(MAX_STRING_CHARS + 1);
        let errs = run(json!({"term": long})).unwrap_err();
        assert_eq!(errs[0].argument, "term");
        assert!(errs[0].reason.len() < 200, "{}", errs[0].reason);
        let s = json!({"type": "object", "properties": {"q": {"type": "string", "maxLength": 5}}});
        let v = jsonschema::validator_for(&s).unwrap();
        let errs = check(&s, &v, json!({"q": "abcdefghij-secret"})).unwrap_err();
        assert_eq!(errs[0].reason, "is longer than 5 characters (`maxLength`)");
    }

    #[test]
    fn fills_defaults() {
        assert_eq!(
            run(json!({})).unwrap(),
            json!({"term": "", "limit": 15, "role": null})
        );
    }

    #[test]
    fn names_unknown_and_wrong_arguments() {
        let errs = run(json!({"limt": 3, "limit": "x"})).unwrap_err();
        assert_eq!(errs[0].argument, "limt");
        assert!(
            errs[0]
                .reason
                .contains("expected one of: term, limit, role"),
            "{}",
            errs[0].reason
        );
        assert_eq!(errs[1].argument, "limit");
        assert!(errs[1].reason.contains("integer"), "{}", errs[1].reason);
        let errs = run(json!({"limit": 0})).unwrap_err();
        assert_eq!(errs[0].argument, "limit");
        let errs = run(json!({"role": "system"})).unwrap_err();
        assert_eq!(errs[0].argument, "role");
        assert!(run(json!([1])).is_err());
    }

    #[test]
    fn coerces_cli_pairs_by_schema_type() {
        let s = schema();
        let v = from_pairs(
            &s,
            &["term=a=b".into(), "limit=5".into(), "role=null".into()],
        )
        .unwrap();
        assert_eq!(v, json!({"term": "a=b", "limit": 5, "role": null}));
        let v = from_pairs(&s, &["limit=five".into()]).unwrap();
        assert_eq!(v, json!({"limit": "five"}));
        assert!(from_pairs(&s, &["noequals".into()]).is_err());
    }
}
