//! The sandbox for SQL that a skill folder supplies (the `sql` engine's query, the
//! conformance checks' `rows_match_sql` and `store_predicate` SQL): what such SQL may
//! do, and the one place the rules are enforced.
//!
//! Rules, each with the name an error quotes ([`Rule`]):
//! - **one statement**: the text handed to the database is exactly one statement,
//!   counted by DuckDB's own parser (`duckdb_extract_statements`) or, for SQLite, by
//!   `sqlite3_prepare`'s tail. `duckdb::Connection::prepare` runs every statement
//!   before the last, so the count is taken before anything is prepared.
//! - **read-only select**: the statement reads (`SELECT`, `WITH`, `FROM`, `VALUES`,
//!   `TABLE`); the store is opened read-only as well.
//! - **no external access**: DuckDB connections are opened with
//!   `enable_external_access = false` (no file readers or writers, `COPY`, `EXPORT`,
//!   `ATTACH`, URLs), extension autoload and autoinstall off (no `INSTALL`/`LOAD`,
//!   no download) and `lock_configuration = true` (no `SET`/`PRAGMA` can lift any of
//!   it). The store file itself is opened before the lock and stays readable. SQLite
//!   connections are opened read-only with `PRAGMA query_only` and no extension
//!   loading.
//!
//! Stores call [`duckdb_config`] when they open a file for readers; engines and
//! checks call [`prepare_duckdb`] instead of `Connection::prepare`.

use std::ffi::{c_char, CStr, CString};
use std::sync::Mutex;

use duckdb::ffi;

/// A rule of the sandbox, named in every refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Exactly one SQL statement.
    OneStatement,
    /// The statement only reads.
    ReadOnlySelect,
    /// No file, network, extension or configuration access.
    NoExternalAccess,
}

impl Rule {
    /// The rule's name as error messages quote it.
    pub fn name(self) -> &'static str {
        match self {
            Self::OneStatement => "one statement",
            Self::ReadOnlySelect => "read-only select",
            Self::NoExternalAccess => "no external access",
        }
    }
}

/// SQL refused by the sandbox, or a failure while checking it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The text holds `count` statements (0 or more than 1).
    #[error("skill SQL breaks the sandbox rule `one statement`: DuckDB's parser found {count} statements")]
    StatementCount {
        /// Statements found.
        count: usize,
    },
    /// SQLite found a second statement after the first.
    #[error(
        "skill SQL breaks the sandbox rule `one statement`: SQLite found more than one statement"
    )]
    SeveralStatements,
    /// The statement does not start with a reading keyword.
    #[error("skill SQL breaks the sandbox rule `read-only select`: the query starts with `{keyword}`; skill queries must be one read-only SELECT")]
    NotSelect {
        /// The first keyword, lowercased.
        keyword: String,
    },
    /// The database refused an operation reaching outside the store.
    #[error("skill SQL breaks the sandbox rule `no external access` (files, network, extensions and settings are disabled for skill SQL): {detail}")]
    External {
        /// The database's message.
        detail: String,
    },
    /// The statement calls a table function that may read a file or run SQL text
    /// (`read_blob`, `read_text`, `query`, …): the store's own file is readable by
    /// the connection, so a reader would return its raw bytes.
    #[error("skill SQL breaks the sandbox rule `no external access` (files, network, extensions and settings are disabled for skill SQL): table function `{function}` is not allowed (skill SQL may call only table functions that read no file: {allowed}, duckdb_*)", allowed = TABLE_FUNCTIONS.join(", "))]
    TableFunction {
        /// The function's name as DuckDB's parser gives it (lowercase).
        function: String,
    },
    /// A table named by a file path (a replacement scan reads the file).
    #[error("skill SQL breaks the sandbox rule `no external access` (files, network, extensions and settings are disabled for skill SQL): `{table}` names a file, not a table")]
    FileTable {
        /// The table name as written.
        table: String,
    },
    /// DuckDB could not parse the text.
    #[error("skill SQL does not parse: {0}")]
    Parse(String),
}

