//! `skills verify`, executable checklists: every "Verification checklist" item of a skill document is
//! bound, in `skills/<name>/conformance.yaml`, to checks from the host's vocabulary
//! ([`checks`]) run on cases (arguments + fixture corpus), or excluded with a reason.
//!
//! [`Verifier`] plans one [`Entry`] per (skill, checklist item) — plus one per binding
//! whose text matches no item (drift) and one per unusable binding file — and runs
//! each into an [`ItemReport`]. Stores are built fresh from `tests/conformance/fixtures/
//! <corpus>/` through the importers ([`corpus::build_stores`]); every call goes through
//! [`Host::call`]. This module knows no particular skill or engine.
//!
//! **Two targets** ([`RunTarget`]). Locally, the cases' calls read those stores. On the
//! team archive ([`Verifier::with_archive`]), each corpus's stores are also pushed,
//! once, into a PostgreSQL database of their own ([`archive::ArchiveServer`]) and the
//! calls answer from it (the context carries the archive, as `skills run --archive`),
//! while checks that read a store still read the local one that was pushed. A case
//! that writes runs on a private copy of both the stores and the archive
//! ([`archive::ArchiveServer::private_copy`]). A binding excludes what cannot hold on
//! the archive with `archive: {excluded: why}`, per item or for the whole skill.
//!
//! Loading bindings and running them stay in one file: they share the case/corpus model.

pub mod archive;
pub mod checks;
pub mod corpus;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;

use crate::embed::Embedder;
use crate::engines::Context;
use crate::host::Host;
use crate::stores::StorePaths;
use checks::Probe;

/// The binding schema every `conformance.yaml` is validated against.
pub const CONFORMANCE_SCHEMA: &str = include_str!("../../schemas/conformance.schema.json");

/// File name of a skill's binding, beside its `SKILL.md`.
pub const BINDING_FILE: &str = "conformance.yaml";

/// A parsed `conformance.yaml` (after schema validation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The skill name.
    pub skill: String,
    /// Default corpus of every case.
    pub corpus: Option<String>,
    /// Default clock of every case (RFC 3339, e.g. `2026-07-03T12:00:00Z`): what
    /// engines see as "now" ([`Context::with_now`]); `None`: the system clock.
    pub now: Option<String>,
    /// On the team archive: every item of the skill excluded, with the reason.
    pub archive: Option<OnArchive>,
    /// One entry per checklist item.
    pub items: Vec<ItemBinding>,
}

/// How a skill or item fares on the team archive ([`RunTarget::Archive`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnArchive {
    /// Why it is not verified on the archive (it still is locally).
    pub excluded: String,
}

/// Where the calls of a verification answer from.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum RunTarget {
    /// The local stores built from the fixture corpus.
    #[default]
    Local,
    /// The team archive those stores were pushed into (one database per corpus).
    Archive,
}

/// The binding of one checklist item.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemBinding {
    /// The item's exact text.
    pub item: String,
    /// Cases every check runs on (unless a check has its own).
    #[serde(default)]
    pub cases: Vec<Case>,
    /// Checks proving the item.
    #[serde(default)]
    pub checks: Vec<CheckUse>,
    /// Why the item is not executable.
    pub excluded: Option<String>,
    /// On the team archive: excluded, with the reason.
    pub archive: Option<OnArchive>,
}

/// One use of a check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckUse {
    /// Check id.
    pub check: String,
    /// Parameters (validated by the check's schema).
    #[serde(default = "empty_object")]
    pub params: Value,
    /// Cases for this check only.
    pub cases: Option<Vec<Case>>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// One case: call arguments, the corpus whose stores the call reads, the clock and
/// the embedding model it runs with.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Call arguments.
    pub args: Value,
    /// Corpus folder name under the fixtures folder; `None`: the binding's default,
    /// else no stores at all.
    pub corpus: Option<String>,
    /// Clock of this case (RFC 3339); `None`: the binding's `now`, else the system clock.
    pub now: Option<String>,
    /// Embedding model of this case; default [`EmbedderChoice::Auto`].
    #[serde(default)]
    pub embedder: EmbedderChoice,
}

/// Which embedding model a case's engines see.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderChoice {
    /// The default model when it is present (`$SKILLS_MODEL_DIR`), else none — as
    /// `skills run` behaves.
    #[default]
    Auto,
    /// The default model; when it cannot be loaded every check of the case fails,
    /// saying why (for items whose promise needs the model).
    Required,
    /// No model, as on a machine where none was fetched (for items about that case).
    None,
}

/// Where `verify` finds things.
#[derive(Debug, Clone)]
pub struct Options {
    /// Skills folder (`<dir>/<name>/SKILL.md` + `conformance.yaml`).
    pub skills_dir: PathBuf,
    /// Fixtures folder holding one folder per corpus.
    pub fixtures_dir: PathBuf,
    /// The `skills` binary, for checks that run a fresh process.
    pub binary: Option<PathBuf>,
}

