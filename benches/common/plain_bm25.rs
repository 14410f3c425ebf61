//! The LoCoMo README's baseline: a plain BM25 a user could write in an afternoon, for
//! the quality harnesses (`benches/quality.rs`, `benches/locomo_rerank.rs`).
#![allow(clippy::cast_precision_loss)]

use std::collections::HashMap;

/// Plain BM25 (k1 1.2, b 0.75; idf `ln(1 + (N − n + 0.5)/(n + 0.5))`) over lowercase
/// word tokens (maximal runs of alphanumeric characters), the baseline a user could
/// write in an afternoon.
pub struct PlainBm25<'a> {
    ids: Vec<&'a str>,
    /// Term frequencies per document.
    tf: Vec<HashMap<String, u32>>,
    len: Vec<f64>,
    df: HashMap<String, u32>,
    avgdl: f64,
}

/// Lowercase word tokens: maximal runs of alphanumeric characters.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl<'a> PlainBm25<'a> {
    /// The index of `docs` (`(id, text)`).
    pub fn new(docs: &'a [(String, String)]) -> Self {
        let mut tf = Vec::new();
        let mut len = Vec::new();
        let mut df: HashMap<String, u32> = HashMap::new();
        for (_, text) in docs {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let w = words(text);
            len.push(w.len() as f64);
            for t in w {
                *counts.entry(t).or_default() += 1;
            }
            for t in counts.keys() {
                *df.entry(t.clone()).or_default() += 1;
            }
            tf.push(counts);
        }
        let avgdl = len.iter().sum::<f64>() / len.len().max(1) as f64;
        Self {
            ids: docs.iter().map(|(id, _)| id.as_str()).collect(),
            tf,
            len,
            df,
            avgdl,
        }
    }

    /// The ids of the `k` best documents for `query`, best first (ties by document
    /// order); documents holding no query word are left out.
    pub fn rank(&self, query: &str, k: usize) -> Vec<String> {
        let (k1, b) = (1.2, 0.75);
        let n = self.ids.len() as f64;
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        let mut scored: Vec<(f64, usize)> = (0..self.ids.len())
            .filter_map(|d| {
                let mut s = 0.0;
                for t in &terms {
                    let Some(&f) = self.tf[d].get(t) else {
                        continue;
                    };
                    let nt = f64::from(self.df[t]);
                    let idf = (1.0 + (n - nt + 0.5) / (nt + 0.5)).ln();
                    let f = f64::from(f);
                    s += idf * f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * self.len[d] / self.avgdl));
                }
                (s > 0.0).then_some((s, d))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(k)
            .map(|(_, d)| self.ids[d].to_owned())
            .collect()
    }
}
