//! Calling A2A agents: a `Client` chosen from an agent card, JSON-RPC and
//! HTTP+JSON transports built in (gRPC through `a2a-grpc`), card resolution,
//! interceptors, auth and retries.
//!
//! This crate is being built; today it re-exports the protocol types.

pub use a2a_core as core;
