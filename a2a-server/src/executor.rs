//! The agent author's side: implement [`AgentExecutor`], write events to the
//! [`EventQueue`].

use a2a_core::{
    A2aError, Artifact, Message, Metadata, Part, Role, SendMessageConfiguration, StreamResponse,
    Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::CallContext;
use crate::store::Checkpoint;

/// An agent: turns an incoming message into events.
///
/// `execute` writes events to the queue and returns when it is done. The first
/// event decides the shape of the answer: a [`Message`] is a direct reply (no task
/// is created); anything else creates a task (the server makes the `SUBMITTED`
/// task for you), which ends when the agent reaches a terminal state,
/// `INPUT_REQUIRED`, or returns. Returning without a final state fails the task;
/// returning an error fails it with that error's message; a panic fails it with a
/// generic message.
///
/// ```no_run
/// use a2a_server::{AgentExecutor, EventQueue, RequestContext};
/// use a2a_core::A2aError;
///
/// struct Echo;
///
/// #[async_trait::async_trait]
/// impl AgentExecutor for Echo {
///     async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
///         events.complete_with_text(format!("you said: {}", ctx.message.text())).await
///     }
/// }
/// ```
#[async_trait]
pub trait AgentExecutor: Send + Sync + 'static {
    /// Handles a message (new task, follow-up, or direct reply).
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError>;

    /// Called when a client cancels the task, before the server marks it
    /// `CANCELED`; the running `execute` sees `ctx.cancellation` fire. Return an
    /// error (such as `TaskNotCancelable`) to refuse. The default accepts.
    ///
    /// `ctx` holds the task as it stands (`stored_task`; absent only if the
    /// agent has not written anything yet), its latest user message, and the
    /// cancel call's own context and metadata, whether or not an execution is
    /// running.
    async fn cancel(&self, ctx: RequestContext) -> Result<(), A2aError> {
        let _ = ctx;
        Ok(())
    }
}

fn ended() -> A2aError {
    A2aError::unsupported_operation("the execution has ended; no more events are accepted")
}

/// What the agent gets to work with.
///
/// The server builds it for every execution; [`RequestContext::new`] builds one
/// for calling an agent directly (in tests, say). More fields will come, so it
/// cannot be built field by field outside this crate.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestContext {
    /// The incoming message (for `cancel`, the task's latest user message).
    ///
    /// Shared with the task, whose history it opens: read it as a `Message`
    /// through the `Arc` (`ctx.message.text()`); [`Arc::unwrap_or_clone`]
    /// gives an owned one (a copy, while the task still holds it).
    pub message: Arc<Message>,
    /// The id of the task this execution works on (already assigned for new tasks).
    pub task_id: String,
    /// The conversation id.
    pub context_id: String,
    /// The stored task, for follow-ups to an existing task (for `cancel`, the
    /// task as it stands).
    pub stored_task: Option<Task>,
    /// The tasks named in `message.referenceTaskIds` that the caller can see.
    pub referenced_tasks: Vec<Task>,
    /// The request's configuration.
    pub configuration: Option<SendMessageConfiguration>,
    /// The request-level metadata.
    pub metadata: Option<Metadata>,
    /// The caller, tenant, service parameters and requested extensions.
    pub call: CallContext,
    /// Fires when the task is canceled, times out or the server shuts down.
    pub cancellation: CancellationToken,
    /// Whether this execution resumes one that a server restart interrupted
    /// (the agent should pick up where [`checkpoint`](Self::checkpoint) says).
    pub resumed: bool,
    /// On a resumed execution, the last turn checkpoint the agent stored with
    /// [`EventQueue::send_checkpointed`]: the turns up to it are done, and their
    /// side effects must not be repeated. `None`: start from the beginning.
    pub checkpoint: Option<Checkpoint>,
    /// Values the handler's [observer](crate::observer) left for the agent,
    /// one per type: the conversation log, say, leaves the chain tip that
    /// the agent's own calls to other agents continue. Empty, and free, when
    /// no observer is installed. (The A2A protocol extensions of the call
    /// are in [`CallContext`].)
    pub extensions: http::Extensions,
}

