//! The engine's arguments, checked: [`Request::from_args`] turns the call's JSON into
//! one [`Request`] (mode, filters with their date bounds resolved, limit, notes on
//! anything ignored or clamped). Apart from the legs so the argument rules read alone.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use super::{when, Mode, Scorer, DEFAULT_BODY_CHARS, DEFAULT_LIMIT, MAX_LIMIT};
use crate::cancel::Cancel;
use crate::engines::EngineError;
use crate::stores::memories::format_time;
use crate::time::parse_when;

/// Checked arguments of one search (the engine's "HiArgs").
#[derive(Debug, Clone)]
pub struct Request {
    /// Trimmed query text.
    pub query: String,
    /// Mode actually used.
    pub mode: Mode,
    /// Restrict to this type (lowercased).
    pub kind: Option<String>,
    /// Inclusive lower bound on `updated`, as stored text.
    pub from: Option<String>,
    /// Inclusive upper bound on `updated`, as stored text.
    pub to: Option<String>,
    /// Lowercased path fragment (file mode).
    pub file: Option<String>,
    /// Hits wanted, 1..=500.
    pub limit: usize,
    /// Body cap in characters; `None` disables truncation.
    pub body_chars: Option<usize>,
    /// Add per-hit `explain` and a `trace`.
    pub explain: bool,
    /// Rank memories another memory supersedes too (default: left out).
    pub include_superseded: bool,
    /// Notes collected while checking arguments.
    pub notes: Vec<String>,
    /// Scorer of the legs (not an argument: [`Scorer::Fast`]).
    pub scorer: Scorer,
    /// The call's stop signal (not an argument: one that never stops; the engine sets
    /// its context's, [`Context::cancel`](crate::engines::Context::cancel)). Checked before and after every leg and,
    /// inside the legs, once per query term and per block of [`STOP_CHECK_ROWS`](super::STOP_CHECK_ROWS)
    /// rows; a stopped search fails with [`EngineError::Stopped`].
    pub stop: Cancel,
    /// Team archive only: keep the memories pushed by this machine (its host label or
    /// its id).
    pub machine: Option<String>,
    /// Team archive only: keep the memories pushed by this user.
    pub user: Option<String>,
    /// Rowids of the rows the filters keep beside the others (`None`: every row); set
    /// by the team archive's source for `machine` and `user` (its rows' machines are
    /// not in the row metadata).
    pub rows: Option<std::sync::Arc<std::collections::HashSet<i64>>>,
}

impl Request {
    /// Checks `args` (already schema-validated) against the clock `now`.
    ///
    /// # Errors
    /// [`EngineError::Argument`] naming `limit` when it is not an integer from 1 to
    /// [`MAX_LIMIT`], or `date_from` or `date_to` when a bound does not parse as an
    /// ISO date or datetime.
    pub fn from_args(args: &Value, now: DateTime<Utc>) -> Result<Self, EngineError> {
        let text = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        let mut notes = Vec::new();
        let query = text("query").unwrap_or("").to_owned();
        let mode = match text("mode") {
            None => Mode::Hybrid,
            Some(m) => Mode::parse(m).unwrap_or_else(|| {
                notes.push(format!("unrecognised mode `{m}`: used hybrid"));
                Mode::Hybrid
            }),
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => v
                .as_i64()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| EngineError::Argument {
                    name: "limit".into(),
                    reason: format!("expected an integer in 1..={MAX_LIMIT}, got {v}"),
                })?,
        };
        let body_chars = args
            .get("body_chars")
            .and_then(Value::as_i64)
            .unwrap_or(DEFAULT_BODY_CHARS);
        let body_chars = usize::try_from(body_chars).ok();
        let mut explain = args
            .get("explain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let include_superseded = args
            .get("include_superseded")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let file = text("file").map(str::to_ascii_lowercase);
        let kind = text("type").map(str::to_lowercase);
        let (mut from, mut to) = (None, None);
        if file.is_some() {
            let ignored: Vec<&str> = ["date_from", "date_to", "when"]
                .into_iter()
                .filter(|k| text(k).is_some())
                .collect();
            let mut parts: Vec<String> = ignored.iter().map(|k| format!("`{k}`")).collect();
            if explain {
                parts.push("`explain`".into());
                explain = false;
            }
            if !parts.is_empty() {
                notes.push(format!("file mode: {} not applied", parts.join(", ")));
            }
        } else if text("date_from").is_some() || text("date_to").is_some() {
            if let Some(s) = text("date_from") {
                from = Some(format_time(
                    &parse_bound(s, false).ok_or_else(|| bad_date("date_from", s))?,
                ));
            }
            if let Some(s) = text("date_to") {
                to = Some(format_time(
                    &parse_bound(s, true).ok_or_else(|| bad_date("date_to", s))?,
                ));
            }
            if let Some(w) = text("when") {
                notes.push(format!(
                    "`when` \"{w}\" ignored because date_from/date_to is set"
                ));
            }
        } else if let Some(w) = text("when") {
            match when::parse(w, now.date_naive()) {
                Some((a, b)) => {
                    from = Some(day_start(a));
                    to = Some(day_end(b));
                }
                None => notes.push(format!(
                    "`when` \"{w}\" not recognised: no date filter applied"
                )),
            }
        }
        Ok(Self {
            query,
            mode,
            kind,
            from,
            to,
            file,
            limit: usize::try_from(limit).unwrap_or(1),
            body_chars,
            explain,
            include_superseded,
            notes,
            scorer: Scorer::default(),
            stop: Cancel::new(),
            machine: text("machine").map(str::to_owned),
            user: text("user").map(str::to_owned),
            rows: None,
        })
    }
}

fn bad_date(name: &str, value: &str) -> EngineError {
    EngineError::Argument {
        name: name.into(),
        reason: format!(
            "`{value}` is not an ISO date or datetime (e.g. 2026-07-01 or 2026-07-01T09:30:00Z)"
        ),
    }
}

/// A bound: a bare date is the start (`upper = false`) or end (`upper = true`) of that
/// UTC day; a datetime without offset is UTC.
fn parse_bound(s: &str, upper: bool) -> Option<DateTime<Utc>> {
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        let t = if upper {
            d.and_hms_opt(23, 59, 59)
        } else {
            d.and_hms_opt(0, 0, 0)
        };
        return t.map(|t| t.and_utc());
    }
    parse_when(s)
}

fn day_start(d: NaiveDate) -> String {
    format!("{}T00:00:00Z", d.format("%Y-%m-%d"))
}

fn day_end(d: NaiveDate) -> String {
    format!("{}T23:59:59Z", d.format("%Y-%m-%d"))
}
