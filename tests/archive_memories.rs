//! get-memory and list-memories on the team archive, on a real PostgreSQL
//! (`scripts/postgres`, as tests/archive.rs): their PostgreSQL twins (`archive.sql`,
//! over the view `skills_sql.all_memories`) give the same output as their SQLite
//! queries over the same pushed memories — rows, columns, order, totals, links both
//! ways, cut bodies — for argument sets with every filter, paging past ties and past
//! the end; with two machines pushed, `machine` (label or id) and `user` give each
//! machine's own local answer, a memory both pushed is listed once per machine and
//! get-memory answers its newest copy; the memories' view is readable by the memories'
//! sandbox role only, and the conversations' view by theirs only; the memories pages
//! served with `--archive` answer from it.
//!
//! Without a PostgreSQL the tests are reported as not run ([`common::not_run`]).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::path::Path;
use std::process::Command;

use chrono::TimeZone;
use serde_json::Value;
use skills::stores::memories::{Memory, MemoryStore};
use skills::stores::StorePaths;

use common::archive::{json_of, run_skill, server, without_machine, Db};

/// A memory: `id`, `kind`, `tags`, `updated` (seconds after a base time; created an
/// hour before) and a body of `chars` characters (multi-byte ones among them).
fn memory(id: &str, kind: &str, tags: &[&str], updated: i64, chars: usize) -> Memory {
    let base = chrono::Utc.timestamp_opt(1_780_000_000, 0).unwrap();
    let updated = base + chrono::Duration::seconds(updated);
    let text: String = format!("{id}: naïve café 🦀 — ")
        .chars()
        .cycle()
        .take(chars)
        .collect();
    Memory {
        id: id.to_owned(),
        title: format!("Title of {id}"),
        kind: kind.to_owned(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        created: updated - chrono::Duration::seconds(3_600),
        updated,
        body: text,
        files_read: if id.ends_with('0') {
            vec![format!("src/{id}.rs"), "README.md".into()]
        } else {
            Vec::new()
        },
        files_modified: if id.ends_with('5') {
            vec![format!("docs/{id}.md")]
        } else {
            Vec::new()
        },
        origin: id
            .ends_with(['2', '4'])
            .then(|| format!("notes/{id}.md#top")),
    }
}

/// Writes `memories` and `links` (`(id, rel, target)`) into the memories store of
/// data folder `data`.
fn store(data: &Path, memories: &[Memory], links: &[(&str, &str, &str)]) {
    let store = MemoryStore::open_rw(&StorePaths::in_dir(data).memories).unwrap();
    store.upsert_many(memories).unwrap();
    let conn = store.lock();
    for (id, rel, target) in links {
        conn.execute(
            "INSERT INTO memory_links (id, rel, target) VALUES (?1, ?2, ?3)",
            [id, rel, target],
        )
        .unwrap();
    }
}

/// The laptop's memories: 30 of three types, some tagged, a run of five updated in the
/// same second (ordered by id: the list's 15th to 19th), two shared with the desktop; links: m-lap-03 superseded
/// by two, one superseded by a shared memory, one memory saved from two conversations.
fn laptop(data: &Path) {
    let kinds = ["fact", "decision", "bug"];
    let mut memories: Vec<Memory> = (0..30i64)
        .map(|i| {
            let id = format!("m-lap-{i:02}");
            let tags: &[&str] = match i % 4 {
                0 => &["k8s", "team"],
                1 => &["db"],
                2 => &["ü-tag", "k8s"],
                _ => &[],
            };
            // m-lap-10 … m-lap-14 share one second; listed by id there.
            let updated = if (10..15).contains(&i) {
                50_000
            } else {
                i * 3_000
            };
            let n = usize::try_from(i).unwrap();
            memory(&id, kinds[n % 3], tags, updated, 20 + n * 7)
        })
        .collect();
    memories.push(memory("shared-1", "fact", &["k8s"], 40_000, 80));
    memories.push(memory("shared-2", "decision", &["team"], 90_000, 120));
    store(
        data,
        &memories,
        &[
            ("m-lap-05", "supersedes", "m-lap-03"),
            ("m-lap-05", "supersedes", "m-lap-04"),
            ("m-lap-07", "supersedes", "m-lap-03"),
            ("shared-2", "supersedes", "m-lap-11"),
            ("m-lap-01", "conversation", "conv-b"),
            ("m-lap-01", "conversation", "conv-a"),
            ("m-lap-02", "conversation", "conv-z"),
        ],
    );
}

/// The desktop's memories: ten of its own, the two shared ids with other bodies and
/// times (shared-1 newer than the laptop's, shared-2 older), and its own links.
fn desktop(data: &Path) {
    let mut memories: Vec<Memory> = (0..10usize)
        .map(|i| {
            let id = format!("m-desk-{i:02}");
            let tags: &[&str] = if i % 2 == 0 { &["k8s"] } else { &["db"] };
            let updated = 1_000 + i64::try_from(i).unwrap() * 5_000;
            memory(&id, ["fact", "bug"][i % 2], tags, updated, 60)
        })
        .collect();
    let mut one = memory("shared-1", "fact", &["k8s", "desk"], 95_000, 50);
    one.body = format!("desktop: {}", one.body);
    memories.push(one);
    memories.push(memory("shared-2", "decision", &["team"], 20_000, 40));
    store(
        data,
        &memories,
        &[
            ("m-desk-03", "supersedes", "shared-2"),
            ("m-desk-03", "supersedes", "m-desk-01"),
            ("shared-1", "conversation", "conv-desk"),
        ],
    );
}

fn skills() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_skills"));
    c.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "none")
        .env("NO_COLOR", "1");
    c
}

