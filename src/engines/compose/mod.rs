//! Engine `compose`: a skill written as a declarative composition of other skills —
//! what `sql` is for one query, `compose` is for an L2 skill over L1 skills.
//!
//! A document's `engine-options` (validated when it binds):
//!
//! ```yaml
//! engine-options:
//!   sources:                          # skills to call, in order
//!     - skill: memo-search            # a loaded skill (not this one; no cycles)
//!       label: memory                 # name in results (default: the skill name)
//!       args:                         # the call's arguments (see "Templates")
//!         query: "{{ question }}"
//!         limit: "{{ per_source }}"
//!       rows: /hits                   # JSON pointer to its row array (default /rows)
//!       weight: 1.0                   # RRF weight (default 1), or a template per row:
//!                                     # "{{ 0.25 if row.superseded_by else 1 }}"
//!       item:                         # one result item per row (see "Items")
//!         id: "{{ row.id }}"
//!         title: "{{ row.title }}"
//!         text: "{{ row.body }}"
//!         date: "{{ row.updated }}"
//!         citation: "[memory {{ row.id }} · {{ row.updated[:10] }}]"
//!         key: "memory:{{ row.id }}"
//!   fuse: {method: rrf, k: 60}        # reciprocal-rank fusion (the only method)
//!   budget: {arg: max_tokens, default: 2000}
//!   archive-only: [machine, user]   # arguments only the team archive answers: refused
//!                                     # on the local stores (as engine `sql`'s)
//! ```
//!
//! **Templates.** Every string in a source's `args` and `item` is a minijinja template
//! over the composed skill's validated arguments (by name, and as `args`); item
//! templates also see `row` (one row of the source's output) and `source` (its
//! label). A string that is one `{{ expression }}` and nothing else keeps the
//! expression's type (`limit: "{{ per_source }}"` passes a number); an argument whose
//! value comes out `null` or undefined is left out, so optional arguments pass
//! through. Other values are passed as written.
//!
//! **Items.** `citation` (required) and `text` (required) plus optional `id`, `title`,
//! `date` (RFC 3339 or `YYYY-MM-DD`; gives `age_days` against the clock), `key`,
//! `group`, `covers` and `note`. Items with the same non-empty `key` are one item
//! (their fused scores add up; the other citations are kept in `also`); an item whose
//! `covers` equals other items' `group` absorbs them the same way (a memory saved from a
//! conversation covers that conversation's transcript rows). An empty `note` is none.
//!
//! **Near duplicates** (optional, `near_duplicates: {overlap: 0.8, min_words: 4}`): after
//! those merges, an item absorbs each lower-ranked item of *other* sources whose text is
//! nearly its own — the words (lowercase runs of letters and digits) of the shorter text
//! are at least `overlap` of them in the longer one, and the shorter holds at least
//! `min_words` distinct words — as it absorbs an item with its key: the scores add up,
//! the absorbed citation is kept in `also`. A memory copied from a message and that
//! message are then one item, not two of the few a client reads. Rows of one source are
//! never merged with each other (the source already told them apart).
//!
//! **Fusion and budget.** Each item scores Σ weight / (k + rank) over the sources that
//! returned it (rank 1-based within its source; a `weight` template sees `row` and
//! `source` like the item templates and must give a number ≥ 0). Items are ranked by
//! score (ties: the earlier source, then its rank) and written as pack entries — `- <citation>
//! **<title>** (<age>; <note>) — <text>` — while the pack fits the budget, read from
//! argument `budget.arg` (default `budget.default`). Tokens are counted as
//! ceil(characters / 4) of the pack text (entries joined by newlines); the entry that
//! does not fit is cut (text shortened, `…` appended) when at least 16 tokens remain,
//! and the rest are dropped (counted in `dropped`).
//!
//! **Failures.** Sources are called through the host's one call path (their argument
//! validation, declared effects and redaction apply). A source whose store does not
//! exist yet, that says a capability is unavailable (no embeddings), or that refuses
//! the arguments the composition gives it (the caller's question too long for a
//! keyword source's `term`), is skipped and named in `notes`; any other failure fails
//! the call, naming the source.
//!
//! Engines know nothing of the host: calls go through [`Skills`], which
//! [`crate::host::Host`] provides; the host refuses, when it loads, a composition
//! naming an unknown skill, itself or a cycle, and one whose sources read stores its
//! `reads` does not declare.
//!
//! One concern per file: `bind` checks the options, `template` the templates, `items`
//! merges and writes the fused items; this file runs the sources and packs the result.

