//! A gateway built in code: two Rust agents behind one port, one calling
//! the other by name through `Peers`.
//!
//! Run with: `cargo run -p examples --bin gateway_peers [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p examples --bin hello_client -- http://127.0.0.1:8080/agents/editor`
//! or:       `cargo run -p agent2agent-cli -- send http://127.0.0.1:8080/agents/writer "a draft"`
//!
//! Each agent has its own card, tasks and URL (`/agents/NAME`; gRPC on the
//! gateway's address with the name as tenant); the root card is the
//! default agent's (`editor`). It prints
//! `agent card: http://ADDRESS/.well-known/agent-card.json` once it listens
//! (give `127.0.0.1:0` to take any free port). The same gateway from a
//! file instead: `examples/gateway/gateway.toml`, served by `a2a serve --config`.

use std::sync::Arc;

use a2a_core::{A2aError, AgentCard, SendMessageResponse};
use a2a_gateway::{AgentDefinition, Gateway, Peers};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// Writes a draft, saying who asked for it.
struct Writer;

#[async_trait::async_trait]
impl AgentExecutor for Writer {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        // ANCHOR: caller
        // Another agent of the gateway calls as the user "agent:NAME".
        let who = match ctx.call.user.name.as_str() {
            "" => "anonymous",
            name => name,
        };
        // ANCHOR_END: caller
        let draft = format!("a draft about {} (for {who})", ctx.message.text());
        events.complete_with_text(draft).await
    }
}

/// Asks the writer for a draft, then edits it.
struct Editor {
    peers: Peers,
}

#[async_trait::async_trait]
impl AgentExecutor for Editor {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        // ANCHOR: peers
        // An ordinary A2A client, whatever kind of agent "writer" is (Rust,
        // a process, a remote server): in process here, no network.
        let writer = self.peers.client("writer")?;
        let answer = writer
            .send_text(&ctx.message.text())
            .await
            .map_err(|err| A2aError::internal(format!("the writer failed: {err}")))?;
        // ANCHOR_END: peers
        let draft = match answer {
            SendMessageResponse::Task(task) => task.status.message.map(|m| m.text()),
            SendMessageResponse::Message(message) => Some(message.text()),
        };
        let edited = draft.unwrap_or_default().to_uppercase();
        events.complete_with_text(format!("edited: {edited}")).await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    // ANCHOR: gateway
    // The cards give names, descriptions and skills; the gateway writes
    // their interfaces from the address it is built for.
    let gateway = Gateway::builder()
        .agent(AgentDefinition::new(
            "writer",
            AgentCard::new("Writer", "Writes drafts").with_streaming(true),
            Writer,
        ))
        .agent(AgentDefinition::with_peers(
            "editor",
            AgentCard::new("Editor", "Gets a draft from the writer and edits it")
                .with_streaming(true),
            |peers| Arc::new(Editor { peers }),
        ))
        .default_agent("editor")
        .build(&format!("http://{addr}"))?;
    for agent in gateway.agents() {
        println!("agent {}: {}", agent.name, agent.card_url);
    }
    let app = gateway.router(HttpConfig::default());
    // ANCHOR_END: gateway
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, gateway.service().clone()).await?;
    Ok(())
}
