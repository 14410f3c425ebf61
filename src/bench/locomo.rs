//! LoCoMo (long-term conversational memory benchmark, Maharana et al., ACL 2024) as
//! retrieval units and questions, for quality harnesses (`benches/quality.rs`) and any
//! other harness that measures recall on it.
//!
//! The data is never part of this repository: [`corpus_file`] finds
//! `locomo/locomo-dev.json` under `$SKILLS_CORPUS_DIR`, else `../shared/corpus` next to
//! the source tree, and callers skip with a clear message when it is absent.
//!
//! Protocol (the corpus README's): a unit is either a whole session (all its turns,
//! `Speaker: text` per line) or one turn; a question's relevant units are the sessions
//! (or turns) of its evidence ids. Evidence ids are normalised ([`normalise_evidence`]):
//! `"D8:6; D9:17"` is two ids, `"D:11:26"` is `D11:26`, `"D30:05"` is `D30:5`; ids
//! naming no turn of the conversation are dropped, and a question left without
//! evidence is not used.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDateTime, Utc};
use serde_json::{json, Value};

/// What one retrieval unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// One memory per session (all its turns).
    Session,
    /// One memory per turn.
    Turn,
}

impl Unit {
    /// `session` or `turn`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Turn => "turn",
        }
    }
}

/// One turn of a session.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Normalised dialogue id, `D<session>:<turn>`.
    pub dia_id: String,
    /// Who speaks.
    pub speaker: String,
    /// What was said; a shared image adds `[shares a photo: <caption>]`.
    pub text: String,
}

/// One session of a conversation.
#[derive(Debug, Clone)]
pub struct Session {
    /// Session number (the `N` of `session_N`).
    pub number: u32,
    /// Start time as written (`1:56 pm on 8 May, 2023`).
    pub date_text: String,
    /// Start time parsed (UTC), when it parses.
    pub date: Option<DateTime<Utc>>,
    /// Turns in order.
    pub turns: Vec<Turn>,
}

/// One question with its evidence.
#[derive(Debug, Clone)]
pub struct Question {
    /// The question text.
    pub question: String,
    /// LoCoMo category 1–5 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    /// 5 adversarial, as numbered in the data).
    pub category: u8,
    /// Normalised evidence turn ids that exist in the conversation (never empty).
    pub evidence: Vec<String>,
}

/// One conversation (a LoCoMo sample).
#[derive(Debug, Clone)]
pub struct Conversation {
    /// `sample_id`, e.g. `conv-26`.
    pub id: String,
    /// `speaker_a` (a transcript's `user`, [`Conversation::transcript_records`]).
    pub speaker_a: String,
    /// `speaker_b` (a transcript's `assistant`).
    pub speaker_b: String,
    /// Sessions in order.
    pub sessions: Vec<Session>,
    /// Questions with at least one valid evidence id.
    pub questions: Vec<Question>,
    /// Questions dropped because none of their evidence ids names a turn.
    pub dropped_questions: usize,
}

/// Why the data could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocomoError {
    /// The file could not be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file is not the expected JSON.
    #[error("`{path}`: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was expected.
        reason: String,
    },
}

/// The dev half's file: `$SKILLS_CORPUS_DIR/locomo/locomo-dev.json`, else
/// `<source tree>/../shared/corpus/locomo/locomo-dev.json`; `None` when neither exists.
pub fn corpus_file() -> Option<PathBuf> {
    let mut roots = Vec::new();
    roots.extend(crate::settings::corpus_dir());
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    roots
        .into_iter()
        .map(|r| r.join("locomo").join("locomo-dev.json"))
        .find(|p| p.is_file())
}