impl SandboxError {
    /// The rule broken (`None` for a parse error).
    pub fn rule(&self) -> Option<Rule> {
        match self {
            Self::StatementCount { .. } | Self::SeveralStatements => Some(Rule::OneStatement),
            Self::NotSelect { .. } => Some(Rule::ReadOnlySelect),
            Self::External { .. } | Self::TableFunction { .. } | Self::FileTable { .. } => {
                Some(Rule::NoExternalAccess)
            }
            Self::Parse(_) => None,
        }
    }
}

/// The DuckDB configuration for connections that run skill SQL: read-only, external
/// access disabled, extension autoload/autoinstall off, configuration locked.
///
/// # Errors
/// A DuckDB error when an option is not known to the linked library.
pub fn duckdb_config() -> duckdb::Result<duckdb::Config> {
    duckdb::Config::default()
        .access_mode(duckdb::AccessMode::ReadOnly)?
        .enable_external_access(false)?
        .enable_autoload_extension(false)?
        .with("allow_community_extensions", "false")?
        .with("lock_configuration", "true")
}

/// Prepares `sql` on `conn` after checking that it is one statement
/// ([`statement_count`]): `Connection::prepare` would run the others.
///
/// # Errors
/// [`PrepareError::Sandbox`] when the text is not exactly one statement;
/// [`PrepareError::Db`] for DuckDB's own errors (a refused external access among them:
/// [`refusal`] recognises it).
pub fn prepare_duckdb<'c>(
    conn: &'c duckdb::Connection,
    sql: &str,
) -> Result<duckdb::Statement<'c>, PrepareError> {
    checked(sql)?;
    conn.prepare(sql).map_err(PrepareError::Db)
}

/// [`prepare_duckdb`], the statement kept by `conn` for the next call with the same
/// text (`Connection::prepare_cached`): on a connection kept between calls
/// ([`crate::stores::conversations::Pooled`]) the parse and first bind are done once.
///
/// # Errors
/// As [`prepare_duckdb`]'s.
pub fn prepare_duckdb_cached<'c>(
    conn: &'c duckdb::Connection,
    sql: &str,
) -> Result<duckdb::CachedStatement<'c>, PrepareError> {
    checked(sql)?;
    conn.prepare_cached(sql).map_err(PrepareError::Db)
}

/// Checks that `sql` is one statement calling only allowed table functions
/// (remembered per text).
fn checked(sql: &str) -> Result<(), PrepareError> {
    if !PASSED.contains(sql) {
        let count = statement_count(sql)?;
        if count != 1 {
            return Err(SandboxError::StatementCount { count }.into());
        }
        check_table_functions(sql)?;
        PASSED.insert(sql, ());
    }
    Ok(())
}

/// Texts that passed [`prepare_duckdb`]'s checks, and [`statement_count`]'s answers.
/// Both depend on the text alone, and a skill's query renders to the same text for the
/// same template branch (values are bound, not spliced), so a call repeating one skips
/// three of its four parses: they were a fifth of a small browse-page query's time
/// (docs/performance.md "Browse pages at 1M messages").
static PASSED: Memo<()> = Memo::new();
static COUNTS: Memo<usize> = Memo::new();

/// A bounded map from SQL texts (emptied when full: the bundled skills' queries
/// render to a few hundred texts at most, and no argument can grow it past the bound).
struct Memo<V>(Mutex<Option<std::collections::HashMap<String, V>>>);

impl<V: Copy> Memo<V> {
    /// Texts kept at most.
    const MAX: usize = 1024;

    const fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn get(&self, sql: &str) -> Option<V> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .and_then(|map| map.get(sql).copied())
    }

    fn contains(&self, sql: &str) -> bool {
        self.get(sql).is_some()
    }

    fn insert(&self, sql: &str, value: V) {
        let mut guard = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let map = guard.get_or_insert_with(std::collections::HashMap::new);
        if map.len() >= Self::MAX {
            map.clear();
        }
        map.insert(sql.to_owned(), value);
    }
}

