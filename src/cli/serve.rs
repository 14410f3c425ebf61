//! `skills serve`: every skill as an MCP tool, over stdio or streamable HTTP.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;

use skills::runtime::mcp;

use super::{Outcome, Printer, Session};

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
}

/// Runs the MCP server until stdin closes (stdio) or Ctrl-C (HTTP). Logs go to
/// stderr; stdout belongs to the stdio transport.
///
/// # Errors
/// [`mcp::ServeError`]: a non-loopback address without `--allow-remote` (exit 2), a
/// port that cannot be bound, a failed stdio session; load failures.
pub fn execute(session: &mut Session, args: &Args) -> Result<Outcome> {
    let host = Arc::new(session.load_host()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (http, allow_remote) = (args.http, args.allow_remote);
    let served = runtime.block_on(async move {
        let tools = host.skills().len();
        let Some(addr) = http else {
            Printer::log(format_args!("skills: serving {tools} tools over stdio"));
            return mcp::serve_stdio(host).await.map_err(anyhow::Error::from);
        };
        let shutdown = tokio_util::sync::CancellationToken::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            on_signal.cancel();
        });
        let options = mcp::HttpOptions { addr, allow_remote };
        mcp::serve_http(host, options, shutdown, |bound| {
            Printer::log(format_args!(
                "skills: serving {tools} tools over streamable HTTP at http://{bound}{}",
                mcp::HTTP_PATH
            ));
        })
        .await
        .map_err(anyhow::Error::from)
    });
    // A call still running (a slow query after stdin closed) must not keep the
    // process alive: its blocking thread is abandoned.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    served?;
    Ok(Outcome::Success)
}
