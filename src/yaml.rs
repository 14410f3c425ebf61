//! YAML read from untrusted files (SKILL.md frontmatter, `conformance.yaml`, memory
//! files, Copilot's `workspace.yaml`): one frontmatter split and one bounded parse, so
//! every reader follows the same rules and every refusal names its line.
//!
//! - [`split_frontmatter`]: a `---` first line (after an optional UTF-8 byte order
//!   mark), closed by the next `---` or `...` line; trailing whitespace and CRLF line
//!   ends are accepted on both marker lines.
//! - [`parse`] / [`Frontmatter::parse`]: [`check`] then `yaml_serde`, errors as
//!   [`YamlError`] with the line in the file's own numbering.
//!
//! A deeply nested document (`[[[[…` 100,000 deep) cost the parser ~30 s to reject,
//! and every command loads every document. [`check`] scans the text once (linear, no
//! allocation per byte) and refuses it past [`MAX_DEPTH`] levels, naming the line.
//!
//! The depth counted is an upper bound of what the parser would build: flow
//! collections (`[`, `{`) outside quoted scalars and comments, plus block levels
//! (each deeper indentation, each `- ` or `? ` that opens an entry on the same line).

use serde::de::DeserializeOwned;

/// Deepest nesting accepted. The bundled documents reach 8 (an input schema's
/// property's `items`' `anyOf`…).
pub const MAX_DEPTH: usize = 64;

/// Where the text went past [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct TooDeep {
    /// 1-based line in the text given to [`check`].
    line: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "YAML nested deeper than {MAX_DEPTH} levels (line {}); documents are refused before parsing",
            self.line
        )
    }
}

/// Scans `text` and fails at the first line where the nesting passes [`MAX_DEPTH`].
///
/// # Errors
/// [`TooDeep`] with the line.
fn check(text: &str) -> Result<(), TooDeep> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let content = trimmed.trim_end();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let mut block = 0;
        if flow == 0 {
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
            // `- - - x` and `? ` open one level each on the same line.
            let mut rest = content;
            while let Some(after) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
                block += 1;
                rest = after.trim_start_matches(' ');
            }
        }
        if indents.len() + block + flow > MAX_DEPTH {
            return Err(TooDeep { line: line_no });
        }
        let mut quote: Option<char> = None;
        let mut previous = ' ';
        for c in content.chars() {
            match quote {
                Some('\'') if c == '\'' => quote = None,
                Some('"') if c == '"' && previous != '\\' => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if previous == ' ' => break,
                    '\'' | '"' if matches!(previous, ' ' | '[' | '{' | ',' | ':') => {
                        quote = Some(c);
                    }
                    '[' | '{' => {
                        flow += 1;
                        if indents.len() + block + flow > MAX_DEPTH {
                            return Err(TooDeep { line: line_no });
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = c;
        }
    }
    Ok(())
}

/// Why YAML from a file was refused. Lines are 1-based, in the numbering of the text
/// given to [`parse`] or [`split_frontmatter`] (a frontmatter's lines are counted from
/// the document's first line). The file's name is the caller's to add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum YamlError {
    /// Nested deeper than [`MAX_DEPTH`]; refused before the parser saw it.
    #[error("YAML nested deeper than {MAX_DEPTH} levels (line {line}); documents are refused before parsing")]
    TooDeep {
        /// The line where the bound was passed.
        line: usize,
    },
    /// The parser refused the text (its message, lines shifted to the file's numbering).
    #[error("{message}")]
    Syntax {
        /// The line the parser reported, when it reported one.
        line: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// A `---` first line with no `---` or `...` line after it.
    #[error(
        "frontmatter opened by `---` on line {line} is not closed: no `---` or `...` line follows"
    )]
    Unclosed {
        /// The line of the opening `---`.
        line: usize,
    },
}

