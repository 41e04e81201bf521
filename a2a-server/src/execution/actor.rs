//! One running execution: the agent produces events, this actor validates,
//! applies, persists and only then publishes them.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aError, ErrorKind, Message, Metadata, Part, Role, StreamResponse, Task, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::apply::{apply, bind_ids};
use super::hub::Update;
use super::{Control, Shared};
use crate::store::{Cause, StoreError, Version};
use crate::{CallContext, Caller, RequestContext};

/// The agent's `execute` future, with panics caught.
pub(super) type Producer = std::pin::Pin<
    Box<dyn std::future::Future<Output = std::thread::Result<Result<(), A2aError>>> + Send>,
>;

/// How an agent's `execute` ended.
enum Outcome {
    Returned(Result<(), A2aError>),
    Panicked,
}

/// Whether the execution goes on after an event.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Done,
}

pub(super) struct Actor {
    pub(super) shared: Arc<Shared>,
    pub(super) task_id: String,
    pub(super) context_id: String,
    pub(super) caller: Caller,
    /// The task as stored, once it exists (shared with a blocking caller once settled).
    pub(super) task: Option<(Arc<Task>, Version)>,
    /// The user's message, until it opens the new task's history.
    pub(super) message: Option<Message>,
    pub(super) replied: bool,
    pub(super) token: CancellationToken,
    pub(super) progress: super::progress::Reporter,
    /// Held while the execution runs; released as soon as the task settles.
    pub(super) slot: Option<super::Slot>,
}

