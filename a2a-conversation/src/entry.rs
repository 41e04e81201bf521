//! One line of the conversation log.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

/// What a line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    /// A message sent to an agent, asking it something.
    Request,
    /// An agent's answer: a reply, a message that ends its turn, an artifact.
    Response,
    /// A failure: a refused request, a failed task.
    Error,
    /// A choice made on the way (who handles a message, say).
    Decision,
    /// A status change that carries a message but does not end the turn.
    State,
}

impl EntryType {
    /// The name written in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryType::Request => "request",
            EntryType::Response => "response",
            EntryType::Error => "error",
            EntryType::Decision => "decision",
            EntryType::State => "state",
        }
    }
}

/// One line of the log. Fields are written in this order, `id` first (a
/// reader finds a line by its id without parsing the rest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// `msg_YYYYMMDD_HHMMSS_` and 6 random characters (see [`new_entry_id`]).
    pub id: String,
    /// When it happened, in UTC (written ISO 8601 with microseconds).
    #[serde(with = "micros")]
    pub t: DateTime<Utc>,
    /// Who sent the message.
    pub from_agent: String,
    /// Who it was for, if anyone.
    pub to_agent: Option<String>,
    /// What it records.
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// The text, or the message as an object when it is more than text.
    pub content: serde_json::Value,
    /// The line this one answers or continues.
    pub parent_id: Option<String>,
    /// A2A ids (`taskId`, `contextId`, `messageId`) and anything else.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl LogEntry {
    /// A line with a fresh id made at `t`, no parent and no metadata.
    pub fn new(
        t: DateTime<Utc>,
        kind: EntryType,
        from_agent: impl Into<String>,
        to_agent: Option<String>,
        content: impl Into<serde_json::Value>,
    ) -> LogEntry {
        LogEntry {
            id: new_entry_id(t),
            t,
            from_agent: from_agent.into(),
            to_agent,
            kind,
            content: content.into(),
            parent_id: None,
            metadata: serde_json::Map::new(),
        }
    }

    /// Sets the parent line.
    #[must_use]
    pub fn parent(mut self, parent_id: Option<String>) -> Self {
        self.parent_id = parent_id;
        self
    }

    /// Adds a metadata field.
    #[must_use]
    pub fn meta(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.metadata.insert(key.to_owned(), value.into());
        self
    }

    /// The content as a person reads it: the text, or the object's JSON.
    pub fn content_text(&self) -> String {
        match &self.content {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }

    /// `from → to: ` and the first 50 characters of the content, on one line.
    pub fn summary(&self) -> String {
        let text: String = self
            .content_text()
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(50)
            .collect();
        let to = self.to_agent.as_deref().unwrap_or("-");
        format!("{} → {}: {}", self.from_agent, to, text)
    }
}

/// Message or artifact parts as a line's content: their text when they are
/// all text, else the parts as JSON.
pub fn parts_content(parts: &[a2a_core::Part]) -> serde_json::Value {
    let texts: Option<Vec<&str>> = parts.iter().map(a2a_core::Part::as_text).collect();
    match texts {
        Some(texts) => serde_json::Value::String(texts.concat()),
        None => serde_json::to_value(parts).unwrap_or(serde_json::Value::Null),
    }
}

/// A fresh line id for time `t`: `msg_YYYYMMDD_HHMMSS_` and 6 random
/// characters from `[a-z0-9]`. The day in the id names the file the line is
/// in, which is how a chain lookup finds a line without scanning every file.
pub fn new_entry_id(t: DateTime<Utc>) -> String {
    const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..6]
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("msg_{}_{suffix}", t.format("%Y%m%d_%H%M%S"))
}

/// The day a line id was made on, from the id itself.
pub(crate) fn day_of_id(id: &str) -> Option<chrono::NaiveDate> {
    let digits = id.strip_prefix("msg_")?.get(..8)?;
    chrono::NaiveDate::parse_from_str(digits, "%Y%m%d").ok()
}

/// The latest log line of an exchange, shared by the parts that add to it.
///
/// A server sets it to the request's line when an execution starts; each line
/// logged for that execution (the agent's own calls to other agents through a
/// client, its answer) takes the tip as its parent and becomes the new tip.
/// The exchange then reads back as one chain.
#[derive(Debug, Clone, Default)]
pub struct ChainTip(Arc<Mutex<Option<String>>>);

impl ChainTip {
    /// A tip at `id`.
    pub fn at(id: Option<String>) -> ChainTip {
        ChainTip(Arc::new(Mutex::new(id)))
    }

    /// The latest line, if any.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Moves the tip to `id`.
    pub fn set(&self, id: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
    }
}

mod micros {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Micros, true))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use chrono::TimeZone;

    #[test]
    fn an_entry_is_written_in_the_documented_shape() {
        let t = Utc.with_ymd_and_hms(2026, 11, 23, 4, 5, 6).unwrap()
            + chrono::Duration::microseconds(123_456);
        let entry = LogEntry::new(
            t,
            EntryType::Request,
            "alpha",
            Some("beta".into()),
            "안녕하세요",
        )
        .meta("taskId", "t-1");
        let line = serde_json::to_string(&entry).unwrap();
        assert!(line.starts_with("{\"id\":\"msg_20261123_040506_"), "{line}");
        assert!(
            line.contains("\"t\":\"2026-11-23T04:05:06.123456Z\""),
            "{line}"
        );
        assert!(line.contains("\"type\":\"request\""), "{line}");
        assert!(line.contains("\"parent_id\":null"), "{line}");
        assert!(line.contains("안녕하세요"), "{line}");
        let back: LogEntry = serde_json::from_str(&line).unwrap();
        assert_eq!(back, entry);
        assert_eq!(entry.id.len(), "msg_20261123_040506_".len() + 6);
        assert_eq!(day_of_id(&entry.id), Some(t.date_naive()));
    }

    #[test]
    fn a_summary_is_one_line_of_at_most_fifty_characters() {
        let text = "줄\n".repeat(40);
        let entry = LogEntry::new(Utc::now(), EntryType::Response, "beta", None, text);
        let summary = entry.summary();
        assert!(summary.starts_with("beta → -: 줄 줄"));
        assert!(!summary.contains('\n'));
        assert_eq!(summary.chars().count(), "beta → -: ".chars().count() + 50);
    }
}
