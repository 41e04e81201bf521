//! A durable agent: its work is a job in a SQLite store, and each finished
//! step is stored with a checkpoint. Kill the server (even `kill -9`) and
//! start it again on the same directory: the task goes on from the last
//! checkpoint, and no finished step runs twice.
//!
//! Run with: `cargo run -p examples --bin durable_agent [-- 127.0.0.1:8080 [DATA_DIR]]`
//! Then:     `cargo run -p examples --bin durable_client -- http://127.0.0.1:8080 count 10`
//! (it prints the task id), kill the agent while it counts, start it again,
//! and: `cargo run -p examples --bin durable_client -- http://127.0.0.1:8080 wait TASK_ID`
//!
//! DATA_DIR defaults to `./.durable-example`. It prints
//! `agent card: http://ADDRESS/.well-known/agent-card.json` once it listens
//! (give `127.0.0.1:0` to take any free port), then `step N done` as each
//! step is stored, and `task T resumes after step N` for work it picks up.

use std::time::Duration;

use a2a_core::{A2aError, AgentCard, Artifact, TaskArtifactUpdateEvent, binding};
use a2a_server::store::Checkpoint;
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use a2a_store_sql::SqliteStore;

/// Counts to the number in the message ("count 10"), a step every 100 ms:
/// each step stands in for work whose effect must happen once.
struct Counter;

#[async_trait::async_trait]
impl AgentExecutor for Counter {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        let Some(goal) = text
            .strip_prefix("count ")
            .and_then(|n| n.trim().parse::<u64>().ok())
        else {
            return events.reject("say \"count N\"").await;
        };
        // ANCHOR: checkpoint
        // On a resumed execution, the steps up to the checkpoint are done:
        // their events are stored, their effects must not happen again.
        let done = ctx.checkpoint.as_ref().map_or(0, |c| c.turn);
        if ctx.resumed {
            println!("task {} resumes after step {done}", ctx.task_id);
        } else {
            events.working().await?;
        }
        // ANCHOR_END: checkpoint
        for step in done + 1..=goal {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
            // The step's result, one chunk of the "count" artifact.
            let chunk = Artifact::text(format!("{step} ")).with_id("count");
            let mut event = TaskArtifactUpdateEvent::new(
                events.task_id().to_owned(),
                events.context_id().to_owned(),
                chunk,
            );
            event.append = step > 1;
            event.last_chunk = step == goal;
            // ANCHOR: step
            // The event and the checkpoint are stored in one write; once
            // this returns, a restart resumes after this step.
            events
                .send_checkpointed(event, Checkpoint::new(step, Vec::new()))
                .await?;
            println!("step {step} done");
            // ANCHOR_END: step
        }
        events
            .complete_with_text(format!("counted to {goal}"))
            .await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let data_dir = args.next().unwrap_or_else(|| "./.durable-example".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let card = AgentCard::new("counter", "Counts, surviving restarts")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(true);
    // ANCHOR: store
    // One store for tasks, push configs and jobs. With a job store every
    // execution is recorded before the client learns its task id, and the
    // unfinished ones are resumed when the server starts.
    let store = SqliteStore::open(&data_dir).await?;
    let handler = DefaultRequestHandler::builder(Counter, card)
        .task_store(store.clone())
        .push_config_store(store.clone())
        .job_store(store)
        .build();
    // ANCHOR_END: store
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await?;
    Ok(())
}
