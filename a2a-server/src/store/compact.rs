//! The in-memory store's form of a task: positional and binary, written and
//! read only by this process (never on disk, never on the wire), so it can
//! be as lean as the task types allow.
//!
//! - Strings and byte strings are a length (LEB128) and their bytes; lists
//!   are a count and their items; an absent optional value is one `0` byte.
//! - Enums are their proto numbers; a timestamp is seconds and nanoseconds,
//!   so every value reads back exactly.
//! - Messages inside a task do not repeat the task's own id and context id
//!   (about 70 bytes per message); an empty id reads back as the task's.
//! - JSON values (metadata, data parts) are tagged nodes.
//!
//! Field names and a self-describing format (MessagePack, as before) cost
//! about four times the instructions per write and a fifth more memory.

use a2a_core::{Artifact, Message, Metadata, Part, PartContent, Role, Task, TaskState, TaskStatus};
use chrono::{DateTime, Utc};
use serde_json::{Number, Value};

/// Appends the stored form of `task` to `out`.
pub(crate) fn encode(task: &Task, out: &mut Vec<u8>) {
    put_str(out, &task.id);
    put_str(out, &task.context_id);
    put_status(out, &task.status, task);
    put_len(out, task.artifacts.len());
    for artifact in &task.artifacts {
        put_artifact(out, artifact);
    }
    put_len(out, task.history.len());
    for message in &task.history {
        put_message(out, message, task);
    }
    put_metadata(out, task.metadata.as_ref());
}

/// Reads a task written by [`encode`].
pub(crate) fn decode(bytes: &[u8]) -> Result<Task, Malformed> {
    let mut input = Reader { bytes, at: 0 };
    let id = input.string()?;
    let context_id = input.string()?;
    let ids = (id.as_str(), context_id.as_str());
    let status = input.status(ids)?;
    let artifacts = input.list(Reader::artifact)?;
    let history = input.list(|input| input.message(ids).map(Into::into))?;
    let metadata = input.metadata()?;
    if input.at != bytes.len() {
        return Err(Malformed("trailing bytes"));
    }
    Ok(Task {
        id,
        context_id,
        status,
        artifacts,
        history,
        metadata,
    })
}

/// Stored bytes that are no task: a bug (they are only ever this module's
/// own output), reported rather than a panic.
#[derive(Debug, thiserror::Error)]
#[error("malformed stored task: {0}")]
pub(crate) struct Malformed(&'static str);

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        // The low seven bits, with the continuation bit: the cast keeps them.
        #[allow(clippy::cast_possible_truncation)]
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    out.push(value as u8);
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    put_varint(out, len as u64);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    put_bytes(out, text.as_bytes());
}

fn put_strs(out: &mut Vec<u8>, texts: &[String]) {
    put_len(out, texts.len());
    for text in texts {
        put_str(out, text);
    }
}

/// A small enum's proto number as one byte (every such number is below 256).
fn put_number(out: &mut Vec<u8>, number: i32) {
    out.push(u8::try_from(number).unwrap_or(u8::MAX));
}

fn put_status(out: &mut Vec<u8>, status: &TaskStatus, task: &Task) {
    put_number(out, status.state.number());
    match &status.message {
        Some(message) => {
            out.push(1);
            put_message(out, message, task);
        }
        None => out.push(0),
    }
    match &status.timestamp {
        Some(at) => {
            out.push(1);
            // Zigzag: times before 1970 stay short too.
            let seconds = at.timestamp();
            #[allow(clippy::cast_sign_loss)]
            put_varint(out, ((seconds << 1) ^ (seconds >> 63)) as u64);
            put_varint(out, u64::from(at.timestamp_subsec_nanos()));
        }
        None => out.push(0),
    }
}

fn put_message(out: &mut Vec<u8>, message: &Message, task: &Task) {
    put_str(out, &message.message_id);
    put_str(out, own_id(&message.context_id, &task.context_id));
    put_str(out, own_id(&message.task_id, &task.id));
    put_number(out, message.role.number());
    put_parts(out, &message.parts);
    put_metadata(out, message.metadata.as_ref());
    put_strs(out, &message.extensions);
    put_strs(out, &message.reference_task_ids);
}

/// A message's id of its task or context, empty when it is the task's own.
fn own_id<'a>(id: &'a str, tasks: &str) -> &'a str {
    if id == tasks { "" } else { id }
}

fn put_artifact(out: &mut Vec<u8>, artifact: &Artifact) {
    put_str(out, &artifact.artifact_id);
    put_str(out, &artifact.name);
    put_str(out, &artifact.description);
    put_parts(out, &artifact.parts);
    put_metadata(out, artifact.metadata.as_ref());
    put_strs(out, &artifact.extensions);
}

/// Part kind tags.
const TEXT_PART: u8 = 0;
const RAW_PART: u8 = 1;
const URL_PART: u8 = 2;
const DATA_PART: u8 = 3;

