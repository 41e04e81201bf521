//! HTTP+JSON to an A2A 0.3 agent: 0.3's `/v1/…` paths with its ProtoJSON
//! bodies ([`a2a_core::v03::proto`], a view over the 0.3 JSON-RPC types),
//! the answers converted back to 1.0, so a [`Client`](crate::Client) works
//! the same against either generation.

use a2a_core::rest::RestRoute;
use a2a_core::v03::{self, proto, proto::ProtoJson};
use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Method, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;
use futures::StreamExt;
use reqwest::Method as Verb;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::http::{
    HttpSettings, default_client, from_v03, headers_v03, retry_after, sse_events, until_final,
};
use crate::{ByOperation, CallOptions, ClientError, EventStream};

/// Talks A2A 0.3 HTTP+JSON to one base URL (picked by the client for an
/// interface whose `protocolVersion` is `0.3`).
#[derive(Debug)]
pub struct RestV03Transport {
    http: reqwest::Client,
    base: String,
    settings: HttpSettings,
}

/// The most of an error response's body that is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

impl RestV03Transport {
    /// A transport for the 0.3 HTTP+JSON interface at `base`.
    pub fn new(base: impl Into<String>) -> Self {
        RestV03Transport::with_client(default_client(), base)
    }

    /// A transport using the given HTTP client.
    pub fn with_client(http: reqwest::Client, base: impl Into<String>) -> Self {
        RestV03Transport {
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

    /// The URL of `method` for the path fields `id` and `taskId`: 0.3's
    /// paths are 1.0's (without a tenant) under `/v1`.
    fn url(&self, method: Method, fields: Value) -> Result<String, ClientError> {
        let mut fields: Map<String, Value> = match fields {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        let path = RestRoute::of(method)
            .take_path(&mut fields)
            .map_err(|e| ClientError::from(A2aError::invalid_params(e.to_string())))?;
        Ok(format!("{}/v1{path}", self.base))
    }

    async fn send(
        &self,
        verb: Verb,
        url: String,
        body: Option<Vec<u8>>,
        options: &CallOptions,
        streaming: bool,
    ) -> Result<reqwest::Response, ClientError> {
        let accept = if streaming {
            "text/event-stream"
        } else {
            "application/json"
        };
        let mut request = self
            .http
            .request(verb, url)
            .headers(headers_v03(options)?)
            .header(ACCEPT, accept)
            .query(&options.query);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        let timeout = options.timeout.unwrap_or(self.settings.timeout);
        let response = crate::http::send(request, timeout, streaming).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let wait = retry_after(response.headers());
        let bytes = crate::http::read_limited(response, ERROR_BODY_LIMIT)
            .await
            .unwrap_or_default();
        Err(ClientError::from(proto::error_from_http(status, &bytes))
            .with_status(status)
            .with_retry_after(wait))
    }

    async fn call<R: DeserializeOwned>(
        &self,
        verb: Verb,
        url: String,
        body: Option<&impl Serialize>,
        options: &CallOptions,
    ) -> Result<R, ClientError> {
        let body = body.map(encode).transpose()?;
        let response = self.send(verb, url, body, options, false).await?;
        let bytes = crate::http::read_limited(response, self.settings.max_response_size).await?;
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) {
            &b"{}"[..]
        } else {
            &bytes[..]
        };
        serde_json::from_slice(bytes)
            .map_err(|e| ClientError::decode(format!("invalid 0.3 response body: {e}")))
    }

    async fn stream(
        &self,
        verb: Verb,
        url: String,
        body: Option<Vec<u8>>,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let response = self.send(verb, url, body, options, true).await?;
        let idle = options.idle_timeout.unwrap_or(self.settings.idle_timeout);
        let events = sse_events(response, idle, self.settings.max_event_size).map(|data| {
            let data = data?;
            let value: Value = serde_json::from_str(&data)
                .map_err(|e| ClientError::decode(format!("stream event: {e}")))?;
            // An error frame is `{"message": "…"}`; an event's message is an object.
            if let Some(Value::String(message)) = value.get("message") {
                return Err(A2aError::internal(message.clone()).into());
            }
            let event = v03::Event::from_protojson(value).map_err(from_v03)?;
            let last = matches!(&event, v03::Event::StatusUpdate(u) if u.is_final);
            Ok((event.into_v1().map_err(from_v03)?, last))
        });
        Ok(until_final(events))
    }
}

fn encode(value: &impl Serialize) -> Result<Vec<u8>, ClientError> {
    serde_json::to_vec(value).map_err(|e| ClientError::decode(format!("encoding request: {e}")))
}

fn send_body(request: SendMessageRequest) -> Value {
    v03::MessageSendParams::from_v1(request).to_protojson()
}

fn task_from(task: Value) -> Result<Task, ClientError> {
    v03::Task::from_protojson(task)
        .and_then(v03::Task::into_v1)
        .map_err(from_v03)
}

fn config_from(config: Value) -> Result<TaskPushNotificationConfig, ClientError> {
    v03::TaskPushNotificationConfig::from_protojson(config)
        .map(v03::TaskPushNotificationConfig::into_v1)
        .map_err(from_v03)
}

/// The operations one by one, as 0.3 carries them.
#[async_trait]
impl ByOperation for RestV03Transport {
    async fn send_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, ClientError> {
        let url = self.url(Method::SendMessage, json!({}))?;
        let answer: Value = self
            .call(Verb::POST, url, Some(&send_body(request)), options)
            .await?;
        v03::SendMessageResult::from_protojson(answer)
            .and_then(v03::SendMessageResult::into_v1)
            .map_err(from_v03)
    }

    async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let url = self.url(Method::SendStreamingMessage, json!({}))?;
        let body = encode(&send_body(request))?;
        self.stream(Verb::POST, url, Some(body), options).await
    }

    async fn get_task(
        &self,
        request: GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let mut url = self.url(Method::GetTask, json!({ "id": request.id }))?;
        if let Some(length) = request.history_length {
            url.push_str(&format!("?historyLength={length}"));
        }
        let task: Value = self.call(Verb::GET, url, None::<&()>, options).await?;
        task_from(task)
    }

    async fn list_tasks(
        &self,
        _request: ListTasksRequest,
        _options: &CallOptions,
    ) -> Result<ListTasksResponse, ClientError> {
        Err(ClientError::unsupported(
            "ListTasks is not part of A2A 0.3, which this agent speaks",
        ))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let body = json!({ "name": proto::task_name(&request.id) });
        let url = self.url(Method::CancelTask, json!({ "id": request.id }))?;
        let task: Value = self.call(Verb::POST, url, Some(&body), options).await?;
        task_from(task)
    }

    async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        // 0.3 servers route this GET only.
        let url = self.url(Method::SubscribeToTask, json!({ "id": request.id }))?;
        self.stream(Verb::GET, url, None, options).await
    }

