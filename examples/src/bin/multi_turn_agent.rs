//! A multi-turn agent: it asks for what it is missing (`INPUT_REQUIRED`) and
//! carries on when the next message arrives on the same task.
//!
//! Run with: `cargo run -p examples --bin multi_turn_agent [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p examples --bin multi_turn_client -- http://127.0.0.1:8080 Paris 3`
//!
//! It prints `agent card: http://ADDRESS/.well-known/agent-card.json` once it
//! listens (give `127.0.0.1:0` to take any free port).

use a2a_core::{A2aError, AgentCard, Role, binding};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};

/// Books a hotel: asks for the city, then the number of nights.
struct Booking;

#[async_trait::async_trait]
impl AgentExecutor for Booking {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        // ANCHOR: execute
        // Everything the user said on this task so far, this message last.
        // The task's history is the agent's memory between turns: nothing
        // is kept in the executor, so any number of bookings run at once.
        let mut said: Vec<String> = ctx
            .stored_task
            .iter()
            .flat_map(|task| &task.history)
            .filter(|m| m.role == Role::User && m.message_id != ctx.message.message_id)
            .map(|m| m.text())
            .collect();
        said.push(ctx.message.text());

        match said.as_slice() {
            [_request] => events.require_input("Which city?").await,
            [_request, _city] => events.require_input("How many nights?").await,
            // The city, then as many tries at the number of nights as it took.
            [_request, city, .., nights] => match nights.trim().parse::<u32>() {
                Ok(n) if n > 0 => {
                    let plural = if n == 1 { "" } else { "s" };
                    let done = format!("Booked {n} night{plural} in {city}.");
                    events.complete_with_text(done).await
                }
                // Asking again keeps the task open for another answer.
                _ => events.require_input("How many nights? (a number)").await,
            },
            [] => unreachable!("the current message is always there"),
        }
        // ANCHOR_END: execute
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let card = AgentCard::new("booking", "Books a hotel, asking what it needs")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC);
    let handler = DefaultRequestHandler::builder(Booking, card).build();
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await
}
