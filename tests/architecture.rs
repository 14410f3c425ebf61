//! The layering of `src/`: which top-level modules may use which.
//!
//! Reads every `.rs` file under `src/`, takes the module it belongs to (its first path
//! component: `src/stores/memories/mod.rs` → `stores`, `src/time.rs` → `time`) and the
//! modules it names through `crate::…` paths in code (`use` lines, `use crate::{…}`
//! groups and inline paths; comments and doc links are ignored, and so is test code:
//! an inline `#[cfg(test)] mod tests { … }` and the files of a `#[cfg(test)] mod x;`).
//! Then checks that the
//! layers ingest, stores, search and engines (and the shared leaves model, time,
//! embed) form no cycle, that no two top-level modules use each other in a circle,
//! that `search`, the retrieval library, names none of the application modules, that
//! engines and stores name no ingest, that the skill host (`host`) names none of the
//! modules built on it (the MCP server, verify, the site, the background importer),
//! and that no module names the web pages (`web`).
//! Also facts of the repository around `src/`: the benchmark generator is behind
//! the `bench` feature, the scripts name no absolute path of one machine, and every
//! environment variable is defined in `src/settings.rs` and named only there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The layers whose dependencies must not form a cycle.
const LAYERS: &[&str] = &[
    "ingest", "stores", "search", "engines", "model", "time", "embed", "cancel",
];

/// Top-level modules named in `crate::` paths of `source`, outside comments.
fn crate_modules(source: &str) -> BTreeSet<String> {
    // Comments cut to the end of their line (a `//` inside a string cuts too much, which
    // can only hide a dependency written after a URL on the same line).
    let code: String = source
        .lines()
        .map(|line| line.find("//").map_or(line, |i| &line[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            out.extend(group_heads(group));
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
        rest = after;
    }
    out
}

/// First identifiers of each comma-separated item at depth 0 of a `{…}` group whose
/// opening brace was just consumed.
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut at_item_start = true;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item_start = true,
            c if at_item_start && (c.is_alphanumeric() || c == '_') => {
                let name: String = text[i..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                for _ in 1..name.chars().count() {
                    chars.next();
                }
                heads.push(name);
                at_item_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module graph of the crate in `src`: module → modules it names.
fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let test_files = test_only_files(&files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("file under src");
        let first = rel
            .components()
            .next()
            .expect("non-empty path")
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if first == "lib" || first == "main" {
            continue;
        }
        let deps = graph.entry(first.clone()).or_default();
        if test_files.contains(&file) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable source");
        deps.extend(
            crate_modules(product_code(&text))
                .into_iter()
                .filter(|m| *m != first),
        );
    }
    graph
}

/// A test-only module opened at a line: `#[cfg(test)]` then `mod name {` or `mod name;`.
enum TestModule {
    /// `mod name { … }`: the rest of the file.
    Inline,
    /// `mod name;`: the module's own file or folder.
    File(String),
}

/// The test-only module that `lines[i]` (`#[cfg(test)]`) and the next line open, if any.
fn test_module_at(lines: &[&str], i: usize) -> Option<TestModule> {
    if lines[i].trim() != "#[cfg(test)]" {
        return None;
    }
    let declared = lines.get(i + 1)?.trim().strip_prefix("mod ")?;
    if let Some(name) = declared.strip_suffix(';') {
        Some(TestModule::File(name.trim().to_owned()))
    } else {
        declared.ends_with('{').then_some(TestModule::Inline)
    }
}

/// The source before its inline test module (`#[cfg(test)] mod tests { … }`, kept at
/// the end of a file): what a test needs (benchmark generators, fixtures) is not a
/// dependency of the module.
fn product_code(source: &str) -> &str {
    let lines: Vec<&str> = source.lines().collect();
    let mut offset = 0;
    for (i, line) in lines.iter().enumerate() {
        if let Some(TestModule::Inline) = test_module_at(&lines, i) {
            return &source[..offset];
        }
        offset += line.len() + 1;
    }
    source
}

/// Files declared as test-only modules (`#[cfg(test)] mod name;` → `name.rs` or
/// `name/mod.rs` beside the declaring file), and every file below them.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("readable source");
        let lines: Vec<&str> = text.lines().collect();
        let stem = file.file_stem().expect("file name").to_string_lossy();
        let dir = match stem.as_ref() {
            "mod" | "lib" | "main" => file.parent().expect("parent").to_path_buf(),
            _ => file.with_extension(""),
        };
        for i in 0..lines.len() {
            let Some(TestModule::File(name)) = test_module_at(&lines, i) else {
                continue;
            };
            let as_file = dir.join(format!("{name}.rs"));
            let as_dir = dir.join(&name);
            out.extend(
                files
                    .iter()
                    .filter(|f| **f == as_file || f.starts_with(&as_dir))
                    .cloned(),
            );
        }
    }
    out
}

/// A cycle among `nodes` (as a path that returns to its start), if there is one.
fn find_cycle(graph: &Graph, nodes: &[&str]) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &Graph,
        nodes: &[&str],
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(n.to_owned());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_owned());
        for d in graph.get(n).into_iter().flatten() {
            if nodes.contains(&d.as_str()) {
                if let Some(c) = visit(d, graph, nodes, stack, done) {
                    return Some(c);
                }
            }
        }
        stack.pop();
        done.insert(n.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    nodes
        .iter()
        .find_map(|n| visit(n, graph, nodes, &mut Vec::new(), &mut done))
}

