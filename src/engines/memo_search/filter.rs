//! The request's filters (`type`, date bounds, `file`, superseded memories) over the
//! store's in-memory row metadata: one row at a time ([`Filter::keep`]) or as a mask
//! computed once per search from the filter columns ([`Filter::mask`]). Every leg
//! applies them before its cut, so filters never starve a result.

use std::cell::OnceCell;

use super::Request;
use crate::cancel::Cancel;
use crate::search::filter_columns::RowMeta;
use crate::stores::memories::SearchIndex;

/// The request's filters, applied to each row's in-memory metadata exactly as the SQL
/// they replace did: `type =`, `updated` between the bounds (text order), and `file` as
/// a substring of an ASCII-lowercased read or modified path.
pub(super) struct Filter {
    kind: Option<String>,
    from: Option<String>,
    to: Option<String>,
    file: Option<memchr::memmem::Finder<'static>>,
    /// Keep only these rowids ([`Request::rows`]).
    rows: Option<std::sync::Arc<std::collections::HashSet<i64>>>,
    /// Leave out rows another memory supersedes.
    hide_superseded: bool,
    /// [`Filter::keep`] of every row, computed on the first [`Filter::mask`] call.
    mask: OnceCell<Vec<bool>>,
    /// The search's [`Request::stop`]: the legs check it (it never changes what
    /// [`Filter::keep`] or [`Filter::mask`] say).
    pub(super) stop: Cancel,
}

impl Filter {
    pub(super) fn new(req: &Request) -> Self {
        Self {
            kind: req.kind.clone(),
            from: req.from.clone(),
            to: req.to.clone(),
            file: req
                .file
                .as_ref()
                .map(|f| memchr::memmem::Finder::new(f.as_bytes()).into_owned()),
            rows: req.rows.clone(),
            hide_superseded: !req.include_superseded,
            mask: OnceCell::new(),
            stop: req.stop.clone(),
        }
    }

    /// True when the filter keeps every row ([`Filter::keep`] is always true).
    pub(super) fn is_empty(&self) -> bool {
        self.kind.is_none()
            && self.from.is_none()
            && self.to.is_none()
            && self.file.is_none()
            && self.rows.is_none()
    }

    pub(super) fn keep(&self, m: &RowMeta) -> bool {
        self.kind.as_ref().is_none_or(|k| m.kind == *k)
            && self.from.as_ref().is_none_or(|f| m.updated >= *f)
            && self.to.as_ref().is_none_or(|t| m.updated <= *t)
            && self
                .file
                .as_ref()
                .is_none_or(|f| m.files.iter().any(|p| f.find(p.as_bytes()).is_some()))
            && self.rows.as_ref().is_none_or(|r| r.contains(&m.rowid))
    }

    /// True when row `i` of `index` is left out because another memory supersedes it
    /// (unless `include_superseded`).
    pub(super) fn hidden(&self, index: &SearchIndex, i: usize) -> bool {
        self.hide_superseded && index.is_superseded(i)
    }

    /// Whether each row of `index` passes, for callers that test most rows (computed
    /// once per search from the index's filter columns); `None` when there is no
    /// filter. Equal, row for row, to [`Filter::keep`] and not [`Filter::hidden`].
    pub(super) fn mask(&self, index: &SearchIndex) -> Option<&[bool]> {
        let hide = self.hide_superseded && index.superseded_rows() > 0;
        if self.is_empty() && !hide {
            return None;
        }
        Some(self.mask.get_or_init(|| {
            let mut mask = if self.is_empty() {
                vec![true; index.rows().len()]
            } else {
                self.compute_mask(index)
            };
            if hide {
                for (i, keep) in mask.iter_mut().enumerate() {
                    if index.is_superseded(i) {
                        *keep = false;
                    }
                }
            }
            mask
        }))
    }

    fn compute_mask(&self, index: &SearchIndex) -> Vec<bool> {
        let columns = index.filter_columns();
        let n = index.rows().len();
        // Each filter marks the rows it keeps; a row passes when every filter set
        // marked it.
        let mut votes = vec![0u8; n];
        let mut filters = 0u8;
        if let Some(kind) = &self.kind {
            filters += 1;
            columns.rows_of_kind(kind, |row| votes[row] += 1);
        }
        if self.from.is_some() || self.to.is_some() {
            filters += 1;
            let range =
                columns.rows_updated_within(index.rows(), self.from.as_deref(), self.to.as_deref());
            for &row in range {
                votes[row as usize] += 1;
            }
        }
        if let Some(file) = &self.file {
            filters += 1;
            let mut has = vec![false; n];
            let meta = index.rows();
            if !columns.rows_with_path_containing(file.needle(), |row| has[row] = true) {
                for (h, m) in has.iter_mut().zip(meta) {
                    *h = m.files.iter().any(|p| file.find(p.as_bytes()).is_some());
                }
            }
            for (v, h) in votes.iter_mut().zip(has) {
                *v += u8::from(h);
            }
        }
        if let Some(rows) = &self.rows {
            filters += 1;
            for (v, m) in votes.iter_mut().zip(index.rows()) {
                *v += u8::from(rows.contains(&m.rowid));
            }
        }
        votes.into_iter().map(|v| v == filters).collect()
    }
}