/// Why verification could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// A name given on the command line is no loaded skill.
    #[error("unknown skill `{name}`; loaded skills: {known}")]
    UnknownSkill {
        /// The name asked for.
        name: String,
        /// Comma-separated loaded skill names.
        known: String,
    },
    /// The temporary data folder could not be created.
    #[error("cannot create a temporary data folder: {0}")]
    Io(#[from] std::io::Error),
}

/// What one planned entry verifies.
#[derive(Debug, Clone)]
enum Subject {
    /// A checklist item and the index of its binding.
    Bound(usize),
    /// A checklist item without binding.
    Unbound(String),
    /// A checklist item bound more than once.
    BoundTwice(usize),
    /// A binding whose text matches no checklist item.
    Drift(String),
    /// The binding file is unusable.
    Invalid(String),
    /// The host's own check of a read-only skill (`writes: []`): every store is
    /// byte-identical after all of its cases ([`READ_ONLY_ITEM`]).
    ReadOnly,
}

/// The text of the entry [`Verifier`] adds for every read-only skill with a binding:
/// not a checklist item of the document but the host's check that the declared
/// effects hold.
pub const READ_ONLY_ITEM: &str =
    "writes: [] holds: every store file is byte-identical after all of the binding's cases (host check)";

/// One planned unit of verification: a checklist item of a skill (or a binding
/// problem). The `cargo test` harness makes one trial of each.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Skill name.
    pub skill: String,
    /// The checklist item text (or, for a drifted binding, the binding's text; for an
    /// unusable binding file, the file name).
    pub item: String,
    /// 1-based line of the item in `SKILL.md`, when it is a checklist item.
    pub line: Option<usize>,
    /// Where its calls answer from.
    pub target: RunTarget,
    subject: Subject,
}

/// Outcome of one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every check passed on every case.
    Pass,
    /// A check failed, or the item could not be checked (no binding, drift, unknown
    /// check, bad parameters…).
    Fail,
    /// The binding excludes the item, with a reason.
    Excluded,
}

/// One check run on one case.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckOutcome {
    /// Check id.
    pub check: String,
    /// The case's arguments.
    pub args: Value,
    /// The case's corpus.
    pub corpus: Option<String>,
    /// The case's embedding model choice.
    pub embedder: EmbedderChoice,
    /// `None` when it passed, else the failure with its first counter-example.
    pub failure: Option<String>,
}

/// The result of one [`Entry`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct ItemReport {
    /// Skill name.
    pub skill: String,
    /// Item text.
    pub item: String,
    /// 1-based line in `SKILL.md`.
    pub line: Option<usize>,
    /// Where its calls answered from.
    pub target: RunTarget,
    /// Pass, fail or excluded.
    pub status: Status,
    /// Why it failed before any check ran, or why it is excluded.
    pub reason: Option<String>,
    /// Every (check, case) run, in binding order.
    pub checks: Vec<CheckOutcome>,
}

impl ItemReport {
    /// Every failure message: the item-level reason, then each failing (check, case).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.status == Status::Fail {
            out.extend(self.reason.clone());
        }
        for c in &self.checks {
            if let Some(f) = &c.failure {
                let mut labels: Vec<String> = c.corpus.iter().cloned().collect();
                match c.embedder {
                    EmbedderChoice::Auto => {}
                    EmbedderChoice::Required => labels.push("embedder: required".into()),
                    EmbedderChoice::None => labels.push("embedder: none".into()),
                }
                let corpus = if labels.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", labels.join(", "))
                };
                out.push(format!("`{}` on {}{corpus}: {f}", c.check, c.args));
            }
        }
        out
    }
}

/// Every item's result and the totals.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Report {
    /// What the calls answered from: `local stores`, or `archive <server>` (no
    /// password); empty when not said.
    pub target: String,
    /// Results in plan order (skills by folder name, items in document order, then
    /// binding problems).
    pub items: Vec<ItemReport>,
    /// Items that passed.
    pub passed: usize,
    /// Items that failed.
    pub failed: usize,
    /// Items excluded by their binding.
    pub excluded: usize,
}

impl Report {
    /// Adds one result to the totals.
    pub fn push(&mut self, item: ItemReport) {
        match item.status {
            Status::Pass => self.passed += 1,
            Status::Fail => self.failed += 1,
            Status::Excluded => self.excluded += 1,
        }
        self.items.push(item);
    }

    /// Human-readable report: per skill, per item `PASS` / `FAIL` (with each
    /// counter-example) / `EXCLUDED` (with the reason); last line
    /// `N passed, N failed, N excluded`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if !self.target.is_empty() {
            out.push_str(&format!("target: {}\n", self.target));
        }
        let mut skill = None;
        for r in &self.items {
            if skill != Some(&r.skill) {
                out.push_str(&format!("{}\n", r.skill));
                skill = Some(&r.skill);
            }
            let line = r
                .line
                .map(|l| format!(" (SKILL.md:{l})"))
                .unwrap_or_default();
            match r.status {
                Status::Pass => out.push_str(&format!("  PASS     {}\n", r.item)),
                Status::Excluded => out.push_str(&format!(
                    "  EXCLUDED {}{line}\n           reason: {}\n",
                    r.item,
                    r.reason.as_deref().unwrap_or("")
                )),
                Status::Fail => {
                    out.push_str(&format!("  FAIL     {}{line}\n", r.item));
                    for f in r.failures() {
                        out.push_str(&format!("           {f}\n"));
                    }
                }
            }
        }
        out.push_str(&format!(
            "{} passed, {} failed, {} excluded",
            self.passed, self.failed, self.excluded
        ));
        out
    }
}

