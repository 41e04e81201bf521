//! The gateway itself: named agents, each with its own card, handler and
//! tasks, behind one router.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use a2a_core::{A2aError, AgentCard, AgentInterface, binding};
use a2a_server::auth::{Authenticate, BearerAuth, Principal};
use a2a_server::http::HttpConfig;
use a2a_server::{
    A2aService, AgentExecutor, CallContext, DefaultRequestHandler, HandlerBuilder, TenantRouter,
    User,
};
use a2a_signing::CardSigner;
use async_trait::async_trait;
use axum::Router;
use axum::response::IntoResponse as _;
use tower::ServiceExt as _;

use crate::conversations::Conversations;
use crate::peers::{
    AgentCallers, Directory, GatewayAuth, Listed, Peers, UnknownAgent, agent_identity,
    calling_agent,
};

/// Where hosted agents are served under: `/agents/<name>`.
pub const AGENTS_PATH: &str = "/agents";

/// What an agent is, for the start-up table and the `/agents` listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// A Rust [`AgentExecutor`] in this process.
    Rust,
    /// An external command speaking the JSON-lines protocol ([`crate::process`]).
    Process,
    /// A remote A2A agent the gateway forwards to ([`crate::remote`]).
    Remote,
    /// A model behind an OpenAI-compatible chat completions endpoint
    /// ([`crate::model`]).
    Model,
}

impl AgentKind {
    /// The kind's name as configuration files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Rust => "rust",
            AgentKind::Process => "process",
            AgentKind::Remote => "remote",
            AgentKind::Model => "model",
        }
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

type MakeExecutor = Box<dyn FnOnce(Peers) -> Arc<dyn AgentExecutor> + Send>;

/// What stops an agent's own machinery (a child process, say) once its
/// handler has wound down, given the grace period.
pub type StopAgent =
    Box<dyn FnOnce(Duration) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// What an agent's executor is given once the gateway has built the
/// agent's handler (after the executor: the handler holds it).
type HandlerBuilt = Box<dyn FnOnce(&DefaultRequestHandler) + Send>;

/// One agent to host: its name, card and executor.
pub struct AgentDefinition {
    name: String,
    kind: AgentKind,
    endpoint: String,
    card: AgentCard,
    make: MakeExecutor,
    stop: Option<StopAgent>,
    built: Vec<HandlerBuilt>,
}

impl std::fmt::Debug for AgentDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDefinition")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl AgentDefinition {
    /// A Rust agent. `card` gives its name, description, skills and
    /// capabilities; the gateway writes its interfaces.
    pub fn new(name: impl Into<String>, card: AgentCard, executor: impl AgentExecutor) -> Self {
        let executor: Arc<dyn AgentExecutor> = Arc::new(executor);
        AgentDefinition::with_peers(name, card, move |_| executor)
    }

    /// A Rust agent that calls the gateway's other agents: `make` gets the
    /// agent's [`Peers`] and returns the executor.
    pub fn with_peers<E, F>(name: impl Into<String>, card: AgentCard, make: F) -> Self
    where
        E: AgentExecutor + ?Sized,
        F: FnOnce(Peers) -> Arc<E> + Send + 'static,
        Arc<E>: Into<Arc<dyn AgentExecutor>>,
    {
        AgentDefinition {
            name: name.into(),
            kind: AgentKind::Rust,
            endpoint: "in-process".to_owned(),
            card,
            make: Box::new(move |peers| make(peers).into()),
            stop: None,
            built: Vec::new(),
        }
    }

    /// Runs `built` with the agent's handler once the gateway has built it
    /// (with the stores [`GatewayBuilder::handler_setup`] gave it): for an
    /// executor that reads what its handler keeps, as a model agent reads
    /// the context's earlier tasks from the agent's task store.
    #[must_use]
    pub fn on_handler(
        mut self,
        built: impl FnOnce(&DefaultRequestHandler) + Send + 'static,
    ) -> Self {
        self.built.push(Box::new(built));
        self
    }

    /// Runs `stop` when the gateway shuts down, after the agent's handler
    /// has wound down (running work had its grace and durable work is left
    /// resumable): for what the executor runs besides, like a child process.
    #[must_use]
    pub fn on_shutdown(mut self, stop: StopAgent) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Says what the agent is and where it runs (the command line, the
    /// remote URL), for the start-up table.
    #[must_use]
    pub fn kind(mut self, kind: AgentKind, endpoint: impl Into<String>) -> Self {
        self.kind = kind;
        self.endpoint = endpoint.into();
        self
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Why a gateway cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// No agents were given.
    #[error("a gateway needs at least one agent")]
    NoAgents,
    /// Two agents have the same name.
    #[error("two agents are named {0:?}")]
    DuplicateName(String),
    /// A name that cannot be a path segment and a tenant.
    #[error(
        "agent name {0:?} must be 1 to 64 letters, digits, '-' or '_', starting with a letter or digit"
    )]
    InvalidName(String),
    /// The default agent is not one of the agents.
    #[error(transparent)]
    UnknownDefault(#[from] UnknownAgent),
    /// An agent's card could not be signed.
    #[error("cannot sign the card of agent {agent:?}: {reason}")]
    CardSigning {
        /// The agent.
        agent: String,
        /// Why.
        reason: String,
    },
}

