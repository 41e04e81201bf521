//! The gRPC `Transport` for `a2a-client`.

use std::sync::Arc;
use std::time::Duration;

use a2a_client::{
    CallOptions, ClientBuilder, ClientError, ClientErrorKind, EventStream, HttpSettings,
    RootCertificates, Transport, TransportContext, TransportFactory, wrong_way,
};
use a2a_core::operation::{Request, Response, UnaryResponse};
use a2a_core::{AgentInterface, binding};
use async_trait::async_trait;
use futures::StreamExt;
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

use crate::convert::{FromProto, ToProto};
use crate::error::from_status;
use crate::pb::a2a_service_client::A2aServiceClient;

/// Talks gRPC to one `host:port` (or `http(s)://host:port`) endpoint:
/// over TLS for an `https://` URL, in the clear (h2c) otherwise.
#[derive(Debug, Clone)]
pub struct GrpcTransport {
    client: A2aServiceClient<Channel>,
    calls: Calls,
}

/// What the 1.0 and 0.3 gRPC transports share: timeouts, the request limit,
/// how a call's options become a request, how a stream's messages become
/// events.
#[derive(Debug, Clone)]
pub(crate) struct Calls {
    pub(crate) settings: HttpSettings,
    /// The largest request sent (checked before sending, for a clear error).
    pub(crate) max_request: usize,
}

fn client_error(status: Status) -> ClientError {
    client_error_with(status, from_status)
}

/// The client error of a failed call: transport failures by kind, the
/// server's own errors read by `protocol_error` (1.0's or 0.3's status form).
pub(crate) fn client_error_with(
    status: Status,
    protocol_error: fn(&Status) -> a2a_core::A2aError,
) -> ClientError {
    match status.code() {
        Code::Unavailable => {
            ClientError::new(ClientErrorKind::Connection, status.message().to_owned())
        }
        Code::DeadlineExceeded => {
            ClientError::new(ClientErrorKind::Timeout, status.message().to_owned())
        }
        // The call's own timeout: tonic reports it as CANCELLED with this
        // message (the error it came from is not kept).
        Code::Cancelled if status.message() == tonic::TimeoutExpired(()).to_string() => {
            ClientError::new(ClientErrorKind::Timeout, status.message().to_owned())
        }
        _ => match local_failure(&status) {
            Some(kind) => ClientError::new(kind, status.message().to_owned()),
            None => ClientError::from(protocol_error(&status)),
        },
    }
}

/// The kind of a status tonic made on this side from a failure of its own: a
/// connection that broke or spoke something else than HTTP/2 (a plaintext
/// client on a TLS port, say). The server's statuses come from trailers and
/// have no source error; these have one.
fn local_failure(status: &Status) -> Option<ClientErrorKind> {
    std::error::Error::source(status)?;
    matches!(
        status.code(),
        Code::Internal | Code::Unknown | Code::Cancelled
    )
    .then_some(ClientErrorKind::Connection)
}

fn decode<T: FromProto>(proto: T::Proto) -> Result<T, ClientError> {
    T::from_proto(proto).map_err(|e| ClientError::new(ClientErrorKind::Decode, e.to_string()))
}

/// The default interval of the client's HTTP/2 keep-alive pings, and how
/// long an answer may take before the connection is given up (20 s): under
/// the idle timeouts of common NATs and load balancers (often 30 to 60 s).
pub const KEEP_ALIVE: Duration = Duration::from_secs(20);

/// Settings of a gRPC transport's HTTP/2 connection. Start from
/// `GrpcSettings::default()` and change what you need; give them with
/// [`GrpcTransport::connect_lazy_with`] or [`register_with`].
#[derive(Clone)]
#[non_exhaustive]
pub struct GrpcSettings {
    /// Interval of the HTTP/2 keep-alive pings the client sends while the
    /// connection is quiet, with or without calls on it (default
    /// [`KEEP_ALIVE`], 20 s). A proxy, NAT or load balancer that cuts
    /// connections idle for longer than this would otherwise cut a quiet
    /// subscription; the pings also find a dead peer.
    pub keep_alive_interval: Duration,
    /// How long a ping's answer may take before the connection is given up
    /// (default [`KEEP_ALIVE`], 20 s).
    pub keep_alive_timeout: Duration,
    /// Resolves the host names of the connections (default: the system's
    /// resolver). Give one that refuses addresses outside a policy (as
    /// `a2a_server::push::GuardedResolver` does) and every connection is
    /// made to an address it returned: the check happens when the
    /// connection is made, so a name cannot change between a check and the
    /// connection. A host given as an IP address is not resolved: check it
    /// before making the client.
    pub dns_resolver: Option<Arc<dyn reqwest::dns::Resolve>>,
}

