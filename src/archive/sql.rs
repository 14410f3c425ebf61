//! Drop-in `sql` skills answered from the archive: a skill's PostgreSQL query
//! (`engine-options.archive-query`, the twin of its DuckDB or SQLite `query.sql`) run
//! in the database's own sandbox.
//!
//! Each call is one `READ ONLY` transaction that first sets
//! - `ROLE` [`SQL_ROLE`](super::schema::SQL_ROLE), which may `SELECT` the view [`SQL_SCHEMA`]`.all_conversations`
//!   and nothing else of the archive (no other schema, no file or program function:
//!   `pg_read_file`, `lo_import` and `COPY … PROGRAM` need privileges it lacks) — or,
//!   for a skill over the memories, [`SQL_MEMORIES_ROLE`](super::schema::SQL_MEMORIES_ROLE), which may `SELECT` the view
//!   [`SQL_SCHEMA`]`.all_memories` and nothing else ([`Call::store`]);
//! - `statement_timeout` from the skill's `timeout-ms`;
//! - `search_path` pinned to `pg_catalog, skills_sql, pg_temp`;
//!
//! and refuses to run when the archive's sandbox is incomplete (the role missing, or
//! `set_config()` executable by it, which would let a query undo the settings above).
//! The query is wrapped as `SELECT row_to_json(q)::text FROM (<query>) q LIMIT n+1` and
//! sent as one prepared statement, which PostgreSQL refuses to hold several commands.
//! Argument values are bound as parameters of the type PostgreSQL infers for them.

use chrono::{NaiveDate, NaiveDateTime};
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use serde_json::Value;

use super::schema::{sql_role, SET_CONFIG, SQL_SCHEMA};
use super::search::Pool;

/// One query to run.
pub struct Call<'a> {
    /// The rendered query, with `$1`, `$2`… placeholders.
    pub sql: &'a str,
    /// The argument each placeholder binds (`$k` is `names[k-1]`).
    pub names: &'a [String],
    /// Their values.
    pub values: &'a [Value],
    /// Rows kept (one more is asked for, to say whether there were more).
    pub max_rows: u64,
    /// `statement_timeout`.
    pub timeout: std::time::Duration,
    /// The store the skill reads (its `engine-options.store`): the query runs as that
    /// store's role ([`super::schema::sql_role`]), which may read its view only
    /// (`all_conversations` or `all_memories`).
    pub store: crate::stores::Store,
}

/// Why a query did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlError {
    /// An argument's value cannot be converted to the type the query needs.
    Argument {
        /// Argument name.
        name: String,
        /// Why.
        reason: String,
    },
    /// It ran past its `statement_timeout`.
    Timeout,
    /// The archive's sandbox refused it (a privilege it lacks, a write).
    Refused(String),
    /// The sandbox is not set up on this archive.
    NoSandbox(String),
    /// PostgreSQL could not run it (syntax, unknown function…), or the archive is
    /// unreachable.
    Failed(String),
}

/// Rows of a call: column names, rows as JSON objects.
pub type Rows = (Vec<String>, Vec<Value>);

/// Runs `call` on the archive of `pool`.
///
/// # Errors
/// [`SqlError`].
pub fn run(pool: &Pool, call: &Call<'_>) -> Result<Rows, SqlError> {
    let target = pool.target().clone();
    match pool.with(|client| Ok(run_on(client, call, &target))) {
        Ok(result) => result,
        Err(e) => Err(SqlError::Failed(e.message().to_owned())),
    }
}

