//! Secrets redacted at output (issue 19, part 7): a corpus holding one fake secret of
//! every documented kind — built at run time by `skills::redact::examples`, so no
//! secret-shaped literal sits in the repository — is imported as transcripts and as
//! memories with `--keep-secrets` (so output redaction is tested on raw text); no
//! bundled skill returns any of them, `--json` counts the redactions, the store keeps
//! the raw text then, a skill can opt out, and by default `skills ingest` removes them
//! before storing (`tests/redaction_at_store.rs` tests that further).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use skills::redact::{examples, DETECTORS};

fn skills(data: &Path, skills_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(args)
        .env("SKILLS_DATA_DIR", data)
        .env("SKILLS_DIR", skills_dir)
        .env("SKILLS_EMBEDDER", "none")
        .env_remove("SKILLS_KEEP_SECRETS")
        .output()
        .unwrap()
}

/// Writes the corpus: one conversation per secret (`conv-<detector>`, the text and a
/// marker word), and one memory per secret.
fn corpus(dir: &Path) -> (PathBuf, PathBuf) {
    let transcript = dir.join("secrets.jsonl");
    let memories = dir.join("memories.jsonl");
    let mut t = String::new();
    let mut m = String::new();
    for (i, (id, text, _)) in examples().into_iter().enumerate() {
        let line = json!({
            "role": "user",
            "content": format!("pasted zebrafish {text}"),
            "timestamp": format!("2026-03-01T10:{i:02}:00Z"),
            "conversation_id": format!("conv-{id}"),
            "id": format!("msg-{id}"),
        });
        t.push_str(&format!("{line}\n"));
        let mem = json!({
            "id": format!("mem-{id}"),
            "title": format!("Zebrafish credentials {id}"),
            "type": "fact",
            "tags": ["zebrafish"],
            "created": "2026-05-01T10:00:00Z",
            "updated": "2026-05-01T10:00:00Z",
            "body": format!("zebrafish setup note: {text}"),
        });
        m.push_str(&format!("{mem}\n"));
    }
    fs_err::write(&transcript, t).unwrap();
    fs_err::write(&memories, m).unwrap();
    (transcript, memories)
}

