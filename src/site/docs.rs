//! Documentation generated from the skill documents and the host itself: an index and
//! one page per skill, in markdown (through minijinja templates kept in
//! `templates/docs/`) and HTML (pulldown-cmark + a small stylesheet).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::host::document::section_names;
use crate::host::{Host, Skill};

const INDEX_MD: &str = include_str!("../../templates/docs/index.md.j2");
const SKILL_MD: &str = include_str!("../../templates/docs/skill.md.j2");
const PAGE_HTML: &str = include_str!("../../templates/docs/page.html.j2");
const STYLE_CSS: &str = include_str!("../../templates/docs/style.css");

/// Verification result of one checklist item, as shown in the docs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ItemStatus {
    /// The item text.
    pub text: String,
    /// `pass`, `fail`, `excluded` or `not run`.
    pub status: String,
    /// Failure counter-example or exclusion reason.
    pub detail: Option<String>,
}

/// Errors writing the docs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocsError {
    /// A template failed to render.
    #[error("docs template: {0:#}")]
    Template(#[from] minijinja::Error),
    /// Writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The machine-readable docs of every skill: `{"skills": [{…, when_to_invoke,
/// parameters: [{name, type, required, default, bounds, description}],
/// output_contract, does_not_do, checklist: [{text, status, detail}], verification:
/// {passed, failed, total}, tool}]}` (`total` counts the checklist items plus the host's read-only entry), where `…` are the [`skill_summary`] fields and
/// `tool` is the MCP tool definition exactly as `tools/list` serves it.
///
/// `tool_of` gives a skill's MCP tool definition; `status_of` its checklist results.
pub fn docs_data(
    host: &Host,
    tool_of: &dyn Fn(&Skill) -> Value,
    status_of: &dyn Fn(&Skill) -> Vec<ItemStatus>,
) -> Value {
    let names: Vec<String> = host.skills().iter().map(|s| s.name().to_owned()).collect();
    let skills: Vec<Value> = host
        .skills()
        .iter()
        .map(|s| {
            let section = |name: &str| s.doc.section(name).map(|x| link_skills(&x.markdown, &names, s.name()));
            let items = |name: &str| s.doc.section(name).map(|x| x.items.clone()).unwrap_or_default();
            let mut checklist = status_of(s);
            if checklist.is_empty() {
                checklist = s
                    .doc
                    .checklist()
                    .iter()
                    .map(|t| ItemStatus { text: t.clone(), status: "not run".into(), detail: None })
                    .collect();
            }
            let passed = checklist.iter().filter(|c| c.status == "pass").count();
            let failed = checklist.iter().filter(|c| c.status == "fail").count();
            let mut page = skill_summary(s);
            let details = json!({
                "when_to_invoke": section(section_names::WHEN_TO_INVOKE),
                "parameters": parameters(&s.meta.input_schema),
                "output_contract": section(section_names::OUTPUT_CONTRACT),
                "does_not_do": items(section_names::DOES_NOT_DO).iter().map(|t| link_skills(t, &names, s.name())).collect::<Vec<_>>(),
                "checklist": checklist,
                "verification": {"passed": passed, "failed": failed, "total": checklist.len()},
                "tool": tool_of(s),
            });
            if let (Some(page), Value::Object(details)) = (page.as_object_mut(), details) {
                page.extend(details);
            }
            page
        })
        .collect();
    json!({ "skills": skills })
}

/// What identifies a skill, shared by `skills list --json` and [`docs_data`]:
/// `{name, title, description, layer, reads, writes, determinism, citations, engine,
/// tool_name}` (`tool_name` is the MCP tool name; `title`, `layer`, `determinism` and
/// `citations` may be null).
pub fn skill_summary(s: &Skill) -> Value {
    json!({
        "name": s.name(),
        "title": s.meta.title,
        "description": s.meta.description,
        "layer": s.meta.layer,
        "reads": s.meta.reads,
        "writes": s.meta.writes,
        "determinism": s.meta.determinism,
        "citations": s.meta.citations,
        "engine": s.meta.engine,
        "tool_name": s.tool_name(),
    })
}

/// One row per input-schema property: name, type (or enum values), required, default,
/// bounds (minimum/maximum/length/pattern) and description.
pub fn parameters(schema: &Value) -> Vec<Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let ty = match (p.get("type"), p.get("enum")) {
                (Some(Value::String(t)), _) => t.clone(),
                (Some(Value::Array(ts)), _) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" | "),
                (None, Some(Value::Array(values))) => values
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(" | "),
                _ => "any".into(),
            };
            let mut bounds = Vec::new();
            for (key, label) in [
                ("minimum", "≥"),
                ("maximum", "≤"),
                ("minLength", "length ≥"),
                ("maxLength", "length ≤"),
            ] {
                if let Some(v) = p.get(key) {
                    bounds.push(format!("{label} {v}"));
                }
            }
            if let Some(pattern) = p.get("pattern").and_then(Value::as_str) {
                bounds.push(format!("matches `{pattern}`"));
            }
            json!({
                "name": name,
                "type": ty,
                "required": required.contains(&name.as_str()),
                "default": p.get("default").map(Value::to_string),
                "bounds": bounds.join(", "),
                "description": p.get("description").and_then(Value::as_str).unwrap_or(""),
            })
        })
        .collect()
}

