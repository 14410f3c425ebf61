//! `scenario`: a sequence of calls on a private copy of the case's stores — for
//! promises that span calls (save, then search; save twice; supersede, then search)
//! and for skills that write. On the team archive the copy is of the local stores and
//! of the archive they were pushed into ([`isolated`]).
//!
//! The case's call runs first and its output is named `case`; then each step calls a
//! skill (default: the one under test) with arguments whose strings are templates over
//! the outputs so far (`case`, each step's `as` name) and the case's arguments `args`
//! (see [`crate::engines::compose::Template`]: a lone `{{ expr }}` keeps its type).
//! Each call's output is checked by its `expect` list; a step with `fails_with` must
//! fail with a message containing each string.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::params::{Name, Pointer};
use super::util::show;
use super::{Probe, TypedCheck};
use crate::engines::compose::Template;
use crate::host::Host;
use crate::stores::StorePaths;

/// `scenario`.
pub struct Scenario;

/// One expectation on a call's structured output: any of `equals`, `contains`,
/// `at_most`, `row_with`, `no_row_with` and `expression` (all must hold), or `absent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// JSON pointer into the structured output.
    pub pointer: Pointer,
    /// The value expected there (strings are templates over earlier outputs).
    #[serde(default)]
    pub equals: Option<Value>,
    /// Strings the value (text, or its JSON) must each contain.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub contains: Option<Vec<Name>>,
    /// `true`: there is no value at `pointer`.
    #[serde(default)]
    #[schemars(extend("const" = true))]
    pub absent: Option<bool>,
    /// The number at `pointer` is at most this.
    #[serde(default)]
    pub at_most: Option<f64>,
    /// Some row of the array at `pointer` has these fields with these values
    /// (templates).
    #[serde(default)]
    pub row_with: Option<Map<String, Value>>,
    /// No row of the array at `pointer` has these fields with these values.
    #[serde(default)]
    pub no_row_with: Option<Map<String, Value>>,
    /// A minijinja expression that must be true; it sees `value` (the value at
    /// `pointer`), `data` (the whole output) and the outputs so far.
    #[serde(default)]
    pub expression: Option<Name>,
}

/// One call after the case's.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Skill to call (default: the skill under test).
    #[serde(default)]
    pub skill: Option<Name>,
    /// Arguments (strings are templates); default: the case's arguments.
    #[serde(default)]
    pub args: Option<Map<String, Value>>,
    /// Name later templates use for this call's output.
    #[serde(default, rename = "as")]
    pub name: Option<Name>,
    /// Expectations on this call's output.
    #[serde(default)]
    pub expect: Vec<Expect>,
    /// The call must fail with a message holding each of these.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub fails_with: Option<Vec<Name>>,
    /// The store files must be byte-identical before and after this call.
    #[serde(default)]
    pub store_unchanged: bool,
}

/// Parameters of `scenario`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioParams {
    /// Expectations on the case's own call (its output is named `case`).
    #[serde(default)]
    pub expect: Vec<Expect>,
    /// Calls after the case's, in order.
    #[serde(default)]
    pub then: Vec<Step>,
}

impl TypedCheck for Scenario {
    const ID: &'static str = "scenario";
    const SUMMARY: &'static str = "on a private copy of the case's stores: the case's call (output `case`) then each step's call (any skill; string arguments are templates over earlier outputs), each output meeting its `expect` list (`equals`, `contains`, `absent`, `at_most`, `row_with`, `no_row_with`, `expression`), a step with `fails_with` failing with those strings, one with `store_unchanged` leaving every store file byte-identical";
    type Params = ScenarioParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let private = isolated(probe)?;
        let host = &private.host;
        let mut vars = Map::new();
        vars.insert("args".into(), probe.args.clone());
        let case = host
            .call(probe.skill.name(), probe.args.clone())
            .map_err(|e| format!("the case's call failed: {e}"))?;
        check_all(&p.expect, &case.data, &vars).map_err(|e| format!("case: {e}"))?;
        vars.insert("case".into(), case.data);
        for (i, step) in p.then.iter().enumerate() {
            let label = format!("step {}", i + 1);
            let skill = step.skill.as_deref().unwrap_or(probe.skill.name());
            let args = match &step.args {
                Some(a) => Template::parse(&Value::Object(a.clone()), "/args")
                    .and_then(|t| t.eval(&Value::Object(vars.clone())))
                    .map_err(|e| format!("{label}: arguments: {e}"))?,
                None => probe.args.clone(),
            };
            let before = if step.store_unchanged {
                Some(super::super::snapshot(&[host_dir(host)])?)
            } else {
                None
            };
            let result = host.call(skill, args.clone());
            if let Some(before) = before {
                let after = super::super::snapshot(&[host_dir(host)])?;
                if before != after {
                    return Err(format!(
                        "{label} (`{skill}` with {}): a store file changed",
                        show(&args)
                    ));
                }
            }
            match (result, &step.fails_with) {
                (Ok(out), None) => {
                    check_all(&step.expect, &out.data, &vars)
                        .map_err(|e| format!("{label} (`{skill}` with {}): {e}", show(&args)))?;
                    if let Some(name) = &step.name {
                        vars.insert(name.to_string(), out.data);
                    }
                }
                (Ok(out), Some(_)) => {
                    return Err(format!(
                        "{label} (`{skill}` with {}): succeeded (data {}), expected an error",
                        show(&args),
                        show(&out.data)
                    ))
                }
                (Err(e), Some(needles)) => {
                    let message = e.to_string();
                    for needle in needles {
                        if !message.contains(&**needle) {
                            return Err(format!(
                                "{label}: the error {message:?} does not contain {:?}",
                                &**needle
                            ));
                        }
                    }
                }
                (Err(e), None) => {
                    return Err(format!(
                        "{label} (`{skill}` with {}): call failed: {e}",
                        show(&args)
                    ))
                }
            }
        }
        Ok(())
    }
}

