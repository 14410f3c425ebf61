//! The skill host: loads every document under a skills folder, binds valid ones to
//! engines, keeps diagnostics for the rest, and runs calls (validate → engine →
//! render) through [`Host`].
//!
//! Its parts: [`document`] reads a `SKILL.md` (frontmatter and sections),
//! [`agent_skills`] the Agent Skills field list and the host fields written inside
//! `metadata`, [`skill`] validates a document and binds it to an engine, [`args`]
//! checks a call's arguments against the input schema, and [`render`] renders the
//! output template. The host knows no transport (MCP is [`crate::mcp`]) and no
//! particular engine: engines come from [`crate::engines::registry`].

pub mod agent_skills;
pub mod args;
pub mod document;
pub mod render;
pub mod skill;

pub use document::{Diagnostic, SkillDoc};
pub use skill::Skill;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::cancel::{Cancel, Stop};
use crate::engines::{self, Context, Engine, EngineError, SkillCallError, Skills};
use crate::stores::StoreError;
use args::ArgError;

/// Deepest nesting of calls through composed skills (cycles are refused when the host
/// loads; this bounds what a misbehaving engine could do).
pub const MAX_CALL_DEPTH: usize = 8;

/// The deadline of every call when `SKILLS_CALL_TIMEOUT_MS` is not set: 30 s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The host's per-call deadline: `SKILLS_CALL_TIMEOUT_MS` milliseconds (`0`: none;
/// [`crate::settings::CALL_TIMEOUT_MS`]), else [`DEFAULT_CALL_TIMEOUT`]. A value that
/// is not a number is reported on stderr and the default used.
pub fn call_timeout_from_env() -> Option<Duration> {
    match crate::settings::call_timeout_ms() {
        None => Some(DEFAULT_CALL_TIMEOUT),
        Some(Ok(0)) => None,
        Some(Ok(ms)) => Some(Duration::from_millis(ms)),
        Some(Err(invalid)) => {
            eprintln!(
                "warning: {invalid}; using the default ({} ms)",
                DEFAULT_CALL_TIMEOUT.as_millis()
            );
            Some(DEFAULT_CALL_TIMEOUT)
        }
    }
}

/// Where a call's deadline came from (named in [`CallError::Stopped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineSource {
    /// The host default, [`DEFAULT_CALL_TIMEOUT`].
    Default,
    /// `SKILLS_CALL_TIMEOUT_MS`.
    Env,
    /// The skill's frontmatter `timeout-ms`.
    Frontmatter,
}

impl std::fmt::Display for DeadlineSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let variable = crate::settings::CALL_TIMEOUT_MS.name;
        match self {
            Self::Default => write!(f, "the host default; `{variable}` changes it"),
            Self::Env => write!(f, "`{variable}`"),
            Self::Frontmatter => f.write_str("`timeout-ms` in its SKILL.md"),
        }
    }
}

/// The result of one successful call.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CallOutput {
    /// The skill that ran.
    pub skill: String,
    /// The validated arguments, defaults applied.
    pub args: Value,
    /// The engine's structured output.
    pub data: Value,
    /// `data` rendered through the skill's template (markdown); empty when the caller
    /// asked for the data alone ([`Text::Skipped`]).
    pub text: String,
    /// Secrets replaced in `data` (also recorded there as `redacted` when > 0) and in
    /// `text` by [`crate::redact`]; 0 when none, or the skill opts out.
    #[serde(skip_serializing_if = "is_zero")]
    pub redacted: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Whether a call renders its skill's text template ([`Host::call_with_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    /// Render it: [`CallOutput::text`] holds the markdown (every entry point that
    /// shows text: MCP, the CLI, result pages, JSON twins).
    Rendered,
    /// Skip it: [`CallOutput::text`] is empty. For callers that read `data` alone —
    /// a composed skill's sources, the browse pages' HTML — rendering (and scanning
    /// for secrets) text nobody reads is wasted work.
    Skipped,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No loaded skill has this name or MCP tool name.
    #[error("unknown skill `{name}`; loaded skills: {known}")]
    UnknownSkill {
        /// The name asked for.
        name: String,
        /// Comma-separated loaded skill names.
        known: String,
    },
    /// Arguments did not match the input schema.
    #[error("invalid arguments for `{skill}`: {}", join(.errors))]
    InvalidArguments {
        /// Skill name.
        skill: String,
        /// Every problem found.
        errors: Vec<ArgError>,
    },
    /// The engine failed.
    #[error("`{skill}` failed: {source}")]
    Engine {
        /// Skill name.
        skill: String,
        /// Engine error.
        #[source]
        source: EngineError,
    },
    /// Composed skills nested deeper than [`MAX_CALL_DEPTH`].
    #[error("`{skill}`: calls nested deeper than {MAX_CALL_DEPTH} composed skills")]
    TooDeep {
        /// Skill name.
        skill: String,
    },
    /// The call stopped before it finished: its deadline passed, or its client
    /// disconnected or cancelled it. Its work was interrupted; no partial output.
    #[error("{}", stopped_message(.skill, .stop, *.source_of_deadline))]
    Stopped {
        /// Skill name (the outermost one, for composed skills).
        skill: String,
        /// Why.
        stop: Stop,
        /// Where the deadline came from.
        source_of_deadline: DeadlineSource,
    },
    /// The template could not render the engine output.
    #[error("`{skill}`: template failed: {source:#}")]
    Render {
        /// Skill name.
        skill: String,
        /// minijinja error.
        #[source]
        source: minijinja::Error,
    },
}