impl RequestContext {
    /// A context for `message` (a `Message`, or an `Arc<Message>` already
    /// shared) on behalf of `call`: a new task in the message's context (or
    /// a new context), with nothing stored yet.
    pub fn new(message: impl Into<Arc<Message>>, call: CallContext) -> RequestContext {
        let message = message.into();
        let task_id = match message.task_id.is_empty() {
            true => a2a_core::new_id(),
            false => message.task_id.clone(),
        };
        let context_id = match message.context_id.is_empty() {
            true => a2a_core::new_id(),
            false => message.context_id.clone(),
        };
        RequestContext {
            message,
            task_id,
            context_id,
            stored_task: None,
            referenced_tasks: Vec::new(),
            configuration: None,
            metadata: None,
            call,
            cancellation: CancellationToken::new(),
            resumed: false,
            checkpoint: None,
            extensions: http::Extensions::new(),
        }
    }

    /// The same context continuing `task` (a follow-up), with its ids.
    #[must_use]
    pub fn with_stored_task(mut self, task: Task) -> RequestContext {
        self.task_id.clone_from(&task.id);
        self.context_id.clone_from(&task.context_id);
        self.stored_task = Some(task);
        self
    }

    /// What an agent's cancel hook sees: the task as it stands (its latest user
    /// message as the message) and the cancel call's own context and metadata.
    pub(crate) fn for_cancel(
        task: Task,
        call: CallContext,
        metadata: Option<Metadata>,
        cancellation: CancellationToken,
    ) -> RequestContext {
        RequestContext {
            message: task
                .history
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .cloned()
                .unwrap_or_default(),
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            stored_task: Some(task),
            referenced_tasks: Vec::new(),
            configuration: None,
            metadata,
            call,
            cancellation,
            resumed: false,
            checkpoint: None,
            extensions: http::Extensions::new(),
        }
    }

    /// Whether this message continues an existing task.
    pub fn is_follow_up(&self) -> bool {
        self.stored_task.is_some()
    }
}

/// One item from the agent to its execution.
#[derive(Debug)]
pub(crate) struct Emitted {
    /// Behind a pointer: the channel allocates its slots in blocks of 32
    /// when it is made, and an inline event (over 300 bytes) made that over
    /// 10 KiB for every execution, held or not. An `Arc` rather than a box:
    /// once stored, the same allocation is what subscribers and webhooks get.
    pub(crate) event: Arc<StreamResponse>,
    /// The turn checkpoint stored with this event, and who waits for it.
    pub(crate) checkpoint: Option<Box<(Checkpoint, CheckpointStored)>>,
}

/// Tells an agent whether its checkpoint was stored.
pub(crate) type CheckpointStored = oneshot::Sender<Result<(), A2aError>>;

/// Where an agent writes its events. Cheap to clone.
///
/// The helpers fill in task and context ids and timestamps.
#[derive(Debug, Clone)]
pub struct EventQueue {
    sender: mpsc::Sender<Emitted>,
    /// Shared with the execution that reads the queue.
    task_id: Arc<str>,
    context_id: Arc<str>,
}

impl EventQueue {
    pub(crate) fn new(
        sender: mpsc::Sender<Emitted>,
        task_id: Arc<str>,
        context_id: Arc<str>,
    ) -> Self {
        EventQueue {
            sender,
            task_id,
            context_id,
        }
    }

    /// The task id events are written for.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The context id events are written for.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// Writes a raw event. Fails once the execution has ended (task final or canceled).
    //
    // This and the helpers below box the event before returning a future,
    // so every one of them returns the same small future (a pointer and the
    // channel's send) whatever the event: an agent's own future, which holds
    // the one it awaits, stays small, and so does every copy of it.
    pub fn send(
        &self,
        event: impl Into<StreamResponse>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.emit(Arc::new(event.into()))
    }

