//! An agent that delivers push notifications: a client that will not keep a
//! stream open gives a webhook, and every change of the task is POSTed to it
//! with the client's token.
//!
//! Run with: `cargo run -p examples --bin push_agent [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p examples --bin push_receiver -- http://127.0.0.1:8080`
//!
//! It prints `agent card: http://ADDRESS/.well-known/agent-card.json` once it
//! listens (give `127.0.0.1:0` to take any free port).

use std::time::Duration;

use a2a_core::{A2aError, AgentCard, Part, TaskState, binding};
use a2a_server::push::{AddressPolicy, IpNetwork};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};

/// Works through a few steps, reporting each, then completes.
struct Worker;

#[async_trait::async_trait]
impl AgentExecutor for Worker {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let steps = 3;
        for step in 1..=steps {
            let note = events.agent_message(vec![Part::text(format!("step {step} of {steps}"))]);
            events.status(TaskState::Working, Some(note)).await?;
            // ANCHOR: work
            // Stands in for real work.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
            // ANCHOR_END: work
        }
        events
            .complete_with_text(format!("done with {:?}", ctx.message.text()))
            .await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let card = AgentCard::new("worker", "Works in steps, and tells a webhook about each")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_push_notifications(true);
    // ANCHOR: policy
    // By default webhooks must be on public addresses (a client must not
    // make the agent call into its own network). This demo's receiver runs
    // on this machine, so loopback is allowed; allow nothing more.
    let policy = AddressPolicy::public_only().allow("127.0.0.0/8".parse::<IpNetwork>()?);
    let handler = DefaultRequestHandler::builder(Worker, card)
        .push_address_policy(policy)
        .build();
    // ANCHOR_END: policy
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await?;
    Ok(())
}
