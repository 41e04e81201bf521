//! Plumbing shared by the HTTP bindings.

use std::convert::Infallible;
use std::time::Duration;

use a2a_core::json_writer::WriteJson;
use a2a_core::{A2aError, ErrorKind, Method, VERSION_HEADER};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;

use super::budget::{self, BodyBudget, BudgetHold};
use crate::{CallContext, ServiceParams};

/// The call context of an HTTP request: headers (and an `A2A-Version` query
/// parameter) become service parameters, the query its query parameters
/// (decoded). For routes served beside the bindings that authenticate the
/// same way (an authenticator reads the context).
pub fn call_context(method: Method, headers: HeaderMap, query: Option<&str>) -> CallContext {
    let mut params = ServiceParams::from_headers(headers);
    // Only a query can add a version, so only then is the header looked up.
    if let Some(query) = query.filter(|_| params.version().is_none()) {
        let version = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
            .map(|(_, v)| v.into_owned());
        if let Some(version) = version {
            if params.append(VERSION_HEADER, &version).is_err() {
                // No header could carry it, so it is no version we support.
                let _ = params.append(VERSION_HEADER, "unrepresentable");
            }
        }
    }
    let mut ctx = CallContext::new(method, params);
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        ctx.query_params = url::form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    }
    ctx
}

/// Why a request body was not read.
#[derive(Debug)]
pub(crate) enum BodyRefused {
    /// Too large, too slow or broken: the caller's fault.
    Refused(A2aError),
    /// The server-wide [`BodyBudget`] has no room for it now.
    OverBudget,
}

/// How a request body is read: its size limit, the time it has to arrive
/// and the budget it counts against.
pub(crate) struct BodyRules<'a> {
    pub(crate) limit: usize,
    pub(crate) within: Duration,
    pub(crate) budget: &'a BodyBudget,
}

impl<'a> From<&'a super::HttpConfig> for BodyRules<'a> {
    fn from(config: &'a super::HttpConfig) -> Self {
        BodyRules {
            limit: config.body_limit,
            within: config.body_read_timeout,
            budget: &config.body_budget,
        }
    }
}

/// Reads a request body of at most `rules.limit` bytes, holding its bytes
/// in the budget (the hold goes with the bytes: drop both once parsed). A
/// declared `Content-Length` over the limit, or over what the budget has
/// left, is refused before anything is read.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    rules: BodyRules<'_>,
) -> Result<(Bytes, BudgetHold), BodyRefused> {
    let limit = rules.limit;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(BodyRefused::Refused(A2aError::invalid_request(format!(
            "request body is larger than {limit} bytes"
        ))));
    }
    // A declared length is held whole up front (hyper delivers no more than
    // it); a body without one is held piece by piece as it comes.
    let declared = declared.and_then(|length| usize::try_from(length).ok());
    let Some(mut hold) = rules.budget.try_take(declared.unwrap_or(0)) else {
        return Err(BodyRefused::OverBudget);
    };
    let too_large = |failed| match failed {
        Collect::OverBudget => BodyRefused::OverBudget,
        Collect::Failed => BodyRefused::Refused(A2aError::invalid_request(format!(
            "request body is larger than {limit} bytes or could not be read"
        ))),
    };
    let grow = declared.is_none();
    let read = {
        let mut reading = std::pin::pin!(collect(body, limit, grow.then_some(&mut hold)));
        // Most bodies arrive with their headers and are read at once: only
        // one still on its way needs the timer, which costs more to arm and
        // disarm than a small body costs to read.
        match futures::FutureExt::now_or_never(reading.as_mut()) {
            Some(read) => read,
            // The whole body within `within`: a client that trickles it
            // holds a connection and a buffer, and must not hold them for ever.
            None => match tokio::time::timeout(rules.within, reading).await {
                Ok(read) => read,
                Err(_) => {
                    return Err(BodyRefused::Refused(A2aError::invalid_request(format!(
                        "request body was not received within {} s",
                        rules.within.as_secs()
                    ))));
                }
            },
        }
    };
    let bytes = read.map_err(too_large)?;
    Ok((bytes, hold))
}

/// Why [`collect`] stopped.
enum Collect {
    /// Over the limit, or the body failed.
    Failed,
    /// The budget had no room for the next piece.
    OverBudget,
}

