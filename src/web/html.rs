//! Markdown to safe HTML: a skill's rendered template, a message, a memory body.
//!
//! Every string shown here may come from a transcript, so it is untrusted. Markdown is
//! parsed by pulldown-cmark with raw HTML turned into text (a `<script>` in a message
//! shows as `<script>`; the `<br>` the `cell` filter writes stays a line break), and
//! the HTML pulldown-cmark writes then goes through ammonia, which keeps only a safe
//! subset of tags and attributes and drops `javascript:` and other unlisted URL
//! schemes. Images are dropped (pages load nothing from elsewhere).
//!
//! Citations become links while the events are rewritten ([`Linker`]): the pages
//! never parse HTML themselves.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::LazyLock;

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Text to turn into links while rendering markdown.
#[derive(Debug, Default, Clone)]
pub struct Linker {
    /// A text node (or inline code) equal to the key, trimmed, becomes a link; the
    /// n-th such node takes the n-th href (rows render in order), the last one after.
    whole: HashMap<String, VecDeque<String>>,
    /// Every occurrence of the key inside a text node becomes a link.
    within: Vec<(String, String)>,
}

impl Linker {
    /// Links a text node that is exactly `text` (a table cell holding an id) to `href`.
    pub fn whole(&mut self, text: &str, href: String) {
        if !text.trim().is_empty() {
            self.whole
                .entry(text.trim().to_owned())
                .or_default()
                .push_back(href);
        }
    }

    /// Links every occurrence of `text` (a citation such as `[memory m-1 · 2026-01-01]`)
    /// to `href`; the first href given for a text wins.
    pub fn within(&mut self, text: &str, href: String) {
        if text.chars().count() >= 3 && !self.within.iter().any(|(t, _)| t == text) {
            self.within.push((text.to_owned(), href));
        }
    }

    /// The href for a node equal to `text`, if any.
    fn take_whole(&mut self, text: &str) -> Option<String> {
        if self.whole.is_empty() {
            return None;
        }
        let queue = self.whole.get_mut(text.trim())?;
        if queue.len() > 1 {
            queue.pop_front()
        } else {
            queue.front().cloned()
        }
    }

    /// `text` split into plain pieces and linked pieces.
    fn split<'t>(&self, text: &'t str) -> Vec<(&'t str, Option<&str>)> {
        let mut out = Vec::new();
        let mut rest = text;
        loop {
            let next = self
                .within
                .iter()
                .filter_map(|(needle, href)| {
                    rest.find(needle.as_str()).map(|at| (at, needle, href))
                })
                .min_by_key(|(at, needle, _)| (*at, usize::MAX - needle.len()));
            let Some((at, needle, href)) = next else {
                if !rest.is_empty() {
                    out.push((rest, None));
                }
                return out;
            };
            if at > 0 {
                out.push((&rest[..at], None));
            }
            let end = at + needle.len();
            out.push((&rest[at..end], Some(href.as_str())));
            rest = &rest[end..];
        }
    }
}

/// The tags ammonia keeps beyond its defaults' removals: everything pulldown-cmark
/// writes for markdown (tables, lists, code, emphasis, links), no images.
fn sanitizer() -> ammonia::Builder<'static> {
    let mut builder = ammonia::Builder::default();
    builder
        .rm_tags(["img"])
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .url_relative(ammonia::UrlRelative::PassThrough)
        .link_rel(Some("noopener noreferrer nofollow"));
    builder
}

/// The sanitiser, built once (its tag and attribute sets) and shared by every page.
static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(sanitizer);

/// Sanitises HTML with the pages' rules (see the module docs).
pub fn sanitize(html: &str) -> String {
    SANITIZER.clean(html).to_string()
}

/// Renders `markdown` to sanitised HTML; raw HTML in it shows as text, and text the
/// `linker` knows becomes links.
pub fn markdown(markdown: &str, linker: &mut Linker) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    // First pass: raw HTML becomes text, and adjacent text is joined (the parser
    // splits text at brackets, which citations contain).
    let mut plain: Vec<Event<'_>> = Vec::new();
    // Adjacent text waits here until the next other event: one piece borrowed, or
    // several joined into one string.
    let mut pending = PendingText::default();
    for event in Parser::new_ext(markdown, options) {
        let event = match event {
            Event::Html(raw) | Event::InlineHtml(raw) if is_line_break(&raw) => Event::HardBreak,
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
            Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
            other => other,
        };
        match event {
            Event::Text(text) => pending.push(text),
            event => {
                pending.flush(&mut plain);
                plain.push(event);
            }
        }
    }
    pending.flush(&mut plain);
    let mut events: Vec<Event<'_>> = Vec::with_capacity(plain.len());
    for event in plain {
        match event {
            Event::Text(text) => push_linked_text(text, linker, &mut events),
            Event::Code(code) => match linker.take_whole(&code) {
                Some(href) => {
                    events.push(link_start(href));
                    events.push(Event::Code(code));
                    events.push(Event::End(TagEnd::Link));
                }
                None => events.push(Event::Code(code)),
            },
            other => events.push(other),
        }
    }
    let mut html = String::with_capacity(markdown.len() * 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    sanitize(&html)
}

