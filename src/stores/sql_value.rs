//! JSON ↔ SQL value conversion for SQL that comes from skills: the `sql` engine's
//! parameters and result rows, and the conformance checks' lookups and reference
//! queries. One mapping, so a value means the same in a skill's query and in the check
//! that verifies it.
//!
//! Parameters (JSON → SQL): `null` → NULL, booleans → BOOLEAN (DuckDB) or 0/1
//! (SQLite), integers that fit `i64` → BIGINT/INTEGER, other numbers → DOUBLE/REAL,
//! strings → text, arrays and objects → their JSON text.
//!
//! Results (SQL → JSON): NULL → `null`, integers and floats → numbers, text → string
//! (invalid UTF-8 replaced), blobs → `"<N bytes>"`; DuckDB's HUGEINT → its decimal
//! text, and other DuckDB types (dates, lists…) → their debug text.

use duckdb::types::Value as Duck;
use rusqlite::types::{Value as Lite, ValueRef as LiteRef};
use serde_json::{json, Value};

/// A JSON value as a DuckDB parameter.
pub fn to_duckdb(v: &Value) -> Duck {
    match v {
        Value::Null => Duck::Null,
        Value::Bool(b) => Duck::Boolean(*b),
        Value::Number(n) => n.as_i64().map_or_else(
            || Duck::Double(n.as_f64().unwrap_or(f64::NAN)),
            Duck::BigInt,
        ),
        Value::String(s) => Duck::Text(s.clone()),
        other => Duck::Text(other.to_string()),
    }
}

/// A JSON value as a SQLite parameter.
pub fn to_sqlite(v: &Value) -> Lite {
    match v {
        Value::Null => Lite::Null,
        Value::Bool(b) => Lite::Integer(i64::from(*b)),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| Lite::Real(n.as_f64().unwrap_or(f64::NAN)), Lite::Integer),
        Value::String(s) => Lite::Text(s.clone()),
        other => Lite::Text(other.to_string()),
    }
}

/// A SQLite column value as JSON.
pub fn from_sqlite(v: LiteRef<'_>) -> Value {
    match v {
        LiteRef::Null => Value::Null,
        LiteRef::Integer(i) => json!(i),
        LiteRef::Real(f) => json!(f),
        LiteRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        LiteRef::Blob(b) => Value::String(format!("<{} bytes>", b.len())),
    }
}

/// A DuckDB column value as JSON. (The `sql` engine has DuckDB build each row's JSON
/// with `to_json` instead, so dates and nested types keep their JSON form there.)
pub fn from_duckdb(v: Duck) -> Value {
    match v {
        Duck::Null => Value::Null,
        Duck::Boolean(b) => Value::Bool(b),
        Duck::TinyInt(x) => json!(x),
        Duck::SmallInt(x) => json!(x),
        Duck::Int(x) => json!(x),
        Duck::BigInt(x) => json!(x),
        Duck::HugeInt(x) => json!(x.to_string()),
        Duck::UTinyInt(x) => json!(x),
        Duck::USmallInt(x) => json!(x),
        Duck::UInt(x) => json!(x),
        Duck::UBigInt(x) => json!(x),
        Duck::Float(x) => json!(x),
        Duck::Double(x) => json!(x),
        Duck::Text(s) => Value::String(s),
        Duck::Blob(b) => Value::String(format!("<{} bytes>", b.len())),
        other => Value::String(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_map_by_json_type() {
        assert_eq!(to_duckdb(&json!(null)), Duck::Null);
        assert_eq!(to_duckdb(&json!(true)), Duck::Boolean(true));
        assert_eq!(to_duckdb(&json!(-3)), Duck::BigInt(-3));
        assert_eq!(to_duckdb(&json!(1.5)), Duck::Double(1.5));
        assert_eq!(to_duckdb(&json!(u64::MAX)), Duck::Double(u64::MAX as f64));
        assert_eq!(to_duckdb(&json!(["a"])), Duck::Text("[\"a\"]".into()));
        assert_eq!(to_sqlite(&json!(true)), Lite::Integer(1));
        assert_eq!(to_sqlite(&json!(7)), Lite::Integer(7));
        assert_eq!(to_sqlite(&json!(0.25)), Lite::Real(0.25));
        assert_eq!(to_sqlite(&json!({"k": 1})), Lite::Text("{\"k\":1}".into()));
    }

    #[test]
    fn results_map_to_json() {
        assert_eq!(from_sqlite(LiteRef::Integer(4)), json!(4));
        assert_eq!(from_sqlite(LiteRef::Text(b"caf\xc3\xa9")), json!("café"));
        assert_eq!(from_sqlite(LiteRef::Text(b"\xff")), json!("\u{fffd}"));
        assert_eq!(from_sqlite(LiteRef::Blob(&[1, 2, 3])), json!("<3 bytes>"));
        assert_eq!(from_duckdb(Duck::HugeInt(5)), json!("5"));
        assert_eq!(from_duckdb(Duck::UInt(9)), json!(9));
        assert_eq!(from_duckdb(Duck::Text("x".into())), json!("x"));
    }

    #[test]
    fn parameters_round_trip_through_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for v in [json!(null), json!(12), json!(2.5), json!("t")] {
            let back: Value = conn
                .query_row("SELECT ?1", [to_sqlite(&v)], |r| {
                    Ok(from_sqlite(r.get_ref(0)?))
                })
                .unwrap();
            assert_eq!(back, v);
        }
    }
}