mod bind;
mod items;
mod template;

use serde_json::{json, Map, Value};

use super::{Context, Engine, EngineError, SkillCallError, Skills};
use items::{age_days, dedup, entry, Item};
pub use template::Template;

/// Instructions one template evaluation may run (minijinja fuel).
pub const TEMPLATE_FUEL: u64 = 1_000_000;

/// Smallest remainder of the budget (tokens) for which the last entry is cut to fit
/// rather than dropped.
pub const MIN_CUT_TOKENS: usize = 16;

/// Tokens of `text` under the documented rule: ceil(characters / 4).
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The unbound engine: [`Engine::bind`] reads a document's `engine-options`.
pub struct Compose;

/// One source of a bound composition.
#[derive(Debug)]
struct Source {
    skill: String,
    label: String,
    args: Template,
    rows: String,
    weight: Weight,
    item: Template,
}

/// A source's RRF weight: one number, or a template evaluated per row (with `row`, as
/// the item templates), so one call can weigh its rows differently.
#[derive(Debug)]
enum Weight {
    Fixed(f64),
    PerRow(Template),
}

/// A weight as the document or a per-row template gave it: a finite number ≥ 0 (a
/// rendered template may give it as text).
fn weight_value(v: &Value) -> Option<f64> {
    let w = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    (w.is_finite() && w >= 0.0).then_some(w)
}

/// A composition bound to one document.
#[derive(Debug)]
struct Composed {
    sources: Vec<Source>,
    k: f64,
    near_duplicates: Option<items::NearDuplicates>,
    budget_arg: String,
    budget_default: usize,
    /// Arguments refused on the local stores (`archive-only`).
    archive_only: Vec<String>,
}

