//! The HTTP bindings on axum: JSON-RPC 2.0 (+ SSE), HTTP+JSON (+ SSE) and the
//! agent card, all in one [`axum::Router`] the user can nest or merge; and
//! [`serve_with`], which serves a router with connection limits, in the
//! clear or over TLS ([`ServeConfig::with_tls`]).

mod budget;
mod card;
mod common;
pub(crate) mod jsonrpc;
#[cfg(feature = "v03")]
mod jsonrpc_v03;
mod rest;
#[cfg(feature = "v03")]
mod rest_v03;
mod tls;
mod unvectored;

use std::sync::Arc;
use std::time::Duration;

use a2a_core::AGENT_CARD_PATH;
use axum::Router;
use axum::extract::Request;
use axum::routing::{any, get, post};
use tower_http::cors::CorsLayer;

pub use self::budget::{BodyBudget, BudgetHold, DEFAULT_BODY_BUDGET, OverBudget, guard_body};
pub use self::common::call_context;
pub use self::tls::{TlsConfig, TlsConfigError};
pub use self::unvectored::Unvectored;
/// The rustls version [`TlsConfig`] takes, for its certificate types and
/// [`TlsConfig::from_rustls`].
pub use tokio_rustls::rustls;

use self::card::CardDocument;
use crate::service::A2aService;

/// Settings of the HTTP bindings. Start from `HttpConfig::default()` and set
/// the fields you need (more will come).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Path of the JSON-RPC endpoint (also served with a trailing slash).
    pub jsonrpc_path: String,
    /// Base path of the HTTP+JSON routes (`""` for the root).
    pub rest_base: String,
    /// Largest accepted request body, in bytes (default 10 MiB).
    pub body_limit: usize,
    /// How long a request body may take to arrive in full (default 30 s); a
    /// slower one is refused.
    pub body_read_timeout: Duration,
    /// The bytes of request bodies held at once, across every route given
    /// this budget (default: [`BodyBudget::shared`], 256 MiB for the whole
    /// process); a body with no room is answered 503 with `Retry-After`.
    /// Bodies are read only once the caller is authenticated (see
    /// [`crate::A2aService::authenticate_head`]).
    pub body_budget: BodyBudget,
    /// Interval of SSE keep-alive comments (`None` or zero: off).
    pub keep_alive: Option<Duration>,
    /// `max-age` of the agent card's `Cache-Control`, in seconds.
    pub card_max_age: u64,
    /// CORS policy of the agent card route (default: any origin, no credentials).
    pub card_cors: CorsLayer,
    /// The bindings the card lists as also speaking A2A 0.3: an interface
    /// at `protocolVersion` `0.3` is added, after the 1.0 ones, at the URL
    /// of each 1.0 interface of these bindings (default JSON-RPC and
    /// HTTP+JSON, which this router serves in 0.3 too; `a2a_grpc::router`
    /// adds gRPC). Empty: none listed (0.3 requests are still answered).
    /// Only with the feature `v03`.
    #[cfg(feature = "v03")]
    pub v03_bindings: Vec<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            jsonrpc_path: "/".into(),
            rest_base: String::new(),
            body_limit: 10 * 1024 * 1024,
            body_read_timeout: Duration::from_secs(30),
            body_budget: BodyBudget::shared(),
            keep_alive: Some(Duration::from_secs(15)),
            card_max_age: 300,
            card_cors: CorsLayer::new()
                .allow_origin(tower_http::cors::Any)
                .allow_methods([http::Method::GET])
                .allow_headers(tower_http::cors::Any),
            #[cfg(feature = "v03")]
            v03_bindings: a2a_core::v03::SERVED_BINDINGS.map(str::to_owned).to_vec(),
        }
    }
}

/// What every request of the router shares. Behind one `Arc`: axum clones
/// the state for every request, and a clone of its fields one by one (each
/// with `Arc`s of its own) cost several hundred instructions a call.
#[derive(Clone)]
pub(crate) struct HttpState(Arc<HttpShared>);

impl std::ops::Deref for HttpState {
    type Target = HttpShared;

    fn deref(&self) -> &HttpShared {
        &self.0
    }
}

