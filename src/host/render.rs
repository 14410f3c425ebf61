//! Rendering an engine's structured output to markdown with the skill's minijinja
//! template. Templates see `data` (the engine's JSON) and `args` (the validated
//! arguments). Extra filters: `cell` (safe text for a markdown table cell).
//!
//! Rendering is bounded: a template gets [`RENDER_FUEL`] minijinja instructions and
//! may write at most [`MAX_OUTPUT_BYTES`]; past either it stops with an error naming
//! the budget (a skill folder is untrusted: nested `range(100000)` loops must not hang
//! a call).

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

/// Instructions one render may execute (minijinja fuel): about a second of work, three
/// orders of magnitude above what the bundled templates use for 1000 rows.
pub const RENDER_FUEL: u64 = 20_000_000;

/// Bytes one render may write (4 MiB).
pub const MAX_OUTPUT_BYTES: usize = 4 << 20;

/// A template environment with the host's filters, no auto-escaping (output is
/// markdown, not HTML) and the render budget ([`RENDER_FUEL`]).
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_fuel(Some(RENDER_FUEL));
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_keep_trailing_newline(false);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_filter("cell", |s: String| cell(&s));
    env
}

/// Renders template `name` of `env` with `data` and `args`.
///
/// # Errors
/// The minijinja error (unknown variable, filter failure…), with its template line;
/// an `InvalidOperation` naming the budget when the template runs out of fuel
/// ([`RENDER_FUEL`]) or writes more than [`MAX_OUTPUT_BYTES`].
pub fn render(
    env: &Environment<'_>,
    name: &str,
    data: &Value,
    args: &Value,
) -> Result<String, minijinja::Error> {
    let template = env.get_template(name)?;
    let mut out = Capped {
        bytes: Vec::new(),
        cap: MAX_OUTPUT_BYTES,
        overflowed: false,
    };
    let result =
        template.render_captured_to(minijinja::context! { data => data, args => args }, &mut out);
    if let Err(e) = result {
        let budget =
            |what: String| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, what);
        return Err(match e.kind() {
            minijinja::ErrorKind::OutOfFuel => budget(format!(
                "template `{name}` exceeded its render budget of {RENDER_FUEL} instructions (loops too large for one call)"
            )),
            minijinja::ErrorKind::WriteFailure if out.overflowed => budget(format!(
                "template `{name}` exceeded its render budget: output cap of {MAX_OUTPUT_BYTES} bytes"
            )),
            _ => e,
        });
    }
    let text = String::from_utf8_lossy(&out.bytes);
    Ok(text.trim_end().to_owned())
}

/// A writer that refuses to grow past `cap` bytes.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.cap {
            self.overflowed = true;
            return Err(std::io::Error::other("output cap reached"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_escapes_pipes_and_newlines() {
        assert_eq!(cell("a|b\nc\r\nd\re"), "a\\|b<br>c<br>d<br>e");
        assert_eq!(cell("héllo 🦀"), "héllo 🦀");
    }

    #[test]
    fn nested_range_loops_run_out_of_fuel() {
        let mut env = environment();
        env.add_template(
            "t",
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        )
        .unwrap();
        let start = std::time::Instant::now();
        let err = render(&env, "t", &Value::Null, &Value::Null).unwrap_err();
        assert!(err.to_string().contains("render budget of"), "{err}");
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn output_past_the_cap_is_refused() {
        let mut env = environment();
        env.add_template("t", "{{ 'x' * 5000000 }}").unwrap();
        let err = render(&env, "t", &Value::Null, &Value::Null).unwrap_err();
        assert!(err.to_string().contains("output cap"), "{err}");
        env.add_template("ok", "{{ data.n }} rows").unwrap();
        assert_eq!(
            render(&env, "ok", &serde_json::json!({"n": 3}), &Value::Null).unwrap(),
            "3 rows"
        );
    }
}
