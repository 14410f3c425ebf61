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

/// Most characters of a conversation or message id the store keeps: the skills and
/// pages that open a conversation accept ids this long (`maxLength` in their input
/// schemas), so a message whose id is longer is refused at import, with a fault naming
/// the file and the id's length, rather than stored where nothing could open it.
pub const MAX_ID_CHARS: usize = 4096;

/// Cuts `text` to its first [`MAX_STORED_CHARS`] characters (on a character
/// boundary) and returns how many characters it left out (0 for a text stored whole),
/// counting those [`parse_capped`] already left out of its strings (their marks are
/// removed here).
pub(crate) fn cap_text(text: &mut String) -> usize {
    let mut cut = take_cut_marks(text);
    // A text of at most MAX_STORED_CHARS bytes has at most as many characters.
    if text.len() <= MAX_STORED_CHARS {
        return cut;
    }
    if let Some((at, _)) = text.char_indices().nth(MAX_STORED_CHARS) {
        cut = cut.saturating_add(text[at..].chars().count());
        text.truncate(at);
        text.shrink_to_fit();
    }
    cut
}

/// Opens the mark [`parse_capped`] puts where it cut a string: a noncharacter
/// (Unicode reserves U+FDD0–U+FDEF for a program's internal use), this process's
/// [`cut_nonce`] and `:`, the number of characters left out in decimal, then
/// [`CUT_CLOSE`].
const CUT_OPEN: char = '\u{FDD0}';
/// Closes a cut mark (see [`CUT_OPEN`]).
const CUT_CLOSE: char = '\u{FDD1}';

/// 16 hex digits drawn at random once per process, in every cut mark: a transcript
/// may hold U+FDD0 and U+FDD1 (noncharacters are valid text), but it was written
/// before this number existed, so no text it holds can pass for a cut mark and forge
/// a count of characters cut.
fn cut_nonce() -> &'static str {
    static NONCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NONCE.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        // Keyed from the operating system's randomness.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        format!("{:016x}", hasher.finish())
    })
}

