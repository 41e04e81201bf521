//! The hub's HTTP API and live feed, for its page, the `a2a hub` command
//! line and scripts: the page at `/hub`, the rest under `/hub/api`:
//!
//! | call | answer |
//! |---|---|
//! | `GET /hub` | the page (HTML, no authentication: it asks for a token when the API wants one) |
//! | `GET /hub/api/channels` | `{"channels": [ChannelView]}` |
//! | `GET /hub/api/threads?channel=C&limit=N&cursor=K` | `{"threads": [ThreadView], "nextCursor"?}`, the most recently active first, a page of N (default 100, at most 1,000) |
//! | `GET /hub/api/messages?channel=C` or `?thread=T`, `&limit=N` | `{"messages": [HubMessage]}`, oldest first (default 100, at most 1,000) |
//! | `POST /hub/api/messages` `{"text", "channel"?, "thread"?, "from"?}` | `201 {"message": HubMessage}` |
//! | `POST /hub/api/collaborate` `{"target", "text", "thread"?, "channel"?, "from"?}` | `{"collaboration": Collaboration}` |
//! | `POST /hub/api/threads/{id}/resume` `{}` | `{"thread": ThreadView}` |
//! | `GET /hub/api/events?channel=C` | server-sent events: `message` (a HubMessage), `thread` (a ThreadView), `lagged` (reload) |
//!
//! Every call that changes the hub (a `POST`) carries a JSON body or the
//! `x-a2a-hub` header, and a browser's `Origin` must be the hub's own: a
//! page on another site cannot post, collaborate or resume through a
//! visitor's browser, authenticated or not.
//!
//! The bodies and queries are the types of [`crate::api`], which
//! [`crate::api::HubApiClient`] calls the API with.
//!
//! Errors are `{"error": {"message"}}` with 400, 401, 404, 429 (with
//! `Retry-After`), 502 or 503. When the gateway authenticates, so does the
//! API, with the same credentials: a person is who the credentials say, an
//! agent's secret makes the caller that agent. Without authentication a
//! person names themself with `from` (default `operator`) and cannot take an
//! agent's name.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::Method;
use a2a_gateway::Gateway;
use a2a_server::http::{HttpConfig, call_context};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::{Stream, StreamExt as _};
use serde::Serialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::api::{
    ChannelList, ChannelQuery, CollaborateRequest, CollaborationAnswer, DELIVERY_EVENT, ErrorBody,
    ErrorDetail, LAGGED_EVENT, MESSAGE_EVENT, MessageList, MessagesQuery, PostMessage,
    PostedMessage, ResumedThread, THREAD_EVENT, ThreadList, ThreadsQuery,
};
use crate::error::{HubError, HubErrorKind};
use crate::hub::{Hub, Post};
use crate::model::{Caller, Collaborate, HubEvent, Sender};

/// Where the hub's page and API are served.
pub const HUB_PATH: &str = "/hub";

#[derive(Clone)]
struct Api {
    hub: Hub,
    gateway: Gateway,
}

/// The hub's routes (its page at `/hub`, the API under `/hub/api`),
/// authenticated as `gateway` is, their bodies held to the default
/// [`HttpConfig`]'s read timeout and budget. Merge them into the gateway's
/// router; a gateway served with another [`HttpConfig`] gives it to
/// [`router_with_config`].
pub fn router(hub: Hub, gateway: Gateway) -> Router {
    router_with_config(hub, gateway, HttpConfig::default())
}

/// [`router`], the API's bodies held to `config`'s read timeout and body
/// budget: the ones the gateway's own routes are served with.
pub fn router_with_config(hub: Hub, gateway: Gateway, config: HttpConfig) -> Router {
    Router::new()
        .route("/hub", get(page))
        .route("/hub/", get(page))
        .route("/hub/api/channels", get(channels))
        .route("/hub/api/threads", get(threads))
        .route("/hub/api/messages", get(messages).post(post_message))
        .route("/hub/api/collaborate", post(collaborate))
        .route("/hub/api/threads/{id}/resume", post(resume))
        .route("/hub/api/events", get(events))
        .layer(axum::middleware::from_fn(same_origin_json))
        .layer(axum::middleware::from_fn_with_state(
            (gateway.clone(), Arc::new(config)),
            authenticated_head,
        ))
        .with_state(Api { hub, gateway })
}

