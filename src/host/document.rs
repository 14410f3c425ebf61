//! Parsing a skill document: YAML frontmatter between `---` lines, then a markdown body
//! whose sections are found by heading with pulldown-cmark.

use std::ops::Range;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use serde_json::Value;

/// A problem with one skill document: which file, which frontmatter field (a JSON
/// pointer such as `/input-schema/properties/limit`, empty for the whole document),
/// the 1-based line when known, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// The document (or folder) at fault.
    pub file: PathBuf,
    /// JSON pointer into the frontmatter, or "" when the problem is not one field.
    pub field: String,
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// What is wrong and what was expected.
    pub reason: String,
}

impl Diagnostic {
    /// A diagnostic on `file`.
    pub fn new(
        file: &Path,
        field: impl Into<String>,
        line: Option<usize>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            file: file.to_path_buf(),
            field: field.into(),
            line,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// One body section: a heading and the markdown under it up to the next heading of
/// the same or a higher level.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Section {
    /// Heading text as written (inline markup removed).
    pub title: String,
    /// Heading level, 1–6.
    pub level: u8,
    /// Markdown source of the section body (without the heading line).
    pub markdown: String,
    /// Text of the section's top-level list items (task markers `[ ]` removed,
    /// lines joined by single spaces), in document order.
    pub items: Vec<String>,
    /// 1-based line of each item, parallel to `items`.
    pub item_lines: Vec<usize>,
}

/// A parsed (not yet validated) skill document.
#[derive(Debug, Clone)]
pub struct SkillDoc {
    /// Path of `SKILL.md`.
    pub path: PathBuf,
    /// The frontmatter as JSON (YAML parsed into a JSON value).
    pub frontmatter: Value,
    /// Frontmatter YAML source (for mapping fields to lines).
    pub frontmatter_src: String,
    /// The markdown body after the closing `---`.
    pub body: String,
    /// 1-based line of the body's first line in the file.
    pub body_line: usize,
    /// Body sections in document order.
    pub sections: Vec<Section>,
}

/// Names of sections the host looks for; matched case-insensitively as a prefix of
/// the heading text.
pub mod section_names {
    /// Output contract.
    pub const OUTPUT_CONTRACT: &str = "output contract";
    /// Does NOT do.
    pub const DOES_NOT_DO: &str = "does not do";
    /// Verification checklist.
    pub const VERIFICATION_CHECKLIST: &str = "verification checklist";
    /// When to invoke.
    pub const WHEN_TO_INVOKE: &str = "when to invoke";
}

impl SkillDoc {
    /// Reads and parses `path`.
    ///
    /// # Errors
    /// A [`Diagnostic`] when the file cannot be read, has no `---` frontmatter block
    /// (split by [`crate::yaml::split_frontmatter`]), or its YAML is nested too deep or
    /// does not parse (with the line).
    pub fn read(path: &Path) -> Result<Self, Diagnostic> {
        let text = fs_err::read_to_string(path)
            .map_err(|e| Diagnostic::new(path, "", None, format!("cannot read: {e}")))?;
        Self::parse(path, &text)
    }

    /// Parses document text; `path` is used in diagnostics only.
    ///
    /// # Errors
    /// See [`SkillDoc::read`].
    pub fn parse(path: &Path, text: &str) -> Result<Self, Diagnostic> {
        let Some(split) = crate::yaml::split_frontmatter(text)
            .map_err(|e| Diagnostic::new(path, "", e.line(), e.to_string()))?
        else {
            return Err(Diagnostic::new(
                path,
                "",
                Some(1),
                "expected YAML frontmatter: the first line must be `---`",
            ));
        };
        let frontmatter: Value = split.parse().map_err(|e| {
            Diagnostic::new(path, "", e.line(), format!("invalid YAML frontmatter: {e}"))
        })?;
        if !frontmatter.is_object() {
            return Err(Diagnostic::new(
                path,
                "",
                Some(2),
                "frontmatter must be a YAML mapping",
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            frontmatter,
            frontmatter_src: split.yaml.to_owned(),
            body: split.body.to_owned(),
            body_line: split.body_line,
            sections: sections(split.body, split.body_line),
        })
    }

    /// The first section whose heading starts with `name` (case-insensitive).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| s.title.to_lowercase().starts_with(name))
    }

    /// The items of the "Verification checklist" section (empty when absent).
    pub fn checklist(&self) -> &[String] {
        self.section(section_names::VERIFICATION_CHECKLIST)
            .map_or(&[], |s| s.items.as_slice())
    }

