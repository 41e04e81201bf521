//! One running execution: the agent produces events, this actor validates,
//! applies, persists and only then publishes them.

use std::sync::Arc;

use a2a_core::{
    A2aError, ErrorKind, Message, Metadata, Part, Role, StreamResponse, Task, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::apply::{apply, bind_ids};
use super::cancel::{cancelable, canceled_event, run_cancel_hook};
use super::feed::Update;
use super::jobs;
use super::persist::{Current, Persisted, persist};
use super::{Control, Shared};
use crate::executor::Emitted;
use crate::observer::ExecutionObserver;
use crate::store::{Cause, Checkpoint, JobWrite, Version};
use crate::{CallContext, Caller, RequestContext};

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
    /// Shared with the execution's slot, its queue and its entry in the
    /// live map: one allocation per execution, not one per holder.
    pub(super) task_id: Arc<str>,
    pub(super) context_id: Arc<str>,
    pub(super) caller: Caller,
    /// The task as stored, once it exists.
    pub(super) task: Option<Current>,
    /// The user's message, until it opens the new task's history (shared
    /// with the agent's request context).
    pub(super) message: Option<Arc<Message>>,
    pub(super) replied: bool,
    pub(super) token: CancellationToken,
    pub(super) progress: super::progress::Reporter,
    /// Held while the execution runs; released as soon as the task settles.
    pub(super) slot: Option<super::Slot>,
    /// Where this execution's job record stands.
    pub(super) job: jobs::JobPhase,
    /// Set when a write carrying the agent's checkpoint was stored.
    pub(super) checkpoint_written: bool,
    /// Sees the events this execution publishes, when anyone watches.
    pub(super) observer: Option<Box<dyn ExecutionObserver>>,
    /// In cluster mode, the epoch of this node's lease on the task's job
    /// (see [`crate::store::Lease`]): every write of the execution carries
    /// it, and the store refuses it once the lease moved on.
    pub(super) lease_epoch: Option<u32>,
    /// Set when a fenced write was refused: the lease is lost, the execution
    /// stops and writes nothing more.
    pub(super) fenced: bool,
}

