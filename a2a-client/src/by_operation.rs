//! [`ByOperation`]: a transport written one operation at a time.

use std::time::Duration;

use a2a_core::operation::{Request, Response, UnaryResponse};
use a2a_core::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;

use crate::{CallOptions, ClientError, EventStream, Transport, wrong_way};

/// A binding whose every operation needs a conversion of its own (the A2A
/// 0.3 bindings, say, whose methods, paths and shapes differ one by one),
/// written as one method per operation; it is a [`Transport`] through the
/// one dispatch here, so no such binding restates which request goes to
/// which method. Bindings that carry operations uniformly (JSON-RPC,
/// HTTP+JSON) implement [`Transport`] directly.
#[async_trait]
pub trait ByOperation: Send + Sync + 'static {
    /// `SendMessage`.
    async fn send_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, ClientError>;
    /// `SendStreamingMessage`.
    async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError>;
    /// `GetTask`.
    async fn get_task(
        &self,
        request: GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError>;
    /// `ListTasks`.
    async fn list_tasks(
        &self,
        request: ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, ClientError>;
    /// `CancelTask`.
    async fn cancel_task(
        &self,
        request: CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError>;
    /// `SubscribeToTask`.
    async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError>;
    /// `CreateTaskPushNotificationConfig`.
    async fn create_push_config(
        &self,
        request: TaskPushNotificationConfig,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError>;
    /// `GetTaskPushNotificationConfig`.
    async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError>;
    /// `ListTaskPushNotificationConfigs`.
    async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: &CallOptions,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError>;
    /// `DeleteTaskPushNotificationConfig`.
    async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<(), ClientError>;
    /// `GetExtendedAgentCard`.
    async fn get_extended_agent_card(
        &self,
        request: GetExtendedAgentCardRequest,
        options: &CallOptions,
    ) -> Result<AgentCard, ClientError>;

    /// The timeout of a unary call that sets none (see
    /// [`Transport::default_timeout`]).
    fn default_timeout(&self) -> Option<Duration> {
        None
    }
}

#[async_trait]
impl<T: ByOperation> Transport for T {
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        Ok(match request {
            Request::SendMessage(r) => Response::SendMessage(self.send_message(*r, options).await?),
            Request::GetTask(r) => Response::Task(self.get_task(r, options).await?),
            Request::ListTasks(r) => Response::ListTasks(self.list_tasks(r, options).await?),
            Request::CancelTask(r) => Response::Task(self.cancel_task(r, options).await?),
            Request::CreatePushConfig(r) => {
                Response::PushConfig(self.create_push_config(r, options).await?)
            }
            Request::GetPushConfig(r) => {
                Response::PushConfig(self.get_push_config(r, options).await?)
            }
            Request::ListPushConfigs(r) => {
                Response::PushConfigs(self.list_push_configs(r, options).await?)
            }
            Request::DeletePushConfig(r) => {
                self.delete_push_config(r, options).await?;
                Response::Empty
            }
            Request::GetExtendedAgentCard(r) => {
                Response::AgentCard(Box::new(self.get_extended_agent_card(r, options).await?))
            }
            streaming @ (Request::SendStreamingMessage(_) | Request::SubscribeToTask(_)) => {
                return Err(wrong_way(&streaming));
            }
        })
    }

    async fn stream(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        match request {
            Request::SendStreamingMessage(r) => self.send_streaming_message(*r, options).await,
            Request::SubscribeToTask(r) => self.subscribe_to_task(r, options).await,
            unary => Err(wrong_way(&unary)),
        }
    }

    fn default_timeout(&self) -> Option<Duration> {
        ByOperation::default_timeout(self)
    }
}
