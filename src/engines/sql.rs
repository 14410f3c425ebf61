//! Engine `sql`: a drop-in skill is one parameterised, read-only query over a store.
//!
//! The skill folder holds a query file (default `query.sql`). Its *structure* may vary
//! with the arguments through minijinja control blocks (`{% if role %} AND role = $role
//! {% endif %}`), but argument *values* are only ever bound as parameters: `$name`
//! placeholders become positional `?` bindings, and `{{ … }}` output expressions are
//! refused when the skill is bound, so no argument text can reach the SQL text.
//!
//! Sandboxed ([`crate::stores::sandbox`]): the query must be one read-only `SELECT`,
//! counted by the database's own parser after it is wrapped as a sub-query
//! (`SELECT to_json(q) FROM (<query>) q LIMIT n`), so closing the wrapper's
//! parenthesis to append statements is refused before anything runs; DuckDB is opened
//! read-only with external access disabled and its configuration locked, SQLite
//! read-only with `PRAGMA query_only`. Refusals name the rule broken. A watchdog
//! interrupts a query that runs past `timeout-ms`, as does the host's per-call deadline
//! or the client leaving ([`Context::cancel`]), and at most `max-rows` rows are
//! returned.
//!
//! Frontmatter (`engine-options`): `store` (`conversations` → DuckDB table
//! `all_conversations`, `memories` → SQLite), `query` (file name, default `query.sql`),
//! `max-rows` (default 1000), `timeout-ms` (default 5000), `json-columns` (SQLite and
//! the archive: columns whose text is JSON — what `json_object`/`json_group_array`
//! return, a stored list — given back as JSON values, not strings; DuckDB returns its
//! structs and lists as JSON already), `archive-query` and `archive-only` (below).
//!
//! On the team archive (`--archive`, [`Context::archive`]) the query runs on
//! PostgreSQL: `archive-query` names its PostgreSQL twin (a file written like the
//! query, same rules, giving the same rows), run in the database's own sandbox
//! ([`crate::archive::sql`]: a `READ ONLY` transaction as a role that may read only the
//! store's view — `all_conversations` for `conversations`, `all_memories` for
//! `memories` —, `statement_timeout` from `timeout-ms`, a pinned `search_path`);
//! `json-columns` are read from the twin's rows as from SQLite's. A skill without one —
//! its query is DuckDB's or SQLite's, and neither dialect is PostgreSQL's — says it is
//! not available on the archive yet, and a twin
//! PostgreSQL cannot run fails naming the skill and the archive: never a local answer
//! or a silently different one. `archive-only` lists arguments that filter what only
//! the archive records (`[machine, user]`): the twin uses them; on the local stores a
//! value for one is an argument error (as search-conversations' `machine` and `user`),
//! never ignored.
//!
//! Output: `{"columns": [str], "rows": [{column: value}], "count": int, "truncated": bool}`;
//! `truncated` is true when the query had more than `max-rows` rows.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{Binding, Context, Engine, EngineError};
use crate::stores::{sandbox, sql_value};

const DEFAULT_MAX_ROWS: u64 = 1000;
const DEFAULT_TIMEOUT_MS: u64 = 5000;
/// minijinja instructions one query render may execute (a query's `{% if %}` blocks
/// need tens).
const QUERY_FUEL: u64 = 1_000_000;

/// The unbound engine registered under `sql`; [`Engine::bind`] makes one
/// [`SqlQuery`] per skill.
pub struct Sql;

/// Which store a query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// DuckDB, table `all_conversations`.
    Conversations,
    /// SQLite memories store.
    Memories,
}

impl StoreKind {
    /// The store this kind of query reads.
    pub fn store(self) -> crate::stores::Store {
        match self {
            Self::Conversations => crate::stores::Store::Conversations,
            Self::Memories => crate::stores::Store::Memories,
        }
    }
}

/// A skill's query, bound and checked.
pub struct SqlQuery {
    store: StoreKind,
    source: String,
    env: minijinja::Environment<'static>,
    max_rows: u64,
    timeout: Duration,
    arg_names: Vec<String>,
    json_columns: Vec<String>,
    /// The `archive-query` file, when the skill has a PostgreSQL twin (template
    /// `archive` of `env`).
    archive_query: Option<String>,
    /// Arguments only the archive answers (`archive-only`): refused on the local stores.
    archive_only: Vec<String>,
}

