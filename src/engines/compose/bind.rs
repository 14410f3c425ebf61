//! Binding a document: `engine-options` read as written, checked (sources, item fields,
//! row pointers, weights, fusion, budget argument) and turned into a [`Composed`].

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::items::NearDuplicates;
use super::template::Template;
use super::{weight_value, Compose, Composed, Source, Weight};
use crate::engines::{Binding, Context, Engine, EngineError};

/// `engine-options` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    sources: Vec<SourceOptions>,
    #[serde(default)]
    fuse: FuseOptions,
    #[serde(default)]
    budget: BudgetOptions,
    near_duplicates: Option<NearDuplicateOptions>,
    /// Arguments only the team archive answers (as engine `sql`'s `archive-only`):
    /// refused on the local stores, naming them, never ignored.
    #[serde(default, rename = "archive-only")]
    archive_only: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NearDuplicateOptions {
    overlap: f64,
    min_words: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceOptions {
    skill: String,
    label: Option<String>,
    #[serde(default = "empty_object")]
    args: Value,
    rows: Option<String>,
    weight: Option<Value>,
    item: Map<String, Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FuseOptions {
    #[serde(default = "rrf")]
    method: String,
    #[serde(default = "sixty")]
    k: f64,
}

impl Default for FuseOptions {
    fn default() -> Self {
        Self {
            method: rrf(),
            k: sixty(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetOptions {
    #[serde(default = "max_tokens")]
    arg: String,
    #[serde(default = "two_thousand")]
    default: usize,
}

impl Default for BudgetOptions {
    fn default() -> Self {
        Self {
            arg: max_tokens(),
            default: two_thousand(),
        }
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}
fn rrf() -> String {
    "rrf".into()
}
fn sixty() -> f64 {
    60.0
}
fn max_tokens() -> String {
    "max_tokens".into()
}
fn two_thousand() -> usize {
    2000
}

/// Item fields a source may map.
const ITEM_FIELDS: &[&str] = &[
    "id", "title", "text", "date", "citation", "key", "group", "covers", "note", "cites",
];

impl Engine for Compose {
    fn name(&self) -> &'static str {
        "compose"
    }

    fn bind(&self, binding: &Binding<'_>) -> Result<Option<Arc<dyn Engine>>, String> {
        let me = binding
            .skill_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        let options: Options = serde_json::from_value(binding.options.clone())
            .map_err(|e| format!("engine `compose`: {e}"))?;
        if options.sources.is_empty() {
            return Err("engine `compose`: `sources` names no skill".into());
        }
        if options.fuse.method != "rrf" {
            return Err(format!(
                "engine `compose`: `fuse.method` `{}` is unknown; the only method is `rrf`",
                options.fuse.method
            ));
        }
        if !(options.fuse.k.is_finite() && options.fuse.k >= 0.0) {
            return Err("engine `compose`: `fuse.k` must be a number ≥ 0".into());
        }
        let near_duplicates = match options.near_duplicates {
            None => None,
            Some(n) if n.overlap > 0.0 && n.overlap <= 1.0 && n.min_words >= 1 => {
                Some(NearDuplicates {
                    overlap: n.overlap,
                    min_words: n.min_words,
                })
            }
            Some(_) => {
                return Err(
                    "engine `compose`: `near_duplicates` needs `overlap` in (0, 1] and \
                     `min_words` ≥ 1"
                        .into(),
                )
            }
        };
        let props = binding
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        if props.is_none_or(|p| !p.contains_key(&options.budget.arg)) {
            return Err(format!(
                "engine `compose`: `budget.arg` `{}` is not an argument of the input schema",
                options.budget.arg
            ));
        }
        if let Some(unknown) = options
            .archive_only
            .iter()
            .find(|n| props.is_none_or(|p| !p.contains_key(n.as_str())))
        {
            return Err(format!(
                "engine `compose`: `archive-only`: `{unknown}` is not an argument of the input \
                 schema"
            ));
        }
        let mut sources = Vec::new();
        for (i, s) in options.sources.iter().enumerate() {
            let at = format!("/engine-options/sources/{i}");
            if s.skill == me {
                return Err(format!(
                    "engine `compose`: `{at}/skill`: skill `{me}` cannot call itself"
                ));
            }
            if !s.args.is_object() {
                return Err(format!("engine `compose`: `{at}/args` must be an object"));
            }
            for key in s.item.keys() {
                if !ITEM_FIELDS.contains(&key.as_str()) {
                    return Err(format!(
                        "engine `compose`: `{at}/item/{key}` is not an item field; known: {}",
                        ITEM_FIELDS.join(", ")
                    ));
                }
            }
            for required in ["citation", "text"] {
                if !s.item.contains_key(required) {
                    return Err(format!("engine `compose`: `{at}/item` needs `{required}`"));
                }
            }
            let rows = s.rows.clone().unwrap_or_else(|| "/rows".into());
            if !rows.is_empty() && !rows.starts_with('/') {
                return Err(format!(
                    "engine `compose`: `{at}/rows` `{rows}` is not a JSON pointer"
                ));
            }
            let weight = match s.weight.as_ref() {
                None => Weight::Fixed(1.0),
                Some(v) => match Template::parse(v, &format!("{at}/weight"))
                    .map_err(|e| format!("engine `compose`: {e}"))?
                {
                    Template::Literal(v) => Weight::Fixed(weight_value(&v).ok_or_else(|| {
                        format!("engine `compose`: `{at}/weight` must be a number ≥ 0 or a template giving one, not {v}")
                    })?),
                    t @ (Template::Expression(_) | Template::Text(_)) => Weight::PerRow(t),
                    _ => {
                        return Err(format!(
                            "engine `compose`: `{at}/weight` must be a number ≥ 0 or a template giving one"
                        ))
                    }
                },
            };
            sources.push(Source {
                skill: s.skill.clone(),
                label: s.label.clone().unwrap_or_else(|| s.skill.clone()),
                args: Template::parse(&s.args, &format!("{at}/args"))
                    .map_err(|e| format!("engine `compose`: {e}"))?,
                rows,
                weight,
                item: Template::parse(&Value::Object(s.item.clone()), &format!("{at}/item"))
                    .map_err(|e| format!("engine `compose`: {e}"))?,
            });
        }
        Ok(Some(Arc::new(Composed {
            sources,
            k: options.fuse.k,
            near_duplicates,
            budget_arg: options.budget.arg,
            budget_default: options.budget.default,
            archive_only: options.archive_only,
        })))
    }

    fn call(&self, _args: &Value, _ctx: &Context) -> Result<Value, EngineError> {
        Err(EngineError::Unavailable(
            "engine `compose` needs `engine-options` naming its sources".into(),
        ))
    }
}
