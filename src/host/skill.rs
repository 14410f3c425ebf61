//! Validating a parsed [`SkillDoc`] into a [`Skill`] bound to an engine.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::document::{Diagnostic, SkillDoc};
use crate::engines::{Access, Binding, Engine};
use crate::stores::Store;

/// The frontmatter schema every document is validated against.
pub const SKILL_SCHEMA: &str = include_str!("../../schemas/skill.schema.json");

/// Typed frontmatter, read after it passed `schemas/skill.schema.json`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Frontmatter {
    /// Skill name (equals the folder name).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Human-readable title.
    pub title: Option<String>,
    /// Framework layer (`L0`…`L3`, `utility`).
    pub layer: Option<String>,
    /// Stores read.
    #[serde(default)]
    pub reads: Vec<String>,
    /// Stores written; empty means read-only.
    #[serde(default)]
    pub writes: Vec<String>,
    /// Citation behaviour.
    pub citations: Option<String>,
    /// Determinism class (`pure-function`, `deterministic`, `nondeterministic`).
    pub determinism: Option<String>,
    /// Space-separated tool names (Agent Skills `allowed-tools`).
    pub allowed_tools: Option<String>,
    /// Bound engine name.
    pub engine: String,
    /// Template file name in the skill folder.
    pub template: Option<String>,
    /// MCP annotations.
    #[serde(default)]
    pub annotations: Annotations,
    /// `false` turns off secret redaction of this skill's output (default on; see
    /// [`crate::redact`]).
    #[serde(default)]
    pub redact_secrets: Option<bool>,
    /// This skill's per-call deadline in milliseconds; it can only shorten the host's
    /// ([`crate::host::call_timeout_from_env`]), never lengthen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Engine-specific settings (e.g. `store` and `query` for `sql`).
    #[serde(default)]
    pub engine_options: Option<Value>,
    /// Which page of the host this skill feeds (`page` in the frontmatter).
    #[serde(default, skip_serializing_if = "PageBinding::is_empty")]
    pub page: PageBinding,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structured output.
    pub output_schema: Option<Value>,
}

/// MCP tool annotations declared by a document.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: Option<bool>,
    /// Repeated calls with the same arguments have no additional effect.
    pub idempotent: Option<bool>,
    /// The tool may perform destructive updates.
    pub destructive: Option<bool>,
    /// The tool interacts with an open world of external entities.
    pub open_world: Option<bool>,
}

/// `page` of the frontmatter: which of the host's pages a skill's output feeds
/// (see `schemas/skill.schema.json` for the arguments each page passes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PageBinding {
    /// The page whose data this skill's output is: `conversation`, `memory`,
    /// `conversations`, `projects`, `memories` or `activity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shows: Option<String>,
    /// The search box of every page runs this skill (argument `question`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search_box: bool,
}

impl PageBinding {
    /// True when the skill feeds no page.
    pub fn is_empty(&self) -> bool {
        self.shows.is_none() && !self.search_box
    }
}

/// A validated skill bound to its engine: what `call`, MCP and docs work from.
pub struct Skill {
    /// The parsed document.
    pub doc: SkillDoc,
    /// Its typed frontmatter.
    pub meta: Frontmatter,
    /// The bound engine.
    pub engine: Arc<dyn Engine>,
    /// Compiled input schema.
    pub validator: jsonschema::Validator,
    /// Template name in the host's template environment.
    pub template: String,
    /// The stores its calls may open, from `reads` and `writes`.
    pub access: Access,
}

impl Skill {
    /// Skill name.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// MCP tool name: the `<tool>` of the first `mcp__<server>__<tool>` entry of
    /// `allowed-tools`, else the skill name.
    pub fn tool_name(&self) -> &str {
        self.meta
            .allowed_tools
            .as_deref()
            .and_then(|tools| {
                tools
                    .split_whitespace()
                    .find(|t| t.starts_with("mcp__"))
                    .and_then(|t| t.rsplit("__").next())
            })
            .filter(|t| !t.is_empty())
            .unwrap_or(&self.meta.name)
    }

