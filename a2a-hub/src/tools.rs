//! The hub's `collaborate` and `post` as tools of a model agent
//! (`a2a-model`): the model fills in JSON arguments, the tool calls the
//! hub's A2A face through [`HubClient::from_peers`], so the hub sees the
//! model agent itself (its guards count it, threads name it).
//!
//! A tool call has no [`a2a_server::RequestContext`], only a
//! [`ToolContext`]; what [`HubClient::collaborate`] reads from the context,
//! the tools send in the request's metadata instead:
//!
//! - the tool call's log line ([`ToolContext::log_line`], written by the
//!   model agent when it logs) as the request's log parent, so the hub's
//!   request line, its delivery and the target's answer continue the chain
//!   of the execution that called the tool;
//! - the task's `contextId` as [`crate::CONTEXT_METADATA`]: when the model
//!   agent works on a message the hub delivered, that is the hub's thread
//!   (or a channel's level), and a call that names no place goes there, as
//!   an agent's `collaborate` from a hub delivery does.
//!
//! Collaborate answers as soon as the target took the message, never with
//! the target's work: the answer is posted in the thread, where the model
//! agent, a participant, is called with it (a task of its own in the
//! thread's conversation). The tool's result says so, with the thread's
//! id, so the model neither waits nor asks again.

use std::sync::Arc;

use a2a_gateway::Peers;
use a2a_gateway::model::PeerToolFactory;
use a2a_model::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::agent::{CallError, Origin};
use crate::error::HubErrorKind;
use crate::model::{Collaborate, HubMessage};
use crate::{Hub, HubClient, PostRequest};

/// The name of the collaborate tool.
pub const COLLABORATE_TOOL: &str = "collaborate";
/// The name of the post tool.
pub const POST_TOOL: &str = "post";

/// The hub's tools for the agent whose handle is `peers`, reaching the hub
/// (the gateway's agent named `hub`) as that agent.
pub fn hub_tools(peers: &Peers, hub: &str) -> Vec<Arc<dyn Tool>> {
    let client = HubClient::from_peers(peers, hub);
    let collaborate: Arc<dyn Tool> = Arc::new(CollaborateTool {
        hub: client.clone(),
        peers: peers.clone(),
        hub_name: hub.to_owned(),
    });
    let post: Arc<dyn Tool> = Arc::new(PostTool { hub: client });
    vec![collaborate, post]
}

impl Hub {
    /// The hub's `collaborate` and `post` as tools made for each model
    /// agent of its gateway (see [`a2a_gateway::model::ModelTools`]); the
    /// hub is then not offered as a plain agent tool too.
    pub fn model_tools(&self) -> HubTools {
        HubTools::new(self.name())
    }
}

/// The factory of the hub's tools for each model agent of a gateway whose
/// hub is the agent named `hub` ([`Hub::model_tools`]).
#[derive(Debug, Clone)]
pub struct HubTools {
    hub: String,
}

impl HubTools {
    /// The tools of the hub that is the gateway's agent `hub`.
    pub fn new(hub: impl Into<String>) -> HubTools {
        HubTools { hub: hub.into() }
    }
}

impl PeerToolFactory for HubTools {
    fn tools(&self, peers: &Peers) -> Vec<Arc<dyn Tool>> {
        hub_tools(peers, &self.hub)
    }

    fn stands_for(&self) -> Vec<String> {
        vec![self.hub.clone()]
    }
}

/// `collaborate`: asks another agent of the gateway to work with this one,
/// in a hub thread.
#[derive(Debug, Clone)]
pub struct CollaborateTool {
    hub: HubClient,
    peers: Peers,
    hub_name: String,
}

#[async_trait]
impl Tool for CollaborateTool {
    fn spec(&self) -> ToolSpec {
        let others: Vec<String> = self
            .peers
            .names()
            .into_iter()
            .filter(|name| name != self.peers.caller() && *name != self.hub_name)
            .collect();
        ToolSpec {
            name: COLLABORATE_TOOL.to_owned(),
            description: "Ask another agent to work with you, in a thread of the collaboration \
                hub that people can follow: opens a thread with it (or continues your thread \
                with it of the last hours) and delivers your text there. Returns as soon as the \
                agent took the message, with the thread's id; its answer is posted in the \
                thread, and you are called with it there. Do not wait for it, and do not ask \
                again. A pair may collaborate 3 times in 5 minutes: to go on with the same \
                agent, answer in the thread instead."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "target": {
                        "type": "string",
                        "description": format!("The agent to work with: one of {}.", others.join(", ")),
                    },
                    "text": { "type": "string", "description": "What to ask it." },
                    "thread": {
                        "type": "string",
                        "description": "A thread id to continue, from an earlier result (optional).",
                    },
                    "channel": {
                        "type": "string",
                        "description": "The channel to open the thread in (optional; default: the channel you were asked in, else the hub's default).",
                    },
                },
                "required": ["target", "text"],
            }),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = Collaborate {
            target: required(&args, "target", "the agent to work with")?,
            text: required(&args, "text", "what to ask it")?,
            thread: optional(&args, "thread")?,
            channel: optional(&args, "channel")?,
        };
        let origin = origin(ctx);
        let call = self.hub.collaborate_from(&origin, request);
        let done = tokio::select! {
            done = call => done.map_err(tool_error)?,
            () = ctx.cancellation.cancelled() => return Err(ToolError::new("canceled")),
        };
        let continued = match done.continued {
            true => ", continued",
            false => "",
        };
        let next = match done.delivered {
            true => format!(
                "{}'s answer will be posted in that thread, and you will be called with it there.",
                done.target
            ),
            false => "The outcome will be posted in that thread.".to_owned(),
        };
        Ok(ToolOutput::Text(format!(
            "{}. Thread {} ({:?} in #{}{continued}). {next}",
            done.confirmation, done.thread, done.title, done.channel
        )))
    }
}

