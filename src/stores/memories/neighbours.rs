//! Each memory's neighbours in its sequence (one conversation or one imported file),
//! which hybrid's context-aware keyword leg scores together.

use std::collections::HashMap;

use super::schema::parse_time;

/// The memories around each memory in its sequence: the memories linked to the same
/// conversation (`memory_links` rel `conversation`), else imported from the same file
/// (the `origin` path, a JSON Lines memory's `#L<n>` left out), ordered by `created`
/// then rowid (file order). Two memories more than [`SESSION_GAP_SECS`] apart are not
/// neighbours (a session boundary: on LoCoMo, a memory per session scored with the
/// sessions before and after it ranked lower, docs/performance.md). Memories in no
/// sequence have no neighbours.
#[derive(Debug, Default)]
pub struct Neighbours {
    /// Per row: the previous and the next row of its sequence ([`NONE`](Self::NONE) when
    /// none).
    links: Vec<[u32; 2]>,
}

/// Largest time between two memories of one sequence that are still neighbours
/// ([`Neighbours`]): six hours.
pub const SESSION_GAP_SECS: i64 = 6 * 3600;

impl Neighbours {
    /// No neighbour.
    pub const NONE: u32 = u32::MAX;

    pub(super) fn build(sequence: &[(Option<Box<str>>, Box<str>)]) -> Self {
        let mut groups: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, (seq, _)) in sequence.iter().enumerate() {
            if let Some(seq) = seq {
                groups
                    .entry(seq)
                    .or_default()
                    .push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        let mut links = vec![[Self::NONE; 2]; sequence.len()];
        for rows in groups.values_mut() {
            // Rows are in rowid order already; a stable sort by `created` keeps it on ties.
            rows.sort_by(|&a, &b| sequence[a as usize].1.cmp(&sequence[b as usize].1));
            let at = |r: u32| parse_time(&sequence[r as usize].1).timestamp();
            for w in rows.windows(2) {
                if (at(w[1]) - at(w[0])).abs() <= SESSION_GAP_SECS {
                    links[w[0] as usize][1] = w[1];
                    links[w[1] as usize][0] = w[0];
                }
            }
        }
        Self { links }
    }

    /// Pushes onto `out` up to `window` rows on each side of `row` in its sequence,
    /// nearest first, skipping none.
    pub fn around(&self, row: usize, window: usize, out: &mut Vec<usize>) {
        for side in 0..2 {
            let mut at = row;
            for _ in 0..window {
                match self.links.get(at).map(|l| l[side]) {
                    Some(n) if n != Self::NONE => {
                        at = n as usize;
                        out.push(at);
                    }
                    _ => break,
                }
            }
        }
    }
}
