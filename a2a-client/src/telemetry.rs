//! The client's span per call (`a2a.client`, target `a2a::client`), and with
//! the `otel` feature its W3C trace context sent along on every binding.
//!
//! The span has `a2a.operation`, `a2a.binding`, `a2a.agent` (the card's name),
//! `server.address` (the interface URL) and, on failure, `a2a.error_code` (the
//! A2A reason, or the client's error kind when the agent gave none). With no
//! subscriber interested in it, it costs a callsite check per call.
//!
//! With `otel`, the span's context goes out as `traceparent`/`tracestate`
//! service parameters (HTTP headers, gRPC metadata) through the global
//! OpenTelemetry text-map propagator, so the agent's spans join the caller's
//! trace; set `opentelemetry_sdk::propagation::TraceContextPropagator` as that
//! propagator (its default propagates nothing).
//!
//! With `otel`, the client also keeps metrics through the global meter
//! provider (instruments made on the first call):
//!
//! | metric | kind | attributes |
//! |---|---|---|
//! | `a2a.client.requests` | counter | `a2a.operation`, `a2a.binding` |
//! | `a2a.client.errors` | counter | `a2a.operation`, `a2a.binding`, `a2a.error_code` |
//! | `a2a.client.duration` | histogram (s) | `a2a.operation`, `a2a.binding` |
//!
//! A call's duration runs from its first attempt to its answer (retries
//! included); a stream's ends when it starts.

use a2a_core::Method;
use tracing::Span;
use tracing::field::Empty;

use crate::ClientError;

/// The target of the call spans.
pub const CLIENT_TARGET: &str = "a2a::client";
/// The target of the call spans of a trace not sampled, when the server
/// decides sampling once per trace (`a2a_server::telemetry::otel::sample_at_entry`).
#[cfg(feature = "otel")]
pub const UNSAMPLED_CLIENT_TARGET: &str = "a2a::client::unsampled";

/// The span of one call, named for `target` (sampled or not): one callsite
/// per target.
macro_rules! call_span {
    ($target:expr, $method:expr, $binding:expr, $agent:expr, $url:expr) => {
        tracing::info_span!(
            target: $target,
            "a2a.client",
            otel.name = $method.name(),
            otel.kind = "client",
            otel.status_code = Empty,
            a2a.operation = $method.name(),
            a2a.binding = $binding,
            a2a.agent = $agent,
            server.address = $url,
            a2a.error_code = Empty,
        )
    };
}

/// The span of one call: the `tracing` span and, with `otel` in a trace whose
/// spans the SDK records itself (`a2a_core::span_record`), its record, which
/// ends when this is dropped.
#[derive(Debug)]
pub(crate) struct ClientSpan {
    /// The span the attempts run in.
    pub(crate) span: Span,
    #[cfg(feature = "otel")]
    record: Option<std::sync::Arc<a2a_core::span_record::SpanRecord>>,
}

/// The span of one call (all its attempts). With `otel`, made inside a trace
/// the server chose not to sample (see `a2a_core::trace_scope`), it is
/// made at [`UNSAMPLED_CLIENT_TARGET`] instead, which the bridge leaves out,
/// and the call sends that trace's context on; made inside a trace the SDK
/// records, it is recorded too, as a child of the work that makes the call.
pub(crate) fn client_span(method: Method, binding: &str, agent: &str, url: &str) -> ClientSpan {
    #[cfg(feature = "otel")]
    {
        use a2a_core::span_record::{self, SpanParent, SpanRecord};
        use a2a_core::trace_scope::TraceScope;
        use opentelemetry::KeyValue;
        use opentelemetry::trace::SpanKind;

        let parent = match a2a_core::trace_scope::current() {
            TraceScope::Unsampled(_) => {
                return ClientSpan {
                    span: call_span!(UNSAMPLED_CLIENT_TARGET, method, binding, agent, url),
                    record: None,
                };
            }
            TraceScope::Recorded(parent) => Some(SpanParent::Local(parent.context().clone())),
            // A call outside any trace, when the SDK records spans: its own
            // trace, if the program's sampler samples it.
            TraceScope::Outside => span_record::sampled_root(method.name(), &SpanKind::Client),
            _ => None,
        };
        if let Some(parent) = parent {
            let mut attributes = vec![
                KeyValue::new("a2a.operation", method.name()),
                KeyValue::new("a2a.binding", binding.to_owned()),
                KeyValue::new("server.address", url.to_owned()),
            ];
            if !agent.is_empty() {
                attributes.push(KeyValue::new("a2a.agent", agent.to_owned()));
            }
            let record = SpanRecord::start(parent, method.name(), SpanKind::Client, attributes);
            return ClientSpan {
                span: call_span!(CLIENT_TARGET, method, binding, agent, url),
                record: Some(record),
            };
        }
    }
    ClientSpan {
        span: call_span!(CLIENT_TARGET, method, binding, agent, url),
        #[cfg(feature = "otel")]
        record: None,
    }
}

