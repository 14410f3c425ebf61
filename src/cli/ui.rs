//! `skills ui`: opens the pages. When a `skills serve --http` (or another `skills ui`)
//! over the same data folder answers at the address it left in `pages.url`, its URL is
//! printed; otherwise the HTTP server starts on a free loopback port (MCP at `/mcp`,
//! the pages at `/`), prints the URL and serves until Ctrl-C. Where a desktop exists
//! (`DISPLAY` or `WAYLAND_DISPLAY` set, or macOS) the URL is opened in the browser
//! (`xdg-open`, `open`), unless `--no-open`.
//!
//! The running server is found through `pages.url` in the data folder
//! ([`super::pages_url`]).

use std::net::SocketAddr;

use anyhow::Result;

use super::pages_url::{data_dir, open, running};
use super::{Outcome, Session};

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
