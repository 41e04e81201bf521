//! An incremental Server-Sent Events parser (WHATWG event-stream format).
//!
//! Feed it byte chunks as they arrive; it yields the `data` of each complete
//! event. Multi-line `data:` fields are joined with `\n`, comments and
//! keep-alives are skipped, CR, LF and CRLF line endings are all accepted, and
//! one event may span any number of chunks up to a configurable size.

use bytes::{Buf, BytesMut};

/// An event larger than the configured maximum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event exceeds {limit} bytes")]
pub struct EventTooLarge {
    /// The configured maximum.
    pub limit: usize,
}

/// Incremental SSE parser.
#[derive(Debug)]
pub struct SseParser {
    buffer: BytesMut,
    data: Vec<u8>,
    has_data: bool,
    limit: usize,
    /// A CR ended the last line; a LF right after it belongs to that ending.
    skip_lf: bool,
    /// Bytes at the start of `buffer` already searched for a line end: a
    /// long line arriving in many chunks is searched once, not once per chunk.
    scanned: usize,
    /// Bytes searched in all, to show the parser stays linear in its input.
    examined: u64,
}

impl SseParser {
    /// A parser that refuses events larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        SseParser {
            buffer: BytesMut::new(),
            data: Vec::new(),
            has_data: false,
            limit,
            skip_lf: false,
            scanned: 0,
            examined: 0,
        }
    }

    /// Adds a chunk and returns the data of every event it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<String>, EventTooLarge> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        loop {
            if self.skip_lf && !self.buffer.is_empty() {
                if self.buffer[0] == b'\n' {
                    self.buffer.advance(1);
                }
                self.skip_lf = false;
            }
            let unsearched = &self.buffer[self.scanned..];
            let found = memchr::memchr2(b'\n', b'\r', unsearched);
            let searched = found.map_or(unsearched.len(), |at| at + 1);
            self.examined += searched as u64;
            let Some(at) = found else {
                self.scanned = self.buffer.len();
                break;
            };
            let end = self.scanned + at;
            self.scanned = 0;
            let line = self.buffer.split_to(end);
            // A line counts whole against the limit, however it arrived. The
            // check after the loop sees only the part of a line still waiting
            // for its end, so without this a long line would be refused when
            // split across chunks and accepted when it came in one.
            if line.len() + self.data.len() > self.limit {
                return Err(EventTooLarge { limit: self.limit });
            }
            let terminator = self.buffer[0];
            self.buffer.advance(1);
            if terminator == b'\r' {
                self.skip_lf = true;
            }
            if let Some(event) = self.line(&line)? {
                events.push(event);
            }
        }
        if self.buffer.len() + self.data.len() > self.limit {
            return Err(EventTooLarge { limit: self.limit });
        }
        Ok(events)
    }

    fn line(&mut self, line: &[u8]) -> Result<Option<String>, EventTooLarge> {
        if line.is_empty() {
            if !self.has_data {
                return Ok(None);
            }
            self.has_data = false;
            let data = std::mem::take(&mut self.data);
            return Ok(Some(String::from_utf8_lossy(&data).into_owned()));
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
            if self.data.len() > self.limit {
                return Err(EventTooLarge { limit: self.limit });
            }
        }
        Ok(None)
    }

    /// Bytes the parser has searched for line ends so far: never more than it
    /// was given, however the input was split into chunks.
    pub fn bytes_examined(&self) -> u64 {
        self.examined
    }

    /// Whether an event was left incomplete (the stream ended mid-event).
    pub fn has_partial_event(&self) -> bool {
        self.has_data || !self.buffer.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = SseParser::new(1 << 20);
        chunks
            .iter()
            .flat_map(|c| parser.push(c).unwrap())
            .collect()
    }

    #[test]
    fn events_split_anywhere_join_the_same() {
        let stream = b"data: {\"a\":1}\n\n: keep-alive\n\ndata: x\r\ndata: y\r\n\r\nid: 7\nevent: m\ndata:z\n\n";
        let whole = parse_all(&[stream]);
        assert_eq!(whole, ["{\"a\":1}", "x\ny", "z"]);
        for split in 1..stream.len() {
            let (a, b) = stream.split_at(split);
            assert_eq!(parse_all(&[a, b]), whole, "split at {split}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse_all(&bytes), whole);
    }

    #[test]
    fn huge_events_up_to_the_limit() {
        let payload = "x".repeat(8 << 20);
        let event = format!("data: {payload}\n\n");
        let mut parser = SseParser::new(16 << 20);
        let mut events = Vec::new();
        for chunk in event.as_bytes().chunks(64 * 1024) {
            events.extend(parser.push(chunk).unwrap());
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].len(), payload.len());

        let mut small = SseParser::new(1024);
        let err = small.push(event.as_bytes()).unwrap_err();
        assert_eq!(err.limit, 1024);
    }

    #[test]
    fn each_byte_is_searched_once_however_it_is_split() {
        // A 4 MiB event in 1-byte chunks: rescanning the buffer per chunk
        // would search ~8 * 10^12 bytes; a linear parser searches each once.
        let payload = "y".repeat(4 << 20);
        let stream = format!("data: {payload}\r\ndata: z\n\n");
        let mut parser = SseParser::new(16 << 20);
        let mut events = Vec::new();
        for byte in stream.as_bytes().chunks(1) {
            events.extend(parser.push(byte).unwrap());
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].len(), payload.len() + 2);
        assert!(
            parser.bytes_examined() <= stream.len() as u64,
            "searched {} bytes of {}",
            parser.bytes_examined(),
            stream.len()
        );
    }

    #[test]
    fn the_limit_is_hit_alike_however_the_stream_is_split() {
        // Found by the sse_parser fuzz target: a line longer than the limit
        // (here a comment) was refused only when it spanned two chunks.
        let stream = b": a comment longer than the limit\n\ndata: x\n\n";
        let whole = SseParser::new(16).push(stream);
        assert_eq!(whole, Err(EventTooLarge { limit: 16 }));
        for split in 1..stream.len() {
            let (a, b) = stream.split_at(split);
            let mut parser = SseParser::new(16);
            let split_run = parser.push(a).and_then(|_| parser.push(b));
            assert_eq!(split_run, whole, "split at {split}");
        }
        // Lines within the limit still pass, in one chunk or many.
        let mut parser = SseParser::new(16);
        assert_eq!(
            parser.push(b": short\ndata: x\n\n"),
            Ok(vec!["x".to_owned()])
        );
    }

    #[test]
    fn malformed_lines_are_ignored_and_partial_events_detected() {
        let mut parser = SseParser::new(1024);
        assert!(
            parser
                .push(b"garbage without colon\nretry: 10\n\n")
                .unwrap()
                .is_empty()
        );
        assert!(parser.push(b"data: half").unwrap().is_empty());
        assert!(parser.has_partial_event());
    }
}
