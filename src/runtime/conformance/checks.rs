//! The check vocabulary: generic, reusable checks a conformance binding names by id.
//!
//! Each check has a JSON Schema for its parameters ([`Check::params_schema`]) and runs
//! on one case (arguments + corpus) through a [`Probe`]. A failing check returns a
//! message with the first counter-example. No check knows any particular skill.
//!
//! Row-based checks read the rows at the JSON pointer `rows` of the structured output
//! (default `/rows`) and fail on an empty row list unless `allow_empty: true`, so a
//! check never passes vacuously.

use std::cmp::Ordering;
use std::path::Path;

use serde_json::{json, Value};

use super::EmbedderChoice;
use crate::runtime::{render, CallError, CallOutput, Host, Skill};
use crate::stores::StoreError;

/// What a check can reach while running one case.
pub struct Probe<'a> {
    /// The host, loaded over this case's corpus stores.
    pub host: &'a Host,
    /// The skill under test.
    pub skill: &'a Skill,
    /// The case's arguments (as written in the binding, defaults not applied).
    pub args: &'a Value,
    /// The skills folder the host loaded (passed to fresh processes).
    pub skills_dir: &'a Path,
    /// The data folder holding this corpus's stores (passed to fresh processes).
    pub data_dir: &'a Path,
    /// The `skills` binary, for checks that run a fresh process; `None` when unknown.
    pub binary: Option<&'a Path>,
    /// The case's clock (RFC 3339), passed to fresh processes as `SKILLS_NOW`;
    /// `None`: the system clock.
    pub now: Option<&'a str>,
    /// The case's embedding model choice (`none` reaches fresh processes as
    /// `SKILLS_EMBEDDER=none`).
    pub embedder: EmbedderChoice,
}

impl Probe<'_> {
    /// Calls the skill with the case's arguments.
    ///
    /// # Errors
    /// The call error, as text.
    pub fn call(&self) -> Result<CallOutput, String> {
        self.call_with(self.args)
    }

    /// Calls the skill with other arguments (same corpus, clock and model).
    ///
    /// # Errors
    /// The call error, as text.
    pub fn call_with(&self, args: &Value) -> Result<CallOutput, String> {
        self.host
            .call(self.skill.name(), args.clone())
            .map_err(|e| format!("call failed: {e}"))
    }

    /// The store file of `store` (`conversations` or `memories`).
    ///
    /// # Errors
    /// Unknown store.
    pub fn store_path(&self, store: &str) -> Result<std::path::PathBuf, String> {
        let paths = self.host.context().paths();
        match store {
            "conversations" => Ok(paths.conversations.clone()),
            "memories" => Ok(paths.memories.clone()),
            other => Err(format!(
                "unknown store `{other}`; known stores: conversations, memories"
            )),
        }
    }

    /// Runs `sql` on store `store` (`conversations` or `memories`) with positional
    /// parameters, returning every row as a list of JSON values.
    ///
    /// # Errors
    /// Unknown store, store not built, or the SQL error.
    pub fn query(
        &self,
        store: &str,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, String> {
        match store {
            "conversations" => query_duckdb(self.host, sql, params),
            "memories" => query_sqlite(&self.host.context().memories_path(), sql, params),
            other => Err(format!(
                "unknown store `{other}`; known stores: conversations, memories"
            )),
        }
    }
}

/// One check of the vocabulary.
pub struct Check {
    /// The id a binding names.
    pub id: &'static str,
    /// One line: what it proves.
    pub summary: &'static str,
    /// JSON Schema (draft 2020-12) of its parameters.
    pub params: &'static str,
    /// Runs it on one case. `Err` is the failure message with the first counter-example.
    pub run: fn(&Probe<'_>, &Value) -> Result<(), String>,
}

impl Check {
    /// The parameter schema as JSON.
    ///
    /// # Errors
    /// When the built-in schema text is not JSON (a bug in this file).
    pub fn params_schema(&self) -> Result<Value, String> {
        serde_json::from_str(self.params)
            .map_err(|e| format!("check `{}`: parameter schema: {e}", self.id))
    }

    /// Validates `params` against the parameter schema.
    ///
    /// # Errors
    /// Every violation, `; `-joined, each with its JSON pointer.
    pub fn validate(&self, params: &Value) -> Result<(), String> {
        let schema = self.params_schema()?;
        let validator = jsonschema::draft202012::new(&schema)
            .map_err(|e| format!("check `{}`: {e}", self.id))?;
        let errors: Vec<String> = validator
            .iter_errors(params)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("`{at}`: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

const ROWS: &str = r#""rows": {"type": "string", "pattern": "^(/.*)?$", "description": "JSON pointer to the row array in the structured output (default /rows)"},
  "allow_empty": {"type": "boolean", "description": "Pass on an empty row list (default false)"}"#;
const IDENT: &str = r#"{"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}"#;
const KEYS: &str = r#"{"description": "row field, or fields of a composite key", "oneOf": [{"type": "string", "minLength": 1},
  {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]}"#;
const IDENTS: &str = r#"{"description": "store column, or columns parallel to key_field", "oneOf": [{"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
  {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}}]}"#;
const ARG_COLUMNS: &str = r#"{"type": "object", "description": "extra lookup conditions: store column = value of argument",
  "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}, "additionalProperties": {"type": "string"}}"#;
const STORE: &str = r#"{"enum": ["conversations", "memories"], "description": "Store to query (default conversations)"}"#;

