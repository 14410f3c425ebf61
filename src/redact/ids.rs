//! Secrets inside identifiers and metadata: a Claude Code `cwd` (the stored
//! `project`), a session or message id, a memory's tags, file lists, origin or
//! conversation id. Stored as written, a filter on such a field (`project`,
//! memo-search's `file`, `tag`) reads a secret out one character at a time, as a text
//! search did ([`super::at_store`]); so they are redacted before storing too, by the
//! same detectors.
//!
//! The usual marker would not do: these fields are keys. Two session ids differing
//! only in their secret would collapse into one conversation (its messages merged),
//! and an id must map to the same stored id on every import (incremental ingest,
//! re-imports adding nothing, deterministic memory ids). So each secret becomes
//! `[REDACTED:<detector>#<16 hex>]`, the hex digits the first 64 bits of
//! HMAC-SHA-256 of the secret under a key made once per data folder ([`IdKey`], file
//! [`KEY_FILE`], 32 random bytes, mode 0600): distinct secrets stay distinct, the same
//! secret gives the same marker in that data folder, and the marker is no oracle — an
//! unkeyed hash of a low-entropy password would let anyone holding the store (or a
//! team archive it was pushed to) confirm a guess offline; without the key file a
//! guess cannot be checked. Stores in different data folders give one secret
//! different markers; the key file is not part of the stores and is never pushed.
//!
//! The marker survives redaction unchanged (no detector matches it, nor the text
//! around it: `#` is neither `:` nor `=`), so redacting an id twice gives the same id,
//! and an id a skill printed can be passed back as an argument.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use hmac::{KeyInit as _, Mac as _};

/// File in the data folder holding the key of id markers (64 hex digits).
pub const KEY_FILE: &str = "redaction-key";

/// Hex digits of the keyed digest in a marker (64 bits: a collision between two
/// secrets of one store is out of reach).
const DIGEST_HEX: usize = 16;

/// The key of one data folder's id markers (see the module docs).
pub struct IdKey {
    key: [u8; 32],
}

impl std::fmt::Debug for IdKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdKey(..)")
    }
}

impl IdKey {
    /// The key of the data folder holding the store file `store`: its parent folder's
    /// [`KEY_FILE`], made when missing. An in-memory store (`:memory:`) gets
    /// [`IdKey::ephemeral`].
    ///
    /// # Errors
    /// When the file cannot be read or written, or holds something other than a key.
    pub fn of_store(store: &Path) -> std::io::Result<Arc<Self>> {
        if store.as_os_str() == ":memory:" {
            return Ok(Self::ephemeral());
        }
        let dir = store
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        Self::of_data_dir(dir)
    }

    /// The key of data folder `dir` ([`KEY_FILE`]), made (32 random bytes, the file
    /// created with mode 0600) when missing; read once per process and folder.
    ///
    /// # Errors
    /// When the file cannot be read or written, or holds something other than 64 hex
    /// digits.
    pub fn of_data_dir(dir: &Path) -> std::io::Result<Arc<Self>> {
        static KEYS: OnceLock<Mutex<HashMap<PathBuf, Arc<IdKey>>>> = OnceLock::new();
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut keys = KEYS
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(key) = keys.get(&dir) {
            return Ok(key.clone());
        }
        let key = Arc::new(Self {
            key: read_or_make(&dir)?,
        });
        keys.insert(dir, key.clone());
        Ok(key)
    }

    /// A random key for this process, for stores that live only as long as it.
    pub fn ephemeral() -> Arc<Self> {
        static KEY: OnceLock<Arc<IdKey>> = OnceLock::new();
        KEY.get_or_init(|| {
            let mut key = [0u8; 32];
            // Without randomness the key is still unknown outside this process's life.
            if getrandom::fill(&mut key).is_err() {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                key[..16].copy_from_slice(&t.to_le_bytes());
            }
            Arc::new(Self { key })
        })
        .clone()
    }

