//! The JSON-RPC 2.0 binding, with SSE for the streaming methods.

use a2a_core::protojson::decode;
use a2a_core::{A2aError, JsonRpcResponse, Method, StreamResponse};
use axum::extract::{Request, State};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;
use serde_json::value::RawValue;

use super::HttpState;
use super::common::{
    call_context, is_json_content_type, json_response, read_body, sse_response, to_json,
    unsupported_content_type, with_extensions,
};
use crate::service::{Request as Call, Response as Answer};

const JSON: &str = "application/json";

fn error_response(id: Value, err: &A2aError) -> Response {
    let body = JsonRpcResponse::<()>::failure(id, err.to_jsonrpc());
    // JSON-RPC reports errors in the body; the HTTP exchange itself succeeded.
    json_response(200, JSON, to_json(&body))
}

fn success<T: serde::Serialize>(id: Value, result: &T) -> Vec<u8> {
    to_json(&JsonRpcResponse::success(id, result))
}

/// Decodes the params of `method` straight from their JSON text into a call.
fn decode_call(method: Method, params: &str) -> Result<Call, A2aError> {
    fn p<T: serde::de::DeserializeOwned>(params: &str) -> Result<T, A2aError> {
        Ok(decode(params.as_bytes())?)
    }
    Ok(match method {
        Method::SendMessage => Call::SendMessage(p(params)?),
        Method::SendStreamingMessage => Call::SendStreamingMessage(p(params)?),
        Method::GetTask => Call::GetTask(p(params)?),
        Method::ListTasks => Call::ListTasks(p(params)?),
        Method::CancelTask => Call::CancelTask(p(params)?),
        Method::SubscribeToTask => Call::SubscribeToTask(p(params)?),
        Method::CreateTaskPushNotificationConfig => Call::CreatePushConfig(p(params)?),
        Method::GetTaskPushNotificationConfig => Call::GetPushConfig(p(params)?),
        Method::ListTaskPushNotificationConfigs => Call::ListPushConfigs(p(params)?),
        Method::DeleteTaskPushNotificationConfig => Call::DeletePushConfig(p(params)?),
        Method::GetExtendedAgentCard => Call::GetExtendedAgentCard(p(params)?),
    })
}

/// The envelope, with `params` kept as raw text so it is parsed only once,
/// straight into its request type.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<Value>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// Validates the envelope; returns the id, method and params text.
fn envelope(body: &[u8]) -> Result<(Value, Method, &str), (Value, A2aError)> {
    let envelope: Envelope<'_> = match serde_json::from_slice(body) {
        Ok(envelope) => envelope,
        Err(err) if err.is_syntax() || err.is_eof() => {
            return Err((
                Value::Null,
                A2aError::parse_error(format!("invalid JSON: {err}")),
            ));
        }
        Err(_) => {
            let what = match body.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'[') => "batch requests are not supported",
                _ => "the request must be a JSON-RPC request object",
            };
            return Err((Value::Null, A2aError::invalid_request(what)));
        }
    };
    let id = match envelope.id {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id,
        Some(_) => {
            return Err((
                Value::Null,
                A2aError::invalid_request("id must be a string, a number or null"),
            ));
        }
    };
    if envelope.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err((id, A2aError::invalid_request("jsonrpc must be \"2.0\"")));
    }
    let method = match envelope.method {
        Some(Value::String(name)) => match Method::from_name(&name) {
            Some(method) => method,
            None => return Err((id, A2aError::method_not_found(&name))),
        },
        _ => return Err((id, A2aError::invalid_request("method must be a string"))),
    };
    let params = match envelope.params.map(|raw| raw.get().trim()) {
        None | Some("null") => "{}",
        Some(text) if text.starts_with('{') => text,
        Some(_) => return Err((id, A2aError::invalid_params("params must be an object"))),
    };
    Ok((id, method, params))
}

/// `POST` handler of the JSON-RPC endpoint.
pub(crate) async fn handle(State(state): State<HttpState>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    if !is_json_content_type(&parts.headers) {
        return error_response(Value::Null, &unsupported_content_type(&parts.headers));
    }
    let bytes = match read_body(&parts.headers, body, state.config.body_limit).await {
        Ok(bytes) => bytes,
        Err(err) => return error_response(Value::Null, &err),
    };
    let (id, method, params) = match envelope(&bytes) {
        Ok(parts) => parts,
        Err((id, err)) => return error_response(id, &err),
    };
    let call = match decode_call(method, params) {
        Ok(call) => call,
        Err(err) => return error_response(id, &err),
    };
    let mut ctx = call_context(
        method,
        std::mem::take(&mut parts.headers),
        parts.uri.query(),
    );
    let answer = match state.service.call(&mut ctx, call).await {
        Ok(answer) => answer,
        Err(err) => return with_extensions(error_response(id, &err), &ctx),
    };
    let body = match answer {
        Answer::SendMessage(r) => success(id, &r),
        Answer::Task(t) => success(id, &t),
        Answer::ListTasks(r) => success(id, &r),
        Answer::PushConfig(c) => success(id, &c),
        Answer::PushConfigs(c) => success(id, &c),
        Answer::Empty => success(id, &serde_json::json!({})),
        Answer::AgentCard(card) => success(id, &card),
        Answer::Stream(events) => {
            let frames = events.map(move |item: Result<StreamResponse, A2aError>| match item {
                Ok(event) => success(id.clone(), &event),
                Err(err) => to_json(&JsonRpcResponse::<()>::failure(
                    id.clone(),
                    err.to_jsonrpc(),
                )),
            });
            return with_extensions(sse_response(frames, state.config.keep_alive), &ctx);
        }
    };
    with_extensions(json_response(200, JSON, body), &ctx)
}