/// Who calls before what they say: the API's caller is authenticated from
/// the request head, before a byte of its body is read (a caller the
/// gateway refuses never makes the hub read, hold or parse a body), and the
/// body is held to the read timeout and the body budget the bindings use.
async fn authenticated_head(
    State((gateway, config)): State<(Gateway, Arc<HttpConfig>)>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let api = request.uri().path().starts_with("/hub/api/");
    if api && gateway.authenticates() {
        // The headers are lent to the check and given back, not copied.
        let headers = std::mem::take(request.headers_mut());
        let ctx = call_context(Method::SendMessage, headers, request.uri().query());
        let identified = gateway.identify(&ctx).await;
        *request.headers_mut() = ctx.service_params.into_headers();
        if let Err(err) = identified {
            return ApiError {
                status: StatusCode::UNAUTHORIZED,
                message: err.message().to_owned(),
                retry_after: None,
                challenge: true,
            }
            .into_response();
        }
    }
    match a2a_server::http::guard_body(request, &config) {
        Ok(request) => next.run(request).await,
        Err(over) => ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: over.to_string(),
            retry_after: Some(Duration::from_secs(1)),
            challenge: false,
        }
        .into_response(),
    }
}

/// The header a state-changing call may carry instead of a JSON body.
pub const HUB_REQUEST_HEADER: &str = "x-a2a-hub";

/// Keeps other sites' pages from changing the hub through a visitor's
/// browser, with or without authentication: a state-changing call carries a
/// JSON body (or the [`HUB_REQUEST_HEADER`]), which a cross-site form cannot
/// send without the CORS preflight the hub never grants, and an `Origin`,
/// when a browser sends one, must be the hub's own.
async fn same_origin_json(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let method = request.method();
    if method == axum::http::Method::GET || method == axum::http::Method::HEAD {
        return next.run(request).await;
    }
    let headers = request.headers();
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json && !headers.contains_key(HUB_REQUEST_HEADER) {
        return ApiError {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            message: format!(
                "a call that changes the hub sends a JSON body (Content-Type: application/json) \
                 or the {HUB_REQUEST_HEADER} header"
            ),
            retry_after: None,
            challenge: false,
        }
        .into_response();
    }
    if let Some(origin) = headers.get(axum::http::header::ORIGIN) {
        // HTTP/1.1 names the host in `Host`, HTTP/2 in the `:authority`
        // that hyper puts in the URI.
        let host = headers
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
        if !same_origin(origin, host) {
            return ApiError {
                status: StatusCode::FORBIDDEN,
                message: "a call from another site's page is refused".to_owned(),
                retry_after: None,
                challenge: false,
            }
            .into_response();
        }
    }
    next.run(request).await
}

/// Whether `origin` (`scheme://host[:port]`) names the host the request was
/// sent to.
fn same_origin(origin: &axum::http::HeaderValue, host: Option<&str>) -> bool {
    let (Ok(origin), Some(host)) = (origin.to_str(), host) else {
        return false;
    };
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|authority| authority.eq_ignore_ascii_case(host))
}

/// The hub's page: channels, threads and messages, live, for people to
/// follow and join. One file, no resource from elsewhere; it asks for a
/// token when the API answers 401.
const PAGE: &str = include_str!("page.html");

