//! Whole-system tests of the A2A SDK over real sockets, the conformance test
//! agent (`tck-sut`) and interop with other SDKs.

mod durable_agent;
mod tck_agent;
// One scripted agent for handler tests and whole-system tests alike.
#[path = "../../a2a-server/tests/support/scripted_agent.rs"]
mod test_agent;

use std::net::SocketAddr;
use std::sync::Arc;

use a2a_core::{AgentCard, AgentSkill, binding};
use a2a_grpc::router;
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind};
use a2a_server::push::{AddressPolicy, IpNetwork};
use a2a_server::{A2aService, DefaultRequestHandler};

pub use self::durable_agent::TurnAgent;
pub use self::tck_agent::TckAgent;
pub use self::test_agent::ScriptedAgent;

/// The card of the conformance test agent served at `addr`.
pub fn tck_card(addr: SocketAddr) -> AgentCard {
    AgentCard::new(
        "TCK test agent",
        "Implements the A2A TCK scenario table on the Rust SDK.",
    )
    .with_interface(format!("http://{addr}/"), binding::JSONRPC)
    .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
    .with_interface(addr.to_string(), binding::GRPC)
    .with_skill(
        AgentSkill::new(
            "tck",
            "TCK scenarios",
            "Behaviour keyed on the message id prefix",
        )
        .with_tags(["tck"]),
    )
    .with_streaming(true)
    .with_push_notifications(true)
    .with_extended_agent_card(true)
}

/// Loopback only: the kit's webhook receiver listens on localhost.
pub fn loopback_policy() -> AddressPolicy {
    let mut policy = AddressPolicy::public_only();
    for network in ["127.0.0.0/8", "::1/128"] {
        if let Ok(network) = network.parse::<IpNetwork>() {
            policy = policy.allow(network);
        }
    }
    policy
}

/// Starts `agent` behind every binding (JSON-RPC, HTTP+JSON, gRPC on one port) with `card_for(addr)` as its card.
pub async fn start_server<A: a2a_server::AgentExecutor>(
    agent: A,
    card_for: impl FnOnce(SocketAddr) -> AgentCard,
    configure: impl FnOnce(a2a_server::HandlerBuilder) -> a2a_server::HandlerBuilder,
    http: HttpConfig,
) -> std::io::Result<RunningSut> {
    start_service(agent, card_for, configure, |service| service, http).await
}

/// Like [`start_server`], with a hook to add interceptors (such as authentication) to the service.
pub async fn start_service<A: a2a_server::AgentExecutor>(
    agent: A,
    card_for: impl FnOnce(SocketAddr) -> AgentCard,
    configure: impl FnOnce(a2a_server::HandlerBuilder) -> a2a_server::HandlerBuilder,
    wrap: impl FnOnce(A2aService) -> A2aService,
    http: HttpConfig,
) -> std::io::Result<RunningSut> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)), DEFAULT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let card = card_for(addr);
    let handler = Arc::new(configure(DefaultRequestHandler::builder(agent, card)).build());
    let service = wrap(A2aService::from_arc(handler.clone()));
    let app = router(service.clone(), http);
    tokio::spawn(serve_in_background(listener, app, service));
    Ok(RunningSut { addr, handler })
}

/// A running test agent: its address and the handler (for shutdown).
#[derive(Debug)]
pub struct RunningSut {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The handler behind it.
    pub handler: Arc<DefaultRequestHandler>,
}

/// Starts the conformance test agent on `addr` (port 0 picks a free one) in the background.
pub async fn start_tck_sut(addr: SocketAddr) -> std::io::Result<RunningSut> {
    start_tck_sut_on(addr, None).await
}

/// Which capabilities the conformance test agent declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TckCapabilities {
    /// Streaming, push notifications and the extended card, all declared and served.
    #[default]
    Full,
    /// None of them: the configuration for the kit's tests of a capability's
    /// absence. The server refuses what the card does not offer, as the spec
    /// says.
    Minimal,
    /// All of them, and an extension every request must name
    /// ([`TCK_REQUIRED_EXTENSION`]), for the kit's required-extension tests.
    /// (Apart from `Minimal`: the missing extension would be refused first
    /// and hide the errors those tests look for.)
    RequiredExtension,
}