impl Engine for Sql {
    fn name(&self) -> &'static str {
        "sql"
    }

    fn bind(&self, binding: &Binding<'_>) -> Result<Option<Arc<dyn Engine>>, String> {
        SqlQuery::bind(binding).map(|q| Some(Arc::new(q) as Arc<dyn Engine>))
    }

    fn call(&self, _args: &Value, _ctx: &Context) -> Result<Value, EngineError> {
        Err(EngineError::Unavailable(
            "engine `sql` must be bound to a skill's query".into(),
        ))
    }
}

impl SqlQuery {
    /// Reads and checks the query of one skill.
    ///
    /// # Errors
    /// A reason naming the option or file at fault: unknown `store`, unreadable query
    /// file, a `{{ … }}` expression in the query, a template syntax error, or a `$name`
    /// placeholder that is not an input-schema property.
    pub fn bind(binding: &Binding<'_>) -> Result<Self, String> {
        let opts = binding.options;
        let store = match opts.get("store").and_then(Value::as_str) {
            Some("conversations") => StoreKind::Conversations,
            Some("memories") => StoreKind::Memories,
            Some(other) => {
                return Err(format!(
                    "`store`: unknown store `{other}`; expected `conversations` or `memories`"
                ))
            }
            None => return Err("`store` is required: `conversations` or `memories`".into()),
        };
        let file = opts
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("query.sql");
        let arg_names: Vec<String> = binding
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let mut env = minijinja::Environment::new();
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_fuel(Some(QUERY_FUEL));
        let source = read_query(binding, "query", file, &arg_names, &mut env)?;
        let archive_query = match opts.get("archive-query") {
            None => None,
            Some(Value::String(twin)) => {
                read_query(binding, "archive", twin, &arg_names, &mut env)?;
                Some(twin.clone())
            }
            Some(other) => {
                return Err(format!(
                    "`archive-query`: expected the file name of the PostgreSQL query, got {other}"
                ))
            }
        };
        let archive_only = match opts.get("archive-only") {
            None => Vec::new(),
            Some(Value::Array(names)) if names.iter().all(Value::is_string) => {
                let names: Vec<String> = names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                if archive_query.is_none() {
                    return Err(
                        "`archive-only`: the skill has no `archive-query` to use them".into(),
                    );
                }
                if let Some(unknown) = names.iter().find(|n| !arg_names.contains(n)) {
                    return Err(format!(
                        "`archive-only`: `{unknown}` is not an argument of the input schema"
                    ));
                }
                names
            }
            Some(other) => {
                return Err(format!(
                    "`archive-only`: expected a list of argument names, got {other}"
                ))
            }
        };
        let json_columns = match opts.get("json-columns") {
            None => Vec::new(),
            Some(Value::Array(names)) if names.iter().all(Value::is_string) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            Some(other) => {
                return Err(format!(
                    "`json-columns`: expected a list of column names, got {other}"
                ))
            }
        };
        let num =
            |key: &str, default: u64| opts.get(key).and_then(Value::as_u64).unwrap_or(default);
        Ok(Self {
            store,
            source,
            env,
            max_rows: num("max-rows", DEFAULT_MAX_ROWS).max(1),
            timeout: Duration::from_millis(num("timeout-ms", DEFAULT_TIMEOUT_MS).max(1)),
            arg_names,
            json_columns,
            archive_query,
            archive_only,
        })
    }

    /// The query source as written in the skill folder.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders the query structure for `args` and returns the SQL with `?` placeholders
    /// and the values to bind, in order. Absent optional arguments are `null`.
    ///
    /// # Errors
    /// Template rendering errors.
    pub fn prepare(&self, args: &Value) -> Result<(String, Vec<Value>), EngineError> {
        let (sql, names) = placeholders(&self.render("query", args)?);
        let values = names
            .iter()
            .map(|n| args.get(n).cloned().unwrap_or(Value::Null))
            .collect();
        Ok((sql, values))
    }

