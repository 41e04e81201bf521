//! `lf.a2a.v1.A2AService` over an [`A2aService`] (one tower service that
//! reads the operation from the rpc's path, not tonic's generated
//! per-rpc trait), and a router that serves gRPC next to JSON-RPC and
//! HTTP+JSON on one port.
//!
//! One port, because hyper serves HTTP/1.1 and HTTP/2 (h2c, or h2 by ALPN
//! over TLS) on the same socket and gRPC's paths (`/lf.a2a.v1.A2AService/...`)
//! never collide with the A2A HTTP paths: one listener to run and secure, and
//! the card lists one host.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use a2a_core::operation::UnaryResponse;
use a2a_core::{A2aError, Method};
use a2a_server::{A2aService, CallContext, Request, Response, ServiceParams};
use futures::{Stream, StreamExt};
use prost::Message as _;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{BoxFuture, StdError, http};
use tonic::metadata::MetadataValue;
use tonic::server::{Grpc, NamedService, ServerStreamingService};

use crate::convert::{FromProto, ToProto};
use crate::error::to_status;
use crate::pb;

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

    /// The server, ready for `tonic::transport::Server::add_service` or an
    /// axum router's `route_service`.
    pub fn into_server(self) -> GrpcServer {
        GrpcServer {
            service: Arc::new(self),
            max_decoding_message_size: None,
            max_encoding_message_size: None,
        }
    }

    async fn call(
        &self,
        params: ServiceParams,
        extensions: &mut tonic::Extensions,
        request: Request,
    ) -> Result<(CallContext, Response), Status> {
        let (head, mut ctx) = crate::head::head_of(extensions, request.method(), params);
        match self.service.call_checked(&mut ctx, request, head).await {
            Ok(response) => Ok((ctx, response)),
            Err(err) => Err(to_status(&err)),
        }
    }
}

/// The tower service of `/lf.a2a.v1.A2AService/<Rpc>`: the rpc's name is the
/// [`Method`], its message is read as that operation's [`Request`], and the
/// answer written back; what each operation's messages are is said once, in
/// the codec it reads and writes them with.
#[derive(Debug, Clone)]
pub struct GrpcServer {
    service: Arc<GrpcService>,
    max_decoding_message_size: Option<usize>,
    max_encoding_message_size: Option<usize>,
}

impl GrpcServer {
    /// The largest request message accepted (tonic's default, 4 MiB, when unset).
    #[must_use]
    pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
        self.max_decoding_message_size = Some(limit);
        self
    }

    /// The largest response message sent (no limit when unset).
    #[must_use]
    pub fn max_encoding_message_size(mut self, limit: usize) -> Self {
        self.max_encoding_message_size = Some(limit);
        self
    }
}

impl NamedService for GrpcServer {
    const NAME: &'static str = crate::SERVICE_NAME;
}

impl<B> tower::Service<http::Request<B>> for GrpcServer
where
    B: tonic::codegen::Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let method = method_of_path(request.uri().path());
        let Some(method) = method else {
            let status = Status::unimplemented(format!("no rpc at {}", request.uri().path()));
            return Box::pin(async move { Ok(status.into_http()) });
        };
        let this = self.clone();
        Box::pin(async move {
            if !method.is_streaming() {
                return Ok(match this.unary(method, request).await {
                    Ok(response) => response,
                    Err(status) => status.into_http(),
                });
            }
            let mut grpc = Grpc::new(OperationCodec(method)).apply_max_message_size_config(
                this.max_decoding_message_size,
                this.max_encoding_message_size,
            );
            Ok(grpc.server_streaming(this, request).await)
        })
    }
}

impl GrpcServer {
    /// A unary rpc: its one message read, the operation called and its
    /// answer framed, with none of tonic's streaming codec (see [`crate::unary`]).
    async fn unary<B>(
        &self,
        method: Method,
        request: http::Request<B>,
    ) -> Result<http::Response<tonic::body::Body>, Status>
    where
        B: tonic::codegen::Body,
        B::Error: Into<StdError>,
    {
        crate::unary::refuse_compression(request.headers())?;
        let (mut parts, body) = request.into_parts();
        let limit = self
            .max_decoding_message_size
            .unwrap_or(crate::unary::DEFAULT_MAX_REQUEST);
        let message = crate::unary::read_message(body, limit).await?;
        let request = decode(method, message)?;
        let params = ServiceParams::from_headers(std::mem::take(&mut parts.headers));
        let (ctx, response) = self
            .service
            .call(params, &mut parts.extensions, request)
            .await?;
        let answer = match response.into_unary() {
            Ok(answer) if answer.is_answer_to(method) => GrpcAnswer::of(answer),
            Ok(answer) => return Err(unexpected(method, answer.kind())),
            Err(_) => return Err(unexpected(method, "Stream")),
        };
        let mut response = crate::unary::answer(answer.framed(self.max_encoding_message_size)?);
        let extensions =
            activated_extensions(&ctx).and_then(|v| http::HeaderValue::try_from(v).ok());
        if let Some(extensions) = extensions {
            response
                .headers_mut()
                .insert(http::HeaderName::from_static("a2a-extensions"), extensions);
        }
        Ok(response)
    }
}

