//! Parameter types several checks share. Each validates itself when deserialized and
//! describes itself as JSON Schema, so a binding's `params` are checked the same way by
//! the schema (with the parameter's pointer in the message) and by serde.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Pattern of [`Ident`]: what may be spliced into SQL as a table or column name.
const IDENT_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// A non-empty name: a row field or an argument.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Name(String);

impl TryFrom<String> for Name {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        if s.is_empty() {
            Err("a name must not be empty".into())
        } else {
            Ok(Self(s))
        }
    }
}

impl JsonSchema for Name {
    fn schema_name() -> Cow<'static, str> {
        "Name".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": 1})
    }
}

impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A store table or column name: an SQL identifier (ASCII letters, digits, `_`, not
/// starting with a digit), which is why it may be spliced into a query.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Ident(String);

impl TryFrom<String> for Ident {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let mut chars = s.chars();
        let head_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if head_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(Self(s))
        } else {
            Err(format!("`{s}` is not an SQL identifier ({IDENT_PATTERN})"))
        }
    }
}

impl JsonSchema for Ident {
    fn schema_name() -> Cow<'static, str> {
        "Ident".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": IDENT_PATTERN})
    }
}

impl std::ops::Deref for Ident {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// A JSON pointer into the structured output: empty (the whole output) or starting
/// with `/`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String")]
pub struct Pointer(String);

impl Pointer {
    /// `/rows`, where most engines put their rows.
    pub fn rows() -> Self {
        Self("/rows".into())
    }
}

impl TryFrom<String> for Pointer {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        if s.is_empty() || s.starts_with('/') {
            Ok(Self(s))
        } else {
            Err(format!(
                "`{s}` is not a JSON pointer (empty or starting with `/`)"
            ))
        }
    }
}

impl JsonSchema for Pointer {
    fn schema_name() -> Cow<'static, str> {
        "Pointer".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^(/.*)?$"})
    }
}

impl std::ops::Deref for Pointer {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// One name or a non-empty list of them: a single row field or column, or the parts
/// of a composite key (`[source, conversation_id, message_id]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single name.
    One(T),
    /// Several names, in order.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The names in order.
    pub fn as_slice(&self) -> &[T] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(many) => many,
        }
    }
}

impl<T: JsonSchema> JsonSchema for OneOrMany<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("OneOrMany_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<T>();
        json_schema!({"oneOf": [item, {"type": "array", "minItems": 1, "items": item}]})
    }
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

impl Direction {
    /// `ascending` or `descending`, for messages.
    pub fn word(self) -> &'static str {
        match self {
            Self::Asc => "ascending",
            Self::Desc => "descending",
        }
    }
}

/// A store a check reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreName {
    /// `conversations.duckdb` (table `all_conversations`).
    #[default]
    Conversations,
    /// `memories.sqlite` (table `memories`).
    Memories,
}

/// Implements `JsonSchema` for a unit-variant enum as `{"type": "string", "enum": [...]}`:
/// derived, variant doc comments would turn it into a `oneOf` whose error message no
/// longer lists the accepted values.
macro_rules! string_enum_schema {
    ($ty:ty, $($value:literal),+) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": [$($value),+]})
            }
        }
    };
}
pub(super) use string_enum_schema;

string_enum_schema!(Direction, "asc", "desc");
string_enum_schema!(StoreName, "conversations", "memories");

/// For `Option<Value>` parameters: a parameter given as `null` is `Some(Value::Null)`
/// (an expected value of null), not absent. Use with `#[serde(default)]`.
///
/// # Errors
/// None beyond the deserializer's own.
pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_idents_and_pointers_validate_when_deserialized() {
        assert!(serde_json::from_value::<Name>(json!("")).is_err());
        assert_eq!(
            &*serde_json::from_value::<Name>(json!("role")).unwrap(),
            "role"
        );
        assert!(serde_json::from_value::<Ident>(json!("content; DROP")).is_err());
        assert!(serde_json::from_value::<Ident>(json!("1st")).is_err());
        assert_eq!(
            &*serde_json::from_value::<Ident>(json!("_a1")).unwrap(),
            "_a1"
        );
        assert!(serde_json::from_value::<Pointer>(json!("rows")).is_err());
        assert_eq!(&*serde_json::from_value::<Pointer>(json!("")).unwrap(), "");
    }

    #[test]
    fn one_or_many_reads_both_shapes() {
        let one: OneOrMany<Name> = serde_json::from_value(json!("id")).unwrap();
        let many: OneOrMany<Name> = serde_json::from_value(json!(["a", "b"])).unwrap();
        assert_eq!(one.as_slice().len(), 1);
        assert_eq!(many.as_slice().len(), 2);
        let schema = schemars::schema_for!(OneOrMany<Ident>).to_value();
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        assert!(validator.is_valid(&json!(["a", "b"])));
        assert!(!validator.is_valid(&json!([])));
        assert!(!validator.is_valid(&json!("a b")));
    }
}
