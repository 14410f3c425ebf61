//! The test PostgreSQL (`scripts/postgres`, started by `./scripts/test`, which exports
//! `SKILLS_TEST_ARCHIVE_URL`) and a fresh database on it per test.

use super::not_run;

/// The server's superuser URL, or `None` after saying why the test does not run.
pub fn server() -> Option<String> {
    match std::env::var("SKILLS_TEST_ARCHIVE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let why = std::env::var("SKILLS_TEST_POSTGRES_UNAVAILABLE").unwrap_or_else(|_| {
                "no PostgreSQL: SKILLS_TEST_ARCHIVE_URL is unset (./scripts/test starts one; \
                 or eval \"$(scripts/postgres start)\")"
                    .into()
            });
            not_run(&why);
            None
        }
    }
}

/// `url` (a `postgres://…/db` URL) with its database replaced by `db` and TLS off.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').unwrap();
    format!("{base}/{db}?sslmode=disable")
}

/// The password in a `postgres://user:password@…` URL.
pub fn password(url: &str) -> String {
    let (_, rest) = url.split_once("://").unwrap();
    let (auth, _) = rest.split_once('@').unwrap();
    auth.split_once(':').unwrap().1.to_owned()
}

/// A fresh database on the test server (named `t_` and 12 random hex digits), dropped
/// when this goes out of scope.
pub struct Db {
    admin: String,
    /// The database's name.
    pub name: String,
    /// Its URL (the superuser's, TLS off).
    pub url: String,
}

impl Db {
    /// Creates one on the server whose superuser URL is `admin`.
    pub fn new(admin: &str) -> Self {
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).unwrap();
        let name = format!("t_{}", hex::encode(bytes));
        let mut c = postgres::Client::connect(admin, postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Self {
            admin: admin.to_owned(),
            url: with_database(admin, &name),
            name,
        }
    }

    /// A new connection to it.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }

    /// Every message row of the archive (all columns), in key order, as text.
    pub fn dump(&self) -> Vec<String> {
        self.client()
            .query(
                "SELECT m::text FROM skills_archive.messages m
                 ORDER BY machine, source, conversation_id, message_id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// The `bigint` that `sql` (one row, one column) returns.
    pub fn count(&self, sql: &str) -> i64 {
        self.client().query_one(sql, &[]).unwrap().get(0)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}
