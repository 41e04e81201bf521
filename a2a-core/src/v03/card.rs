//! The 0.3 agent card: one main `url` with its `preferredTransport`,
//! `additionalInterfaces`, a card-wide `protocolVersion`, flat
//! `type`-discriminated security schemes and OpenAPI-style `security`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protojson::nullable;
use crate::{
    AgentCardSignature, AgentExtension, AgentProvider, SecurityRequirement, SecurityScheme,
    StringList, binding,
};

/// One endpoint of a 0.3 agent: a URL and its transport (`JSONRPC`, `GRPC`, `HTTP+JSON`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentInterface {
    /// Where.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// Which binding.
    #[serde(default, deserialize_with = "nullable")]
    pub transport: String,
}

/// The capabilities of a 0.3 card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Streaming methods are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Push notifications are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Removed in 1.0; read and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_transition_history: Option<bool>,
    /// Supported extensions (same shape as in 1.0).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
}

/// A skill of a 0.3 card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Unique id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// Name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// What it does.
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
    /// Accepted media types.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    /// Produced media types.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    /// OpenAPI-style requirements: alternatives of `{scheme: [scopes]}`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security: Vec<BTreeMap<String, Vec<String>>>,
}

/// A 0.3 agent card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The card's protocol version (`0.3.0`).
    #[serde(default, deserialize_with = "nullable")]
    pub protocol_version: String,
    /// Name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// What the agent does.
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// The main endpoint.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// The main endpoint's binding (0.3 default `JSONRPC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_transport: Option<String>,
    /// Further endpoints.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub additional_interfaces: Vec<AgentInterface>,
    /// Icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// Provider (same shape as in 1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// Documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Capabilities.
    #[serde(default, deserialize_with = "nullable")]
    pub capabilities: AgentCapabilities,
    /// Flat, `type`-discriminated schemes, kept as JSON: converted one by
    /// one, so that one scheme of an unknown type does not lose the card.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub security_schemes: BTreeMap<String, Value>,
    /// OpenAPI-style requirements.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security: Vec<BTreeMap<String, Vec<String>>>,
    /// Default accepted media types.
    #[serde(default, deserialize_with = "nullable")]
    pub default_input_modes: Vec<String>,
    /// Default produced media types.
    #[serde(default, deserialize_with = "nullable")]
    pub default_output_modes: Vec<String>,
    /// Skills.
    #[serde(default, deserialize_with = "nullable")]
    pub skills: Vec<AgentSkill>,
    /// An authenticated extended card is served (1.0 `capabilities.extendedAgentCard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports_authenticated_extended_card: Option<bool>,
    /// Signatures (same shape as in 1.0, though over another document).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
}

/// The 1.0 wrapper key and the 0.3 `type` of each scheme kind.
const SCHEME_TYPES: [(&str, &str); 5] = [
    ("apiKeySecurityScheme", "apiKey"),
    ("httpAuthSecurityScheme", "http"),
    ("oauth2SecurityScheme", "oauth2"),
    ("openIdConnectSecurityScheme", "openIdConnect"),
    ("mtlsSecurityScheme", "mutualTLS"),
];

/// A 1.0 scheme in its flat 0.3 form (`location` back to `in`).
fn scheme_to_v03(scheme: &SecurityScheme) -> Option<Value> {
    let Value::Object(wrapper) = serde_json::to_value(scheme).ok()? else {
        return None;
    };
    let (key, inner) = wrapper.into_iter().next()?;
    let (_, kind) = SCHEME_TYPES.iter().find(|(k, _)| *k == key)?;
    let Value::Object(mut flat) = inner else {
        return None;
    };
    if let Some(location) = flat.remove("location") {
        flat.insert("in".into(), location);
    }
    flat.insert("type".into(), Value::String((*kind).to_owned()));
    Some(Value::Object(flat))
}

/// A flat 0.3 scheme as 1.0 (`None` for an unknown or malformed one). A 0.3
/// OAuth scheme may list several flows; 1.0 keeps one, the first it knows.
fn scheme_from_v03(scheme: &Value) -> Option<SecurityScheme> {
    let mut flat = scheme.as_object()?.clone();
    let kind = flat.remove("type")?;
    let (key, _) = SCHEME_TYPES
        .iter()
        .find(|(_, t)| Some(*t) == kind.as_str())?;
    if let Some(location) = flat.remove("in") {
        flat.insert("location".into(), location);
    }
    if let Some(Value::Object(flows)) = flat.get_mut("flows") {
        let first = [
            "authorizationCode",
            "clientCredentials",
            "deviceCode",
            "implicit",
            "password",
        ]
        .into_iter()
        .find_map(|name| flows.get(name).map(|f| (name, f.clone())));
        flows.clear();
        if let Some((name, flow)) = first {
            flows.insert(name.to_owned(), flow);
        }
    }
    let mut wrapper = serde_json::Map::new();
    wrapper.insert((*key).to_owned(), Value::Object(flat));
    serde_json::from_value(Value::Object(wrapper)).ok()
}

