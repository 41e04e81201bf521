//! Spans (and, with the `otel` feature, metrics and W3C trace context) for
//! every call the server answers, every execution and every push delivery.
//!
//! The instrumentation is plain `tracing`: one span per call (`a2a.server`),
//! per execution (`a2a.execution`, with an event per status change) and per
//! push delivery (`a2a.push`), under the targets below. With no subscriber
//! interested in them they cost a callsite check each. The `otel` feature adds
//! what needs the OpenTelemetry crates: the call span's parent taken from the
//! caller's `traceparent`/`tracestate` (any binding), the trace context sent
//! on to push webhooks, and the metrics of the `otel` module.
//!
//! | span | target | fields |
//! |---|---|---|
//! | `a2a.server` | `a2a::server` | `a2a.operation`, `a2a.binding`, `a2a.agent`, `a2a.tenant`, `a2a.task_id`, `a2a.context_id`, `a2a.caller`, `a2a.error_code` |
//! | `a2a.execution` | `a2a::execution` | `a2a.task_id`, `a2a.context_id`; events `task status changed` (`a2a.state`, such as `TASK_STATE_WORKING`) |
//! | `a2a.push` | `a2a::push` | `a2a.task_id`, `server.address` (the webhook's host), `a2a.outcome` |
//!
//! With `otel` and the sampling decided at the server's entry
//! ([`otel::sample_at_entry`]), the spans of a trace not sampled are made
//! under the same names at the targets above followed by `::unsampled`
//! (`a2a::server::unsampled`, ...): a filter that admits the targets above
//! to the OpenTelemetry bridge and not these leaves the bridge no work for
//! them, and with no other layer wanting them they are never made. Their
//! trace context goes with the work's futures instead
//! ([`a2a_core::trace_scope`]), for the calls they make.

use std::future::Future;

#[cfg(feature = "otel")]
use a2a_core::span_record::SpanRecord;
#[cfg(feature = "otel")]
use a2a_core::trace_scope::{Scoped, TraceScope};
use a2a_core::{A2aError, SendMessageResponse};
#[cfg(feature = "otel")]
use opentelemetry::KeyValue;
#[cfg(feature = "otel")]
use opentelemetry::trace::SpanKind;
#[cfg(feature = "otel")]
use std::sync::Arc;
use tracing::Span;
use tracing::field::Empty;

use crate::{CallContext, Request, Response};

/// The target of the call spans.
pub const SERVER_TARGET: &str = "a2a::server";
/// The target of the execution spans and their status events.
pub const EXECUTION_TARGET: &str = "a2a::execution";
/// The target of the push delivery spans.
pub const PUSH_TARGET: &str = "a2a::push";

/// The `a2a.binding` values: the protocol binding names of the agent card,
/// plus one for calls made in the same process.
pub mod binding {
    /// JSON-RPC 2.0 over HTTP.
    pub const JSONRPC: &str = "JSONRPC";
    /// HTTP+JSON (REST).
    pub const HTTP_JSON: &str = "HTTP+JSON";
    /// gRPC.
    pub const GRPC: &str = "GRPC";
    /// A call handed to the service in the same process (gateway peers).
    pub const IN_PROCESS: &str = "in-process";
}

#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "otel")]
mod store;
#[cfg(feature = "otel")]
pub(crate) use store::{job_store, push_store, task_store};

/// `store` as the handler keeps it (with `otel`, timed).
#[cfg(not(feature = "otel"))]
pub(crate) fn task_store<S: crate::store::TaskStore>(
    store: S,
) -> std::sync::Arc<dyn crate::store::TaskStore> {
    std::sync::Arc::new(store)
}

/// `store` as the handler keeps it (with `otel`, timed).
#[cfg(not(feature = "otel"))]
pub(crate) fn job_store<S: crate::store::JobStore>(
    store: S,
) -> std::sync::Arc<dyn crate::store::JobStore> {
    std::sync::Arc::new(store)
}

/// `store` as the handler keeps it (with `otel`, timed).
#[cfg(not(feature = "otel"))]
pub(crate) fn push_store<S: crate::store::PushConfigStore>(
    store: S,
) -> std::sync::Arc<dyn crate::store::PushConfigStore> {
    std::sync::Arc::new(store)
}

/// A value worth recording: an empty one says nothing worth searching by,
/// and `None` records nothing.
fn non_empty(value: &str) -> Option<&str> {
    (!value.is_empty()).then_some(value)
}

