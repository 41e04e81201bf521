#![doc = include_str!("../README.md")]
//!
//! # Observers
//!
//! What lives outside the SDK (a conversation log, an audit trail) watches
//! the handler's calls and task events through its [`observer`].
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

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
