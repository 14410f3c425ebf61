//! Bounded fuzzing of every importer (issue 19, part 8): each file of the shared corpus
//! (`$SKILLS_CORPUS_DIR`, default `<manifest>/../shared/corpus`; skipped with a note
//! when absent) is mutated — truncated, bytes flipped, invalid UTF-8 inserted, numbers
//! made huge, nesting made deep — and given to the transcript importers (`skills
//! ingest`'s driver) and the memory importers (`skills memo import`'s). No input may
//! panic or hang (each import has a deadline), and every fault names the mutated file
//! (and a line, where the format has lines and the fault is about one). Seeded, so a
//! failure reproduces; `FUZZ_SEED` changes the seed, `FUZZ_ROUNDS` the rounds of byte
//! mutations per file (default 2).
#![allow(clippy::unwrap_used)]

mod common;

use common::Rng;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use skills::ingest::Fault;
use skills::stores::conversations::ConversationStore;
use skills::stores::memories::MemoryStore;

/// How long one import of one mutated file may take before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(20);

/// The mutations of one file's bytes, each with a name for the report.
fn mutations(bytes: &[u8], rng: &mut Rng, rounds: usize) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for r in 0..rounds {
        let cut = rng.below(bytes.len().max(1));
        out.push((format!("truncated at byte {cut}"), bytes[..cut].to_vec()));
        let mut flipped = bytes.to_vec();
        let mut at = Vec::new();
        for _ in 0..8 {
            if flipped.is_empty() {
                break;
            }
            let i = rng.below(flipped.len());
            flipped[i] ^= u8::try_from(1 + rng.below(255)).unwrap();
            at.push(i);
        }
        out.push((format!("bytes flipped at {at:?} (round {r})"), flipped));
        let mut bad = bytes.to_vec();
        let i = rng.below(bad.len().max(1)).min(bad.len());
        bad.splice(i..i, [0xFF, 0xFE, 0xC3]);
        out.push((format!("invalid UTF-8 at byte {i} (round {r})"), bad));
    }
    // Every run of digits made a number no integer or float type holds.
    let mut huge = Vec::with_capacity(bytes.len() * 2);
    let mut in_digits = false;
    for &b in bytes {
        if b.is_ascii_digit() {
            if !in_digits {
                huge.extend_from_slice(b"184467440737095516169999e99999");
            }
            in_digits = true;
        } else {
            in_digits = false;
            huge.push(b);
        }
    }
    out.push(("every number huge".into(), huge));
    // Deep nesting: a first line of 100,000 open brackets, and the same inside a
    // value of the first object.
    let mut deep = b"[".repeat(100_000);
    deep.push(b'\n');
    deep.extend_from_slice(bytes);
    out.push(("a 100,000-deep first line".into(), deep));
    if let Some(i) = bytes.iter().position(|&b| b == b':') {
        let mut inner = bytes[..=i].to_vec();
        inner.extend_from_slice(&b"[{\"a\":".repeat(20_000));
        inner.extend_from_slice(&bytes[i + 1..]);
        out.push(("nesting 40,000 deep after the first `:`".into(), inner));
    }
    out
}

/// What one import of one file returned: its faults, or why it failed.
enum Outcome {
    Faults(Vec<Fault>),
    Panicked(String),
    Hung,
}

/// Runs `f` on its own thread with [`DEADLINE`].
fn bounded(f: impl FnOnce() -> Vec<Fault> + Send + 'static) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let faults = f();
        let _ = tx.send(());
        faults
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(faults) => Outcome::Faults(faults),
            Err(panic) => Outcome::Panicked(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default(),
            ),
        },
        // The thread is left running; the test fails.
        Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Hung,
    }
}

fn import_transcript(path: PathBuf) -> Vec<Fault> {
    let store = ConversationStore::open_in_memory().unwrap();
    skills::ingest::ingest_paths(&store, &[path], &mut |_, _| {}).faults
}

fn import_memories(path: PathBuf) -> Vec<Fault> {
    let store = MemoryStore::open_in_memory().unwrap();
    match skills::ingest::memories::import_paths_with(&store, std::slice::from_ref(&path), None) {
        Ok(summary) => summary.faults,
        Err(e) => vec![Fault::new(&path, None, format!("store error: {e}"))],
    }
}

/// True when faults about single records of this file should carry a line: formats
/// read line by line.
fn has_lines(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".jsonl") || name.ends_with(".md")
}

/// Regression, issue 19 part 8: mutated corpus files never panic or hang an importer,
/// and every fault names its file (with a line for line-based formats when the fault
/// is about one line: its reason says "line" or it is a JSON error of one record).
#[test]
fn importers_survive_mutated_corpus_files() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_F022_u64);
    let rounds = std::env::var("FUZZ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let mut files = skills::walk::files_below(&corpus, skills::walk::Hidden::Include).files;
    files.retain(|f| f.file_name().is_none_or(|n| n != "SOURCES.md"));
    files.sort();
    assert!(
        !files.is_empty(),
        "no corpus files under {}",
        corpus.display()
    );
    let work = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(seed | 1);
    let mut problems = Vec::new();
    let mut runs = 0usize;
    let mut faults_seen = 0usize;
    for (n, file) in files.iter().enumerate() {
        let bytes = fs_err::read(file).unwrap();
        for (m, (what, mutated)) in mutations(&bytes, &mut rng, rounds).into_iter().enumerate() {
            // Same file name (detection may look at it), one folder per mutation.
            let dir = work.path().join(format!("{n}-{m}"));
            fs_err::create_dir_all(&dir).unwrap();
            let path = dir.join(file.file_name().unwrap());
            fs_err::write(&path, &mutated).unwrap();
            for (importer, outcome) in [
                ("transcripts", {
                    let p = path.clone();
                    bounded(move || import_transcript(p))
                }),
                ("memories", {
                    let p = path.clone();
                    bounded(move || import_memories(p))
                }),
            ] {
                runs += 1;
                let label = format!("{} ({what}), {importer} importer", file.display());
                match outcome {
                    Outcome::Hung => problems.push(format!("{label}: no answer in {DEADLINE:?}")),
                    Outcome::Panicked(msg) => problems.push(format!("{label}: panicked: {msg}")),
                    Outcome::Faults(faults) => {
                        faults_seen += faults.len();
                        for f in faults {
                            if !f.path.starts_with(&dir) {
                                problems.push(format!(
                                    "{label}: fault names `{}`, not the file: {}",
                                    f.path.display(),
                                    f.reason
                                ));
                            }
                            if f.reason.trim().is_empty() {
                                problems.push(format!("{label}: fault without a reason"));
                            }
                            let about_a_line = f.reason.contains("invalid JSON")
                                || f.reason.contains("malformed line");
                            if has_lines(&f.path) && about_a_line && f.line.is_none() {
                                problems.push(format!(
                                    "{label}: fault about one line has no line: {}",
                                    f.reason
                                ));
                            }
                        }
                    }
                }
            }
            let _ = fs_err::remove_dir_all(&dir);
        }
    }
    eprintln!(
        "fuzzed {} corpus files: {runs} imports, {faults_seen} faults reported, seed {seed:#x}",
        files.len()
    );
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
