//! Agents calling each other by name through the gateway.
//!
//! Every hosted agent gets a [`Peers`] handle: `peers.client("coder")` is an
//! ordinary [`a2a_client::Client`], whatever kind of agent `coder` is. Calls
//! go straight to the target's service in this process (no socket), through
//! the same checks, authentication and store as a call from outside, and
//! carry the caller's identity: the target sees the user `agent:<caller>`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

use a2a_client::{
    CallOptions, Client, ClientError, ClientErrorKind, EventStream as ClientEventStream, Transport,
};
use a2a_core::operation::UnaryResponse;
use a2a_core::{A2aError, AgentCard, AgentInterface, Method};
use a2a_server::auth::{Authenticate, BearerAuth};
use a2a_server::{
    A2aService, CallContext, CallInterceptor, Request, Response, ServiceParams, User,
};
use async_trait::async_trait;
use futures::StreamExt as _;

/// The user name an agent's calls carry, as the called agent sees it.
pub fn agent_identity(agent: &str) -> String {
    format!("agent:{agent}")
}

/// A name no agent of the gateway has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", unknown_agent_message(.name, .known, .config.as_deref()))]
pub struct UnknownAgent {
    /// The name asked for.
    pub name: String,
    /// The names the gateway hosts, sorted.
    pub known: Vec<String>,
    /// The configuration file the agents come from, if any.
    pub config: Option<String>,
}

fn unknown_agent_message(name: &str, known: &[String], config: Option<&str>) -> String {
    let hosted = match known.is_empty() {
        true => "no agents".to_owned(),
        false => known.join(", "),
    };
    let fix = match config {
        Some(path) => format!("add it under [agents.{name}] in {path}"),
        None => "register it with GatewayBuilder::agent".to_owned(),
    };
    format!("no agent named {name:?} in this gateway (it hosts: {hosted}); {fix}")
}

impl From<UnknownAgent> for A2aError {
    fn from(err: UnknownAgent) -> Self {
        A2aError::invalid_params(err.to_string())
    }
}

/// One hosted agent as the directory knows it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub(crate) service: A2aService,
    pub(crate) card: AgentCard,
}

/// Every agent of one gateway, by name; filled once the gateway is built.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    pub(crate) agents: HashMap<String, Listed>,
    /// Sorted, for messages.
    pub(crate) names: Vec<String>,
    pub(crate) config: Option<String>,
    /// Each agent's secret, by agent name: what its calls present.
    pub(crate) tokens: HashMap<String, String>,
    /// The same secrets as credentials, each standing for `agent:<name>`.
    pub(crate) agent_credentials: BearerAuth,
}

impl Directory {
    pub(crate) fn get(&self, name: &str) -> Result<&Listed, UnknownAgent> {
        self.agents.get(name).ok_or_else(|| UnknownAgent {
            name: name.to_owned(),
            known: self.names.clone(),
            config: self.config.clone(),
        })
    }
}

/// The gateway's directory as its agents' services and executors hold it:
/// weakly, since the directory holds them (a strong reference would keep a
/// dropped gateway, its stores and their locks alive for good).
pub(crate) type DirectoryRef = Weak<OnceLock<Directory>>;

/// An agent's way to the other agents of its gateway. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Peers {
    caller: Arc<str>,
    directory: DirectoryRef,
}

impl Peers {
    pub(crate) fn new(caller: &str, directory: &Arc<OnceLock<Directory>>) -> Self {
        Peers {
            caller: caller.into(),
            directory: Arc::downgrade(directory),
        }
    }

    /// The name of the agent this handle calls on behalf of.
    pub fn caller(&self) -> &str {
        &self.caller
    }

    /// The names of the gateway's agents, sorted (empty until the gateway is built).
    pub fn names(&self) -> Vec<String> {
        self.directory
            .upgrade()
            .and_then(|d| d.get().map(|d| d.names.clone()))
            .unwrap_or_default()
    }

    /// The card of agent `name`.
    pub fn card(&self, name: &str) -> Result<AgentCard, UnknownAgent> {
        let directory = self.directory()?;
        let card = directory_of(&directory)?.get(name)?.card.clone();
        Ok(card)
    }

    /// A client of agent `name`: its calls reach that agent as
    /// `agent:<caller>`, whatever kind of agent it is.
    pub fn client(&self, name: &str) -> Result<Client, UnknownAgent> {
        let directory = self.directory()?;
        let directory = directory_of(&directory)?;
        let target = directory.get(name)?;
        let token = directory
            .tokens
            .get(&*self.caller)
            .cloned()
            .unwrap_or_default();
        let interface = target
            .card
            .supported_interfaces
            .first()
            .cloned()
            .unwrap_or_else(AgentInterface::default);
        let transport = InProcess {
            service: target.service.clone(),
            authorization: format!("Bearer {token}"),
        };
        Ok(Client::from_transport(transport, interface))
    }

