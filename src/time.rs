//! Reading times people and tools write: one parser shared by the importers and the
//! engines' date filters (so "2026-07-03" means the same instant in both).

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

/// Parses a full timestamp as tools write them: RFC 3339 (any offset), or
/// `YYYY-MM-DD[ T]HH:MM:SS[.f]` without offset, taken as UTC. Surrounding whitespace is
/// ignored. The strict half of [`parse_when`], for times read from transcripts, where
/// a bare date or a time without seconds is not a record's time.
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .map(|t| t.and_utc())
}

/// Parses a date or datetime: what [`parse_timestamp`] reads, `YYYY-MM-DD[ T]HH:MM`
/// (UTC), a date or datetime with a numeric offset, or a bare `YYYY-MM-DD` (midnight
/// UTC).
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Some(t) = parse_timestamp(s) {
        return Some(t);
    }
    for fmt in ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc());
        }
    }
    for fmt in [
        "%Y-%m-%d%:z",
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, fmt) {
            return Some(t.with_timezone(&Utc));
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// Epoch seconds (fractional) to UTC, rounded to the microsecond; `None` when not
/// finite or out of range.
pub fn from_epoch_seconds(secs: f64) -> Option<DateTime<Utc>> {
    if !secs.is_finite() {
        return None;
    }
    let micros = (secs * 1e6).round();
    if micros.abs() > 9.0e18 {
        return None;
    }
    #[allow(clippy::cast_possible_truncation)] // range checked above
    DateTime::from_timestamp_micros(micros as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_datetimes_and_offsets() {
        let at = |s: &str| parse_when(s).map(|t| t.to_rfc3339());
        assert_eq!(
            at("2026-07-03").as_deref(),
            Some("2026-07-03T00:00:00+00:00")
        );
        assert_eq!(
            at(" 2026-07-03 12:30 ").as_deref(),
            Some("2026-07-03T12:30:00+00:00")
        );
        assert_eq!(
            at("2026-07-03T12:30:05.5").as_deref(),
            Some("2026-07-03T12:30:05.500+00:00")
        );
        assert_eq!(
            at("2026-07-03T12:00:00+02:00").as_deref(),
            Some("2026-07-03T10:00:00+00:00")
        );
        assert_eq!(at("yesterday"), None);
    }

    #[test]
    fn timestamps_are_the_strict_half() {
        let at = |s: &str| parse_timestamp(s).map(|t| t.to_rfc3339());
        assert_eq!(
            at("2025-03-10T11:14:02.5+02:00").as_deref(),
            Some("2025-03-10T09:14:02.500+00:00")
        );
        assert_eq!(
            at(" 2025-03-10 09:14:02 ").as_deref(),
            Some("2025-03-10T09:14:02+00:00")
        );
        assert_eq!(at("2025-03-10"), None);
        assert_eq!(at("2025-03-10T09:14"), None);
        assert_eq!(
            from_epoch_seconds(1.5).map(|t| t.to_rfc3339()).as_deref(),
            Some("1970-01-01T00:00:01.500+00:00")
        );
        assert_eq!(from_epoch_seconds(f64::NAN), None);
        assert_eq!(from_epoch_seconds(1e300), None);
    }
}
