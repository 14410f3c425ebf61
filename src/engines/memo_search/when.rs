//! Natural-language date phrases (English and Spanish) to inclusive date ranges.
//!
//! Weeks run Monday–Sunday. Every range is computed from the `today` the caller passes
//! (the engine's injectable clock), so results are exact in tests. Unrecognised
//! phrases give `None` (no filter). Recognised, after lowercasing, removing accents and
//! collapsing spaces:
//! - `today`/`hoy`; `yesterday`/`ayer`; `day before yesterday`/`anteayer`/`antier`
//! - `N days ago`/`hace N dias` (N as digits or a number word up to ten; `a day ago`,
//!   `hace un dia`) → that single day
//! - `this week`/`esta semana`; `last week`/`la semana pasada`/`semana pasada`;
//!   `N weeks ago`/`hace N semanas` → that Monday–Sunday week
//! - `this month`/`este mes`; `last month`/`el mes pasado`/`mes pasado`;
//!   `N months ago`/`hace N meses` → that calendar month
//! - `this year`/`este ano`; `last year`/`el ano pasado`
//! - `last N days`/`past N days`/`ultimos N dias` → today−N … today
//! - a bare ISO date `YYYY-MM-DD` → that day

use chrono::{Datelike, Days, Months, NaiveDate};

/// Parses `phrase` relative to `today` into an inclusive `(from, to)` day range.
pub fn parse(phrase: &str, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let p = normalize(phrase);
    let p = p.as_str();
    if let Ok(d) = NaiveDate::parse_from_str(p, "%Y-%m-%d") {
        return Some((d, d));
    }
    let day = |n: u64| today.checked_sub_days(Days::new(n)).map(|d| (d, d));
    match p {
        "today" | "hoy" => return Some((today, today)),
        "yesterday" | "ayer" => return day(1),
        "day before yesterday"
        | "the day before yesterday"
        | "anteayer"
        | "antier"
        | "antes de ayer" => return day(2),
        "this week" | "esta semana" => return week(today, 0),
        "last week" | "la semana pasada" | "semana pasada" | "previous week" => {
            return week(today, 1)
        }
        "this month" | "este mes" => return month(today, 0),
        "last month" | "el mes pasado" | "mes pasado" | "previous month" => return month(today, 1),
        "this year" | "este ano" => return year(today.year()),
        "last year" | "el ano pasado" | "ano pasado" => return year(today.year() - 1),
        _ => {}
    }
    let words: Vec<&str> = p.split(' ').collect();
    match words.as_slice() {
        [n, unit, "ago"] => relative(number(n)?, unit, today),
        ["hace", n, unit] => relative(number(n)?, unit, today),
        ["last" | "past", n, "days"]
        | ["ultimos" | "los ultimos", n, "dias"]
        | ["los", "ultimos", n, "dias"] => {
            let n = number(n)?;
            Some((today.checked_sub_days(Days::new(n))?, today))
        }
        _ => None,
    }
}

fn relative(n: u64, unit: &str, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    match unit {
        "day" | "days" | "dia" | "dias" => today.checked_sub_days(Days::new(n)).map(|d| (d, d)),
        "week" | "weeks" | "semana" | "semanas" => week(today, n),
        "month" | "months" | "mes" | "meses" => month(today, u32::try_from(n).ok()?),
        _ => None,
    }
}

/// The Monday–Sunday week `back` weeks before the one holding `today`.
fn week(today: NaiveDate, back: u64) -> Option<(NaiveDate, NaiveDate)> {
    let monday =
        today.checked_sub_days(Days::new(u64::from(today.weekday().num_days_from_monday())))?;
    let from = monday.checked_sub_days(Days::new(7 * back))?;
    Some((from, from.checked_add_days(Days::new(6))?))
}

/// The calendar month `back` months before the one holding `today`.
fn month(today: NaiveDate, back: u32) -> Option<(NaiveDate, NaiveDate)> {
    let first = today.with_day(1)?.checked_sub_months(Months::new(back))?;
    let last = first.checked_add_months(Months::new(1))?.pred_opt()?;
    Some((first, last))
}

