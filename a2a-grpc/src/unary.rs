//! A unary call's one message, read and answered without tonic's streaming
//! codec.
//!
//! A unary rpc is one length-prefixed message each way, then `grpc-status`
//! in the trailers. tonic serves it as a one-item stream: a decoder over a
//! growable buffer, its encoder's body, a metadata map made from the
//! headers and turned back into them. That machinery is about a seventh of
//! the instructions of a whole `SendMessage` on this binding. Here the
//! message is the body's own bytes (no copy when it comes in one frame, as
//! it nearly always does), and the answer is one buffer, framed as it is
//! written. Streaming rpcs keep tonic's codec.
//!
//! What a caller can observe is tonic's: the same status codes for an
//! encoding not served, a compressed flag, a message over the limit, a
//! missing or cut-off message, and the same trailers-only answer to an
//! error.

use std::pin::Pin;
use std::task::{Context, Poll};

use prost::bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use tonic::Status;
use tonic::codegen::{StdError, http};
use tonic::metadata::MetadataValue;

/// The length prefix's size: a compressed flag, then the length (u32, big-endian).
pub(crate) const PREFIX: usize = 5;

/// The largest request message read when the server sets no limit: tonic's
/// default, 4 MiB.
pub(crate) const DEFAULT_MAX_REQUEST: usize = 4 * 1024 * 1024;

// Names made once: a name from a string is checked character by character
// on each use.
static GRPC_ENCODING: http::HeaderName = http::HeaderName::from_static("grpc-encoding");
static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// Refuses a request whose `grpc-encoding` is one the server does not
/// decompress (it decompresses none): `UNIMPLEMENTED`, with
/// `grpc-accept-encoding: identity` telling the caller what it can send.
pub(crate) fn refuse_compression(headers: &http::HeaderMap) -> Result<(), Status> {
    let Some(encoding) = headers.get(&GRPC_ENCODING) else {
        return Ok(());
    };
    if encoding.as_bytes() == b"identity" {
        return Ok(());
    }
    let mut status = Status::unimplemented(format!(
        "Content is compressed with `{}` which isn't supported",
        String::from_utf8_lossy(encoding.as_bytes())
    ));
    status.metadata_mut().insert(
        "grpc-accept-encoding",
        MetadataValue::from_static("identity"),
    );
    Err(status)
}

/// Reads the body of a unary call to its end and returns its one message
/// (without the prefix).
///
/// A length over `limit` is refused (`OUT_OF_RANGE`, as tonic does) as soon
/// as the prefix is in, before the message is read. A body that ends before
/// its message does, or carries more than one, or sets the compressed flag,
/// is `INTERNAL`; a body that fails is the status its error carries (the
/// request budget's `UNAVAILABLE`, its read timeout's `INVALID_ARGUMENT`).
pub(crate) async fn read_message<B>(body: B, limit: usize) -> Result<Bytes, Status>
where
    B: http_body::Body,
    B::Error: Into<StdError>,
{
    let mut body = std::pin::pin!(body);
    let mut received = Received::default();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(err) => {
                let status = Status::from_error(err.into());
                // A caller that gave up on its request: what came is all.
                if status.code() == tonic::Code::Cancelled {
                    break;
                }
                return Err(status);
            }
        };
        // Request trailers carry nothing a unary call reads.
        if let Ok(mut data) = frame.into_data() {
            let data = data.copy_to_bytes(data.remaining());
            received.push(data);
            received.check(limit)?;
        }
    }
    received.message()
}

/// The bytes of a unary body so far: the first frame as it came, and a
/// buffer only once a second one does.
#[derive(Default)]
struct Received {
    first: Bytes,
    more: Option<BytesMut>,
}

impl Received {
    fn push(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        match &mut self.more {
            Some(more) => more.put(data),
            None if self.first.is_empty() => self.first = data,
            None => {
                let mut more = BytesMut::with_capacity(self.first.len() + data.len());
                more.put(std::mem::take(&mut self.first));
                more.put(data);
                self.more = Some(more);
            }
        }
    }

    fn bytes(&self) -> &[u8] {
        self.more.as_deref().unwrap_or(&self.first)
    }

    /// The message's length from its prefix, once the prefix is in.
    fn declared(&self) -> Result<Option<usize>, Status> {
        let Some(prefix) = self.bytes().get(..PREFIX) else {
            return Ok(None);
        };
        match prefix[0] {
            0 => {}
            1 => {
                return Err(Status::internal(
                    "protocol error: received message with compressed-flag but no grpc-encoding was specified",
                ));
            }
            flag => {
                return Err(Status::internal(format!(
                    "protocol error: received message with invalid compression flag: {flag} (valid flags are 0 and 1)"
                )));
            }
        }
        let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
        Ok(Some(usize::try_from(length).unwrap_or(usize::MAX)))
    }

