//! Activity at a glance: a calendar heatmap of messages per UTC day over the last
//! year and a bar chart of messages per month by source, drawn as server-side SVG
//! (no script). Readable without colour: every cell and bar has a text `<title>`, the
//! legend names each source, and each day with messages links to that day's
//! conversations. The data is the output of the skill feeding the activity charts
//! ([`calls`]), called twice: per day, and per month and source.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{Datelike, Duration, NaiveDate};
use serde_json::{json, Map, Value};

use super::calls::{self, Calls, Failed, Role};
use super::{paths, Pages, Response};

/// Days the heatmap covers, ending today (UTC).
pub const HEATMAP_DAYS: i64 = 365;

/// Months the bar chart covers, ending with this one.
pub const CHART_MONTHS: u32 = 12;

/// Sources given their own colour; further ones share the last.
pub const SOURCE_COLOURS: usize = 6;

const CELL: i64 = 11;
const GAP: i64 = 2;
const LEFT: i64 = 30;
const TOP: i64 = 16;

/// The charts' SVG, or why there are none.
pub enum Charts {
    /// Heatmap and bar chart, as SVG markup (every text escaped).
    Drawn {
        /// The calendar heatmap.
        heatmap: String,
        /// The bar chart per month by source.
        months: String,
        /// Messages in the heatmap's year.
        messages: usize,
    },
    /// Nothing stored yet, or no skill feeds the charts: the sentence to show.
    Missing(String),
}

/// Fetches the activity of the last year (of `project` when given) into `calls` and
/// draws it. A missing store or a missing skill is [`Charts::Missing`]; any other
/// failure is the response to send.
pub async fn charts(
    pages: &Pages,
    project: Option<&str>,
    calls: &mut Calls,
    as_json: bool,
) -> Result<Charts, Response> {
    let today = pages.now().date_naive();
    let first_day = today - Duration::days(HEATMAP_DAYS - 1);
    let first_month = month_start(today, CHART_MONTHS - 1);
    let mut by_day = Map::new();
    by_day.insert("by".into(), json!("day"));
    by_day.insert("since".into(), json!(first_day.to_string()));
    let mut by_month = Map::new();
    by_month.insert("by".into(), json!("month"));
    by_month.insert("since".into(), json!(first_month.to_string()));
    if let Some(project) = project {
        by_day.insert("project".into(), json!(project));
        by_month.insert("project".into(), json!(project));
    }
    let served = pages.catalog().current();
    if calls::skill_for(served.host.skills(), Role::Activity).is_none() {
        return Ok(Charts::Missing(
            "No skill declares `page: {shows: activity}`: no activity charts.".into(),
        ));
    }
    // Both at once: on two cores a page waits for the slower call, not for the sum.
    let (day, month) = tokio::join!(
        pages.call_role(Role::Activity, Value::Object(by_day), as_json),
        pages.call_role(Role::Activity, Value::Object(by_month), as_json),
    );
    let mut outputs = Vec::new();
    for called in [day, month] {
        match called {
            Ok(output) => outputs.push(output),
            Err(Failed::NothingStored(_)) => {
                return Ok(Charts::Missing(
                    "No conversations are stored yet: run `skills ingest` first.".into(),
                ))
            }
            Err(Failed::Answer(response)) => return Err(response),
        }
    }
    let days: Vec<(String, usize, usize)> = calls::rows(&outputs[0])
        .iter()
        .map(|r| {
            (
                calls::text(r, "key").unwrap_or("").to_owned(),
                calls::count(r, "messages"),
                calls::count(r, "conversations"),
            )
        })
        .collect();
    let months: Vec<(String, String, usize)> = calls::rows(&outputs[1])
        .iter()
        .map(|r| {
            (
                calls::text(r, "key").unwrap_or("").to_owned(),
                calls::text(r, "source").unwrap_or("").to_owned(),
                calls::count(r, "messages"),
            )
        })
        .collect();
    calls.add("activity_by_day", &outputs[0]);
    calls.add("activity_by_month", &outputs[1]);
    let messages = days.iter().map(|d| d.1).sum();
    Ok(Charts::Drawn {
        heatmap: heatmap(&days, first_day, today, project),
        months: month_bars(&months, first_month, today),
        messages,
    })
}

/// The first day of the month `back` months before `day`'s.
fn month_start(day: NaiveDate, back: u32) -> NaiveDate {
    let index = day.year() * 12 + i32::try_from(day.month0()).unwrap_or(0)
        - i32::try_from(back).unwrap_or(0);
    NaiveDate::from_ymd_opt(
        index.div_euclid(12),
        index.rem_euclid(12).unsigned_abs() + 1,
        1,
    )
    .unwrap_or(day)
}

