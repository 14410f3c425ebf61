//! `skills docs`: the committed `docs/skills/` is what the command generates now, the
//! HTML links resolve, and the pages carry what the documents say.
//! Set `UPDATE_DOCS=1` to rewrite the committed copy after changing a document.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn generate(out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["docs", "--out", out.to_str().unwrap()])
        .env("SKILLS_DIR", common::repo().join("skills"))
        .env("SKILLS_DATA_DIR", out.join("no-data"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "current"))
        .collect();
    v.sort();
    v
}

#[test]
fn committed_docs_are_up_to_date() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path());
    let committed = common::repo().join("docs/skills");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let _ = std::fs::remove_dir_all(&committed);
        std::fs::create_dir_all(&committed).unwrap();
        for f in files(tmp.path()) {
            std::fs::copy(&f, committed.join(f.file_name().unwrap())).unwrap();
        }
        return;
    }
    let names = |d: &Path| {
        files(d)
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(tmp.path()),
        names(&committed),
        "docs/skills is stale: run `UPDATE_DOCS=1 ./scripts/test --test docs`"
    );
    for f in files(tmp.path()) {
        let old = committed.join(f.file_name().unwrap());
        let new = std::fs::read_to_string(&f).unwrap();
        if std::fs::read_to_string(&old).unwrap() != new {
            std::fs::write(
                old.with_extension(format!(
                    "{}.current",
                    old.extension().unwrap().to_str().unwrap()
                )),
                &new,
            )
            .unwrap();
            panic!("`{}` is stale (new version written beside it as .current): run `UPDATE_DOCS=1 ./scripts/test --test docs`", old.display());
        }
    }
}

#[test]
fn html_links_resolve_and_pages_carry_the_documents() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path());
    let mut pages = 0;
    for f in files(tmp.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
    {
        pages += 1;
        let html = std::fs::read_to_string(&f).unwrap();
        assert!(html.contains("<link rel=\"stylesheet\" href=\"style.css\">"));
        for href in html
            .split("href=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
        {
            if href.starts_with("http") || href.starts_with('#') {
                continue;
            }
            assert!(
                tmp.path().join(href).is_file(),
                "{}: broken link {href}",
                f.display()
            );
        }
    }
    assert!(pages >= 5);
    let page = std::fs::read_to_string(tmp.path().join("search-conversations.md")).unwrap();
    assert!(
        page.contains(
            "| `limit` | integer | no | `15` | ≥ 1, ≤ 500 | Maximum rows to return (1-500). |"
        ),
        "{page}"
    );
    // The pair is linked: semantic-search has its own page.
    assert!(
        page.contains("- Fuzzy matching (that's [semantic-search](semantic-search.md)'s job)"),
        "{page}"
    );
    assert!(page.contains("| Every row has conv_id (L2 consumers need it for citations) |"));
    assert!(page.contains("\"name\": \"search_conversations\""));
    let page = std::fs::read_to_string(tmp.path().join("memo-search.md")).unwrap();
    assert!(page.contains("| `query` | string | yes |  | length ≤ 2000 | Search text; empty or whitespace-only returns no hits. |"), "{page}");
    assert!(
        page.contains("| `mode` | string | no | `\"hybrid\"` |"),
        "{page}"
    );
    assert!(page.contains("\"name\": \"memo_search\""));
    assert!(page.contains("\"readOnlyHint\": true"));
    let html = std::fs::read_to_string(tmp.path().join("conversations-by-date.html")).unwrap();
    assert!(
        html.contains("<a href=\"get-conversation.html\">get-conversation</a>"),
        "cross-links between skills"
    );
    assert!(html.contains("<table>"));
}

#[test]
fn json_format_carries_the_tools_list_definitions() {
    let o = Command::new(env!("CARGO_BIN_EXE_skills"))
        .args(["docs", "--format", "json"])
        .env("SKILLS_DIR", common::repo().join("skills"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let skills = v["skills"].as_array().unwrap();
    let s = skills
        .iter()
        .find(|s| s["name"] == "search-conversations")
        .unwrap();
    assert_eq!(s["tool"]["name"], "search_conversations");
    assert_eq!(s["tool"]["inputSchema"]["type"], "object");
    assert_eq!(s["tool"]["annotations"]["readOnlyHint"], true);
    assert_eq!(s["parameters"][1]["name"], "limit");
}
