//! A scriptable agent for whole-system tests: the first word of the message
//! text says what to do.

use std::time::Duration;

use a2a_core::{A2aError, Artifact, Part};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// Commands (first word of the text):
/// `echo <text>` completes with `<text>`; `input` asks for input (a follow-up
/// `echo` completes it); `message` replies without a task; `stream <n>` sends
/// `n` artifact chunks 10 ms apart; `slow <ms>` works for `ms` then completes;
/// `wait` works until canceled; `panic` panics; `fail` returns an error; `hang`
/// goes silent; `auth` asks for auth then completes after 50 ms.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedAgent;

#[async_trait::async_trait]
impl AgentExecutor for ScriptedAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        let (command, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
        match command {
            "echo" => events.complete_with_text(rest).await,
            "input" => events.require_input("more please").await,
            "message" => {
                events
                    .reply(vec![Part::text(format!("reply: {rest}"))])
                    .await
            }
            "stream" => {
                let n: usize = rest.trim().parse().unwrap_or(3);
                events.working().await?;
                let id = a2a_core::new_id();
                for i in 0..n {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    let chunk = Artifact::text(format!("chunk-{i} ")).with_id(id.clone());
                    events.append_artifact(chunk, i + 1 == n).await?;
                }
                events.complete().await
            }
            "slow" => {
                events.working().await?;
                tokio::time::sleep(Duration::from_millis(rest.trim().parse().unwrap_or(200))).await;
                events.complete_with_text("done").await
            }
            "wait" => {
                events.working().await?;
                ctx.cancellation.cancelled().await;
                Ok(())
            }
            "panic" => {
                events.working().await?;
                panic!("the scripted agent was told to panic (secret internal detail)")
            }
            "fail" => Err(A2aError::internal("scripted failure")),
            "hang" => {
                events.working().await?;
                std::future::pending().await
            }
            "auth" => {
                events.require_auth("sign in please").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
                events.complete_with_text("authorized").await
            }
            _ => {
                events
                    .complete_with_text(format!("unknown command {command:?}"))
                    .await
            }
        }
    }
}
