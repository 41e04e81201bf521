//! How the hub reaches each agent, and which agents (and accounts standing
//! for them) there are.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use a2a_client::{CallOptions, Client, ClientBuilder, ClientError, RetryPolicy};
use a2a_gateway::{AgentKind, Gateway};

use super::Hub;
use crate::error::HubError;

/// How the hub reaches one agent.
#[derive(Debug)]
pub struct AgentLink {
    endpoint: String,
    client: LinkClient,
}

enum LinkClient {
    /// Boxed: a client is several times the size of the other variant.
    Ready(Box<Client>),
    /// Connected on first use, and again after a failed attempt: a remote
    /// that is down when the hub starts does not stop the hub.
    Remote(Box<RemoteClient>),
}

struct RemoteClient {
    url: String,
    builder: ClientBuilder,
    client: tokio::sync::Mutex<Option<Client>>,
}

impl std::fmt::Debug for LinkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkClient::Ready(_) => f.write_str("Ready"),
            LinkClient::Remote(remote) => write!(f, "Remote({})", remote.url),
        }
    }
}

impl AgentLink {
    /// An agent reached through `client`; `endpoint` says where, for the
    /// mapping table.
    pub fn client(endpoint: impl Into<String>, client: Client) -> Self {
        AgentLink {
            endpoint: endpoint.into(),
            client: LinkClient::Ready(Box::new(client)),
        }
    }

    /// A remote A2A agent at `url` (its card is read on first use),
    /// presenting `bearer` if given. The hub retries by its own policy, so
    /// the client does not.
    pub fn remote(url: impl Into<String>, bearer: Option<String>) -> Self {
        let url = url.into();
        let mut options = CallOptions::default();
        if let Some(token) = bearer {
            options = options.header("authorization", format!("Bearer {token}"));
        }
        let builder = ClientBuilder::new()
            .retry(RetryPolicy::none())
            .track_blocking_sends(false)
            .default_options(options);
        AgentLink {
            endpoint: url.clone(),
            client: LinkClient::Remote(Box::new(RemoteClient {
                url,
                builder,
                client: tokio::sync::Mutex::new(None),
            })),
        }
    }

    /// Where the agent is.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The agent's client, connecting first if it is a remote not yet
    /// reached.
    pub(super) async fn get(&self) -> Result<Client, ClientError> {
        match &self.client {
            LinkClient::Ready(client) => Ok((**client).clone()),
            LinkClient::Remote(remote) => {
                let mut client = remote.client.lock().await;
                if let Some(client) = &*client {
                    return Ok(client.clone());
                }
                let connected = remote.builder.connect(&remote.url).await?;
                *client = Some(connected.clone());
                Ok(connected)
            }
        }
    }
}

/// The agents the hub reaches, by name.
#[derive(Debug, Default)]
pub(super) struct Links {
    pub(super) links: HashMap<String, Arc<AgentLink>>,
    /// Sorted.
    names: Vec<String>,
}

impl Hub {
    /// Links every agent of `gateway` but the hub itself, through the
    /// gateway in this process (the agents see the caller `agent:<hub>`),
    /// except those `remote` links directly; logs the mapping table; and
    /// takes up the deliveries that were not done when the hub last
    /// stopped: sends those not started, follows those waiting for an
    /// answer.
    pub fn connect(
        &self,
        gateway: &Gateway,
        mut direct: HashMap<String, AgentLink>,
    ) -> Result<(), HubError> {
        let peers = gateway
            .peers(&self.inner.name)
            .map_err(|err| HubError::invalid(err.to_string()))?;
        for agent in gateway.agents() {
            if agent.name == self.inner.name {
                continue;
            }
            let link = match direct.remove(&agent.name) {
                Some(link) => link,
                None => {
                    let client = peers
                        .client(&agent.name)
                        .map_err(|err| HubError::invalid(err.to_string()))?;
                    let endpoint = match agent.kind {
                        AgentKind::Rust => format!("in-process ({})", agent.card_url),
                        _ => format!("{} via the gateway ({})", agent.endpoint, agent.card_url),
                    };
                    AgentLink::client(endpoint, client)
                }
            };
            self.link(&agent.name, link);
        }
        for (name, link) in direct {
            self.link(&name, link);
        }
        tracing::info!("collaboration hub agents:\n{}", self.mapping_table());
        self.resume_pending();
        self.start_cluster();
        Ok(())
    }