/// A span, and with `otel` the trace scope of the work it stands for: what
/// the work's future runs in ([`Traced::instrument`]).
#[derive(Debug, Clone)]
pub(crate) struct Traced {
    /// The span (disabled for a trace not sampled, unless a log wants it).
    pub(crate) span: Span,
    /// The scope the work's polls run in; `None` keeps the one around.
    #[cfg(feature = "otel")]
    scope: Option<TraceScope>,
}

/// A future in its span and, with `otel`, its trace scope.
#[cfg(feature = "otel")]
pub(crate) type TracedFuture<F> = Scoped<tracing::instrument::Instrumented<F>>;
/// A future in its span and, with `otel`, its trace scope.
#[cfg(not(feature = "otel"))]
pub(crate) type TracedFuture<F> = tracing::instrument::Instrumented<F>;

impl Traced {
    /// `span`, in whatever scope is around it.
    fn plain(span: Span) -> Self {
        Traced {
            span,
            #[cfg(feature = "otel")]
            scope: None,
        }
    }

    /// `span` in a trace the server decided: sampled spans carry their
    /// context themselves, a trace not sampled carries it in the scope.
    #[cfg(feature = "otel")]
    fn decided(span: Span, scope: TraceScope) -> Self {
        Traced {
            span,
            scope: Some(scope),
        }
    }

    /// What records the outcome of the work once it is done.
    pub(crate) fn handle(&self) -> TracedHandle {
        TracedHandle {
            span: self.span.clone(),
            #[cfg(feature = "otel")]
            record: match &self.scope {
                Some(TraceScope::Recorded(record)) => Some(Arc::clone(record)),
                _ => None,
            },
        }
    }

    /// `future`, entering the span and its trace scope at each poll.
    pub(crate) fn instrument<F: Future>(self, future: F) -> TracedFuture<F> {
        let future = tracing::Instrument::instrument(future, self.span);
        #[cfg(feature = "otel")]
        let future = match self.scope {
            Some(scope) => Scoped::new(future, scope),
            None => Scoped::inherit(future),
        };
        future
    }
}

/// The span of some work, and with `otel` its record when the SDK records
/// it: where the work's outcome goes ([`record_outcome`]).
#[derive(Debug)]
pub(crate) struct TracedHandle {
    span: Span,
    #[cfg(feature = "otel")]
    record: Option<Arc<SpanRecord>>,
}

/// The span current now and, with `otel`, the trace scope: the parent of
/// work that runs later elsewhere (a push delivery).
#[derive(Debug)]
pub(crate) struct Parent {
    span: Span,
    #[cfg(feature = "otel")]
    scope: TraceScope,
}

impl Parent {
    /// The parent for work started here.
    pub(crate) fn current() -> Self {
        Parent {
            span: Span::current(),
            // The parent's context only: the work outlives the span, which
            // ends when its own work does.
            #[cfg(feature = "otel")]
            scope: match a2a_core::trace_scope::current() {
                TraceScope::Recorded(record) => {
                    TraceScope::Recorded(SpanRecord::context_only(record.context().clone()))
                }
                scope => scope,
            },
        }
    }
}

/// The span of one call, named for `target` (sampled or not): one callsite
/// per target, so that the filters decide once per callsite.
macro_rules! call_span {
    ($target:expr, $ctx:expr, $task_id:expr, $context_id:expr) => {
        tracing::info_span!(
            target: $target,
            "a2a.server",
            otel.name = $ctx.method.name(),
            otel.kind = "server",
            otel.status_code = Empty,
            a2a.operation = $ctx.method.name(),
            a2a.binding = $ctx.binding,
            a2a.agent = Empty,
            a2a.tenant = Empty,
            a2a.task_id = non_empty($task_id),
            a2a.context_id = non_empty($context_id),
            a2a.caller = Empty,
            a2a.error_code = Empty,
        )
    };
}