/// Links mentions of other loaded skills (`get-conversation`, `memo-search`…) to their
/// pages; the skill's own name and unknown names stay plain text.
fn link_skills(markdown: &str, names: &[String], own: &str) -> String {
    let mut out = markdown.to_owned();
    for name in names.iter().filter(|n| n.as_str() != own) {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(pos) = rest.find(name.as_str()) {
            let before = rest[..pos].chars().next_back();
            let after = rest[pos + name.len()..].chars().next();
            let word_char = |c: Option<char>| {
                c.is_some_and(|c| {
                    c.is_alphanumeric() || c == '-' || c == '_' || c == '[' || c == '/'
                })
            };
            result.push_str(&rest[..pos]);
            if word_char(before) || word_char(after) {
                result.push_str(name);
            } else {
                result.push_str(&format!("[{name}]({name}.md)"));
            }
            rest = &rest[pos + name.len()..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// Writes the docs site to `out`: `index.md`, `<skill>.md`, their `.html` renderings
/// and `style.css`. Returns the files written, sorted.
///
/// # Errors
/// [`DocsError`] when a template fails or a file cannot be written.
pub fn write_site(data: &Value, out: &Path) -> Result<Vec<PathBuf>, DocsError> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html.j2") {
            minijinja::AutoEscape::Html
        } else {
            minijinja::AutoEscape::None
        }
    });
    env.add_filter("cell", |s: String| crate::host::render::cell(&s));
    env.add_template("index.md.j2", INDEX_MD)?;
    env.add_template("skill.md.j2", SKILL_MD)?;
    env.add_template("page.html.j2", PAGE_HTML)?;
    fs_err::create_dir_all(out)?;
    let mut written = Vec::new();
    let mut write = |name: String, text: String| -> Result<(), DocsError> {
        let path = out.join(name);
        fs_err::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    let mut pages = vec![(
        "index".to_owned(),
        "Skills".to_owned(),
        env.get_template("index.md.j2")?.render(data)?,
    )];
    for skill in data["skills"].as_array().into_iter().flatten() {
        let name = skill["name"].as_str().unwrap_or("skill").to_owned();
        let md = env
            .get_template("skill.md.j2")?
            .render(minijinja::context! { skill => skill })?;
        pages.push((name.clone(), name, md));
    }
    for (file, title, md) in pages {
        let md = format!("{}\n", md.trim_end());
        let html_body = markdown_to_html(&md);
        let html = env
            .get_template("page.html.j2")?
            .render(minijinja::context! { title => title, body => html_body })?;
        write(format!("{file}.md"), md)?;
        write(format!("{file}.html"), html)?;
    }
    write("style.css".into(), STYLE_CSS.into())?;
    written.sort();
    Ok(written)
}

/// Markdown → HTML with tables; links to `x.md` become `x.html`.
fn markdown_to_html(md: &str) -> minijinja::Value {
    use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};
    let parser =
        Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS).map(|event| {
            match event {
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }) if dest_url.ends_with(".md") && !dest_url.contains("://") => {
                    let html = format!("{}.html", &dest_url[..dest_url.len() - 3]);
                    Event::Start(Tag::Link {
                        link_type,
                        dest_url: CowStr::from(html),
                        title,
                        id,
                    })
                }
                other => other,
            }
        });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, parser);
    minijinja::Value::from_safe_string(html)
}

/// Pretty JSON with a trailing newline (the `--format json` output).
pub fn to_json_text(data: &Value) -> String {
    let mut text = serde_json::to_string_pretty(data).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_other_skills_only() {
        let names = vec![
            "get-conversation".to_owned(),
            "search-conversations".to_owned(),
        ];
        let text = link_skills("Use get-conversation after search-conversations; not semantic-search or get-conversations.", &names, "search-conversations");
        assert_eq!(text, "Use [get-conversation](get-conversation.md) after search-conversations; not semantic-search or get-conversations.");
    }

    #[test]
    fn parameter_rows_show_types_defaults_and_bounds() {
        let rows = parameters(&json!({"type": "object", "required": ["q"], "properties": {
            "q": {"type": "string", "description": "Query"},
            "limit": {"type": "integer", "default": 15, "minimum": 1, "maximum": 500},
            "role": {"enum": ["user", "assistant", null]}
        }}));
        assert_eq!(rows[0]["required"], true);
        assert_eq!(rows[1]["bounds"], "≥ 1, ≤ 500");
        assert_eq!(rows[1]["default"], "15");
        assert_eq!(rows[2]["type"], "\"user\" | \"assistant\" | null");
    }
}
