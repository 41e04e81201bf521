//! Prints a streamed task as it happens, and puts chunked artifacts back
//! together.
//!
//! Run with: `cargo run -p examples --bin streaming_client -- http://127.0.0.1:8080 [TOPIC]`
//! (start `streaming_agent` first).

use std::collections::BTreeMap;

use a2a_core::{Message, SendMessageRequest, StreamResponse};
use futures::StreamExt as _;

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let topic = args.next().unwrap_or_else(|| "a dragon".into());
    let client = a2a_client::Client::connect(&url).await?;

    let request = SendMessageRequest::new(Message::user_text(topic));
    // ANCHOR: stream
    let mut events = client.send_streaming_message(request, None).await?;
    // Artifact text by artifact id, as the chunks arrive.
    let mut artifacts: BTreeMap<String, String> = BTreeMap::new();
    while let Some(event) = events.next().await {
        match event? {
            StreamResponse::Task(task) => println!("task {}: {}", task.id, task.status.state),
            StreamResponse::StatusUpdate(update) => {
                let text = update.status.message.map(|m| m.text()).unwrap_or_default();
                println!("status: {} {text}", update.status.state);
            }
            StreamResponse::ArtifactUpdate(update) => {
                let artifact = update.artifact;
                let text: String = artifact.parts.iter().filter_map(|p| p.as_text()).collect();
                println!(
                    "artifact {} (append: {}, last chunk: {}): {text:?}",
                    artifact.name, update.append, update.last_chunk
                );
                let whole = artifacts.entry(artifact.artifact_id).or_default();
                // Without `append`, an update replaces the artifact.
                if !update.append {
                    whole.clear();
                }
                whole.push_str(&text);
            }
            StreamResponse::Message(message) => println!("reply: {}", message.text()),
        }
    }
    // ANCHOR_END: stream
    for (id, text) in &artifacts {
        println!("artifact {id} = {text:?}");
    }
    Ok(())
}
