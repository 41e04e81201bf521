//! Spans sent over OTLP/HTTP as protobuf, written straight from the SDK's
//! [`SpanData`].
//!
//! The standard OTLP exporter first converts each span into the generated
//! protobuf types (a `String` for every attribute's key and value, a `Vec`
//! for every id), then encodes those, computing each nested message's
//! length once per level it is nested in. With every trace sampled that was
//! about 20k instructions per served call, a quarter of the call itself.
//! Here the request is written in one pass into one buffer: each nested
//! message's length is written after its body, in place. The bytes are the
//! ones the standard exporter sends (the tests decode both and compare).
//!
//! The transport follows the OTLP exporter specification for HTTP/protobuf:
//! the endpoint, headers and timeout come from the standard variables
//! ([`HttpConfig::from_env`]), and a response outside 2xx is an error. Only
//! the gRPC protocol still goes through the standard exporter.

use std::io::Read as _;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// Where spans go when no endpoint variable says (the specification's).
const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/traces";
/// The path appended to `OTEL_EXPORTER_OTLP_ENDPOINT` for spans.
const TRACES_PATH: &str = "v1/traces";
/// How long one export may take unless a timeout variable says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's answer that is read (it is a few bytes; more
/// is a broken or hostile collector).
const MAX_RESPONSE: u64 = 4 * 1024 * 1024;

/// Where and how spans are sent, as the environment says.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct HttpConfig {
    pub(super) endpoint: reqwest::Url,
    pub(super) headers: HeaderMap,
    pub(super) timeout: Duration,
}

impl HttpConfig {
    /// Reads the standard variables through `var` (an empty value counts as
    /// unset):
    /// - the endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else
    ///   `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended, else
    ///   `http://localhost:4318/v1/traces`;
    /// - headers: `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else
    ///   `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,...`, values
    ///   percent-decoded; a pair that is not a valid header is skipped);
    /// - the timeout in milliseconds: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`,
    ///   else `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s;
    /// - compression: none is built in, so `gzip` or `zstd` is refused
    ///   rather than ignored.
    pub(super) fn from_env(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let first = |names: [&'static str; 2]| {
            names
                .into_iter()
                .find_map(|name| set(name).map(|value| (name, value)))
        };
        let endpoint = if let Some(own) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            parse_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", own.trim())?
        } else if let Some(base) = set("OTEL_EXPORTER_OTLP_ENDPOINT") {
            let base = base.trim();
            let joined = if base.ends_with('/') {
                format!("{base}{TRACES_PATH}")
            } else {
                format!("{base}/{TRACES_PATH}")
            };
            parse_url("OTEL_EXPORTER_OTLP_ENDPOINT", &joined)?
        } else {
            parse_url("the default endpoint", DEFAULT_ENDPOINT)?
        };
        let headers = first([
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_HEADERS",
        ])
        .map(|(_, list)| parse_headers(&list))
        .unwrap_or_default();
        let timeout = match first([
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]) {
            Some((name, millis)) => {
                millis
                    .trim()
                    .parse()
                    .map(Duration::from_millis)
                    .map_err(|_| {
                        anyhow::anyhow!("{name}={millis:?} is not a number of milliseconds")
                    })?
            }
            None => DEFAULT_TIMEOUT,
        };
        let compression = first([
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ]);
        if let Some((name, compression)) =
            compression.filter(|(_, compression)| !compression.trim().eq_ignore_ascii_case("none"))
        {
            anyhow::bail!("{name}={compression:?}: this build sends spans uncompressed (`none`)");
        }
        Ok(HttpConfig {
            endpoint,
            headers,
            timeout,
        })
    }
}