/// The whole of `body`, or `Err` once it passes `limit` bytes or fails;
/// with a `hold`, each piece is added to it as it comes.
///
/// A body that comes in one piece (nearly every request) is that piece, with
/// no buffer list, copy or allocation for it, where `axum::body::to_bytes`
/// gathers every body in a list first.
async fn collect(
    body: Body,
    limit: usize,
    mut hold: Option<&mut BudgetHold>,
) -> Result<Bytes, Collect> {
    use hyper::body::Body as _;
    let mut body = std::pin::pin!(body);
    // The body while it is one piece; once a second comes, the pieces joined.
    let mut first = Bytes::new();
    let mut joined: Option<Vec<u8>> = None;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let Ok(data) = frame.map_err(|_| Collect::Failed)?.into_data() else {
            // Trailers: nothing of the body.
            continue;
        };
        let so_far = joined.as_ref().map_or(first.len(), Vec::len);
        if so_far + data.len() > limit {
            return Err(Collect::Failed);
        }
        if let Some(hold) = &mut hold {
            if !hold.try_grow(data.len()) {
                return Err(Collect::OverBudget);
            }
        }
        match &mut joined {
            Some(joined) => joined.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => joined = Some([&first[..], &data[..]].concat()),
        }
    }
    Ok(joined.map_or(first, Bytes::from))
}

/// The error of a body the budget had no room for, with the wait to
/// suggest: the spec's "system" category (HTTP 503, JSON-RPC -32603, gRPC
/// `UNAVAILABLE`), its ErrorInfo reason `UNAVAILABLE`.
pub(crate) const OVER_BUDGET_MESSAGE: &str =
    "the server is receiving too many request bodies at once; try again shortly";

/// The error of a body the budget had no room for: Unavailable with the
/// wait to suggest (its ErrorInfo and RetryInfo details come with it).
fn over_budget() -> A2aError {
    A2aError::unavailable(
        OVER_BUDGET_MESSAGE,
        Duration::from_secs(budget::RETRY_AFTER_SECS),
    )
}

/// HTTP 503 with `Retry-After` and `body`.
fn unavailable(content_type: &'static str, body: &Value) -> Response {
    let mut response = json_response(503, content_type, to_json(body));
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(budget::RETRY_AFTER_SECS),
    );
    response
}

/// The JSON-RPC answer to a body the budget had no room for: HTTP 503 (no
/// body was read, so this is the exchange's failure, as a proxy's would
/// be) carrying a JSON-RPC error (`id` null: it was never read).
pub(crate) fn over_budget_jsonrpc() -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": over_budget().to_jsonrpc(),
    });
    unavailable("application/json", &body)
}

/// The HTTP+JSON answer to a body the budget had no room for: 503 with a
/// `google.rpc.Status` body.
pub(crate) fn over_budget_rest(media_type: &'static str) -> Response {
    unavailable(
        media_type,
        &serde_json::to_value(over_budget().to_http_body()).unwrap_or_default(),
    )
}

/// The 0.3 HTTP+JSON answer to a body the budget had no room for: 503 with
/// 0.3's `{"message"}` body.
#[cfg(feature = "v03")]
pub(crate) fn over_budget_v03() -> Response {
    unavailable(
        "application/json",
        &serde_json::json!({ "message": OVER_BUDGET_MESSAGE }),
    )
}

/// Bodies up to this size are parsed where they are read; larger ones on a
/// blocking thread, so that a few large ones cannot stall the workers that
/// every other connection's requests run on.
pub(crate) const PARSE_INLINE_MAX: usize = 64 * 1024;

/// `parse(bytes)`: inline for a small body, on a blocking thread for a
/// large one. `Err` only when the blocking thread could not finish it (the
/// runtime shutting down, or a parser that panicked, which none should).
pub(crate) async fn parse_off_workers<T: Send + 'static>(
    bytes: Bytes,
    parse: impl FnOnce(Bytes) -> T + Send + 'static,
) -> Result<T, A2aError> {
    if bytes.len() <= PARSE_INLINE_MAX {
        return Ok(parse(bytes));
    }
    tokio::task::spawn_blocking(move || parse(bytes))
        .await
        .map_err(|err| {
            tracing::error!(error = %err, "parsing a request body failed");
            A2aError::internal("the request could not be read")
        })
}

