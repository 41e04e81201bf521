//! Compact ProtoJSON of the task types written straight into a buffer.
//!
//! Every task, event and answer a server sends goes through here, so it skips
//! serde's general machinery: member names are byte literals (serde writes
//! each one as a string to be escaped), and strings are scanned for escapes
//! eight bytes at a time. The bytes are exactly those of the types' `Serialize`
//! impls through `serde_json` (a property test holds the two together); JSON
//! values (metadata, data parts) go through `serde_json` itself.

use crate::protojson::{encode_bytes, format_timestamp, millisecond_timestamp};
use crate::{
    Artifact, Message, Metadata, Part, PartContent, SendMessageResponse, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};

/// A type whose compact ProtoJSON can be appended to a buffer directly.
pub trait WriteJson {
    /// Appends this value's compact ProtoJSON to `out`: the same bytes its
    /// `Serialize` impl gives through `serde_json`.
    fn write_json(&self, out: &mut Vec<u8>);
}

/// An object being written: commas between members, braces around them.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Object<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, empty: true }
    }

    /// Starts a member; `name` is its quoted name and colon (`"id":`), of a
    /// length known when compiled, so it is copied without a call.
    fn member<const N: usize>(&mut self, name: &[u8; N]) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.extend_from_slice(name);
        self.out
    }

    fn str<const N: usize>(&mut self, name: &[u8; N], value: &str) {
        write_str(self.member(name), value);
    }

    /// A string member that ProtoJSON leaves out when empty.
    fn str_unless_empty<const N: usize>(&mut self, name: &[u8; N], value: &str) {
        if !value.is_empty() {
            self.str(name, value);
        }
    }

    fn value<const N: usize>(&mut self, name: &[u8; N], value: &impl WriteJson) {
        value.write_json(self.member(name));
    }

    fn list<T: WriteJson, const N: usize>(&mut self, name: &[u8; N], items: &[T]) {
        write_list(self.member(name), items);
    }

    fn list_unless_empty<T: WriteJson, const N: usize>(&mut self, name: &[u8; N], items: &[T]) {
        if !items.is_empty() {
            self.list(name, items);
        }
    }

    fn metadata<const N: usize>(&mut self, name: &[u8; N], metadata: Option<&Metadata>) {
        if let Some(metadata) = metadata {
            write_value(self.member(name), metadata);
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

fn write_list<T: WriteJson>(out: &mut Vec<u8>, items: &[T]) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item.write_json(out);
    }
    out.push(b']');
}

/// Any JSON value, through `serde_json`.
fn write_value(out: &mut Vec<u8>, value: &impl serde::Serialize) {
    // A JSON value's members are named by strings and a Vec takes every
    // write: serde_json has nothing to fail on here.
    let written = serde_json::to_writer(&mut *out, value);
    debug_assert!(written.is_ok(), "{written:?}");
}

/// Whether any of the eight bytes of `chunk` must be escaped in a JSON
/// string: a control character, a quote or a backslash.
#[inline]
fn needs_escape(chunk: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte below n, per byte, for n <= 128 (bytes of 128 and up have their
    // high bit set and so never count).
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    below(chunk, 0x20)
        | zero(chunk ^ (ONES * u64::from(b'"')))
        | zero(chunk ^ (ONES * u64::from(b'\\')))
        != 0
}

/// Appends `text` as a JSON string, escaped as `serde_json` escapes it.
// This and the checks under it are inlined into other crates too: the
// conversation log writes a dozen short strings per line, and a call each
// cost more than checking them (with plain `#[inline]`, one of the two was
// still called).
#[inline(always)]
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    write_str_contents(out, text);
    out.push(b'"');
}

/// Appends `text` escaped for the inside of a JSON string (no quotes), as
/// `serde_json` escapes it: for a string written in pieces.
#[inline(always)]
pub fn write_str_contents(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if is_clean(bytes) {
        out.extend_from_slice(bytes);
    } else {
        escape(out, bytes);
    }
}