pub(crate) struct HttpShared {
    pub(crate) service: A2aService,
    pub(crate) config: HttpConfig,
    /// `WWW-Authenticate` of an unauthenticated call's answer, when the card
    /// declares security.
    pub(crate) challenge: Option<axum::http::HeaderValue>,
}

/// The router serving `service` over JSON-RPC, HTTP+JSON and the agent card.
///
/// ```no_run
/// # async fn run(service: a2a_server::A2aService) -> std::io::Result<()> {
/// let app = a2a_server::http::router(service.clone(), a2a_server::http::HttpConfig::default());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// a2a_server::http::serve(listener, app, service).await
/// # }
/// ```
pub fn router(service: A2aService, config: HttpConfig) -> Router {
    // The card lists where 0.3 is spoken too, after the 1.0 interfaces.
    #[cfg(feature = "v03")]
    let public = {
        let mut public = service.card().clone();
        a2a_core::v03::advertise(&mut public, &config.v03_bindings);
        public
    };
    #[cfg(not(feature = "v03"))]
    let public = service.card();
    let card = CardDocument::new(&public, config.card_max_age);
    // 0.3 clients read the 0.3 form of the card at the older name; it lists
    // the interfaces that also serve 0.3 calls.
    #[cfg(feature = "v03")]
    let card_v03 = a2a_core::v03::AgentCard::from_v1(&public)
        .map(|old| CardDocument::new(&old, config.card_max_age));
    let cors = config.card_cors.clone();
    #[cfg(feature = "v03")]
    let cors_v03 = config.card_cors.clone();
    let jsonrpc_path = if config.jsonrpc_path.is_empty() {
        "/".to_owned()
    } else {
        config.jsonrpc_path.clone()
    };
    let challenge = service
        .requires_authentication()
        .then(|| crate::auth::challenge(service.card()))
        .and_then(|c| axum::http::HeaderValue::from_str(&c).ok());
    let rest_base = config.rest_base.clone();
    let state = HttpState(Arc::new(HttpShared {
        challenge,
        service,
        config,
    }));
    let card_route = get(move |request: Request| {
        let card = card.clone();
        async move { card.respond(&request) }
    })
    .layer(cors);
    #[cfg_attr(not(feature = "v03"), allow(unused_mut))]
    let mut router = Router::new().route(AGENT_CARD_PATH, card_route);
    #[cfg(feature = "v03")]
    if let Some(card) = card_v03 {
        let route = get(move |request: Request| {
            let card = card.clone();
            async move { card.respond(&request) }
        })
        .layer(cors_v03);
        router = router.route(a2a_core::v03::LEGACY_AGENT_CARD_PATH, route);
    }
    let mut router = router.route(&jsonrpc_path, post(jsonrpc::handle));
    let trimmed = jsonrpc_path.trim_end_matches('/');
    let alternate = if jsonrpc_path.ends_with('/') {
        trimmed.to_owned()
    } else {
        format!("{jsonrpc_path}/")
    };
    if !alternate.is_empty() && alternate != jsonrpc_path {
        router = router.route(&alternate, post(jsonrpc::handle));
    }
    // 0.3's HTTP+JSON paths: a route of their own, which 1.0 paths never reach.
    let v03_rest = format!("{}/v1/{{*rest}}", rest_base.trim_end_matches('/'));
    #[cfg(feature = "v03")]
    let v03_handler = any(rest_v03::handle);
    // Without 0.3, a request there is still 1.0 (for a tenant called `v1`)
    // when it says so; a 0.3 one is refused as a version not served.
    #[cfg(not(feature = "v03"))]
    let v03_handler = any(rest::handle_or_refuse_v03);
    router
        .route(&v03_rest, v03_handler)
        .fallback(rest::handle)
        .with_state(state)
}

/// Binds a TCP listener with a connection backlog of `backlog` (tokio's
/// `TcpListener::bind` uses 128, which drops connections under bursts).
pub fn bind(addr: std::net::SocketAddr, backlog: u32) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// The default backlog of [`bind`].
pub const DEFAULT_BACKLOG: u32 = 4096;