/// `value` as an HTTP(S) URL, or an error naming where it came from.
fn parse_url(source: &str, value: &str) -> anyhow::Result<reqwest::Url> {
    let url = reqwest::Url::parse(value)
        .map_err(|err| anyhow::anyhow!("{source}={value:?} is not a URL: {err}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        anyhow::bail!("{source}={value:?}: OTLP/HTTP needs an http or https URL");
    }
    Ok(url)
}

/// `key=value,...` as headers: keys and values trimmed, values
/// percent-decoded; a pair without `=`, with an empty side, or that is not
/// a valid header is left out.
fn parse_headers(list: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for pair in list.split(',') {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || value.is_empty() {
            continue;
        }
        let value = percent_encoding::percent_decode_str(value).collect::<Vec<u8>>();
        if let (Ok(key), Ok(value)) = (HeaderName::try_from(key), HeaderValue::from_bytes(&value)) {
            headers.insert(key, value);
        }
    }
    headers
}

/// The span exporter for OTLP/HTTP with protobuf.
#[derive(Debug)]
pub(super) struct HttpSpanExporter {
    /// `None` once shut down.
    client: Mutex<Option<reqwest::blocking::Client>>,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    /// The `resource` and `schema_url` fields of the request's one
    /// `ResourceSpans`, written once.
    resource: Vec<u8>,
}

impl HttpSpanExporter {
    /// An exporter sending as `config` says.
    pub(super) fn new(config: HttpConfig) -> anyhow::Result<Self> {
        let timeout = config.timeout;
        // The blocking client starts a runtime of its own, which may not be
        // done from inside another (`a2a serve` installs this from within
        // its runtime); so it is built on a thread of its own.
        let client = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("building the OTLP/HTTP client panicked"))??;
        Ok(HttpSpanExporter {
            client: Mutex::new(Some(client)),
            endpoint: config.endpoint,
            headers: config.headers,
            resource: encode_resource(&Resource::builder_empty().build()),
        })
    }

    /// Sends `body` (an encoded request) and checks the answer.
    fn send(&self, body: Vec<u8>) -> OTelSdkResult {
        let client = self
            .client
            .lock()
            .map_err(|_| OTelSdkError::InternalFailure("the OTLP/HTTP client is poisoned".into()))?
            .clone()
            .ok_or(OTelSdkError::AlreadyShutdown)?;
        let failed = |err: &dyn std::fmt::Display| {
            OTelSdkError::InternalFailure(format!("exporting spans to {}: {err}", self.endpoint))
        };
        let response = client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .send()
            .map_err(|err| failed(&err))?;
        let status = response.status();
        let mut answer = Vec::new();
        response
            .take(MAX_RESPONSE)
            .read_to_end(&mut answer)
            .map_err(|err| failed(&err))?;
        if !status.is_success() {
            return Err(failed(&format_args!("the collector answered {status}")));
        }
        if let Some((rejected, message)) = partial_success(&answer) {
            tracing::warn!(
                target: "a2a::otlp",
                rejected_spans = rejected,
                message = %message,
                "the collector rejected some spans"
            );
        }
        Ok(())
    }
}

impl SpanExporter for HttpSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if batch.is_empty() {
            return Ok(());
        }
        // Called on the SDK's own export thread: blocking here is expected.
        self.send(encode_request(&batch, &self.resource))
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let mut client = self.client.lock().map_err(|_| {
            OTelSdkError::InternalFailure("the OTLP/HTTP client is poisoned".into())
        })?;
        match client.take() {
            Some(_) => Ok(()),
            None => Err(OTelSdkError::AlreadyShutdown),
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = encode_resource(resource);
    }
}

/// What an `ExportTraceServiceResponse` says was rejected, if anything.
fn partial_success(answer: &[u8]) -> Option<(i64, String)> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    use prost::Message as _;
    let partial = ExportTraceServiceResponse::decode(answer)
        .ok()?
        .partial_success?;
    (partial.rejected_spans > 0 || !partial.error_message.is_empty())
        .then_some((partial.rejected_spans, partial.error_message))
}

/// Protobuf wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// `opentelemetry.proto.trace.v1.SpanFlags`.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// Protobuf written into one buffer. Fields at their default value are left
/// out, as proto3 encoders do, except where the schema gives them presence
/// (a `oneof` member, a message field).
struct Writer {
    buf: Vec<u8>,
}

/// `value` as a varint: the bytes, and how many of them there are.
fn varint_bytes(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0_u8; 10];
    let mut n = 0;
    while value >= 0x80 {
        bytes[n] = (value as u8) | 0x80;
        value >>= 7;
        n += 1;
    }
    bytes[n] = value as u8;
    (bytes, n + 1)
}

impl Writer {
    fn varint(&mut self, value: u64) {
        // Most are one byte (field keys, short lengths).
        if value < 0x80 {
            self.buf.push(value as u8);
        } else {
            let (bytes, n) = varint_bytes(value);
            self.buf.extend_from_slice(&bytes[..n]);
        }
    }

