//! One line of the conversation log.

use std::sync::{Arc, Mutex};

use a2a_core::json_writer::{write_str, write_str_contents};
use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};
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
    /// The cluster node whose log wrote the line (see
    /// [`LogConfig::node`](crate::LogConfig::node)); absent for a single
    /// server, whose lines keep their old shape. Written last, so a line
    /// of a node is a single server's line with one more field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
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
            node: None,
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

/// A fresh line id for time `t`: `msg_YYYYMMDD_HHMMSS_` and 6 characters
/// from `[a-z0-9]`. The day in the id names the file the line is in, which is
/// how a chain lookup finds a line without scanning every file.
///
/// The 6 characters look random but are a per-process sequence (started at a
/// random point) scrambled by a bijection of the 36^6 possible suffixes, so
/// two ids of one process never repeat within the same second. Independent
/// random draws would: at 20,000 lines a second, two lines of the same
/// second share an id about once every 11 seconds.
pub fn new_entry_id(t: DateTime<Utc>) -> String {
    EntryId::new(&calendar_second(&t)).as_str().to_owned()
}

/// A line id this process made ([`new_entry_id`]), kept inline: the hot
/// path writes it into its line and keeps it as the chain's tip without a
/// `String` each time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryId([u8; ENTRY_ID_LEN]);

/// The length of a line id: `msg_YYYYMMDD_HHMMSS_` and 6 characters.
const ENTRY_ID_LEN: usize = 26;

impl EntryId {
    /// A fresh id in the second `second` (as [`calendar_second`] gives it).
    fn new(second: &[u8; 19]) -> EntryId {
        let mut id = *b"msg_YYYYMMDD_HHMMSS_rrrrrr";
        // `YYYY-MM-DDTHH:MM:SS` → `YYYYMMDD_HHMMSS`.
        id[4..8].copy_from_slice(&second[0..4]);
        id[8..10].copy_from_slice(&second[5..7]);
        id[10..12].copy_from_slice(&second[8..10]);
        id[13..15].copy_from_slice(&second[11..13]);
        id[15..17].copy_from_slice(&second[14..16]);
        id[17..19].copy_from_slice(&second[17..19]);
        // Below 36^6 < 2^32: 32-bit division is the cheaper.
        let mut suffix = u32::try_from(scrambled_sequence()).unwrap_or(0);
        for slot in id[20..].iter_mut().rev() {
            *slot = ID_ALPHABET[(suffix % 36) as usize];
            suffix /= 36;
        }
        EntryId(id)
    }

    /// The id as text (ASCII by construction, so never empty).
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The id as a JSON string: it has nothing to escape.
    fn quoted(&self) -> [u8; ENTRY_ID_LEN + 2] {
        let mut quoted = [b'"'; ENTRY_ID_LEN + 2];
        quoted[1..=ENTRY_ID_LEN].copy_from_slice(&self.0);
        quoted
    }
}

const ID_ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
/// How many different 6-character suffixes there are.
const SUFFIXES: u64 = 36u64.pow(6);

