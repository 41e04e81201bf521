//! Hosting a remote agent on the gateway: its definition, its card, and the
//! agent an entry of the configuration file describes.

use a2a_core::{AgentCapabilities, AgentCard};

use super::{RemoteAgent, RemoteAgentConfig};
use crate::config::{AgentConfig, AgentSource};
use crate::{AgentDefinition, AgentKind};

impl RemoteAgent {
    /// The remote agent an entry of the gateway's configuration file
    /// describes (`kind = "remote"`: its URL, bearer token, allowed origins
    /// and networks), with the default timeouts; `None` for another kind.
    pub fn from_config(agent: &AgentConfig) -> Option<RemoteAgent> {
        let AgentSource::Remote {
            url,
            bearer_token,
            allowed_origins,
            allowed_networks,
        } = &agent.source
        else {
            return None;
        };
        let mut config = RemoteAgentConfig::new(url);
        if let Some(token) = bearer_token {
            config = config.bearer(token);
        }
        for origin in allowed_origins {
            config = config.allow_origin(origin);
        }
        // Checked when the file was read.
        for network in allowed_networks.iter().filter_map(|n| n.parse().ok()) {
            config = config.allow_network(network);
        }
        Some(RemoteAgent::new(&agent.name, config))
    }

    /// [`definition`](Self::definition) of the agent an entry of the
    /// configuration file describes, whose `title`, `description` and
    /// `skills`, where the file sets them, win over the remote card's.
    /// `None` for another kind.
    pub async fn configured(agent: &AgentConfig) -> Option<AgentDefinition> {
        let remote = RemoteAgent::from_config(agent)?;
        let (name, url) = (remote.name().to_owned(), remote.config().url.clone());
        let mut card = remote.hosted_or_placeholder_card().await;
        if let Some(title) = &agent.title {
            card.name.clone_from(title);
        }
        if let Some(description) = &agent.description {
            card.description.clone_from(description);
        }
        if !agent.skills.is_empty() {
            card.skills.clone_from(&agent.skills);
        }
        Some(AgentDefinition::new(name, card, remote).kind(AgentKind::Remote, url))
    }

    /// The agent as a [`Gateway`](crate::Gateway) hosts it, under its name:
    /// its card made from the remote's with [`hosted_card`](Self::hosted_card),
    /// fetched now (within the card timeout). A remote that does not answer
    /// does not stop the gateway: the agent gets a card with its name only,
    /// and its calls reach the remote once it is up.
    pub async fn definition(self) -> AgentDefinition {
        let card = match self.card().await {
            Ok(card) => RemoteAgent::hosted_card(&card),
            Err(err) => {
                tracing::warn!(agent = %self.name(), error = %err, "hosting a remote agent whose card could not be read");
                AgentCard::new(
                    self.name(),
                    "A remote agent (its card could not be read at start).",
                )
                .with_streaming(true)
            }
        };
        let (name, url) = (self.name().to_owned(), self.config().url.clone());
        AgentDefinition::new(name, card, self).kind(AgentKind::Remote, url)
    }

    /// What of a remote's card the gateway presents as its own agent's:
    /// name, description, version, provider, documentation, icon, skills,
    /// input and output modes, and the extensions. Interfaces, security and
    /// signatures are the gateway's business, as are streaming, push
    /// notifications and the extended card: the gateway serves them for every
    /// agent it hosts (streaming is left on; the others off, for the gateway
    /// to set).
    pub fn hosted_card(remote: &AgentCard) -> AgentCard {
        AgentCard {
            name: remote.name.clone(),
            description: remote.description.clone(),
            provider: remote.provider.clone(),
            version: remote.version.clone(),
            documentation_url: remote.documentation_url.clone(),
            capabilities: AgentCapabilities {
                streaming: Some(true),
                extensions: remote.capabilities.extensions.clone(),
                ..AgentCapabilities::default()
            },
            default_input_modes: remote.default_input_modes.clone(),
            default_output_modes: remote.default_output_modes.clone(),
            skills: remote.skills.clone(),
            icon_url: remote.icon_url.clone(),
            ..AgentCard::default()
        }
    }

    /// The hosted card, or one with the name only when the remote's cannot
    /// be read now.
    async fn hosted_or_placeholder_card(&self) -> AgentCard {
        match self.card().await {
            Ok(card) => RemoteAgent::hosted_card(&card),
            Err(err) => {
                tracing::warn!(agent = %self.name(), error = %err, "hosting a remote agent whose card could not be read");
                AgentCard::new(
                    self.name(),
                    "A remote agent (its card could not be read at start).",
                )
                .with_streaming(true)
            }
        }
    }
}
