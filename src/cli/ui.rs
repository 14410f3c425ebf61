//! `skills ui`: opens the pages. When a `skills serve --http` (or another `skills ui`)
//! over the same data folder answers at the address it left in `pages.url`, its URL is
//! printed; otherwise the HTTP server starts on a free loopback port (MCP at `/mcp`,
//! the pages at `/`), prints the URL and serves until Ctrl-C. Where a desktop exists
//! (`DISPLAY` or `WAYLAND_DISPLAY` set, or macOS) the URL is opened in the browser
//! (`xdg-open`, `open`), unless `--no-open`.
//!
//! A server records its loopback URL in `pages.url` once it listens and removes the
//! file when it stops (if it still holds that URL); a file left by a server that was
//! killed is ignored, since the URL must answer with the pages.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::{Outcome, Printer, Session};

/// The file in the data folder holding the URL of the pages being served.
pub const URL_FILE: &str = "pages.url";

/// How long the check of a running server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Arguments of `skills ui`.
#[derive(clap::Args)]
pub struct Args {
    /// Loopback port to serve on when no server runs (0: a free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Print the URL only; do not open a browser.
    #[arg(long)]
    no_open: bool,
}

/// Prints the URL of a server already running over this data folder, or serves one.
///
/// # Errors
/// As `skills serve --http`.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    if let Some(dir) = data_dir(session) {
        if let Some(url) = running(&dir) {
            session
                .printer
                .note("a server is already running over this data folder");
            session.printer.line(&url)?;
            if !args.no_open {
                open(&url);
            }
            return Ok(Outcome::Success);
        }
    }
    let serve =
        super::serve::Args::for_ui(SocketAddr::from(([127, 0, 0, 1], args.port)), !args.no_open);
    super::serve::execute(session, &serve)
}

/// The data folder (where the stores are).
pub fn data_dir(session: &Session) -> Option<PathBuf> {
    session
        .store_paths()
        .ok()
        .and_then(|p| p.conversations.parent().map(Path::to_path_buf))
}

/// Records `url` as the pages served over data folder `dir` (best effort); `true`
/// when it was written.
pub fn advertise(dir: &Path, url: &str) -> bool {
    let written = fs_err::create_dir_all(dir)
        .and_then(|()| fs_err::write(dir.join(URL_FILE), format!("{url}\n")));
    if let Err(e) = &written {
        Printer::log(format_args!("warning: cannot record the pages' URL: {e}"));
    }
    written.is_ok()
}

/// Removes the record [`advertise`] wrote, unless another server has replaced it
/// since (best effort).
pub fn withdraw(dir: &Path, url: &str) {
    let file = dir.join(URL_FILE);
    if fs_err::read_to_string(&file).is_ok_and(|held| held.trim() == url) {
        let _ = fs_err::remove_file(&file);
    }
}

/// The URL recorded in `dir` when a server answers there with the pages.
fn running(dir: &Path) -> Option<String> {
    let url = fs_err::read_to_string(dir.join(URL_FILE)).ok()?;
    let url = url.trim().to_owned();
    let authority = url.strip_prefix("http://")?.trim_end_matches('/');
    let addr: SocketAddr = authority.parse().ok()?;
    if !addr.ip().is_loopback() {
        return None;
    }
    let mut stream = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream
        .write_all(
            format!("GET / HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .ok()?;
    let mut answer = Vec::new();
    let _ = stream.take(256 * 1024).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    (answer.starts_with("HTTP/1.1 200")
        && answer.contains("pages generated from the skill documents"))
    .then_some(url)
}

/// Prints `url` on stdout and, when `open`, opens it where a desktop exists.
pub fn show(url: &str, open_it: bool) {
    Printer::out_line(url);
    if open_it {
        open(url);
    }
}

/// Opens `url` in the desktop's browser, when there is a desktop (best effort).
fn open(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        Some("open")
    } else if skills::settings::DISPLAY.is_set() || skills::settings::WAYLAND_DISPLAY.is_set() {
        Some("xdg-open")
    } else {
        None
    };
    let Some(opener) = opener else {
        Printer::log("skills: no desktop found; open the URL above in a browser");
        return;
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        Printer::log(format_args!(
            "skills: cannot run `{opener}` to open the URL: {e}"
        ));
    }
}