    /// Refuses a message over `limit`, or bytes after the message.
    fn check(&self, limit: usize) -> Result<(), Status> {
        let Some(length) = self.declared()? else {
            return Ok(());
        };
        if length > limit {
            return Err(Status::out_of_range(format!(
                "Error, decoded message length too large: found {length} bytes, the limit is: {limit} bytes"
            )));
        }
        if self.bytes().len() > PREFIX + length {
            return Err(Status::internal(
                "a unary call carries one request message; this one carries more",
            ));
        }
        Ok(())
    }

    /// The message, once the body has ended.
    fn message(self) -> Result<Bytes, Status> {
        let Some(length) = self.declared()? else {
            return Err(if self.bytes().is_empty() {
                Status::internal("Missing request message.")
            } else {
                Status::internal("Unexpected EOF decoding stream.")
            });
        };
        if self.bytes().len() < PREFIX + length {
            return Err(Status::internal("Unexpected EOF decoding stream."));
        }
        let all = match self.more {
            Some(more) => more.freeze(),
            None => self.first,
        };
        Ok(all.slice(PREFIX..PREFIX + length))
    }
}

/// `message` with its prefix, in one buffer; `OUT_OF_RANGE` (as tonic
/// answers it) when it is over `limit`.
pub(crate) fn frame(
    message: &impl crate::encode::Encode,
    limit: Option<usize>,
) -> Result<Bytes, Status> {
    thread_local! {
        /// Where answers are written before they are copied out at their
        /// exact size: asking the message for its length first would walk
        /// all of it once more (a third of the encoding's instructions for
        /// a SendMessage answer), and copying a few hundred bytes costs far
        /// less.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        buffer.extend_from_slice(&[0; PREFIX]);
        // Into a `Vec`: a field, and a varint's byte, is written at a time,
        // which a `Vec` takes as plain stores.
        message.encode(&mut buffer);
        let length = buffer.len() - PREFIX;
        let over = limit.is_some_and(|limit| length > limit);
        let declared = u32::try_from(length).ok().filter(|_| !over);
        let framed = declared.map(|declared| {
            buffer[1..PREFIX].copy_from_slice(&declared.to_be_bytes());
            Bytes::copy_from_slice(&buffer)
        });
        // A huge answer should not pin its buffer's memory to the thread.
        if buffer.capacity() > 64 * 1024 {
            *buffer = Vec::new();
        }
        framed.ok_or_else(|| {
            let limit = limit.unwrap_or(u32::MAX as usize);
            Status::out_of_range(format!(
                "Error, encoded message length too large: found {length} bytes, the limit is: {limit} bytes"
            ))
        })
    })
}

