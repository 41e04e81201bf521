//! The 0.3 `a2a.v1.A2AService` over an [`A2aService`]: each rpc read into
//! the 1.0 call it stands for, served like any other, answered in 0.3 form.

use std::pin::Pin;

use a2a_core::A2aError;
use a2a_core::v03::{self, proto};
use a2a_server::{A2aService, CallContext, Request, Response, ServiceParams};
use futures::{Stream, StreamExt};
use tonic::Status;
use tonic::metadata::MetadataMap;

use super::pb;
use super::pb::a2a_service_server::{A2aService as GrpcA2aService, A2aServiceServer};
use super::{convert, to_status};

/// The stream type of the 0.3 streaming rpcs.
pub type GrpcV03EventStream =
    Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// Serves the 0.3 `a2a.v1.A2AService` for an [`A2aService`].
#[derive(Debug, Clone)]
pub struct GrpcServiceV03 {
    service: A2aService,
}

impl GrpcServiceV03 {
    /// A 0.3 gRPC front for `service`.
    pub fn new(service: A2aService) -> Self {
        GrpcServiceV03 { service }
    }

    /// The tonic server, ready for `tonic::transport::Server::add_service`.
    pub fn into_server(self) -> A2aServiceServer<Self> {
        A2aServiceServer::new(self)
    }

    async fn call(&self, metadata: MetadataMap, request: Request) -> Result<Response, Status> {
        let mut headers = metadata.into_headers();
        // Served as a 1.0 call from here on: say so, so a version policy
        // that refuses a missing version lets it through.
        headers.insert(
            "a2a-version",
            axum::http::HeaderValue::from_static(a2a_core::PROTOCOL_VERSION),
        );
        let params = ServiceParams::from_headers(headers);
        let mut ctx = CallContext::new(request.method(), params)
            .with_binding(a2a_server::telemetry::binding::GRPC);
        let answer = self.service.call(&mut ctx, request).await;
        answer.map_err(|err| to_status(&err))
    }
}

fn reply<T>(message: T) -> tonic::Response<T> {
    tonic::Response::new(message)
}

fn unexpected(response: &Response) -> Status {
    to_status(&A2aError::internal(format!(
        "unexpected handler answer {response:?}"
    )))
}

fn bad(err: A2aError) -> Status {
    to_status(&err)
}

/// The task id in a resource name (`tasks/{id}…`), or invalid params.
fn task_id(name: &str) -> Result<String, Status> {
    proto::task_id_of(name).map(str::to_owned).ok_or_else(|| {
        bad(A2aError::invalid_params(format!(
            "no task in name {name:?}"
        )))
    })
}

fn send_call(message: pb::SendMessageRequest) -> Result<a2a_core::SendMessageRequest, Status> {
    convert::send_request_in(message)
        .and_then(v03::MessageSendParams::into_v1)
        .map_err(bad)
}

fn task_reply(response: Response) -> Result<tonic::Response<pb::Task>, Status> {
    match response {
        Response::Task(task) => Ok(reply(convert::task_out(v03::Task::from_v1(task)))),
        other => Err(unexpected(&other)),
    }
}

fn config_reply(
    response: Response,
) -> Result<tonic::Response<pb::TaskPushNotificationConfig>, Status> {
    match response {
        Response::PushConfig(config) => Ok(reply(convert::task_push_out(
            v03::TaskPushNotificationConfig::from_v1(config),
        ))),
        other => Err(unexpected(&other)),
    }
}

fn stream(response: Response) -> Result<tonic::Response<GrpcV03EventStream>, Status> {
    match response {
        Response::Stream(events) => {
            let events = events.map(|item| match item {
                Ok(event) => Ok(convert::event_out(v03::Event::from_v1(event))),
                Err(err) => Err(to_status(&err)),
            });
            Ok(reply(Box::pin(events) as GrpcV03EventStream))
        }
        other => Err(unexpected(&other)),
    }
}

#[tonic::async_trait]
impl GrpcA2aService for GrpcServiceV03 {
    async fn send_message(
        &self,
        request: tonic::Request<pb::SendMessageRequest>,
    ) -> Result<tonic::Response<pb::SendMessageResponse>, Status> {
        let (metadata, _, message) = request.into_parts();
        let call = Request::SendMessage(Box::new(send_call(message)?));
        match self.call(metadata, call).await? {
            Response::SendMessage(r) => Ok(reply(convert::send_response_out(
                v03::SendMessageResult::from_v1(r),
            ))),
            other => Err(unexpected(&other)),
        }
    }

    type SendStreamingMessageStream = GrpcV03EventStream;

    async fn send_streaming_message(
        &self,
        request: tonic::Request<pb::SendMessageRequest>,
    ) -> Result<tonic::Response<GrpcV03EventStream>, Status> {
        let (metadata, _, message) = request.into_parts();
        let call = Request::SendStreamingMessage(Box::new(send_call(message)?));
        stream(self.call(metadata, call).await?)
    }