/// The next number of the process's id sequence, mapped onto `0..SUFFIXES`
/// by `n * K + R (mod 36^6)`: `K` shares no factor with 36, so the map is a
/// bijection and consecutive numbers land far apart.
fn scrambled_sequence() -> u64 {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    const K: u64 = 1_299_709; // prime, not 2 or 3
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static OFFSET: OnceLock<u64> = OnceLock::new();
    let offset = *OFFSET.get_or_init(|| {
        let random = uuid::Uuid::new_v4().as_u128();
        (random as u64) % SUFFIXES
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed) % SUFFIXES;
    (n * K + offset) % SUFFIXES
}

/// `t` to the second as `YYYY-MM-DDTHH:MM:SS`, remembered per thread for
/// the current second: lines come thousands a second, and the calendar
/// arithmetic costs more than the rest of an id.
fn calendar_second(t: &DateTime<Utc>) -> [u8; 19] {
    /// A second (the date, and the second of the day) and its text.
    type Cached = ((NaiveDate, u32), [u8; 19]);
    thread_local! {
        static LAST: std::cell::Cell<Option<Cached>> = const { std::cell::Cell::new(None) };
    }
    // The date and the second of the day as chrono stores them: comparing
    // them costs less than working out the timestamp.
    let naive = t.naive_utc();
    let key = (naive.date(), naive.time().num_seconds_from_midnight());
    LAST.with(|last| {
        if let Some((cached, text)) = last.get() {
            if cached == key {
                return text;
            }
        }
        let f = Fields::of(t);
        let mut text = *b"YYYY-MM-DDTHH:MM:SS";
        digits(&mut text[0..4], f.year);
        digits(&mut text[5..7], f.month);
        digits(&mut text[8..10], f.day);
        digits(&mut text[11..13], f.hour);
        digits(&mut text[14..16], f.minute);
        digits(&mut text[17..19], f.second);
        last.set(Some((key, text)));
        text
    })
}

/// A time's calendar fields, read once.
struct Fields {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
}

impl Fields {
    fn of(t: &DateTime<Utc>) -> Fields {
        let naive = t.naive_utc();
        let (date, time) = (naive.date(), naive.time());
        Fields {
            year: u32::try_from(date.year()).unwrap_or(0),
            month: date.month(),
            day: date.day(),
            hour: time.hour(),
            minute: time.minute(),
            second: time.second(),
        }
    }
}

/// Writes `value` into `out` as decimal digits, zero-padded to its length
/// (the lowest digits of a wider value).
fn digits(out: &mut [u8], mut value: u32) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// Writes `value` into `out` (of even length) as zero-padded decimal
/// digits, two at a time from a table: half the divisions of [`digits`].
fn digit_pairs(out: &mut [u8], mut value: u32) {
    const PAIRS: [u8; 200] = {
        let mut pairs = [0u8; 200];
        let mut n = 0;
        while n < 100 {
            pairs[2 * n] = b'0' + (n / 10) as u8;
            pairs[2 * n + 1] = b'0' + (n % 10) as u8;
            n += 1;
        }
        pairs
    };
    for pair in out.rchunks_exact_mut(2) {
        let at = (value % 100) as usize * 2;
        pair.copy_from_slice(&PAIRS[at..at + 2]);
        value /= 100;
    }
}

/// `t` as ISO 8601 in UTC with microseconds (`2026-11-23T04:05:06.123456Z`).
#[cfg(test)]
fn iso_micros(t: &DateTime<Utc>) -> String {
    let mut out = Vec::with_capacity(27);
    push_iso_micros(&mut out, t);
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `t` as ISO 8601 in UTC with microseconds (`2026-11-23T04:05:06.123456Z`).
fn push_iso_micros(out: &mut Vec<u8>, t: &DateTime<Utc>) {
    push_iso_micros_in(out, &calendar_second(t), t);
}

/// As [`push_iso_micros`], with `t` to the second already looked up.
fn push_iso_micros_in(out: &mut Vec<u8>, second: &[u8; 19], t: &DateTime<Utc>) {
    let mut text = *b"YYYY-MM-DDTHH:MM:SS.uuuuuuZ";
    text[..19].copy_from_slice(second);
    // A leap second shows as a nanosecond count past one second.
    digit_pairs(&mut text[20..26], t.timestamp_subsec_micros() % 1_000_000);
    out.extend_from_slice(&text);
}

impl LogEntry {
    /// Appends the entry as one line of JSON (without the newline) to `out`:
    /// the same JSON as its `Serialize`, written faster (see [`Line`]).
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"id\":");
        write_str(out, &self.id);
        out.extend_from_slice(b",\"t\":\"");
        push_iso_micros(out, &self.t);
        out.extend_from_slice(b"\",\"from_agent\":");
        write_str(out, &self.from_agent);
        out.extend_from_slice(b",\"to_agent\":");
        push_opt_str(out, self.to_agent.as_deref());
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.extend_from_slice(b"\",\"content\":");
        match &self.content {
            serde_json::Value::String(text) => write_str(out, text),
            other => serde_json::to_writer(&mut *out, other)?,
        }
        out.extend_from_slice(b",\"parent_id\":");
        push_opt_str(out, self.parent_id.as_deref());
        out.extend_from_slice(b",\"metadata\":{");
        for (n, (key, value)) in self.metadata.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_str(out, key);
            out.push(b':');
            match value {
                serde_json::Value::String(text) => write_str(out, text),
                other => serde_json::to_writer(&mut *out, other)?,
            }
        }
        out.push(b'}');
        if let Some(node) = &self.node {
            out.extend_from_slice(b",\"node\":");
            write_str(out, node);
        }
        out.push(b'}');
        Ok(())
    }
}

