//! GetTask, ListTasks, CancelTask, SubscribeToTask.

use a2a_core::{
    A2aError, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    StreamResponse, SubscribeToTaskRequest, Task,
};

use super::{DefaultRequestHandler, EventStream, validate};
use crate::CallContext;
use crate::execution::StreamKind;

/// Page size of ListTasks when the client sets none.
const DEFAULT_PAGE_SIZE: i32 = 50;

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
        self.executions
            .cancel(ctx, &request.id, request.metadata)
            .await
    }

    pub(super) async fn subscribe(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        let caller = ctx.caller();
        // Subscribe before reading the snapshot: nothing can fall in between.
        let updates = self.executions.subscribe(&request.id, &caller)?;
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