impl std::fmt::Debug for GrpcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcSettings")
            .field("keep_alive_interval", &self.keep_alive_interval)
            .field("keep_alive_timeout", &self.keep_alive_timeout)
            .field("dns_resolver", &self.dns_resolver.as_ref().map(|_| ".."))
            .finish()
    }
}

impl Default for GrpcSettings {
    fn default() -> Self {
        GrpcSettings {
            keep_alive_interval: KEEP_ALIVE,
            keep_alive_timeout: KEEP_ALIVE,
            dns_resolver: None,
        }
    }
}

impl GrpcSettings {
    /// Sets the keep-alive ping interval and the time a ping's answer may take.
    #[must_use]
    pub fn keep_alive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keep_alive_interval = interval;
        self.keep_alive_timeout = timeout;
        self
    }

    /// Sets the resolver of the connections' host names (see
    /// [`dns_resolver`](Self::dns_resolver)).
    #[must_use]
    pub fn dns_resolver(mut self, resolver: Arc<dyn reqwest::dns::Resolve>) -> Self {
        self.dns_resolver = Some(resolver);
        self
    }
}

/// A `reqwest` resolver as the resolver of a gRPC connection's connector.
#[derive(Clone)]
struct ConnectResolver(Arc<dyn reqwest::dns::Resolve>);

type ResolveFuture = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    std::vec::IntoIter<std::net::SocketAddr>,
                    Box<dyn std::error::Error + Send + Sync>,
                >,
            > + Send,
    >,
>;

impl tower::Service<hyper_util::client::legacy::connect::dns::Name> for ConnectResolver {
    type Response = std::vec::IntoIter<std::net::SocketAddr>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = ResolveFuture;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: hyper_util::client::legacy::connect::dns::Name) -> Self::Future {
        let resolver = self.0.clone();
        Box::pin(async move {
            let name: reqwest::dns::Name = name.as_str().parse()?;
            let addresses: Vec<_> = resolver.resolve(name).await?.collect();
            Ok(addresses.into_iter())
        })
    }
}

/// The largest gRPC response a client accepts by default (32 MiB, what the
/// server sends at most).
pub const MAX_RESPONSE: usize = 32 * 1024 * 1024;
/// The largest gRPC request a client sends by default (10 MiB, what the
/// server accepts by default).
pub const MAX_REQUEST: usize = 10 * 1024 * 1024;

/// How long the TCP connection, and then the TLS handshake, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The lazily connected channel to a gRPC `url` (see
/// [`GrpcTransport::connect_lazy_with`]).
pub(crate) fn channel(
    url: &str,
    roots: &RootCertificates,
    grpc: &GrpcSettings,
) -> Result<Channel, ClientError> {
    let uri = if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    };
    let invalid = |e: &dyn std::fmt::Display| {
        ClientError::new(
            ClientErrorKind::Unsupported,
            format!("invalid gRPC url {url:?}: {e}"),
        )
    };
    let mut endpoint = Endpoint::from_shared(uri).map_err(|e| invalid(&e))?;
    if endpoint.uri().scheme_str() == Some("https") {
        // The name checked against the certificate; an IPv6 literal
        // comes bracketed in the URI, and a certificate names it bare.
        let host = endpoint.uri().host().unwrap_or_default();
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let tls = ClientTlsConfig::new()
            .domain_name(host)
            .trust_anchors(roots.trust_anchors())
            .timeout(CONNECT_TIMEOUT);
        endpoint = endpoint.tls_config(tls).map_err(|e| invalid(&e))?;
    }
    let endpoint = endpoint
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        // HTTP/2 pings keep a quiet subscription's connection open through
        // proxies and NATs, and find a dead peer (the server pings too).
        .http2_keep_alive_interval(grpc.keep_alive_interval)
        .keep_alive_timeout(grpc.keep_alive_timeout)
        .keep_alive_while_idle(true);
    Ok(match &grpc.dns_resolver {
        None => endpoint.connect_lazy(),
        Some(resolver) => {
            let mut http = hyper_util::client::legacy::connect::HttpConnector::new_with_resolver(
                ConnectResolver(resolver.clone()),
            );
            // What tonic's own connector does: the URI's scheme picks TLS,
            // which wraps this connection.
            http.enforce_http(false);
            http.set_nodelay(true);
            endpoint.connect_with_connector_lazy(http)
        }
    })
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            settings: HttpSettings::default(),
            max_request: MAX_REQUEST,
        }
    }
}