/// Whether a POST declares one of the JSON media types the protocol allows
/// (`application/json`, `application/a2a+json`).
///
/// A missing content type is refused: a web page can send a POST without one
/// (or with `text/plain`) to a local server without a CORS preflight, and
/// that must not start or cancel work.
/// Whether the request asks for 0.3: no `A2A-Version` (header or query
/// parameter), an empty one, or `0.3`.
pub(crate) fn wants_v03(headers: &HeaderMap, query: Option<&str>) -> bool {
    let header = headers
        .get(VERSION_HEADER)
        .map(|v| v.to_str().unwrap_or("?"));
    let version = match header {
        Some(v) => Some(v.to_owned()),
        None => query
            .into_iter()
            .flat_map(|q| url::form_urlencoded::parse(q.as_bytes()))
            .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
            .map(|(_, v)| v.into_owned()),
    };
    a2a_core::v03::is_v03_version(version.as_deref())
}

/// The 0.3 method a well-formed JSON-RPC request names, if any. Read only for
/// requests the 1.0 reader found naming no 1.0 method.
pub(crate) fn method_of(body: &[u8]) -> Option<a2a_core::v03::Method> {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
    }
    let named: Named<'_> = serde_json::from_slice(body).ok()?;
    a2a_core::v03::Method::from_name(&named.method)
}

/// The answer to a 0.3 request when 0.3 is not served (built without the
/// feature `v03`): the version is not supported, and 1.0 is.
#[cfg(not(feature = "v03"))]
pub(crate) fn v03_not_served() -> A2aError {
    A2aError::new(
        a2a_core::ErrorKind::VersionNotSupported,
        format!(
            "A2A 0.3 is not served (no {VERSION_HEADER}, or 0.3, was given); this agent speaks {}",
            a2a_core::PROTOCOL_VERSION
        ),
    )
}

pub(crate) fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // What nearly every client sends, before the general parse.
    if value.as_bytes() == b"application/json" {
        return true;
    }
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.eq_ignore_ascii_case(a2a_core::A2A_JSON_MEDIA_TYPE)
}

pub(crate) fn unsupported_content_type(headers: &HeaderMap) -> A2aError {
    let given = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("(none)");
    A2aError::new(
        ErrorKind::ContentTypeNotSupported,
        format!(
            "request content type {given} is not supported; send application/json or {}",
            a2a_core::A2A_JSON_MEDIA_TYPE
        ),
    )
}

/// Adds the headers an error's answer carries besides its body: the
/// `WWW-Authenticate` challenge of a call refused for want of credentials,
/// the `Retry-After` of a busy server.
pub(crate) fn with_challenge(
    mut response: Response,
    err: &A2aError,
    challenge: Option<&HeaderValue>,
) -> Response {
    match err.kind() {
        ErrorKind::Unauthenticated => {
            let value = challenge
                .cloned()
                .unwrap_or_else(|| HeaderValue::from_static(r#"Bearer realm="a2a""#));
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        ErrorKind::Busy | ErrorKind::Unavailable => {
            if let Some(wait) = err.retry_after() {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(wait.as_secs()));
            }
        }
        _ => {}
    }
    response
}

/// Adds the `A2A-Extensions` header listing the extensions activated for the call.
pub(crate) fn with_extensions(mut response: Response, ctx: &CallContext) -> Response {
    if !ctx.activated_extensions.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&ctx.activated_extensions.join(", ")) {
            response
                .headers_mut()
                .insert(crate::context::EXTENSIONS_NAME, value);
        }
    }
    response
}

/// A JSON response from already-serialized bytes.
pub(crate) fn json_response(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::OK);
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A typical task response is well under 1 KiB: a buffer of this size
/// spares the three or four regrowths (each a copy) of a small default one.
const RESPONSE_CAPACITY: usize = 1024;

/// Appends `value` as compact JSON, or an internal-error object in its place
/// if it cannot be serialized (never panics).
fn write_serialized<T: serde::Serialize>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    if let Err(err) = sonic_rs::to_writer(&mut *out, value) {
        tracing::error!(error = %err, "serializing a response failed");
        out.truncate(start);
        out.extend_from_slice(br#"{"error":"internal serialization error"}"#);
    }
}

/// Serializes `value`, falling back to an internal-error body (never panics).
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut json = Vec::with_capacity(RESPONSE_CAPACITY);
    write_serialized(&mut json, value);
    json
}

/// Appends the JSON of an answer: the task types written directly (see
/// [`a2a_core::json_writer`]), the rest serialized.
pub(crate) fn write_answer(out: &mut Vec<u8>, answer: &crate::service::Response) {
    use crate::service::Response;
    match answer {
        Response::SendMessage(answer) => answer.write_json(out),
        Response::Task(task) => task.write_json(out),
        other => write_serialized(out, other),
    }
}