    async fn get_task(
        &self,
        request: tonic::Request<pb::GetTaskRequest>,
    ) -> Result<tonic::Response<pb::Task>, Status> {
        let (metadata, _, message) = request.into_parts();
        let call = Request::GetTask(a2a_core::GetTaskRequest {
            id: task_id(&message.name)?,
            history_length: (message.history_length > 0).then_some(message.history_length),
            ..Default::default()
        });
        task_reply(self.call(metadata, call).await?)
    }

    async fn cancel_task(
        &self,
        request: tonic::Request<pb::CancelTaskRequest>,
    ) -> Result<tonic::Response<pb::Task>, Status> {
        let (metadata, _, message) = request.into_parts();
        let call = Request::CancelTask(a2a_core::CancelTaskRequest {
            id: task_id(&message.name)?,
            ..Default::default()
        });
        task_reply(self.call(metadata, call).await?)
    }

    type TaskSubscriptionStream = GrpcV03EventStream;

    async fn task_subscription(
        &self,
        request: tonic::Request<pb::TaskSubscriptionRequest>,
    ) -> Result<tonic::Response<GrpcV03EventStream>, Status> {
        let (metadata, _, message) = request.into_parts();
        let call = Request::SubscribeToTask(a2a_core::SubscribeToTaskRequest {
            id: task_id(&message.name)?,
            ..Default::default()
        });
        stream(self.call(metadata, call).await?)
    }

    async fn create_task_push_notification_config(
        &self,
        request: tonic::Request<pb::CreateTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<pb::TaskPushNotificationConfig>, Status> {
        let (metadata, _, message) = request.into_parts();
        let task = task_id(&message.parent)?;
        // The parent names the task; the config's own name is not needed.
        let config = message.config.unwrap_or_default().push_notification_config;
        let mut config = convert::push_in(config.unwrap_or_default());
        if config.id.is_none() && !message.config_id.is_empty() {
            config.id = Some(message.config_id);
        }
        let call = Request::CreatePushConfig(config.into_v1(task));
        config_reply(self.call(metadata, call).await?)
    }

    async fn get_task_push_notification_config(
        &self,
        request: tonic::Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<pb::TaskPushNotificationConfig>, Status> {
        let (metadata, _, message) = request.into_parts();
        let (task_id, id) = name_parts(&message.name)?;
        let call = Request::GetPushConfig(a2a_core::GetTaskPushNotificationConfigRequest {
            task_id,
            id,
            ..Default::default()
        });
        config_reply(self.call(metadata, call).await?)
    }

    async fn list_task_push_notification_config(
        &self,
        request: tonic::Request<pb::ListTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<pb::ListTaskPushNotificationConfigResponse>, Status> {
        let (metadata, _, message) = request.into_parts();
        let call = Request::ListPushConfigs(a2a_core::ListTaskPushNotificationConfigsRequest {
            task_id: task_id(&message.parent)?,
            page_size: message.page_size.max(0),
            page_token: message.page_token,
            ..Default::default()
        });
        match self.call(metadata, call).await? {
            Response::PushConfigs(list) => Ok(reply(pb::ListTaskPushNotificationConfigResponse {
                configs: list
                    .configs
                    .into_iter()
                    .map(|c| convert::task_push_out(v03::TaskPushNotificationConfig::from_v1(c)))
                    .collect(),
                next_page_token: list.next_page_token,
            })),
            other => Err(unexpected(&other)),
        }
    }

    async fn get_agent_card(
        &self,
        request: tonic::Request<pb::GetAgentCardRequest>,
    ) -> Result<tonic::Response<pb::AgentCard>, Status> {
        let (metadata, _, _) = request.into_parts();
        let call = Request::GetExtendedAgentCard(a2a_core::GetExtendedAgentCardRequest::default());
        let card = match self.call(metadata, call).await {
            Ok(Response::AgentCard(card)) => *card,
            Ok(other) => return Err(unexpected(&other)),
            // 0.3's GetAgentCard answered with the public card when there
            // was no other.
            Err(_) => self.service.card().clone(),
        };
        let mut card = card;
        if card.supported_interfaces.is_empty() {
            card.supported_interfaces = self.service.card().supported_interfaces.clone();
        }
        let old = v03::AgentCard::from_v1(&card).ok_or_else(|| {
            bad(A2aError::internal(
                "the agent lists no interface to give as its 0.3 url",
            ))
        })?;
        Ok(reply(convert::card_out(old)))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: tonic::Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let (metadata, _, message) = request.into_parts();
        let (task_id, id) = name_parts(&message.name)?;
        let call = Request::DeletePushConfig(a2a_core::DeleteTaskPushNotificationConfigRequest {
            task_id,
            id,
            ..Default::default()
        });
        match self.call(metadata, call).await? {
            Response::Empty => Ok(reply(())),
            other => Err(unexpected(&other)),
        }
    }
}

fn name_parts(name: &str) -> Result<(String, String), Status> {
    proto::push_config_name_parts(name)
        .map(|(task, config)| (task.to_owned(), config.to_owned()))
        .ok_or_else(|| {
            bad(A2aError::invalid_params(format!(
                "bad push config name {name:?}"
            )))
        })
}
