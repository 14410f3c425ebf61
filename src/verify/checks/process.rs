//! Checks on how calls behave: repeatable in-process and in a fresh `skills` process,
//! rejected with the right argument or error, unchanged by argument changes.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::params::Name;
use super::util::{first_difference, show};
use super::{Probe, TypedCheck};
use crate::host::CallError;
use crate::settings;
use crate::verify::EmbedderChoice;

/// `deterministic`.
pub struct Deterministic;

/// Parameters of `deterministic`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeterministicParams {
    /// In-process runs compared with the first.
    #[serde(default = "three")]
    #[schemars(range(min = 2, max = 20))]
    pub runs: u64,
    /// Also compare with `skills run --json` in a new process.
    #[serde(default = "yes")]
    pub fresh_process: bool,
}

fn three() -> u64 {
    3
}

fn yes() -> bool {
    true
}

impl TypedCheck for Deterministic {
    const ID: &'static str = "deterministic";
    const SUMMARY: &'static str = "same arguments give byte-identical structured output and text over several runs, and in a fresh `skills run` process";
    type Params = DeterministicParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let first = probe.call()?;
        let first_data = serde_json::to_string(&first.data).map_err(|e| e.to_string())?;
        for run in 2..=p.runs {
            let again = probe.call()?;
            let data = serde_json::to_string(&again.data).map_err(|e| e.to_string())?;
            if data != first_data {
                return Err(format!(
                    "run {run} structured output differs from run 1: {}",
                    first_difference(&first_data, &data)
                ));
            }
            if again.text != first.text {
                return Err(format!(
                    "run {run} text differs from run 1: {}",
                    first_difference(&first.text, &again.text)
                ));
            }
        }
        if !p.fresh_process {
            return Ok(());
        }
        let fresh = fresh_run(probe)?;
        let data = serde_json::to_string(&fresh["data"]).map_err(|e| e.to_string())?;
        if data != first_data {
            return Err(format!(
                "fresh process structured output differs: {}",
                first_difference(&first_data, &data)
            ));
        }
        let text = fresh["text"].as_str().unwrap_or("");
        if text != first.text {
            return Err(format!(
                "fresh process text differs: {}",
                first_difference(&first.text, text)
            ));
        }
        Ok(())
    }
}

/// Runs the case in a new `skills run --json` process and returns its JSON output.
fn fresh_run(probe: &Probe<'_>) -> Result<Value, String> {
    let Some(binary) = probe.binary else {
        return Err("fresh process: the `skills` binary is not known".into());
    };
    let args = serde_json::to_string(probe.args).map_err(|e| e.to_string())?;
    let mut command = std::process::Command::new(binary);
    command
        .arg("--skills-dir")
        .arg(probe.skills_dir)
        .arg("--data-dir")
        .arg(probe.data_dir)
        .args(["--json", "run", probe.skill.name(), "--args-json", &args]);
    // The fresh process sees the case's clock and model, never the caller's.
    match probe.now {
        Some(now) => command.env(settings::NOW.name, now),
        None => command.env_remove(settings::NOW.name),
    };
    // The same archive (its password in the environment, not on the command line).
    match probe.archive {
        Some(target) => target.pass_to(&mut command),
        None => {
            command.env_remove(settings::ARCHIVE_URL.name);
        }
    }
    match probe.embedder {
        EmbedderChoice::None => command.env(settings::EMBEDDER.name, "none"),
        // The static table for memories too, as the in-process cases (conformance/mod.rs).
        EmbedderChoice::Auto | EmbedderChoice::Required => {
            command.env(settings::EMBEDDER.name, "static")
        }
    };
    let output = command
        .output()
        .map_err(|e| format!("fresh process: cannot run `{}`: {e}", binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "fresh process: `skills run` exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("fresh process: output is not JSON: {e}"))
}

/// `argument_error`.
pub struct ArgumentError;

/// Parameters of `argument_error`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgumentErrorParams {
    /// The argument the rejection must name.
    pub argument: Name,
    /// Text the reason given for that argument must contain.
    #[serde(default)]
    #[schemars(with = "String")]
    pub reason_contains: Option<String>,
}

impl TypedCheck for ArgumentError {
    const ID: &'static str = "argument_error";
    const SUMMARY: &'static str =
        "the case's (invalid) arguments are rejected before the engine runs, naming `argument`";
    type Params = ArgumentErrorParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let name: &str = &p.argument;
        match probe.host.call(probe.skill.name(), probe.args.clone()) {
            Ok(out) => Err(format!(
                "the call succeeded (data {}), expected an error naming argument `{name}`",
                show(&out.data)
            )),
            Err(CallError::InvalidArguments { errors, .. }) => {
                let Some(e) = errors.iter().find(|e| e.argument == name) else {
                    let named: Vec<String> =
                        errors.iter().map(|e| format!("`{}`", e.argument)).collect();
                    return Err(format!(
                        "errors name {} instead of `{name}`",
                        named.join(", ")
                    ));
                };
                if let Some(part) = &p.reason_contains {
                    if !e.reason.contains(part.as_str()) {
                        return Err(format!(
                            "the error for `{name}` says {:?}, expected it to contain {part:?}",
                            e.reason
                        ));
                    }
                }
                Ok(())
            }
            Err(other) => Err(format!(
                "expected invalid arguments naming `{name}`, got: {other}"
            )),
        }
    }
}

