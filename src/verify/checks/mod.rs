//! The check vocabulary: generic, reusable checks a conformance binding names by id.
//!
//! Each check is a type implementing [`TypedCheck`]: an id, a one-line summary, a
//! `Params` type (serde + schemars) and a `run` function. The parameter schema shown by
//! `skills verify --list-checks` and used to validate a binding is generated from
//! `Params`, so the Rust type and the schema cannot disagree. Checks are grouped by what
//! they look at:
//!
//! - [`rows`]: the rows and values of the structured output;
//! - [`text`]: the rendered markdown;
//! - [`store`]: output rows against the store records they came from;
//! - [`process`]: how calls behave (repeatability, errors, argument changes);
//! - [`scenario`]: sequences of calls on a private copy of the stores.
//!
//! A check runs on one case (arguments + corpus) through a [`Probe`]; a failing check
//! returns a message with the first counter-example. No check knows any particular skill.
//!
//! Row-based checks read the rows at the JSON pointer `rows` of the structured output
//! (default `/rows`) and fail on an empty row list unless `allow_empty: true`, so a
//! check never passes vacuously.

pub mod params;
pub mod process;
pub mod rows;
pub mod scenario;
pub mod store;
pub mod text;
mod util;

use std::marker::PhantomData;
use std::path::Path;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::EmbedderChoice;
use crate::host::{CallOutput, Host, Skill};

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
    /// The team archive the host answers from (the corpus's own database), passed to
    /// fresh processes; `None`: the local stores.
    pub archive: Option<&'a crate::archive::Target>,
    /// The server that archive is on, to copy it for a case that writes
    /// ([`scenario::isolated`]); `None` on the local stores.
    pub archive_server: Option<&'a crate::verify::archive::ArchiveServer>,
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
}

/// One check of the vocabulary, as a type.
///
/// `Params` is what a binding's `params` deserialize into; its JSON Schema (generated
/// by schemars, doc comments becoming descriptions) validates them first, so `run`
/// sees only parameters that passed every constraint of the schema.
pub trait TypedCheck {
    /// The id a binding names.
    const ID: &'static str;
    /// One line: what it proves.
    const SUMMARY: &'static str;
    /// The parameters. Use `#[serde(deny_unknown_fields)]` so unknown parameters fail.
    type Params: DeserializeOwned + JsonSchema;
    /// Runs the check on one case.
    ///
    /// # Errors
    /// The failure message, with the first counter-example.
    fn run(probe: &Probe<'_>, params: &Self::Params) -> Result<(), String>;
}

/// A check whose parameters were validated and parsed: ready to run on cases.
pub trait ReadyCheck {
    /// Runs it on one case. `Err` is the failure message with the first counter-example.
    ///
    /// # Errors
    /// The failure message.
    fn run(&self, probe: &Probe<'_>) -> Result<(), String>;
}

/// A [`TypedCheck`] with its parsed parameters.
struct WithParams<C: TypedCheck> {
    params: C::Params,
    check: PhantomData<fn() -> C>,
}

impl<C: TypedCheck> ReadyCheck for WithParams<C> {
    fn run(&self, probe: &Probe<'_>) -> Result<(), String> {
        C::run(probe, &self.params)
    }
}

/// One entry of the vocabulary: a [`TypedCheck`] seen without its types, so checks of
/// different parameter types sit in one list.
pub struct Check {
    /// The id a binding names.
    pub id: &'static str,
    /// One line: what it proves.
    pub summary: &'static str,
    /// JSON Schema (draft 2020-12) of its parameters, generated from `Params`.
    schema: Value,
    /// Parses validated parameters into the check's `Params`.
    parse: fn(&Value) -> Result<Box<dyn ReadyCheck>, String>,
}

impl Check {
    /// The vocabulary entry of check type `C`.
    pub fn of<C: TypedCheck + 'static>() -> Self {
        Self {
            id: C::ID,
            summary: C::SUMMARY,
            schema: params_schema::<C::Params>(),
            parse: |params| {
                let params = serde_json::from_value::<C::Params>(params.clone())
                    .map_err(|e| e.to_string())?;
                Ok(Box::new(WithParams::<C> {
                    params,
                    check: PhantomData,
                }))
            },
        }
    }

    /// The parameter schema as JSON.
    pub fn params_schema(&self) -> &Value {
        &self.schema
    }

    /// Validates `params` against the parameter schema, then parses them.
    ///
    /// # Errors
    /// Every violation, `; `-joined, each with the JSON pointer of the parameter
    /// (`` `/direction`: "up" is not one of "asc" or "desc" ``); an unknown parameter
    /// is named with the parameters the check knows.
    pub fn bind(&self, params: &Value) -> Result<Box<dyn ReadyCheck>, String> {
        let validator = jsonschema::draft202012::new(&self.schema)
            .map_err(|e| format!("check `{}`: parameter schema: {e}", self.id))?;
        let unknown = unknown_keys(params, &self.schema);
        let mut errors: Vec<String> = Vec::new();
        if !unknown.is_empty() {
            errors.push(unknown_params(&unknown, &self.schema));
        }
        for e in validator.iter_errors(params) {
            use jsonschema::error::ValidationErrorKind as Kind;
            let at = e.instance_path().to_string();
            // Unknown top-level parameters are reported once, above, with the known ones.
            let about_unknown = matches!(
                e.kind(),
                Kind::AdditionalProperties { .. } | Kind::FalseSchema
            ) && at.matches('/').count() <= 1
                && e.schema_path().to_string().contains("additionalProperties");
            if about_unknown && !unknown.is_empty() {
                continue;
            }
            errors.push(if at.is_empty() {
                e.to_string()
            } else {
                format!("`{at}`: {e}")
            });
        }
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        (self.parse)(params)
    }

