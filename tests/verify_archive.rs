//! `skills verify` on the team archive, for the cases that write: memo-save's items run
//! on a private copy of their corpus's archive (and of its local stores) and pass
//! there; what they save never reaches the corpus's own archive, and every scratch
//! database the run made is dropped with the verifier.
//!
//! Without a PostgreSQL the test is reported as not run ([`common::not_run`]).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use skills::verify::{Options, RunTarget, Status, Verifier};

/// The server's databases whose name starts with `prefix`.
fn databases(server: &str, prefix: &str) -> Vec<String> {
    let mut c = postgres::Client::connect(server, postgres::NoTls).unwrap();
    c.query(
        "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1",
        &[&prefix],
    )
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[test]
fn memo_save_cases_run_on_a_private_copy_of_the_archive_dropped_afterwards() {
    let Some(server) = common::archive::server() else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let before = databases(&server, "skills_verify_");
    let verifier = Verifier::new(Options {
        skills_dir: repo.join("skills"),
        fixtures_dir: repo.join("tests/conformance/fixtures"),
        binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_skills"))),
    })
    .unwrap()
    .with_archive(skills::archive::Target::parse(&server).unwrap());
    let entries = verifier
        .entries_on(&["memo-save".to_owned()], RunTarget::Archive)
        .unwrap();
    assert!(entries.len() >= 5, "{} memo-save entries", entries.len());
    for entry in &entries {
        assert!(verifier.exclusion(entry).is_none(), "{}", entry.item);
        let report = verifier.run(entry);
        assert_eq!(report.status, Status::Pass, "{}: {:?}", entry.item, report);
    }

    // The run's databases: the corpus's archive and its template; each private copy
    // was dropped after its case.
    let made: Vec<String> = databases(&server, "skills_verify_")
        .into_iter()
        .filter(|d| !before.contains(d))
        .collect();
    assert!(
        made.iter().any(|d| d.ends_with("_memories"))
            && made.iter().any(|d| d.ends_with("_memories_t")),
        "{made:?}"
    );
    assert!(!made.iter().any(|d| d.contains("_p")), "{made:?}");
    // memo-save's cases save memories about quokkas, zanzibar and wombats, which the
    // corpus never mentions: none reached the corpus's own archive.
    let corpus = made.iter().find(|d| d.ends_with("_memories")).unwrap();
    let mut c = postgres::Client::connect(
        &common::archive::with_database(&server, corpus),
        postgres::NoTls,
    )
    .unwrap();
    let (held, saved): (i64, i64) = {
        let row = c
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE body ~* 'quokka|zanzibar|wombat')
                 FROM skills_archive.memories",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert!(held > 0, "the corpus's memories were pushed");
    assert_eq!(saved, 0, "a case's save reached the corpus's archive");
    drop(c);

    drop(verifier);
    let left: Vec<String> = databases(&server, "skills_verify_")
        .into_iter()
        .filter(|d| !before.contains(d))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
