//! An agent that requires a bearer token, and shows callers who prove who
//! they are an extended agent card with more skills than the public one.
//!
//! Run with: `A2A_TOKEN=s3cret cargo run -p examples --bin auth_agent [-- 127.0.0.1:8080]`
//! Then:     `A2A_TOKEN=s3cret cargo run -p examples --bin auth_client -- http://127.0.0.1:8080`
//!
//! The token defaults to `s3cret` when `A2A_TOKEN` is not set. It prints
//! `agent card: http://ADDRESS/.well-known/agent-card.json` once it listens
//! (give `127.0.0.1:0` to take any free port).

use a2a_core::{A2aError, AgentCard, AgentSkill, binding};
use a2a_server::auth::{BearerAuth, Principal};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};

/// Greets the caller by the identity its token stands for.
struct Greeter;

#[async_trait::async_trait]
impl AgentExecutor for Greeter {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        // ANCHOR: executor
        // Set by the authenticator before the call reached the agent.
        let who = &ctx.call.user.name;
        events
            .complete_with_text(format!("Hello {who}, you said {:?}", ctx.message.text()))
            .await
        // ANCHOR_END: executor
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let token = std::env::var("A2A_TOKEN").unwrap_or_else(|_| "s3cret".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    // ANCHOR: cards
    let greet = AgentSkill::new("greet", "Greet", "Says hello to the caller");
    let card = AgentCard::new("greeter", "Greets callers it knows")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_skill(greet.clone())
        .with_extended_agent_card(true);
    // What authenticated callers see: the same agent, one more skill.
    let extended = card.clone().with_skill(AgentSkill::new(
        "admin",
        "Administer",
        "Only for callers with a token",
    ));
    let handler = DefaultRequestHandler::builder(Greeter, card)
        .extended_card(extended)
        .build();
    // ANCHOR_END: cards
    // ANCHOR: auth
    // Every call on every binding must carry `Authorization: Bearer <token>`;
    // the public card stays readable and declares the scheme (named "bearer").
    let auth = BearerAuth::new().token(token, Principal::new("alice"));
    let service = A2aService::new(handler).with_authentication(auth);
    // ANCHOR_END: auth
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await
}
