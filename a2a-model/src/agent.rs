//! [`ModelAgent`]: an [`AgentExecutor`] whose answers come from a chat
//! completions endpoint.
//!
//! One execution is a loop: send the chat (the system prompt, the earlier
//! messages within the budget, this task's messages and what the model
//! and its tools said so far this execution), and either the model answers
//! (the task completes with the answer as its `answer` artifact and its
//! final message) or it calls tools (each is run, its result added, and
//! the chat sent again). The `ask_user` tool ends the turn
//! `INPUT_REQUIRED` with the model's question; the next message on the task
//! runs a new execution, whose history holds the question and the answer.
//! The question's message keeps what the model and its tools said in the
//! execution that asked (in its metadata, [`EXCHANGE_KEY`]), so the
//! execution that continues gives the model its own tool calls and their
//! results again, in the order the API wants them: the assistant's calls,
//! then a result for each (the question's says the user's reply follows),
//! then the reply.
//!
//! Every finished model turn and every finished tool call is stored as a
//! checkpoint (the chat so far, in the checkpoint's state) with a `WORKING`
//! status event. A resumed execution starts from the checkpoint: it never
//! asks the model again for a stored turn, nor runs again a tool call whose
//! result is stored. (A call that was running when the server stopped ran
//! no further than the process: it is run again.)

use std::sync::{Arc, OnceLock};

use a2a_conversation::{ChainTip, ConversationLog, EntryType, LogEntry};
use a2a_core::{
    A2aError, Artifact, ListTasksRequest, Message, Metadata, Method, Role, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::store::{Checkpoint, TaskStore};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::{Ask, ChatClient, ChatMessage, FunctionDefinition, Sleep, ToolDefinition, Usage};
use crate::config::ModelSettings;
use crate::tool::{Tool, ToolContext, ToolSet, ToolSpec};

/// The id of the artifact the answer goes to.
pub const ANSWER_ARTIFACT: &str = "answer";
/// The tool with which the model asks the user something.
pub const ASK_USER: &str = "ask_user";
/// The task metadata key of the tokens the task used
/// (`{"promptTokens", "completionTokens", "totalTokens"}`).
pub const USAGE_KEY: &str = "a2aModelUsage";
/// The metadata key of a question's message (the `INPUT_REQUIRED` status
/// message) holding what the model and its tools said in the execution
/// that asked: its chat messages after the user's, as the API takes them.
pub const EXCHANGE_KEY: &str = "a2aModelExchange";
/// What the `ask_user` call is answered with in a continued chat: the
/// reply itself follows as the user's message.
const ASKED: &str = "The question was put to the user; their reply is the next message.";

/// Where a [`ModelAgent`] reads the context's earlier tasks: a task store
/// that may be set after the agent is made (a gateway builds an agent's
/// handler, and so its task store, after the agent). Cheap to clone: the
/// clones share the store.
#[derive(Clone, Default)]
pub struct ContextStore(Arc<OnceLock<Arc<dyn TaskStore>>>);

impl std::fmt::Debug for ContextStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextStore")
            .field("set", &self.0.get().is_some())
            .finish()
    }
}

impl ContextStore {
    /// None yet: until [`set`](Self::set), the agent reads no earlier tasks.
    pub fn new() -> ContextStore {
        ContextStore::default()
    }

    /// Reads from `store` from now on; `false` (and nothing changes) when a
    /// store was set already.
    pub fn set(&self, store: Arc<dyn TaskStore>) -> bool {
        self.0.set(store).is_ok()
    }

    /// The store, once set.
    pub fn get(&self) -> Option<&Arc<dyn TaskStore>> {
        self.0.get()
    }
}

/// An agent backed by an OpenAI-compatible chat completions endpoint. See
/// the [module](self).
#[derive(Clone)]
pub struct ModelAgent {
    name: String,
    client: ChatClient,
    tools: ToolSet,
    log: Option<ConversationLog>,
    store: ContextStore,
}

impl std::fmt::Debug for ModelAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAgent")
            .field("name", &self.name)
            .field("client", &self.client)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