    /// Template `name` rendered for `args`.
    fn render(&self, name: &str, args: &Value) -> Result<String, EngineError> {
        let mut ctx = Map::new();
        for name in &self.arg_names {
            ctx.insert(name.clone(), args.get(name).cloned().unwrap_or(Value::Null));
        }
        self.env
            .get_template(name)
            .and_then(|t| t.render(Value::Object(ctx)))
            .map_err(|e| EngineError::Query(format!("query template: {e}")))
    }

    /// The call on the team archive: the `archive-query` in PostgreSQL's sandbox, or
    /// "not available on the archive yet" for a skill without one.
    fn call_archive(
        &self,
        args: &Value,
        ctx: &Context,
        pool: &crate::archive::search::Pool,
    ) -> Result<Value, EngineError> {
        use crate::archive::sql::SqlError;
        let skill = ctx.access().skill().unwrap_or("this sql skill");
        let shown = pool.target().shown();
        let Some(twin) = &self.archive_query else {
            let why = match self.store {
                StoreKind::Memories => {
                    "its query is written for SQLite and the skill has no \
                                        PostgreSQL twin (`archive-query`)"
                }
                StoreKind::Conversations => {
                    "its query is written for DuckDB and the skill \
                                             has no PostgreSQL twin (`archive-query`)"
                }
            };
            return Err(EngineError::Unavailable(format!(
                "{skill} is not available on the archive yet ({shown}: {why}); run it without \
                 `--archive` / {} to answer from this machine's stores",
                crate::settings::ARCHIVE_URL.name
            )));
        };
        let store = self.store.store();
        ctx.may_read(store)?;
        let (sql, names) = numbered(&self.render("archive", args)?);
        let sql = sql.trim().trim_end_matches(';').trim_end();
        sandbox::require_select(sql)
            .map_err(|e| EngineError::Query(format!("{skill} on the archive {shown}: {e}")))?;
        let values: Vec<Value> = names
            .iter()
            .map(|n| args.get(n).cloned().unwrap_or(Value::Null))
            .collect();
        let call = crate::archive::sql::Call {
            sql,
            names: &names,
            values: &values,
            max_rows: self.max_rows,
            timeout: self.timeout,
            store,
        };
        let (columns, mut rows) = crate::archive::sql::run(pool, &call).map_err(|e| match e {
            SqlError::Argument { name, reason } => EngineError::Argument { name, reason },
            SqlError::Timeout => EngineError::Query(format!(
                "{skill} on the archive {shown}: query interrupted after {} ms (`timeout-ms`)",
                self.timeout.as_millis()
            )),
            SqlError::Refused(why) => EngineError::Query(format!(
                "{skill} on the archive {shown}: refused by the archive's sandbox: {why}"
            )),
            SqlError::NoSandbox(why) => EngineError::Unavailable(format!("{skill}: {why}")),
            SqlError::Failed(why) => EngineError::Query(format!(
                "{skill} on the archive {shown}: PostgreSQL cannot run its `{twin}`: {why}"
            )),
        })?;
        for row in &mut rows {
            if let Some(row) = row.as_object_mut() {
                for (column, value) in row.iter_mut() {
                    if self.json_columns.contains(column) {
                        json_column(value);
                    }
                }
            }
        }
        let (columns, rows, truncated) = self.cap(columns, rows);
        Ok(json!({"columns": columns, "count": rows.len(), "truncated": truncated, "rows": rows}))
    }
}

/// A `json-columns` value: text that parses as JSON (what SQLite's JSON functions
/// made, a stored list) becomes that JSON; other values and other text stay as they are.
fn json_column(value: &mut Value) {
    if let Value::String(text) = value {
        if let Ok(parsed) = serde_json::from_str(text) {
            *value = parsed;
        }
    }
}

