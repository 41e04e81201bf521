//! Calling A2A agents: a [`Client`] made from an agent card picks a transport
//! (JSON-RPC and HTTP+JSON built in, gRPC through `a2a-grpc`) and offers the
//! eleven operations; streams are `futures::Stream`s with an idle timeout
//! instead of a whole-request deadline, and a task's stream cut before the
//! task settles is picked up again, on the card's other interfaces if need
//! be, without repeating an event ([`resume`]). `https://` URLs use TLS on every
//! binding, checked against the system's roots and any given once to
//! [`ClientBuilder::root_certificates`] (a private CA, say).
//!
//! ```no_run
//! # async fn demo() -> Result<(), a2a_client::ClientError> {
//! use a2a_client::{Client, ClientBuilder, CardResolver};
//! let card = CardResolver::new().resolve("http://127.0.0.1:9999").await?;
//! let client = ClientBuilder::new().prefer(["HTTP+JSON"]).build(card)?;
//! let answer = client.send_text("hello").await?;
//! # let _ = answer; Ok(()) }
//! ```
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
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `v03` | no | A2A 0.3: `JsonRpcV03Transport` and `RestV03Transport`, which the built-in factories pick for interfaces whose `protocolVersion` is `0.3`; 0.3 cards read, and the 0.3-era `/.well-known/agent.json` tried when the card is not at the 1.0 path. Without it those interfaces are passed over. |
//! | `otel` | no | W3C trace context sent with every call ([`telemetry`]) |

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