/// The span of one call, opened before anything else runs. With `otel`, its
/// parent is the caller's trace context when the call carries one; and when
/// the program has the server decide sampling ([`otel::sample_at_entry`]),
/// the decision is made here, once per trace.
pub(crate) fn server_span(ctx: &CallContext, request: &Request) -> Traced {
    // Everything known now is given at creation: each later `record` is a
    // call through every layer.
    let (task_id, context_id) = request.ids();
    #[cfg(feature = "otel")]
    if let Some(entry) = otel::entry_sampler() {
        return match entry.at_entry(&ctx.service_params) {
            otel::Decision::Sampled(parent) => {
                let span = call_span!(SERVER_TARGET, ctx, task_id, context_id);
                otel::set_parent(&span, parent);
                Traced::decided(span, TraceScope::Sampled)
            }
            otel::Decision::Recorded(parent) => {
                let mut attributes = Vec::with_capacity(10);
                attributes.push(KeyValue::new("a2a.operation", ctx.method.name()));
                attributes.push(KeyValue::new("a2a.binding", ctx.binding));
                if let Some(task_id) = non_empty(task_id) {
                    attributes.push(KeyValue::new("a2a.task_id", task_id.to_owned()));
                }
                if let Some(context_id) = non_empty(context_id) {
                    attributes.push(KeyValue::new("a2a.context_id", context_id.to_owned()));
                }
                let record =
                    SpanRecord::start(parent, ctx.method.name(), SpanKind::Server, attributes);
                Traced::decided(
                    call_span!(SERVER_TARGET, ctx, task_id, context_id),
                    TraceScope::Recorded(record),
                )
            }
            otel::Decision::Unsampled(trace) => Traced::decided(
                call_span!(otel::UNSAMPLED_SERVER_TARGET, ctx, task_id, context_id),
                TraceScope::Unsampled(trace),
            ),
        };
    }
    let span = call_span!(SERVER_TARGET, ctx, task_id, context_id);
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        otel::adopt_remote_parent(&span, &ctx.service_params);
    }
    Traced::plain(span)
}

/// Whether a request names its task and its context (what the call span got
/// at creation), for [`record_outcome`] to record only what is new.
pub(crate) fn named_ids(request: &Request) -> (bool, bool) {
    let (task_id, context_id) = request.ids();
    (!task_id.is_empty(), !context_id.is_empty())
}

/// Records what a call's outcome tells, all in one record: the agent, the
/// caller the service settled on, the task it created or touched (unless the
/// request named it, `named` from [`named_ids`]), the error code of a failure.
pub(crate) fn record_outcome(
    traced: &TracedHandle,
    ctx: &CallContext,
    agent: &str,
    named: (bool, bool),
    outcome: &Result<Response, A2aError>,
) {
    let span = &traced.span;
    #[cfg(feature = "otel")]
    let recorded = traced.record.is_some();
    #[cfg(not(feature = "otel"))]
    let recorded = false;
    if span.is_disabled() && !recorded {
        return;
    }
    let (task_id, context_id) = match outcome {
        Ok(Response::SendMessage(SendMessageResponse::Task(task))) | Ok(Response::Task(task)) => {
            (task.id.as_str(), task.context_id.as_str())
        }
        Ok(Response::SendMessage(SendMessageResponse::Message(message))) => {
            ("", message.context_id.as_str())
        }
        _ => ("", ""),
    };
    let task_id = non_empty(task_id).filter(|_| !named.0);
    let context_id = non_empty(context_id).filter(|_| !named.1);
    let error_code = outcome.as_ref().err().map(|err| err.kind().reason());
    #[cfg(feature = "otel")]
    if let Some(record) = &traced.record {
        let attributes = [
            ("a2a.agent", non_empty(agent)),
            ("a2a.tenant", non_empty(&ctx.tenant)),
            ("a2a.caller", non_empty(&ctx.user.name)),
            ("a2a.task_id", task_id),
            ("a2a.context_id", context_id),
        ];
        record.add_attributes(
            attributes
                .into_iter()
                .filter_map(|(key, value)| Some(KeyValue::new(key, value?.to_owned())))
                .chain(error_code.map(|code| KeyValue::new("a2a.error_code", code))),
        );
        if error_code.is_some() {
            record.set_error();
        }
    }
    if span.is_disabled() {
        return;
    }
    tracing::record_all!(
        span,
        a2a.agent = non_empty(agent),
        a2a.tenant = non_empty(&ctx.tenant),
        a2a.caller = non_empty(&ctx.user.name),
        a2a.task_id = task_id,
        a2a.context_id = context_id,
        a2a.error_code = error_code,
        otel.status_code = error_code.map(|_| "ERROR"),
    );
}

/// The span of one execution, named for `target` (sampled or not).
macro_rules! execution_span {
    ($target:expr, $task_id:expr, $context_id:expr) => {
        tracing::info_span!(
            target: $target,
            "a2a.execution",
            otel.name = "execution",
            a2a.task_id = $task_id,
            a2a.context_id = $context_id,
        )
    };
}

