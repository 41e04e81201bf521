//! The HTTP+JSON (REST) transport (SSE for streams).

use a2a_core::operation::{Request, UnaryResponse};
use a2a_core::rest::{Carrier, RestRoute, to_query};
use a2a_core::{A2aError, HttpErrorBody, Method, StreamResponse};
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method as Verb, StatusCode};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::http::{HttpSettings, default_client, headers, retry_after, sse_events};
use crate::{CallOptions, ClientError, EventStream, Transport, wrong_way};

/// A request placed on the binding: verb, URL, query and body.
type Placed = (Verb, String, Vec<(String, String)>, Option<Vec<u8>>);

const ACCEPT_JSON: &str = "application/json, application/a2a+json";

/// Talks HTTP+JSON to one base URL.
#[derive(Debug)]
pub struct RestTransport {
    http: reqwest::Client,
    base: String,
    settings: HttpSettings,
}

impl RestTransport {
    /// A transport for the HTTP+JSON interface at `base` (no trailing slash needed).
    pub fn new(base: impl Into<String>) -> Self {
        RestTransport::with_client(default_client(), base)
    }

    /// A transport using the given HTTP client.
    pub fn with_client(http: reqwest::Client, base: impl Into<String>) -> Self {
        RestTransport {
            http,
            base: base.into().trim_end_matches('/').to_owned(),
            settings: HttpSettings::default(),
        }
    }

    /// Replaces the timeouts and limits.
    #[must_use]
    pub fn with_settings(mut self, settings: HttpSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The URL, query and body of `request` for `method`, from the shared
    /// route table: the path's fields come out of the request's ProtoJSON
    /// object, the rest travels as the route says.
    fn place<T: Serialize>(&self, method: Method, request: &T) -> Result<Placed, ClientError> {
        let route = RestRoute::of(method);
        let mut fields = match serde_json::to_value(request) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => Map::new(),
            Err(e) => return Err(ClientError::decode(format!("encoding request: {e}"))),
        };
        let path = route
            .take_path(&mut fields)
            .map_err(|e| ClientError::from(A2aError::invalid_params(e.to_string())))?;
        let url = format!("{}{path}", self.base);
        let verb = Verb::from_bytes(route.verb.as_bytes()).unwrap_or(Verb::POST);
        Ok(match route.carrier {
            Carrier::Query => (verb, url, to_query(fields), None),
            // Always a JSON object: some servers refuse an empty body or `null`.
            Carrier::Body => (verb, url, Vec::new(), json(&Value::Object(fields))?),
        })
    }

    /// A streaming call of `method`.
    async fn open<T: Serialize>(
        &self,
        method: Method,
        request: &T,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let (verb, url, _, body) = self.place(method, request)?;
        match self.open_stream(verb, url.clone(), body, options).await {
            // SubscribeToTask: the spec text says POST, the proto GET; servers
            // differ, so the other is tried on 405.
            Err(err)
                if method == Method::SubscribeToTask
                    && err.status() == Some(StatusCode::METHOD_NOT_ALLOWED.as_u16()) =>
            {
                self.open_stream(Verb::GET, url, None, options).await
            }
            other => other,
        }
    }

    async fn send(
        &self,
        verb: Verb,
        url: String,
        query: Vec<(String, String)>,
        body: Option<Vec<u8>>,
        options: &CallOptions,
        streaming: bool,
    ) -> Result<reqwest::Response, ClientError> {
        let mut request = self
            .http
            .request(verb, url)
            .headers(headers(options)?)
            .header(
                ACCEPT,
                if streaming {
                    "text/event-stream"
                } else {
                    ACCEPT_JSON
                },
            )
            .query(&query)
            // The call's own (an API key the auth interceptor put there, say).
            .query(&options.query);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        let timeout = options.timeout.unwrap_or(self.settings.timeout);
        let response = if streaming {
            crate::http::send_for_stream(request, timeout).await?
        } else {
            request
                .timeout(timeout)
                .send()
                .await
                .map_err(ClientError::from_reqwest)?
        };
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(error_from(response).await)
        }
    }

    async fn exchange(
        &self,
        method: Method,
        (verb, url, query, body): Placed,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        let response = self.send(verb, url, query, body, options, false).await?;
        let bytes = crate::http::read_limited(response, self.settings.max_response_size).await?;
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) {
            &b"{}"[..]
        } else {
            &bytes[..]
        };
        UnaryResponse::decode_json(method, bytes)
            .map_err(|e| ClientError::decode(format!("invalid {method} response body: {e}")))
    }

    async fn open_stream(
        &self,
        verb: Verb,
        url: String,
        body: Option<Vec<u8>>,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let response = self
            .send(verb, url, Vec::new(), body, options, true)
            .await?;
        let idle = options.idle_timeout.unwrap_or(self.settings.idle_timeout);
        let events = sse_events(response, idle, self.settings.max_event_size).map(|data| {
            let data = data?;
            let value: Value = serde_json::from_str(&data)
                .map_err(|e| ClientError::decode(format!("stream event: {e}")))?;
            if value.get("error").is_some() {
                let body: HttpErrorBody = serde_json::from_value(value)
                    .map_err(|e| ClientError::decode(format!("stream error: {e}")))?;
                return Err(A2aError::from_http_body(
                    u16::try_from(body.error.code).unwrap_or(500),
                    &body,
                )
                .into());
            }
            serde_json::from_value::<StreamResponse>(value)
                .map_err(|e| ClientError::decode(format!("stream event: {e}")))
        });
        Ok(Box::pin(events))
    }
}

fn json<T: Serialize>(value: &T) -> Result<Option<Vec<u8>>, ClientError> {
    serde_json::to_vec(value)
        .map(Some)
        .map_err(|e| ClientError::decode(format!("encoding request: {e}")))
}

/// The most of an error response's body that is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Decodes a non-2xx response into the A2A error it carries, leniently.
async fn error_from(response: reqwest::Response) -> ClientError {
    let status = response.status().as_u16();
    let wait = retry_after(response.headers());
    // An error body is short; a server that sends a long one is cut off.
    let bytes = crate::http::read_limited(response, ERROR_BODY_LIMIT)
        .await
        .unwrap_or_default();
    let error = match serde_json::from_slice::<HttpErrorBody>(&bytes) {
        Ok(body) => ClientError::from(A2aError::from_http_body(status, &body)).with_status(status),
        Err(_) => {
            let text = String::from_utf8_lossy(&bytes);
            ClientError::http(status, format!("HTTP {status}: {}", text.trim()))
        }
    };
    error.with_retry_after(wait)
}

#[async_trait::async_trait]
impl Transport for RestTransport {
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        let method = request.method();
        if method.is_streaming() {
            return Err(wrong_way(&request));
        }
        let placed = self.place(method, &request)?;
        self.exchange(method, placed, options).await
    }

    async fn stream(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        if !request.method().is_streaming() {
            return Err(wrong_way(&request));
        }
        self.open(request.method(), &request, options).await
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.settings.timeout)
    }
}