/// A store built from one corpus and a host reading it (or reading the archive it
/// was pushed into).
struct CorpusHost {
    host: Host,
    data_dir: PathBuf,
    /// The corpus's archive, when the host reads it.
    archive: Option<crate::archive::Target>,
}

/// Plans and runs conformance entries. Shareable across threads; corpora are built
/// once, on first use, into a temporary folder removed on drop.
pub struct Verifier {
    options: Options,
    plan: Host,
    bindings: BTreeMap<String, Option<Result<Binding, String>>>,
    corpora: Mutex<BTreeMap<String, Arc<Result<StorePaths, String>>>>,
    hosts: Mutex<BTreeMap<HostKey, Arc<Result<CorpusHost, String>>>>,
    embedder: std::sync::OnceLock<Result<Arc<Embedder>, String>>,
    engines: Vec<Arc<dyn crate::engines::Engine>>,
    /// Each corpus's archive (key `None`: the empty one), made once.
    archives: Mutex<BTreeMap<Option<String>, ArchiveSlot>>,
    /// Declared after `hosts` so their connections close before its databases drop.
    archive: Option<archive::ArchiveServer>,
    tmp: tempfile::TempDir,
}

/// A corpus's archive once made, or why it could not be.
type ArchiveSlot = Arc<Result<crate::archive::Target, String>>;

/// What a host is built for: corpus, clock (RFC 3339), embedding model and target.
type HostKey = (Option<String>, Option<String>, EmbedderChoice, RunTarget);

impl Verifier {
    /// Loads the skills of `options.skills_dir` and their bindings. Nothing runs yet.
    ///
    /// # Errors
    /// [`VerifyError::Io`] when the temporary data folder cannot be created.
    pub fn new(options: Options) -> Result<Self, VerifyError> {
        Self::with_engines(options, crate::engines::registry())
    }

    /// Like [`Verifier::new`] with an explicit engine list (tests of the host's own
    /// checks, with engines that misbehave on purpose).
    ///
    /// # Errors
    /// [`VerifyError::Io`] when the temporary data folder cannot be created.
    pub fn with_engines(
        options: Options,
        engines: Vec<Arc<dyn crate::engines::Engine>>,
    ) -> Result<Self, VerifyError> {
        let tmp = tempfile::Builder::new()
            .prefix("skills-verify-data-")
            .tempdir()?;
        let plan = Host::load_with(
            &options.skills_dir,
            Context::new(StorePaths::in_dir(tmp.path().join("_plan"))),
            &engines,
        );
        let bindings = plan
            .skills()
            .iter()
            .map(|s| {
                (
                    s.name().to_owned(),
                    read_binding(&s.dir().join(BINDING_FILE)),
                )
            })
            .collect();
        Ok(Self {
            options,
            plan,
            bindings,
            corpora: Mutex::new(BTreeMap::new()),
            hosts: Mutex::new(BTreeMap::new()),
            embedder: std::sync::OnceLock::new(),
            engines,
            archives: Mutex::new(BTreeMap::new()),
            archive: None,
            tmp,
        })
    }

    /// The same verifier able to run on the team archive: every corpus is pushed into
    /// a database of its own made on `server` ([`archive::ArchiveServer`]; the role
    /// needs `CREATEDB`), and [`Verifier::entries`] plans the archive's entries.
    #[must_use]
    pub fn with_archive(mut self, server: crate::archive::Target) -> Self {
        self.archive = Some(archive::ArchiveServer::new(server));
        self
    }

    /// The target [`Verifier::entries`] and [`Verifier::run_all`] use: the archive
    /// after [`Verifier::with_archive`], else the local stores.
    pub fn target(&self) -> RunTarget {
        if self.archive.is_some() {
            RunTarget::Archive
        } else {
            RunTarget::Local
        }
    }

    /// The target as the report says it: `local stores`, or `archive <server>
    /// (one database per corpus)`.
    pub fn target_text(&self, target: RunTarget) -> String {
        match (target, &self.archive) {
            (RunTarget::Local, _) => "local stores".into(),
            (RunTarget::Archive, Some(a)) => format!(
                "archive on {} (one database per corpus, dropped afterwards)",
                a.shown()
            ),
            (RunTarget::Archive, None) => "archive (no server given)".into(),
        }
    }

    /// The host the plan was made from (its diagnostics list invalid documents).
    pub fn host(&self) -> &Host {
        &self.plan
    }

