//! HTTP responses of the pages, each with the same security headers: a
//! Content-Security-Policy that allows only this server's own script and styles
//! ([`CSP`]; no inline script runs, whatever a page contains), no MIME sniffing, no
//! framing, no referrer, no caching.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::StatusCode;

/// A response as the listener sends it.
pub type Response = hyper::Response<BoxBody<Bytes, Infallible>>;

/// The pages' Content-Security-Policy: scripts and styles only from this server's
/// `/static/` files (never inline), nothing loaded from elsewhere, forms posting only
/// here, no framing.
pub const CSP: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The stylesheet, embedded in the binary.
pub const STYLE_CSS: &str = include_str!("../../templates/web/style.css");

/// The icon a browser shows in its tab (SVG); also served at `/favicon.ico`, which
/// browsers request on their own.
pub const FAVICON_SVG: &str = include_str!("../../templates/web/favicon.svg");

/// The one script: keyboard shortcuts; every page works without it.
pub const APP_JS: &str = include_str!("../../templates/web/app.js");

/// A response with `status`, `content_type` and `body`, and the security headers.
pub fn with_body(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response {
    let mut response = hyper::Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

/// An HTML page.
pub fn html(status: StatusCode, body: String) -> Response {
    with_body(status, "text/html; charset=utf-8", body)
}

/// A JSON document (pretty-printed).
pub fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    let body = serde_json::to_string_pretty(value).unwrap_or_else(|e| {
        serde_json::json!({"error": format!("cannot write the result as JSON: {e}")}).to_string()
    });
    with_body(status, "application/json", body)
}

/// Plain text (what is left when a page itself cannot be rendered).
pub fn text(status: StatusCode, body: String) -> Response {
    with_body(status, "text/plain; charset=utf-8", body)
}

/// `303 See Other` to `location` (a path on this server).
pub fn redirect(location: &str) -> Response {
    let mut response = with_body(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
    if let Ok(value) = HeaderValue::from_str(location) {
        response
            .headers_mut()
            .insert(hyper::header::LOCATION, value);
    }
    response
}

/// `response` with an `Allow` header listing `methods` (what a 405 must say).
pub fn allow(mut response: Response, methods: &'static str) -> Response {
    response
        .headers_mut()
        .insert(hyper::header::ALLOW, HeaderValue::from_static(methods));
    response
}

/// One of the embedded `/static/` files, or `None`.
pub fn asset(name: &str) -> Option<Response> {
    let (content_type, body) = match name {
        "style.css" => ("text/css; charset=utf-8", STYLE_CSS),
        "app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "favicon.svg" => ("image/svg+xml", FAVICON_SVG),
        _ => return None,
    };
    let mut response = with_body(StatusCode::OK, content_type, body);
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=300"),
    );
    Some(response)
}
