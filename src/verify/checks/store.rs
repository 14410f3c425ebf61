//! Checks that compare output rows with the store records they came from (looked up
//! by key through read-only SQL), with a reference query, or with the store files.
//!
//! Kept in one file: the store family's checks share one set of key and query helpers.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::params::{string_enum_schema, Direction, Ident, Name, OneOrMany, Pointer, StoreName};
use super::util::{compare, field, first_difference, key_label, key_of, output_rows, rows, show};
use super::{Probe, TypedCheck};
use crate::host::Host;
use crate::stores::{sandbox, sql_value, StoreError};

impl Probe<'_> {
    /// The file of `store`.
    pub fn store_path(&self, store: StoreName) -> PathBuf {
        let paths = self.host.context().paths();
        match store {
            StoreName::Conversations => paths.conversations.clone(),
            StoreName::Memories => paths.memories.clone(),
        }
    }

    /// Runs `sql` on `store` with positional parameters, returning every row as a
    /// list of JSON values.
    ///
    /// # Errors
    /// Store not built, or the SQL error (naming the query).
    pub fn query(
        &self,
        store: StoreName,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, String> {
        match store {
            StoreName::Conversations => query_duckdb(self.host, sql, params),
            StoreName::Memories => query_sqlite(&self.host.context().memories_path(), sql, params),
        }
    }
}

/// How a row's store record is found: `SELECT … FROM table WHERE key_column = <the
/// row's key_field> [AND column = <argument> for arg_columns]`.
struct RecordLookup<'p> {
    store: StoreName,
    table: &'p Ident,
    key_field: &'p OneOrMany<Name>,
    key_column: &'p OneOrMany<Ident>,
    arg_columns: &'p BTreeMap<Ident, Name>,
}