/// The `a2a.error_code` of a failure: the A2A reason, or the client's error
/// kind when the agent gave none.
fn error_code(err: &ClientError) -> &'static str {
    use crate::ClientErrorKind as K;
    if let Some(kind) = err.protocol_kind() {
        return kind.reason();
    }
    match err.kind() {
        K::Protocol => "Protocol",
        K::Connection => "Connection",
        K::Timeout => "Timeout",
        K::Http => "Http",
        K::Decode => "Decode",
        K::Unsupported => "Unsupported",
        K::Config => "Config",
        K::Signature => "Signature",
    }
}

/// Records a failed call's error code.
pub(crate) fn record_error(call: &ClientSpan, err: &ClientError) {
    #[cfg(feature = "otel")]
    if let Some(record) = &call.record {
        record.add_attributes([opentelemetry::KeyValue::new(
            "a2a.error_code",
            error_code(err),
        )]);
        record.set_error();
    }
    let span = &call.span;
    if span.is_disabled() {
        return;
    }
    span.record("a2a.error_code", error_code(err));
    span.record("otel.status_code", "ERROR");
}

/// Counts one call, its latency and, if it failed, its error code.
#[cfg(feature = "otel")]
pub(crate) fn record_call(
    method: Method,
    binding: &str,
    elapsed: std::time::Duration,
    error: Option<&ClientError>,
) {
    use std::sync::OnceLock;

    use opentelemetry::KeyValue;
    use opentelemetry::metrics::{Counter, Histogram};

    struct Metrics {
        requests: Counter<u64>,
        errors: Counter<u64>,
        duration: Histogram<f64>,
    }
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    let m = METRICS.get_or_init(|| {
        let meter = opentelemetry::global::meter("a2a-client");
        Metrics {
            requests: meter
                .u64_counter("a2a.client.requests")
                .with_description("Calls made, by operation and binding.")
                .build(),
            errors: meter
                .u64_counter("a2a.client.errors")
                .with_description("Calls that failed, by error code.")
                .build(),
            duration: meter
                .f64_histogram("a2a.client.duration")
                .with_unit("s")
                .with_description("Time to a call's answer (a stream: to its start).")
                .build(),
        }
    });
    // The names the card uses need no copy; another binding's name does.
    let binding = match binding {
        a2a_core::binding::JSONRPC => KeyValue::new("a2a.binding", a2a_core::binding::JSONRPC),
        a2a_core::binding::HTTP_JSON => KeyValue::new("a2a.binding", a2a_core::binding::HTTP_JSON),
        a2a_core::binding::GRPC => KeyValue::new("a2a.binding", a2a_core::binding::GRPC),
        other => KeyValue::new("a2a.binding", other.to_owned()),
    };
    let attributes = [KeyValue::new("a2a.operation", method.name()), binding];
    m.requests.add(1, &attributes);
    m.duration.record(elapsed.as_secs_f64(), &attributes);
    if let Some(err) = error {
        let [operation, binding] = attributes;
        m.errors.add(
            1,
            &[
                operation,
                binding,
                KeyValue::new("a2a.error_code", error_code(err)),
            ],
        );
    }
}

/// The trace context a call sends on: its span's own (recorded by the SDK
/// or by the bridge), or in a trace not sampled (where the span is left out)
/// the trace's with a span id of the call's own. `None` when there is nothing
/// to send: the span is disabled and no scope is around it.
#[cfg(feature = "otel")]
pub(crate) fn call_context(call: &ClientSpan) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let span = &call.span;
    if let Some(record) = &call.record {
        return Some(
            opentelemetry::Context::new().with_remote_span_context(record.context().clone()),
        );
    }
    if let Some(trace) = a2a_core::trace_scope::unsampled() {
        return Some(
            opentelemetry::Context::new()
                .with_remote_span_context(a2a_core::trace_scope::child_of(&trace)),
        );
    }
    (!span.is_disabled()).then(|| span.context())
}

/// Puts `context` among the call's service parameters, replacing any trace
/// context the caller set.
#[cfg(feature = "otel")]
pub(crate) fn inject(context: &opentelemetry::Context, headers: &mut Vec<(String, String)>) {
    use opentelemetry::propagation::Injector;

    struct Params<'a>(&'a mut Vec<(String, String)>);
    impl Injector for Params<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.retain(|(k, _)| !k.eq_ignore_ascii_case(key));
            self.0.push((key.to_owned(), value));
        }
    }

    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(context, &mut Params(headers))
    });
}
