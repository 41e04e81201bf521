//! Calls an agent that requires a bearer token: first without it (refused),
//! then with it, and reads the extended agent card only callers with a
//! token may see.
//!
//! Run with: `A2A_TOKEN=s3cret cargo run -p examples --bin auth_client -- http://127.0.0.1:8080`
//! (start `auth_agent` first; `A2A_TOKEN` defaults to `s3cret`).

use a2a_client::{AuthInterceptor, Client, ClientBuilder};
use a2a_core::SendMessageResponse;

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let token = std::env::var("A2A_TOKEN").unwrap_or_else(|_| "s3cret".into());

    let anonymous = Client::connect(&url).await?;
    let card = anonymous.card().expect("a client made from a card has it");
    let schemes: Vec<&String> = card.security_schemes.keys().collect();
    println!("the card asks for: {schemes:?}");
    match anonymous.send_text("hi").await {
        Ok(_) => println!("without a token: answered (the agent requires none)"),
        Err(err) => println!("without a token: refused ({err})"),
    }

    // ANCHOR: credential
    // The interceptor puts the credential where the card's scheme says:
    // for the "bearer" scheme, an `Authorization: Bearer` header.
    let client = ClientBuilder::new()
        .interceptor(AuthInterceptor::new().credential("bearer", token))
        .connect(&url)
        .await?;
    // ANCHOR_END: credential
    match client.send_text("hi").await? {
        SendMessageResponse::Task(task) => {
            let reply = task.status.message.map(|m| m.text()).unwrap_or_default();
            println!("with the token: {reply}");
        }
        SendMessageResponse::Message(message) => println!("with the token: {}", message.text()),
    }
    // ANCHOR: extended
    let extended = client.get_extended_agent_card(None).await?;
    // ANCHOR_END: extended
    let skills: Vec<&str> = extended.skills.iter().map(|s| s.id.as_str()).collect();
    println!("extended card skills: {skills:?}");
    Ok(())
}