/// Table functions skill SQL may call (besides DuckDB's `duckdb_*` catalog views):
/// none reads a file or runs SQL given as text. An allowlist, not a list of readers:
/// the connection may read the store's own file (`allowed_paths`, for `ATTACH`), so any
/// reader left out — `read_blob`, `read_text`, `read_csv`, `query('…')` — would return
/// its raw bytes, free pages holding text from before `--redact-stored` included.
pub const TABLE_FUNCTIONS: [&str; 18] = [
    "range",
    "generate_series",
    "unnest",
    "repeat",
    "repeat_row",
    "json_each",
    "json_tree",
    "pg_timezone_names",
    "icu_calendar_names",
    "pragma_table_info",
    "pragma_show",
    "pragma_version",
    "pragma_platform",
    "pragma_database_size",
    "pragma_collations",
    "pragma_user_agent",
    "test_all_types",
    "test_vector_types",
];

fn allowed_table_function(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("duckdb_") || TABLE_FUNCTIONS.contains(&name.as_str())
}

/// Checks the table functions and table names of the one statement in `sql` with
/// DuckDB's own parser (`json_serialize_sql`, which gives the statement's tree):
/// every table function must be in [`TABLE_FUNCTIONS`] (or `duckdb_*`), and no table
/// may be named by a path. When the statement cannot be serialized (DuckDB serializes
/// only plain `SELECT`s; a `PIVOT` inside one is not), every word of the text is
/// checked instead against the readers DuckDB has (`read_*`, `parquet_*`, `glob`,
/// `sniff_csv`, `query`, `query_table`, `json_execute_serialized_sql`).
///
/// # Errors
/// [`SandboxError::TableFunction`] or [`SandboxError::FileTable`] naming what was
/// refused.
pub fn check_table_functions(sql: &str) -> Result<(), SandboxError> {
    match serialized(sql) {
        Some(tree) => check_tree(&tree),
        None => check_words(sql),
    }
}

/// The statement tree of `sql` as `json_serialize_sql` gives it; `None` when DuckDB
/// cannot serialize it (or the function is missing).
fn serialized(sql: &str) -> Option<serde_json::Value> {
    let serializer = SERIALIZER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let conn = serializer.as_ref().ok()?;
    // The cast: an untyped parameter is refused ("first argument must be a VARCHAR").
    let text: String = conn
        .query_row(
            "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR",
            [sql],
            |r| r.get(0),
        )
        .ok()?;
    let tree: serde_json::Value = serde_json::from_str(&text).ok()?;
    (tree.get("error") == Some(&serde_json::Value::Bool(false))).then_some(tree)
}

/// An in-memory DuckDB connection used only to serialize skill SQL.
static SERIALIZER: std::sync::LazyLock<Mutex<duckdb::Result<duckdb::Connection>>> =
    std::sync::LazyLock::new(|| {
        Mutex::new(
            duckdb::Config::default()
                .enable_autoload_extension(false)
                .and_then(duckdb::Connection::open_in_memory_with_flags),
        )
    });

