//! Project scoping: the `project` argument of search-conversations, semantic-search
//! and recall keeps the messages whose stored `project` (Claude Code's `cwd`, Codex's
//! session `cwd`, an Aider log's folder…) contains it as a case-insensitive literal
//! substring — DuckDB's `project ILIKE '%' || x || '%' ESCAPE '\'` with `\`, `%` and
//! `_` of `x` escaped, so they match themselves; a NULL project never matches. As
//! memo-search's `file`, the value is trimmed and an empty one filters nothing.
//!
//! The search index answers it from its project column (format version 3,
//! [`Project::mask`]); DuckDB answers it with [`Project::SQL`]. The embeddings hold
//! no project: [`Scope`] lists the conversations (and, where a conversation's messages
//! differ, the messages) that match, for the semantic leg's row mask.

use std::collections::{HashMap, HashSet};

use super::index::segment::{Segment, NO_PROJECT};
use super::index::Index;
use crate::search::scan::{self, Corrupt};

/// A `project` filter: the fragment, folded as the search index folds text (DuckDB's
/// `lower()`, [`scan::fold`]).
#[derive(Debug, Clone)]
pub struct Project {
    fragment: String,
    folded: Vec<u8>,
}

impl Project {
    /// The condition on `all_conversations` with one parameter, [`Project::sql_param`].
    pub const SQL: &'static str = "project ILIKE ? ESCAPE '\\'";

    /// The filter of argument value `raw`: trimmed; `None` when absent or empty.
    pub fn from_arg(raw: Option<&str>) -> Option<Self> {
        let fragment = raw.map(str::trim).filter(|s| !s.is_empty())?;
        let mut folded = Vec::with_capacity(fragment.len());
        scan::fold(fragment, &mut folded);
        Some(Self {
            fragment: fragment.to_owned(),
            folded,
        })
    }

    /// The fragment as given (trimmed).
    pub fn fragment(&self) -> &str {
        &self.fragment
    }

    /// The `ILIKE` pattern of [`Project::SQL`]: `%` + the fragment with `\`, `%` and
    /// `_` escaped by `\` + `%`.
    pub fn sql_param(&self) -> String {
        let mut p = String::with_capacity(self.fragment.len() + 8);
        p.push('%');
        for c in self.fragment.chars() {
            if matches!(c, '\\' | '%' | '_') {
                p.push('\\');
            }
            p.push(c);
        }
        p.push('%');
        p
    }

    /// Whether a stored project (`None`: NULL) contains the fragment, ignoring case.
    pub fn matches(&self, project: Option<&str>) -> bool {
        let Some(p) = project else { return false };
        let mut f = Vec::with_capacity(p.len());
        scan::fold(p, &mut f);
        memchr::memmem::find(&f, &self.folded).is_some()
    }

    /// Which entries of `seg`'s project dictionary match; `None` when the segment has
    /// no project column (format before version 3).
    ///
    /// # Errors
    /// [`Corrupt`] when the dictionary is damaged.
    pub fn mask(&self, seg: &Segment) -> Result<Option<RowMask>, Corrupt> {
        if !seg.has_projects() {
            return Ok(None);
        }
        let keep = (0..seg.project_count())
            .map(|i| seg.project_name(i).map(|p| self.matches(Some(p))))
            .collect::<Result<Vec<bool>, Corrupt>>()?;
        Ok(Some(RowMask { keep }))
    }
}

/// The project dictionary entries of one segment a [`Project`] keeps.
#[derive(Debug, Clone)]
pub struct RowMask {
    keep: Vec<bool>,
}

impl RowMask {
    /// Whether a row with project index `id` ([`Segment::project_ids`]) is kept.
    pub fn keeps(&self, id: Option<&u32>) -> bool {
        match id {
            None | Some(&NO_PROJECT) => false,
            Some(&p) => self.keep.get(p as usize).copied().unwrap_or(false),
        }
    }
}

/// The messages a [`Project`] keeps, by conversation: for the semantic leg, whose
/// windows carry no project.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// (source, conversation id) → `None` when every message matches, else the ids of
    /// those that do. Conversations with no matching message are absent.
    convs: HashMap<(String, String), Option<HashSet<String>>>,
}

impl Scope {
    /// Whether some message of the conversation matches.
    pub fn keeps_conversation(&self, source: &str, conversation_id: &str) -> bool {
        self.convs
            .contains_key(&(source.to_owned(), conversation_id.to_owned()))
    }

    /// The matching messages of a conversation: `None` when none; `Some(None)` when
    /// all of them.
    pub fn messages(
        &self,
        source: &str,
        conversation_id: &str,
    ) -> Option<Option<&HashSet<String>>> {
        self.convs
            .get(&(source.to_owned(), conversation_id.to_owned()))
            .map(Option::as_ref)
    }

