//! The templates of a composition: JSON whose strings are minijinja templates or
//! expressions, parsed (syntax checked) when the document binds and evaluated per call
//! and per row under [`TEMPLATE_FUEL`].

use serde_json::{Map, Value};

use super::TEMPLATE_FUEL;

/// A template tree: JSON whose strings are templates.
#[derive(Debug, Clone)]
pub enum Template {
    /// A value passed as written (numbers, booleans, null, strings without `{{`/`{%`).
    Literal(Value),
    /// A string that is one `{{ expression }}`: evaluated, keeping its type.
    Expression(String),
    /// A string holding template syntax: rendered to text.
    Text(String),
    /// An array of templates.
    Array(Vec<Template>),
    /// An object of templates (order kept).
    Object(Vec<(String, Template)>),
}

fn template_env() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env
}

impl Template {
    /// Parses `value` into a template tree, checking every template's syntax.
    ///
    /// # Errors
    /// The JSON pointer (below `at`) of the first string that does not parse, and why.
    pub fn parse(value: &Value, at: &str) -> Result<Self, String> {
        let env = template_env();
        Self::parse_in(&env, value, at)
    }

    fn parse_in(env: &minijinja::Environment<'_>, value: &Value, at: &str) -> Result<Self, String> {
        Ok(match value {
            Value::String(s) => {
                let trimmed = s.trim();
                let inner = trimmed
                    .strip_prefix("{{")
                    .and_then(|t| t.strip_suffix("}}"))
                    .filter(|t| !t.contains("{{") && !t.contains("}}"));
                if let Some(expr) = inner {
                    env.compile_expression(expr)
                        .map_err(|e| format!("`{at}`: expression does not parse: {e}"))?;
                    Self::Expression(expr.trim().to_owned())
                } else if s.contains("{{") || s.contains("{%") {
                    env.template_from_str(s)
                        .map_err(|e| format!("`{at}`: template does not parse: {e}"))?;
                    Self::Text(s.clone())
                } else {
                    Self::Literal(value.clone())
                }
            }
            Value::Array(items) => Self::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Self::parse_in(env, v, &format!("{at}/{i}")))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Self::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), Self::parse_in(env, v, &format!("{at}/{k}"))?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => Self::Literal(other.clone()),
        })
    }

    /// Evaluates the tree against `vars` (a JSON object of variables). An object
    /// member whose value comes out `null` is left out.
    ///
    /// # Errors
    /// The minijinja error of the first template that fails (out of fuel included).
    pub fn eval(&self, vars: &Value) -> Result<Value, String> {
        let env = template_env();
        let ctx = minijinja::Value::from_serialize(vars);
        self.eval_in(&env, &ctx)
    }

    fn eval_in(
        &self,
        env: &minijinja::Environment<'_>,
        ctx: &minijinja::Value,
    ) -> Result<Value, String> {
        Ok(match self {
            Self::Literal(v) => v.clone(),
            Self::Expression(expr) => {
                let compiled = env.compile_expression(expr).map_err(|e| e.to_string())?;
                let out = compiled.eval(ctx).map_err(|e| format!("{e:#}"))?;
                if out.is_undefined() || out.is_none() {
                    Value::Null
                } else {
                    serde_json::to_value(&out).map_err(|e| e.to_string())?
                }
            }
            Self::Text(src) => {
                Value::String(env.render_str(src, ctx).map_err(|e| format!("{e:#}"))?)
            }
            Self::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|t| t.eval_in(env, ctx))
                    .collect::<Result<_, _>>()?,
            ),
            Self::Object(members) => {
                let mut map = Map::new();
                for (k, t) in members {
                    let v = t.eval_in(env, ctx)?;
                    if !v.is_null() {
                        map.insert(k.clone(), v);
                    }
                }
                Value::Object(map)
            }
        })
    }
}