/// Serves `app` on `listener` the safe way, in one call: every limit of
/// [`ServeConfig::default`] (the header read timeout, the connection limit,
/// HTTP/2 keep-alive) and, on Ctrl-C or SIGTERM, a graceful shutdown (see
/// [`serve_until`]). What `axum::serve` would do, with the protections a
/// server on the open network needs.
///
/// ```no_run
/// # async fn run(service: a2a_server::A2aService) -> std::io::Result<()> {
/// let app = a2a_server::http::router(service.clone(), Default::default());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// a2a_server::http::serve(listener, app, service).await
/// # }
/// ```
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    service: A2aService,
) -> std::io::Result<()> {
    serve_with(
        listener,
        app,
        service,
        shutdown_signal(),
        ServeConfig::default(),
    )
    .await
}

/// Resolves on Ctrl-C, or on SIGTERM (how service managers stop a
/// process): the `stop` of [`serve`], for [`serve_with`] too.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Serves `app` on `listener` until `stop` resolves, then winds down within
/// `grace`: no new connections, the service's running executions get the grace
/// period (see [`A2aService::shutdown`]), and connections still open after
/// that (streams of tasks that wait for input, say) are closed, so the
/// process can exit.
///
/// ```no_run
/// # async fn run(service: a2a_server::A2aService) -> std::io::Result<()> {
/// use std::time::Duration;
/// let app = a2a_server::http::router(service.clone(), Default::default());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let stop = async { let _ = tokio::signal::ctrl_c().await; };
/// a2a_server::http::serve_until(listener, app, service, stop, Duration::from_secs(10)).await
/// # }
/// ```
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    app: Router,
    service: A2aService,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> std::io::Result<()> {
    let config = ServeConfig {
        grace,
        ..ServeConfig::default()
    };
    serve_with(listener, app, service, stop, config).await
}

/// How [`serve_with`] treats connections. Every limit has a default meant
/// for a server on the open network; all are documented with it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// Time running executions get at shutdown (default 10 s).
    pub grace: Duration,
    /// Connections open at once (default 10,000). Further connections wait
    /// in the listen backlog until one closes.
    pub max_connections: usize,
    /// How long an HTTP/1 client has to send a request's headers, counted
    /// from when the connection starts waiting for them, so it also closes
    /// a connection idle between requests (default 10 s). Stops slowloris
    /// clients that dribble headers to hold connections. With TLS, the
    /// handshake and the first request's headers (HTTP/1 or HTTP/2) share
    /// this one budget, counted from the accept: a client slow at both is
    /// dropped within this time, not twice it.
    pub header_read_timeout: Duration,
    /// Interval of the HTTP/2 keep-alive pings the server sends on a
    /// connection that has been quiet that long, with or without streams
    /// (default 20 s). Keeps quiet gRPC and SSE streams alive through
    /// proxies, NATs and load balancers that cut idle connections (keep it
    /// under their idle timeout), and finds dead clients.
    pub http2_keep_alive: Duration,
    /// How long the answer to a keep-alive ping may take before the
    /// connection is closed (default 20 s).
    pub http2_keep_alive_timeout: Duration,
    /// Streams at once on one HTTP/2 connection (default 256).
    pub http2_max_concurrent_streams: u32,
    /// TLS on the listener (default: none, plain TCP); see
    /// [`with_tls`](Self::with_tls).
    pub tls: Option<TlsConfig>,
}

impl ServeConfig {
    /// Serves TLS with `tls`'s certificate on every connection: JSON-RPC,
    /// HTTP+JSON, gRPC (ALPN `h2`) and the card, on the one port. Give the
    /// card `https://` interface URLs (gRPC's too: `https://host:port`).
    /// The limits hold as without TLS: a connection counts against
    /// [`max_connections`](Self::max_connections) from its accept, and its
    /// handshake and first request headers together against
    /// [`header_read_timeout`](Self::header_read_timeout).
    /// A failed handshake closes that connection only.
    #[must_use]
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            grace: Duration::from_secs(10),
            max_connections: 10_000,
            header_read_timeout: Duration::from_secs(10),
            http2_keep_alive: Duration::from_secs(20),
            http2_keep_alive_timeout: Duration::from_secs(20),
            http2_max_concurrent_streams: 256,
            tls: None,
        }
    }
}

