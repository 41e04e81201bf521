//! The JSON-RPC 2.0 transport (SSE for streams).

use std::sync::atomic::{AtomicU64, Ordering};

use a2a_core::{A2aError, JsonRpcError, JsonRpcRequest, JsonRpcResponse, Method, StreamResponse};
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::http::{HttpSettings, default_client, headers, retry_after, sse_events};
use crate::{CallOptions, ClientError, EventStream};

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

    async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: Method,
        params: &P,
        options: &CallOptions,
    ) -> Result<R, ClientError> {
        let result = self.call_value(method, params, options).await?;
        serde_json::from_value(result)
            .map_err(|e| ClientError::decode(format!("{method} result: {e}")))
    }

    async fn call_value<P: Serialize>(
        &self,
        method: Method,
        params: &P,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        let (_, response) = self
            .post(method, params, options, "application/json")
            .await?;
        decode_unary(response, self.settings.max_response_size).await
    }

    async fn stream<P: Serialize>(
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
            decode_unary(response, self.settings.max_response_size).await?;
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

async fn decode_unary(response: reqwest::Response, limit: usize) -> Result<Value, ClientError> {
    let result = decode_envelope(response, limit, A2aError::from_jsonrpc).await?;
    // A missing or null result (seen from some servers for Delete) reads as `{}`.
    Ok(result
        .filter(|v| !v.is_null())
        .unwrap_or_else(|| Value::Object(Default::default())))
}

/// The result of a unary JSON-RPC answer, or its error as `to_error` reads
/// the error object (1.0 and 0.3 codes differ); an HTTP failure without a
/// JSON-RPC body is an HTTP error.
pub(crate) async fn decode_envelope(
    response: reqwest::Response,
    limit: usize,
    to_error: impl Fn(&JsonRpcError) -> A2aError,
) -> Result<Option<Value>, ClientError> {
    let status = response.status().as_u16();
    let wait = retry_after(response.headers());
    let bytes = crate::http::read_limited(response, limit).await?;
    let envelope: JsonRpcResponse<Value> = match serde_json::from_slice(&bytes) {
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

crate::transport::json_transport!(JsonRpcTransport);