fn check_tree(node: &serde_json::Value) -> Result<(), SandboxError> {
    match node {
        serde_json::Value::Object(map) => {
            let kind = map.get("type").and_then(serde_json::Value::as_str);
            if kind == Some("TABLE_FUNCTION") {
                let name = map
                    .get("function")
                    .and_then(|f| f.get("function_name"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("");
                if !allowed_table_function(name) {
                    return Err(SandboxError::TableFunction {
                        function: name.to_owned(),
                    });
                }
            }
            if kind == Some("BASE_TABLE") {
                let table = map
                    .get("table_name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("");
                // `FROM 'file.csv'`: a replacement scan would read the file.
                if table.contains(['/', '\\']) {
                    return Err(SandboxError::FileTable {
                        table: table.to_owned(),
                    });
                }
            }
            map.values().try_for_each(check_tree)
        }
        serde_json::Value::Array(items) => items.iter().try_for_each(check_tree),
        _ => Ok(()),
    }
}

/// The fallback of [`check_table_functions`]: refuses any word of `sql` (string
/// literals included: conservative) that names one of DuckDB's file readers or SQL
/// runners.
fn check_words(sql: &str) -> Result<(), SandboxError> {
    const READERS: [&str; 5] = [
        "glob",
        "sniff_csv",
        "query",
        "query_table",
        "json_execute_serialized_sql",
    ];
    let lower = sql.to_ascii_lowercase();
    let found = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.starts_with("read_") || w.starts_with("parquet_") || READERS.contains(w));
    match found {
        Some(word) => Err(SandboxError::TableFunction {
            function: word.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Why [`prepare_duckdb`] failed.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The sandbox refused the text.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// DuckDB failed.
    #[error(transparent)]
    Db(duckdb::Error),
}

/// Classifies a database error message: `Some` when it is the sandbox refusing an
/// access outside the store (DuckDB's "Permission Error", a locked setting, a
/// disabled extension load, SQLite's "not authorized" for `load_extension`).
pub fn refusal(message: &str) -> Option<SandboxError> {
    const MARKERS: [&str; 8] = [
        "not authorized",
        "Permission Error",
        "disabled by configuration",
        "enable_external_access",
        "lock_configuration",
        "configuration has been locked",
        "autoload",
        "Extension",
    ];
    MARKERS
        .iter()
        .any(|m| message.contains(m))
        .then(|| SandboxError::External {
            detail: message.to_owned(),
        })
}

/// Number of statements in `sql` as DuckDB's parser splits it (comments and
/// semicolons inside strings are handled as DuckDB handles them).
///
/// # Errors
/// [`SandboxError::Parse`] when the text does not parse.
pub fn statement_count(sql: &str) -> Result<usize, SandboxError> {
    if let Some(count) = COUNTS.get(sql) {
        return Ok(count);
    }
    let count = count_statements(sql)?;
    COUNTS.insert(sql, count);
    Ok(count)
}

/// [`statement_count`] without its memo.
fn count_statements(sql: &str) -> Result<usize, SandboxError> {
    let text = CString::new(sql)
        .map_err(|_| SandboxError::Parse("the SQL text contains a NUL byte".to_owned()))?;
    let parser = PARSER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let parser = match &*parser {
        Ok(p) => p,
        Err(e) => return Err(SandboxError::Parse(e.clone())),
    };
    parser.count(&text)
}

/// An in-memory DuckDB connection used only to split SQL into statements.
struct Parser {
    db: ffi::duckdb_database,
    con: ffi::duckdb_connection,
}

// SAFETY: the handles are only used while holding `PARSER`'s lock, one thread at a
// time; DuckDB connections may move between threads.
unsafe impl Send for Parser {}

static PARSER: std::sync::LazyLock<Mutex<Result<Parser, String>>> =
    std::sync::LazyLock::new(|| Mutex::new(Parser::open()));

impl Parser {
    fn open() -> Result<Self, String> {
        let mut db: ffi::duckdb_database = std::ptr::null_mut();
        let mut con: ffi::duckdb_connection = std::ptr::null_mut();
        // SAFETY: a null path opens an in-memory database; out-pointers are valid.
        unsafe {
            if ffi::duckdb_open(std::ptr::null(), &raw mut db) != ffi::DuckDBSuccess {
                return Err("cannot start DuckDB's parser".to_owned());
            }
            if ffi::duckdb_connect(db, &raw mut con) != ffi::DuckDBSuccess {
                ffi::duckdb_close(&raw mut db);
                return Err("cannot connect to DuckDB's parser".to_owned());
            }
        }
        Ok(Self { db, con })
    }

    fn count(&self, sql: &CStr) -> Result<usize, SandboxError> {
        let mut extracted: ffi::duckdb_extracted_statements = std::ptr::null_mut();
        // SAFETY: `con` is open; `sql` is NUL-terminated; `extracted` is destroyed
        // below whatever the outcome, as the C API requires.
        unsafe {
            let n = ffi::duckdb_extract_statements(self.con, sql.as_ptr(), &raw mut extracted);
            let result = if n == 0 {
                let err: *const c_char = ffi::duckdb_extract_statements_error(extracted);
                if err.is_null() {
                    Ok(0)
                } else {
                    Err(SandboxError::Parse(
                        CStr::from_ptr(err).to_string_lossy().into_owned(),
                    ))
                }
            } else {
                Ok(usize::try_from(n).unwrap_or(usize::MAX))
            };
            ffi::duckdb_destroy_extracted(&raw mut extracted);
            result
        }
    }
}

impl Drop for Parser {
    fn drop(&mut self) {
        // SAFETY: both handles were opened by `Parser::open` and are closed once.
        unsafe {
            ffi::duckdb_disconnect(&raw mut self.con);
            ffi::duckdb_close(&raw mut self.db);
        }
    }
}

/// The first SQL keyword of `sql`, lowercased, after comments and whitespace.
pub fn first_keyword(sql: &str) -> String {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    rest.split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Checks that `sql` starts with a reading keyword (rule `read-only select`).
///
/// # Errors
/// [`SandboxError::NotSelect`] naming the keyword found.
pub fn require_select(sql: &str) -> Result<(), SandboxError> {
    let first = first_keyword(sql);
    if ["select", "with", "from", "values", "table"].contains(&first.as_str()) {
        Ok(())
    } else {
        Err(SandboxError::NotSelect { keyword: first })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_counted_by_duckdb() {
        assert_eq!(statement_count("SELECT 1").unwrap(), 1);
        assert_eq!(statement_count("SELECT ';' AS x; -- ;\n").unwrap(), 1);
        assert_eq!(statement_count("SELECT 1; SELECT 2").unwrap(), 2);
        assert_eq!(
            statement_count(
                "SELECT * FROM (SELECT 1 AS a) AS q; COPY (SELECT 1) TO 'x.csv'; SELECT 1"
            )
            .unwrap(),
            3
        );
        assert!(matches!(
            statement_count("SELECT FROM WHERE ((("),
            Err(SandboxError::Parse(_))
        ));
    }

    #[test]
    fn first_keyword_skips_comments() {
        assert_eq!(first_keyword("-- c\n /* x */ SELECT 1"), "select");
        assert_eq!(first_keyword("  insert into t values (1)"), "insert");
        assert_eq!(first_keyword(""), "");
    }

    /// Issue 43: table functions are read from DuckDB's own parse tree (so nesting,
    /// case and quoting do not hide them), only the allowlisted ones pass, and a
    /// statement DuckDB cannot serialize falls back to refusing reader names.
    #[test]
    fn table_functions_are_checked_on_duckdbs_parse_tree() {
        assert!(
            serialized("SELECT 1").is_some(),
            "json_serialize_sql is missing"
        );
        for ok in [
            "SELECT * FROM range(3)",
            "SELECT j.value FROM t, json_each(t.x) AS j",
            "SELECT unnest([1, 2])",
            "FROM duckdb_tables()",
            "SELECT 'read_blob(x)' AS text",
            "SELECT 1 FROM (PIVOT t ON a USING sum(b))",
        ] {
            assert_eq!(check_table_functions(ok), Ok(()), "{ok}");
        }
        for (bad, function) in [
            ("SELECT * FROM read_blob('s.duckdb')", "read_blob"),
            ("SELECT * FROM \"READ_TEXT\"('s.duckdb')", "read_text"),
            (
                "WITH a AS (SELECT 1) SELECT (SELECT content FROM main.read_text('x')) FROM a",
                "read_text",
            ),
            (
                "SELECT * FROM t WHERE x IN (SELECT * FROM read_csv('x'))",
                "read_csv",
            ),
            ("SELECT * FROM t, LATERAL (SELECT * FROM glob(t.x))", "glob"),
            ("SELECT * FROM query('SELECT 1')", "query"),
            (
                "SELECT 1 FROM (PIVOT (FROM read_blob('x')) ON a USING sum(b))",
                "read_blob",
            ),
        ] {
            assert_eq!(
                check_table_functions(bad),
                Err(SandboxError::TableFunction {
                    function: function.to_owned()
                }),
                "{bad}"
            );
        }
        assert!(matches!(
            check_table_functions("SELECT * FROM '/data/conversations.duckdb'"),
            Err(SandboxError::FileTable { .. })
        ));
    }

    #[test]
    fn config_opens_in_memory_and_refuses_files() {
        let conn = duckdb::Connection::open_in_memory_with_flags(
            duckdb_config()
                .unwrap()
                .access_mode(duckdb::AccessMode::Automatic)
                .unwrap(),
        )
        .unwrap();
        let n: i64 = conn.query_row("SELECT 41 + 1", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 42);
        let err = conn
            .query_row("SELECT content FROM read_text('/etc/hostname')", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap_err()
            .to_string();
        assert!(refusal(&err).is_some(), "{err}");
        let err = conn
            .execute_batch("SET enable_external_access = true")
            .unwrap_err();
        assert!(refusal(&err.to_string()).is_some(), "{err}");
    }
}
