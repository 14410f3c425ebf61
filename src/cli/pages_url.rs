//! Where the pages of a running server are: the file `pages.url` in the data folder.
//!
//! A server (`skills serve --http`, `skills ui`) records its loopback URL there once it
//! listens ([`advertise`]) and removes the file when it stops, if it still holds that
//! URL ([`withdraw`]); [`running`] reads it and believes it only when the URL answers
//! with the pages, so a file left by a killed server is ignored. `serve` writes the
//! record and `ui` reads it; both print and open the URL through [`show`].

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Printer, Session};

/// The file in the data folder holding the URL of the pages being served.
pub const URL_FILE: &str = "pages.url";

/// How long the check of a running server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

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
pub fn running(dir: &Path) -> Option<String> {
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
pub fn open(url: &str) {
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
