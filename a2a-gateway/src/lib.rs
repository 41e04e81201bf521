//! The agent gateway: many named A2A agents in one server, one port, one data
//! directory. An agent is a Rust [`AgentExecutor`](a2a_server::AgentExecutor),
//! an external command speaking a JSON-lines protocol ([`process`]), or a
//! remote A2A agent ([`remote`]); callers and other agents address them alike.

pub mod process;
pub mod remote;