impl ServerStreamingService<Request> for GrpcServer {
    type Response = GrpcAnswer;
    type ResponseStream = Pin<Box<dyn Stream<Item = Result<GrpcAnswer, Status>> + Send>>;
    type Future = BoxFuture<tonic::Response<Self::ResponseStream>, Status>;

    fn call(&mut self, request: tonic::Request<Request>) -> Self::Future {
        let service = self.service.clone();
        Box::pin(async move {
            let (metadata, mut extensions, request) = request.into_parts();
            let method = request.method();
            let params = ServiceParams::from_headers(metadata.into_headers());
            match service.call(params, &mut extensions, request).await? {
                (ctx, Response::Stream(events)) => {
                    let events = events.map(|item| match item {
                        Ok(event) => Ok(GrpcAnswer::Event(event)),
                        Err(err) => Err(to_status(&err)),
                    });
                    Ok(reply(&ctx, Box::pin(events) as Self::ResponseStream))
                }
                (_, other) => Err(unexpected(method, other.kind())),
            }
        })
    }
}

fn reply<T>(ctx: &CallContext, message: T) -> tonic::Response<T> {
    let mut response = tonic::Response::new(message);
    if let Some(value) = activated_extensions(ctx).and_then(|v| MetadataValue::try_from(v).ok()) {
        response.metadata_mut().insert("a2a-extensions", value);
    }
    response
}

/// The `a2a-extensions` value naming the extensions the call activated, if any.
fn activated_extensions(ctx: &CallContext) -> Option<String> {
    (!ctx.activated_extensions.is_empty()).then(|| ctx.activated_extensions.join(", "))
}

/// An answer that is not of the kind the operation has (an interceptor's
/// early answer, say): no message of the rpc's type can carry it.
fn unexpected(method: Method, kind: &str) -> Status {
    to_status(&A2aError::internal(format!(
        "unexpected handler answer to {method}: {kind}"
    )))
}

/// Reads each operation's request message as its prost type, and writes
/// any answer: the one place the gRPC binding names the operations.
#[derive(Debug, Clone, Copy)]
struct OperationCodec(Method);

impl Codec for OperationCodec {
    type Encode = GrpcAnswer;
    type Decode = Request;
    type Encoder = Self;
    type Decoder = Self;

    fn encoder(&mut self) -> Self {
        *self
    }

    fn decoder(&mut self) -> Self {
        *self
    }
}

impl Decoder for OperationCodec {
    type Item = Request;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Request>, Status> {
        decode(self.0, buf).map(Some)
    }
}

/// A request message of `method` as the operation's [`Request`].
fn decode(method: Method, mut buf: impl prost::bytes::Buf) -> Result<Request, Status> {
    let buf = &mut buf;
    Ok(match method {
        Method::SendMessage => Request::SendMessage(Box::new(read_send(buf)?)),
        Method::SendStreamingMessage => Request::SendStreamingMessage(Box::new(read_send(buf)?)),
        Method::GetTask => Request::GetTask(read(buf)?),
        Method::ListTasks => Request::ListTasks(read(buf)?),
        Method::CancelTask => Request::CancelTask(read(buf)?),
        Method::SubscribeToTask => Request::SubscribeToTask(read(buf)?),
        Method::CreateTaskPushNotificationConfig => Request::CreatePushConfig(read(buf)?),
        Method::GetTaskPushNotificationConfig => Request::GetPushConfig(read(buf)?),
        Method::ListTaskPushNotificationConfigs => Request::ListPushConfigs(read(buf)?),
        Method::DeleteTaskPushNotificationConfig => Request::DeletePushConfig(read(buf)?),
        Method::GetExtendedAgentCard => Request::GetExtendedAgentCard(read(buf)?),
    })
}

/// A `SendMessageRequest`: the common shape straight from its bytes when
/// they are in one piece (as a unary call's always are), else as [`read`].
fn read_send(buf: &mut impl prost::bytes::Buf) -> Result<a2a_core::SendMessageRequest, Status> {
    if buf.chunk().len() == buf.remaining() {
        if let Some(request) = crate::decode::send_message_request(buf.chunk()) {
            buf.advance(buf.remaining());
            return Ok(request);
        }
    }
    read(buf)
}