/// The page is the same for everyone: the API behind it authenticates.
async fn page() -> Response {
    (
        [
            (axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
            (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (
                axum::http::header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
        ],
        PAGE,
    )
        .into_response()
}

/// An API error as answered.
struct ApiError {
    status: StatusCode,
    message: String,
    retry_after: Option<Duration>,
    challenge: bool,
}

impl ApiError {
    fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            retry_after: None,
            challenge: false,
        }
    }
}

impl From<HubError> for ApiError {
    fn from(err: HubError) -> Self {
        ApiError {
            status: StatusCode::from_u16(err.http_status()).unwrap_or(StatusCode::BAD_REQUEST),
            retry_after: err.retry_after(),
            message: err.message().to_owned(),
            challenge: false,
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(err: JsonRejection) -> Self {
        ApiError::bad_request(format!(
            "the body is not what the hub takes: {}",
            err.body_text()
        ))
    }
}

/// `body` as the API's JSON: through a `serde_json::Value`, so its keys
/// come sorted, as the API has always sent them.
fn json_body(body: &impl Serialize) -> Json<serde_json::Value> {
    Json(serde_json::json!(body))
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                message: self.message,
                status: None,
            },
        };
        let mut response = (self.status, json_body(&body)).into_response();
        if let Some(wait) = self.retry_after {
            let secs = wait.as_secs().max(1).to_string();
            if let Ok(value) = secs.parse() {
                response.headers_mut().insert("retry-after", value);
            }
        }
        if self.challenge {
            response.headers_mut().insert(
                "www-authenticate",
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl Api {
    /// Who calls: an agent by its secret, a person by the gateway's
    /// authentication, or, without one, the person `claimed` names.
    async fn caller(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        claimed: Option<&str>,
    ) -> Result<Sender, ApiError> {
        Ok(self.proven_caller(headers, uri, claimed, None).await?.0)
    }

    /// [`Api::caller`], and who the guards count the call for: the proven
    /// identity, or without one the address it came from (`peer`).
    async fn proven_caller(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        claimed: Option<&str>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<(Sender, Caller), ApiError> {
        let ctx = call_context(Method::SendMessage, headers.clone(), uri.query());
        let user = self.gateway.identify(&ctx).await.map_err(|err| ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: err.message().to_owned(),
            retry_after: None,
            challenge: true,
        })?;
        let sender = self.hub.sender_of(&user.name, claimed);
        let caller = match &sender {
            Sender::Agent(name) => Caller::Agent(name.clone()),
            Sender::Person(name) if user.authenticated && !user.name.is_empty() => {
                Caller::Person(name.clone())
            }
            _ => Caller::Anonymous(peer),
        };
        Ok((sender, caller))
    }

    /// A person who proved who they are, for the decisions the guards leave
    /// to a person: authenticated by the gateway, or, where it authenticates
    /// nobody, holding the operator token. Never an agent, and never a
    /// name a caller merely claims.
    async fn person_who_proved_it(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
    ) -> Result<String, ApiError> {
        let ctx = call_context(Method::SendMessage, headers.clone(), uri.query());
        let user = self.gateway.identify(&ctx).await.map_err(|err| ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: err.message().to_owned(),
            retry_after: None,
            challenge: true,
        })?;
        if let Sender::Agent(agent) = self.hub.sender_of(&user.name, None) {
            // A guard an agent could lift would not guard against agents.
            return Err(HubError::new(
                HubErrorKind::Invalid,
                format!("only a person resumes a paused thread, not agent {agent}"),
            )
            .into());
        }
        if user.authenticated && !user.name.is_empty() {
            return Ok(user.name);
        }
        let presented = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if presented.is_some_and(|token| self.hub.is_operator_token(token.trim())) {
            return Ok(crate::DEFAULT_PERSON.to_owned());
        }
        let kept = match self.hub.operator_token_file() {
            Some(file) => format!(" (kept in {})", file.display()),
            None => String::new(),
        };
        Err(ApiError {
            status: StatusCode::UNAUTHORIZED,
            message: format!(
                "resuming a paused thread takes a person who proves it: the operator token{kept} \
                 as a bearer token, as `a2a hub resume` and the page send it"
            ),
            retry_after: None,
            challenge: true,
        })
    }
}

async fn channels(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    api.caller(&headers, &uri, None).await?;
    let channels = api.hub.channels();
    Ok(json_body(&ChannelList { channels }).into_response())
}

async fn threads(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
    query: Result<Query<ThreadsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    api.caller(&headers, &uri, None).await?;
    let Query(query) = query.map_err(|err| ApiError::bad_request(err.body_text()))?;
    if let Some(channel) = &query.channel {
        if api.hub.config().channel(channel).is_none() {
            return Err(HubError::not_found(format!("no channel named {channel:?}")).into());
        }
    }
    let page = api.hub.threads_page(
        query.channel.as_deref(),
        query.limit.unwrap_or(100),
        query.cursor.as_deref(),
    )?;
    let list = ThreadList {
        threads: page.threads,
        next_cursor: page.next_cursor,
    };
    Ok(json_body(&list).into_response())
}

async fn messages(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
    query: Result<Query<MessagesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    api.caller(&headers, &uri, None).await?;
    let Query(query) = query.map_err(|err| ApiError::bad_request(err.body_text()))?;
    let messages = api
        .hub
        .messages(
            query.channel.as_deref(),
            query.thread.as_deref(),
            query.limit.unwrap_or(100),
        )
        .await?;
    Ok(json_body(&MessageList { messages }).into_response())
}

async fn post_message(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
    body: Result<Json<PostMessage>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let from = api.caller(&headers, &uri, body.from.as_deref()).await?;
    let message = api
        .hub
        .post(Post {
            from,
            channel: body.channel,
            thread: body.thread,
            text: body.text,
            mirror: false,
        })
        .await?;
    Ok((StatusCode::CREATED, json_body(&PostedMessage { message })).into_response())
}

async fn collaborate(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
    extensions: axum::http::Extensions,
    body: Result<Json<CollaborateRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let peer = extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    let (from, caller) = api
        .proven_caller(&headers, &uri, body.from.as_deref(), peer)
        .await?;
    let collaboration = api
        .hub
        .collaborate_as(
            from,
            &caller,
            Collaborate {
                target: body.target,
                text: body.text,
                thread: body.thread,
                channel: body.channel,
            },
        )
        .await?;
    Ok(json_body(&CollaborationAnswer { collaboration }).into_response())
}

async fn resume(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let by = api.person_who_proved_it(&headers, &uri).await?;
    let thread = api.hub.resume_thread(&id, &by).await?;
    Ok(json_body(&ResumedThread { thread }).into_response())
}

async fn events(
    State(api): State<Api>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<ChannelQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    api.caller(&headers, &uri, None).await?;
    // As `threads` does: a channel the hub lacks would stream nothing forever.
    if let Some(channel) = &query.channel {
        if api.hub.config().channel(channel).is_none() {
            return Err(HubError::not_found(format!("no channel named {channel:?}")).into());
        }
    }
    let channel = query.channel;
    let stream = BroadcastStream::new(api.hub.subscribe()).filter_map(move |event| {
        let event = match event {
            Ok(HubEvent::Message(message)) => channel
                .as_ref()
                .is_none_or(|c| *c == message.channel)
                .then(|| Event::default().event(MESSAGE_EVENT).json_data(&*message)),
            Ok(HubEvent::Thread(thread)) => channel
                .as_ref()
                .is_none_or(|c| *c == thread.channel)
                .then(|| Event::default().event(THREAD_EVENT).json_data(&*thread)),
            Ok(HubEvent::Delivery(message)) => channel
                .as_ref()
                .is_none_or(|c| *c == message.channel)
                .then(|| Event::default().event(DELIVERY_EVENT).json_data(&*message)),
            // A reader that fell behind missed events: it reloads.
            Err(BroadcastStreamRecvError::Lagged(missed)) => Some(Ok(Event::default()
                .event(LAGGED_EVENT)
                .data(missed.to_string()))),
        };
        futures::future::ready(event.and_then(Result::ok).map(Ok))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
