//! What the JSON-RPC and HTTP+JSON transports share: the HTTP client, headers,
//! SSE streaming with an idle timeout.

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use crate::sse::SseParser;
use crate::{CallOptions, ClientError, ClientErrorKind};

/// Settings shared by the HTTP transports.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Timeout of one unary call.
    pub timeout: Duration,
    /// Longest silence tolerated between stream events.
    pub idle_timeout: Duration,
    /// Largest accepted server-sent event.
    pub max_event_size: usize,
    /// Largest accepted unary response body (default 32 MiB); a larger one
    /// fails the call without being read further.
    pub max_response_size: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(300),
            max_event_size: 64 * 1024 * 1024,
            max_response_size: 32 * 1024 * 1024,
        }
    }
}

/// The default HTTP client: connect timeout only, so streams are never cut by a
/// whole-request deadline.
pub(crate) fn default_client() -> reqwest::Client {
    default_client_builder().build().unwrap_or_default()
}

/// The settings of [`default_client`], for a client that adds its own.
pub(crate) fn default_client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
}

pub(crate) fn headers(options: &CallOptions) -> Result<HeaderMap, ClientError> {
    header_map(options.service_params())
}

#[cfg(feature = "v03")]
/// The headers of a call to an A2A 0.3 agent: the caller's, without
/// `A2A-Version` (a 0.3 server knows none, and its absence is what says
/// 0.3), extensions under their 0.3 name `X-A2A-Extensions`.
pub(crate) fn headers_v03(options: &CallOptions) -> Result<HeaderMap, ClientError> {
    header_map(
        options
            .service_params()
            .into_iter()
            .filter_map(|(name, value)| {
                if name.eq_ignore_ascii_case(a2a_core::VERSION_HEADER) {
                    None
                } else if name.eq_ignore_ascii_case(a2a_core::EXTENSIONS_HEADER) {
                    Some((a2a_core::LEGACY_EXTENSIONS_HEADER.to_owned(), value))
                } else {
                    Some((name, value))
                }
            }),
    )
}

fn header_map(
    params: impl IntoIterator<Item = (String, String)>,
) -> Result<HeaderMap, ClientError> {
    let mut headers = HeaderMap::new();
    for (name, value) in params {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError::unsupported(format!("invalid header name {name:?}")))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| ClientError::unsupported(format!("invalid value for header {name}")))?;
        headers.append(name, value);
    }
    Ok(headers)
}

#[cfg(feature = "v03")]
/// Sends a unary request within `timeout`, or a stream's request (see
/// [`send_for_stream`]).
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    streaming: bool,
) -> Result<reqwest::Response, ClientError> {
    if streaming {
        send_for_stream(request, timeout).await
    } else {
        request
            .timeout(timeout)
            .send()
            .await
            .map_err(ClientError::from_reqwest)
    }
}

#[cfg(feature = "v03")]
/// Ends a 0.3 stream after the event that says it is the last (`final`),
/// even if the server keeps the connection open.
pub(crate) fn until_final(
    events: impl futures::Stream<Item = Result<(a2a_core::StreamResponse, bool), ClientError>>
    + Send
    + 'static,
) -> crate::EventStream {
    let events = events.scan(false, |ended, item| {
        if *ended {
            return futures::future::ready(None);
        }
        if let Ok((_, true)) = &item {
            *ended = true;
        }
        futures::future::ready(Some(item.map(|(event, _)| event)))
    });
    Box::pin(events)
}

#[cfg(feature = "v03")]
/// A 0.3 answer that does not convert to 1.0.
pub(crate) fn from_v03(err: a2a_core::A2aError) -> ClientError {
    ClientError::decode(format!("0.3 answer: {}", err.message()))
}

/// The wait a `Retry-After` header asks for: whole seconds, or an HTTP date
/// (a date already past means now).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Reads `response`'s body, refusing one over `limit` bytes: by its declared
/// length before reading, else as soon as the bytes read pass it (a server
/// that sends without end cannot fill the client's memory).
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<bytes::Bytes, ClientError> {
    let too_large = || {
        ClientError::new(
            crate::ClientErrorKind::Decode,
            format!("the response body is larger than {limit} bytes"),
        )
    };
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(too_large());
    }
    let mut body = bytes::BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(ClientError::from_reqwest)? {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// Sends a request whose response is a stream: it has no whole-request
/// deadline (that would cut the stream), so the wait for the response's
/// headers gets one of its own.
pub(crate) async fn send_for_stream(
    request: reqwest::RequestBuilder,
    within: Duration,
) -> Result<reqwest::Response, ClientError> {
    match tokio::time::timeout(within, request.send()).await {
        Ok(sent) => sent.map_err(ClientError::from_reqwest),
        Err(_) => Err(ClientError::new(
            crate::ClientErrorKind::Timeout,
            format!("the stream's response headers did not arrive within {within:?}"),
        )),
    }
}

/// Turns an SSE response body into the `data` of each event, with an idle timeout.
pub(crate) fn sse_events(
    response: reqwest::Response,
    idle: Duration,
    max_event_size: usize,
) -> impl futures::Stream<Item = Result<String, ClientError>> + Send + 'static {
    let body = response.bytes_stream();
    let state = (
        Box::pin(body),
        SseParser::new(max_event_size),
        std::collections::VecDeque::new(),
        false,
    );
    futures::stream::unfold(
        state,
        move |(mut body, mut parser, mut ready, mut done)| async move {
            loop {
                if let Some(event) = ready.pop_front() {
                    return Some((Ok(event), (body, parser, ready, done)));
                }
                if done {
                    return None;
                }
                match tokio::time::timeout(idle, body.next()).await {
                    Err(_) => {
                        done = true;
                        let err = ClientError::new(
                            ClientErrorKind::Timeout,
                            format!("no stream event for {idle:?}"),
                        );
                        return Some((Err(err), (body, parser, ready, done)));
                    }
                    Ok(None) => {
                        done = true;
                        if parser.has_partial_event() {
                            let err = ClientError::new(
                                ClientErrorKind::Connection,
                                "stream ended in the middle of an event",
                            );
                            return Some((Err(err), (body, parser, ready, done)));
                        }
                    }
                    Ok(Some(Err(err))) => {
                        done = true;
                        return Some((
                            Err(ClientError::from_reqwest(err)),
                            (body, parser, ready, done),
                        ));
                    }
                    Ok(Some(Ok(chunk))) => match parser.push(&chunk) {
                        Ok(events) => ready.extend(events),
                        Err(err) => {
                            done = true;
                            return Some((
                                Err(ClientError::decode(err.to_string())),
                                (body, parser, ready, done),
                            ));
                        }
                    },
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_retry_after(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_as_an_http_date() {
        assert_eq!(
            retry_after(&with_retry_after("120")),
            Some(Duration::from_secs(120))
        );
        let in_a_minute = std::time::SystemTime::now() + Duration::from_secs(60);
        let wait = retry_after(&with_retry_after(&httpdate::fmt_http_date(in_a_minute))).unwrap();
        // The date has whole seconds: the wait is within a second of a minute.
        assert!(
            wait > Duration::from_secs(58) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        assert_eq!(
            retry_after(&with_retry_after("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&with_retry_after("soon")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
