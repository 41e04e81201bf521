//! Hosting A2A agents: implement [`AgentExecutor`], and get a conformant server
//! with the execution pipeline, task and push stores, push delivery, and the
//! JSON-RPC + SSE and HTTP+JSON bindings with the agent card routes.
//! What lives outside the SDK (a conversation log, an audit trail) watches
//! the handler's calls and task events through its [`observer`].
//!
//! ```no_run
//! use a2a_core::{A2aError, AgentCard};
//! use a2a_server::{AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
//!
//! struct Hello;
//!
//! #[async_trait::async_trait]
//! impl AgentExecutor for Hello {
//!     async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
//!         events.complete_with_text(format!("Hello, {}!", ctx.message.text())).await
//!     }
//! }
//!
//! let handler = DefaultRequestHandler::builder(Hello, AgentCard::default()).build();
//! # let _ = handler;
//! ```
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `v03` | no | A2A 0.3 served beside 1.0 by [`http::router`]: its JSON-RPC methods, its HTTP+JSON paths under `/v1`, its card at `/.well-known/agent.json`, and 0.3 interfaces listed on the 1.0 card (`HttpConfig::v03_bindings`). Without it a 0.3 request (no `A2A-Version`, or `0.3`, with a 0.3 method or path) is answered `VersionNotSupported`. |
//! | `otel` | no | W3C trace context and metrics through the OpenTelemetry globals ([`telemetry`]) |
//! | `fuzzing` | no | entry points for the fuzz targets; not a stable API |

pub mod auth;
pub mod cluster;
mod context;
mod execution;
mod executor;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
pub mod http;
pub mod observer;
pub mod push;
mod service;
pub mod store;
pub mod telemetry;

pub use self::context::{CallContext, Caller, InvalidParam, ServiceParams, User};
pub use self::execution::ExecutionConfig;
pub use self::execution::jobs::JobConfig;
pub use self::executor::{AgentExecutor, EventQueue, RequestContext};
pub use self::handler::{DefaultRequestHandler, EventStream, HandlerBuilder, RequestHandler};
pub use self::service::{
    A2aService, CallInterceptor, Request, Response, TenantRouter, VersionPolicy,
};
pub use a2a_core as core;