/// Adjacent text events being joined (the parser splits text at brackets, which
/// citations contain): linear in the text, whatever the number of pieces.
#[derive(Default)]
struct PendingText<'a> {
    first: Option<CowStr<'a>>,
    joined: Option<String>,
}

impl<'a> PendingText<'a> {
    fn push(&mut self, text: CowStr<'a>) {
        if let Some(joined) = &mut self.joined {
            joined.push_str(&text);
        } else if let Some(first) = self.first.take() {
            let mut joined = String::with_capacity(2 * (first.len() + text.len()));
            joined.push_str(&first);
            joined.push_str(&text);
            self.joined = Some(joined);
        } else {
            self.first = Some(text);
        }
    }

    /// Pushes the joined text, if any, as one event.
    fn flush(&mut self, events: &mut Vec<Event<'a>>) {
        if let Some(joined) = self.joined.take() {
            events.push(Event::Text(CowStr::from(joined)));
        } else if let Some(first) = self.first.take() {
            events.push(Event::Text(first));
        }
    }
}

fn is_line_break(raw: &str) -> bool {
    matches!(
        raw.trim().to_ascii_lowercase().as_str(),
        "<br>" | "<br/>" | "<br />"
    )
}

fn link_start(href: String) -> Event<'static> {
    Event::Start(Tag::Link {
        link_type: LinkType::Inline,
        dest_url: CowStr::from(href),
        title: CowStr::from(""),
        id: CowStr::from(""),
    })
}

fn push_linked_text<'a>(text: CowStr<'a>, linker: &mut Linker, events: &mut Vec<Event<'a>>) {
    if let Some(href) = linker.take_whole(&text) {
        events.push(link_start(href));
        events.push(Event::Text(text));
        events.push(Event::End(TagEnd::Link));
        return;
    }
    if linker.within.is_empty() {
        events.push(Event::Text(text));
        return;
    }
    let pieces = linker.split(&text);
    if pieces.iter().all(|(_, href)| href.is_none()) {
        events.push(Event::Text(text));
        return;
    }
    for (piece, href) in pieces {
        let piece = CowStr::from(piece.to_owned());
        match href {
            Some(href) => {
                events.push(link_start(href.to_owned()));
                events.push(Event::Text(piece));
                events.push(Event::End(TagEnd::Link));
            }
            None => events.push(Event::Text(piece)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(md: &str) -> String {
        markdown(md, &mut Linker::default())
    }

    #[test]
    fn raw_html_shows_as_text() {
        let html = render("Please review\"><script>document.title='pwned'</script>");
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        let html = render("<img src=x onerror=alert(1)>\n\nnext");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
    }

    #[test]
    fn javascript_links_and_images_are_dropped() {
        let html = render("[click](javascript:alert(1)) ![x](http://example.com/a.png)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("click"), "{html}");
    }

    #[test]
    fn tables_code_and_cell_breaks_survive() {
        let html = render("| a | b |\n|---|---|\n| x<br>y | `c` |\n\n```\nfn main() {}\n```");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("x<br>"), "{html}");
        assert!(html.contains("<code>c</code>"), "{html}");
        assert!(html.contains("<pre><code>fn main() {}"), "{html}");
    }

    #[test]
    fn text_the_parser_splits_is_joined_and_escaped() {
        let html = render("a [b] c <x> d & e [memory m-1 · 2026-01-01] f");
        assert_eq!(
            html,
            "<p>a [b] c &lt;x&gt; d &amp; e [memory m-1 · 2026-01-01] f</p>\n"
        );
        let mut linker = Linker::default();
        linker.within("[memory m-1 · 2026-01-01]", "/memories/m-1".into());
        let html = markdown("x <y> [memory m-1 · 2026-01-01] z", &mut linker);
        assert!(
            html.contains("x &lt;y&gt; <a href=\"/memories/m-1\""),
            "a citation split by the parser is still found: {html}"
        );
    }

    #[test]
    fn citations_and_ids_become_links_in_order() {
        let mut linker = Linker::default();
        linker.whole("c1", "/conversations/x/c1?at=a#m-a".into());
        linker.whole("c1", "/conversations/x/c1?at=b#m-b".into());
        linker.within("[memory m-1 · 2026-01-01]", "/memories/m-1".into());
        let html = markdown(
            "| c |\n|---|\n| c1 |\n| c1 |\n\nsee [memory m-1 · 2026-01-01] now",
            &mut linker,
        );
        assert!(
            html.contains("href=\"/conversations/x/c1?at=a#m-a\""),
            "{html}"
        );
        assert!(
            html.contains("href=\"/conversations/x/c1?at=b#m-b\""),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"/memories/m-1\" rel=\"noopener noreferrer nofollow\">[memory m-1 · 2026-01-01]</a>"),
            "{html}"
        );
    }
}
