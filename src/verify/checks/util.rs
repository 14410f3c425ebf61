//! Helpers the check families share: reading rows, comparing and showing values.

use std::cmp::Ordering;

use serde_json::Value;

use super::params::{Name, OneOrMany, Pointer};
use super::Probe;
use crate::host::CallOutput;

/// The row array of `data` at `pointer`; an error when missing or (unless
/// `allow_empty`) empty, so a row check never passes vacuously.
pub(super) fn rows<'d>(
    data: &'d Value,
    pointer: &Pointer,
    allow_empty: bool,
) -> Result<&'d [Value], String> {
    let rows = data
        .pointer(pointer)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the output has no row array at `{}`", &**pointer))?;
    if rows.is_empty() && !allow_empty {
        return Err("the case returned no rows, so the check proves nothing (set `allow_empty: true` to accept)".into());
    }
    Ok(rows)
}

/// Calls the case and returns the output with its rows (see [`rows`]).
pub(super) fn output_rows(
    probe: &Probe<'_>,
    pointer: &Pointer,
    allow_empty: bool,
) -> Result<(CallOutput, Vec<Value>), String> {
    let out = probe.call()?;
    let rows = rows(&out.data, pointer, allow_empty)?.to_vec();
    Ok((out, rows))
}

/// A row's field, `null` when missing.
pub(super) fn field<'r>(row: &'r Value, name: &str) -> &'r Value {
    row.get(name).unwrap_or(&Value::Null)
}

/// A value of at most 120 characters, for messages.
pub(super) fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    }
}

/// Orders JSON values: numbers by value, strings, booleans; null first; other
/// combinations by their JSON text.
pub(super) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x
            .as_f64()
            .unwrap_or(0.0)
            .partial_cmp(&y.as_f64().unwrap_or(0.0))
            .unwrap_or(Ordering::Equal),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => a.to_string().cmp(&b.to_string()),
    }
}

/// Where two texts first differ, with a little context of each.
pub(super) fn first_difference(a: &str, b: &str) -> String {
    let at = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let around = |s: &str| {
        let start = at.saturating_sub(20);
        s.chars().skip(start).take(60).collect::<String>()
    };
    format!(
        "first difference at character {at}: {:?} vs {:?}",
        around(a),
        around(b)
    )
}

/// `key_field` for messages: `message_id` or `source, conversation_id, message_id`.
pub(super) fn key_label(key_field: &OneOrMany<Name>) -> String {
    key_field
        .as_slice()
        .iter()
        .map(|n| &**n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A row's key: the value of `key_field`, or an array of the values of its fields.
pub(super) fn key_of(
    row: &Value,
    key_field: &OneOrMany<Name>,
    index: usize,
) -> Result<Value, String> {
    let fields = key_field.as_slice();
    let mut values = Vec::with_capacity(fields.len());
    for f in fields {
        let v = field(row, f);
        if v.is_null() {
            return Err(format!(
                "row {} has no key field `{f}`: {}",
                index + 1,
                show(row)
            ));
        }
        values.push(v.clone());
    }
    Ok(match values.len() {
        1 => values.swap_remove(0),
        _ => Value::Array(values),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn difference_points_at_first_change() {
        assert!(first_difference("abcdef", "abcXef").starts_with("first difference at character 3"));
    }

    #[test]
    fn empty_rows_fail_unless_allowed() {
        let data = json!({"rows": [], "hits": [{"a": 1}]});
        let err = rows(&data, &Pointer::rows(), false).unwrap_err();
        assert!(err.starts_with("the case returned no rows"), "{err}");
        assert!(rows(&data, &Pointer::rows(), true).unwrap().is_empty());
        let hits: Pointer = serde_json::from_value(json!("/hits")).unwrap();
        assert_eq!(rows(&data, &hits, false).unwrap().len(), 1);
        let missing: Pointer = serde_json::from_value(json!("/nope")).unwrap();
        assert_eq!(
            rows(&data, &missing, true).unwrap_err(),
            "the output has no row array at `/nope`"
        );
    }

    #[test]
    fn composite_keys_are_arrays_and_missing_parts_named() {
        let key: OneOrMany<Name> = serde_json::from_value(json!(["a", "b"])).unwrap();
        assert_eq!(
            key_of(&json!({"a": 1, "b": "x"}), &key, 0).unwrap(),
            json!([1, "x"])
        );
        let err = key_of(&json!({"a": 1}), &key, 2).unwrap_err();
        assert!(err.starts_with("row 3 has no key field `b`"), "{err}");
        assert_eq!(key_label(&key), "a, b");
    }

    #[test]
    fn null_sorts_first_and_numbers_by_value() {
        assert_eq!(compare(&json!(null), &json!(0)), Ordering::Less);
        assert_eq!(compare(&json!(2), &json!(10.5)), Ordering::Less);
        assert_eq!(compare(&json!("b"), &json!("a")), Ordering::Greater);
    }
}
