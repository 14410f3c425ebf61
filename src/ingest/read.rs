//! Reading the files importers parse: JSON Lines record by record (resumable), whole
//! JSON documents, and the small JSON helpers every format uses.

use std::path::Path;

use super::{Cursor, Fault, IngestError};

/// Most characters of one message's text the store keeps (one million, about 1–4 MB).
/// A longer text — a pasted log, a generated file, an attack on the importer — keeps
/// its first characters; the rest is counted (`char_count`, [`crate::model::Message::chars_cut`])
/// but not stored, so one huge line cannot cost gigabytes in the store, its search
/// index and every page that reads it. A person's turn is far shorter than this.
pub const MAX_STORED_CHARS: usize = 1_000_000;

/// Cuts `text` to its first [`MAX_STORED_CHARS`] characters (on a character
/// boundary) and returns how many characters it left out (0 for a text stored whole).
pub(crate) fn cap_text(text: &mut String) -> usize {
    // A text of at most MAX_STORED_CHARS bytes has at most as many characters.
    if text.len() <= MAX_STORED_CHARS {
        return 0;
    }
    match text.char_indices().nth(MAX_STORED_CHARS) {
        Some((at, _)) => {
            let cut = text[at..].chars().count();
            text.truncate(at);
            text.shrink_to_fit();
            cut
        }
        None => 0,
    }
}

/// Where [`read_jsonl_from`] stopped: the end of the last complete line.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JsonlEnd {
    /// Byte offset after the last newline-terminated line.
    pub offset: u64,
    /// Its 1-based line number.
    pub line: usize,
    /// True when the file ends in a line without newline that is not yet whole JSON (a
    /// writer mid-append): left for the next read, not a fault.
    pub unfinished: bool,
}

/// Reads a JSON Lines file record by record, with no line-length limit, from `start`
/// (byte offset and line number of a [`Cursor`]) or the top. Blank lines are ignored;
/// a line that is not valid JSON or not a JSON object becomes a [`Fault`] (1-based line
/// number) and reading goes on. `on_record` gets each object and its line number.
/// Returns where the last complete (newline-terminated) line ends; a last line without
/// newline is still offered to `on_record` but not counted as read, and when its JSON
/// stops short (a writer mid-append) it is no fault: [`JsonlEnd::unfinished`] says so
/// and the next read, from the same offset, takes it whole.
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be opened, positioned or read.
pub(crate) fn read_jsonl_from(
    path: &Path,
    start: Option<&Cursor>,
    faults: &mut Vec<Fault>,
    mut on_record: impl FnMut(usize, serde_json::Map<String, serde_json::Value>),
) -> Result<JsonlEnd, IngestError> {
    use std::io::{BufRead, Seek};
    let mut file = fs_err::File::open(path)?;
    let mut end = JsonlEnd::default();
    if let Some(c) = start {
        file.seek(std::io::SeekFrom::Start(c.offset))?;
        end = JsonlEnd {
            offset: c.offset,
            line: c.line,
            unfinished: false,
        };
    }
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut line_no = end.line;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("reading `{}` after line {line_no}: {e}", path.display()),
            )
        })?;
        if n == 0 {
            return Ok(end);
        }
        line_no += 1;
        if buf.ends_with(b"\n") {
            end = JsonlEnd {
                offset: end.offset + n as u64,
                line: line_no,
                unfinished: false,
            };
        }
        let terminated = buf.ends_with(b"\n");
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let bytes = if line_no == 1 { strip_bom(line) } else { line };
        if bytes.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(serde_json::Value::Object(obj)) => on_record(line_no, obj),
            Ok(other) => faults.push(Fault::new(
                path,
                Some(line_no),
                format!("expected a JSON object, found {}", kind_of(&other)),
            )),
            Err(e) if !terminated && e.is_eof() => end.unfinished = true,
            Err(e) => faults.push(Fault::new(
                path,
                Some(line_no),
                format!("invalid JSON: {e}"),
            )),
        }
    }
}

/// Number of items, as an `i64` (saturating).
pub(crate) fn count_i64<T>(items: impl Iterator<Item = T>) -> i64 {
    i64::try_from(items.count()).unwrap_or(i64::MAX)
}

/// A JSON value's kind, for fault reasons ("an array", "a number"…).
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The non-blank texts, joined by a newline.
pub(crate) fn join_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    texts
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `user` or `assistant` for a message role that is one of them (the roles imported as
/// conversation turns); `None` for any other (system, tool, developer…).
pub(crate) fn chat_role(role: &str) -> Option<&'static str> {
    match role {
        "user" => Some("user"),
        "assistant" => Some("assistant"),
        _ => None,
    }
}