/// What a [`Line`] says.
#[derive(Debug, Clone, Copy)]
pub enum LineContent<'a> {
    /// Text.
    Text(&'a str),
    /// Message or artifact parts: their text when all are text, else the
    /// parts as JSON (as [`parts_content`]).
    Parts(&'a [a2a_core::Part]),
}

/// A log line given by reference, for the hot path: encoded straight to JSON
/// with no [`LogEntry`] built (see [`ConversationLog::append_line`]). Its JSON
/// is exactly that of the equivalent [`LogEntry`]; metadata keys are written
/// in the order given, which should be sorted (as a [`LogEntry`]'s are).
///
/// [`ConversationLog::append_line`]: crate::ConversationLog::append_line
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// When.
    pub t: DateTime<Utc>,
    /// What it records.
    pub kind: EntryType,
    /// Who sent the message.
    pub from_agent: &'a str,
    /// Who it was for.
    pub to_agent: Option<&'a str>,
    /// The content.
    pub content: LineContent<'a>,
    /// The line it answers or continues.
    pub parent_id: Option<&'a str>,
    /// Metadata, sorted by key.
    pub metadata: &'a [(&'a str, &'a str)],
}

impl Line<'_> {
    /// Appends the line's JSON, with id `id`, to `out` (without the newline).
    pub fn write_json(&self, id: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"id\":");
        write_str(out, id);
        self.write_after_id(&calendar_second(&self.t), out);
    }

    /// Appends the line's JSON with a fresh id (as [`new_entry_id`] makes)
    /// to `out`, and returns the id: the time's calendar fields are looked
    /// up once for both, and the id, made here, needs no escaping.
    pub(crate) fn write_json_new_id(&self, out: &mut Vec<u8>) -> EntryId {
        let second = calendar_second(&self.t);
        let id = EntryId::new(&second);
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(&id.quoted());
        self.write_after_id(&second, out);
        id
    }

    /// Everything after the id; `second` is the line's time to the second.
    fn write_after_id(&self, second: &[u8; 19], out: &mut Vec<u8>) {
        out.extend_from_slice(b",\"t\":\"");
        push_iso_micros_in(out, second, &self.t);
        out.extend_from_slice(b"\",\"from_agent\":");
        write_str(out, self.from_agent);
        out.extend_from_slice(b",\"to_agent\":");
        push_opt_str(out, self.to_agent);
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(self.kind.as_str().as_bytes());
        out.extend_from_slice(b"\",\"content\":");
        self.content.write_json(out);
        out.extend_from_slice(b",\"parent_id\":");
        push_opt_str(out, self.parent_id);
        out.extend_from_slice(b",\"metadata\":{");
        for (n, (key, value)) in self.metadata.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_str(out, key);
            out.push(b':');
            write_str(out, value);
        }
        out.extend_from_slice(b"}}");
    }
}

impl LineContent<'_> {
    /// Appends the content's JSON: a string, or the parts' array.
    fn write_json(self, out: &mut Vec<u8>) {
        match self {
            LineContent::Text(text) => write_str(out, text),
            LineContent::Parts(parts) => {
                if parts.iter().all(|p| p.as_text().is_some()) {
                    out.push(b'"');
                    for text in parts.iter().filter_map(a2a_core::Part::as_text) {
                        write_str_contents(out, text);
                    }
                    out.push(b'"');
                } else if serde_json::to_writer(&mut *out, parts).is_err() {
                    out.extend_from_slice(b"null");
                }
            }
        }
    }

    /// The content as an entry holds it.
    pub(crate) fn to_value(self) -> serde_json::Value {
        match self {
            LineContent::Text(text) => serde_json::Value::String(text.to_owned()),
            LineContent::Parts(parts) => parts_content(parts),
        }
    }
}

/// A metadata key of a server's own lines ([`Record`]): known in advance,
/// so written as it is, with nothing to check or escape. In key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    ArtifactId,
    Code,
    ContextId,
    MessageId,
    State,
    TaskId,
}