fn run_on(
    client: &mut postgres::Client,
    call: &Call<'_>,
    target: &super::Target,
) -> Result<Rows, SqlError> {
    let failed = |e: &postgres::Error| classify(e, target);
    let role = sql_role(call.store);
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(|e| failed(&e))?;
    let ready: Option<bool> = tx
        .query_one(
            "SELECT CASE WHEN to_regrole($1) IS NULL OR to_regnamespace($2) IS NULL THEN NULL
                    ELSE has_function_privilege($1, $3, 'EXECUTE') END",
            &[&role, &SQL_SCHEMA, &SET_CONFIG],
        )
        .map_err(|e| failed(&e))?
        .get(0);
    match ready {
        None => {
            return Err(SqlError::NoSandbox(format!(
                "archive {}: no sandbox for the sql skills (role {role} or schema \
                 {SQL_SCHEMA} missing); run `skills archive migrate`",
                target.shown()
            )))
        }
        Some(true) => {
            return Err(SqlError::NoSandbox(format!(
                "archive {}: the sql skills' sandbox is incomplete: {role} may execute \
                 set_config(), which would let a query change its own limits; a superuser \
                 should run `skills archive migrate` (it revokes set_config from PUBLIC)",
                target.shown()
            )))
        }
        Some(false) => {}
    }
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = {}; SET LOCAL search_path = pg_catalog, {SQL_SCHEMA}, \
         pg_temp; SET LOCAL ROLE {role}",
        call.timeout.as_millis().max(1)
    ))
    .map_err(|e| match e.code() {
        Some(&SqlState::INSUFFICIENT_PRIVILEGE) => SqlError::NoSandbox(format!(
            "archive {}: the role {} is not a member of {role}, which the sql skills' \
             queries over the {} run as; the archive's owner can run `GRANT {role} TO {};`",
            target.shown(),
            target.user(),
            call.store,
            super::schema::quote_ident(target.user())
        )),
        _ => failed(&e),
    })?;
    let wrapped = format!(
        "SELECT row_to_json(q)::text FROM ({}\n) AS q LIMIT {}",
        call.sql,
        call.max_rows + 1
    );
    let stmt = tx.prepare(&wrapped).map_err(|e| failed(&e))?;
    let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    for (i, ty) in stmt.params().iter().enumerate() {
        let name = call.names.get(i).map_or("?", String::as_str);
        let value = call.values.get(i).unwrap_or(&Value::Null);
        params.push(bind(ty, name, value)?);
    }
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref() as _).collect();
    let texts: Vec<String> = tx
        .query(&stmt, &refs)
        .map_err(|e| failed(&e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut rows = Vec::with_capacity(texts.len());
    for t in texts {
        rows.push(
            serde_json::from_str::<Value>(&t)
                .map_err(|e| SqlError::Failed(format!("row JSON: {e}")))?,
        );
    }
    let columns = match rows.first().and_then(Value::as_object) {
        Some(o) => o.keys().cloned().collect(),
        None => tx
            .prepare(call.sql)
            .map(|s| s.columns().iter().map(|c| c.name().to_owned()).collect())
            .unwrap_or_default(),
    };
    let _ = tx.rollback();
    Ok((columns, rows))
}

/// The error of a failed statement, by kind; its text names the archive (scrubbed).
fn classify(e: &postgres::Error, target: &super::Target) -> SqlError {
    let said = target.scrub(&super::connect::describe(e));
    match e.code() {
        Some(&SqlState::QUERY_CANCELED) => SqlError::Timeout,
        Some(&SqlState::INSUFFICIENT_PRIVILEGE) => SqlError::Refused(said),
        Some(&SqlState::READ_ONLY_SQL_TRANSACTION) => SqlError::Refused(format!(
            "the query writes; skill queries must be read-only ({said})"
        )),
        Some(c)
            if c == &SqlState::INVALID_DATETIME_FORMAT
                || c == &SqlState::DATETIME_FIELD_OVERFLOW
                || c == &SqlState::INVALID_TEXT_REPRESENTATION =>
        {
            SqlError::Argument {
                name: "arguments".into(),
                reason: said,
            }
        }
        _ => SqlError::Failed(said),
    }
}

/// `value` (argument `name`) as a parameter of type `ty`.
fn bind(ty: &Type, name: &str, value: &Value) -> Result<Box<dyn ToSql + Sync>, SqlError> {
    let wrong = |what: &str| SqlError::Argument {
        name: name.to_owned(),
        reason: format!("{value} is not {what}"),
    };
    let text = || match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let null = value.is_null();
    let int = || -> Result<Option<i64>, SqlError> {
        if null {
            return Ok(None);
        }
        value
            .as_i64()
            .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| wrong("an integer"))
    };
    let out: Box<dyn ToSql + Sync> = match *ty {
        Type::BOOL => Box::new(if null {
            None
        } else {
            Some(value.as_bool().ok_or_else(|| wrong("true or false"))?)
        }),
        Type::INT2 => Box::new(
            int()?
                .map(i16::try_from)
                .transpose()
                .map_err(|_| wrong("a small integer"))?,
        ),
        Type::INT4 => Box::new(
            int()?
                .map(i32::try_from)
                .transpose()
                .map_err(|_| wrong("a 32-bit integer"))?,
        ),
        Type::INT8 => Box::new(int()?),
        Type::FLOAT8 => Box::new(if null {
            None
        } else {
            Some(value.as_f64().ok_or_else(|| wrong("a number"))?)
        }),
        Type::DATE => Box::new(if null {
            None
        } else {
            Some(
                NaiveDate::parse_from_str(text().trim(), "%Y-%m-%d")
                    .map_err(|_| wrong("a date (YYYY-MM-DD)"))?,
            )
        }),
        Type::TIMESTAMP => Box::new(if null {
            None
        } else {
            Some(timestamp(&text()).ok_or_else(|| wrong("a time (YYYY-MM-DDTHH:MM:SSZ)"))?)
        }),
        Type::TIMESTAMPTZ => Box::new(if null {
            None
        } else {
            Some(
                timestamp(&text())
                    .ok_or_else(|| wrong("a time (YYYY-MM-DDTHH:MM:SSZ)"))?
                    .and_utc(),
            )
        }),
        Type::JSON | Type::JSONB => Box::new(if null { None } else { Some(value.clone()) }),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            Box::new(if null {
                None
            } else {
                Some(super::push::storable(&text()).into_owned())
            })
        }
        _ => {
            return Err(SqlError::Failed(format!(
                "`${name}` is used as a {ty}, which arguments cannot be bound as on the \
                 archive; cast it (`${name}::text`, `::integer`, `::date`…)"
            )))
        }
    };
    Ok(out)
}

