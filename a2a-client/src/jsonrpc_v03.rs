//! JSON-RPC to an A2A 0.3 agent: the 1.0 operations sent under their 0.3
//! method names and shapes, the answers converted back to 1.0, so a
//! [`Client`](crate::Client) works the same against either generation.

use std::sync::atomic::{AtomicU64, Ordering};

use a2a_core::v03::{self, Method};
use a2a_core::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    JsonRpcResponse, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};
use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::http::{HttpSettings, default_client, from_v03, headers_v03, sse_events, until_final};
use crate::{ByOperation, CallOptions, ClientError, EventStream};

/// Talks A2A 0.3 JSON-RPC to one endpoint URL (picked by the client for an
/// interface whose `protocolVersion` is `0.3`).
#[derive(Debug)]
pub struct JsonRpcV03Transport {
    http: reqwest::Client,
    url: String,
    settings: HttpSettings,
    next_id: AtomicU64,
}

impl JsonRpcV03Transport {
    /// A transport for the 0.3 JSON-RPC endpoint at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        JsonRpcV03Transport::with_client(default_client(), url)
    }

    /// A transport using the given HTTP client.
    pub fn with_client(http: reqwest::Client, url: impl Into<String>) -> Self {
        JsonRpcV03Transport {
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
    ) -> Result<reqwest::Response, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": id, "method": method.name(), "params": params,
        }))
        .map_err(|e| ClientError::decode(format!("encoding request: {e}")))?;
        let request = self
            .http
            .post(&self.url)
            .query(&options.query)
            .headers(headers_v03(options)?)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(body);
        let timeout = options.timeout.unwrap_or(self.settings.timeout);
        crate::http::send(request, timeout, accept != "application/json").await
    }

    async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: Method,
        params: &P,
        options: &CallOptions,
    ) -> Result<R, ClientError> {
        let response = self
            .post(method, params, options, "application/json")
            .await?;
        let result = decode_unary(response, self.settings.max_response_size).await?;
        serde_json::from_value(result)
            .map_err(|e| ClientError::decode(format!("{method} result: {e}")))
    }

    async fn stream<P: Serialize>(
        &self,
        method: Method,
        params: &P,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let response = self
            .post(method, params, options, "text/event-stream")
            .await?;
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            decode_unary(response, self.settings.max_response_size).await?;
            return Err(ClientError::decode(format!(
                "{method} did not answer with an event stream"
            )));
        }
        let idle = options.idle_timeout.unwrap_or(self.settings.idle_timeout);
        let events = sse_events(response, idle, self.settings.max_event_size).map(|data| {
            let data = data?;
            let envelope: JsonRpcResponse<v03::Event> = serde_json::from_str(&data)
                .map_err(|e| ClientError::decode(format!("stream event: {e}")))?;
            match (envelope.result, envelope.error) {
                (_, Some(error)) => Err(ClientError::from(v03::error_from_v03(&error))),
                (Some(event), None) => {
                    let last = matches!(&event, v03::Event::StatusUpdate(u) if u.is_final);
                    Ok((event.into_v1().map_err(from_v03)?, last))
                }
                (None, None) => Err(ClientError::decode(
                    "stream event has neither result nor error",
                )),
            }
        });
        Ok(until_final(events))
    }
}

async fn decode_unary(response: reqwest::Response, limit: usize) -> Result<Value, ClientError> {
    let result = crate::jsonrpc::decode_envelope(response, limit, v03::error_from_v03).await?;
    Ok(result.unwrap_or(Value::Null))
}

/// The operations one by one, as 0.3 carries them.
#[async_trait]
impl ByOperation for JsonRpcV03Transport {
    async fn send_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, ClientError> {
        let params = v03::MessageSendParams::from_v1(request);
        let result: v03::SendMessageResult =
            self.call(Method::MessageSend, &params, options).await?;
        result.into_v1().map_err(from_v03)
    }

    async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let params = v03::MessageSendParams::from_v1(request);
        self.stream(Method::MessageStream, &params, options).await
    }

    async fn get_task(
        &self,
        request: GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, ClientError> {
        let params = v03::TaskQueryParams::from_v1(request);
        let task: v03::Task = self.call(Method::TasksGet, &params, options).await?;
        task.into_v1().map_err(from_v03)
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
        let params = v03::TaskIdParams {
            id: request.id,
            metadata: request.metadata,
        };
        let task: v03::Task = self.call(Method::TasksCancel, &params, options).await?;
        task.into_v1().map_err(from_v03)
    }

    async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        let params = v03::TaskIdParams {
            id: request.id,
            metadata: None,
        };
        self.stream(Method::TasksResubscribe, &params, options)
            .await
    }

    async fn create_push_config(
        &self,
        request: TaskPushNotificationConfig,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let params = v03::TaskPushNotificationConfig::from_v1(request);
        let config: v03::TaskPushNotificationConfig =
            self.call(Method::PushConfigSet, &params, options).await?;
        Ok(config.into_v1())
    }

    async fn get_push_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let params = v03::GetTaskPushNotificationConfigParams {
            id: request.task_id,
            push_notification_config_id: Some(request.id),
            metadata: None,
        };
        let config: v03::TaskPushNotificationConfig =
            self.call(Method::PushConfigGet, &params, options).await?;
        Ok(config.into_v1())
    }

    async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: &CallOptions,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        let params = v03::ListTaskPushNotificationConfigParams {
            id: request.task_id,
            metadata: None,
        };
        // 0.3 answers with the bare array, all at once (no pages).
        let configs: Vec<v03::TaskPushNotificationConfig> =
            self.call(Method::PushConfigList, &params, options).await?;
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs
                .into_iter()
                .map(v03::TaskPushNotificationConfig::into_v1)
                .collect(),
            next_page_token: String::new(),
        })
    }

    async fn delete_push_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        options: &CallOptions,
    ) -> Result<(), ClientError> {
        let params = v03::DeleteTaskPushNotificationConfigParams {
            id: request.task_id,
            push_notification_config_id: request.id,
            metadata: None,
        };
        self.call::<_, serde::de::IgnoredAny>(Method::PushConfigDelete, &params, options)
            .await
            .map(drop)
    }

    async fn get_extended_agent_card(
        &self,
        _request: GetExtendedAgentCardRequest,
        options: &CallOptions,
    ) -> Result<AgentCard, ClientError> {
        let card: v03::AgentCard = self
            .call(Method::GetAuthenticatedExtendedCard, &json!({}), options)
            .await?;
        Ok(card.into_v1())
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.settings.timeout)
    }
}
