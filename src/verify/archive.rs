//! The team-archive target of `skills verify`: every fixture corpus gets a database of
//! its own on one PostgreSQL server (so corpora never mix), created, migrated and
//! pushed once, and dropped when the verifier is dropped.
//!
//! This module owns only those databases; the archive itself (schema, push, reads) is
//! [`crate::archive`]'s, called as `skills archive migrate` and `skills archive push`
//! call it.

use std::sync::Mutex;

use crate::archive::push::PushOptions;
use crate::archive::{machine::Machine, schema, Archive, Target};
use crate::stores::StorePaths;

/// A PostgreSQL server the verifier makes its scratch archives on.
pub struct ArchiveServer {
    server: Target,
    /// Random hex shared by this run's databases (`skills_verify_<run>_<corpus>`), so
    /// two runs on one server never share one.
    run: String,
    /// Databases created, dropped on drop.
    created: Mutex<Vec<String>>,
}

impl ArchiveServer {
    /// Scratch archives on the server of `server` (its database is only connected to,
    /// to create and drop the others). The role needs `CREATEDB`, and `CREATE` on the
    /// extensions `vector` and `pg_trgm` (a superuser has both).
    pub fn new(server: Target) -> Self {
        let mut bytes = [0u8; 4];
        if getrandom::fill(&mut bytes).is_err() {
            bytes = std::process::id().to_le_bytes();
        }
        Self {
            server,
            run: hex::encode(bytes),
            created: Mutex::new(Vec::new()),
        }
    }

    /// The server's address (no password), for reports.
    pub fn shown(&self) -> &str {
        self.server.shown()
    }

    /// A new archive for corpus `name` (`None`: no corpus, an empty archive): the
    /// database created, the schema migrated with the vector tables of the models
    /// `stores` hold, then `stores` pushed unredacted (so the archive holds the local
    /// rows as they are) as a machine of their own data folder. Returns its address.
    ///
    /// # Errors
    /// A message naming the step and PostgreSQL's reason (never the password).
    pub fn archive_for(
        &self,
        name: Option<&str>,
        stores: Option<&StorePaths>,
    ) -> Result<Target, String> {
        let suffix = name
            .unwrap_or("none")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>()
            .to_ascii_lowercase();
        let mut database = format!("skills_verify_{}_{suffix}", self.run);
        database.truncate(63);
        let what = format!(
            "archive of corpus `{}` on {}",
            name.unwrap_or("(none)"),
            self.server.shown()
        );
        let mut admin = self.server.connect().map_err(|e| format!("{what}: {e}"))?;
        admin
            .batch_execute(&format!("CREATE DATABASE \"{database}\""))
            .map_err(|e| {
                format!(
                    "{what}: creating database `{database}` (the role needs CREATEDB): {}",
                    self.server.scrub(&crate::archive::connect::describe(&e))
                )
            })?;
        self.created
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(database.clone());
        let target = self.server.with_database(&database);
        let mut archive = Archive::open(&target).map_err(|e| format!("{what}: {e}"))?;
        let models = stores.map(schema::local_models).unwrap_or_default();
        schema::migrate(&mut archive, &models).map_err(|e| format!("{what}: migrate: {e}"))?;
        if let Some(paths) = stores {
            let machine = Machine::of_paths(paths).map_err(|e| format!("{what}: {e}"))?;
            let options = PushOptions {
                redact: false,
                ..PushOptions::default()
            };
            crate::archive::push::push(&mut archive, paths, &machine, &options, &mut |_, _| {})
                .map_err(|e| format!("{what}: push: {e}"))?;
        }
        Ok(target)
    }
}

impl Drop for ArchiveServer {
    fn drop(&mut self) {
        let created = std::mem::take(
            self.created
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if created.is_empty() {
            return;
        }
        if let Ok(mut admin) = self.server.connect() {
            for db in created {
                let _ =
                    admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"));
            }
        }
    }
}
