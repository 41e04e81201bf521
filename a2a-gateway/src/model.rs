//! Hosting a model agent (`kind = "model"`, `a2a-model`): a
//! [`ModelAgent`] whose tools are the gateway's other agents, each called
//! through [`Peers`] (so in the pair's conversation when the gateway runs
//! the conversation index), and the tools of the file's MCP servers
//! ([`mcp_tools`]).

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
}

impl PeerTools {
    /// The agents `peers` reaches, but its own caller, narrowed to
    /// `allowed` when given.
    pub fn new(peers: Peers, allowed: Option<Vec<String>>) -> PeerTools {
        PeerTools { peers, allowed }
    }
}

impl ToolProvider for PeerTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.peers
            .names()
            .into_iter()
            .filter(|name| name != self.peers.caller())
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

/// Agent `name`: a model agent with `settings`, `card`, `tools` (an MCP
/// server's, the hub's, your own: they win over an agent of the same name)
/// and the gateway's other agents as its tools (those `settings.tools`
/// names, or all), its tool calls logged to `log` when given.
pub fn definition_with(
    name: &str,
    card: AgentCard,
    settings: ModelSettings,
    tools: ToolSet,
    log: Option<ConversationLog>,
) -> AgentDefinition {
    let endpoint = format!("{} at {}", settings.model, settings.base_url);
    let agent_name = name.to_owned();
    // The context's earlier tasks are in the agent's task store, which the
    // gateway makes with the agent's handler, after the agent.
    let store = ContextStore::new();
    let reads = store.clone();
    AgentDefinition::with_peers(name, card, move |peers| {
        let allowed = settings.tools.clone();
        let mut agent = ModelAgent::new(agent_name, settings)
            .tools(tools.provider(PeerTools::new(peers, allowed)))
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
/// [`mcp_tools`]) and the gateway's other agents as its tools; `None` for
/// another kind.
pub fn definition(
    agent: &AgentConfig,
    card: AgentCard,
    tools: ToolSet,
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
