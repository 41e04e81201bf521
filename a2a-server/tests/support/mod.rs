//! Helpers shared by the handler tests.
#![allow(dead_code, unreachable_pub)]

pub mod scripted_agent;

use std::net::SocketAddr;

use a2a_core::{
    AgentCard, AgentSkill, Message, SendMessageConfiguration, SendMessageRequest, Task, binding,
};

#[allow(unused_imports)]
pub use self::scripted_agent::ScriptedAgent;

/// The scripted agent's card, as the whole-system tests serve it.
pub fn card(addr: SocketAddr) -> AgentCard {
    AgentCard::new("scripted", "scripted test agent")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_skill(AgentSkill::new("s", "scripted", "runs commands").with_tags(["test"]))
        .with_streaming(true)
        .with_push_notifications(true)
}

/// A blocking request saying `text`.
pub fn request(text: &str) -> SendMessageRequest {
    SendMessageRequest::new(Message::user_text(text))
}

/// A request saying `text` that returns as soon as the task exists.
pub fn immediate(text: &str) -> SendMessageRequest {
    let mut request = request(text);
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    request
}

/// The text of the task's status message.
pub fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default()
}
