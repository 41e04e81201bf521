//! CancelTask, in one place: a task with a running execution is canceled by
//! that execution (so cancel and completion are decided in order, by one
//! writer); a task without one is canceled here, through the same hook and the
//! same persist loop.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aError, Metadata, StreamResponse, Task, TaskState, TaskStatusUpdateEvent};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::persist::{Current, Persisted, persist};
use super::{Control, Executions, Shared};
use crate::store::Cause;
use crate::{CallContext, RequestContext};

/// A cancel request's answer channel.
pub(super) type CancelReply = oneshot::Sender<Result<(), A2aError>>;

/// The default time an agent gets to return after it is told to stop.
pub(super) const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Whether `task` can still be canceled: `Ok(false)` when it already is
/// (canceling twice succeeds), an error when it ended otherwise.
pub(super) fn cancelable(task: &Task) -> Result<bool, A2aError> {
    match task.status.state {
        TaskState::Canceled => Ok(false),
        state if state.is_terminal() => Err(A2aError::task_not_cancelable(&task.id, state)),
        _ => Ok(true),
    }
}

/// The status update that cancels a task, carrying the cancel call's metadata.
pub(super) fn canceled_event(
    task_id: &str,
    context_id: &str,
    metadata: Option<Metadata>,
) -> StreamResponse {
    let mut update = TaskStatusUpdateEvent::new(task_id, context_id, TaskState::Canceled);
    update.metadata = metadata;
    update.into()
}

/// Asks the agent whether it agrees to the cancel. A hook that does not answer
/// within the grace period is taken as agreeing: a cancel must not hang.
pub(super) async fn run_cancel_hook(shared: &Shared, ctx: RequestContext) -> Result<(), A2aError> {
    let task_id = ctx.task_id.clone();
    match tokio::time::timeout(shared.config.cancel_grace, shared.executor.cancel(ctx)).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!(%task_id, "agent cancel hook timed out; canceling anyway");
            Ok(())
        }
    }
}

impl Executions {
    /// Cancels task `task_id` on behalf of `call` and returns it as it then stands.
    pub(crate) async fn cancel(
        &self,
        call: &CallContext,
        task_id: &str,
        metadata: Option<Metadata>,
    ) -> Result<Task, A2aError> {
        let caller = call.caller();
        let store = self.shared.store.as_ref();
        let stored = store.get(&caller, task_id).await?;
        if !cancelable(&stored.task)? {
            return Ok(stored.task);
        }
        if let Some(result) = self.cancel_live(call, task_id, metadata.clone()).await {
            let task = store.get(&caller, task_id).await?.task;
            return match result {
                Ok(()) => Ok(task),
                // Lost a race with another cancel: the task is canceled all the same.
                Err(_) if task.status.state == TaskState::Canceled => Ok(task),
                Err(err) => Err(err),
            };
        }
        // Running on another node of the cluster: that node cancels it.
        let stored = if self.cancel_remote(call, task_id, metadata.clone()).await? {
            let stored = store.get(&caller, task_id).await?;
            if !cancelable(&stored.task)? {
                return Ok(stored.task);
            }
            stored
        } else {
            stored
        };
        // No execution runs (the task waits for input, or its execution just
        // ended, or its node is gone): the hook sees the task as stored, then
        // the write is optimistic.
        let hook_ctx = RequestContext::for_cancel(
            stored.task.clone(),
            call.clone(),
            metadata.clone(),
            CancellationToken::new(),
        );
        run_cancel_hook(&self.shared, hook_ctx).await?;
        let mut current = Current::from(stored);
        let event = canceled_event(task_id, &current.task.context_id, metadata);
        match persist(
            store,
            &caller,
            &mut current,
            &Cause::event(&event),
            self.shared.config.max_history,
            // A caller waits on this write: it fails fast rather than hang.
            std::time::Duration::ZERO,
            cancelable,
        )
        .await?
        {
            Persisted::Written(version) => {
                let state = TaskState::Canceled;
                super::publish(
                    &self.shared,
                    &caller,
                    task_id,
                    Arc::new(event),
                    version,
                    state,
                )
                .await;
                // An execution that started meanwhile (a job resumed after a
                // restart) sees the task canceled and stops.
                let _ = self.cancel_live(call, task_id, None).await;
                super::jobs::record_cancel(&self.shared, task_id).await;
            }
            // Unfenced: no lease rides along with a cancel of no execution.
            Persisted::Moot | Persisted::LeaseLost => {}
        }
        Ok(std::sync::Arc::unwrap_or_clone(current.task))
    }

    /// Hands the cancel to `task_id`'s running execution. `None`: none runs.
    async fn cancel_live(
        &self,
        call: &CallContext,
        task_id: &str,
        metadata: Option<Metadata>,
    ) -> Option<Result<(), A2aError>> {
        let signals = {
            let live = self.lock_live();
            let entry = live.get(task_id)?;
            if entry.caller != call.caller() {
                return Some(Err(A2aError::task_not_found(task_id)));
            }
            entry.signals.clone()
        };
        let (reply, answer) = oneshot::channel();
        let command = Control::Cancel {
            reply,
            call: Box::new(call.clone()),
            metadata,
        };
        if signals.send(command).is_err() {
            return None;
        }
        // A dropped reply means the execution ended first; the caller re-reads the store.
        answer.await.ok()
    }
}