fn requirements_to_v03(requirements: &[SecurityRequirement]) -> Vec<BTreeMap<String, Vec<String>>> {
    requirements
        .iter()
        .map(|r| {
            r.schemes
                .iter()
                .map(|(name, scopes)| (name.clone(), scopes.list.clone()))
                .collect()
        })
        .collect()
}

fn requirements_from_v03(security: Vec<BTreeMap<String, Vec<String>>>) -> Vec<SecurityRequirement> {
    security
        .into_iter()
        .map(|alternative| SecurityRequirement {
            schemes: alternative
                .into_iter()
                .map(|(name, list)| (name, StringList { list }))
                .collect(),
        })
        .collect()
}

/// `0.3.0` → `0.3`: 1.0 cards state `Major.Minor` only.
fn major_minor(version: &str) -> String {
    let mut parts = version.trim().split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) if !major.is_empty() => format!("{major}.{minor}"),
        _ => super::PROTOCOL_VERSION_MAJOR_MINOR.to_owned(),
    }
}

impl AgentCard {
    /// The 0.3 card of an agent whose 1.0 card is `card`, as served to 0.3
    /// clients. Its interfaces are the card's 0.3 ones (`protocolVersion`
    /// `0.3`, see [`advertise`]); a card listing none is taken to serve 0.3
    /// beside 1.0 on its JSON-RPC and HTTP+JSON interfaces
    /// ([`SERVED_BINDINGS`]). The main `url` is the JSON-RPC one when there
    /// is one; all are listed in `additionalInterfaces`. `None` when no
    /// interface qualifies. Interfaces with a tenant are left out (0.3 had
    /// no tenants).
    pub fn from_v1(card: &crate::AgentCard) -> Option<Self> {
        let untenanted = || {
            card.supported_interfaces
                .iter()
                .filter(|i| i.tenant.is_empty())
        };
        let mut offered: Vec<&crate::AgentInterface> =
            untenanted().filter(|i| is_v03_interface(i)).collect();
        if offered.is_empty() {
            offered = untenanted()
                .filter(|i| SERVED_BINDINGS.contains(&i.protocol_binding.as_str()))
                .collect();
        }
        let main = offered
            .iter()
            .find(|i| i.protocol_binding == binding::JSONRPC)
            .or_else(|| offered.first())?;
        let mut additional: Vec<AgentInterface> = Vec::new();
        for i in std::iter::once(main).chain(offered.iter()) {
            let interface = AgentInterface {
                url: i.url.clone(),
                transport: i.protocol_binding.clone(),
            };
            if !additional.contains(&interface) {
                additional.push(interface);
            }
        }
        Some(AgentCard {
            protocol_version: super::PROTOCOL_VERSION.to_owned(),
            name: card.name.clone(),
            description: card.description.clone(),
            url: main.url.clone(),
            preferred_transport: Some(main.protocol_binding.clone()),
            additional_interfaces: additional,
            icon_url: card.icon_url.clone(),
            provider: card.provider.clone(),
            version: card.version.clone(),
            documentation_url: card.documentation_url.clone(),
            capabilities: AgentCapabilities {
                streaming: card.capabilities.streaming,
                push_notifications: card.capabilities.push_notifications,
                state_transition_history: None,
                extensions: card.capabilities.extensions.clone(),
            },
            security_schemes: card
                .security_schemes
                .iter()
                .filter_map(|(name, s)| Some((name.clone(), scheme_to_v03(s)?)))
                .collect(),
            security: requirements_to_v03(&card.security_requirements),
            default_input_modes: card.default_input_modes.clone(),
            default_output_modes: card.default_output_modes.clone(),
            skills: card
                .skills
                .iter()
                .map(|s| AgentSkill {
                    id: s.id.clone(),
                    name: s.name.clone(),
                    description: s.description.clone(),
                    tags: s.tags.clone(),
                    examples: s.examples.clone(),
                    input_modes: s.input_modes.clone(),
                    output_modes: s.output_modes.clone(),
                    security: requirements_to_v03(&s.security_requirements),
                })
                .collect(),
            supports_authenticated_extended_card: card.capabilities.extended_agent_card,
            // Signatures sign the 1.0 document; they would not verify here.
            signatures: Vec::new(),
        })
    }

