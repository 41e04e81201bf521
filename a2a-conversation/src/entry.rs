//! One line of the conversation log.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Datelike, Timelike, Utc};
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
    // Written digit by digit: chrono's format strings cost more than the
    // rest of a log line together.
    let mut id = Vec::with_capacity(26);
    id.extend_from_slice(b"msg_");
    push_digits(&mut id, t.year(), 4);
    push_digits(&mut id, t.month(), 2);
    push_digits(&mut id, t.day(), 2);
    id.push(b'_');
    push_digits(&mut id, t.hour(), 2);
    push_digits(&mut id, t.minute(), 2);
    push_digits(&mut id, t.second(), 2);
    id.push(b'_');
    let random = uuid::Uuid::new_v4();
    id.extend(
        random.as_bytes()[..6]
            .iter()
            .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()]),
    );
    String::from_utf8(id).unwrap_or_default()
}

/// Appends `value` as exactly `width` decimal digits (zero-padded; the
/// lowest digits of a wider value).
fn push_digits(out: &mut Vec<u8>, value: impl TryInto<u32>, width: usize) {
    let mut value = value.try_into().unwrap_or(0);
    let start = out.len();
    out.resize(start + width, b'0');
    for slot in out[start..].iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// `t` as ISO 8601 in UTC with microseconds (`2026-11-23T04:05:06.123456Z`).
fn iso_micros(t: &DateTime<Utc>) -> String {
    let mut out = Vec::with_capacity(27);
    push_digits(&mut out, t.year(), 4);
    out.push(b'-');
    push_digits(&mut out, t.month(), 2);
    out.push(b'-');
    push_digits(&mut out, t.day(), 2);
    out.push(b'T');
    push_digits(&mut out, t.hour(), 2);
    out.push(b':');
    push_digits(&mut out, t.minute(), 2);
    out.push(b':');
    push_digits(&mut out, t.second(), 2);
    out.push(b'.');
    // A leap second shows as a nanosecond count past one second.
    push_digits(&mut out, t.nanosecond() / 1_000 % 1_000_000, 6);
    out.push(b'Z');
    String::from_utf8(out).unwrap_or_default()
}

impl LogEntry {
    /// Appends the entry as one line of JSON (without the newline) to `out`:
    /// the same JSON as its `Serialize`, written faster. Fields this code
    /// makes (the id, the time, the type, a parent in the id format) hold
    /// nothing to escape and are copied as they are; the rest goes through
    /// `serde_json`.
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        fn raw_or_escaped(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
            if is_plain(text) {
                out.push(b'"');
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
                Ok(())
            } else {
                serde_json::to_writer(&mut *out, text)
            }
        }
        out.extend_from_slice(b"{\"id\":");
        raw_or_escaped(out, &self.id)?;
        out.extend_from_slice(b",\"t\":\"");
        out.extend_from_slice(iso_micros(&self.t).as_bytes());
        out.extend_from_slice(b"\",\"from_agent\":");
        serde_json::to_writer(&mut *out, &self.from_agent)?;
        out.extend_from_slice(b",\"to_agent\":");
        serde_json::to_writer(&mut *out, &self.to_agent)?;
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.extend_from_slice(b"\",\"content\":");
        serde_json::to_writer(&mut *out, &self.content)?;
        out.extend_from_slice(b",\"parent_id\":");
        match &self.parent_id {
            Some(parent) => raw_or_escaped(out, parent)?,
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"metadata\":{");
        for (n, (key, value)) in self.metadata.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            raw_or_escaped(out, key)?;
            out.push(b':');
            match value {
                serde_json::Value::String(text) => raw_or_escaped(out, text)?,
                other => serde_json::to_writer(&mut *out, other)?,
            }
        }
        out.extend_from_slice(b"}}");
        Ok(())
    }
}

/// Whether `text` can be written in JSON quotes as it is: letters, digits,
/// `_`, `-`, `.`, `:` (ids, A2A ids, state names, times).
fn is_plain(text: &str) -> bool {
    const PLAIN: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            table[b] = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':');
            b += 1;
        }
        table
    };
    text.bytes().all(|b| PLAIN[usize::from(b)])
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
        s.serialize_str(&super::iso_micros(t))
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
        let mut fast = Vec::new();
        entry.write_json(&mut fast).unwrap();
        assert_eq!(String::from_utf8(fast).unwrap(), line);
        assert_eq!(entry.id.len(), "msg_20261123_040506_".len() + 6);
        assert_eq!(day_of_id(&entry.id), Some(t.date_naive()));
    }

    #[test]
    fn the_fast_writer_matches_serde_on_awkward_values() {
        let t = Utc::now();
        let entry = LogEntry::new(
            t,
            EntryType::Error,
            "a \"quoted\"\nname",
            None,
            serde_json::json!({"k": [1, "x\u{1}"]}),
        )
        .parent(Some("not an \"id\"".into()))
        .meta("taskId", "0f-ab")
        .meta("weird key \\", "tab\there")
        .meta("n", 3)
        .meta("nested", serde_json::json!({"a": null}));
        let mut fast = Vec::new();
        entry.write_json(&mut fast).unwrap();
        assert_eq!(
            String::from_utf8(fast).unwrap(),
            serde_json::to_string(&entry).unwrap()
        );
    }

    #[test]
    fn times_and_ids_are_written_as_chrono_would() {
        use chrono::SecondsFormat;
        for t in [
            Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
            Utc.with_ymd_and_hms(1999, 12, 31, 23, 59, 59).unwrap()
                + chrono::Duration::nanoseconds(999_999_999),
            Utc::now(),
        ] {
            assert_eq!(
                iso_micros(&t),
                t.to_rfc3339_opts(SecondsFormat::Micros, true)
            );
            let id = new_entry_id(t);
            assert_eq!(&id[..20], format!("msg_{}_", t.format("%Y%m%d_%H%M%S")));
            assert!(
                id[20..]
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            );
        }
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