impl RecordLookup<'_> {
    /// The store records of one row: `select` evaluated on each.
    fn records(
        &self,
        probe: &Probe<'_>,
        select: &str,
        key: &Value,
        args: &Value,
    ) -> Result<Vec<Vec<Value>>, String> {
        let mut columns: Vec<&str> = self.key_column.as_slice().iter().map(|c| &**c).collect();
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
        for (column, arg) in self.arg_columns {
            let value = args
                .get(&**arg)
                .cloned()
                .ok_or_else(|| format!("`arg_columns` names unknown argument `{arg}`"))?;
            columns.push(column);
            bound.push(value);
        }
        let sql = format!(
            "SELECT {select} FROM {} WHERE {}",
            &**self.table,
            columns
                .iter()
                .map(|c| format!("{c} = ?"))
                .collect::<Vec<_>>()
                .join(" AND ")
        );
        probe.query(self.store, &sql, &bound)
    }

    /// The one record of row `index`; an error naming the key when there are none or
    /// several.
    fn one_record(
        &self,
        probe: &Probe<'_>,
        select: &str,
        key: &Value,
        args: &Value,
        index: usize,
    ) -> Result<Vec<Value>, String> {
        let mut found = self.records(probe, select, key, args)?;
        if found.len() != 1 {
            return Err(format!(
                "row {} (`{}` = {}): {} store records match, expected 1",
                index + 1,
                key_label(self.key_field),
                show(key),
                found.len()
            ));
        }
        Ok(found.swap_remove(0))
    }

    /// Hands each of `rows` (a call's output rows; `args` its arguments), in order, to
    /// `visit` with its index, key and one store record (`select` evaluated on it). The
    /// first error, of a lookup or of `visit`, ends the walk; so does `visit` answering
    /// `Break`, which the walk then answers too. Every record check walks its rows here.
    fn each_record(
        &self,
        probe: &Probe<'_>,
        rows: &[Value],
        args: &Value,
        select: &str,
        mut visit: impl FnMut(usize, &Value, &Value, Vec<Value>) -> Result<ControlFlow<()>, String>,
    ) -> Result<ControlFlow<()>, String> {
        for (i, row) in rows.iter().enumerate() {
            let key = key_of(row, self.key_field, i)?;
            let record = self.one_record(probe, select, &key, args, i)?;
            if visit(i, row, &key, record)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// The parameters that find each output row's store record, shared by the record checks
/// (flattened into theirs, so the served schema lists them in place): the lookup of
/// [`RecordLookup`] plus where the rows are.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordKey {
    /// Store to query.
    #[serde(default)]
    pub store: StoreName,
    /// Table holding the records.
    pub table: Ident,
    /// Row field, or fields of a composite key.
    pub key_field: OneOrMany<Name>,
    /// Store column, or columns parallel to `key_field`.
    pub key_column: OneOrMany<Ident>,
    /// Extra lookup conditions: store column = value of argument.
    #[serde(default)]
    pub arg_columns: BTreeMap<Ident, Name>,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl RecordKey {
    /// The lookup these parameters describe.
    fn lookup(&self) -> RecordLookup<'_> {
        RecordLookup {
            store: self.store,
            table: &self.table,
            key_field: &self.key_field,
            key_column: &self.key_column,
            arg_columns: &self.arg_columns,
        }
    }
}

/// `prefix_of_store_field`.
pub struct PrefixOfStoreField;

/// Parameters of `prefix_of_store_field`: exactly one of `chars` and `chars_arg`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["chars"]}, {"required": ["chars_arg"]}]))]
pub struct PrefixOfStoreFieldParams {
    /// The row field holding the prefix.
    pub field: Name,
    /// The prefix length in characters (Unicode scalar values).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub chars: Option<u64>,
    /// Take the count from this argument.
    #[serde(default)]
    #[schemars(with = "Name")]
    pub chars_arg: Option<Name>,
    /// Appended to the prefix when the store value is longer than the count.
    #[serde(default)]
    pub ellipsis: String,
    /// Row field that is `true` when the value was cut and absent when it was not.
    #[serde(default)]
    #[schemars(with = "Name")]
    pub mark_field: Option<Name>,
    /// Store to query.
    #[serde(default)]
    pub store: StoreName,
    /// Table holding the records.
    pub table: Ident,
    /// Store column the prefix is taken from.
    pub column: Ident,
    /// Row field, or fields of a composite key.
    pub key_field: OneOrMany<Name>,
    /// Store column, or columns parallel to `key_field`.
    pub key_column: OneOrMany<Ident>,
    /// Extra lookup conditions: store column = value of argument.
    #[serde(default)]
    pub arg_columns: BTreeMap<Ident, Name>,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for PrefixOfStoreField {
    const ID: &'static str = "prefix_of_store_field";
    const SUMMARY: &'static str = "each row's `field` is the first `chars` characters (Unicode scalar values) of store column `column`, looked up by key (plus `ellipsis` and `mark_field: true` when cut)";
    type Params = PrefixOfStoreFieldParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let lookup = RecordLookup {
            store: p.store,
            table: &p.table,
            key_field: &p.key_field,
            key_column: &p.key_column,
            arg_columns: &p.arg_columns,
        };
        let (name, column, key_field) = (&p.field, &*p.column, key_label(&p.key_field));
        let (out, rows) = output_rows(probe, &p.rows, p.allow_empty)?;
        let chars = match &p.chars_arg {
            Some(arg) => out
                .args
                .get(&**arg)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("argument `{arg}` is not a count"))?,
            None => p.chars.unwrap_or(0),
        };
        let chars = usize::try_from(chars).unwrap_or(usize::MAX);
        // The visitor never breaks: every row is checked.
        let _ = lookup.each_record(probe, &rows, &out.args, column, |i, row, key, record| {
            let source = record.first().and_then(Value::as_str).unwrap_or("");
            let cut = source.chars().count() > chars;
            let mut expected: String = source.chars().take(chars).collect();
            if cut {
                expected.push_str(&p.ellipsis);
            }
            let actual = field(row, name).as_str().unwrap_or("");
            if let Some(mark) = &p.mark_field {
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
                        show(key),
                        source.chars().count(),
                        if cut { "true" } else { "absent" },
                        row.get(&**mark).map_or("nothing".into(), show)
                    ));
                }
            }
            if actual != expected {
                return Err(format!(
                    "row {} (`{key_field}` = {}): `{name}` is not the first {chars} characters of `{column}` ({} vs {} characters): {}",
                    i + 1,
                    show(key),
                    actual.chars().count(),
                    expected.chars().count(),
                    first_difference(actual, &expected)
                ));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(())
    }
}

/// Whether every row or at least one must satisfy a predicate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Quantifier {
    /// Every row.
    #[default]
    Every,
    /// At least one row (the case exercises the predicate).
    Some,
}

string_enum_schema!(Quantifier, "every", "some");

/// `store_predicate`.
pub struct StorePredicate;

/// Parameters of `store_predicate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StorePredicateParams {
    /// An SQL boolean expression over the record's columns.
    pub predicate: Name,
    /// Whether every row or at least one must satisfy it.
    #[serde(default)]
    pub quantifier: Quantifier,
    /// How each row's store record is found.
    #[serde(flatten)]
    pub record: RecordKey,
}

