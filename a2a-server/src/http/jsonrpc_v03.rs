//! A2A 0.3 over the JSON-RPC endpoint: `message/send` and the other 0.3
//! method names, their params and results in 0.3 shapes, served by the same
//! [`A2aService`](crate::A2aService) as 1.0 calls.
//!
//! The 1.0 reader runs first and untouched; only a request it refuses as
//! naming no 1.0 method comes here (see [`super::jsonrpc::handle`]), so 1.0
//! traffic pays nothing for 0.3. A 0.3 call is converted to its 1.0 request
//! and served with 1.0 semantics (the checks, authentication and
//! interceptors of every call apply); its answer, events and errors are
//! converted back.

use a2a_core::v03::{self, Method as V03Method};
use a2a_core::{
    A2aError, DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
    JsonRpcResponse, ListTaskPushNotificationConfigsRequest, StreamResponse,
};
use axum::http::{HeaderName, HeaderValue, request::Parts};
use axum::response::Response;
use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::HttpState;
use super::common::{
    call_context, json_response, sse_event, sse_response, to_json, with_challenge, with_extensions,
};
use crate::service::{self, Request};

const JSON: &str = "application/json";

fn error_response(id: Value, err: &A2aError) -> Response {
    let body = JsonRpcResponse::<()>::failure(id, v03::error_to_v03(err));
    json_response(200, JSON, to_json(&body))
}

fn success<T: Serialize>(id: Value, result: &T) -> Vec<u8> {
    to_json(&JsonRpcResponse::success(id, result))
}

/// The envelope's id and params text (the 1.0 reader has checked the rest).
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Value,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

fn params<T: DeserializeOwned>(raw: Option<&RawValue>) -> Result<T, A2aError> {
    let text = match raw.map(|r| r.get().trim()) {
        None | Some("null") => "{}",
        // serde would read an array into a struct, field by field.
        Some(text) if text.starts_with('{') => text,
        Some(_) => return Err(A2aError::invalid_params("params must be an object")),
    };
    a2a_core::protojson::decode(text.as_bytes())
        .map_err(|e| A2aError::invalid_params(e.to_string()))
}

/// The 1.0 call a 0.3 request stands for.
fn decode(method: V03Method, raw: Option<&RawValue>) -> Result<Request, A2aError> {
    Ok(match method {
        V03Method::MessageSend => {
            Request::SendMessage(Box::new(params::<v03::MessageSendParams>(raw)?.into_v1()?))
        }
        V03Method::MessageStream => Request::SendStreamingMessage(Box::new(
            params::<v03::MessageSendParams>(raw)?.into_v1()?,
        )),
        V03Method::TasksGet => Request::GetTask(params::<v03::TaskQueryParams>(raw)?.into_v1()),
        V03Method::TasksCancel => {
            let p: v03::TaskIdParams = params(raw)?;
            Request::CancelTask(a2a_core::CancelTaskRequest {
                tenant: String::new(),
                id: p.id,
                metadata: p.metadata,
            })
        }
        V03Method::TasksResubscribe => {
            let p: v03::TaskIdParams = params(raw)?;
            Request::SubscribeToTask(a2a_core::SubscribeToTaskRequest {
                tenant: String::new(),
                id: p.id,
            })
        }
        V03Method::PushConfigSet => {
            Request::CreatePushConfig(params::<v03::TaskPushNotificationConfig>(raw)?.into_v1())
        }
        V03Method::PushConfigGet => {
            let p: v03::GetTaskPushNotificationConfigParams = params(raw)?;
            // 0.3 let a client leave the config id out: its task's config
            // then had the task's id.
            let id = p
                .push_notification_config_id
                .unwrap_or_else(|| p.id.clone());
            Request::GetPushConfig(GetTaskPushNotificationConfigRequest {
                tenant: String::new(),
                task_id: p.id,
                id,
            })
        }
        V03Method::PushConfigList => {
            let p: v03::ListTaskPushNotificationConfigParams = params(raw)?;
            Request::ListPushConfigs(ListTaskPushNotificationConfigsRequest {
                task_id: p.id,
                ..Default::default()
            })
        }
        V03Method::PushConfigDelete => {
            let p: v03::DeleteTaskPushNotificationConfigParams = params(raw)?;
            Request::DeletePushConfig(DeleteTaskPushNotificationConfigRequest {
                tenant: String::new(),
                task_id: p.id,
                id: p.push_notification_config_id,
            })
        }
        V03Method::GetAuthenticatedExtendedCard => {
            Request::GetExtendedAgentCard(a2a_core::GetExtendedAgentCardRequest::default())
        }
    })
}

