//! The team-archive target of `skills verify`: every fixture corpus gets a database of
//! its own on one PostgreSQL server (so corpora never mix), created, migrated and
//! pushed once, and dropped when the verifier is dropped. A case that writes (a skill
//! with `writes`, a `scenario`) gets a private copy of its corpus's archive
//! ([`ArchiveServer::private_copy`]), as it gets a private copy of the local stores.
//!
//! This module owns only those databases; the archive itself (schema, push, reads) is
//! [`crate::archive`]'s, called as `skills archive migrate` and `skills archive push`
//! call it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Private copies made so far (their names' counter).
    copies: AtomicU64,
    /// The template each archive made here was copied from (by database name): a
    /// private copy of a private copy comes from its original's template.
    templates: Mutex<BTreeMap<String, String>>,
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
            copies: AtomicU64::new(0),
            templates: Mutex::new(BTreeMap::new()),
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
    /// That is done in a template database no one connects to afterwards
    /// ([`template_of`]); the returned archive is copied from it, and so is each
    /// [`ArchiveServer::private_copy`] (PostgreSQL copies a database only from one
    /// without connections).
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
        database.truncate(MAX_NAME);
        let what = format!(
            "archive of corpus `{}` on {}",
            name.unwrap_or("(none)"),
            self.server.shown()
        );
        let template = template_of(&database);
        self.create(&template, None, &what)?;
        let mut archive = Archive::open(&self.server.with_database(&template))
            .map_err(|e| format!("{what}: {e}"))?;
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
        drop(archive);
        self.create(&database, Some(&template), &what)?;
        Ok(self.server.with_database(&database))
    }

    /// A private copy of `of` (an archive [`ArchiveServer::archive_for`] made),
    /// dropped when the returned value drops: what a case that writes changes there
    /// never reaches the other cases. Pair it with a private copy of the local stores
    /// `of` was pushed from (the machine id and push state beside them match).
    ///
    /// # Errors
    /// A message naming the copy and PostgreSQL's reason.
    pub fn private_copy(&self, of: &Target) -> Result<PrivateArchive, String> {
        let what = format!("private copy of {}", of.shown());
        let template = self
            .templates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(of.database())
            .cloned()
            .ok_or_else(|| format!("{what}: not an archive this run made"))?;
        let n = self.copies.fetch_add(1, Ordering::Relaxed);
        let database = format!("{}_p{n}", template.strip_suffix("_t").unwrap_or(&template));
        self.create(&database, Some(&template), &what)?;
        Ok(PrivateArchive {
            target: self.server.with_database(&database),
            server: self.server.clone(),
        })
    }

    /// Creates database `name` (copied from `template` when given) and records it to
    /// be dropped.
    fn create(&self, name: &str, template: Option<&str>, what: &str) -> Result<(), String> {
        if let Some(t) = template {
            self.templates
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.to_owned(), t.to_owned());
        }
        let mut admin = self.server.connect().map_err(|e| format!("{what}: {e}"))?;
        let from = template.map_or_else(String::new, |t| format!(" TEMPLATE \"{t}\""));
        admin
            .batch_execute(&format!("CREATE DATABASE \"{name}\"{from}"))
            .map_err(|e| {
                format!(
                    "{what}: creating database `{name}` (the role needs CREATEDB): {}",
                    self.server.scrub(&crate::archive::connect::describe(&e))
                )
            })?;
        self.created
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(name.to_owned());
        Ok(())
    }
}

/// The longest database name [`ArchiveServer`] gives before its suffixes (PostgreSQL
/// keeps 63 bytes; `_t` and `_p<n>` follow).
const MAX_NAME: usize = 48;

/// The template database an archive named `database` is copied from.
fn template_of(database: &str) -> String {
    format!("{database}_t")
}

/// A private archive ([`ArchiveServer::private_copy`]): its database is dropped when
/// this drops (and, failing that, with the verifier's).
pub struct PrivateArchive {
    /// Its address.
    pub target: Target,
    server: Target,
}

impl Drop for PrivateArchive {
    fn drop(&mut self) {
        if let Ok(mut admin) = self.server.connect() {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.target.database()
            ));
        }
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
