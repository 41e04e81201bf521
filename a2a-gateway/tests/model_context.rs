//! A model agent in a gateway reads the earlier tasks of a conversation
//! (`contextId`) from the agent's task store, the one the gateway's handler
//! setup gives it (as `a2a serve` gives each agent its SQLite store): a new
//! task in the context sends the model what was said before.
#![allow(clippy::unwrap_used)]

use a2a_core::{
    A2aError, AgentCard, Message, SendMessageRequest, SendMessageResponse, Task, TaskState,
};
use a2a_gateway::config::GatewayConfig;
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_model::ToolSet;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use serde_json::Value;

// The fake chat completions endpoint the model agent's own tests use.
#[path = "../../a2a-model/tests/support/fake.rs"]
mod fake;

use fake::Fake;

/// Says the message back (the agent the test calls from).
struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text(ctx.message.text()).await
    }
}

/// The chat request's messages as `role: text`.
fn chat(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}: {}",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

async fn send(client: &a2a_client::Client, message: Message) -> Task {
    match client
        .send_message(SendMessageRequest::new(message), None)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        other => panic!("a task: {other:?}"),
    }
}

#[tokio::test]
async fn a_new_task_in_a_context_sends_the_model_the_earlier_tasks_of_the_context() {
    let fake = Fake::start(vec![
        fake::text("Paris."),
        fake::text("About two million."),
        fake::text("Hello."),
    ])
    .await;
    let file = format!(
        "[agents.thinker]\nkind = \"model\"\nbase_url = \"{}\"\nmodel = \"fake\"\ndescription = \"Thinks.\"\n",
        fake.base_url()
    );
    let config = GatewayConfig::parse("gateway.toml", &file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = a2a_store_sql::SqliteStore::open(dir.path()).await.unwrap();
    let card = AgentCard::new("thinker", "Thinks.");
    let gateway = Gateway::builder()
        .agent(
            a2a_gateway::model::definition(&config.agents[0], card, ToolSet::new(), None).unwrap(),
        )
        .agent(AgentDefinition::new(
            "echo",
            AgentCard::new("echo", "Says it back."),
            Echo,
        ))
        .handler_setup(move |_, handler| handler.task_store(store.clone()))
        .build("http://127.0.0.1:1")
        .unwrap();
    let client = gateway.peers("echo").unwrap().client("thinker").unwrap();

    let first = send(
        &client,
        Message::user_text("What is the capital of France?"),
    )
    .await;
    assert_eq!(first.status.state, TaskState::Completed, "{first:?}");
    // A new task (no task id) in the same context.
    let second = send(
        &client,
        Message::user_text("And its population?").with_context_id(first.context_id.clone()),
    )
    .await;
    assert_eq!(second.status.state, TaskState::Completed, "{second:?}");
    assert_ne!(second.id, first.id);
    assert_eq!(
        chat(&fake.request(1)),
        [
            "user: What is the capital of France?",
            "assistant: Paris.",
            "user: And its population?",
        ]
    );
    // Another context sees nothing of it.
    send(&client, Message::user_text("Hi.")).await;
    assert_eq!(chat(&fake.request(2)), ["user: Hi."]);
}
