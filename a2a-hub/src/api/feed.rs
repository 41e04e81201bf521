//! The hub's live feed as a client reads it: server-sent events named
//! `message`, `thread` and `lagged`.

use std::collections::VecDeque;
use std::time::Duration;

use super::client::{HubApiError, HubApiErrorKind};
use super::{DELIVERY_EVENT, LAGGED_EVENT, MESSAGE_EVENT, THREAD_EVENT};
use crate::model::{HubMessage, ThreadView};

/// The largest event the feed takes (the API caps a message at 64 KiB).
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// What the live feed says.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FeedEvent {
    /// A message was stored.
    Message(HubMessage),
    /// A thread opened or changed (participants, paused, resumed).
    Thread(ThreadView),
    /// A delivery of a message moved on: the message with where each of
    /// its deliveries stands.
    Delivery(HubMessage),
    /// This reader fell behind and missed this many events: the history
    /// has them.
    Lagged(u64),
}

/// The hub's live feed, open: what happens from the moment it opened
/// ([`super::HubApiClient::feed`]).
#[derive(Debug)]
pub struct HubFeed {
    response: reqwest::Response,
    reader: SseReader,
    ready: VecDeque<SseEvent>,
    silence: Duration,
}

impl HubFeed {
    pub(super) fn new(response: reqwest::Response, silence: Duration) -> Self {
        HubFeed {
            response,
            reader: SseReader::default(),
            ready: VecDeque::new(),
            silence,
        }
    }

    /// The next event. The feed never ends by itself: a feed that closes,
    /// breaks off or says nothing (not even a keep-alive) for too long is an
    /// error.
    pub async fn next(&mut self) -> Result<FeedEvent, HubApiError> {
        loop {
            while let Some(event) = self.ready.pop_front() {
                if let Some(event) = event.decode()? {
                    return Ok(event);
                }
            }
            let chunk = next_chunk(&mut self.response, self.silence).await?;
            let events = self.reader.push(chunk.as_ref())?;
            self.ready.extend(events);
        }
    }
}

/// The next chunk of the feed's body, or why there is none.
async fn next_chunk(
    response: &mut reqwest::Response,
    silence: Duration,
) -> Result<impl AsRef<[u8]>, HubApiError> {
    let feed_error = |message: String| HubApiError::new(HubApiErrorKind::Feed, message);
    match tokio::time::timeout(silence, response.chunk()).await {
        Ok(Ok(Some(chunk))) => Ok(chunk),
        Ok(Ok(None)) => Err(feed_error(
            "the hub closed its live feed (the server stopped?)".to_owned(),
        )),
        Ok(Err(err)) => Err(feed_error("the hub's live feed broke off".to_owned()).caused_by(err)),
        Err(_) => Err(feed_error(format!(
            "the hub's live feed went silent for {} s (the connection is gone?)",
            silence.as_secs()
        ))),
    }
}

/// One server-sent event: its `event` name and its `data`.
#[derive(Debug, Default)]
struct SseEvent {
    name: String,
    data: String,
}

impl SseEvent {
    /// The feed's event this is; `None` for a name the feed does not send.
    fn decode(self) -> Result<Option<FeedEvent>, HubApiError> {
        let unreadable = |what: &str, err: serde_json::Error| {
            let message = format!("the hub sent {what} that is not what the API sends");
            HubApiError::new(HubApiErrorKind::Decode, message).caused_by(err)
        };
        let event = match self.name.as_str() {
            MESSAGE_EVENT => serde_json::from_str(&self.data)
                .map(FeedEvent::Message)
                .map_err(|err| unreadable("a message", err))?,
            THREAD_EVENT => serde_json::from_str(&self.data)
                .map(FeedEvent::Thread)
                .map_err(|err| unreadable("a thread", err))?,
            DELIVERY_EVENT => serde_json::from_str(&self.data)
                .map(FeedEvent::Delivery)
                .map_err(|err| unreadable("a delivery", err))?,
            LAGGED_EVENT => FeedEvent::Lagged(self.data.trim().parse().unwrap_or(0)),
            _ => return Ok(None),
        };
        Ok(Some(event))
    }
}

/// Reads `event:` and `data:` lines off a byte stream (the hub's feed is
/// the plain WHATWG format: comments for keep-alive, a blank line ends an
/// event).
#[derive(Debug, Default)]
struct SseReader {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

impl SseReader {
    fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, HubApiError> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                let event = std::mem::take(&mut self.current);
                if std::mem::take(&mut self.has_data) {
                    events.push(event);
                }
                continue;
            }
            self.field(&line);
        }
        if self.buffer.len() + self.current.data.len() > MAX_EVENT_BYTES {
            return Err(HubApiError::new(
                HubApiErrorKind::Feed,
                format!("the hub sent an event larger than {MAX_EVENT_BYTES} bytes"),
            ));
        }
        Ok(events)
    }

    /// Takes one line of an event; comments (`:`) and unknown fields are
    /// skipped.
    fn field(&mut self, line: &str) {
        if line.starts_with(':') {
            return;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match name {
            "event" => value.clone_into(&mut self.current.name),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_across_chunks_with_their_names() {
        let mut reader = SseReader::default();
        let mut events = Vec::new();
        for chunk in [
            &b"event: mess"[..],
            b"age\r\ndata: {\"a\":",
            b"1}\r\n\r\n: keep-alive\n\nevent: lagged\ndata: 3\n",
            b"\n",
        ] {
            events.extend(reader.push(chunk).unwrap_or_default());
        }
        let got: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.name.as_str(), e.data.as_str()))
            .collect();
        assert_eq!(got, [("message", "{\"a\":1}"), ("lagged", "3")]);
    }
}
