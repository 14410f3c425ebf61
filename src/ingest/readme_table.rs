//! The README's importer table, generated from the importers' own data (their
//! [`About`](super::formats::About) and [`Location`]s); a test fails when README.md
//! does not hold it verbatim. Compiled for tests only.

use std::path::Path;

use super::formats::IMPORTERS;
use super::locations::Location;

/// A location as people read it, e.g. ``~/.claude/projects/**/*.jsonl` (`CLAUDE_CONFIG_DIR`)``.
fn describe(location: &Location) -> String {
    let (prefix, var) = location.root.shown();
    let paths: Vec<String> = location
        .patterns
        .iter()
        .map(|p| format!("`{}`", crate::places::join(&prefix, p)))
        .collect();
    let joined = paths.join(if location.first_found {
        ", else "
    } else {
        ", "
    });
    match var {
        Some(var) => format!("{joined} (`{var}`)"),
        None => joined,
    }
}

/// The README row of brain-mcp's Parquet export, which the driver reads directly (it is
/// not an [`super::formats::Importer`]).
const PARQUET_ROW: &str =
    "| brain-mcp export | as stored | none: `all_conversations.parquet`, read by DuckDB directly | file |";

/// The README's importer table (markdown, header included, one line per importer in
/// registry order, then the Parquet row), from the importers' own data.
pub(crate) fn readme_table() -> String {
    let mut out = String::from(
        "| tool | source | default location (env var) | unit of import |\n|---|---|---|---|\n",
    );
    for importer in IMPORTERS {
        let about = importer.about();
        if about.source == "made-up" {
            continue; // the test-only format of `formats::made_up`
        }
        let mut location: Vec<String> = about.locations.iter().map(describe).collect();
        location.extend(about.note.map(str::to_owned));
        let unit = if importer.is_append_only() {
            format!("{} (append-only)", about.unit)
        } else {
            about.unit.to_owned()
        };
        out.push_str(&format!(
            "| {} | `{}` | {} | {unit} |\n",
            about.tool,
            about.source,
            location.join(", ")
        ));
    }
    out.push_str(PARQUET_ROW);
    out.push('\n');
    out
}

#[test]
fn the_readme_table_is_generated_from_the_importers() {
    let readme = fs_err::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let table = readme_table();
    assert!(
        readme.contains(&table),
        "README.md's importer table is not the generated one; replace it with:\n{table}"
    );
}