/// Whether `name` can be a path segment and a tenant as it is.
pub fn is_valid_agent_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

type HandlerSetup = Box<dyn FnMut(&str, HandlerBuilder) -> HandlerBuilder + Send>;

/// Builds a [`Gateway`].
///
/// ```no_run
/// # use a2a_gateway::{AgentDefinition, Gateway};
/// # fn agents(planner: impl a2a_server::AgentExecutor, coder: impl a2a_server::AgentExecutor) -> Result<(), Box<dyn std::error::Error>> {
/// use a2a_core::AgentCard;
/// let gateway = Gateway::builder()
///     .agent(AgentDefinition::new("planner", AgentCard::new("Planner", "Plans the work."), planner))
///     .agent(AgentDefinition::new("coder", AgentCard::new("Coder", "Writes the code."), coder))
///     .build("http://127.0.0.1:8080")?;
/// let app = gateway.router(a2a_server::http::HttpConfig::default());
/// # let _ = app; Ok(()) }
/// ```
#[derive(Default)]
pub struct GatewayBuilder {
    agents: Vec<AgentDefinition>,
    default: Option<String>,
    config: Option<String>,
    setup: Option<HandlerSetup>,
    auth: Option<Arc<dyn Authenticate>>,
    secrets: HashMap<String, String>,
    signer: Option<Arc<CardSigner>>,
    conversations: Option<Conversations>,
    mcp: Vec<a2a_mcp::McpToolbox>,
}