/// Escapes text for SVG/HTML text and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// The colour level (0–4) of `n` messages on a day, against the busiest day `max`.
fn level(n: usize, max: usize) -> usize {
    if n == 0 || max == 0 {
        return 0;
    }
    // Quartiles of the busiest day: 1..=4.
    ((n * 4).div_ceil(max)).clamp(1, 4)
}

/// The calendar heatmap: one column per week (Monday first), one cell per day from
/// `first` to `last`; days with messages link to the conversations list of that day
/// (and `project`).
pub fn heatmap(
    days: &[(String, usize, usize)],
    first: NaiveDate,
    last: NaiveDate,
    project: Option<&str>,
) -> String {
    let counts: BTreeMap<&str, (usize, usize)> = days
        .iter()
        .map(|(k, m, c)| (k.as_str(), (*m, *c)))
        .collect();
    let max = days.iter().map(|d| d.1).max().unwrap_or(0);
    let start = first - Duration::days(i64::from(first.weekday().num_days_from_monday()));
    let weeks = (last - start).num_days() / 7 + 1;
    let width = LEFT + weeks * (CELL + GAP);
    let height = TOP + 7 * (CELL + GAP);
    let total: usize = days.iter().map(|d| d.1).sum();
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="heatmap" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="group" aria-label="Messages per day from {first} to {last}: {total} in all">"#
    );
    for (row, name) in [(0, "Mon"), (2, "Wed"), (4, "Fri")] {
        let y = TOP + row * (CELL + GAP) + CELL - 2;
        let _ = write!(
            svg,
            r#"<text class="label" x="0" y="{y}" aria-hidden="true">{name}</text>"#
        );
    }
    let mut labelled_month = None;
    let mut day = start;
    while day <= last {
        let offset = (day - start).num_days();
        let (week, weekday) = (offset / 7, offset % 7);
        let x = LEFT + week * (CELL + GAP);
        let y = TOP + weekday * (CELL + GAP);
        if day >= first && labelled_month != Some(day.month()) && day.day() <= 7 {
            labelled_month = Some(day.month());
            let _ = write!(
                svg,
                r#"<text class="label" x="{x}" y="10" aria-hidden="true">{}</text>"#,
                day.format("%b")
            );
        }
        if day >= first {
            let key = day.to_string(); // `%Y-%m-%d`
            let (messages, conversations) = counts.get(key.as_str()).copied().unwrap_or((0, 0));
            let class = level(messages, max);
            if messages > 0 {
                let plural = |n: usize| if n == 1 { "" } else { "s" };
                let title = format!(
                    "{key}: {messages} message{} in {conversations} conversation{}",
                    plural(messages),
                    plural(conversations)
                );
                let href = paths::with_query(
                    "/conversations",
                    &[
                        ("project", project.unwrap_or("")),
                        ("since", &key),
                        ("until", &key),
                    ],
                );
                let _ = write!(
                    svg,
                    r#"<a href="{}"><title>{}</title><rect class="day l{class}" x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="2"/></a>"#,
                    esc(&href),
                    esc(&title)
                );
            } else {
                let _ = write!(
                    svg,
                    r#"<rect class="day l0" x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="2"><title>{key}: no messages</title></rect>"#
                );
            }
        }
        day += Duration::days(1);
    }
    svg.push_str("</svg>");
    svg
}