impl Engine for Composed {
    fn name(&self) -> &'static str {
        "compose"
    }

    fn calls(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.skill.clone()).collect()
    }

    fn call(&self, _args: &Value, _ctx: &Context) -> Result<Value, EngineError> {
        Err(EngineError::Unavailable(
            "a composed skill runs only through the host (`Host::call`)".into(),
        ))
    }

    /// Output shape: `{"pack": markdown, "tokens": int, "max_tokens": int, "count":
    /// int, "dropped": int, "items": [{"rank", "source", "sources": [label], "citation",
    /// "text", "score", "tokens", "id"?, "title"?, "date"?, "age_days"?, "note"?,
    /// "also"?: [citation], "cut"?: true}], "notes": [str]}`.
    fn call_in(
        &self,
        args: &Value,
        ctx: &Context,
        skills: &dyn Skills,
    ) -> Result<Value, EngineError> {
        // On the team archive too: each source is called through the host with the
        // same context, so it answers from the archive or is skipped with its reason
        // (never a local answer in its place).
        // The document's `archive-only` arguments (recall's `machine` and `user`,
        // passed to its sources) are refused on the local stores, naming the filter,
        // never ignored.
        for name in &self.archive_only {
            ctx.archive_only_argument(name, args.get(name).unwrap_or(&Value::Null))?;
        }
        let mut vars = args.as_object().cloned().unwrap_or_default();
        vars.insert("args".into(), args.clone());
        let budget = args
            .get(&self.budget_arg)
            .and_then(Value::as_u64)
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(self.budget_default);
        // `explain: true` (when the composed skill declares it): each item says which
        // source rows it fused and with what share.
        let explain = args
            .get("explain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut notes: Vec<String> = Vec::new();
        let mut items: Vec<Item> = Vec::new();
        let mut calls = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            calls.push(
                source
                    .args
                    .eval(&Value::Object(vars.clone()))
                    .map_err(|e| {
                        EngineError::Query(format!("source `{}`: arguments: {e}", source.label))
                    })?,
            );
        }
        // The sources run side by side (each call opens its own store handles); their
        // outputs are then taken in source order, so the result does not depend on
        // which finished first.
        let outputs: Vec<Result<Value, SkillCallError>> = if calls.len() == 1 {
            calls
                .into_iter()
                .zip(&self.sources)
                .map(|(args, source)| skills.call_skill(&source.skill, args))
                .collect()
        } else {
            std::thread::scope(|scope| {
                let running: Vec<_> = calls
                    .into_iter()
                    .zip(&self.sources)
                    .map(|(args, source)| {
                        scope.spawn(move || skills.call_skill(&source.skill, args))
                    })
                    .collect();
                running
                    .into_iter()
                    .map(|call| {
                        call.join().unwrap_or_else(|_| {
                            Err(SkillCallError::Failed("the call panicked".into()))
                        })
                    })
                    .collect()
            })
        };
        for ((si, source), output) in self.sources.iter().enumerate().zip(outputs) {
            let out = match output {
                Ok(out) => out,
                Err(SkillCallError::Skipped(why)) => {
                    notes.push(format!("`{}` skipped: {why}", source.skill));
                    continue;
                }
                Err(SkillCallError::Failed(why)) => {
                    return Err(EngineError::Query(format!(
                        "source `{}`: {why}",
                        source.skill
                    )))
                }
            };
            let Some(rows) = out.pointer(&source.rows).and_then(Value::as_array) else {
                return Err(EngineError::Query(format!(
                    "source `{}`: its output has no row array at `{}`",
                    source.skill, source.rows
                )));
            };
            if let Some(note) = out.get("note").and_then(Value::as_str) {
                notes.push(format!("`{}`: {note}", source.skill));
            }
            for (rank, row) in rows.iter().enumerate() {
                let mut item_vars = vars.clone();
                item_vars.insert("row".into(), row.clone());
                item_vars.insert("source".into(), json!(source.label));
                let item_vars = Value::Object(item_vars);
                let fields = match source.item.eval(&item_vars) {
                    Ok(Value::Object(map)) => map,
                    Ok(_) => Map::new(),
                    Err(e) => {
                        return Err(EngineError::Query(format!(
                            "source `{}`: item of row {}: {e}",
                            source.label,
                            rank + 1
                        )))
                    }
                };
                let weight = match &source.weight {
                    Weight::Fixed(w) => *w,
                    Weight::PerRow(t) => {
                        let v = t.eval(&item_vars);
                        v.as_ref().ok().and_then(weight_value).ok_or_else(|| {
                            let got = match &v {
                                Ok(v) => format!("it gave {v}"),
                                Err(e) => e.clone(),
                            };
                            EngineError::Query(format!(
                                "source `{}`: the weight of row {} is not a number ≥ 0 ({got})",
                                source.label,
                                rank + 1
                            ))
                        })?
                    }
                };
                #[allow(clippy::cast_precision_loss)] // ranks are small
                let score = weight / (self.k + (rank + 1) as f64);
                let mut why = json!({
                    "source": source.label, "rank": rank + 1, "weight": weight,
                    "rrf": (score * 1e6).round() / 1e6,
                });
                if let Some(e) = row.get("explain") {
                    why["explain"] = e.clone();
                }
                items.push(Item {
                    fields,
                    source: source.label.clone(),
                    order: (si, rank),
                    score,
                    sources: vec![source.label.clone()],
                    also: Vec::new(),
                    why: vec![why],
                });
            }
        }
        let by_rank = |a: &Item, b: &Item| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.order.cmp(&b.order))
        };
        let mut ranked = dedup(items);
        ranked.sort_by(by_rank);
        if let Some(near) = &self.near_duplicates {
            ranked = near.merge(ranked);
            ranked.sort_by(by_rank);
        }
        let now = ctx.now();
        let mut pack = String::new();
        // Characters of `pack`, kept so each fit test is O(entry).
        let mut pack_chars = 0usize;
        let mut out_items = Vec::new();
        let mut dropped = 0;
        for item in ranked {
            if dropped > 0 {
                dropped += 1;
                continue;
            }
            let age = age_days(item.text("date"), now);
            let sep = usize::from(!pack.is_empty());
            let fits = |line: &str| (pack_chars + sep + line.chars().count()).div_ceil(4) <= budget;
            let full: Vec<char> = item
                .text("text")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .collect();
            let full_text: String = full.iter().collect();
            let mut shown = full_text.clone();
            let mut line = entry(&item, age, &shown);
            let mut cut = false;
            if !fits(&line) {
                let left = budget.saturating_sub((pack_chars + sep).div_ceil(4));
                // The longest cut text (plus `…`) that fits, by bisection: the entry's
                // length grows with the text's.
                let cut_text = |n: usize| {
                    let head: String = full[..n].iter().collect();
                    format!("{}…", head.trim_end())
                };
                let (mut lo, mut hi) = (0usize, full.len());
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if fits(&entry(&item, age, &cut_text(mid))) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                if left < MIN_CUT_TOKENS || lo == 0 {
                    dropped += 1;
                    continue;
                }
                shown = cut_text(lo);
                line = entry(&item, age, &shown);
                cut = true;
            }
            if sep == 1 {
                pack.push('\n');
            }
            pack.push_str(&line);
            pack_chars += sep + line.chars().count();
            let mut obj = Map::new();
            obj.insert("rank".into(), json!(out_items.len() + 1));
            obj.insert("source".into(), json!(item.source));
            obj.insert("sources".into(), json!(item.sources));
            for key in ["id", "title", "date", "note", "citation"] {
                let v = item.text(key);
                if !v.trim().is_empty() || key == "citation" {
                    obj.insert(key.into(), json!(v));
                }
            }
            obj.insert("text".into(), json!(shown));
            if let Some(cites) = item.fields.get("cites").filter(|c| c.is_object()) {
                obj.insert("cites".into(), cites.clone());
            }
            if let Some(age) = age {
                obj.insert("age_days".into(), json!(age));
            }
            if !item.also.is_empty() {
                obj.insert("also".into(), json!(item.also));
            }
            if cut {
                obj.insert("cut".into(), json!(true));
            }
            obj.insert("score".into(), json!((item.score * 1e6).round() / 1e6));
            obj.insert("tokens".into(), json!(tokens(&line)));
            if explain {
                obj.insert("explain".into(), json!({"sources": item.why}));
            }
            out_items.push(Value::Object(obj));
        }
        if dropped > 0 {
            notes.push(format!(
                "{dropped} more item(s) left out to stay within {budget} tokens"
            ));
        }
        let mut out = json!({
            "pack": pack,
            "tokens": tokens(&pack),
            "max_tokens": budget,
            "count": out_items.len(),
            "dropped": dropped,
            "items": out_items,
            "notes": notes,
        });
        if explain {
            out["explain"] = json!({"fusion": {"method": "rrf", "k": self.k,
                "score": "Σ over the sources that returned the item of weight / (k + rank)"}});
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engines::Binding;

    #[test]
    fn templates_keep_types_and_drop_nulls() {
        let t = Template::parse(
            &json!({"query": "{{ question }}", "limit": "{{ n }}", "x": "{{ missing }}", "s": "a {{ n }}", "lit": 3}),
            "/args",
        )
        .unwrap();
        let v = t.eval(&json!({"question": "why", "n": 5})).unwrap();
        assert_eq!(v, json!({"query": "why", "limit": 5, "s": "a 5", "lit": 3}));
        let err = Template::parse(&json!({"a": "{{ (" }), "/args").unwrap_err();
        assert!(err.starts_with("`/args/a`"), "{err}");
    }

    #[test]
    fn token_rule_is_ceil_chars_over_four() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("abcd"), 1);
        assert_eq!(tokens("abcde"), 2);
        assert_eq!(tokens("ééé"), 1);
    }

    fn item(key: &str, group: &str, covers: &str, score: f64, cite: &str) -> Item {
        let mut fields = Map::new();
        fields.insert("key".into(), json!(key));
        fields.insert("group".into(), json!(group));
        fields.insert("covers".into(), json!(covers));
        fields.insert("citation".into(), json!(cite));
        Item {
            fields,
            source: "s".into(),
            order: (0, 0),
            score,
            sources: vec![cite.into()],
            also: Vec::new(),
            why: Vec::new(),
        }
    }

    #[test]
    fn dedup_merges_keys_and_covered_groups() {
        let out = dedup(vec![
            item("m:1", "", "conv:a", 0.5, "[memory 1]"),
            item("msg:a:1", "conv:a", "", 0.4, "[a · 1]"),
            item("msg:a:1", "conv:a", "", 0.3, "[a · 1 again]"),
            item("msg:b:1", "conv:b", "", 0.2, "[b · 1]"),
        ]);
        assert_eq!(out.len(), 2);
        assert!((out[0].score - 1.2).abs() < 1e-9);
        assert_eq!(
            out[0].also,
            vec!["[a · 1]".to_owned(), "[a · 1 again]".to_owned()]
        );
        assert_eq!(out[1].text("citation"), "[b · 1]");
    }

    /// Answers every call with the rows given for that skill.
    struct Fake(Vec<(&'static str, Value)>);

    impl Skills for Fake {
        fn call_skill(&self, name: &str, _args: Value) -> Result<Value, SkillCallError> {
            self.0
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| SkillCallError::Skipped(format!("store of `{name}` does not exist")))
        }
    }

    fn bound(options: &Value) -> Arc<dyn Engine> {
        let schema =
            json!({"properties": {"q": {"type": "string"}, "max_tokens": {"type": "integer"}}});
        Compose
            .bind(&Binding {
                skill_dir: std::path::Path::new("/skills/pack"),
                options,
                input_schema: &schema,
            })
            .unwrap()
            .unwrap()
    }

    #[test]
    fn the_pack_fuses_cuts_to_the_budget_and_notes_skipped_sources() {
        let engine = bound(&json!({"sources": [
            {"skill": "a", "rows": "/hits", "item": {"citation": "[a {{ row.id }}]", "text": "{{ row.body }}", "key": "{{ row.id }}", "date": "2026-07-01"}},
            {"skill": "b", "rows": "/hits", "weight": 2, "item": {"citation": "[b {{ row.id }}]", "text": "{{ row.body }}", "key": "{{ row.id }}"}},
            {"skill": "c", "item": {"citation": "x", "text": "y"}}
        ]}));
        let long = "word ".repeat(400);
        let fake = Fake(vec![
            (
                "a",
                json!({"hits": [{"id": "1", "body": "one"}, {"id": "2", "body": long}]}),
            ),
            (
                "b",
                json!({"hits": [{"id": "2", "body": long}, {"id": "3", "body": "three"}]}),
            ),
        ]);
        let now = chrono::DateTime::parse_from_rfc3339("2026-07-03T12:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let ctx = Context::new(crate::stores::StorePaths::in_dir("/nonexistent")).with_now(now);
        for budget in [20u64, 60, 200, 5000] {
            let out = engine
                .call_in(&json!({"q": "x", "max_tokens": budget}), &ctx, &fake)
                .unwrap();
            let pack = out["pack"].as_str().unwrap();
            assert!(tokens(pack) as u64 <= budget, "{budget}: {pack}");
            assert_eq!(out["tokens"], json!(tokens(pack)));
            let items = out["items"].as_array().unwrap();
            // Item 2 is in both sources (2/61 + 1/62): first, and once.
            assert_eq!(items[0]["id"], json!(null));
            assert_eq!(items[0]["citation"], json!("[b 2]"));
            assert_eq!(items[0]["also"], json!(["[a 2]"]));
            assert_eq!(
                items
                    .iter()
                    .filter(|i| i["citation"] == json!("[b 2]"))
                    .count(),
                1
            );
            if budget < 1000 {
                assert_eq!(items[0]["cut"], json!(true), "{budget}");
                assert!(items[0]["text"].as_str().unwrap().ends_with('…'));
            } else {
                assert!(items[0].get("cut").is_none());
                assert_eq!(items.len(), 3);
            }
            assert!(
                out["notes"][0].as_str().unwrap().contains("`c` skipped"),
                "{out}"
            );
        }
        let out = engine
            .call_in(&json!({"q": "x", "max_tokens": 5000}), &ctx, &fake)
            .unwrap();
        let one = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["citation"] == json!("[a 1]"))
            .unwrap()
            .clone();
        assert_eq!(one["age_days"], json!(2));
        assert!(out["pack"]
            .as_str()
            .unwrap()
            .contains("- [a 1] (2 days old) — one"));
    }

    #[test]
    fn a_weight_template_weighs_each_row() {
        let engine = bound(&json!({"sources": [
            {"skill": "a", "rows": "/hits", "weight": "{{ 0.25 if row.old else 1 }}",
             "item": {"citation": "[a {{ row.id }}]", "text": "{{ row.id }}"}}
        ]}));
        let ctx = Context::new(crate::stores::StorePaths::in_dir("/nonexistent"));
        let fake = Fake(vec![(
            "a",
            json!({"hits": [{"id": "old", "old": true}, {"id": "new"}, {"id": "third", "old": false}]}),
        )]);
        let out = engine
            .call_in(&json!({"q": "x", "max_tokens": 500}), &ctx, &fake)
            .unwrap();
        let order: Vec<&str> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["text"].as_str().unwrap())
            .collect();
        // 1/62 and 1/63 beat 0.25/61.
        assert_eq!(order, ["new", "third", "old"]);
        // Scores are given to 6 decimals.
        assert!((out["items"][2]["score"].as_f64().unwrap() - 0.25 / 61.0).abs() < 1e-6);
        // A template that gives no number fails the call, naming the source and row.
        let engine = bound(&json!({"sources": [
            {"skill": "a", "rows": "/hits", "weight": "{{ row.id }}", "item": {"citation": "x", "text": "y"}}
        ]}));
        let err = engine
            .call_in(&json!({"q": "x"}), &ctx, &fake)
            .unwrap_err()
            .to_string();
        assert!(err.contains("source `a`") && err.contains("row 1"), "{err}");
    }

    #[test]
    fn near_duplicates_of_other_sources_are_one_item() {
        let sources = json!([
            {"skill": "a", "rows": "/hits", "item": {"citation": "[a {{ row.id }}]", "text": "{{ row.body }}", "key": "a:{{ row.id }}"}},
            {"skill": "b", "rows": "/hits", "item": {"citation": "[b {{ row.id }}]", "text": "{{ row.body }}", "key": "b:{{ row.id }}"}}
        ]);
        let fake = Fake(vec![
            (
                "a",
                json!({"hits": [
                    {"id": "1", "body": "I went to an LGBTQ support group yesterday"},
                    {"id": "2", "body": "Yes, sure!"},
                    {"id": "3", "body": "I went to an LGBTQ support group yesterday!"}
                ]}),
            ),
            (
                "b",
                json!({"hits": [
                    {"id": "x", "body": "Yes, sure"},
                    {"id": "y", "body": "Caroline: I went to an LGBTQ support group yesterday and it was powerful"},
                    {"id": "z", "body": "Melanie: we painted a lake at sunrise"}
                ]}),
            ),
        ]);
        let ctx = Context::new(crate::stores::StorePaths::in_dir("/nonexistent"));
        let cites = |engine: &Arc<dyn Engine>| -> Vec<(String, Value, f64)> {
            let out = engine
                .call_in(&json!({"q": "x", "max_tokens": 5000}), &ctx, &fake)
                .unwrap();
            out["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["citation"].as_str().unwrap().to_owned(),
                        i.get("also").cloned().unwrap_or(json!([])),
                        i["score"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        // Without the option every row is its own item.
        let plain = bound(&json!({"sources": sources}));
        assert_eq!(cites(&plain).len(), 6);
        let near = bound(
            &json!({"sources": sources, "near_duplicates": {"overlap": 0.8, "min_words": 4}}),
        );
        let items = cites(&near);
        let order: Vec<&str> = items.iter().map(|i| i.0.as_str()).collect();
        // [a 1] absorbs [b y] (all 7 of its words are in y's): its score is both rows'
        // (1/61 + 1/62) and it ranks first; [a 3], the same text from the same source,
        // stays an item of its own; "Yes, sure" has too few words to merge.
        assert_eq!(order, ["[a 1]", "[b x]", "[a 2]", "[a 3]", "[b z]"]);
        assert_eq!(items[0].1, json!(["[b y]"]));
        assert!((items[0].2 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-6);
        // More words than the shorter text holds keeps them apart.
        let strict = bound(
            &json!({"sources": sources, "near_duplicates": {"overlap": 1.0, "min_words": 9}}),
        );
        assert_eq!(cites(&strict).len(), 6);
    }

    /// A row with a note (a superseded memory) is never merged by text: merged into the
    /// message it copies, its score would lift the stale text above the memory that
    /// replaced it, without the note.
    #[test]
    fn near_duplicates_never_merge_an_item_with_a_note() {
        let sources = json!([
            {"skill": "m", "rows": "/hits", "item": {"citation": "[m {{ row.id }}]", "text": "{{ row.body }}", "note": "{{ row.note }}", "key": "m:{{ row.id }}"}},
            {"skill": "s", "rows": "/hits", "item": {"citation": "[s {{ row.id }}]", "text": "{{ row.body }}", "key": "s:{{ row.id }}"}}
        ]);
        let fake = Fake(vec![
            (
                "m",
                json!({"hits": [
                    {"id": "new", "body": "the deploy window moved to thursday at 15:00 UTC", "note": ""},
                    {"id": "old", "body": "The deploy window is Friday 17:00 UTC", "note": "superseded by new"}
                ]}),
            ),
            (
                "s",
                json!({"hits": [
                    {"id": "msg", "body": "The deploy window is Friday 17:00 UTC."}
                ]}),
            ),
        ]);
        let ctx = Context::new(crate::stores::StorePaths::in_dir("/nonexistent"));
        let near = bound(
            &json!({"sources": sources, "near_duplicates": {"overlap": 0.8, "min_words": 4}}),
        );
        let out = near
            .call_in(&json!({"q": "x", "max_tokens": 5000}), &ctx, &fake)
            .unwrap();
        let items = out["items"].as_array().unwrap();
        assert_eq!(items.len(), 3, "{out}");
        let old = items
            .iter()
            .find(|i| i["citation"] == "[m old]")
            .unwrap_or_else(|| panic!("the superseded memory was merged away: {out}"));
        assert!(old.to_string().contains("superseded by new"), "{out}");
        assert!(
            items
                .iter()
                .all(|i| i.get("also").is_none_or(|a| a == &json!([]))),
            "{out}"
        );
    }

    #[test]
    fn bind_refuses_self_calls_and_unknown_fields() {
        // The reason `Compose::bind` refuses `options` for a skill `recall`.
        let refusal = |options: &Value| {
            let schema = json!({"properties": {"max_tokens": {"type": "integer"}}});
            Compose
                .bind(&Binding {
                    skill_dir: std::path::Path::new("/skills/recall"),
                    options,
                    input_schema: &schema,
                })
                .err()
                .unwrap()
        };
        let options =
            json!({"sources": [{"skill": "recall", "item": {"citation": "x", "text": "y"}}]});
        let err = refusal(&options);
        assert!(err.contains("cannot call itself"), "{err}");
        let options = json!({"sources": [{"skill": "memo-search", "item": {"citation": "x", "text": "y", "bogus": 1}}]});
        let err = refusal(&options);
        assert!(
            err.contains("/engine-options/sources/0/item/bogus"),
            "{err}"
        );
        for weight in [json!(-1), json!("heavy"), json!([1])] {
            let options = json!({"sources": [{"skill": "memo-search", "weight": weight, "item": {"citation": "x", "text": "y"}}]});
            let err = refusal(&options);
            assert!(err.contains("/weight` must be a number ≥ 0"), "{err}");
        }
        for near in [
            json!({"overlap": 0, "min_words": 4}),
            json!({"overlap": 1.5, "min_words": 4}),
            json!({"overlap": 0.8, "min_words": 0}),
        ] {
            let options = json!({"sources": [{"skill": "memo-search", "item": {"citation": "x", "text": "y"}}], "near_duplicates": near});
            let err = refusal(&options);
            assert!(err.contains("`near_duplicates` needs"), "{err}");
        }
        let options = json!({"sources": [{"skill": "memo-search", "item": {"citation": "x", "text": "y"}}], "budget": {"arg": "nope"}});
        let err = refusal(&options);
        assert!(err.contains("`budget.arg` `nope`"), "{err}");
    }
}
