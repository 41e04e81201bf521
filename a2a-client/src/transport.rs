//! `Transport`: one binding's way of carrying the eleven operations.

use std::pin::Pin;
use std::time::Duration;

use a2a_core::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;
use futures::Stream;

use crate::ClientError;

/// A stream of events from a streaming operation.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

/// Per-call service parameters and limits.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Extra service parameters (HTTP headers / gRPC metadata), e.g. `authorization`.
    pub headers: Vec<(String, String)>,
    /// Extension URIs to request (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// Extra query parameters (HTTP bindings only; API keys sent in the query).
    pub query: Vec<(String, String)>,
    /// Timeout of a unary call (the transport's default when `None`).
    pub timeout: Option<Duration>,
    /// Longest silence tolerated between two stream events (the transport's default when `None`).
    pub idle_timeout: Option<Duration>,
}

impl CallOptions {
    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Requests an extension.
    #[must_use]
    pub fn extension(mut self, uri: impl Into<String>) -> Self {
        self.extensions.push(uri.into());
        self
    }

    /// All service parameters to send, `A2A-Version` and `A2A-Extensions` included.
    pub fn service_params(&self) -> Vec<(String, String)> {
        let mut params = vec![(
            a2a_core::VERSION_HEADER.to_owned(),
            a2a_core::PROTOCOL_VERSION.to_owned(),
        )];
        if !self.extensions.is_empty() {
            params.push((
                a2a_core::EXTENSIONS_HEADER.to_owned(),
                self.extensions.join(", "),
            ));
        }
        params.extend(self.headers.iter().cloned());
        params
    }
}

/// The eleven operations over one binding. Implementations exist for
/// JSON-RPC and HTTP+JSON here, and for gRPC in `a2a-grpc`.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
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
    async fn create_task_push_notification_config(
        &self,
        request: TaskPushNotificationConfig,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError>;
    /// `GetTaskPushNotificationConfig`.
    async fn get_task_push_notification_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError>;
    /// `ListTaskPushNotificationConfigs`.
    async fn list_task_push_notification_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: &CallOptions,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError>;
    /// `DeleteTaskPushNotificationConfig`.
    async fn delete_task_push_notification_config(
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
}
