//! The agent gateway: many named A2A agents in one server, one port, one data
//! directory. An agent is a Rust [`AgentExecutor`](a2a_server::AgentExecutor),
//! an external command speaking a JSON-lines protocol ([`process`]), or a
//! remote A2A agent ([`remote`]); callers and other agents address them alike.
//!
//! Each agent has its own card, handler and tasks, and is served on every
//! binding: JSON-RPC and HTTP+JSON under `/agents/<name>`, gRPC on the
//! gateway's address with the agent's name as the interface's `tenant` (the
//! spec's routing value, which clients copy into every request). Agents call
//! each other by name through [`Peers`].
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `otel` | off | W3C trace context to process agents (the `traceparent` and `tracestate` fields of `execute`) and the `otel` features of `a2a-server` and `a2a-client` |

pub mod config;
pub mod conversations;
mod gateway;
mod peers;
pub mod process;
pub mod remote;

pub use self::conversations::Conversations;
pub use self::gateway::{
    AGENTS_PATH, AgentDefinition, AgentKind, Gateway, GatewayBuilder, GatewayError, HostedAgent,
    StopAgent, agent_interfaces, is_valid_agent_name,
};
pub use self::peers::{Peers, UnknownAgent, agent_identity};
