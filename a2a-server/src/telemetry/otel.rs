//! What the `otel` feature adds to the spans: W3C trace context read from
//! calls and written to push webhooks, and the server's metrics.
//!
//! Both go through the OpenTelemetry globals, so the program decides where
//! they end up: the text-map propagator (set
//! `opentelemetry_sdk::propagation::TraceContextPropagator` for W3C
//! `traceparent`/`tracestate`; the default one propagates nothing), the
//! meter provider, and for the spans [`record_spans`] or a
//! `tracing_opentelemetry` layer. Install them before the server answers its
//! first call: the instruments are made once, from the meter provider
//! current then.
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
//!
//! `a2a.server.requests`, `a2a.server.active_executions` and
//! `a2a.server.open_streams` are observable instruments: the server tallies
//! them in atomics and the meter reads them when it collects, so a call
//! pays no attribute lookup for them. They export as the synchronous
//! instruments would (sums, by the same attributes).
//!
//! # Sampling once per trace
//!
//! Left to the SDK, sampling happens when the bridge starts a span: by then
//! `tracing_opentelemetry` has already collected the span's attributes, and
//! it does the same for every child of a span it then drops. A program that
//! gives its sampler to [`sample_at_entry`] (and the tracer provider the
//! sampler that returns) has the server decide instead, once per trace, at
//! its entry: from the caller's `traceparent` when there is one, else by the
//! sampler. The spans of a trace not sampled are made at the targets of the
//! sampled ones followed by [`UNSAMPLED_SUFFIX`], which the bridge's filter
//! leaves out (and which no layer wants unless a log asks for them): they
//! cost a callsite check. Their trace context (same trace id, flags `00`)
//! travels with the work's futures instead ([`a2a_core::trace_scope`]), and
//! the calls they make send it on.
//!
//! # Recording the SDK's spans without the bridge
//!
//! A program that exports only the SDK's own spans can skip the `tracing`
//! bridge for them: [`record_spans`] has the server decide sampling as
//! above, and the spans of a sampled trace are recorded by the SDK itself
//! ([`a2a_core::span_record`]) and handed to a span processor. The same
//! names, kinds, attributes, events and parents as through the bridge, for
//! a fraction of the work: no span builder, no registry extensions, no SDK
//! span made at close. The `tracing` spans are still made, at the same
//! targets, for a log that asks for them; a program that also installs a
//! bridge leaves those targets out of its filter, or gets each span twice.
//! What it gives up: spans that the program's own code makes through a
//! bridge are not children of the SDK's (they carry no `tracing` parent the
//! bridge knows); `a2a serve`, which exports only the SDK's spans, records
//! them this way.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use a2a_core::span_record::{self, FinishedSpan, SpanParent, SpanSink};
use a2a_core::trace_scope::{self, TraceScope};
use a2a_core::{A2aError, Method};
use futures::StreamExt;
use opentelemetry::metrics::{Counter, Histogram, ObservableCounter, ObservableUpDownCounter};
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{
    Link, SpanContext, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, InstrumentationScope, KeyValue, global};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    SamplingDecision, SamplingResult, ShouldSample, SpanData, SpanEvents, SpanLinks, SpanProcessor,
};
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

/// Follows the target of a span whose trace is not sampled: `a2a::server`
/// becomes `a2a::server::unsampled`.
pub const UNSAMPLED_SUFFIX: &str = "::unsampled";
/// The call spans of traces not sampled.
pub(crate) const UNSAMPLED_SERVER_TARGET: &str = "a2a::server::unsampled";
/// The execution spans of traces not sampled.
pub(crate) const UNSAMPLED_EXECUTION_TARGET: &str = "a2a::execution::unsampled";
/// The push delivery spans of traces not sampled.
pub(crate) const UNSAMPLED_PUSH_TARGET: &str = "a2a::push::unsampled";
/// `a2a_client`'s call spans, sampled and not (that crate names them too; the
/// server reads them when a call it serves is made inside a client's span).
const CLIENT_TARGET: &str = "a2a::client";
const UNSAMPLED_CLIENT_TARGET: &str = "a2a::client::unsampled";

/// Whether a span at `target` is one of the SDK's: `Some(true)` when its trace
/// is sampled, `Some(false)` when not, `None` for any other span.
fn sampling_of(target: &str) -> Option<bool> {
    match target {
        super::SERVER_TARGET | super::EXECUTION_TARGET | super::PUSH_TARGET | CLIENT_TARGET => {
            Some(true)
        }
        UNSAMPLED_SERVER_TARGET
        | UNSAMPLED_EXECUTION_TARGET
        | UNSAMPLED_PUSH_TARGET
        | UNSAMPLED_CLIENT_TARGET => Some(false),
        _ => None,
    }
}