fn src_graph() -> Graph {
    module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn layers_form_no_cycle() {
    let graph = src_graph();
    for layer in LAYERS {
        assert!(graph.contains_key(*layer), "no module `{layer}` in src/");
    }
    if let Some(cycle) = find_cycle(&graph, LAYERS) {
        panic!("module cycle: {} (graph: {graph:?})", cycle.join(" -> "));
    }
}

#[test]
fn search_depends_on_no_application_layer() {
    let graph = src_graph();
    let deps = &graph["search"];
    for forbidden in [
        "host",
        "mcp",
        "verify",
        "site",
        "background_import",
        "engines",
        "stores",
        "ingest",
    ] {
        assert!(
            !deps.contains(forbidden),
            "src/search uses crate::{forbidden} (search deps: {deps:?})"
        );
    }
}

/// No circle among the top-level modules at all: each one can be read knowing only
/// the modules below it.
#[test]
fn top_level_modules_form_no_cycle() {
    let graph = src_graph();
    let all: Vec<&str> = graph.keys().map(String::as_str).collect();
    if let Some(cycle) = find_cycle(&graph, &all) {
        panic!("module cycle: {} (graph: {graph:?})", cycle.join(" -> "));
    }
}

/// The skill host is the base the MCP server, `verify`, the site and the background
/// importer build on: it names none of them, so a change to a transport or to the
/// docs site cannot reach into how a call is validated and run.
#[test]
fn the_host_uses_nothing_built_on_it() {
    let graph = src_graph();
    let deps = &graph["host"];
    for above in ["mcp", "verify", "site", "background_import", "web", "setup"] {
        assert!(
            !deps.contains(above),
            "src/host uses crate::{above} (its deps: {deps:?})"
        );
    }
    let mcp = &graph["mcp"];
    for above in ["verify", "site", "background_import"] {
        assert!(
            !mcp.contains(above),
            "src/mcp uses crate::{above} (its deps: {mcp:?})"
        );
    }
}

/// Engines and stores never name the importers: the writers they share (such as
/// `stores::memories::save`) live in the stores, and ingest calls them there.
#[test]
fn engines_and_stores_do_not_import_ingest() {
    let graph = src_graph();
    for layer in ["engines", "stores"] {
        let deps = &graph[layer];
        assert!(
            !deps.contains("ingest"),
            "a file under src/{layer}/ uses crate::ingest (its deps: {deps:?})"
        );
    }
}

#[test]
fn shared_leaves_depend_on_no_layer_above() {
    let graph = src_graph();
    // A leaf may use another leaf (cancel's note goes through terminal's escaping),
    // nothing else; every module may read a setting.
    let leaves = ["model", "time", "terminal", "cancel", "settings"];
    for leaf in leaves {
        let deps = &graph[leaf];
        assert!(
            deps.iter().all(|d| leaves.contains(&d.as_str())),
            "src/{leaf} uses {deps:?}"
        );
    }
    let embed = &graph["embed"];
    assert!(
        embed.iter().all(|d| d == "search" || d == "settings"),
        "src/embed uses {embed:?}"
    );
}

/// The pages for people (`src/web/`) sit on top of the library: no other module names
/// `crate::web`, so nothing on an MCP call's path (`mcp` → `Host::call` →
/// engines, stores) runs page code. Only the binary's `skills serve` hands the pages
/// to the listener, which gives them every path but `/mcp`.
#[test]
fn nothing_below_the_pages_uses_them() {
    let graph = src_graph();
    assert!(graph.contains_key("web"), "no module `web` in src/");
    for (module, deps) in &graph {
        assert!(
            module == "web" || !deps.contains("web"),
            "src/{module} uses crate::web (its deps: {deps:?})"
        );
    }
}

/// The checker itself: it must see grouped, multi-line and inline paths, skip
/// comments, and report a cycle when there is one.
#[test]
fn checker_sees_every_path_form_and_finds_cycles() {
    let text = "//! see [`crate::host::Host`]\n\
                use crate::{\n    stores::memories::{Memory, MemoryStore},\n    time,\n};\n\
                use crate::search::bm25::FtsIndex;\n\
                fn f() { crate::ingest::detect(p); } // crate::engines::x\n\
                use crate::model;\n";
    let got: Vec<String> = crate_modules(text).into_iter().collect();
    assert_eq!(got, ["ingest", "model", "search", "stores", "time"]);

    let mut graph = Graph::new();
    let edge = |g: &mut Graph, a: &str, b: &str| {
        g.entry(a.to_owned()).or_default().insert(b.to_owned());
    };
    edge(&mut graph, "engines", "stores");
    edge(&mut graph, "stores", "model");
    edge(&mut graph, "ingest", "stores");
    assert_eq!(find_cycle(&graph, LAYERS), None);
    edge(&mut graph, "stores", "ingest");
    let cycle = find_cycle(&graph, LAYERS).expect("cycle found");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.contains(&"ingest".to_owned()) && cycle.contains(&"stores".to_owned()));
}

