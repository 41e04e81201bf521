//! The agent card: what an agent is, where it listens and what it can do.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::protojson::{is_default, nullable};
use crate::{Metadata, SecurityRequirement, SecurityScheme};

/// Protocol binding names used in [`AgentInterface::protocol_binding`].
pub mod binding {
    /// JSON-RPC 2.0 over HTTP.
    pub const JSONRPC: &str = "JSONRPC";
    /// gRPC.
    pub const GRPC: &str = "GRPC";
    /// HTTP+JSON (REST).
    pub const HTTP_JSON: &str = "HTTP+JSON";
}

/// Self-description of an agent, served at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Human-readable name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// What the agent does.
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// Endpoints, in order of preference.
    #[serde(default, alias = "supported_interfaces", deserialize_with = "nullable")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who provides the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// Documentation URL.
    #[serde(
        default,
        alias = "documentation_url",
        skip_serializing_if = "Option::is_none"
    )]
    pub documentation_url: Option<String>,
    /// Optional capabilities.
    #[serde(default, deserialize_with = "nullable")]
    pub capabilities: AgentCapabilities,
    /// Named security schemes.
    #[serde(
        default,
        alias = "security_schemes",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Alternatives of schemes needed to call the agent.
    #[serde(
        default,
        alias = "security_requirements",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types accepted by default.
    #[serde(default, alias = "default_input_modes", deserialize_with = "nullable")]
    pub default_input_modes: Vec<String>,
    /// Media types produced by default.
    #[serde(default, alias = "default_output_modes", deserialize_with = "nullable")]
    pub default_output_modes: Vec<String>,
    /// What the agent can do.
    #[serde(default, deserialize_with = "nullable")]
    pub skills: Vec<AgentSkill>,
    /// JWS signatures over the card.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
    /// Icon URL.
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// A card with a name and description, version `1.0.0`, and text in and out.
    ///
    /// ```
    /// use a2a_core::{AgentCard, AgentSkill, binding};
    /// let card = AgentCard::new("Echo", "Repeats what you say")
    ///     .with_interface("http://127.0.0.1:8080/", binding::JSONRPC)
    ///     .with_skill(AgentSkill::new("echo", "Echo", "Repeats the message"))
    ///     .with_streaming(true);
    /// assert!(card.capabilities.supports_streaming());
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        AgentCard {
            name: name.into(),
            description: description.into(),
            version: "1.0.0".into(),
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            ..AgentCard::default()
        }
    }

    /// Adds an endpoint (current protocol version).
    #[must_use]
    pub fn with_interface(mut self, url: impl Into<String>, protocol_binding: &str) -> Self {
        self.supported_interfaces
            .push(AgentInterface::new(url, protocol_binding));
        self
    }

    /// Adds a skill.
    #[must_use]
    pub fn with_skill(mut self, skill: AgentSkill) -> Self {
        self.skills.push(skill);
        self
    }

    /// Declares (or withdraws) streaming support.
    #[must_use]
    pub fn with_streaming(mut self, on: bool) -> Self {
        self.capabilities.streaming = Some(on);
        self
    }

    /// Declares (or withdraws) push-notification support.
    #[must_use]
    pub fn with_push_notifications(mut self, on: bool) -> Self {
        self.capabilities.push_notifications = Some(on);
        self
    }

    /// Declares (or withdraws) an extended card.
    #[must_use]
    pub fn with_extended_agent_card(mut self, on: bool) -> Self {
        self.capabilities.extended_agent_card = Some(on);
        self
    }

    /// The first interface with the given binding, if any.
    pub fn interface(&self, protocol_binding: &str) -> Option<&AgentInterface> {
        self.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding == protocol_binding)
    }
}

/// One endpoint of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Absolute URL for HTTP bindings, `host:port` for gRPC.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `JSONRPC`, `GRPC`, `HTTP+JSON` or a URI naming a custom binding.
    #[serde(default, alias = "protocol_binding", deserialize_with = "nullable")]
    pub protocol_binding: String,
    /// Opaque routing value the client copies into every request.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// Protocol version, `Major.Minor`.
    #[serde(default, alias = "protocol_version", deserialize_with = "nullable")]
    pub protocol_version: String,
}

impl AgentInterface {
    /// An interface at `url` speaking `protocol_binding` at the current protocol version.
    pub fn new(url: impl Into<String>, protocol_binding: impl Into<String>) -> Self {
        AgentInterface {
            url: url.into(),
            protocol_binding: protocol_binding.into(),
            tenant: String::new(),
            protocol_version: crate::PROTOCOL_VERSION.to_owned(),
        }
    }
}

/// The organisation behind an agent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's website.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// The provider's name.
    #[serde(default, deserialize_with = "nullable")]
    pub organization: String,
}

/// Optional features an agent supports. Absent means unsupported.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Streaming operations are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notifications are supported.
    #[serde(
        default,
        alias = "push_notifications",
        skip_serializing_if = "Option::is_none"
    )]
    pub push_notifications: Option<bool>,
    /// Protocol extensions the agent supports.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
    /// An extended card is available to authenticated callers.
    #[serde(
        default,
        alias = "extended_agent_card",
        skip_serializing_if = "Option::is_none"
    )]
    pub extended_agent_card: Option<bool>,
}

impl AgentCapabilities {
    /// Whether streaming is declared.
    pub fn supports_streaming(&self) -> bool {
        self.streaming == Some(true)
    }

    /// Whether push notifications are declared.
    pub fn supports_push_notifications(&self) -> bool {
        self.push_notifications == Some(true)
    }

    /// Whether an extended card is declared.
    pub fn supports_extended_agent_card(&self) -> bool {
        self.extended_agent_card == Some(true)
    }
}

/// A protocol extension supported by the agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The extension's URI (versioned).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub uri: String,
    /// What the extension does here.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// Clients must request this extension.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_default"
    )]
    pub required: bool,
    /// Extension-specific parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Metadata>,
}

/// A skill: one thing the agent can do.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Unique id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// Human-readable name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// What the skill does.
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// Keywords.
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub examples: Vec<String>,
    /// Accepted media types, overriding the card default.
    #[serde(
        default,
        alias = "input_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    /// Produced media types, overriding the card default.
    #[serde(
        default,
        alias = "output_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    /// Security needed for this skill.
    #[serde(
        default,
        alias = "security_requirements",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
}

impl AgentSkill {
    /// A skill with an id, a name and a description (tags empty).
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        AgentSkill {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            ..AgentSkill::default()
        }
    }

    /// Sets the tags.
    #[must_use]
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }
}

/// A detached JWS signature over the card's canonical JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// Base64url protected header.
    #[serde(default, deserialize_with = "nullable")]
    pub protected: String,
    /// Base64url signature.
    #[serde(default, deserialize_with = "nullable")]
    pub signature: String,
    /// Unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Metadata>,
}
