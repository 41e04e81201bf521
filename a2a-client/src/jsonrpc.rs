//! The JSON-RPC 2.0 transport (SSE for streams).

use std::sync::atomic::{AtomicU64, Ordering};

use a2a_core::operation::{Request, UnaryResponse};
use a2a_core::{A2aError, JsonRpcError, JsonRpcRequest, JsonRpcResponse, Method, StreamResponse};
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::value::RawValue;

use crate::http::{HttpSettings, default_client, headers, retry_after, sse_events};
use crate::{CallOptions, ClientError, EventStream, Transport, wrong_way};

/// Talks JSON-RPC 2.0 to one endpoint URL.
#[derive(Debug)]
pub struct JsonRpcTransport {
    http: reqwest::Client,
    url: String,
    settings: HttpSettings,
    next_id: AtomicU64,
}

impl JsonRpcTransport {
    /// A transport for the JSON-RPC endpoint at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        JsonRpcTransport::with_client(default_client(), url)
    }

    /// A transport using the given HTTP client.
    pub fn with_client(http: reqwest::Client, url: impl Into<String>) -> Self {
        JsonRpcTransport {
            http,
            url: url.into(),
            settings: HttpSettings::default(),
            next_id: AtomicU64::new(1),
        }
    }

    /// Replaces the timeouts and limits.
    #[must_use]
    pub fn with_settings(mut self, settings: HttpSettings) -> Self {
        self.settings = settings;
        self
    }

    async fn post<P: Serialize>(
        &self,
        method: Method,
        params: &P,
        options: &CallOptions,
        accept: &'static str,
    ) -> Result<(u64, reqwest::Response), ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&JsonRpcRequest::new(id, method, params))
            .map_err(|e| ClientError::decode(format!("encoding request: {e}")))?;
        let request = self
            .http
            .post(&self.url)
            .query(&options.query)
            .headers(headers(options)?)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body);
        let timeout = options.timeout.unwrap_or(self.settings.timeout);
        let response = if accept == "application/json" {
            request
                .timeout(timeout)
                .send()
                .await
                .map_err(ClientError::from_reqwest)?
        } else {
            crate::http::send_for_stream(request, timeout).await?
        };
        Ok((id, response))
    }

    async fn open_stream<P: Serialize>(
        &self,
        method: Method,
        params: &P,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let (_, response) = self
            .post(method, params, options, "text/event-stream")
            .await?;
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // An error known before the stream started comes as a plain response.
            let _: Option<IgnoredAny> = decode_envelope(
                response,
                self.settings.max_response_size,
                A2aError::from_jsonrpc,
            )
            .await?;
            return Err(ClientError::decode(format!(
                "{method} did not answer with an event stream"
            )));
        }
        let idle = options.idle_timeout.unwrap_or(self.settings.idle_timeout);
        let events = sse_events(response, idle, self.settings.max_event_size).map(|data| {
            let data = data?;
            let envelope: JsonRpcResponse<StreamResponse> = serde_json::from_str(&data)
                .map_err(|e| ClientError::decode(format!("stream event: {e}")))?;
            match (envelope.result, envelope.error) {
                (_, Some(error)) => Err(A2aError::from_jsonrpc(&error).into()),
                (Some(event), None) => Ok(event),
                (None, None) => Err(ClientError::decode(
                    "stream event has neither result nor error",
                )),
            }
        });
        Ok(Box::pin(events))
    }
}

/// The result of a unary JSON-RPC answer, or its error as `to_error` reads
/// the error object (1.0 and 0.3 codes differ); an HTTP failure without a
/// JSON-RPC body is an HTTP error.
pub(crate) async fn decode_envelope<R: DeserializeOwned>(
    response: reqwest::Response,
    limit: usize,
    to_error: impl Fn(&JsonRpcError) -> A2aError,
) -> Result<Option<R>, ClientError> {
    let status = response.status().as_u16();
    let wait = retry_after(response.headers());
    let bytes = crate::http::read_limited(response, limit).await?;
    let envelope: JsonRpcResponse<R> = match serde_json::from_slice(&bytes) {
        Ok(envelope) => envelope,
        Err(_) if status >= 400 => {
            let text = String::from_utf8_lossy(&bytes);
            return Err(
                ClientError::http(status, format!("HTTP {status}: {}", text.trim()))
                    .with_retry_after(wait),
            );
        }
        Err(err) => {
            return Err(ClientError::decode(format!(
                "invalid JSON-RPC response: {err}"
            )));
        }
    };
    if let Some(error) = envelope.error {
        return Err(ClientError::from(to_error(&error))
            .with_status(status)
            .with_retry_after(wait));
    }
    Ok(envelope.result)
}

/// The result of a unary call as `method`'s response, read from its JSON
/// text without an intermediate `Value`.
async fn decode_unary(
    method: Method,
    response: reqwest::Response,
    limit: usize,
) -> Result<UnaryResponse, ClientError> {
    let result: Option<Box<RawValue>> =
        decode_envelope(response, limit, A2aError::from_jsonrpc).await?;
    // A missing or null result (seen from some servers for Delete) reads as `{}`.
    let text = result.as_deref().map_or("{}", RawValue::get);
    let text = if text == "null" { "{}" } else { text };
    UnaryResponse::decode_json(method, text.as_bytes())
        .map_err(|e| ClientError::decode(format!("{method} result: {e}")))
}

#[async_trait::async_trait]
impl Transport for JsonRpcTransport {
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        let method = request.method();
        if method.is_streaming() {
            return Err(wrong_way(&request));
        }
        let (_, response) = self
            .post(method, &request, options, "application/json")
            .await?;
        decode_unary(method, response, self.settings.max_response_size).await
    }

    async fn stream(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        if !request.method().is_streaming() {
            return Err(wrong_way(&request));
        }
        self.open_stream(request.method(), &request, options).await
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.settings.timeout)
    }
}
