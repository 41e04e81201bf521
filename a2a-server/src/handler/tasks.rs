//! GetTask, ListTasks, CancelTask, SubscribeToTask.

use a2a_core::{
    A2aError, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskState, TaskStatusUpdateEvent,
};
use tokio_util::sync::CancellationToken;

use super::{DefaultRequestHandler, EventStream, validate};
use crate::execution::StreamKind;
use crate::execution::apply::apply;
use crate::store::{Cause, StoreError};
use crate::{CallContext, RequestContext};

/// Page size of ListTasks when the client sets none.
const DEFAULT_PAGE_SIZE: i32 = 50;

/// Attempts of an optimistic cancel write before giving up.
const CANCEL_ATTEMPTS: usize = 10;

fn check_cancelable(task: &Task) -> Result<bool, A2aError> {
    match task.status.state {
        TaskState::Canceled => Ok(false),
        state if state.is_terminal() => Err(A2aError::task_not_cancelable(&task.id, state)),
        _ => Ok(true),
    }
}

impl DefaultRequestHandler {
    pub(super) async fn get(
        &self,
        ctx: &CallContext,
        request: GetTaskRequest,
    ) -> Result<Task, A2aError> {
        validate::history_length(request.history_length)?;
        let mut task = self.store.get(&ctx.caller(), &request.id).await?.task;
        task.truncate_history(request.history_length);
        Ok(task)
    }

    pub(super) async fn list(
        &self,
        ctx: &CallContext,
        mut request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if !(1..=100).contains(&page_size) {
            return Err(A2aError::invalid_params(format!(
                "pageSize must be between 1 and 100, got {page_size}"
            )));
        }
        request.page_size = Some(page_size);
        validate::history_length(request.history_length)?;
        let mut response = self.store.list(&ctx.caller(), &request).await?;
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        for task in &mut response.tasks {
            task.truncate_history(request.history_length);
            if !include_artifacts {
                task.artifacts.clear();
            }
        }
        Ok(response)
    }

    pub(super) async fn cancel(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        let caller = ctx.caller();
        let stored = self.store.get(&caller, &request.id).await?;
        if !check_cancelable(&stored.task)? {
            return Ok(stored.task);
        }
        // A running execution cancels through its own pipeline, so cancel and
        // completion are decided in one place, in order.
        if let Some(result) = self
            .executions
            .cancel(ctx, &request.id, request.metadata.clone())
            .await
        {
            let task = self.store.get(&caller, &request.id).await?.task;
            return match result {
                Ok(()) => Ok(task),
                Err(_) if task.status.state == TaskState::Canceled => Ok(task),
                Err(err) => Err(err),
            };
        }
        // No execution is running (the task waits for input, or its execution
        // just ended): cancel the stored task with an optimistic write.
        let hook_ctx = RequestContext::for_cancel(
            stored.task.clone(),
            ctx.clone(),
            request.metadata.clone(),
            CancellationToken::new(),
        );
        self.executions.shared().executor.cancel(hook_ctx).await?;
        for _attempt in 0..CANCEL_ATTEMPTS {
            let stored = self.store.get(&caller, &request.id).await?;
            if !check_cancelable(&stored.task)? {
                return Ok(stored.task);
            }
            let mut task = stored.task;
            let mut update = TaskStatusUpdateEvent::new(
                task.id.clone(),
                task.context_id.clone(),
                TaskState::Canceled,
            );
            update.metadata.clone_from(&request.metadata);
            let event = StreamResponse::StatusUpdate(update);
            apply(&mut task, &event)?;
            match self
                .store
                .update(&caller, &task, stored.version, &Cause::event(&event))
                .await
            {
                Ok(version) => {
                    self.executions
                        .publish(&caller, &task.id, event, version, TaskState::Canceled)
                        .await;
                    return Ok(task);
                }
                Err(StoreError::Conflict { .. }) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Err(A2aError::internal(
            "the task kept changing while being canceled; try again",
        ))
    }

    pub(super) async fn subscribe(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let caller = ctx.caller();
        // Subscribe before reading the snapshot: nothing can fall in between.
        let updates = self.executions.subscribe(&request.id);
        let stored = self.store.get(&caller, &request.id).await?;
        if stored.task.status.state.is_terminal() {
            return Err(A2aError::unsupported_operation(format!(
                "task {} is {} and will not change; use GetTask",
                stored.task.id, stored.task.status.state
            )));
        }
        let first = Some((StreamResponse::Task(stored.task), stored.version));
        let stream = self
            .executions
            .stream(updates, first, StreamKind::Subscription, caller, None);
        Ok(Box::pin(stream))
    }
}