    fn key(&mut self, field: u32, wire_type: u32) {
        self.varint(u64::from(field << 3 | wire_type));
    }

    /// A `bytes` or `string` field, present even when empty.
    fn bytes_always(&mut self, field: u32, value: &[u8]) {
        self.key(field, LEN);
        self.varint(value.len() as u64);
        self.buf.extend_from_slice(value);
    }

    /// A `bytes` or `string` field, left out when empty.
    fn bytes(&mut self, field: u32, value: &[u8]) {
        if !value.is_empty() {
            self.bytes_always(field, value);
        }
    }

    fn string(&mut self, field: u32, value: &str) {
        self.bytes(field, value.as_bytes());
    }

    /// A `uint32` or enum field, left out when zero.
    fn uint32(&mut self, field: u32, value: u32) {
        if value != 0 {
            self.key(field, VARINT);
            self.varint(u64::from(value));
        }
    }

    fn fixed32(&mut self, field: u32, value: u32) {
        if value != 0 {
            self.key(field, FIXED32);
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }

    fn fixed64(&mut self, field: u32, value: u64) {
        if value != 0 {
            self.key(field, FIXED64);
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// A message field written by `body`. Its length is only known once it
    /// is written: one byte is kept for it, and widened in place when the
    /// body turns out to be 128 bytes or more.
    fn message(&mut self, field: u32, body: impl FnOnce(&mut Self)) {
        self.key(field, LEN);
        let at = self.buf.len();
        self.buf.push(0);
        body(self);
        let len = self.buf.len() - at - 1;
        if len < 0x80 {
            self.buf[at] = len as u8;
        } else {
            let (prefix, n) = varint_bytes(len as u64);
            self.buf.splice(at..=at, prefix[..n].iter().copied());
        }
    }

    /// `KeyValue`s, each as field `field`.
    fn attributes<'a>(
        &mut self,
        field: u32,
        attributes: impl IntoIterator<Item = (&'a str, &'a Value)>,
    ) {
        for (key, value) in attributes {
            self.message(field, |w| {
                w.string(1, key);
                w.message(2, |w| w.any_value(value));
            });
        }
    }

    /// The body of an `AnyValue`: its `oneof` member is always written.
    fn any_value(&mut self, value: &Value) {
        match value {
            Value::Bool(v) => self.oneof_varint(2, u64::from(*v)),
            Value::I64(v) => self.oneof_varint(3, *v as u64),
            Value::F64(v) => self.oneof_double(*v),
            Value::String(v) => self.bytes_always(1, v.as_str().as_bytes()),
            Value::Array(array) => self.message(5, |w| match array {
                Array::Bool(values) => {
                    for v in values {
                        w.message(1, |w| w.oneof_varint(2, u64::from(*v)));
                    }
                }
                Array::I64(values) => {
                    for v in values {
                        w.message(1, |w| w.oneof_varint(3, *v as u64));
                    }
                }
                Array::F64(values) => {
                    for v in values {
                        w.message(1, |w| w.oneof_double(*v));
                    }
                }
                Array::String(values) => {
                    for v in values {
                        w.message(1, |w| w.bytes_always(1, v.as_str().as_bytes()));
                    }
                }
                // A kind of array newer than this code: sent as its text
                // rather than dropped.
                other => w.message(1, |w| w.bytes_always(1, other.to_string().as_bytes())),
            }),
            other => self.bytes_always(1, other.as_str().as_bytes()),
        }
    }

    fn oneof_varint(&mut self, field: u32, value: u64) {
        self.key(field, VARINT);
        self.varint(value);
    }

    fn oneof_double(&mut self, value: f64) {
        self.key(4, FIXED64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    fn scope(&mut self, scope: &InstrumentationScope) {
        self.string(1, scope.name());
        self.string(2, scope.version().unwrap_or_default());
        self.attributes(3, scope.attributes().map(|kv| (kv.key.as_str(), &kv.value)));
    }

    fn span(&mut self, span: &SpanData) {
        let context = &span.span_context;
        self.ids(context);
        if span.parent_span_id != SpanId::INVALID {
            self.bytes(4, &span.parent_span_id.to_bytes());
        }
        self.string(5, &span.name);
        self.uint32(6, kind(&span.span_kind));
        self.fixed64(7, nanos(span.start_time));
        self.fixed64(8, nanos(span.end_time));
        self.attributes(9, pairs(&span.attributes));
        self.uint32(10, span.dropped_attributes_count);
        for event in span.events.iter() {
            self.message(11, |w| {
                w.fixed64(1, nanos(event.timestamp));
                w.string(2, &event.name);
                w.attributes(3, pairs(&event.attributes));
                w.uint32(4, event.dropped_attributes_count);
            });
        }
        self.uint32(12, span.events.dropped_count);
        for link in span.links.iter() {
            self.message(13, |w| {
                w.ids(&link.span_context);
                w.attributes(4, pairs(&link.attributes));
                w.uint32(5, link.dropped_attributes_count);
                w.fixed32(6, flags(&link.span_context, link.span_context.is_remote()));
            });
        }
        self.uint32(14, span.links.dropped_count);
        self.message(15, |w| match &span.status {
            Status::Unset => {}
            Status::Ok => w.uint32(3, 1),
            Status::Error { description } => {
                w.string(2, description);
                w.uint32(3, 2);
            }
        });
        self.fixed32(16, flags(context, span.parent_span_is_remote));
    }

    /// The trace id, span id and trace state: fields 1 to 3 of a span and
    /// of a link.
    fn ids(&mut self, context: &SpanContext) {
        self.bytes(1, &context.trace_id().to_bytes());
        self.bytes(2, &context.span_id().to_bytes());
        let state = context.trace_state();
        if *state != TraceState::NONE {
            self.string(3, &state.header());
        }
    }
}

/// A span's or link's `flags`: the W3C trace flags, and whether the parent
/// (or the linked span) is remote.
fn flags(context: &SpanContext, remote: bool) -> u32 {
    let mut flags = u32::from(context.trace_flags().to_u8()) | HAS_IS_REMOTE;
    if remote {
        flags |= IS_REMOTE;
    }
    flags
}

fn kind(kind: &SpanKind) -> u32 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

/// Nanoseconds since the epoch; 0 for a time before it.
fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

fn pairs(attributes: &[KeyValue]) -> impl Iterator<Item = (&str, &Value)> {
    attributes.iter().map(|kv| (kv.key.as_str(), &kv.value))
}

/// The `resource` (field 1) and `schema_url` (field 3) of a
/// `ResourceSpans`, for [`encode_request`].
fn encode_resource(resource: &Resource) -> Vec<u8> {
    let mut w = Writer { buf: Vec::new() };
    w.message(1, |w| {
        w.attributes(1, resource.iter().map(|(key, value)| (key.as_str(), value)));
    });
    w.string(3, resource.schema_url().unwrap_or_default());
    w.buf
}

/// An `ExportTraceServiceRequest` with `spans`: one `ResourceSpans` (the
/// fields `resource`, from [`encode_resource`]), and in it one `ScopeSpans`
/// per instrumentation scope, in the order the scopes first appear, each
/// with its spans in batch order.
fn encode_request(spans: &[SpanData], resource: &[u8]) -> Vec<u8> {
    let mut w = Writer {
        buf: Vec::with_capacity(64 + 512 * spans.len()),
    };
    w.message(1, |w| {
        w.buf.extend_from_slice(resource);
        // Nearly always one scope: each span is compared with the scopes
        // seen so far rather than hashed.
        let mut scopes: Vec<&InstrumentationScope> = Vec::new();
        for span in spans {
            if !scopes.contains(&&span.instrumentation_scope) {
                scopes.push(&span.instrumentation_scope);
            }
        }
        for scope in scopes {
            w.message(2, |w| {
                w.message(1, |w| w.scope(scope));
                for span in spans
                    .iter()
                    .filter(|span| span.instrumentation_scope == *scope)
                {
                    w.message(2, |w| w.span(span));
                }
                w.string(3, scope.schema_url().unwrap_or_default());
            });
        }
    });
    w.buf
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::borrow::Cow;
    use std::time::{Duration, UNIX_EPOCH};

    use opentelemetry::trace::{
        Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
    use prost::Message as _;

    use super::{HttpConfig, encode_request, encode_resource};

    fn context(trace: u128, span: u64, state: TraceState, remote: bool) -> SpanContext {
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            remote,
            state,
        )
    }

    fn every_value() -> Vec<KeyValue> {
        vec![
            KeyValue::new("string", "text"),
            KeyValue::new("empty", ""),
            KeyValue::new("long", "x".repeat(20_000)),
            KeyValue::new("unicode", "naïve 任务 🚀"),
            KeyValue::new("true", true),
            KeyValue::new("false", false),
            KeyValue::new("zero", 0_i64),
            KeyValue::new("negative", -42_i64),
            KeyValue::new("max", i64::MAX),
            KeyValue::new("float", 1.5_f64),
            KeyValue::new("float_zero", 0.0_f64),
            KeyValue::new("bools", Value::Array(Array::Bool(vec![true, false]))),
            KeyValue::new("ints", Value::Array(Array::I64(vec![0, -1, 300]))),
            KeyValue::new("floats", Value::Array(Array::F64(vec![0.0, -2.25]))),
            KeyValue::new(
                "strings",
                Value::Array(Array::String(vec![
                    StringValue::from(""),
                    StringValue::from("b"),
                ])),
            ),
            KeyValue::new("empty_array", Value::Array(Array::I64(vec![]))),
        ]
    }

    fn span(scope: &InstrumentationScope, n: u64) -> SpanData {
        SpanData {
            span_context: context(
                0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
                n,
                TraceState::NONE,
                false,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: Cow::Borrowed("SendMessage"),
            start_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789),
            end_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_223_456_789),
            attributes: vec![KeyValue::new("a2a.operation", "SendMessage")],
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: scope.clone(),
        }
    }

    /// What the standard exporter would send for `spans` under `resource`.
    fn standard(spans: &[SpanData], resource: &Resource) -> ExportTraceServiceRequest {
        ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans.to_vec(),
                &ResourceAttributesWithSchema::from(resource),
            ),
        }
    }

    fn ours(spans: &[SpanData], resource: &Resource) -> ExportTraceServiceRequest {
        let bytes = encode_request(spans, &encode_resource(resource));
        ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap()
    }

    #[test]
    fn every_kind_of_span_reads_back_as_the_standard_exporter_s_request() {
        let a2a = InstrumentationScope::builder("a2a").build();
        let other = InstrumentationScope::builder("other")
            .with_version("1.2.3")
            .with_schema_url("https://opentelemetry.io/schemas/1.21.0")
            .with_attributes([KeyValue::new("scope.attr", 7_i64)])
            .build();
        let state = TraceState::from_key_value([("vendor", "value"), ("other", "x")]).unwrap();
        let mut spans = Vec::new();
        // Every value type, long enough that lengths take two and three bytes.
        let mut full = span(&a2a, 1);
        full.attributes = every_value();
        full.dropped_attributes_count = 3;
        full.parent_span_id = SpanId::from(99);
        full.parent_span_is_remote = true;
        full.span_context = context(5, 6, state.clone(), false);
        full.status = Status::error("it broke");
        // (Both are non-exhaustive: filled in place.)
        full.events.events = vec![
            Event::new(
                "status",
                UNIX_EPOCH + Duration::from_nanos(7),
                every_value(),
                1,
            ),
            Event::new("", UNIX_EPOCH, vec![], 0),
        ];
        full.events.dropped_count = 2;
        full.links.links = vec![
            Link::new(context(8, 9, state, true), vec![KeyValue::new("l", "v")], 4),
            Link::new(context(10, 11, TraceState::NONE, false), vec![], 0),
        ];
        full.links.dropped_count = 5;
        spans.push(full);
        // Each kind and status; a time before the epoch; another scope
        // between spans of the first.
        for (n, kind) in [
            SpanKind::Internal,
            SpanKind::Client,
            SpanKind::Producer,
            SpanKind::Consumer,
        ]
        .into_iter()
        .enumerate()
        {
            let scope = if n % 2 == 0 { &other } else { &a2a };
            let mut s = span(scope, 20 + n as u64);
            s.span_kind = kind;
            s.status = if n == 0 { Status::Ok } else { Status::Unset };
            s.attributes = vec![];
            s.name = Cow::Owned(String::new());
            spans.push(s);
        }
        let mut before_epoch = span(&a2a, 30);
        before_epoch.start_time = UNIX_EPOCH - Duration::from_secs(1);
        spans.push(before_epoch);
        let resource = Resource::builder_empty()
            .with_attributes([
                KeyValue::new("service.name", "a2a"),
                KeyValue::new("host.count", 2_i64),
            ])
            .with_schema_url([], "https://opentelemetry.io/schemas/1.20.0")
            .build();
        assert_eq!(ours(&spans, &resource), standard(&spans, &resource));
        // One span alone, and none, under an empty resource.
        let empty = Resource::builder_empty().build();
        assert_eq!(ours(&spans[..1], &empty), standard(&spans[..1], &empty));
        assert_eq!(ours(&[], &empty), standard(&[], &empty));
    }

    /// The bytes are the standard encoder's too, not only what they decode
    /// to: a collector that checks lengths strictly reads them as well.
    #[test]
    fn the_bytes_are_the_canonical_encoding() {
        let a2a = InstrumentationScope::builder("a2a").build();
        let mut spans: Vec<SpanData> = (0..3).map(|n| span(&a2a, n + 1)).collect();
        spans[1].attributes = every_value();
        let resource = Resource::builder().build();
        let ours = encode_request(&spans, &encode_resource(&resource));
        let theirs = standard(&spans, &resource).encode_to_vec();
        // (Not printed whole: the long attribute is 20,000 bytes.)
        let first_difference = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        assert!(
            first_difference.is_none() && ours.len() == theirs.len(),
            "first difference at {first_difference:?} (lengths {} and {}): {:?} / {:?}",
            ours.len(),
            theirs.len(),
            first_difference.map(|at| &ours[at.saturating_sub(8)..(at + 8).min(ours.len())]),
            first_difference.map(|at| &theirs[at.saturating_sub(8)..(at + 8).min(theirs.len())]),
        );
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn the_endpoint_is_the_traces_one_else_the_base_with_its_path_else_the_default() {
        let endpoint = |vars: &[(&str, &str)]| HttpConfig::from_env(env(vars)).unwrap().endpoint;
        assert_eq!(endpoint(&[]).as_str(), "http://localhost:4318/v1/traces");
        assert_eq!(
            endpoint(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]).as_str(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            endpoint(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector/base/")]).as_str(),
            "https://collector/base/v1/traces"
        );
        // The signal's own endpoint is taken as it is, and wins.
        assert_eq!(
            endpoint(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://127.0.0.1:9/spans"
                ),
            ])
            .as_str(),
            "http://127.0.0.1:9/spans"
        );
        // Empty counts as unset.
        assert_eq!(
            endpoint(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""),
            ])
            .as_str(),
            "http://127.0.0.1:4318/v1/traces"
        );
        for bad in ["not a url", "ftp://127.0.0.1/x"] {
            let err = HttpConfig::from_env(env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", bad)]))
                .unwrap_err()
                .to_string();
            assert!(err.contains("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "{err}");
        }
    }

    #[test]
    fn headers_are_the_traces_ones_else_the_general_ones_percent_decoded() {
        let headers = |vars: &[(&str, &str)]| HttpConfig::from_env(env(vars)).unwrap().headers;
        let general = headers(&[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            " api-key = a%20b%2Cc , x-empty=, no-equals, bad key=v, =v,x-two=2",
        )]);
        assert_eq!(general.len(), 2, "{general:?}");
        assert_eq!(general["api-key"], "a b,c");
        assert_eq!(general["x-two"], "2");
        let own = headers(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
        ]);
        assert_eq!(own.len(), 1);
        assert_eq!(own["b"], "2");
    }

    #[test]
    fn the_timeout_is_in_milliseconds_and_compression_other_than_none_is_refused() {
        let config = |vars: &[(&str, &str)]| HttpConfig::from_env(env(vars));
        assert_eq!(config(&[]).unwrap().timeout, Duration::from_secs(10));
        assert_eq!(
            config(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")])
                .unwrap()
                .timeout,
            Duration::from_millis(2500)
        );
        assert_eq!(
            config(&[
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "40"),
            ])
            .unwrap()
            .timeout,
            Duration::from_millis(40)
        );
        let err = config(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("OTEL_EXPORTER_OTLP_TIMEOUT"), "{err}");
        assert!(config(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "none")]).is_ok());
        let err = config(&[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"),
            "{err}"
        );
    }
}
