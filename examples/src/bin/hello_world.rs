//! A complete A2A agent, served over JSON-RPC, HTTP+JSON and gRPC.
//!
//! Run with: `cargo run -p examples --bin hello_world [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p agent2agent-cli -- send http://127.0.0.1:8080 world`
//!
//! It prints `agent card: http://ADDRESS/.well-known/agent-card.json` once it
//! listens (give `127.0.0.1:0` to take any free port).

use a2a_core::{A2aError, AgentCard, binding};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};

// ANCHOR: agent
struct Hello;

#[async_trait::async_trait]
impl AgentExecutor for Hello {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!("Hello, {}!", ctx.message.text()))
            .await
    }
}
// ANCHOR_END: agent

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    // ANCHOR: serve
    let card = AgentCard::new("hello", "Says hello")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(true);
    let handler = DefaultRequestHandler::builder(Hello, card).build();
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    // Header timeout, connection limits, graceful shutdown on Ctrl-C/SIGTERM.
    a2a_server::http::serve(listener, app, service).await
    // ANCHOR_END: serve
}