    /// True when the document promises identical output for identical arguments.
    pub fn is_deterministic(&self) -> bool {
        matches!(
            self.meta.determinism.as_deref(),
            Some("pure-function" | "deterministic")
        )
    }

    /// True unless the document sets `redact-secrets: false`.
    pub fn redacts_secrets(&self) -> bool {
        self.meta.redact_secrets != Some(false)
    }

    /// True when the skill writes nothing.
    pub fn is_read_only(&self) -> bool {
        self.meta.writes.is_empty() && self.meta.annotations.read_only != Some(false)
    }

    /// The skill folder.
    pub fn dir(&self) -> &Path {
        self.doc.path.parent().unwrap_or_else(|| Path::new("."))
    }
}

/// Validates a document's frontmatter and binds it.
///
/// The frontmatter checked is [`super::agent_skills::effective_frontmatter`]: the
/// document's, with host fields absent at the top level read from `metadata`.
/// Checks, in order: the frontmatter schema (every violation becomes a diagnostic
/// naming its field and line), name equals folder name, the input schema compiles as
/// JSON Schema, the engine is registered, and the template file exists.
///
/// # Errors
/// All diagnostics found for this document (at least one).
pub fn bind(
    doc: SkillDoc,
    schema: &jsonschema::Validator,
    engines: &[Arc<dyn Engine>],
) -> Result<(Skill, String), Vec<Diagnostic>> {
    let path = doc.path.clone();
    let mut diags = Vec::new();
    // Host fields may be written inside `metadata` (Agent Skills' extension point).
    let frontmatter = super::agent_skills::effective_frontmatter(&doc)?;
    for error in schema.iter_errors(&frontmatter) {
        let field = error.instance_path().to_string();
        let top = field
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("")
            .to_owned();
        let top = if top.is_empty() {
            missing_field(&error.to_string()).unwrap_or_default()
        } else {
            top
        };
        let line = if top.is_empty() {
            Some(2)
        } else {
            doc.field_line(&top).or(Some(2))
        };
        let field = if field.is_empty() && !top.is_empty() {
            format!("/{top}")
        } else {
            field
        };
        diags.push(Diagnostic::new(&path, field, line, error.to_string()));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let meta: Frontmatter = match serde_json::from_value(frontmatter) {
        Ok(m) => m,
        Err(e) => {
            return Err(vec![Diagnostic::new(
                &path,
                "",
                Some(2),
                format!("frontmatter: {e}"),
            )])
        }
    };
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if meta.name != folder {
        diags.push(Diagnostic::new(
            &path,
            "/name",
            doc.field_line("name"),
            format!("name `{}` must equal the folder name `{folder}`", meta.name),
        ));
    }
    // Formats asserted, not only annotated (2020-12's default): `format: date` refuses
    // 2026-02-30 with the argument's name, before any query sees it.
    let validator = match jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&meta.input_schema)
    {
        Ok(v) => Some(v),
        Err(e) => {
            diags.push(Diagnostic::new(
                &path,
                format!("/input-schema{}", e.instance_path()),
                doc.field_line("input-schema"),
                format!("not a valid JSON Schema: {e}"),
            ));
            None
        }
    };
    if let Some(out) = &meta.output_schema {
        if let Err(e) = jsonschema::draft202012::new(out) {
            diags.push(Diagnostic::new(
                &path,
                format!("/output-schema{}", e.instance_path()),
                doc.field_line("output-schema"),
                format!("not a valid JSON Schema: {e}"),
            ));
        }
    }
    let mut engine = engines.iter().find(|e| e.name() == meta.engine).cloned();
    if let Some(shared) = &engine {
        let empty = Value::Object(serde_json::Map::new());
        let binding = Binding {
            skill_dir: path.parent().unwrap_or_else(|| Path::new(".")),
            options: meta.engine_options.as_ref().unwrap_or(&empty),
            input_schema: &meta.input_schema,
        };
        match shared.bind(&binding) {
            Ok(Some(bound)) => engine = Some(bound),
            Ok(None) => {}
            Err(reason) => {
                let line = doc
                    .field_line("engine-options")
                    .or_else(|| doc.field_line("engine"));
                diags.push(Diagnostic::new(&path, "/engine-options", line, reason));
                engine = None;
            }
        }
    } else {
        let known: Vec<&str> = engines.iter().map(|e| e.name()).collect();
        diags.push(Diagnostic::new(
            &path,
            "/engine",
            doc.field_line("engine"),
            format!(
                "unknown engine `{}`; registered engines: {}",
                meta.engine,
                known.join(", ")
            ),
        ));
    }
    let access = declared_access(&doc, &meta, engine.as_deref(), &mut diags);
    let template_file = meta
        .template
        .clone()
        .unwrap_or_else(|| "template.md.j2".to_owned());
    let template_src = match crate::confine::inside(
        path.parent().unwrap_or_else(|| Path::new(".")),
        &template_file,
    )
    .map_err(|e| e.to_string())
    .and_then(|p| fs_err::read_to_string(p).map_err(|e| e.to_string()))
    {
        Ok(s) => Some(s),
        Err(e) => {
            diags.push(Diagnostic::new(
                &path,
                "/template",
                doc.field_line("template"),
                format!("cannot read template: {e}"),
            ));
            None
        }
    };
    match (engine, validator, template_src, diags.is_empty()) {
        (Some(engine), Some(validator), Some(src), true) => {
            let template = format!("{}/{template_file}", meta.name);
            Ok((
                Skill {
                    doc,
                    meta,
                    engine,
                    validator,
                    template,
                    access,
                },
                src,
            ))
        }
        _ => Err(diags),
    }
}

