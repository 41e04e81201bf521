//! A gRPC-only client: no agent card, no HTTP, just the gRPC endpoint
//! (`host:port`, as agent cards write it). A blocking send, then a stream.
//!
//! Run with: `cargo run -p examples --bin grpc_client -- 127.0.0.1:8080 [TEXT]`
//! (start `hello_world`, or any agent serving gRPC, first).

use a2a_core::{
    AgentInterface, Message, SendMessageRequest, SendMessageResponse, StreamResponse, binding,
};
use a2a_grpc::GrpcTransport;
use futures::StreamExt as _;

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let mut args = std::env::args().skip(1);
    let endpoint = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let text = args.next().unwrap_or_else(|| "gRPC".into());

    // ANCHOR: transport
    // The connection is made on the first call; `https://host:port` uses TLS.
    let transport = GrpcTransport::connect_lazy(&endpoint)?;
    let interface = AgentInterface::new(endpoint, binding::GRPC);
    let client = a2a_client::Client::from_transport(transport, interface);
    // ANCHOR_END: transport

    match client.send_text(&text).await? {
        SendMessageResponse::Task(task) => {
            let reply = task.status.message.map(|m| m.text()).unwrap_or_default();
            println!("task {} is {}: {reply}", task.id, task.status.state);
        }
        SendMessageResponse::Message(message) => println!("reply: {}", message.text()),
    }

    let request = SendMessageRequest::new(Message::user_text(text));
    let mut events = client.send_streaming_message(request, None).await?;
    while let Some(event) = events.next().await {
        if let StreamResponse::StatusUpdate(update) = event? {
            let reply = update.status.message.map(|m| m.text()).unwrap_or_default();
            println!("streamed status: {} {reply}", update.status.state);
        }
    }
    Ok(())
}
