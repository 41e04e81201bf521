//! A2A agents as MCP tools.
//!
//! [`AgentTools`] is an MCP server (an [`rmcp::ServerHandler`]) with one
//! tool per A2A agent. **One tool per agent, not per skill**: in A2A a
//! message goes to an agent, never to a skill (skills describe what the
//! agent does, and the agent alone decides how to answer), so tools per
//! skill would be several tools making the very same call. The skills go
//! into the tool's description instead, where a model reads them.
//!
//! A tool is named after its agent (a gateway's agent names are valid tool
//! names as they are; a card name is made one: `a2a echo agent` becomes
//! `a2a_echo_agent`), described by the card, and takes
//! `{ "message": string, "contextId"?: string, "taskId"?: string }`.
//!
//! A call is an A2A `SendMessage`: streamed (`SendStreamingMessage`) when
//! the card says the agent streams, and then every status message and
//! artifact chunk is a progress notification when the caller gave a
//! progress token. The result is the task's artifacts (text, data as JSON
//! text, images, links) and its last status message; its structured content
//! is `{ "taskId", "contextId", "state" }`. A task that ends
//! `input-required` (or `auth-required`) answers the agent's question and
//! says which `taskId` and `contextId` to call again with; `failed`,
//! `rejected` and `canceled` are tool errors (`isError`). A call the MCP
//! client cancels cancels the task.

use std::borrow::Cow;
use std::sync::Arc;

use a2a_client::{CallOptions, Client, ClientError, EventStream, Transport};
use a2a_core::operation::UnaryResponse;
use a2a_core::{
    AgentCard, AgentInterface, Artifact, CancelTaskRequest, GetTaskRequest, Message, PartContent,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState,
};
use a2a_server::{A2aService, Request, Response};
use async_trait::async_trait;
use futures::StreamExt as _;
use rmcp::model::{
    CallToolRequestParam, CallToolResult, Content, Implementation, ListToolsResult,
    PaginatedRequestParam, ProgressNotificationParam, ProgressToken, ServerCapabilities,
    ServerInfo, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

use crate::McpError;

/// How a tool reaches its agent.
#[derive(Clone)]
enum Route {
    /// A client made once (an agent across the network, say).
    Client(Client),
    /// A service in this process: each call carries the credentials of the
    /// MCP request that made it (see [`crate::http`]), so the agent sees the
    /// same caller, with the same tasks, as over its own bindings.
    Service(A2aService),
}

/// One A2A agent offered as an MCP tool.
#[derive(Clone)]
pub struct AgentTool {
    name: String,
    card: AgentCard,
    route: Route,
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name)
            .field("agent", &self.card.name)
            .finish_non_exhaustive()
    }
}

impl AgentTool {
    /// The agent `client` talks to (its card must be known: a client made
    /// from a card or by [`Client::connect`]), as the tool `name` (made a
    /// valid tool name).
    pub fn client(name: &str, client: Client) -> Result<AgentTool, McpError> {
        let card = client
            .card()
            .cloned()
            .ok_or_else(|| McpError::Config(format!("the client of {name:?} has no card")))?;
        Ok(AgentTool {
            name: tool_name(name),
            card,
            route: Route::Client(client),
        })
    }

