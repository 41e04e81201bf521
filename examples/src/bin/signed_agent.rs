//! An agent whose card is signed (`a2a-signing`: a detached JWS over the
//! card's canonical JSON), publishing the public key as a JWKS so clients
//! can check the card really is this agent's.
//!
//! Run with: `cargo run -p examples --bin signed_agent [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p examples --bin signed_client -- http://127.0.0.1:8080 http://127.0.0.1:8080/.well-known/jwks.json`
//!
//! It prints `agent card: http://ADDRESS/.well-known/agent-card.json` once it
//! listens (give `127.0.0.1:0` to take any free port), after
//! `jwks: http://ADDRESS/.well-known/jwks.json`.
//!
//! It makes a fresh key at every start, so the example needs no files. A
//! real agent keeps its key: `openssl genpkey -algorithm ed25519 -out card-key.pem`,
//! then `CardSigner::from_pem(&std::fs::read_to_string("card-key.pem")?, SigningAlgorithm::EdDsa, "key-1")`,
//! and publishes the JWKS of its public key where clients fetch it from.

use a2a_core::{A2aError, AgentCard, binding};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use a2a_signing::{CardSigner, SigningAlgorithm};

struct Hello;

#[async_trait::async_trait]
impl AgentExecutor for Hello {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!(
                "Hello, {}! (from a signed agent)",
                ctx.message.text()
            ))
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

    // ANCHOR: sign
    let (private_pem, jwks) = a2a_signing::testing::ed25519_pair("key-1");
    let signer = CardSigner::from_pem(&private_pem, SigningAlgorithm::EdDsa, "key-1")?;
    let mut card = AgentCard::new("signed-hello", "Says hello, with a signed card")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC);
    // Sign last: any change to the card after this breaks the signature.
    signer.sign(&mut card)?;
    // ANCHOR_END: sign

    let handler = DefaultRequestHandler::builder(Hello, card).build();
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default()).route(
        "/.well-known/jwks.json",
        axum::routing::get(move || async move {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                jwks,
            )
        }),
    );
    println!("jwks: http://{addr}/.well-known/jwks.json");
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await?;
    Ok(())
}
