//! An agent that asks for input in a thread: the next message it handles
//! there continues the same A2A task instead of starting another.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use a2a_core::{A2aError, AgentCard};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_hub::{Collaborate, Hub, HubConfig, Post, Sender};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// Asks which module, then reviews it; records the task of every call.
#[derive(Default)]
struct Asking {
    tasks: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Asking {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        self.tasks.lock().unwrap().push(ctx.task_id.clone());
        match ctx.is_follow_up() {
            false => events.require_input("which module?").await,
            true => {
                events
                    .complete_with_text(format!("reviewing {}", ctx.message.text()))
                    .await
            }
        }
    }
}

struct Quiet;

#[async_trait::async_trait]
impl AgentExecutor for Quiet {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete().await
    }
}

#[tokio::test]
async fn an_agent_waiting_for_input_gets_the_next_message_in_its_task() {
    let hub = Hub::builder(HubConfig::default()).open().unwrap();
    let beta = Arc::new(Asking::default());
    let gateway = Gateway::builder()
        .agent(hub.agent_definition())
        .agent(AgentDefinition::new(
            "alpha",
            AgentCard::new("alpha", "asks"),
            Quiet,
        ))
        .agent(AgentDefinition::with_peers(
            "beta",
            AgentCard::new("beta", "reviews"),
            {
                let beta = beta.clone();
                move |_| beta
            },
        ))
        .build("http://127.0.0.1:1")
        .unwrap();
    hub.connect(&gateway, Default::default()).unwrap();

    let done = hub
        .collaborate(
            Sender::Agent("alpha".into()),
            Collaborate::new("beta", "review please"),
        )
        .await
        .unwrap();
    hub.wait_idle().await;
    let question = hub
        .messages(None, Some(&done.thread), 10)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(question.text, "which module?");
    assert_eq!(question.handlers, ["alpha"]);

    hub.post(Post::in_thread(
        Sender::Agent("alpha".into()),
        &done.thread,
        "@beta the auth module",
    ))
    .await
    .unwrap();
    hub.wait_idle().await;
    let answer = hub
        .messages(None, Some(&done.thread), 10)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(answer.text, "reviewing @beta the auth module");
    let tasks = beta.tasks.lock().unwrap().clone();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0], tasks[1], "the answer continued the waiting task");
}