    /// Validates `params` (see [`Check::bind`]) without keeping them.
    ///
    /// # Errors
    /// As [`Check::bind`].
    pub fn validate(&self, params: &Value) -> Result<(), String> {
        self.bind(params).map(|_| ())
    }
}

/// Top-level keys of `params` the schema does not list (when it allows no others).
fn unknown_keys(params: &Value, schema: &Value) -> Vec<String> {
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Vec::new();
    }
    let known = schema.get("properties").and_then(Value::as_object);
    params
        .as_object()
        .map(|p| {
            p.keys()
                .filter(|k| !known.is_some_and(|known| known.contains_key(*k)))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// `unknown parameter `x` (known parameters: a, b)`, for unexpected top-level keys.
fn unknown_params(unexpected: &[String], schema: &Value) -> String {
    let known: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let names: Vec<String> = unexpected.iter().map(|u| format!("`{u}`")).collect();
    let noun = if names.len() == 1 {
        "parameter"
    } else {
        "parameters"
    };
    let known = if known.is_empty() {
        "it takes none".to_owned()
    } else {
        format!("known parameters: {}", known.join(", "))
    };
    format!("unknown {noun} {} ({known})", names.join(", "))
}

/// The JSON Schema of `P`: draft 2020-12, subschemas inlined (so `--list-checks`
/// shows each parameter in place), without the Rust type name as title.
fn params_schema<P: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<P>().to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
    }
    schema
}

/// Every check the host knows, in a fixed order.
pub fn vocabulary() -> &'static [Check] {
    static VOCABULARY: std::sync::OnceLock<Vec<Check>> = std::sync::OnceLock::new();
    VOCABULARY.get_or_init(|| {
        vec![
            Check::of::<process::Deterministic>(),
            Check::of::<rows::EveryRowHas>(),
            Check::of::<rows::FieldEquals>(),
            Check::of::<rows::SomeRowContains>(),
            Check::of::<rows::OrderedBy>(),
            Check::of::<rows::RowCount>(),
            Check::of::<text::TextEquals>(),
            Check::of::<text::TextRowsIntact>(),
            Check::of::<rows::OutputSchema>(),
            Check::of::<process::ArgumentError>(),
            Check::of::<store::PrefixOfStoreField>(),
            Check::of::<store::StorePredicate>(),
            Check::of::<store::RowsMatchSql>(),
            Check::of::<rows::ValueAt>(),
            Check::of::<rows::EveryRowSatisfies>(),
            Check::of::<rows::SomeRowSatisfies>(),
            Check::of::<process::SameAs>(),
            Check::of::<process::ErrorContains>(),
            Check::of::<store::StoreOrderedBy>(),
            Check::of::<store::StoreUnchanged>(),
            Check::of::<scenario::Scenario>(),
        ]
    })
}

/// The vocabulary as JSON, for `skills verify --list-checks`:
/// `[{"id", "summary", "params": <JSON Schema>}]`.
pub fn describe() -> Value {
    Value::Array(
        vocabulary()
            .iter()
            .map(|c| json!({"id": c.id, "summary": c.summary, "params": c.params_schema()}))
            .collect(),
    )
}

/// Looks a check up by id.
pub fn find(id: &str) -> Option<&'static Check> {
    vocabulary().iter().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_param_schema_compiles_and_rejects_unknown_params() {
        for check in vocabulary() {
            let schema = check.params_schema();
            jsonschema::draft202012::new(schema).unwrap_or_else(|e| panic!("{}: {e}", check.id));
            assert_eq!(schema["additionalProperties"], json!(false), "{}", check.id);
            let err = check
                .validate(&json!({"no_such_param": 1}))
                .err()
                .unwrap_or_else(|| panic!("{}: accepted an unknown parameter", check.id));
            assert!(
                err.contains("unknown parameter `no_such_param`"),
                "{}: {err}",
                check.id
            );
        }
    }

    #[test]
    fn ids_are_unique() {
        let mut ids: Vec<&str> = vocabulary().iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), vocabulary().len());
    }

    #[test]
    fn bad_params_are_named() {
        let check = find("ordered_by").unwrap();
        let err = check
            .validate(&json!({"field": "created", "direction": "up"}))
            .unwrap_err();
        assert_eq!(err, r#"`/direction`: "up" is not one of "asc" or "desc""#);
        assert!(check
            .validate(&json!({"field": "created", "direction": "desc"}))
            .is_ok());
        let err = check
            .validate(&json!({"field": "created", "direction": "desc", "dir": 1}))
            .unwrap_err();
        assert_eq!(
            err,
            "unknown parameter `dir` (known parameters: field, direction, then, rows, allow_empty)"
        );
    }

    #[test]
    fn described_schemas_carry_docs_and_defaults() {
        let all = describe();
        let det = all
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "deterministic")
            .unwrap();
        let runs = &det["params"]["properties"]["runs"];
        assert_eq!(runs["default"], json!(3));
        assert_eq!(runs["minimum"], json!(2));
        assert!(runs["description"].as_str().unwrap().contains("runs"));
        assert!(det["params"].get("title").is_none());
    }
}
