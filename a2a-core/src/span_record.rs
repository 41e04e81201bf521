//! Spans the SDK records itself, without the `tracing` bridge (feature
//! `otel`).
//!
//! A program that exports only the SDK's own spans (the call, execution,
//! push and client spans) need not pay for `tracing_opentelemetry`: its span
//! builder, the registry's extensions, the OpenTelemetry SDK span made at
//! close, every field visited twice. When the program installs a
//! [`SpanSink`] (`a2a_server::telemetry::otel::record_spans` does), the SDK
//! records the spans of a sampled trace here instead: one [`SpanRecord`] per
//! span, holding its attributes and events, handed to the sink when its
//! last holder lets go of it. The record travels with the work's futures in
//! the trace scope ([`crate::trace_scope::TraceScope::Recorded`]), so the
//! work's children (an execution under its call, a call to another agent
//! under its execution) take it as their parent, and the calls they make
//! send its context on.
//!
//! Only traces the server decided to sample are recorded: deciding is the
//! server's, once per trace, at its entry.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use opentelemetry::KeyValue;
use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId};

use crate::trace_scope::{random_span_id, random_trace_id};

/// Where finished spans go: the program's span processor, through an
/// adapter (`a2a_server::telemetry::otel::record_spans`).
pub trait SpanSink: Send + Sync + std::fmt::Debug {
    /// Takes one finished span. Called on the thread that ended it, so it
    /// must not block: queue the span and export it elsewhere.
    fn finished(&self, span: FinishedSpan);

    /// Whether a new trace, started here by a span of this name and kind,
    /// is sampled: the program's sampler decides. (A server decides its
    /// traces at its entry; this is for work outside any, such as a client
    /// call a program makes on its own.)
    fn sample_root(&self, trace_id: TraceId, name: &str, kind: &SpanKind) -> bool;
}

/// The sink, once set: only the first [`set_sink`] in a process counts.
static SINK: OnceLock<Box<dyn SpanSink>> = OnceLock::new();

/// Installs the sink that recorded spans go to. Returns `false`, and leaves
/// the first sink in place, when one was set already.
pub fn set_sink(sink: Box<dyn SpanSink>) -> bool {
    SINK.set(sink).is_ok()
}

/// Whether spans are recorded here: a sink is installed.
pub fn recording() -> bool {
    SINK.get().is_some()
}

/// The parent of a new trace's first span, when spans are recorded here and
/// the sink's sampler samples it; `None` otherwise.
pub fn sampled_root(name: &str, kind: &SpanKind) -> Option<SpanParent> {
    let sink = SINK.get()?;
    let trace_id = random_trace_id();
    sink.sample_root(trace_id, name, kind)
        .then_some(SpanParent::Root(trace_id))
}

/// A finished span, as the sink gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedSpan {
    /// The span's own context: trace id, span id, flags `01`.
    pub context: SpanContext,
    /// The parent's span id; invalid for the root of a trace.
    pub parent_span_id: SpanId,
    /// Whether the parent is another process's span (the caller's).
    pub parent_is_remote: bool,
    /// The span's name.
    pub name: Cow<'static, str>,
    /// Server, client or internal.
    pub kind: SpanKind,
    /// When the span started.
    pub start_time: SystemTime,
    /// When its last holder let go of it.
    pub end_time: SystemTime,
    /// Its attributes, in the order they were recorded.
    pub attributes: Vec<KeyValue>,
    /// Its events.
    pub events: Vec<Event>,
    /// Unset, or an error.
    pub status: Status,
}

/// Where a new span sits in its trace.
#[derive(Debug, Clone)]
pub enum SpanParent {
    /// The first span of a new trace, with this trace id (the one the
    /// sampler decided on).
    Root(TraceId),
    /// A child of a span of this process.
    Local(SpanContext),
    /// A child of the caller's span, as its `traceparent` named it.
    Remote(SpanContext),
}

/// What a span holds until it ends.
#[derive(Debug)]
struct Open {
    parent_span_id: SpanId,
    parent_is_remote: bool,
    name: Cow<'static, str>,
    kind: SpanKind,
    start_time: SystemTime,
    attributes: Vec<KeyValue>,
    events: Vec<Event>,
    status: Status,
}

