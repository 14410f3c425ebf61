//! A nesting-depth bound for YAML read from skill folders (frontmatter,
//! `conformance.yaml`), checked before the text reaches the YAML parser.
//!
//! A deeply nested document (`[[[[…` 100,000 deep) cost the parser ~30 s to reject,
//! and every command loads every document. [`check`] scans the text once (linear, no
//! allocation per byte) and refuses it past [`MAX_DEPTH`] levels, naming the line.
//!
//! The depth counted is an upper bound of what the parser would build: flow
//! collections (`[`, `{`) outside quoted scalars and comments, plus block levels
//! (each deeper indentation, each `- ` or `? ` that opens an entry on the same line).

/// Deepest nesting accepted. The bundled documents reach 8 (an input schema's
/// property's `items`' `anyOf`…).
pub const MAX_DEPTH: usize = 64;

/// Where the text went past [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// 1-based line in the text given to [`check`].
    pub line: usize,
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
pub fn check(text: &str) -> Result<(), TooDeep> {
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
        let start = std::time::Instant::now();
        assert_eq!(check(&deep), Err(TooDeep { line: 2 }));
        assert!(start.elapsed() < std::time::Duration::from_millis(500));
        let mut block = String::new();
        for depth in 0..100 {
            block.push_str(&format!("{}k{depth}:\n", "  ".repeat(depth)));
        }
        assert_eq!(check(&block).unwrap_err().line, MAX_DEPTH + 1);
        let dashes = format!("x:\n  {}y\n", "- ".repeat(200));
        assert_eq!(check(&dashes).unwrap_err().line, 2);
    }
}
