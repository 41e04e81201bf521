//! The tonic `A2AService` over an [`A2aService`], and a router that serves
//! gRPC next to JSON-RPC and HTTP+JSON on one port.
//!
//! One port, because hyper serves HTTP/1.1 and HTTP/2 (h2c, or h2 by ALPN
//! over TLS) on the same socket and gRPC's paths (`/lf.a2a.v1.A2AService/...`)
//! never collide with the A2A HTTP paths: one listener to run and secure, and
//! the card lists one host.

use std::pin::Pin;

use a2a_core::{
    A2aError, AgentCard, ListTaskPushNotificationConfigsResponse, ListTasksResponse,
    SendMessageResponse, Task, TaskPushNotificationConfig,
};
use a2a_server::{A2aService, CallContext, Request, Response, ServiceParams};
use futures::{Stream, StreamExt};
use tonic::Status;
use tonic::metadata::{MetadataMap, MetadataValue};

use crate::convert::{FromProto, ToProto};
use crate::error::to_status;
use crate::pb;
use crate::pb::a2a_service_server::{A2aService as GrpcA2aService, A2aServiceServer};

/// The stream type of the streaming rpcs.
pub type GrpcEventStream = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// Serves `A2AService` over gRPC for an [`A2aService`] (and so for any `RequestHandler`).
#[derive(Debug, Clone)]
pub struct GrpcService {
    service: A2aService,
}

impl GrpcService {
    /// A gRPC front for `service`.
    pub fn new(service: A2aService) -> Self {
        GrpcService { service }
    }

    /// The tonic server, ready for `tonic::transport::Server::add_service`.
    pub fn into_server(self) -> A2aServiceServer<Self> {
        A2aServiceServer::new(self)
    }

    async fn call(
        &self,
        metadata: MetadataMap,
        request: Request,
    ) -> Result<(CallContext, Response), Status> {
        let params = ServiceParams::from_headers(metadata.into_headers());
        let mut ctx = CallContext::new(request.method(), params)
            .with_binding(a2a_server::telemetry::binding::GRPC);
        match self.service.call(&mut ctx, request).await {
            Ok(response) => Ok((ctx, response)),
            Err(err) => Err(to_status(&err)),
        }
    }
}

fn decode<T: FromProto>(proto: T::Proto) -> Result<T, Status> {
    T::from_proto(proto).map_err(|err| to_status(&A2aError::from(err)))
}

fn reply<T>(ctx: &CallContext, message: T) -> tonic::Response<T> {
    let mut response = tonic::Response::new(message);
    if !ctx.activated_extensions.is_empty() {
        if let Ok(value) = MetadataValue::try_from(ctx.activated_extensions.join(", ")) {
            response.metadata_mut().insert("a2a-extensions", value);
        }
    }
    response
}

fn unexpected(response: &Response) -> Status {
    to_status(&A2aError::internal(format!(
        "unexpected handler answer {response:?}"
    )))
}

impl GrpcService {
    /// One unary rpc: its message decoded into the call `wrap` makes, the
    /// service's answer taken as its kind `R` and encoded.
    async fn unary<T, R>(
        &self,
        request: tonic::Request<T::Proto>,
        wrap: fn(T) -> Request,
    ) -> Result<tonic::Response<R::Proto>, Status>
    where
        T: FromProto,
        R: ToProto + TryFrom<Response, Error = Response>,
    {
        let (metadata, _, message) = request.into_parts();
        let (ctx, response) = self.call(metadata, wrap(decode(message)?)).await?;
        let answer = R::try_from(response).map_err(|other| unexpected(&other))?;
        Ok(reply(&ctx, answer.to_proto()))
    }

    /// One server-streaming rpc: as [`GrpcService::unary`], the answer
    /// being the stream of events.
    async fn streaming<T: FromProto>(
        &self,
        request: tonic::Request<T::Proto>,
        wrap: fn(T) -> Request,
    ) -> Result<tonic::Response<GrpcEventStream>, Status> {
        let (metadata, _, message) = request.into_parts();
        let (ctx, response) = self.call(metadata, wrap(decode(message)?)).await?;
        match response {
            Response::Stream(events) => {
                let events = events.map(|item| match item {
                    Ok(event) => Ok(event.to_proto()),
                    Err(err) => Err(to_status(&err)),
                });
                Ok(reply(&ctx, Box::pin(events) as GrpcEventStream))
            }
            other => Err(unexpected(&other)),
        }
    }
}

/// tonic's service trait: one line per rpc, naming the call it makes and
/// the answer it expects.
#[tonic::async_trait]
impl GrpcA2aService for GrpcService {
    type SendStreamingMessageStream = GrpcEventStream;
    type SubscribeToTaskStream = GrpcEventStream;

    async fn send_message(
        &self,
        request: tonic::Request<pb::SendMessageRequest>,
    ) -> Result<tonic::Response<pb::SendMessageResponse>, Status> {
        self.unary::<_, SendMessageResponse>(request, |r| Request::SendMessage(Box::new(r)))
            .await
    }

    async fn send_streaming_message(
        &self,
        request: tonic::Request<pb::SendMessageRequest>,
    ) -> Result<tonic::Response<GrpcEventStream>, Status> {
        self.streaming(request, |r| Request::SendStreamingMessage(Box::new(r)))
            .await
    }