/// Every check the host knows, in a fixed order.
pub fn vocabulary() -> &'static [Check] {
    static VOCABULARY: std::sync::OnceLock<Vec<Check>> = std::sync::OnceLock::new();
    VOCABULARY.get_or_init(build)
}

fn build() -> Vec<Check> {
    vec![
        Check {
            id: "deterministic",
            summary: "same arguments give byte-identical structured output and text over several runs, and in a fresh `skills run` process",
            params: r#"{"type": "object", "additionalProperties": false, "properties": {
              "runs": {"type": "integer", "minimum": 2, "maximum": 20, "description": "in-process runs (default 3)"},
              "fresh_process": {"type": "boolean", "description": "also compare with `skills run --json` in a new process (default true)"}}}"#,
            run: deterministic,
        },
        Check {
            id: "every_row_has",
            summary: "every row has a non-empty `field` (not null, \"\", [] or {})",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["field"], "properties": {{
              "field": {{"type": "string", "minLength": 1}}, {ROWS}}}}}"#)),
            run: every_row_has,
        },
        Check {
            id: "field_equals",
            summary: "every row's `field` equals `value`, or the value of argument `arg`",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["field"],
              "oneOf": [{{"required": ["value"]}}, {{"required": ["arg"]}}], "properties": {{
              "field": {{"type": "string", "minLength": 1}}, "value": {{}}, "arg": {{"type": "string", "minLength": 1}}, {ROWS}}}}}"#)),
            run: field_equals,
        },
        Check {
            id: "some_row_contains",
            summary: "for each string of `contains`, some row's `field` contains it (the case exercises it)",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["field", "contains"], "properties": {{
              "field": {{"type": "string", "minLength": 1}},
              "contains": {{"type": "array", "minItems": 1, "items": {{"type": "string", "minLength": 1}}}}, {ROWS}}}}}"#)),
            run: some_row_contains,
        },
        Check {
            id: "ordered_by",
            summary: "rows are sorted by `field` in `direction` (then by the `then` keys on ties)",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["field", "direction"], "properties": {{
              "field": {{"type": "string", "minLength": 1}}, "direction": {{"enum": ["asc", "desc"]}},
              "then": {{"type": "array", "items": {{"type": "object", "additionalProperties": false, "required": ["field", "direction"],
                "properties": {{"field": {{"type": "string", "minLength": 1}}, "direction": {{"enum": ["asc", "desc"]}}}}}}}}, {ROWS}}}}}"#)),
            run: ordered_by,
        },
        Check {
            id: "row_count",
            summary: "the number of rows is within `min`..=`max` (`max_arg`: at most the value of that argument)",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "anyOf": [{{"required": ["min"]}}, {{"required": ["max"]}}, {{"required": ["max_arg"]}}], "properties": {{
              "min": {{"type": "integer", "minimum": 0}}, "max": {{"type": "integer", "minimum": 0}},
              "max_arg": {{"type": "string", "minLength": 1}}, {ROWS}}}}}"#)),
            run: row_count,
        },
        Check {
            id: "text_equals",
            summary: "the rendered text equals a minijinja template of `args` and `data`",
            params: r#"{"type": "object", "additionalProperties": false, "required": ["template"], "properties": {
              "template": {"type": "string"}}}"#,
            run: text_equals,
        },
        Check {
            id: "text_rows_intact",
            summary: "every markdown table line of the rendered text has `columns` cells, and there are `header_lines` + one line per row",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["columns"], "properties": {{
              "columns": {{"type": "integer", "minimum": 1}}, "header_lines": {{"type": "integer", "minimum": 0}}, {ROWS}}}}}"#)),
            run: text_rows_intact,
        },
        Check {
            id: "output_schema",
            summary: "the structured output validates against the skill's `output-schema`",
            params: r#"{"type": "object", "additionalProperties": false, "properties": {}}"#,
            run: output_schema,
        },
        Check {
            id: "argument_error",
            summary: "the case's (invalid) arguments are rejected before the engine runs, naming `argument`",
            params: r#"{"type": "object", "additionalProperties": false, "required": ["argument"], "properties": {
              "argument": {"type": "string", "minLength": 1}, "reason_contains": {"type": "string"}}}"#,
            run: argument_error,
        },
        Check {
            id: "prefix_of_store_field",
            summary: "each row's `field` is the first `chars` characters (Unicode scalar values) of store column `column`, looked up by key (plus `ellipsis` and `mark_field: true` when cut)",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false,
              "required": ["field", "table", "column", "key_field", "key_column"],
              "oneOf": [{{"required": ["chars"]}}, {{"required": ["chars_arg"]}}], "properties": {{
              "field": {{"type": "string", "minLength": 1}}, "chars": {{"type": "integer", "minimum": 0}},
              "chars_arg": {{"type": "string", "minLength": 1, "description": "take the count from this argument"}},
              "ellipsis": {{"type": "string", "description": "appended to the prefix when the store value is longer than the count (default: nothing)"}},
              "mark_field": {{"type": "string", "minLength": 1, "description": "row field that is `true` when the value was cut and absent when it was not"}},
              "store": {STORE}, "table": {IDENT}, "column": {IDENT}, "key_field": {KEYS},
              "key_column": {IDENTS}, "arg_columns": {ARG_COLUMNS}, {ROWS}}}}}"#)),
            run: prefix_of_store_field,
        },
        Check {
            id: "store_predicate",
            summary: "every (or, with `quantifier: some`, at least one) row satisfies an SQL predicate on its store record, looked up by key",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false,
              "required": ["predicate", "table", "key_field", "key_column"], "properties": {{
              "predicate": {{"type": "string", "minLength": 1}}, "quantifier": {{"enum": ["every", "some"]}},
              "store": {STORE}, "table": {IDENT}, "key_field": {KEYS},
              "key_column": {IDENTS}, "arg_columns": {ARG_COLUMNS}, {ROWS}}}}}"#)),
            run: store_predicate,
        },
        Check {
            id: "rows_match_sql",
            summary: "the rows' keys equal the first column(s) of a reference SQL query (as a set, or in order with `ordered: true`)",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["sql", "key_field"], "properties": {{
              "sql": {{"type": "string", "minLength": 1}}, "key_field": {KEYS},
              "arg_params": {{"type": "array", "items": {{"type": "string"}}, "description": "arguments bound to the query's `?` in order"}},
              "ordered": {{"type": "boolean"}}, "store": {STORE}, {ROWS}}}}}"#)),
            run: rows_match_sql,
        },
        Check {
            id: "value_at",
            summary: "the structured output's value at JSON pointer `pointer` equals `equals`, contains each string of `contains`, or (`absent: true`) does not exist",
            params: r#"{"type": "object", "additionalProperties": false, "required": ["pointer"],
              "oneOf": [{"required": ["equals"]}, {"required": ["contains"]}, {"required": ["absent"]}], "properties": {
              "pointer": {"type": "string", "pattern": "^(/.*)?$"}, "equals": {},
              "contains": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
              "absent": {"const": true}}}"#,
            run: value_at,
        },
        Check {
            id: "every_row_satisfies",
            summary: "every row makes a minijinja expression true (it sees `row`, `index` (0-based), `args` (defaults applied) and `data`)",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false, "required": ["expression"], "properties": {{
              "expression": {{"type": "string", "minLength": 1}}, {ROWS}}}}}"#)),
            run: every_row_satisfies,
        },
        Check {
            id: "same_as",
            summary: "the structured output equals that of the call with the case's arguments changed by `with` (set) and `without` (removed), after removing the `ignore` JSON pointers from both",
            params: r#"{"type": "object", "additionalProperties": false, "anyOf": [{"required": ["with"]}, {"required": ["without"]}], "properties": {
              "with": {"type": "object"}, "without": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
              "ignore": {"type": "array", "items": {"type": "string", "pattern": "^/.+$"}}}}"#,
            run: same_as,
        },
        Check {
            id: "error_contains",
            summary: "the call fails (engine or argument error) with a message containing each string of `contains`",
            params: r#"{"type": "object", "additionalProperties": false, "required": ["contains"], "properties": {
              "contains": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}}}"#,
            run: error_contains,
        },
        Check {
            id: "store_ordered_by",
            summary: "rows are sorted by an SQL expression over their store record (looked up by key), and it takes at least two values so the order is exercised",
            params: leak(format!(r#"{{"type": "object", "additionalProperties": false,
              "required": ["expression", "direction", "table", "key_field", "key_column"], "properties": {{
              "expression": {{"type": "string", "minLength": 1}}, "direction": {{"enum": ["asc", "desc"]}},
              "store": {STORE}, "table": {IDENT}, "key_field": {KEYS},
              "key_column": {IDENTS}, "arg_columns": {ARG_COLUMNS}, {ROWS}}}}}"#)),
            run: store_ordered_by,
        },
        Check {
            id: "store_unchanged",
            summary: "the store file is byte-identical (and no journal, WAL or other file appears beside it) after running the case `runs` times",
            params: r#"{"type": "object", "additionalProperties": false, "required": ["store"], "properties": {
              "store": {"enum": ["conversations", "memories"]},
              "runs": {"type": "integer", "minimum": 1, "maximum": 20, "description": "calls (default 3)"}}}"#,
            run: store_unchanged,
        },
    ]
}