/// The span of one execution: a child of the call that started it, entered
/// whenever the execution runs (the agent's own calls to other agents nest
/// under it). It is sampled when its trace is.
pub(crate) fn execution_span(task_id: &str, context_id: &str) -> Traced {
    #[cfg(feature = "otel")]
    if let Some(entry) = otel::entry_sampler() {
        return match entry.in_trace(a2a_core::trace_scope::current()) {
            otel::Decision::Sampled(parent) => {
                let span = execution_span!(EXECUTION_TARGET, task_id, context_id);
                otel::set_parent(&span, parent);
                Traced::decided(span, TraceScope::Sampled)
            }
            otel::Decision::Recorded(parent) => {
                let attributes = vec![
                    KeyValue::new("a2a.task_id", task_id.to_owned()),
                    KeyValue::new("a2a.context_id", context_id.to_owned()),
                ];
                let record = SpanRecord::start(parent, "execution", SpanKind::Internal, attributes);
                Traced::decided(
                    execution_span!(EXECUTION_TARGET, task_id, context_id),
                    TraceScope::Recorded(record),
                )
            }
            otel::Decision::Unsampled(trace) => Traced::decided(
                execution_span!(otel::UNSAMPLED_EXECUTION_TARGET, task_id, context_id),
                TraceScope::Unsampled(trace),
            ),
        };
    }
    Traced::plain(execution_span!(EXECUTION_TARGET, task_id, context_id))
}

/// An event on the execution span: the task moved to `state`.
///
/// With `otel` it goes straight onto the OpenTelemetry span (no `tracing`
/// event to dispatch through every layer, no level and target attributes,
/// nothing formatted); without it, it is a `tracing` event.
pub(crate) fn status_changed(state: a2a_core::TaskState) {
    #[cfg(feature = "otel")]
    otel::status_event(state);
    #[cfg(not(feature = "otel"))]
    tracing::info!(target: EXECUTION_TARGET, { a2a.state = state.as_str() }, "task status changed");
}

/// The span of one push delivery, named for `target` (sampled or not).
macro_rules! push_span {
    ($target:expr, $parent:expr, $task_id:expr) => {
        tracing::info_span!(
            target: $target,
            parent: $parent,
            "a2a.push",
            otel.name = "push delivery",
            otel.kind = "client",
            otel.status_code = Empty,
            a2a.task_id = $task_id,
            server.address = Empty,
            a2a.outcome = Empty,
        )
    };
}

/// The span of one push delivery (all its attempts), under `parent`: what
/// was current when the event was queued. It is sampled when its trace is.
pub(crate) fn push_span(parent: &Parent, task_id: &str, url: &str) -> Traced {
    let span_parent = &parent.span;
    #[cfg(feature = "otel")]
    let traced = match otel::entry_sampler() {
        Some(entry) => match entry.in_trace(parent.scope.clone()) {
            otel::Decision::Sampled(root) => {
                let span = push_span!(PUSH_TARGET, span_parent, task_id);
                otel::set_parent(&span, root);
                Traced::decided(span, TraceScope::Sampled)
            }
            otel::Decision::Recorded(parent) => {
                let mut attributes = vec![KeyValue::new("a2a.task_id", task_id.to_owned())];
                if let Some(host) = webhook_host(url) {
                    attributes.push(KeyValue::new("server.address", host));
                }
                let record =
                    SpanRecord::start(parent, "push delivery", SpanKind::Client, attributes);
                Traced::decided(
                    push_span!(PUSH_TARGET, span_parent, task_id),
                    TraceScope::Recorded(record),
                )
            }
            otel::Decision::Unsampled(trace) => Traced::decided(
                push_span!(otel::UNSAMPLED_PUSH_TARGET, span_parent, task_id),
                TraceScope::Unsampled(trace),
            ),
        },
        None => Traced::plain(push_span!(PUSH_TARGET, span_parent, task_id)),
    };
    #[cfg(not(feature = "otel"))]
    let traced = Traced::plain(push_span!(PUSH_TARGET, span_parent, task_id));
    let span = &traced.span;
    if !span.is_disabled() {
        if let Some(host) = webhook_host(url) {
            span.record("server.address", host.as_str());
        }
    }
    traced
}

/// The host of a webhook: only the host, as a URL may carry a token in its
/// path or query.
fn webhook_host(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
}

/// Records how a push delivery ended, on the current span (the delivery's).
pub(crate) fn record_push_outcome(span: &Span, delivered: bool) {
    #[cfg(feature = "otel")]
    if let Some(record) = a2a_core::trace_scope::recorded() {
        record.add_attributes([KeyValue::new(
            "a2a.outcome",
            if delivered { "delivered" } else { "failed" },
        )]);
        if !delivered {
            record.set_error();
        }
    }
    if delivered {
        span.record("a2a.outcome", "delivered");
    } else {
        span.record("a2a.outcome", "failed");
        span.record("otel.status_code", "ERROR");
    }
}