/// The JSON of an answer (see [`write_answer`]).
pub(crate) fn answer_json(answer: &crate::service::Response) -> Vec<u8> {
    let mut json = Vec::with_capacity(RESPONSE_CAPACITY);
    write_answer(&mut json, answer);
    json
}

/// Appends a JSON-RPC success response whose result `write_result` appends.
pub(crate) fn write_jsonrpc_result(
    out: &mut Vec<u8>,
    id: &Value,
    write_result: impl FnOnce(&mut Vec<u8>),
) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // The id is a string, a number or null: nothing that can fail to serialize.
    let written = serde_json::to_writer(&mut *out, id);
    debug_assert!(written.is_ok(), "{written:?}");
    out.extend_from_slice(br#","result":"#);
    write_result(out);
    out.push(b'}');
}

/// One SSE event carrying `value` as compact JSON (`data: {json}\n\n`); see
/// [`sse_frame`].
pub(crate) fn sse_event<T: serde::Serialize>(value: &T) -> Bytes {
    sse_frame(|frame| write_serialized(frame, value))
}

/// The most the frame buffer keeps between frames: one huge event does not
/// hold its size for the rest of the thread's life.
const KEPT_FRAME_CAPACITY: usize = 64 * 1024;

thread_local! {
    /// Where [`sse_frame`] writes each frame before copying it out.
    static FRAME_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One SSE event whose compact JSON `write` appends (`data: {json}\n\n`):
/// compact JSON never contains a newline, so it is one `data:` line with
/// nothing to scan or check afterwards.
///
/// The frame is written into a buffer the thread keeps and leaves as an
/// exact-size copy: one allocation a frame, and no memory held by a stream
/// between its events. A buffer of its own for each frame would cost two,
/// as `Bytes` adds a shared header to a buffer it does not fill.
pub(crate) fn sse_frame(write: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let frame_into = |buffer: &mut Vec<u8>| {
        buffer.clear();
        buffer.reserve(RESPONSE_CAPACITY);
        buffer.extend_from_slice(b"data: ");
        write(buffer);
        buffer.extend_from_slice(b"\n\n");
        let frame = Bytes::copy_from_slice(buffer);
        if buffer.capacity() > KEPT_FRAME_CAPACITY {
            *buffer = Vec::new();
        }
        frame
    };
    FRAME_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => frame_into(&mut buffer),
        // Only a frame written from inside another's serialization (never
        // done here) would find it taken: it gets a buffer of its own.
        Err(_) => frame_into(&mut Vec::new()),
    })
}

/// Asks reverse proxies (nginx) not to buffer a stream; a ready name, as a
/// name given as a string is parsed and copied on every response.
const X_ACCEL_BUFFERING: header::HeaderName = header::HeaderName::from_static("x-accel-buffering");

/// The longest keep-alive interval an SSE stream uses (a longer one is cut to it).
const LONGEST_KEEP_ALIVE: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The SSE comment sent on a stream that has been quiet for the keep-alive interval.
const KEEP_ALIVE_COMMENT: &[u8] = b":\n\n";

/// An SSE response body: framed events (see [`sse_frame`]), with a keep-alive
/// comment after each quiet interval.
///
/// The keep-alive timer is made and set only when the stream goes quiet (its
/// events are pending), not at every event: a stream whose events are all
/// ready at once, as a quick agent's are, never touches the timer wheel, and
/// a busy one re-arms it once per lull instead of once per event.
struct SseBody<S> {
    events: S,
    keep_alive: Option<KeepAlive>,
}

/// The quiet interval after which an SSE stream sends a comment.
struct KeepAlive {
    interval: Duration,
    /// Made when the stream first goes quiet.
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    /// Whether `timer` counts the current lull (an event since it was set
    /// means it does not).
    armed: bool,
}

impl KeepAlive {
    /// Waits out the current lull, starting it if it is new.
    fn poll_quiet(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        use std::future::Future as _;
        let timer = match &mut self.timer {
            Some(timer) => {
                if !self.armed {
                    timer
                        .as_mut()
                        .reset(tokio::time::Instant::now() + self.interval);
                }
                timer
            }
            None => self
                .timer
                .insert(Box::pin(tokio::time::sleep(self.interval))),
        };
        self.armed = true;
        std::task::ready!(timer.as_mut().poll(cx));
        // The comment ends this lull; the next starts when the stream is
        // next found quiet.
        self.armed = false;
        std::task::Poll::Ready(())
    }
}

