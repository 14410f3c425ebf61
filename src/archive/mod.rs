//! The team archive: a PostgreSQL database that several machines push their
//! conversations and memories into ([`push`]), and that any `skills` pointed at it
//! (`--archive URL`, `SKILLS_ARCHIVE_URL`) answers from ([`search`]).
//!
//! - [`connect`]: the address (libpq conventions: URL, `PGPASSWORD`, `~/.pgpass`,
//!   `sslmode`), TLS, and the scrubbing that keeps the password out of every message.
//! - [`schema`]: the versioned schema, created and upgraded only by
//!   `skills archive migrate` (never by a push or a read).
//! - [`machine`]: this data folder's stable machine id, host label and user.
//! - [`push`]: the incremental, idempotent, kill-safe push.
//! - [`compact`]: the keyword postings' rows merged, dead postings dropped (at the end
//!   of a push and by `skills archive compact`).
//! - [`search`]: search-conversations answered from the archive with DuckDB's rows.
//! - [`lookup`]: memories and messages read by their local keys (rerank's items), one
//!   copy of each (the most recently updated, then the smallest machine id).
//! - [`memo`]: memo-search's rows (memories, their terms and vectors) for one search.
//! - [`meaning`]: the vectors' wire form and semantic-search answered from pgvector.
//! - [`sql`]: the drop-in `sql` skills' PostgreSQL queries, in the database's sandbox.
//! - [`status`]: what the archive holds and what this machine has not pushed yet.

pub mod compact;
pub mod connect;
pub mod keyword;
pub mod lookup;
pub mod machine;
pub mod meaning;
pub mod memo;
pub mod push;
pub mod schema;
pub mod search;
pub mod sql;
pub mod status;

pub use connect::Target;

/// Anything that went wrong with the archive, as one message that names the archive
/// (without its password) and PostgreSQL's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArchiveError(String);

impl ArchiveError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

/// An open connection to an archive, with its identity.
pub struct Archive {
    target: Target,
    client: postgres::Client,
}

/// What identifies an archive across URLs: the cluster's `system_identifier` and the
/// database name. A push's watermark is keyed by it, so a new URL for the same
/// database (another host name, a port forward) does not push everything again, and
/// a new database behind an old URL does not inherit the old watermark.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    /// `pg_control_system().system_identifier`, as text.
    pub system_identifier: String,
    /// `current_database()`.
    pub database: String,
}

impl Identity {
    /// `<system_identifier>/<database>`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.system_identifier, self.database)
    }
}

impl Archive {
    /// Connects to `target`.
    ///
    /// # Errors
    /// [`ArchiveError`] from [`Target::connect`].
    pub fn open(target: &Target) -> Result<Self, ArchiveError> {
        let client = target.connect()?;
        Ok(Self {
            target: target.clone(),
            client,
        })
    }

    /// The address (no password).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The connection.
    pub fn client(&mut self) -> &mut postgres::Client {
        &mut self.client
    }

    /// An error about this archive (scrubbed, see [`Target::error`]).
    pub fn error(&self, what: &str, e: &postgres::Error) -> ArchiveError {
        self.target.error(what, e)
    }

    /// The archive's [`Identity`].
    ///
    /// # Errors
    /// [`ArchiveError`] when the query fails.
    pub fn identity(&mut self) -> Result<Identity, ArchiveError> {
        let row = self.client.query_one(
            "SELECT system_identifier::text, current_database()::text \
             FROM pg_control_system()",
            &[],
        );
        match row {
            Ok(row) => Ok(Identity {
                system_identifier: row.get(0),
                database: row.get(1),
            }),
            // A role without access to pg_control_system(): the id migrate made.
            Err(_) => {
                let row = self
                    .client
                    .query_one(
                        &format!(
                            "SELECT 'archive-' || value, current_database()::text \
                             FROM {}.meta WHERE key = 'archive_id'",
                            schema::SCHEMA
                        ),
                        &[],
                    )
                    .map_err(|e| self.target.error("reading its identity", &e))?;
                Ok(Identity {
                    system_identifier: row.get(0),
                    database: row.get(1),
                })
            }
        }
    }
}