/// The vocabulary as JSON, for `skills verify --list-checks`:
/// `[{"id", "summary", "params": <JSON Schema>}]`.
pub fn describe() -> Value {
    Value::Array(
        vocabulary()
            .iter()
            .map(|c| json!({"id": c.id, "summary": c.summary, "params": c.params_schema().unwrap_or(Value::Null)}))
            .collect(),
    )
}

/// Looks a check up by id.
pub fn find(id: &str) -> Option<&'static Check> {
    vocabulary().iter().find(|c| c.id == id)
}

/// Schemas built with `format!` live for the program (a dozen short strings, built
/// once by [`vocabulary`]).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

// ---------------------------------------------------------------- helpers

fn p_str<'v>(params: &'v Value, key: &str, default: &'v str) -> &'v str {
    params.get(key).and_then(Value::as_str).unwrap_or(default)
}

fn p_bool(params: &Value, key: &str, default: bool) -> bool {
    params.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// The row array of `data` at pointer `rows`; an error when missing or (unless
/// allowed) empty.
fn rows<'d>(data: &'d Value, params: &Value) -> Result<&'d [Value], String> {
    let pointer = p_str(params, "rows", "/rows");
    let rows = data
        .pointer(pointer)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the output has no row array at `{pointer}`"))?;
    if rows.is_empty() && !p_bool(params, "allow_empty", false) {
        return Err("the case returned no rows, so the check proves nothing (set `allow_empty: true` to accept)".into());
    }
    Ok(rows)
}

fn output_rows(probe: &Probe<'_>, params: &Value) -> Result<(CallOutput, Vec<Value>), String> {
    let out = probe.call()?;
    let rows = rows(&out.data, params)?.to_vec();
    Ok((out, rows))
}

fn field<'r>(row: &'r Value, name: &str) -> &'r Value {
    row.get(name).unwrap_or(&Value::Null)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    }
}