/// One span being recorded. It ends when its last holder drops it, and then
/// goes to the sink; a record made by [`SpanRecord::context_only`] records
/// nothing.
#[derive(Debug)]
pub struct SpanRecord {
    context: SpanContext,
    // `None` in a record of a context only.
    open: Option<Mutex<Open>>,
}

impl SpanRecord {
    /// Starts a span of a sampled trace under `parent`, with the attributes
    /// known now.
    pub fn start(
        parent: SpanParent,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
    ) -> Arc<SpanRecord> {
        let (trace_id, trace_state, parent_span_id, parent_is_remote) = match parent {
            SpanParent::Root(trace_id) => (trace_id, Default::default(), SpanId::INVALID, false),
            SpanParent::Local(parent) => (
                parent.trace_id(),
                parent.trace_state().clone(),
                parent.span_id(),
                false,
            ),
            SpanParent::Remote(parent) => (
                parent.trace_id(),
                parent.trace_state().clone(),
                parent.span_id(),
                true,
            ),
        };
        let trace_id = if trace_id == TraceId::INVALID {
            random_trace_id()
        } else {
            trace_id
        };
        Arc::new(SpanRecord {
            context: SpanContext::new(
                trace_id,
                random_span_id(),
                TraceFlags::SAMPLED,
                false,
                trace_state,
            ),
            open: Some(Mutex::new(Open {
                parent_span_id,
                parent_is_remote,
                name: name.into(),
                kind,
                start_time: SystemTime::now(),
                attributes,
                events: Vec::new(),
                status: Status::Unset,
            })),
        })
    }

    /// A record that stands for `context` and records nothing: the parent of
    /// work that outlives the span (a push delivery queued by an
    /// execution), so that holding it does not hold the span open.
    pub fn context_only(context: SpanContext) -> Arc<SpanRecord> {
        Arc::new(SpanRecord {
            context,
            open: None,
        })
    }

    /// The span's context: what its children and the calls it makes carry.
    pub fn context(&self) -> &SpanContext {
        &self.context
    }

    /// Runs `f` on the open span, if this record records one.
    fn with_open(&self, f: impl FnOnce(&mut Open)) {
        if let Some(open) = &self.open {
            // A panic while holding the lock left the span as it was; keep it.
            let mut open = open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut open);
        }
    }

    /// Adds attributes.
    pub fn add_attributes(&self, attributes: impl IntoIterator<Item = KeyValue>) {
        self.with_open(|open| open.attributes.extend(attributes));
    }

    /// Adds an event, timed now.
    pub fn add_event(&self, name: &'static str, attributes: Vec<KeyValue>) {
        self.with_open(|open| {
            open.events
                .push(Event::new(name, SystemTime::now(), attributes, 0))
        });
    }

    /// Marks the span as failed.
    pub fn set_error(&self) {
        self.with_open(|open| {
            open.status = Status::Error {
                description: Cow::Borrowed(""),
            }
        });
    }
}

/// Two records are equal when they stand for the same span.
impl PartialEq for SpanRecord {
    fn eq(&self, other: &Self) -> bool {
        self.context == other.context
    }
}

