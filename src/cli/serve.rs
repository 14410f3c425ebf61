//! `skills serve`: every skill as an MCP tool, over stdio or streamable HTTP, reloaded
//! when the skills folder changes.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;

use skills::mcp::catalog::Catalog;
use skills::mcp::{self, watch};

use super::{Outcome, Printer, Session, UsageError};

/// Arguments of `skills serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Serve streamable HTTP on this loopback address (e.g. `127.0.0.1:8765`; port 0
    /// picks a free port) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Allow a non-loopback `--http` address and any Host/Origin header (no
    /// DNS-rebinding protection).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// Do not watch the skills folder: serve the skills loaded at start until exit.
    #[arg(long)]
    no_watch: bool,
    /// Also watch this file or folder for transcripts and import them as they change
    /// (repeatable; the default transcript locations are always watched).
    #[arg(long = "watch", value_name = "PATH")]
    watch_paths: Vec<std::path::PathBuf>,
    /// Do not keep the conversations store current: no watching of transcript
    /// locations, no background import (the store changes only by `skills ingest`).
    #[arg(long)]
    no_ingest: bool,
    /// Store text with its secrets as written, as `skills ingest --keep-secrets` does:
    /// the background imports and `memo-save`. By default secrets are redacted before
    /// storing, so no search can find one. Also `SKILLS_KEEP_SECRETS=1`.
    #[arg(long)]
    keep_secrets: bool,
    /// Redact secrets before storing: the default (accepted for scripts that pass it).
    #[arg(long, hide = true, conflicts_with = "keep_secrets")]
    redact: bool,
    /// After each background import, push to this team archive (a `postgres://` URL;
    /// password from PGPASSWORD or ~/.pgpass rather than the URL) in the background,
    /// secrets redacted. The archive being down or slow never blocks serving: a failed
    /// push is retried with backoff and shown by `skills status`.
    #[arg(long, value_name = "URL", conflicts_with = "no_ingest")]
    archive_push: Option<String>,
    /// Set by `skills ui`: print the pages' URL on stdout once the server listens.
    #[arg(skip)]
    pub(crate) print_pages: bool,
    /// Set by `skills ui` unless `--no-open`: also open the URL where a desktop exists.
    #[arg(skip)]
    pub(crate) open_pages: bool,
}

impl Args {
    /// The arguments `skills ui` serves with: HTTP on `addr`, the pages' URL printed,
    /// and opened when `open`.
    pub(crate) fn for_ui(addr: SocketAddr, open: bool) -> Self {
        Self {
            http: Some(addr),
            allow_remote: false,
            no_watch: false,
            watch_paths: Vec::new(),
            no_ingest: false,
            keep_secrets: false,
            redact: false,
            archive_push: None,
            print_pages: true,
            open_pages: open,
        }
    }
}

/// Runs the MCP server until stdin closes (stdio) or Ctrl-C or `SIGTERM` (HTTP). Logs go to
/// stderr; stdout belongs to the stdio transport.
///
/// Unless `--no-watch`, the skills folder is watched: a change reloads the skills,
/// connected clients get `list_changed` notifications, and a broken document keeps the
/// previous set serving ([`watch`]).
///
/// Unless `--no-ingest`, the default transcript locations and every `--watch PATH`
/// are watched and changed transcripts imported in the background
/// ([`super::serve_ingest`]); with `--archive-push URL`, each import is followed by a
/// push to the team archive in the background.
///
/// # Errors
/// [`mcp::ServeError`]: a non-loopback address without `--allow-remote` (exit 2), a
/// port that cannot be bound, a failed stdio session; load failures.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let keep_secrets = skills::redact::at_store::configure(args.redact, args.keep_secrets)
        .map_err(|e| UsageError::new(e.to_string()))?;
    let host = Arc::new(session.load_host()?);
    let catalog = if args.no_watch {
        Arc::new(Catalog::fixed(host))
    } else {
        let (served, problems) = skills::mcp::catalog::Served::new(host);
        for p in problems {
            session.printer.warning(p);
        }
        Arc::new(Catalog::new(served, true))
    };
    let _watch = if args.no_watch {
        None
    } else {
        let dir = session.skills_dir()?;
        let loader = session.host_loader()?;
        match watch::watch(&dir, Arc::clone(&catalog), loader) {
            Ok(w) => Some(w),
            Err(e) => {
                session
                    .printer
                    .warning(format_args!("{e}; serving without reload"));
                None
            }
        }
    };
    let ingest = if args.no_ingest {
        None
    } else {
        Some(super::serve_ingest::options(
            session,
            &args.watch_paths,
            keep_secrets,
            args.archive_push.as_deref(),
        )?)
    };
    // Started once the server listens (not for an address refused), stopped before exit.
    let importing = Arc::new(std::sync::Mutex::new(None));
    let slot = Arc::clone(&importing);
    let begin = move || {
        if let Some(options) = ingest {
            let started = super::serve_ingest::start(options);
            *slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = started;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (http, allow_remote) = (args.http, args.allow_remote);
    let (print_pages, open_pages) = (args.print_pages, args.open_pages);
    let data_dir = super::pages_url::data_dir(session);
    // The pages' URL once recorded in the data folder, withdrawn at exit.
    let advertised = Arc::new(std::sync::Mutex::new(None::<(std::path::PathBuf, String)>));
    let record = Arc::clone(&advertised);
    let pages = match skills::web::Pages::new(Arc::clone(&catalog)) {
        Ok(pages) => Some(Arc::new(pages).handler()),
        Err(e) => {
            session
                .printer
                .warning(format_args!("{e}; serving without pages"));
            None
        }
    };
    let served = runtime.block_on(async move {
        let tools = catalog.current().tools.len();
        let Some(addr) = http else {
            Printer::log(format_args!("skills: serving {tools} tools over stdio"));
            begin();
            return mcp::serve_stdio(catalog).await.map_err(anyhow::Error::from);
        };
        let shutdown = tokio_util::sync::CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            stop_signal().await;
            on_signal.cancel();
        });
        let options = mcp::HttpOptions { addr, allow_remote };
        let with_pages = pages.is_some();
        mcp::serve_http_with(
            catalog,
            options,
            shutdown,
            |bound| {
                begin();
                // The pages' URL is recorded before any address is announced: whoever
                // saw an address finds the record.
                let url = format!("http://{bound}/");
                if with_pages {
                    if let (Some(dir), true) = (data_dir, bound.ip().is_loopback()) {
                        if super::pages_url::advertise(&dir, &url) {
                            *record
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                                Some((dir, url.clone()));
                        }
                    }
                }
                Printer::log(format_args!(
                    "skills: serving {tools} tools over streamable HTTP at http://{bound}{}",
                    mcp::HTTP_PATH
                ));
                if with_pages {
                    Printer::log(format_args!("skills: pages at {url}"));
                    if print_pages {
                        super::pages_url::show(&url, open_pages);
                    }
                }
            },
            pages,
        )
        .await
        .map_err(anyhow::Error::from)
    });
    // A call still running (a slow query after stdin closed) must not keep the
    // process alive: its blocking thread is abandoned.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    // Stop watching and end a running import before the process exits.
    drop(
        importing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(),
    );
    if let Some((dir, url)) = advertised
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
    {
        super::pages_url::withdraw(&dir, &url);
    }
    served?;
    Ok(Outcome::Success)
}

/// Resolves at Ctrl-C (`SIGINT`) or, on Unix, `SIGTERM` (`kill`, a service manager):
/// either stops the HTTP server the same way (the import ends, `pages.url` is removed).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
