//! Telling a file's format: asks the importers of [`IMPORTERS`], in its order, stage by
//! stage. The stages are fixed here; which importer wins within a stage is the list's
//! order, and nothing else.

use std::path::Path;

use super::formats::{Document, Importer, LineMatch, IMPORTERS};
use super::{strip_bom, Format};

/// Bytes read from the start of a file by [`detect`].
pub(crate) const PEEK_BYTES: usize = 256 * 1024;

/// Records of a `.jsonl` file that [`detect`] parses at most.
const PEEK_LINES: usize = 16;

/// Bytes of each string kept in a first record's skeleton ([`first_record_skeleton`]):
/// enough for any type, key or id a recogniser looks at, whatever the text's length.
const SKELETON_STRING_BYTES: usize = 1024;

/// Tells the format of `path` from its name, its extension and its first bytes (at
/// most 256 KiB are read), or `None` when no importer recognises it or it cannot be
/// read. Each stage asks every importer in [`IMPORTERS`] order; the first yes wins:
///
/// 1. the path alone ([`Importer::recognise_path`]: a name such as
///    `.aider.chat.history.md` or `opencode.db`, a `.vscdb` SQLite file, a folder
///    such as `agent-transcripts`);
/// 2. other files must end in `.jsonl` or `.json`;
/// 3. `.jsonl`: the first complete non-blank lines (up to 16) are parsed, and for each
///    in turn every importer is asked ([`Importer::recognise_line`]); a
///    [`LineMatch::Fallback`] (generic JSON Lines) decides only when no line was
///    anyone's [`LineMatch::Yes`]. When the first record is longer than 256 KiB (a
///    pasted 60 MB log), it is read to its end as a skeleton — every string cut to
///    its first 1 KiB, at most 256 KiB in all, so memory stays bounded — and that is
///    the line asked ([`first_record_skeleton`]). Failing all that, the first bytes
///    ([`Importer::recognise_jsonl_head`]);
/// 4. `.json`: the first bytes and, when the whole document fits in them, the parsed
///    document ([`Importer::recognise_document`]).
///
/// Each importer documents what it recognises.
pub fn detect(path: &Path) -> Option<Format> {
    detect_importer(path).map(Format)
}

/// [`detect`], as the importer.
fn detect_importer(path: &Path) -> Option<&'static dyn Importer> {
    if let Some(importer) = IMPORTERS.iter().find(|i| i.recognise_path(path)) {
        return Some(*importer);
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if ext != "jsonl" && ext != "json" {
        return None;
    }
    let head = peek(path).ok()?;
    let whole = head.len() < PEEK_BYTES;
    if ext == "json" {
        let doc = Document {
            path,
            head: &head,
            whole,
            parsed: whole
                .then(|| serde_json::from_slice(strip_bom(&head)).ok())
                .flatten(),
        };
        return IMPORTERS
            .iter()
            .find(|i| i.recognise_document(&doc))
            .copied();
    }
    let mut complete = head.split(|&b| b == b'\n').collect::<Vec<_>>();
    if !whole {
        complete.pop(); // the last piece may be cut
    }
    let mut lines = complete
        .into_iter()
        .filter(|l| !l.trim_ascii().is_empty())
        .take(PEEK_LINES)
        .map(<[u8]>::to_vec)
        .collect::<Vec<_>>();
    if lines.is_empty() && !whole {
        // The first record does not fit in the window: decide from its skeleton.
        lines.extend(first_record_skeleton(path));
    }
    let mut fallback = None;
    for line in &lines {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(strip_bom(line)) else {
            continue;
        };
        for importer in IMPORTERS {
            match importer.recognise_line(&value) {
                LineMatch::Yes => return Some(*importer),
                LineMatch::Fallback => {
                    fallback.get_or_insert(*importer);
                }
                LineMatch::No => {}
            }
        }
    }
    fallback.or_else(|| {
        IMPORTERS
            .iter()
            .find(|i| i.recognise_jsonl_head(&head))
            .copied()
    })
}

/// Why a `.jsonl` file [`detect`] does not recognise is not merely another tool's
/// file: its first record is longer than the detection window and is no JSON record
/// whose skeleton fits in it ([`first_record_skeleton`]), so its format cannot be
/// told at all. `None` for any other file. The folder walk reports such a file as a
/// fault, naming it and this reason, instead of ignoring it.
pub(crate) fn untold(path: &Path) -> Option<String> {
    if !crate::ingest::has_ext(path, "jsonl") || detect(path).is_some() {
        return None;
    }
    let head = peek(path).ok()?;
    let first_fits = head.len() < PEEK_BYTES
        || head
            .split(|&b| b == b'\n')
            .rev()
            .skip(1) // the last piece may be cut
            .any(|l| !l.trim_ascii().is_empty());
    (!first_fits && first_record_skeleton(path).is_none()).then(|| {
        format!(
            "its first record is longer than {} KiB and is not a JSON record whose keys fit \
             in {} KiB, so its format cannot be told",
            PEEK_BYTES / 1024,
            PEEK_BYTES / 1024
        )
    })
}

