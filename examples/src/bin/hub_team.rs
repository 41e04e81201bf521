//! A collaboration hub in code: a gateway whose agents work together in
//! channels and threads. A person posts in #general; the lead agent asks
//! the reviewer to collaborate, which opens a thread; the reviewer answers
//! in it.
//!
//! Run with: `cargo run -p examples --bin hub_team [-- 127.0.0.1:9999]`
//! Then:     `cargo run -p examples --bin hub_client -- http://127.0.0.1:9999 "the login page needs a look"`
//! or open   `http://127.0.0.1:9999/hub` and post there.
//!
//! The hub's record is kept in memory (`Hub::builder(..).data_dir(DIR)`
//! keeps it in SQLite). The same hub from a file: `examples/gateway/hub.toml`,
//! served by `a2a serve --config`. It prints
//! `agent card: http://ADDRESS/.well-known/agent-card.json` once it listens
//! (give `127.0.0.1:0` to take any free port).

use std::collections::HashMap;
use std::sync::Arc;

use a2a_core::{A2aError, AgentCard};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_hub::{ChannelConfig, Collaborate, Hub, HubClient, HubConfig, HubContext};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// Takes what people post in #general and gets the reviewer on it.
struct Lead {
    hub: HubClient,
}

#[async_trait::async_trait]
impl AgentExecutor for Lead {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        // ANCHOR: context
        // Where the message was, who wrote it, what this agent is asked to do.
        let Some(place) = HubContext::of(&ctx.message) else {
            return events
                .complete_with_text("I work in the hub: post in #general")
                .await;
        };
        // ANCHOR_END: context
        if place.thread.is_some() {
            // The reviewer's answer in our thread reaches us as a
            // participant. Ending without text posts nothing, so the two
            // agents do not talk in circles.
            return events.complete().await;
        }
        events.working().await?;
        // ANCHOR: collaborate
        let ask = Collaborate::new("reviewer", format!("please review: {}", ctx.message.text()));
        // Opens a thread in this channel (`ctx` says which) and returns as
        // soon as the reviewer took the message, not when it is done.
        let opened = self
            .hub
            .collaborate(Some(&ctx), ask)
            .await
            .map_err(|err| A2aError::internal(format!("collaborate: {err}")))?;
        // ANCHOR_END: collaborate
        // A final text is posted where the message was: here, #general.
        events
            .complete_with_text(format!("on it: {}", opened.confirmation))
            .await
    }
}

/// Reviews whatever it is asked to.
struct Reviewer;

#[async_trait::async_trait]
impl AgentExecutor for Reviewer {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let asked = ctx.message.text();
        let from = HubContext::of(&ctx.message).map_or_else(|| "someone".into(), |h| h.from);
        events
            .complete_with_text(format!("reviewed what {from} asked ({asked}): looks good"))
            .await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9999".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;

    // ANCHOR: hub
    let config = HubConfig {
        // The lead handles what mentions nobody in #general.
        channels: vec![ChannelConfig::new("general").default_agent("lead")],
        default_channel: Some("general".into()),
        ..HubConfig::default()
    };
    let hub = Hub::builder(config).open()?;
    let hub_name = hub.name().to_owned();
    let gateway = Gateway::builder()
        // The hub is an agent of the gateway too: agents call it over A2A.
        .agent(hub.agent_definition())
        .agent(AgentDefinition::with_peers(
            "lead",
            AgentCard::new("Lead", "Takes requests and finds someone for them"),
            move |peers| {
                let hub = HubClient::from_peers(&peers, &hub_name);
                Arc::new(Lead { hub })
            },
        ))
        .agent(AgentDefinition::new(
            "reviewer",
            AgentCard::new("Reviewer", "Reviews"),
            Reviewer,
        ))
        .default_agent("lead")
        .build(&format!("http://{addr}"))?;
    // The hub delivers to the gateway's agents in process.
    hub.connect(&gateway, HashMap::new())?;

    // The agents under /agents, the hub's page at /hub and its API at /hub/api.
    let app = gateway
        .router(HttpConfig::default())
        .merge(a2a_hub::http::router(hub.clone(), gateway.clone()));
    // ANCHOR_END: hub
    println!("hub: http://{addr}/hub");
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, gateway.service().clone()).await?;
    Ok(())
}
