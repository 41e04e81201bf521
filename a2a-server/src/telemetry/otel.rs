//! What the `otel` feature adds to the spans: W3C trace context read from
//! calls and written to push webhooks, and the server's metrics.
//!
//! Both go through the OpenTelemetry globals, so the program decides where
//! they end up: the text-map propagator (set
//! `opentelemetry_sdk::propagation::TraceContextPropagator` for W3C
//! `traceparent`/`tracestate`; the default one propagates nothing), the
//! meter provider, and a `tracing_opentelemetry` layer for the spans. Install
//! them before the server answers its first call: the instruments are made
//! once, from the meter provider current then.
//!
//! | metric | kind | attributes |
//! |---|---|---|
//! | `a2a.server.requests` | counter | `a2a.operation`, `a2a.binding` |
//! | `a2a.server.errors` | counter | `a2a.operation`, `a2a.binding`, `a2a.error_code` |
//! | `a2a.server.duration` | histogram (s) | `a2a.operation`, `a2a.binding` |
//! | `a2a.server.active_executions` | up-down counter | |
//! | `a2a.server.open_streams` | up-down counter | `a2a.operation`, `a2a.binding` |
//! | `a2a.push.deliveries` | counter | `a2a.outcome` (`delivered`, `failed`) |
//! | `a2a.server.store.duration` | histogram (s) | `a2a.store.operation` (`task.create`, `job.record`, `push.get`, ...), `a2a.store.kind` (the store's type name; the in-memory stores are not timed) |

use std::sync::OnceLock;
use std::time::Duration;

use a2a_core::{A2aError, Method};
use futures::StreamExt;
use opentelemetry::KeyValue;
use opentelemetry::global;
use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};
use opentelemetry::propagation::{Extractor, Injector};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::{EventStream, ServiceParams};

/// The W3C header naming the caller's span.
const TRACEPARENT: &str = "traceparent";

/// Reads trace context from a call's headers or metadata.
struct ParamsExtractor<'a>(&'a ServiceParams);

impl Extractor for ParamsExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(key, _)| key).collect()
    }
}

/// Writes trace context into HTTP headers.
struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Makes the caller's span (from `traceparent`) the parent of `span`. A call
/// without one keeps its contextual parent: an in-process call stays under
/// the span that made it.
pub(crate) fn adopt_remote_parent(span: &Span, params: &ServiceParams) {
    if params.get(TRACEPARENT).is_none() {
        return;
    }
    let parent = global::get_text_map_propagator(|p| p.extract(&ParamsExtractor(params)));
    // Fails only when the span was already started, which it was not.
    let _ = span.set_parent(parent);
}

/// The status event of the execution span (the current one), added to the
/// OpenTelemetry span directly.
pub(crate) fn status_event(state: a2a_core::TaskState) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    span.add_event(
        "task status changed",
        vec![KeyValue::new("a2a.state", state.as_str())],
    );
}

/// Writes the trace context of `span` into `headers`, for the request that
/// span stands for (a push delivery).
pub fn inject_headers(span: &Span, headers: &mut http::HeaderMap) {
    let context = span.context();
    global::get_text_map_propagator(|p| p.inject_context(&context, &mut HeaderInjector(headers)));
}

/// The trace context of `span` as `(name, value)` pairs (`traceparent`,
/// and `tracestate` when it has one), for a channel that is not HTTP: the
/// gateway writes them into the `execute` lines of its process agents.
pub fn trace_context(span: &Span) -> Vec<(String, String)> {
    struct Pairs(Vec<(String, String)>);
    impl Injector for Pairs {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_owned(), value));
        }
    }
    let context = span.context();
    let mut pairs = Pairs(Vec::new());
    global::get_text_map_propagator(|p| p.inject_context(&context, &mut pairs));
    pairs.0
}

/// The server's instruments, made once from the global meter provider.
struct Metrics {
    requests: Counter<u64>,
    errors: Counter<u64>,
    duration: Histogram<f64>,
    active_executions: UpDownCounter<i64>,
    open_streams: UpDownCounter<i64>,
    push_deliveries: Counter<u64>,
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let meter = global::meter("a2a-server");
        Metrics {
            requests: meter
                .u64_counter("a2a.server.requests")
                .with_description("Calls answered, by operation and binding.")
                .build(),
            errors: meter
                .u64_counter("a2a.server.errors")
                .with_description("Calls answered with an error, by error code.")
                .build(),
            duration: meter
                .f64_histogram("a2a.server.duration")
                .with_unit("s")
                .with_description("Time to answer a call (a stream: to its start).")
                .build(),
            active_executions: meter
                .i64_up_down_counter("a2a.server.active_executions")
                .with_description("Executions running now.")
                .build(),
            open_streams: meter
                .i64_up_down_counter("a2a.server.open_streams")
                .with_description("Event streams open now.")
                .build(),
            push_deliveries: meter
                .u64_counter("a2a.push.deliveries")
                .with_description("Push deliveries, by outcome.")
                .build(),
        }
    })
}

fn call_attributes(method: Method, binding: &'static str) -> [KeyValue; 2] {
    [
        KeyValue::new("a2a.operation", method.name()),
        KeyValue::new("a2a.binding", binding),
    ]
}

/// Counts one answered call and its latency.
pub(crate) fn record_call(
    method: Method,
    binding: &'static str,
    elapsed: Duration,
    error: Option<&A2aError>,
) {
    let m = metrics();
    let attributes = call_attributes(method, binding);
    m.requests.add(1, &attributes);
    m.duration.record(elapsed.as_secs_f64(), &attributes);
    if let Some(err) = error {
        let [operation, binding] = attributes;
        m.errors.add(
            1,
            &[
                operation,
                binding,
                KeyValue::new("a2a.error_code", err.kind().reason()),
            ],
        );
    }
}

/// `stream`, counted among the open streams until it is dropped.
pub(crate) fn count_stream(
    method: Method,
    binding: &'static str,
    stream: EventStream,
) -> EventStream {
    struct Open([KeyValue; 2]);
    impl Drop for Open {
        fn drop(&mut self) {
            metrics().open_streams.add(-1, &self.0);
        }
    }
    let attributes = call_attributes(method, binding);
    metrics().open_streams.add(1, &attributes);
    let open = Open(attributes);
    Box::pin(stream.map(move |item| {
        let _open = &open;
        item
    }))
}

/// Counts a running execution until dropped.
#[derive(Debug)]
pub(crate) struct ActiveExecution(());

impl ActiveExecution {
    pub(crate) fn start() -> Self {
        metrics().active_executions.add(1, &[]);
        ActiveExecution(())
    }
}

impl Drop for ActiveExecution {
    fn drop(&mut self) {
        metrics().active_executions.add(-1, &[]);
    }
}

/// Counts one push delivery's outcome.
pub(crate) fn record_push(delivered: bool) {
    let outcome = if delivered { "delivered" } else { "failed" };
    metrics()
        .push_deliveries
        .add(1, &[KeyValue::new("a2a.outcome", outcome)]);
}