/// A unary 1.0 answer as the 0.3 `result`.
fn result_body(
    id: Value,
    answer: service::Response,
    public: &a2a_core::AgentCard,
) -> Result<Vec<u8>, A2aError> {
    use service::Response as R;
    Ok(match answer {
        R::SendMessage(response) => success(id, &v03::SendMessageResult::from_v1(response)),
        R::Task(task) => success(id, &v03::Task::from_v1(task)),
        R::PushConfig(config) => success(id, &v03::TaskPushNotificationConfig::from_v1(config)),
        // 0.3 answered a list with the bare array, and had no paging.
        R::PushConfigs(list) => success(
            id,
            &list
                .configs
                .into_iter()
                .map(v03::TaskPushNotificationConfig::from_v1)
                .collect::<Vec<_>>(),
        ),
        R::Empty => success(id, &Value::Null),
        R::AgentCard(card) => success(id, &card_v03(*card, public)?),
        R::ListTasks(_) | R::Stream(_) => {
            return Err(A2aError::internal("no 0.3 form for this answer"));
        }
    })
}

/// The 0.3 form of an extended card. An extended card need not repeat the
/// interfaces; 0.3 needs a url, which is then the public card's.
pub(crate) fn card_v03(
    mut card: a2a_core::AgentCard,
    public: &a2a_core::AgentCard,
) -> Result<v03::AgentCard, A2aError> {
    if card.supported_interfaces.is_empty() {
        card.supported_interfaces = public.supported_interfaces.clone();
    }
    v03::AgentCard::from_v1(&card)
        .ok_or_else(|| A2aError::internal("the agent lists no interface to give as its 0.3 url"))
}

/// Serves one 0.3 request, its body already read.
pub(crate) async fn handle(
    state: HttpState,
    mut parts: Parts,
    method: V03Method,
    body: &[u8],
) -> Response {
    let envelope: Envelope<'_> = match serde_json::from_slice(body) {
        Ok(envelope) => envelope,
        Err(err) => {
            return error_response(
                Value::Null,
                &A2aError::invalid_request(format!("invalid JSON-RPC request: {err}")),
            );
        }
    };
    let id = envelope.id;
    let call = match decode(method, envelope.params) {
        Ok(call) => call,
        Err(err) => return error_response(id, &err),
    };
    // The call is now a 1.0 one, served with 1.0 semantics: say so, so a
    // version policy that refuses a missing header lets it through.
    let mut headers = std::mem::take(&mut parts.headers);
    headers.insert(
        HeaderName::from_static("a2a-version"),
        HeaderValue::from_static(a2a_core::PROTOCOL_VERSION),
    );
    let mut ctx = call_context(call.method(), headers, parts.uri.query());
    let answer = match state.service.call(&mut ctx, call).await {
        Ok(answer) => answer,
        Err(err) => {
            let response = with_challenge(error_response(id, &err), &err, state.challenge.as_ref());
            return with_extensions(response, &ctx);
        }
    };
    if let service::Response::Stream(events) = answer {
        let frames = events.map(move |item: Result<StreamResponse, A2aError>| match item {
            Ok(event) => sse_event(&JsonRpcResponse::success(
                id.clone(),
                &v03::Event::from_v1(event),
            )),
            Err(err) => sse_event(&JsonRpcResponse::<()>::failure(
                id.clone(),
                v03::error_to_v03(&err),
            )),
        });
        return with_extensions(sse_response(frames, state.config.keep_alive), &ctx);
    }
    let response = match result_body(id.clone(), answer, state.service.card()) {
        Ok(body) => json_response(200, JSON, body),
        Err(err) => error_response(id, &err),
    };
    with_extensions(response, &ctx)
}
