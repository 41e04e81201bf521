//! The trace that the work being polled belongs to, when that trace is not sampled
//! (feature `otel`).
//!
//! A server that decides sampling once per trace, at its entry
//! (`a2a_server::telemetry::otel::sample_at_entry`), makes no span that the
//! OpenTelemetry bridge sees for a trace it chose not to sample. The calls
//! that such a trace makes still send its context on, with the same trace id
//! and flags `00`, so the agents they reach keep out of the trace too. That
//! context travels with the work's futures instead of with a span.
//! [`Scoped`] sets it while a future is polled, and [`unsampled`] reads it.
//!
//! Both SDK crates use this module: the server scopes its calls, executions and
//! push deliveries, and the client reads the scope when it sends a call.
//!
//! A future that an agent spawns onto a task of its own leaves the scope. To
//! keep it, wrap the future in [`Scoped::inherit_current`], just as
//! `tracing`'s `in_current_span` keeps the span.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId};

use crate::span_record::SpanRecord;

thread_local! {
    /// The innermost scope being polled on this thread.
    static CURRENT: RefCell<TraceScope> = const { RefCell::new(TraceScope::Outside) };
}

/// The trace that the work being polled on this thread belongs to, as the
/// innermost [`Scoped`] future around it says.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum TraceScope {
    /// No scope: the work belongs to no trace that the server decided.
    #[default]
    Outside,
    /// A sampled trace. Its spans are real, and the current `tracing` span
    /// tells where the work sits in the trace.
    Sampled,
    /// A trace not sampled. This is the context of the work's own span: the
    /// trace id, a span id, and flags `00`.
    Unsampled(SpanContext),
    /// A sampled trace whose spans the SDK records itself
    /// ([`crate::span_record`]): the record of the work's own span.
    Recorded(Arc<SpanRecord>),
}

/// The scope of the work being polled now.
pub fn current() -> TraceScope {
    CURRENT.with(|current| current.borrow().clone())
}

/// The context of the work being polled now when its trace is not sampled.
/// Returns `None` in a sampled trace and outside every scope.
pub fn unsampled() -> Option<SpanContext> {
    CURRENT.with(|current| match &*current.borrow() {
        TraceScope::Unsampled(trace) => Some(trace.clone()),
        TraceScope::Outside | TraceScope::Sampled | TraceScope::Recorded(_) => None,
    })
}

/// The record of the work being polled now when its trace is sampled and
/// the SDK records its spans itself ([`crate::span_record`]).
pub fn recorded() -> Option<Arc<SpanRecord>> {
    CURRENT.with(|current| match &*current.borrow() {
        TraceScope::Recorded(span) => Some(Arc::clone(span)),
        _ => None,
    })
}

pin_project_lite::pin_project! {
    /// A future polled in a trace scope. A scope of its own costs two
    /// thread-local swaps per poll. A future that inherits its scope costs
    /// nothing.
    #[derive(Debug)]
    pub struct Scoped<F> {
        #[pin]
        inner: F,
        // `None` inherits the scope around it.
        scope: Option<TraceScope>,
    }
}

impl<F> Scoped<F> {
    /// `inner`, polled in `scope`. Any scope around it does not apply
    /// inside it.
    pub fn new(inner: F, scope: TraceScope) -> Self {
        Scoped {
            inner,
            scope: Some(scope),
        }
    }

    /// `inner`, polled in a trace not sampled, with `trace` as the context of
    /// this work.
    pub fn unsampled(inner: F, trace: SpanContext) -> Self {
        Scoped::new(inner, TraceScope::Unsampled(trace))
    }

    /// `inner`, polled in a sampled trace.
    pub fn sampled(inner: F) -> Self {
        Scoped::new(inner, TraceScope::Sampled)
    }

    /// `inner`, left in whatever scope polls it. This is what a program that
    /// does not sample at the entry gets, at no cost.
    pub fn inherit(inner: F) -> Self {
        Scoped { inner, scope: None }
    }

    /// `inner`, polled in the scope that is current now. This is for a future
    /// that will run elsewhere (a task of its own) but belongs to the current
    /// work.
    pub fn inherit_current(inner: F) -> Self {
        match current() {
            TraceScope::Outside => Scoped::inherit(inner),
            scope => Scoped::new(inner, scope),
        }
    }
}