impl Key {
    /// The key.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Key::ArtifactId => "artifactId",
            Key::Code => "code",
            Key::ContextId => "contextId",
            Key::MessageId => "messageId",
            Key::State => "state",
            Key::TaskId => "taskId",
        }
    }

    /// Appends the key as a JSON member name, colon included: each arm a
    /// copy of a length known when compiled (no call to `memcpy`).
    fn write_json(self, out: &mut Vec<u8>) {
        match self {
            Key::ArtifactId => out.extend_from_slice(b"\"artifactId\":"),
            Key::Code => out.extend_from_slice(b"\"code\":"),
            Key::ContextId => out.extend_from_slice(b"\"contextId\":"),
            Key::MessageId => out.extend_from_slice(b"\"messageId\":"),
            Key::State => out.extend_from_slice(b"\"state\":"),
            Key::TaskId => out.extend_from_slice(b"\"taskId\":"),
        }
    }
}

impl EntryType {
    /// Appends the line's type and the names around it, from the closing
    /// quote of the field before to the content's name: one copy of a
    /// length known when compiled.
    fn write_type_member(self, out: &mut Vec<u8>) {
        match self {
            EntryType::Request => out.extend_from_slice(b",\"type\":\"request\",\"content\":"),
            EntryType::Response => {
                out.extend_from_slice(b",\"type\":\"response\",\"content\":");
            }
            EntryType::Error => out.extend_from_slice(b",\"type\":\"error\",\"content\":"),
            EntryType::Decision => {
                out.extend_from_slice(b",\"type\":\"decision\",\"content\":");
            }
            EntryType::State => out.extend_from_slice(b",\"type\":\"state\",\"content\":"),
        }
    }
}

/// An agent's name with its JSON string made once: the name a server's
/// lines give it on every line.
#[derive(Debug)]
pub(crate) struct AgentName {
    text: String,
    json: Box<[u8]>,
}

impl AgentName {
    pub(crate) fn new(text: String) -> AgentName {
        let mut json = Vec::with_capacity(text.len() + 2);
        write_str(&mut json, &text);
        AgentName {
            text,
            json: json.into_boxed_slice(),
        }
    }
}

/// One side of a [`Record`]: a name to escape, or one already encoded.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Side<'a> {
    /// A name to escape.
    Name(&'a str),
    /// A name encoded in advance.
    Encoded(&'a AgentName),
    /// `user`, the caller with no name.
    User,
}

impl Side<'_> {
    fn as_str(&self) -> &str {
        match self {
            Side::Name(name) => name,
            Side::Encoded(name) => &name.text,
            Side::User => "user",
        }
    }

    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Side::Name(name) => write_str(out, name),
            Side::Encoded(name) => out.extend_from_slice(&name.json),
            Side::User => out.extend_from_slice(b"\"user\""),
        }
    }
}

/// A server's own line ([`Recorder`](crate::Recorder)): a [`Line`] whose
/// parts the recorder knows in advance are written without being checked
/// (its agent's name encoded once, metadata keys from [`Key`], a parent
/// line this process made). Its JSON is exactly that of the same [`Line`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record<'a> {
    pub(crate) t: DateTime<Utc>,
    pub(crate) kind: EntryType,
    pub(crate) from_agent: Side<'a>,
    pub(crate) to_agent: Side<'a>,
    pub(crate) content: LineContent<'a>,
    pub(crate) parent_id: Option<&'a TipId>,
    /// Sorted by key.
    pub(crate) metadata: &'a [(Key, &'a str)],
}

impl Record<'_> {
    /// Appends the line's JSON with a fresh id to `out`, and returns the id.
    pub(crate) fn write_json_new_id(&self, out: &mut Vec<u8>) -> EntryId {
        let second = calendar_second(&self.t);
        let id = EntryId::new(&second);
        out.extend_from_slice(b"{\"id\":");
        out.extend_from_slice(&id.quoted());
        out.extend_from_slice(b",\"t\":\"");
        push_iso_micros_in(out, &second, &self.t);
        out.extend_from_slice(b"\",\"from_agent\":");
        self.from_agent.write_json(out);
        out.extend_from_slice(b",\"to_agent\":");
        self.to_agent.write_json(out);
        self.kind.write_type_member(out);
        self.content.write_json(out);
        out.extend_from_slice(b",\"parent_id\":");
        match self.parent_id {
            Some(TipId::Made(parent)) => out.extend_from_slice(&parent.quoted()),
            Some(TipId::Given(parent)) => write_str(out, parent),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"metadata\":{");
        for (n, (key, value)) in self.metadata.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            key.write_json(out);
            write_str(out, value);
        }
        out.extend_from_slice(b"}}");
        id
    }

    /// The line as an owned entry with id `id` (for cutting a long one).
    pub(crate) fn to_entry(self, id: &str) -> LogEntry {
        LogEntry {
            id: id.to_owned(),
            t: self.t,
            from_agent: self.from_agent.as_str().to_owned(),
            to_agent: Some(self.to_agent.as_str().to_owned()),
            kind: self.kind,
            content: self.content.to_value(),
            parent_id: self.parent_id.map(|p| p.as_str().to_owned()),
            metadata: self
                .metadata
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), (*v).into()))
                .collect(),
            node: None,
        }
    }
}

