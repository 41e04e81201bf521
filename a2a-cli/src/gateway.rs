//! `a2a serve --config FILE`: the agents of a gateway file, built.

use std::collections::HashMap;
use std::sync::Arc;

use a2a_conversation::ConversationLog;
use a2a_core::AgentCard;
use a2a_gateway::config::{AgentConfig, AgentSource, GatewayConfig};
use a2a_gateway::model::ModelTools;
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_gateway::remote::RemoteAgent;
use a2a_gateway::{AgentDefinition, Gateway, GatewayBuilder};
use a2a_hub::{AgentLink, DEFAULT_HUB_NAME, Hub, HubConfig};
use a2a_mcp::McpToolbox;
use a2a_server::auth::Authenticate;
use a2a_server::cluster::ClusterConfig;
use a2a_store_sql::{DurableStore, PostgresCluster, PushKey, StoreLocation};
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
    /// Where the hub keeps its record (`None`: in memory).
    pub(crate) hub_dir: Option<&'a std::path::Path>,
    /// Signs every agent's card, when `--card-key` says so.
    pub(crate) card_signer: Option<Arc<a2a_signing::CardSigner>>,
    /// Every agent's job settings (retention among them).
    pub(crate) jobs: a2a_server::JobConfig,
    /// The conversation index: every agent-to-agent call continues the
    /// pair's conversation, and the hub's collaborate routes are its entries.
    pub(crate) conversations: a2a_gateway::Conversations,
    /// Where this process listens (`http://host:port`): its process agents
    /// call the others there, even when the cards name a public address.
    pub(crate) local_url: String,
    /// `--node-id`: every agent runs as a node of a cluster on the store.
    pub(crate) cluster: Option<Node>,
}