    /// Whether the message matches.
    pub fn keeps(&self, source: &str, conversation_id: &str, message_id: &str) -> bool {
        match self.messages(source, conversation_id) {
            None => false,
            Some(None) => true,
            Some(Some(ids)) => ids.contains(message_id),
        }
    }

    /// Conversations with some matching message.
    pub fn len(&self) -> usize {
        self.convs.len()
    }

    /// True when no message matches.
    pub fn is_empty(&self) -> bool {
        self.convs.is_empty()
    }

    /// The scope from the search index's live rows; `None` when a segment has no
    /// project column.
    ///
    /// # Errors
    /// [`Corrupt`] when a segment is damaged.
    pub fn from_index(index: &Index, project: &Project) -> Result<Option<Self>, Corrupt> {
        let mut convs = HashMap::new();
        for live in index.segments() {
            let seg = &live.seg;
            let Some(mask) = project.mask(seg)? else {
                return Ok(None);
            };
            let (ids, sources, conv_ids) =
                (seg.project_ids(), seg.source_ids(), seg.conversation_ids());
            let key = |row: usize| -> Result<(u16, u32), Corrupt> {
                Ok((
                    *sources.get(row).ok_or(Corrupt)?,
                    *conv_ids.get(row).ok_or(Corrupt)?,
                ))
            };
            // Per (source, conversation) number: (first live row, live rows, matching rows).
            let mut counts: HashMap<(u16, u32), (usize, usize, usize)> = HashMap::new();
            for row in 0..seg.len() {
                if live.is_dead(row) {
                    continue;
                }
                let e = counts.entry(key(row)?).or_insert((row, 0, 0));
                e.1 += 1;
                if mask.keeps(ids.get(row)) {
                    e.2 += 1;
                }
            }
            let mut mixed: HashMap<(u16, u32), HashSet<String>> = HashMap::new();
            for row in 0..seg.len() {
                if live.is_dead(row) || !mask.keeps(ids.get(row)) {
                    continue;
                }
                let k = key(row)?;
                if counts.get(&k).is_some_and(|&(_, all, hit)| hit < all) {
                    mixed
                        .entry(k)
                        .or_default()
                        .insert(seg.message_id(row)?.to_owned());
                }
            }
            for (k, (row, _, hit)) in counts {
                if hit == 0 {
                    continue;
                }
                let names = (
                    seg.source(row)?.to_owned(),
                    seg.conversation_id(row)?.to_owned(),
                );
                convs.insert(names, mixed.remove(&k));
            }
        }
        Ok(Some(Self { convs }))
    }

    /// The scope from DuckDB (when the search index is unavailable or predates the
    /// project column).
    ///
    /// # Errors
    /// The DuckDB error.
    pub fn from_duckdb(
        conn: &duckdb::Connection,
        project: &Project,
    ) -> Result<Self, duckdb::Error> {
        let sql = format!(
            "SELECT source, conversation_id, bool_and(m), list(message_id) FILTER (WHERE m) \
             FROM (SELECT source, conversation_id, message_id, coalesce({}, false) AS m \
             FROM all_conversations) GROUP BY source, conversation_id HAVING bool_or(m)",
            Project::SQL
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([project.sql_param()])?;
        let mut convs = HashMap::new();
        while let Some(r) = rows.next()? {
            let all: bool = r.get(2)?;
            let ids = if all {
                None
            } else {
                let list: duckdb::types::Value = r.get(3)?;
                let mut set = HashSet::new();
                if let duckdb::types::Value::List(items) = list {
                    for v in items {
                        if let duckdb::types::Value::Text(t) = v {
                            set.insert(t);
                        }
                    }
                }
                Some(set)
            };
            convs.insert((r.get(0)?, r.get(1)?), ids);
        }
        Ok(Self { convs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fragment_is_trimmed_folded_and_literal() {
        assert!(Project::from_arg(None).is_none());
        assert!(Project::from_arg(Some("  ")).is_none());
        let p = Project::from_arg(Some(" Ferris ")).unwrap();
        assert_eq!(p.fragment(), "Ferris");
        assert!(p.matches(Some("/home/dev/FERRIS/src")));
        assert!(!p.matches(Some("/home/dev/notes")));
        assert!(!p.matches(None));
        let w = Project::from_arg(Some("a_b%c\\")).unwrap();
        assert_eq!(w.sql_param(), "%a\\_b\\%c\\\\%");
        assert!(w.matches(Some("/x/A_B%C\\/y")));
        assert!(!w.matches(Some("/x/aXbYYc\\")));
    }
}