/// Reads query file `file` of the skill, checks it (no `{{ … }}`, every `$name` an
/// argument) and adds it to `env` as template `name`; its text.
fn read_query(
    binding: &Binding<'_>,
    name: &'static str,
    file: &str,
    arg_names: &[String],
    env: &mut minijinja::Environment<'static>,
) -> Result<String, String> {
    let option = if name == "query" {
        "query"
    } else {
        "archive-query"
    };
    let path =
        crate::confine::inside(binding.skill_dir, file).map_err(|e| format!("`{option}`: {e}"))?;
    let source = fs_err::read_to_string(&path).map_err(|e| format!("`{option}`: {e}"))?;
    if let Some(pos) = source.find("{{") {
        let line = source[..pos].matches('\n').count() + 1;
        return Err(format!(
            "`{file}`:{line}: `{{{{ … }}}}` would splice text into SQL; use `$name` parameters and `{{% if %}}` blocks only"
        ));
    }
    env.add_template_owned(name, source.clone())
        .map_err(|e| format!("`{file}`: {e}"))?;
    let (_, used) = placeholders(&source);
    if let Some(unknown) = used.iter().find(|n| !arg_names.contains(n)) {
        return Err(format!(
            "`{file}`: `${unknown}` is not an argument of the input schema"
        ));
    }
    Ok(source)
}

impl Engine for SqlQuery {
    fn name(&self) -> &'static str {
        "sql"
    }

    /// Reads the store named by `engine-options.store`, writes nothing.
    fn effects(&self) -> super::Effects {
        super::Effects::reads(&[self.store.store()])
    }

    fn call(&self, args: &Value, ctx: &Context) -> Result<Value, EngineError> {
        if let Some(pool) = ctx.archive() {
            return self.call_archive(args, ctx, pool);
        }
        for name in &self.archive_only {
            ctx.archive_only_argument(name, args.get(name).unwrap_or(&Value::Null))?;
        }
        let (sql, values) = self.prepare(args)?;
        let sql = sql.trim().trim_end_matches(';').trim_end();
        sandbox::require_select(sql).map_err(refused)?;
        if self.store == StoreKind::Conversations {
            // The query alone first, for the clearer count; text that only parses
            // inside the wrapper is counted again, wrapped, before it is prepared.
            if let Ok(count) = sandbox::statement_count(sql) {
                if count != 1 {
                    return Err(refused(sandbox::SandboxError::StatementCount { count }));
                }
            }
        }
        let (columns, rows, truncated) = match self.store {
            StoreKind::Conversations => self.run_duckdb(sql, &values, ctx),
            StoreKind::Memories => ctx
                .may_read(crate::stores::Store::Memories)
                .map_err(EngineError::from)
                .and_then(|()| self.run_sqlite(sql, &values, ctx)),
        }
        .map_err(|e| conversion_argument(e, args))?;
        Ok(json!({"columns": columns, "count": rows.len(), "truncated": truncated, "rows": rows}))
    }
}

type Rows = (Vec<String>, Vec<Value>, bool);

impl SqlQuery {
    fn run_duckdb(&self, sql: &str, values: &[Value], ctx: &Context) -> Result<Rows, EngineError> {
        let store = ctx.conversations()?;
        // A connection kept between calls when the store's attachment is (with the
        // statements it prepared): the parse, the first bind and the connection's set-up
        // are a call's first time only (docs/performance.md "A project page's
        // connections kept").
        let mut conn = store.query_connection()?;
        let wrapped = format!(
            "SELECT to_json(q)::VARCHAR FROM ({sql}\n) AS q LIMIT {}",
            self.max_rows + 1
        );
        let params: Vec<duckdb::types::Value> = values.iter().map(sql_value::to_duckdb).collect();
        let refs: Vec<&dyn duckdb::ToSql> =
            params.iter().map(|p| p as &dyn duckdb::ToSql).collect();
        let handle = conn.interrupt_handle();
        let watchdog = Watchdog::start(self.timeout, move || handle.interrupt());
        let result = (|| {
            // Counted on the wrapped text: a query that closes the wrapper's
            // parenthesis makes it several statements, and is refused here.
            let mut stmt = sandbox::prepare_duckdb_cached(&conn, &wrapped)?;
            let texts = stmt
                .query_map(refs.as_slice(), |r| r.get::<_, String>(0))
                .map_err(sandbox::PrepareError::Db)?;
            texts
                .collect::<Result<Vec<String>, _>>()
                .map_err(sandbox::PrepareError::Db)
        })();
        let timed_out = watchdog.stop();
        if timed_out || result.is_err() {
            // An interrupt may still be pending on it, or its statement failed: not kept.
            conn.discard();
        }
        let texts = result.map_err(|e| match e {
            sandbox::PrepareError::Sandbox(e) => refused(e),
            sandbox::PrepareError::Db(e) => query_error(&e.to_string(), timed_out, self.timeout),
        })?;
        let mut rows = Vec::with_capacity(texts.len());
        for t in texts {
            rows.push(
                serde_json::from_str::<Value>(&t)
                    .map_err(|e| EngineError::Query(format!("row JSON: {e}")))?,
            );
        }
        // Column names come from the first row (DuckDB keeps select-list order).
        let columns = rows
            .first()
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_else(|| duck_columns(&conn, sql, &refs));
        Ok(self.cap(columns, rows))
    }

