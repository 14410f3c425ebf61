//! The pages' one way to data: every page's data is the output of a served skill,
//! called through [`Host::call_with`] — the same argument validation, store scoping,
//! deadline and secret redaction as an MCP call. `src/web` holds no SQL and opens no
//! store (`tests/architecture.rs` pins it).
//!
//! Which skill feeds which page is written in the skill documents, not here: the
//! frontmatter's `page: {shows: <role>}` ([`Role`]) and `page: {search-box: true}`.
//! A skill that turns redaction off (`redact-secrets: false`) feeds no page, since a
//! page is what people share on a screen.
//!
//! [`Host::call_with`]: crate::host::Host::call_with

use hyper::StatusCode;
use serde_json::{json, Map, Value};

use super::{respond, Pages, Response};
use crate::engines::EngineError;
use crate::host::Skill;
use crate::host::{CallError, CallOutput, Text};

/// A page whose data a skill provides (`page: {shows: …}` in its frontmatter), with
/// the arguments the page passes (see `schemas/skill.schema.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One conversation's messages (`conversation_id`, `source`, `at`, `limit`,
    /// `offset`, `max_chars`, and `machine` on the team archive when the page was
    /// opened for one machine); rows carry `position` and `total`.
    Conversation,
    /// One memory (`id`).
    Memory,
    /// The conversations list (`source`, `project`, `since`, `until`,
    /// `conversation_id`, `limit`, `offset`, and `machine` as for
    /// [`Role::Conversation`]); rows carry `total` and `cites`, and `machine` on the
    /// team archive.
    Conversations,
    /// The projects list (`project`, `limit`).
    Projects,
    /// The memories list (`type`, `tag`, `limit`, `offset`).
    Memories,
    /// Messages per day, or per month and source (`by`, `since`, `project`).
    Activity,
}

impl Role {
    /// The value of `page.shows` naming this role.
    pub fn name(self) -> &'static str {
        match self {
            Self::Conversation => "conversation",
            Self::Memory => "memory",
            Self::Conversations => "conversations",
            Self::Projects => "projects",
            Self::Memories => "memories",
            Self::Activity => "activity",
        }
    }
}

/// The served skill feeding `role`: the first (by name) whose `page.shows` names it
/// and that redacts secrets.
pub fn skill_for(skills: &[Skill], role: Role) -> Option<&Skill> {
    skills
        .iter()
        .filter(|s| s.redacts_secrets())
        .find(|s| s.meta.page.shows.as_deref() == Some(role.name()))
}

/// The served skill behind the search box (`page: {search-box: true}`), if any.
pub fn search_box(skills: &[Skill]) -> Option<&Skill> {
    skills
        .iter()
        .filter(|s| s.redacts_secrets())
        .find(|s| s.meta.page.search_box)
}

/// Why a page has no data: an answer ready to send, or "nothing stored yet" (the
/// store the skill reads does not exist), which some pages show as an empty state.
pub enum Failed {
    /// The store is not there yet: nothing was imported.
    NothingStored(String),
    /// Any other failure, as the page (or JSON) to answer with.
    Answer(Response),
}

impl Failed {
    /// The answer to send: "nothing stored yet" as a 404 naming what to run.
    pub fn into_response(self, pages: &Pages, as_json: bool) -> Response {
        match self {
            Self::NothingStored(why) => fail(
                pages,
                as_json,
                StatusCode::NOT_FOUND,
                "Nothing stored yet",
                &why,
            ),
            Self::Answer(response) => response,
        }
    }
}

/// The outputs of the calls behind one page, by part name: what its JSON twin shows,
/// and the secrets redacted in them.
pub struct Calls {
    parts: Map<String, Value>,
    redacted: usize,
    twin: bool,
}

impl Calls {
    /// No calls yet; the outputs are kept only when the page answers with its JSON
    /// twin (`as_json`): an HTML page needs the redaction count alone.
    pub fn new(as_json: bool) -> Self {
        Self {
            parts: Map::new(),
            redacted: 0,
            twin: as_json,
        }
    }

    /// Records `output` as part `part`.
    pub fn add(&mut self, part: &str, output: &CallOutput) {
        self.redacted += output.redacted;
        if self.twin {
            self.parts.insert(part.to_owned(), json!(output));
        }
    }