    async fn emit(&self, event: Arc<StreamResponse>) -> Result<(), A2aError> {
        let emitted = Emitted {
            event,
            checkpoint: None,
        };
        self.sender.send(emitted).await.map_err(|_| ended())
    }

    /// Writes the event that completes a turn together with the turn's
    /// checkpoint, and waits until both are stored, in one write. After a
    /// restart the execution is resumed with this checkpoint in
    /// [`RequestContext::checkpoint`], so a turn whose `send_checkpointed`
    /// returned `Ok` is never run again. (Without a durable store there is no
    /// restart to survive; the call still waits for the write.)
    ///
    /// The event must be a task event (status, artifact or task), not a
    /// message reply.
    pub fn send_checkpointed(
        &self,
        event: impl Into<StreamResponse>,
        checkpoint: Checkpoint,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.emit_checkpointed(Arc::new(event.into()), checkpoint)
    }

    async fn emit_checkpointed(
        &self,
        event: Arc<StreamResponse>,
        checkpoint: Checkpoint,
    ) -> Result<(), A2aError> {
        let (stored, outcome) = oneshot::channel();
        let emitted = Emitted {
            event,
            checkpoint: Some(Box::new((checkpoint, stored))),
        };
        self.sender.send(emitted).await.map_err(|_| ended())?;
        outcome.await.map_err(|_| ended())?
    }

    /// An agent message bound to this task and context.
    pub fn agent_message(&self, parts: Vec<Part>) -> Message {
        Message::new(Role::Agent, parts)
            .with_task_id(&*self.task_id)
            .with_context_id(&*self.context_id)
    }

    /// Replies with a message instead of a task. Only valid as the first event.
    pub fn reply(
        &self,
        parts: Vec<Part>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        let message = Message::new(Role::Agent, parts).with_context_id(&*self.context_id);
        self.send(message)
    }

    /// Moves the task to `state`, with an optional agent message.
    pub fn status(
        &self,
        state: TaskState,
        message: Option<Message>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        let mut status = TaskStatus::new(state);
        status.message = message.map(Arc::new);
        self.send(TaskStatusUpdateEvent {
            task_id: String::from(&*self.task_id),
            context_id: String::from(&*self.context_id),
            status,
            metadata: None,
        })
    }

    fn text_message(&self, text: impl Into<String>) -> Option<Message> {
        Some(self.agent_message(vec![Part::text(text)]))
    }

    /// `WORKING`.
    pub fn working(&self) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::Working, None)
    }

    /// `COMPLETED`.
    pub fn complete(&self) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::Completed, None)
    }

    /// `COMPLETED` with a text message.
    pub fn complete_with_text(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::Completed, self.text_message(text))
    }

    /// `FAILED` with a text message.
    pub fn fail(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::Failed, self.text_message(text))
    }

    /// `REJECTED` with a text message.
    pub fn reject(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::Rejected, self.text_message(text))
    }

    /// `INPUT_REQUIRED` with a question for the client.
    pub fn require_input(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::InputRequired, self.text_message(text))
    }

    /// `AUTH_REQUIRED` with an explanation for the client.
    pub fn require_auth(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.status(TaskState::AuthRequired, self.text_message(text))
    }

    /// Adds (or replaces, same id) an artifact.
    pub fn artifact(
        &self,
        artifact: Artifact,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        self.send(TaskArtifactUpdateEvent::new(
            &*self.task_id,
            &*self.context_id,
            artifact,
        ))
    }

    /// Appends the artifact's parts to the artifact with the same id (a chunk).
    pub fn append_artifact(
        &self,
        artifact: Artifact,
        last_chunk: bool,
    ) -> impl Future<Output = Result<(), A2aError>> + Send + '_ {
        let mut event = TaskArtifactUpdateEvent::new(&*self.task_id, &*self.context_id, artifact);
        event.append = true;
        event.last_chunk = last_chunk;
        self.send(event)
    }
}
