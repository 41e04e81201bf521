//! What the OpenTelemetry tests share: two agents, one calling the other,
//! and readers of exported spans (feature `otel`).

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, SendMessageResponse};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;

use super::card;

/// Agent B: answers with what it was told.
pub struct B;

#[async_trait::async_trait]
impl AgentExecutor for B {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!("B heard {}", ctx.message.text()))
            .await
    }
}

/// Agent A: asks B, and answers with B's answer.
pub struct A {
    /// The client A asks B with.
    pub b: Client,
}

#[async_trait::async_trait]
impl AgentExecutor for A {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let answer = self
            .b
            .send_message(
                SendMessageRequest::new(Message::user_text(ctx.message.text())),
                None,
            )
            .await
            .map_err(|err| A2aError::internal(err.to_string()))?;
        events.complete_with_text(text_of(&answer)).await
    }
}

/// The text of an answer: a task's status message, or the message.
pub fn text_of(answer: &SendMessageResponse) -> String {
    match answer {
        SendMessageResponse::Task(task) => task
            .status
            .message
            .as_ref()
            .map(|m| m.text())
            .unwrap_or_default(),
        SendMessageResponse::Message(message) => message.text(),
    }
}

/// A card for the agent at an address, under `name`.
pub fn named(name: &'static str) -> impl FnOnce(std::net::SocketAddr) -> AgentCard {
    move |addr| {
        let mut card = card(addr);
        card.name = name.to_owned();
        card
    }
}

/// A client of `card` on `binding`.
pub fn client_for(card: AgentCard, binding: &str) -> Client {
    a2a_grpc::register(ClientBuilder::new())
        .prefer([binding])
        .build(card)
        .unwrap()
        // One plain call per send: one client span to look for.
        .with_tracked_blocking_sends(false)
}

/// The value of attribute `key` of `span`.
pub fn attribute<'s>(span: &'s SpanData, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| &kv.value)
}

/// Whether `span` has attribute `key` set to `value`.
pub fn has(span: &SpanData, key: &str, value: &str) -> bool {
    attribute(span, key).is_some_and(|v| v.as_str() == value)
}

/// Gateway agent `alpha`: asks its peer `beta` in process.
pub struct ViaPeers {
    /// The gateway's agents, as alpha sees them.
    pub peers: a2a_gateway::Peers,
}

#[async_trait::async_trait]
impl AgentExecutor for ViaPeers {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let beta = self
            .peers
            .client("beta")
            .map_err(|err| A2aError::internal(err.to_string()))?;
        A { b: beta }.execute(ctx, events).await
    }
}
