//! Hosts the process agents of a gateway file in your own program: each
//! `kind = "process"` agent is a child process (any language) speaking
//! JSON lines on stdin/stdout, started once and restarted if it dies, and
//! served as an A2A agent under `/agents/NAME`.
//!
//! Run with: `cargo run -p examples --bin process_gateway -- 127.0.0.1:9999 examples/process/gateway.toml`
//! Then:     `cargo run -p examples --bin streaming_client -- http://127.0.0.1:9999/agents/node "one two"`
//!
//! `examples/process/gateway.toml` runs a Python and a JavaScript agent
//! (`examples/process/agents/`). `a2a serve --config FILE` serves the same
//! file with every kind of agent, stores and the rest; this shows the
//! library calls. It prints `agent NAME: CARD_URL` for each agent, then
//! `agent card: http://ADDRESS/.well-known/agent-card.json` once it listens
//! (give `127.0.0.1:0` to take any free port).

use a2a_core::AgentCard;
use a2a_gateway::Gateway;
use a2a_gateway::config::{AgentSource, GatewayConfig};
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_server::http::HttpConfig;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:9999".into());
    let file = args
        .next()
        .unwrap_or_else(|| "examples/process/gateway.toml".into());
    // ANCHOR: load
    // A mistake in the file is reported with its line, column and field.
    let config = GatewayConfig::load(&file)?;
    // ANCHOR_END: load
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;

    let mut builder = Gateway::builder().config_file(file.as_str());
    if let Some(default) = &config.default {
        builder = builder.default_agent(default.as_str());
    }
    // ANCHOR: agents
    for agent in &config.agents {
        if !matches!(agent.source, AgentSource::Process { .. }) {
            return Err(format!(
                "{}: only process agents here (a2a serve runs all kinds)",
                agent.name
            )
            .into());
        }
        // The command, its directory (the file's), environment and timeouts.
        let process = ProcessAgentConfig::configured(agent).ok_or("no command")?;
        let child = ProcessAgent::spawn(&agent.name, process)?;
        let mut card = AgentCard::new(
            agent.title.clone().unwrap_or_else(|| agent.name.clone()),
            agent.description.clone().unwrap_or_default(),
        )
        .with_streaming(true);
        card.skills.clone_from(&agent.skills);
        builder = builder.agent(child.definition(card));
    }
    // ANCHOR_END: agents
    let gateway = builder.build(&format!("http://{addr}"))?;
    for agent in gateway.agents() {
        println!("agent {}: {}", agent.name, agent.card_url);
    }
    let app = gateway.router(HttpConfig::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    // On Ctrl-C or SIGTERM the agents' handlers wind down, then each child
    // gets end-of-stdin, the protocol's "stop" (`definition` arranged it).
    a2a_server::http::serve(listener, app, gateway.service().clone()).await?;
    Ok(())
}
