//! The generated server routes all eleven `/lf.a2a.v1.A2AService/<Rpc>` paths.

use std::pin::Pin;

use a2a_grpc::pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_grpc::pb::{self};
use a2a_grpc::{SERVICE_NAME, method_path};
use tonic::{Request, Response, Status};
use tower::ServiceExt as _;

/// Answers every rpc with an ABORTED status naming the rpc, so a test can tell
/// which method a path reached.
struct Echo;

type EventStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

fn named<T>(name: &str) -> Result<Response<T>, Status> {
    Err(Status::aborted(name))
}

#[tonic::async_trait]
impl A2aService for Echo {
    async fn send_message(
        &self,
        _: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        named("SendMessage")
    }
    type SendStreamingMessageStream = EventStream;
    async fn send_streaming_message(
        &self,
        _: Request<pb::SendMessageRequest>,
    ) -> Result<Response<EventStream>, Status> {
        named("SendStreamingMessage")
    }
    async fn get_task(&self, _: Request<pb::GetTaskRequest>) -> Result<Response<pb::Task>, Status> {
        named("GetTask")
    }
    async fn list_tasks(
        &self,
        _: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        named("ListTasks")
    }
    async fn cancel_task(
        &self,
        _: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        named("CancelTask")
    }
    type SubscribeToTaskStream = EventStream;
    async fn subscribe_to_task(
        &self,
        _: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<EventStream>, Status> {
        named("SubscribeToTask")
    }
    async fn create_task_push_notification_config(
        &self,
        _: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        named("CreateTaskPushNotificationConfig")
    }
    async fn get_task_push_notification_config(
        &self,
        _: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        named("GetTaskPushNotificationConfig")
    }
    async fn list_task_push_notification_configs(
        &self,
        _: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        named("ListTaskPushNotificationConfigs")
    }
    async fn get_extended_agent_card(
        &self,
        _: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        named("GetExtendedAgentCard")
    }
    async fn delete_task_push_notification_config(
        &self,
        _: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        named("DeleteTaskPushNotificationConfig")
    }
}

/// Sends one empty (default) protobuf message to `path` and returns grpc-status and grpc-message.
async fn call(path: &str) -> (String, String) {
    let frame = bytes::Bytes::from_static(&[0, 0, 0, 0, 0]);
    let request = http::Request::post(path)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::new(http_body_util::Full::new(frame)))
        .expect("valid request");
    let response = A2aServiceServer::new(Echo)
        .oneshot(request)
        .await
        .expect("infallible");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().expect("ASCII header").to_owned())
            .unwrap_or_default()
    };
    (header("grpc-status"), header("grpc-message"))
}

#[tokio::test]
async fn all_eleven_paths_reach_their_rpc() {
    assert_eq!(
        <A2aServiceServer<Echo> as tonic::server::NamedService>::NAME,
        SERVICE_NAME
    );
    for method in a2a_core::Method::ALL {
        let path = method_path(method);
        assert!(path.starts_with("/lf.a2a.v1.A2AService/"), "{path}");
        let (status, message) = call(&path).await;
        assert_eq!(status, "10", "{path} should reach the rpc (ABORTED)");
        assert_eq!(message, method.name(), "{path}");
    }
}

#[tokio::test]
async fn old_and_unknown_paths_are_unimplemented() {
    for path in [
        "/a2a.v1.A2AService/SendMessage",
        "/lf.a2a.v1.A2AService/TaskSubscription",
    ] {
        let (status, _) = call(path).await;
        assert_eq!(status, "12", "{path}");
    }
}