/// One request message: its protobuf, then the core type (a value the core
/// type cannot hold is the caller's error).
fn read<T>(buf: &mut impl prost::bytes::Buf) -> Result<T, Status>
where
    T: FromProto,
    T::Proto: prost::Message + Default,
{
    // As tonic's own codec: an unreadable message is INTERNAL.
    let proto = T::Proto::decode(buf).map_err(|err| Status::internal(err.to_string()))?;
    T::from_proto(proto).map_err(|err| to_status(&A2aError::from(err)))
}

/// An answer to write as its protobuf message.
///
/// The task-bearing answers are the core values themselves: they are
/// written straight from them, with no copy into the generated types
/// (see `encode.rs`).
#[derive(Debug)]
pub enum GrpcAnswer {
    /// `SendMessage`.
    SendMessage(a2a_core::SendMessageResponse),
    /// `GetTask` / `CancelTask`.
    Task(a2a_core::Task),
    /// `ListTasks`.
    ListTasks(a2a_core::ListTasksResponse),
    /// Create / Get push config.
    PushConfig(pb::TaskPushNotificationConfig),
    /// List push configs.
    PushConfigs(pb::ListTaskPushNotificationConfigsResponse),
    /// Delete push config (`google.protobuf.Empty`).
    Empty,
    /// `GetExtendedAgentCard`.
    AgentCard(pb::AgentCard),
    /// One event of a stream.
    Event(a2a_core::StreamResponse),
}

impl GrpcAnswer {
    fn of(response: UnaryResponse) -> GrpcAnswer {
        match response {
            UnaryResponse::SendMessage(r) => GrpcAnswer::SendMessage(r),
            UnaryResponse::Task(t) => GrpcAnswer::Task(t),
            UnaryResponse::ListTasks(r) => GrpcAnswer::ListTasks(r),
            UnaryResponse::PushConfig(c) => GrpcAnswer::PushConfig(c.to_proto()),
            UnaryResponse::PushConfigs(c) => GrpcAnswer::PushConfigs(c.to_proto()),
            UnaryResponse::Empty => GrpcAnswer::Empty,
            UnaryResponse::AgentCard(card) => GrpcAnswer::AgentCard((*card).to_proto()),
            UnaryResponse::Stream(never) => match never {},
        }
    }

    /// The answer's message with its gRPC prefix, in one buffer; over
    /// `limit`, `OUT_OF_RANGE`.
    fn framed(&self, limit: Option<usize>) -> Result<prost::bytes::Bytes, Status> {
        use crate::encode::Prost;
        use crate::unary::frame;
        match self {
            GrpcAnswer::SendMessage(m) => frame(m, limit),
            GrpcAnswer::Task(m) => frame(m, limit),
            GrpcAnswer::ListTasks(m) => frame(m, limit),
            GrpcAnswer::PushConfig(m) => frame(&Prost(m), limit),
            GrpcAnswer::PushConfigs(m) => frame(&Prost(m), limit),
            GrpcAnswer::Empty => frame(&Prost(&()), limit),
            GrpcAnswer::AgentCard(m) => frame(&Prost(m), limit),
            GrpcAnswer::Event(m) => frame(m, limit),
        }
    }
}

impl Encoder for OperationCodec {
    type Item = GrpcAnswer;
    type Error = Status;

    fn encode(&mut self, answer: GrpcAnswer, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use prost::bytes::BufMut as _;
        // tonic writes the prefix (and checks the limit) itself.
        let framed = answer.framed(None)?;
        buf.put_slice(&framed[crate::unary::PREFIX..]);
        Ok(())
    }
}

/// The largest gRPC response the server encodes (32 MiB): a task with a long
/// history or large artifacts, but not an unbounded one.
pub const MAX_RESPONSE_MESSAGE: usize = 32 * 1024 * 1024;

/// One router serving `service` over JSON-RPC, HTTP+JSON, gRPC and the agent card.
///
/// Serve it with [`a2a_server::http::serve`] (header read timeout, connection
/// limits, graceful shutdown on Ctrl-C or SIGTERM): it answers HTTP/1.1 and
/// h2c on the same port; or with [`a2a_server::http::serve_with`] to set the
/// limits or TLS (`ServeConfig::with_tls`; the card's gRPC URL is then
/// `https://host:port`).
/// gRPC requests are held to the same size as HTTP bodies
/// ([`HttpConfig::body_limit`](a2a_server::http::HttpConfig::body_limit));
/// responses to [`MAX_RESPONSE_MESSAGE`].
///
/// With the feature `v03`, the 0.3 service (`a2a.v1.A2AService`) is served
/// too, and the card lists gRPC among the bindings that speak 0.3 (see
/// `HttpConfig::v03_bindings`).
#[cfg_attr(not(feature = "v03"), allow(unused_mut))]
pub fn router(service: A2aService, mut config: a2a_server::http::HttpConfig) -> axum::Router {
    #[cfg(feature = "v03")]
    {
        let grpc = a2a_core::binding::GRPC;
        if !config.v03_bindings.is_empty() && !config.v03_bindings.iter().any(|b| b == grpc) {
            config.v03_bindings.push(grpc.to_owned());
        }
    }
    let limits = config.clone();
    with_grpc_config(
        a2a_server::http::router(service.clone(), config),
        service,
        &limits,
    )
}