/// [`serve_until`] with every connection setting given.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    app: Router,
    service: A2aService,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    config: ServeConfig,
) -> std::io::Result<()> {
    serve_connections(listener, app, Some(service), stop, config).await
}

/// [`serve`] for an app that hosts no agent (a push-notification
/// receiver, a card or key server): the same header timeout, connection
/// limit and graceful shutdown on Ctrl-C or SIGTERM, with no executions to
/// wait for.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// let app = axum::Router::new().route("/hook", axum::routing::post(|| async { "ok" }));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9000").await?;
/// a2a_server::http::serve_app(listener, app).await
/// # }
/// ```
pub async fn serve_app(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    serve_app_with(listener, app, shutdown_signal(), ServeConfig::default()).await
}

/// [`serve_app`] until `stop` resolves, with every connection setting
/// given (its `grace` is unused: there are no executions).
pub async fn serve_app_with(
    listener: tokio::net::TcpListener,
    app: Router,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    config: ServeConfig,
) -> std::io::Result<()> {
    serve_connections(listener, app, None, stop, config).await
}

async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    service: Option<A2aService>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    config: ServeConfig,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;
    use tower::ServiceExt as _;

    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(config.http2_keep_alive)
        .keep_alive_timeout(config.http2_keep_alive_timeout)
        .max_concurrent_streams(config.http2_max_concurrent_streams);
    let builder = Arc::new(builder);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let permits = Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1)));
    let mut connections = tokio::task::JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        while connections.try_join_next().is_some() {}
        // A free slot first: over the limit, clients wait in the backlog.
        let permit = tokio::select! {
            () = &mut stop => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, say: back off instead of spinning.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let accepted_at = tokio::time::Instant::now();
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        // Told of each request the connection brings (its headers are in).
        let first_request = Arc::new(tokio::sync::Notify::new());
        let arrived = first_request.clone();
        // Every request carries the address it came from, as axum's
        // `ConnectInfo` (what a guard keys an anonymous caller on).
        let peer = axum::extract::ConnectInfo(peer);
        let hyper_service =
            hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                arrived.notify_one();
                let mut request = request.map(axum::body::Body::new);
                request.extensions_mut().insert(peer);
                app.clone().oneshot(request)
            });
        let Some(tls) = config.tls.clone() else {
            let connection = builder
                .serve_connection_with_upgrades(
                    TokioIo::new(Unvectored::new(stream)),
                    hyper_service,
                )
                .into_owned();
            let connection = graceful.watch(connection);
            connections.spawn(async move {
                if let Err(err) = connection.await {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
                drop(permit);
            });
            continue;
        };
        // The handshake runs in the connection's own task: a slow or broken
        // client holds its slot (the permit), never the accept loop.
        let (builder, watcher) = (builder.clone(), graceful.watcher());
        let budget = config.header_read_timeout;
        connections.spawn(async move {
            match tls.accept(stream, accepted_at + budget).await {
                Ok(stream) => {
                    let connection = builder.serve_connection_with_upgrades(
                        TokioIo::new(Unvectored::new(stream)),
                        hyper_service,
                    );
                    let connection = watcher.watch(connection);
                    let ended =
                        first_headers_within(connection, &first_request, accepted_at + budget)
                            .await;
                    if let Some(Err(err)) = ended {
                        tracing::debug!(error = %err, "connection ended with an error");
                    }
                }
                Err(err) => tracing::debug!(error = %err, "TLS handshake failed"),
            }
            drop(permit);
        });
    }
    drop(listener);
    // Connections finish what they are doing and take no more requests...
    let draining = tokio::spawn(graceful.shutdown());
    // ...while running executions get the grace period.
    if let Some(service) = service {
        service.shutdown(config.grace).await;
    }
    // Executions are over; what is still connected only waits for events that
    // will not come from this process any more.
    if tokio::time::timeout(CONNECTION_DRAIN, draining)
        .await
        .is_err()
    {
        tracing::info!("closed connections still open after shutdown");
    }
    connections.abort_all();
    Ok(())
}