fn host_dir(host: &Host) -> std::path::PathBuf {
    host.context()
        .paths()
        .memories
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// A host over private stores ([`isolated`]); drops the host, then the private
/// archive, then the private folder.
pub struct Isolated {
    /// The host over the private stores (and the private archive, if any).
    pub host: Host,
    /// The private copy of the case's archive, when the case runs on one.
    pub archive: Option<crate::verify::archive::PrivateArchive>,
    /// The private data folder, removed on drop.
    pub dir: tempfile::TempDir,
}

/// A host over a private copy of the probe's data folder (removed when the returned
/// value drops). The memories store is copied; the conversations store's files
/// (database, search index, embeddings) are hard-linked when no loaded skill may write
/// them — a read-only DuckDB open changes nothing, and a link keeps the file's inode,
/// size and time, so the index and the embeddings still match their stamp — and
/// copied otherwise (or when linking fails). On the team archive
/// ([`Probe::archive`]) the host answers from a private copy of that archive
/// ([`crate::verify::archive::ArchiveServer::private_copy`]), so a write there (memo-save
/// pushes what it saves) never reaches another case either.
///
/// # Errors
/// A copy failure, as text.
pub fn isolated(probe: &Probe<'_>) -> Result<Isolated, String> {
    let tmp = tempfile::Builder::new()
        .prefix("skills-verify-private-")
        .tempdir()
        .map_err(|e| format!("cannot create a private data folder: {e}"))?;
    let link = !probe
        .host
        .skills()
        .iter()
        .any(|s| s.access.writes(crate::stores::Store::Conversations));
    let memories = StorePaths::in_dir(probe.data_dir).memories;
    let memories_name = memories
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    copy_dir(probe.data_dir, tmp.path(), &|path: &std::path::Path| {
        link && !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&memories_name))
    })?;
    let archive = match (probe.archive, probe.archive_server) {
        (None, _) => None,
        (Some(of), Some(server)) => Some(server.private_copy(of)?),
        (Some(of), None) => {
            return Err(format!(
                "a case that writes needs a private copy of the archive {}, and this run \
                 cannot make one (no archive server)",
                of.shown()
            ))
        }
    };
    let pool = archive
        .as_ref()
        .map(|a| std::sync::Arc::new(crate::archive::search::Pool::new(a.target.clone())));
    let host = probe
        .host
        .relocated_with_archive(StorePaths::in_dir(tmp.path()), pool);
    Ok(Isolated {
        host,
        archive,
        dir: tmp,
    })
}

