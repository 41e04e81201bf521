//! One execution of a remote agent: forward the message (or find the remote
//! task again after a restart), then mirror the remote task into the local
//! one until the remote's turn ends.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_client::{Client, ClientError, EventStream};
use a2a_core::{
    A2aError, Artifact, ErrorKind, GetTaskRequest, Message, Metadata, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState, TaskStatus,
};
use a2a_server::store::Checkpoint;
use a2a_server::{EventQueue, RequestContext};
use futures::StreamExt as _;

use super::error::{RemoteError, RemoteErrorKind};
use super::link::{Connected, Link};
use super::mapping::{
    CALLER_METADATA_KEY, ForwardedCaller, RemoteTask, local_artifact, local_message, local_status,
    scrub,
};
use super::{Inner, LiveKey};

/// Failed attempts in a row to find a remote task again before giving up on it.
const MAX_FOLLOW_FAILURES: u32 = 3;

/// The first pause between two polls; it doubles up to the configured maximum.
const FIRST_POLL: Duration = Duration::from_millis(50);

/// Whether the remote's turn is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Done,
}

/// The state of one execution.
pub(crate) struct Forward<'a> {
    inner: &'a Arc<Inner>,
    connected: Connected,
    events: &'a EventQueue,
    ctx: &'a RequestContext,
    key: LiveKey,
    /// The remote task, once known.
    remote: Option<RemoteTask>,
    /// Whether the record of the remote task has changed since it was last
    /// written to the local task.
    unrecorded: bool,
    /// Whether this execution's message made the remote task (rather than
    /// continuing one that earlier turns made).
    made_here: bool,
    /// The last status mirrored (state and message id), to skip repeats when polling.
    status: Option<(TaskState, String)>,
    /// For a follow-up, the status the remote task had when it asked for
    /// more: a snapshot still showing it (a remote that answers before it
    /// has run, or a poll that comes too early) is no news and must not end
    /// the turn that has just begun.
    stale: Option<(TaskState, String)>,
    /// The artifacts as mirrored so far, to send only what a poll finds new.
    artifacts: HashMap<String, Artifact>,
}

impl<'a> Forward<'a> {
    pub(crate) fn new(
        inner: &'a Arc<Inner>,
        connected: Connected,
        ctx: &'a RequestContext,
        events: &'a EventQueue,
        key: LiveKey,
    ) -> Self {
        let remote = ctx.stored_task.as_ref().and_then(RemoteTask::of);
        let artifacts = ctx
            .stored_task
            .iter()
            .flat_map(|t| t.artifacts.iter())
            .map(|a| (a.artifact_id.clone(), a.clone()))
            .collect();
        let stale = ctx
            .stored_task
            .as_ref()
            .filter(|t| t.status.state.is_interrupted())
            .map(|t| seen(&t.status));
        Forward {
            inner,
            connected,
            events,
            ctx,
            key,
            remote,
            unrecorded: false,
            made_here: false,
            status: None,
            stale,
            artifacts,
        }
    }

    fn link(&self) -> &Link {
        &self.inner.link
    }

    fn config(&self) -> &super::RemoteAgentConfig {
        &self.inner.link.config
    }

    fn streams(&self) -> bool {
        self.config().streaming && self.connected.card.capabilities.streaming == Some(true)
    }

    /// The id the forwarded message has at the remote: the same for a resend
    /// after a restart (a remote that drops repeated message ids can drop
    /// it), different across the gateway's tasks (whose callers may pick
    /// the same message ids).
    fn remote_message_id(&self) -> String {
        format!("{}/{}", self.ctx.task_id, self.ctx.message.message_id)
    }

    /// Runs the execution to the end of the remote's turn.
    pub(crate) async fn run(mut self) -> Result<(), RemoteError> {
        let outcome = self.forward().await;
        if self.ctx.cancellation.is_cancelled() {
            self.stopped();
        }
        outcome
    }