impl Actor {
    /// Drives the agent (`producer`: its `execute` future with panics caught,
    /// polled in this same task so handing an event over needs no cross-task
    /// wakeup) and processes its events. The producer is held inline, not
    /// boxed: `execute`'s own future is boxed already.
    pub(super) async fn run<P>(
        mut self,
        mut events: mpsc::Receiver<Emitted>,
        inbox: super::signals::Inbox,
        producer: P,
    ) where
        P: std::future::Future<Output = std::thread::Result<Result<(), A2aError>>> + Send,
    {
        #[cfg(feature = "otel")]
        let _active = crate::telemetry::otel::ActiveExecution::start();
        let mut producer = std::pin::pin!(Some(producer));
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
                command = inbox.recv() => match command {
                    Control::Cancel { reply, call, metadata } => {
                        // Boxed, as every rare path here: inline, its state would
                        // enlarge the execution's future, which moves on every call.
                        let (result, flow) = Box::pin(self.cancel(*call, metadata)).await;
                        let _ = reply.send(result);
                        if flow == Flow::Done { break; }
                    }
                    // The lease went to another node of the cluster: the job
                    // is its now, so nothing more is written here. (A job not
                    // yet recorded was never anyone else's: it runs on.)
                    Control::Relinquish if matches!(self.job, jobs::JobPhase::Open) => {
                        tracing::warn!(task_id = %self.task_id, "lease lost; stopping the execution here");
                        self.job = jobs::JobPhase::Closed;
                        break;
                    }
                    Control::Relinquish => {}
                },
                Some(event) = events.recv() => {
                    deadline = inactivity.map(|d| Instant::now() + d);
                    if self.handle(event).await == Flow::Done { break; }
                }
                outcome = async { producer.as_mut().as_pin_mut().expect("guarded by the if below").await }, if producer.is_some() => {
                    producer.set(None);
                    let outcome = match outcome {
                        Ok(result) => Outcome::Returned(result),
                        Err(_panic) => Outcome::Panicked,
                    };
                    self.finish(&mut events, outcome).await;
                    break;
                }
                () = watchdog => {
                    tracing::warn!(task_id = %self.task_id, "agent inactivity timeout");
                    Box::pin(self.fail("The agent stopped responding (inactivity timeout).")).await;
                    break;
                }
                () = shutdown.cancelled() => {
                    if !matches!(self.job, jobs::JobPhase::Volatile) {
                        // Durable: the next start resumes it.
                        self.leave_pending().await;
                    } else {
                        Box::pin(self.fail("The server shut down before the task finished.")).await;
                    }
                    break;
                }
            }
        }
        // The task is settled: end the job, release the execution slot, tell
        // the agent to stop, and give it a moment to return on its own before
        // dropping it.
        drop(events);
        self.end_turn().await;
        self.token.cancel();
        if let Some(producer) = producer.as_mut().as_pin_mut() {
            let _ = tokio::time::timeout(self.shared.config.cancel_grace, producer).await;
        }
    }

    /// Drains what the agent wrote before returning, then settles the task.
    async fn finish(&mut self, events: &mut mpsc::Receiver<Emitted>, outcome: Outcome) {
        while let Ok(event) = events.try_recv() {
            if self.handle(event).await == Flow::Done {
                return;
            }
        }
        if self.replied {
            return;
        }
        if self.state().is_settled() {
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
        Box::pin(self.fail(&text)).await;
    }

    fn agent_text(&self, text: &str) -> Message {
        Message::new(Role::Agent, vec![Part::text(text)])
            .with_task_id(&*self.task_id)
            .with_context_id(&*self.context_id)
    }

    /// Moves the task to FAILED with `text` (creating it if the agent never did).
    async fn fail(&mut self, text: &str) {
        let mut update =
            TaskStatusUpdateEvent::new(&*self.task_id, &*self.context_id, TaskState::Failed);
        update.status.message = Some(self.agent_text(text).into());
        match self.persist_event(Arc::new(update.into()), None).await {
            Ok(_) => {}
            Err(err) if is_store_failure(&err) => {
                Box::pin(self.store_failed(err)).await;
            }
            Err(err) => {
                tracing::error!(task_id = %self.task_id, error = %err, "could not record the task's failure");
            }
        }
    }

    /// What the cancel hook sees: as for a task with no execution running, the
    /// task as it stands and the cancel call's own context.
    fn cancel_context(&self, call: CallContext, metadata: Option<Metadata>) -> RequestContext {
        let token = self.token.clone();
        match &self.task {
            Some(current) => {
                RequestContext::for_cancel((*current.task).clone(), call, metadata, token)
            }
            // The agent has not written anything yet: there is no task to show,
            // only the user's message.
            None => {
                let unwritten = Task {
                    id: String::from(&*self.task_id),
                    context_id: String::from(&*self.context_id),
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
        if let Some(current) = &self.task {
            match cancelable(&current.task) {
                Ok(true) => {}
                Ok(false) => return (Ok(()), Flow::Done),
                Err(err) => return (Err(err), Flow::Done),
            }
        }
        if self.replied {
            return (Err(A2aError::task_not_found(&self.task_id)), Flow::Done);
        }
        let hook_ctx = self.cancel_context(call, metadata.clone());
        if let Err(err) = run_cancel_hook(&self.shared, hook_ctx).await {
            return (Err(err), Flow::Continue);
        }
        self.token.cancel();
        let event = canceled_event(&self.task_id, &self.context_id, metadata);
        match self.persist_event(Arc::new(event), None).await {
            // Another node runs the task now: the cancel is its to make.
            _ if self.fenced => (
                Err(A2aError::unavailable(
                    format!("task {} moved to another node; try again", self.task_id),
                    crate::store::STORE_RETRY_AFTER,
                )),
                Flow::Done,
            ),
            Ok(_) => (Ok(()), Flow::Done),
            Err(err) if is_store_failure(&err) => {
                Box::pin(self.store_failed(err.clone())).await;
                (Err(err), Flow::Done)
            }
            Err(err) => (Err(err), Flow::Done),
        }
    }

    /// Handles one item from the agent: an event, perhaps with its turn's
    /// checkpoint (whose writer hears whether it was stored).
    async fn handle(&mut self, emitted: Emitted) -> Flow {
        // The event stays behind its pointer down to the store and the
        // subscribers: each level's future holds a pointer, not a copy of the
        // event, and the subscribers get that same allocation.
        let Emitted { event, checkpoint } = emitted;
        let Some(checkpoint) = checkpoint else {
            return self.handle_event(event, None).await;
        };
        let (checkpoint, stored) = *checkpoint;
        let (flow, outcome) = match *event {
            StreamResponse::Message(_) => {
                let err = A2aError::new(
                    ErrorKind::InvalidAgentResponse,
                    "a checkpoint goes with a task event, not a message reply",
                );
                (Box::pin(self.reject(err.clone())).await, Err(err))
            }
            _ => {
                let flow = self.handle_event(event, Some(&checkpoint)).await;
                match std::mem::take(&mut self.checkpoint_written) {
                    true => (flow, Ok(())),
                    false => (
                        flow,
                        Err(A2aError::internal("the checkpoint was not stored")),
                    ),
                }
            }
        };
        let _ = stored.send(outcome);
        flow
    }

    /// Handles one event from the agent.
    async fn handle_event(
        &mut self,
        mut event: Arc<StreamResponse>,
        checkpoint: Option<&Checkpoint>,
    ) -> Flow {
        // The agent's event is this execution's alone until published, so
        // this never copies it.
        if let Err(err) = bind_ids(Arc::make_mut(&mut event), &self.task_id, &self.context_id) {
            return Box::pin(self.reject(err)).await;
        }
        if let StreamResponse::Message(message) = &*event {
            if self.task.is_none() && !self.replied {
                self.replied = true;
                if self.shared.feeds.is_watched(&self.task_id) {
                    let update = Update {
                        version: 0,
                        // The agent's own event, shared, not a copy of its message.
                        event: Arc::clone(&event),
                        state: None,
                        origin: super::feed::Origin::Local,
                    };
                    self.shared.feeds.publish(&self.task_id, update);
                }
                self.observe(&event).await;
                // As in `publish`: subscribers, then the slot, then the caller.
                self.end_turn().await;
                self.progress.report(|p| p.reply = Some(message.clone()));
                return Flow::Done;
            }
        }
        if self.replied {
            let err = A2aError::new(
                ErrorKind::InvalidAgentResponse,
                "event after a message reply",
            );
            return Box::pin(self.reject(err)).await;
        }
        match self.persist_event(event, checkpoint).await {
            _ if self.fenced => Flow::Done,
            Ok(state) if state.ends_turn() => Flow::Done,
            Ok(_) => Flow::Continue,
            // Not the agent's fault: the task is not failed for it.
            Err(err) if is_store_failure(&err) => Box::pin(self.store_failed(err)).await,
            Err(err) => Box::pin(self.reject(err)).await,
        }
    }

    /// The store failed for longer than the writes are retried: the execution
    /// stops without touching the task (as stored, it is still in progress)
    /// and its callers hear why. A recorded job goes back to PENDING (or, if
    /// even that cannot be written, to the maintenance loop, which releases
    /// it once the store is back) and is resumed from there; an execution
    /// whose task was never stored leaves nothing behind, and its caller,
    /// who never learned the task's id, is told to try again.
    async fn store_failed(&mut self, err: A2aError) -> Flow {
        tracing::error!(task_id = %self.task_id, error = %err, "the store failed; stopping the execution");
        let err = match &self.task {
            Some(_) if !matches!(self.job, jobs::JobPhase::Volatile) => A2aError::unavailable(
                format!(
                    "{}; task {} is kept and resumes once storage recovers",
                    err.message(),
                    self.task_id
                ),
                crate::store::STORE_RETRY_AFTER,
            ),
            _ => err,
        };
        self.progress.fail(err);
        match std::mem::replace(&mut self.job, jobs::JobPhase::Closed) {
            jobs::JobPhase::Open => {
                if let Some(jobs) = self.shared.jobs.clone() {
                    // One try: the writes were retried already, and the
                    // maintenance loop tries again.
                    let released = jobs.release(&self.task_id, self.shared.clock.now()).await;
                    if let Err(err) = released {
                        tracing::error!(task_id = %self.task_id, error = %err, "could not release the job; the maintenance loop will");
                    }
                    // Released or not, the maintenance loop brings it back
                    // (releasing it first if need be) once the store is.
                    self.shared.strand(&self.task_id);
                }
            }
            jobs::JobPhase::Volatile => {
                self.job = jobs::JobPhase::Volatile;
                // Nothing can resume it: one last try at saying why it ended.
                if let Some(current) = self.task.as_mut() {
                    let mut update = TaskStatusUpdateEvent::new(
                        &*self.task_id,
                        &*self.context_id,
                        TaskState::Failed,
                    );
                    update.status.message = Some(
                        Message::new(
                            Role::Agent,
                            vec![Part::text("The task could not be stored.")],
                        )
                        .with_task_id(&*self.task_id)
                        .with_context_id(&*self.context_id)
                        .into(),
                    );
                    let event = StreamResponse::from(update);
                    let _ = persist(
                        self.shared.store.as_ref(),
                        &self.caller,
                        current,
                        &Cause::event(&event),
                        self.shared.config.max_history,
                        std::time::Duration::ZERO,
                        |task| Ok(!task.status.state.is_terminal()),
                    )
                    .await;
                }
            }
            // Never stored (its caller is told), or already ended.
            jobs::JobPhase::Unrecorded(_) | jobs::JobPhase::Closed => {}
        }
        Flow::Done
    }

    /// An invalid event or a store failure: fail the task, end the execution.
    async fn reject(&mut self, err: A2aError) -> Flow {
        tracing::warn!(task_id = %self.task_id, error = %err, "rejecting agent event");
        if self.replied {
            return Flow::Done;
        }
        if !self.state().is_terminal() {
            Box::pin(self.fail("The agent produced an invalid response.")).await;
        }
        Flow::Done
    }

    /// Applies an event to the task (creating it on first use), stores it, and
    /// publishes it. Returns the task's state afterwards.
    async fn persist_event(
        &mut self,
        event: Arc<StreamResponse>,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<TaskState, A2aError> {
        // The lease is lost: nothing more is written here, whatever asks.
        if self.fenced {
            return Err(A2aError::internal("the lease on the task's job is lost"));
        }
        let before = self.task.as_ref().map(|current| current.task.status.state);
        let after = match self.task.is_none() {
            true => self.create(event, checkpoint).await,
            false => self.update(event, checkpoint).await,
        };
        if let Ok(state) = &after {
            if before != Some(*state) {
                crate::telemetry::status_changed(*state);
            }
        }
        after
    }

    /// Applies an event to the stored task, stores it, and publishes it.
    async fn update(
        &mut self,
        event: Arc<StreamResponse>,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<TaskState, A2aError> {
        let Some(current) = self.task.as_mut() else {
            return Err(A2aError::internal("the task was never stored"));
        };
        // Another writer may have ended the task (a cancel from another node);
        // then that is the outcome, and this event is moot.
        let lease = lease(&self.shared, &self.job, self.lease_epoch);
        let mut cause = Cause::event(&event)
            .with_optional_checkpoint(checkpoint)
            .with_lease(lease);
        // The write that ends the turn finishes the job with it.
        let ending = match (&self.job, self.shared.store.writes_jobs()) {
            (jobs::JobPhase::Open, true) => jobs::turn_end(&event, current.task.status.state),
            _ => None,
        };
        if let Some((state, reason)) = &ending {
            cause = cause.with_job(JobWrite::Finish {
                state: *state,
                reason: reason.as_deref(),
                at: self.shared.clock.now(),
            });
        }
        let persisted = persist(
            self.shared.store.as_ref(),
            &self.caller,
            current,
            &cause,
            self.shared.config.max_history,
            self.shared.config.store_retry,
            |task| Ok(!task.status.state.is_terminal()),
        )
        .await?;
        let state = current.task.status.state;
        let (published, version) = match persisted {
            Persisted::Written(version) => {
                self.checkpoint_written = checkpoint.is_some();
                if ending.is_some() {
                    self.job = jobs::JobPhase::Closed;
                }
                (event, version)
            }
            Persisted::Moot => (
                Arc::new(StreamResponse::Task((*current.task).clone())),
                current.version,
            ),
            Persisted::LeaseLost => {
                self.lose_lease();
                return Err(A2aError::internal("the lease on the task's job is lost"));
            }
        };
        self.publish(published, version, state).await;
        Ok(state)
    }

    /// Stores the task the first time the agent writes something for it.
    ///
    /// The task is stored with the event already applied, in one write. A
    /// watched task's subscribers (and webhooks) still see its SUBMITTED
    /// snapshot first, as the protocol wants a stream to start with the task,
    /// then the event: the snapshot is published without a version of its
    /// own (it was never stored as such), so no subscriber skips the event.
    async fn create(
        &mut self,
        event: Arc<StreamResponse>,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<TaskState, A2aError> {
        let snapshot = matches!(*event, StreamResponse::Task(_));
        let watched = super::is_watched(&self.shared, &self.caller, &self.task_id).await;
        let apply_first = !snapshot;
        let mut task = self.initial_task(&event);
        // Boxed, as the event: only a watched task has them, and inline they
        // would enlarge every execution's future.
        let submitted = (watched && apply_first).then(|| {
            let mut submitted = task.clone();
            stamp(&mut submitted);
            (
                submitted.status.state,
                Arc::new(StreamResponse::Task(submitted)),
            )
        });
        if apply_first {
            if let Err(err) = apply(&mut task, &event) {
                self.keep_message(task.history);
                return Err(err);
            }
        }
        stamp(&mut task);
        // The checkpoint is stored with the event only if the event is in this write.
        let lease = lease(&self.shared, &self.job, self.lease_epoch);
        let mut cause = Cause::event(&event)
            .with_optional_checkpoint(checkpoint.filter(|_| apply_first))
            .with_lease(lease);
        // The job is recorded with the task's first write, finished already if
        // that write ends the turn.
        let pending = match std::mem::replace(&mut self.job, jobs::JobPhase::Closed) {
            jobs::JobPhase::Unrecorded(pending) => Some(pending),
            other => {
                self.job = other;
                None
            }
        };
        let new_job = pending
            .as_ref()
            .map(|p| p.new_job(&self.task_id, &self.caller, &self.shared));
        let state = task.status.state;
        let reason = jobs::failure_reason(Some(&task));
        if let Some(job) = &new_job {
            cause = cause.with_job(match state.ends_turn() {
                true => JobWrite::RecordFinished {
                    job,
                    state: jobs::finished_state(state),
                    reason: reason.as_deref(),
                },
                false => JobWrite::Record(job),
            });
        }
        // A new task's caller waits for this write and has not learned the
        // task's id yet: a short retry, counted from the first try (which
        // may have waited out the pool), then it is told to try again.
        let mut failed = false;
        let budget = self.shared.config.store_retry.min(FIRST_WRITE_RETRY);
        let store = self.shared.store.as_ref();
        let mut created = super::persist::retrying_from_start(budget, &mut failed, || {
            store.create(&self.caller, &task, &cause)
        })
        .await;
        if failed && matches!(created, Err(crate::store::StoreError::AlreadyExists(_))) {
            // A write whose answer was lost (the connection dropped after the
            // commit) meets itself on the retry.
            if let Ok(stored) = store.get(&self.caller, &self.task_id).await {
                if stored.version == 1 && stored.task == task {
                    created = Ok(stored.version);
                }
            }
        }
        match (&created, pending) {
            (Ok(_), Some(_)) if !state.ends_turn() => self.job = jobs::JobPhase::Open,
            (Ok(_), _) => {}
            (Err(_), Some(pending)) => self.job = jobs::JobPhase::Unrecorded(pending),
            (Err(_), None) => {}
        }
        let version = match created {
            Ok(version) => version,
            Err(crate::store::StoreError::LeaseLost(_)) => {
                self.lose_lease();
                return Err(A2aError::internal("the lease on the task's job is lost"));
            }
            Err(err) => {
                // Kept for the write that records the failure, so the task
                // never loses the user's message.
                self.keep_message(task.history);
                return Err(err.into());
            }
        };
        let state = task.status.state;
        let first = (watched && snapshot).then(|| Arc::new(StreamResponse::Task(task.clone())));
        self.task = Some(Current {
            task: Arc::new(task),
            version,
        });
        if apply_first {
            if let Some((state, submitted)) = submitted {
                self.publish(submitted, 0, state).await;
            }
            self.checkpoint_written = checkpoint.is_some();
            self.publish(event, version, state).await;
            return Ok(state);
        }
        match first {
            Some(first) => self.publish(first, version, state).await,
            None => self.progress.report(|p| p.state = Some(state)),
        }
        Ok(state)
    }

    /// The task as first stored: the agent's own snapshot, or a new SUBMITTED
    /// task; the user's message opens its history.
    fn initial_task(&mut self, event: &StreamResponse) -> Task {
        let mut task = match event {
            StreamResponse::Task(task) => task.clone(),
            // Stamped by the caller, once the status it keeps is known.
            _ => Task {
                id: String::from(&*self.task_id),
                context_id: String::from(&*self.context_id),
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
                // The handler gave it the task's ids already; only a
                // message that lacks them is copied to set them.
                if *message.task_id != *self.task_id || *message.context_id != *self.context_id {
                    let owned = Arc::make_mut(&mut message);
                    owned.task_id = String::from(&*self.task_id);
                    owned.context_id = String::from(&*self.context_id);
                }
                task.history.insert(0, message);
            }
        }
        task
    }

    /// A fenced write was refused: another node holds the job now and goes
    /// on with it, so this execution stops without writing anything more (no
    /// failure, no release, no job end: none of it is this node's any more).
    fn lose_lease(&mut self) {
        tracing::warn!(task_id = %self.task_id, "lease lost (a write was fenced); stopping the execution here");
        self.fenced = true;
        self.job = jobs::JobPhase::Closed;
    }

    /// Takes the user's message back from a task that was never stored.
    fn keep_message(&mut self, history: Vec<Arc<Message>>) {
        if self.message.is_none() {
            self.message = history.into_iter().find(|m| m.role == Role::User);
        }
    }

    fn state(&self) -> TaskState {
        self.task
            .as_ref()
            .map_or(TaskState::Unspecified, |current| current.task.status.state)
    }

    /// Publishes a persisted event. When it settles the task, subscribers see
    /// it first, then the execution slot is freed, and only then are blocking
    /// callers and cancelers told, so their next call finds the slot free.
    async fn publish(&mut self, event: Arc<StreamResponse>, version: Version, state: TaskState) {
        self.observe(&event).await;
        let settled = state
            .is_settled()
            .then(|| self.task.as_ref().map(|current| current.task.clone()))
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
        if state.ends_turn() {
            self.end_turn().await;
        }
        self.progress.report(|p| {
            p.state = Some(state);
            if settled.is_some() {
                p.settled = settled;
            }
        });
    }
}

impl Actor {
    /// Shows a published event to the execution's observer, if any.
    async fn observe(&mut self, event: &StreamResponse) {
        if let Some(observer) = &mut self.observer {
            let task = self.task.as_ref().map(|current| &*current.task);
            // The observer's future is boxed (a trait object's): inline, its
            // state would enlarge every execution's future, observed or not.
            observer.event(event, task).await;
        }
    }
}

/// Gives a status without a time the current one.
impl Actor {
    /// Ends the turn: finishes the job (before the slot is freed, so a
    /// follow-up that finds the task idle can record its own), then frees the
    /// execution slot. Runs once; later calls do nothing.
    async fn end_turn(&mut self) {
        match std::mem::replace(&mut self.job, jobs::JobPhase::Closed) {
            jobs::JobPhase::Open => self.finish_job().await,
            // Nothing was ever written (a message reply): no job to keep.
            jobs::JobPhase::Unrecorded(_) => {}
            other => self.job = other,
        }
        self.slot.take();
    }

    /// Finishes the open job on its own write.
    async fn finish_job(&mut self) {
        let Some(jobs) = &self.shared.jobs else {
            return;
        };
        let task = self.task.as_ref().map(|c| &*c.task);
        let state = task.map_or(TaskState::Completed, |t| match t.status.state {
            // Ended without settling: only a failure to record the failure
            // gets here.
            s if s.is_settled() => s,
            _ => TaskState::Failed,
        });
        let reason = jobs::failure_reason(task);
        let at = self.shared.clock.now();
        let finished = super::persist::retrying(self.shared.config.store_retry, &mut false, || {
            jobs.finish(
                &self.task_id,
                jobs::finished_state(state),
                reason.as_deref(),
                at,
            )
        })
        .await;
        if let Err(err) = finished {
            // Not left RUNNING under this node's heartbeat: the maintenance
            // loop releases it once the store is back, and its resume finds
            // the task ended and finishes the job.
            tracing::error!(task_id = %self.task_id, error = %err, "could not finish the job");
            if err.is_transient() {
                self.shared.strand(&self.task_id);
            }
        }
    }

    /// Stops at shutdown without failing the task: its job goes back to
    /// PENDING (recorded first if its first write never came) and the next
    /// start resumes it.
    async fn leave_pending(&mut self) {
        let Some(jobs) = self.shared.jobs.clone() else {
            return;
        };
        let at = self.shared.clock.now();
        let outcome = match std::mem::replace(&mut self.job, jobs::JobPhase::Closed) {
            jobs::JobPhase::Open => jobs.release(&self.task_id, at).await,
            jobs::JobPhase::Unrecorded(pending) => {
                let job = pending.new_job(&self.task_id, &self.caller, &self.shared);
                match jobs.record(&job).await {
                    Ok(()) => jobs.release(&self.task_id, at).await,
                    Err(err) => Err(err),
                }
            }
            other => {
                self.job = other;
                Ok(())
            }
        };
        if let Err(err) = outcome {
            // Still RUNNING with an old heartbeat: recovery resumes it or, past
            // the stale limit, abandons it.
            tracing::error!(task_id = %self.task_id, error = %err, "could not leave the job pending");
        }
    }
}

/// The lease an execution's writes carry: in cluster mode, once its job is
/// recorded (the write that records it needs none). Borrows only the shared
/// state, so the actor's other fields stay free while a write is built.
fn lease<'s>(
    shared: &'s Shared,
    job: &jobs::JobPhase,
    epoch: Option<u32>,
) -> Option<crate::store::Lease<'s>> {
    match (job, epoch) {
        (jobs::JobPhase::Open, Some(epoch)) => Some(crate::store::Lease {
            node: &shared.job_config.node,
            epoch,
        }),
        _ => None,
    }
}

/// How long a new task's first write is retried at most (see
/// [`super::ExecutionConfig::store_retry`] for later writes).
const FIRST_WRITE_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether `err` is the store failing (see [`crate::store::StoreError::is_transient`]),
/// not something wrong with the event.
fn is_store_failure(err: &A2aError) -> bool {
    err.kind() == ErrorKind::Unavailable
}

fn stamp(task: &mut Task) {
    if task.status.timestamp.is_none() {
        task.status.timestamp = Some(a2a_core::now());
    }
}