impl Actor {
    /// Drives the agent (`producer`, polled in this same task so handing an
    /// event over needs no cross-task wakeup) and processes its events.
    pub(super) async fn run(
        mut self,
        mut events: mpsc::Receiver<StreamResponse>,
        mut control: mpsc::Receiver<Control>,
        producer: Producer,
    ) {
        let mut producer = Some(producer);
        let inactivity = self.shared.config.inactivity_timeout;
        let mut deadline = inactivity.map(|d| Instant::now() + d);
        let shutdown = self.shared.shutdown.clone();
        loop {
            let watchdog = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(command) = control.recv() => {
                    let Control::Cancel { reply, call, metadata } = command;
                    let (result, flow) = self.cancel(*call, metadata).await;
                    let _ = reply.send(result);
                    if flow == Flow::Done { break; }
                }
                Some(event) = events.recv() => {
                    deadline = inactivity.map(|d| Instant::now() + d);
                    if self.handle(event).await == Flow::Done { break; }
                }
                outcome = async { producer.as_mut().expect("guarded by the if below").await }, if producer.is_some() => {
                    producer = None;
                    let outcome = match outcome {
                        Ok(result) => Outcome::Returned(result),
                        Err(_panic) => Outcome::Panicked,
                    };
                    self.finish(&mut events, outcome).await;
                    break;
                }
                () = watchdog => {
                    tracing::warn!(task_id = %self.task_id, "agent inactivity timeout");
                    self.fail("The agent stopped responding (inactivity timeout).").await;
                    break;
                }
                () = shutdown.cancelled() => {
                    self.fail("The server shut down before the task finished.").await;
                    break;
                }
            }
        }
        // The task is settled: release the execution slot, tell the agent to
        // stop, and give it a moment to return on its own before dropping it.
        drop(events);
        self.slot.take();
        self.token.cancel();
        if let Some(producer) = producer {
            let _ = tokio::time::timeout(self.shared.config.cancel_grace, producer).await;
        }
    }

    /// Drains what the agent wrote before returning, then settles the task.
    async fn finish(&mut self, events: &mut mpsc::Receiver<StreamResponse>, outcome: Outcome) {
        while let Ok(event) = events.try_recv() {
            if self.handle(event).await == Flow::Done {
                return;
            }
        }
        if self.replied {
            return;
        }
        let open = self.task.as_ref().is_none_or(|(task, _)| {
            !task.status.state.is_terminal() && !task.status.state.is_interrupted()
        });
        if !open {
            return;
        }
        let text = match outcome {
            Outcome::Returned(Ok(())) => "The agent finished without a final state.".to_owned(),
            Outcome::Returned(Err(err)) => {
                tracing::warn!(task_id = %self.task_id, error = %err, "agent returned an error");
                err.message().to_owned()
            }
            Outcome::Panicked => {
                tracing::error!(task_id = %self.task_id, "agent panicked");
                "The agent failed with an internal error.".to_owned()
            }
        };
        self.fail(&text).await;
    }

    fn agent_text(&self, text: &str) -> Message {
        Message::new(Role::Agent, vec![Part::text(text)])
            .with_task_id(self.task_id.clone())
            .with_context_id(self.context_id.clone())
    }

    /// Moves the task to FAILED with `text` (creating it if the agent never did).
    async fn fail(&mut self, text: &str) {
        let mut update = TaskStatusUpdateEvent::new(
            self.task_id.clone(),
            self.context_id.clone(),
            TaskState::Failed,
        );
        update.status.message = Some(self.agent_text(text));
        if let Err(err) = self.persist_event(update.into()).await {
            tracing::error!(task_id = %self.task_id, error = %err, "could not record the task's failure");
        }
    }

    /// What the cancel hook sees: as for a task with no execution running, the
    /// task as it stands and the cancel call's own context.
    fn cancel_context(&self, call: CallContext, metadata: Option<Metadata>) -> RequestContext {
        let token = self.token.clone();
        match &self.task {
            Some((task, _)) => RequestContext::for_cancel((**task).clone(), call, metadata, token),
            // The agent has not written anything yet: there is no task to show,
            // only the user's message.
            None => {
                let unwritten = Task {
                    id: self.task_id.clone(),
                    context_id: self.context_id.clone(),
                    history: self.message.iter().cloned().collect(),
                    ..Task::default()
                };
                RequestContext {
                    stored_task: None,
                    ..RequestContext::for_cancel(unwritten, call, metadata, token)
                }
            }
        }
    }

    async fn cancel(
        &mut self,
        call: CallContext,
        metadata: Option<Metadata>,
    ) -> (Result<(), A2aError>, Flow) {
        if let Some((task, _)) = &self.task {
            match task.status.state {
                TaskState::Canceled => return (Ok(()), Flow::Done),
                state if state.is_terminal() => {
                    return (
                        Err(A2aError::task_not_cancelable(&self.task_id, state)),
                        Flow::Done,
                    );
                }
                _ => {}
            }
        }
        if self.replied {
            return (Err(A2aError::task_not_found(&self.task_id)), Flow::Done);
        }
        let hook_ctx = self.cancel_context(call, metadata.clone());
        let hook = self.shared.executor.cancel(hook_ctx);
        match tokio::time::timeout(self.shared.config.cancel_grace, hook).await {
            Ok(Err(err)) => return (Err(err), Flow::Continue),
            Ok(Ok(())) => {}
            Err(_) => {
                tracing::warn!(task_id = %self.task_id, "agent cancel hook timed out; canceling anyway")
            }
        }
        self.token.cancel();
        let mut update = TaskStatusUpdateEvent::new(
            self.task_id.clone(),
            self.context_id.clone(),
            TaskState::Canceled,
        );
        update.metadata = metadata;
        match self.persist_event(update.into()).await {
            Ok(_) => (Ok(()), Flow::Done),
            Err(err) => (Err(err), Flow::Done),
        }
    }

    /// Handles one event from the agent.
    async fn handle(&mut self, mut event: StreamResponse) -> Flow {
        if let Err(err) = bind_ids(&mut event, &self.task_id, &self.context_id) {
            return self.reject(err).await;
        }
        if let StreamResponse::Message(message) = &event {
            if self.task.is_none() && !self.replied {
                self.replied = true;
                if self.shared.hubs.is_watched(&self.task_id) {
                    let update = Update {
                        version: 0,
                        event: Arc::new(StreamResponse::Message(message.clone())),
                        state: None,
                    };
                    self.shared.hubs.publish(&self.task_id, update);
                }
                // As in `publish`: subscribers, then the slot, then the caller.
                self.slot.take();
                self.progress.report(|p| p.reply = Some(message.clone()));
                return Flow::Done;
            }
        }
        if self.replied {
            return self
                .reject(A2aError::new(
                    ErrorKind::InvalidAgentResponse,
                    "event after a message reply",
                ))
                .await;
        }
        match self.persist_event(event).await {
            Ok(state) if state.is_terminal() || state == TaskState::InputRequired => Flow::Done,
            Ok(_) => Flow::Continue,
            Err(err) => self.reject(err).await,
        }
    }

    /// An invalid event or a store failure: fail the task, end the execution.
    async fn reject(&mut self, err: A2aError) -> Flow {
        tracing::warn!(task_id = %self.task_id, error = %err, "rejecting agent event");
        if self.replied {
            return Flow::Done;
        }
        let terminal = self
            .task
            .as_ref()
            .is_some_and(|(t, _)| t.status.state.is_terminal());
        if !terminal {
            self.fail("The agent produced an invalid response.").await;
        }
        Flow::Done
    }

    /// Creates the task on first use, applies the event, stores it, publishes it.
    async fn persist_event(&mut self, event: StreamResponse) -> Result<TaskState, A2aError> {
        if self.task.is_none() {
            let watched = super::is_watched(&self.shared, &self.caller, &self.task_id).await;
            if !watched && !matches!(event, StreamResponse::Task(_)) {
                return self.create_with(event).await;
            }
            self.create(&event, watched).await?;
            if let StreamResponse::Task(_) = event {
                return Ok(self.state());
            }
        }
        for _attempt in 0..3 {
            let Some((task, version)) = self.task.as_mut() else {
                break;
            };
            let expected = *version;
            // Applied in place; a write that fails reloads the stored task.
            let task = Arc::make_mut(task);
            apply(task, &event)?;
            match self
                .shared
                .store
                .update(&self.caller, task, expected, &Cause::event(&event))
                .await
            {
                Ok(new_version) => {
                    let state = task.status.state;
                    if let Some((_, version)) = self.task.as_mut() {
                        *version = new_version;
                    }
                    self.publish(event, new_version, state).await;
                    return Ok(state);
                }
                Err(StoreError::Conflict { .. }) => {
                    // Someone else wrote the task (a cancel from another node):
                    // reload; if it is now final, that is the outcome.
                    let stored = self.shared.store.get(&self.caller, &self.task_id).await?;
                    let state = stored.task.status.state;
                    self.task = Some((Arc::new(stored.task.clone()), stored.version));
                    if state.is_terminal() {
                        self.publish(StreamResponse::Task(stored.task), stored.version, state)
                            .await;
                        return Ok(state);
                    }
                }
                Err(err) => {
                    if let Ok(stored) = self.shared.store.get(&self.caller, &self.task_id).await {
                        self.task = Some((Arc::new(stored.task), stored.version));
                    }
                    return Err(err.into());
                }
            }
        }
        Err(A2aError::internal("the task was modified concurrently"))
    }

    /// The task as first stored: the agent's own snapshot, or a new SUBMITTED
    /// task; the user's message opens its history.
    fn initial_task(&mut self, event: &StreamResponse) -> Task {
        let mut task = match event {
            StreamResponse::Task(task) => task.clone(),
            // Stamped by the caller, once the status it keeps is known.
            _ => Task {
                id: self.task_id.clone(),
                context_id: self.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Submitted,
                    ..TaskStatus::default()
                },
                ..Task::default()
            },
        };
        if task.status.state == TaskState::Unspecified {
            task.status.state = TaskState::Submitted;
        }
        if let Some(mut message) = self.message.take() {
            if !task
                .history
                .iter()
                .any(|m| m.message_id == message.message_id)
            {
                message.task_id.clone_from(&self.task_id);
                message.context_id.clone_from(&self.context_id);
                task.history.insert(0, message);
            }
        }
        task
    }

    /// Takes the user's message back from a task that was never stored.
    fn keep_message(&mut self, history: Vec<Message>) {
        if self.message.is_none() {
            self.message = history.into_iter().find(|m| m.role == Role::User);
        }
    }

    /// Stores a new task. If that fails, the user's message is kept for the
    /// next attempt (recording the failure), so the task never loses it.
    async fn store_new(
        &mut self,
        task: &mut Task,
        cause: &StreamResponse,
    ) -> Result<Version, A2aError> {
        match self
            .shared
            .store
            .create(&self.caller, task, &Cause::event(cause))
            .await
        {
            Ok(version) => Ok(version),
            Err(err) => {
                self.keep_message(std::mem::take(&mut task.history));
                Err(err.into())
            }
        }
    }

    /// Creates the task with its first event already applied: nobody watches
    /// it yet, so nobody can miss the SUBMITTED snapshot, and it takes one write.
    async fn create_with(&mut self, event: StreamResponse) -> Result<TaskState, A2aError> {
        let mut task = self.initial_task(&event);
        if let Err(err) = apply(&mut task, &event) {
            self.keep_message(task.history);
            return Err(err);
        }
        stamp(&mut task);
        let version = self.store_new(&mut task, &event).await?;
        let state = task.status.state;
        self.task = Some((Arc::new(task), version));
        self.publish(event, version, state).await;
        Ok(state)
    }

    fn state(&self) -> TaskState {
        self.task
            .as_ref()
            .map_or(TaskState::Unspecified, |(t, _)| t.status.state)
    }

    /// Stores the task the first time the agent emits something for it.
    async fn create(&mut self, event: &StreamResponse, watched: bool) -> Result<(), A2aError> {
        let mut task = self.initial_task(event);
        stamp(&mut task);
        let version = self.store_new(&mut task, event).await?;
        let state = task.status.state;
        let snapshot = watched.then(|| StreamResponse::Task(task.clone()));
        self.task = Some((Arc::new(task), version));
        match snapshot {
            Some(event) => self.publish(event, version, state).await,
            None => self.progress.report(|p| p.state = Some(state)),
        }
        Ok(())
    }

    /// Publishes a persisted event. When it settles the task, subscribers see
    /// it first, then the execution slot is freed, and only then are blocking
    /// callers and cancelers told, so their next call finds the slot free.
    async fn publish(&mut self, event: StreamResponse, version: Version, state: TaskState) {
        let ends = state.is_terminal() || state == TaskState::InputRequired;
        let settled = (state.is_terminal() || state.is_interrupted())
            .then(|| self.task.as_ref().map(|(task, _)| task.clone()))
            .flatten();
        super::publish(
            &self.shared,
            &self.caller,
            &self.task_id,
            event,
            version,
            state,
        )
        .await;
        if ends {
            self.slot.take();
        }
        self.progress.report(|p| {
            p.state = Some(state);
            if settled.is_some() {
                p.settled = settled;
            }
        });
    }
}

/// Gives a status without a time the current one.
fn stamp(task: &mut Task) {
    if task.status.timestamp.is_none() {
        task.status.timestamp = Some(a2a_core::now());
    }
}

/// A cancel request's answer channel.
pub(super) type CancelReply = oneshot::Sender<Result<(), A2aError>>;

/// The default time an agent gets to return after it is told to stop.
pub(super) const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);
