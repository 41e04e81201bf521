//! What the gateway's socket tests share: a relaying agent, serving a
//! router until dropped, clients per agent and binding, answers read back.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::net::SocketAddr;

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, GetTaskRequest, SendMessageResponse, Task, binding};
use a2a_gateway::Peers;
use a2a_server::http::ServeConfig;
use a2a_server::{A2aService, AgentExecutor, EventQueue, RequestContext};
use tokio::sync::oneshot;

/// Every binding, in the order the tests try them.
pub const BINDINGS: [&str; 3] = [binding::JSONRPC, binding::HTTP_JSON, binding::GRPC];

/// "NAME TEXT": passes TEXT to agent NAME through its peers and answers
/// "relayed: " and what NAME said.
pub struct Relay(pub Peers);

#[async_trait::async_trait]
impl AgentExecutor for Relay {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        let (target, rest) = text.split_once(' ').unwrap_or((&text, ""));
        let answer = self
            .0
            .client(target)?
            .send_text(rest)
            .await
            .map_err(|e| A2aError::internal(e.to_string()))?;
        events
            .complete_with_text(format!("relayed: {}", answer_text(&answer)))
            .await
    }
}

/// The text of an answer: a task's status message, or the reply.
pub fn answer_text(answer: &SendMessageResponse) -> String {
    match answer {
        SendMessageResponse::Task(task) => status_text(task),
        SendMessageResponse::Message(m) => m.text(),
    }
}

/// The text of a task's status message.
pub fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

/// The task of an answer that must be one.
pub fn task(answer: SendMessageResponse) -> Task {
    match answer {
        SendMessageResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// A `GetTask` request for `id`.
pub fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    }
}

/// Serves `app` (shutting `service` down at the end) until the returned
/// sender is dropped.
pub fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    service: A2aService,
) -> oneshot::Sender<()> {
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let stop = async move {
            let _ = stopped.await;
        };
        a2a_server::http::serve_with(listener, app, service, stop, ServeConfig::default())
            .await
            .unwrap();
    });
    stop
}

/// A client of agent `agent` of the gateway at `addr`, on binding `on`,
/// from the agent's own card.
pub async fn client(addr: SocketAddr, agent: &str, on: &str) -> Client {
    let base = format!("http://{addr}/agents/{agent}");
    let builder = a2a_grpc::register(ClientBuilder::new()).prefer([on]);
    let card = builder.resolver().resolve(&base).await.unwrap();
    let client = builder.build(card).unwrap();
    assert_eq!(client.interface().protocol_binding, on);
    client
}
