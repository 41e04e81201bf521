//! An agent that accepts JWT bearer tokens: each call's token must be signed
//! by a key of the identity provider's key set (JWKS), for this agent (`aud`)
//! and from that provider (`iss`), and not expired. The caller is the token's
//! `sub`.
//!
//! Run with: `A2A_JWT_SECRET=demo-secret cargo run -p examples --bin jwt_agent [-- 127.0.0.1:8080]`
//! Then:     `A2A_JWT_SECRET=demo-secret cargo run -p examples --bin jwt_client -- http://127.0.0.1:8080`
//!
//! Your identity provider (Keycloak, Auth0, Entra ID, …) publishes its key
//! set at a URL; give that URL as `A2A_JWKS_URL`, with its issuer as
//! `A2A_JWT_ISSUER`. Without `A2A_JWKS_URL` this program stands in for one:
//! it publishes a key set of one HMAC key, made from `A2A_JWT_SECRET`
//! (default `demo-secret`), at `/demo-idp/jwks.json`, which `jwt_client`
//! signs its tokens with. It prints
//! `agent card: http://ADDRESS/.well-known/agent-card.json` once it listens
//! (give `127.0.0.1:0` to take any free port).

use a2a_core::{A2aError, AgentCard, AgentSkill, binding};
use a2a_server::auth::JwtAuth;
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use base64::Engine as _;

/// The audience the tokens must name: this agent.
const AUDIENCE: &str = "greeter";
/// The stand-in identity provider's issuer name.
const DEMO_ISSUER: &str = "demo-idp";

/// Greets the caller by the token's subject.
struct Greeter;

#[async_trait::async_trait]
impl AgentExecutor for Greeter {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let who = &ctx.call.user.name;
        events
            .complete_with_text(format!("Hello {who}, you said {:?}", ctx.message.text()))
            .await
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let own_provider = std::env::var("A2A_JWKS_URL").is_err();
    let jwks_url = std::env::var("A2A_JWKS_URL")
        .unwrap_or_else(|_| format!("http://{addr}/demo-idp/jwks.json"));
    let issuer = std::env::var("A2A_JWT_ISSUER").unwrap_or_else(|_| DEMO_ISSUER.into());

    let card = AgentCard::new("greeter", "Greets callers with a token")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_skill(AgentSkill::new(
            "greet",
            "Greet",
            "Says hello to the caller",
        ));
    let handler = DefaultRequestHandler::builder(Greeter, card).build();
    // ANCHOR: jwt
    // Every call must carry `Authorization: Bearer <JWT>`; the card declares
    // the scheme (named "jwt"). Keys are fetched from the URL and cached.
    let auth = JwtAuth::new(jwks_url, AUDIENCE, issuer);
    let service = A2aService::new(handler).with_authentication(auth);
    // ANCHOR_END: jwt
    let mut app = a2a_grpc::router(service.clone(), Default::default());
    if own_provider {
        let secret = std::env::var("A2A_JWT_SECRET").unwrap_or_else(|_| "demo-secret".into());
        let jwks = serde_json::json!({ "keys": [{
            "kty": "oct",
            "kid": "demo",
            "alg": "HS256",
            "k": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
        }]});
        app = app.route(
            "/demo-idp/jwks.json",
            axum::routing::get(move || async move { axum::Json(jwks) }),
        );
    }
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await
}
