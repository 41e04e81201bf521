#![doc = include_str!("../README.md")]
//!
//! # Where to start
//!
//! [`Gateway::builder`] takes [`AgentDefinition`]s: Rust executors, external
//! commands ([`process`]) and remote agents ([`remote`]); [`config`] reads a
//! `gateway.toml` that describes them, and [`Peers`] lets agents call each other
//! by name.
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod config;
pub mod conversations;
mod gateway;
pub mod mcp;
pub mod model;
mod peers;
pub mod process;
pub mod remote;

pub use self::conversations::Conversations;
pub use self::gateway::{
    AGENTS_PATH, AgentDefinition, AgentKind, Gateway, GatewayBuilder, GatewayError, HostedAgent,
    StopAgent, agent_interfaces, is_valid_agent_name,
};
pub use self::peers::{Peers, UnknownAgent, agent_identity};