    /// A key given as bytes (tests).
    pub fn from_bytes(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// The marker of `secret` found by `detector`: `[REDACTED:<detector>#<16 hex>]`.
    pub fn marker(&self, detector: &str, secret: &str) -> String {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(secret.as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut hex = hex::encode(digest);
        hex.truncate(DIGEST_HEX);
        format!("[REDACTED:{detector}#{hex}]")
    }
}

/// Reads `dir/KEY_FILE`, or writes a new key there (never over one another process
/// wrote first).
fn read_or_make(dir: &Path) -> std::io::Result<[u8; 32]> {
    let file = dir.join(KEY_FILE);
    let parse = |text: &str| -> std::io::Result<[u8; 32]> {
        let mut key = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut key).map_err(|_| {
            std::io::Error::other(format!(
                "{} does not hold a redaction key (64 hex digits); remove it to make a new \
                 one (secrets in ids stored later then get other markers)",
                file.display()
            ))
        })?;
        Ok(key)
    };
    match std::fs::read_to_string(&file) {
        Ok(text) => return parse(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot read {}: {e}", file.display()),
            ))
        }
    }
    let fail = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("cannot write {}: {e}", file.display()))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| fail(std::io::Error::other(e.to_string())))?;
    // tempfile creates its file with mode 0600: the key is never readable by others.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, format!("{}\n", hex::encode(key)).as_bytes())
        .map_err(fail)?;
    match tmp.persist_noclobber(&file) {
        Ok(_) => Ok(key),
        // Another process made one first: use it.
        Err(_) => parse(&std::fs::read_to_string(&file).map_err(fail)?),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_key_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let a = IdKey::of_data_dir(&data).unwrap();
        let text = std::fs::read_to_string(data.join(KEY_FILE)).unwrap();
        assert_eq!(text.trim().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(data.join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // A fresh read of the file (not the process cache) gives the same markers.
        assert_eq!(read_or_make(&data).unwrap(), a.key);
        let other = IdKey::of_data_dir(&dir.path().join("other")).unwrap();
        assert_ne!(a.marker("jwt", "x"), other.marker("jwt", "x"));
        std::fs::create_dir_all(dir.path().join("bad")).unwrap();
        std::fs::write(dir.path().join("bad").join(KEY_FILE), "x").unwrap();
        let e = IdKey::of_data_dir(&dir.path().join("bad")).unwrap_err();
        assert!(e.to_string().contains("redaction key"), "{e}");
    }

    /// Every detector's example, inside an id or a path: replaced by a keyed marker
    /// that redaction (of an id, or of output) leaves as it is.
    #[test]
    fn id_markers_survive_redaction() {
        let r = crate::redact::Redactor::global().unwrap();
        let key = IdKey::from_bytes([1; 32]);
        for (id, text, secret) in crate::redact::examples() {
            for wrapped in [
                text.clone(),
                format!("/home/u/{text}/app"),
                format!("session-{text}"),
            ] {
                let once = r.redact_id(&wrapped, &key);
                assert!(once.count >= 1, "{id}: nothing found in {wrapped:?}");
                assert!(!once.text.contains(&secret), "{id}: {:?}", once.text);
                assert!(
                    once.text.contains(&format!("[REDACTED:{id}#")),
                    "{id}: {:?}",
                    once.text
                );
                assert_eq!(
                    r.redact_id(&once.text, &key).count,
                    0,
                    "{id}: {:?}",
                    once.text
                );
                assert_eq!(r.redact(&once.text).count, 0, "{id}: {:?}", once.text);
            }
        }
    }

    #[test]
    fn markers_are_stable_distinct_and_keyed() {
        let k = IdKey::from_bytes([7; 32]);
        let m = k.marker("password-assignment", "hunter2hunter2");
        assert_eq!(m, k.marker("password-assignment", "hunter2hunter2"));
        assert_ne!(m, k.marker("password-assignment", "hunter2hunter3"));
        assert_ne!(
            m,
            IdKey::from_bytes([8; 32]).marker("password-assignment", "hunter2hunter2")
        );
        assert!(
            m.starts_with("[REDACTED:password-assignment#") && m.len() == 47,
            "{m}"
        );
    }
}