/// The answer to a unary call: `framed`, then `grpc-status: 0`.
pub(crate) fn answer(framed: Bytes) -> http::Response<tonic::body::Body> {
    let mut response = http::Response::new(tonic::body::Body::new(UnaryAnswer {
        message: Some(framed),
        trailers_sent: false,
    }));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

/// One framed message, then the trailers of a call that succeeded.
struct UnaryAnswer {
    message: Option<Bytes>,
    trailers_sent: bool,
}

impl http_body::Body for UnaryAnswer {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Status>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(http_body::Frame::data(message))));
        }
        if self.trailers_sent {
            return Poll::Ready(None);
        }
        self.trailers_sent = true;
        let mut trailers = http::HeaderMap::with_capacity(1);
        trailers.insert(GRPC_STATUS.clone(), http::HeaderValue::from_static("0"));
        Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers_sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt as _;
    use http_body_util::BodyExt as _;

    /// A body of `frames` data frames, as they would come off the wire.
    fn body(frames: &[&[u8]]) -> impl http_body::Body<Data = Bytes, Error = Status> + use<> {
        let frames: Vec<Result<http_body::Frame<Bytes>, Status>> = frames
            .iter()
            .map(|frame| Ok(http_body::Frame::data(Bytes::copy_from_slice(frame))))
            .collect();
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    fn prefixed(message: &[u8]) -> Vec<u8> {
        let mut framed = vec![0];
        framed.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
        framed.extend_from_slice(message);
        framed
    }

    /// A task of `text_len` bytes of text, encoded as the server writes it.
    fn task_bytes(text_len: usize) -> (a2a_core::Task, Vec<u8>) {
        use crate::encode::Encode as _;
        let mut task = a2a_core::Task::new("t1", "c1", a2a_core::TaskState::Completed);
        task.history
            .push(a2a_core::Message::user_text("y".repeat(text_len)).into());
        let mut encoded = Vec::new();
        task.encode(&mut encoded);
        (task, encoded)
    }

    #[test]
    fn answers_are_framed_with_their_length_whatever_came_before() {
        // Small, then over the buffer's cap (so the thread's buffer is let
        // go), then small again: each frame is its own message, prefixed.
        for text_len in [10, 100_000, 300, 0] {
            let (task, encoded) = task_bytes(text_len);
            let framed = frame(&task, None).unwrap();
            assert_eq!(framed[..], prefixed(&encoded)[..], "{text_len}");
        }
        let (task, encoded) = task_bytes(50);
        assert_eq!(
            frame(&task, Some(encoded.len())).unwrap()[..],
            prefixed(&encoded)[..]
        );
    }

    #[test]
    fn an_answer_over_the_limit_is_out_of_range_and_the_next_one_is_whole() {
        let (task, encoded) = task_bytes(500);
        let refused = frame(&task, Some(encoded.len() - 1)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::OutOfRange);
        assert_eq!(
            refused.message(),
            format!(
                "Error, encoded message length too large: found {} bytes, the limit is: {} bytes",
                encoded.len(),
                encoded.len() - 1
            )
        );
        let (small, small_encoded) = task_bytes(3);
        assert_eq!(
            frame(&small, Some(1_000)).unwrap()[..],
            prefixed(&small_encoded)[..]
        );
    }

    #[tokio::test]
    async fn a_message_in_one_frame_or_many_is_read_whole() {
        let framed = prefixed(b"hello");
        let whole = read_message(body(&[&framed]), 100).await.unwrap();
        assert_eq!(&whole[..], b"hello");
        let pieces: Vec<&[u8]> = framed.chunks(2).collect();
        let pieced = read_message(body(&pieces), 100).await.unwrap();
        assert_eq!(&pieced[..], b"hello");
        let empty = read_message(body(&[&prefixed(b"")]), 100).await.unwrap();
        assert!(empty.is_empty());
    }

    #[tokio::test]
    async fn a_length_over_the_limit_is_refused_from_its_prefix() {
        // Only the prefix is sent: the refusal does not wait for the message.
        let prefix = [0, 0, 0, 0, 101];
        let frames = futures::stream::iter([Ok::<_, Status>(http_body::Frame::data(
            Bytes::copy_from_slice(&prefix),
        ))])
        .chain(futures::stream::pending());
        let refused = read_message(http_body_util::StreamBody::new(frames), 100)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::OutOfRange);
        assert!(refused.message().contains("found 101 bytes"), "{refused:?}");
    }

    #[tokio::test]
    async fn broken_bodies_are_internal_errors() {
        let cases: [(&str, Vec<u8>); 5] = [
            ("no message", Vec::new()),
            ("a partial prefix", vec![0, 0]),
            ("a cut-off message", prefixed(b"hello")[..7].to_vec()),
            ("two messages", [prefixed(b"a"), prefixed(b"b")].concat()),
            ("a compressed message", {
                let mut framed = prefixed(b"x");
                framed[0] = 1;
                framed
            }),
        ];
        for (case, bytes) in cases {
            let refused = read_message(body(&[&bytes]), 100).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::Internal, "{case}: {refused:?}");
        }
        let mut flagged = prefixed(b"x");
        flagged[0] = 7;
        let refused = read_message(body(&[&flagged]), 100).await.unwrap_err();
        assert!(refused.message().contains("invalid compression flag: 7"));
    }

    #[tokio::test]
    async fn a_failing_body_answers_with_its_own_status() {
        let frames = futures::stream::iter([Err::<http_body::Frame<Bytes>, _>(
            Status::unavailable("over budget"),
        )]);
        let refused = read_message(http_body_util::StreamBody::new(frames), 100)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unavailable);
    }

    #[test]
    fn only_identity_is_an_encoding_served() {
        let mut headers = http::HeaderMap::new();
        assert!(refuse_compression(&headers).is_ok());
        headers.insert("grpc-encoding", http::HeaderValue::from_static("identity"));
        assert!(refuse_compression(&headers).is_ok());
        headers.insert("grpc-encoding", http::HeaderValue::from_static("gzip"));
        let refused = refuse_compression(&headers).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unimplemented);
        assert_eq!(
            refused.metadata().get("grpc-accept-encoding").unwrap(),
            "identity"
        );
    }

    #[tokio::test]
    async fn an_answer_is_its_framed_message_then_status_ok() {
        let message = crate::pb::Task {
            id: "task-1".into(),
            ..Default::default()
        };
        let framed = frame(&crate::encode::Prost(&message), None).unwrap();
        assert_eq!(framed[0], 0);
        let length = u32::from_be_bytes(framed[1..5].try_into().unwrap()) as usize;
        assert_eq!(length, prost::Message::encoded_len(&message));
        let decoded: crate::pb::Task = prost::Message::decode(&framed[5..]).unwrap();
        assert_eq!(decoded, message);

        let response = answer(framed.clone());
        assert_eq!(response.headers()["content-type"], "application/grpc");
        let collected = response.into_body().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
        assert_eq!(collected.to_bytes(), framed);

        let refused = frame(&crate::encode::Prost(&message), Some(3)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::OutOfRange);
    }
}
