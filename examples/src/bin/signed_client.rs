//! A client that only talks to agents whose card is signed by a key it
//! trusts: it fetches the trusted keys (a JWKS), checks the card's
//! signature, and refuses the agent if it does not verify.
//!
//! Run with: `cargo run -p examples --bin signed_client -- http://127.0.0.1:8080 http://127.0.0.1:8080/.well-known/jwks.json`
//! (start `signed_agent` first). Against an agent with an unsigned card, or
//! one signed by another key, it fails saying why.
//!
//! Here the keys come from the agent itself, which shows the mechanics but
//! proves little: in practice the JWKS comes from somewhere you trust (a
//! file you were given, your organisation's key server).

use a2a_client::ClientBuilder;
use a2a_core::SendMessageResponse;

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let jwks = args
        .next()
        .unwrap_or_else(|| format!("{url}/.well-known/jwks.json"));

    // ANCHOR: verify
    let builder = ClientBuilder::new();
    // Or from a file: `TrustedKeys::from_jwks_json(&std::fs::read_to_string(path)?)`.
    let keys = builder.fetch_trusted_keys(&jwks).await?;
    let card = builder.resolver().resolve(&url).await?;
    match keys.verify(&card) {
        Ok(verified) => println!(
            "card of {:?} verified with key {} ({})",
            card.name, verified.kid, verified.algorithm
        ),
        Err(err) => println!("card of {:?} not verified: {err}", card.name),
    }

    // The check that matters: a client built this way refuses any card that
    // does not verify, before a single call is made.
    let client = builder.verify_cards(keys).build(card)?;
    // ANCHOR_END: verify
    match client.send_text("world").await? {
        SendMessageResponse::Task(task) => {
            let reply = task.status.message.map(|m| m.text()).unwrap_or_default();
            println!("answer: {reply}");
        }
        SendMessageResponse::Message(message) => println!("answer: {}", message.text()),
    }
    Ok(())
}
