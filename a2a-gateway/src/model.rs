//! Hosting a model agent (`kind = "model"`, `a2a-model`): a
//! [`ModelAgent`] whose tools are the gateway's other agents, each called
//! through [`Peers`] (so in the pair's conversation when the gateway runs
//! the conversation index), the tools of the file's MCP servers
//! ([`mcp_tools`]), and tools made for each agent from its own `Peers`
//! ([`ModelTools::per_agent`]: the collaboration hub's, say).

use std::sync::Arc;

use a2a_conversation::ConversationLog;
use a2a_core::AgentCard;
use a2a_mcp::McpToolbox;
use a2a_model::{
    AgentTool, ContextStore, ModelAgent, ModelSettings, Tool, ToolContext, ToolError, ToolOutput,
    ToolProvider, ToolSet, ToolSpec,
};
use async_trait::async_trait;
use serde_json::Value;

use crate::config::{AgentConfig, AgentSource};
use crate::{AgentDefinition, AgentKind, Peers};

/// The gateway's other agents as tools, read when an execution starts
/// (the gateway's directory is complete only once it is built).
#[derive(Debug, Clone)]
pub struct PeerTools {
    peers: Peers,
    /// The agents the model may call (`None`: every other one).
    allowed: Option<Vec<String>>,
    /// Agents not offered as plain tools: tools of their own stand for
    /// them (the hub's `collaborate` and `post`, for the hub).
    hidden: Vec<String>,
}

impl PeerTools {
    /// The agents `peers` reaches, but its own caller, narrowed to
    /// `allowed` when given.
    pub fn new(peers: Peers, allowed: Option<Vec<String>>) -> PeerTools {
        PeerTools {
            peers,
            allowed,
            hidden: Vec::new(),
        }
    }

    /// Offers none of `agents` (tools of their own stand for them).
    #[must_use]
    pub fn hiding(mut self, agents: impl IntoIterator<Item = String>) -> PeerTools {
        self.hidden.extend(agents);
        self
    }
}

impl ToolProvider for PeerTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.peers
            .names()
            .into_iter()
            .filter(|name| name != self.peers.caller() && !self.hidden.contains(name))
            .filter(|name| self.allowed.as_ref().is_none_or(|a| a.contains(name)))
            .filter_map(|name| {
                let card = self.peers.card(&name).ok()?;
                let client = self.peers.client(&name).ok()?;
                let tool: Arc<dyn Tool> = Arc::new(AgentTool::new(name, card.description, client));
                Some(tool)
            })
            .collect()
    }
}

/// One tool of an MCP server, offered to a model as `SERVER_TOOL` (the
/// `[mcp.SERVER]` table's name, `_`, the tool's name): tools of two servers
/// may share a name.
#[derive(Debug, Clone)]
pub struct McpTool {
    toolbox: McpToolbox,
    spec: a2a_mcp::ToolSpec,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: format!("{}_{}", self.toolbox.name(), self.spec.name),
            description: self.spec.description.clone(),
            parameters: self.spec.input_schema.clone(),
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let output = self
            .toolbox
            .call(&self.spec.name, args)
            .await
            .map_err(|err| ToolError::new(err.to_string()))?;
        if output.is_error {
            return Err(ToolError::new(output.text));
        }
        Ok(match output.structured {
            Some(structured) if output.text.is_empty() => ToolOutput::Json(structured),
            _ => ToolOutput::Text(output.text),
        })
    }
}

/// Every tool of `toolboxes`, as tools of a model agent. A tool whose
/// offered name (`SERVER_TOOL`) a model API would refuse (more than 64
/// characters, or others than letters, digits, `_` and `-`) is left out,
/// with a warning.
pub fn mcp_tools(toolboxes: &[McpToolbox]) -> ToolSet {
    let mut set = ToolSet::new();
    for toolbox in toolboxes {
        for spec in toolbox.tools() {
            let tool = McpTool {
                toolbox: toolbox.clone(),
                spec,
            };
            let name = tool.spec().name;
            let offerable = name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if offerable {
                set = set.tool(tool);
            } else {
                tracing::warn!(tool = %name, "an MCP tool's name is not one a model may call; not offered");
            }
        }
    }
    set
}