    async fn forward(&mut self) -> Result<(), RemoteError> {
        let delivered = self
            .remote
            .as_ref()
            .is_some_and(|r| r.message_id == self.remote_message_id());
        if self.ctx.resumed && delivered {
            // The message reached the remote before the restart: sending it
            // again would start its work twice.
            tracing::debug!(agent = %self.link().agent, task_id = %self.ctx.task_id, "following the remote task again after a restart");
            return self.follow().await;
        }
        if self.ctx.cancellation.is_cancelled() {
            return Ok(());
        }
        let streams = self.streams();
        let mut request = self.request();
        if !streams {
            request
                .configuration
                .get_or_insert_with(Default::default)
                .return_immediately = true;
        }
        let mut send = send(self.connected.client.clone(), request, streams);
        let limit = self.config().request_timeout;
        let sent = tokio::select! {
            biased;
            () = self.ctx.cancellation.cancelled() => {
                // A new remote task may be in the making right now, and
                // nobody would ever hear of it: the send goes on without this
                // execution, and what it made is canceled. (A follow-up's
                // task is known and was canceled by the hook if that is what
                // this is; a resumed execution sends the message again.)
                if self.remote.is_none() {
                    let inner = Arc::clone(self.inner);
                    let metadata = forwarded_metadata(self.ctx, &self.link().agent);
                    tokio::spawn(inner.cancel_when_sent(send, metadata));
                }
                return Ok(());
            }
            sent = tokio::time::timeout(limit, &mut send) => sent,
        };
        let sent = match sent {
            Ok(Ok(sent)) => sent,
            Ok(Err(err)) => {
                let err = self.client_error("sending the message", &err);
                if err.kind() == RemoteErrorKind::Unreachable {
                    self.inner.link.forget().await;
                }
                return Err(err);
            }
            Err(_) => {
                return Err(self.link().error(
                    RemoteErrorKind::Timeout,
                    format!("sending the message: no answer within {limit:?}"),
                ));
            }
        };
        match sent {
            Sent::Stream(stream) => self.pump(stream, "sending the message").await,
            Sent::Answer(answer) => {
                let event = match *answer {
                    SendMessageResponse::Message(message) => StreamResponse::Message(message),
                    SendMessageResponse::Task(task) => StreamResponse::Task(task),
                };
                if self.handle(event).await? == Flow::Done {
                    return Ok(());
                }
                self.follow().await
            }
        }
    }

    /// The execution was stopped (canceled, timed out, or the server is
    /// shutting down). The remote task is canceled if a cancel came before
    /// the hook could know it, or if this execution made it and the local
    /// task does not name it yet: then nothing could ever follow it again,
    /// and a resumed execution sends the message anew.
    fn stopped(&self) {
        let Some(remote) = &self.remote else {
            return;
        };
        if (self.unrecorded && self.made_here) || self.inner.cancel_requested(&self.key) {
            let inner = Arc::clone(self.inner);
            let remote = remote.clone();
            let metadata = forwarded_metadata(self.ctx, &self.link().agent);
            tokio::spawn(async move { inner.cancel_remote(&remote, metadata).await.ok() });
        }
    }

    /// The request the remote gets: the caller's message and request
    /// metadata with remote ids in place of local ones, who called, and
    /// nothing that is the gateway's own business (its push config, history
    /// length, blocking).
    fn request(&mut self) -> SendMessageRequest {
        let ctx = self.ctx;
        let (task_id, context_id) = match &self.remote {
            Some(remote) => (remote.task_id.clone(), remote.context_id.clone()),
            None => (String::new(), self.inner.remote_context(ctx)),
        };
        let reference_task_ids = ctx
            .referenced_tasks
            .iter()
            .filter_map(RemoteTask::of)
            .map(|r| r.task_id)
            .collect();
        let message = Message {
            message_id: self.remote_message_id(),
            context_id,
            task_id,
            role: Role::User,
            parts: ctx.message.parts.clone(),
            metadata: ctx.message.metadata.clone(),
            extensions: ctx.message.extensions.clone(),
            reference_task_ids,
        };
        let configuration = ctx.configuration.as_ref().and_then(|c| {
            (!c.accepted_output_modes.is_empty()).then(|| SendMessageConfiguration {
                accepted_output_modes: c.accepted_output_modes.clone(),
                ..SendMessageConfiguration::default()
            })
        });
        SendMessageRequest {
            tenant: String::new(),
            message,
            configuration,
            metadata: forwarded_metadata(ctx, &self.link().agent),
        }
    }

