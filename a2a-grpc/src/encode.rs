//! The task-bearing answers written as protobuf straight from the core
//! values that hold them.
//!
//! Converting to the generated types ([`crate::convert::ToProto`]) takes a
//! value apart into a second tree of strings and vectors, copies each
//! message a task shares with its store, and drops that tree once prost has
//! written it. A task, a `SendMessage` answer, a page of tasks and a stream
//! event are most of what a server sends, so they are written here from a
//! borrow instead: field by field, with the numbers of `proto/a2a.proto`
//! (and of `google/protobuf/struct.proto` and `timestamp.proto`), in number
//! order, leaving out the proto3 defaults as prost does. The tests check
//! that prost reads back exactly the converted message.

use a2a_core as core;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// A value written as the fields of its protobuf message.
///
/// There is no length beside it: a message's length is patched in after
/// its fields are written ([`put_message`]), as asking for it first would
/// walk each nested message once for every message above it.
pub(crate) trait Encode {
    /// Appends the fields.
    fn encode(&self, out: &mut Vec<u8>);
}

/// A message of the generated types, written by prost.
pub(crate) struct Prost<'a, M>(pub(crate) &'a M);

impl<M: prost::Message> Encode for Prost<'_, M> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode_raw(out);
    }
}

// ===== the wire format's pieces =====

/// The wire type of a varint field (an integer, bool or enum).
pub(crate) const VARINT: u64 = 0;
const FIXED64: u64 = 1;
/// The wire type of a length-delimited field (a string, bytes or message).
pub(crate) const LENGTH_DELIMITED: u64 = 2;

#[allow(clippy::cast_possible_truncation)] // the low seven bits, by design
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_key(out: &mut Vec<u8>, tag: u32, wire_type: u64) {
    put_varint(out, (u64::from(tag) << 3) | wire_type);
}

/// A length, as the varint that prefixes a length-delimited field.
fn len_varint(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

fn put_delimited(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, LENGTH_DELIMITED);
    put_varint(out, len_varint(bytes.len()));
    out.extend_from_slice(bytes);
}

/// A `string` (or `bytes`) field, left out when empty.
fn put_bytes(out: &mut Vec<u8>, tag: u32, value: &[u8]) {
    if !value.is_empty() {
        put_delimited(out, tag, value);
    }
}

/// A `repeated string` field: each item written, empty or not.
fn put_strings(out: &mut Vec<u8>, tag: u32, values: &[String]) {
    for value in values {
        put_delimited(out, tag, value.as_bytes());
    }
}

/// An `int32` or enum field, left out when zero. A negative one is
/// sign-extended to ten bytes, as protobuf has it.
#[allow(clippy::cast_sign_loss)] // the sign extension is the encoding
fn put_int32(out: &mut Vec<u8>, tag: u32, value: i32) {
    if value != 0 {
        put_key(out, tag, VARINT);
        put_varint(out, i64::from(value) as u64);
    }
}

/// A `bool` field, left out when false.
fn put_bool(out: &mut Vec<u8>, tag: u32, value: bool) {
    if value {
        put_key(out, tag, VARINT);
        out.push(1);
    }
}

/// A message field, written when present even with no fields.
///
/// Writes the fields first and the length after: asking a message for its
/// length before writing it would walk each nested message once for every
/// message above it. One byte is kept for the length, which most fields fit
/// in; a longer one moves the fields along.
#[allow(clippy::cast_possible_truncation)] // under 128, by the check
fn put_message(out: &mut Vec<u8>, tag: u32, value: &impl Encode) {
    put_key(out, tag, LENGTH_DELIMITED);
    let at = out.len();
    out.push(0);
    value.encode(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        // The fields move along by the length's extra bytes, in one move.
        let (length, width) = long_varint(len_varint(len));
        let end = out.len();
        out.resize(end + width - 1, 0);
        out.copy_within(at + 1..end, at + width);
        out[at..at + width].copy_from_slice(&length[..width]);
    }
}

/// A varint of at least two bytes, and how many it takes: a long length,
/// written before the fields it counts once they are in place.
#[allow(clippy::cast_possible_truncation)] // the low seven bits, by design
fn long_varint(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0; 10];
    let mut width = 0;
    while value >= 0x80 {
        bytes[width] = value as u8 | 0x80;
        value >>= 7;
        width += 1;
    }
    bytes[width] = value as u8;
    (bytes, width + 1)
}

