//! The HTTP+JSON (REST) transport (SSE for streams).

use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    HttpErrorBody, ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskState,
};
use async_trait::async_trait;
use futures::StreamExt;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method as Verb, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::http::{HttpSettings, default_client, headers, retry_after, sse_events};
use crate::{CallOptions, ClientError, EventStream, Transport};

/// Characters escaped in a path segment (RFC 3986 unreserved ones stay).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

const ACCEPT_JSON: &str = "application/json, application/a2a+json";

/// Talks HTTP+JSON to one base URL.
#[derive(Debug)]
pub struct RestTransport {
    http: reqwest::Client,
    base: String,
    settings: HttpSettings,
}

fn segment(value: &str) -> String {
    utf8_percent_encode(value, SEGMENT).to_string()
}

/// Query string pairs; empty values are left out.
#[derive(Default)]
struct Query(Vec<(&'static str, String)>);

impl Query {
    fn add(mut self, key: &'static str, value: impl ToString) -> Self {
        let value = value.to_string();
        if !value.is_empty() {
            self.0.push((key, value));
        }
        self
    }

    fn add_opt<T: ToString>(self, key: &'static str, value: Option<T>) -> Self {
        match value {
            Some(v) => self.add(key, v),
            None => self,
        }
    }
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

    fn url(&self, tenant: &str, path: &str) -> String {
        if tenant.is_empty() {
            format!("{}{path}", self.base)
        } else {
            format!("{}/{}{path}", self.base, segment(tenant))
        }
    }

    async fn send(
        &self,
        verb: Verb,
        url: String,
        query: Query,
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
            .query(&query.0);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        if !streaming {
            request = request.timeout(options.timeout.unwrap_or(self.settings.timeout));
        }
        let response = request.send().await.map_err(ClientError::from_reqwest)?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(error_from(response).await)
        }
    }

    async fn call<R: DeserializeOwned>(
        &self,
        verb: Verb,
        url: String,
        query: Query,
        body: Option<Vec<u8>>,
        options: &CallOptions,
    ) -> Result<R, ClientError> {
        let response = self.send(verb, url, query, body, options, false).await?;
        let bytes = response.bytes().await.map_err(ClientError::from_reqwest)?;
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) {
            &b"{}"[..]
        } else {
            &bytes[..]
        };
        serde_json::from_slice(bytes)
            .map_err(|e| ClientError::decode(format!("invalid response body: {e}")))
    }

    async fn stream(
        &self,
        verb: Verb,
        url: String,
        body: Option<Vec<u8>>,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let response = self
            .send(verb, url, Query::default(), body, options, true)
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

/// Decodes a non-2xx response into the A2A error it carries, leniently.
async fn error_from(response: reqwest::Response) -> ClientError {
    let status = response.status().as_u16();
    let wait = retry_after(response.headers());
    let bytes = response.bytes().await.unwrap_or_default();
    let error = match serde_json::from_slice::<HttpErrorBody>(&bytes) {
        Ok(body) => ClientError::from(A2aError::from_http_body(status, &body)).with_status(status),
        Err(_) => {
            let text = String::from_utf8_lossy(&bytes);
            ClientError::http(status, format!("HTTP {status}: {}", text.trim()))
        }
    };
    error.with_retry_after(wait)
}

#[async_trait]
impl Transport for RestTransport {
    async fn send_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, ClientError> {
        let url = self.url(&request.tenant, "/message:send");
        self.call(Verb::POST, url, Query::default(), json(&request)?, options)
            .await
    }

    async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let url = self.url(&request.tenant, "/message:stream");
        self.stream(Verb::POST, url, json(&request)?, options).await
    }

    async fn get_task(
        &self,
        request: GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let url = self.url(&request.tenant, &format!("/tasks/{}", segment(&request.id)));
        let query = Query::default().add_opt("historyLength", request.history_length);
        self.call(Verb::GET, url, query, None, options).await
    }

    async fn list_tasks(
        &self,
        request: ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, ClientError> {
        let url = self.url(&request.tenant, "/tasks");
        let status = (request.status != TaskState::Unspecified).then_some(request.status);
        let query = Query::default()
            .add("contextId", &request.context_id)
            .add_opt("status", status)
            .add_opt("pageSize", request.page_size)
            .add("pageToken", &request.page_token)
            .add_opt("historyLength", request.history_length)
            .add_opt(
                "statusTimestampAfter",
                request
                    .status_timestamp_after
                    .map(|t| a2a_core::protojson::format_timestamp(&t)),
            )
            .add_opt("includeArtifacts", request.include_artifacts);
        self.call(Verb::GET, url, query, None, options).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let url = self.url(
            &request.tenant,
            &format!("/tasks/{}:cancel", segment(&request.id)),
        );
        // Always a JSON object body: some servers reject an empty body or `null`.
        let body = serde_json::json!({ "metadata": request.metadata });
        let body = if request.metadata.is_some() {
            json(&body)?
        } else {
            Some(b"{}".to_vec())
        };
        self.call(Verb::POST, url, Query::default(), body, options)
            .await
    }

    async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let url = self.url(
            &request.tenant,
            &format!("/tasks/{}:subscribe", segment(&request.id)),
        );
        // The spec text says POST, the proto GET; servers differ, so try the other on 405.
        match self
            .stream(Verb::POST, url.clone(), Some(b"{}".to_vec()), options)
            .await
        {
            Err(err) if err.status() == Some(StatusCode::METHOD_NOT_ALLOWED.as_u16()) => {
                self.stream(Verb::GET, url, None, options).await
            }
            other => other,
        }
    }

    async fn create_task_push_notification_config(
        &self,
        request: TaskPushNotificationConfig,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let url = self.url(
            &request.tenant,
            &format!(
                "/tasks/{}/pushNotificationConfigs",
                segment(&request.task_id)
            ),
        );
        self.call(Verb::POST, url, Query::default(), json(&request)?, options)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let path = format!(
            "/tasks/{}/pushNotificationConfigs/{}",
            segment(&request.task_id),
            segment(&request.id)
        );
        self.call(
            Verb::GET,
            self.url(&request.tenant, &path),
            Query::default(),
            None,
            options,
        )
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: &CallOptions,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        let url = self.url(
            &request.tenant,
            &format!(
                "/tasks/{}/pushNotificationConfigs",
                segment(&request.task_id)
            ),
        );
        let page_size = (request.page_size > 0).then_some(request.page_size);
        let query = Query::default()
            .add_opt("pageSize", page_size)
            .add("pageToken", &request.page_token);
        self.call(Verb::GET, url, query, None, options).await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<(), ClientError> {
        let path = format!(
            "/tasks/{}/pushNotificationConfigs/{}",
            segment(&request.task_id),
            segment(&request.id)
        );
        self.send(
            Verb::DELETE,
            self.url(&request.tenant, &path),
            Query::default(),
            None,
            options,
            false,
        )
        .await
        .map(drop)
    }

    async fn get_extended_agent_card(
        &self,
        request: GetExtendedAgentCardRequest,
        options: &CallOptions,
    ) -> Result<AgentCard, ClientError> {
        let url = self.url(&request.tenant, "/extendedAgentCard");
        self.call(Verb::GET, url, Query::default(), None, options)
            .await
    }
}
