//! The line gate in front of rmcp's stdio transport: every line a client writes is
//! either handed to rmcp or answered here, so the protocol never goes silent.
//!
//! rmcp ignores lines that are not JSON (and drops lines over its length limit) without
//! a word, and answers a known method whose params do not fit its shape with -32601.
//! The gate reads stdin itself, judges each line ([`judge`]) and answers:
//! - -32700 (parse error, `id: null`) for a line that is not JSON: garbage, invalid
//!   UTF-8, a lone surrogate escape, a number out of range (`1e400`), nesting past
//!   serde_json's recursion limit;
//! - -32600 (invalid request, `id: null` unless a valid id could be read) for JSON that
//!   is not one JSON-RPC 2.0 message (arrays/batches, wrong `jsonrpc`, a non-string
//!   method, a bad id), and for a line over [`MAX_LINE_BYTES`] (read and discarded in
//!   chunks, never held whole);
//! - -32602 (invalid params, the request's id) for a known MCP method whose params do
//!   not fit its shape.
//!
//! Every answer is also logged on stderr with the line number. Everything else is
//! forwarded to rmcp unchanged. The gate owns stdout: rmcp's output and the gate's
//! answers are written line by line through one lock, so they never interleave.
//! When stdin closes, [`Gate::closed`] fires (the server then stops promptly, even with
//! a call still running).

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Longest line accepted (bytes, newline excluded): rmcp's own limit, 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC "Parse error".
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request".
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "Invalid params".
pub const INVALID_PARAMS: i64 = -32602;

/// The methods rmcp knows as client requests: one whose params fail rmcp's typed
/// parse falls back to a custom request (answered -32601), so the gate answers -32602.
const KNOWN_REQUESTS: &[&str] = &[
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// What to do with one line.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Hand the line to rmcp.
    Forward,
    /// Answer with this JSON-RPC error response (one line of JSON) and log `reason`.
    Answer {
        /// The response.
        response: Value,
        /// Why, for the stderr log.
        reason: String,
    },
    /// Nothing to do (blank line, or a malformed notification: notifications get no
    /// answer, but the reason is logged).
    Skip(Option<String>),
}

fn answer(id: Value, code: i64, message: String) -> Verdict {
    Verdict::Answer {
        response: json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        reason: message,
    }
}

/// Judges one line (without its newline).
pub fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Verdict::Skip(None);
    }
    let value: Value = match serde_json::from_slice(trimmed) {
        Ok(v) => v,
        Err(e) => return answer(Value::Null, PARSE_ERROR, format!("Parse error: {e}")),
    };
    let Value::Object(object) = &value else {
        return answer(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a JSON-RPC message is one JSON object (batches are not supported)"
                .to_owned(),
        );
    };
    let id = object.get("id");
    let id_ok = matches!(id, Some(Value::String(_)))
        || id.and_then(Value::as_i64).is_some()
        || id.and_then(Value::as_u64).is_some();
    let answer_id = if id_ok {
        id.cloned().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return answer(
            answer_id,
            INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\"".to_owned(),
        );
    }
    if id.is_some() && !id_ok {
        return answer(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: `id` must be a string or an integer".to_owned(),
        );
    }
    let Some(method) = object.get("method") else {
        if object.contains_key("result") || object.contains_key("error") {
            return Verdict::Forward;
        }
        return answer(
            answer_id,
            INVALID_REQUEST,
            "Invalid Request: no `method` (nor `result`/`error` of a response)".to_owned(),
        );
    };
    let Some(method) = method.as_str() else {
        return answer(
            answer_id,
            INVALID_REQUEST,
            "Invalid Request: `method` must be a string".to_owned(),
        );
    };
    let params = object.get("params");
    if let Some(p) = params.filter(|p| !p.is_object() && !p.is_null()) {
        let reason = format!(
            "Invalid params: `params` of `{method}` must be an object, not {}",
            kind(p)
        );
        return if id.is_some() {
            answer(answer_id, INVALID_PARAMS, reason)
        } else {
            Verdict::Skip(Some(reason))
        };
    }
    match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value.clone()) {
        Ok(rmcp::model::JsonRpcMessage::Request(request))
            if matches!(
                request.request,
                rmcp::model::ClientRequest::CustomRequest(_)
            ) && KNOWN_REQUESTS.contains(&method) =>
        {
            answer(
                answer_id,
                INVALID_PARAMS,
                format!(
                    "Invalid params: the params of `{method}` do not fit its shape{}",
                    shape_error(method, &value)
                ),
            )
        }
        Ok(_) => Verdict::Forward,
        Err(e) if id.is_some() => answer(
            answer_id,
            INVALID_PARAMS,
            format!("Invalid params: `{method}`: {e}"),
        ),
        Err(e) => Verdict::Skip(Some(format!("malformed notification `{method}`: {e}"))),
    }
}