    /// The 1.0 card: the main `url` first, then the additional interfaces
    /// (duplicates dropped), each at the card's protocol version in its
    /// `Major.Minor` form, so a client knows to speak 0.3 to them. Schemes
    /// of an unknown type are dropped.
    pub fn into_v1(self) -> crate::AgentCard {
        let version = major_minor(&self.protocol_version);
        let main = AgentInterface {
            url: self.url,
            transport: self
                .preferred_transport
                .unwrap_or_else(|| binding::JSONRPC.to_owned()),
        };
        let mut interfaces: Vec<crate::AgentInterface> = Vec::new();
        for i in std::iter::once(main).chain(self.additional_interfaces) {
            if i.url.is_empty()
                || interfaces
                    .iter()
                    .any(|known| known.url == i.url && known.protocol_binding == i.transport)
            {
                continue;
            }
            interfaces.push(crate::AgentInterface {
                url: i.url,
                protocol_binding: i.transport,
                tenant: String::new(),
                protocol_version: version.clone(),
            });
        }
        crate::AgentCard {
            name: self.name,
            description: self.description,
            supported_interfaces: interfaces,
            provider: self.provider,
            version: self.version,
            documentation_url: self.documentation_url,
            capabilities: crate::AgentCapabilities {
                streaming: self.capabilities.streaming,
                push_notifications: self.capabilities.push_notifications,
                extensions: self.capabilities.extensions,
                extended_agent_card: self.supports_authenticated_extended_card,
            },
            security_schemes: self
                .security_schemes
                .iter()
                .filter_map(|(name, s)| Some((name.clone(), scheme_from_v03(s)?)))
                .collect(),
            security_requirements: requirements_from_v03(self.security),
            default_input_modes: self.default_input_modes,
            default_output_modes: self.default_output_modes,
            skills: self
                .skills
                .into_iter()
                .map(|s| crate::AgentSkill {
                    id: s.id,
                    name: s.name,
                    description: s.description,
                    tags: s.tags,
                    examples: s.examples,
                    input_modes: s.input_modes,
                    output_modes: s.output_modes,
                    security_requirements: requirements_from_v03(s.security),
                })
                .collect(),
            signatures: self.signatures,
            icon_url: self.icon_url,
        }
    }
}

/// The bindings this SDK's HTTP server also serves in 0.3 form, on the
/// URLs of their 1.0 interfaces: JSON-RPC (by method name) and HTTP+JSON
/// (under `/v1/`).
pub const SERVED_BINDINGS: [&str; 2] = [binding::JSONRPC, binding::HTTP_JSON];

fn is_v03_interface(interface: &crate::AgentInterface) -> bool {
    !interface.protocol_version.trim().is_empty()
        && super::is_v03_version(Some(&interface.protocol_version))
}

/// Lists in `card` a 0.3 interface (`protocolVersion` `0.3`) at the URL of
/// each of its 1.0 interfaces whose binding is in `bindings`, so clients
/// reading the 1.0 card find where 0.3 is spoken. They go last: a 1.0
/// client that takes the first interface of a binding still finds the 1.0
/// one. Interfaces already listed are not repeated; a signed card is left
/// alone (the signature covers the interfaces).
pub fn advertise<B: AsRef<str>>(card: &mut crate::AgentCard, bindings: &[B]) {
    if !card.signatures.is_empty() {
        return;
    }
    let extra: Vec<crate::AgentInterface> = card
        .supported_interfaces
        .iter()
        .filter(|i| bindings.iter().any(|b| b.as_ref() == i.protocol_binding))
        .filter(|i| !is_v03_interface(i))
        .filter(|i| i.tenant.is_empty())
        .map(|i| crate::AgentInterface {
            protocol_version: super::PROTOCOL_VERSION_MAJOR_MINOR.to_owned(),
            ..i.clone()
        })
        .collect();
    for interface in extra {
        let listed = card.supported_interfaces.iter().any(|i| {
            i.url == interface.url
                && i.protocol_binding == interface.protocol_binding
                && is_v03_interface(i)
        });
        if !listed {
            card.supported_interfaces.push(interface);
        }
    }
}

/// Reads an agent card in either form: a 1.0 card as is, a 0.3 card (a
/// top-level `url` and no `supportedInterfaces`) converted by
/// [`AgentCard::into_v1`], so its interfaces say `0.3`.
pub fn parse_any_card(bytes: &[u8]) -> Result<crate::AgentCard, crate::protojson::DecodeError> {
    let value: Value = crate::protojson::decode(bytes)?;
    let is_v03 = value.get("url").is_some_and(Value::is_string)
        && value
            .get("supportedInterfaces")
            .or_else(|| value.get("supported_interfaces"))
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    if is_v03 {
        let card: AgentCard = crate::protojson::decode_value(value)?;
        Ok(card.into_v1())
    } else {
        crate::protojson::decode_value(value)
    }
}