impl std::fmt::Debug for GatewayBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("agents", &self.agents)
            .field("default", &self.default)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl GatewayBuilder {
    /// Adds an agent.
    #[must_use]
    pub fn agent(mut self, agent: AgentDefinition) -> Self {
        self.agents.push(agent);
        self
    }

    /// The agent the gateway's own card (`/.well-known/agent-card.json`)
    /// points to, and that calls naming no agent reach (default: the first).
    #[must_use]
    pub fn default_agent(mut self, name: impl Into<String>) -> Self {
        self.default = Some(name.into());
        self
    }

    /// The configuration file the agents come from: errors about unknown
    /// agents name it as the place to add one.
    #[must_use]
    pub fn config_file(mut self, path: impl Into<String>) -> Self {
        self.config = Some(path.into());
        self
    }

    /// Configures each agent's handler (its stores, conversation log,
    /// limits) before it is built; `setup` gets the agent's name.
    #[must_use]
    pub fn handler_setup(
        mut self,
        setup: impl FnMut(&str, HandlerBuilder) -> HandlerBuilder + Send + 'static,
    ) -> Self {
        self.setup = Some(Box::new(setup));
        self
    }

    /// Enforces `auth` on every call to every agent (see
    /// [`A2aService::with_authentication`]); agents calling each other
    /// through [`Peers`] are let in as `agent:<name>` either way.
    #[must_use]
    pub fn authentication(self, auth: impl Authenticate) -> Self {
        self.authentication_shared(Arc::new(auth))
    }

    /// [`GatewayBuilder::authentication`] with an authenticator chosen at run time.
    #[must_use]
    pub fn authentication_shared(mut self, auth: Arc<dyn Authenticate>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Runs the conversation index: a call from one agent to another that
    /// names no `contextId` continues the pair's conversation (see
    /// [`crate::conversations`]). The gateway's shutdown saves the index.
    #[must_use]
    pub fn conversations(mut self, conversations: Conversations) -> Self {
        self.conversations = Some(conversations);
        self
    }

    /// Signs every agent's public card with `signer`, once the gateway has
    /// written its interfaces (a signature covers them).
    #[must_use]
    pub fn card_signer(mut self, signer: Arc<CardSigner>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// The secret agent `name` presents (`Authorization: Bearer <secret>`)
    /// to call the gateway's agents as `agent:<name>`, for an agent outside
    /// this process: a child process gets it in its environment, say.
    /// Agents in this process call through [`Peers`], which presents it.
    pub fn agent_secret(&mut self, name: &str) -> String {
        self.secrets
            .entry(name.to_owned())
            .or_insert_with(new_secret)
            .clone()
    }

    /// MCP servers, connected ([`crate::mcp::connect`]), that the gateway
    /// hands out ([`Gateway::mcp_toolboxes`]) for its agents to use, and
    /// shuts down ([`McpToolbox::shutdown`](a2a_mcp::McpToolbox::shutdown))
    /// with its agents.
    #[must_use]
    pub fn mcp_toolboxes(mut self, toolboxes: Vec<a2a_mcp::McpToolbox>) -> Self {
        self.mcp.extend(toolboxes);
        self
    }

    /// Builds the gateway served at `base_url` (`http://host:port` or
    /// `https://host:port`): the agents' cards say where each is reachable
    /// from there.
    pub fn build(mut self, base_url: &str) -> Result<Gateway, GatewayError> {
        if self.agents.is_empty() {
            return Err(GatewayError::NoAgents);
        }
        let mut names: Vec<String> = Vec::with_capacity(self.agents.len());
        for agent in &self.agents {
            if !is_valid_agent_name(&agent.name) {
                return Err(GatewayError::InvalidName(agent.name.clone()));
            }
            if names.contains(&agent.name) {
                return Err(GatewayError::DuplicateName(agent.name.clone()));
            }
            names.push(agent.name.clone());
        }
        let default = self.default.clone().unwrap_or_else(|| names[0].clone());
        names.sort();
        if !names.contains(&default) {
            return Err(UnknownAgent {
                name: default,
                known: names,
                config: self.config.clone(),
            }
            .into());
        }
        let base_url = base_url.trim_end_matches('/');
        let directory: Arc<OnceLock<Directory>> = Arc::new(OnceLock::new());
        let mut hosted = Vec::with_capacity(self.agents.len());
        let mut listed = HashMap::with_capacity(self.agents.len());
        let mut tokens = HashMap::with_capacity(self.agents.len());
        let mut stops = Vec::new();
        for agent in std::mem::take(&mut self.agents) {
            stops.extend(agent.stop);
            let mut card = agent.card;
            card.supported_interfaces = agent_interfaces(base_url, &agent.name);
            if let Some(signer) = &self.signer {
                signer
                    .sign(&mut card)
                    .map_err(|err| GatewayError::CardSigning {
                        agent: agent.name.clone(),
                        reason: err.to_string(),
                    })?;
            }
            let executor = (agent.make)(Peers::new(&agent.name, &directory));
            let mut builder = DefaultRequestHandler::builder_shared(executor, card.clone());
            if let Some(setup) = &mut self.setup {
                builder = setup(&agent.name, builder);
            }
            let handler = builder.build();
            for built in agent.built {
                built(&handler);
            }
            let service = match &self.conversations {
                Some(conversations) => {
                    A2aService::from_shared(conversations.wrap(&agent.name, Arc::new(handler)))
                }
                None => A2aService::new(handler),
            };
            let service = match &self.auth {
                Some(configured) => service.with_authentication(GatewayAuth {
                    directory: Arc::downgrade(&directory),
                    configured: configured.clone(),
                }),
                None => service.with_interceptor(AgentCallers {
                    directory: Arc::downgrade(&directory),
                }),
            };
            let secret = self.secrets.remove(&agent.name).unwrap_or_else(new_secret);
            tokens.insert(agent.name.clone(), secret);
            listed.insert(
                agent.name.clone(),
                Listed {
                    service: service.clone(),
                    card: service.card().clone(),
                },
            );
            hosted.push(HostedAgent {
                card_url: format!(
                    "{base_url}{AGENTS_PATH}/{}{}",
                    agent.name,
                    a2a_core::AGENT_CARD_PATH
                ),
                name: agent.name,
                kind: agent.kind,
                endpoint: agent.endpoint,
                service,
            });
        }
        let default_service = listed[&default].service.clone();
        let agent_credentials = tokens
            .iter()
            .fold(BearerAuth::new(), |auth, (name, secret)| {
                auth.token(secret.clone(), Principal::new(agent_identity(name)))
            });
        let _ = directory.set(Directory {
            agent_credentials,
            agents: listed,
            names,
            config: self.config,
            tokens,
        });
        let root = A2aService::routed(
            default_service.card().clone(),
            ByTenant {
                directory: directory.clone(),
                default: default_service,
                stops: std::sync::Mutex::new(stops),
                conversations: self.conversations.clone(),
                mcp: self.mcp.clone(),
            },
        );
        Ok(Gateway {
            root,
            agents: hosted,
            default,
            directory,
            auth: self.auth,
            conversations: self.conversations,
            mcp: self.mcp.into(),
        })
    }
}

/// A secret nobody can guess: 256 random bits.
fn new_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The interfaces of agent `name` of a gateway served at `base_url`:
/// JSON-RPC and HTTP+JSON under `/agents/<name>`, gRPC on the gateway's
/// address with the agent's name as tenant (gRPC clients cannot add a path,
/// and the spec has them copy an interface's tenant into every request).
/// The gateway writes them into each agent's public card; an extended card
/// needs them too.
pub fn agent_interfaces(base_url: &str, name: &str) -> Vec<AgentInterface> {
    let base_url = base_url.trim_end_matches('/');
    let url = format!("{base_url}{AGENTS_PATH}/{name}");
    let grpc = match base_url.strip_prefix("http://") {
        Some(authority) => authority.to_owned(),
        // With TLS the scheme stays: a bare `host:port` means plaintext.
        None => base_url.to_owned(),
    };
    let mut grpc = AgentInterface::new(grpc, binding::GRPC);
    name.clone_into(&mut grpc.tenant);
    vec![
        AgentInterface::new(url.clone(), binding::JSONRPC),
        AgentInterface::new(url, binding::HTTP_JSON),
        grpc,
    ]
}

/// The gateway's root endpoint: a call's tenant names the agent
/// (`<agent>` or `<agent>/<tenant>`); none names the default agent.
struct ByTenant {
    directory: Arc<OnceLock<Directory>>,
    default: A2aService,
    /// Taken by the first shutdown.
    stops: std::sync::Mutex<Vec<StopAgent>>,
    conversations: Option<Conversations>,
    /// The MCP servers the agents use: stopped once the agents are.
    mcp: Vec<a2a_mcp::McpToolbox>,
}

#[async_trait]
impl TenantRouter for ByTenant {
    fn route(&self, tenant: &str) -> Result<(A2aService, String), A2aError> {
        if tenant.is_empty() {
            return Ok((self.default.clone(), String::new()));
        }
        let (name, rest) = tenant.split_once('/').unwrap_or((tenant, ""));
        let directory = self
            .directory
            .get()
            .ok_or_else(|| A2aError::internal("the gateway is not built yet"))?;
        Ok((directory.get(name)?.service.clone(), rest.to_owned()))
    }

    /// Every agent authenticates as the default one does (the gateway's
    /// authentication, or none), so a head naming no agent is checked by it.
    fn head_service(&self) -> Option<A2aService> {
        Some(self.default.clone())
    }

    async fn shutdown(&self, grace: Duration) {
        if let Some(directory) = self.directory.get() {
            let all = directory.agents.values().map(|a| a.service.shutdown(grace));
            futures::future::join_all(all).await;
        }
        let stops = std::mem::take(&mut *self.stops.lock().unwrap_or_else(|e| e.into_inner()));
        futures::future::join_all(stops.into_iter().map(|stop| stop(grace))).await;
        // No agent calls a tool any more: each child gets its stdin closed,
        // as MCP asks a server to exit, and the grace to do so.
        futures::future::join_all(self.mcp.iter().map(|toolbox| toolbox.shutdown(grace))).await;
        // Last: the agents' last answers have moved their pairs on.
        if let Some(conversations) = &self.conversations {
            if let Err(err) = conversations.index().flush().await {
                tracing::warn!(error = %err, "saving the conversation index failed");
            }
        }
    }
}

/// One agent a gateway hosts.
#[derive(Debug, Clone)]
pub struct HostedAgent {
    /// Its name: its path segment and gRPC tenant.
    pub name: String,
    /// What it is.
    pub kind: AgentKind,
    /// Where it runs: `in-process`, the command line, the remote URL.
    pub endpoint: String,
    /// Where its card is served.
    pub card_url: String,
    service: A2aService,
}

impl HostedAgent {
    /// The agent's service (all bindings go through it).
    pub fn service(&self) -> &A2aService {
        &self.service
    }

    /// The agent's public card.
    pub fn card(&self) -> &AgentCard {
        self.service.card()
    }
}

/// Many named agents behind one router. See [`GatewayBuilder`].
#[derive(Clone)]
pub struct Gateway {
    root: A2aService,
    agents: Vec<HostedAgent>,
    default: String,
    directory: Arc<OnceLock<Directory>>,
    auth: Option<Arc<dyn Authenticate>>,
    conversations: Option<Conversations>,
    mcp: Arc<[a2a_mcp::McpToolbox]>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("agents", &self.agents)
            .field("default", &self.default)
            .field("authentication", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A builder.
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// The root service: a call's tenant picks the agent (`<agent>` or
    /// `<agent>/<tenant>`; none: the default agent). Serve it with
    /// [`a2a_server::http::serve_with`] so that shutdown reaches every agent.
    pub fn service(&self) -> &A2aService {
        &self.root
    }

    /// The agents, in the order they were added.
    pub fn agents(&self) -> &[HostedAgent] {
        &self.agents
    }

    /// Who the caller of `ctx` is, as the gateway's agents see it: an
    /// agent's own secret makes it `agent:<name>`; anything else goes to the
    /// configured authentication (an error for missing or bad credentials),
    /// and without one the caller is anonymous. For what the gateway serves
    /// beside its agents (the hub's page and API, say).
    pub async fn identify(&self, ctx: &CallContext) -> Result<User, A2aError> {
        match &self.auth {
            Some(configured) => {
                GatewayAuth {
                    directory: Arc::downgrade(&self.directory),
                    configured: configured.clone(),
                }
                .authenticate(ctx)
                .await
            }
            None => Ok(calling_agent(&Arc::downgrade(&self.directory), ctx)
                .await
                .unwrap_or_else(User::anonymous)),
        }
    }

    /// The conversation index the gateway runs, if any.
    pub fn conversations(&self) -> Option<&Conversations> {
        self.conversations.as_ref()
    }

    /// The MCP servers the gateway connected (its file's `[mcp.NAME]`
    /// tables, see [`crate::mcp`]), for its agents to use.
    pub fn mcp_toolboxes(&self) -> &[a2a_mcp::McpToolbox] {
        &self.mcp
    }

    /// Whether callers must authenticate.
    pub fn authenticates(&self) -> bool {
        self.auth.is_some()
    }

    /// The agent named `name`.
    pub fn agent(&self, name: &str) -> Result<&HostedAgent, UnknownAgent> {
        self.agents
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| self.unknown(name))
    }

    /// The default agent's name.
    pub fn default_agent(&self) -> &str {
        &self.default
    }

    /// A [`Peers`] handle calling on behalf of agent `caller`.
    pub fn peers(&self, caller: &str) -> Result<Peers, UnknownAgent> {
        self.agent(caller)?;
        Ok(Peers::new(caller, &self.directory))
    }

    fn unknown(&self, name: &str) -> UnknownAgent {
        let directory = self.directory.get();
        UnknownAgent {
            name: name.to_owned(),
            known: directory.map(|d| d.names.clone()).unwrap_or_default(),
            config: directory.and_then(|d| d.config.clone()),
        }
    }

    /// The router: every agent's JSON-RPC, HTTP+JSON and card under
    /// `/agents/<name>`; at the root, gRPC, JSON-RPC and HTTP+JSON routed by
    /// tenant and the default agent's card; `GET /agents` lists the agents.
    pub fn router(&self, config: HttpConfig) -> Router {
        let mut app = Router::new();
        for agent in &self.agents {
            let path = format!("{AGENTS_PATH}/{}", agent.name);
            let agent_app = a2a_server::http::router(agent.service.clone(), config.clone());
            // A nested router's `/` is the prefix without the slash; clients
            // post JSON-RPC to the interface URL with one as well.
            let with_slash =
                agent_app
                    .clone()
                    .map_request(|mut request: axum::extract::Request| {
                        // API keys may travel in the query.
                        let uri = match request.uri().query() {
                            Some(query) => format!("/?{query}").parse().ok(),
                            None => None,
                        };
                        *request.uri_mut() =
                            uri.unwrap_or_else(|| axum::http::Uri::from_static("/"));
                        request
                    });
            app = app
                .nest(&path, agent_app)
                .route_service(&format!("{path}/"), with_slash);
        }
        let listing = Arc::new(self.listing());
        let directory = self.directory.clone();
        // After routing, so it sees every request, the ones no route took too.
        let unknown_agents = axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let unknown = request
                    .uri()
                    .path()
                    .strip_prefix(AGENTS_PATH)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .map(|rest| rest.split('/').next().unwrap_or_default())
                    .and_then(|name| directory.get()?.get(name).err());
                async move {
                    match unknown {
                        Some(unknown) => (
                            axum::http::StatusCode::NOT_FOUND,
                            axum::Json(serde_json::json!({
                                "error": {
                                    "code": 404,
                                    "status": "NOT_FOUND",
                                    "message": unknown.to_string(),
                                }
                            })),
                        )
                            .into_response(),
                        None => next.run(request).await,
                    }
                }
            },
        );
        // Only the root's routes and fallback pay for the check: a request
        // for a known agent always matches that agent's routes.
        // gRPC's requests get the HTTP bindings' limits, budget and timeout.
        let limits = config.clone();
        let mcp = crate::mcp::router(self, config.clone());
        let root = a2a_server::http::router(self.root.clone(), config).layer(unknown_agents);
        let root = a2a_grpc::with_grpc_config(root, self.root.clone(), &limits);
        app.merge(root).merge(mcp).route(
            AGENTS_PATH,
            axum::routing::get(move || {
                let listing = listing.clone();
                async move { axum::Json((*listing).clone()) }
            }),
        )
    }

    /// What `GET /agents` answers: each agent's name, kind, description and
    /// card URL.
    pub fn listing(&self) -> serde_json::Value {
        let agents: Vec<_> = self
            .agents
            .iter()
            .map(|a| {
                serde_json::json!({
                    "name": a.name,
                    "kind": a.kind.as_str(),
                    "description": a.card().description,
                    "cardUrl": a.card_url,
                })
            })
            .collect();
        serde_json::json!({ "default": self.default, "agents": agents })
    }

    /// The start-up table: name, kind, endpoint and card URL of each agent.
    pub fn table(&self) -> String {
        let header = ["NAME", "KIND", "ENDPOINT", "CARD"];
        let rows: Vec<[&str; 4]> = self
            .agents
            .iter()
            .map(|a| [&*a.name, a.kind.as_str(), &*a.endpoint, &*a.card_url])
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                match i + 1 == row.len() {
                    true => line.push_str(cell),
                    false => {
                        let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}
