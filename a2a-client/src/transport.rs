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

    /// The timeout of a unary call that sets none, if the transport has one
    /// (a tracked blocking send keeps to it as a whole).
    fn default_timeout(&self) -> Option<std::time::Duration> {
        None
    }
}

/// Implements [`Transport`] for a JSON binding from two methods of its own:
/// `call(Method, &request, options)` for unary operations (its response read
/// as the operation's type) and `stream(Method, &request, options)` for the
/// streaming ones. The eleven operations are listed here once.
macro_rules! json_transport {
    ($transport:ty) => {
        #[async_trait::async_trait]
        impl $crate::Transport for $transport {
            async fn send_message(
                &self,
                request: a2a_core::SendMessageRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::SendMessageResponse, $crate::ClientError> {
                self.call(a2a_core::Method::SendMessage, &request, options)
                    .await
            }

            async fn send_streaming_message(
                &self,
                request: a2a_core::SendMessageRequest,
                options: &$crate::CallOptions,
            ) -> Result<$crate::EventStream, $crate::ClientError> {
                self.stream(a2a_core::Method::SendStreamingMessage, &request, options)
                    .await
            }

            async fn get_task(
                &self,
                request: a2a_core::GetTaskRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::Task, $crate::ClientError> {
                self.call(a2a_core::Method::GetTask, &request, options)
                    .await
            }

            async fn list_tasks(
                &self,
                request: a2a_core::ListTasksRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::ListTasksResponse, $crate::ClientError> {
                self.call(a2a_core::Method::ListTasks, &request, options)
                    .await
            }

            async fn cancel_task(
                &self,
                request: a2a_core::CancelTaskRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::Task, $crate::ClientError> {
                self.call(a2a_core::Method::CancelTask, &request, options)
                    .await
            }

            async fn subscribe_to_task(
                &self,
                request: a2a_core::SubscribeToTaskRequest,
                options: &$crate::CallOptions,
            ) -> Result<$crate::EventStream, $crate::ClientError> {
                self.stream(a2a_core::Method::SubscribeToTask, &request, options)
                    .await
            }

            async fn create_task_push_notification_config(
                &self,
                request: a2a_core::TaskPushNotificationConfig,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::TaskPushNotificationConfig, $crate::ClientError> {
                self.call(
                    a2a_core::Method::CreateTaskPushNotificationConfig,
                    &request,
                    options,
                )
                .await
            }

            async fn get_task_push_notification_config(
                &self,
                request: a2a_core::GetTaskPushNotificationConfigRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::TaskPushNotificationConfig, $crate::ClientError> {
                self.call(
                    a2a_core::Method::GetTaskPushNotificationConfig,
                    &request,
                    options,
                )
                .await
            }

            async fn list_task_push_notification_configs(
                &self,
                request: a2a_core::ListTaskPushNotificationConfigsRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::ListTaskPushNotificationConfigsResponse, $crate::ClientError>
            {
                self.call(
                    a2a_core::Method::ListTaskPushNotificationConfigs,
                    &request,
                    options,
                )
                .await
            }

            async fn delete_task_push_notification_config(
                &self,
                request: a2a_core::DeleteTaskPushNotificationConfigRequest,
                options: &$crate::CallOptions,
            ) -> Result<(), $crate::ClientError> {
                self.call::<_, serde::de::IgnoredAny>(
                    a2a_core::Method::DeleteTaskPushNotificationConfig,
                    &request,
                    options,
                )
                .await
                .map(drop)
            }

            async fn get_extended_agent_card(
                &self,
                request: a2a_core::GetExtendedAgentCardRequest,
                options: &$crate::CallOptions,
            ) -> Result<a2a_core::AgentCard, $crate::ClientError> {
                self.call(a2a_core::Method::GetExtendedAgentCard, &request, options)
                    .await
            }

            fn default_timeout(&self) -> Option<std::time::Duration> {
                Some(self.settings.timeout)
            }
        }
    };
}
pub(crate) use json_transport;
