//! Temporal questions ("When did Caroline go to the support group?"): their answer is a
//! time, so the words they share with the answer are few, and the turn that answers
//! them almost always names a time ("yesterday", "last week", "in May", "2022").
//! Measured on the LoCoMo dev half: 89 % of the evidence turns of category-2 questions
//! hold such a reference, against 22 % of all turns. The hybrid modes of memo-search
//! and semantic-search therefore route a detected temporal question: every fused
//! candidate whose own text refers to a time gains [`BOOST`] (docs/performance.md,
//! "Temporal questions").
//!
//! Both tests work on lowercase words (English and Spanish, the languages memo-search
//! parses dates in); neither allocates per word.

/// What a time-referring candidate gains in the fused score of a temporal question
/// (fused scores are weighted sums of legs normalised to [0, 1]; the best candidate
/// of one leg gets that leg's weight).
pub const BOOST: f64 = 0.5;

/// Whether `question` asks for a time: it opens with "when" ("cuándo"), or asks
/// "what/which year|month|day|date|time", "how long ago", "in which year"…
/// ("qué día", "en qué año"). "What did she do when…" is not temporal: "when" counts
/// only as the first word.
#[must_use]
pub fn is_temporal_question(question: &str) -> bool {
    let words: Vec<String> = words(question).take(4).collect();
    let w = |i: usize| words.get(i).map_or("", String::as_str);
    const UNITS: [&str; 12] = [
        "year", "years", "month", "months", "day", "date", "time", "week", "año", "mes", "día",
        "fecha",
    ];
    match w(0) {
        "when" | "cuándo" | "cuando" => true,
        "what" | "which" | "qué" | "que" | "cuál" | "cual" => UNITS.contains(&w(1)),
        "in" | "on" | "en" => {
            matches!(w(1), "what" | "which" | "qué" | "que" | "cuál") && UNITS.contains(&w(2))
        }
        "how" => w(1) == "long" && w(2) == "ago",
        "hace" => w(1) == "cuánto" || w(1) == "cuanto",
        _ => false,
    }
}

/// Whether `text` refers to a time: a relative day or period ("yesterday", "last
/// week", "next summer", "ago", "recently"), a month or weekday name, or a year
/// (1900–2099); English and Spanish.
#[must_use]
pub fn refers_to_time(text: &str) -> bool {
    let mut previous = String::new();
    for word in words(text) {
        if ALONE.contains(&word.as_str())
            || is_year(&word)
            || (matches!(
                previous.as_str(),
                "last" | "next" | "this" | "pasado" | "pasada"
            ) && PERIODS.contains(&word.as_str()))
            || (PERIODS.contains(&previous.as_str())
                && matches!(word.as_str(), "pasado" | "pasada" | "próximo" | "próxima"))
        {
            return true;
        }
        previous = word;
    }
    false
}

/// Words that refer to a time on their own.
const ALONE: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "recently",
    "weekend",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "ayer",
    "hoy",
    "anoche",
    "mañana",
    "anteayer",
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
    "lunes",
    "martes",
    "miércoles",
    "jueves",
    "viernes",
    "sábado",
    "domingo",
];

/// Periods that refer to a time after "last", "next", "this" (or before "pasado").
/// "may" is left out of [`ALONE`] (a verb far more often than a month).
const PERIODS: &[&str] = &[
    "week", "month", "year", "night", "morning", "evening", "summer", "winter", "spring", "fall",
    "autumn", "time", "semana", "mes", "año", "verano", "invierno", "may",
];

fn is_year(word: &str) -> bool {
    word.len() == 4
        && (word.starts_with("19") || word.starts_with("20"))
        && word.bytes().all(|b| b.is_ascii_digit())
}

/// Lowercase alphanumeric runs of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporal_questions_are_detected() {
        for q in [
            "When did Caroline go to the LGBTQ support group?",
            "What year did Melanie start painting?",
            "In which month did they move?",
            "How long ago was her 18th birthday?",
            "¿Cuándo decidimos usar DuckDB?",
            "¿En qué año empezó?",
        ] {
            assert!(is_temporal_question(q), "{q}");
        }
        for q in [
            "What did Melanie paint when she was young?",
            "What is Caroline's identity?",
            "How long has she been painting?",
            "Which database did we choose?",
        ] {
            assert!(!is_temporal_question(q), "{q}");
        }
    }

    #[test]
    fn time_references_are_found() {
        for t in [
            "I went to a support group yesterday.",
            "We moved last week!",
            "Back in 2022 I started.",
            "It was on Saturday",
            "Fui ayer al grupo",
            "la semana pasada",
            "Since last May I paint",
        ] {
            assert!(refers_to_time(t), "{t}");
        }
        for t in [
            "That's great, I love painting!",
            "You may be right",
            "The last thing I want",
            "Call me at 12345",
        ] {
            assert!(!refers_to_time(t), "{t}");
        }
    }
}