fn put_parts(out: &mut Vec<u8>, parts: &[Part]) {
    put_len(out, parts.len());
    for part in parts {
        match &part.content {
            PartContent::Text(text) => {
                out.push(TEXT_PART);
                put_str(out, text);
            }
            PartContent::Raw(bytes) => {
                out.push(RAW_PART);
                put_bytes(out, bytes);
            }
            PartContent::Url(url) => {
                out.push(URL_PART);
                put_str(out, url);
            }
            PartContent::Data(value) => {
                out.push(DATA_PART);
                put_value(out, value);
            }
        }
        put_metadata(out, part.metadata.as_ref());
        put_str(out, &part.filename);
        put_str(out, &part.media_type);
    }
}

fn put_metadata(out: &mut Vec<u8>, metadata: Option<&Metadata>) {
    match metadata {
        Some(map) => {
            out.push(1);
            put_object(out, map);
        }
        None => out.push(0),
    }
}

fn put_object(out: &mut Vec<u8>, map: &Metadata) {
    put_len(out, map.len());
    for (key, value) in map {
        put_str(out, key);
        put_value(out, value);
    }
}

/// Value tags.
const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UNSIGNED: u8 = 3;
const NEGATIVE: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(number) => {
            if let Some(n) = number.as_u64() {
                out.push(UNSIGNED);
                put_varint(out, n);
            } else if let Some(n) = number.as_i64() {
                // Negative (the unsigned case came first): stored as its magnitude less one.
                out.push(NEGATIVE);
                #[allow(clippy::cast_sign_loss)]
                put_varint(out, !n as u64);
            } else {
                out.push(FLOAT);
                let n = number.as_f64().unwrap_or(f64::NAN);
                out.extend_from_slice(&n.to_bits().to_le_bytes());
            }
        }
        Value::String(text) => {
            out.push(STRING);
            put_str(out, text);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            put_len(out, items.len());
            for item in items {
                put_value(out, item);
            }
        }
        Value::Object(map) => {
            out.push(OBJECT);
            put_object(out, map);
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, Malformed> {
        let byte = *self.bytes.get(self.at).ok_or(Malformed("cut short"))?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed("varint too long"))
    }

    /// A count or length: never more than the bytes left, so no corrupt
    /// count can reserve more memory than the stored copy holds.
    fn len(&mut self) -> Result<usize, Malformed> {
        let len = self.varint()?;
        let left = self.bytes.len() - self.at;
        usize::try_from(len)
            .ok()
            .filter(|&len| len <= left)
            .ok_or(Malformed("length past the end"))
    }

    fn raw(&mut self) -> Result<&'a [u8], Malformed> {
        let len = self.len()?;
        let bytes = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(bytes)
    }

    fn str(&mut self) -> Result<&'a str, Malformed> {
        std::str::from_utf8(self.raw()?).map_err(|_| Malformed("text is not UTF-8"))
    }

    fn string(&mut self) -> Result<String, Malformed> {
        self.str().map(str::to_owned)
    }

    /// A string that stands for `otherwise` when stored empty.
    fn string_or(&mut self, otherwise: &str) -> Result<String, Malformed> {
        let text = self.str()?;
        Ok(if text.is_empty() { otherwise } else { text }.to_owned())
    }

    fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T, Malformed>,
    ) -> Result<Vec<T>, Malformed> {
        let len = self.len()?;
        let mut items = Vec::with_capacity(len);
        for _ in 0..len {
            items.push(item(self)?);
        }
        Ok(items)
    }

    fn strings(&mut self) -> Result<Vec<String>, Malformed> {
        self.list(Self::string)
    }

    fn flag(&mut self) -> Result<bool, Malformed> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Malformed("flag is neither 0 nor 1")),
        }
    }

    fn status(&mut self, ids: (&str, &str)) -> Result<TaskStatus, Malformed> {
        let state =
            TaskState::from_number(self.byte()?.into()).ok_or(Malformed("unknown task state"))?;
        let message = if self.flag()? {
            Some(self.message(ids)?.into())
        } else {
            None
        };
        let timestamp = if self.flag()? {
            let zigzag = self.varint()?;
            #[allow(clippy::cast_possible_wrap)]
            let seconds = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
            let nanos = u32::try_from(self.varint()?).map_err(|_| Malformed("nanoseconds"))?;
            Some(
                DateTime::<Utc>::from_timestamp(seconds, nanos)
                    .ok_or(Malformed("timestamp out of range"))?,
            )
        } else {
            None
        };
        Ok(TaskStatus {
            state,
            message,
            timestamp,
        })
    }

    /// A message of the task whose `(id, context id)` are `ids`.
    fn message(&mut self, (task_id, context_id): (&str, &str)) -> Result<Message, Malformed> {
        Ok(Message {
            message_id: self.string()?,
            context_id: self.string_or(context_id)?,
            task_id: self.string_or(task_id)?,
            role: Role::from_number(self.byte()?.into()).ok_or(Malformed("unknown role"))?,
            parts: self.list(Self::part)?,
            metadata: self.metadata()?,
            extensions: self.strings()?,
            reference_task_ids: self.strings()?,
        })
    }

    fn artifact(&mut self) -> Result<Artifact, Malformed> {
        Ok(Artifact {
            artifact_id: self.string()?,
            name: self.string()?,
            description: self.string()?,
            parts: self.list(Self::part)?,
            metadata: self.metadata()?,
            extensions: self.strings()?,
        })
    }

    fn part(&mut self) -> Result<Part, Malformed> {
        let content = match self.byte()? {
            TEXT_PART => PartContent::Text(self.string()?),
            RAW_PART => PartContent::Raw(self.raw()?.to_vec()),
            URL_PART => PartContent::Url(self.string()?),
            DATA_PART => PartContent::Data(self.value()?),
            _ => return Err(Malformed("unknown part kind")),
        };
        Ok(Part {
            content,
            metadata: self.metadata()?,
            filename: self.string()?,
            media_type: self.string()?,
        })
    }

    fn metadata(&mut self) -> Result<Option<Metadata>, Malformed> {
        if self.flag()? {
            self.object().map(Some)
        } else {
            Ok(None)
        }
    }

    fn object(&mut self) -> Result<Metadata, Malformed> {
        let len = self.len()?;
        let mut map = Metadata::new();
        for _ in 0..len {
            let key = self.string()?;
            map.insert(key, self.value()?);
        }
        Ok(map)
    }

    fn value(&mut self) -> Result<Value, Malformed> {
        Ok(match self.byte()? {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            UNSIGNED => Value::Number(self.varint()?.into()),
            NEGATIVE => {
                #[allow(clippy::cast_possible_wrap)]
                let n = !(self.varint()? as i64);
                Value::Number(n.into())
            }
            FLOAT => {
                let bytes = self
                    .bytes
                    .get(self.at..self.at + 8)
                    .ok_or(Malformed("cut short"))?;
                self.at += 8;
                let bits = u64::from_le_bytes(bytes.try_into().map_err(|_| Malformed("float"))?);
                Value::Number(
                    Number::from_f64(f64::from_bits(bits))
                        .ok_or(Malformed("float is no number"))?,
                )
            }
            STRING => Value::String(self.string()?),
            ARRAY => Value::Array(self.list(Self::value)?),
            OBJECT => Value::Object(self.object()?),
            _ => return Err(Malformed("unknown value tag")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::{Message, TaskState};

    fn round_trip(task: &Task) -> Task {
        let mut bytes = Vec::new();
        encode(task, &mut bytes);
        decode(&bytes).unwrap()
    }

    #[test]
    fn messages_do_not_repeat_the_tasks_ids() {
        let mut task = Task::new("a-task-id", "a-context-id", TaskState::Completed);
        task.history.push(
            Message::user_text("hi")
                .with_task_id("a-task-id")
                .with_context_id("a-context-id")
                .into(),
        );
        task.status.message = Some(
            Message::agent_text("yo")
                .with_task_id("a-task-id")
                .with_context_id("a-context-id")
                .into(),
        );
        let mut bytes = Vec::new();
        encode(&task, &mut bytes);
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(text.matches("a-task-id").count(), 1, "{text}");
        assert_eq!(text.matches("a-context-id").count(), 1, "{text}");
        assert_eq!(round_trip(&task), task);
    }

    #[test]
    fn numbers_keep_their_kind_and_value() {
        let mut task = Task::new("t", "c", TaskState::Working);
        let values = [
            Value::from(0u64),
            Value::from(u64::MAX),
            Value::from(-1i64),
            Value::from(i64::MIN),
            Value::from(0.5f64),
            Value::from(-0.0f64),
            Value::from(f64::MAX),
        ];
        task.metadata = Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v.clone()))
                .collect(),
        );
        assert_eq!(round_trip(&task), task);
    }

    #[test]
    fn timestamps_keep_nanoseconds_and_old_dates() {
        let mut task = Task::new("t", "c", TaskState::Working);
        for at in [
            DateTime::from_timestamp(1_700_000_000, 123_456_789),
            DateTime::from_timestamp(-62_000_000_000, 1),
        ] {
            task.status.timestamp = at;
            assert_eq!(round_trip(&task), task);
        }
    }

    #[test]
    fn every_cut_or_corrupt_form_is_an_error_not_a_panic() {
        let mut task = Task::new("t", "c", TaskState::Completed);
        task.history.push(Message::user_text("hello").into());
        task.metadata = Some([("k".to_owned(), Value::from(1.5))].into_iter().collect());
        let mut bytes = Vec::new();
        encode(&task, &mut bytes);
        for end in 0..bytes.len() {
            assert!(decode(&bytes[..end]).is_err(), "cut at {end}");
        }
        for at in 0..bytes.len() {
            for byte in [0x00, 0x7f, 0xff] {
                let mut corrupt = bytes.clone();
                corrupt[at] = byte;
                let _ = decode(&corrupt);
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }
}