/// This process as a node of a gateway cluster (`--node-id`, `--lease-timeout`).
pub(crate) struct Node {
    /// The node's name, kept across restarts.
    pub(crate) name: String,
    /// Every agent's cluster settings.
    pub(crate) config: ClusterConfig,
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

/// Checks what the file cannot: that its Rust agents exist in this program.
fn check_executors(config: &GatewayConfig) -> anyhow::Result<()> {
    for agent in &config.agents {
        if let AgentSource::Rust { executor } = &agent.source {
            if !RUST_AGENTS.contains(&executor.as_str()) {
                return Err(agent
                    .error(
                        "executor",
                        format!(
                            "no Rust agent named {executor:?} in this program (it has: {})",
                            RUST_AGENTS.join(", ")
                        ),
                    )
                    .into());
            }
        }
    }
    Ok(())
}

/// Everything `a2a serve --config` checks of a loaded file before it opens
/// or starts anything: its Rust agents exist here, and its `[hub]` table
/// (if any) is sound and its name is not an agent's. `a2a config check`
/// runs the same. Returns the hub's configuration.
pub(crate) fn check(config: &GatewayConfig) -> anyhow::Result<Option<HubConfig>> {
    check_executors(config)?;
    let text = std::fs::read_to_string(&config.path)
        .with_context(|| format!("cannot read {}", config.path.display()))?;
    let names: Vec<String> = config.agents.iter().map(|a| a.name.clone()).collect();
    let Some(hub_config) = HubConfig::from_gateway_file(&config.path, &text, &names)? else {
        return Ok(None);
    };
    if let Some(agent) = config.agents.iter().find(|a| a.name == DEFAULT_HUB_NAME) {
        return Err(agent
            .error(
                "agent",
                format!("{DEFAULT_HUB_NAME:?} is the collaboration hub's name in a gateway with a [hub] table; rename the agent"),
            )
            .into());
    }
    Ok(Some(hub_config))
}

/// One agent of the file, ready to host: a process agent is started here,
/// with what it needs to call the others by name in its environment.
async fn definition(
    agent: &AgentConfig,
    local_url: &str,
    log: Option<&ConversationLog>,
    toolboxes: &[McpToolbox],
    hub: Option<&Hub>,
    builder: &mut GatewayBuilder,
) -> anyhow::Result<AgentDefinition> {
    Ok(match &agent.source {
        AgentSource::Rust { .. } => AgentDefinition::new(&agent.name, card(agent), BuiltinAgent),
        AgentSource::Remote { .. } => RemoteAgent::configured(agent)
            .await
            .ok_or_else(|| agent.error("kind", "not a remote agent"))?,
        AgentSource::Process { .. } => {
            let process = ProcessAgentConfig::configured(agent)
                .ok_or_else(|| agent.error("command", "names no program"))?
                .env("A2A_AGENT_NAME", &agent.name)
                .env(
                    "A2A_GATEWAY_URL",
                    format!("{local_url}{}", a2a_gateway::AGENTS_PATH),
                )
                .env("A2A_AGENT_TOKEN", builder.agent_secret(&agent.name));
            let child = ProcessAgent::spawn(&agent.name, process)
                .map_err(|err| agent.error("command", err.to_string()))?;
            child.definition(card(agent))
        }
        AgentSource::Model { .. } => {
            let mut tools = ModelTools::new(a2a_gateway::model::mcp_tools(toolboxes));
            // The hub's collaborate and post, made for this agent: they
            // reach the hub as the model agent itself.
            if let Some(hub) = hub {
                tools = tools.per_agent(hub.model_tools());
            }
            a2a_gateway::model::definition(agent, card(agent), tools, log.cloned())
                .ok_or_else(|| agent.error("kind", "not a model agent"))?
        }
    })
}

/// The collaboration hub of a gateway file's `[hub]` table, opened (its
/// record in `DATA_DIR/hub`, or in memory with `--store memory`).
fn open_hub(hub_config: HubConfig, setup: &Setup<'_>) -> anyhow::Result<Hub> {
    let mut builder = Hub::builder(hub_config).conversations(setup.conversations.clone());
    if let Some(dir) = setup.hub_dir {
        builder = builder.data_dir(dir);
    }
    // On a PostgreSQL store the hub's record goes in the same database, in
    // a schema of its own (`a2a_hub`): every node of a cluster serving this
    // file is one hub, its deliveries leased as the agents' jobs are. A
    // lone server's start is a node of its own name; deliveries a previous
    // start followed are taken over once their lease expires.
    if let StoreLocation::Postgres(url) = setup.location {
        builder = builder.postgres(url.clone());
        if let Some(node) = &setup.cluster {
            builder = builder
                .node_id(node.name.clone())
                .lease_timeout(node.config.lease_timeout);
        }
    }
    if let Some(log) = &setup.log {
        builder = builder.conversation_log(log.clone());
    }
    Ok(builder.open()?)
}

/// The hub's direct links to the file's remote agents: delivery sees their
/// HTTP answers (403, 429, 5xx) and retries by class.
fn remote_links(config: &GatewayConfig) -> HashMap<String, AgentLink> {
    config
        .agents
        .iter()
        .filter_map(|agent| match &agent.source {
            AgentSource::Remote {
                url, bearer_token, ..
            } => Some((
                agent.name.clone(),
                AgentLink::remote(url.clone(), bearer_token.clone()),
            )),
            _ => None,
        })
        .collect()
}

/// An agent's store, opened, and its cluster bus when this process is a node.
struct Opened {
    store: DurableStore,
    bus: Option<PostgresCluster>,
}

/// Every agent's store (none in memory): in cluster mode each agent's schema
/// opened as a node of the cluster, with the bus that carries that agent's
/// events and cancels between the nodes.
async fn open_stores(
    config: &GatewayConfig,
    setup: &Setup<'_>,
) -> anyhow::Result<HashMap<String, Opened>> {
    let mut stores = HashMap::new();
    for agent in &config.agents {
        let context = || format!("cannot open the state of agent {:?}", agent.name);
        let opened = match &setup.cluster {
            Some(node) => {
                let (store, bus) = setup
                    .location
                    .open_cluster_for_agent(&agent.name, setup.push_key.clone())
                    .await
                    .with_context(|| format!("{} as cluster node {}", context(), node.name))?;
                Some(Opened {
                    store,
                    bus: Some(bus),
                })
            }
            None => setup
                .location
                .open_for_agent(&agent.name, setup.push_key.clone())
                .await
                .with_context(context)?
                .map(|store| Opened { store, bus: None }),
        };
        if let Some(opened) = opened {
            stores.insert(agent.name.clone(), opened);
        }
    }
    Ok(stores)
}

/// Builds the gateway of `config`, served at `base_url`: every agent with its
/// own store under `setup.location`, all logging to one conversation log,
/// and the collaboration hub of `hub_config` (what [`check`] found).
pub(crate) async fn build(
    config: &GatewayConfig,
    hub_config: Option<HubConfig>,
    base_url: &str,
    setup: Setup<'_>,
) -> anyhow::Result<(Gateway, Option<Hub>)> {
    let mut setup = setup;
    if let Some(name) = &config.name {
        setup.conversations = setup.conversations.workspace(name.clone());
    }
    let hub = hub_config
        .map(|hub_config| open_hub(hub_config, &setup))
        .transpose()?;
    let mut builder = Gateway::builder().config_file(config.path.display().to_string());
    if let Some(default) = &config.default {
        builder = builder.default_agent(default);
    }
    // Every store first: a store that cannot be opened must not leave
    // child processes started.
    let stores = open_stores(config, &setup).await?;
    // The [mcp.NAME] servers, before the agents that may use them.
    let toolboxes = a2a_gateway::mcp::connect(&config.mcp).await?;
    builder = builder.mcp_toolboxes(toolboxes.clone());
    for agent in &config.agents {
        let log = setup.log.as_ref();
        let (url, hub) = (&setup.local_url, hub.as_ref());
        let definition = definition(agent, url, log, &toolboxes, hub, &mut builder).await?;
        builder = builder.agent(definition);
    }
    // Last: the file's first agent stays the default one.
    if let Some(hub) = &hub {
        builder = builder.agent(hub.agent_definition());
    }
    let mut stores = stores;
    let log = setup.log;
    let mut jobs = setup.jobs;
    let cluster = setup.cluster.map(|node| {
        jobs.node = node.name;
        node.config
    });
    builder = builder.handler_setup(move |name, mut handler| {
        if let Some(Opened { store, bus }) = stores.remove(name) {
            handler = store.install(handler).job_config(jobs.clone());
            if let (Some(bus), Some(cluster)) = (bus, &cluster) {
                handler = handler.cluster(bus, cluster.clone());
            }
        }
        if let Some(log) = &log {
            // Lines name the agent as the gateway does (and as the hub and
            // callers' metadata do), not by its card's title.
            handler = handler.observer(a2a_conversation::Recorder::new(log.clone(), name));
        }
        handler
    });
    let mut conversations = setup.conversations;
    if let Some(hub) = &hub {
        // The hub's deliveries carry their thread's context: not a pair's turns.
        conversations = conversations.relay(hub.name());
    }
    builder = builder.conversations(conversations);
    if let Some(auth) = setup.auth {
        builder = builder.authentication_shared(auth);
    }
    if let Some(signer) = setup.card_signer {
        builder = builder.card_signer(signer);
    }
    let gateway = builder.build(base_url)?;
    if let Some(hub) = &hub {
        hub.connect(&gateway, remote_links(config))?;
    }
    Ok((gateway, hub))
}
