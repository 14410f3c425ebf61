//! The pages in a real browser: headless Chromium (Debian's `chromium`; the test is
//! reported as not run, with the reason, when it is absent) loads the index (activity
//! charts), the conversations list, a project page, a conversation and a recall result
//! from `skills serve --http` over the shared corpus (not run when absent). For each
//! page it checks the DOM after scripts ran (`--dump-dom`), that nothing was written
//! to the console (no script error, no Content-Security-Policy refusal), and keeps a
//! screenshot at desktop (1280) and phone (390) width under `<target>/tmp/browser/`
//! as a test artefact. Then axe-core (npm `axe-core`, pinned in
//! `tests/clients/package.json`, installed by `scripts/install-test-clients`) runs in
//! the same Chromium at both widths through `tests/browser/axe.mjs` (DevTools
//! protocol, Node 22): no page may have a serious or critical violation. Without
//! Node 22 or axe-core that part is reported as not run, with the reason.
//!
//! A page with a deliberate script error is loaded first, so a console check that
//! could not see errors fails instead of passing.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one Chromium run may take.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    })
}

/// What one Chromium run saw.
struct Load {
    dom: String,
    console: Vec<String>,
}

/// Runs headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=…`) in
/// a fresh profile; kills it past [`CHROMIUM_TIMEOUT`].
fn run_chromium(browser: &Path, url: &str, mode: &[String]) -> Load {
    let profile = tempfile::tempdir().unwrap();
    let out = tempfile::NamedTempFile::new().unwrap();
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(mode)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + CHROMIUM_TIMEOUT;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {url} within {CHROMIUM_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let dom = std::fs::read_to_string(out.path()).unwrap_or_default();
    let console = std::fs::read_to_string(err.path())
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    Load { dom, console }
}

/// Loads `url`: its DOM and console, and screenshots at desktop and phone width.
fn visit(browser: &Path, url: &str, name: &str, shots: &Path) -> Load {
    let load = run_chromium(browser, url, &["--dump-dom".to_owned()]);
    // Headless screenshots of a page scrolled to a fragment come out blank: the
    // picture is of the page from its top (a conversation's `?at=` redirects to a
    // fragment, so it goes too).
    let cut: &[char] = if url.contains("/conversations/") {
        &['?', '#']
    } else {
        &['#']
    };
    let top = url.split(cut).next().unwrap_or(url);
    for (size, suffix) in [("1280,900", "desktop"), ("390,844", "phone")] {
        let file = shots.join(format!("{name}-{suffix}.png"));
        let _ = std::fs::remove_file(&file);
        run_chromium(
            browser,
            top,
            &[
                format!("--window-size={size}"),
                format!("--screenshot={}", file.display()),
            ],
        );
        let bytes = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("no screenshot of {url} at {}: {e}", file.display()));
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{}: not a PNG",
            file.display()
        );
    }
    load
}

/// `skills serve --http 127.0.0.1:0` over `data`, without an embedding model.
fn serve(data: &Path) -> common::serve::HttpServer {
    let mut cmd = common::serve::HttpServer::command(&common::repo_skills(), data, &[]);
    cmd.env("SKILLS_EMBEDDER", "none");
    common::serve::HttpServer::start(cmd)
}

