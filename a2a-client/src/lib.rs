#![doc = include_str!("../README.md")]
//!
//! # Transports
//!
//! A [`Transport`] carries the operations over one binding as values of
//! [`a2a_core::operation`]: `call` for the unary ones, `stream` for the
//! streaming ones; the typed operations (`send_message`, `get_task`, …) are
//! [`Client`]'s alone. A binding that must convert each operation its own
//! way implements [`ByOperation`] instead, one method per operation, and is
//! a transport through its one dispatch.
//!
//! # Streams and TLS
//!
//! A task's stream cut before the task settles is picked up again, on the card's
//! other interfaces if need be, without repeating an event ([`resume`]). A private
//! CA is given once to [`ClientBuilder::root_certificates`].
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod by_operation;
mod client;
mod error;
pub mod follow;
mod http;
mod jsonrpc;
#[cfg(feature = "v03")]
mod jsonrpc_v03;
mod middleware;
mod resolver;
mod rest;
#[cfg(feature = "v03")]
mod rest_v03;
pub mod resume;
pub mod sse;
pub mod telemetry;
mod tls;
mod transport;

pub use self::by_operation::ByOperation;
pub use self::client::{Client, ClientBuilder, TransportContext, TransportFactory};
pub use self::error::{ClientError, ClientErrorKind};
pub use self::follow::{FollowError, FollowOptions, FollowUpdate, StreamCut, TaskFollower};
pub use self::http::HttpSettings;
pub use self::jsonrpc::JsonRpcTransport;
#[cfg(feature = "v03")]
pub use self::jsonrpc_v03::JsonRpcV03Transport;
pub use self::middleware::{AuthInterceptor, ClientInterceptor, RetryPolicy, before_fn};
pub use self::resolver::{CardResolver, MAX_CARD_SIZE};
pub use self::rest::RestTransport;
#[cfg(feature = "v03")]
pub use self::rest_v03::RestV03Transport;
pub use self::resume::ResumePolicy;
pub use self::tls::RootCertificates;
pub use self::transport::{CallOptions, EventStream, Transport, wrong_way};
pub use a2a_core as core;
pub use a2a_core::operation::{Request, UnaryResponse};
/// Signed agent cards: the keys [`ClientBuilder::verify_cards`] trusts.
pub use a2a_signing::{SignatureError, TrustedKeys};