    /// The agent `service` serves in this process, as the tool `name`. Its
    /// calls carry the MCP request's credentials (over HTTP) or none (over
    /// stdio), and are authenticated by the service as any call is.
    pub fn service(name: &str, service: A2aService) -> AgentTool {
        AgentTool {
            name: tool_name(name),
            card: service.card().clone(),
            route: Route::Service(service),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The MCP tool: name, description from the card, input schema.
    pub fn tool(&self) -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {
                "message": { "type": "string", "description": "What to say to the agent." },
                "contextId": {
                    "type": "string",
                    "description": "Continue this conversation (the contextId of an earlier answer)."
                },
                "taskId": {
                    "type": "string",
                    "description": "Answer this task's question (the taskId of an answer that asked for input)."
                }
            },
            "required": ["message"],
            "additionalProperties": false
        });
        let Value::Object(schema) = schema else {
            unreachable!("a JSON object literal")
        };
        Tool {
            name: Cow::Owned(self.name.clone()),
            title: Some(self.card.name.clone()),
            description: Some(Cow::Owned(description(&self.card))),
            input_schema: Arc::new(schema),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// The client of one call: an in-process agent's carries `caller`'s
    /// credentials.
    fn client_for(&self, caller: Option<&http::request::Parts>) -> Client {
        match &self.route {
            Route::Client(client) => client.clone(),
            Route::Service(service) => {
                let interface = self
                    .card
                    .supported_interfaces
                    .first()
                    .cloned()
                    .unwrap_or_else(AgentInterface::default);
                let transport = Forwarding {
                    service: service.clone(),
                    headers: caller.map(forwarded_headers).unwrap_or_default(),
                    query: caller.and_then(|p| p.uri.query().map(str::to_owned)),
                };
                Client::from_transport(transport, interface)
            }
        }
    }
}

/// The longest description a tool gets from a card (bytes): a card is the
/// agent's to write, the tool list the model's to read.
const MAX_DESCRIPTION: usize = 4096;

/// The tool's description: the card's, and its skills.
fn description(card: &AgentCard) -> String {
    let mut text = match card.description.trim() {
        "" => format!("Send a message to the A2A agent {:?}.", card.name),
        d => d.to_owned(),
    };
    if !card.skills.is_empty() {
        text.push_str("\n\nSkills:");
        for skill in &card.skills {
            text.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
    }
    if text.len() > MAX_DESCRIPTION {
        let mut end = MAX_DESCRIPTION;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// `name` as an MCP tool name: 1 to 64 of letters, digits, `_`, `-` and
/// `.` (what every MCP client accepts), other characters made `_`.
pub fn tool_name(name: &str) -> String {
    let mut out: String = name
        .trim()
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                true => c,
                false => '_',
            },
        )
        .take(64)
        .collect();
    if out.is_empty() {
        out.push_str("agent");
    }
    out
}

/// The headers of an MCP request that an in-process call carries: its
/// credentials and anything else the agent's authentication may read (an
/// API key's header is the operator's choice), not the ones about the MCP
/// request's own body and session.
fn forwarded_headers(parts: &http::request::Parts) -> http::HeaderMap {
    use http::header;
    let mut headers = parts.headers.clone();
    for name in [
        header::CONTENT_LENGTH,
        header::CONTENT_TYPE,
        header::ACCEPT,
        header::ACCEPT_ENCODING,
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::HOST,
    ] {
        headers.remove(name);
    }
    headers.remove("mcp-session-id");
    headers.remove("mcp-protocol-version");
    headers.remove("last-event-id");
    headers
}

/// A transport handing calls to a service in this process, with the
/// credentials of the MCP request that made them.
struct Forwarding {
    service: A2aService,
    headers: http::HeaderMap,
    query: Option<String>,
}

impl Forwarding {
    async fn run(&self, request: Request, options: &CallOptions) -> Result<Response, ClientError> {
        let mut ctx = a2a_server::http::call_context(
            request.method(),
            self.headers.clone(),
            self.query.as_deref(),
        )
        .with_binding(a2a_server::telemetry::binding::IN_PROCESS);
        for (key, value) in options.service_params() {
            // The caller's credentials are the MCP request's to say.
            if !key.eq_ignore_ascii_case("authorization") {
                let _ = ctx.service_params.append(&key, &value);
            }
        }
        Ok(self.service.call(&mut ctx, request).await?)
    }
}

#[async_trait]
impl Transport for Forwarding {
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        if request.method().is_streaming() {
            return Err(a2a_client::wrong_way(&request));
        }
        let method = request.method();
        self.run(request, options).await?.into_unary().map_err(|_| {
            ClientError::from(a2a_core::A2aError::internal(format!(
                "the agent answered {method} with a stream"
            )))
        })
    }

    async fn stream(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        if !request.method().is_streaming() {
            return Err(a2a_client::wrong_way(&request));
        }
        let method = request.method();
        match self.run(request, options).await? {
            Response::Stream(events) => Ok(Box::pin(events.map(|e| e.map_err(ClientError::from)))),
            _ => Err(ClientError::from(a2a_core::A2aError::internal(format!(
                "the agent answered {method} without a stream"
            )))),
        }
    }
}

/// An MCP server whose tools are A2A agents. Cheap to clone.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use a2a_mcp::{AgentTool, AgentTools};
/// let client = a2a_client::Client::connect("http://127.0.0.1:9999").await?;
/// let tools = AgentTools::new(vec![AgentTool::client("echo", client)?]);
/// tools.serve_stdio().await?; // until stdin closes
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AgentTools {
    agents: Arc<[AgentTool]>,
}

impl AgentTools {
    /// The server of `agents`; a name two agents would share gets a
    /// suffix on the second (`_2`, `_3`...).
    pub fn new(agents: Vec<AgentTool>) -> AgentTools {
        let mut seen = std::collections::HashSet::new();
        let agents: Vec<AgentTool> = agents
            .into_iter()
            .map(|mut agent| {
                let base = agent.name.clone();
                let mut n = 1;
                while !seen.insert(agent.name.clone()) {
                    n += 1;
                    agent.name = format!("{}_{n}", base.chars().take(60).collect::<String>());
                }
                agent
            })
            .collect();
        AgentTools {
            agents: agents.into(),
        }
    }