/// Tools made for one model agent from its own [`Peers`] when the gateway
/// builds it: tools that act as that agent (the collaboration hub's
/// `collaborate` and `post` reach the hub as the agent that calls them),
/// which one set shared by every agent cannot. Any
/// `Fn(&Peers) -> Vec<Arc<dyn Tool>>` is one.
pub trait PeerToolFactory: Send + Sync + 'static {
    /// The tools of the agent whose handle on the others is `peers`.
    fn tools(&self, peers: &Peers) -> Vec<Arc<dyn Tool>>;

    /// The agents these tools stand for, which are then not offered as
    /// plain agent tools too (the hub, for its `collaborate` and `post`):
    /// none unless said.
    fn stands_for(&self) -> Vec<String> {
        Vec::new()
    }
}

impl<F> PeerToolFactory for F
where
    F: Fn(&Peers) -> Vec<Arc<dyn Tool>> + Send + Sync + 'static,
{
    fn tools(&self, peers: &Peers) -> Vec<Arc<dyn Tool>> {
        self(peers)
    }
}

/// What a model agent is given besides the gateway's other agents: tools
/// shared by every agent (an MCP server's, your own) and factories of
/// tools made for each agent from its own [`Peers`]. A [`ToolSet`] is one
/// without factories.
#[derive(Clone, Default)]
pub struct ModelTools {
    shared: ToolSet,
    per_agent: Vec<Arc<dyn PeerToolFactory>>,
}

impl std::fmt::Debug for ModelTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelTools")
            .field("shared", &self.shared)
            .field("per_agent", &self.per_agent.len())
            .finish()
    }
}

impl From<ToolSet> for ModelTools {
    fn from(shared: ToolSet) -> Self {
        ModelTools {
            shared,
            per_agent: Vec::new(),
        }
    }
}

impl ModelTools {
    /// `shared`, given to every agent.
    pub fn new(shared: ToolSet) -> ModelTools {
        ModelTools::from(shared)
    }

    /// Adds the tools `factory` makes for each agent from its own [`Peers`].
    #[must_use]
    pub fn per_agent(mut self, factory: impl PeerToolFactory) -> ModelTools {
        self.per_agent.push(Arc::new(factory));
        self
    }

    /// The tools of the agent whose handle is `peers`: the shared ones,
    /// then its own, then the gateway's other agents but those its own
    /// stand for (of two tools with one name the first wins, so an agent
    /// never hides a tool).
    fn for_agent(&self, peers: Peers, allowed: Option<Vec<String>>) -> ToolSet {
        let mut set = self.shared.clone();
        let mut hidden = Vec::new();
        for factory in &self.per_agent {
            for tool in factory.tools(&peers) {
                set = set.shared(tool);
            }
            hidden.extend(factory.stands_for());
        }
        set.provider(PeerTools::new(peers, allowed).hiding(hidden))
    }
}

/// Agent `name`: a model agent with `settings`, `card`, `tools` (an MCP
/// server's, the hub's, your own: they win over an agent of the same name;
/// a [`ToolSet`], or [`ModelTools`] for tools made for the agent from its
/// own [`Peers`]) and the gateway's other agents as its tools (those
/// `settings.tools` names, or all), its tool calls logged to `log` when
/// given.
pub fn definition_with(
    name: &str,
    card: AgentCard,
    settings: ModelSettings,
    tools: impl Into<ModelTools>,
    log: Option<ConversationLog>,
) -> AgentDefinition {
    let endpoint = format!("{} at {}", settings.model, settings.base_url);
    let agent_name = name.to_owned();
    let tools = tools.into();
    // The context's earlier tasks are in the agent's task store, which the
    // gateway makes with the agent's handler, after the agent.
    let store = ContextStore::new();
    let reads = store.clone();
    AgentDefinition::with_peers(name, card, move |peers| {
        let allowed = settings.tools.clone();
        let mut agent = ModelAgent::new(agent_name, settings)
            .tools(tools.for_agent(peers, allowed))
            .context_store_later(reads);
        if let Some(log) = log {
            agent = agent.conversation_log(log);
        }
        Arc::new(agent)
    })
    .kind(AgentKind::Model, endpoint)
    .on_handler(move |handler| {
        store.set(handler.task_store().clone());
    })
}

/// The model agent an entry of the configuration file describes
/// (`kind = "model"`), with `card`, `tools` (the file's MCP servers',
/// [`mcp_tools`]; the hub's, made per agent, in [`ModelTools`]) and the
/// gateway's other agents as its tools; `None` for another kind.
pub fn definition(
    agent: &AgentConfig,
    card: AgentCard,
    tools: impl Into<ModelTools>,
    log: Option<ConversationLog>,
) -> Option<AgentDefinition> {
    let AgentSource::Model { settings } = &agent.source else {
        return None;
    };
    Some(definition_with(
        &agent.name,
        card,
        (**settings).clone(),
        tools,
        log,
    ))
}
