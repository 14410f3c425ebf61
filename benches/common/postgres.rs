//! A PostgreSQL for the team-archive benchmarks: `BENCH_ARCHIVE_URL`'s (a superuser
//! URL), or a throwaway server started by `scripts/postgres` (fetched on first use) and
//! stopped when the [`Server`] is dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _, Result};

/// A PostgreSQL for one bench run.
pub struct Server {
    /// `scripts/postgres`'s folder of a server this bench started (`None`: the
    /// environment's server, left running).
    dir: Option<String>,
    /// A superuser URL of the server (`BENCH_ARCHIVE_URL`, or the started server's).
    pub admin: String,
}

impl Server {
    /// `BENCH_ARCHIVE_URL`'s server, else a new one from `scripts/postgres start`.
    ///
    /// # Errors
    /// When the script fails or prints no URL (its stderr is in the error).
    pub fn start() -> Result<Self> {
        if let Some(url) = std::env::var("BENCH_ARCHIVE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            return Ok(Self {
                dir: None,
                admin: url,
            });
        }
        let out = Command::new(script())
            .arg("start")
            .output()
            .context("running scripts/postgres")?;
        let text = String::from_utf8_lossy(&out.stdout);
        let var = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(|v| v.trim_matches('\'').to_owned())
        };
        let (Some(dir), Some(admin)) = (
            var("SKILLS_TEST_POSTGRES_DIR"),
            var("SKILLS_TEST_ARCHIVE_URL"),
        ) else {
            bail!(
                "scripts/postgres start did not start PostgreSQL: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        Ok(Self {
            dir: Some(dir),
            admin,
        })
    }

    /// Makes database `name` anew (dropped first, with its connections) and returns
    /// its URL.
    ///
    /// # Errors
    /// When the server refuses the connection or the statements.
    pub fn database(&self, name: &str) -> Result<String> {
        let mut c = postgres::Client::connect(&self.admin, postgres::NoTls)
            .with_context(|| format!("connecting to {}", self.admin))?;
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
        c.batch_execute(&format!("CREATE DATABASE {name}"))?;
        let (base, _) = self.admin.rsplit_once('/').unwrap_or((&self.admin, ""));
        Ok(format!("{base}/{name}?sslmode=disable"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = Command::new(script()).args(["stop", dir]).status();
        }
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/postgres")
}
