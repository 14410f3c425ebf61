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
///    anyone's [`LineMatch::Yes`]; failing that, the first bytes
///    ([`Importer::recognise_jsonl_head`], e.g. a first line longer than 256 KiB);
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
    let mut fallback = None;
    for line in complete
        .into_iter()
        .filter(|l| !l.trim_ascii().is_empty())
        .take(PEEK_LINES)
    {
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

/// The first [`PEEK_BYTES`] of a file.
fn peek(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = fs_err::File::open(path)?;
    let mut head = Vec::with_capacity(8 * 1024);
    file.take(PEEK_BYTES as u64).read_to_end(&mut head)?;
    Ok(head)
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