    /// Plans the entries of the named skills (all skills when `names` is empty) on
    /// [`Verifier::target`].
    ///
    /// # Errors
    /// [`VerifyError::UnknownSkill`] for a name that is no loaded skill.
    pub fn entries(&self, names: &[String]) -> Result<Vec<Entry>, VerifyError> {
        self.entries_on(names, self.target())
    }

    /// Plans the entries of the named skills (all skills when `names` is empty) on
    /// `target` (entries on the archive fail, saying so, without
    /// [`Verifier::with_archive`]).
    ///
    /// # Errors
    /// [`VerifyError::UnknownSkill`] for a name that is no loaded skill.
    pub fn entries_on(
        &self,
        names: &[String],
        target: RunTarget,
    ) -> Result<Vec<Entry>, VerifyError> {
        for name in names {
            if self.plan.get(name).is_none() {
                return Err(VerifyError::UnknownSkill {
                    name: name.clone(),
                    known: self
                        .plan
                        .skills()
                        .iter()
                        .map(|s| s.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let mut out = Vec::new();
        for skill in self.plan.skills() {
            if !names.is_empty()
                && !names
                    .iter()
                    .any(|n| n == skill.name() || n == skill.tool_name())
            {
                continue;
            }
            let name = skill.name().to_owned();
            let section = skill
                .doc
                .section(crate::host::document::section_names::VERIFICATION_CHECKLIST);
            let items: Vec<(String, Option<usize>)> = section
                .map(|s| {
                    s.items
                        .iter()
                        .cloned()
                        .zip(s.item_lines.iter().copied().map(Some))
                        .collect()
                })
                .unwrap_or_default();
            let path = skill.dir().join(BINDING_FILE);
            let entry = |item: String, line: Option<usize>, subject: Subject| Entry {
                skill: name.clone(),
                item,
                line,
                target,
                subject,
            };
            match self.bindings.get(&name).and_then(Option::as_ref) {
                None => {
                    for (text, line) in items {
                        let why = format!("no binding: `{}` does not exist", path.display());
                        out.push(entry(text, line, Subject::Unbound(why)));
                    }
                }
                Some(Err(reason)) => out.push(entry(
                    BINDING_FILE.to_owned(),
                    None,
                    Subject::Invalid(reason.clone()),
                )),
                Some(Ok(binding)) => {
                    if binding.skill != name {
                        let why = format!(
                            "`{}`: `skill` is `{}`, expected `{name}`",
                            path.display(),
                            binding.skill
                        );
                        out.push(entry(BINDING_FILE.to_owned(), None, Subject::Invalid(why)));
                        continue;
                    }
                    for (text, line) in &items {
                        let bound: Vec<usize> = binding
                            .items
                            .iter()
                            .enumerate()
                            .filter(|(_, b)| &b.item == text)
                            .map(|(i, _)| i)
                            .collect();
                        let subject = match bound.as_slice() {
                            [] => Subject::Unbound(format!(
                                "no binding: no item of `{}` has this exact text",
                                path.display()
                            )),
                            [one] => Subject::Bound(*one),
                            [_, ..] => Subject::BoundTwice(bound.len()),
                        };
                        out.push(entry(text.clone(), *line, subject));
                    }
                    for b in &binding.items {
                        if items.iter().any(|(t, _)| t == &b.item) {
                            continue;
                        }
                        let closest = closest(&b.item, &items).map_or(String::new(), |(t, l)| {
                            format!(
                                "; closest item{}: {t:?}",
                                l.map(|l| format!(" (line {l})")).unwrap_or_default()
                            )
                        });
                        let why =
                            format!("binding text matches no checklist item (drift){closest}");
                        out.push(entry(b.item.clone(), None, Subject::Drift(why)));
                    }
                    if skill.is_read_only() {
                        out.push(entry(READ_ONLY_ITEM.to_owned(), None, Subject::ReadOnly));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The exclusion reason of an entry whose binding excludes it (on the archive:
    /// also `archive: {excluded}` of the item or the whole binding).
    pub fn exclusion(&self, entry: &Entry) -> Option<String> {
        if let Some(why) = self.archive_exclusion(entry) {
            return Some(why);
        }
        let Subject::Bound(i) = entry.subject else {
            return None;
        };
        match self.bindings.get(&entry.skill) {
            Some(Some(Ok(b))) => b.items.get(i).and_then(|item| item.excluded.clone()),
            _ => None,
        }
    }

    /// For an entry on the archive, the reason its binding excludes it there: the
    /// binding's `archive.excluded` (every item, the host's read-only check included),
    /// else the item's.
    fn archive_exclusion(&self, entry: &Entry) -> Option<String> {
        if entry.target != RunTarget::Archive {
            return None;
        }
        let Some(Some(Ok(b))) = self.bindings.get(&entry.skill) else {
            return None;
        };
        let why = match (&b.archive, &entry.subject) {
            (Some(a), Subject::Bound(_) | Subject::ReadOnly) => &a.excluded,
            (None, Subject::Bound(i)) => &b.items.get(*i)?.archive.as_ref()?.excluded,
            _ => return None,
        };
        Some(format!("on the archive: {why}"))
    }

    /// Runs one entry.
    pub fn run(&self, entry: &Entry) -> ItemReport {
        let mut report = ItemReport {
            skill: entry.skill.clone(),
            item: entry.item.clone(),
            line: entry.line,
            target: entry.target,
            status: Status::Fail,
            reason: None,
            checks: Vec::new(),
        };
        if let Some(why) = self.archive_exclusion(entry) {
            report.status = Status::Excluded;
            report.reason = Some(why);
            return report;
        }
        if entry.target == RunTarget::Archive && self.archive.is_none() {
            report.reason = Some("no archive server to run on (give `--archive URL`)".into());
            return report;
        }
        let binding = match (
            &entry.subject,
            self.bindings.get(&entry.skill).and_then(Option::as_ref),
        ) {
            (Subject::Bound(i), Some(Ok(b))) => match b.items.get(*i) {
                Some(item) => (b, item),
                None => {
                    report.reason = Some("binding index out of range".into());
                    return report;
                }
            },
            (Subject::Unbound(why) | Subject::Drift(why) | Subject::Invalid(why), _) => {
                report.reason = Some(why.clone());
                return report;
            }
            (Subject::ReadOnly, Some(Ok(b))) => {
                let outcome = self.run_read_only(&entry.skill, b, entry.target);
                report.status = if outcome.failure.is_none() {
                    Status::Pass
                } else {
                    Status::Fail
                };
                report.checks.push(outcome);
                return report;
            }
            (Subject::ReadOnly, _) => {
                report.reason = Some("binding not loaded".into());
                return report;
            }
            (Subject::BoundTwice(n), _) => {
                report.reason = Some(format!("the item is bound {n} times in `{BINDING_FILE}`"));
                return report;
            }
            (Subject::Bound(_), _) => {
                report.reason = Some("binding not loaded".into());
                return report;
            }
        };
        let (file, item) = binding;
        if let Some(reason) = &item.excluded {
            report.status = Status::Excluded;
            report.reason = Some(reason.clone());
            return report;
        }
        let mut problems = Vec::new();
        for use_ in &item.checks {
            let Some(check) = checks::find(&use_.check) else {
                let known: Vec<&str> = checks::vocabulary().iter().map(|c| c.id).collect();
                problems.push(format!(
                    "unknown check `{}`; known checks: {}",
                    use_.check,
                    known.join(", ")
                ));
                continue;
            };
            let ready = match check.bind(&use_.params) {
                Ok(ready) => ready,
                Err(e) => {
                    problems.push(format!("check `{}`: bad params: {e}", check.id));
                    continue;
                }
            };
            let cases = use_.cases.as_ref().unwrap_or(&item.cases);
            if cases.is_empty() {
                problems.push(format!(
                    "check `{}` has no cases (give `cases` to the item or the check)",
                    check.id
                ));
                continue;
            }
            for case in cases {
                let corpus = case.corpus.clone().or_else(|| file.corpus.clone());
                let key = (
                    corpus.clone(),
                    case.now.clone().or_else(|| file.now.clone()),
                    case.embedder,
                    entry.target,
                );
                let failure = self
                    .run_case(&entry.skill, ready.as_ref(), case, &key)
                    .err();
                report.checks.push(CheckOutcome {
                    check: check.id.to_owned(),
                    args: case.args.clone(),
                    corpus,
                    embedder: case.embedder,
                    failure,
                });
            }
        }
        if !problems.is_empty() {
            report.reason = Some(problems.join("; "));
        } else if report.checks.iter().all(|c| c.failure.is_none()) {
            report.status = Status::Pass;
        }
        report
    }

    /// Plans and runs the named skills (all when `names` is empty).
    ///
    /// # Errors
    /// See [`Verifier::entries`].
    pub fn run_all(&self, names: &[String]) -> Result<Report, VerifyError> {
        let mut report = Report {
            target: self.target_text(self.target()),
            ..Report::default()
        };
        for entry in self.entries(names)? {
            report.push(self.run(&entry));
        }
        Ok(report)
    }

    /// Runs every case of `binding` (each distinct arguments-and-corpus once, in
    /// binding order) and compares every file of the stores they used, index folder
    /// included, before and after: a read-only skill must leave them byte-identical.
    /// Calls that fail (argument-error cases) still count: a refused call must not
    /// write either.
    fn run_read_only(&self, skill: &str, binding: &Binding, target: RunTarget) -> CheckOutcome {
        let mut runs: Vec<(HostKey, Value)> = Vec::new();
        let on_archive = target == RunTarget::Archive;
        for item in binding
            .items
            .iter()
            .filter(|i| i.excluded.is_none() && !(on_archive && i.archive.is_some()))
        {
            for use_ in &item.checks {
                for case in use_.cases.as_ref().unwrap_or(&item.cases) {
                    let key = (
                        case.corpus.clone().or_else(|| binding.corpus.clone()),
                        case.now.clone().or_else(|| binding.now.clone()),
                        case.embedder,
                        target,
                    );
                    if !runs.iter().any(|(k, a)| k == &key && a == &case.args) {
                        runs.push((key, case.args.clone()));
                    }
                }
            }
        }
        let outcome = |failure: Option<String>| CheckOutcome {
            check: "read_only_stores".into(),
            args: Value::from(runs.len()),
            corpus: binding.corpus.clone(),
            embedder: EmbedderChoice::Auto,
            failure,
        };
        // Build every host first: building a corpus writes its stores.
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (key, _) in &runs {
            match self.host_for(key).as_ref() {
                Ok(built) if !dirs.contains(&built.data_dir) => dirs.push(built.data_dir.clone()),
                Ok(_) => {}
                Err(e) => return outcome(Some(e.clone())),
            }
        }
        let before = match snapshot(&dirs) {
            Ok(s) => s,
            Err(e) => return outcome(Some(e)),
        };
        for (key, args) in &runs {
            if let Ok(built) = self.host_for(key).as_ref() {
                let _ = built.host.call(skill, args.clone());
            }
        }
        let after = match snapshot(&dirs) {
            Ok(s) => s,
            Err(e) => return outcome(Some(e)),
        };
        outcome(diff_snapshots(&before, &after))
    }

    fn run_case(
        &self,
        skill: &str,
        check: &dyn checks::ReadyCheck,
        case: &Case,
        key: &HostKey,
    ) -> Result<(), String> {
        let built = self.host_for(key);
        let built = built.as_ref().as_ref().map_err(Clone::clone)?;
        let skill = built
            .host
            .get(skill)
            .ok_or_else(|| format!("skill `{skill}` did not load over corpus stores"))?;
        let probe = Probe {
            host: &built.host,
            skill,
            args: &case.args,
            skills_dir: &self.options.skills_dir,
            data_dir: &built.data_dir,
            binary: self.options.binary.as_deref(),
            now: key.1.as_deref(),
            embedder: key.2,
            archive: built.archive.as_ref(),
            archive_server: built.archive.as_ref().and(self.archive.as_ref()),
        };
        if skill.is_read_only() {
            return check.run(&probe);
        }
        // A skill that writes runs on a private copy of the corpus's stores (and of
        // their archive, on the archive), so its cases never change what other skills'
        // cases read.
        let private = checks::scenario::isolated(&probe)?;
        let Some(skill) = private.host.get(&probe.skill.meta.name) else {
            return Err(format!(
                "skill `{}` did not load over the private stores",
                probe.skill.name()
            ));
        };
        check.run(&Probe {
            host: &private.host,
            skill,
            data_dir: private.dir.path(),
            archive: private.archive.as_ref().map(|a| &a.target),
            ..probe
        })
    }

    /// The host over a corpus's stores with a clock and model, built on first use.
    fn host_for(&self, key: &HostKey) -> Arc<Result<CorpusHost, String>> {
        let mut hosts = self
            .hosts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = hosts.get(key) {
            return found.clone();
        }
        let built = Arc::new(self.build_host(key));
        hosts.insert(key.clone(), built.clone());
        built
    }

    fn build_host(&self, (corpus, now, embedder, target): &HostKey) -> Result<CorpusHost, String> {
        let data_dir = self.tmp.path().join(
            corpus
                .as_deref()
                .map_or_else(|| "_none".to_owned(), |c| format!("corpus-{c}")),
        );
        let paths = match corpus {
            Some(name) => {
                let built = self.corpus(name, &data_dir);
                built.as_ref().clone()?
            }
            None => {
                fs_err::create_dir_all(&data_dir).map_err(|e| e.to_string())?;
                StorePaths::in_dir(&data_dir)
            }
        };
        let mut ctx = Context::new(paths);
        if let Some(now) = now {
            let t = chrono::DateTime::parse_from_rfc3339(now).map_err(|e| {
                format!("`now: {now}` is not an RFC 3339 time (e.g. 2026-07-03T12:00:00Z): {e}")
            })?;
            ctx = ctx.with_now(t.with_timezone(&chrono::Utc));
        }
        // The static table for memories too, whatever tiers are fetched: the checklists
        // state its behaviour (bounds, weights, accent folding of the query vector), and
        // the corpus's memories are embedded by it; tests/second_tier.rs covers e5.
        let static_model = || {
            self.embedder
                .get_or_init(|| {
                    Embedder::load_default()
                        .map(Arc::new)
                        .map_err(|e| e.to_string())
                })
                .clone()
        };
        match embedder {
            EmbedderChoice::Auto => {
                if let Ok(model) = static_model() {
                    ctx = ctx.with_embedder(Some(model));
                }
            }
            EmbedderChoice::None => ctx = ctx.with_embedder(None),
            EmbedderChoice::Required => {
                let model = static_model().map_err(|e| {
                    format!("this case needs the embedding model (`embedder: required`): {e}")
                })?;
                ctx = ctx.with_embedder(Some(model));
            }
        }
        let archive = match target {
            RunTarget::Local => None,
            RunTarget::Archive => {
                let found = self.archive_of(corpus);
                let t = found.as_ref().clone()?;
                ctx =
                    ctx.with_archive(Some(Arc::new(crate::archive::search::Pool::new(t.clone()))));
                Some(t)
            }
        };
        let host = Host::load_with(&self.options.skills_dir, ctx, &self.engines);
        Ok(CorpusHost {
            host,
            data_dir,
            archive,
        })
    }

    /// The archive of `corpus` (its stores built first), or the empty archive for no
    /// corpus; made on first use.
    fn archive_of(&self, corpus: &Option<String>) -> ArchiveSlot {
        let mut archives = self
            .archives
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = archives.get(corpus) {
            return found.clone();
        }
        let made = Arc::new(match &self.archive {
            None => Err("no archive server to run on (give `--archive URL`)".to_owned()),
            // A corpus's archive is made with its stores ([`Verifier::corpus`]); one
            // missing here failed to build (the host's build has said why).
            Some(_) if corpus.is_some() => Err(format!(
                "corpus `{}` has no archive",
                corpus.as_deref().unwrap_or_default()
            )),
            Some(server) => server.archive_for(None, None),
        });
        archives.insert(corpus.clone(), made.clone());
        made
    }

    /// The stores of corpus `name`, imported into `data_dir` on first use.
    fn corpus(&self, name: &str, data_dir: &Path) -> Arc<Result<StorePaths, String>> {
        let mut corpora = self
            .corpora
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = corpora.get(name) {
            return found.clone();
        }
        let built = Arc::new(
            fs_err::create_dir_all(data_dir)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    corpus::build_stores(&self.options.fixtures_dir.join(name), data_dir)
                })
                .map_err(|e| format!("corpus `{name}`: {e}")),
        );
        // The push writes beside the stores (machine id, fingerprints): done here,
        // before any host reads them, so no read-only check sees those files appear.
        if let (Some(server), Ok(paths)) = (&self.archive, built.as_ref()) {
            let made = server.archive_for(Some(name), Some(paths));
            self.archives
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(Some(name.to_owned()), Arc::new(made));
        }
        corpora.insert(name.to_owned(), built.clone());
        built
    }
}

/// Every file under `dirs` (recursively) with its size and SHA-256.
pub(crate) fn snapshot(dirs: &[PathBuf]) -> Result<BTreeMap<PathBuf, String>, String> {
    use sha2::{Digest, Sha256};
    let mut out = BTreeMap::new();
    let mut pending: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let bytes = fs_err::read(&path).map_err(|e| e.to_string())?;
            let digest = hex::encode(Sha256::digest(&bytes));
            out.insert(path, format!("{} bytes, sha256 {digest}", bytes.len()));
        }
    }
    Ok(out)
}

/// The first difference between two [`snapshot`]s, `None` when identical.
fn diff_snapshots(
    before: &BTreeMap<PathBuf, String>,
    after: &BTreeMap<PathBuf, String>,
) -> Option<String> {
    for (path, was) in before {
        match after.get(path) {
            None => return Some(format!("`{}` disappeared", path.display())),
            Some(now) if now != was => {
                return Some(format!(
                    "`{}` changed (was {was}, now {now}): a skill with `writes: []` wrote a store",
                    path.display()
                ))
            }
            Some(_) => {}
        }
    }
    after.keys().find(|p| !before.contains_key(*p)).map(|p| {
        format!(
            "`{}` appeared: a skill with `writes: []` wrote beside a store",
            p.display()
        )
    })
}

/// Reads and validates a binding file; `None` when it does not exist.
fn read_binding(path: &Path) -> Option<Result<Binding, String>> {
    if !path.exists() {
        return None;
    }
    Some(parse_binding(path))
}

fn parse_binding(path: &Path) -> Result<Binding, String> {
    let text = fs_err::read_to_string(path).map_err(|e| e.to_string())?;
    let value: Value = crate::yaml::parse(&text)
        .map_err(|e| format!("`{}`: invalid YAML: {e}", path.display()))?;
    let schema: Value =
        serde_json::from_str(CONFORMANCE_SCHEMA).map_err(|e| format!("conformance schema: {e}"))?;
    let validator =
        jsonschema::draft202012::new(&schema).map_err(|e| format!("conformance schema: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("`{}`: {e}", e.instance_path()))
        .collect();
    if !errors.is_empty() {
        return Err(format!(
            "`{}` does not match `schemas/conformance.schema.json`: {}",
            path.display(),
            errors.join("; ")
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("`{}`: {e}", path.display()))
}

/// The checklist item sharing the most words with `text`.
fn closest<'a>(
    text: &str,
    items: &'a [(String, Option<usize>)],
) -> Option<(&'a str, Option<usize>)> {
    let words = |s: &str| {
        s.split_whitespace()
            .map(str::to_lowercase)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let mine = words(text);
    items
        .iter()
        .map(|(t, l)| {
            let theirs = words(t);
            let common = mine.intersection(&theirs).count();
            (
                common * 1000 / (mine.len() + theirs.len() - common).max(1),
                t.as_str(),
                *l,
            )
        })
        .filter(|(score, _, _)| *score > 0)
        .max_by_key(|(score, _, _)| *score)
        .map(|(_, t, l)| (t, l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_item_shares_most_words() {
        let items = vec![
            ("Every row has conv_id".to_owned(), Some(3)),
            (
                "Rows are ordered by created DESC (newest first)".to_owned(),
                Some(4),
            ),
        ];
        assert_eq!(
            closest("Rows are ordered by created DESC", &items),
            Some(("Rows are ordered by created DESC (newest first)", Some(4)))
        );
        assert_eq!(closest("zzz", &items), None);
    }

    #[test]
    fn binding_schema_takes_archive_exclusions() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(BINDING_FILE);
        fs_err::write(
            &path,
            "skill: x\narchive: {excluded: all}\nitems:\n  - item: a\n    archive: {excluded: one}\n    checks: [{check: row_count}]\n    cases: [{args: {}}]\n",
        )
        .unwrap();
        let b = parse_binding(&path).unwrap();
        assert_eq!(b.archive.unwrap().excluded, "all");
        assert_eq!(b.items[0].archive.as_ref().unwrap().excluded, "one");
        for bad in [
            "archive: {}",
            "archive: {excluded: ''}",
            "archive: {why: x}",
        ] {
            fs_err::write(
                &path,
                format!("skill: x\nitems:\n  - item: a\n    {bad}\n    checks: [{{check: row_count}}]\n    cases: [{{args: {{}}}}]\n"),
            )
            .unwrap();
            let err = parse_binding(&path).unwrap_err();
            assert!(err.contains("`/items/0/archive"), "{bad}: {err}");
        }
    }

    /// On the archive, a skill excluded there is excluded item by item (its read-only
    /// check too), with the binding's reason; a skill without exclusions runs every item
    /// there, its read-only check too; without a server, those fail, saying so, and
    /// never pass.
    #[test]
    fn archive_entries_are_excluded_or_need_a_server() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let fixtures = repo.join("tests/conformance/fixtures");
        // rerank, excluded whole on the archive by a copy of its binding.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rerank");
        fs_err::create_dir_all(&dir).unwrap();
        for file in ["SKILL.md", "template.md.j2"] {
            fs_err::copy(repo.join("skills/rerank").join(file), dir.join(file)).unwrap();
        }
        let binding = fs_err::read_to_string(repo.join("skills/rerank").join(BINDING_FILE))
            .unwrap()
            .replacen(
                "skill: rerank\n",
                "skill: rerank\narchive:\n  excluded: answers from this machine only\n",
                1,
            );
        fs_err::write(dir.join(BINDING_FILE), binding).unwrap();
        let v = Verifier::new(Options {
            skills_dir: tmp.path().to_owned(),
            fixtures_dir: fixtures.clone(),
            binary: None,
        })
        .unwrap();
        let excluded = v
            .entries_on(&["rerank".to_owned()], RunTarget::Archive)
            .unwrap();
        assert!(excluded.iter().any(|e| e.item == READ_ONLY_ITEM));
        for e in &excluded {
            let why = v.exclusion(e).unwrap();
            assert!(
                why.starts_with("on the archive: answers from this machine only"),
                "{why}"
            );
            let r = v.run(e);
            assert_eq!((r.status, r.target), (Status::Excluded, RunTarget::Archive));
        }
        let local = v
            .entries_on(&["rerank".to_owned()], RunTarget::Local)
            .unwrap();
        assert!(local.iter().all(|e| v.exclusion(e).is_none()));
        // The bundled skills: rerank and brain-stats run on the archive, and need one.
        let v = Verifier::new(Options {
            skills_dir: repo.join("skills"),
            fixtures_dir: fixtures,
            binary: None,
        })
        .unwrap();
        assert_eq!(v.target(), RunTarget::Local);
        let rerank = v
            .entries_on(&["rerank".to_owned()], RunTarget::Archive)
            .unwrap();
        assert!(rerank.iter().any(|e| e.item == READ_ONLY_ITEM));
        let stats = v
            .entries_on(&["brain-stats".to_owned()], RunTarget::Archive)
            .unwrap();
        for e in [&rerank[0], rerank.last().unwrap(), &stats[0]] {
            assert!(v.exclusion(e).is_none(), "{}", e.item);
            let r = v.run(e);
            assert_eq!(r.status, Status::Fail);
            assert!(
                r.reason.as_deref().unwrap().contains("no archive server"),
                "{r:?}"
            );
        }
    }

    #[test]
    fn binding_schema_rejects_checks_with_exclusion() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(BINDING_FILE);
        fs_err::write(
            &path,
            "skill: x\nitems:\n  - item: a\n    excluded: why\n    checks: [{check: row_count}]\n",
        )
        .unwrap();
        let err = parse_binding(&path).unwrap_err();
        assert!(err.contains("`/items/0`"), "{err}");
        fs_err::write(
            &path,
            "skill: x\ncorpus: transcripts\nitems:\n  - item: a\n    excluded: why\n",
        )
        .unwrap();
        let b = parse_binding(&path).unwrap();
        assert_eq!(b.items[0].excluded.as_deref(), Some("why"));
    }
}