/// What an execution keeps in its checkpoints: the chat so far.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Transcript {
    messages: Vec<ChatMessage>,
    /// Tokens used by this execution's model turns.
    usage: Usage,
    /// Model turns taken by this execution.
    turns: u32,
    /// Checkpoints stored (the checkpoint's turn number).
    step: u64,
}

impl Transcript {
    /// What the model and its tools said in this execution: the messages
    /// after the last user message (the one the execution answers).
    fn exchange(&self) -> &[ChatMessage] {
        let from = self
            .messages
            .iter()
            .rposition(|m| m.role == "user")
            .map_or(0, |at| at + 1);
        &self.messages[from..]
    }

    /// The calls of the last assistant message that have no result yet.
    fn pending_calls(&self) -> Vec<crate::api::ToolCall> {
        let Some(at) = self.messages.iter().rposition(|m| m.role == "assistant") else {
            return Vec::new();
        };
        let answered: Vec<&str> = self.messages[at + 1..]
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        self.messages[at]
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .cloned()
            .collect()
    }
}

impl ModelAgent {
    /// Agent `name` (as logs and tool calls name it) with `settings`.
    pub fn new(name: impl Into<String>, settings: ModelSettings) -> ModelAgent {
        ModelAgent {
            name: name.into(),
            client: ChatClient::new(Arc::new(settings)),
            tools: ToolSet::new(),
            log: None,
            store: ContextStore::new(),
        }
    }

    /// The tools the model may call (besides `ask_user`).
    #[must_use]
    pub fn tools(mut self, tools: ToolSet) -> ModelAgent {
        self.tools = tools;
        self
    }

    /// Logs tool calls and results to `log`, in the exchange's chain (the
    /// [`ChainTip`] the log's recorder leaves in the context).
    #[must_use]
    pub fn conversation_log(mut self, log: ConversationLog) -> ModelAgent {
        self.log = Some(log);
        self
    }

    /// Reads the context's earlier tasks from `store` (the agent's own task
    /// store), so that a new task in a conversation sees what was said
    /// before, within the history budget.
    #[must_use]
    pub fn context_store(self, store: Arc<dyn TaskStore>) -> ModelAgent {
        let slot = ContextStore::new();
        slot.set(store);
        self.context_store_later(slot)
    }

    /// [`context_store`](Self::context_store) with a store set later (once
    /// the agent's handler, which owns it, is built): until then the agent
    /// reads no earlier tasks.
    #[must_use]
    pub fn context_store_later(mut self, store: ContextStore) -> ModelAgent {
        self.store = store;
        self
    }

    /// Waits between retries with `sleep` (tests record the waits).
    #[must_use]
    pub fn with_sleep(mut self, sleep: Sleep) -> ModelAgent {
        self.client = self.client.with_sleep(sleep);
        self
    }

    /// The settings.
    pub fn settings(&self) -> &ModelSettings {
        self.client.settings()
    }

