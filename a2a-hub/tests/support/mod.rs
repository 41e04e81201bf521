//! What the hub's tests share: scripted agents (no language model) that
//! record every call they get, and a gateway with a hub around them.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{A2aError, AgentCard};
use a2a_gateway::{AgentDefinition, Gateway, GatewayBuilder};
use a2a_hub::{
    AgentLink, ChannelConfig, Hub, HubClient, HubConfig, HubContext, HubMessage, Post, Sender,
};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use futures::future::BoxFuture;

/// One call an agent got.
#[derive(Debug, Clone)]
pub struct Call {
    /// The agent called.
    pub agent: String,
    /// The message's text.
    pub text: String,
    /// The message's `contextId`.
    pub context_id: String,
    /// What the hub said about it.
    pub hub: Option<HubContext>,
}

/// Every call every agent got, in order.
#[derive(Debug, Clone, Default)]
pub struct Calls(Arc<Mutex<Vec<Call>>>);

impl Calls {
    pub fn all(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }

    pub fn of(&self, agent: &str) -> Vec<Call> {
        self.all()
            .into_iter()
            .filter(|c| c.agent == agent)
            .collect()
    }

    pub fn count(&self, agent: &str) -> usize {
        self.of(agent).len()
    }

    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// What a scripted agent gets: the call, and a handle on the hub as itself.
pub struct Turn {
    pub call: Call,
    pub hub: HubClient,
    pub ctx: RequestContext,
}

/// What a scripted agent does with a call: the text it answers with (none:
/// it stays silent).
pub type Script = Arc<dyn Fn(Turn) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// An agent that answers every call with `answer(text)`.
pub fn answers(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Script {
    let answer = Arc::new(answer);
    Arc::new(move |turn: Turn| {
        let answer = answer.clone();
        Box::pin(async move { Some(answer(&turn.call.text)) })
    })
}

/// An agent that never answers (it takes the call and ends silent).
pub fn silent() -> Script {
    Arc::new(|_turn: Turn| Box::pin(async { None }))
}

struct Scripted {
    name: String,
    calls: Calls,
    script: Script,
    hub: HubClient,
}

#[async_trait::async_trait]
impl AgentExecutor for Scripted {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let call = Call {
            agent: self.name.clone(),
            text: ctx.message.text(),
            context_id: ctx.message.context_id.clone(),
            hub: HubContext::of(&ctx.message),
        };
        self.calls.0.lock().unwrap().push(call.clone());
        // Taken: the task exists now, and its caller knows (a delivery
        // that returns at once returns here).
        events.working().await?;
        let turn = Turn {
            call,
            hub: self.hub.clone(),
            ctx: ctx.clone(),
        };
        match (self.script)(turn).await {
            Some(text) => events.complete_with_text(text).await,
            None => events.complete().await,
        }
    }
}

/// Agent `name` of a gateway whose hub is `hub`, doing what `script` says
/// and recording its calls in `calls`.
pub fn scripted(name: &str, script: Script, calls: &Calls, hub: &str) -> AgentDefinition {
    let calls = calls.clone();
    let name = name.to_owned();
    let hub_name = hub.to_owned();
    let card = AgentCard::new(name.clone(), format!("{name}, scripted"));
    AgentDefinition::with_peers(name.clone(), card, move |peers| {
        Arc::new(Scripted {
            hub: HubClient::from_peers(&peers, &hub_name),
            name,
            calls,
            script,
        })
    })
}

/// The hub of the API's tests: #general (the default channel, its default
/// agent gamma) and #ops.
pub fn general_and_ops() -> HubConfig {
    HubConfig {
        channels: vec![
            ChannelConfig::new("general").default_agent("gamma"),
            ChannelConfig::new("ops"),
        ],
        default_channel: Some("general".into()),
        ..HubConfig::default()
    }
}

/// A gateway of scripted agents with a hub.
pub struct World {
    pub hub: Hub,
    pub gateway: Gateway,
    pub calls: Calls,
}

/// The four agents of the scenarios, each answering "NAME: TEXT" with the
/// text's mentions defused (`@beta` → `beta`), so answers call nobody.
pub fn team() -> Vec<(&'static str, Script)> {
    ["alpha", "beta", "gamma", "delta"]
        .into_iter()
        .map(|name| {
            let script = answers(move |text| format!("{name}: {}", text.replace('@', "")));
            (name, script)
        })
        .collect()
}

/// Builds the world: `agents` in a gateway with a hub set up by `config`,
/// its record in `dir` (in memory when `None`), `links` replacing the
/// in-process link of the agents they name.
pub async fn world_with(
    config: HubConfig,
    agents: Vec<(&str, Script)>,
    dir: Option<&Path>,
    links: HashMap<String, AgentLink>,
) -> World {
    build_world(config, agents, dir, links, "http://127.0.0.1:1", None).await
}

/// [`world`] writing to the conversation log `log`.
pub async fn world_logged(
    config: HubConfig,
    agents: Vec<(&str, Script)>,
    log: a2a_conversation::ConversationLog,
) -> World {
    build_world(
        config,
        agents,
        None,
        HashMap::new(),
        "http://127.0.0.1:1",
        Some(log),
    )
    .await
}

/// [`world`] whose cards say it is served at `base_url`.
pub async fn world_at(config: HubConfig, agents: Vec<(&str, Script)>, base_url: &str) -> World {
    build_world(config, agents, None, HashMap::new(), base_url, None).await
}

async fn build_world(
    config: HubConfig,
    agents: Vec<(&str, Script)>,
    dir: Option<&Path>,
    links: HashMap<String, AgentLink>,
    base_url: &str,
    log: Option<a2a_conversation::ConversationLog>,
) -> World {
    build_world_custom(config, agents, dir, links, base_url, log, |gateway| gateway).await
}

/// [`world_with`], the gateway set up further by `gateway` (its
/// authentication, say) before it is built.
pub async fn world_built(
    config: HubConfig,
    agents: Vec<(&str, Script)>,
    dir: Option<&Path>,
    links: HashMap<String, AgentLink>,
    gateway: impl FnOnce(GatewayBuilder) -> GatewayBuilder,
) -> World {
    let base_url = "http://127.0.0.1:1";
    build_world_custom(config, agents, dir, links, base_url, None, gateway).await
}

/// The world of `agents` with a hub set up by `config`, its record in
/// `dir`, writing to `log`, the gateway set up further by `customize`
/// (more agents, say) before it is built.
pub async fn build_world_custom(
    config: HubConfig,
    agents: Vec<(&str, Script)>,
    dir: Option<&Path>,
    links: HashMap<String, AgentLink>,
    base_url: &str,
    log: Option<a2a_conversation::ConversationLog>,
    customize: impl FnOnce(GatewayBuilder) -> GatewayBuilder,
) -> World {
    let mut builder = Hub::builder(config);
    if let Some(log) = log {
        builder = builder.conversation_log(log);
    }
    if let Some(dir) = dir {
        builder = builder.data_dir(dir);
    }
    let hub = builder.open().unwrap();
    let calls = Calls::default();
    let mut gateway = Gateway::builder().agent(hub.agent_definition());
    for (name, script) in agents {
        gateway = gateway.agent(scripted(name, script, &calls, hub.name()));
    }
    let gateway = customize(gateway).build(base_url).unwrap();
    hub.connect(&gateway, links).unwrap();
    World {
        hub,
        gateway,
        calls,
    }
}

/// [`world_with`] in memory, every agent linked in process.
pub async fn world(config: HubConfig, agents: Vec<(&str, Script)>) -> World {
    world_with(config, agents, None, HashMap::new()).await
}

impl World {
    /// Posts `text` as person `ann` at the level of `channel`, and waits
    /// until every delivery it set off is done.
    pub async fn say(&self, channel: &str, text: &str) -> HubMessage {
        let message = self
            .hub
            .post(Post::new(Sender::Person("ann".into()), channel, text))
            .await
            .unwrap();
        self.hub.wait_idle().await;
        message
    }

