//! The test agent the conformance kit expects: behaviour keyed on the incoming
//! message id's prefix (see `shared/spec/conformance.md`).

use std::time::Duration;

use a2a_core::{A2aError, Artifact, Part};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// The scenario agent of the A2A TCK.
#[derive(Debug, Clone, Copy, Default)]
pub struct TckAgent;

fn text_artifact(text: &str) -> Artifact {
    Artifact::text(text)
}

fn file_artifact() -> Artifact {
    Artifact::new(vec![
        Part::raw(b"Generated file content".to_vec())
            .with_filename("output.txt")
            .with_media_type("text/plain"),
    ])
}

#[async_trait::async_trait]
impl AgentExecutor for TckAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let id = ctx.message.message_id.as_str();
        // Longer prefixes first: several scenario names extend shorter ones.
        let events = &events;
        let streamed = |text: &'static str| async move {
            events.working().await?;
            events.artifact(text_artifact(text)).await?;
            events.complete().await
        };
        if id.starts_with("tck-complete-task") {
            events.complete_with_text("Hello from TCK").await
        } else if id.starts_with("tck-artifact-text") {
            events
                .artifact(text_artifact("Generated text content"))
                .await?;
            events.complete().await
        } else if id.starts_with("tck-artifact-file-url") {
            let part = Part::url("https://example.com/output.txt")
                .with_filename("output.txt")
                .with_media_type("text/plain");
            events.artifact(Artifact::new(vec![part])).await?;
            events.complete().await
        } else if id.starts_with("tck-artifact-file") {
            events.artifact(file_artifact()).await?;
            events.complete().await
        } else if id.starts_with("tck-artifact-data") {
            let part = Part::data(serde_json::json!({"key": "value", "count": 42}))
                .with_media_type("application/json");
            events.artifact(Artifact::new(vec![part])).await?;
            events.complete().await
        } else if id.starts_with("tck-message-response") {
            events
                .reply(vec![Part::text("Direct message response")])
                .await
        } else if id.starts_with("tck-input-required") {
            events.require_input("Please provide more input").await
        } else if id.starts_with("tck-reject-task") {
            events.reject("rejected").await
        } else if id.starts_with("tck-stream-artifact-text") {
            streamed("Streamed text content").await
        } else if id.starts_with("tck-stream-artifact-file") {
            events.working().await?;
            events.artifact(file_artifact()).await?;
            events.complete().await
        } else if id.starts_with("tck-stream-artifact-chunked") {
            events.working().await?;
            let artifact_id = a2a_core::new_id();
            events
                .append_artifact(
                    Artifact::text("chunk-1 ").with_id(artifact_id.clone()),
                    false,
                )
                .await?;
            events
                .append_artifact(Artifact::text("chunk-2").with_id(artifact_id), true)
                .await?;
            events.complete().await
        } else if id.starts_with("tck-stream-ordering-001") {
            streamed("Ordered output").await
        } else if id.starts_with("tck-stream-001") {
            streamed("Stream hello from TCK").await
        } else if id.starts_with("tck-stream-002") {
            events.complete().await
        } else if id.starts_with("tck-stream-003") {
            streamed("Stream task lifecycle").await
        } else if id.starts_with("test-resubscribe-message-id") {
            events.working().await?;
            tokio::time::sleep(Duration::from_secs(4)).await;
            events.complete().await
        } else {
            events
                .complete_with_text(format!("Echo: {}", ctx.message.text()))
                .await
        }
    }
}