impl GrpcTransport {
    /// A transport for `url` (`host:port`, as in agent cards, or a full
    /// `http://` / `https://` URL). The connection is made on first use.
    /// An `https://` server is verified against the system's roots.
    pub fn connect_lazy(url: &str) -> Result<Self, ClientError> {
        GrpcTransport::connect_lazy_trusting(url, &RootCertificates::system())
    }

    /// [`connect_lazy`](Self::connect_lazy) verifying an `https://` server
    /// against `roots` (a private CA, say). `http://` and bare `host:port`
    /// stay in the clear.
    pub fn connect_lazy_trusting(url: &str, roots: &RootCertificates) -> Result<Self, ClientError> {
        GrpcTransport::connect_lazy_with(url, roots, &GrpcSettings::default())
    }

    /// [`connect_lazy_trusting`](Self::connect_lazy_trusting) with the
    /// connection's HTTP/2 settings (keep-alive pings) given.
    pub fn connect_lazy_with(
        url: &str,
        roots: &RootCertificates,
        grpc: &GrpcSettings,
    ) -> Result<Self, ClientError> {
        Ok(GrpcTransport {
            client: A2aServiceClient::new(channel(url, roots, grpc)?)
                .max_decoding_message_size(MAX_RESPONSE)
                .max_encoding_message_size(MAX_REQUEST),
            calls: Calls::default(),
        })
    }

    /// Sets the largest response the client accepts and the largest request
    /// it sends (defaults [`MAX_RESPONSE`] and [`MAX_REQUEST`]); a larger
    /// message fails the call instead of being buffered.
    #[must_use]
    pub fn with_message_limits(mut self, response: usize, request: usize) -> Self {
        self.client = self
            .client
            .max_decoding_message_size(response)
            .max_encoding_message_size(request);
        self.calls.max_request = request;
        self
    }

    /// Replaces the timeouts.
    #[must_use]
    pub fn with_settings(mut self, settings: HttpSettings) -> Self {
        self.calls.settings = settings;
        self
    }
}

impl Calls {
    pub(crate) fn request<T: prost::Message>(
        &self,
        message: T,
        options: &CallOptions,
        unary: bool,
    ) -> Result<tonic::Request<T>, ClientError> {
        // Refused here with a clear error: past the limit, the encoder would
        // reset the stream mid-send and the caller would see only that.
        let size = message.encoded_len();
        if size > self.max_request {
            return Err(ClientError::new(
                ClientErrorKind::Unsupported,
                format!(
                    "the request is too large for gRPC: {size} bytes, over the limit of {} bytes",
                    self.max_request
                ),
            ));
        }
        // gRPC has no query string. A credential meant for one (an API key the
        // card declares `in: query`) would be dropped without a word; refuse.
        if let Some((name, _)) = options.query.first() {
            return Err(ClientError::new(
                ClientErrorKind::Unsupported,
                format!(
                    "query parameter {name:?} cannot travel over gRPC (an API key declared in the query?); use JSON-RPC or HTTP+JSON, or a key in a header"
                ),
            ));
        }
        let mut request = tonic::Request::new(message);
        for (name, value) in options.service_params() {
            let key =
                MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|_| {
                    ClientError::new(
                        ClientErrorKind::Unsupported,
                        format!("invalid metadata key {name:?}"),
                    )
                })?;
            let value = MetadataValue::try_from(value.as_str()).map_err(|_| {
                ClientError::new(
                    ClientErrorKind::Unsupported,
                    format!("invalid metadata value for {name}"),
                )
            })?;
            request.metadata_mut().append(key, value);
        }
        if unary {
            request.set_timeout(options.timeout.unwrap_or(self.settings.timeout));
        }
        Ok(request)
    }

    /// A stream's messages as events, each read by `decode`, with the
    /// idle timeout; a failed status ends it, read by `protocol_error`.
    pub(crate) fn events<P: Send + 'static>(
        &self,
        stream: tonic::Streaming<P>,
        options: &CallOptions,
        decode: fn(P) -> Result<a2a_core::StreamResponse, ClientError>,
        protocol_error: fn(&Status) -> a2a_core::A2aError,
    ) -> EventStream {
        let idle = options.idle_timeout.unwrap_or(self.settings.idle_timeout);
        let events = futures::stream::unfold(Some(stream), move |state| async move {
            let mut stream = state?;
            match tokio::time::timeout(idle, stream.next()).await {
                Err(_) => Some((
                    Err(ClientError::new(
                        ClientErrorKind::Timeout,
                        format!("no stream event for {idle:?}"),
                    )),
                    None,
                )),
                Ok(None) => None,
                Ok(Some(Err(status))) => {
                    Some((Err(client_error_with(status, protocol_error)), None))
                }
                Ok(Some(Ok(event))) => Some((decode(event), Some(stream))),
            }
        });
        Box::pin(events)
    }
}