impl TypedCheck for StorePredicate {
    const ID: &'static str = "store_predicate";
    const SUMMARY: &'static str = "every (or, with `quantifier: some`, at least one) row satisfies an SQL predicate on its store record, looked up by key";
    type Params = StorePredicateParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let predicate: &str = &p.predicate;
        let some = p.quantifier == Quantifier::Some;
        let key_field = key_label(&p.record.key_field);
        let select = format!("({predicate}) IS TRUE");
        let (out, rows) = output_rows(probe, &p.record.rows, p.record.allow_empty)?;
        let walk = p.record.lookup().each_record(
            probe,
            &rows,
            &out.args,
            &select,
            |i, row, key, record| {
                let holds =
                    record.first() == Some(&Value::Bool(true)) || record.first() == Some(&json!(1));
                if some && holds {
                    return Ok(ControlFlow::Break(()));
                }
                if !some && !holds {
                    return Err(format!(
                        "row {} (`{key_field}` = {}) does not satisfy `{predicate}`: {}",
                        i + 1,
                        show(key),
                        show(row)
                    ));
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;
        if walk.is_break() {
            return Ok(());
        }
        if some {
            return Err(format!(
                "none of the {} rows satisfies `{predicate}`, so the case does not exercise it",
                rows.len()
            ));
        }
        Ok(())
    }
}

/// `rows_match_sql`.
pub struct RowsMatchSql;

/// Parameters of `rows_match_sql`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowsMatchSqlParams {
    /// The reference query; its first column(s) are the expected keys.
    pub sql: Name,
    /// Row field, or fields of a composite key.
    pub key_field: OneOrMany<Name>,
    /// Arguments bound to the query's `?` in order.
    #[serde(default)]
    pub arg_params: Vec<String>,
    /// Compare in order instead of as sets.
    #[serde(default)]
    pub ordered: bool,
    /// Store to query.
    #[serde(default)]
    pub store: StoreName,
    /// JSON pointer to the row array in the structured output.
    #[serde(default = "Pointer::rows")]
    pub rows: Pointer,
    /// Pass on an empty row list.
    #[serde(default)]
    pub allow_empty: bool,
}

impl TypedCheck for RowsMatchSql {
    const ID: &'static str = "rows_match_sql";
    const SUMMARY: &'static str = "the rows' keys equal the first column(s) of a reference SQL query (as a set, or in order with `ordered: true`)";
    type Params = RowsMatchSqlParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let key_field = key_label(&p.key_field);
        let out = probe.call()?;
        let rows = rows(&out.data, &p.rows, p.allow_empty)?;
        let mut bound = Vec::new();
        for name in &p.arg_params {
            bound.push(
                out.args
                    .get(name)
                    .cloned()
                    .ok_or_else(|| format!("`arg_params` names unknown argument `{name}`"))?,
            );
        }
        let reference = probe.query(p.store, &p.sql, &bound)?;
        let width = p.key_field.as_slice().len();
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
            .map(|(i, r)| key_of(r, &p.key_field, i))
            .collect::<Result<Vec<_>, _>>()?;
        let counts = format!("{} rows vs {} expected", actual.len(), expected.len());
        if p.ordered {
            if let Some(i) =
                (0..expected.len().max(actual.len())).find(|&i| expected.get(i) != actual.get(i))
            {
                return Err(format!(
                    "row {} has `{key_field}` {}, the reference query has {} ({counts})",
                    i + 1,
                    actual.get(i).map_or("nothing".into(), show),
                    expected.get(i).map_or("nothing".into(), show),
                ));
            }
            return Ok(());
        }
        if let Some(missing) = expected.iter().find(|k| !actual.contains(k)) {
            return Err(format!(
                "`{key_field}` {} is in the reference query but not in the output ({counts})",
                show(missing)
            ));
        }
        if let Some(extra) = actual.iter().find(|k| !expected.contains(k)) {
            return Err(format!(
                "`{key_field}` {} is in the output but not in the reference query ({counts})",
                show(extra)
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
}

/// `store_ordered_by`.
pub struct StoreOrderedBy;

/// Parameters of `store_ordered_by`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreOrderedByParams {
    /// An SQL expression over the record's columns that rows are sorted by.
    pub expression: Name,
    /// The sort direction.
    pub direction: Direction,
    /// How each row's store record is found.
    #[serde(flatten)]
    pub record: RecordKey,
}

impl TypedCheck for StoreOrderedBy {
    const ID: &'static str = "store_ordered_by";
    const SUMMARY: &'static str = "rows are sorted by an SQL expression over their store record (looked up by key), and it takes at least two values so the order is exercised";
    type Params = StoreOrderedByParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let expression: &str = &p.expression;
        let key_field = key_label(&p.record.key_field);
        let select = format!("({expression})");
        let (out, rows) = output_rows(probe, &p.record.rows, p.record.allow_empty)?;
        let mut values = Vec::with_capacity(rows.len());
        // The visitor never breaks: every row's value is read.
        let _ = p.record.lookup().each_record(
            probe,
            &rows,
            &out.args,
            &select,
            |_, _, key, record| {
                values.push((
                    key.clone(),
                    record.into_iter().next().unwrap_or(Value::Null),
                ));
                Ok(ControlFlow::Continue(()))
            },
        )?;
        for (i, pair) in values.windows(2).enumerate() {
            let ord = compare(&pair[0].1, &pair[1].1);
            let wrong = match p.direction {
                Direction::Desc => ord == std::cmp::Ordering::Less,
                Direction::Asc => ord == std::cmp::Ordering::Greater,
            };
            if wrong {
                return Err(format!(
                    "row {} (`{key_field}` = {}, `{expression}` = {}) is out of {} order after row {} (`{key_field}` = {}, {})",
                    i + 2,
                    show(&pair[1].0),
                    show(&pair[1].1),
                    p.direction.word(),
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
}

/// `store_unchanged`.
pub struct StoreUnchanged;

/// Parameters of `store_unchanged`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreUnchangedParams {
    /// The store whose files must not change.
    pub store: StoreName,
    /// Calls made between the two snapshots.
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 20))]
    pub runs: u64,
}

fn three() -> u64 {
    3
}

impl TypedCheck for StoreUnchanged {
    const ID: &'static str = "store_unchanged";
    const SUMMARY: &'static str = "the store file is byte-identical (and no journal, WAL or other file appears beside it) after running the case `runs` times";
    type Params = StoreUnchangedParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let path = probe.store_path(p.store);
        if !path.is_file() {
            return Err(format!(
                "store `{}` was not built for this corpus",
                path.display()
            ));
        }
        let before = store_files(&path)?;
        for _ in 0..p.runs {
            probe.call()?;
        }
        let after = store_files(&path)?;
        if before == after {
            return Ok(());
        }
        let changed = after
            .iter()
            .find(|f| !before.contains(f))
            .or_else(|| before.iter().find(|f| !after.contains(f)));
        Err(match changed {
            Some((file, what))
                if before.iter().any(|(b, _)| b == file)
                    && after.iter().any(|(a, _)| a == file) =>
            {
                format!("`{file}` changed: now {what}")
            }
            Some((file, _)) if after.iter().any(|(a, _)| a == file) => format!("`{file}` appeared"),
            Some((file, _)) => format!("`{file}` disappeared"),
            None => "the store files changed".into(),
        })
    }
}

/// Every file beside `path` whose name starts with its file name (the file itself,
/// `-journal`, `-wal`, `-shm`, `.wal`…), with its size and a SHA-256 of its bytes.
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
        let digest = hex::encode(Sha256::digest(&bytes));
        out.push((file, format!("{} bytes, sha256 {digest}", bytes.len())));
    }
    out.sort();
    Ok(out)
}