/// `skills archive push --no-redact` of `data` as machine `data`'s folder name and
/// user `user`.
fn push_as(data: &Path, db: &Db, user: &str) {
    common::cli::ok(
        skills()
            .arg("--data-dir")
            .arg(data)
            .args([
                "--archive",
                &db.url,
                "--json",
                "archive",
                "push",
                "--no-redact",
            ])
            .env("SKILLS_MACHINE_NAME", data.file_name().unwrap())
            .env("USER", user)
            .env("LOGNAME", user),
    );
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| (*a).to_owned()).collect()
}

/// The argument sets compared: every filter, paging inside and past the run of equal
/// times and past the end, cut bodies, links both ways, unknown ids.
fn cases() -> Vec<(&'static str, Vec<String>)> {
    let get = |a: &[&str]| ("get-memory", args(a));
    let list = |a: &[&str]| ("list-memories", args(a));
    vec![
        get(&["id=m-lap-03"]),
        get(&["id=m-lap-05"]),
        get(&["id=m-lap-07"]),
        get(&["id=m-lap-01"]),
        get(&["id=m-lap-02", "max_chars=5"]),
        get(&["id=m-lap-20", "max_chars=1"]),
        get(&["id=m-lap-00"]),
        get(&["id=m-lap-11"]),
        get(&["id=shared-1"]),
        get(&["id=shared-2", "max_chars=10"]),
        get(&["id=m-desk-03"]),
        get(&["id=m-desk-01"]),
        get(&["id=no-such-memory"]),
        get(&["id=' OR '1'='1"]),
        list(&[]),
        list(&["type=fact"]),
        list(&["type=decision", "limit=4"]),
        list(&["tag=k8s"]),
        list(&["tag=ü-tag"]),
        list(&["tag=k8s", "type=bug"]),
        list(&["limit=5", "offset=3"]),
        list(&["limit=3", "offset=13"]),
        list(&["limit=2", "offset=15"]),
        list(&["limit=50", "offset=100"]),
        list(&["preview_chars=4"]),
        list(&["limit=200", "preview_chars=2000"]),
        list(&["type=no-such-type"]),
        list(&["tag=x'; DROP TABLE memories; --"]),
    ]
}