impl<S: Stream<Item = Bytes> + Unpin> hyper::body::Body for SseBody<S> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        use std::task::Poll;
        let this = &mut *self;
        match this.events.poll_next_unpin(cx) {
            Poll::Ready(Some(frame)) => {
                if let Some(keep_alive) = &mut this.keep_alive {
                    keep_alive.armed = false;
                }
                Poll::Ready(Some(Ok(hyper::body::Frame::data(frame))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match &mut this.keep_alive {
                Some(keep_alive) => {
                    std::task::ready!(keep_alive.poll_quiet(cx));
                    let comment = Bytes::from_static(KEEP_ALIVE_COMMENT);
                    Poll::Ready(Some(Ok(hyper::body::Frame::data(comment))))
                }
                None => Poll::Pending,
            },
        }
    }
}

/// An SSE response; each item is one framed event (see [`sse_frame`]).
pub(crate) fn sse_response(
    events: impl Stream<Item = Bytes> + Send + Unpin + 'static,
    keep_alive: Option<Duration>,
) -> Response {
    // A zero interval would send comments in a busy loop, so it means off, as
    // `None` does; a longer interval than a year is as good as off too, and
    // capped so a deadline is never past what `Instant` can hold.
    let keep_alive = keep_alive
        .filter(|interval| !interval.is_zero())
        .map(|interval| KeepAlive {
            interval: interval.min(LONGEST_KEEP_ALIVE),
            timer: None,
            armed: false,
        });
    let mut response = Response::new(Body::new(SseBody { events, keep_alive }));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Ask reverse proxies not to buffer the stream.
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn frames_are_whole_and_independent_of_the_buffer_they_came_from() {
        let first = sse_event(&serde_json::json!({"n": 1}));
        let second = sse_frame(|out| out.extend_from_slice(br#"{"n":2}"#));
        assert_eq!(&first[..], b"data: {\"n\":1}\n\n");
        assert_eq!(&second[..], b"data: {\"n\":2}\n\n");
        let huge = "x".repeat(2 * KEPT_FRAME_CAPACITY);
        let big = sse_event(&huge);
        assert_eq!(big.len(), b"data: \"\"\n\n".len() + huge.len());
        let kept = FRAME_BUFFER.with(|buffer| buffer.borrow().capacity());
        assert!(
            kept <= KEPT_FRAME_CAPACITY,
            "a huge event's buffer is not kept ({kept} bytes)"
        );
        // A frame written while another is being written gets its own buffer.
        let nested = sse_frame(|out| {
            let inner = sse_frame(|out| out.extend_from_slice(b"1"));
            out.extend_from_slice(&inner[..inner.len() - 2]);
        });
        assert_eq!(&nested[..], b"data: data: 1\n\n");
        assert_eq!(&first[..], b"data: {\"n\":1}\n\n");
    }

    fn pieces(parts: &[&'static str]) -> Body {
        let parts: Vec<Result<Bytes, std::io::Error>> = parts
            .iter()
            .map(|p| Ok(Bytes::from_static(p.as_bytes())))
            .collect();
        Body::from_stream(futures::stream::iter(parts))
    }

    /// A waker that records that it was woken.
    #[derive(Default)]
    struct WakeFlag(std::sync::atomic::AtomicBool);

    impl std::task::Wake for WakeFlag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The next frame of `body` if one is ready now, as text; `None` if it is
    /// pending.
    fn ready_frame<B: hyper::body::Body<Data = Bytes> + Unpin>(body: &mut B) -> Option<String>
    where
        B::Error: std::fmt::Debug,
    {
        use futures::FutureExt as _;
        use http_body_util::BodyExt as _;
        let frame = body.frame().now_or_never()?;
        let data = frame.unwrap().unwrap().into_data().unwrap();
        Some(String::from_utf8(data.to_vec()).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_keep_alive_comment_comes_after_each_quiet_interval_and_events_restart_it() {
        let interval = Duration::from_secs(10);
        let (events, quiet_stream) = futures::channel::mpsc::unbounded::<Bytes>();
        let mut body = SseBody {
            events: quiet_stream,
            keep_alive: Some(KeepAlive {
                interval,
                timer: None,
                armed: false,
            }),
        };
        // Events ready at once go out without the timer ever being made.
        events
            .unbounded_send(Bytes::from_static(b"data: 1\n\n"))
            .unwrap();
        events
            .unbounded_send(Bytes::from_static(b"data: 2\n\n"))
            .unwrap();
        assert_eq!(ready_frame(&mut body).as_deref(), Some("data: 1\n\n"));
        assert_eq!(ready_frame(&mut body).as_deref(), Some("data: 2\n\n"));
        assert!(body.keep_alive.as_ref().unwrap().timer.is_none());

        // A lull starts: nothing before the interval is up.
        assert_eq!(ready_frame(&mut body), None);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(ready_frame(&mut body), None);
        // An event in the lull ends it; the next lull is counted afresh.
        events
            .unbounded_send(Bytes::from_static(b"data: 3\n\n"))
            .unwrap();
        assert_eq!(ready_frame(&mut body).as_deref(), Some("data: 3\n\n"));
        assert_eq!(ready_frame(&mut body), None);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(
            ready_frame(&mut body),
            None,
            "the lull restarted at the event"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(ready_frame(&mut body).as_deref(), Some(":\n\n"));
        // Quiet on: a comment each interval, and the events still come. The
        // lull's end must wake the reader by itself: nothing else would poll
        // a quiet stream again.
        let woken = Arc::new(WakeFlag::default());
        let waker = std::task::Waker::from(woken.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(hyper::body::Body::poll_frame(std::pin::Pin::new(&mut body), &mut cx).is_pending());
        tokio::time::advance(interval).await;
        assert!(
            woken.0.load(std::sync::atomic::Ordering::SeqCst),
            "the timer woke the body"
        );
        assert_eq!(ready_frame(&mut body).as_deref(), Some(":\n\n"));
        events
            .unbounded_send(Bytes::from_static(b"data: 4\n\n"))
            .unwrap();
        assert_eq!(ready_frame(&mut body).as_deref(), Some("data: 4\n\n"));
        drop(events);
        use http_body_util::BodyExt as _;
        assert!(
            body.frame().await.is_none(),
            "the stream's end ends the body"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_keep_alive_interval_sends_no_comments() {
        let (events, quiet_stream) = futures::channel::mpsc::unbounded::<Bytes>();
        let mut body = sse_response(quiet_stream, Some(Duration::ZERO)).into_body();
        assert_eq!(ready_frame(&mut body), None);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(ready_frame(&mut body), None, "no comment, no busy loop");
        events
            .unbounded_send(Bytes::from_static(b"data: 1\n\n"))
            .unwrap();
        assert_eq!(ready_frame(&mut body).as_deref(), Some("data: 1\n\n"));
    }

    #[tokio::test]
    async fn a_body_is_read_whole_in_one_piece_or_many() {
        let one = collect(Body::from("{\"a\":1}"), 100, None)
            .await
            .ok()
            .unwrap();
        assert_eq!(&one[..], b"{\"a\":1}");
        let many = collect(pieces(&["{\"a\"", ":", "1}"]), 100, None)
            .await
            .ok()
            .unwrap();
        assert_eq!(&many[..], b"{\"a\":1}");
        let empty = collect(Body::empty(), 100, None).await.ok().unwrap();
        assert!(empty.is_empty());
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_in_one_piece_or_many() {
        assert!(collect(Body::from("0123456789"), 9, None).await.is_err());
        assert!(collect(Body::from("0123456789"), 10, None).await.is_ok());
        assert!(collect(pieces(&["01234", "56789"]), 9, None).await.is_err());
        assert!(collect(pieces(&["01234", "56789"]), 10, None).await.is_ok());
    }

    #[tokio::test]
    async fn a_body_that_fails_is_refused() {
        let failing = Body::from_stream(futures::stream::iter([
            Ok(Bytes::from_static(b"{")),
            Err(std::io::Error::other("connection reset")),
        ]));
        assert!(collect(failing, 100, None).await.is_err());
    }

    #[test]
    fn json_content_types_are_told_apart() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(value));
            is_json_content_type(&headers)
        };
        for json in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/a2a+json",
            " application/json ",
        ] {
            assert!(with(json), "{json}");
        }
        for other in ["text/plain", "application/jsonx", "", "multipart/form-data"] {
            assert!(!with(other), "{other}");
        }
        assert!(!is_json_content_type(&HeaderMap::new()));
    }
}
