//! SendMessage and SendStreamingMessage.

use std::sync::Arc;

use a2a_core::{A2aError, Message, SendMessageRequest, SendMessageResponse, StreamResponse, Task};
use tokio_util::sync::CancellationToken;

use super::{DefaultRequestHandler, EventStream, validate};
use crate::execution::{Drive, Progress, Start, Started, StreamKind};
use crate::observer::CallObserver;
use crate::push::validate_config;
use crate::store::{Cause, StoredTask};
use crate::{CallContext, RequestContext};

/// What a blocking SendMessage answers with.
enum Outcome {
    /// The agent's direct reply.
    Reply(Message),
    /// The task, when the execution handed it over (else it is read from the store).
    Task(Option<Arc<Task>>),
}

impl Outcome {
    /// The answer, once `seen` has one: a reply, a settled task, or (when the
    /// caller asked not to wait, or the execution ended) any task at all.
    fn of(seen: &mut Progress, any_state: bool) -> Option<Outcome> {
        if let Some(reply) = seen.reply.take() {
            return Some(Outcome::Reply(reply));
        }
        let settled = seen.state.is_some_and(a2a_core::TaskState::is_settled);
        (settled || (any_state && seen.state.is_some())).then(|| Outcome::Task(seen.settled.take()))
    }
}

/// A validated request, ready to start.
struct Prepared {
    start: Start,
    /// The stored task, for follow-ups (boxed: a new task, the common case,
    /// then carries one pointer, and the whole is small enough to move
    /// through the futures without a box of its own).
    existing: Option<Box<StoredTask>>,
    history_length: Option<i32>,
    return_immediately: bool,
    /// The inline webhook saved for this execution, removed again if it cannot start.
    push_config_id: Option<String>,
}

impl DefaultRequestHandler {
    async fn prepare(
        &self,
        ctx: &CallContext,
        request: Box<SendMessageRequest>,
        observer: Option<&mut dyn CallObserver>,
    ) -> Result<Prepared, A2aError> {
        validate::message(&request.message)?;
        validate::history_length(request.history_length())?;
        validate::content_types(&self.card, &request.message)?;
        let push_config = request
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if let Some(config) = &push_config {
            self.require_push()?;
            validate_config(config, &self.push_policy)?;
        }
        let history_length = request.history_length();
        let return_immediately = request.return_immediately();
        let caller = ctx.caller();
        let SendMessageRequest {
            mut message,
            configuration,
            metadata,
            ..
        } = *request;

        // The awaits that not every call makes are boxed: inline, their
        // state would enlarge this future, which every send moves.
        let existing = if message.task_id.is_empty() {
            None
        } else {
            let stored = Box::pin(self.follow_up(ctx, &mut message)).await?;
            Some(Box::new(stored))
        };
        if existing.is_none() && self.quota.applies_to(&caller) {
            Box::pin(self.quota.admit(self.store.as_ref(), &caller)).await?;
        }
        let (task_id, context_id) = match &existing {
            Some(stored) => (stored.task.id.clone(), stored.task.context_id.clone()),
            None if message.context_id.is_empty() => (a2a_core::new_id(), a2a_core::new_id()),
            None => (a2a_core::new_id(), message.context_id.clone()),
        };
        message.task_id.clone_from(&task_id);
        message.context_id.clone_from(&context_id);

        let mut referenced_tasks = Vec::new();
        for id in &message.reference_task_ids {
            if let Ok(stored) = self.store.get(&caller, id).await {
                referenced_tasks.push(stored.task);
            }
        }
        let mut push_config_id = None;
        if let (Some(mut config), Some(push)) = (push_config, &self.push) {
            config.task_id.clone_from(&task_id);
            config.tenant.clone_from(&ctx.tenant);
            push_config_id = Some(Box::pin(push.save_config(&caller, config)).await?.id);
        }
        let mut ctx = Box::new(RequestContext {
            // Shared from here on by the agent's context and the new task's
            // history.
            message: Arc::new(message),
            task_id,
            context_id,
            stored_task: existing.as_ref().map(|s| s.task.clone()),
            referenced_tasks,
            configuration,
            metadata,
            call: ctx.clone(),
            cancellation: CancellationToken::new(),
            resumed: false,
            checkpoint: None,
            extensions: http::Extensions::new(),
        });
        let observer = match observer {
            Some(observer) => observer.accepted(&mut ctx).await,
            None => None,
        };
        Ok(Prepared {
            start: Start {
                ctx,
                caller,
                stored: existing.clone(),
                resumed: false,
                observer,
            },
            existing,
            history_length,
            return_immediately,
            push_config_id,
        })
    }

