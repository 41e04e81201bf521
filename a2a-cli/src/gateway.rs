//! `a2a serve --config FILE`: the agents of a gateway file, built.

use std::collections::HashMap;
use std::sync::Arc;

use a2a_core::AgentCard;
use a2a_gateway::config::{AgentConfig, AgentSource, GatewayConfig};
use a2a_gateway::remote::RemoteAgent;
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_server::auth::Authenticate;
use a2a_server::conversation::ConversationLog;
use a2a_store_sql::{DurableStore, PushKey, StoreLocation};
use anyhow::Context as _;

use crate::BuiltinAgent;

/// The Rust agents this program has, by the name a gateway file uses.
pub(crate) const RUST_AGENTS: &[&str] = &["echo"];

/// What every agent of the gateway shares.
pub(crate) struct Setup<'a> {
    pub(crate) location: &'a StoreLocation,
    pub(crate) push_key: Option<PushKey>,
    pub(crate) log: Option<ConversationLog>,
    pub(crate) auth: Option<Arc<dyn Authenticate>>,
}

/// The card a file gives an agent (the gateway writes its interfaces).
fn card(agent: &AgentConfig) -> AgentCard {
    let mut card = AgentCard::new(
        agent.title.clone().unwrap_or_else(|| agent.name.clone()),
        agent.description.clone().unwrap_or_default(),
    )
    .with_streaming(true)
    .with_push_notifications(true);
    card.skills.clone_from(&agent.skills);
    card
}

/// One agent of the file, ready to host.
async fn definition(agent: &AgentConfig) -> anyhow::Result<AgentDefinition> {
    Ok(match &agent.source {
        AgentSource::Rust { executor } => match executor.as_str() {
            "echo" => AgentDefinition::new(&agent.name, card(agent), BuiltinAgent),
            other => {
                return Err(agent
                    .error(
                        "executor",
                        format!(
                            "no Rust agent named {other:?} in this program (it has: {})",
                            RUST_AGENTS.join(", ")
                        ),
                    )
                    .into());
            }
        },
        AgentSource::Remote { .. } => RemoteAgent::configured(agent)
            .await
            .ok_or_else(|| agent.error("kind", "not a remote agent"))?,
        AgentSource::Process { .. } => {
            return Err(agent
                .error(
                    "kind",
                    format!("{} agents are not served by this program yet", agent.kind()),
                )
                .into());
        }
    })
}

/// Builds the gateway of `config`, served at `base_url`: every agent with its
/// own store under `setup.location`, all logging to one conversation log.
pub(crate) async fn build(
    config: &GatewayConfig,
    base_url: &str,
    setup: Setup<'_>,
) -> anyhow::Result<Gateway> {
    let mut builder = Gateway::builder().config_file(config.path.display().to_string());
    if let Some(default) = &config.default {
        builder = builder.default_agent(default);
    }
    let mut stores: HashMap<String, DurableStore> = HashMap::new();
    for agent in &config.agents {
        builder = builder.agent(definition(agent).await?);
        if let Some(store) = setup
            .location
            .open_for_agent(&agent.name, setup.push_key.clone())
            .await
            .with_context(|| format!("cannot open the state of agent {:?}", agent.name))?
        {
            stores.insert(agent.name.clone(), store);
        }
    }
    let log = setup.log;
    builder = builder.handler_setup(move |name, mut handler| {
        if let Some(store) = stores.remove(name) {
            handler = store.install(handler);
        }
        if let Some(log) = &log {
            handler = handler.conversation_log(log.clone());
        }
        handler
    });
    if let Some(auth) = setup.auth {
        builder = builder.authentication_shared(auth);
    }
    Ok(builder.build(base_url)?)
}