    /// 1-based line of top-level frontmatter key `key`, when it can be found.
    pub fn field_line(&self, key: &str) -> Option<usize> {
        let prefix = format!("{key}:");
        self.frontmatter_src
            .lines()
            .position(|l| l.starts_with(&prefix))
            .map(|i| i + 2)
    }
}

/// Splits a markdown body into sections by heading.
fn sections(body: &str, body_line: usize) -> Vec<Section> {
    let line_of = |byte: usize| body_line + body[..byte].matches('\n').count();
    // First pass: headings with their byte ranges.
    let mut heads: Vec<(String, u8, Range<usize>)> = Vec::new();
    let mut current: Option<(String, u8, usize)> = None;
    let parser = Parser::new_ext(body, Options::ENABLE_TASKLISTS | Options::ENABLE_TABLES);
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                current = Some((String::new(), level_num(level), range.start));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((title, _, _)) = current.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((title, level, start)) = current.take() {
                    heads.push((title.trim().to_owned(), level, start..range.end));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (i, (title, level, range)) in heads.iter().enumerate() {
        let end = heads[i + 1..]
            .iter()
            .find(|(_, l, _)| l <= level)
            .map_or(body.len(), |(_, _, r)| r.start);
        let content_start = range.end.min(end);
        let markdown = &body[content_start..end];
        let (items, lines) = list_items(markdown);
        out.push(Section {
            title: title.clone(),
            level: *level,
            markdown: markdown.trim().to_owned(),
            items,
            item_lines: lines
                .into_iter()
                .map(|b| line_of(content_start + b))
                .collect(),
        });
    }
    out
}

/// Top-level list items of a markdown fragment: their text and byte offsets.
fn list_items(markdown: &str) -> (Vec<String>, Vec<usize>) {
    let mut items = Vec::new();
    let mut offsets = Vec::new();
    let mut list_depth = 0usize;
    let mut stop_at_next_heading = false;
    for (event, range) in Parser::new_ext(markdown, Options::ENABLE_TASKLISTS).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => stop_at_next_heading = true,
            Event::Start(Tag::List(_)) => list_depth += 1,
            Event::End(TagEnd::List(_)) => list_depth = list_depth.saturating_sub(1),
            Event::Start(Tag::Item) if list_depth == 1 && !stop_at_next_heading => {
                items.push(item_text(&markdown[range.clone()]));
                offsets.push(range.start);
            }
            _ => {}
        }
    }
    (items, offsets)
}

/// The text of one list item's source: bullet and task marker removed, nested lists
/// dropped, lines joined by single spaces.
fn item_text(src: &str) -> String {
    let mut lines = src.lines();
    let first = lines.next().unwrap_or("").trim_start();
    let first = first
        .strip_prefix(['-', '*', '+'])
        .map(str::trim_start)
        .or_else(|| {
            let digits = first.trim_start_matches(|c: char| c.is_ascii_digit());
            (digits.len() < first.len())
                .then(|| digits.strip_prefix(['.', ')']).map(str::trim_start))
                .flatten()
        })
        .unwrap_or(first);
    let first = ["[ ]", "[x]", "[X]"]
        .iter()
        .find_map(|m| first.strip_prefix(m))
        .map_or(first, str::trim_start);
    let mut text = first.trim().to_owned();
    for line in lines {
        let t = line.trim();
        if t.starts_with(['-', '*', '+']) || t.is_empty() {
            break; // a nested list or the end of the paragraph
        }
        text.push(' ');
        text.push_str(t);
    }
    text
}

fn level_num(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "---\nname: demo\ndescription: A demo\n---\n# demo\n\n## Output contract\n\nA table.\n\n## Verification checklist\n\n- [ ] Every row has `conv_id`\n- [ ] Second item\n  continues here\n  - nested, ignored\n- Third\n\n## Does NOT do\n\n- Fuzzy\n";

    #[test]
    fn parses_frontmatter_and_sections() {
        let doc = SkillDoc::parse(Path::new("x/SKILL.md"), DOC).unwrap();
        assert_eq!(doc.frontmatter["name"], "demo");
        assert_eq!(doc.section("output contract").unwrap().markdown, "A table.");
        assert_eq!(
            doc.checklist(),
            [
                "Every row has `conv_id`",
                "Second item continues here",
                "Third"
            ]
        );
        let s = doc.section("verification checklist").unwrap();
        assert_eq!(s.item_lines, vec![13, 14, 17]);
        assert_eq!(doc.section("does not do").unwrap().items, ["Fuzzy"]);
        assert_eq!(doc.field_line("description"), Some(3));
    }

    #[test]
    fn reports_yaml_error_with_line() {
        let err = SkillDoc::parse(
            Path::new("b/SKILL.md"),
            "---\nname: x\ndescription: [unclosed\n---\nbody\n",
        )
        .unwrap_err();
        assert!(err.reason.starts_with("invalid YAML frontmatter"), "{err}");
        assert!(err.line.is_some());
    }

    #[test]
    fn frontmatter_closed_by_dots_after_a_byte_order_mark_parses_with_lines() {
        let doc = SkillDoc::parse(
            Path::new("d/SKILL.md"),
            "\u{feff}---\r\nname: x\r\ndescription: d\r\n...\r\n# x\r\n\r\n## Does NOT do\r\n\r\n- Fuzzy\r\n",
        )
        .unwrap();
        assert_eq!(doc.frontmatter["description"], "d");
        assert_eq!(doc.body_line, 5);
        assert_eq!(doc.section("does not do").unwrap().items, ["Fuzzy"]);
        assert_eq!(doc.field_line("description"), Some(3));
        let deep = format!("---\nname: x\nk: {}\n---\n", "[".repeat(100_000));
        let err = SkillDoc::parse(Path::new("d/SKILL.md"), &deep).unwrap_err();
        assert_eq!(err.line, Some(3), "{err}");
        assert!(err.reason.contains("nested deeper"), "{err}");
    }

    #[test]
    fn missing_frontmatter_is_reported() {
        let err = SkillDoc::parse(Path::new("c/SKILL.md"), "# no frontmatter\n").unwrap_err();
        assert_eq!(err.line, Some(1));
        let err = SkillDoc::parse(Path::new("c/SKILL.md"), "---\nname: x\n").unwrap_err();
        assert!(err.reason.contains("not closed"));
        assert_eq!(err.line, Some(1));
        assert!(err.to_string().contains("c/SKILL.md"), "{err}");
    }
}