/// `same_as`.
pub struct SameAs;

/// Parameters of `same_as`: at least one of `with` and `without`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [{"required": ["with"]}, {"required": ["without"]}]))]
pub struct SameAsParams {
    /// Arguments set (or replaced) for the reference call.
    #[serde(default)]
    pub with: serde_json::Map<String, Value>,
    /// Arguments removed for the reference call.
    #[serde(default)]
    #[schemars(with = "Vec<Name>", length(min = 1))]
    pub without: Option<Vec<Name>>,
    /// JSON pointers removed from both outputs before comparing.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^/.+$")))]
    pub ignore: Vec<String>,
}

impl TypedCheck for SameAs {
    const ID: &'static str = "same_as";
    const SUMMARY: &'static str = "the structured output equals that of the call with the case's arguments changed by `with` (set) and `without` (removed), after removing the `ignore` JSON pointers from both";
    type Params = SameAsParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let mut other = probe.args.clone();
        let Some(map) = other.as_object_mut() else {
            return Err("the case's arguments are not an object".into());
        };
        for name in p.without.iter().flatten() {
            map.remove(&**name);
        }
        for (k, v) in &p.with {
            map.insert(k.clone(), v.clone());
        }
        let mut mine = probe.call()?.data;
        let mut theirs = probe
            .call_with(&other)
            .map_err(|e| format!("reference call with {}: {e}", show(&other)))?
            .data;
        for pointer in &p.ignore {
            remove_pointer(&mut mine, pointer);
            remove_pointer(&mut theirs, pointer);
        }
        let a = serde_json::to_string(&mine).map_err(|e| e.to_string())?;
        let b = serde_json::to_string(&theirs).map_err(|e| e.to_string())?;
        if a != b {
            return Err(format!(
                "the output differs from the output with arguments {}: {}",
                show(&other),
                first_difference(&a, &b)
            ));
        }
        Ok(())
    }
}

/// Removes the value at a JSON pointer (missing values are fine).
fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>() {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        _ => {}
    }
}

/// `error_contains`.
pub struct ErrorContains;

/// Parameters of `error_contains`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorContainsParams {
    /// Strings the error message must each contain.
    #[schemars(length(min = 1))]
    pub contains: Vec<Name>,
}

impl TypedCheck for ErrorContains {
    const ID: &'static str = "error_contains";
    const SUMMARY: &'static str = "the call fails (engine or argument error) with a message containing each string of `contains`";
    type Params = ErrorContainsParams;

    fn run(probe: &Probe<'_>, p: &Self::Params) -> Result<(), String> {
        let message = match probe.host.call(probe.skill.name(), probe.args.clone()) {
            Ok(out) => {
                return Err(format!(
                    "the call succeeded (data {}), expected an error",
                    show(&out.data)
                ))
            }
            Err(e) => e.to_string(),
        };
        for needle in &p.contains {
            let needle: &str = needle;
            if !message.contains(needle) {
                return Err(format!("the error {message:?} does not contain {needle:?}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_are_removed() {
        let mut v = json!({"note": "x", "hits": [{"a": 1}, {"a": 2}], "a/b": 3});
        remove_pointer(&mut v, "/note");
        remove_pointer(&mut v, "/hits/0");
        remove_pointer(&mut v, "/a~1b");
        remove_pointer(&mut v, "/missing/deeper");
        assert_eq!(v, json!({"hits": [{"a": 2}]}));
    }

    #[test]
    fn deterministic_defaults_and_bounds() {
        let p: DeterministicParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!((p.runs, p.fresh_process), (3, true));
        let check = find("deterministic").unwrap();
        assert!(check
            .validate(&json!({"runs": 2, "fresh_process": false}))
            .is_ok());
        let err = check.validate(&json!({"runs": 1})).unwrap_err();
        assert_eq!(err, "`/runs`: 1 is less than the minimum of 2");
        let err = check.validate(&json!({"runs": "3"})).unwrap_err();
        assert_eq!(err, r#"`/runs`: "3" is not of type "integer""#);
    }

    #[test]
    fn same_as_needs_a_change_and_member_pointers() {
        let check = find("same_as").unwrap();
        assert!(check
            .validate(&json!({"without": ["when"], "ignore": ["/note"]}))
            .is_ok());
        assert!(check.validate(&json!({"with": {"mode": "hybrid"}})).is_ok());
        assert!(check.validate(&json!({"ignore": ["/note"]})).is_err());
        let err = check
            .validate(&json!({"with": {}, "ignore": ["note"]}))
            .unwrap_err();
        assert!(err.starts_with("`/ignore/0`:"), "{err}");
    }

    #[test]
    fn argument_and_error_checks_need_names() {
        assert!(find("argument_error")
            .unwrap()
            .validate(&json!({"argument": "role", "reason_contains": "system"}))
            .is_ok());
        let err = find("argument_error")
            .unwrap()
            .validate(&json!({}))
            .unwrap_err();
        assert_eq!(err, r#""argument" is a required property"#);
        assert!(find("error_contains")
            .unwrap()
            .validate(&json!({"contains": []}))
            .is_err());
    }
}