/// The texts of a message's `content` and whether it carries an attachment: a string is
/// one text; in an array, a string element is a text, an object whose `type` is one of
/// `text_types` gives its `text` field, one whose `type` is one of `attachment_types`
/// marks an attachment, and anything else (tool calls, reasoning, unknown blocks) is
/// left out. Texts are as written; [`join_texts`] drops the blank ones.
pub(crate) fn content_texts<'a>(
    content: Option<&'a serde_json::Value>,
    text_types: &[&str],
    attachment_types: &[&str],
) -> (Vec<&'a str>, bool) {
    use serde_json::Value;
    let mut texts: Vec<&str> = Vec::new();
    let mut attachment = false;
    match content {
        Some(Value::String(s)) => texts.push(s),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block {
                    Value::String(s) => texts.push(s),
                    Value::Object(b) => match b.get("type").and_then(Value::as_str) {
                        Some(t) if text_types.contains(&t) => {
                            texts.extend(b.get("text").and_then(Value::as_str));
                        }
                        Some(t) if attachment_types.contains(&t) => attachment = true,
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
        _ => {}
    }
    (texts, attachment)
}

/// Reads a whole file as one JSON document (a leading byte-order mark is ignored).
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] when it is
/// not JSON.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, IngestError> {
    let bytes = fs_err::read(path)?;
    serde_json::from_slice(strip_bom(&bytes)).map_err(|source| IngestError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// The conversations of an export document: the items of an array, or the document
/// itself when it is one object.
///
/// # Errors
/// [`IngestError::Shape`] when the document is neither an array nor an object.
pub(crate) fn conversations_of<'a>(
    doc: &'a serde_json::Value,
    path: &Path,
) -> Result<Vec<&'a serde_json::Value>, IngestError> {
    use serde_json::Value;
    match doc {
        Value::Array(items) => Ok(items.iter().collect()),
        Value::Object(_) => Ok(vec![doc]),
        other => Err(IngestError::Shape {
            path: path.to_path_buf(),
            reason: format!(
                "expected an array of conversations or one conversation object, found {}",
                kind_of(other)
            ),
        }),
    }
}

/// A non-empty string field of a JSON object.
pub(crate) fn str_field<'a>(
    obj: &'a serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Option<&'a str> {
    obj.get(key)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Removes a UTF-8 byte-order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Parses a time value found in a transcript, in UTC.
///
/// Accepts what [`crate::time::parse_timestamp`] reads (RFC 3339 with any offset, ISO
/// without offset taken as UTC), and numbers: epoch seconds (float allowed), or epoch
/// milliseconds above 10^11, microseconds above 10^14, nanoseconds above 10^17.
/// Anything else is `None`.
pub(crate) fn parse_time(value: &serde_json::Value) -> Option<chrono::DateTime<chrono::Utc>> {
    match value {
        serde_json::Value::String(s) => crate::time::parse_timestamp(s),
        serde_json::Value::Number(n) => {
            let x = n.as_f64()?;
            // Seconds until the year 5138; above: milliseconds, microseconds, nanoseconds.
            let secs = match x.abs() {
                a if a > 1e17 => x / 1e9,
                a if a > 1e14 => x / 1e6,
                a if a > 1e11 => x / 1e3,
                _ => x,
            };
            crate::time::from_epoch_seconds(secs)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 30: a last line a writer has not finished is left for the next read, not
    /// a fault; a whole malformed line, or one malformed before its end, is a fault.
    #[test]
    fn an_unfinished_last_line_is_pending_not_a_fault() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let read = |text: &str| {
            fs_err::write(&path, text).unwrap();
            let mut faults = Vec::new();
            let mut records = 0;
            let end = read_jsonl_from(&path, None, &mut faults, |_, _| records += 1).unwrap();
            (end, faults.len(), records)
        };
        let (end, faults, records) = read("{\"a\": 1}\n{\"b\": \"half wri");
        assert_eq!((faults, records, end.line, end.offset), (0, 1, 1, 9));
        assert!(end.unfinished);
        // Finished: read whole.
        let (end, faults, records) = read("{\"a\": 1}\n{\"b\": \"half written\"}\n");
        assert_eq!((faults, records, end.line), (0, 2, 2));
        assert!(!end.unfinished);
        // Broken before its end, or broken and terminated: faults.
        let (end, faults, _) = read("{\"a\": 1}\n{\"b\": ]x");
        assert_eq!(faults, 1);
        assert!(!end.unfinished);
        let (_, faults, _) = read("{\"a\": 1}\n{\"b\": \"half\n");
        assert_eq!(faults, 1);
    }

    #[test]
    fn parse_time_variants() {
        let t = |v: serde_json::Value| parse_time(&v).map(|t| t.to_rfc3339());
        assert_eq!(
            t(json!("2025-03-10T11:14:02.5+02:00")).as_deref(),
            Some("2025-03-10T09:14:02.500+00:00")
        );
        assert_eq!(
            t(json!("2025-03-10T09:14:02")).as_deref(),
            Some("2025-03-10T09:14:02+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000.25)).as_deref(),
            Some("2023-11-14T22:13:20.250+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000_250_i64)).as_deref(),
            Some("2023-11-14T22:13:20.250+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000_123_456_i64)).as_deref(),
            Some("2023-11-14T22:13:20.123456+00:00")
        );
        assert_eq!(
            t(json!(1_700_000_000_123_456_000_i64)).as_deref(),
            Some("2023-11-14T22:13:20.123456+00:00")
        );
        assert_eq!(t(json!("yesterday")), None);
        assert_eq!(t(json!(null)), None);
        assert_eq!(t(json!(1e300)), None);
    }
}