    /// The chat a new execution starts from: the system prompt, then the
    /// earlier messages (the context's earlier tasks, then this task's),
    /// newest kept within the budget, and the message itself.
    async fn opening(&self, ctx: &RequestContext) -> Vec<ChatMessage> {
        // Shared with the tasks they were read from: nothing is copied.
        let mut earlier: Vec<std::sync::Arc<Message>> = Vec::new();
        if let Some(store) = self.store.get() {
            let request = ListTasksRequest {
                context_id: ctx.context_id.clone(),
                page_size: Some(20),
                ..ListTasksRequest::default()
            };
            match store.list(&ctx.call.caller(), &request).await {
                Ok(listed) => {
                    // Newest first: the budget keeps the newest anyway, so
                    // read them oldest first.
                    for task in listed.tasks.iter().rev().filter(|t| t.id != ctx.task_id) {
                        earlier.extend(task.history.iter().cloned());
                        earlier.extend(task.status.message.iter().cloned());
                    }
                }
                Err(err) => {
                    tracing::debug!(error = %err, "the context's earlier tasks could not be read");
                }
            }
        }
        if let Some(task) = &ctx.stored_task {
            earlier.extend(task.history.iter().cloned());
            earlier.extend(task.status.message.iter().cloned());
        }
        let mut seen = std::collections::HashSet::new();
        earlier.retain(|m| {
            m.message_id != ctx.message.message_id
                && (m.message_id.is_empty() || seen.insert(m.message_id.clone()))
        });
        let settings = self.settings();
        // Newest first, whole blocks: a question's exchange is kept or
        // dropped as one (a tool result without its call is refused).
        let mut kept: Vec<Vec<ChatMessage>> = Vec::new();
        let (mut count, mut chars) = (0usize, 0usize);
        let char_budget = settings.max_history_tokens.map(|t| t.saturating_mul(4));
        for block in chat_blocks(&earlier).into_iter().rev() {
            count += block.len();
            if count > settings.max_history_messages {
                break;
            }
            chars += block.iter().map(|m| m.content_str().len()).sum::<usize>();
            if char_budget.is_some_and(|budget| chars > budget) {
                break;
            }
            kept.push(block);
        }
        let kept: Vec<ChatMessage> = kept.into_iter().rev().flatten().collect();
        let mut messages = Vec::with_capacity(kept.len() + 2);
        if let Some(system) = &settings.system {
            messages.push(ChatMessage::text("system", system.clone()));
        }
        messages.extend(kept);
        messages.push(
            chat_message(&ctx.message).unwrap_or_else(|| ChatMessage::text("user", String::new())),
        );
        messages
    }

    /// Stores the transcript as the next checkpoint, with a `WORKING`
    /// status carrying the usage so far.
    async fn checkpoint(
        &self,
        events: &EventQueue,
        transcript: &mut Transcript,
        usage: &Metadata,
    ) -> Result<(), A2aError> {
        transcript.step += 1;
        let state = serde_json::to_vec(transcript)
            .map_err(|err| A2aError::internal(format!("checkpoint: {err}")))?;
        let event = TaskStatusUpdateEvent {
            task_id: events.task_id().to_owned(),
            context_id: events.context_id().to_owned(),
            status: TaskStatus::new(TaskState::Working),
            metadata: Some(usage.clone()),
        };
        events
            .send_checkpointed(event, Checkpoint::new(transcript.step, state))
            .await
    }

    /// Logs a line of this execution, chained after the tip; its id.
    async fn log(
        &self,
        tip: Option<&ChainTip>,
        kind: EntryType,
        (from, to): (&str, &str),
        content: Value,
        ctx: &RequestContext,
        call_id: &str,
    ) -> Option<String> {
        let log = self.log.as_ref()?;
        let entry = LogEntry::new(log.now(), kind, from, Some(to.to_owned()), content)
            .parent(tip.and_then(ChainTip::get))
            .meta("taskId", ctx.task_id.as_str())
            .meta("contextId", ctx.context_id.as_str())
            .meta("toolCallId", call_id);
        match log.append(entry).await {
            Ok(id) => {
                if let Some(tip) = tip {
                    tip.set(id.clone());
                }
                Some(id)
            }
            Err(err) => {
                tracing::debug!(error = %err, "a tool line was not logged");
                None
            }
        }
    }

