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
        .map(|m| m.text())
        .unwrap_or_default()
}

/// Waits (up to 20 s) for the task to reach a terminal state by following its
/// events (a subscription refuses a task that is terminal already: then it is
/// read again).
pub async fn until_terminal(
    handler: &a2a_server::DefaultRequestHandler,
    call: &a2a_server::CallContext,
    id: &str,
) -> Task {
    use a2a_server::RequestHandler as _;
    use futures::StreamExt as _;
    let get = || async {
        let request = a2a_core::GetTaskRequest {
            id: id.into(),
            ..Default::default()
        };
        handler
            .get_task(call, request)
            .await
            .expect("the task is there")
    };
    let wait = async {
        loop {
            let task = get().await;
            if task.status.state.is_terminal() {
                return task;
            }
            let request = a2a_core::SubscribeToTaskRequest {
                id: id.into(),
                ..Default::default()
            };
            match handler.subscribe_to_task(call, request).await {
                Ok(mut events) => while events.next().await.is_some() {},
                // Refused only because the task ended meanwhile.
                Err(err) => assert!(get().await.status.state.is_terminal(), "{err}"),
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .expect("the task ends")
}
