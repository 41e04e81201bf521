#![doc = include_str!("../README.md")]
//!
//! # Where to start
//!
//! - [`McpToolbox`] (module [`client`]): the tools of an MCP server, for an
//!   agent to call. A gateway connects the `[mcp.NAME]` servers of its file
//!   and hands them out (`a2a_gateway::Gateway::mcp_toolboxes`).
//! - [`AgentTools`] (module [`server`]): A2A agents as MCP tools, one tool
//!   per agent, served on stdio ([`AgentTools::serve_stdio`], what
//!   `a2a mcp --url` runs) or over streamable HTTP at `/mcp` ([`http`]).
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod client;
pub mod http;
pub mod server;

pub use self::client::{McpError, McpServerConfig, McpToolbox, ToolOutput, ToolSpec};
pub use self::server::{AgentTool, AgentTools, tool_name};
/// The MCP SDK this crate is built on (the official `rmcp`), for its types.
pub use rmcp;