    async fn get_task(
        &self,
        request: tonic::Request<pb::GetTaskRequest>,
    ) -> Result<tonic::Response<pb::Task>, Status> {
        self.unary::<_, Task>(request, Request::GetTask).await
    }

    async fn list_tasks(
        &self,
        request: tonic::Request<pb::ListTasksRequest>,
    ) -> Result<tonic::Response<pb::ListTasksResponse>, Status> {
        self.unary::<_, ListTasksResponse>(request, Request::ListTasks)
            .await
    }

    async fn cancel_task(
        &self,
        request: tonic::Request<pb::CancelTaskRequest>,
    ) -> Result<tonic::Response<pb::Task>, Status> {
        self.unary::<_, Task>(request, Request::CancelTask).await
    }

    async fn subscribe_to_task(
        &self,
        request: tonic::Request<pb::SubscribeToTaskRequest>,
    ) -> Result<tonic::Response<GrpcEventStream>, Status> {
        self.streaming(request, Request::SubscribeToTask).await
    }

    async fn create_task_push_notification_config(
        &self,
        request: tonic::Request<pb::TaskPushNotificationConfig>,
    ) -> Result<tonic::Response<pb::TaskPushNotificationConfig>, Status> {
        self.unary::<_, TaskPushNotificationConfig>(request, Request::CreatePushConfig)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: tonic::Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<pb::TaskPushNotificationConfig>, Status> {
        self.unary::<_, TaskPushNotificationConfig>(request, Request::GetPushConfig)
            .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: tonic::Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<tonic::Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary::<_, ListTaskPushNotificationConfigsResponse>(request, Request::ListPushConfigs)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        request: tonic::Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<tonic::Response<pb::AgentCard>, Status> {
        self.unary::<_, AgentCard>(request, Request::GetExtendedAgentCard)
            .await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: tonic::Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        self.unary::<_, ()>(request, Request::DeletePushConfig)
            .await
    }
}

/// The largest gRPC response the server encodes (32 MiB): a task with a long
/// history or large artifacts, but not an unbounded one.
pub const MAX_RESPONSE_MESSAGE: usize = 32 * 1024 * 1024;

/// One router serving `service` over JSON-RPC, HTTP+JSON, gRPC and the agent card.
///
/// Serve it with `axum::serve`: it answers HTTP/1.1 and h2c on the same port;
/// or with [`a2a_server::http::serve_with`], for connection limits and TLS
/// (`ServeConfig::with_tls`; the card's gRPC URL is then `https://host:port`).
/// gRPC requests are held to the same size as HTTP bodies
/// ([`HttpConfig::body_limit`](a2a_server::http::HttpConfig::body_limit));
/// responses to [`MAX_RESPONSE_MESSAGE`].
///
/// The 0.3 service (`a2a.v1.A2AService`) is served too, and the card lists
/// gRPC among the bindings that speak 0.3 (see
/// [`HttpConfig::v03_bindings`](a2a_server::http::HttpConfig::v03_bindings)).
pub fn router(service: A2aService, mut config: a2a_server::http::HttpConfig) -> axum::Router {
    let body_limit = config.body_limit;
    let grpc = a2a_core::binding::GRPC;
    if !config.v03_bindings.is_empty() && !config.v03_bindings.iter().any(|b| b == grpc) {
        config.v03_bindings.push(grpc.to_owned());
    }
    with_grpc(
        a2a_server::http::router(service.clone(), config),
        service,
        body_limit,
    )
}

/// Adds the gRPC binding of `service` to `router` (requests up to
/// `body_limit` bytes), on the gRPC service's own paths: for a router built
/// piece by piece, where [`router`] does it all at once. The 0.3 service
/// (`a2a.v1.A2AService`) gets paths of its own, which 1.0 calls never reach.
pub fn with_grpc(router: axum::Router, service: A2aService, body_limit: usize) -> axum::Router {
    use tower::ServiceExt as _;
    let grpc = GrpcService::new(service.clone())
        .into_server()
        .max_decoding_message_size(body_limit)
        .max_encoding_message_size(MAX_RESPONSE_MESSAGE);
    let path = format!("/{}/{{*rest}}", crate::SERVICE_NAME);
    let grpc = grpc.map_request(|request: axum::http::Request<axum::body::Body>| {
        request.map(tonic::body::Body::new)
    });
    let v03 = crate::v03::GrpcServiceV03::new(service)
        .into_server()
        .max_decoding_message_size(body_limit)
        .max_encoding_message_size(MAX_RESPONSE_MESSAGE)
        .map_request(|request: axum::http::Request<axum::body::Body>| {
            request.map(tonic::body::Body::new)
        });
    let v03_path = format!("/{}/{{*rest}}", crate::v03::SERVICE_NAME);
    // Each 1.0 method on a path of its own: a wildcard match costs the
    // router its captured parameter (about 2,000 instructions a call). The
    // wildcard stays for names the service lacks, which tonic answers with
    // UNIMPLEMENTED.
    let router = a2a_core::Method::ALL
        .into_iter()
        .fold(router, |router, method| {
            router.route_service(&crate::method_path(method), grpc.clone())
        });
    router
        .route_service(&path, grpc)
        .route_service(&v03_path, v03)
}
