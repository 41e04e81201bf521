//! The echo agent every server mode serves, its card and its request.

use std::net::SocketAddr;

use a2a_core::{A2aError, AgentCard, JsonRpcRequest, Message, SendMessageRequest, binding};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use bytes::Bytes;

pub(crate) struct Echo;

/// The message text that makes the echo agent hold its stream open.
pub(crate) const HOLD: &str = "hold this stream open";

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        if text == HOLD {
            // Held open streams (`streams --hold`): one event, then nothing
            // until the task is canceled or the server stops.
            events.working().await?;
            ctx.cancellation.cancelled().await;
            return events.fail("released").await;
        }
        events.complete_with_text(text).await
    }
}

pub(crate) fn card(addr: SocketAddr) -> AgentCard {
    AgentCard::new("bench", "echo")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(true)
}

pub(crate) fn request_body(method: a2a_core::Method) -> Bytes {
    let message = Message::user_text("hello benchmark").with_message_id("bench-message");
    Bytes::from(
        serde_json::to_vec(&JsonRpcRequest::new(
            1,
            method,
            SendMessageRequest::new(message),
        ))
        .unwrap_or_default(),
    )
}