/// One unary rpc: core request to proto, metadata and deadline, call; the
/// proto answer (which the caller converts).
macro_rules! unary {
    ($self:ident, $rpc:ident, $request:expr, $options:ident) => {{
        let request = $self.calls.request($request.to_proto(), $options, true)?;
        let response = $self
            .client
            .clone()
            .$rpc(request)
            .await
            .map_err(client_error)?;
        response.into_inner()
    }};
}

/// One server-streaming rpc.
macro_rules! streaming {
    ($self:ident, $rpc:ident, $request:expr, $options:ident) => {{
        let request = $self.calls.request($request.to_proto(), $options, false)?;
        let response = $self
            .client
            .clone()
            .$rpc(request)
            .await
            .map_err(client_error)?;
        Ok($self
            .calls
            .events(response.into_inner(), $options, decode, from_status))
    }};
}

/// Makes gRPC transports with the builder's roots and settings.
struct GrpcFactory {
    grpc: GrpcSettings,
}

impl TransportFactory for GrpcFactory {
    fn create(&self, interface: &AgentInterface) -> Result<Arc<dyn Transport>, ClientError> {
        self.create_in(interface, &TransportContext::default())
    }

    fn create_in(
        &self,
        interface: &AgentInterface,
        context: &TransportContext,
    ) -> Result<Arc<dyn Transport>, ClientError> {
        let (url, roots, settings) = (&interface.url, context.roots(), context.settings());
        #[cfg(feature = "v03")]
        {
            let version = interface.protocol_version.trim();
            if !version.is_empty() && a2a_core::v03::is_v03_version(Some(version)) {
                return Ok(Arc::new(
                    crate::v03::GrpcV03Transport::connect_lazy_with(url, roots, &self.grpc)?
                        .with_settings(settings.clone()),
                ));
            }
        }
        Ok(Arc::new(
            GrpcTransport::connect_lazy_with(url, roots, &self.grpc)?
                .with_settings(settings.clone()),
        ))
    }

    fn speaks_v03(&self) -> bool {
        cfg!(feature = "v03")
    }
}

/// Registers the gRPC transport with a client builder (the `GRPC` binding),
/// with the feature `v03` speaking 0.3 (`v03::GrpcV03Transport`) to
/// interfaces whose `protocolVersion` is `0.3`.
/// It trusts the builder's roots
/// ([`ClientBuilder::root_certificates`]) and keeps its timeouts, whether
/// those are set before or after this call.
pub fn register(builder: ClientBuilder) -> ClientBuilder {
    register_with(builder, GrpcSettings::default())
}

/// [`register`] with the connections' HTTP/2 settings (keep-alive pings) given.
pub fn register_with(builder: ClientBuilder, grpc: GrpcSettings) -> ClientBuilder {
    builder.transport(binding::GRPC, GrpcFactory { grpc })
}

/// One line per operation: its rpc, and the answer's kind.
#[async_trait]
impl Transport for GrpcTransport {
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        Ok(match request {
            Request::SendMessage(r) => {
                Response::SendMessage(decode(unary!(self, send_message, *r, options))?)
            }
            Request::GetTask(r) => Response::Task(decode(unary!(self, get_task, r, options))?),
            Request::ListTasks(r) => {
                Response::ListTasks(decode(unary!(self, list_tasks, r, options))?)
            }
            Request::CancelTask(r) => {
                Response::Task(decode(unary!(self, cancel_task, r, options))?)
            }
            Request::CreatePushConfig(r) => Response::PushConfig(decode(unary!(
                self,
                create_task_push_notification_config,
                r,
                options
            ))?),
            Request::GetPushConfig(r) => Response::PushConfig(decode(unary!(
                self,
                get_task_push_notification_config,
                r,
                options
            ))?),
            Request::ListPushConfigs(r) => Response::PushConfigs(decode(unary!(
                self,
                list_task_push_notification_configs,
                r,
                options
            ))?),
            Request::DeletePushConfig(r) => {
                unary!(self, delete_task_push_notification_config, r, options);
                Response::Empty
            }
            Request::GetExtendedAgentCard(r) => Response::AgentCard(Box::new(decode(unary!(
                self,
                get_extended_agent_card,
                r,
                options
            ))?)),
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
            Request::SendStreamingMessage(r) => {
                streaming!(self, send_streaming_message, *r, options)
            }
            Request::SubscribeToTask(r) => streaming!(self, subscribe_to_task, r, options),
            unary => Err(wrong_way(&unary)),
        }
    }

    fn default_timeout(&self) -> Option<Duration> {
        Some(self.calls.settings.timeout)
    }
}
