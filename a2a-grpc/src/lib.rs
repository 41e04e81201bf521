//! The A2A gRPC binding: Rust code generated from `proto/a2a.proto` (package
//! `lf.a2a.v1`), conversion between `a2a-core` types and protobuf, and the
//! `A2AService` method paths.
//!
//! ```
//! use a2a_grpc::convert::{FromProto, ToProto};
//! let task = a2a_core::Task::new("t1", "c1", a2a_core::TaskState::Working);
//! let proto: a2a_grpc::pb::Task = task.clone().to_proto();
//! assert_eq!(a2a_core::Task::from_proto(proto).unwrap(), task);
//! ```

pub mod convert;

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod generated {
    include!("generated/lf.a2a.v1.rs");
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