// ---------------------------------------------------------------- store access

/// `sql` on the conversations store, through the read-only store the engines share
/// ([`crate::engines::Context::conversations`], opened with `ConversationStore::open_ro`).
fn query_duckdb(host: &Host, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
    let store = host.context().conversations().map_err(|e| e.to_string())?;
    let conn = store.connection().map_err(|e| e.to_string())?;
    let refused = |e: sandbox::SandboxError| format!("SQL `{sql}`: {e}");
    sandbox::require_select(sql).map_err(refused)?;
    let sql_error = |e: duckdb::Error| match sandbox::refusal(&e.to_string()) {
        Some(r) => refused(r),
        None => format!("SQL `{sql}`: {e}"),
    };
    let mut stmt = sandbox::prepare_duckdb(&conn, sql).map_err(|e| match e {
        sandbox::PrepareError::Sandbox(e) => refused(e),
        sandbox::PrepareError::Db(e) => sql_error(e),
    })?;
    let bound: Vec<duckdb::types::Value> = params.iter().map(sql_value::to_duckdb).collect();
    let mut rows = stmt
        .query(duckdb::params_from_iter(bound))
        .map_err(sql_error)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(sql_error)? {
        let values = (0..row.as_ref().column_count())
            .map(|i| {
                row.get::<_, duckdb::types::Value>(i)
                    .map(sql_value::from_duckdb)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql_error)?;
        out.push(values);
    }
    Ok(out)
}

/// `sql` on the memories file, through the read-only connection the `sql` engine
/// uses ([`crate::stores::memories::query_connection`]).
fn query_sqlite(path: &Path, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
    let conn = crate::stores::memories::query_connection(path).map_err(|e| match e {
        StoreError::Missing { .. } => {
            format!("store `{}` was not built for this corpus", path.display())
        }
        StoreError::Sqlite { source, .. } => format!("`{}`: {source}", path.display()),
        other => format!("`{}`: {other}", path.display()),
    })?;
    let refused = |e: sandbox::SandboxError| format!("SQL `{sql}`: {e}");
    sandbox::require_select(sql).map_err(refused)?;
    let sql_error = |e: rusqlite::Error| match e {
        rusqlite::Error::MultipleStatement => refused(sandbox::SandboxError::SeveralStatements),
        e => format!("SQL `{sql}`: {e}"),
    };
    let mut stmt = conn.prepare(sql).map_err(sql_error)?;
    if !stmt.readonly() {
        return Err(refused(sandbox::SandboxError::NotSelect {
            keyword: sandbox::first_keyword(sql),
        }));
    }
    let n = stmt.column_count();
    let bound: Vec<rusqlite::types::Value> = params.iter().map(sql_value::to_sqlite).collect();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(bound), |row| {
            (0..n)
                .map(|i| row.get_ref(i).map(sql_value::from_sqlite))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(sql_error)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(sql_error)
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;

    #[test]
    fn lookups_need_identifiers_and_parallel_keys() {
        let check = find("store_predicate").unwrap();
        let ok = json!({"predicate": "length(body) > 280", "quantifier": "some", "store": "memories",
            "table": "memories", "key_field": "id", "key_column": "id", "rows": "/hits"});
        assert!(check.validate(&ok).is_ok());
        let mut bad = ok.clone();
        bad["table"] = json!("memories; DROP TABLE memories");
        let err = check.validate(&bad).unwrap_err();
        assert!(err.starts_with("`/table`:"), "{err}");
        let mut bad = ok.clone();
        bad["key_column"] = json!([]);
        assert!(check
            .validate(&bad)
            .unwrap_err()
            .starts_with("`/key_column`:"));
        let mut bad = ok;
        bad["store"] = json!("elsewhere");
        assert_eq!(
            check.validate(&bad).unwrap_err(),
            r#"`/store`: "elsewhere" is not one of "conversations" or "memories""#
        );
    }

    #[test]
    fn prefix_takes_chars_or_chars_arg() {
        let check = find("prefix_of_store_field").unwrap();
        let base = json!({"field": "preview", "table": "all_conversations", "column": "content",
            "key_field": ["source", "conversation_id", "message_id"],
            "key_column": ["source", "conversation_id", "message_id"]});
        let mut with_chars = base.clone();
        with_chars["chars"] = json!(200);
        assert!(check.validate(&with_chars).is_ok());
        assert!(check.validate(&base).is_err());
        let mut both = with_chars.clone();
        both["chars_arg"] = json!("body_chars");
        assert!(check.validate(&both).is_err());
        let p: PrefixOfStoreFieldParams = serde_json::from_value(with_chars).unwrap();
        assert_eq!(
            (p.store, p.ellipsis.as_str(), p.key_field.as_slice().len()),
            (StoreName::Conversations, "", 3)
        );
    }

    #[test]
    fn reference_sql_and_store_unchanged_params() {
        assert!(find("rows_match_sql")
            .unwrap()
            .validate(
                &json!({"sql": "SELECT id FROM memories", "key_field": "id", "store": "memories"})
            )
            .is_ok());
        let check = find("store_unchanged").unwrap();
        assert!(check
            .validate(&json!({"store": "memories", "runs": 3}))
            .is_ok());
        assert_eq!(
            check.validate(&json!({"runs": 3})).unwrap_err(),
            r#""store" is a required property"#
        );
    }

    #[test]
    fn store_files_lists_companions_with_digests() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("memories.sqlite");
        fs_err::write(&db, b"abc").unwrap();
        fs_err::write(tmp.path().join("memories.sqlite-wal"), b"").unwrap();
        fs_err::write(tmp.path().join("other.txt"), b"x").unwrap();
        let files = store_files(&db).unwrap();
        let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(names, ["memories.sqlite", "memories.sqlite-wal"]);
        assert!(
            files[0].1.starts_with("3 bytes, sha256 ba7816bf"),
            "{}",
            files[0].1
        );
    }
}