    /// The agents, as tools.
    pub fn agents(&self) -> &[AgentTool] {
        &self.agents
    }

    /// Serves MCP on this process's standard input and output until the
    /// client closes them.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|err| McpError::Connect(err.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|err| McpError::Protocol(err.to_string()))?;
        Ok(())
    }

    /// Calls the agent of tool `name` with `args`.
    async fn call(
        &self,
        name: &str,
        args: ToolArgs,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(agent) = self.agents.iter().find(|a| a.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named {name:?}"),
                None,
            ));
        };
        let caller = context.extensions.get::<http::request::Parts>();
        let client = agent.client_for(caller);
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| Progress::new(context.peer.clone(), token));
        let streams = agent.card.capabilities.streaming == Some(true);
        let made = Arc::new(std::sync::Mutex::new(None::<String>));
        let call = call_agent(&client, streams, &args, progress, made.clone());
        tokio::select! {
            outcome = call => Ok(outcome),
            () = context.ct.cancelled() => {
                // The MCP client gave up: so does the agent, once it made a task.
                let id = made.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(id) = id {
                    cancel(&client, id).await;
                }
                Err(ErrorData::internal_error("the call was canceled", None))
            }
        }
    }
}

/// What a tool call takes.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolArgs {
    message: String,
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default)]
    task_id: Option<String>,
}

/// Progress notifications of one call.
struct Progress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    count: u32,
}

impl Progress {
    fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Progress {
        Progress {
            peer,
            token,
            count: 0,
        }
    }

