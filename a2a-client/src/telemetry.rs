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

use a2a_core::Method;
use tracing::Span;
use tracing::field::Empty;

use crate::ClientError;

/// The target of the call spans.
pub const CLIENT_TARGET: &str = "a2a::client";

/// The span of one call (all its attempts).
pub(crate) fn client_span(method: Method, binding: &str, agent: &str, url: &str) -> Span {
    tracing::info_span!(
        target: CLIENT_TARGET,
        "a2a.client",
        otel.name = method.name(),
        otel.kind = "client",
        otel.status_code = Empty,
        a2a.operation = method.name(),
        a2a.binding = binding,
        a2a.agent = agent,
        server.address = url,
        a2a.error_code = Empty,
    )
}

/// Records a failed call's error code.
pub(crate) fn record_error(span: &Span, err: &ClientError) {
    if span.is_disabled() {
        return;
    }
    match err.protocol_kind() {
        Some(kind) => span.record("a2a.error_code", kind.reason()),
        None => span.record("a2a.error_code", tracing::field::debug(err.kind())),
    };
    span.record("otel.status_code", "ERROR");
}

/// Puts `span`'s trace context among the call's service parameters,
/// replacing any the caller set.
#[cfg(feature = "otel")]
pub(crate) fn inject(span: &Span, headers: &mut Vec<(String, String)>) {
    use opentelemetry::propagation::Injector;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct Params<'a>(&'a mut Vec<(String, String)>);
    impl Injector for Params<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.retain(|(k, _)| !k.eq_ignore_ascii_case(key));
            self.0.push((key.to_owned(), value));
        }
    }

    let context = span.context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&context, &mut Params(headers))
    });
}