    /// Posts `text` as `from` in `thread` and waits until it settles.
    pub async fn say_in(&self, from: Sender, thread: &str, text: &str) -> HubMessage {
        let message = self
            .hub
            .post(Post::in_thread(from, thread, text))
            .await
            .unwrap();
        self.hub.wait_idle().await;
        message
    }

    /// The messages of `thread`, oldest first.
    pub async fn thread_messages(&self, thread: &str) -> Vec<HubMessage> {
        self.hub.messages(None, Some(thread), 1000).await.unwrap()
    }

    /// The messages at the level of `channel`, oldest first.
    pub async fn channel_messages(&self, channel: &str) -> Vec<HubMessage> {
        self.hub.messages(Some(channel), None, 1000).await.unwrap()
    }

    /// A hub handle for agent `name` (as its executor has it).
    pub fn hub_client(&self, name: &str) -> HubClient {
        HubClient::from_peers(&self.gateway.peers(name).unwrap(), self.hub.name())
    }
}

/// Waits up to `limit` (on tokio's clock) for `check`.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A world served over HTTP on 127.0.0.1 (the gateway's router and the
/// hub's API); returns it with its base URL. Served until the test ends.
pub async fn world_served(config: HubConfig, agents: Vec<(&str, Script)>) -> (World, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let world = world_at(config, agents, &base_url).await;
    let app = world
        .gateway
        .router(a2a_server::http::HttpConfig::default())
        .merge(a2a_hub::http::router(
            world.hub.clone(),
            world.gateway.clone(),
        ));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (world, base_url)
}

impl World {
    /// Serves the gateway with the hub's page and API on 127.0.0.1 (a free
    /// port) until the test ends; answers the base URL (`http://127.0.0.1:PORT`).
    pub async fn serve(&self) -> String {
        let app = self
            .gateway
            .router(a2a_server::http::HttpConfig::default())
            .merge(a2a_hub::http::router(
                self.hub.clone(),
                self.gateway.clone(),
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }
}

/// [`world_logged`] as `a2a serve` builds it: the hub and every agent's
/// server write to the one conversation log `log`.
pub async fn world_all_logged(
    config: HubConfig,
    agents: Vec<(&str, Script)>,
    log: a2a_conversation::ConversationLog,
) -> World {
    let servers = log.clone();
    build_world_custom(
        config,
        agents,
        None,
        HashMap::new(),
        "http://127.0.0.1:1",
        Some(log),
        move |gateway| {
            gateway.handler_setup(move |name, handler| {
                handler.observer(a2a_conversation::Recorder::new(servers.clone(), name))
            })
        },
    )
    .await
}

/// A world around `hub` (opened by the test: on PostgreSQL, say).
pub fn world_of(hub: Hub, agents: Vec<(&str, Script)>, links: HashMap<String, AgentLink>) -> World {
    let calls = Calls::default();
    let mut gateway = Gateway::builder().agent(hub.agent_definition());
    for (name, script) in agents {
        gateway = gateway.agent(scripted(name, script, &calls, hub.name()));
    }
    let gateway = gateway.build("http://127.0.0.1:1").unwrap();
    hub.connect(&gateway, links).unwrap();
    World {
        hub,
        gateway,
        calls,
    }
}