/// `post`: posts a message in a channel or thread of the hub.
#[derive(Debug, Clone)]
pub struct PostTool {
    hub: HubClient,
}

#[async_trait]
impl Tool for PostTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: POST_TOOL.to_owned(),
            description: "Post a message in the collaboration hub, where people and agents \
                read it: agents it mentions (@name) are called with it. Without a thread or \
                channel it goes where you were asked (the thread, or the channel), else in the \
                hub's default channel. Returns the posted message's id and who is called. Your \
                answer is posted for you: use this only for something more."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "The message; @name mentions an agent." },
                    "thread": { "type": "string", "description": "The thread id to post in (optional)." },
                    "channel": { "type": "string", "description": "The channel to post in (optional)." },
                },
                "required": ["text"],
            }),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let post = PostRequest {
            text: required(&args, "text", "the message")?,
            thread: optional(&args, "thread")?,
            channel: optional(&args, "channel")?,
        };
        let origin = origin(ctx);
        let call = self.hub.post_from(&origin, post);
        let posted = tokio::select! {
            posted = call => posted.map_err(tool_error)?,
            () = ctx.cancellation.cancelled() => return Err(ToolError::new("canceled")),
        };
        Ok(ToolOutput::Text(posted_text(&posted)))
    }
}

/// Where a tool call comes from, as the hub is told.
fn origin(ctx: &ToolContext) -> Origin {
    Origin {
        context_id: Some(ctx.context_id.clone()).filter(|c| !c.is_empty()),
        log_line: ctx.log_line.clone(),
    }
}

/// `posted message ID in thread T of #general; calling beta`.
fn posted_text(message: &HubMessage) -> String {
    let place = match &message.thread {
        Some(thread) => format!("thread {thread} of #{}", message.channel),
        None => format!("#{}", message.channel),
    };
    let called = match (message.handlers.is_empty(), &message.unrouted) {
        (false, _) => format!("calling {}", message.handlers.join(", ")),
        (true, Some(why)) => format!("no agent called ({why})"),
        (true, None) => "no agent called".to_owned(),
    };
    format!("posted message {} in {place}; {called}", message.id)
}

/// A hub's refusal or a failed call, as the model is told.
fn tool_error(err: CallError) -> ToolError {
    match err {
        CallError::Hub(err) => ToolError::new(match err.kind() {
            HubErrorKind::Refused => format!("the hub refused: {}", err.message()),
            HubErrorKind::Invalid | HubErrorKind::NotFound => {
                format!("the hub cannot do that: {}", err.message())
            }
            _ => err.message().to_owned(),
        }),
        CallError::Client(err) => ToolError::new(format!("the hub could not be reached: {err}")),
    }
}

/// Argument `key`, a non-empty string.
fn required(args: &Value, key: &str, what: &str) -> Result<String, ToolError> {
    optional(args, key)?.ok_or_else(|| ToolError::new(format!("give `{key}`: {what} (a string)")))
}

/// Argument `key` if given: a string (empty counts as not given: models
/// fill optional fields with "").
fn optional(args: &Value, key: &str) -> Result<Option<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            Ok(Some(text.trim().to_owned()).filter(|text| !text.is_empty()))
        }
        Some(other) => Err(ToolError::new(format!(
            "`{key}` must be a string, not {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_strings_and_empty_ones_are_not_given() {
        let args = json!({ "target": " beta ", "thread": "", "channel": 3 });
        assert_eq!(required(&args, "target", "who").unwrap(), "beta".to_owned());
        assert_eq!(optional(&args, "thread").unwrap(), None);
        assert_eq!(optional(&args, "absent").unwrap(), None);
        assert!(optional(&args, "channel").unwrap_err().0.contains("string"));
        let missing = required(&args, "text", "what to ask it").unwrap_err();
        assert_eq!(missing.0, "give `text`: what to ask it (a string)");
    }
}
