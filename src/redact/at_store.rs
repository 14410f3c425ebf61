//! Redaction before storing: what `skills ingest`, `skills serve`'s background imports,
//! `skills memo import`, `skills memo add` and the `memo-save` skill do to text before
//! it reaches a store.
//!
//! Redacting only a skill's output is not enough: searches match the stored text, so
//! a stored key is found by each of its prefixes and can be read out one character at
//! a time by anyone who can call a search (an agent under prompt injection included).
//! So by default secrets are replaced ([`super::Redactor::redact`], the same detectors
//! as a skill's output) before they are stored, and no search — exact, BM25 or
//! semantic — can find one, nor can a push to the team archive send one.
//! `--keep-secrets` (or [`crate::settings::KEEP_SECRETS`]) stores text as written: search
//! then finds secrets too, and only skills' output is redacted.
//!
//! Each store records which of these its text is ([`Secrets`]), so `skills status` can
//! say when a store holds text as written (imported before this was the default, or
//! with `--keep-secrets`) and that `skills ingest --redact-stored` redacts it in place.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::settings;

/// This process's policy as [`configure`] set it: [`UNSET`], [`REDACT`] or [`KEEP`].
static POLICY: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const REDACT: u8 = 1;
const KEEP: u8 = 2;

/// Sets this process's policy from a command's flags — `--redact` (the default, which
/// wins over the setting), `--keep-secrets` — and [`settings::KEEP_SECRETS`]; returns
/// true when text is to be stored as written.
///
/// # Errors
/// [`settings::Invalid`] when the setting is needed and holds a value that is neither
/// yes nor no (the policy stays: redact).
pub fn configure(redact_flag: bool, keep_secrets_flag: bool) -> Result<bool, settings::Invalid> {
    let keep = !redact_flag && (keep_secrets_flag || settings::keep_secrets()?);
    POLICY.store(if keep { KEEP } else { REDACT }, Ordering::SeqCst);
    Ok(keep)
}

/// True when stored text keeps its secrets: as [`configure`] decided, else as
/// [`settings::KEEP_SECRETS`] says (an unreadable value counts as no: redact).
pub fn keep_secrets() -> bool {
    match POLICY.load(Ordering::SeqCst) {
        REDACT => false,
        KEEP => true,
        _ => settings::keep_secrets().unwrap_or(false),
    }
}

/// Redacts `text` in place; returns how many secrets were replaced.
pub fn redact_in_place(text: &mut String) -> usize {
    let Some(redactor) = super::Redactor::global() else {
        return 0;
    };
    let out = redactor.redact(text);
    let count = out.count;
    if count > 0 {
        *text = out.text.into_owned();
    }
    count
}

/// [`redact_in_place`] unless [`keep_secrets`]: what a writer calls on text it is
/// about to store. Returns how many secrets were replaced.
pub fn for_store(text: &mut String) -> usize {
    if keep_secrets() {
        0
    } else {
        redact_in_place(text)
    }
}

/// Redacts an identifier or metadata value (project, session or message id, tag,
/// path, origin) in place with keyed markers ([`super::ids`]): distinct values stay
/// distinct and each is stored the same way every time. Returns how many secrets were
/// replaced.
pub fn id_in_place(text: &mut String, key: &super::ids::IdKey) -> usize {
    let Some(redactor) = super::Redactor::global() else {
        return 0;
    };
    let out = redactor.redact_id(text, key);
    let count = out.count;
    if count > 0 {
        *text = out.text.into_owned();
    }
    count
}

/// [`id_in_place`] on an optional value.
pub fn opt_id_in_place(text: &mut Option<String>, key: &super::ids::IdKey) -> usize {
    text.as_mut().map_or(0, |t| id_in_place(t, key))
}

/// [`id_in_place`] unless [`keep_secrets`]: what a writer calls on an id or a
/// metadata value it is about to store.
pub fn id_for_store(text: &mut String, key: &super::ids::IdKey) -> usize {
    if keep_secrets() {
        0
    } else {
        id_in_place(text, key)
    }
}

/// What a store records about the secrets in its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Secrets {
    /// Every text was redacted before it was stored (or the store holds nothing).
    Redacted,
    /// Some text was stored with its secrets (`--keep-secrets`).
    Kept,
    /// Imported before redaction at store was the default: text as written.
    NotRedacted,
}

impl Secrets {
    /// The stored mark's value (`store_meta.value` of key [`MARK_KEY`]).
    pub fn mark(self) -> &'static str {
        match self {
            Self::Redacted => "redacted",
            Self::Kept => "kept",
            Self::NotRedacted => "not_redacted",
        }
    }

    /// What a store says: its mark, else [`Secrets::Redacted`] when it holds nothing
    /// and [`Secrets::NotRedacted`] when it holds text written before marks existed.
    pub fn from_mark(mark: Option<&str>, empty: bool) -> Self {
        match mark {
            Some("redacted") => Self::Redacted,
            Some("kept") => Self::Kept,
            _ if empty => Self::Redacted,
            _ => Self::NotRedacted,
        }
    }
}

/// The key of the mark in each store's `store_meta (key, value)` table.
pub const MARK_KEY: &str = "secrets";

/// The key of the count of secrets replaced before storing, over the store's life
/// (`store_meta`, a decimal number), which `skills status` shows.
pub const COUNT_KEY: &str = "secrets_redacted";

/// The command that redacts a store in place.
pub const REDACT_IN_PLACE: &str = "skills ingest --redact-stored";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_round_trip_and_unmarked_text_is_not_redacted() {
        for s in [Secrets::Redacted, Secrets::Kept] {
            assert_eq!(Secrets::from_mark(Some(s.mark()), false), s);
        }
        assert_eq!(Secrets::from_mark(None, true), Secrets::Redacted);
        assert_eq!(Secrets::from_mark(None, false), Secrets::NotRedacted);
    }

    #[test]
    fn a_secret_is_replaced_for_storing() {
        let (_, text, secret) = crate::redact::examples()
            .into_iter()
            .find(|(id, _, _)| id.starts_with("aws"))
            .unwrap_or_default();
        let mut stored = format!("deploy with {text}");
        assert_eq!(redact_in_place(&mut stored), 1);
        assert!(!stored.contains(&secret) && stored.contains("[REDACTED:"));
    }
}