/// Puts the outer scope back when the poll ends, whether it returned or
/// unwound.
struct Restore<'a>(&'a mut TraceScope);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        CURRENT.with(|current| std::mem::swap(&mut *current.borrow_mut(), self.0));
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        match this.scope {
            None => this.inner.poll(cx),
            Some(own) => {
                // The scope moves into the thread-local, and the outer one
                // moves into the future until the poll ends. Nothing is
                // cloned, and nested scopes unwind in order.
                CURRENT.with(|current| std::mem::swap(&mut *current.borrow_mut(), own));
                let _restore = Restore(own);
                this.inner.poll(cx)
            }
        }
    }
}

/// The context of new work inside `trace`: the same trace and trace state,
/// a span id of its own, not sampled.
pub fn child_of(trace: &SpanContext) -> SpanContext {
    SpanContext::new(
        trace.trace_id(),
        random_span_id(),
        TraceFlags::default(),
        false,
        trace.trace_state().clone(),
    )
}

/// A random non-zero span id.
pub fn random_span_id() -> SpanId {
    SpanId::from(random_u64())
}

/// A random non-zero trace id.
pub fn random_trace_id() -> TraceId {
    TraceId::from(u128::from(random_u64()) << 64 | u128::from(random_u64()))
}

/// A random non-zero number. The standard library's per-thread hash keys
/// change at every call, so they are random enough for trace and span ids and
/// need no generator of their own.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceState;
    use std::task::Waker;

    fn trace(id: u128) -> SpanContext {
        SpanContext::new(
            TraceId::from(id),
            SpanId::from(7),
            TraceFlags::default(),
            false,
            TraceState::NONE,
        )
    }

    fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
        let mut future = std::pin::pin!(future);
        future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    }

    fn seen() -> Option<u128> {
        unsampled().map(|t| u128::from_be_bytes(t.trace_id().to_bytes()))
    }

    #[test]
    fn a_scope_is_seen_while_polled_and_gone_after() {
        assert_eq!(seen(), None);
        let polled = poll_once(Scoped::unsampled(async { seen() }, trace(1)));
        assert_eq!(polled, Poll::Ready(Some(1)));
        assert_eq!(seen(), None);
    }

    #[test]
    fn the_innermost_scope_wins_and_the_outer_comes_back() {
        let outer = Scoped::unsampled(
            async {
                let before = seen();
                let sampled = Scoped::sampled(async { (seen(), current()) }).await;
                let inherited = Scoped::inherit(async { seen() }).await;
                let inner = Scoped::unsampled(async { seen() }, trace(2)).await;
                (before, sampled, inherited, inner, seen())
            },
            trace(1),
        );
        assert_eq!(
            poll_once(outer),
            Poll::Ready((
                Some(1),
                (None, TraceScope::Sampled),
                Some(1),
                Some(2),
                Some(1)
            ))
        );
        assert_eq!(current(), TraceScope::Outside);
    }

    #[test]
    fn a_scope_survives_a_pending_poll_and_a_panic() {
        let mut yielded = false;
        let mut future = std::pin::pin!(Scoped::unsampled(
            std::future::poll_fn(move |_| {
                if yielded {
                    Poll::Ready(seen())
                } else {
                    yielded = true;
                    Poll::Pending
                }
            }),
            trace(3),
        ));
        let cx = &mut Context::from_waker(Waker::noop());
        assert_eq!(future.as_mut().poll(cx), Poll::Pending);
        assert_eq!(seen(), None);
        assert_eq!(future.as_mut().poll(cx), Poll::Ready(Some(3)));

        let unwound = std::panic::catch_unwind(|| {
            poll_once(Scoped::unsampled(
                async { panic!("the agent failed") },
                trace(4),
            ))
        });
        assert!(unwound.is_err());
        assert_eq!(seen(), None);
    }

    #[test]
    fn inherit_current_takes_the_scope_along() {
        // Made inside the scope, as a spawned task's future is.
        let mut made = None;
        let mut outer = std::pin::pin!(Scoped::unsampled(
            std::future::poll_fn(|_| {
                made = Some(Scoped::inherit_current(async { seen() }));
                Poll::Ready(())
            }),
            trace(5),
        ));
        let _ = outer.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        let elsewhere = made.take().expect("made in the scope");
        // Polled later, outside the scope it was made in.
        assert_eq!(poll_once(elsewhere), Poll::Ready(Some(5)));
    }

    #[test]
    fn children_keep_the_trace_and_take_ids_of_their_own() {
        let parent = trace(9);
        let (a, b) = (child_of(&parent), child_of(&parent));
        assert_eq!(a.trace_id(), parent.trace_id());
        assert!(!a.is_sampled());
        assert_ne!(a.span_id(), b.span_id());
        assert_ne!(a.span_id(), SpanId::INVALID);
        assert_ne!(random_trace_id(), random_trace_id());
    }
}
