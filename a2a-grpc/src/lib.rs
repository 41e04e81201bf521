//! The A2A gRPC binding: Rust code generated from `proto/a2a.proto` (package
//! `lf.a2a.v1`), conversion between `a2a-core` types and protobuf, a gRPC
//! service over any `a2a-server` handler and a gRPC transport for `a2a-client`;
//! with the feature `v03`, in `v03`, the same for A2A 0.3's
//! `a2a.v1.A2AService` (generated from `proto/a2a_v03.proto`), served beside
//! 1.0's for 0.3 peers.
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `server` | yes | [`GrpcService`] (its tower service [`GrpcServer`]), and [`router`] serving every binding on one port |
//! | `client` | yes | [`GrpcTransport`] (TLS for `https://` URLs, rustls), and [`register`] (or [`register_with`] and its [`GrpcSettings`]) for `a2a_client::ClientBuilder` |
//! | `v03` | no | `v03`: A2A 0.3's gRPC service, served by [`router`] and spoken by the client to 0.3 interfaces (and `v03` of `a2a-core`, `a2a-server`, `a2a-client`) |
//!
//! ```
//! use a2a_grpc::convert::{FromProto, ToProto};
//! let task = a2a_core::Task::new("t1", "c1", a2a_core::TaskState::Working);
//! let proto: a2a_grpc::pb::Task = task.clone().to_proto();
//! assert_eq!(a2a_core::Task::from_proto(proto).unwrap(), task);
//! ```

#[cfg(feature = "client")]
mod client;
pub mod convert;
mod error;
#[cfg(feature = "server")]
mod head;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "v03")]
pub mod v03;

#[cfg(feature = "client")]
pub use self::client::{
    GrpcSettings, GrpcTransport, KEEP_ALIVE, MAX_REQUEST, MAX_RESPONSE, register, register_with,
};
pub use self::error::{from_status, to_status};
#[cfg(feature = "server")]
pub use self::server::{
    GrpcAnswer, GrpcServer, GrpcService, MAX_RESPONSE_MESSAGE, router, with_grpc, with_grpc_config,
};

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod generated {
    include!("generated/lf.a2a.v1.rs");
}

#[cfg(feature = "v03")]
#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod generated_v03 {
    include!("generated/a2a.v1.rs");
}

/// The generated `lf.a2a.v1` messages, client and server.
pub mod pb {
    pub use crate::generated::*;
}

/// The full gRPC service name.
pub const SERVICE_NAME: &str = "lf.a2a.v1.A2AService";

/// The full path of an rpc, such as `/lf.a2a.v1.A2AService/SendMessage`.
pub fn method_path(method: a2a_core::Method) -> String {
    format!("/{SERVICE_NAME}/{}", method.name())
}