    /// Starts a prepared execution; if it cannot start, forgets its inline webhook.
    async fn start(&self, prepared: Prepared, drive: Drive) -> Result<Started, A2aError> {
        // Only a start with an inline webhook may need the owner and the
        // task afterwards.
        let owner = prepared.push_config_id.as_ref().map(|_| {
            (
                prepared.start.caller.clone(),
                prepared.start.ctx.task_id.clone(),
            )
        });
        let result = self.executions.start(prepared.start, drive).await;
        if let (Err(_), Some(id), Some(push), Some((owner, task_id))) =
            (&result, &prepared.push_config_id, &self.push, &owner)
        {
            let _ = push.configs().delete(owner, task_id, id).await;
        }
        result
    }

    /// Checks a follow-up against its task and records the user message in its history.
    async fn follow_up(
        &self,
        ctx: &CallContext,
        message: &mut a2a_core::Message,
    ) -> Result<StoredTask, A2aError> {
        let caller = ctx.caller();
        // Ownership first (someone else's task is simply not found), then let a
        // previous execution that is winding down after INPUT_REQUIRED finish,
        // and only then read the task the follow-up builds on.
        self.store.get(&caller, &message.task_id).await?;
        if !self
            .executions
            .wait_idle(&message.task_id, self.follow_up_wait)
            .await
        {
            return Err(A2aError::unsupported_operation(format!(
                "task {} is still being worked on; wait for it or cancel it",
                message.task_id
            )));
        }
        let mut stored = self.store.get(&caller, &message.task_id).await?;
        let state = stored.task.status.state;
        if state.is_terminal() {
            return Err(A2aError::unsupported_operation(format!(
                "task {} is {state} and accepts no more messages; start a new task in its context",
                stored.task.id
            )));
        }
        if !message.context_id.is_empty() && message.context_id != stored.task.context_id {
            return Err(A2aError::invalid_params(format!(
                "contextId {} does not match task {}'s context {}",
                message.context_id, stored.task.id, stored.task.context_id
            )));
        }
        let mut recorded = message.clone();
        recorded.context_id.clone_from(&stored.task.context_id);
        // A redelivered message (same id, same content) is recorded once.
        let is_retry = stored
            .task
            .history
            .iter()
            .any(|m| m.message_id == recorded.message_id && m.parts == recorded.parts);
        if !is_retry {
            // The agent's question (its status message) came before this answer.
            stored.task.archive_status_message();
            stored.task.history.push(Arc::new(recorded.clone()));
            crate::execution::keep_history(&mut stored.task, self.executions.config().max_history);
            let cause = StreamResponse::Message(recorded);
            stored.version = self
                .store
                .update(&caller, &stored.task, stored.version, &Cause::event(&cause))
                .await?;
        }
        Ok(stored)
    }

    fn shape(mut task: Task, history_length: Option<i32>) -> Task {
        task.truncate_history(history_length);
        task
    }

    /// The observer of a call, when the handler has one that watches it.
    fn observe(
        &self,
        ctx: &CallContext,
        request: &SendMessageRequest,
    ) -> Option<Box<dyn CallObserver>> {
        self.observer.as_ref()?.call(ctx, request)
    }

    /// Tells the call's observer, if any, that the call failed.
    async fn report<T>(
        observer: Option<Box<dyn CallObserver>>,
        result: Result<T, A2aError>,
    ) -> Result<T, A2aError> {
        match (result, observer) {
            (Err(err), Some(mut observer)) => {
                observer.refused(&err).await;
                Err(err)
            }
            (result, _) => result,
        }
    }

