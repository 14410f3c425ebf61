//! Checks and rewrites around rmcp's streamable HTTP service, so HTTP clients get
//! JSON-RPC errors they can read and hostile requests are refused before rmcp.
//!
//! - A request with more than one `Host` or `Origin` header is refused (`400`, JSON-RPC
//!   -32600): DNS-rebinding protection must not depend on which copy is read.
//! - A new session (a POST without `Mcp-Session-Id`) past [`MAX_SESSIONS`] live sessions
//!   is refused (`503`, JSON-RPC -32000); idle sessions expire after [`SESSION_IDLE`].
//! - Every path (`/mcp` and the pages) gets one `Host`/`Origin` check
//!   ([`foreign_host_or_origin`], see [`crate::listener::authority`]): `403` outside
//!   loopback names.
//! - rmcp's plain-text client errors (a body that does not parse is `415` text) are
//!   rewritten as JSON-RPC error objects with `id: null`, keeping the status: -32700
//!   when the body was not JSON, -32600 otherwise.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;

use super::jsonrpc_gate::{INVALID_REQUEST, PARSE_ERROR};

/// Live HTTP sessions at most; an `initialize` past it gets `503`.
pub const MAX_SESSIONS: usize = 256;

/// A session unused this long is closed (rmcp's keep-alive).
pub const SESSION_IDLE: Duration = Duration::from_secs(300);

/// JSON-RPC server error code used for "too many sessions".
pub const SERVER_BUSY: i64 = -32000;

/// An HTTP response as rmcp's service returns them.
pub type Response = crate::listener::Response;

/// A response with `status` and a JSON-RPC error body (`id: null`).
pub fn jsonrpc_error(status: hyper::StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut response = hyper::Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// `Some(400 response)` when `headers` repeat `Host` or `Origin`.
pub fn duplicate_headers(headers: &hyper::HeaderMap) -> Option<Response> {
    for name in [hyper::header::HOST, hyper::header::ORIGIN] {
        if headers.get_all(&name).iter().count() > 1 {
            return Some(jsonrpc_error(
                hyper::StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                &format!("Invalid Request: the `{name}` header appears more than once"),
            ));
        }
    }
    None
}

/// `Some(403 response)` when a request to a loopback server names a `Host` or an
/// `Origin` that [`crate::listener::authority::refusal`] refuses: the one check for
/// `/mcp` and the pages.
pub fn foreign_host_or_origin(headers: &hyper::HeaderMap) -> Option<Response> {
    let header = |name| headers.get(name).map(|v| v.to_str().unwrap_or(""));
    let why = crate::listener::authority::refusal(
        header(hyper::header::HOST),
        header(hyper::header::ORIGIN),
    )?;
    let mut response =
        hyper::Response::new(Full::new(Bytes::from(format!("forbidden: {why}\n"))).boxed());
    *response.status_mut() = hyper::StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Some(response)
}

/// True for a request that would open a new session (a POST with no session id).
pub fn opens_session(request: &hyper::Request<hyper::body::Incoming>) -> bool {
    request.method() == hyper::Method::POST && !request.headers().contains_key("mcp-session-id")
}

/// The `503` for a new session past [`MAX_SESSIONS`].
pub fn too_many_sessions() -> Response {
    jsonrpc_error(
        hyper::StatusCode::SERVICE_UNAVAILABLE,
        SERVER_BUSY,
        &format!(
            "the server holds {MAX_SESSIONS} sessions, its maximum; close one (DELETE) or wait for idle ones to expire ({} s)",
            SESSION_IDLE.as_secs()
        ),
    )
}

/// Rewrites a plain-text client error (4xx, not JSON, not an event stream) as a
/// JSON-RPC error with the same status; other responses pass unchanged.
pub async fn as_jsonrpc(response: Response) -> Response {
    let status = response.status();
    let content_type = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !status.is_client_error()
        || content_type.starts_with("application/json")
        || content_type.starts_with("text/event-stream")
    {
        return response;
    }
    let text = match response.into_body().collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(never) => match never {},
    };
    let text = text.trim();
    let not_json = status == hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE
        && (text.contains("Deserialize") || text.contains("parse") || text.contains("JSON"));
    let code = if not_json {
        PARSE_ERROR
    } else {
        INVALID_REQUEST
    };
    jsonrpc_error(status, code, text)
}

/// `response` with a body that cancels `token` when it is dropped: when it ends, or
/// when the connection closes before it does (the client disconnected). Only event
/// streams (a `tools/call` still running answers as one) are wrapped; other
/// responses are complete already and keep their exact length.
pub fn cancel_when_dropped(
    response: Response,
    token: tokio_util::sync::CancellationToken,
) -> Response {
    let streams = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !streams {
        return response;
    }
    let guard = token.drop_guard();
    response.map(|body| {
        body.map_frame(move |frame| {
            let _held = &guard;
            frame
        })
        .boxed()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_host_or_origin_is_refused() {
        let mut headers = hyper::HeaderMap::new();
        headers.append(hyper::header::HOST, "127.0.0.1".parse().unwrap());
        assert!(duplicate_headers(&headers).is_none());
        headers.append(hyper::header::HOST, "evil.example".parse().unwrap());
        let response = duplicate_headers(&headers).unwrap();
        assert_eq!(response.status(), hyper::StatusCode::BAD_REQUEST);
        let mut headers = hyper::HeaderMap::new();
        headers.append(hyper::header::ORIGIN, "http://localhost:1".parse().unwrap());
        headers.append(
            hyper::header::ORIGIN,
            "http://evil.example".parse().unwrap(),
        );
        assert!(duplicate_headers(&headers).is_some());
    }

    #[test]
    fn pages_refuse_foreign_host_and_origin() {
        let mut headers = hyper::HeaderMap::new();
        headers.insert(hyper::header::HOST, "127.0.0.1:8765".parse().unwrap());
        assert!(foreign_host_or_origin(&headers).is_none());
        headers.insert(hyper::header::HOST, "[::1]:80".parse().unwrap());
        assert!(foreign_host_or_origin(&headers).is_none());
        headers.insert(hyper::header::ORIGIN, "http://localhost:9".parse().unwrap());
        assert!(foreign_host_or_origin(&headers).is_none());
        headers.insert(
            hyper::header::ORIGIN,
            "http://evil.example".parse().unwrap(),
        );
        assert!(foreign_host_or_origin(&headers).is_some());
        headers.remove(hyper::header::ORIGIN);
        headers.insert(hyper::header::HOST, "evil.example:8765".parse().unwrap());
        assert!(foreign_host_or_origin(&headers).is_some());
        headers.insert(
            hyper::header::HOST,
            "localhost.evil.example".parse().unwrap(),
        );
        assert!(foreign_host_or_origin(&headers).is_some());
        headers.remove(hyper::header::HOST);
        assert!(foreign_host_or_origin(&headers).is_some());
    }

    #[tokio::test]
    async fn plain_text_client_errors_become_json_rpc() {
        let mut plain = hyper::Response::new(
            Full::new(Bytes::from(
                "Unsupported Media Type: Deserialize error: expected value",
            ))
            .boxed(),
        );
        *plain.status_mut() = hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE;
        let rewritten = as_jsonrpc(plain).await;
        assert_eq!(
            rewritten.status(),
            hyper::StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        let body = rewritten.into_body().collect().await.unwrap().to_bytes();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["error"]["code"], PARSE_ERROR);
        assert_eq!(value["id"], serde_json::Value::Null);
    }
}