    /// Runs one tool call; its result text (an error is told the model too).
    async fn run_tool(
        &self,
        call: &crate::api::ToolCall,
        tools: &[(ToolSpec, Arc<dyn Tool>)],
        ctx: &RequestContext,
        tip: Option<&ChainTip>,
    ) -> String {
        let args: Value = serde_json::from_str(&call.function.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let name = call.function.name.as_str();
        let line = self
            .log(
                tip,
                EntryType::Request,
                (&self.name, name),
                json!({ "tool": name, "arguments": args }),
                ctx,
                &call.id,
            )
            .await;
        let mut tool_ctx = ToolContext::new(&self.name, &ctx.task_id, &ctx.context_id, &call.id);
        tool_ctx.log_line = line;
        tool_ctx.cancellation = ctx.cancellation.clone();
        let result = match tools.iter().find(|(spec, _)| spec.name == name) {
            None => format!("error: there is no tool named {name:?}"),
            Some((_, tool)) => match tool.call(args, &tool_ctx).await {
                Ok(output) => output.into_content(),
                Err(err) => format!("error: {err}"),
            },
        };
        tracing::debug!(agent = %self.name, tool = name, "tool call finished");
        self.log(
            tip,
            EntryType::Response,
            (name, &self.name),
            Value::String(result.clone()),
            ctx,
            &call.id,
        )
        .await;
        result
    }
}

/// An A2A message as a chat message; none when it has no text.
fn chat_message(message: &Message) -> Option<ChatMessage> {
    let role = match message.role {
        Role::Agent => "assistant",
        _ => "user",
    };
    let text = message.text();
    (!text.trim().is_empty()).then(|| ChatMessage::text(role, text))
}

/// Earlier A2A messages as chat messages, in blocks that stay together: a
/// question the model asked with [`ASK_USER`] is the exchange of the
/// execution that asked ([`EXCHANGE_KEY`]), any other message with text is
/// one message.
fn chat_blocks(messages: &[std::sync::Arc<Message>]) -> Vec<Vec<ChatMessage>> {
    messages
        .iter()
        .filter_map(|message| {
            exchange(message).or_else(|| chat_message(message).map(|chat| vec![chat]))
        })
        .collect()
}

/// The exchange a question's message keeps, closed: each call of its last
/// assistant message that has no result (the question) gets [`ASKED`].
/// `None` for another message, or an exchange that is not one (it must
/// start with the model's calls).
fn exchange(message: &Message) -> Option<Vec<ChatMessage>> {
    if message.role != Role::Agent {
        return None;
    }
    let value = message.metadata.as_ref()?.get(EXCHANGE_KEY)?;
    let mut messages: Vec<ChatMessage> = serde_json::from_value(value.clone()).ok()?;
    let first = messages.first()?;
    if first.role != "assistant" || first.tool_calls.is_empty() {
        return None;
    }
    let open = Transcript {
        messages: messages.clone(),
        ..Transcript::default()
    }
    .pending_calls();
    messages.extend(open.iter().map(|c| ChatMessage::tool_result(&c.id, ASKED)));
    Some(messages)
}

/// The tool definitions of a request: the set's and `ask_user`.
fn definitions(tools: &[(ToolSpec, Arc<dyn Tool>)]) -> Vec<ToolDefinition> {
    let ask = FunctionDefinition {
        name: ASK_USER.to_owned(),
        description: "Ask the user a question when you need their answer to go on. Your turn ends; their reply comes as the next message.".to_owned(),
        parameters: json!({
            "type": "object",
            "properties": { "question": { "type": "string", "description": "The question." } },
            "required": ["question"],
        }),
    };
    std::iter::once(ask)
        .chain(
            tools
                .iter()
                .filter(|(s, _)| s.name != ASK_USER)
                .map(|(spec, _)| FunctionDefinition {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    parameters: spec.parameters.clone(),
                }),
        )
        .map(|function| ToolDefinition {
            kind: "function",
            function,
        })
        .collect()
}

/// Ends the execution with `status`, `usage` (the token counts) in the
/// event's metadata.
async fn end_with(
    events: &EventQueue,
    status: TaskStatus,
    usage: Metadata,
) -> Result<(), A2aError> {
    events
        .send(TaskStatusUpdateEvent {
            task_id: events.task_id().to_owned(),
            context_id: events.context_id().to_owned(),
            status,
            metadata: Some(usage),
        })
        .await
}

/// The usage metadata of the task: what it used before this execution plus
/// this execution's.
fn usage_metadata(before: Usage, now: Usage) -> Metadata {
    let mut total = before;
    total.add(now);
    let mut metadata = Metadata::new();
    metadata.insert(
        USAGE_KEY.to_owned(),
        json!({
            "promptTokens": total.prompt_tokens,
            "completionTokens": total.completion_tokens,
            "totalTokens": total.total_tokens,
        }),
    );
    metadata
}

/// The usage a task's metadata records.
fn recorded_usage(ctx: &RequestContext) -> Usage {
    let Some(usage) = ctx
        .stored_task
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.get(USAGE_KEY))
    else {
        return Usage::default();
    };
    let read = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: read("promptTokens"),
        completion_tokens: read("completionTokens"),
        total_tokens: read("totalTokens"),
    }
}