impl YamlError {
    /// The 1-based line the error names, when it names one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::TooDeep { line } | Self::Unclosed { line } => Some(*line),
            Self::Syntax { line, .. } => *line,
        }
    }
}

/// Parses `text` as YAML into `T` after bounding its nesting with [`check`].
///
/// # Errors
/// [`YamlError::TooDeep`] or [`YamlError::Syntax`], each with the line in `text`.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    parse_from_line(text, 1)
}

/// [`parse`] of a fragment whose first line is line `first_line` of its file.
fn parse_from_line<T: DeserializeOwned>(text: &str, first_line: usize) -> Result<T, YamlError> {
    let shift = first_line - 1;
    check(text).map_err(|deep| YamlError::TooDeep {
        line: deep.line + shift,
    })?;
    yaml_serde::from_str(text).map_err(|e| YamlError::Syntax {
        line: e.location().map(|l| l.line() + shift),
        message: shift_lines(&e.to_string(), shift),
    })
}

/// Rewrites each `line N` in a parser message to `line N+shift`.
fn shift_lines(message: &str, shift: usize) -> String {
    if shift == 0 {
        return message.to_owned();
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        out.push_str(&rest[..at + "line ".len()]);
        rest = &rest[at + "line ".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + shift).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// A document's frontmatter and body, as [`split_frontmatter`] found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frontmatter<'a> {
    /// The YAML between the marker lines (line ends as in the file).
    pub yaml: &'a str,
    /// 1-based line of the file where `yaml` starts (2: after the `---` line).
    pub yaml_line: usize,
    /// Everything after the closing marker line.
    pub body: &'a str,
    /// 1-based line of the file where `body` starts.
    pub body_line: usize,
}

impl Frontmatter<'_> {
    /// [`parse`] of [`Self::yaml`], lines counted in the whole file.
    ///
    /// # Errors
    /// See [`parse`].
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, YamlError> {
        parse_from_line(self.yaml, self.yaml_line)
    }

    /// True when the block holds nothing but whitespace (`---` right after `---`).
    pub fn is_empty(&self) -> bool {
        self.yaml.trim().is_empty()
    }
}