impl Drop for SpanRecord {
    fn drop(&mut self) {
        let (Some(open), Some(sink)) = (self.open.take(), SINK.get()) else {
            return;
        };
        let open = open
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        sink.finished(FinishedSpan {
            context: self.context.clone(),
            parent_span_id: open.parent_span_id,
            parent_is_remote: open.parent_is_remote,
            name: open.name,
            kind: open.kind,
            start_time: open.start_time,
            end_time: SystemTime::now(),
            attributes: open.attributes,
            events: open.events,
            status: open.status,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceState;

    fn context(trace: u128, span: u64) -> SpanContext {
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            true,
            TraceState::from_key_value([("k", "v")]).unwrap(),
        )
    }

    #[test]
    fn a_span_takes_its_trace_from_its_parent_and_an_id_of_its_own() {
        let root = SpanRecord::start(
            SpanParent::Root(TraceId::from(5)),
            "root",
            SpanKind::Server,
            vec![],
        );
        assert_eq!(root.context().trace_id(), TraceId::from(5));
        assert!(root.context().is_sampled());
        assert!(!root.context().is_remote());

        let local = SpanRecord::start(
            SpanParent::Local(root.context().clone()),
            "child",
            SpanKind::Internal,
            vec![],
        );
        assert_eq!(local.context().trace_id(), TraceId::from(5));
        assert_ne!(local.context().span_id(), root.context().span_id());

        let remote = SpanRecord::start(
            SpanParent::Remote(context(9, 3)),
            "call",
            SpanKind::Server,
            vec![],
        );
        assert_eq!(remote.context().trace_id(), TraceId::from(9));
        assert_eq!(remote.context().trace_state().get("k"), Some("v"));
        assert!(!remote.context().is_remote());

        // A root with no trace id (a sampler that gave none) gets one.
        let fresh = SpanRecord::start(
            SpanParent::Root(TraceId::INVALID),
            "root",
            SpanKind::Server,
            vec![],
        );
        assert_ne!(fresh.context().trace_id(), TraceId::INVALID);
    }

    /// The sink of this test binary: the spans of each test are told apart
    /// by their trace ids.
    #[derive(Debug)]
    struct Collect;

    static FINISHED: Mutex<Vec<FinishedSpan>> = Mutex::new(Vec::new());

    impl SpanSink for Collect {
        fn finished(&self, span: FinishedSpan) {
            FINISHED.lock().unwrap().push(span);
        }

        fn sample_root(&self, trace_id: TraceId, _name: &str, _kind: &SpanKind) -> bool {
            // Every other trace.
            u128::from_be_bytes(trace_id.to_bytes()) % 2 == 0
        }
    }

    fn finished_in(trace: TraceId) -> Vec<FinishedSpan> {
        FINISHED
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.context.trace_id() == trace)
            .cloned()
            .collect()
    }

    #[test]
    fn a_span_goes_to_the_sink_when_its_last_holder_drops_it() {
        set_sink(Box::new(Collect));
        assert!(recording());
        let trace = TraceId::from(0xfeed);
        let parent = context(0xfeed, 77);
        let span = SpanRecord::start(
            SpanParent::Remote(parent),
            "call",
            SpanKind::Server,
            vec![KeyValue::new("a", "known at start")],
        );
        let held = Arc::clone(&span);
        span.add_attributes([KeyValue::new("b", 2)]);
        span.add_event("moved", vec![KeyValue::new("to", "working")]);
        drop(span);
        assert!(finished_in(trace).is_empty(), "still held");
        held.set_error();
        let id = held.context().span_id();
        drop(held);

        let finished = finished_in(trace);
        assert_eq!(finished.len(), 1);
        let span = &finished[0];
        assert_eq!(span.context.span_id(), id);
        assert_eq!(span.parent_span_id, SpanId::from(77));
        assert!(span.parent_is_remote);
        assert_eq!(span.name, "call");
        assert_eq!(span.kind, SpanKind::Server);
        assert!(span.start_time <= span.end_time);
        assert_eq!(
            span.attributes,
            vec![KeyValue::new("a", "known at start"), KeyValue::new("b", 2)]
        );
        assert_eq!(span.events.len(), 1);
        assert_eq!(span.events[0].name, "moved");
        assert!(matches!(span.status, Status::Error { .. }));

        // A record of a context only never reaches the sink.
        drop(SpanRecord::context_only(context(0xbeef, 1)));
        assert!(finished_in(TraceId::from(0xbeef)).is_empty());

        // Roots are the sink's sampler's to decide.
        let roots: Vec<_> = (0..64)
            .map(|_| sampled_root("call", &SpanKind::Client))
            .collect();
        assert!(roots.iter().any(Option::is_none));
        for root in roots.into_iter().flatten() {
            let SpanParent::Root(trace) = root else {
                panic!("a root has no parent: {root:?}");
            };
            assert_eq!(u128::from_be_bytes(trace.to_bytes()) % 2, 0);
        }
    }

    #[test]
    fn a_context_only_record_stands_for_its_context_and_takes_nothing() {
        let only = SpanRecord::context_only(context(1, 2));
        only.add_attributes([KeyValue::new("a", 1)]);
        only.add_event("e", vec![]);
        only.set_error();
        assert_eq!(only.context(), &context(1, 2));
    }
}