fn repo_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("reading {}: {e}", full.display()))
}

/// The benchmark generator (`src/bench/`) is compiled only with the cargo feature
/// `bench`, which no default build turns on: the installed binary does not carry it.
#[test]
fn bench_module_is_behind_its_feature() {
    let lib = repo_file("src/lib.rs");
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .position(|l| *l == "pub mod bench;")
        .expect("src/lib.rs declares `pub mod bench;`");
    assert_eq!(
        lines[..at].iter().rev().find(|l| !l.is_empty()),
        Some(&r#"#[cfg(feature = "bench")]"#),
        "`pub mod bench;` in src/lib.rs is not gated by the `bench` feature"
    );
    let manifest = repo_file("Cargo.toml");
    let features = manifest
        .split("\n[features]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("Cargo.toml has a [features] table");
    assert!(
        features.lines().any(|l| l.trim() == "bench = []"),
        "Cargo.toml: no `bench = []` feature:\n{features}"
    );
    let default = features
        .lines()
        .find(|l| l.trim_start().starts_with("default"))
        .unwrap_or("");
    assert!(
        !default.contains("bench"),
        "the default features turn on `bench`: {default}"
    );
}

/// The CI entry point and the scripts name no folder of one machine: the corpus and
/// caches are found relative to the clone or through environment variables.
#[test]
fn scripts_name_no_absolute_machine_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join(".ci/run")];
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(root.join("scripts"))
        .expect("scripts/ is readable")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    scripts.sort();
    files.extend(scripts);
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            for prefix in ["/work/", "/home/", "/root/", "/Users/", "/mnt/", "/srv/"] {
                let hit = line.match_indices(prefix).any(|(at, _)| {
                    // A path starts the word: `x/work/` inside a relative path does not count.
                    line[..at]
                        .chars()
                        .next_back()
                        .is_none_or(|c| !(c.is_alphanumeric() || "._-$}".contains(c)))
                });
                assert!(
                    !hit,
                    "{}:{}: names the absolute path `{prefix}…`: {line}",
                    file.display(),
                    i + 1
                );
            }
        }
    }
}

