//! The common `SendMessageRequest` read straight into the core type.
//!
//! Read the general way, a request is decoded by prost into the generated
//! types and then moved field by field into the core ones
//! ([`crate::convert::FromProto`]): a second tree of vectors built and
//! dropped on every call. Most requests are a message of text parts and ids
//! and nothing else, so that shape is read here in one pass, straight from
//! the bytes.
//!
//! Only a shape whose meaning is plain is read here: each field this
//! reader knows, once where protobuf would merge repeated occurrences, with
//! its proper wire type and valid UTF-8. Anything else (configuration,
//! metadata, a data part, an unknown field, a malformed byte) gives `None`,
//! and the caller reads the request the general way, which decides what it
//! means or which error it is. So this reader never answers differently
//! from prost and the conversion; the tests hold it to that.

use a2a_core as core;

use crate::encode::{LENGTH_DELIMITED, VARINT};

/// A `SendMessageRequest` of the common shape, or `None` for the general
/// reader.
pub(crate) fn send_message_request(bytes: &[u8]) -> Option<core::SendMessageRequest> {
    let mut fields = Fields(bytes);
    let mut tenant = String::new();
    let mut message = None;
    while let Some((number, wire_type)) = fields.key()? {
        match (number, wire_type) {
            (1, LENGTH_DELIMITED) => tenant = fields.string()?,
            // A second message would be merged into the first.
            (2, LENGTH_DELIMITED) if message.is_none() => {
                message = Some(read_message(fields.delimited()?)?);
            }
            _ => return None,
        }
    }
    Some(core::SendMessageRequest {
        tenant,
        message: message?,
        configuration: None,
        metadata: None,
    })
}