    /// Links agent `name` (replacing any earlier link).
    pub fn link(&self, name: &str, link: AgentLink) {
        let mut links = self.inner.links.write().unwrap_or_else(|e| e.into_inner());
        links.links.insert(name.to_owned(), Arc::new(link));
        let mut names: Vec<String> = links.links.keys().cloned().collect();
        names.sort();
        links.names = names;
    }

    /// The agents the hub reaches, sorted.
    pub fn agent_names(&self) -> Vec<String> {
        self.links().names.clone()
    }

    /// Whether `name` is an agent the hub reaches.
    pub fn is_agent(&self, name: &str) -> bool {
        self.links().links.contains_key(name)
    }

    pub(super) fn links(&self) -> std::sync::RwLockReadGuard<'_, Links> {
        self.inner.links.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Every agent id and account, and where it leads: what the hub logs
    /// when it starts.
    pub fn mapping_table(&self) -> String {
        let links = self.links();
        let mut rows: Vec<(String, String)> = links
            .names
            .iter()
            .map(|name| (name.clone(), links.links[name].endpoint.clone()))
            .collect();
        for (account, agent) in &self.inner.config.accounts {
            rows.push((account.clone(), format!("account of agent {agent}")));
        }
        let width = rows
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let mut out = format!("{:<width$}  ENDPOINT\n", "AGENT");
        for (name, endpoint) in rows {
            out.push_str(&format!("{name:<width$}  {endpoint}\n"));
        }
        out
    }

    /// The agent `id` names: an agent, or an account standing for one.
    pub fn resolve(&self, id: &str) -> Result<String, HubError> {
        if self.is_agent(id) {
            return Ok(id.to_owned());
        }
        if let Some(agent) = self.inner.config.accounts.get(id) {
            if self.is_agent(agent) {
                return Ok(agent.clone());
            }
        }
        Err(self.unknown_target(id))
    }

    /// Why `id` names no agent, and how to make it one.
    pub(super) fn unknown_target(&self, id: &str) -> HubError {
        let known = self.agent_names().join(", ");
        let accounts: Vec<String> = self
            .inner
            .config
            .accounts
            .iter()
            .map(|(account, agent)| format!("{account} → {agent}"))
            .collect();
        let accounts = match accounts.is_empty() {
            true => String::new(),
            false => format!("; accounts: {}", accounts.join(", ")),
        };
        if let Some(file) = &self.inner.config.config_file {
            if added_since_start(file, id) {
                return HubError::invalid(format!(
                    "agent {id:?} is in {} but was added after the gateway started: restart \
                     `a2a serve` (or reload the gateway) to load it",
                    file.display()
                ));
            }
            return HubError::invalid(format!(
                "no agent or account named {id:?} (agents: {known}{accounts}); add it under \
                 [agents.{id}] in {}, or map the id to an agent under [hub.accounts]",
                file.display()
            ));
        }
        HubError::invalid(format!(
            "no agent or account named {id:?} (agents: {known}{accounts}); register it with \
             GatewayBuilder::agent, or map the id to an agent in HubConfig::accounts"
        ))
    }
}

/// Whether the gateway file at `path` now has an agent table `id`.
fn added_since_start(path: &Path, id: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(value) = text.parse::<toml::Table>() else {
        return false;
    };
    value
        .get("agents")
        .and_then(toml::Value::as_table)
        .is_some_and(|agents| agents.contains_key(id))
}
