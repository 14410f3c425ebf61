//! Text bound for a terminal: file names, ids and stored text come from transcripts
//! and folders anyone may have written, so control characters in them must not reach
//! the terminal raw (`ESC ] 0 ; … BEL` retitles it, `ESC [ 31 m` recolours it, `CR`
//! overwrites the line). Like `ls`'s and ripgrep's quoting, [`escape`] shows them as
//! visible escapes instead; tab and newline stay as they are.

use std::borrow::Cow;
use std::fmt::{Display, Write as _};
use std::io::Write as _;

/// True for a character [`escape`] rewrites: C0 controls but tab and newline, DEL, C1
/// controls, and the bidirectional overrides and isolates (which reorder what follows).
pub fn is_unsafe(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`is_unsafe`] character written as `\xNN` (up to U+00FF) or
/// `\u{NNNN}`; borrowed unchanged when there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_unsafe(c) {
            out.push(c);
        } else if u32::from(c) <= 0xff {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// Writes `message` and a newline to stderr, escaped (server logs and warnings from
/// library code). Best effort: a closed stderr is ignored.
pub fn log(message: impl Display) {
    let line = message.to_string();
    let _ = writeln!(std::io::stderr(), "{}", escape(&line));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_text_is_kept() {
        assert!(matches!(escape("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            escape("a\x1b]0;owned\x07b\rc\u{9b}31md"),
            "a\\x1b]0;owned\\x07b\\x0dc\\x9b31md"
        );
        assert_eq!(escape("x\u{202e}y\u{7f}"), "x\\u{202e}y\\x7f");
        assert_eq!(escape("é ü 日本"), "é ü 日本");
    }
}