/// The first [`PEEK_BYTES`] of a file.
fn peek(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs_err::File::open(path)?;
    let mut head = Vec::with_capacity(8 * 1024);
    file.take(PEEK_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// The first non-blank line of `path` with every JSON string cut to its first
/// [`SKELETON_STRING_BYTES`] (on a character boundary, never inside an escape), so
/// that a record holding a 60 MB text parses as the same record with a short text:
/// its keys, types and small values as written. The whole line is read (in 64 KiB
/// pieces), but at most [`PEEK_BYTES`] of skeleton are kept: `None` past that (a line
/// that is mostly structure, or not JSON at all), or when the file cannot be read.
fn first_record_skeleton(path: &Path) -> Option<Vec<u8>> {
    use std::io::BufRead;
    /// `escape` just after a backslash (the escape's letter comes next).
    const LETTER: u8 = 5;
    let file = fs_err::File::open(path).ok()?;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut out = Vec::new();
    let mut in_string = false;
    // Bytes of the escape still to come: `LETTER`, or the hex digits of `\uXXXX`.
    let mut escape = 0u8;
    let mut kept = 0usize; // bytes of the current string kept
    let mut cut = false; // the current string's rest is skipped
    loop {
        let buf = reader.fill_buf().ok()?;
        if buf.is_empty() {
            break; // a last line without a newline
        }
        let len = buf.len();
        let mut i = 0;
        while i < len {
            if in_string && cut && escape == 0 {
                // Skip the cut text fast, to the next byte that matters.
                match memchr::memchr3(b'"', b'\\', b'\n', &buf[i..]) {
                    Some(at) => i += at,
                    None => break,
                }
            }
            let b = buf[i];
            i += 1;
            if b == b'\n' {
                if out.trim_ascii().is_empty() {
                    out.clear(); // a blank line before the first record
                    in_string = false;
                    continue;
                }
                return Some(out);
            }
            if !in_string {
                in_string = b == b'"';
                (kept, cut, escape) = (0, false, 0);
                out.push(b);
            } else if escape > 0 {
                escape = match escape {
                    LETTER if b == b'u' => 4,
                    LETTER => 0,
                    n => n - 1,
                };
                if !cut {
                    out.push(b);
                }
            } else if b == b'"' {
                in_string = false;
                out.push(b);
            } else {
                // Cut only before a whole character that starts no escape.
                if kept >= SKELETON_STRING_BYTES && b != b'\\' && b & 0xC0 != 0x80 {
                    cut = true;
                }
                if b == b'\\' {
                    escape = LETTER;
                }
                if !cut {
                    out.push(b);
                    kept += 1;
                }
            }
            if out.len() > PEEK_BYTES {
                return None;
            }
        }
        reader.consume(len);
    }
    (!out.trim_ascii().is_empty()).then_some(out)
}

/// True when the file starts with SQLite's header.
pub(crate) fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 16];
    fs_err::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"SQLite format 3\0"
}

/// True when `haystack` contains `needle`.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_by_extension_and_content() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cases = [
            (
                "a.jsonl",
                r#"{"type":"summary","summary":"s","leafUuid":"u"}"#,
                Some("claude-code"),
            ),
            (
                "b.jsonl",
                r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#,
                Some("codex"),
            ),
            (
                "c.jsonl",
                r#"{"type":"session","version":3,"id":"x"}"#,
                Some("pi"),
            ),
            (
                "d.jsonl",
                r#"{"sessionId":"s","projectHash":"h","startTime":"t"}"#,
                Some("gemini-cli"),
            ),
            ("e.json", r#"[{"title":"t","mapping":{}}]"#, Some("chatgpt")),
            (
                "f.json",
                r#"{"sessionId":"s","messages":[]}"#,
                Some("gemini-cli"),
            ),
            ("g.jsonl", r#"{"hello":"world"}"#, None),
            (
                "j.jsonl",
                r#"{"role":"user","content":"hi"}"#,
                Some("generic"),
            ),
            ("h.txt", r#"{"type":"summary","leafUuid":"u"}"#, None),
            ("i.json", "{}", None),
        ];
        for (name, text, want) in cases {
            let path = dir.path().join(name);
            fs_err::write(&path, text).expect("write");
            assert_eq!(detect(&path).map(Format::source), want, "{name}");
        }
        assert_eq!(detect(&dir.path().join("missing.jsonl")), None);
    }
}