    /// The directory, while the gateway lives.
    fn directory(&self) -> Result<Arc<OnceLock<Directory>>, UnknownAgent> {
        self.directory.upgrade().ok_or_else(no_gateway)
    }
}

/// The directory once the gateway is built.
fn directory_of(directory: &OnceLock<Directory>) -> Result<&Directory, UnknownAgent> {
    directory.get().ok_or_else(no_gateway)
}

/// What asking for a peer answers before the gateway is built or after it
/// is gone: no agents.
fn no_gateway() -> UnknownAgent {
    UnknownAgent {
        name: String::new(),
        known: Vec::new(),
        config: None,
    }
}

/// The agent whose secret the call presents, as its user.
pub(crate) async fn calling_agent(directory: &DirectoryRef, ctx: &CallContext) -> Option<User> {
    // Most calls carry no credentials: no refusal built for nothing.
    ctx.service_params.get("authorization")?;
    let directory = directory.upgrade()?;
    let credentials = &directory.get()?.agent_credentials;
    credentials.authenticate(ctx).await.ok()
}

/// The gateway's authentication of one agent's service: an agent's own
/// secret makes the caller `agent:<name>`; anything else goes to the
/// authentication the operator configured.
pub(crate) struct GatewayAuth {
    pub(crate) directory: DirectoryRef,
    pub(crate) configured: Arc<dyn Authenticate>,
}

#[async_trait]
impl Authenticate for GatewayAuth {
    async fn authenticate(&self, ctx: &CallContext) -> Result<User, A2aError> {
        match calling_agent(&self.directory, ctx).await {
            Some(agent) => Ok(agent),
            None => self.configured.authenticate(ctx).await,
        }
    }

    fn security_schemes(&self) -> Vec<(String, a2a_core::SecurityScheme)> {
        self.configured.security_schemes()
    }
}

/// Without configured authentication callers stay anonymous, but an agent's
/// call still says which agent it is.
pub(crate) struct AgentCallers {
    pub(crate) directory: DirectoryRef,
}

#[async_trait]
impl CallInterceptor for AgentCallers {
    async fn before(
        &self,
        ctx: &mut CallContext,
        _request: &mut Request,
    ) -> Result<Option<Response>, A2aError> {
        if let Some(agent) = calling_agent(&self.directory, ctx).await {
            ctx.user = agent;
        }
        Ok(None)
    }
}

/// A transport that hands calls to a service in this process.
struct InProcess {
    service: A2aService,
    authorization: String,
}

impl InProcess {
    /// Runs `request` through the target's service, as the calling agent.
    async fn run(&self, request: Request, options: &CallOptions) -> Result<Response, ClientError> {
        let mut params = ServiceParams::new();
        let mut append = |key: &str, value: &str| {
            params.append(key, value).map_err(|_| {
                ClientError::from(A2aError::invalid_params(format!(
                    "service parameter {key:?} is not a valid header"
                )))
            })
        };
        for (key, value) in options.service_params() {
            // The caller's identity is the gateway's to say.
            if !key.eq_ignore_ascii_case("authorization") {
                append(&key, &value)?;
            }
        }
        append("authorization", &self.authorization)?;
        let mut ctx = CallContext::new(request.method(), params)
            .with_binding(a2a_server::telemetry::binding::IN_PROCESS);
        // A stream's answer is its first event's arrival, not its end: only
        // unary calls keep to the timeout as a whole.
        let streams = ctx.method.is_streaming();
        let call = self.service.call(&mut ctx, request);
        let outcome = match options.timeout {
            Some(limit) if !streams => match tokio::time::timeout(limit, call).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(ClientError::new(
                        ClientErrorKind::Timeout,
                        format!("no answer within {limit:?}"),
                    ));
                }
            },
            _ => call.await,
        };
        Ok(outcome?)
    }
}

/// The service's answer was a stream where one body was due, or the other
/// way round.
fn unexpected(method: Method) -> ClientError {
    ClientError::from(A2aError::internal(format!(
        "the agent answered {method} with the wrong kind of response"
    )))
}

/// Hands the call over as it is: the service answers every operation.
#[async_trait]
impl Transport for InProcess {
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        let method = request.method();
        if method.is_streaming() {
            return Err(a2a_client::wrong_way(&request));
        }
        self.run(request, options)
            .await?
            .into_unary()
            .map_err(|_| unexpected(method))
    }

    async fn stream(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<ClientEventStream, ClientError> {
        let method = request.method();
        if !method.is_streaming() {
            return Err(a2a_client::wrong_way(&request));
        }
        match self.run(request, options).await? {
            Response::Stream(events) => Ok(Box::pin(events.map(|e| e.map_err(ClientError::from)))),
            _ => Err(unexpected(method)),
        }
    }
}
