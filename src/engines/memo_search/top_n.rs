//! A bounded top-n over a stream, shared by the FTS5 legs and the vec leg.

use std::cmp::Ordering;

/// The `n` smallest items of a stream under `cmp`, a total order. Holds at most `2n`:
/// when full it is cut back to the `n` smallest, and from then on an item not below
/// the n-th smallest kept is dropped at once (one comparison, usually decided by the
/// score alone), so a stream of 100k hits costs little more than reading it.
pub(super) struct TopN<T, F> {
    n: usize,
    kept: Vec<T>,
    cmp: F,
    /// Index in `kept` of the n-th smallest after the last cut.
    cut: Option<usize>,
}

impl<T, F: Fn(&T, &T) -> Ordering> TopN<T, F> {
    pub(super) fn new(n: usize, cmp: F) -> Self {
        Self {
            n,
            kept: Vec::new(),
            cmp,
            cut: None,
        }
    }

    pub(super) fn push(&mut self, item: T) {
        if self.n == 0 {
            return;
        }
        if let Some(c) = self.cut {
            if (self.cmp)(&item, &self.kept[c]) != Ordering::Less {
                return;
            }
        }
        self.kept.push(item);
        if self.kept.len() >= self.n.saturating_mul(2) {
            self.kept.select_nth_unstable_by(self.n - 1, &self.cmp);
            self.kept.truncate(self.n);
            // After the cut, slot n − 1 holds the n-th smallest.
            self.cut = Some(self.n - 1);
        }
    }

    /// The `n` smallest, sorted.
    pub(super) fn into_sorted(mut self) -> Vec<T> {
        if self.kept.len() > self.n && self.n > 0 {
            self.kept.select_nth_unstable_by(self.n - 1, &self.cmp);
        }
        self.kept.truncate(self.n);
        self.kept.sort_by(&self.cmp);
        self.kept
    }
}
