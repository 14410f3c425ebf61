//! Checks on the rendered markdown: exact text, and tables that keep one line per row.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::params::Pointer;
use super::util::{output_rows, show};
use super::{Probe, TypedCheck};
use crate::host::render;

/// `text_equals`.
pub struct TextEquals;

/// Parameters of `text_equals`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextEqualsParams {
    /// A minijinja template of `args` (defaults applied) and `data`: the expected text.
    pub template: String,
}

impl TypedCheck for TextEquals {
    const ID: &'static str = "text_equals";
    const SUMMARY: &'static str =
        "the rendered text equals a minijinja template of `args` and `data`";
    type Params = TextEqualsParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let out = probe.call()?;
        let mut env = render::environment();
        env.add_template("expected", &p.template)
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
}

/// `text_rows_intact`.
pub struct TextRowsIntact;

/// Parameters of `text_rows_intact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextRowsIntactParams {
    /// Cells on every table line.
    #[schemars(range(min = 1))]
    pub columns: u64,
    /// Table lines before the first row (header and separator).
    #[serde(default = "two")]
    pub header_lines: u64,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

fn two() -> u64 {
    2
}

impl TypedCheck for TextRowsIntact {
    const ID: &'static str = "text_rows_intact";
    const SUMMARY: &'static str = "every markdown table line of the rendered text has `columns` cells, and there are `header_lines` + one line per row";
    type Params = TextRowsIntactParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let columns = usize::try_from(p.columns).unwrap_or(usize::MAX);
        let header = usize::try_from(p.header_lines).unwrap_or(usize::MAX);
        let (out, rows) = output_rows(probe, &p.rows, p.allow_empty)?;
        table_intact(&out.text, columns, header, rows.len())
    }
}

/// The body of `text_rows_intact`: the first table of `text` has `header` + `rows`
/// lines of `columns` cells each, and nothing after it breaks or extends it.
fn table_intact(text: &str, columns: usize, header: usize, rows: usize) -> Result<(), String> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| l.trim_start().starts_with('|'));
    let Some(first) = first else {
        return Err("the rendered text has no table".into());
    };
    let expected = header.saturating_add(rows);
    for (i, line) in lines[first..].iter().enumerate() {
        if i >= expected {
            return Err(format!(
                "text line {} is past the table's {expected} lines ({header} header + {rows} rows): {line:?}",
                first + i + 1,
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
            "the table has {} lines, expected {expected} ({header} header + {rows} rows)",
            lines.len() - first,
        ));
    }
    Ok(())
}

/// Counts the cells of a markdown table line: `|` preceded by a backslash is text.
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

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;
    use serde_json::json;

    #[test]
    fn table_cells_respect_escaped_pipes() {
        assert_eq!(cells("| a | b \\| c | d |"), 3);
        assert_eq!(cells("|---|---|"), 2);
        assert_eq!(cells("| a\\\\| b |"), 2);
    }

    #[test]
    fn tables_are_counted_line_by_line() {
        let table = "intro\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(table_intact(table, 2, 2, 1), Ok(()));
        let err = table_intact("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n", 2, 2, 1).unwrap_err();
        assert!(
            err.starts_with("text line 3 has 3 cells, expected 2"),
            "{err}"
        );
        let err = table_intact("| a |\n|---|\n| 1\nsplit |\n", 1, 2, 1).unwrap_err();
        assert!(
            err.starts_with("text line 4 is past the table's 3 lines"),
            "{err}"
        );
        let err = table_intact(table, 2, 2, 2).unwrap_err();
        assert!(
            err.starts_with("the table has 3 lines, expected 4"),
            "{err}"
        );
        assert_eq!(
            table_intact("none", 2, 2, 0).unwrap_err(),
            "the rendered text has no table"
        );
    }

    #[test]
    fn text_params_are_typed() {
        let check = find("text_rows_intact").unwrap();
        assert!(check.validate(&json!({"columns": 5})).is_ok());
        let err = check.validate(&json!({"columns": 0})).unwrap_err();
        assert!(err.starts_with("`/columns`:"), "{err}");
        let err = find("text_equals")
            .unwrap()
            .validate(&json!({"template": 3}))
            .unwrap_err();
        assert_eq!(err, r#"`/template`: 3 is not of type "string""#);
        let p: TextRowsIntactParams = serde_json::from_value(json!({"columns": 5})).unwrap();
        assert_eq!(p.header_lines, 2);
    }
}
