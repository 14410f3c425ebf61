//! Rendering an engine's structured output to markdown with the skill's minijinja
//! template. Templates see `data` (the engine's JSON) and `args` (the validated
//! arguments). Extra filters: `cell` (safe text for a markdown table cell).

use minijinja::{AutoEscape, Environment};
use serde_json::Value;

/// Escapes text for one markdown table cell: `|` becomes `\|`, a backslash before it
/// is kept as is, and line breaks (`\r\n`, `\n`, `\r`) become `<br>` so the row stays
/// on one line. The raw text stays untouched in the structured output.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => out.push_str("\\|"),
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            _ => out.push(c),
        }
    }
    out
}

/// A template environment with the host's filters and no auto-escaping (output is
/// markdown, not HTML).
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_keep_trailing_newline(false);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_filter("cell", |s: String| cell(&s));
    env
}

/// Renders template `name` of `env` with `data` and `args`.
///
/// # Errors
/// The minijinja error (unknown variable, filter failure…), with its template line.
pub fn render(
    env: &Environment<'_>,
    name: &str,
    data: &Value,
    args: &Value,
) -> Result<String, minijinja::Error> {
    let template = env.get_template(name)?;
    let text = template.render(minijinja::context! { data => data, args => args })?;
    Ok(text.trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_escapes_pipes_and_newlines() {
        assert_eq!(cell("a|b\nc\r\nd\re"), "a\\|b<br>c<br>d<br>e");
        assert_eq!(cell("héllo 🦀"), "héllo 🦀");
    }
}