#[test]
fn pages_load_in_headless_chromium_without_console_errors() {
    let Some(browser) = chromium() else {
        common::not_run("chromium not found (Debian's `chromium`; .ci/run installs it)");
        return;
    };
    let Some(corpus) = common::corpus() else {
        return;
    };
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&shots).unwrap();

    // The console check sees a script error when there is one.
    let broken = tempfile::Builder::new().suffix(".html").tempfile().unwrap();
    std::fs::write(
        broken.path(),
        "<p>x</p><script>not_defined_anywhere()</script>",
    )
    .unwrap();
    let load = run_chromium(
        &browser,
        &format!("file://{}", broken.path().display()),
        &["--dump-dom".to_owned()],
    );
    assert!(
        load.console
            .iter()
            .any(|l| l.contains("not_defined_anywhere")),
        "chromium's console is not visible to this test: {:?}",
        load.console
    );

    let data = tempfile::tempdir().unwrap();
    common::cli::ok(
        Command::new(env!("CARGO_BIN_EXE_skills"))
            .args(["ingest", "--quiet", "--no-embed"])
            .arg(corpus.join("claude-code"))
            .env("SKILLS_DATA_DIR", data.path())
            .env("SKILLS_EMBEDDER", "none"),
    );
    let server = serve(data.path());

    let index = visit(&browser, &format!("{}/", server.base), "index", &shots);
    assert!(index.dom.contains("<ul class=\"skills\">"), "{}", index.dom);
    assert!(
        index.dom.contains("<svg class=\"heatmap\"") && index.dom.contains("<svg class=\"months\""),
        "no activity charts on the index:\n{}",
        index.dom
    );
    assert!(
        index.console.is_empty(),
        "index console: {:?}",
        index.console
    );

    let list_url = format!("{}/conversations", server.base);
    let list = visit(&browser, &list_url, "conversations", &shots);
    assert!(
        list.dom.contains("<table class=\"list conversations\">"),
        "{}",
        list.dom
    );
    assert!(list.console.is_empty(), "list console: {:?}", list.console);
    let project_href = list
        .dom
        .split("href=\"/projects/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|p| format!("/projects/{}", p.replace("&amp;", "&")))
        .expect("a listed conversation links to its project");
    let project = visit(
        &browser,
        &format!("{}{project_href}", server.base),
        "project",
        &shots,
    );
    assert!(
        project.dom.contains("<svg class=\"heatmap\""),
        "{}",
        project.dom
    );
    assert!(
        project.console.is_empty(),
        "project console: {:?}",
        project.console
    );

    let search_url = format!("{}/skills/recall?question=calculator", server.base);
    let search = visit(&browser, &search_url, "recall", &shots);
    assert!(
        search
            .dom
            .contains("<table class=\"results\" id=\"results\""),
        "no result table in the DOM:\n{}",
        search.dom
    );
    assert!(
        search.console.is_empty(),
        "recall console: {:?}",
        search.console
    );
    let href = search
        .dom
        .split("<a class=\"cite\" href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap_or(""))
        .find(|href| href.starts_with("/conversations/"))
        .expect("a result links to a conversation")
        .replace("&amp;", "&");

    let conversation = visit(
        &browser,
        &format!("{}{href}", server.base),
        "conversation",
        &shots,
    );
    let anchor = href.split("#m-").nth(1).unwrap();
    let anchor = percent_encoding::percent_decode_str(anchor)
        .decode_utf8()
        .unwrap();
    assert!(
        conversation.dom.contains(&format!("id=\"m-{anchor}\"")),
        "the cited message is on the page"
    );
    assert!(
        conversation.console.is_empty(),
        "conversation console: {:?}",
        conversation.console
    );
    println!("screenshots in {}", shots.display());

    let urls: Vec<String> = [
        "/".to_owned(),
        "/conversations".to_owned(),
        project_href.clone(),
        href.split('#').next().unwrap_or(&href).to_owned(),
        "/skills/recall?question=calculator".to_owned(),
        "/memories".to_owned(),
        "/projects".to_owned(),
    ]
    .iter()
    .map(|p| format!("{}{p}", server.base))
    .collect();
    accessibility(&browser, &urls);
}

/// Node 22 and axe-core from `scripts/install-test-clients`, or why they are missing.
fn axe_tools() -> Result<(PathBuf, PathBuf), String> {
    let dir = std::env::var_os("SKILLS_CLIENTS_DIR").map_or_else(
        || {
            let cache = std::env::var_os("SKILLS_CACHE").map_or_else(
                || {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache/skills")
                },
                PathBuf::from,
            );
            cache.join("clients")
        },
        PathBuf::from,
    );
    let node = dir.join("node/node_modules/.bin/node");
    let axe = dir.join("node/node_modules/axe-core/axe.min.js");
    if !node.is_file() || !axe.is_file() {
        return Err(format!(
            "Node 22 or axe-core not installed under {} (run scripts/install-test-clients)",
            dir.display()
        ));
    }
    Ok((node, axe))
}

/// axe-core on every page of `urls` at desktop and phone width: no serious or
/// critical violation, and nothing on the console.
fn accessibility(browser: &Path, urls: &[String]) {
    let (node, axe) = match axe_tools() {
        Ok(tools) => tools,
        Err(why) => {
            eprintln!("not run: the axe-core accessibility check: {why}");
            return;
        }
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/axe.mjs");
    for size in ["1280x900", "390x844"] {
        let said = common::cli::stdout_of_success(
            Command::new(&node)
                .arg(&script)
                .arg(browser)
                .arg(&axe)
                .arg(size)
                .args(urls),
        );
        let lines: Vec<serde_json::Value> = said
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), urls.len(), "one result per page");
        for page in &lines {
            let url = page["url"].as_str().unwrap_or("");
            let violations = page["violations"].as_array().cloned().unwrap_or_default();
            for v in &violations {
                eprintln!(
                    "axe at {size}: {url}: {} ({}): {}",
                    v["id"], v["impact"], v["help"]
                );
            }
            let grave: Vec<&serde_json::Value> = violations
                .iter()
                .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
                .collect();
            assert!(grave.is_empty(), "{url} at {size}: {grave:#?}");
            let console = page["console"].as_array().cloned().unwrap_or_default();
            assert!(console.is_empty(), "{url} at {size}: console {console:?}");
        }
        eprintln!(
            "axe-core at {size}: {} pages, no serious or critical violation",
            lines.len()
        );
    }
}
