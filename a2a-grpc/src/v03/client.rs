//! The gRPC transport to an A2A 0.3 agent: the 1.0 operations sent as the
//! 0.3 rpcs of `a2a.v1.A2AService`, the answers converted back to 1.0.

use a2a_client::{
    ByOperation, CallOptions, ClientError, ClientErrorKind, EventStream, HttpSettings,
    RootCertificates,
};
use a2a_core::v03::{self, proto};
use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;
use tonic::Status;
use tonic::transport::Channel;

use super::pb::a2a_service_client::A2aServiceClient;
use super::{convert, from_status, pb};
use crate::client::{Calls, channel, client_error_with};
use crate::{GrpcSettings, MAX_REQUEST, MAX_RESPONSE};

/// Talks A2A 0.3 gRPC to one endpoint (picked by the client for an
/// interface whose `protocolVersion` is `0.3`).
#[derive(Debug, Clone)]
pub struct GrpcV03Transport {
    client: A2aServiceClient<Channel>,
    calls: Calls,
}

fn status_error(status: Status) -> ClientError {
    client_error_with(status, from_status)
}

fn from_v03(err: A2aError) -> ClientError {
    ClientError::new(
        ClientErrorKind::Decode,
        format!("0.3 answer: {}", err.message()),
    )
}

fn event(message: pb::StreamResponse) -> Result<StreamResponse, ClientError> {
    convert::event_in(message)
        .and_then(v03::Event::into_v1)
        .map_err(from_v03)
}

fn task(message: pb::Task) -> Result<Task, ClientError> {
    convert::task_in(message)
        .and_then(v03::Task::into_v1)
        .map_err(from_v03)
}

fn config(
    message: pb::TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, ClientError> {
    convert::task_push_in(message)
        .map(v03::TaskPushNotificationConfig::into_v1)
        .map_err(from_v03)
}

fn send_request(request: SendMessageRequest) -> pb::SendMessageRequest {
    convert::send_request_out(v03::MessageSendParams::from_v1(request))
}

impl GrpcV03Transport {
    /// A transport for `url` (`host:port` or an `http(s)://` URL), made on
    /// first use; an `https://` server is verified against `roots`.
    pub fn connect_lazy_with(
        url: &str,
        roots: &RootCertificates,
        grpc: &GrpcSettings,
    ) -> Result<Self, ClientError> {
        Ok(GrpcV03Transport {
            client: A2aServiceClient::new(channel(url, roots, grpc)?)
                .max_decoding_message_size(MAX_RESPONSE)
                .max_encoding_message_size(MAX_REQUEST),
            calls: Calls::default(),
        })
    }

    /// Replaces the timeouts.
    #[must_use]
    pub fn with_settings(mut self, settings: HttpSettings) -> Self {
        self.calls.settings = settings;
        self
    }

    fn unary<T: prost::Message>(
        &self,
        message: T,
        options: &CallOptions,
    ) -> Result<tonic::Request<T>, ClientError> {
        self.calls.request(message, options, true)
    }

    fn streamed(
        &self,
        response: Result<tonic::Response<tonic::Streaming<pb::StreamResponse>>, Status>,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let stream = response.map_err(status_error)?.into_inner();
        Ok(self.calls.events(stream, options, event, from_status))
    }
}

/// The operations one by one, as 0.3 carries them.
#[async_trait]
impl ByOperation for GrpcV03Transport {
    async fn send_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, ClientError> {
        let request = self.unary(send_request(request), options)?;
        let answer = self
            .client
            .clone()
            .send_message(request)
            .await
            .map_err(status_error)?;
        convert::send_response_in(answer.into_inner())
            .and_then(v03::SendMessageResult::into_v1)
            .map_err(from_v03)
    }

    async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let request = self.calls.request(send_request(request), options, false)?;
        let response = self.client.clone().send_streaming_message(request).await;
        self.streamed(response, options)
    }

    async fn get_task(
        &self,
        request: GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let message = pb::GetTaskRequest {
            name: proto::task_name(&request.id),
            history_length: request.history_length.unwrap_or(0),
        };
        let request = self.unary(message, options)?;
        let answer = self
            .client
            .clone()
            .get_task(request)
            .await
            .map_err(status_error)?;
        task(answer.into_inner())
    }

    async fn list_tasks(
        &self,
        _request: ListTasksRequest,
        _options: &CallOptions,
    ) -> Result<ListTasksResponse, ClientError> {
        Err(ClientError::new(
            ClientErrorKind::Unsupported,
            "ListTasks is not part of A2A 0.3, which this agent speaks",
        ))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let message = pb::CancelTaskRequest {
            name: proto::task_name(&request.id),
        };
        let request = self.unary(message, options)?;
        let answer = self
            .client
            .clone()
            .cancel_task(request)
            .await
            .map_err(status_error)?;
        task(answer.into_inner())
    }

    async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let message = pb::TaskSubscriptionRequest {
            name: proto::task_name(&request.id),
        };
        let request = self.calls.request(message, options, false)?;
        let response = self.client.clone().task_subscription(request).await;
        self.streamed(response, options)
    }

    async fn create_push_config(
        &self,
        request: TaskPushNotificationConfig,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let parent = proto::task_name(&request.task_id);
        let wanted = v03::TaskPushNotificationConfig::from_v1(request);
        let message = pb::CreateTaskPushNotificationConfigRequest {
            parent,
            config_id: wanted
                .push_notification_config
                .id
                .clone()
                .unwrap_or_default(),
            config: Some(convert::task_push_out(wanted)),
        };
        let request = self.unary(message, options)?;
        let answer = self
            .client
            .clone()
            .create_task_push_notification_config(request)
            .await
            .map_err(status_error)?;
        config(answer.into_inner())
    }

    async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let message = pb::GetTaskPushNotificationConfigRequest {
            name: format!(
                "tasks/{}/pushNotificationConfigs/{}",
                request.task_id, request.id
            ),
        };
        let request = self.unary(message, options)?;
        let answer = self
            .client
            .clone()
            .get_task_push_notification_config(request)
            .await
            .map_err(status_error)?;
        config(answer.into_inner())
    }

    async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: &CallOptions,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        let message = pb::ListTaskPushNotificationConfigRequest {
            parent: proto::task_name(&request.task_id),
            page_size: request.page_size,
            page_token: request.page_token,
        };
        let request = self.unary(message, options)?;
        let answer = self
            .client
            .clone()
            .list_task_push_notification_config(request)
            .await
            .map_err(status_error)?
            .into_inner();
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: answer
                .configs
                .into_iter()
                .map(config)
                .collect::<Result<_, _>>()?,
            next_page_token: answer.next_page_token,
        })
    }

    async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<(), ClientError> {
        let message = pb::DeleteTaskPushNotificationConfigRequest {
            name: format!(
                "tasks/{}/pushNotificationConfigs/{}",
                request.task_id, request.id
            ),
        };
        let request = self.unary(message, options)?;
        self.client
            .clone()
            .delete_task_push_notification_config(request)
            .await
            .map_err(status_error)?;
        Ok(())
    }

    async fn get_extended_agent_card(
        &self,
        _request: GetExtendedAgentCardRequest,
        options: &CallOptions,
    ) -> Result<AgentCard, ClientError> {
        let request = self.unary(pb::GetAgentCardRequest {}, options)?;
        let answer = self
            .client
            .clone()
            .get_agent_card(request)
            .await
            .map_err(status_error)?;
        Ok(convert::card_in(answer.into_inner()).into_v1())
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.calls.settings.timeout)
    }
}