fn put_optional(out: &mut Vec<u8>, tag: u32, value: Option<&impl Encode>) {
    if let Some(value) = value {
        put_message(out, tag, value);
    }
}

/// A `repeated` message field.
fn put_messages<T: Encode>(out: &mut Vec<u8>, tag: u32, values: &[T]) {
    for value in values {
        put_message(out, tag, value);
    }
}

// ===== google.protobuf well-known types =====

/// `google.protobuf.Timestamp`.
impl Encode for DateTime<Utc> {
    #[allow(clippy::cast_sign_loss)]
    fn encode(&self, out: &mut Vec<u8>) {
        let seconds = self.timestamp();
        if seconds != 0 {
            put_key(out, 1, VARINT);
            put_varint(out, seconds as u64);
        }
        put_int32(out, 2, nanos(self));
    }
}

/// The nanoseconds of a timestamp, as [`crate::convert`] writes them (a
/// leap second's 1,000,000,000 and more included).
#[allow(clippy::cast_possible_wrap)]
fn nanos(time: &DateTime<Utc>) -> i32 {
    time.timestamp_subsec_nanos() as i32
}

/// `google.protobuf.Struct`: a map entry (key 1, value 2) per field.
impl Encode for Map<String, Value> {
    fn encode(&self, out: &mut Vec<u8>) {
        for (key, value) in self {
            put_message(out, 1, &StructEntry(key, value));
        }
    }
}

/// One field of a `google.protobuf.Struct`, as its map entry: `key` (1)
/// and `value` (2).
struct StructEntry<'a>(&'a str, &'a Value);

impl Encode for StructEntry<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.0.as_bytes());
        put_message(out, 2, self.1);
    }
}

/// `google.protobuf.Value`: its one `kind`, written even when it is the
/// kind's default (a oneof's member always is).
impl Encode for Value {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => {
                put_key(out, 1, VARINT);
                out.push(0);
            }
            Value::Number(n) => {
                put_key(out, 2, FIXED64);
                // As the conversion: a number with no `f64` form is NaN.
                out.extend_from_slice(&n.as_f64().unwrap_or(f64::NAN).to_le_bytes());
            }
            Value::String(s) => put_delimited(out, 3, s.as_bytes()),
            Value::Bool(b) => {
                put_key(out, 4, VARINT);
                out.push(u8::from(*b));
            }
            Value::Object(map) => put_message(out, 5, map),
            Value::Array(items) => put_message(out, 6, &ListValue(items)),
        }
    }
}

/// `google.protobuf.ListValue`: `values` (1).
struct ListValue<'a>(&'a [Value]);

impl Encode for ListValue<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        put_messages(out, 1, self.0);
    }
}

// ===== lf.a2a.v1 =====

impl Encode for core::Part {
    fn encode(&self, out: &mut Vec<u8>) {
        match &self.content {
            core::PartContent::Text(text) => put_delimited(out, 1, text.as_bytes()),
            core::PartContent::Raw(raw) => put_delimited(out, 2, raw),
            core::PartContent::Url(url) => put_delimited(out, 3, url.as_bytes()),
            core::PartContent::Data(data) => put_message(out, 4, data),
        }
        put_optional(out, 5, self.metadata.as_ref());
        put_bytes(out, 6, self.filename.as_bytes());
        put_bytes(out, 7, self.media_type.as_bytes());
    }
}

impl Encode for core::Message {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.message_id.as_bytes());
        put_bytes(out, 2, self.context_id.as_bytes());
        put_bytes(out, 3, self.task_id.as_bytes());
        put_int32(out, 4, self.role.number());
        put_messages(out, 5, &self.parts);
        put_optional(out, 6, self.metadata.as_ref());
        put_strings(out, 7, &self.extensions);
        put_strings(out, 8, &self.reference_task_ids);
    }
}

/// A message a task shares with its store: written from the one copy.
impl<T: Encode> Encode for std::sync::Arc<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }
}

impl Encode for core::Artifact {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.artifact_id.as_bytes());
        put_bytes(out, 2, self.name.as_bytes());
        put_bytes(out, 3, self.description.as_bytes());
        put_messages(out, 4, &self.parts);
        put_optional(out, 5, self.metadata.as_ref());
        put_strings(out, 6, &self.extensions);
    }
}

impl Encode for core::TaskStatus {
    fn encode(&self, out: &mut Vec<u8>) {
        put_int32(out, 1, self.state.number());
        put_optional(out, 2, self.message.as_ref());
        put_optional(out, 3, self.timestamp.as_ref());
    }
}