    fn run_sqlite(&self, sql: &str, values: &[Value], ctx: &Context) -> Result<Rows, EngineError> {
        let conn = crate::stores::memories::query_connection(&ctx.paths().memories)?;
        // The call's deadline and its client leaving interrupt the query too.
        let on_stop = conn.get_interrupt_handle();
        let _interrupt = ctx.cancel().on_stop(move || on_stop.interrupt());
        let handle = conn.get_interrupt_handle();
        let watchdog = Watchdog::start(self.timeout, move || handle.interrupt());
        let result = (|| {
            let mut stmt = conn.prepare(sql)?;
            if !stmt.readonly() {
                return Err(rusqlite::Error::InvalidQuery);
            }
            let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
            let params: Vec<rusqlite::types::Value> =
                values.iter().map(sql_value::to_sqlite).collect();
            let mut rows = Vec::new();
            let mut cursor = stmt.query(rusqlite::params_from_iter(params))?;
            while let Some(row) = cursor.next()? {
                let mut obj = Map::new();
                for (i, c) in columns.iter().enumerate() {
                    let mut value = sql_value::from_sqlite(row.get_ref(i)?);
                    if self.json_columns.contains(c) {
                        json_column(&mut value);
                    }
                    obj.insert(c.clone(), value);
                }
                rows.push(Value::Object(obj));
                if rows.len() as u64 > self.max_rows {
                    break;
                }
            }
            Ok((columns, rows))
        })();
        let timed_out = watchdog.stop();
        let (columns, rows) = result.map_err(|e| match e {
            rusqlite::Error::InvalidQuery => refused(sandbox::SandboxError::NotSelect {
                keyword: sandbox::first_keyword(sql),
            }),
            rusqlite::Error::MultipleStatement => refused(sandbox::SandboxError::SeveralStatements),
            e => query_error(&e.to_string(), timed_out, self.timeout),
        })?;
        Ok(self.cap(columns, rows))
    }

    fn cap(&self, columns: Vec<String>, mut rows: Vec<Value>) -> Rows {
        let cap = usize::try_from(self.max_rows).unwrap_or(usize::MAX);
        let truncated = rows.len() > cap;
        rows.truncate(cap);
        (columns, rows, truncated)
    }
}

/// A value the schema let through but the database cannot convert ("9999-99-99" as a
/// DATE): DuckDB's `Conversion Error` becomes an argument error naming the argument
/// whose value the message quotes (`arguments` when none does), not a failed query.
fn conversion_argument(e: EngineError, args: &Value) -> EngineError {
    let EngineError::Query(message) = &e else {
        return e;
    };
    let Some(at) = message.find("Conversion Error") else {
        return e;
    };
    let reason = message[at + "Conversion Error".len()..]
        .trim_start_matches(':')
        .trim()
        .to_owned();
    let name = args
        .as_object()
        .and_then(|m| {
            m.iter().find(|(_, v)| {
                v.as_str()
                    .is_some_and(|v| !v.is_empty() && message.contains(&format!("\"{v}\"")))
            })
        })
        .map_or_else(|| "arguments".to_owned(), |(k, _)| k.clone());
    EngineError::Argument { name, reason }
}

fn refused(e: sandbox::SandboxError) -> EngineError {
    EngineError::Query(e.to_string())
}

fn query_error(message: &str, timed_out: bool, timeout: Duration) -> EngineError {
    if let Some(refusal) = sandbox::refusal(message) {
        return refused(refusal);
    }
    if timed_out {
        EngineError::Query(format!(
            "query interrupted after {} ms (`timeout-ms`)",
            timeout.as_millis()
        ))
    } else if message.contains("read-only") || message.contains("readonly") {
        EngineError::Query(format!(
            "the query writes; skill queries must be read-only ({message})"
        ))
    } else {
        EngineError::Query(format!("query failed: {message}"))
    }
}

