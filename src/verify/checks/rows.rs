//! Checks on the structured output: its rows (fields, order, count, expressions), its
//! values at a pointer, and its shape against the skill's `output-schema`.

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::params::{present, Direction, Name, Pointer};
use super::util::{compare, field, output_rows, rows, show};
use super::{Probe, TypedCheck};
use crate::host::render;

/// `every_row_has`.
pub struct EveryRowHas;

/// Parameters of `every_row_has`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EveryRowHasParams {
    /// The row field every row must have.
    pub field: Name,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for EveryRowHas {
    const ID: &'static str = "every_row_has";
    const SUMMARY: &'static str = "every row has a non-empty `field` (not null, \"\", [] or {})";
    type Params = EveryRowHasParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let (_, rows) = output_rows(probe, &p.rows, p.allow_empty)?;
        for (i, row) in rows.iter().enumerate() {
            if is_empty(field(row, &p.field)) {
                return Err(format!(
                    "row {} of {} has no `{}`: {}",
                    i + 1,
                    rows.len(),
                    p.field,
                    show(row)
                ));
            }
        }
        Ok(())
    }
}

/// Null, blank text, `[]` or `{}`.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// `field_equals`.
pub struct FieldEquals;

/// Parameters of `field_equals`: exactly one of `value` and `arg`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["value"]}, {"required": ["arg"]}]))]
pub struct FieldEqualsParams {
    /// The row field to compare.
    pub field: Name,
    /// The value every row's field must equal (`null` included).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Value")]
    pub value: Option<Value>,
    /// The argument whose value every row's field must equal.
    #[serde(default)]
    #[schemars(with = "Name")]
    pub arg: Option<Name>,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for FieldEquals {
    const ID: &'static str = "field_equals";
    const SUMMARY: &'static str =
        "every row's `field` equals `value`, or the value of argument `arg`";
    type Params = FieldEqualsParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let name = &p.field;
        let expected = match (&p.value, &p.arg) {
            (Some(v), _) => v.clone(),
            (None, Some(arg)) => match probe.args.get(&**arg) {
                Some(v) if !v.is_null() => v.clone(),
                _ => return Err(format!("the case sets no value for argument `{arg}`")),
            },
            (None, None) => return Err("give `value` or `arg`".into()),
        };
        let (_, rows) = output_rows(probe, &p.rows, p.allow_empty)?;
        for (i, row) in rows.iter().enumerate() {
            if field(row, name) != &expected {
                return Err(format!(
                    "row {} has `{name}` = {}, expected {}: {}",
                    i + 1,
                    show(field(row, name)),
                    show(&expected),
                    show(row)
                ));
            }
        }
        Ok(())
    }
}

/// `some_row_contains`.
pub struct SomeRowContains;

/// Parameters of `some_row_contains`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SomeRowContainsParams {
    /// The row field (text) to search.
    pub field: Name,
    /// Strings that must each occur in some row's field.
    #[schemars(length(min = 1))]
    pub contains: Vec<Name>,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for SomeRowContains {
    const ID: &'static str = "some_row_contains";
    const SUMMARY: &'static str =
        "for each string of `contains`, some row's `field` contains it (the case exercises it)";
    type Params = SomeRowContainsParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let name = &p.field;
        let (_, rows) = output_rows(probe, &p.rows, p.allow_empty)?;
        for needle in &p.contains {
            let needle: &str = needle;
            if !rows
                .iter()
                .any(|r| field(r, name).as_str().is_some_and(|s| s.contains(needle)))
            {
                return Err(format!(
                    "no row's `{name}` contains {needle:?} ({} rows), so the case does not exercise it",
                    rows.len()
                ));
            }
        }
        Ok(())
    }
}

/// `ordered_by`.
pub struct OrderedBy;

/// Parameters of `ordered_by`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderedByParams {
    /// The row field rows are sorted by.
    pub field: Name,
    /// The sort direction of `field`.
    pub direction: Direction,
    /// Tie-breaking keys, in order.
    #[serde(default)]
    pub then: Vec<SortKey>,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

/// One tie-breaking key of `ordered_by`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SortKey {
    /// The row field.
    pub field: Name,
    /// Its sort direction.
    pub direction: Direction,
}

