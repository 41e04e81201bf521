//! The four push-notification config operations.

use a2a_core::{
    A2aError, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    TaskPushNotificationConfig,
};

use super::DefaultRequestHandler;
use crate::CallContext;
use crate::push::validate_config;

impl DefaultRequestHandler {
    /// Checks push support and that the caller owns the task (not-found otherwise).
    async fn owned_task(
        &self,
        ctx: &CallContext,
        task_id: &str,
    ) -> Result<&crate::push::PushDispatcher, A2aError> {
        let push = self.require_push()?;
        if task_id.is_empty() {
            return Err(A2aError::invalid_params("taskId is required"));
        }
        self.store.get(&ctx.caller(), task_id).await?;
        Ok(push)
    }

    pub(super) async fn create_push_config(
        &self,
        ctx: &CallContext,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let push = self.owned_task(ctx, &config.task_id).await?;
        validate_config(&config, &self.push_policy)?;
        config.tenant.clone_from(&ctx.tenant);
        push.save_config(&ctx.caller(), config).await
    }

    pub(super) async fn get_push_config(
        &self,
        ctx: &CallContext,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let push = self.owned_task(ctx, &request.task_id).await?;
        push.configs()
            .get(&ctx.caller(), &request.task_id, &request.id)
            .await?
            .ok_or_else(|| {
                A2aError::new(
                    a2a_core::ErrorKind::TaskNotFound,
                    format!(
                        "push notification config {} not found for task {}",
                        request.id, request.task_id
                    ),
                )
                .with_metadata("taskId", request.task_id.clone())
            })
    }

    pub(super) async fn list_push_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        let push = self.owned_task(ctx, &request.task_id).await?;
        let configs = push.configs().list(&ctx.caller(), &request.task_id).await?;
        if request.page_size < 0 {
            return Err(A2aError::invalid_params("pageSize must not be negative"));
        }
        let start = if request.page_token.is_empty() {
            0
        } else {
            request.page_token.parse::<usize>().map_err(|_| {
                A2aError::invalid_params(format!("invalid pageToken {:?}", request.page_token))
            })?
        };
        let size = usize::try_from(request.page_size)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(usize::MAX);
        let end = start.saturating_add(size).min(configs.len());
        let page = configs
            .get(start.min(end)..end)
            .unwrap_or_default()
            .to_vec();
        let next_page_token = if end < configs.len() {
            end.to_string()
        } else {
            String::new()
        };
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: page,
            next_page_token,
        })
    }

    pub(super) async fn delete_push_config(
        &self,
        ctx: &CallContext,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        let push = self.owned_task(ctx, &request.task_id).await?;
        Ok(push
            .configs()
            .delete(&ctx.caller(), &request.task_id, &request.id)
            .await?)
    }
}
