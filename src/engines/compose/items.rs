//! The fused items: one per source row, merged by `key` and by `covers`/`group`
//! ([`dedup`]), and each written as one pack entry ([`entry`]).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// One fused item while it is being built.
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub(super) fields: Map<String, Value>,
    pub(super) source: String,
    /// Index of the source and rank within it of the row it came from.
    pub(super) order: (usize, usize),
    pub(super) score: f64,
    pub(super) sources: Vec<String>,
    pub(super) also: Vec<String>,
    /// Per source row merged into this item: its source, rank, weight, RRF share and
    /// the row's own `explain` when the source gave one (shown with `explain: true`).
    pub(super) why: Vec<Value>,
}

impl Item {
    pub(super) fn text(&self, key: &str) -> &str {
        self.fields.get(key).and_then(Value::as_str).unwrap_or("")
    }

    fn absorb(&mut self, other: Item) {
        self.score += other.score;
        let cite = other.text("citation").to_owned();
        self.why.extend(other.why);
        for s in other.sources {
            if !self.sources.contains(&s) {
                self.sources.push(s);
            }
        }
        if !cite.is_empty() && cite != self.text("citation") && !self.also.contains(&cite) {
            self.also.push(cite);
        }
        for a in other.also {
            if !self.also.contains(&a) {
                self.also.push(a);
            }
        }
    }
}

/// Days from `date` (RFC 3339 or `YYYY-MM-DD`) to `now`, rounded down; `None` when it
/// does not parse.
pub(super) fn age_days(date: &str, now: chrono::DateTime<chrono::Utc>) -> Option<i64> {
    let t = chrono::DateTime::parse_from_rfc3339(date)
        .map(|t| t.with_timezone(&chrono::Utc))
        .ok()
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(date.get(..10)?, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|d| d.and_utc())
        })?;
    Some((now - t).num_days())
}

pub(super) fn entry(item: &Item, age: Option<i64>, text: &str) -> String {
    let mut meta = Vec::new();
    if let Some(age) = age {
        meta.push(match age {
            0 => "today".to_owned(),
            1 => "1 day old".to_owned(),
            n if n < 0 => "dated in the future".to_owned(),
            n => format!("{n} days old"),
        });
    }
    let note = item.text("note").trim();
    if !note.is_empty() {
        meta.push(note.to_owned());
    }
    let mut line = format!("- {}", item.text("citation"));
    let title = item.text("title").trim();
    if !title.is_empty() {
        line.push_str(&format!(" **{}**", title.replace('\n', " ")));
    }
    if !meta.is_empty() {
        line.push_str(&format!(" ({})", meta.join("; ")));
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if !text.is_empty() {
        line.push_str(" — ");
        line.push_str(&text);
    }
    if !item.also.is_empty() {
        line.push_str(&format!(" (also {})", item.also.join(", ")));
    }
    line
}

/// Merges items with the same non-empty `key`, then lets each item with a `covers`
/// absorb the items whose `group` equals it. Keeps first-seen order.
pub(super) fn dedup(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    for item in items {
        let key = item.text("key").trim().to_owned();
        if !key.is_empty() {
            if let Some(&i) = by_key.get(&key) {
                // The better-placed item stands for both.
                if item.score > out[i].score {
                    let old = std::mem::replace(&mut out[i], item);
                    out[i].absorb(old);
                } else {
                    out[i].absorb(item);
                }
                continue;
            }
            by_key.insert(key, out.len());
        }
        out.push(item);
    }
    let covers: Vec<(usize, String)> = out
        .iter()
        .enumerate()
        .map(|(i, it)| (i, it.text("covers").trim().to_owned()))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    let mut gone = vec![false; out.len()];
    for (i, group) in covers {
        if gone[i] {
            continue;
        }
        for j in 0..out.len() {
            if j != i
                && !gone[j]
                && out[j].text("group").trim() == group
                && out[j].text("covers").is_empty()
            {
                gone[j] = true;
                let absorbed = out[j].clone();
                out[i].absorb(absorbed);
            }
        }
    }
    out.into_iter()
        .zip(gone)
        .filter(|(_, g)| !g)
        .map(|(it, _)| it)
        .collect()
}

/// Near-duplicate texts of different sources merged into one item (`engine-options`
/// `near_duplicates`).
#[derive(Debug, Clone, Copy)]
pub(super) struct NearDuplicates {
    /// Smallest share of the shorter text's distinct words found in the longer one, in
    /// (0, 1].
    pub(super) overlap: f64,
    /// Fewest distinct words the shorter text must hold (shorter texts never merge).
    pub(super) min_words: usize,
}

/// The distinct words of `text`: lowercase runs of letters and digits.
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl NearDuplicates {
    /// Whether texts with word sets `a` and `b` are near duplicates.
    fn same(&self, a: &HashSet<String>, b: &HashSet<String>) -> bool {
        let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        if short.len() < self.min_words {
            return false;
        }
        let shared = short.iter().filter(|w| long.contains(*w)).count();
        #[allow(clippy::cast_precision_loss)] // word counts are small
        let share = shared as f64 / short.len() as f64;
        share >= self.overlap
    }

    /// `ranked` (best first) with each item absorbing the later items of other sources
    /// whose text is a near duplicate of its own; order of the kept items unchanged.
    ///
    /// An item with a note (a superseded memory: "superseded by …") neither absorbs nor
    /// is absorbed: merged into a message with its text, its lowered score would be
    /// added to the message's and its warning lost, lifting stale text above the memory
    /// that replaced it.
    pub(super) fn merge(&self, ranked: Vec<Item>) -> Vec<Item> {
        let noted = |it: &Item| !it.text("note").is_empty();
        let mut kept: Vec<(Item, HashSet<String>)> = Vec::with_capacity(ranked.len());
        for item in ranked {
            let w = words(item.text("text"));
            let into = if noted(&item) {
                None
            } else {
                kept.iter().position(|(k, kw)| {
                    !noted(k)
                        && !k.sources.iter().any(|s| item.sources.contains(s))
                        && self.same(kw, &w)
                })
            };
            match into {
                Some(i) => kept[i].0.absorb(item),
                None => kept.push((item, w)),
            }
        }
        kept.into_iter().map(|(item, _)| item).collect()
    }
}
