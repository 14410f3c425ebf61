//! How values read on the pages: times relative to now with the UTC time on hover,
//! long ids shortened with the whole id in a tooltip (and a copy button), previews
//! with their line breaks kept up to a limit, and bidirectional controls written as
//! visible escapes ([`bidi_visible`]).

use std::borrow::Cow;
use std::fmt::Write;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Characters an id keeps before it is shortened.
pub const ID_KEEP: usize = 12;

/// Lines a preview keeps; the rest is cut with `…`.
pub const PREVIEW_LINES: usize = 6;

/// A time as the pages show it: `<time datetime="{iso}" title="{utc}">{relative}</time>`.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Time {
    /// RFC 3339 (`2026-03-01T09:00:00Z`), as stored; empty when unknown.
    pub iso: String,
    /// `2026-03-01 09:00:00 UTC`.
    pub utc: String,
    /// "3 days ago", "in 2 hours", "just now".
    pub relative: String,
}

impl Time {
    /// `text` (RFC 3339 or `YYYY-MM-DD HH:MM:SS`, UTC) relative to `now`; text that is
    /// not a time shows as it is.
    pub fn of(text: Option<&str>, now: DateTime<Utc>) -> Self {
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Self::default();
        };
        match crate::time::parse_timestamp(text) {
            Some(t) => Self {
                iso: t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                utc: t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
                relative: relative(t, now),
            },
            None => Self {
                iso: String::new(),
                utc: text.to_owned(),
                relative: text.to_owned(),
            },
        }
    }
}

/// `t` in words relative to `now`: "just now", "5 minutes ago", "3 days ago",
/// "in 2 hours"; beyond a year, the months or years.
pub fn relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - t).num_seconds();
    let (ago, s) = if seconds >= 0 {
        (true, seconds)
    } else {
        (false, -seconds)
    };
    if s < 45 {
        return "just now".into();
    }
    let (n, unit) = match s {
        s if s < 90 * 60 => ((s + 30) / 60, "minute"),
        s if s < 36 * 3600 => ((s + 1800) / 3600, "hour"),
        s if s < 45 * 86_400 => ((s + 43_200) / 86_400, "day"),
        s if s < 365 * 86_400 => ((s + 15 * 86_400) / (30 * 86_400), "month"),
        s => ((s + 182 * 86_400) / (365 * 86_400), "year"),
    };
    let n = n.max(1);
    let plural = if n == 1 { "" } else { "s" };
    if ago {
        format!("{n} {unit}{plural} ago")
    } else {
        format!("in {n} {unit}{plural}")
    }
}

/// An id as the pages show it: shortened when long, the whole id in `full`.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Id {
    /// The whole id (tooltip, copy button, links).
    pub full: String,
    /// What is shown: the id, or its first [`ID_KEEP`] characters and `…`.
    pub short: String,
    /// True when `short` is not the whole id.
    pub cut: bool,
}

impl Id {
    /// `id`, shortened past [`ID_KEEP`] characters.
    pub fn of(id: &str) -> Self {
        let cut = id.chars().count() > ID_KEEP + 1;
        let short = if cut {
            let head: String = id.chars().take(ID_KEEP).collect();
            format!("{head}…")
        } else {
            id.to_owned()
        };
        Self {
            full: id.to_owned(),
            short,
            cut,
        }
    }
}

/// `text` with its line breaks kept, at most [`PREVIEW_LINES`] non-empty lines; a cut
/// preview ends with `…`.
pub fn preview(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > PREVIEW_LINES {
        out.push_str("\n…");
    }
    out
}

/// True for the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
/// U+2066–U+2069): characters that reorder the text around them as displayed, so text
/// from a transcript could show one thing and hold another ("Trojan Source").
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `page` (a rendered page) with every bidirectional control ([`is_bidi_control`])
/// written as the visible escape `\u{202E}`: nothing a transcript holds can then
/// reorder what the page shows, in text and attribute values alike (the escape is
/// ASCII with no markup character). Borrowed when there is none.
pub fn bidi_visible(page: &str) -> Cow<'_, str> {
    if !page.chars().any(is_bidi_control) {
        return Cow::Borrowed(page);
    }
    let mut out = String::with_capacity(page.len() + 16);
    for c in page.chars() {
        if is_bidi_control(c) {
            let _ = write!(out, "\\u{{{:04X}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_relative_to_now_with_the_utc_time_kept() {
        let now = crate::time::parse_timestamp("2026-03-10T12:00:00Z").unwrap_or_default();
        let at = |s: &str| relative(crate::time::parse_timestamp(s).unwrap_or_default(), now);
        assert_eq!(at("2026-03-10T11:59:50Z"), "just now");
        assert_eq!(at("2026-03-10T11:55:00Z"), "5 minutes ago");
        assert_eq!(at("2026-03-10T09:00:00Z"), "3 hours ago");
        assert_eq!(at("2026-03-07T12:00:00Z"), "3 days ago");
        assert_eq!(at("2026-03-10T14:00:00Z"), "in 2 hours");
        assert_eq!(at("2025-01-10T12:00:00Z"), "1 year ago");
        let t = Time::of(Some("2026-03-07T12:00:00Z"), now);
        assert_eq!(t.utc, "2026-03-07 12:00:00 UTC");
        assert_eq!(Time::of(Some("not a time"), now).relative, "not a time");
    }

    #[test]
    fn long_ids_are_shortened_and_previews_keep_some_lines() {
        let id = Id::of("5b1c0d2e-7f3a-4c9b-9e1d-0a1b2c3d4e5f");
        assert_eq!((id.short.as_str(), id.cut), ("5b1c0d2e-7f3…", true));
        assert!(!Id::of("c1").cut);
        let text = "a\n\nb\nc\nd\ne\nf\ng\nh";
        assert_eq!(preview(text), "a\nb\nc\nd\ne\nf\n…");
        assert_eq!(preview("one\ntwo"), "one\ntwo");
    }

    #[test]
    fn bidi_controls_become_visible_escapes() {
        assert_eq!(
            bidi_visible("a\u{202E}b\u{2066}c\u{2069}\u{202A}d"),
            "a\\u{202E}b\\u{2066}c\\u{2069}\\u{202A}d"
        );
        assert!(matches!(bidi_visible("plain é ✓"), Cow::Borrowed(_)));
        // Right-to-left text itself is kept: only the controls are written out.
        assert_eq!(bidi_visible("שלום \u{200F}"), "שלום \u{200F}");
    }
}