/// The sampler the server decides with, once [`sample_at_entry`] set it.
static ENTRY: OnceLock<EntrySampler> = OnceLock::new();

/// The program's sampler, consulted once per trace.
#[derive(Debug)]
pub(crate) struct EntrySampler {
    sampler: Box<dyn ShouldSample>,
    /// Whether the SDK records the spans of sampled traces itself
    /// ([`record_spans`]) rather than through the bridge.
    records: bool,
}

/// The sampler, when the program has the server decide.
pub(crate) fn entry_sampler() -> Option<&'static EntrySampler> {
    ENTRY.get()
}

/// What becomes of a span about to be made.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Sampled: made at the sampled target, with this parent when it is not
    /// the span's own (a remote caller's context, or the mark of a root).
    Sampled(Option<Context>),
    /// Sampled and recorded by the SDK ([`record_spans`]), under this parent.
    Recorded(SpanParent),
    /// Not sampled: made at the unsampled target, carrying this context.
    Unsampled(SpanContext),
}

/// Marks the parent context of a root span the server chose to sample, for
/// [`TraceSampler`] to sample it without deciding again.
#[derive(Debug, Clone, Copy)]
struct SampledAtEntry;

impl EntrySampler {
    fn sample(&self, parent: &Context, trace_id: TraceId) -> bool {
        let result = self.sampler.should_sample(
            Some(parent),
            trace_id,
            "a2a.server",
            &SpanKind::Server,
            &[],
            &[],
        );
        result.decision == SamplingDecision::RecordAndSample
    }

    /// The decision for a call: the caller's, through the sampler, when the
    /// call carries a `traceparent`; else as [`EntrySampler::in_trace`].
    pub(crate) fn at_entry(&self, params: &ServiceParams) -> Decision {
        if params.get(TRACEPARENT).is_some() {
            let parent = global::get_text_map_propagator(|p| p.extract(&ParamsExtractor(params)));
            let remote = parent.span().span_context().clone();
            if remote.is_valid() {
                return if self.sample(&parent, remote.trace_id()) {
                    if self.records {
                        Decision::Recorded(SpanParent::Remote(remote))
                    } else {
                        Decision::Sampled(Some(parent))
                    }
                } else {
                    Decision::Unsampled(trace_scope::child_of(&remote))
                };
            }
        }
        self.in_trace(trace_scope::current())
    }

    /// The decision for work in `scope` (the scope current when it was
    /// asked for): its trace's when it belongs to one, else a new trace's,
    /// by the sampler.
    pub(crate) fn in_trace(&self, scope: TraceScope) -> Decision {
        match scope {
            TraceScope::Sampled => Decision::Sampled(None),
            TraceScope::Recorded(parent) => {
                Decision::Recorded(SpanParent::Local(parent.context().clone()))
            }
            TraceScope::Unsampled(trace) => Decision::Unsampled(trace_scope::child_of(&trace)),
            // `Outside`, and any scope this server does not know of.
            _ => {
                let trace_id = trace_scope::random_trace_id();
                if self.sample(&Context::new(), trace_id) {
                    if self.records {
                        Decision::Recorded(SpanParent::Root(trace_id))
                    } else {
                        Decision::Sampled(Some(Context::new().with_value(SampledAtEntry)))
                    }
                } else {
                    Decision::Unsampled(SpanContext::new(
                        trace_id,
                        trace_scope::random_span_id(),
                        TraceFlags::default(),
                        false,
                        TraceState::NONE,
                    ))
                }
            }
        }
    }
}

/// Gives `span` the parent the decision named, if any.
pub(crate) fn set_parent(span: &Span, parent: Option<Context>) {
    if let Some(parent) = parent {
        if !span.is_disabled() {
            // Fails only when the span was already started, which it was not.
            let _ = span.set_parent(parent);
        }
    }
}

/// Whether `span` belongs to a trace not sampled.
fn unsampled(span: &Span) -> bool {
    span.metadata()
        .is_some_and(|meta| sampling_of(meta.target()) == Some(false))
}

/// The trace context `span` (the current span) sends on: in a trace not
/// sampled, or one the SDK records, the scope's; else the bridge's.
fn context_of(span: &Span) -> Context {
    match trace_scope::current() {
        TraceScope::Unsampled(trace) => return Context::new().with_remote_span_context(trace),
        TraceScope::Recorded(record) => {
            return Context::new().with_remote_span_context(record.context().clone());
        }
        _ => {}
    }
    if unsampled(span) {
        return Context::new();
    }
    span.context()
}

