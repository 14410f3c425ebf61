//! Who may run a write skill from a page: a POST is accepted only when it comes from
//! this server's own pages — `Sec-Fetch-Site: same-origin`, or an `Origin` equal to
//! the origin the request was sent to (compared as parsed authorities, see
//! [`crate::listener::authority`]) — and carries the per-server token the form
//! holds. Anything else is refused before the skill runs (it writes nothing).

use hyper::HeaderMap;

use crate::listener::authority::{origin_authority, Authority};

/// A per-server secret put in every write form: 32 random bytes, hex.
///
/// # Errors
/// The operating system has no randomness to give.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

/// `Ok` when a POST with `headers` and form token `given` may run a write skill on a
/// server whose token is `token`; else why not.
///
/// # Errors
/// A message naming the header or token that was wrong.
pub fn same_origin_post(
    headers: &HeaderMap,
    token: &str,
    given: Option<&str>,
) -> Result<(), String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let fetch_site = header("sec-fetch-site");
    if let Some(site) = fetch_site {
        if site != "same-origin" {
            return Err(format!(
                "`Sec-Fetch-Site: {site}`: write forms are accepted only from this server's own pages"
            ));
        }
    }
    match header("origin") {
        Some(origin) => {
            let host = header("host").unwrap_or("");
            let own = Authority::parse(host);
            if own.is_none() || origin_authority(origin) != own {
                return Err(format!(
                    "`Origin: {origin}` is not this server's origin (`http://{host}`)"
                ));
            }
        }
        None if fetch_site.is_none() => {
            return Err(
                "neither `Origin` nor `Sec-Fetch-Site` says the form came from this server".into(),
            )
        }
        None => {}
    }
    match given {
        Some(given) if constant_time_eq(given.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err("the form's token is not this server's (reload the page)".into()),
        None => Err("the form has no token (`_token`)".into()),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, hyper::header::HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn only_same_origin_posts_with_the_token_pass() {
        let token = new_token().unwrap_or_default();
        assert_eq!(token.len(), 64);
        let own = headers(&[("host", "127.0.0.1:9"), ("origin", "http://127.0.0.1:9")]);
        assert!(same_origin_post(&own, &token, Some(&token)).is_ok());
        assert!(same_origin_post(&own, &token, Some("x")).is_err());
        assert!(same_origin_post(&own, &token, None).is_err());
        let cross = headers(&[("host", "127.0.0.1:9"), ("origin", "http://localhost:9")]);
        assert!(same_origin_post(&cross, &token, Some(&token)).is_err());
        let site = headers(&[("host", "127.0.0.1:9"), ("sec-fetch-site", "cross-site")]);
        assert!(same_origin_post(&site, &token, Some(&token)).is_err());
        let fetch = headers(&[("host", "127.0.0.1:9"), ("sec-fetch-site", "same-origin")]);
        assert!(same_origin_post(&fetch, &token, Some(&token)).is_ok());
        let bare = headers(&[("host", "127.0.0.1:9")]);
        let why = same_origin_post(&bare, &token, Some(&token)).unwrap_err();
        assert!(why.contains("Origin"), "{why}");
    }
}