impl Encode for core::Task {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.id.as_bytes());
        put_bytes(out, 2, self.context_id.as_bytes());
        put_message(out, 3, &self.status);
        put_messages(out, 4, &self.artifacts);
        put_messages(out, 5, &self.history);
        put_optional(out, 6, self.metadata.as_ref());
    }
}

impl Encode for core::TaskStatusUpdateEvent {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.task_id.as_bytes());
        put_bytes(out, 2, self.context_id.as_bytes());
        put_message(out, 3, &self.status);
        put_optional(out, 4, self.metadata.as_ref());
    }
}

impl Encode for core::TaskArtifactUpdateEvent {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 1, self.task_id.as_bytes());
        put_bytes(out, 2, self.context_id.as_bytes());
        put_message(out, 3, &self.artifact);
        put_bool(out, 4, self.append);
        put_bool(out, 5, self.last_chunk);
        put_optional(out, 6, self.metadata.as_ref());
    }
}

impl Encode for core::StreamResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            core::StreamResponse::Task(task) => put_message(out, 1, task),
            core::StreamResponse::Message(message) => put_message(out, 2, message),
            core::StreamResponse::StatusUpdate(update) => put_message(out, 3, update),
            core::StreamResponse::ArtifactUpdate(update) => put_message(out, 4, update),
        }
    }
}

impl Encode for core::SendMessageResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            core::SendMessageResponse::Task(task) => put_message(out, 1, task),
            core::SendMessageResponse::Message(message) => put_message(out, 2, message),
        }
    }
}