/// Splits YAML frontmatter from the body of `text`: `Ok(None)` when the first line
/// (after an optional UTF-8 byte order mark) is not `---`; otherwise the lines up to
/// the next line that is `---` or `...` (trailing whitespace and `\r` ignored on both
/// marker lines).
///
/// # Errors
/// [`YamlError::Unclosed`] (line 1) when no closing line follows.
pub fn split_frontmatter(text: &str) -> Result<Option<Frontmatter<'_>>, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Ok(None);
    }
    let start = first.len();
    let mut offset = start;
    for (index, line) in lines.enumerate() {
        if matches!(line.trim_end(), "---" | "...") {
            let body_line = index + 3;
            return Ok(Some(Frontmatter {
                yaml: &text[start..offset],
                yaml_line: 2,
                body: &text[offset + line.len()..],
                body_line,
            }));
        }
        offset += line.len();
    }
    Err(YamlError::Unclosed { line: 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_documents_pass() {
        let doc = "name: x\ninput-schema:\n  type: object\n  properties:\n    term: {type: string, description: 'a [b'}\n    tags:\n      - a\n      - [b, {c: d}]\n";
        assert_eq!(check(doc), Ok(()));
        assert_eq!(check("k: \"[[[[[[[[\" # [[[[\n"), Ok(()));
    }

    #[test]
    fn deep_flow_and_block_nesting_are_refused_with_the_line() {
        let deep = format!(
            "name: x\nk: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(check(&deep), Err(TooDeep { line: 2 }));
        let mut block = String::new();
        for depth in 0..100 {
            block.push_str(&format!("{}k{depth}:\n", "  ".repeat(depth)));
        }
        assert_eq!(check(&block).unwrap_err().line, MAX_DEPTH + 1);
        let dashes = format!("x:\n  {}y\n", "- ".repeat(200));
        assert_eq!(check(&dashes).unwrap_err().line, 2);
    }

    #[test]
    fn frontmatter_opens_after_a_byte_order_mark_and_closes_on_crlf_lines() {
        let text = "\u{feff}---\r\nname: x\r\n---\r\n# body\r\n";
        let fm = split_frontmatter(text).unwrap().unwrap();
        assert_eq!(fm.yaml, "name: x\r\n");
        assert_eq!(fm.body, "# body\r\n");
        assert_eq!((fm.yaml_line, fm.body_line), (2, 4));
        let value: serde_json::Value = fm.parse().unwrap();
        assert_eq!(value, serde_json::json!({"name": "x"}));
    }

    #[test]
    fn frontmatter_closes_on_dots_and_on_markers_with_trailing_spaces() {
        let fm = split_frontmatter("---  \na: 1\nb: 2\n...\nbody\n---\nmore\n")
            .unwrap()
            .unwrap();
        assert_eq!(fm.yaml, "a: 1\nb: 2\n");
        assert_eq!(fm.body, "body\n---\nmore\n");
        assert_eq!(fm.body_line, 5);
        let fm = split_frontmatter("---\na: 1\n--- \n").unwrap().unwrap();
        assert_eq!((fm.yaml, fm.body), ("a: 1\n", ""));
        assert!(split_frontmatter("---\n---\n").unwrap().unwrap().is_empty());
    }

    #[test]
    fn text_without_an_opening_line_has_no_frontmatter() {
        for text in [
            "# title\n---\na: 1\n---\n",
            "",
            "--- a\nb\n---\n",
            " ---\n---\n",
        ] {
            assert_eq!(split_frontmatter(text), Ok(None), "{text:?}");
        }
    }

    #[test]
    fn an_unclosed_frontmatter_is_an_error_naming_the_opening_line() {
        let err = split_frontmatter("---\nname: x\nbody\n").unwrap_err();
        assert_eq!(err, YamlError::Unclosed { line: 1 });
        assert!(err.to_string().contains("line 1"), "{err}");
        assert!(split_frontmatter("---").is_err());
    }

    #[test]
    fn too_deep_frontmatter_is_refused_before_the_parser_with_the_file_line() {
        // Far past what the parser survives in reasonable time: only the bound can
        // answer, and it answers with the line in the whole document.
        let text = format!("---\na: 1\nk: {}\n---\n", "[".repeat(1_000_000));
        let fm = split_frontmatter(&text).unwrap().unwrap();
        let err = fm.parse::<serde_json::Value>().unwrap_err();
        assert_eq!(err, YamlError::TooDeep { line: 3 });
        assert_eq!(err.line(), Some(3));
    }

    #[test]
    fn syntax_errors_name_the_line_of_the_file() {
        let text = "---\nname: x\ndescription: [unclosed\n---\n";
        let err = split_frontmatter(text)
            .unwrap()
            .unwrap()
            .parse::<serde_json::Value>()
            .unwrap_err();
        let YamlError::Syntax { line, message } = &err else {
            panic!("{err:?}");
        };
        // The flow sequence opened on line 3 of the file runs to the end of the block.
        assert!(matches!(line, Some(3 | 4)), "{err:?}");
        let whole = parse::<serde_json::Value>("name: x\ndescription: [unclosed\n").unwrap_err();
        assert_eq!(
            err.line(),
            whole.line().map(|l| l + 1),
            "{err:?} vs {whole:?}"
        );
        assert!(
            message.contains(&format!("line {}", line.unwrap())),
            "{message}"
        );
    }

    #[test]
    fn parser_messages_shift_every_line_number() {
        assert_eq!(
            shift_lines(
                "did not find x at line 2 column 3, while parsing at line 1 column 1",
                1
            ),
            "did not find x at line 3 column 3, while parsing at line 2 column 1"
        );
        assert_eq!(shift_lines("a line break", 4), "a line break");
    }
}