#[test]
fn memories_sql_skills_answer_from_the_archive_as_from_sqlite() {
    let Some(server) = server() else { return };
    let db = Db::new(&server);
    let root = tempfile::tempdir().unwrap();
    let (lap, desk) = (root.path().join("laptop"), root.path().join("desktop"));
    laptop(&lap);
    desktop(&desk);
    json_of(&lap, Some(&db.url), &["--json", "archive", "migrate"]);

    // One machine pushed: the archive's answer is the local one, case by case.
    push_as(&lap, &db, "alice");
    let (mut compared, mut with_rows) = (0, 0);
    for (skill, args) in cases() {
        let (ok, local, said) = run_skill(&lap, None, skill, &args);
        assert!(ok, "{skill} {args:?} locally: {said}");
        let (ok, archive, said) = run_skill(&lap, Some(&db.url), skill, &args);
        assert!(ok, "{skill} {args:?} on the archive: {said}");
        assert_eq!(
            without_machine(&archive),
            local,
            "{skill} {args:?}: the archive differs from SQLite"
        );
        for row in archive["rows"].as_array().unwrap() {
            assert_eq!(row["machine"], "laptop", "{row}");
            assert_eq!(row["user"], "alice", "{row}");
            assert_eq!(row["cites"]["machine_id"], row["machine_id"], "{row}");
        }
        compared += 1;
        if local["count"].as_u64().unwrap_or(0) > 0 {
            with_rows += 1;
        }
    }
    println!("{compared} cases equal on one machine, {with_rows} with rows");
    assert!(with_rows >= 20, "{with_rows}");
    // What the cases were meant to reach, seen in the local answers themselves.
    let (_, three, _) = run_skill(&lap, None, "get-memory", &args(&["id=m-lap-03"]));
    assert_eq!(
        three["rows"][0]["superseded_by"],
        serde_json::json!(["m-lap-05", "m-lap-07"])
    );
    let (_, one, _) = run_skill(&lap, None, "get-memory", &args(&["id=m-lap-01"]));
    assert_eq!(one["rows"][0]["conversation_id"], "conv-a");
    let (_, tied, _) = run_skill(
        &lap,
        None,
        "list-memories",
        &args(&["limit=2", "offset=15"]),
    );
    let times: Vec<&str> = tied["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["updated"].as_str().unwrap())
        .collect();
    assert!(times.windows(2).any(|w| w[0] == w[1]), "{tied}");

    // Two machines pushed.
    push_as(&desk, &db, "bob");
    let machines = [
        (
            &lap,
            "laptop",
            "alice",
            common::archive::machine_id_of(&lap),
        ),
        (
            &desk,
            "desktop",
            "bob",
            common::archive::machine_id_of(&desk),
        ),
    ];
    let mut filtered = 0;
    for (skill, args) in cases() {
        for (dir, label, user, id) in &machines {
            let (ok, local, said) = run_skill(dir, None, skill, &args);
            assert!(ok, "{skill} {args:?} on {label}: {said}");
            for filter in [
                format!("machine={label}"),
                format!("machine={id}"),
                format!("user={user}"),
            ] {
                let mut with = args.clone();
                with.push(filter);
                let (ok, mine, said) = run_skill(&lap, Some(&db.url), skill, &with);
                assert!(ok, "{skill} {with:?} on the archive: {said}");
                for row in mine["rows"].as_array().unwrap() {
                    assert_eq!(row["machine"], *label, "{skill} {with:?}: {row}");
                    assert_eq!(row["machine_id"], *id, "{skill} {with:?}: {row}");
                    assert_eq!(row["user"], *user, "{skill} {with:?}: {row}");
                }
                assert_eq!(
                    without_machine(&mine),
                    local,
                    "{skill} {with:?}: the archive's answer is not {label}'s own"
                );
                filtered += 1;
            }
        }
        let mut nobody = args.clone();
        nobody.push("user=nobody".into());
        let (ok, none, said) = run_skill(&lap, Some(&db.url), skill, &nobody);
        assert!(ok, "{said}");
        assert_eq!(none["count"], 0, "{skill} {nobody:?}: {none}");
    }
    println!("{filtered} filtered answers equal to the machine's own");

    // Unfiltered, every machine's copy is listed, in (updated, id, machine id) order,
    // and counted.
    let all = |dir: &Path, archive: Option<&str>| {
        let (ok, out, said) = run_skill(dir, archive, "list-memories", &args(&["limit=200"]));
        assert!(ok, "{said}");
        out
    };
    let (on_lap, on_desk, both) = (all(&lap, None), all(&desk, None), all(&lap, Some(&db.url)));
    let total = |v: &Value| v["rows"][0]["total"].as_u64().unwrap();
    assert_eq!(total(&both), total(&on_lap) + total(&on_desk));
    assert_eq!(both["count"], total(&both));
    let keys: Vec<(String, String, String)> = both["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["updated"].as_str().unwrap().to_owned(),
                r["id"].as_str().unwrap().to_owned(),
                r["machine_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    assert_eq!(keys, sorted);
    let copies = |id: &str| keys.iter().filter(|k| k.1 == id).count();
    assert_eq!((copies("shared-1"), copies("shared-2")), (2, 2));
    // get-memory answers a shared memory's newest copy: that machine's own answer.
    for (id, newest) in [("shared-1", &desk), ("shared-2", &lap)] {
        let a = args(&[&format!("id={id}")]);
        let (ok, archive, said) = run_skill(&lap, Some(&db.url), "get-memory", &a);
        assert!(ok, "{said}");
        let (_, local, _) = run_skill(newest, None, "get-memory", &a);
        assert_eq!(without_machine(&archive), local, "{id}");
        assert_eq!(archive["count"], 1);
    }
    // Links stay within their machine: the laptop's shared-2 supersedes m-lap-11, the
    // desktop's m-desk-03 supersedes the desktop's shared-2 only.
    let superseded = |machine: &str| {
        let a = args(&["id=shared-2", &format!("machine={machine}")]);
        let (_, v, _) = run_skill(&lap, Some(&db.url), "get-memory", &a);
        (
            v["rows"][0]["supersedes"].clone(),
            v["rows"][0]["superseded_by"].clone(),
        )
    };
    assert_eq!(
        superseded("laptop"),
        (serde_json::json!(["m-lap-11"]), serde_json::json!([]))
    );
    assert_eq!(
        superseded("desktop"),
        (serde_json::json!([]), serde_json::json!(["m-desk-03"]))
    );

    // On the local stores the filters are refused, naming the argument and the archive.
    for (skill, first) in [("get-memory", "id=m-lap-01"), ("list-memories", "limit=5")] {
        for arg in ["machine=laptop", "user=alice"] {
            let (ok, _, said) = run_skill(&lap, None, skill, &args(&[first, arg]));
            assert!(!ok, "{skill} {arg} answered locally: {said}");
            let name = arg.split('=').next().unwrap();
            assert!(
                said.contains(&format!("`{name}`")) && said.contains("--archive"),
                "{skill} {arg}: {said}"
            );
        }
    }
}

/// Each store's sandbox role reads its own view only: a memories skill's twin cannot
/// read the conversations' view, nor a conversations skill's the memories' — as
/// locally, where each reads its own database file.
#[test]
fn each_stores_sql_role_reads_its_own_view_only() {
    let Some(server) = server() else { return };
    let db = Db::new(&server);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("laptop");
    laptop(&data);
    json_of(&data, Some(&db.url), &["--json", "archive", "migrate"]);
    push_as(&data, &db, "alice");
    let skills_dir = root.path().join("skills");
    let cases = [
        (
            "memories-own",
            "memories",
            "SELECT count(*) AS n FROM all_memories",
            None,
        ),
        (
            "memories-reads-conversations",
            "memories",
            "SELECT count(*) AS n FROM all_conversations",
            Some("permission denied"),
        ),
        (
            "conversations-reads-memories",
            "conversations",
            "SELECT count(*) AS n FROM all_memories",
            Some("permission denied"),
        ),
        (
            "memories-reads-the-table",
            "memories",
            "SELECT count(*) AS n FROM skills_archive.memories",
            Some("permission denied"),
        ),
    ];
    for (name, store, twin, _) in &cases {
        let local = if *store == "memories" {
            "SELECT count(*) AS n FROM memories"
        } else {
            "SELECT count(*) AS n FROM all_conversations"
        };
        let dir = common::sql_skill(
            &skills_dir,
            name,
            &format!(
                "reads: [{store}]\nengine-options:\n  store: {store}\n  archive-query: archive.sql\ninput-schema:\n  type: object\n  properties: {{}}\n"
            ),
            local,
            "{{ data.rows[0].n }}",
        );
        fs_err::write(dir.join("archive.sql"), twin).unwrap();
    }
    for (name, _, _, refused) in &cases {
        let (ok, stdout, stderr) = common::archive::run(
            &data,
            Some(&db.url),
            &["--skills-dir", skills_dir.to_str().unwrap(), "run", name],
        );
        let said = format!("{stdout}{stderr}");
        match refused {
            None => {
                assert!(ok, "{name}: {said}");
                assert_eq!(stdout.trim(), "32", "{name}: {said}");
            }
            Some(expected) => {
                assert!(!ok, "{name} read it: {said}");
                assert!(
                    said.contains(expected) && said.contains(name),
                    "{name}: {said}"
                );
            }
        }
    }
}

/// `skills serve --http --archive` from a data folder holding nothing: the memories
/// list and a memory's page answer from the archive (both machines' memories), name
/// each row's or copy's machine and link to that machine's copies, `?machine=` (an id
/// or a label) keeps one machine's memories or picks its copy, and each part of their
/// JSON twins is `skills run --archive` of the same skill and arguments.
#[test]
fn the_memories_pages_answer_from_the_archive() {
    let Some(server) = server() else { return };
    let db = Db::new(&server);
    let root = tempfile::tempdir().unwrap();
    let (lap, desk, empty) = (
        root.path().join("laptop"),
        root.path().join("desktop"),
        root.path().join("server"),
    );
    laptop(&lap);
    desktop(&desk);
    json_of(&lap, Some(&db.url), &["--json", "archive", "migrate"]);
    push_as(&lap, &db, "alice");
    push_as(&desk, &db, "bob");
    fs_err::create_dir_all(&empty).unwrap();
    let mut cmd =
        common::serve::HttpServer::command(&common::repo_skills(), &empty, &["--archive", &db.url]);
    cmd.env_remove("SKILLS_ARCHIVE_URL")
        .env("SKILLS_EMBEDDER", "none");
    let served = common::serve::HttpServer::start(cmd);
    let (status, list) = common::serve::get(&served.base, "/memories");
    assert_eq!(status, 200, "{list}");
    for id in ["m-desk-03", "m-lap-29", "shared-2"] {
        assert!(list.contains(id), "/memories lacks {id}");
    }
    let (status, one) = common::serve::get(&served.base, "/memories/shared-1");
    assert_eq!(status, 200, "{one}");
    assert!(one.contains("desktop: shared-1"), "the newest copy: {one}");
    let (lap_id, desk_id) = (
        common::archive::machine_id_of(&lap),
        common::archive::machine_id_of(&desk),
    );
    // The copy's machine is named, and its links are that machine's copies.
    assert!(one.contains("<code>desktop</code>"), "{one}");
    assert!(
        one.contains(&format!("/conversations/_/conv-desk?machine={desk_id}")),
        "{one}"
    );
    // Each row names its machine and links to that machine's copy.
    assert!(
        list.contains(">laptop</a>") && list.contains(">desktop</a>"),
        "{list}"
    );
    for id in [&lap_id, &desk_id] {
        let copy = format!("/memories/shared-1?machine={id}");
        assert!(list.contains(&copy), "/memories lacks a link to {copy}");
    }
    // One machine's memories: the filter, and the links of its rows stay on it.
    let (status, desk_list) =
        common::serve::get(&served.base, &format!("/memories?machine={desk_id}"));
    assert_eq!(status, 200, "{desk_list}");
    assert!(desk_list.contains("m-desk-03"), "{desk_list}");
    assert!(
        !desk_list.contains("m-lap-"),
        "another machine's rows: {desk_list}"
    );
    assert!(
        desk_list.contains(&format!("/memories/m-desk-03?machine={desk_id}")),
        "shared-2 is superseded by the desktop's m-desk-03: {desk_list}"
    );
    let (status, by_label) = common::serve::get(&served.base, "/memories?machine=laptop");
    assert_eq!(status, 200, "{by_label}");
    assert!(
        by_label.contains("m-lap-29") && !by_label.contains("m-desk-"),
        "{by_label}"
    );
    // Another machine's copy of the same memory, by its id.
    let (status, lap_copy) = common::serve::get(
        &served.base,
        &format!("/memories/shared-1?machine={lap_id}"),
    );
    assert_eq!(status, 200, "{lap_copy}");
    assert!(
        !lap_copy.contains("desktop: shared-1") && lap_copy.contains("<code>laptop</code>"),
        "the laptop's copy: {lap_copy}"
    );
    let mut parts = 0;
    for page in [
        "/memories?format=json".to_owned(),
        "/memories?tag=k8s&format=json".to_owned(),
        "/memories/m-lap-03?format=json".to_owned(),
        format!("/memories?machine={desk_id}&format=json"),
        format!("/memories/shared-1?machine={lap_id}&format=json"),
    ] {
        let (status, twin) = common::serve::get(&served.base, &page);
        assert_eq!(status, 200, "{page}: {twin}");
        let twin: Value = serde_json::from_str(&twin).unwrap();
        for (part, call) in twin.as_object().unwrap() {
            let Some(skill) = call["skill"].as_str() else {
                continue;
            };
            let out = skills()
                .arg("--data-dir")
                .arg(&empty)
                .args(["--archive", &db.url, "--json", "run", skill, "--args-json"])
                .arg(call["args"].to_string())
                .output()
                .unwrap();
            assert!(out.status.success(), "{page} {part}");
            let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(call["data"], cli["data"], "{page} {part}");
            assert!(call["data"]["count"].as_u64().unwrap() > 0, "{page} {part}");
            parts += 1;
        }
    }
    assert!(parts >= 5, "{parts}");
}