/// Whether `bytes` go into a JSON string as they are, eight at a time.
#[inline]
fn is_clean(bytes: &[u8]) -> bool {
    let word = |chunk: &[u8]| u64::from_le_bytes(chunk.try_into().unwrap_or([b' '; 8]));
    if let Some(last) = bytes.len().checked_sub(8) {
        // The last eight bytes, overlapping the chunks before them.
        bytes
            .chunks_exact(8)
            .all(|chunk| !needs_escape(word(chunk)))
            && !needs_escape(word(&bytes[last..]))
    } else {
        // Padded with spaces, which need no escape.
        let mut padded = [b' '; 8];
        padded[..bytes.len()].copy_from_slice(bytes);
        !needs_escape(u64::from_le_bytes(padded))
    }
}

/// A string with something to escape, a byte at a time.
fn escape(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escaped);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// A shared value is written as the value itself (as serde's `rc` writes it).
impl<T: WriteJson + ?Sized> WriteJson for std::sync::Arc<T> {
    fn write_json(&self, out: &mut Vec<u8>) {
        (**self).write_json(out);
    }
}

impl WriteJson for String {
    fn write_json(&self, out: &mut Vec<u8>) {
        write_str(out, self);
    }
}

impl WriteJson for Task {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.str(b"\"id\":", &self.id);
        object.str_unless_empty(b"\"contextId\":", &self.context_id);
        object.value(b"\"status\":", &self.status);
        object.list_unless_empty(b"\"artifacts\":", &self.artifacts);
        object.list_unless_empty(b"\"history\":", &self.history);
        object.metadata(b"\"metadata\":", self.metadata.as_ref());
        object.close();
    }
}

impl WriteJson for TaskStatus {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.str(b"\"state\":", self.state.as_str());
        if let Some(message) = &self.message {
            object.value(b"\"message\":", message);
        }
        if let Some(timestamp) = &self.timestamp {
            match millisecond_timestamp(timestamp) {
                Some(text) => {
                    let out = object.member(b"\"timestamp\":");
                    out.push(b'"');
                    out.extend_from_slice(&text);
                    out.push(b'"');
                }
                None => object.str(b"\"timestamp\":", &format_timestamp(timestamp)),
            }
        }
        object.close();
    }
}

impl WriteJson for Message {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.str(b"\"messageId\":", &self.message_id);
        object.str_unless_empty(b"\"contextId\":", &self.context_id);
        object.str_unless_empty(b"\"taskId\":", &self.task_id);
        object.str(b"\"role\":", self.role.as_str());
        object.list(b"\"parts\":", &self.parts);
        object.metadata(b"\"metadata\":", self.metadata.as_ref());
        object.list_unless_empty(b"\"extensions\":", &self.extensions);
        object.list_unless_empty(b"\"referenceTaskIds\":", &self.reference_task_ids);
        object.close();
    }
}

impl WriteJson for Part {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        match &self.content {
            PartContent::Text(text) => object.str(b"\"text\":", text),
            PartContent::Raw(bytes) => object.str(b"\"raw\":", &encode_bytes(bytes)),
            PartContent::Url(url) => object.str(b"\"url\":", url),
            PartContent::Data(data) => write_value(object.member(b"\"data\":"), data),
        }
        object.metadata(b"\"metadata\":", self.metadata.as_ref());
        object.str_unless_empty(b"\"filename\":", &self.filename);
        object.str_unless_empty(b"\"mediaType\":", &self.media_type);
        object.close();
    }
}

impl WriteJson for Artifact {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.str(b"\"artifactId\":", &self.artifact_id);
        object.str_unless_empty(b"\"name\":", &self.name);
        object.str_unless_empty(b"\"description\":", &self.description);
        object.list(b"\"parts\":", &self.parts);
        object.metadata(b"\"metadata\":", self.metadata.as_ref());
        object.list_unless_empty(b"\"extensions\":", &self.extensions);
        object.close();
    }
}