/// Column names of an empty result, asked of DuckDB by describing the query.
fn duck_columns(
    conn: &duckdb::Connection,
    sql: &str,
    params: &[&dyn duckdb::ToSql],
) -> Vec<String> {
    let described = format!("SELECT * FROM ({sql}\n) AS q LIMIT 0");
    let Ok(mut stmt) = sandbox::prepare_duckdb(conn, &described) else {
        return Vec::new();
    };
    stmt.query(params)
        .map(|_| ())
        .map_or_else(|_| Vec::new(), |()| stmt.column_names())
}

/// Replaces `$name` placeholders outside string literals, quoted identifiers and
/// comments with `?`, returning the new text and the names in order of appearance.
pub fn placeholders(sql: &str) -> (String, Vec<String>) {
    let mut names = Vec::new();
    let out = replace_placeholders(sql, |name| {
        names.push(name.to_owned());
        "?".to_owned()
    });
    (out, names)
}

/// Replaces `$name` placeholders (as [`placeholders`]) with PostgreSQL's `$1`, `$2`…,
/// one number per distinct name; returns the text and the names by number.
pub fn numbered(sql: &str) -> (String, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let out = replace_placeholders(sql, |name| {
        let k = match names.iter().position(|n| n == name) {
            Some(i) => i + 1,
            None => {
                names.push(name.to_owned());
                names.len()
            }
        };
        format!("${k}")
    });
    (out, names)
}

/// `sql` with each `$name` outside string literals, quoted identifiers and comments
/// replaced by `mark(name)`.
fn replace_placeholders(sql: &str, mut mark: impl FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(sql.len());
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' => {
                // Copy a quoted run verbatim (doubled quotes stay inside it).
                out.push(c);
                i += 1;
                while i < chars.len() {
                    out.push(chars[i]);
                    if chars[i] == c {
                        if chars.get(i + 1) == Some(&c) {
                            out.push(c);
                            i += 2;
                            continue;
                        }
                        i += 1;
                        break;
                    }
                    i += 1;
                }
            }
            '-' if chars.get(i + 1) == Some(&'-') => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(chars[i]);
                    i += 1;
                }
            }
            '$' if chars
                .get(i + 1)
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_') =>
            {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_')
                {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                out.push_str(&mark(&name));
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The query's own time limit (`engine-options.timeout-ms`), armed on the process's
/// deadline timer ([`crate::cancel`]): a lock and an insert a call, not a thread.
struct Watchdog {
    limit: crate::cancel::Cancel,
    interrupt: crate::cancel::OnStop,
}

impl Watchdog {
    /// Runs `on_timeout` once when `timeout` passes before [`Watchdog::stop`].
    fn start(timeout: Duration, on_timeout: impl FnOnce() + Send + 'static) -> Self {
        let limit = crate::cancel::Cancel::new();
        let interrupt = limit.on_stop(on_timeout);
        limit.limit(timeout);
        Self { limit, interrupt }
    }

    /// Stops the watchdog; true when it had already fired (or fires meanwhile: then
    /// its hook no longer runs, and the caller treats the query as timed out).
    fn stop(self) -> bool {
        // The hook is removed first; dropping `limit` then takes it off the timer.
        drop(self.interrupt);
        self.limit.stopped().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_skip_strings_and_comments() {
        let (sql, names) = placeholders(
            "SELECT '$x', \"$y\" -- $z\nFROM t WHERE a = $role AND b = $role_2 AND c = 'it''s $q'",
        );
        assert_eq!(
            sql,
            "SELECT '$x', \"$y\" -- $z\nFROM t WHERE a = ? AND b = ? AND c = 'it''s $q'"
        );
        assert_eq!(names, ["role", "role_2"]);
        assert_eq!(placeholders("x::VARCHAR, $1").1, Vec::<String>::new());
        let (sql, names) = numbered("a = $role AND b = '$x' AND c = $limit OR d = $role");
        assert_eq!(sql, "a = $1 AND b = '$x' AND c = $2 OR d = $1");
        assert_eq!(names, ["role", "limit"]);
    }
}
