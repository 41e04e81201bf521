//! Hosting A2A agents: an agent author implements one trait and gets a
//! conformant server (request handler, execution pipeline, task and push stores,
//! push delivery, JSON-RPC + SSE and HTTP+JSON bindings, agent card routes).
//!
//! This crate is being built; today it re-exports the protocol types.

pub use a2a_core as core;
