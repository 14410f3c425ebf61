//! Reading times people and tools write: one parser shared by the importers and the
//! engines' date filters (so "2026-07-03" means the same instant in both).

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

/// Parses a date or datetime: RFC 3339, `YYYY-MM-DD[ T]HH:MM[:SS[.f]]` (UTC), or a bare
/// `YYYY-MM-DD` (midnight UTC).
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
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
}