    /// One more step, said by `message`.
    async fn step(&mut self, message: String) {
        self.count += 1;
        let param = ProgressNotificationParam {
            progress_token: self.token.clone(),
            progress: f64::from(self.count),
            total: None,
            message: Some(clip(message, 1000)),
        };
        // A client gone is the call's own end; nothing to say here.
        let _ = self.peer.notify_progress(param).await;
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn clip(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Sends `args` to the agent and turns the outcome into a tool result.
async fn call_agent(
    client: &Client,
    streams: bool,
    args: &ToolArgs,
    progress: Option<Progress>,
    made: TaskSlot,
) -> CallToolResult {
    let mut message = Message::user_text(args.message.clone()).with_message_id(a2a_core::new_id());
    if let Some(context) = args.context_id.as_deref().filter(|c| !c.is_empty()) {
        message = message.with_context_id(context);
    }
    if let Some(task) = args.task_id.as_deref().filter(|t| !t.is_empty()) {
        message = message.with_task_id(task);
    }
    let request = SendMessageRequest::new(message);
    let outcome = match streams {
        true => send_streaming(client, request, progress, &made).await,
        false => client.send_message(request, None).await,
    };
    match outcome {
        Ok(SendMessageResponse::Task(task)) => task_result(&task),
        Ok(SendMessageResponse::Message(message)) => {
            let mut content = parts_content(&message.parts);
            if content.is_empty() {
                content.push(Content::text(""));
            }
            let mut result = CallToolResult::success(content);
            if !message.context_id.is_empty() {
                result.structured_content = Some(json!({ "contextId": message.context_id }));
            }
            result
        }
        Err(err) => CallToolResult::error(vec![Content::text(format!(
            "the agent could not be called: {err}"
        ))]),
    }
}

/// A streamed send: progress on the way, the task as it ended (read again
/// once the stream ends, so that its artifacts are whole).
async fn send_streaming(
    client: &Client,
    request: SendMessageRequest,
    mut progress: Option<Progress>,
    made: &TaskSlot,
) -> Result<SendMessageResponse, ClientError> {
    let mut events = client.send_streaming_message(request, None).await?;
    let mut task: Option<Task> = None;
    while let Some(event) = events.next().await {
        let event = event?;
        if task.is_none() && !event.task_id().is_empty() {
            *made.lock().unwrap_or_else(|e| e.into_inner()) = Some(event.task_id().to_owned());
        }
        match event {
            StreamResponse::Message(message) => return Ok(SendMessageResponse::Message(message)),
            StreamResponse::Task(snapshot) => task = Some(snapshot),
            StreamResponse::StatusUpdate(update) => {
                let said = update.status.message.as_ref().map(|m| m.text());
                if let (Some(progress), Some(said)) = (progress.as_mut(), said) {
                    if !said.is_empty() {
                        progress.step(said).await;
                    }
                }
                let task = task.get_or_insert_with(|| {
                    Task::new(&update.task_id, &update.context_id, update.status.state)
                });
                task.status = update.status;
            }
            StreamResponse::ArtifactUpdate(update) => {
                if let Some(progress) = progress.as_mut() {
                    let text = artifact_text(&update.artifact);
                    let said = match text.is_empty() {
                        true => format!("artifact {}", update.artifact.name),
                        false => text,
                    };
                    progress.step(said).await;
                }
                let task = task.get_or_insert_with(|| {
                    Task::new(&update.task_id, &update.context_id, TaskState::Working)
                });
                merge_artifact(task, update.artifact, update.append);
            }
        }
    }
    let Some(task) = task else {
        return Err(ClientError::from(a2a_core::A2aError::internal(
            "the agent's stream ended without a task or a message",
        )));
    };
    // The stored task is the whole answer; what the stream gave is the
    // fallback when it cannot be read.
    let stored = client
        .get_task(
            GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
            None,
        )
        .await;
    Ok(SendMessageResponse::Task(match stored {
        Ok(stored) if stored.status.state == task.status.state => stored,
        _ => task,
    }))
}

/// Adds a streamed artifact chunk to `task`.
fn merge_artifact(task: &mut Task, artifact: Artifact, append: bool) {
    match task
        .artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => existing.parts.extend(artifact.parts),
        Some(existing) => *existing = artifact,
        None => task.artifacts.push(artifact),
    }
}

/// The text parts of an artifact, joined.
fn artifact_text(artifact: &Artifact) -> String {
    artifact
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect::<Vec<_>>()
        .concat()
}

/// MCP content for A2A parts: consecutive text parts joined into one text.
fn parts_content(parts: &[a2a_core::Part]) -> Vec<Content> {
    use base64::Engine as _;
    let mut content = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, content: &mut Vec<Content>| {
        if !text.is_empty() {
            content.push(Content::text(std::mem::take(text)));
        }
    };
    for part in parts {
        match &part.content {
            PartContent::Text(t) => text.push_str(t),
            PartContent::Data(value) => {
                flush(&mut text, &mut content);
                content.push(Content::text(value.to_string()));
            }
            PartContent::Url(url) => {
                flush(&mut text, &mut content);
                let name = match part.filename.is_empty() {
                    true => url.clone(),
                    false => part.filename.clone(),
                };
                let mut link = rmcp::model::RawResource::new(url.clone(), name);
                if !part.media_type.is_empty() {
                    link.mime_type = Some(part.media_type.clone());
                }
                content.push(Content::resource_link(link));
            }
            PartContent::Raw(bytes) => {
                flush(&mut text, &mut content);
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                if part.media_type.starts_with("image/") {
                    content.push(Content::image(data, part.media_type.clone()));
                } else {
                    let mime = match part.media_type.is_empty() {
                        true => "application/octet-stream".to_owned(),
                        false => part.media_type.clone(),
                    };
                    let name = match part.filename.is_empty() {
                        true => "attachment".to_owned(),
                        false => part.filename.clone(),
                    };
                    content.push(Content::resource(
                        rmcp::model::ResourceContents::BlobResourceContents {
                            uri: format!("a2a:part/{name}"),
                            mime_type: Some(mime),
                            blob: data,
                            meta: None,
                        },
                    ));
                }
            }
        }
    }
    flush(&mut text, &mut content);
    content
}

/// The state as MCP results say it (`completed`, `input-required`...).
fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Unspecified => "unspecified",
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::InputRequired => "input-required",
        TaskState::Rejected => "rejected",
        TaskState::AuthRequired => "auth-required",
    }
}