/// Copies `from` into `to` recursively; files for which `link` is true are
/// hard-linked instead (copied when linking fails).
fn copy_dir(
    from: &std::path::Path,
    to: &std::path::Path,
    link: &dyn Fn(&std::path::Path) -> bool,
) -> Result<(), String> {
    if !from.exists() {
        return Ok(());
    }
    for entry in fs_err::read_dir(from).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let target = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            fs_err::create_dir_all(&target).map_err(|e| e.to_string())?;
            copy_dir(&path, &target, link)?;
        } else if !(link(&path) && std::fs::hard_link(&path, &target).is_ok()) {
            fs_err::copy(&path, &target).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn expand(value: &Value, vars: &Map<String, Value>) -> Result<Value, String> {
    Template::parse(value, "").and_then(|t| t.eval(&Value::Object(vars.clone())))
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn row_matches(
    row: &Value,
    fields: &Map<String, Value>,
    vars: &Map<String, Value>,
) -> Result<bool, String> {
    for (k, v) in fields {
        let want = expand(v, vars)?;
        if !row.get(k).is_some_and(|got| same(got, &want)) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn check_all(expects: &[Expect], data: &Value, vars: &Map<String, Value>) -> Result<(), String> {
    for e in expects {
        check(e, data, vars)?;
    }
    Ok(())
}

fn check(e: &Expect, data: &Value, vars: &Map<String, Value>) -> Result<(), String> {
    let pointer: &str = &e.pointer;
    let found = data.pointer(pointer);
    if e.absent.is_some() {
        return match found {
            None => Ok(()),
            Some(v) => Err(format!("`{pointer}` is {}, expected no value", show(v))),
        };
    }
    let Some(value) = found else {
        return Err(format!("no value at `{pointer}`: {}", show(data)));
    };
    if let Some(want) = &e.equals {
        let want = expand(want, vars)?;
        if !same(value, &want) {
            return Err(format!(
                "`{pointer}` is {}, expected {}",
                show(value),
                show(&want)
            ));
        }
    }
    for needle in e.contains.iter().flatten() {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if !text.contains(&**needle) {
            return Err(format!(
                "`{pointer}` is {}, expected it to contain {:?}",
                show(value),
                &**needle
            ));
        }
    }
    if let Some(max) = e.at_most {
        match value.as_f64() {
            Some(n) if n <= max => {}
            _ => {
                return Err(format!(
                    "`{pointer}` is {}, expected a number ≤ {max}",
                    show(value)
                ))
            }
        }
    }
    let rows = || {
        value
            .as_array()
            .ok_or_else(|| format!("`{pointer}` is {}, expected an array", show(value)))
    };
    if let Some(fields) = &e.row_with {
        let rows = rows()?;
        let mut any = false;
        for row in rows {
            any |= row_matches(row, fields, vars)?;
        }
        if !any {
            return Err(format!(
                "no row of `{pointer}` has {}: {}",
                show(&expand(&Value::Object(fields.clone()), vars)?),
                show(value)
            ));
        }
    }
    if let Some(expr) = &e.expression {
        let mut scope = vars.clone();
        scope.insert("value".into(), value.clone());
        scope.insert("data".into(), data.clone());
        let env = crate::host::render::environment();
        let compiled = env
            .compile_expression(expr)
            .map_err(|err| format!("`expression` does not parse: {err}"))?;
        let out = compiled
            .eval(minijinja::Value::from_serialize(&scope))
            .map_err(|err| format!("`expression` {:?} failed: {err:#}", &**expr))?;
        if !out.is_true() {
            return Err(format!(
                "`expression` {:?} is false for `{pointer}` = {}",
                &**expr,
                show(value)
            ));
        }
    }
    if let Some(fields) = &e.no_row_with {
        for (i, row) in rows()?.iter().enumerate() {
            if row_matches(row, fields, vars)? {
                return Err(format!(
                    "row {i} of `{pointer}` has {}: {}",
                    show(&expand(&Value::Object(fields.clone()), vars)?),
                    show(row)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use serde_json::json;

    #[test]
    fn params_validate() {
        let check = find("scenario").unwrap();
        assert!(check
            .validate(&json!({"then": [{"skill": "memo-search", "args": {"query": "x"}, "as": "s", "expect": [{"pointer": "/hits", "row_with": {"id": "{{ case.id }}"}}]}]}))
            .is_ok());
        let err = check
            .validate(&json!({"then": [{"bogus": 1}]}))
            .unwrap_err();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn expectations_read_templates() {
        let vars = json!({"case": {"id": "m-1"}});
        let vars = vars.as_object().unwrap().clone();
        let data = json!({"hits": [{"id": "m-1", "n": 2}], "tokens": 10});
        let e: super::Expect = serde_json::from_value(
            json!({"pointer": "/hits", "row_with": {"id": "{{ case.id }}"}}),
        )
        .unwrap();
        assert!(super::check(&e, &data, &vars).is_ok());
        let e: super::Expect = serde_json::from_value(
            json!({"pointer": "/hits", "no_row_with": {"id": "{{ case.id }}"}}),
        )
        .unwrap();
        assert!(super::check(&e, &data, &vars).is_err());
        let e: super::Expect =
            serde_json::from_value(json!({"pointer": "/tokens", "at_most": 9})).unwrap();
        assert!(super::check(&e, &data, &vars).is_err());
    }
}