/// Code of every `.rs` file under `dir`, comments cut, with its path.
fn code_of(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            let code = text
                .lines()
                .map(|line| line.find("//").map_or(line, |i| &line[..i]))
                .collect::<Vec<_>>()
                .join("\n");
            (f, code)
        })
        .collect()
}

/// Every page's data is a skill's output, called through `Host::call_with` (the same
/// validation, store scoping, deadline and redaction as MCP): `src/web` names no
/// store module, database client or SQL, and no skill by name (the skill documents
/// say which skill feeds which page, `page:` in the frontmatter).
#[test]
fn the_pages_hold_no_sql_open_no_store_and_name_no_skill() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = code_of(&root.join("src/web"));
    assert!(
        files.len() > 5,
        "src/web has too few files: {}",
        files.len()
    );
    let mut skill_names: Vec<String> = std::fs::read_dir(root.join("skills"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("SKILL.md").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    skill_names.sort();
    assert!(skill_names.len() >= 8, "{skill_names:?}");
    let forbidden = [
        "duckdb",
        "rusqlite",
        "ConversationStore",
        "MemoryStore",
        "StorePaths",
        ".paths()",
        "all_conversations",
        "memory_links",
        "SELECT ",
        " FROM ",
        " WHERE ",
    ];
    for (file, code) in &files {
        let modules = crate_modules(code);
        assert!(
            !modules.contains("stores"),
            "{} names crate::stores: the pages read data only through skill calls",
            file.display()
        );
        for word in forbidden {
            assert!(
                !code.contains(word),
                "{} contains `{word}`: the pages hold no SQL and open no store",
                file.display()
            );
        }
        for name in &skill_names {
            assert!(
                !code.contains(&format!("\"{name}\""))
                    && !code.contains(&format!("/skills/{name}")),
                "{} names skill `{name}`: a page finds its skill by the documents' `page:` field",
                file.display()
            );
        }
    }
    // The page templates name no skill either.
    for entry in std::fs::read_dir(root.join("templates/web")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for name in &skill_names {
            assert!(
                !text.contains(&format!("/skills/{name}")),
                "{} links skill `{name}` by name",
                path.display()
            );
        }
    }
}

/// Whether `path` (under `src/`) is the settings module, the one place that names the
/// program's environment variables.
fn is_settings_module(src: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(src).expect("file under src");
    rel == Path::new("settings.rs") || rel.starts_with("settings")
}

/// Whether a line of code writes a `SKILLS_…` name itself (in a string literal or a
/// message), rather than through a path such as `settings::SKILLS_DIR`.
fn writes_a_skills_name(line: &str) -> bool {
    line.match_indices("SKILLS_").any(|(at, _)| {
        let named = line[at + "SKILLS_".len()..].starts_with(|c: char| c.is_ascii_uppercase());
        let before = line[..at].chars().next_back();
        named && !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    })
}

/// Every `SKILLS_…` environment variable is named in code only by `src/settings`:
/// elsewhere a read, a clap `env`, an `option_env!`, a child's environment or a
/// message takes the name from a `skills::settings::Setting`, so the README's
/// generated table lists everything the program reads and a renamed variable cannot
/// leave a stale name behind (comments may name them; `build.rs`, a separate program
/// run by cargo, is exempt).
#[test]
fn no_skills_variable_literal_outside_the_settings_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (file, code) in code_of(&src) {
        if is_settings_module(&src, &file) {
            continue;
        }
        for (i, line) in code.lines().enumerate() {
            if writes_a_skills_name(line) {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "`SKILLS_…` names written in code outside src/settings.rs (name the variable \
         through skills::settings::<SETTING>.name, or add a Setting there):\n{}",
        found.join("\n")
    );
}

/// Names of environment variables `text` mentions: every `SKILLS_…` word (code,
/// messages and comments alike), and the quoted name of each read written as
/// `var("X")`, `var_os("X")`, `env("X")`, `process_env("X")`, `Root::Var("X")` or
/// `var: "X"` (a `places::Root` that a variable moves).
fn variables_named(text: &str) -> BTreeSet<String> {
    let word = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("SKILLS_") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // AGENT_SKILLS_FIELDS and the like
        }
        let name = word(&text[at..]);
        if name.len() > "SKILLS_".len() {
            out.insert(name);
        }
    }
    for read in [
        "var(\"",
        "var_os(\"",
        "env(\"",
        "process_env(\"",
        "Var(\"",
        "var: \"",
    ] {
        for (at, _) in text.match_indices(read) {
            let name = word(&text[at + read.len()..]);
            if !name.is_empty() && text[at + read.len() + name.len()..].starts_with('"') {
                out.insert(name);
            }
        }
    }
    out
}

