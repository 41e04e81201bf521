#![doc = include_str!("../README.md")]
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "client")]
mod client;
pub mod convert;
#[cfg(feature = "server")]
mod decode;
#[cfg(feature = "server")]
mod encode;
mod error;
#[cfg(feature = "server")]
mod head;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod unary;
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