/// Removes the cut marks of `text` and returns the characters they say were left out.
/// Anything else between [`CUT_OPEN`] and [`CUT_CLOSE`] — a mark without this
/// process's [`cut_nonce`], written by a transcript — stays as it is.
fn take_cut_marks(text: &mut String) -> usize {
    if !text.contains(CUT_OPEN) {
        return 0;
    }
    let nonce = cut_nonce();
    let mut out = String::with_capacity(text.len());
    let mut cut = 0usize;
    let mut rest = text.as_str();
    while let Some(i) = rest.find(CUT_OPEN) {
        out.push_str(&rest[..i]);
        let after = &rest[i + CUT_OPEN.len_utf8()..];
        let Some(count) = after.strip_prefix(nonce).and_then(|a| a.strip_prefix(':')) else {
            out.push(CUT_OPEN);
            rest = after;
            continue;
        };
        let digits = count.bytes().take_while(u8::is_ascii_digit).count();
        match (
            count[..digits].parse::<usize>(),
            count[digits..].strip_prefix(CUT_CLOSE),
        ) {
            (Ok(n), Some(tail)) => {
                cut = cut.saturating_add(n);
                rest = tail;
            }
            _ => {
                out.push(CUT_OPEN);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    *text = out;
    cut
}

/// Parses one JSON document with every string (object keys too) cut to its first
/// [`MAX_STORED_CHARS`] characters, followed by a cut mark counting the rest that
/// [`cap_text`] turns into [`crate::model::Message::chars_cut`]. Strings the parser can
/// borrow from `bytes` (no escapes) are counted in place, so a 300 MB string costs no
/// copy of it; otherwise the same as `serde_json::from_slice`.
///
/// # Errors
/// As `serde_json::from_slice`.
pub(crate) fn parse_capped(bytes: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Capped.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// `s` as an owned string, cut with a mark when longer than [`MAX_STORED_CHARS`].
fn capped_string(s: &str) -> String {
    if s.len() <= MAX_STORED_CHARS {
        return s.to_owned();
    }
    match s.char_indices().nth(MAX_STORED_CHARS) {
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            format!("{}{CUT_OPEN}{}:{rest}{CUT_CLOSE}", &s[..at], cut_nonce())
        }
        None => s.to_owned(),
    }
}

/// The [`parse_capped`] visitor: a `serde_json::Value` with capped strings.
struct Capped;

impl<'de> serde::de::DeserializeSeed<'de> for Capped {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Capped {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v)
            .map_or(serde_json::Value::Null, serde_json::Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(serde_json::Value::String(capped_string(v)))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        if v.len() <= MAX_STORED_CHARS {
            return Ok(serde_json::Value::String(v));
        }
        Ok(serde_json::Value::String(capped_string(&v)))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(Capped)? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key_seed(CappedKey)? {
            let value = map.next_value_seed(Capped)?;
            object.insert(key, value);
        }
        Ok(serde_json::Value::Object(object))
    }
}

/// An object key for [`Capped`]: a string, capped like the values.
struct CappedKey;

impl<'de> serde::de::DeserializeSeed<'de> for CappedKey {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for CappedKey {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(capped_string(v))
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
    /// Bytes after `offset` read without finding a newline (a last line without one),
    /// for [`Cursor::partial`].
    pub partial: u64,
    /// Bytes read from the file.
    pub read: u64,
}

/// Reads a JSON Lines file record by record, with no line-length limit, from `start`
/// (byte offset and line number of a [`Cursor`]) or the top. Blank lines are ignored;
/// a line that is not valid JSON or not a JSON object becomes a [`Fault`] (1-based line
/// number) and reading goes on. `on_record` gets each object and its line number,
/// its strings cut to [`MAX_STORED_CHARS`] while parsing ([`parse_capped`]), so a huge
/// line costs about its own buffer, not copies of it.
/// Returns where the last complete (newline-terminated) line ends; a last line without
/// newline is still offered to `on_record` but not counted as read, and when its JSON
/// stops short (a writer mid-append) it is no fault: [`JsonlEnd::unfinished`] says so
/// and the next read, from the same offset, takes it whole. A read resuming after such
/// a line ([`Cursor::partial`] bytes of it read before) first scans only the bytes
/// written since for its newline: while none came (and the line cannot have become a
/// whole object), the line is left unfinished again without being read or parsed, so a
/// line that grows for a minute costs each read its new bytes, not its whole length.
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
        end.offset = c.offset;
        end.line = c.line;
        if c.partial > 0 {
            let (still, scanned) = still_unfinished(&mut file, c).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("reading `{}` after line {}: {e}", path.display(), c.line),
                )
            })?;
            if let Some(still) = still {
                return Ok(still);
            }
            end.read = scanned;
        }
        file.seek(std::io::SeekFrom::Start(c.offset))?;
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
        end.read += n as u64;
        line_no += 1;
        let terminated = buf.ends_with(b"\n");
        if terminated {
            end.offset += n as u64;
            end.line = line_no;
        } else {
            end.partial = n as u64;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let bytes = if line_no == 1 { strip_bom(line) } else { line };
        if bytes.trim_ascii().is_empty() {
            continue;
        }
        match parse_capped(bytes) {
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

/// For a read resuming after a last line without newline ([`Cursor::partial`] bytes of
/// it read before): scans the bytes written after those for a newline, without keeping
/// them. `None` when one came, or when the line may now be a whole object (its last
/// byte that is not blank is `}`, or nothing new that is not blank was written): the
/// line is then read and parsed. Otherwise the line is still being written: the end to
/// return, unfinished. Also returns the bytes scanned.
fn still_unfinished(
    file: &mut fs_err::File,
    c: &Cursor,
) -> std::io::Result<(Option<JsonlEnd>, u64)> {
    use std::io::{Read, Seek};
    let from = c.offset.saturating_add(c.partial);
    if file.metadata()?.len() < from {
        return Ok((None, 0));
    }
    file.seek(std::io::SeekFrom::Start(from))?;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    let mut last = None;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        read += n as u64;
        let bytes = &chunk[..n];
        if bytes.contains(&b'\n') {
            return Ok((None, read));
        }
        last = bytes
            .iter()
            .rev()
            .find(|b| !b.is_ascii_whitespace())
            .copied()
            .or(last);
    }
    let still = match last {
        Some(b) if b != b'}' => Some(JsonlEnd {
            offset: c.offset,
            line: c.line,
            unfinished: true,
            partial: c.partial + read,
            read,
        }),
        _ => None,
    };
    Ok((still, read))
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

/// The texts of a message's `parts` and whether one is an attachment: a string part is
/// a text, an object part gives its `text` field when it has one and is otherwise an
/// attachment when `is_attachment` says so; anything else is left out. Texts are as
/// written; [`join_texts`] drops the blank ones.
pub(crate) fn part_texts(
    parts: &[serde_json::Value],
    is_attachment: impl Fn(&serde_json::Map<String, serde_json::Value>) -> bool,
) -> (Vec<&str>, bool) {
    use serde_json::Value;
    let mut texts: Vec<&str> = Vec::new();
    let mut attachment = false;
    for part in parts {
        match part {
            Value::String(s) => texts.push(s),
            Value::Object(p) => match p.get("text").and_then(Value::as_str) {
                Some(t) => texts.push(t),
                None => attachment |= is_attachment(p),
            },
            _ => {}
        }
    }
    (texts, attachment)
}

/// The text of a message's `content`: a string as it is; in an array, the string
/// elements and the `text` of the objects whose `type` is `text` or absent, joined by
/// [`join_texts`]; empty for anything else.
pub(crate) fn plain_text(content: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => join_texts(items.iter().filter_map(|item| match item {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) if str_field(o, "type").is_none_or(|t| t == "text") => {
                str_field(o, "text")
            }
            _ => None,
        })),
        _ => String::new(),
    }
}

/// Reads a whole file as one JSON document (a leading byte-order mark is ignored).
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, [`IngestError::Json`] when it is
/// not JSON.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, IngestError> {
    let bytes = fs_err::read(path)?;
    parse_capped(strip_bom(&bytes)).map_err(|source| IngestError::Json {
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

    /// Issue 43: a string longer than the cap is cut while parsing (escaped or not,
    /// keys too) and the cut is counted back by `cap_text`; everything else parses as
    /// `serde_json` does, and a stray mark character in a text is kept.
    #[test]
    fn long_strings_are_cut_while_parsing_and_counted() {
        let cap = MAX_STORED_CHARS;
        let doc = json!({"a": [1, -2, 2.5, true, null, {"b": "é\n\"x"}], "c": {}});
        let text = doc.to_string();
        assert_eq!(parse_capped(text.as_bytes()).unwrap(), doc);
        for (long, escaped) in [("ω".repeat(cap + 7), false), ("\n".repeat(cap + 7), true)] {
            let line = json!({"t": long, &long: 1}).to_string();
            assert_eq!(line.contains('\\'), escaped);
            let value = parse_capped(line.as_bytes()).unwrap();
            let mut t = value["t"].as_str().unwrap().to_owned();
            assert!(t.chars().count() > cap, "the mark follows the kept text");
            assert_eq!(cap_text(&mut t), 7);
            assert_eq!(t, long.chars().take(cap).collect::<String>());
            let key = value.as_object().unwrap().keys().nth(1).unwrap();
            // The kept characters and a mark (the nonce, `:` and `7` between its ends).
            assert_eq!(key.chars().count(), cap + 3 + 17);
        }
        // Text after a cut string (joined by a format) is beyond the cap: counted too.
        let value = parse_capped(json!({"t": "x".repeat(cap + 2)}).to_string().as_bytes()).unwrap();
        let mut joined = format!("{}\nand more", value["t"].as_str().unwrap());
        assert_eq!(cap_text(&mut joined), 2 + 9);
        assert_eq!(joined, "x".repeat(cap));
        let mut stray = format!("a{CUT_OPEN}12 b{CUT_OPEN}{CUT_CLOSE}");
        let before = stray.clone();
        assert_eq!(cap_text(&mut stray), 0);
        assert_eq!(stray, before);
        // A transcript's own marks, old-style or with a made-up nonce, count nothing
        // and stay as written, parsed or not.
        let nonce = cut_nonce();
        assert_eq!(nonce.len(), 16);
        let forged = format!(
            "x{CUT_OPEN}123{CUT_CLOSE} y{CUT_OPEN}0123456789abcdef:45{CUT_CLOSE} \
             z{CUT_OPEN}{nonce}45{CUT_CLOSE}"
        );
        let mut text = forged.clone();
        assert_eq!(cap_text(&mut text), 0);
        assert_eq!(text, forged);
        let value = parse_capped(json!({"t": forged}).to_string().as_bytes()).unwrap();
        let mut parsed = value["t"].as_str().unwrap().to_owned();
        assert_eq!(cap_text(&mut parsed), 0);
        assert_eq!(parsed, forged);
        assert!(parse_capped(b"{\"a\": 1} x").is_err());
        assert!(parse_capped(b"{\"a\": ").unwrap_err().is_eof());
    }

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

    /// Issue 43: resuming after a last line still being written, only the bytes after
    /// the part read before are scanned while no newline comes; a line that may have
    /// become a whole object (ending in `}`) or got its newline is read and parsed.
    #[test]
    fn a_resumed_read_scans_only_the_new_end_of_an_unfinished_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let read = |text: &str, partial: u64| {
            fs_err::write(&path, text).unwrap();
            let start = Cursor {
                offset: 9,
                line: 1,
                partial,
                ..Cursor::default()
            };
            let mut faults = Vec::new();
            let mut records = 0;
            let end =
                read_jsonl_from(&path, Some(&start), &mut faults, |_, _| records += 1).unwrap();
            (end, faults.len(), records)
        };
        // 16 bytes after the first line were read before; 5 were appended.
        let (end, faults, records) = read("{\"a\": 1}\n{\"b\": \"half wri  tten", 16);
        assert_eq!((faults, records, end.read, end.partial), (0, 0, 5, 21));
        assert!(end.unfinished);
        assert_eq!((end.offset, end.line), (9, 1));
        // Whole without a newline, or with it: read from the line's start and parsed.
        let (end, faults, records) = read("{\"a\": 1}\n{\"b\": \"half written\"} ", 12);
        assert_eq!((faults, records, end.read), (0, 1, 10 + 22));
        assert!(!end.unfinished);
        let (end, faults, records) = read("{\"a\": 1}\n{\"b\": \"half written\"}\n", 12);
        assert_eq!((faults, records, end.offset, end.line), (0, 1, 31, 2));
        // The file shorter than what was read before (rewritten): read as usual.
        let (end, _, records) = read("{\"a\": 1}\n{\"b\": 2}", 30);
        assert_eq!((records, end.read), (1, 8));
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
