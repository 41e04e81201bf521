//! Tools a model agent offers its model: the [`Tool`] trait (object safe,
//! async), the [`ToolSet`] of an agent, and [`AgentTool`], another A2A
//! agent called with a message.
//!
//! A tool of any origin (a gateway's other agents, an MCP server's tools, a
//! function of your own) is an `Arc<dyn Tool>`; a [`ToolProvider`] gives a
//! list of them that is read again for every execution (for sets that
//! change, or are only known once a gateway is built).

use std::sync::Arc;

use a2a_core::{Message, SendMessageRequest, SendMessageResponse, TaskState};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What a tool is, for the model: its name (letters, digits, `_` and `-`,
/// at most 64), what it does, and its parameters as a JSON Schema object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name, unique in a set.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its parameters (a JSON Schema of an object).
    pub parameters: Value,
}

/// What a tool's call knows of the execution it runs for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The agent calling.
    pub agent: String,
    /// The task the model works on.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The tool call's id (as the model named it).
    pub call_id: String,
    /// The conversation log line of this call, when the agent logs: a tool
    /// that sends a message onward can chain its request after it.
    pub log_line: Option<String>,
    /// Fires when the task is canceled: a long call should stop.
    pub cancellation: CancellationToken,
}

impl ToolContext {
    /// A context for call `call_id` of `agent` on `task_id` in `context_id`.
    pub fn new(
        agent: impl Into<String>,
        task_id: impl Into<String>,
        context_id: impl Into<String>,
        call_id: impl Into<String>,
    ) -> ToolContext {
        ToolContext {
            agent: agent.into(),
            task_id: task_id.into(),
            context_id: context_id.into(),
            call_id: call_id.into(),
            log_line: None,
            cancellation: CancellationToken::new(),
        }
    }
}

/// What a tool answered: text, or a JSON value (given to the model as its
/// JSON text).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// Text.
    Text(String),
    /// A JSON value.
    Json(Value),
}

impl ToolOutput {
    /// The output as the model reads it.
    pub fn into_content(self) -> String {
        match self {
            ToolOutput::Text(text) => text,
            ToolOutput::Json(value) => value.to_string(),
        }
    }
}

/// Why a tool call failed; the model is told, and may try otherwise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError(message.into())
    }
}

/// A tool the model may call.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Its name, description and parameters.
    fn spec(&self) -> ToolSpec;

    /// Runs the call with the model's `args` (a JSON object; `{}` when the
    /// model sent none or sent something that is not JSON).
    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// A list of tools read anew for every execution.
pub trait ToolProvider: Send + Sync + 'static {
    /// The tools now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// The tools of a model agent: fixed ones and providers. Cheap to clone.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
    providers: Vec<Arc<dyn ToolProvider>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.tools.iter().map(|t| t.spec().name).collect();
        f.debug_struct("ToolSet")
            .field("tools", &names)
            .field("providers", &self.providers.len())
            .finish()
    }
}

impl ToolSet {
    /// No tools.
    pub fn new() -> ToolSet {
        ToolSet::default()
    }

    /// Adds `tool`.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool) -> ToolSet {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    #[must_use]
    pub fn shared(mut self, tool: Arc<dyn Tool>) -> ToolSet {
        self.tools.push(tool);
        self
    }

    /// Adds the tools `provider` lists at each execution.
    #[must_use]
    pub fn provider(mut self, provider: impl ToolProvider) -> ToolSet {
        self.providers.push(Arc::new(provider));
        self
    }

    /// Every tool now, fixed ones first; of two with one name the first
    /// wins.
    pub fn resolve(&self) -> Vec<(ToolSpec, Arc<dyn Tool>)> {
        let mut out: Vec<(ToolSpec, Arc<dyn Tool>)> = Vec::new();
        let all = self
            .tools
            .iter()
            .cloned()
            .chain(self.providers.iter().flat_map(|p| p.tools()));
        for tool in all {
            let spec = tool.spec();
            if !out.iter().any(|(s, _)| s.name == spec.name) {
                out.push((spec, tool));
            }
        }
        out
    }
}

/// Another A2A agent as a tool: the model gives a message, the agent's
/// answer (its reply, or its task's final message and text artifacts) is
/// the result.
///
/// The message names no `contextId`: in a gateway that runs the
/// conversation index, a call from one agent to another continues the
/// pair's conversation on its own.
#[derive(Debug, Clone)]
pub struct AgentTool {
    name: String,
    description: String,
    client: a2a_client::Client,
}

impl AgentTool {
    /// Agent `name` (the tool's name), described by `description`, reached
    /// through `client`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        client: a2a_client::Client,
    ) -> AgentTool {
        AgentTool {
            name: name.into(),
            description: description.into(),
            client,
        }
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn spec(&self) -> ToolSpec {
        let what = match self.description.trim() {
            "" => String::new(),
            description => format!(": {description}"),
        };
        ToolSpec {
            name: self.name.clone(),
            description: format!(
                "Send a message to the agent {:?}{what}. Returns its answer.",
                self.name
            ),
            parameters: json!({
                "type": "object",
                "properties": { "message": { "type": "string", "description": "What to tell or ask the agent." } },
                "required": ["message"],
            }),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = match args.get("message") {
            Some(Value::String(text)) => text.clone(),
            _ => return Err(ToolError::new("give the agent a `message` (a string)")),
        };
        let mut message = Message::user_text(text);
        if let Some(line) = &ctx.log_line {
            // The callee's log chains its request after this tool call.
            message
                .metadata
                .get_or_insert_with(Default::default)
                .insert(
                    a2a_conversation::metadata_keys::LOG_PARENT.to_owned(),
                    line.clone().into(),
                );
        }
        let answer = tokio::select! {
            answer = self.client.send_message(SendMessageRequest::new(message), None) => answer,
            () = ctx.cancellation.cancelled() => return Err(ToolError::new("canceled")),
        };
        let answer =
            answer.map_err(|err| ToolError::new(format!("agent {} failed: {err}", self.name)))?;
        Ok(ToolOutput::Text(answer_text(&answer)))
    }
}

/// What an agent answered, as text: a reply's text; a task's text
/// artifacts and final message, with its state unless it completed.
pub fn answer_text(answer: &SendMessageResponse) -> String {
    match answer {
        SendMessageResponse::Message(message) => message.text(),
        SendMessageResponse::Task(task) => {
            let mut parts: Vec<String> = task
                .artifacts
                .iter()
                .flat_map(|a| {
                    a.parts
                        .iter()
                        .filter_map(|p| p.as_text().map(str::to_owned))
                })
                .collect();
            if let Some(message) = &task.status.message {
                let text = message.text();
                if !parts.contains(&text) {
                    parts.push(text);
                }
            }
            let text = parts.join("\n");
            match task.status.state {
                TaskState::Completed => text,
                state => format!("[the task is {state}] {text}"),
            }
        }
    }
}