/// The bar chart: one stacked bar per month from `first_month` to `today`'s month,
/// one segment per source, with a legend naming the sources.
pub fn month_bars(
    rows: &[(String, String, usize)],
    first_month: NaiveDate,
    today: NaiveDate,
) -> String {
    let mut months: Vec<String> = Vec::new();
    let mut m = first_month;
    while m <= today {
        months.push(m.format("%Y-%m").to_string());
        m = month_start(m, 0)
            .checked_add_months(chrono::Months::new(1))
            .unwrap_or(today + Duration::days(1));
    }
    let mut sources: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    let mut per_month: BTreeMap<&str, Vec<(&str, usize)>> = BTreeMap::new();
    for (month, source, n) in rows {
        per_month
            .entry(month.as_str())
            .or_default()
            .push((source.as_str(), *n));
    }
    let totals: Vec<usize> = months
        .iter()
        .map(|m| {
            per_month
                .get(m.as_str())
                .map_or(0, |v| v.iter().map(|s| s.1).sum())
        })
        .collect();
    let max = totals.iter().copied().max().unwrap_or(0).max(1);
    let (bar, gap, chart_h, left, top) = (40_i64, 12_i64, 140_i64, 8_i64, 14_i64);
    let legend_h = 18 * i64::try_from(sources.len().div_ceil(4)).unwrap_or(1);
    let width = left + i64::try_from(months.len()).unwrap_or(12) * (bar + gap);
    let height = top + chart_h + 20 + legend_h;
    let colour = |source: &str| {
        sources
            .iter()
            .position(|s| *s == source)
            .unwrap_or(0)
            .min(SOURCE_COLOURS - 1)
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="months" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="Messages per month by source, {} to {}">"#,
        months.first().map_or("", String::as_str),
        months.last().map_or("", String::as_str)
    );
    let _ = write!(svg, "<title>Messages per month by source</title>");
    for (i, month) in months.iter().enumerate() {
        let x = left + i64::try_from(i).unwrap_or(0) * (bar + gap);
        let mut y = top + chart_h;
        let total = totals[i];
        let segments = per_month.get(month.as_str()).cloned().unwrap_or_default();
        let _ = write!(
            svg,
            r#"<g class="month"><title>{month}: {total} messages</title>"#
        );
        for (source, n) in segments {
            let h = i64::try_from(n * usize::try_from(chart_h).unwrap_or(140) / max)
                .unwrap_or(0)
                .max(1);
            y -= h;
            let _ = write!(
                svg,
                r#"<rect class="bar s{}" x="{x}" y="{y}" width="{bar}" height="{h}"><title>{month} · {}: {n} messages</title></rect>"#,
                colour(source),
                esc(source)
            );
        }
        if total > 0 {
            let _ = write!(
                svg,
                r#"<text class="value" x="{}" y="{}" text-anchor="middle">{total}</text>"#,
                x + bar / 2,
                (y - 3).max(10)
            );
        }
        let label = NaiveDate::parse_from_str(&format!("{month}-01"), "%Y-%m-%d")
            .map_or_else(|_| month.clone(), |d| d.format("%b").to_string());
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}" text-anchor="middle">{label}</text></g>"#,
            x + bar / 2,
            top + chart_h + 14
        );
    }
    for (i, source) in sources.iter().enumerate() {
        let i = i64::try_from(i).unwrap_or(0);
        let (x, y) = (left + (i % 4) * 150, top + chart_h + 22 + (i / 4) * 18);
        let _ = write!(
            svg,
            r#"<rect class="bar s{}" x="{x}" y="{y}" width="10" height="10"/><text class="label" x="{}" y="{}">{}</text>"#,
            colour(source),
            x + 14,
            y + 9,
            esc(source)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// `GET /activity`'s JSON twin: the index's chart data alone.
pub async fn twin(pages: &Pages) -> Response {
    let mut calls = Calls::new(true);
    match charts(pages, None, &mut calls, true).await {
        Ok(_) => calls.twin(),
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heatmap_has_a_titled_cell_per_day_and_links_days_with_messages() {
        let first = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap_or_default();
        let last = NaiveDate::from_ymd_opt(2026, 3, 10).unwrap_or_default();
        let svg = heatmap(&[("2026-03-03".into(), 5, 2)], first, last, Some("a&b"));
        assert_eq!(svg.matches("<rect class=\"day").count(), 10);
        assert!(svg.contains("<title>2026-03-03: 5 messages in 2 conversations</title>"));
        assert!(svg.contains(
            "href=\"/conversations?project=a%26b&amp;since=2026-03-03&amp;until=2026-03-03\""
        ));
        assert!(svg.contains("<title>2026-03-04: no messages</title>"));
        assert_eq!(svg.matches("<a ").count(), 1);
    }

    #[test]
    fn the_month_chart_stacks_sources_with_titles_and_a_legend() {
        let first = NaiveDate::from_ymd_opt(2025, 4, 1).unwrap_or_default();
        let today = NaiveDate::from_ymd_opt(2026, 3, 15).unwrap_or_default();
        let rows = [
            ("2026-03".to_owned(), "chatgpt".to_owned(), 3),
            ("2026-03".to_owned(), "<claude>".to_owned(), 9),
        ];
        let svg = month_bars(&rows, first, today);
        assert_eq!(svg.matches("<g class=\"month\">").count(), 12);
        assert!(svg.contains("<title>2026-03: 12 messages</title>"));
        assert!(svg.contains("<title>2026-03 · &lt;claude&gt;: 9 messages</title>"));
        assert!(!svg.contains("<claude>"));
        assert_eq!(month_start(today, 11), first);
    }
}