/// Runs `connection` (a TLS one, its handshake done), dropping it (and so
/// closing it) if its first request's headers are not in by `deadline`: the
/// handshake and the first headers share one header read timeout, counted
/// from the accept. HTTP/1's own header timeout starts only once the
/// connection is served, so on its own it would give a client that is slow
/// at both twice the time. Later requests wait as without TLS. `None` when
/// the connection was dropped.
async fn first_headers_within<F: std::future::Future>(
    connection: F,
    first_request: &tokio::sync::Notify,
    deadline: tokio::time::Instant,
) -> Option<F::Output> {
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        ended = &mut connection => return Some(ended),
        arrived = tokio::time::timeout_at(deadline, first_request.notified()) => {
            if arrived.is_err() {
                tracing::debug!("no request headers within the header read timeout of the accept");
                return None;
            }
        }
    }
    Some(connection.await)
}

/// How long connections get to finish after the executions have wound down.
const CONNECTION_DRAIN: Duration = Duration::from_secs(1);

/// Without the feature `v03`: what a 0.3 client gets.
#[cfg(all(test, not(feature = "v03")))]
mod without_v03 {
    use super::*;
    use crate::{AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
    use a2a_core::A2aError;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    struct Hello;

    #[async_trait::async_trait]
    impl AgentExecutor for Hello {
        async fn execute(&self, _: RequestContext, events: EventQueue) -> Result<(), A2aError> {
            events.complete_with_text("hello").await
        }
    }

    fn app() -> Router {
        let handler = DefaultRequestHandler::builder(Hello, a2a_core::AgentCard::default()).build();
        router(A2aService::new(handler), HttpConfig::default())
    }

    async fn call(request: http::Request<String>) -> (u16, serde_json::Value) {
        let response = app()
            .oneshot(request.map(axum::body::Body::from))
            .await
            .unwrap_or_else(|e| match e {});
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.map(|b| b.to_bytes());
        let body = body.unwrap_or_default();
        (status, serde_json::from_slice(&body).unwrap_or_default())
    }

    fn post(uri: &str, version: Option<&str>, body: &str) -> http::Request<String> {
        let mut request = http::Request::post(uri).header("content-type", "application/json");
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        request.body(body.to_owned()).unwrap_or_default()
    }

    const V03_SEND: &str = r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#;

    #[tokio::test]
    async fn a_0_3_jsonrpc_call_is_a_version_not_supported() {
        for version in [None, Some("0.3")] {
            let (status, body) = call(post("/", version, V03_SEND)).await;
            assert_eq!(status, 200);
            assert_eq!(body["error"]["code"], -32009, "{version:?}: {body}");
        }
        // Said to be 1.0, the 0.3 name is only an unknown method.
        let (_, body) = call(post("/", Some("1.0"), V03_SEND)).await;
        assert_eq!(body["error"]["code"], -32601, "{body}");
        // And a name that is no method of either is not taken for 0.3.
        let unknown = r#"{"jsonrpc":"2.0","id":1,"method":"NoSuch","params":{}}"#;
        let (_, body) = call(post("/", None, unknown)).await;
        assert_eq!(body["error"]["code"], -32601, "{body}");
    }

    #[tokio::test]
    async fn a_0_3_rest_call_is_a_version_not_supported() {
        let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"hi"}]}}"#;
        let (status, answer) = call(post("/v1/message:send", None, body)).await;
        assert_eq!(status, 400, "{answer}");
        let details = answer["error"]["details"].to_string();
        assert!(details.contains("VERSION_NOT_SUPPORTED"), "{answer}");
        // 1.0 for a tenant called `v1` still works.
        let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
        let (status, answer) = call(post("/v1/message:send", Some("1.0"), body)).await;
        assert_eq!(status, 200, "{answer}");
        // No 0.3 card at the older name.
        let request = http::Request::get("/.well-known/agent.json")
            .body(String::new())
            .unwrap_or_default();
        assert_eq!(call(request).await.0, 404);
    }
}
