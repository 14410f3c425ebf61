//! The one `Host`/`Origin` guard of the HTTP listener, for `/mcp` and the pages alike
//! (DNS-rebinding protection of a loopback server).
//!
//! `Host` is parsed strictly as an RFC 3986 authority: a host (a name of letters,
//! digits, `-` and `.`; an IPv4 address; or an IPv6 address in brackets), then an
//! optional `:port` of 1 to 5 digits up to 65535. Nothing else is accepted: no
//! user-info (`127.0.0.1:80@evil.example`), no text after the port or the bracket
//! (`localhost:evil`, `[::1]evil.example`), no spaces. Host names compare
//! case-insensitively (`LOCALHOST:8765` is `localhost:8765`). A loopback server answers
//! only `localhost`, `127.0.0.1` and `[::1]` (any port).
//!
//! `Origin`, when present, must be `http://` or `https://` followed by such an authority
//! naming a loopback host, and nothing after it (`null` and paths are refused).

use std::net::{Ipv4Addr, Ipv6Addr};

/// A parsed `host[:port]`: the host lower-cased (an IPv6 address without its brackets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// `localhost`, `127.0.0.1`, `::1`, … (lower case, no brackets).
    pub host: String,
    /// The port, when one was given.
    pub port: Option<u16>,
}

impl Authority {
    /// Parses `text` as `host[:port]`; `None` when it is anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            let ip: Ipv6Addr = inside.parse().ok()?;
            let port = match after {
                "" => None,
                _ => Some(parse_port(after.strip_prefix(':')?)?),
            };
            (ip.to_string(), port)
        } else {
            let (host, port) = match text.split_once(':') {
                Some((host, port)) => (host, Some(parse_port(port)?)),
                None => (text, None),
            };
            let name_chars = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
            if host.is_empty() || !host.chars().all(name_chars) {
                return None;
            }
            (host.to_ascii_lowercase(), port)
        };
        Some(Self { host, port })
    }

    /// True for `localhost`, `127.0.0.1` and `::1`.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self.host.parse::<Ipv4Addr>() == Ok(Ipv4Addr::LOCALHOST)
            || self.host.parse::<Ipv6Addr>() == Ok(Ipv6Addr::LOCALHOST)
    }
}

/// 1 to 5 ASCII digits, at most 65535.
fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The authority of an `Origin` value `http(s)://authority`; `None` for anything else.
pub fn origin_authority(origin: &str) -> Option<Authority> {
    let lower = origin.get(..8).map(str::to_ascii_lowercase);
    let rest = match lower.as_deref() {
        Some(p) if p.starts_with("http://") => &origin[7..],
        Some("https://") => &origin[8..],
        _ => return None,
    };
    Authority::parse(rest)
}

/// Why a request's `Host` or `Origin` is refused by a loopback server; `None` when it
/// may be answered. `host` and `origin` are the header values (`None`: absent; a value
/// that is not text is passed as `Some("")`).
pub fn refusal(host: Option<&str>, origin: Option<&str>) -> Option<&'static str> {
    if !host
        .and_then(Authority::parse)
        .is_some_and(|a| a.is_loopback())
    {
        return Some(
            "the `Host` header does not name this loopback server (localhost, 127.0.0.1 or [::1], optionally with a port)",
        );
    }
    if let Some(origin) = origin {
        if !origin_authority(origin).is_some_and(|a| a.is_loopback()) {
            return Some("the `Origin` header is not a loopback origin (http(s)://localhost, 127.0.0.1 or [::1])");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_parse_strictly() {
        let ok = |t: &str, host: &str, port: Option<u16>| {
            assert_eq!(
                Authority::parse(t),
                Some(Authority {
                    host: host.into(),
                    port
                }),
                "{t}"
            );
        };
        ok("localhost", "localhost", None);
        ok("LOCALHOST:8765", "localhost", Some(8765));
        ok("[::1]:80", "::1", Some(80));
        ok("[0:0:0:0:0:0:0:1]", "::1", None);
        ok("127.0.0.1:65535", "127.0.0.1", Some(65535));
        for bad in [
            "",
            ":80",
            "localhost:",
            "localhost:evil",
            "localhost:65536",
            "localhost:080808",
            "[::1]evil.example",
            "[::1]:80x",
            "127.0.0.1:80@evil.example",
            "user@localhost",
            "localhost/x",
            "local host",
            "[evil]",
            "::1",
        ] {
            assert_eq!(Authority::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn origins_are_a_scheme_and_an_authority() {
        assert!(origin_authority("http://localhost:9").is_some());
        assert!(origin_authority("HTTPS://[::1]").is_some());
        assert!(origin_authority("ftp://localhost").is_none());
        assert!(origin_authority("http://localhost/").is_none());
        assert!(origin_authority("null").is_none());
        assert!(refusal(Some("127.0.0.1:1"), Some("null")).is_some());
        assert!(refusal(None, None).is_some());
    }
}
