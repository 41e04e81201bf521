//! Watching the messages a handler takes and the events its executions
//! process, from outside the SDK: a conversation log, an audit trail or
//! usage metering plugs in here, and the handler knows nothing of it.
//!
//! Three levels, each opened by the one above:
//!
//! - an [`Observer`], installed with [`HandlerBuilder::observer`], sees each
//!   `SendMessage` and `SendStreamingMessage` call as it arrives and may
//!   open a [`CallObserver`] for it;
//! - the [`CallObserver`] hears whether the call's message was accepted
//!   (its task and context ids assigned, its execution about to start),
//!   and may then open an [`ExecutionObserver`] and leave values for the
//!   agent in [`RequestContext::extensions`]; it also hears the call's
//!   error, if it fails;
//! - the [`ExecutionObserver`] sees every event the execution publishes
//!   (a task event once it is stored, or the agent's direct reply), in
//!   order, with the task as it stands after the event.
//!
//! An execution that resumes after a restart has no call: the observer
//! opens its [`ExecutionObserver`] in [`Observer::resumed`].
//!
//! With no observer installed the handler does no work for one (no
//! allocation, no call through a pointer); with one, each level costs one
//! boxed observer and one boxed future per hook. An observer's hooks run on
//! the request's or the execution's own task: slow work there slows the
//! agent, so hand it to a queue of your own.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! use a2a_core::{A2aError, SendMessageRequest, StreamResponse, Task};
//! use a2a_server::observer::{CallObserver, ExecutionObserver, Observer};
//! use a2a_server::{CallContext, RequestContext};
//!
//! /// Counts the events of every execution, and tells each agent its number.
//! #[derive(Default)]
//! struct CountEvents(Arc<AtomicUsize>);
//!
//! /// What an agent finds in `ctx.extensions`.
//! #[derive(Clone)]
//! struct Ticket(usize);
//!
//! impl Observer for CountEvents {
//!     fn call(
//!         &self,
//!         _call: &CallContext,
//!         _request: &SendMessageRequest,
//!     ) -> Option<Box<dyn CallObserver>> {
//!         Some(Box::new(Counting(self.0.clone())))
//!     }
//! }
//!
//! struct Counting(Arc<AtomicUsize>);
//!
//! #[async_trait::async_trait]
//! impl CallObserver for Counting {
//!     async fn accepted(&mut self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>> {
//!         ctx.extensions.insert(Ticket(self.0.load(Ordering::Relaxed)));
//!         Some(Box::new(Counting(self.0.clone())))
//!     }
//!
//!     async fn refused(&mut self, _error: &A2aError) {}
//! }
//!
//! #[async_trait::async_trait]
//! impl ExecutionObserver for Counting {
//!     async fn event(&mut self, _event: &StreamResponse, _task: Option<&Task>) {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//! # let _ = a2a_server::DefaultRequestHandler::builder(Echo, a2a_core::AgentCard::default())
//! #     .observer(CountEvents::default());
//! # struct Echo;
//! # #[async_trait::async_trait]
//! # impl a2a_server::AgentExecutor for Echo {
//! #     async fn execute(&self, ctx: RequestContext, events: a2a_server::EventQueue) -> Result<(), A2aError> {
//! #         let _ticket = ctx.extensions.get::<Ticket>().map(|t| t.0);
//! #         events.complete().await
//! #     }
//! # }
//! ```
//!
//! [`HandlerBuilder::observer`]: crate::HandlerBuilder::observer

use a2a_core::{A2aError, SendMessageRequest, StreamResponse, Task};
use async_trait::async_trait;

use crate::{CallContext, RequestContext};

/// The type of [`RequestContext::extensions`]: values of any type, one per
/// type, that an observer leaves for the agent.
pub use http::Extensions;

/// Watches a handler's `SendMessage` and `SendStreamingMessage` calls and
/// the executions they start; see the [module](self).
pub trait Observer: Send + Sync + 'static {
    /// A call arrives with `request`, before anything is checked. Returns
    /// the observer of this call, or `None` to leave it alone.
    fn call(
        &self,
        call: &CallContext,
        request: &SendMessageRequest,
    ) -> Option<Box<dyn CallObserver>>;

    /// An execution that a server restart interrupted starts again (on this
    /// node or, in a cluster, on the one that took it over): `ctx` is the
    /// context its agent gets (`ctx.resumed` is set), with the request as
    /// it was recorded. Returns the execution's observer, and may leave
    /// values for the agent in `ctx.extensions`. The default observes
    /// nothing.
    fn resumed(&self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>> {
        let _ = ctx;
        None
    }
}

/// Watches one call: its acceptance and its failure.
#[async_trait]
pub trait CallObserver: Send + 'static {
    /// The call's message passed every check and its execution is about to
    /// start: `ctx` is what the agent will get, with the task and context
    /// ids assigned. Values put in `ctx.extensions` reach the agent.
    /// Returns the execution's observer, or `None` not to watch it.
    async fn accepted(&mut self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>>;

    /// The call failed with `error`: refused before its execution started
    /// (and before [`accepted`](Self::accepted), unless the execution
    /// could not start), or failed while waiting for its answer.
    async fn refused(&mut self, error: &A2aError);
}

/// Watches one execution's events.
#[async_trait]
pub trait ExecutionObserver: Send + 'static {
    /// The execution published `event`: a task event once it is stored, or
    /// the agent's direct reply; in order, and before a blocking caller
    /// gets its answer. `task` is the task after the event (`None` for a
    /// reply, which makes no task).
    async fn event(&mut self, event: &StreamResponse, task: Option<&Task>);
}