    /// Runs `call` within the request timeout, naming the agent on failure.
    async fn bounded<T>(
        &self,
        doing: &str,
        call: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, RemoteError> {
        let limit = self.config().request_timeout;
        match tokio::time::timeout(limit, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.client_error(doing, &err)),
            Err(_) => Err(self.link().error(
                RemoteErrorKind::Timeout,
                format!("{doing}: no answer within {limit:?}"),
            )),
        }
    }

    fn client_error(&self, doing: &str, err: &ClientError) -> RemoteError {
        RemoteError::from_client(&self.link().agent, &self.config().url, doing, err)
    }

    /// Mirrors a stream's events until the turn ends, the stream ends or it
    /// breaks; after the remote named its task, a stream that ends early or
    /// breaks is followed by asking for the task.
    async fn pump(&mut self, mut stream: EventStream, doing: &str) -> Result<(), RemoteError> {
        // The transports keep to the idle timeout themselves; this bound
        // holds for any transport.
        let idle = self.config().idle_timeout + Duration::from_secs(1);
        loop {
            let next = tokio::select! {
                biased;
                // Canceled, timed out or shutting down: the server settles the
                // local task; the hook or `run` sees to the remote one.
                () = self.ctx.cancellation.cancelled() => return Ok(()),
                next = tokio::time::timeout(idle, stream.next()) => next,
            };
            let err = match next {
                Ok(Some(Ok(event))) => {
                    if self.handle(event).await? == Flow::Done {
                        return Ok(());
                    }
                    continue;
                }
                Ok(Some(Err(err))) => self.client_error(doing, &err),
                Ok(None) => self.link().error(
                    RemoteErrorKind::BadResponse,
                    format!("{doing}: the stream ended before the task's turn did"),
                ),
                Err(_) => self.link().error(
                    RemoteErrorKind::Timeout,
                    format!("{doing}: no event for {idle:?}"),
                ),
            };
            if self.remote.is_none() {
                return Err(err);
            }
            tracing::debug!(agent = %self.link().agent, error = %err, "the remote task's stream ended early; following the task");
            return self.follow().await;
        }
    }

