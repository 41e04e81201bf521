//! MCP over streamable HTTP at [`MCP_PATH`], beside a server's A2A bindings.
//!
//! The caller is authenticated from the request's head by the same
//! [`A2aService`] check the bindings run ([`A2aService::authenticate_head`]),
//! before a byte of the body is read: a caller the server refuses gets 401
//! (with a `WWW-Authenticate: Bearer` challenge) and never makes it read,
//! hold or parse anything. The body is then held to the bindings' size
//! limit, read timeout and body budget ([`HttpConfig`]).
//!
//! The tools' calls go **in process**, to the agents' services, carrying
//! the MCP request's own headers (its credentials): each agent
//! authenticates the call as it would the same caller's A2A call, and the
//! task is that caller's (listed, read and canceled by them over A2A too).
//! Going in process rather than over loopback needs no address to reach
//! the server at (a public URL, TLS with a private CA, a port that is not
//! known before binding) and costs no socket or serialization.
//!
//! The server is stateless (no MCP session is kept between requests): each
//! POST is answered on its own, as a stream when a tool call sends
//! progress. Nothing is held for a client that goes away, and any node of
//! a cluster answers any request.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{ErrorKind, Method};
use a2a_server::A2aService;
use a2a_server::http::HttpConfig;
use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::AgentTools;

/// Where MCP is served: `/mcp`.
pub const MCP_PATH: &str = "/mcp";

/// The route of [`MCP_PATH`]: `tools` over streamable HTTP, callers
/// authenticated as `service` authenticates them (a gateway's root service,
/// or a lone agent's), bodies held to `config`. Merge it into the server's
/// router. A stream it answers with lasts as long as its tool call (the
/// server keeps none open between calls).
pub fn router(tools: AgentTools, service: A2aService, config: HttpConfig) -> Router {
    let mcp = StreamableHttpServerConfig {
        stateful_mode: false,
        sse_keep_alive: Some(Duration::from_secs(15)),
        cancellation_token: CancellationToken::new(),
    };
    let serve = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        mcp,
    );
    Router::new()
        .route_service(MCP_PATH, serve)
        .layer(axum::middleware::from_fn_with_state(
            (service, Arc::new(config)),
            authenticated_head,
        ))
}

/// Who calls, from the head alone; then the body, held to the limits.
async fn authenticated_head(
    axum::extract::State((service, config)): axum::extract::State<(A2aService, Arc<HttpConfig>)>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(refusal) = foreign_origin(&request) {
        return refusal;
    }
    // The headers are lent to the check and given back, not copied.
    let headers = std::mem::take(request.headers_mut());
    let mut ctx =
        a2a_server::http::call_context(Method::SendMessage, headers, request.uri().query());
    let checked = service.authenticate_head(&mut ctx).await;
    *request.headers_mut() = ctx.service_params.into_headers();
    if let Err(err) = checked {
        let status = match err.kind() {
            ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorKind::Unauthorized => StatusCode::FORBIDDEN,
            _ => StatusCode::BAD_REQUEST,
        };
        return refusal(status, err.message());
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > config.body_limit) {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large",
        );
    }
    match a2a_server::http::guard_body(request, &config) {
        Ok(request) => {
            // rmcp reads the whole body: the bindings' size limit holds it.
            let limit = config.body_limit;
            let request = request
                .map(|body| axum::body::Body::new(http_body_util::Limited::new(body, limit)));
            next.run(request).await
        }
        Err(over) => {
            let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, &over.to_string());
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

/// A JSON error response (with a bearer challenge for a 401).
fn refusal(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": { "code": status.as_u16(), "message": message } });
    let mut response = (status, axum::Json(body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// A browser page of another site calling (DNS rebinding, a cross-site
/// request): MCP's transport asks servers to check `Origin`. A request
/// with none (every non-browser client) or the server's own goes on.
fn foreign_origin(request: &axum::extract::Request) -> Option<Response> {
    let origin = request.headers().get(header::ORIGIN)?;
    let host = request.headers().get(header::HOST);
    let same = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://").map(|(_, rest)| rest))
        .zip(host.and_then(|h| h.to_str().ok()))
        .is_some_and(|(origin_host, host)| origin_host.eq_ignore_ascii_case(host));
    (!same).then(|| {
        refusal(
            StatusCode::FORBIDDEN,
            "cross-origin MCP requests are refused",
        )
    })
}
