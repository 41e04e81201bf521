//! A streaming agent: status updates, a whole artifact, and an artifact sent
//! in chunks (`append` / `lastChunk`) that the client puts back together.
//!
//! Run with: `cargo run -p examples --bin streaming_agent [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p examples --bin streaming_client -- http://127.0.0.1:8080`
//!
//! It prints `agent card: http://ADDRESS/.well-known/agent-card.json` once it
//! listens (give `127.0.0.1:0` to take any free port).

use std::time::Duration;

use a2a_core::{A2aError, AgentCard, Artifact, Part, TaskState, binding};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};

// ANCHOR: execute
struct Storyteller;

#[async_trait::async_trait]
impl AgentExecutor for Storyteller {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let topic = ctx.message.text();
        let note = events.agent_message(vec![Part::text("thinking about it")]);
        events.status(TaskState::Working, Some(note)).await?;

        // A whole artifact in one event.
        let title = Artifact::text(format!("A story about {topic}"))
            .with_id("title")
            .with_name("title");
        events.artifact(title).await?;

        // A long artifact in chunks: the first one creates it, the others
        // append to it (same id), and the last says so.
        let chunks = [
            "Once upon a time ".to_owned(),
            format!("there was {topic}. "),
            "The end.".to_owned(),
        ];
        for (i, chunk) in chunks.iter().enumerate() {
            // Stands in for real work (a model producing tokens, say); a
            // canceled task needs no more of it.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
            let piece = Artifact::text(chunk.clone())
                .with_id("story")
                .with_name("story");
            if i == 0 {
                events.artifact(piece).await?;
            } else {
                events.append_artifact(piece, i == chunks.len() - 1).await?;
            }
        }
        events.complete_with_text("story told").await
    }
}
// ANCHOR_END: execute

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let card = AgentCard::new("storyteller", "Tells a story, streamed in chunks")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(true);
    let handler = DefaultRequestHandler::builder(Storyteller, card).build();
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await
}