/// The stores `reads` and `writes` name, as the [`Access`] of the skill's calls.
/// Diagnostics: an entry that names no store (`/reads/<i>`), and a store the bound
/// engine opens ([`Engine::effects`]) that the document does not declare.
fn declared_access(
    doc: &SkillDoc,
    meta: &Frontmatter,
    engine: Option<&dyn Engine>,
    diags: &mut Vec<Diagnostic>,
) -> Access {
    let mut stores = |field: &str, entries: &[String]| -> Vec<Store> {
        let mut out = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            match Store::from_declared(entry) {
                Some(store) if !out.contains(&store) => out.push(store),
                Some(_) => {}
                None => diags.push(Diagnostic::new(
                    &doc.path,
                    format!("/{field}/{i}"),
                    doc.field_line(field),
                    format!(
                        "`{entry}` names no store; expected `conversations` (or its table \
                         `L0.all_conversations`) or `memories`"
                    ),
                )),
            }
        }
        out
    };
    let reads = stores("reads", &meta.reads);
    let writes = stores("writes", &meta.writes);
    let access = Access::declared(&meta.name, &reads, &writes);
    if let Some(engine) = engine {
        let effects = engine.effects();
        for store in effects.reads.iter().filter(|s| !access.reads(**s)) {
            diags.push(Diagnostic::new(
                &doc.path,
                "/reads",
                doc.field_line("reads").or_else(|| doc.field_line("engine")),
                format!(
                    "engine `{}` reads store `{store}`, which `reads` does not declare; add `{store}` to `reads`",
                    engine.name()
                ),
            ));
        }
        for store in effects.writes.iter().filter(|s| !access.writes(**s)) {
            diags.push(Diagnostic::new(
                &doc.path,
                "/writes",
                doc.field_line("writes").or_else(|| doc.field_line("engine")),
                format!(
                    "engine `{}` writes store `{store}`, which `writes` does not declare; add `{store}` to `writes`",
                    engine.name()
                ),
            ));
        }
    }
    access
}

/// For "\"engine\" is a required property" → `engine`.
fn missing_field(reason: &str) -> Option<String> {
    reason
        .strip_suffix(" is a required property")
        .map(|s| s.trim_matches('"').to_owned())
}
