//! Calling an A2A agent: blocking send, then a streamed send.
//!
//! Run with: `cargo run -p examples --bin hello_client -- http://127.0.0.1:8080`
//! (start `hello_world` or `a2a serve --port 8080` first).

use a2a_core::{Message, SendMessageRequest, SendMessageResponse, StreamResponse};
use futures::StreamExt as _;

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    // ANCHOR: send
    let client = a2a_client::Client::connect(&url).await?;

    match client.send_text("world").await? {
        SendMessageResponse::Task(task) => {
            let reply = task.status.message.map(|m| m.text()).unwrap_or_default();
            println!("task {} is {}: {reply}", task.id, task.status.state);
        }
        SendMessageResponse::Message(message) => println!("reply: {}", message.text()),
    }
    // ANCHOR_END: send

    // ANCHOR: stream
    let request = SendMessageRequest::new(Message::user_text("streaming world"));
    let mut events = client.send_streaming_message(request, None).await?;
    while let Some(event) = events.next().await {
        match event? {
            StreamResponse::StatusUpdate(update) => println!("status: {}", update.status.state),
            other => println!("event for task {}", other.task_id()),
        }
    }
    // ANCHOR_END: stream
    Ok(())
}