/// Reads every conversation of a LoCoMo JSON file (a list of samples).
///
/// # Errors
/// [`LocomoError::Io`] when the file cannot be read, [`LocomoError::Format`] naming
/// the file and the first missing or mistyped field.
pub fn load(path: &Path) -> Result<Vec<Conversation>, LocomoError> {
    let bad = |reason: String| LocomoError::Format {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = fs_err::read(path)?;
    let data: Value = serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let samples = data
        .as_array()
        .ok_or_else(|| bad("expected a JSON array of samples".into()))?;
    samples
        .iter()
        .enumerate()
        .map(|(i, s)| conversation(s).map_err(|r| bad(format!("sample {i}: {r}"))))
        .collect()
}

fn conversation(sample: &Value) -> Result<Conversation, String> {
    let id = sample
        .get("sample_id")
        .and_then(Value::as_str)
        .ok_or("missing `sample_id`")?
        .to_owned();
    let conv = sample
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or("missing `conversation` object")?;
    let mut sessions = BTreeMap::new();
    for (key, value) in conv {
        let Some(n) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let turns = value
            .as_array()
            .ok_or_else(|| format!("`{key}` is not a list of turns"))?;
        let date_text = conv
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let turns = turns
            .iter()
            .map(|t| turn(t).map_err(|r| format!("`{key}`: {r}")))
            .collect::<Result<Vec<_>, _>>()?;
        sessions.insert(
            n,
            Session {
                number: n,
                date: parse_date(&date_text),
                date_text,
                turns,
            },
        );
    }
    let known: HashSet<&str> = sessions
        .values()
        .flat_map(|s| s.turns.iter().map(|t| t.dia_id.as_str()))
        .collect();
    let mut questions = Vec::new();
    let mut dropped = 0;
    for q in sample
        .get("qa")
        .and_then(Value::as_array)
        .ok_or("missing `qa` list")?
    {
        let text = q
            .get("question")
            .and_then(Value::as_str)
            .ok_or("a `qa` entry has no `question`")?;
        let category = q
            .get("category")
            .and_then(Value::as_u64)
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(0);
        let mut evidence: Vec<String> = Vec::new();
        for raw in q
            .get("evidence")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            for id in normalise_evidence(raw) {
                if known.contains(id.as_str()) && !evidence.contains(&id) {
                    evidence.push(id);
                }
            }
        }
        if evidence.is_empty() {
            dropped += 1;
            continue;
        }
        questions.push(Question {
            question: text.to_owned(),
            category,
            evidence,
        });
    }
    let speaker = |k: &str| conv.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    Ok(Conversation {
        id,
        speaker_a: speaker("speaker_a"),
        speaker_b: speaker("speaker_b"),
        sessions: sessions.into_values().collect(),
        questions,
        dropped_questions: dropped,
    })
}

fn turn(t: &Value) -> Result<Turn, String> {
    let field = |k: &str| t.get(k).and_then(Value::as_str);
    let raw_id = field("dia_id").ok_or("a turn has no `dia_id`")?;
    let dia_id = normalise_evidence(raw_id)
        .into_iter()
        .next()
        .ok_or_else(|| format!("unreadable `dia_id` `{raw_id}`"))?;
    let mut text = field("text").unwrap_or("").to_owned();
    if let Some(caption) = field("blip_caption").filter(|c| !c.is_empty()) {
        text.push_str(&format!(" [shares a photo: {caption}]"));
    }
    Ok(Turn {
        dia_id,
        speaker: field("speaker").unwrap_or("").to_owned(),
        text,
    })
}

/// The turn ids in one evidence string, normalised to `D<session>:<turn>` with no
/// leading zeros: `"D8:6; D9:17"` → `D8:6`, `D9:17`; `"D:11:26"` → `D11:26`;
/// `"D30:05"` → `D30:5`. Pieces that hold no two numbers are dropped.
pub fn normalise_evidence(raw: &str) -> Vec<String> {
    raw.split([';', ',', ' '])
        .filter_map(|piece| {
            let nums: Vec<u32> = piece
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .filter_map(|s| s.parse().ok())
                .collect();
            match nums.as_slice() {
                [s, t] => Some(format!("D{s}:{t}")),
                _ => None,
            }
        })
        .collect()
}

