//! [`Printer`]: the one owner of stdout and stderr. Results go to stdout (text, or
//! JSON under `--json`); warnings, notes, errors and hints go to stderr. Text (not
//! JSON, which escapes its own) has control characters escaped
//! ([`skills::terminal::escape`]): file names and stored text never drive the terminal.

use std::fmt::Display;
use std::io::Write;

use anyhow::Result;
use serde::Serialize;
use skills::terminal::escape;

/// Writes a command's output and messages.
///
/// stdout is not locked: `serve` hands it to the MCP stdio transport on another thread.
pub struct Printer {
    out: std::io::Stdout,
    err: std::io::Stderr,
    json: bool,
}

impl Printer {
    /// A printer; `json` says whether results are printed as JSON (`--json`).
    pub fn new(json: bool) -> Self {
        Self {
            out: std::io::stdout(),
            err: std::io::stderr(),
            json,
        }
    }

    /// Whether results are printed as JSON.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Prints `value` as pretty JSON and a newline.
    ///
    /// # Errors
    /// When stdout cannot be written.
    pub fn print_json(&mut self, value: &impl Serialize) -> Result<()> {
        writeln!(self.out, "{}", serde_json::to_string_pretty(value)?)?;
        Ok(())
    }

    /// Prints `text` and a newline.
    ///
    /// # Errors
    /// When stdout cannot be written.
    pub fn line(&mut self, text: impl Display) -> Result<()> {
        writeln!(self.out, "{}", escape(&text.to_string()))?;
        Ok(())
    }

    /// Prints `text` as is (it brings its own newlines).
    ///
    /// # Errors
    /// When stdout cannot be written.
    pub fn text(&mut self, text: impl Display) -> Result<()> {
        write!(self.out, "{}", escape(&text.to_string()))?;
        Ok(())
    }

    /// `warning: …` on stderr.
    pub fn warning(&mut self, message: impl Display) {
        self.message("warning", message);
    }

    /// `note: …` on stderr.
    pub fn note(&mut self, message: impl Display) {
        self.message("note", message);
    }

    /// `hint: …` on stderr.
    pub fn hint(&mut self, message: impl Display) {
        self.message("hint", message);
    }

    /// `error: …` on stderr (after flushing stdout, so the two read in order).
    pub fn error(&mut self, message: impl Display) {
        let _ = self.out.flush();
        self.message("error", message);
    }

    /// `error:` and the `Caused by:` chain once, skipping causes whose text the message
    /// before already contains (transparent wrappers repeat their source).
    pub fn error_chain(&mut self, err: &(dyn std::error::Error + 'static)) {
        let mut last = err.to_string();
        self.error(&last);
        let mut source = err.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !last.contains(&text) {
                let _ = writeln!(self.err, "  Caused by: {}", escape(&text));
            }
            last = text;
            source = cause.source();
        }
    }

    /// A line on stderr without a label (server logs). An associated function so
    /// that tasks on other threads can log while the session keeps the printer.
    pub fn log(message: impl Display) {
        skills::terminal::log(message);
    }

    /// A result line on stdout from a task that does not hold the printer (the URL
    /// `skills ui` opens, printed once the server listens).
    pub fn out_line(message: impl Display) {
        let mut out = std::io::stdout();
        let _ = writeln!(out, "{}", escape(&message.to_string()));
        let _ = out.flush();
    }

    // Messages are best effort: a closed stderr must not turn into another error.
    fn message(&mut self, label: &str, message: impl Display) {
        let _ = writeln!(self.err, "{label}: {}", escape(&message.to_string()));
    }
}