    /// Follows the known remote task: reads it, then subscribes to it (a
    /// streaming remote) or polls it, until its turn ends. Gives up after
    /// [`MAX_FOLLOW_FAILURES`] failed attempts in a row, or at once when the
    /// remote says the task is gone.
    async fn follow(&mut self) -> Result<(), RemoteError> {
        let Some(remote) = self.remote.clone() else {
            return Err(self
                .link()
                .error(RemoteErrorKind::BadResponse, "no remote task to follow"));
        };
        let mut failures = 0;
        let mut wait = FIRST_POLL;
        loop {
            let read = GetTaskRequest {
                id: remote.task_id.clone(),
                history_length: Some(0),
                ..GetTaskRequest::default()
            };
            let attempt = match self
                .bounded(
                    "reading the remote task",
                    self.connected.client.get_task(read, None),
                )
                .await
            {
                Ok(task) => {
                    let before = self.status.clone();
                    if self.handle(StreamResponse::Task(task)).await? == Flow::Done {
                        return Ok(());
                    }
                    if self.status != before {
                        wait = FIRST_POLL;
                    }
                    if self.streams() {
                        self.subscribe(&remote.task_id).await
                    } else {
                        Ok(Flow::Continue)
                    }
                }
                Err(err) => Err(err),
            };
            match attempt {
                Ok(Flow::Done) => return Ok(()),
                Ok(Flow::Continue) => failures = 0,
                Err(err) if gone(&err) => return Err(err),
                Err(err) => {
                    failures += 1;
                    if failures >= MAX_FOLLOW_FAILURES {
                        return Err(err);
                    }
                    tracing::debug!(agent = %self.link().agent, error = %err, failures, "following the remote task failed; trying again");
                }
            }
            tokio::select! {
                biased;
                () = self.ctx.cancellation.cancelled() => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(self.config().max_poll_interval);
        }
    }

    /// One subscription to the remote task, until the turn ends or the
    /// stream does (then the caller reads the task again).
    async fn subscribe(&mut self, remote_id: &str) -> Result<Flow, RemoteError> {
        let request = SubscribeToTaskRequest {
            id: remote_id.to_owned(),
            ..SubscribeToTaskRequest::default()
        };
        let mut stream = self
            .bounded(
                "subscribing to the remote task",
                self.connected.client.subscribe_to_task(request, None),
            )
            .await?;
        let idle = self.config().idle_timeout + Duration::from_secs(1);
        loop {
            let next = tokio::select! {
                biased;
                () = self.ctx.cancellation.cancelled() => return Ok(Flow::Done),
                next = tokio::time::timeout(idle, stream.next()) => next,
            };
            match next {
                Ok(Some(Ok(event))) => {
                    if self.handle(event).await? == Flow::Done {
                        return Ok(Flow::Done);
                    }
                }
                Ok(Some(Err(err))) => {
                    return Err(self.client_error("following the remote task", &err));
                }
                Ok(None) | Err(_) => return Ok(Flow::Continue),
            }
        }
    }

    /// Mirrors one remote event into the local task.
    async fn handle(&mut self, event: StreamResponse) -> Result<Flow, RemoteError> {
        match event {
            StreamResponse::Message(message) if self.remote.is_none() => {
                // A direct reply: no task here either.
                let message = local_message(message, "", &self.ctx.context_id);
                self.events.send(message).await.map_err(|e| self.ended(e))?;
                Ok(Flow::Done)
            }
            StreamResponse::Message(message) => {
                // A message within a task: locally it can only be a status message.
                let state = self.status.as_ref().map_or(TaskState::Working, |s| s.0);
                let status = TaskStatus::new(state).with_message(message);
                self.mirror_status(status, None).await
            }
            StreamResponse::Task(task) => {
                self.learn(&task.id, &task.context_id)?;
                let Task {
                    status,
                    artifacts,
                    metadata,
                    ..
                } = task;
                if self.stale.is_some() {
                    if self.stale == Some(seen(&status)) {
                        return Ok(Flow::Continue);
                    }
                    self.stale = None;
                }
                // Artifacts first: a status that ends the turn ends the
                // local execution, and nothing after it would be taken.
                for artifact in artifacts {
                    if self.artifacts.get(&artifact.artifact_id) != Some(&artifact) {
                        self.mirror_artifact(artifact, false, false).await?;
                    }
                }
                self.mirror_status_if_changed(status, metadata).await
            }
            StreamResponse::StatusUpdate(update) => {
                self.learn(&update.task_id, &update.context_id)?;
                self.mirror_status(update.status, update.metadata).await
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.learn(&update.task_id, &update.context_id)?;
                if self.unrecorded {
                    // The record rides on a status update; an artifact cannot carry it.
                    let status = TaskStatus::new(TaskState::Working);
                    self.mirror_status(status, None).await?;
                }
                self.mirror_artifact(update.artifact, update.append, update.last_chunk)
                    .await?;
                Ok(Flow::Continue)
            }
        }
    }

    /// Notes the remote task an event belongs to: the first one names it,
    /// later ones must be about the same task.
    fn learn(&mut self, task_id: &str, context_id: &str) -> Result<(), RemoteError> {
        let message_id = self.remote_message_id();
        match &mut self.remote {
            Some(remote) if remote.task_id != task_id => Err(self.inner.link.error(
                RemoteErrorKind::BadResponse,
                format!(
                    "an event of task {task_id:?} arrived for task {:?}",
                    remote.task_id
                ),
            )),
            Some(remote) => {
                if remote.message_id != message_id {
                    remote.message_id = message_id;
                    remote.turns += 1;
                    self.unrecorded = true;
                }
                Ok(())
            }
            None if task_id.is_empty() => Err(self
                .inner
                .link
                .error(RemoteErrorKind::BadResponse, "an event without a task id")),
            None => {
                let remote = RemoteTask {
                    agent: self.inner.link.agent.clone(),
                    task_id: task_id.to_owned(),
                    context_id: context_id.to_owned(),
                    message_id,
                    turns: 1,
                };
                self.inner.learned(&self.key, self.ctx, &remote);
                self.remote = Some(remote);
                self.unrecorded = true;
                self.made_here = true;
                Ok(())
            }
        }
    }

    async fn mirror_status_if_changed(
        &mut self,
        status: TaskStatus,
        metadata: Option<Metadata>,
    ) -> Result<Flow, RemoteError> {
        if self.status == Some(seen(&status)) && !self.unrecorded {
            return Ok(flow_after(status.state));
        }
        self.mirror_status(status, metadata).await
    }

    async fn mirror_status(
        &mut self,
        status: TaskStatus,
        metadata: Option<Metadata>,
    ) -> Result<Flow, RemoteError> {
        let state = status.state;
        if state == TaskState::Unspecified {
            return Err(self
                .link()
                .error(RemoteErrorKind::BadResponse, "a status without a state"));
        }
        self.status = Some(seen(&status));
        self.stale = None;
        let mut update = local_status(
            status,
            scrub(metadata),
            &self.ctx.task_id,
            &self.ctx.context_id,
        );
        let record = self.remote.as_ref().filter(|_| self.unrecorded).cloned();
        match record {
            Some(remote) => {
                update
                    .metadata
                    .get_or_insert_with(Metadata::new)
                    .extend(remote.to_metadata());
                let state = serde_json::to_vec(&remote).unwrap_or_default();
                let checkpoint = Checkpoint::new(remote.turns, state);
                self.events
                    .send_checkpointed(update, checkpoint)
                    .await
                    .map_err(|e| self.ended(e))?;
                self.unrecorded = false;
            }
            None => self.events.send(update).await.map_err(|e| self.ended(e))?,
        }
        Ok(flow_after(state))
    }

    async fn mirror_artifact(
        &mut self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), RemoteError> {
        match self.artifacts.get_mut(&artifact.artifact_id) {
            Some(known) if append => known.parts.extend(artifact.parts.iter().cloned()),
            _ => {
                self.artifacts
                    .insert(artifact.artifact_id.clone(), artifact.clone());
            }
        }
        let update = local_artifact(
            artifact,
            append,
            last_chunk,
            &self.ctx.task_id,
            &self.ctx.context_id,
        );
        self.events.send(update).await.map_err(|e| self.ended(e))
    }

    /// The local execution refused an event: it has ended (canceled, say) or
    /// the event was invalid.
    fn ended(&self, err: A2aError) -> RemoteError {
        self.link().error(
            RemoteErrorKind::BadResponse,
            format!("mirroring its task: {}", err.message()),
        )
    }
}

/// The caller's request metadata, with who the caller is under
/// [`CALLER_METADATA_KEY`] (replacing whatever the caller put there).
pub(crate) fn forwarded_metadata(ctx: &RequestContext, agent: &str) -> Option<Metadata> {
    let mut metadata = ctx.metadata.clone().unwrap_or_default();
    let caller = ForwardedCaller {
        agent: agent.to_owned(),
        tenant: ctx.call.tenant.clone(),
        user: ctx.call.user.name.clone(),
        authenticated: ctx.call.user.authenticated,
    };
    if let Ok(value) = serde_json::to_value(caller) {
        metadata.insert(CALLER_METADATA_KEY.to_owned(), value);
    }
    Some(metadata)
}

/// What a send brought back: a stream of events, or the answer to a send
/// with `returnImmediately`.
pub(crate) enum Sent {
    Stream(EventStream),
    Answer(Box<SendMessageResponse>),
}

/// A send in flight, owning all it needs (it may outlive its execution).
pub(crate) type Sending = Pin<Box<dyn Future<Output = Result<Sent, ClientError>> + Send>>;

fn send(client: Client, request: SendMessageRequest, streams: bool) -> Sending {
    Box::pin(async move {
        if streams {
            client
                .send_streaming_message(request, None)
                .await
                .map(Sent::Stream)
        } else {
            client
                .send_message(request, None)
                .await
                .map(|answer| Sent::Answer(Box::new(answer)))
        }
    })
}

/// What tells two statuses apart: the state and the status message.
fn seen(status: &TaskStatus) -> (TaskState, String) {
    let message = status.message.as_ref();
    (
        status.state,
        message.map(|m| m.message_id.clone()).unwrap_or_default(),
    )
}

/// The remote's turn is over at a terminal state or when it asks for input
/// (auth-required goes on: the remote continues once it has the credentials).
fn flow_after(state: TaskState) -> Flow {
    if state.ends_turn() {
        Flow::Done
    } else {
        Flow::Continue
    }
}

/// Whether the remote said its task does not exist (any more).
fn gone(err: &RemoteError) -> bool {
    err.protocol()
        .is_some_and(|p| p.kind() == ErrorKind::TaskNotFound)
}