impl WriteJson for TaskStatusUpdateEvent {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.str(b"\"taskId\":", &self.task_id);
        object.str(b"\"contextId\":", &self.context_id);
        object.value(b"\"status\":", &self.status);
        object.metadata(b"\"metadata\":", self.metadata.as_ref());
        object.close();
    }
}

impl WriteJson for TaskArtifactUpdateEvent {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.str(b"\"taskId\":", &self.task_id);
        object.str(b"\"contextId\":", &self.context_id);
        object.value(b"\"artifact\":", &self.artifact);
        if self.append {
            object.member(b"\"append\":").extend_from_slice(b"true");
        }
        if self.last_chunk {
            object.member(b"\"lastChunk\":").extend_from_slice(b"true");
        }
        object.metadata(b"\"metadata\":", self.metadata.as_ref());
        object.close();
    }
}

impl WriteJson for StreamResponse {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        match self {
            StreamResponse::Task(task) => object.value(b"\"task\":", task),
            StreamResponse::Message(message) => object.value(b"\"message\":", message),
            StreamResponse::StatusUpdate(update) => object.value(b"\"statusUpdate\":", update),
            StreamResponse::ArtifactUpdate(update) => {
                object.value(b"\"artifactUpdate\":", update);
            }
        }
        object.close();
    }
}

impl WriteJson for SendMessageResponse {
    fn write_json(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        match self {
            SendMessageResponse::Task(task) => object.value(b"\"task\":", task),
            SendMessageResponse::Message(message) => object.value(b"\"message\":", message),
        }
        object.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(value: &impl WriteJson) -> String {
        let mut out = Vec::new();
        value.write_json(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "exactly8".into(),
            "sixteen bytes!!!".into(),
            "quote \" and backslash \\ late in a long string".into(),
            "\u{0}\u{1}\u{7}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{1f}\u{7f}".into(),
            "ünïcödé ✓ 🎉 and \u{2028}".into(),
        ];
        texts.extend((0u8..128).map(|b| format!("padding{}", char::from(b))));
        for text in texts {
            let mut out = Vec::new();
            write_str(&mut out, &text);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&text).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn timestamps_of_every_precision_are_written_as_serde_writes_them() {
        let mut task = Task::new("t", "c", crate::TaskState::Working);
        for (seconds, nanos) in [
            (1_700_000_000, 0),
            (1_700_000_000, 123_000_000),
            (1_700_000_000, 123_456_000),
            (1_700_000_000, 123_456_789),
            (-62_000_000_000, 5_000_000),
            (300_000_000_000, 0),
        ] {
            task.status.timestamp = chrono::DateTime::from_timestamp(seconds, nanos);
            assert_eq!(written(&task), serde_json::to_string(&task).unwrap());
        }
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(text in ".*", lead in 0usize..17) {
            // Every character at every offset within and across the 8-byte chunks.
            let text = format!("{}{text}", "x".repeat(lead));
            let mut out = Vec::new();
            write_str(&mut out, &text);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&text).unwrap());
        }

        #[test]
        fn tasks_are_written_as_serde_writes_them(task in crate::arbitrary::task()) {
            proptest::prop_assert_eq!(written(&task), serde_json::to_string(&task).unwrap());
            let answer = SendMessageResponse::Task(task);
            proptest::prop_assert_eq!(written(&answer), serde_json::to_string(&answer).unwrap());
        }

        #[test]
        fn events_are_written_as_serde_writes_them(event in crate::arbitrary::stream_response()) {
            proptest::prop_assert_eq!(written(&event), serde_json::to_string(&event).unwrap());
        }

        #[test]
        fn messages_are_written_as_serde_writes_them(message in crate::arbitrary::message()) {
            let answer = SendMessageResponse::Message(message);
            proptest::prop_assert_eq!(written(&answer), serde_json::to_string(&answer).unwrap());
        }
    }
}