fn year(y: i32) -> Option<(NaiveDate, NaiveDate)> {
    Some((
        NaiveDate::from_ymd_opt(y, 1, 1)?,
        NaiveDate::from_ymd_opt(y, 12, 31)?,
    ))
}

fn number(word: &str) -> Option<u64> {
    if let Ok(n) = word.parse::<u64>() {
        return (n <= 100_000).then_some(n);
    }
    let n = match word {
        "a" | "an" | "one" | "un" | "una" | "uno" => 1,
        "two" | "dos" => 2,
        "three" | "tres" => 3,
        "four" | "cuatro" => 4,
        "five" | "cinco" => 5,
        "six" | "seis" => 6,
        "seven" | "siete" => 7,
        "eight" | "ocho" => 8,
        "nine" | "nueve" => 9,
        "ten" | "diez" => 10,
        _ => return None,
    };
    Some(n)
}

/// Lowercase, accents removed (Spanish letters), punctuation dropped, spaces collapsed.
fn normalize(phrase: &str) -> String {
    let folded: String = phrase
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'á' | 'à' | 'ä' | 'â' => 'a',
            'é' | 'è' | 'ë' | 'ê' => 'e',
            'í' | 'ì' | 'ï' | 'î' => 'i',
            'ó' | 'ò' | 'ö' | 'ô' => 'o',
            'ú' | 'ù' | 'ü' | 'û' => 'u',
            'ñ' => 'n',
            c if c.is_alphanumeric() || c == '-' => c,
            _ => ' ',
        })
        .collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    /// Friday 2026-07-03.
    fn today() -> NaiveDate {
        d("2026-07-03")
    }

    fn check(phrase: &str, from: &str, to: &str) {
        assert_eq!(parse(phrase, today()), Some((d(from), d(to))), "{phrase}");
    }

    #[test]
    fn english_phrases() {
        check("today", "2026-07-03", "2026-07-03");
        check("Yesterday", "2026-07-02", "2026-07-02");
        check("day before yesterday", "2026-07-01", "2026-07-01");
        check("10 days ago", "2026-06-23", "2026-06-23");
        check("three days ago", "2026-06-30", "2026-06-30");
        check("this week", "2026-06-29", "2026-07-05");
        check("last week", "2026-06-22", "2026-06-28");
        check("2 weeks ago", "2026-06-15", "2026-06-21");
        check("this month", "2026-07-01", "2026-07-31");
        check("last month", "2026-06-01", "2026-06-30");
        check("last 7 days", "2026-06-26", "2026-07-03");
        check("last year", "2025-01-01", "2025-12-31");
        check("2026-05-04", "2026-05-04", "2026-05-04");
    }

    #[test]
    fn spanish_phrases_with_and_without_accents() {
        check("hoy", "2026-07-03", "2026-07-03");
        check("ayer", "2026-07-02", "2026-07-02");
        check("anteayer", "2026-07-01", "2026-07-01");
        check("hace 10 días", "2026-06-23", "2026-06-23");
        check("hace 10 dias", "2026-06-23", "2026-06-23");
        check("hace tres dias", "2026-06-30", "2026-06-30");
        check("esta semana", "2026-06-29", "2026-07-05");
        check("la semana pasada", "2026-06-22", "2026-06-28");
        check("el mes pasado", "2026-06-01", "2026-06-30");
        check("hace 2 meses", "2026-05-01", "2026-05-31");
        check("el año pasado", "2025-01-01", "2025-12-31");
        check("últimos 3 días", "2026-06-30", "2026-07-03");
    }

    #[test]
    fn unrecognised_is_none() {
        for p in [
            "",
            "   ",
            "whenever",
            "hace mucho",
            "99999999999 days ago",
            "next week",
        ] {
            assert_eq!(parse(p, today()), None, "{p}");
        }
    }

    #[test]
    fn month_edges() {
        assert_eq!(
            parse("last month", d("2026-03-31")),
            Some((d("2026-02-01"), d("2026-02-28")))
        );
        assert_eq!(
            parse("last month", d("2026-01-15")),
            Some((d("2025-12-01"), d("2025-12-31")))
        );
    }
}