/// A time as RFC 3339, `YYYY-MM-DD HH:MM:SS` or a date (midnight), as UTC.
fn timestamp(text: &str) -> Option<NaiveDateTime> {
    let t = text.trim();
    chrono::DateTime::parse_from_rfc3339(t)
        .map(|d| d.naive_utc())
        .ok()
        .or_else(|| NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S").ok())
        .or_else(|| NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S").ok())
        .or_else(|| {
            NaiveDate::parse_from_str(t, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn values_bind_as_the_inferred_type_or_name_their_argument() {
        assert!(bind(&Type::INT8, "limit", &Value::from(5)).is_ok());
        assert!(bind(&Type::INT4, "limit", &Value::from("7")).is_ok());
        assert!(bind(&Type::DATE, "date", &Value::from("2026-02-30")).is_err());
        assert!(bind(&Type::DATE, "date", &Value::from("2026-02-28")).is_ok());
        assert!(bind(&Type::TEXT, "x", &Value::Null).is_ok());
        match bind(&Type::INT4, "limit", &Value::from("many")) {
            Err(SqlError::Argument { name, .. }) => assert_eq!(name, "limit"),
            _ => panic!("an argument error"),
        }
        assert!(matches!(
            bind(&Type::POINT, "p", &Value::from(1)),
            Err(SqlError::Failed(_))
        ));
        assert_eq!(
            timestamp("2026-03-01T10:00:00Z").unwrap().to_string(),
            "2026-03-01 10:00:00"
        );
    }
}
