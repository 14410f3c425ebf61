//! Bounded mutation fuzzing (issue 19, part 8, parser and argument checker): the
//! frontmatter/section parser and the argument checker never panic, never hang, and
//! report every fault.
//!
//! Inputs are the bundled skill documents mutated by a seeded generator (byte flips,
//! deletions, duplicated lines, inserted brackets, quotes, NULs, `---` fences, deep
//! nesting, long runs), and random JSON argument objects for every bundled input
//! schema. Each run is bounded by a count and a wall-clock budget, and is reproducible:
//! `SKILLS_FUZZ_SEED` picks the seed (default fixed), `SKILLS_FUZZ_CASES` the count.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use skills::engines::Context;
use skills::host::{args, Host, SkillDoc};
use skills::stores::StorePaths;

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap()
    }
}

fn seed() -> u64 {
    std::env::var("SKILLS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_0019)
}

fn cases(default: usize) -> usize {
    std::env::var("SKILLS_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn bundled_docs() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let mut docs: Vec<(PathBuf, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().join("SKILL.md"))
        .filter(|p| p.exists())
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    docs.sort();
    docs
}

const SNIPPETS: &[&str] = &[
    "---\n",
    "\n",
    ":",
    "- ",
    "[",
    "]",
    "{",
    "}",
    "'",
    "\"",
    "\0",
    "#",
    "&a ",
    "*a",
    "!!str ",
    "|\n",
    ">\n",
    "\t",
    "\u{feff}",
    "\u{d7ff}",
    "🦀",
    "- [ ] ",
    "## ",
    "```\n",
    "\\",
    "%YAML 1.2\n",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
            1 if !bytes.is_empty() => {
                let end = (at + rng.below(64)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            2 => {
                let s = SNIPPETS[rng.below(SNIPPETS.len())];
                bytes.splice(at..at, s.bytes());
            }
            3 => {
                let open = if rng.below(2) == 0 { "[" } else { "{a: " };
                let run = open.repeat(1 + rng.below(5000));
                bytes.splice(at..at, run.bytes());
            }
            4 => {
                let lines: Vec<&str> = text.lines().collect();
                let line = lines[rng.below(lines.len())];
                let copy = format!("{line}\n").repeat(1 + rng.below(50));
                bytes.splice(at..at, copy.bytes());
            }
            5 => {
                let indent = " ".repeat(rng.below(200));
                bytes.splice(at..at, format!("\n{indent}k: v").bytes());
            }
            _ => {
                let run = "x".repeat(rng.below(100_000));
                bytes.splice(at..at, run.bytes());
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn mutated_documents_parse_or_report_with_the_file_named() {
    let docs = bundled_docs();
    let mut rng = Rng::new(seed());
    let budget = Instant::now();
    let n = cases(400);
    let mut parsed = 0;
    let mut reported = 0;
    for case in 0..n {
        if budget.elapsed() > Duration::from_secs(60) {
            break;
        }
        let (path, text) = &docs[case % docs.len()];
        let mutated = mutate(&mut rng, text);
        let start = Instant::now();
        let outcome = std::panic::catch_unwind(|| SkillDoc::parse(path, &mutated));
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "case {case} (seed {}) took {took:?}",
            seed()
        );
        match outcome {
            Err(_) => panic!("case {case} (seed {}) panicked", seed()),
            Ok(Ok(doc)) => {
                parsed += 1;
                assert_eq!(&doc.path, path);
            }
            Ok(Err(d)) => {
                reported += 1;
                assert_eq!(&d.file, path, "case {case}");
                assert!(!d.reason.is_empty(), "case {case}: empty reason");
                assert!(d.to_string().contains("SKILL.md"), "case {case}: {d}");
            }
        }
    }
    assert!(
        parsed > 0 && reported > 0,
        "parsed {parsed}, reported {reported}"
    );
}

#[test]
fn mutated_skill_folders_load_with_every_fault_reported() {
    let docs = bundled_docs();
    let mut rng = Rng::new(seed() ^ 0xF01D);
    let budget = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    for case in 0..cases(60) {
        if budget.elapsed() > Duration::from_secs(60) {
            break;
        }
        let (path, text) = &docs[case % docs.len()];
        let skill_dir = path.parent().unwrap();
        let name = skill_dir.file_name().unwrap();
        let target = dir.path().join(format!("{case}")).join(name);
        std::fs::create_dir_all(&target).unwrap();
        for f in std::fs::read_dir(skill_dir).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), target.join(f.file_name())).unwrap();
        }
        std::fs::write(target.join("SKILL.md"), mutate(&mut rng, text)).unwrap();
        let start = Instant::now();
        let host = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Host::load(
                target.parent().unwrap(),
                Context::new(StorePaths::in_dir(dir.path().join("data"))),
            )
        }))
        .unwrap_or_else(|_| panic!("case {case} (seed {}) panicked", seed()));
        assert!(start.elapsed() < Duration::from_secs(5), "case {case}");
        // Either the skill loaded, or at least one diagnostic names its file.
        let loaded = host.skills().len() == 1;
        let named = host
            .diagnostics()
            .iter()
            .any(|d| d.file.ends_with(Path::new(name).join("SKILL.md")) && !d.reason.is_empty());
        assert!(loaded || named, "case {case}: neither loaded nor reported");
    }
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 3 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(i64::try_from(rng.next() >> 1).unwrap() - (1 << 62)),
        3 => json!(f64::from(u32::try_from(rng.below(1 << 20)).unwrap()) / 7.0),
        4 => {
            let s: String = (0..rng.below(40))
                .map(|_| SNIPPETS[rng.below(SNIPPETS.len())])
                .collect();
            json!(s)
        }
        5 => json!("y".repeat(rng.below(100_000))),
        6 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for i in 0..rng.below(4) {
                m.insert(format!("k{i}"), random_value(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

#[test]
fn random_arguments_are_accepted_or_each_fault_named() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("skills"),
        Context::new(StorePaths::in_dir(dir.path())),
    );
    let mut rng = Rng::new(seed() ^ 0xA265);
    let budget = Instant::now();
    for case in 0..cases(3000) {
        if budget.elapsed() > Duration::from_secs(60) {
            break;
        }
        let skill = &host.skills()[case % host.skills().len()];
        let schema = &skill.meta.input_schema;
        let names: Vec<String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let mut object = Map::new();
        for _ in 0..rng.below(5) {
            let key = if rng.below(4) == 0 || names.is_empty() {
                format!("unknown{}", rng.below(3))
            } else {
                names[rng.below(names.len())].clone()
            };
            object.insert(key, random_value(&mut rng, 0));
        }
        let value = if rng.below(20) == 0 {
            random_value(&mut rng, 0)
        } else {
            Value::Object(object)
        };
        let start = Instant::now();
        let validator = jsonschema::draft202012::new(schema).unwrap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            args::check(schema, &validator, value.clone())
        }))
        .unwrap_or_else(|_| panic!("case {case} (seed {}) panicked on {value}", seed()));
        assert!(start.elapsed() < Duration::from_secs(2), "case {case}");
        match outcome {
            Ok(checked) => assert!(validator.is_valid(&checked), "case {case}: {checked}"),
            Err(errors) => {
                assert!(!errors.is_empty(), "case {case}");
                for e in &errors {
                    assert!(!e.reason.is_empty(), "case {case}: {e:?}");
                    assert!(
                        e.reason.len() < 1000,
                        "case {case}: reason echoes the value"
                    );
                }
            }
        }
    }
}