/// Has the server decide, once per trace, whether a trace is sampled (see
/// the module's documentation), by `sampler`: typically the one the SDK
/// reads from `OTEL_TRACES_SAMPLER`, `opentelemetry_sdk::trace::Config::default().sampler`.
///
/// Returns the sampler to give the tracer provider in its stead. Only the
/// first call in a process sets the server's sampler; later ones return a
/// sampler for the provider all the same.
pub fn sample_at_entry(sampler: Box<dyn ShouldSample>) -> TraceSampler {
    let _ = ENTRY.set(EntrySampler {
        sampler: sampler.clone(),
        records: false,
    });
    TraceSampler {
        configured: sampler,
    }
}

/// The tracer provider's sampler when the server decides ([`sample_at_entry`]):
/// a root the server sampled is sampled, a child of a sampled span is, and
/// any other span is left to the program's sampler.
#[derive(Debug, Clone)]
pub struct TraceSampler {
    configured: Box<dyn ShouldSample>,
}

impl ShouldSample for TraceSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        if let Some(parent) = parent_context {
            if parent.get::<SampledAtEntry>().is_some() {
                return SamplingResult {
                    decision: SamplingDecision::RecordAndSample,
                    attributes: Vec::new(),
                    trace_state: TraceState::NONE,
                };
            }
            let span = parent.span();
            let parent = span.span_context();
            if parent.is_valid() && parent.is_sampled() {
                return SamplingResult {
                    decision: SamplingDecision::RecordAndSample,
                    attributes: Vec::new(),
                    trace_state: parent.trace_state().clone(),
                };
            }
        }
        self.configured
            .should_sample(parent_context, trace_id, name, span_kind, attributes, links)
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
    if let Some(record) = trace_scope::recorded() {
        record.add_event(
            "task status changed",
            vec![KeyValue::new("a2a.state", state.as_str())],
        );
        return;
    }
    let span = Span::current();
    if span.is_disabled() || unsampled(&span) {
        return;
    }
    span.add_event(
        "task status changed",
        vec![KeyValue::new("a2a.state", state.as_str())],
    );
}

/// Writes the trace context of `span`, the current span, into `headers`, for
/// the request that span stands for (a push delivery).
pub fn inject_headers(span: &Span, headers: &mut http::HeaderMap) {
    let context = context_of(span);
    global::get_text_map_propagator(|p| p.inject_context(&context, &mut HeaderInjector(headers)));
}

/// The trace context of `span`, the current span, as `(name, value)` pairs (`traceparent`,
/// and `tracestate` when it has one), for a channel that is not HTTP: the
/// gateway writes them into the `execute` lines of its process agents.
pub fn trace_context(span: &Span) -> Vec<(String, String)> {
    struct Pairs(Vec<(String, String)>);
    impl Injector for Pairs {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_owned(), value));
        }
    }
    let context = context_of(span);
    let mut pairs = Pairs(Vec::new());
    global::get_text_map_propagator(|p| p.inject_context(&context, &mut pairs));
    pairs.0
}

/// Has the server decide sampling once per trace by `sampler`, as
/// [`sample_at_entry`] does, and record the spans of the traces it samples
/// itself, handing each to `processor` when it ends (see the module's
/// documentation): the SDK's spans exported with no `tracing` bridge.
/// `resource` describes the program, as a tracer provider's would.
///
/// Only the first call in a process takes effect; a later one returns a
/// handle to the processor it was given, which records nothing.
///
/// The processor gets [`SpanProcessor::on_end`] only: the SDK makes no
/// OpenTelemetry SDK span to start. The SDK's batch processor
/// (`BatchSpanProcessor::builder(exporter).build()`) is the one to give.
pub fn record_spans(
    sampler: Box<dyn ShouldSample>,
    mut processor: impl SpanProcessor + 'static,
    resource: &Resource,
) -> SpanRecorder {
    processor.set_resource(resource);
    let processor: Arc<dyn SpanProcessor> = Arc::new(processor);
    let sink = ProcessorSink {
        processor: Arc::clone(&processor),
        scope: InstrumentationScope::builder("a2a").build(),
        sampler: sampler.clone(),
    };
    if span_record::set_sink(Box::new(sink)) {
        let _ = ENTRY.set(EntrySampler {
            sampler,
            records: true,
        });
    }
    SpanRecorder { processor }
}