/// Every environment variable `src/` reads or mentions (outside test modules) is a
/// row of the settings module's table (and so of the README's), so a new one cannot
/// be read unlisted.
#[test]
fn every_variable_named_in_src_is_a_setting() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let tests_only = test_only_files(&files);
    let mut unlisted = Vec::new();
    for file in files.iter().filter(|f| !tests_only.contains(*f)) {
        let text = std::fs::read_to_string(file).expect("readable source");
        for name in variables_named(product_code(&text)) {
            if skills::settings::find(&name).is_none() {
                unlisted.push(format!("{}: {name}", file.display()));
            }
        }
    }
    let build = repo_file("build.rs");
    for name in variables_named(&build) {
        if name.starts_with("SKILLS_") && skills::settings::find(&name).is_none() {
            unlisted.push(format!("build.rs: {name}"));
        }
    }
    assert!(
        unlisted.is_empty(),
        "environment variables named in src/ but not defined in src/settings.rs:\n{}",
        unlisted.join("\n")
    );
}

/// The scanner behind the two tests above.
#[test]
fn the_variable_scanner_sees_each_form() {
    let text = "let a = std::env::var(\"SKILLS_NOW\"); // SKILLS_WATCH\n\
                AGENT_SKILLS_FIELDS; env(\"PGPORT\"); Root::Var(\"X_HOME\");\n\
                VarOrHome { var: \"CODEX_HOME\", home: \".codex\" }; var(name); SKILLS_\n";
    let got: Vec<String> = variables_named(text).into_iter().collect();
    assert_eq!(
        got,
        [
            "CODEX_HOME",
            "PGPORT",
            "SKILLS_NOW",
            "SKILLS_WATCH",
            "X_HOME"
        ]
    );
    assert!(writes_a_skills_name("env(\"SKILLS_NOW\")"));
    assert!(writes_a_skills_name(
        "\"no data folder: set SKILLS_DATA_DIR\""
    ));
    assert!(!writes_a_skills_name("env = settings::SKILLS_DIR.name"));
    assert!(!writes_a_skills_name("AGENT_SKILLS_FIELDS"));
    let file = "fn f() {}\n#[cfg(test)]\nmod tests {\n    Root::Var(\"X\");\n}\n";
    assert!(variables_named(product_code(file)).is_empty());
}

/// YAML read from files is parsed only by `src/yaml.rs` (the nesting bound before the
/// parser, one frontmatter split): nowhere else in `src/` calls `yaml_serde`'s
/// deserialisers (`from_str`, `from_slice`, `from_reader`, `Deserializer`). Writing
/// YAML (`to_string`) and naming `yaml_serde::Value` are fine.
#[test]
fn yaml_is_parsed_only_by_the_yaml_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (file, code) in code_of(&src) {
        if file == src.join("yaml.rs") {
            continue;
        }
        for (i, line) in code.lines().enumerate() {
            let parses = ["from_str", "from_slice", "from_reader", "Deserializer"]
                .iter()
                .any(|f| line.contains(&format!("yaml_serde::{f}")));
            if parses {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "YAML parsed outside src/yaml.rs (use skills::yaml::parse or \
         yaml::split_frontmatter, which bound the nesting first):\n{}",
        found.join("\n")
    );
}