/// Reports a model turn's tokens: `tracing` fields always, OpenTelemetry
/// counters with the `otel` feature.
fn report_usage(agent: &str, model: &str, usage: Usage) {
    tracing::info!(
        target: "a2a_model::usage",
        agent,
        model,
        prompt_tokens = usage.prompt_tokens,
        completion_tokens = usage.completion_tokens,
        total_tokens = usage.total_tokens,
        "model turn"
    );
    #[cfg(feature = "otel")]
    crate::metrics::record(agent, model, usage);
}

#[async_trait]
impl AgentExecutor for ModelAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let streaming = ctx.call.method == Method::SendStreamingMessage;
        let tools = self.tools.resolve();
        let definitions = definitions(&tools);
        let before = recorded_usage(&ctx);
        let tip = ctx.extensions.get::<ChainTip>().cloned();
        let mut transcript = match (&ctx.checkpoint, ctx.resumed) {
            (Some(checkpoint), true) => match serde_json::from_slice(&checkpoint.state) {
                Ok(transcript) => transcript,
                Err(err) => {
                    return events
                        .fail(format!("the stored checkpoint cannot be read: {err}"))
                        .await;
                }
            },
            _ => Transcript {
                messages: self.opening(&ctx).await,
                ..Transcript::default()
            },
        };
        if !ctx.resumed {
            events.working().await?;
        }
        let settings = self.settings();
        loop {
            let pending = transcript.pending_calls();
            if !pending.is_empty() {
                // The other calls first: the question ends the turn.
                let (asks, calls): (Vec<_>, Vec<_>) = pending
                    .into_iter()
                    .partition(|c| c.function.name == ASK_USER);
                for call in calls {
                    let result = tokio::select! {
                        result = self.run_tool(&call, &tools, &ctx, tip.as_ref()) => result,
                        () = ctx.cancellation.cancelled() => return Ok(()),
                    };
                    transcript
                        .messages
                        .push(ChatMessage::tool_result(&call.id, result));
                    let usage = usage_metadata(before, transcript.usage);
                    self.checkpoint(&events, &mut transcript, &usage).await?;
                }
                if let Some(ask) = asks.first() {
                    let question = serde_json::from_str::<Value>(&ask.function.arguments)
                        .ok()
                        .and_then(|a| a.get("question")?.as_str().map(str::to_owned))
                        .filter(|q| !q.trim().is_empty())
                        .unwrap_or_else(|| "Could you tell me more?".to_owned());
                    let mut message = events.agent_message(vec![a2a_core::Part::text(question)]);
                    // The execution that continues gives the model this
                    // execution's calls and results again.
                    let exchange = serde_json::to_value(transcript.exchange())
                        .map_err(|err| A2aError::internal(format!("exchange: {err}")))?;
                    message
                        .metadata
                        .get_or_insert_with(Default::default)
                        .insert(EXCHANGE_KEY.to_owned(), exchange);
                    let mut status = TaskStatus::new(TaskState::InputRequired);
                    status.message = Some(message.into());
                    return end_with(&events, status, usage_metadata(before, transcript.usage))
                        .await;
                }
                continue;
            }
            if transcript.turns >= settings.max_turns {
                return events
                    .fail(format!(
                        "the model took {} turns without an answer (max_turns)",
                        transcript.turns
                    ))
                    .await;
            }
            let ask = Ask {
                messages: &transcript.messages,
                tools: &definitions,
                stream: streaming,
            };
            let completion = {
                // Pieces of a streamed answer, from the client's callback to
                // the events (sent between polls of the request).
                let (pieces, mut arrived) = tokio::sync::mpsc::unbounded_channel::<String>();
                let mut on_text = move |piece: &str| {
                    let _ = pieces.send(piece.to_owned());
                };
                let request = self.client.complete(ask, &mut on_text);
                tokio::pin!(request);
                let mut first = true;
                let outcome = loop {
                    tokio::select! {
                        biased;
                        // Dropping the request drops its connection.
                        () = ctx.cancellation.cancelled() => return Ok(()),
                        Some(piece) = arrived.recv() => {
                            self.chunk(&events, piece, first).await?;
                            first = false;
                        }
                        outcome = &mut request => break outcome,
                    }
                };
                while let Ok(piece) = arrived.try_recv() {
                    self.chunk(&events, piece, first).await?;
                    first = false;
                }
                outcome
            };
            let completion = match completion {
                Ok(completion) => completion,
                Err(err) => {
                    tracing::warn!(agent = %self.name, error = %err, "the model request failed");
                    let mut status = TaskStatus::new(TaskState::Failed);
                    status.message = Some(
                        events
                            .agent_message(vec![a2a_core::Part::text(format!(
                                "{err} ({})",
                                settings.base_url
                            ))])
                            .into(),
                    );
                    return end_with(&events, status, usage_metadata(before, transcript.usage))
                        .await;
                }
            };
            transcript.turns += 1;
            if let Some(usage) = completion.usage {
                transcript.usage.add(usage);
                report_usage(&self.name, &settings.model, usage);
            }
            let mut message = completion.message;
            message.role = "assistant".to_owned();
            message.tool_call_id = None;
            if message.tool_calls.is_empty() {
                let answer = message.content.unwrap_or_default();
                let mut artifact = Artifact::text(answer.clone()).with_id(ANSWER_ARTIFACT);
                "answer".clone_into(&mut artifact.name);
                let mut event = TaskArtifactUpdateEvent::new(
                    events.task_id().to_owned(),
                    events.context_id().to_owned(),
                    artifact,
                );
                event.last_chunk = true;
                events.send(event).await?;
                let mut status = TaskStatus::new(TaskState::Completed);
                status.message = Some(
                    events
                        .agent_message(vec![a2a_core::Part::text(answer)])
                        .into(),
                );
                return end_with(&events, status, usage_metadata(before, transcript.usage)).await;
            }
            // A call the model sent without an id still needs one its result
            // can name.
            for (i, call) in message.tool_calls.iter_mut().enumerate() {
                if call.id.is_empty() {
                    call.id = format!("call_{}_{i}", transcript.turns);
                }
            }
            transcript.messages.push(message);
            let usage = usage_metadata(before, transcript.usage);
            self.checkpoint(&events, &mut transcript, &usage).await?;
        }
    }
}