/// What [`record_spans`] installed: flushes and stops its processor.
#[derive(Debug, Clone)]
pub struct SpanRecorder {
    processor: Arc<dyn SpanProcessor>,
}

impl SpanRecorder {
    /// Exports every span ended so far.
    pub fn force_flush(&self) -> OTelSdkResult {
        self.processor.force_flush()
    }

    /// Exports what is left and stops the processor: spans ended later are
    /// dropped.
    pub fn shutdown(&self) -> OTelSdkResult {
        self.processor.shutdown()
    }
}

/// Hands the spans the SDK recorded to a span processor.
#[derive(Debug)]
struct ProcessorSink {
    processor: Arc<dyn SpanProcessor>,
    scope: InstrumentationScope,
    sampler: Box<dyn ShouldSample>,
}

impl SpanSink for ProcessorSink {
    fn sample_root(&self, trace_id: TraceId, name: &str, kind: &SpanKind) -> bool {
        let result =
            self.sampler
                .should_sample(Some(&Context::new()), trace_id, name, kind, &[], &[]);
        result.decision == SamplingDecision::RecordAndSample
    }

    fn finished(&self, span: FinishedSpan) {
        let mut events = SpanEvents::default();
        events.events = span.events;
        self.processor.on_end(SpanData {
            span_context: span.context,
            parent_span_id: span.parent_span_id,
            parent_span_is_remote: span.parent_is_remote,
            span_kind: span.kind,
            name: span.name,
            start_time: span.start_time,
            end_time: span.end_time,
            attributes: span.attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status: span.status,
            instrumentation_scope: self.scope.clone(),
        });
    }
}

/// The server's instruments, made once from the global meter provider.
///
/// The counts that move on every call (`a2a.server.requests`,
/// `a2a.server.open_streams`, `a2a.server.active_executions`) are tallied
/// in atomics here and read by observable instruments when the meter
/// collects: a synchronous instrument hashes and looks up its attributes
/// on every measurement, which costs more than the call's other metrics
/// together. What is exported is the same (a monotonic sum per operation
/// and binding, two non-monotonic sums).
struct Metrics {
    errors: Counter<u64>,
    duration: Histogram<f64>,
    push_deliveries: Counter<u64>,
    // Held so that their callbacks stay registered.
    _requests: ObservableCounter<u64>,
    _active_executions: ObservableUpDownCounter<i64>,
    _open_streams: ObservableUpDownCounter<i64>,
}

/// The bindings whose tallies have a slot of their own; a call on any other
/// (a transport of the program's own) is tallied in [`OTHER_TALLIES`].
const TALLIED_BINDINGS: [&str; 5] = [
    super::binding::JSONRPC,
    super::binding::HTTP_JSON,
    super::binding::GRPC,
    super::binding::IN_PROCESS,
    "",
];

/// What moved for one operation on one binding.
#[derive(Debug, Default)]
struct CallTally {
    requests: AtomicU64,
    open_streams: AtomicI64,
    /// Whether a stream was ever opened (before, there is no series to report).
    streamed: AtomicBool,
}

impl CallTally {
    const fn new() -> Self {
        CallTally {
            requests: AtomicU64::new(0),
            open_streams: AtomicI64::new(0),
            streamed: AtomicBool::new(false),
        }
    }
}

/// The tallies of the known bindings, by operation and binding.
static TALLIES: [[CallTally; TALLIED_BINDINGS.len()]; Method::ALL.len()] =
    [const { [const { CallTally::new() }; TALLIED_BINDINGS.len()] }; Method::ALL.len()];
/// The tallies of any other binding, made on its first call.
static OTHER_TALLIES: Mutex<Vec<(Method, &'static str, &'static CallTally)>> =
    Mutex::new(Vec::new());
/// Executions running now.
static ACTIVE_EXECUTIONS: AtomicI64 = AtomicI64::new(0);

/// The tally of `method` on `binding`.
fn tally(method: Method, binding: &'static str) -> &'static CallTally {
    // `Method::ALL` lists every operation in declaration order.
    let operation = method as usize;
    if let Some(slot) = TALLIED_BINDINGS.iter().position(|known| *known == binding) {
        return &TALLIES[operation][slot];
    }
    let mut others = OTHER_TALLIES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, _, tally)) = others
        .iter()
        .find(|(m, b, _)| *m == method && *b == binding)
    {
        return tally;
    }
    // One per (operation, binding) a program ever uses: a few, kept for good.
    let tally: &'static CallTally = Box::leak(Box::default());
    others.push((method, binding, tally));
    tally
}