/// serde's reason for the commonest methods, for the error message.
fn shape_error(method: &str, value: &Value) -> String {
    let error = match method {
        "tools/call" => serde_json::from_value::<rmcp::model::CallToolRequest>(value.clone()).err(),
        "resources/read" => {
            serde_json::from_value::<rmcp::model::ReadResourceRequest>(value.clone()).err()
        }
        "initialize" => {
            serde_json::from_value::<rmcp::model::InitializeRequest>(value.clone()).err()
        }
        _ => None,
    };
    error.map_or_else(String::new, |e| format!(": {e}"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One line read by [`read_line`].
enum Line {
    /// A whole line (maybe the last one, without a newline) is in the buffer.
    Whole,
    /// The line was longer than the limit; its bytes were discarded.
    Oversized(usize),
    /// End of input.
    Eof,
}

/// Reads one line into `buf` (cleared first), holding at most `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut seen = 0usize;
    let mut oversized = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if oversized {
                Line::Oversized(seen)
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Whole
            });
        }
        let (chunk, end) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        seen += chunk.len();
        if !oversized {
            if buf.len() + chunk.len() > max {
                oversized = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = end.unwrap_or(available.len());
        reader.consume(used);
        if end.is_some() {
            return Ok(if oversized {
                Line::Oversized(seen)
            } else {
                Line::Whole
            });
        }
    }
}

/// The gate between a client's byte streams and rmcp's transport.
pub struct Gate {
    /// Cancelled when the client's input ends (EOF or a read error).
    pub closed: CancellationToken,
    /// The task copying rmcp's output to the client; it ends once rmcp's side of the
    /// transport is dropped and everything rmcp wrote has been written.
    relay: tokio::task::JoinHandle<()>,
}

/// The output stream shared by rmcp and the gate.
type Shared<W> = Arc<Mutex<W>>;

async fn write_line<W: AsyncWrite + Unpin>(out: &Shared<W>, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    if !line.ends_with(b"\n") {
        out.write_all(b"\n").await?;
    }
    out.flush().await
}

impl Gate {
    /// Starts the gate over `input`/`output` and returns it with the transport to give
    /// rmcp (`(reader, writer)`).
    pub fn start<R, W>(
        input: R,
        output: W,
    ) -> (Self, (tokio::io::DuplexStream, tokio::io::DuplexStream))
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (mut to_rmcp, rmcp_reads) = tokio::io::duplex(1 << 16);
        let (rmcp_writes, from_rmcp) = tokio::io::duplex(1 << 16);
        let out: Shared<W> = Arc::new(Mutex::new(output));
        let closed = CancellationToken::new();
        let relay_out = Arc::clone(&out);
        let relay = tokio::spawn(async move {
            let mut lines = BufReader::new(from_rmcp);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if write_line(&relay_out, &line).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let on_close = closed.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::with_capacity(1 << 16, input);
            let mut buf = Vec::new();
            let mut number = 0usize;
            loop {
                number += 1;
                let verdict = match read_line(&mut reader, &mut buf, MAX_LINE_BYTES).await {
                    Ok(Line::Eof) | Err(_) => break,
                    Ok(Line::Oversized(bytes)) => answer(
                        Value::Null,
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: the line is {bytes} bytes long; messages are limited to {MAX_LINE_BYTES} bytes"
                        ),
                    ),
                    Ok(Line::Whole) => judge(&buf),
                };
                match verdict {
                    Verdict::Forward => {
                        buf.push(b'\n');
                        if to_rmcp.write_all(&buf).await.is_err() {
                            break;
                        }
                    }
                    Verdict::Answer { response, reason } => {
                        eprintln!("skills: stdin line {number}: {reason}");
                        let text = response.to_string();
                        if write_line(&out, text.as_bytes()).await.is_err() {
                            break;
                        }
                    }
                    Verdict::Skip(Some(reason)) => {
                        eprintln!("skills: stdin line {number}: ignored: {reason}");
                    }
                    Verdict::Skip(None) => {}
                }
            }
            let _ = to_rmcp.shutdown().await;
            on_close.cancel();
        });
        (Self { closed, relay }, (rmcp_reads, rmcp_writes))
    }

    /// Waits, at most `limit`, until every line rmcp wrote has reached the client —
    /// for the end of a session, so a reply written just before rmcp let go of the
    /// transport (say to `server/discover` from a client that then closed) is not
    /// lost when the process exits.
    pub async fn drain(self, limit: std::time::Duration) {
        let _ = tokio::time::timeout(limit, self.relay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: &Verdict) -> (i64, Value) {
        match v {
            Verdict::Answer { response, .. } => (
                response["error"]["code"].as_i64().unwrap_or(0),
                response["id"].clone(),
            ),
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn non_json_lines_get_parse_errors_with_null_id() {
        for line in [
            &b"garbage"[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ud800"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}"#,
            b"\xff\xfe{}",
        ] {
            assert_eq!(code(&judge(line)), (PARSE_ERROR, Value::Null), "{line:?}");
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(code(&judge(deep.as_bytes())), (PARSE_ERROR, Value::Null));
    }

    #[test]
    fn json_that_is_not_json_rpc_is_an_invalid_request() {
        for line in [
            &b"[]"[..],
            b"42",
            br#"{"id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        ] {
            let (c, _) = code(&judge(line));
            assert_eq!(c, INVALID_REQUEST, "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(
            code(&judge(br#"{"jsonrpc":"2.0","id":7,"method":5}"#)).1,
            json!(7)
        );
    }

    #[test]
    fn wrong_shaped_params_of_known_methods_are_invalid_params() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#[..],
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{}}"#,
        ] {
            assert_eq!(
                code(&judge(line)),
                (INVALID_PARAMS, json!(3)),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let ok = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}"#;
        assert_eq!(judge(ok), Verdict::Forward);
        let unknown = br#"{"jsonrpc":"2.0","id":3,"method":"nope/x","params":{}}"#;
        assert_eq!(judge(unknown), Verdict::Forward);
        assert_eq!(judge(b"   "), Verdict::Skip(None));
    }

    #[tokio::test]
    async fn oversized_lines_are_discarded_in_chunks() {
        let input = format!("{}\n{{}}\n", "x".repeat(1000));
        let mut reader = BufReader::with_capacity(64, input.as_bytes());
        let mut buf = Vec::new();
        assert!(matches!(
            read_line(&mut reader, &mut buf, 100).await.unwrap(),
            Line::Oversized(1000)
        ));
        assert!(matches!(
            read_line(&mut reader, &mut buf, 100).await.unwrap(),
            Line::Whole
        ));
        assert_eq!(buf, b"{}");
        assert!(matches!(
            read_line(&mut reader, &mut buf, 100).await.unwrap(),
            Line::Eof
        ));
    }
}