impl CallError {
    /// True when the call failed because a store it reads does not exist yet (nothing
    /// was imported): callers such as the pages show that as "nothing stored yet".
    pub fn is_missing_store(&self) -> bool {
        matches!(
            self,
            Self::Engine {
                source: EngineError::Store(StoreError::Missing { .. }),
                ..
            }
        )
    }
}

fn stopped_message(skill: &str, stop: &Stop, source: DeadlineSource) -> String {
    match stop {
        Stop::Deadline(d) => format!(
            "`{skill}` did not finish within its deadline of {} ms ({source}); its work was interrupted",
            d.as_millis()
        ),
        Stop::Cancelled => format!(
            "`{skill}` was cancelled (the client disconnected or cancelled the call); its work was interrupted"
        ),
    }
}

fn join(errors: &[ArgError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Loaded skills, their diagnostics, and what calls need.
pub struct Host {
    dir: PathBuf,
    skills: Vec<Skill>,
    diagnostics: Vec<Diagnostic>,
    env: minijinja::Environment<'static>,
    ctx: Context,
    engines: Vec<Arc<dyn Engine>>,
    /// The deadline of every call (`None`: none) and where it came from.
    timeout: (Option<Duration>, DeadlineSource),
}

impl Host {
    /// Loads every `<dir>/<name>/SKILL.md` (sorted by folder name) with the built-in
    /// engines. Invalid documents become diagnostics; the others still load.
    pub fn load(dir: &Path, ctx: Context) -> Self {
        Self::load_with(dir, ctx, &engines::registry())
    }

    /// Like [`Host::load`] with an explicit engine list (tests).
    pub fn load_with(dir: &Path, ctx: Context, engines: &[Arc<dyn Engine>]) -> Self {
        let mut host = Self {
            dir: dir.to_path_buf(),
            skills: Vec::new(),
            diagnostics: Vec::new(),
            env: render::environment(),
            ctx,
            engines: engines.to_vec(),
            timeout: (
                call_timeout_from_env(),
                if crate::settings::CALL_TIMEOUT_MS.is_set() {
                    DeadlineSource::Env
                } else {
                    DeadlineSource::Default
                },
            ),
        };
        let validator = serde_json::from_str::<Value>(skill::SKILL_SCHEMA)
            .map_err(|e| e.to_string())
            .and_then(|schema| jsonschema::draft202012::new(&schema).map_err(|e| e.to_string()));
        let validator = match validator {
            Ok(v) => v,
            Err(reason) => {
                host.diagnostics.push(Diagnostic::new(
                    Path::new("schemas/skill.schema.json"),
                    "",
                    None,
                    reason,
                ));
                return host;
            }
        };
        let mut folders: Vec<PathBuf> = match fs_err::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect(),
            Err(e) => {
                host.diagnostics.push(Diagnostic::new(
                    dir,
                    "",
                    None,
                    format!("cannot read skills folder: {e}"),
                ));
                return host;
            }
        };
        folders.sort();
        // Engines named by any parsed document, valid or not: an engine whose document
        // is broken is reported through that document, not as unbound.
        let mut named = std::collections::BTreeSet::new();
        for folder in folders {
            let path = folder.join("SKILL.md");
            if !path.exists() {
                continue;
            }
            let doc = match SkillDoc::read(&path) {
                Ok(doc) => doc,
                Err(d) => {
                    host.diagnostics.push(d);
                    continue;
                }
            };
            let effective = agent_skills::effective_frontmatter(&doc);
            let fields = effective.as_ref().unwrap_or(&doc.frontmatter);
            if let Some(engine) = fields.get("engine").and_then(Value::as_str) {
                named.insert(engine.to_owned());
            }
            match skill::bind(doc, &validator, engines) {
                Ok((skill, template_src)) => {
                    if host
                        .skills
                        .iter()
                        .any(|s| s.tool_name() == skill.tool_name())
                    {
                        host.diagnostics.push(Diagnostic::new(
                            &path,
                            "/allowed-tools",
                            skill.doc.field_line("allowed-tools"),
                            format!(
                                "tool name `{}` is already used by another skill",
                                skill.tool_name()
                            ),
                        ));
                        continue;
                    }
                    if let Err(e) = host
                        .env
                        .add_template_owned(skill.template.clone(), template_src)
                    {
                        host.diagnostics.push(Diagnostic::new(
                            &path.with_file_name(skill.template.rsplit('/').next().unwrap_or("")),
                            "",
                            e.line(),
                            format!("template does not parse: {e}"),
                        ));
                        continue;
                    }
                    host.skills.push(skill);
                }
                Err(diags) => host.diagnostics.extend(diags),
            }
        }
        host.check_compositions();
        for engine in engines {
            if !named.contains(engine.name()) {
                host.diagnostics.push(Diagnostic::new(
                    dir,
                    "",
                    None,
                    format!(
                        "engine `{}` is registered but no skill document binds to it",
                        engine.name()
                    ),
                ));
            }
        }
        host
    }

    /// Refuses composed skills ([`Engine::calls`]) that name a skill not loaded, call
    /// themselves or take part in a cycle, call a skill reading a store their own
    /// `reads` does not declare, or — being read-only — call a skill that writes. Each
    /// becomes a diagnostic on `/engine-options` and the skill is unloaded; repeated
    /// until nothing changes (unloading one can break another).
    fn check_compositions(&mut self) {
        loop {
            let mut refused: Vec<(usize, String)> = Vec::new();
            for (i, skill) in self.skills.iter().enumerate() {
                let calls = skill.engine.calls();
                if calls.is_empty() {
                    continue;
                }
                let mut problems = Vec::new();
                for target in &calls {
                    let Some(t) = self.skills.iter().find(|s| s.name() == target) else {
                        problems.push(format!("calls skill `{target}`, which is not loaded"));
                        continue;
                    };
                    for store in crate::stores::Store::ALL {
                        if t.access.reads(store) && !skill.access.reads(store) {
                            problems.push(format!(
                                "calls `{target}`, which reads store `{store}`; add `{store}` to `reads`"
                            ));
                        }
                        if t.access.writes(store) && skill.is_read_only() {
                            problems.push(format!(
                                "calls `{target}`, which writes store `{store}`, but `writes` is empty"
                            ));
                        }
                    }
                }
                if let Some(cycle) = self.cycle_from(skill.name()) {
                    problems.push(format!("calls form a cycle: {}", cycle.join(" → ")));
                }
                if !problems.is_empty() {
                    refused.push((i, problems.join("; ")));
                }
            }
            if refused.is_empty() {
                return;
            }
            for (i, why) in refused.iter().rev() {
                let skill = self.skills.remove(*i);
                self.diagnostics.push(Diagnostic::new(
                    &skill.doc.path,
                    "/engine-options",
                    skill
                        .doc
                        .field_line("engine-options")
                        .or_else(|| skill.doc.field_line("engine")),
                    format!("composed skill `{}` {why}", skill.name()),
                ));
            }
        }
    }

    /// A path of calls from `start` back to `start`, if any.
    fn cycle_from(&self, start: &str) -> Option<Vec<String>> {
        let mut stack: Vec<(String, Vec<String>)> =
            vec![(start.to_owned(), vec![start.to_owned()])];
        let mut seen = std::collections::BTreeSet::new();
        while let Some((name, path)) = stack.pop() {
            let Some(skill) = self.skills.iter().find(|s| s.name() == name) else {
                continue;
            };
            for next in skill.engine.calls() {
                if next == start {
                    let mut cycle = path.clone();
                    cycle.push(next);
                    return Some(cycle);
                }
                if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next, p));
                }
            }
        }
        None
    }

    /// The same skills folder and engines loaded again over the stores at `paths`,
    /// with this host's clock and model ([`Context::relocated`]).
    pub fn relocated(&self, paths: crate::stores::StorePaths) -> Self {
        self.relocated_with_archive(paths, None)
    }

    /// [`Host::relocated`], the calls answering from the team archive behind `archive`
    /// when given ([`Context::with_archive`]).
    pub fn relocated_with_archive(
        &self,
        paths: crate::stores::StorePaths,
        archive: Option<Arc<crate::archive::search::Pool>>,
    ) -> Self {
        let ctx = self.ctx.relocated(paths).with_archive(archive);
        let mut host = Self::load_with(&self.dir, ctx, &self.engines);
        host.timeout = self.timeout;
        host
    }

    /// The skills folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Valid skills, sorted by folder name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// Problems found while loading (invalid documents, unbound engines).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The engine context (stores, clock).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// A skill by skill name or MCP tool name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .iter()
            .find(|s| s.name() == name)
            .or_else(|| self.skills.iter().find(|s| s.tool_name() == name))
    }

    /// Validates `args` against the skill's input schema (defaults applied), runs the
    /// engine, and renders the result. The only way any entry point runs a skill.
    ///
    /// # Errors
    /// [`CallError`]: unknown skill, invalid arguments (each named), engine or template failure.
    pub fn call(&self, name: &str, args: Value) -> Result<CallOutput, CallError> {
        self.call_with(name, args, &Cancel::new())
    }

    /// The same host with every call's deadline set to `timeout` (`None`: none)
    /// instead of `SKILLS_CALL_TIMEOUT_MS` — tests and benchmarks.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = (timeout, DeadlineSource::Env);
        self
    }

    /// The deadline a call of `skill` runs under: the host's, shortened by the skill's
    /// frontmatter `timeout-ms`; and where it came from.
    pub fn deadline_of(&self, skill: &Skill) -> (Option<Duration>, DeadlineSource) {
        let own = skill.meta.timeout_ms.map(Duration::from_millis);
        match (self.timeout.0, own) {
            (Some(host), Some(own)) if own < host => (Some(own), DeadlineSource::Frontmatter),
            (None, Some(own)) => (Some(own), DeadlineSource::Frontmatter),
            (host, _) => (host, self.timeout.1),
        }
    }

    /// [`Host::call`] stopped by `cancel` as well as by its deadline (armed on
    /// `cancel` here): what a server calls, cancelling when the client leaves. A
    /// stopped call fails with [`CallError::Stopped`]; engines are interrupted
    /// (database queries) or stop at their next check (Rust loops).
    ///
    /// # Errors
    /// As [`Host::call`], and [`CallError::Stopped`].
    pub fn call_with(
        &self,
        name: &str,
        args: Value,
        cancel: &Cancel,
    ) -> Result<CallOutput, CallError> {
        self.call_with_text(name, args, cancel, Text::Rendered)
    }

    /// [`Host::call_with`], rendering the skill's text template only when `text` is
    /// [`Text::Rendered`] (else [`CallOutput::text`] is empty and
    /// [`CallOutput::redacted`] counts the secrets replaced in `data` alone).
    ///
    /// # Errors
    /// As [`Host::call_with`].
    pub fn call_with_text(
        &self,
        name: &str,
        args: Value,
        cancel: &Cancel,
        text: Text,
    ) -> Result<CallOutput, CallError> {
        let source = self.get(name).map_or(self.timeout.1, |skill| {
            let (deadline, source) = self.deadline_of(skill);
            if let Some(d) = deadline {
                cancel.limit(d);
            }
            source
        });
        let skill = self.get(name).map_or(name, Skill::name).to_owned();
        let result = self.call_at(name, args, 0, cancel, text);
        // A call that stopped answers with why, whatever the engine made of the
        // interruption (a DuckDB error, an early return with fewer rows).
        match cancel.stopped() {
            Some(stop) => Err(CallError::Stopped {
                skill,
                stop,
                source_of_deadline: source,
            }),
            None => result,
        }
    }

    /// [`Host::call`] at nesting `depth` (0: a caller outside the host; composed
    /// skills call their sources at `depth + 1`, data alone), all under the outermost
    /// call's `cancel`; the text template rendered as `text` says.
    fn call_at(
        &self,
        name: &str,
        args: Value,
        depth: usize,
        cancel: &Cancel,
        text: Text,
    ) -> Result<CallOutput, CallError> {
        let skill = self.get(name).ok_or_else(|| CallError::UnknownSkill {
            name: name.to_owned(),
            known: self
                .skills
                .iter()
                .map(Skill::name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let args =
            args::check(&skill.meta.input_schema, &skill.validator, args).map_err(|errors| {
                CallError::InvalidArguments {
                    skill: skill.name().to_owned(),
                    errors,
                }
            })?;
        // The engine sees only the stores the document declares (read-only ones when
        // `writes` is empty).
        if depth > MAX_CALL_DEPTH {
            return Err(CallError::TooDeep {
                skill: skill.name().to_owned(),
            });
        }
        if let Err(stop) = cancel.check() {
            return Err(CallError::Engine {
                skill: skill.name().to_owned(),
                source: EngineError::Stopped(stop),
            });
        }
        let ctx = self
            .ctx
            .scoped(skill.access.clone())
            .with_cancel(cancel.clone());
        let nested = Nested {
            host: self,
            depth,
            cancel,
            redacted: std::sync::atomic::AtomicUsize::new(0),
        };
        let mut data = skill
            .engine
            .call_in(&args, &ctx, &nested)
            .map_err(|source| CallError::Engine {
                skill: skill.name().to_owned(),
                source,
            })?;
        // Secrets go before rendering, so the template only sees redacted values; the
        // rendered text is scanned too (arguments it echoes, text it builds).
        let redactor = skill
            .redacts_secrets()
            .then(crate::redact::Redactor::global)
            .flatten();
        // A composed skill's data holds its sub-calls' markers: they count as its own.
        let mut redacted = redactor.map_or(0, |r| r.redact_json(&mut data))
            + nested.redacted.load(std::sync::atomic::Ordering::Relaxed);
        if redacted > 0 {
            if let Value::Object(map) = &mut data {
                map.insert("redacted".into(), Value::from(redacted));
            }
        }
        let text =
            match text {
                Text::Skipped => String::new(),
                Text::Rendered => {
                    let mut text = render::render(&self.env, &skill.template, &data, &args)
                        .map_err(|source| CallError::Render {
                            skill: skill.name().to_owned(),
                            source,
                        })?;
                    if let Some(r) = redactor {
                        let out = r.redact(&text);
                        if out.count > 0 {
                            redacted += out.count;
                            text = out.text.into_owned();
                        }
                    }
                    text
                }
            };
        Ok(CallOutput {
            skill: skill.name().to_owned(),
            args,
            data,
            text,
            redacted,
        })
    }
}

/// What a composed skill's engine calls other skills through: [`Host::call`] one level
/// deeper.
struct Nested<'h> {
    host: &'h Host,
    depth: usize,
    cancel: &'h Cancel,
    /// Secrets the sub-calls replaced.
    redacted: std::sync::atomic::AtomicUsize,
}

impl Skills for Nested<'_> {
    fn call_skill(&self, name: &str, args: Value) -> Result<Value, SkillCallError> {
        // A composition reads its sources' data, never their text.
        match self
            .host
            .call_at(name, args, self.depth + 1, self.cancel, Text::Skipped)
        {
            Ok(out) => {
                self.redacted
                    .fetch_add(out.redacted, std::sync::atomic::Ordering::Relaxed);
                Ok(out.data)
            }
            Err(CallError::Engine {
                source: EngineError::Store(e @ StoreError::Missing { .. }),
                ..
            }) => Err(SkillCallError::Skipped(e.to_string())),
            Err(CallError::Engine {
                source: EngineError::Unavailable(why),
                ..
            }) => Err(SkillCallError::Skipped(why)),
            // The composition's arguments (the caller's words passed on) do not fit this
            // source: e.g. recall's 2,000-character question is too long for
            // search-conversations' `term`. The other sources still answer.
            Err(e @ CallError::InvalidArguments { .. }) => {
                Err(SkillCallError::Skipped(e.to_string()))
            }
            Err(CallError::Engine {
                source: e @ EngineError::Argument { .. },
                ..
            }) => Err(SkillCallError::Skipped(e.to_string())),
            Err(other) => Err(SkillCallError::Failed(other.to_string())),
        }
    }
}