/// The [`corpus`] written into `dir` and its transcript imported into `dir/data` by
/// `skills ingest OUTPUT FLAGS` (`OUTPUT` `--quiet` or `--json`), which must succeed:
/// the data folder, the memories file and the ingest's output.
fn ingested(dir: &Path, output: &str, flags: &[&str]) -> (PathBuf, PathBuf, Output) {
    let (transcript, memories) = corpus(dir);
    let data = dir.join("data");
    let mut args = vec!["ingest", output];
    args.extend_from_slice(flags);
    args.push(transcript.to_str().unwrap());
    let o = skills(&data, &common::repo_skills(), &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (data, memories, o)
}

fn imported(extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (data, memories, _) = ingested(dir.path(), "--quiet", extra);
    let mut memo = vec!["memo", "import", memories.to_str().unwrap()];
    memo.extend_from_slice(extra);
    let o = skills(&data, &common::repo_skills(), &memo);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (dir, data)
}

/// `skills run NAME --json --args-json ARGS` → the whole call output.
fn run(data: &Path, skills_dir: &Path, skill: &str, args: &Value) -> Value {
    let o = skills(
        data,
        skills_dir,
        &["run", skill, "--json", "--args-json", &args.to_string()],
    );
    assert!(
        o.status.success(),
        "{skill} {args}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Every call that surfaces the corpus, one or more per bundled skill.
fn calls() -> Vec<(&'static str, Value)> {
    let mut calls = vec![
        (
            "search-conversations",
            json!({"term": "zebrafish", "limit": 50}),
        ),
        ("conversations-by-date", json!({"date": "2026-03-01"})),
        ("brain-stats", json!({})),
        (
            "memo-search",
            json!({"query": "zebrafish", "mode": "bm25", "limit": 50}),
        ),
        (
            "memo-search",
            json!({"query": "zebrafish", "mode": "exact", "limit": 50}),
        ),
    ];
    calls.extend([
        ("list-conversations", json!({"limit": 200})),
        ("list-memories", json!({"limit": 200})),
        ("list-projects", json!({})),
        ("message-activity", json!({"by": "month"})),
    ]);
    // rerank returns the stored text of the memories it is given (the secrets in texts
    // a caller passes are its conformance's concern: `skills run --json` echoes the
    // arguments).
    let memories: Vec<Value> = DETECTORS
        .iter()
        .map(|d| json!({"memory_id": format!("mem-{}", d.id)}))
        .collect();
    calls.push((
        "rerank",
        json!({"query": "zebrafish", "items": memories, "limit": 100, "text_chars": -1}),
    ));
    for d in DETECTORS {
        calls.push((
            "get-conversation",
            json!({"conversation_id": format!("conv-{}", d.id)}),
        ));
        calls.push(("get-memory", json!({"id": format!("mem-{}", d.id)})));
    }
    calls
}

/// Issue 19 "every skill returns them verbatim to whichever agent asks": no call of any
/// bundled skill returns one of the secrets, in its text or its structured data; each
/// secret is replaced by its detector's marker, and `--json` counts the redactions.
#[test]
fn bundled_skills_return_no_secret_of_any_documented_kind() {
    let (_dir, data) = imported(&["--keep-secrets"]);
    let secrets = examples();
    let mut seen_markers = std::collections::BTreeSet::new();
    let mut skills_called = std::collections::BTreeSet::new();
    for (skill, args) in calls() {
        let out = run(&data, &common::repo_skills(), skill, &args);
        skills_called.insert(skill);
        let whole = out.to_string();
        for (id, _, secret) in &secrets {
            // JSON escapes newlines (the private key): compare the escaped form too.
            let escaped = serde_json::to_string(secret).unwrap();
            let escaped = escaped.trim_matches('"');
            assert!(
                !whole.contains(escaped),
                "`{skill}` {args} returned the {id} secret: {whole}"
            );
        }
        for d in DETECTORS {
            if whole.contains(&format!("[REDACTED:{}]", d.id)) {
                seen_markers.insert(d.id);
            }
        }
        let found = whole.contains("[REDACTED:");
        if found {
            let n = out["redacted"].as_u64().unwrap_or(0);
            assert!(n > 0, "`{skill}`: markers but no count: {whole}");
            assert!(
                out["data"]["redacted"].as_u64().unwrap_or(0) > 0,
                "`{skill}`: the structured result does not say how many were redacted"
            );
        }
    }
    assert_eq!(
        skills_called.len(),
        11,
        "every bundled skill that reads is exercised"
    );
    let missing: Vec<&str> = DETECTORS
        .iter()
        .map(|d| d.id)
        .filter(|id| !seen_markers.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "detectors that never fired: {missing:?}"
    );
}

/// With `--keep-secrets` the store keeps the raw text: redaction happens at output only.
#[test]
fn store_keeps_raw_text_with_keep_secrets() {
    let (_dir, data) = imported(&["--keep-secrets"]);
    for (id, n) in stored_secrets(&data) {
        assert_eq!(n, 1, "{id} is not stored raw");
    }
}

/// A document with `redact-secrets: false` gets its output verbatim.
#[test]
fn skill_that_opts_out_returns_raw_text() {
    let (dir, data) = imported(&["--keep-secrets"]);
    let skills_dir = dir.path().join("skills");
    let dst = skills_dir.join("get-conversation");
    fs_err::create_dir_all(&dst).unwrap();
    for e in fs_err::read_dir(common::repo_skills().join("get-conversation")).unwrap() {
        let p = e.unwrap().path();
        fs_err::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
    }
    let doc = fs_err::read_to_string(dst.join("SKILL.md")).unwrap();
    let doc = doc.replacen("writes: []", "writes: []\nredact-secrets: false", 1);
    fs_err::write(dst.join("SKILL.md"), doc).unwrap();
    let (_, _, secret) = examples()
        .into_iter()
        .find(|e| e.0 == "github-token")
        .unwrap();
    let out = run(
        &data,
        &skills_dir,
        "get-conversation",
        &json!({"conversation_id": "conv-github-token"}),
    );
    assert!(out.to_string().contains(&secret), "{out}");
    assert!(out.get("redacted").is_none());
}

/// `skills ingest` replaces the secrets before storing and says how many, by default
/// and with `--redact` (kept for scripts that pass it).
#[test]
fn ingest_removes_secrets_from_the_store_by_default() {
    for flags in [&[][..], &["--redact"][..]] {
        ingest_removes_secrets_from_the_store(flags);
    }
}

fn ingest_removes_secrets_from_the_store(flags: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (data, _, o) = ingested(dir.path(), "--json", flags);
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        summary["secrets_redacted"].as_u64(),
        Some(DETECTORS.len() as u64),
        "{summary}"
    );
    for (id, n) in stored_secrets(&data) {
        assert_eq!(n, 0, "{id} was stored ({flags:?})");
    }
}

/// For each example secret, its detector and how many stored messages of the data
/// folder `data` contain it.
fn stored_secrets(data: &Path) -> Vec<(&'static str, i64)> {
    let store = skills::stores::conversations::ConversationStore::open_ro(
        &data.join("conversations.duckdb"),
    )
    .unwrap();
    let conn = store.connection().unwrap();
    examples()
        .into_iter()
        .map(|(id, _, secret)| {
            let n: i64 = conn
                .query_row(
                    "SELECT count(*) FROM all_conversations WHERE contains(content, ?)",
                    [secret.as_str()],
                    |r| r.get(0),
                )
                .unwrap();
            (id, n)
        })
        .collect()
}

/// A small deterministic generator (xorshift), so a failure names a reproducible case.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Issue 19 part 7, the ≤ 10 % target: the fast path (`Redactor::redact`,
/// `Redactor::redact_json`: anchors, one search per JSON result, windowed regexes)
/// finds exactly what the per-string reference path finds — same text, same count —
/// on the real transcripts and memories of `$SKILLS_CORPUS_DIR` (whole files, lines,
/// 200-byte previews, every JSON line as a value), with every documented secret kind
/// seeded into previews at random places and in changed case.
#[test]
fn fast_redaction_finds_exactly_what_the_per_string_reference_finds() {
    let r = skills::redact::Redactor::global().unwrap();
    let Some(dir) = common::corpus() else {
        return;
    };
    let files = common::files_under(&dir);
    assert!(!files.is_empty(), "the corpus is empty");
    let secrets = examples();
    let mut rng = Rng(0x5EED_CAFE);
    let (mut strings, mut found, mut values) = (0usize, 0usize, 0usize);
    let same = |text: &str, what: &str| -> usize {
        let fast = r.redact(text);
        let reference = r.redact_reference(text);
        assert_eq!(fast, reference, "{what}: {text:?}");
        fast.count
    };
    for path in &files {
        let bytes = fs_err::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let name = path.display().to_string();
        found += same(&text, &name);
        strings += 1;
        let mut previews = Vec::new();
        for line in text.lines() {
            found += same(line, &name);
            strings += 1;
            if let Ok(mut v) = serde_json::from_str::<Value>(line) {
                let mut w = v.clone();
                let (a, b) = (r.redact_json(&mut v), r.redact_json_reference(&mut w));
                assert_eq!((a, &v), (b, &w), "{name}: {line}");
                values += 1;
            }
            let mut at = 0;
            while at < line.len() {
                let mut end = (at + 200).min(line.len());
                while !line.is_char_boundary(end) {
                    end += 1;
                }
                previews.push(line[at..end].to_owned());
                at = end;
            }
        }
        // Secrets seeded into previews: as written, upper- and lower-cased, glued to
        // the text around them or spaced.
        for p in previews.iter_mut().take(400) {
            let (_, example, _) = &secrets[rng.below(secrets.len())];
            let example = match rng.below(4) {
                0 => example.to_uppercase(),
                1 => example.to_lowercase(),
                _ => example.clone(),
            };
            let at = floor_boundary(p, rng.below(p.len() + 1));
            let glue = if rng.below(2) == 0 { "" } else { " " };
            p.insert_str(at, &format!("{glue}{example}{glue}"));
        }
        for p in &previews {
            found += same(p, &name);
            strings += 1;
        }
        // A search result's shape: rows of previews, plus the rendered table.
        for chunk in previews.chunks(15) {
            let rows: Vec<Value> = chunk
                .iter()
                .map(|p| json!({"preview": p, "role": "user", "date": "2026-03-01"}))
                .collect();
            let mut v = json!({"rows": rows, "term": "x"});
            let mut w = v.clone();
            let (a, b) = (r.redact_json(&mut v), r.redact_json_reference(&mut w));
            assert_eq!((a, &v), (b, &w), "{name}");
            values += 1;
            let table: String = chunk.iter().map(|p| format!("| {p} |\n")).collect();
            found += same(&table, &name);
        }
    }
    eprintln!(
        "{} files: {strings} strings and {values} JSON values agree; {found} secrets found",
        files.len()
    );
    assert!(found > 100, "the seeded secrets were not found: {found}");
}

/// The pieces of `secret` a page could show: the secret, its HTML- and JSON-escaped
/// forms, and its longest run of letters and digits (what survives markdown or any
/// escaping splitting it).
fn secret_forms(secret: &str) -> Vec<String> {
    let html = secret
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;");
    let json = serde_json::to_string(secret).unwrap();
    let run = secret
        .split(|c: char| !c.is_ascii_alphanumeric())
        .max_by_key(|s| s.len())
        .unwrap_or("")
        .to_owned();
    let mut forms = vec![secret.to_owned(), html, json.trim_matches('"').to_owned()];
    if run.len() >= 12 {
        forms.push(run);
    }
    forms
}

/// A `skills serve --http` on the data folder `data`; the child is killed on drop.
struct Served {
    child: std::process::Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(data: &Path) -> Served {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["serve", "--no-ingest", "--http", "127.0.0.1:0"])
        .env("SKILLS_DATA_DIR", data)
        .env("SKILLS_DIR", common::repo_skills())
        .env("SKILLS_EMBEDDER", "none")
        .env("SKILLS_NOW", "2026-06-01T12:00:00Z")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("serve exited without printing the pages' address")
        };
        if let Some(at) = line.find("pages at http://") {
            break line[at + "pages at ".len()..]
                .trim()
                .trim_end_matches('/')
                .to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Served { child, base }
}

/// Issue 41: every page and its JSON twin shows the seeded secrets as markers, never
/// in clear — the conversation and memory pages (once read around the redactor), the
/// lists, the index's charts, a project page, every skill's result page — and the
/// pages that replaced some say how many.
#[tokio::test(flavor = "multi_thread")]
async fn no_page_or_json_twin_shows_a_seeded_secret() {
    // Stored as written, so what is tested is the pages' own redaction.
    let (_dir, data) = imported(&["--keep-secrets"]);
    let server = serve(&data);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .unwrap();
    let mut paths: Vec<String> = vec![
        "/".into(),
        "/conversations".into(),
        "/conversations?since=2026-03-01&until=2026-03-01".into(),
        "/projects".into(),
        "/memories".into(),
        "/memories?tag=zebrafish".into(),
        "/skills/search-conversations?term=zebrafish&limit=50".into(),
        "/skills/conversations-by-date?date=2026-03-01".into(),
        "/skills/memo-search?query=zebrafish&mode=bm25&limit=50".into(),
        "/skills/recall?question=zebrafish".into(),
        "/skills/list-conversations?_run=1".into(),
        "/skills/list-memories?_run=1".into(),
    ];
    for d in DETECTORS {
        paths.push(format!("/conversations/_/conv-{}", d.id));
        paths.push(format!("/memories/mem-{}", d.id));
        paths.push(format!(
            "/skills/get-conversation?conversation_id=conv-{}",
            d.id
        ));
        paths.push(format!("/skills/get-memory?id=mem-{}", d.id));
    }
    let secrets = examples();
    let mut pages_with_markers = 0;
    for path in &paths {
        let twin = if path.contains('?') {
            format!("{path}&format=json")
        } else {
            format!("{path}?format=json")
        };
        for (url, is_json) in [(path.clone(), false), (twin, true)] {
            let response = client
                .get(format!("{}{url}", server.base))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap();
            assert_eq!(status, 200, "{url}: {body}");
            for (id, _, secret) in &secrets {
                for form in secret_forms(secret) {
                    assert!(
                        !body.contains(&form),
                        "{url} shows the {id} secret (`{form}`): {body}"
                    );
                }
            }
            if body.contains("[REDACTED:") {
                pages_with_markers += 1;
                if is_json {
                    assert!(body.contains("\"redacted\":"), "{url}: no count: {body}");
                } else {
                    assert!(
                        body.contains("redacted</span>"),
                        "{url} shows markers but not how many were redacted"
                    );
                }
            }
        }
    }
    // Each conversation, memory and result page holds its secret as a marker.
    assert!(
        pages_with_markers >= 4 * DETECTORS.len(),
        "only {pages_with_markers} pages showed a marker"
    );
}