fn read_message(bytes: &[u8]) -> Option<core::Message> {
    let mut fields = Fields(bytes);
    let mut message = core::Message {
        message_id: String::new(),
        context_id: String::new(),
        task_id: String::new(),
        role: core::Role::Unspecified,
        parts: Vec::new(),
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let mut role = 0;
    while let Some((number, wire_type)) = fields.key()? {
        match (number, wire_type) {
            (1, LENGTH_DELIMITED) => message.message_id = fields.string()?,
            (2, LENGTH_DELIMITED) => message.context_id = fields.string()?,
            (3, LENGTH_DELIMITED) => message.task_id = fields.string()?,
            // An enum is an int32: a wider varint keeps its low 32 bits.
            #[allow(clippy::cast_possible_truncation)]
            (4, VARINT) => role = fields.varint()? as i32,
            (5, LENGTH_DELIMITED) => message.parts.push(read_part(fields.delimited()?)?),
            (7, LENGTH_DELIMITED) => message.extensions.push(fields.string()?),
            (8, LENGTH_DELIMITED) => message.reference_task_ids.push(fields.string()?),
            _ => return None,
        }
    }
    message.role = core::Role::from_number(role)?;
    Some(message)
}

fn read_part(bytes: &[u8]) -> Option<core::Part> {
    let mut fields = Fields(bytes);
    let mut content = None;
    let mut filename = String::new();
    let mut media_type = String::new();
    while let Some((number, wire_type)) = fields.key()? {
        match (number, wire_type) {
            // One content: a second one would replace (or merge into) it.
            (1, LENGTH_DELIMITED) if content.is_none() => {
                content = Some(core::PartContent::Text(fields.string()?));
            }
            (2, LENGTH_DELIMITED) if content.is_none() => {
                content = Some(core::PartContent::Raw(fields.delimited()?.to_vec()));
            }
            (3, LENGTH_DELIMITED) if content.is_none() => {
                content = Some(core::PartContent::Url(fields.string()?));
            }
            (6, LENGTH_DELIMITED) => filename = fields.string()?,
            (7, LENGTH_DELIMITED) => media_type = fields.string()?,
            _ => return None,
        }
    }
    Some(core::Part {
        content: content?,
        metadata: None,
        filename,
        media_type,
    })
}

/// The fields of one message, read front to back.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// The next field's number and wire type; `Some(None)` at the end.
    fn key(&mut self) -> Option<Option<(u64, u64)>> {
        if self.0.is_empty() {
            return Some(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        // Field numbers are 1 to 2^29 - 1.
        (1..1 << 29)
            .contains(&number)
            .then_some(Some((number, key & 7)))
    }

    /// A varint of at most ten bytes, the last of which holds one bit.
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0;
        for (at, &byte) in self.0.iter().enumerate().take(10) {
            if at == 9 && byte > 1 {
                return None;
            }
            value |= u64::from(byte & 0x7f) << (7 * at);
            if byte < 0x80 {
                self.0 = &self.0[at + 1..];
                return Some(value);
            }
        }
        None
    }

    /// A length-delimited field's bytes.
    fn delimited(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        let bytes = self.0.get(..len)?;
        self.0 = &self.0[len..];
        Some(bytes)
    }

    fn string(&mut self) -> Option<String> {
        std::str::from_utf8(self.delimited()?)
            .ok()
            .map(String::from)
    }
}

#[cfg(test)]
mod tests {
    use a2a_core as core;
    use proptest::prelude::*;
    use prost::Message as _;

    use super::send_message_request;
    use crate::convert::{FromProto, ToProto};
    use crate::pb;

    /// The general reader: prost, then the conversion.
    fn general(bytes: &[u8]) -> Option<core::SendMessageRequest> {
        let proto = pb::SendMessageRequest::decode(bytes).ok()?;
        core::SendMessageRequest::from_proto(proto).ok()
    }

    /// Whatever this reader reads, the general one reads the same.
    fn agrees(bytes: &[u8]) -> bool {
        match send_message_request(bytes) {
            Some(read) => general(bytes).as_ref() == Some(&read),
            None => true,
        }
    }

    fn common() -> core::SendMessageRequest {
        let mut message = core::Message::user_text("hello");
        message.message_id = "m-1".into();
        message.context_id = "c-1".into();
        message.task_id = "t-1".into();
        message.parts.push(core::Part {
            content: core::PartContent::Raw(vec![0, 1, 255]),
            metadata: None,
            filename: "a.bin".into(),
            media_type: "application/octet-stream".into(),
        });
        message.parts.push(core::Part {
            content: core::PartContent::Url("https://example.com/f".into()),
            metadata: None,
            filename: String::new(),
            media_type: String::new(),
        });
        message.parts.push(core::Part::text(""));
        message.extensions = vec!["https://ext/a".into(), String::new()];
        message.reference_task_ids = vec!["t-0".into()];
        core::SendMessageRequest {
            tenant: "tenant-a".into(),
            message,
            configuration: None,
            metadata: None,
        }
    }

    #[test]
    fn the_common_shape_is_read_as_the_general_reader_reads_it() {
        let request = common();
        let bytes = request.clone().to_proto().encode_to_vec();
        assert_eq!(send_message_request(&bytes), Some(request.clone()));
        assert_eq!(general(&bytes), Some(request));
        // The benchmark's and most clients' request: one text part.
        let plain = core::SendMessageRequest::new(core::Message::user_text("hi"));
        let bytes = plain.clone().to_proto().encode_to_vec();
        assert_eq!(send_message_request(&bytes), Some(plain));
    }

    #[test]
    fn other_shapes_are_left_to_the_general_reader() {
        let mut with_metadata = common();
        with_metadata.metadata = Some(core::Metadata::new());
        let mut with_configuration = common();
        with_configuration.configuration = Some(core::SendMessageConfiguration::default());
        let mut with_message_metadata = common();
        with_message_metadata.message.metadata = Some(core::Metadata::new());
        let mut with_data_part = common();
        with_data_part
            .message
            .parts
            .push(core::Part::data(serde_json::json!({"k": 1})));
        for request in [
            with_metadata,
            with_configuration,
            with_message_metadata,
            with_data_part,
        ] {
            let bytes = request.clone().to_proto().encode_to_vec();
            assert_eq!(send_message_request(&bytes), None);
            assert_eq!(general(&bytes), Some(request));
        }
    }

    #[test]
    fn what_protobuf_would_merge_or_reject_is_left_to_the_general_reader() {
        let bytes = common().to_proto().encode_to_vec();
        let message = pb::Message {
            message_id: "m-2".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let mut twice = bytes.clone();
        twice.push(0x12); // field 2, length-delimited: a second message
        twice.push(u8::try_from(message.len()).unwrap());
        twice.extend_from_slice(&message);
        let unknown_field = [bytes.as_slice(), &[0x28, 0x01]].concat(); // field 5, varint
        let wrong_wire_type = [bytes.as_slice(), &[0x09, 0, 0, 0, 0, 0, 0, 0, 0]].concat();
        let bad_utf8 = [0x0a, 0x01, 0xff];
        let truncated = &bytes[..bytes.len() - 1];
        let overlong_varint = [
            0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        let field_zero = [0x02, 0x00];
        // A part with no content, and one with two.
        let no_content = [0x12, 0x04, 0x2a, 0x02, 0x32, 0x00];
        let two_contents = [0x12, 0x08, 0x2a, 0x06, 0x0a, 0x01, b'a', 0x1a, 0x01, b'b'];
        let unknown_role = [0x12, 0x02, 0x20, 0x63];
        let no_message = [0x0a, 0x01, b't'];
        for bytes in [
            &twice[..],
            &unknown_field,
            &wrong_wire_type,
            &bad_utf8,
            truncated,
            &overlong_varint,
            &field_zero,
            &no_content,
            &two_contents,
            &unknown_role,
            &no_message,
        ] {
            assert_eq!(send_message_request(bytes), None, "{bytes:?}");
        }
    }

    #[test]
    fn a_repeated_string_field_keeps_its_last_value_as_prost_does() {
        let mut bytes = common().to_proto().encode_to_vec();
        bytes.extend_from_slice(&[0x0a, 0x01, b'z']); // the tenant again
        let read = send_message_request(&bytes).unwrap();
        assert_eq!(read.tenant, "z");
        assert!(agrees(&bytes));
    }

    /// `request` in the common shape: no configuration, no metadata, no
    /// data part.
    fn commonly_shaped(mut request: core::SendMessageRequest) -> core::SendMessageRequest {
        request.configuration = None;
        request.metadata = None;
        request.message.metadata = None;
        for part in &mut request.message.parts {
            part.metadata = None;
            if let core::PartContent::Data(data) = &part.content {
                part.content = core::PartContent::Text(data.to_string());
            }
        }
        request
    }

    proptest! {
        #[test]
        fn any_request_reads_as_the_general_reader_reads_it(
            request in a2a_core::arbitrary::send_message_request(),
        ) {
            let bytes = request.clone().to_proto().encode_to_vec();
            prop_assert!(agrees(&bytes));
            let common = commonly_shaped(request);
            let bytes = common.clone().to_proto().encode_to_vec();
            prop_assert_eq!(send_message_request(&bytes), Some(common.clone()));
            prop_assert_eq!(general(&bytes), Some(common));
        }

        #[test]
        fn any_bytes_read_as_the_general_reader_reads_them(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            prop_assert!(agrees(&bytes));
        }

        #[test]
        fn any_damage_to_a_request_reads_as_the_general_reader_reads_it(
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = common().to_proto().encode_to_vec();
            let at = at.index(bytes.len());
            bytes[at] = byte;
            prop_assert!(agrees(&bytes));
            prop_assert!(agrees(&bytes[..cut.index(bytes.len())]));
        }
    }
}
