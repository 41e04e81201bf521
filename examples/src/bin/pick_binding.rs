//! How a client picks a binding: it reads the agent card, lists what the
//! agent offers, and takes the first of the bindings you prefer that the
//! card offers and the client can speak (gRPC is added with
//! `a2a_grpc::register`).
//!
//! Run with: `cargo run -p examples --bin pick_binding -- http://127.0.0.1:8080 [BINDING...]`
//! where BINDING is `GRPC`, `HTTP+JSON` or `JSONRPC`, most preferred first
//! (default: JSON-RPC, then HTTP+JSON). Start `hello_world` first.

use a2a_client::{CardResolver, ClientBuilder};
use a2a_core::SendMessageResponse;

#[tokio::main]
async fn main() -> Result<(), a2a_client::ClientError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let preferred: Vec<String> = args.collect();

    // ANCHOR: pick
    let card = CardResolver::new().resolve(&url).await?;
    for interface in &card.supported_interfaces {
        println!(
            "offered: {} at {}",
            interface.protocol_binding, interface.url
        );
    }

    let mut builder = a2a_grpc::register(ClientBuilder::new());
    if !preferred.is_empty() {
        builder = builder.prefer(preferred);
    }
    let client = builder.build(card)?;
    let chosen = client.interface();
    // ANCHOR_END: pick
    println!("using: {} at {}", chosen.protocol_binding, chosen.url);

    match client.send_text("binding").await? {
        SendMessageResponse::Task(task) => {
            let reply = task.status.message.map(|m| m.text()).unwrap_or_default();
            println!("answer: {reply}");
        }
        SendMessageResponse::Message(message) => println!("answer: {}", message.text()),
    }
    Ok(())
}