/// The extension the minimal configuration requires.
pub const TCK_REQUIRED_EXTENSION: &str = "urn:a2a:tck:required-extension";

/// [`start_tck_sut`] keeping its state in `store` (memory when `None`).
pub async fn start_tck_sut_on(
    addr: SocketAddr,
    store: Option<a2a_store_sql::DurableStore>,
) -> std::io::Result<RunningSut> {
    start_tck_sut_with(addr, store, TckCapabilities::Full).await
}

/// `card` declaring `capabilities`.
fn tck_card_with(mut card: AgentCard, capabilities: TckCapabilities) -> AgentCard {
    if capabilities == TckCapabilities::Minimal {
        card.capabilities.streaming = Some(false);
        card.capabilities.push_notifications = Some(false);
        card.capabilities.extended_agent_card = Some(false);
    }
    if capabilities == TckCapabilities::RequiredExtension {
        card.capabilities.extensions.push(a2a_core::AgentExtension {
            uri: TCK_REQUIRED_EXTENSION.into(),
            description: "Required by the minimal test configuration".into(),
            required: true,
            ..Default::default()
        });
    }
    card
}

/// The TCK agent's handler settings: loopback webhooks, and the extended
/// card (`card` with one more skill) unless `capabilities` has none.
fn tck_handler(
    builder: a2a_server::HandlerBuilder,
    card: AgentCard,
    capabilities: TckCapabilities,
) -> a2a_server::HandlerBuilder {
    let builder = builder.push_address_policy(loopback_policy());
    if capabilities == TckCapabilities::Minimal {
        return builder;
    }
    let mut extended = card;
    extended.description = format!("{} (extended card)", extended.description);
    extended.skills.push(
        AgentSkill::new("tck-extended", "Extended", "Only in the extended card").with_tags(["tck"]),
    );
    builder.extended_card(extended)
}

/// The TCK agent as agent `tck` of a gateway (its default agent), beside a
/// second agent `other`, each with its own store at `location`: for running
/// the kit against one agent of a gateway. Serves until the process ends.
pub async fn start_tck_gateway(
    addr: SocketAddr,
    location: &a2a_store_sql::StoreLocation,
    capabilities: TckCapabilities,
) -> anyhow::Result<SocketAddr> {
    start_tck_gateway_node(addr, location, capabilities, None).await
}

/// A node of a gateway cluster serving the TCK agent: every agent of the
/// gateway runs as a cluster node on its own schema of the PostgreSQL store.
#[derive(Debug, Clone)]
pub struct TckGatewayNode {
    /// The node's name.
    pub name: String,
    /// The address the cards name (the proxy in front of the cluster).
    pub public_addr: Option<SocketAddr>,
}