impl Encode for core::ListTasksResponse {
    fn encode(&self, out: &mut Vec<u8>) {
        put_messages(out, 1, &self.tasks);
        put_bytes(out, 2, self.next_page_token.as_bytes());
        put_int32(out, 3, self.page_size);
        put_int32(out, 4, self.total_size);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use a2a_core as core;
    use prost::Message as _;
    use serde_json::json;

    use super::*;
    use crate::convert::ToProto;

    fn encoded(value: &impl Encode) -> Vec<u8> {
        let mut out = Vec::new();
        value.encode(&mut out);
        out
    }

    /// What the encoder writes is what prost reads back as the converted
    /// message, and as long as prost's own encoding of it.
    fn check<T>(value: &T)
    where
        T: Encode + ToProto + Clone,
        T::Proto: prost::Message + Default + PartialEq + std::fmt::Debug,
    {
        let bytes = encoded(value);
        let expected = value.clone().to_proto();
        let decoded = T::Proto::decode(bytes.as_slice()).expect("prost reads it");
        assert_eq!(decoded, expected);
        assert_eq!(bytes, expected.encode_to_vec(), "prost's own bytes");
    }

    fn metadata() -> core::Metadata {
        let json = json!({
            "": "an empty key",
            "null": null,
            "yes": true,
            "no": false,
            "zero": 0,
            "int": -42,
            "float": 1.5e300,
            "text": "ünïcödé",
            "empty": "",
            "list": [1, "two", [3], {"four": 4}, null, []],
            "object": {"nested": {"deeper": [true]}},
            "emptyObject": {},
            "long": "x".repeat(300),
        });
        json.as_object().cloned().unwrap()
    }

    fn parts() -> Vec<core::Part> {
        vec![
            core::Part::text("hello"),
            core::Part::text(""),
            core::Part {
                content: core::PartContent::Raw(vec![0, 1, 2, 255]),
                metadata: Some(metadata()),
                filename: "a.bin".into(),
                media_type: "application/octet-stream".into(),
            },
            core::Part {
                content: core::PartContent::Raw(Vec::new()),
                metadata: Some(core::Metadata::new()),
                filename: String::new(),
                media_type: String::new(),
            },
            core::Part {
                content: core::PartContent::Url("https://example.com/f".into()),
                metadata: None,
                filename: "f".into(),
                media_type: String::new(),
            },
            core::Part {
                content: core::PartContent::Data(json!({"k": [1, 2.5, null]})),
                metadata: None,
                filename: String::new(),
                media_type: "application/json".into(),
            },
            core::Part {
                content: core::PartContent::Data(json!(null)),
                metadata: None,
                filename: String::new(),
                media_type: String::new(),
            },
        ]
    }

    fn message(role: core::Role) -> core::Message {
        core::Message {
            message_id: "m-1".into(),
            context_id: "c-1".into(),
            task_id: "t-1".into(),
            role,
            parts: parts(),
            metadata: Some(metadata()),
            extensions: vec!["https://ext/a".into(), String::new()],
            reference_task_ids: vec!["t-0".into()],
        }
    }

    fn artifact() -> core::Artifact {
        core::Artifact {
            artifact_id: "a-1".into(),
            name: "report".into(),
            description: String::new(),
            parts: parts(),
            metadata: Some(metadata()),
            extensions: vec!["https://ext/b".into()],
        }
    }

    fn task() -> core::Task {
        let shared = Arc::new(message(core::Role::User));
        let mut task = core::Task::new("t-1", "c-1", core::TaskState::Submitted);
        task.status = core::TaskStatus {
            state: core::TaskState::Working,
            message: Some(Arc::new(message(core::Role::Agent))),
            timestamp: Some(chrono::DateTime::from_timestamp(1_700_000_000, 123_456_789).unwrap()),
        };
        task.artifacts = vec![artifact(), core::Artifact::default()];
        task.history = vec![shared.clone(), shared];
        task.metadata = Some(metadata());
        task
    }

    #[test]
    fn a_full_task_reads_back_as_its_conversion() {
        check(&task());
    }

    #[test]
    fn a_task_of_defaults_reads_back_as_its_conversion() {
        // Every string empty, the state unspecified, no timestamp, no
        // metadata: the status is still written (its message is present).
        let task = core::Task::default();
        let bytes = encoded(&task);
        assert_eq!(bytes, [0x1a, 0x00], "only the empty status message");
        check(&task);
    }

    #[test]
    fn every_answer_reads_back_as_its_conversion() {
        check(&core::SendMessageResponse::Task(task()));
        check(&core::SendMessageResponse::Message(message(
            core::Role::Agent,
        )));
        check(&core::StreamResponse::Task(task()));
        check(&core::StreamResponse::Message(message(core::Role::User)));
        check(&core::StreamResponse::StatusUpdate(
            core::TaskStatusUpdateEvent {
                task_id: "t-1".into(),
                context_id: "c-1".into(),
                status: task().status,
                metadata: Some(metadata()),
            },
        ));
        check(&core::StreamResponse::ArtifactUpdate(
            core::TaskArtifactUpdateEvent {
                task_id: "t-1".into(),
                context_id: "c-1".into(),
                artifact: artifact(),
                append: true,
                last_chunk: false,
                metadata: None,
            },
        ));
        check(&core::ListTasksResponse {
            tasks: vec![
                task(),
                core::Task::new("t-2", "c-2", core::TaskState::Completed),
            ],
            next_page_token: "next".into(),
            page_size: 2,
            total_size: 7,
        });
        check(&core::ListTasksResponse {
            tasks: Vec::new(),
            next_page_token: String::new(),
            page_size: 0,
            total_size: -1,
        });
    }

    #[test]
    fn timestamps_before_1970_and_at_a_leap_second_read_back() {
        for (seconds, nanos) in [(-62_135_596_800, 0), (-1, 999_999_999), (0, 1), (1, 0)] {
            let mut task = core::Task::new("t", "c", core::TaskState::Failed);
            task.status.timestamp = chrono::DateTime::from_timestamp(seconds, nanos);
            assert!(task.status.timestamp.is_some());
            check(&task);
        }
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .and_then(|d| d.and_hms_nano_opt(23, 59, 59, 1_500_000_000))
            .unwrap()
            .and_utc();
        let mut task = core::Task::new("t", "c", core::TaskState::Failed);
        task.status.timestamp = Some(leap);
        check(&task);
    }

    #[test]
    fn lengths_that_take_several_varint_bytes_read_back() {
        // A text over 2^14 bytes: its length prefix takes three bytes, and
        // each enclosing message's prefix grows with it.
        let mut message = message(core::Role::Agent);
        message.parts = vec![core::Part::text("y".repeat(20_000))];
        check(&core::SendMessageResponse::Message(message));
    }

    #[test]
    fn varints_are_the_bytes_prost_writes() {
        for value in [128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let (bytes, width) = long_varint(value);
            let mut expected = Vec::new();
            prost::encoding::encode_varint(value, &mut expected);
            assert_eq!(bytes[..width], expected[..], "{value}");
        }
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut expected = Vec::new();
            prost::encoding::encode_varint(value, &mut expected);
            assert_eq!(out, expected, "{value}");
        }
    }
}