fn push_opt_str(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => write_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
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
pub struct ChainTip(Arc<Mutex<Option<TipId>>>);

/// A chain's latest line: one this process made (the usual case, kept
/// inline), or any other id it was given.
#[derive(Debug, Clone)]
pub(crate) enum TipId {
    /// Made here, by [`new_entry_id`].
    Made(EntryId),
    /// Given from outside (a caller's line, an id read back).
    Given(String),
}

impl TipId {
    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            TipId::Made(id) => id.as_str(),
            TipId::Given(id) => id,
        }
    }
}

impl ChainTip {
    /// A tip at `id`.
    pub fn at(id: Option<String>) -> ChainTip {
        ChainTip(Arc::new(Mutex::new(id.map(TipId::Given))))
    }

    /// A tip at the line `id` this process made, if any.
    pub(crate) fn at_made(id: Option<EntryId>) -> ChainTip {
        ChainTip(Arc::new(Mutex::new(id.map(TipId::Made))))
    }

    /// The latest line, if any.
    pub fn get(&self) -> Option<String> {
        self.lock().as_ref().map(|id| id.as_str().to_owned())
    }

    /// The latest line, if any, without a copy of its text when this
    /// process made it.
    pub(crate) fn id(&self) -> Option<TipId> {
        self.lock().clone()
    }

    /// Moves the tip to `id`.
    pub fn set(&self, id: String) {
        *self.lock() = Some(TipId::Given(id));
    }

    /// Moves the tip to the line `id` this process made.
    pub(crate) fn set_made(&self, id: EntryId) {
        *self.lock() = Some(TipId::Made(id));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<TipId>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

mod micros {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        let mut text = Vec::with_capacity(27);
        super::push_iso_micros(&mut text, t);
        s.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?)
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
    fn ids_of_one_second_never_repeat_and_keep_their_shape() {
        let t = Utc::now();
        let prefix = format!("msg_{}_", t.format("%Y%m%d_%H%M%S"));
        let ids: std::collections::HashSet<String> =
            (0..200_000).map(|_| new_entry_id(t)).collect();
        assert_eq!(ids.len(), 200_000);
        for id in ids.iter().take(1_000) {
            let suffix = id.strip_prefix(&prefix).unwrap();
            assert_eq!(suffix.len(), 6);
            assert!(suffix.bytes().all(|b| ID_ALPHABET.contains(&b)), "{id}");
        }
        // The calendar part follows the time, also across a cached second.
        let later = t + chrono::Duration::days(40);
        assert!(
            new_entry_id(later).starts_with(&format!("msg_{}_", later.format("%Y%m%d_%H%M%S")))
        );
        assert_eq!(
            iso_micros(&later),
            later.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
        );
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
    fn escaping_matches_serde_json_at_every_position() {
        let specials = ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '\u{7f}', ' ', '한'];
        for len in 0..20 {
            for (n, special) in specials.iter().enumerate() {
                let mut text: String = "abcdefghijklmnopqrstuvwxyz".chars().take(len).collect();
                let at = text.len() * n / specials.len();
                text.insert(at, *special);
                let mut out = Vec::new();
                write_str(&mut out, &text);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    serde_json::to_string(&text).unwrap()
                );
            }
        }
    }