impl TypedCheck for OrderedBy {
    const ID: &'static str = "ordered_by";
    const SUMMARY: &'static str =
        "rows are sorted by `field` in `direction` (then by the `then` keys on ties)";
    type Params = OrderedByParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let keys: Vec<(&Name, Direction)> = std::iter::once((&p.field, p.direction))
            .chain(p.then.iter().map(|k| (&k.field, k.direction)))
            .collect();
        let (_, rows) = output_rows(probe, &p.rows, p.allow_empty)?;
        for (i, pair) in rows.windows(2).enumerate() {
            for (name, direction) in &keys {
                let (a, b) = (field(&pair[0], name), field(&pair[1], name));
                let ord = match direction {
                    Direction::Desc => compare(b, a),
                    Direction::Asc => compare(a, b),
                };
                match ord {
                    Ordering::Less => break,
                    Ordering::Equal => {}
                    Ordering::Greater => {
                        return Err(format!(
                            "row {} (`{name}` = {}) is out of {} order after row {} (`{name}` = {})",
                            i + 2,
                            show(b),
                            direction.word(),
                            i + 1,
                            show(a)
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `row_count`.
pub struct RowCount;

/// Parameters of `row_count`: at least one bound.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [{"required": ["min"]}, {"required": ["max"]}, {"required": ["max_arg"]}]))]
pub struct RowCountParams {
    /// The fewest rows allowed.
    #[serde(default)]
    #[schemars(with = "u64")]
    pub min: Option<u64>,
    /// The most rows allowed.
    #[serde(default)]
    #[schemars(with = "u64")]
    pub max: Option<u64>,
    /// The argument (a count, defaults applied) that bounds the rows from above.
    #[serde(default)]
    #[schemars(with = "Name")]
    pub max_arg: Option<Name>,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Accepted for symmetry with the other row checks; an empty list is always
    /// counted (use `min: 1` to require rows).
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for RowCount {
    const ID: &'static str = "row_count";
    const SUMMARY: &'static str = "the number of rows is within `min`..=`max` (`max_arg`: at most the value of that argument)";
    type Params = RowCountParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let out = probe.call()?;
        let n = rows(&out.data, &p.rows, true)?.len() as u64;
        if let Some(min) = p.min {
            if n < min {
                return Err(format!("{n} rows, expected at least {min}"));
            }
        }
        if let Some(max) = p.max {
            if n > max {
                return Err(format!("{n} rows, expected at most {max}"));
            }
        }
        if let Some(arg) = &p.max_arg {
            let max = out
                .args
                .get(&**arg)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("argument `{arg}` is not a count"))?;
            if n > max {
                return Err(format!(
                    "{n} rows, expected at most {max} (argument `{arg}`)"
                ));
            }
        }
        Ok(())
    }
}

/// `output_schema`.
pub struct OutputSchema;

/// `output_schema` takes no parameters.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

impl TypedCheck for OutputSchema {
    const ID: &'static str = "output_schema";
    const SUMMARY: &'static str =
        "the structured output validates against the skill's `output-schema`";
    type Params = NoParams;

    fn run(probe: &Probe<'_>, _: &Self::Params) -> Result<(), String> {
        let schema =
            probe.skill.meta.output_schema.as_ref().ok_or_else(|| {
                format!("skill `{}` declares no `output-schema`", probe.skill.name())
            })?;
        let validator = jsonschema::draft202012::new(schema)
            .map_err(|e| format!("`output-schema` does not compile: {e}"))?;
        let out = probe.call()?;
        if let Some(e) = validator.iter_errors(&out.data).next() {
            let at = e.instance_path().to_string();
            return Err(format!("output at `{at}`: {e}"));
        }
        Ok(())
    }
}

/// `value_at`.
pub struct ValueAt;

/// Parameters of `value_at`: exactly one of `equals`, `contains` and `absent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["equals"]}, {"required": ["contains"]}, {"required": ["absent"]}]))]
pub struct ValueAtParams {
    /// JSON pointer into the structured output.
    pub pointer: Pointer,
    /// The value expected there (`null` included; numbers compare by value).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Value")]
    pub equals: Option<Value>,
    /// Strings the value (text, or its JSON) must each contain.
    #[serde(default)]
    #[schemars(with = "Vec<Name>", length(min = 1))]
    pub contains: Option<Vec<Name>>,
    /// `true`: there is no value at `pointer`.
    #[serde(default)]
    #[schemars(with = "bool", extend("const" = true))]
    pub absent: Option<bool>,
}

impl TypedCheck for ValueAt {
    const ID: &'static str = "value_at";
    const SUMMARY: &'static str = "the structured output's value at JSON pointer `pointer` equals `equals`, contains each string of `contains`, or (`absent: true`) does not exist";
    type Params = ValueAtParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let pointer: &str = &p.pointer;
        let out = probe.call()?;
        let found = out.data.pointer(pointer);
        if p.absent.is_some() {
            return match found {
                None => Ok(()),
                Some(v) => Err(format!("`{pointer}` is {}, expected no value", show(v))),
            };
        }
        let Some(value) = found else {
            return Err(format!(
                "the output has no value at `{pointer}`: {}",
                show(&out.data)
            ));
        };
        if let Some(expected) = &p.equals {
            if !same_value(value, expected) {
                return Err(format!(
                    "`{pointer}` is {}, expected {}",
                    show(value),
                    show(expected)
                ));
            }
        }
        for needle in p.contains.iter().flatten() {
            let needle: &str = needle;
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if !text.contains(needle) {
                return Err(format!(
                    "`{pointer}` is {}, expected it to contain {needle:?}",
                    show(value)
                ));
            }
        }
        Ok(())
    }
}

/// JSON equality where numbers compare by value (`60` equals `60.0`).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// `some_row_satisfies`.
pub struct SomeRowSatisfies;

/// Parameters of `some_row_satisfies`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SomeRowSatisfiesParams {
    /// A minijinja expression, e.g. `row.score > 0`.
    pub expression: Name,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
}

impl TypedCheck for SomeRowSatisfies {
    const ID: &'static str = "some_row_satisfies";
    const SUMMARY: &'static str = "at least one row makes a minijinja expression true (it sees `row`, `index` (0-based), `args` (defaults applied) and `data`)";
    type Params = SomeRowSatisfiesParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let source: &str = &p.expression;
        let (rows, truths) = truth_per_row(probe, source, &p.rows, false, true)?;
        if truths.contains(&true) {
            return Ok(());
        }
        Err(format!(
            "none of {} rows satisfies `{source}`; first: {}",
            rows.len(),
            rows.first().map_or_else(String::new, show)
        ))
    }
}

/// `source` (a minijinja expression) evaluated on each row at `pointer` of the probe's
/// output, with `row`, `index` (0-based), `args` (defaults applied) and `data` in
/// scope, in order until a row gives `until`: the rows and whether each evaluated row
/// made it true.
fn truth_per_row(
    probe: &Probe<'_>,
    source: &str,
    pointer: &Pointer,
    allow_empty: bool,
    until: bool,
) -> Result<(Vec<Value>, Vec<bool>), String> {
    let env = render::environment();
    let expr = env
        .compile_expression(source)
        .map_err(|e| format!("`expression` does not parse: {e}"))?;
    let (out, rows) = output_rows(probe, pointer, allow_empty)?;
    let mut truths = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let ctx = minijinja::context! {
            row => minijinja::Value::from_serialize(row),
            index => i,
            args => minijinja::Value::from_serialize(&out.args),
            data => minijinja::Value::from_serialize(&out.data),
        };
        let result = expr
            .eval(ctx)
            .map_err(|e| format!("row {}: `expression` failed: {e}", i + 1))?;
        truths.push(result.is_true());
        if result.is_true() == until {
            break;
        }
    }
    Ok((rows, truths))
}

/// `every_row_satisfies`.
pub struct EveryRowSatisfies;

/// Parameters of `every_row_satisfies`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EveryRowSatisfiesParams {
    /// A minijinja expression, e.g. `row.score > 0`.
    pub expression: Name,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for EveryRowSatisfies {
    const ID: &'static str = "every_row_satisfies";
    const SUMMARY: &'static str = "every row makes a minijinja expression true (it sees `row`, `index` (0-based), `args` (defaults applied) and `data`)";
    type Params = EveryRowSatisfiesParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let source: &str = &p.expression;
        let (rows, truths) = truth_per_row(probe, source, &p.rows, p.allow_empty, false)?;
        match truths.iter().position(|t| !t) {
            None => Ok(()),
            Some(i) => Err(format!(
                "row {} of {} does not satisfy `{source}`: {}",
                i + 1,
                rows.len(),
                show(&rows[i])
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;
    use serde_json::json;

    fn bad(id: &str, params: Value) -> String {
        find(id)
            .unwrap()
            .validate(&params)
            .expect_err("params should be rejected")
    }

    fn good(id: &str, params: Value) {
        let check = find(id).unwrap();
        if let Err(e) = check.validate(&params) {
            panic!("{id} {params}: {e}");
        }
    }

    #[test]
    fn every_row_has_needs_a_field() {
        good("every_row_has", json!({"field": "conv_id"}));
        good(
            "every_row_has",
            json!({"field": "id", "rows": "/hits", "allow_empty": true}),
        );
        assert!(bad("every_row_has", json!({})).contains("\"field\" is a required property"));
        assert!(
            bad("every_row_has", json!({"field": "id", "rows": "hits"})).starts_with("`/rows`:")
        );
    }

    #[test]
    fn field_equals_takes_value_or_arg_and_keeps_null() {
        good("field_equals", json!({"field": "role", "arg": "role"}));
        good("field_equals", json!({"field": "type", "value": null}));
        bad("field_equals", json!({"field": "role"}));
        bad(
            "field_equals",
            json!({"field": "role", "value": 1, "arg": "role"}),
        );
        let p: FieldEqualsParams =
            serde_json::from_value(json!({"field": "type", "value": null})).unwrap();
        assert_eq!(p.value, Some(Value::Null));
    }

    #[test]
    fn some_row_contains_needs_strings() {
        good(
            "some_row_contains",
            json!({"field": "preview", "contains": ["|", "\n"]}),
        );
        assert!(bad(
            "some_row_contains",
            json!({"field": "preview", "contains": []})
        )
        .starts_with("`/contains`:"));
        assert!(
            bad("some_row_contains", json!({"field": "p", "contains": [""]}))
                .starts_with("`/contains/0`:")
        );
    }

    #[test]
    fn ordered_by_reads_tie_breakers() {
        let params = json!({"field": "first_message", "direction": "desc",
            "then": [{"field": "conversation_id", "direction": "asc"}]});
        good("ordered_by", params.clone());
        let p: OrderedByParams = serde_json::from_value(params).unwrap();
        assert_eq!(p.then[0].direction, Direction::Asc);
        assert!(bad(
            "ordered_by",
            json!({"field": "a", "direction": "asc", "then": [{"field": "b"}]})
        )
        .starts_with("`/then/0`:"));
    }

    #[test]
    fn row_count_needs_a_bound_of_the_right_type() {
        good("row_count", json!({"max_arg": "limit", "min": 1}));
        bad("row_count", json!({"rows": "/hits"}));
        assert_eq!(
            bad("row_count", json!({"min": "two"})),
            r#"`/min`: "two" is not of type "integer""#
        );
        bad("row_count", json!({"max": -1}));
    }

    #[test]
    fn output_schema_takes_no_params() {
        good("output_schema", json!({}));
        assert_eq!(
            bad("output_schema", json!({"strict": true})),
            "unknown parameter `strict` (it takes none)"
        );
    }

    #[test]
    fn value_at_takes_one_expectation() {
        good(
            "value_at",
            json!({"pointer": "/trace/1/fallback", "equals": null}),
        );
        good("value_at", json!({"pointer": "/trace", "absent": true}));
        good(
            "value_at",
            json!({"pointer": "/note", "contains": ["empty query"]}),
        );
        bad("value_at", json!({"pointer": "/trace", "absent": false}));
        bad("value_at", json!({"pointer": "/note"}));
        bad(
            "value_at",
            json!({"pointer": "/n", "equals": 1, "absent": true}),
        );
        assert!(same_value(&json!(60), &json!(60.0)));
        assert!(!same_value(&json!("60"), &json!(60)));
    }

    #[test]
    fn every_row_satisfies_needs_an_expression() {
        good(
            "every_row_satisfies",
            json!({"expression": "row.explain is undefined", "rows": "/hits"}),
        );
        bad("every_row_satisfies", json!({"expression": ""}));
        assert!(is_empty(&json!("  ")) && is_empty(&json!({})) && !is_empty(&json!(0)));
    }
}
