//! The built-in agent of `a2a serve`: a small echo agent that shows the
//! protocol's moving parts (status updates, streamed artifacts, input-required).

use a2a_core::{A2aError, Artifact, Part};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// Echoes the message back as a streamed artifact; asks for input when the
/// message is empty or `?`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinAgent;

#[async_trait::async_trait]
impl AgentExecutor for BuiltinAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        if text.trim().is_empty() || text.trim() == "?" {
            return events.require_input("What should I echo?").await;
        }
        events.working().await?;
        let artifact_id = a2a_core::new_id();
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        for (i, word) in words.iter().enumerate() {
            let chunk = Artifact::new(vec![Part::text(*word)])
                .with_id(artifact_id.clone())
                .with_name("echo");
            events.append_artifact(chunk, i + 1 == words.len()).await?;
        }
        events
            .complete_with_text(format!("Echoed {} word(s).", words.len()))
            .await
    }
}