    #[test]
    fn a_line_is_written_as_the_same_entry_would_be() {
        let t = Utc::now();
        let parts = [
            a2a_core::Part::text("one \"two\"\n"),
            a2a_core::Part::text(" 셋"),
        ];
        let mixed = [
            a2a_core::Part::text("see"),
            a2a_core::Part::data(serde_json::json!({"k": 1})),
        ];
        for (content, value) in [
            (LineContent::Parts(&parts), parts_content(&parts)),
            (LineContent::Parts(&mixed), parts_content(&mixed)),
            (LineContent::Text("\u{1}x"), serde_json::json!("\u{1}x")),
        ] {
            let id = new_entry_id(t);
            let line = Line {
                t,
                kind: EntryType::State,
                from_agent: "a\\b",
                to_agent: None,
                content,
                parent_id: Some("msg_x"),
                metadata: &[("contextId", "c"), ("taskId", "t\t")],
            };
            let mut fast = Vec::new();
            line.write_json(&id, &mut fast);
            let mut entry = LogEntry::new(t, EntryType::State, "a\\b", None, value)
                .parent(Some("msg_x".into()))
                .meta("taskId", "t\t")
                .meta("contextId", "c");
            entry.id = id;
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                serde_json::to_string(&entry).unwrap()
            );
        }
    }

    #[test]
    fn a_record_is_written_as_the_same_line_would_be() {
        let t = Utc::now();
        let agent = AgentName::new("beta \"b\"".into());
        let parts = [a2a_core::Part::text("hi\n"), a2a_core::Part::text("there")];
        let made = TipId::Made(EntryId::new(&calendar_second(&t)));
        let given = TipId::Given("a \"given\" id".into());
        for (from, to) in [
            (Side::Name("us\ter"), Side::Encoded(&agent)),
            (Side::Encoded(&agent), Side::Name("user")),
            (Side::User, Side::Encoded(&agent)),
        ] {
            for parent in [None, Some(&made), Some(&given)] {
                for metadata in [
                    &[][..],
                    &[(Key::ContextId, "c\u{1}"), (Key::State, "completed")][..],
                    &[
                        (Key::ArtifactId, "a"),
                        (Key::Code, "x"),
                        (Key::ContextId, "c"),
                        (Key::MessageId, "m"),
                        (Key::TaskId, "t"),
                    ][..],
                ] {
                    let record = Record {
                        t,
                        kind: EntryType::Response,
                        from_agent: from,
                        to_agent: to,
                        content: LineContent::Parts(&parts),
                        parent_id: parent,
                        metadata,
                    };
                    let mut fast = Vec::new();
                    let id = record.write_json_new_id(&mut fast);
                    let pairs: Vec<(&str, &str)> =
                        metadata.iter().map(|(k, v)| (k.as_str(), *v)).collect();
                    let line = Line {
                        t,
                        kind: EntryType::Response,
                        from_agent: from.as_str(),
                        to_agent: Some(to.as_str()),
                        content: LineContent::Parts(&parts),
                        parent_id: parent.map(TipId::as_str),
                        metadata: &pairs,
                    };
                    let mut slow = Vec::new();
                    line.write_json(id.as_str(), &mut slow);
                    assert_eq!(
                        String::from_utf8(fast).unwrap(),
                        String::from_utf8(slow).unwrap()
                    );
                    assert_eq!(
                        serde_json::to_value(record.to_entry(id.as_str())).unwrap(),
                        serde_json::from_str::<serde_json::Value>(
                            &String::from_utf8({
                                let mut again = Vec::new();
                                line.write_json(id.as_str(), &mut again);
                                again
                            })
                            .unwrap()
                        )
                        .unwrap()
                    );
                }
            }
        }
    }

    #[test]
    fn digit_pairs_write_what_digits_writes() {
        for value in [0, 7, 42, 100, 999_999, 123_456, 900_009] {
            let (mut pairs, mut one_by_one) = ([0u8; 6], [0u8; 6]);
            digit_pairs(&mut pairs, value);
            digits(&mut one_by_one, value);
            assert_eq!(pairs, one_by_one, "{value}");
        }
    }

    #[test]
    fn a_chain_tip_reads_back_what_was_set() {
        let tip = ChainTip::default();
        assert_eq!(tip.get(), None);
        let id = EntryId::new(&calendar_second(&Utc::now()));
        tip.set_made(id);
        assert_eq!(tip.get().as_deref(), Some(id.as_str()));
        assert_eq!(
            tip.id().map(|t| t.as_str().to_owned()).as_deref(),
            Some(id.as_str())
        );
        tip.set("elsewhere".into());
        assert_eq!(tip.get().as_deref(), Some("elsewhere"));
        assert_eq!(ChainTip::at(Some("x".into())).get().as_deref(), Some("x"));
        assert_eq!(ChainTip::at_made(None).get(), None);
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