/// Parses LoCoMo's `1:56 pm on 8 May, 2023` as UTC.
fn parse_date(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    ["%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| t.and_utc())
}

impl Conversation {
    /// Ids of the units holding turn `dia_id`: `<conv>/S<n>` (session) or
    /// `<conv>/<dia_id>` (turn).
    pub fn unit_id(&self, unit: Unit, dia_id: &str) -> String {
        match unit {
            Unit::Turn => format!("{}/{dia_id}", self.id),
            Unit::Session => {
                let session = dia_id
                    .trim_start_matches('D')
                    .split(':')
                    .next()
                    .unwrap_or("");
                format!("{}/S{session}", self.id)
            }
        }
    }

    /// The relevant unit ids of `q` (deduplicated, in evidence order).
    pub fn relevant(&self, unit: Unit, q: &Question) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &q.evidence {
            let id = self.unit_id(unit, e);
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// The session id of a transcript message or a turn memory: `D3:7` → 3.
    pub fn session_of(dia_id: &str) -> Option<u32> {
        dia_id
            .trim_start_matches('D')
            .split(':')
            .next()?
            .parse()
            .ok()
    }

    /// The conversation as generic JSON Lines transcript records, one per turn, as
    /// `benches/locomo_semantic.rs` ingests them: each session one conversation
    /// (`<conv>/session_<n>`), message id the turn's dia id (`D<n>:<k>`), role `user`
    /// for speaker A and `assistant` for speaker B, content `Speaker: text`, time the
    /// session's start plus 30 s per turn (1970-01-01 when the date does not parse),
    /// title `A and B — <session date>`.
    pub fn transcript_records(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for s in &self.sessions {
            let start = s.date.unwrap_or_default();
            for (i, t) in s.turns.iter().enumerate() {
                let at = start + chrono::Duration::seconds(30 * i64::try_from(i).unwrap_or(0));
                out.push(json!({
                    "conversation_id": format!("{}/session_{}", self.id, s.number),
                    "id": t.dia_id,
                    "role": if t.speaker == self.speaker_a { "user" } else { "assistant" },
                    "content": format!("{}: {}", t.speaker, t.text),
                    "timestamp": at.to_rfc3339(),
                    "title": format!("{} and {} — {}", self.speaker_a, self.speaker_b, s.date_text),
                }));
            }
        }
        out
    }

    /// The conversation's units as memory-import JSON Lines records (`id`, `title`,
    /// `type` `conversation`, `created`, `body`), one per session or turn.
    /// Session: title `Session <n> (<date>)`, body `Speaker: text` per turn. Turn:
    /// title `<speaker> (<date>)`, body the turn's text.
    pub fn memory_records(&self, unit: Unit) -> Vec<Value> {
        let mut out = Vec::new();
        for s in &self.sessions {
            let created = s.date.map(|d| d.to_rfc3339());
            match unit {
                Unit::Session => {
                    let body: Vec<String> = s
                        .turns
                        .iter()
                        .map(|t| format!("{}: {}", t.speaker, t.text))
                        .collect();
                    out.push(json!({
                        "id": format!("{}/S{}", self.id, s.number),
                        "title": format!("Session {} ({})", s.number, s.date_text),
                        "type": "conversation",
                        "created": created,
                        "body": body.join("\n"),
                    }));
                }
                Unit::Turn => {
                    for t in &s.turns {
                        out.push(json!({
                            "id": format!("{}/{}", self.id, t.dia_id),
                            "title": format!("{} ({})", t.speaker, s.date_text),
                            "type": "conversation",
                            "created": created,
                            "body": t.text,
                        }));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_is_normalised() {
        assert_eq!(normalise_evidence("D8:6; D9:17"), vec!["D8:6", "D9:17"]);
        assert_eq!(normalise_evidence("D:11:26"), vec!["D11:26"]);
        assert_eq!(normalise_evidence("D30:05"), vec!["D30:5"]);
        assert_eq!(normalise_evidence("D1:3"), vec!["D1:3"]);
        assert!(normalise_evidence("D").is_empty());
    }

    #[test]
    fn dates_parse() {
        let d = parse_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(d.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        assert!(parse_date("sometime").is_none());
    }

    #[test]
    fn a_small_sample_loads_with_units_and_evidence() {
        let sample = json!([{
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "A", "speaker_b": "B",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "A", "dia_id": "D1:1", "text": "hello"},
                    {"speaker": "B", "dia_id": "D1:2", "text": "look", "blip_caption": "a dog"}
                ],
                "session_2_date_time": "2:00 pm on 9 May, 2023",
                "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "bye"}]
            },
            "qa": [
                {"question": "who?", "answer": "A", "evidence": ["D1:01; D2:1", "D9:9"], "category": 4},
                {"question": "none?", "answer": "x", "evidence": ["D7:1"], "category": 1}
            ]
        }]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.json");
        std::fs::write(&path, sample.to_string()).unwrap();
        let convs = load(&path).unwrap();
        let c = &convs[0];
        assert_eq!(c.sessions.len(), 2);
        assert_eq!(c.questions.len(), 1);
        assert_eq!(c.dropped_questions, 1);
        assert_eq!(c.questions[0].evidence, vec!["D1:1", "D2:1"]);
        assert_eq!(
            c.relevant(Unit::Session, &c.questions[0]),
            vec!["conv-x/S1", "conv-x/S2"]
        );
        let turns = c.memory_records(Unit::Turn);
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[1]["body"], "look [shares a photo: a dog]");
        let transcript = c.transcript_records();
        assert_eq!(transcript.len(), 3);
        assert_eq!(transcript[1]["conversation_id"], "conv-x/session_1");
        assert_eq!(transcript[1]["id"], "D1:2");
        assert_eq!(transcript[1]["role"], "assistant");
        assert_eq!(transcript[1]["content"], "B: look [shares a photo: a dog]");
        assert_eq!(transcript[1]["timestamp"], "2023-05-08T13:56:30+00:00");
        assert_eq!(transcript[2]["title"], "A and B — 2:00 pm on 9 May, 2023");
        assert_eq!(Conversation::session_of("D12:3"), Some(12));
        let sessions = c.memory_records(Unit::Session);
        assert_eq!(
            sessions[0]["body"],
            "A: hello\nB: look [shares a photo: a dog]"
        );
        assert_eq!(sessions[0]["created"], "2023-05-08T13:56:00+00:00");
        assert!(matches!(
            load(&dir.path().join("missing.json")),
            Err(LocomoError::Io(_))
        ));
    }
}