impl ModelAgent {
    /// One piece of a streamed answer as a chunk of the answer artifact;
    /// the first of a turn replaces what an earlier turn streamed.
    async fn chunk(&self, events: &EventQueue, piece: String, first: bool) -> Result<(), A2aError> {
        let artifact = Artifact::text(piece).with_id(ANSWER_ARTIFACT);
        let mut event = TaskArtifactUpdateEvent::new(
            events.task_id().to_owned(),
            events.context_id().to_owned(),
            artifact,
        );
        event.append = !first;
        events.send(event).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{FunctionCall, ToolCall};

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: name.into(),
                arguments: "{}".into(),
            },
        }
    }

    #[test]
    fn pending_calls_are_those_of_the_last_assistant_message_without_a_result() {
        let mut transcript = Transcript::default();
        transcript.messages.push(ChatMessage::text("user", "hi"));
        assert!(transcript.pending_calls().is_empty());
        let mut assistant = ChatMessage::text("assistant", "");
        assistant.tool_calls = vec![call("a", "x"), call("b", "y")];
        transcript.messages.push(assistant);
        assert_eq!(transcript.pending_calls().len(), 2);
        transcript
            .messages
            .push(ChatMessage::tool_result("a", "done"));
        let pending = transcript.pending_calls();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, "b");
    }
}