    pub(super) async fn send(
        &self,
        ctx: &CallContext,
        request: Box<SendMessageRequest>,
    ) -> Result<SendMessageResponse, A2aError> {
        let mut observer = self.observe(ctx, &request);
        let result = self
            .send_observed(ctx, request, observer.as_deref_mut())
            .await;
        Self::report(observer, result).await
    }

    async fn send_observed(
        &self,
        ctx: &CallContext,
        request: Box<SendMessageRequest>,
        observer: Option<&mut dyn CallObserver>,
    ) -> Result<SendMessageResponse, A2aError> {
        let prepared = self.prepare(ctx, request, observer).await?;
        let caller = prepared.start.caller.clone();
        let follow_up = prepared.existing.is_some();
        let (return_immediately, history_length) =
            (prepared.return_immediately, prepared.history_length);
        // A caller that waits drives the execution itself.
        let drive = if return_immediately {
            Drive::Spawn
        } else {
            Drive::Inline
        };
        let Started {
            task_id,
            mut progress,
            mut inline,
        } = self.start(prepared, drive).await?;
        if return_immediately && follow_up {
            let stored = self.store.get(&caller, &task_id).await?;
            return Ok(Self::shape(stored.task, history_length).into());
        }
        let outcome = loop {
            if let Some(outcome) = progress.inspect(|seen| Outcome::of(seen, return_immediately)) {
                break outcome;
            }
            let open = match inline.as_mut() {
                Some(execution) => tokio::select! {
                    biased;
                    () = execution.run(), if !execution.is_done() => true,
                    open = progress.changed() => open,
                },
                None => progress.changed().await,
            };
            if !open {
                // The execution ended: its last word, or else what the store holds.
                break progress
                    .inspect(|seen| Outcome::of(seen, true))
                    .unwrap_or(Outcome::Task(None));
            }
        };
        let signals = progress.signals().clone();
        drop(progress);
        match outcome {
            Outcome::Reply(message) => return Ok(SendMessageResponse::Message(message)),
            Outcome::Task(Some(task)) => {
                // Unshared once the execution has wound down, as it usually has.
                let task = Arc::try_unwrap(task).unwrap_or_else(|shared| (*shared).clone());
                return Ok(Self::shape(task, history_length).into());
            }
            Outcome::Task(None) => {}
        }
        // Stopped by a failing store: say so, rather than read back a task
        // that may never have been stored ("task not found").
        if let Some(err) = signals.failure() {
            return Err(err.clone());
        }
        let stored = self.store.get(&caller, &task_id).await?;
        Ok(Self::shape(stored.task, history_length).into())
    }

    pub(super) async fn send_streaming(
        &self,
        ctx: &CallContext,
        request: Box<SendMessageRequest>,
    ) -> Result<EventStream, A2aError> {
        let mut observer = self.observe(ctx, &request);
        let result = self
            .send_streaming_observed(ctx, request, observer.as_deref_mut())
            .await;
        Self::report(observer, result).await
    }

    async fn send_streaming_observed(
        &self,
        ctx: &CallContext,
        request: Box<SendMessageRequest>,
        observer: Option<&mut dyn CallObserver>,
    ) -> Result<EventStream, A2aError> {
        let mut prepared = self.prepare(ctx, request, observer).await?;
        let caller = prepared.start.caller.clone();
        // A follow-up's stream starts with the task as it stands (the protocol
        // wants a Task first); a new task's creation is its first event anyway.
        let first = prepared.existing.take().map(|s| {
            (
                StreamResponse::Task(Self::shape(s.task, prepared.history_length)),
                s.version,
            )
        });
        let updates = self
            .executions
            .subscribe(&prepared.start.ctx.task_id, &caller)?;
        let Started {
            progress, inline, ..
        } = self.start(prepared, Drive::Inline).await?;
        let done = progress.signals().clone();
        // One turn here, so the first events are already waiting when the
        // response starts (and go out with its headers); the rest of the
        // execution runs on its own, never paced by how fast this client reads.
        if let Some(mut execution) = inline {
            execution.step().await;
        }
        let stream =
            self.executions
                .stream(updates, first, StreamKind::Message, caller, Some(done));
        Ok(Box::pin(stream))
    }
}
