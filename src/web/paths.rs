//! The pages' URLs: built with every id percent-encoded, and split back into decoded
//! segments. Ids come from transcripts, so nothing here trusts their characters.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Characters left as they are in a path segment, query value or fragment.
const KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The source segment meaning "whichever source holds this conversation".
pub const ANY_SOURCE: &str = "_";

/// `text` percent-encoded for one path segment, query value or fragment.
pub fn encode(text: &str) -> String {
    utf8_percent_encode(text, KEEP).to_string()
}

/// The page of conversation `id` of `source` (any source when `None`), at `message`
/// (`?at=` picks the page holding it, `#m-` scrolls to it).
pub fn conversation(source: Option<&str>, id: &str, message: Option<&str>) -> String {
    let mut href = format!(
        "/conversations/{}/{}",
        encode(source.unwrap_or(ANY_SOURCE)),
        encode(id)
    );
    if let Some(message) = message {
        let message = encode(message);
        href.push_str(&format!("?at={message}#m-{message}"));
    }
    href
}

/// `href` (a page's path, perhaps with a query and a fragment) showing only the rows
/// of machine `machine` (the team archive's `machine=` filter), when there is one.
pub fn on_machine(href: &str, machine: Option<&str>) -> String {
    let Some(machine) = machine.filter(|m| !m.is_empty()) else {
        return href.to_owned();
    };
    let (head, fragment) = href
        .split_once('#')
        .map_or((href, None), |(h, f)| (h, Some(f)));
    let join = if head.contains('?') { '&' } else { '?' };
    let mut out = format!("{head}{join}machine={}", encode(machine));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// The page of memory `id`.
pub fn memory(id: &str) -> String {
    format!("/memories/{}", encode(id))
}

/// The page of project `name`.
pub fn project(name: &str) -> String {
    format!("/projects/{}", encode(name))
}

/// `base` with the non-empty `pairs` as its query string.
pub fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        query.append_pair(k, v);
        any = true;
    }
    if any {
        format!("{base}?{}", query.finish())
    } else {
        base.to_owned()
    }
}

/// The page of skill `name`.
pub fn skill(name: &str) -> String {
    format!("/skills/{}", encode(name))
}

/// The decoded segments of `path` (empty segments dropped); `None` when a segment is
/// not UTF-8 once decoded.
pub fn segments(path: &str) -> Option<Vec<String>> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_decode_str(s)
                .decode_utf8()
                .ok()
                .map(std::borrow::Cow::into_owned)
        })
        .collect()
}

/// Most pages a list or a conversation is paged to (`?page=`).
pub const MAX_PAGE: usize = 200_000;

/// The last value of query parameter `key` in `pairs`, trimmed; `None` when absent or
/// empty.
pub fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// The page `?page=` asks for (from 1), `None` when it asks for none.
///
/// # Errors
/// A message naming the parameter and what it takes, when the value is not a whole
/// number from 1 to [`MAX_PAGE`] (never a silent first page).
pub fn page_number(pairs: &[(String, String)]) -> Result<Option<usize>, String> {
    let Some(value) = param(pairs, "page") else {
        return Ok(None);
    };
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_PAGE).contains(n))
        .map(Some)
        .ok_or_else(|| {
            format!(
                "query parameter `page`: expected a whole number from 1 to {MAX_PAGE}, got `{value}`"
            )
        })
}

/// Checks `?format=` (and `_format=`): `json` for the JSON twin, `html` for the page.
///
/// # Errors
/// A message naming the parameter and what it takes, for any other value.
pub fn check_format(pairs: &[(String, String)]) -> Result<(), String> {
    for key in ["format", "_format"] {
        if let Some(value) = param(pairs, key).filter(|v| !matches!(*v, "json" | "html")) {
            return Err(format!(
                "query parameter `{key}`: expected `json` (the JSON twin) or `html`, got `{value}`"
            ));
        }
    }
    Ok(())
}

/// The pairs of a query string or form body, decoded, in order.
pub fn pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_paths() {
        let href = conversation(Some("claude-code"), "a/b c<", Some("m\"1"));
        assert_eq!(
            href,
            "/conversations/claude-code/a%2Fb%20c%3C?at=m%221#m-m%221"
        );
        let path = href.split('?').next().unwrap_or("");
        assert_eq!(
            segments(path).unwrap(),
            ["conversations", "claude-code", "a/b c<"]
        );
        assert_eq!(
            on_machine(&href, Some("lap top")),
            "/conversations/claude-code/a%2Fb%20c%3C?at=m%221&machine=lap%20top#m-m%221"
        );
        assert_eq!(
            on_machine("/conversations/_/x", Some("a&b")),
            "/conversations/_/x?machine=a%26b"
        );
        assert_eq!(on_machine("/x", None), "/x");
        assert_eq!(
            pairs("a=1+2&b=%3Cx%3E&a=3"),
            [
                ("a".to_owned(), "1 2".to_owned()),
                ("b".to_owned(), "<x>".to_owned()),
                ("a".to_owned(), "3".to_owned())
            ]
        );
    }

    #[test]
    fn unreadable_page_and_format_values_name_their_parameter() {
        assert_eq!(page_number(&pairs("page=3&x=1")), Ok(Some(3)));
        assert_eq!(page_number(&pairs("page=&x=1")), Ok(None));
        assert_eq!(page_number(&pairs("x=1")), Ok(None));
        for bad in ["abc", "0", "-1", "1.5", "200001", "99999999999999999999999"] {
            let e = page_number(&pairs(&format!("page={bad}"))).unwrap_err();
            assert!(e.contains("`page`") && e.contains(bad), "{e}");
        }
        assert!(check_format(&pairs("format=json")).is_ok());
        assert!(check_format(&pairs("_format=html")).is_ok());
        let e = check_format(&pairs("format=xml")).unwrap_err();
        assert!(e.contains("`format`") && e.contains("xml"), "{e}");
    }
}