/// Every tally with its operation and binding, for the collection.
fn each_tally(mut f: impl FnMut(Method, &'static str, &CallTally)) {
    for method in Method::ALL {
        for (slot, binding) in TALLIED_BINDINGS.iter().enumerate() {
            f(method, binding, &TALLIES[method as usize][slot]);
        }
    }
    let others = OTHER_TALLIES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (method, binding, tally) in others.iter() {
        f(*method, binding, tally);
    }
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let meter = global::meter("a2a-server");
        Metrics {
            _requests: meter
                .u64_observable_counter("a2a.server.requests")
                .with_description("Calls answered, by operation and binding.")
                .with_callback(|observer| {
                    each_tally(|method, binding, tally| {
                        let requests = tally.requests.load(Ordering::Relaxed);
                        if requests > 0 {
                            observer.observe(requests, &call_attributes(method, binding));
                        }
                    })
                })
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
            _active_executions: meter
                .i64_observable_up_down_counter("a2a.server.active_executions")
                .with_description("Executions running now.")
                .with_callback(|observer| {
                    observer.observe(ACTIVE_EXECUTIONS.load(Ordering::Relaxed), &[]);
                })
                .build(),
            _open_streams: meter
                .i64_observable_up_down_counter("a2a.server.open_streams")
                .with_description("Event streams open now.")
                .with_callback(|observer| {
                    each_tally(|method, binding, tally| {
                        if tally.streamed.load(Ordering::Relaxed) {
                            observer.observe(
                                tally.open_streams.load(Ordering::Relaxed),
                                &call_attributes(method, binding),
                            );
                        }
                    })
                })
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
    tally(method, binding)
        .requests
        .fetch_add(1, Ordering::Relaxed);
    let attributes = call_attributes(method, binding);
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
    struct Open(&'static CallTally);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
        }
    }
    // Made before the first stream is counted, so that it is reported.
    metrics();
    let tally = tally(method, binding);
    tally.streamed.store(true, Ordering::Relaxed);
    tally.open_streams.fetch_add(1, Ordering::Relaxed);
    let open = Open(tally);
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
        metrics();
        ACTIVE_EXECUTIONS.fetch_add(1, Ordering::Relaxed);
        ActiveExecution(())
    }
}

impl Drop for ActiveExecution {
    fn drop(&mut self) {
        ACTIVE_EXECUTIONS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts one push delivery's outcome.
pub(crate) fn record_push(delivered: bool) {
    let outcome = if delivered { "delivered" } else { "failed" };
    metrics()
        .push_deliveries
        .add(1, &[KeyValue::new("a2a.outcome", outcome)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unsampled_targets_are_the_sampled_ones_with_the_suffix() {
        for (sampled, unsampled) in [
            (super::super::SERVER_TARGET, UNSAMPLED_SERVER_TARGET),
            (super::super::EXECUTION_TARGET, UNSAMPLED_EXECUTION_TARGET),
            (super::super::PUSH_TARGET, UNSAMPLED_PUSH_TARGET),
            (CLIENT_TARGET, UNSAMPLED_CLIENT_TARGET),
        ] {
            assert_eq!(format!("{sampled}{UNSAMPLED_SUFFIX}"), unsampled);
            assert_eq!(sampling_of(sampled), Some(true));
            assert_eq!(sampling_of(unsampled), Some(false));
        }
        assert_eq!(sampling_of("a2a::server::other"), None);
    }

    #[test]
    fn each_operation_and_binding_has_a_tally_of_its_own() {
        // The table is indexed by declaration order, which `ALL` follows.
        for (index, method) in Method::ALL.into_iter().enumerate() {
            assert_eq!(method as usize, index, "{method:?}");
        }
        let mut seen = std::collections::HashSet::new();
        for method in Method::ALL {
            for binding in TALLIED_BINDINGS.into_iter().chain(["custom", "other"]) {
                let tally: *const CallTally = tally(method, binding);
                assert!(seen.insert(tally), "{method:?} on {binding:?}");
                // The same operation and binding find the same tally again.
                assert!(std::ptr::eq(tally, super::tally(method, binding)));
            }
        }
        // The collection lists each once, under its operation and binding.
        let mut listed = Vec::new();
        each_tally(|method, binding, tally| {
            listed.push((method, binding, tally as *const CallTally))
        });
        assert_eq!(listed.len(), seen.len());
        for (method, binding, tally) in listed {
            assert!(std::ptr::eq(tally, super::tally(method, binding)));
        }
    }
}