    /// Adds the parts of `other` after this one's.
    pub fn extend(&mut self, other: Self) {
        self.redacted += other.redacted;
        self.parts.extend(other.parts);
    }

    /// Secrets the redactor replaced in this page's data.
    pub fn redacted(&self) -> usize {
        self.redacted
    }

    /// The JSON twin: `{<part>: {skill, args, data, text, redacted?}, …, redacted}`.
    pub fn twin(self) -> Response {
        let mut parts = self.parts;
        parts.insert("redacted".into(), Value::from(self.redacted));
        respond::json(StatusCode::OK, &Value::Object(parts))
    }
}

impl Pages {
    /// Calls the skill feeding `role` with `args`, on a call slot, off the async
    /// threads. Failures are answered as a page (or JSON when `as_json`): no such
    /// skill 404, invalid arguments 400, deadline 504, anything else 500.
    pub async fn call_role(
        &self,
        role: Role,
        args: Value,
        as_json: bool,
    ) -> Result<CallOutput, Failed> {
        let served = self.catalog().current();
        let Some(skill) = skill_for(served.host.skills(), role) else {
            return Err(Failed::Answer(fail(
                self,
                as_json,
                StatusCode::NOT_FOUND,
                "No skill for this page",
                &format!(
                    "no served skill declares `page: {{shows: {}}}` (with secret redaction on) in its SKILL.md",
                    role.name()
                ),
            )));
        };
        let name = skill.name().to_owned();
        self.call_skill(&name, args, as_json).await
    }

    /// Calls skill `name` with `args` (see [`Pages::call_role`]).
    pub async fn call_skill(
        &self,
        name: &str,
        args: Value,
        as_json: bool,
    ) -> Result<CallOutput, Failed> {
        let host = std::sync::Arc::clone(&self.catalog().current().host);
        let tool = name.to_owned();
        let called = {
            let Ok(_slot) = self.slots.acquire().await else {
                return Err(Failed::Answer(fail(
                    self,
                    as_json,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Shutting down",
                    "the server is shutting down",
                )));
            };
            // The HTML shows the data; only the JSON twin shows the text.
            let text = if as_json {
                Text::Rendered
            } else {
                Text::Skipped
            };
            self.blocking(move || {
                host.call_with_text(&tool, args, &crate::cancel::Cancel::new(), text)
            })
            .await
        };
        match called {
            Err(response) => Err(Failed::Answer(response)),
            Ok(Ok(output)) => Ok(output),
            Ok(Err(e)) if e.is_missing_store() => Err(Failed::NothingStored(e.to_string())),
            Ok(Err(e)) => {
                let (status, title) = match &e {
                    CallError::InvalidArguments { .. }
                    | CallError::Engine {
                        source: EngineError::Argument { .. },
                        ..
                    } => (StatusCode::BAD_REQUEST, "Invalid arguments"),
                    CallError::UnknownSkill { .. } => (StatusCode::NOT_FOUND, "Not found"),
                    CallError::Stopped { .. } => (StatusCode::GATEWAY_TIMEOUT, "Stopped"),
                    _ => (StatusCode::INTERNAL_SERVER_ERROR, "The call failed"),
                };
                Err(Failed::Answer(fail(
                    self,
                    as_json,
                    status,
                    title,
                    &with_causes(&e),
                )))
            }
        }
    }
}

/// A failure as a page or as JSON `{error}`.
pub fn fail(
    pages: &Pages,
    as_json: bool,
    status: StatusCode,
    title: &str,
    message: &str,
) -> Response {
    if as_json {
        return respond::json(status, &json!({"error": message}));
    }
    pages.error(status, title, message)
}

/// The error and each cause not already in its text.
pub fn with_causes(error: &CallError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str("\ncaused by: ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The rows of a call's output (`data.rows`), empty when there are none.
pub fn rows(output: &CallOutput) -> &[Value] {
    output
        .data
        .get("rows")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Field `key` of `row` as text (`None` when absent, null or not a string).
pub fn text<'v>(row: &'v Value, key: &str) -> Option<&'v str> {
    row.get(key).and_then(Value::as_str)
}

/// Field `key` of `row` as a count (0 when absent or not a non-negative integer).
pub fn count(row: &Value, key: &str) -> usize {
    row.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}