    async fn create_push_config(
        &self,
        request: TaskPushNotificationConfig,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let url = self.url(
            Method::CreateTaskPushNotificationConfig,
            json!({ "taskId": request.task_id }),
        )?;
        let body =
            proto::create_push_config_request(&v03::TaskPushNotificationConfig::from_v1(request));
        let config: Value = self.call(Verb::POST, url, Some(&body), options).await?;
        config_from(config)
    }

    async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let url = self.url(
            Method::GetTaskPushNotificationConfig,
            json!({ "taskId": request.task_id, "id": request.id }),
        )?;
        let config: Value = self.call(Verb::GET, url, None::<&()>, options).await?;
        config_from(config)
    }

    async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: &CallOptions,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        let url = self.url(
            Method::ListTaskPushNotificationConfigs,
            json!({ "taskId": request.task_id }),
        )?;
        let list: Value = self.call(Verb::GET, url, None::<&()>, options).await?;
        let (configs, next_page_token) =
            proto::read_list_push_configs_response(list).map_err(from_v03)?;
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs
                .into_iter()
                .map(v03::TaskPushNotificationConfig::into_v1)
                .collect(),
            next_page_token,
        })
    }

    async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<(), ClientError> {
        let url = self.url(
            Method::DeleteTaskPushNotificationConfig,
            json!({ "taskId": request.task_id, "id": request.id }),
        )?;
        self.call::<serde::de::IgnoredAny>(Verb::DELETE, url, None::<&()>, options)
            .await
            .map(drop)
    }

    async fn get_extended_agent_card(
        &self,
        _request: GetExtendedAgentCardRequest,
        options: &CallOptions,
    ) -> Result<AgentCard, ClientError> {
        let url = format!("{}/v1/card", self.base);
        let card: v03::AgentCard = self.call(Verb::GET, url, None::<&()>, options).await?;
        Ok(card.into_v1())
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.settings.timeout)
    }
}