/// [`start_tck_gateway`], as node `node` of a gateway cluster on `location`
/// (PostgreSQL) when given: the kit then meets two gateways behind one
/// address as one.
pub async fn start_tck_gateway_node(
    addr: SocketAddr,
    location: &a2a_store_sql::StoreLocation,
    capabilities: TckCapabilities,
    node: Option<TckGatewayNode>,
) -> anyhow::Result<SocketAddr> {
    use a2a_gateway::{AgentDefinition, Gateway, agent_interfaces};
    let listener = bind(addr, DEFAULT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let public = node.as_ref().and_then(|n| n.public_addr).unwrap_or(addr);
    let base_url = format!("http://{public}");
    let mut card = tck_card_with(tck_card(public), capabilities);
    card.supported_interfaces = agent_interfaces(&base_url, "tck");
    let mut stores = std::collections::HashMap::new();
    for name in ["tck", "other"] {
        match &node {
            Some(_) => {
                let (store, bus) = location.open_cluster_for_agent(name, None).await?;
                stores.insert(name, (store, Some(bus)));
            }
            None => {
                if let Some(store) = location.open_for_agent(name, None).await? {
                    stores.insert(name, (store, None));
                }
            }
        }
    }
    let mut jobs = a2a_server::JobConfig::default();
    if let Some(node) = &node {
        jobs.node.clone_from(&node.name);
    }
    let gateway = Gateway::builder()
        .agent(AgentDefinition::new("tck", card.clone(), TckAgent))
        .agent(AgentDefinition::new(
            "other",
            AgentCard::new("Other agent", "Shares the gateway with the TCK agent.")
                .with_streaming(true),
            ScriptedAgent,
        ))
        .handler_setup(move |name, mut builder| {
            if name == "tck" {
                builder = tck_handler(builder, card.clone(), capabilities);
            }
            match stores.remove(name) {
                Some((store, bus)) => {
                    builder = store.install(builder);
                    match bus {
                        Some(bus) => builder
                            .job_config(jobs.clone())
                            .cluster(bus, a2a_server::cluster::ClusterConfig::default()),
                        None => builder,
                    }
                }
                None => builder,
            }
        })
        .build(&base_url)?;
    let app = gateway.router(HttpConfig::default());
    tokio::spawn(serve_in_background(
        listener,
        app,
        gateway.service().clone(),
    ));
    Ok(addr)
}

/// [`start_tck_sut_on`] declaring `capabilities`.
pub async fn start_tck_sut_with(
    addr: SocketAddr,
    store: Option<a2a_store_sql::DurableStore>,
    capabilities: TckCapabilities,
) -> std::io::Result<RunningSut> {
    serve_tck(addr, store, None, capabilities).await
}

/// A cluster node's settings for the TCK agent.
#[derive(Debug)]
pub struct TckNode {
    /// The node's name.
    pub name: String,
    /// The cluster bus of its store.
    pub bus: a2a_store_sql::PostgresCluster,
    /// The address its card names (the proxy in front of the cluster).
    pub public_addr: Option<SocketAddr>,
}

/// The TCK agent as node `node` of a cluster on `store`.
pub async fn start_tck_node(
    addr: SocketAddr,
    store: a2a_store_sql::DurableStore,
    node: TckNode,
    capabilities: TckCapabilities,
) -> std::io::Result<RunningSut> {
    serve_tck(addr, Some(store), Some(node), capabilities).await
}

async fn serve_tck(
    addr: SocketAddr,
    store: Option<a2a_store_sql::DurableStore>,
    node: Option<TckNode>,
    capabilities: TckCapabilities,
) -> std::io::Result<RunningSut> {
    let listener = bind(addr, DEFAULT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let public = node.as_ref().and_then(|n| n.public_addr).unwrap_or(addr);
    let card = tck_card_with(tck_card(public), capabilities);
    let mut builder = tck_handler(
        DefaultRequestHandler::builder(TckAgent, card.clone()),
        card,
        capabilities,
    );
    if let Some(node) = node {
        let mut jobs = a2a_server::JobConfig::default();
        jobs.node = node.name;
        builder = builder
            .job_config(jobs)
            .cluster(node.bus, a2a_server::cluster::ClusterConfig::default());
    }
    let builder = match store {
        Some(store) => store.install(builder),
        None => builder,
    };
    let handler = Arc::new(builder.build());
    let service = A2aService::from_arc(handler.clone());
    let app = router(service.clone(), HttpConfig::default());
    tokio::spawn(serve_in_background(listener, app, service));
    Ok(RunningSut { addr, handler })
}

/// Serves a test agent the way `a2a serve` does (header read timeout,
/// connection limits), for as long as the runtime runs: a test agent gets
/// no protection a user's server would lack.
async fn serve_in_background(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    service: A2aService,
) {
    let stop = std::future::pending();
    let config = a2a_server::http::ServeConfig::default();
    if let Err(err) = a2a_server::http::serve_with(listener, app, service, stop, config).await {
        eprintln!("test agent stopped: {err}");
    }
}

/// A webhook on 127.0.0.1: its URL, and the `traceparent` header of each
/// delivery it receives, in order (empty when a delivery has none).
pub async fn traceparent_webhook() -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let traceparent = headers
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let _ = tx.send(traceparent);
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for the webhook");
    let url = format!("http://{}/hook", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// A SendMessage of `text` whose task notifies the webhook at `url`.
pub fn send_with_webhook(text: &str, url: String) -> a2a_core::SendMessageRequest {
    let mut request = a2a_core::SendMessageRequest::new(a2a_core::Message::user_text(text));
    request.configuration = Some(a2a_core::SendMessageConfiguration {
        task_push_notification_config: Some(a2a_core::TaskPushNotificationConfig {
            url,
            ..Default::default()
        }),
        ..Default::default()
    });
    request
}