/// The 1.0 operation a gRPC path names (`/lf.a2a.v1.A2AService/<Rpc>`).
fn method_of_path(path: &str) -> Option<Method> {
    path.strip_prefix('/')
        .and_then(|path| path.strip_prefix(crate::SERVICE_NAME))
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(Method::from_name)
}

/// Adds the gRPC binding of `service` to `router` (requests up to
/// `body_limit` bytes), on the gRPC service's own paths: for a router built
/// piece by piece, where [`router`] does it all at once. The 0.3 service
/// (`a2a.v1.A2AService`) gets paths of its own, which 1.0 calls never reach.
pub fn with_grpc(router: axum::Router, service: A2aService, body_limit: usize) -> axum::Router {
    let mut config = a2a_server::http::HttpConfig::default();
    config.body_limit = body_limit;
    with_grpc_config(router, service, &config)
}

/// [`with_grpc`] with the request limits of `config`, as the router's HTTP
/// bindings have them: requests up to its `body_limit` bytes, arriving
/// within its `body_read_timeout`, counted against its `body_budget`.
///
/// On both services a request's head is authenticated before its body is
/// polled (see [`A2aService::authenticate_head`]): a caller the service
/// refuses is answered `UNAUTHENTICATED` without a byte of its body read. A
/// body the budget has no room for is answered `UNAVAILABLE`.
pub fn with_grpc_config(
    router: axum::Router,
    service: A2aService,
    config: &a2a_server::http::HttpConfig,
) -> axum::Router {
    let body_limit = config.body_limit;
    let budget = config.body_budget.clone();
    let within = config.body_read_timeout;
    let grpc = GrpcService::new(service.clone())
        .into_server()
        .max_decoding_message_size(body_limit)
        .max_encoding_message_size(MAX_RESPONSE_MESSAGE);
    let path = format!("/{}/{{*rest}}", crate::SERVICE_NAME);
    let grpc = crate::head::HeadFirst {
        inner: grpc,
        service: service.clone(),
        budget: budget.clone(),
        within,
        method_of: method_of_path,
    };
    #[cfg(feature = "v03")]
    let v03 = crate::head::HeadFirst {
        inner: crate::v03::GrpcServiceV03::new(service.clone())
            .into_server()
            .max_decoding_message_size(body_limit)
            .max_encoding_message_size(MAX_RESPONSE_MESSAGE),
        service,
        budget,
        within,
        method_of: |_| None,
    };
    // Without 0.3, its service's calls get 1.0's answer to a version not
    // served, not the UNIMPLEMENTED of a service unknown.
    #[cfg(not(feature = "v03"))]
    let v03 = {
        drop((service, budget));
        axum::routing::any(|| async { v03_not_served() })
    };
    let v03_path = format!("/{V03_SERVICE_NAME}/{{*rest}}");
    // Each 1.0 method on a path of its own: a wildcard match costs the
    // router its captured parameter (about 2,000 instructions a call). The
    // wildcard stays for names the service lacks, which tonic answers with
    // UNIMPLEMENTED.
    let router = a2a_core::Method::ALL
        .into_iter()
        .fold(router, |router, method| {
            router.route_service(&crate::method_path(method), grpc.clone())
        });
    let router = router.route_service(&path, grpc);
    #[cfg(feature = "v03")]
    let router = router.route_service(&v03_path, v03);
    #[cfg(not(feature = "v03"))]
    let router = router.route(&v03_path, v03);
    router
}

/// The full name of A2A 0.3's gRPC service.
const V03_SERVICE_NAME: &str = "a2a.v1.A2AService";

/// The answer to a call of the 0.3 service when 0.3 is not served.
#[cfg(not(feature = "v03"))]
fn v03_not_served() -> axum::response::Response {
    let err = A2aError::new(
        a2a_core::ErrorKind::VersionNotSupported,
        format!(
            "A2A 0.3 is not served; this agent speaks {}",
            a2a_core::PROTOCOL_VERSION
        ),
    );
    to_status(&err).into_http()
}