/// The tool result of a task as it ended (or as far as it got).
fn task_result(task: &Task) -> CallToolResult {
    let state = task.status.state;
    let said = task
        .status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default();
    let mut content = Vec::new();
    for artifact in &task.artifacts {
        content.extend(parts_content(&artifact.parts));
    }
    let ids = format!("taskId {:?}, contextId {:?}", task.id, task.context_id);
    match state {
        TaskState::InputRequired | TaskState::AuthRequired => {
            let question = match said.is_empty() {
                true => "The agent needs more input.".to_owned(),
                false => said,
            };
            content.push(Content::text(question));
            content.push(Content::text(format!(
                "The task waits for an answer ({}): call this tool again with the answer as \
                 `message` and {ids}.",
                state_name(state)
            )));
        }
        TaskState::Completed => {
            if !said.is_empty() {
                content.push(Content::text(said));
            }
        }
        TaskState::Failed | TaskState::Rejected | TaskState::Canceled => {
            let why = match said.is_empty() {
                true => format!("The task ended {}.", state_name(state)),
                false => format!("The task ended {}: {said}", state_name(state)),
            };
            content.push(Content::text(why));
        }
        TaskState::Submitted | TaskState::Working | TaskState::Unspecified => {
            content.push(Content::text(format!(
                "The task is still {} ({ids}); its answer is not in yet.",
                state_name(state)
            )));
        }
    }
    if content.is_empty() {
        content.push(Content::text(""));
    }
    let mut result = match state {
        TaskState::Failed | TaskState::Rejected | TaskState::Canceled => {
            CallToolResult::error(content)
        }
        _ => CallToolResult::success(content),
    };
    result.structured_content = Some(json!({
        "taskId": task.id,
        "contextId": task.context_id,
        "state": state_name(state),
    }));
    result
}

impl ServerHandler for AgentTools {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            server_info: Implementation {
                name: "a2a-mcp".to_owned(),
                title: Some("A2A agents".to_owned()),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                icons: None,
                website_url: None,
            },
            instructions: Some(
                "Each tool is an A2A agent: call it with a message. An answer that asks for \
                 input names the taskId and contextId to call again with."
                    .to_owned(),
            ),
            ..ServerInfo::default()
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.agents.iter().map(AgentTool::tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParam,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let args: ToolArgs = serde_json::from_value(arguments).map_err(|err| {
            ErrorData::invalid_params(format!("arguments of {:?}: {err}", request.name), None)
        })?;
        self.call(&request.name, args, context).await
    }
}

/// Where a call says which task the agent made, for its cancellation.
type TaskSlot = Arc<std::sync::Mutex<Option<String>>>;

/// Cancels task `id` at the agent, for a call whose caller left.
async fn cancel(client: &Client, id: String) {
    let _ = client
        .cancel_task(
            CancelTaskRequest {
                id,
                ..Default::default()
            },
            None,
        )
        .await;
}