fn compare(a: &Value, b: &Value) -> Ordering {
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
fn first_difference(a: &str, b: &str) -> String {
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

/// The names of a string-or-array parameter.
fn names(params: &Value, key: &str) -> Vec<String> {
    match params.get(key) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// `key_field` for messages: `message_id` or `source, conversation_id, message_id`.
fn key_label(params: &Value) -> String {
    names(params, "key_field").join(", ")
}

/// A row's key: the value of `key_field`, or an array of the values of its fields.
fn key_of(row: &Value, params: &Value, index: usize) -> Result<Value, String> {
    let fields = names(params, "key_field");
    let mut values = Vec::with_capacity(fields.len());
    for f in &fields {
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

// ---------------------------------------------------------------- checks

fn deterministic(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let runs = params.get("runs").and_then(Value::as_u64).unwrap_or(3);
    let first = probe.call()?;
    let first_data = serde_json::to_string(&first.data).map_err(|e| e.to_string())?;
    for run in 2..=runs {
        let again = probe.call()?;
        let data = serde_json::to_string(&again.data).map_err(|e| e.to_string())?;
        if data != first_data {
            return Err(format!(
                "run {run} structured output differs from run 1: {}",
                first_difference(&first_data, &data)
            ));
        }
        if again.text != first.text {
            return Err(format!(
                "run {run} text differs from run 1: {}",
                first_difference(&first.text, &again.text)
            ));
        }
    }
    if !p_bool(params, "fresh_process", true) {
        return Ok(());
    }
    let Some(binary) = probe.binary else {
        return Err("fresh process: the `skills` binary is not known".into());
    };
    let args = serde_json::to_string(probe.args).map_err(|e| e.to_string())?;
    let mut command = std::process::Command::new(binary);
    command
        .arg("--skills-dir")
        .arg(probe.skills_dir)
        .arg("--data-dir")
        .arg(probe.data_dir)
        .args(["--json", "run", probe.skill.name(), "--args-json", &args]);
    // The fresh process sees the case's clock and model, never the caller's.
    match probe.now {
        Some(now) => command.env("SKILLS_NOW", now),
        None => command.env_remove("SKILLS_NOW"),
    };
    match probe.embedder {
        EmbedderChoice::None => command.env("SKILLS_EMBEDDER", "none"),
        EmbedderChoice::Auto | EmbedderChoice::Required => command.env_remove("SKILLS_EMBEDDER"),
    };
    let output = command
        .output()
        .map_err(|e| format!("fresh process: cannot run `{}`: {e}", binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "fresh process: `skills run` exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let fresh: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("fresh process: output is not JSON: {e}"))?;
    let data = serde_json::to_string(&fresh["data"]).map_err(|e| e.to_string())?;
    if data != first_data {
        return Err(format!(
            "fresh process structured output differs: {}",
            first_difference(&first_data, &data)
        ));
    }
    let text = fresh["text"].as_str().unwrap_or("");
    if text != first.text {
        return Err(format!(
            "fresh process text differs: {}",
            first_difference(&first.text, text)
        ));
    }
    Ok(())
}

fn every_row_has(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let name = p_str(params, "field", "");
    let (_, rows) = output_rows(probe, params)?;
    for (i, row) in rows.iter().enumerate() {
        if is_empty(field(row, name)) {
            return Err(format!(
                "row {} of {} has no `{name}`: {}",
                i + 1,
                rows.len(),
                show(row)
            ));
        }
    }
    Ok(())
}

fn field_equals(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let name = p_str(params, "field", "");
    let expected = match (
        params.get("value"),
        params.get("arg").and_then(Value::as_str),
    ) {
        (Some(v), _) => v.clone(),
        (None, Some(arg)) => match probe.args.get(arg) {
            Some(v) if !v.is_null() => v.clone(),
            _ => return Err(format!("the case sets no value for argument `{arg}`")),
        },
        (None, None) => return Err("give `value` or `arg`".into()),
    };
    let (_, rows) = output_rows(probe, params)?;
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

fn some_row_contains(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let name = p_str(params, "field", "");
    let (_, rows) = output_rows(probe, params)?;
    for needle in params
        .get("contains")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let needle = needle.as_str().unwrap_or("");
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

fn ordered_by(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let mut keys = vec![(
        p_str(params, "field", "").to_owned(),
        p_str(params, "direction", "asc") == "desc",
    )];
    for k in params
        .get("then")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        keys.push((
            p_str(k, "field", "").to_owned(),
            p_str(k, "direction", "asc") == "desc",
        ));
    }
    let (_, rows) = output_rows(probe, params)?;
    for (i, pair) in rows.windows(2).enumerate() {
        for (name, desc) in &keys {
            let (a, b) = (field(&pair[0], name), field(&pair[1], name));
            let ord = if *desc { compare(b, a) } else { compare(a, b) };
            match ord {
                Ordering::Less => break,
                Ordering::Equal => {}
                Ordering::Greater => {
                    return Err(format!(
                        "row {} (`{name}` = {}) is out of {} order after row {} (`{name}` = {})",
                        i + 2,
                        show(b),
                        if *desc { "descending" } else { "ascending" },
                        i + 1,
                        show(a)
                    ));
                }
            }
        }
    }
    Ok(())
}

fn row_count(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let out = probe.call()?;
    let mut p = params.clone();
    if let Some(map) = p.as_object_mut() {
        map.insert("allow_empty".into(), Value::Bool(true));
    }
    let n = rows(&out.data, &p)?.len() as u64;
    if let Some(min) = params.get("min").and_then(Value::as_u64) {
        if n < min {
            return Err(format!("{n} rows, expected at least {min}"));
        }
    }
    if let Some(max) = params.get("max").and_then(Value::as_u64) {
        if n > max {
            return Err(format!("{n} rows, expected at most {max}"));
        }
    }
    if let Some(arg) = params.get("max_arg").and_then(Value::as_str) {
        let max = out
            .args
            .get(arg)
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

fn text_equals(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let out = probe.call()?;
    let mut env = render::environment();
    env.add_template("expected", p_str(params, "template", ""))
        .map_err(|e| format!("`template` does not parse: {e}"))?;
    let expected = render::render(&env, "expected", &out.data, &out.args)
        .map_err(|e| format!("`template` failed: {e}"))?;
    if out.text != expected {
        return Err(format!(
            "text is {:?}, expected {:?}",
            show(&Value::String(out.text.clone())),
            expected
        ));
    }
    Ok(())
}

/// Splits a markdown table line into cells: `|` preceded by a backslash is text.
fn cells(line: &str) -> usize {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner
        .strip_suffix('|')
        .filter(|s| !s.ends_with('\\'))
        .unwrap_or(inner);
    let mut n = 1;
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '\\' => escaped = !escaped,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
        if c != '\\' {
            escaped = false;
        }
    }
    n
}

fn text_rows_intact(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let columns = params.get("columns").and_then(Value::as_u64).unwrap_or(1) as usize;
    let header = params
        .get("header_lines")
        .and_then(Value::as_u64)
        .unwrap_or(2) as usize;
    let (out, rows) = output_rows(probe, params)?;
    let lines: Vec<&str> = out.text.lines().collect();
    let first = lines.iter().position(|l| l.trim_start().starts_with('|'));
    let Some(first) = first else {
        return Err("the rendered text has no table".into());
    };
    let expected = header + rows.len();
    for (i, line) in lines[first..].iter().enumerate() {
        if i >= expected {
            return Err(format!(
                "text line {} is past the table's {expected} lines ({header} header + {} rows): {line:?}",
                first + i + 1,
                rows.len()
            ));
        }
        if !line.trim_start().starts_with('|') {
            return Err(format!(
                "text line {} breaks the table (table row {}): {line:?}",
                first + i + 1,
                i + 1
            ));
        }
        let n = cells(line);
        if n != columns {
            return Err(format!(
                "text line {} has {n} cells, expected {columns}: {line:?}",
                first + i + 1
            ));
        }
    }
    if lines.len() - first < expected {
        return Err(format!(
            "the table has {} lines, expected {expected} ({header} header + {} rows)",
            lines.len() - first,
            rows.len()
        ));
    }
    Ok(())
}

fn output_schema(probe: &Probe<'_>, _params: &Value) -> Result<(), String> {
    let schema = probe
        .skill
        .meta
        .output_schema
        .as_ref()
        .ok_or_else(|| format!("skill `{}` declares no `output-schema`", probe.skill.name()))?;
    let validator = jsonschema::draft202012::new(schema)
        .map_err(|e| format!("`output-schema` does not compile: {e}"))?;
    let out = probe.call()?;
    if let Some(e) = validator.iter_errors(&out.data).next() {
        let at = e.instance_path().to_string();
        return Err(format!("output at `{at}`: {e}"));
    }
    Ok(())
}

fn argument_error(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let name = p_str(params, "argument", "");
    match probe.host.call(probe.skill.name(), probe.args.clone()) {
        Ok(out) => Err(format!(
            "the call succeeded (data {}), expected an error naming argument `{name}`",
            show(&out.data)
        )),
        Err(CallError::InvalidArguments { errors, .. }) => {
            let Some(e) = errors.iter().find(|e| e.argument == name) else {
                let named: Vec<String> =
                    errors.iter().map(|e| format!("`{}`", e.argument)).collect();
                return Err(format!(
                    "errors name {} instead of `{name}`",
                    named.join(", ")
                ));
            };
            if let Some(part) = params.get("reason_contains").and_then(Value::as_str) {
                if !e.reason.contains(part) {
                    return Err(format!(
                        "the error for `{name}` says {:?}, expected it to contain {part:?}",
                        e.reason
                    ));
                }
            }
            Ok(())
        }
        Err(other) => Err(format!(
            "expected invalid arguments naming `{name}`, got: {other}"
        )),
    }
}

fn lookup(
    probe: &Probe<'_>,
    params: &Value,
    select: &str,
    key: &Value,
    args: &Value,
) -> Result<Vec<Vec<Value>>, String> {
    let mut columns = names(params, "key_column");
    let mut bound = match key {
        Value::Array(parts) if columns.len() > 1 => parts.clone(),
        other => vec![other.clone()],
    };
    if bound.len() != columns.len() {
        return Err(format!(
            "`key_column` has {} columns, `key_field` {} fields",
            columns.len(),
            bound.len()
        ));
    }
    if let Some(extra) = params.get("arg_columns").and_then(Value::as_object) {
        for (column, arg) in extra {
            let arg = arg.as_str().unwrap_or("");
            let value = args
                .get(arg)
                .cloned()
                .ok_or_else(|| format!("`arg_columns` names unknown argument `{arg}`"))?;
            columns.push(column.clone());
            bound.push(value);
        }
    }
    let sql = format!(
        "SELECT {select} FROM {} WHERE {}",
        p_str(params, "table", ""),
        columns
            .iter()
            .map(|c| format!("{c} = ?"))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    probe.query(p_str(params, "store", "conversations"), &sql, &bound)
}

fn prefix_of_store_field(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let name = p_str(params, "field", "");
    let column = p_str(params, "column", "");
    let key_field = key_label(params);
    let (out, rows) = output_rows(probe, params)?;
    let chars = match params.get("chars_arg").and_then(Value::as_str) {
        Some(arg) => out
            .args
            .get(arg)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("argument `{arg}` is not a count"))?,
        None => params.get("chars").and_then(Value::as_u64).unwrap_or(0),
    } as usize;
    for (i, row) in rows.iter().enumerate() {
        let key = key_of(row, params, i)?;
        let found = lookup(probe, params, column, &key, &out.args)?;
        let [record] = found.as_slice() else {
            return Err(format!(
                "row {} (`{key_field}` = {}): {} store records match, expected 1",
                i + 1,
                show(&key),
                found.len()
            ));
        };
        let source = record.first().and_then(Value::as_str).unwrap_or("");
        let cut = source.chars().count() > chars;
        let mut expected: String = source.chars().take(chars).collect();
        if cut {
            expected.push_str(p_str(params, "ellipsis", ""));
        }
        let actual = field(row, name).as_str().unwrap_or("");
        if let Some(mark) = params.get("mark_field").and_then(Value::as_str) {
            let marked = field(row, mark);
            let ok = if cut {
                marked == &Value::Bool(true)
            } else {
                marked.is_null()
            };
            if !ok {
                return Err(format!(
                    "row {} (`{key_field}` = {}): the store value has {} characters, limit {chars}, so `{mark}` should be {}, found {}",
                    i + 1,
                    show(&key),
                    source.chars().count(),
                    if cut { "true" } else { "absent" },
                    row.get(mark).map_or("nothing".into(), show)
                ));
            }
        }
        if actual != expected {
            return Err(format!(
                "row {} (`{key_field}` = {}): `{name}` is not the first {chars} characters of `{column}` ({} vs {} characters): {}",
                i + 1,
                show(&key),
                actual.chars().count(),
                expected.chars().count(),
                first_difference(actual, &expected)
            ));
        }
    }
    Ok(())
}

fn store_predicate(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let predicate = p_str(params, "predicate", "");
    let some = p_str(params, "quantifier", "every") == "some";
    let key_field = key_label(params);
    let (out, rows) = output_rows(probe, params)?;
    for (i, row) in rows.iter().enumerate() {
        let key = key_of(row, params, i)?;
        let found = lookup(
            probe,
            params,
            &format!("({predicate}) IS TRUE"),
            &key,
            &out.args,
        )?;
        let holds = match found.as_slice() {
            [record] => {
                record.first() == Some(&Value::Bool(true)) || record.first() == Some(&json!(1))
            }
            _ => {
                return Err(format!(
                    "row {} (`{key_field}` = {}): {} store records match, expected 1",
                    i + 1,
                    show(&key),
                    found.len()
                ));
            }
        };
        if some && holds {
            return Ok(());
        }
        if !some && !holds {
            return Err(format!(
                "row {} (`{key_field}` = {}) does not satisfy `{predicate}`: {}",
                i + 1,
                show(&key),
                show(row)
            ));
        }
    }
    if some {
        return Err(format!(
            "none of the {} rows satisfies `{predicate}`, so the case does not exercise it",
            rows.len()
        ));
    }
    Ok(())
}

fn rows_match_sql(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let key_field = key_label(params);
    let out = probe.call()?;
    let mut p = params.clone();
    if let Some(map) = p.as_object_mut() {
        map.entry("allow_empty").or_insert(Value::Bool(false));
    }
    let rows = rows(&out.data, &p)?;
    let mut bound = Vec::new();
    for name in params
        .get("arg_params")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let name = name.as_str().unwrap_or("");
        bound.push(
            out.args
                .get(name)
                .cloned()
                .ok_or_else(|| format!("`arg_params` names unknown argument `{name}`"))?,
        );
    }
    let reference = probe.query(
        p_str(params, "store", "conversations"),
        p_str(params, "sql", ""),
        &bound,
    )?;
    let width = names(params, "key_field").len();
    let expected: Vec<Value> = reference
        .into_iter()
        .map(|r| {
            if width == 1 {
                r.into_iter().next().unwrap_or(Value::Null)
            } else {
                Value::Array(r.into_iter().take(width).collect())
            }
        })
        .collect();
    let actual = rows
        .iter()
        .enumerate()
        .map(|(i, r)| key_of(r, params, i))
        .collect::<Result<Vec<_>, _>>()?;
    if p_bool(params, "ordered", false) {
        if let Some(i) =
            (0..expected.len().max(actual.len())).find(|&i| expected.get(i) != actual.get(i))
        {
            return Err(format!(
                "row {} has `{key_field}` {}, the reference query has {} ({} rows vs {} expected)",
                i + 1,
                actual.get(i).map_or("nothing".into(), show),
                expected.get(i).map_or("nothing".into(), show),
                actual.len(),
                expected.len()
            ));
        }
        return Ok(());
    }
    if let Some(missing) = expected.iter().find(|k| !actual.contains(k)) {
        return Err(format!(
            "`{key_field}` {} is in the reference query but not in the output ({} rows vs {} expected)",
            show(missing),
            actual.len(),
            expected.len()
        ));
    }
    if let Some(extra) = actual.iter().find(|k| !expected.contains(k)) {
        return Err(format!(
            "`{key_field}` {} is in the output but not in the reference query ({} rows vs {} expected)",
            show(extra),
            actual.len(),
            expected.len()
        ));
    }
    if actual.len() != expected.len() {
        return Err(format!(
            "{} rows, the reference query has {} (duplicates)",
            actual.len(),
            expected.len()
        ));
    }
    Ok(())
}

fn value_at(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let pointer = p_str(params, "pointer", "");
    let out = probe.call()?;
    let found = out.data.pointer(pointer);
    if params.get("absent").is_some() {
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
    if let Some(expected) = params.get("equals") {
        if !same_value(value, expected) {
            return Err(format!(
                "`{pointer}` is {}, expected {}",
                show(value),
                show(expected)
            ));
        }
    }
    for needle in params
        .get("contains")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let needle = needle.as_str().unwrap_or("");
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

/// JSON equality where numbers compare by value (`60` equals `60.0`).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn every_row_satisfies(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let source = p_str(params, "expression", "");
    let env = render::environment();
    let expr = env
        .compile_expression(source)
        .map_err(|e| format!("`expression` does not parse: {e}"))?;
    let (out, rows) = output_rows(probe, params)?;
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
        if !result.is_true() {
            return Err(format!(
                "row {} of {} does not satisfy `{source}`: {}",
                i + 1,
                rows.len(),
                show(row)
            ));
        }
    }
    Ok(())
}

/// Removes the value at a JSON pointer (missing values are fine).
fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>() {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        _ => {}
    }
}

fn same_as(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let mut other = probe.args.clone();
    let Some(map) = other.as_object_mut() else {
        return Err("the case's arguments are not an object".into());
    };
    for name in names(params, "without") {
        map.remove(&name);
    }
    if let Some(with) = params.get("with").and_then(Value::as_object) {
        for (k, v) in with {
            map.insert(k.clone(), v.clone());
        }
    }
    let mut mine = probe.call()?.data;
    let mut theirs = probe
        .call_with(&other)
        .map_err(|e| format!("reference call with {}: {e}", show(&other)))?
        .data;
    for pointer in names(params, "ignore") {
        remove_pointer(&mut mine, &pointer);
        remove_pointer(&mut theirs, &pointer);
    }
    let a = serde_json::to_string(&mine).map_err(|e| e.to_string())?;
    let b = serde_json::to_string(&theirs).map_err(|e| e.to_string())?;
    if a != b {
        return Err(format!(
            "the output differs from the output with arguments {}: {}",
            show(&other),
            first_difference(&a, &b)
        ));
    }
    Ok(())
}

fn error_contains(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let message = match probe.host.call(probe.skill.name(), probe.args.clone()) {
        Ok(out) => {
            return Err(format!(
                "the call succeeded (data {}), expected an error",
                show(&out.data)
            ))
        }
        Err(e) => e.to_string(),
    };
    for needle in params
        .get("contains")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let needle = needle.as_str().unwrap_or("");
        if !message.contains(needle) {
            return Err(format!("the error {message:?} does not contain {needle:?}"));
        }
    }
    Ok(())
}

fn store_ordered_by(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let expression = p_str(params, "expression", "");
    let desc = p_str(params, "direction", "asc") == "desc";
    let key_field = key_label(params);
    let (out, rows) = output_rows(probe, params)?;
    let mut values = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let key = key_of(row, params, i)?;
        let found = lookup(probe, params, &format!("({expression})"), &key, &out.args)?;
        let [record] = found.as_slice() else {
            return Err(format!(
                "row {} (`{key_field}` = {}): {} store records match, expected 1",
                i + 1,
                show(&key),
                found.len()
            ));
        };
        values.push((key, record.first().cloned().unwrap_or(Value::Null)));
    }
    for (i, pair) in values.windows(2).enumerate() {
        let ord = compare(&pair[0].1, &pair[1].1);
        let wrong = if desc {
            ord == Ordering::Less
        } else {
            ord == Ordering::Greater
        };
        if wrong {
            return Err(format!(
                "row {} (`{key_field}` = {}, `{expression}` = {}) is out of {} order after row {} (`{key_field}` = {}, {})",
                i + 2,
                show(&pair[1].0),
                show(&pair[1].1),
                if desc { "descending" } else { "ascending" },
                i + 1,
                show(&pair[0].0),
                show(&pair[0].1)
            ));
        }
    }
    if let Some(first) = values.first() {
        if values.iter().all(|(_, v)| v == &first.1) {
            return Err(format!(
                "every row has `{expression}` = {}, so the case does not exercise the order",
                show(&first.1)
            ));
        }
    }
    Ok(())
}

/// Every file beside `path` whose name starts with its file name (the file itself,
/// `-journal`, `-wal`, `-shm`, `.wal`…), with a SHA-256 of its bytes.
fn store_files(path: &Path) -> Result<Vec<(String, String)>, String> {
    use sha2::{Digest, Sha256};
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("`{}` has no file name", path.display()))?;
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        let file = entry.file_name().to_string_lossy().into_owned();
        if !file.starts_with(name) {
            continue;
        }
        let bytes = fs_err::read(entry.path()).map_err(|e| e.to_string())?;
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        out.push((file, format!("{} bytes, sha256 {digest}", bytes.len())));
    }
    out.sort();
    Ok(out)
}

fn store_unchanged(probe: &Probe<'_>, params: &Value) -> Result<(), String> {
    let path = probe.store_path(p_str(params, "store", "conversations"))?;
    if !path.is_file() {
        return Err(format!(
            "store `{}` was not built for this corpus",
            path.display()
        ));
    }
    let runs = params.get("runs").and_then(Value::as_u64).unwrap_or(3);
    let before = store_files(&path)?;
    for _ in 0..runs {
        probe.call()?;
    }
    let after = store_files(&path)?;
    if before != after {
        let changed = after
            .iter()
            .find(|f| !before.contains(f))
            .or_else(|| before.iter().find(|f| !after.contains(f)));
        return Err(match changed {
            Some((file, what))
                if before.iter().any(|(b, _)| b == file)
                    && after.iter().any(|(a, _)| a == file) =>
            {
                format!("`{file}` changed: now {what}")
            }
            Some((file, _)) if after.iter().any(|(a, _)| a == file) => format!("`{file}` appeared"),
            Some((file, _)) => format!("`{file}` disappeared"),
            None => "the store files changed".into(),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------- store access

fn query_duckdb(host: &Host, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
    use duckdb::types::Value as D;
    let store = host.context().conversations().map_err(|e| e.to_string())?;
    let conn = store.connection().map_err(|e| e.to_string())?;
    let mut stmt = conn.prepare(sql).map_err(|e| format!("SQL `{sql}`: {e}"))?;
    let bound: Vec<D> = params
        .iter()
        .map(|v| match v {
            Value::Null => D::Null,
            Value::Bool(b) => D::Boolean(*b),
            Value::Number(n) => n
                .as_i64()
                .map_or_else(|| D::Double(n.as_f64().unwrap_or(0.0)), D::BigInt),
            Value::String(s) => D::Text(s.clone()),
            other => D::Text(other.to_string()),
        })
        .collect();
    let mut rows = stmt
        .query(duckdb::params_from_iter(bound))
        .map_err(|e| format!("SQL `{sql}`: {e}"))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| format!("SQL `{sql}`: {e}"))? {
        let n = row.as_ref().column_count();
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            let v: D = row.get(i).map_err(|e| format!("SQL `{sql}`: {e}"))?;
            values.push(match v {
                D::Null => Value::Null,
                D::Boolean(b) => Value::Bool(b),
                D::TinyInt(x) => json!(x),
                D::SmallInt(x) => json!(x),
                D::Int(x) => json!(x),
                D::BigInt(x) => json!(x),
                D::HugeInt(x) => json!(x.to_string()),
                D::UTinyInt(x) => json!(x),
                D::USmallInt(x) => json!(x),
                D::UInt(x) => json!(x),
                D::UBigInt(x) => json!(x),
                D::Float(x) => json!(x),
                D::Double(x) => json!(x),
                D::Text(s) => Value::String(s),
                other => Value::String(format!("{other:?}")),
            });
        }
        out.push(values);
    }
    Ok(out)
}

fn query_sqlite(path: &Path, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
    use rusqlite::types::Value as S;
    let conn = crate::stores::memories::query_connection(path).map_err(|e| match e {
        StoreError::Missing { .. } => {
            format!("store `{}` was not built for this corpus", path.display())
        }
        StoreError::Sqlite { source, .. } => format!("`{}`: {source}", path.display()),
        other => format!("`{}`: {other}", path.display()),
    })?;
    let mut stmt = conn.prepare(sql).map_err(|e| format!("SQL `{sql}`: {e}"))?;
    let n = stmt.column_count();
    let bound: Vec<S> = params
        .iter()
        .map(|v| match v {
            Value::Null => S::Null,
            Value::Bool(b) => S::Integer(i64::from(*b)),
            Value::Number(n) => n
                .as_i64()
                .map_or_else(|| S::Real(n.as_f64().unwrap_or(0.0)), S::Integer),
            Value::String(s) => S::Text(s.clone()),
            other => S::Text(other.to_string()),
        })
        .collect();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(bound), |row| {
            (0..n)
                .map(|i| {
                    row.get::<_, S>(i).map(|v| match v {
                        S::Null => Value::Null,
                        S::Integer(x) => json!(x),
                        S::Real(x) => json!(x),
                        S::Text(s) => Value::String(s),
                        S::Blob(b) => json!(format!("<{} bytes>", b.len())),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| format!("SQL `{sql}`: {e}"))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("SQL `{sql}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_param_schema_compiles() {
        for check in vocabulary() {
            let schema = check.params_schema().unwrap();
            jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{}: {e}", check.id));
        }
    }

    #[test]
    fn bad_params_are_named() {
        let check = find("ordered_by").unwrap();
        let err = check
            .validate(&json!({"field": "created", "direction": "up"}))
            .unwrap_err();
        assert!(err.starts_with("`/direction`:"), "{err}");
        assert!(check
            .validate(&json!({"field": "created", "direction": "desc"}))
            .is_ok());
    }

    #[test]
    fn table_cells_respect_escaped_pipes() {
        assert_eq!(cells("| a | b \\| c | d |"), 3);
        assert_eq!(cells("|---|---|"), 2);
        assert_eq!(cells("| a\\\\| b |"), 2);
    }

    #[test]
    fn pointers_are_removed_and_numbers_compare_by_value() {
        let mut v = json!({"note": "x", "hits": [{"a": 1}, {"a": 2}], "a/b": 3});
        remove_pointer(&mut v, "/note");
        remove_pointer(&mut v, "/hits/0");
        remove_pointer(&mut v, "/a~1b");
        remove_pointer(&mut v, "/missing/deeper");
        assert_eq!(v, json!({"hits": [{"a": 2}]}));
        assert!(same_value(&json!(60), &json!(60.0)));
        assert!(!same_value(&json!("60"), &json!(60)));
    }

    #[test]
    fn difference_points_at_first_change() {
        assert!(first_difference("abcdef", "abcXef").starts_with("first difference at character 3"));
    }
}
