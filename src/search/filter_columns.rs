//! The row metadata the search filters read, laid out so one filter over every row
//! costs a lookup, a binary search or one substring scan instead of a pass chasing
//! each row's strings: type ids, the rows in `updated` order, and every row's
//! lowercased paths in one buffer.
//!
//! Size at 100k memories: 4 bytes per row for types, 4 for the `updated` order, 4 for
//! path offsets, plus the paths' text (~4 MB).

/// Per-row metadata used by search filters and tie-breaks.
#[derive(Debug, Clone)]
pub struct RowMeta {
    /// The row's id in its store (in the memories store, the `memories` rowid).
    pub rowid: i64,
    /// Stable id.
    pub id: String,
    /// Type, as stored.
    pub kind: String,
    /// `updated`, as stored text.
    pub updated: String,
    /// Paths of `files_read` then `files_modified`, ASCII-lowercased (as SQLite's
    /// `lower()` folds them).
    pub files: Vec<String>,
}

/// Byte ending each path in [`FilterColumns::paths`]; a needle holding it is searched
/// row by row instead (a match could otherwise span two paths).
const PATH_END: u8 = 0;

/// See the module docs. Rows are indexes into the metadata it was built from.
#[derive(Debug, PartialEq)]
pub struct FilterColumns {
    /// Distinct types, in order of first appearance.
    kinds: Vec<String>,
    /// Per row: its type's index in `kinds`.
    kind_of: Vec<u32>,
    /// Rows ordered by `updated` (bytewise, as SQLite compares the stored text), ties
    /// by row.
    by_updated: Vec<u32>,
    /// Every row's paths, each followed by [`PATH_END`], row after row.
    paths: Vec<u8>,
    /// Per row: where its paths start in `paths`, plus the end.
    path_starts: Vec<u32>,
}

impl FilterColumns {
    /// Builds the columns of `rows`.
    pub fn new(rows: &[RowMeta]) -> Self {
        let mut kinds: Vec<String> = Vec::new();
        let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        let kind_of = rows
            .iter()
            .map(|m| {
                *ids.entry(m.kind.as_str()).or_insert_with(|| {
                    kinds.push(m.kind.clone());
                    u32::try_from(kinds.len() - 1).unwrap_or(u32::MAX)
                })
            })
            .collect();
        let mut by_updated: Vec<u32> = (0..rows.len())
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect();
        by_updated.sort_by(|&a, &b| rows[a as usize].updated.cmp(&rows[b as usize].updated));
        let mut paths = Vec::new();
        let mut path_starts = Vec::with_capacity(rows.len() + 1);
        for m in rows {
            path_starts.push(u32::try_from(paths.len()).unwrap_or(u32::MAX));
            for p in &m.files {
                paths.extend_from_slice(p.as_bytes());
                paths.push(PATH_END);
            }
        }
        path_starts.push(u32::try_from(paths.len()).unwrap_or(u32::MAX));
        Self {
            kinds,
            kind_of,
            by_updated,
            paths,
            path_starts,
        }
    }

    /// Adds row `i` of `rows` (the rows this was built over, with `i` appended since):
    /// the same columns [`FilterColumns::new`] builds from all of `rows`.
    pub fn push(&mut self, rows: &[RowMeta], i: usize) {
        let m = &rows[i];
        let kind = match self.kinds.iter().position(|k| *k == m.kind) {
            Some(k) => k,
            None => {
                self.kinds.push(m.kind.clone());
                self.kinds.len() - 1
            }
        };
        self.kind_of.push(u32::try_from(kind).unwrap_or(u32::MAX));
        let row = u32::try_from(i).unwrap_or(u32::MAX);
        // After every row of equal `updated`, as the stable sort in `new` places it.
        let at = self
            .by_updated
            .partition_point(|&r| rows[r as usize].updated <= m.updated);
        self.by_updated.insert(at, row);
        self.path_starts.pop();
        self.path_starts
            .push(u32::try_from(self.paths.len()).unwrap_or(u32::MAX));
        for p in &m.files {
            self.paths.extend_from_slice(p.as_bytes());
            self.paths.push(PATH_END);
        }
        self.path_starts
            .push(u32::try_from(self.paths.len()).unwrap_or(u32::MAX));
    }

    /// Calls `f(row)` for each row whose type is exactly `kind`.
    pub fn rows_of_kind(&self, kind: &str, mut f: impl FnMut(usize)) {
        let Some(id) = self.kinds.iter().position(|k| k == kind) else {
            return;
        };
        let id = u32::try_from(id).unwrap_or(u32::MAX);
        for (row, &k) in self.kind_of.iter().enumerate() {
            if k == id {
                f(row);
            }
        }
    }

    /// The rows whose `updated` text `u` satisfies `from ≤ u ≤ to` (bytewise; a
    /// missing bound does not limit), as one slice of the `updated` order. `rows` is
    /// the metadata these columns were built from.
    pub fn rows_updated_within(
        &self,
        rows: &[RowMeta],
        from: Option<&str>,
        to: Option<&str>,
    ) -> &[u32] {
        let updated = |r: &u32| rows[*r as usize].updated.as_str();
        let lo = from.map_or(0, |f| self.by_updated.partition_point(|r| updated(r) < f));
        let hi = to.map_or(self.by_updated.len(), |t| {
            self.by_updated.partition_point(|r| updated(r) <= t)
        });
        self.by_updated.get(lo..hi.max(lo)).unwrap_or(&[])
    }

    /// Calls `f(row)` (possibly more than once per row) for each row with a path
    /// containing `needle`. False, without calling `f`, when `needle` is empty or
    /// holds the path separator: the caller must then test rows one by one.
    pub fn rows_with_path_containing(&self, needle: &[u8], mut f: impl FnMut(usize)) -> bool {
        if needle.is_empty() || needle.contains(&PATH_END) {
            return false;
        }
        for at in memchr::memmem::find_iter(&self.paths, needle) {
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            // The last row starting at or before the match holds it.
            let row = self.path_starts.partition_point(|&s| s <= at) - 1;
            f(row);
        }
        true
    }
}
