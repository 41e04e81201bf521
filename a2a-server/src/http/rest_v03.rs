//! A2A 0.3 over HTTP+JSON: 0.3's paths under `{base}/v1/` (`/v1/message:send`,
//! `/v1/tasks/{id}:cancel`, …) with 0.3's ProtoJSON bodies
//! ([`a2a_core::v03::proto`]) and its `{"message": …}` error bodies, served
//! by the same [`A2aService`](crate::A2aService) as 1.0 calls.
//!
//! The router sends only `{base}/v1/…` here, a route of its own, so 1.0
//! requests elsewhere never reach this code. A 1.0 request can still name
//! that path (a tenant called `v1`); it says so with its `A2A-Version`
//! header and is handed to the 1.0 handler untouched.

use a2a_core::rest::match_route;
use a2a_core::v03::{self, proto, proto::ProtoJson};
use a2a_core::{A2aError, ErrorKind, Method, StreamResponse};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method as Verb};
use axum::response::Response;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::HttpState;
use super::common::{
    BodyRefused, call_context, is_json_content_type, json_response, read_body, sse_event,
    sse_response, to_json, unsupported_content_type, with_challenge, with_extensions,
};
use crate::auth::HeadCheck;
use crate::service::{self, Request as Call};

const JSON: &str = "application/json";

/// The prefix of every 0.3 HTTP+JSON path, below the binding's base.
pub(crate) const PREFIX: &str = "/v1";

fn error_response(err: &A2aError) -> Response {
    let body = proto::ErrorBody {
        message: err.message().to_owned(),
    };
    json_response(proto::http_status(err.kind()), JSON, to_json(&body))
}

/// Handler of `{base}/v1/{*rest}`: a 0.3 request, or a 1.0 one for tenant `v1`.
pub(crate) async fn handle(state: State<HttpState>, request: Request) -> Response {
    if !super::common::wants_v03(request.headers(), request.uri().query()) {
        return super::rest::handle(state, request).await;
    }
    let State(state) = state;
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path();
    let base = state.config.rest_base.trim_end_matches('/');
    let relative = path
        .strip_prefix(base)
        .and_then(|p| p.strip_prefix(PREFIX))
        .unwrap_or(path)
        .to_owned();
    let (method, mut fields) = match route(&parts.method, &relative) {
        Ok(matched) => matched,
        Err(err) => return error_response(&err),
    };
    // Who calls, before a byte of the body is read.
    let head = if state.service.authenticates_heads() {
        let mut ctx = call_context(method, parts.headers.clone(), parts.uri.query())
            .with_binding(crate::telemetry::binding::HTTP_JSON);
        match state.service.authenticate_head(&mut ctx).await {
            Ok(head) => head,
            Err(err) => {
                let response = error_response(&err);
                return with_challenge(response, &err, state.challenge.as_ref());
            }
        }
    } else {
        HeadCheck::default()
    };
    let (body, hold) = if parts.method == Verb::POST {
        if !is_json_content_type(&parts.headers) {
            return error_response(&unsupported_content_type(&parts.headers));
        }
        match read_body(&parts.headers, body, (&state.config).into()).await {
            Ok((bytes, hold)) => (bytes, Some(hold)),
            Err(BodyRefused::Refused(err)) => return error_response(&err),
            Err(BodyRefused::OverBudget) => return super::common::over_budget_v03(),
        }
    } else {
        (bytes::Bytes::new(), None)
    };
    if let Some(query) = parts.uri.query() {
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            if key == "historyLength" || key == "history_length" {
                fields.insert("historyLength".into(), Value::String(value.into_owned()));
            }
        }
    }
    let decoded = if body.len() <= super::common::PARSE_INLINE_MAX {
        Ok(decode(method, &fields, &body))
    } else {
        super::common::parse_off_workers(body, move |body| decode(method, &fields, &body)).await
    };
    // Parsed: the body's bytes leave the budget.
    drop(hold);
    let call = match decoded.and_then(|call| call) {
        Ok(call) => call,
        Err(err) => return error_response(&err),
    };
    // Served as a 1.0 call from here on: say so, so a version policy that
    // refuses a missing header lets it through.
    let mut headers = std::mem::take(&mut parts.headers);
    headers.insert(
        HeaderName::from_static("a2a-version"),
        HeaderValue::from_static(a2a_core::PROTOCOL_VERSION),
    );
    let mut ctx = call_context(call.method(), headers, parts.uri.query())
        .with_binding(crate::telemetry::binding::HTTP_JSON);
    let answer = match state.service.call_checked(&mut ctx, call, head).await {
        Ok(answer) => answer,
        Err(err) => {
            let response = with_challenge(error_response(&err), &err, state.challenge.as_ref());
            return with_extensions(response, &ctx);
        }
    };
    if let service::Response::Stream(events) = answer {
        let frames = events.map(|item: Result<StreamResponse, A2aError>| match item {
            Ok(event) => sse_event(&v03::Event::from_v1(event).to_protojson()),
            Err(err) => sse_event(&proto::ErrorBody {
                message: err.message().to_owned(),
            }),
        });
        return with_extensions(sse_response(frames, state.config.keep_alive), &ctx);
    }
    let response = match answer_body(answer, state.service.card()) {
        Ok(body) => json_response(200, JSON, body),
        Err(err) => error_response(&err),
    };
    with_extensions(response, &ctx)
}

/// The operation at `verb path` (below `/v1`) and the fields its path binds.
/// 0.3's paths are 1.0's without a tenant, and `/card` for the extended card.
fn route(verb: &Verb, path: &str) -> Result<(Method, Map<String, Value>), A2aError> {
    if path == "/card" {
        return if verb == Verb::GET {
            Ok((Method::GetExtendedAgentCard, Map::new()))
        } else {
            Err(A2aError::new(
                ErrorKind::MethodNotFound,
                format!("{verb} is not allowed on {PREFIX}{path}"),
            ))
        };
    }
    let not_found = || {
        A2aError::new(
            ErrorKind::MethodNotFound,
            format!("no A2A 0.3 operation at {verb} {PREFIX}{path}"),
        )
    };
    let matched = match match_route(verb.as_str(), path) {
        Ok(matched) => matched,
        Err(a2a_core::rest::RestMismatch::BadSegment(err)) => {
            return Err(A2aError::invalid_request(err.to_string()));
        }
        Err(_) => return Err(not_found()),
    };
    let method = matched.route.method;
    // 0.3 had no tenants, no ListTasks, and its extended card lives at `/card`.
    if !matched.tenant.is_empty()
        || matches!(method, Method::ListTasks | Method::GetExtendedAgentCard)
    {
        return Err(not_found());
    }
    let fields = matched
        .fields
        .into_iter()
        .map(|(name, value)| (name.to_owned(), Value::String(value)))
        .collect();
    Ok((method, fields))
}

fn body_of<T: DeserializeOwned + Default>(body: &[u8]) -> Result<T, A2aError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    let text = a2a_core::protojson::json_text(body).map_err(A2aError::from)?;
    if !text.trim_start().starts_with('{') {
        return Err(A2aError::invalid_params(
            "the request body must be a JSON object",
        ));
    }
    a2a_core::protojson::decode(text.as_bytes())
        .map_err(|e| A2aError::invalid_params(e.to_string()))
}

fn field(fields: &Map<String, Value>, name: &str) -> String {
    fields
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The 1.0 call a 0.3 request stands for.
fn decode(method: Method, fields: &Map<String, Value>, body: &[u8]) -> Result<Call, A2aError> {
    let id = field(fields, "id");
    let task_id = field(fields, "taskId");
    Ok(match method {
        Method::SendMessage | Method::SendStreamingMessage => {
            let params = v03::MessageSendParams::from_protojson(body_of(body)?)?.into_v1()?;
            if method == Method::SendMessage {
                Call::SendMessage(Box::new(params))
            } else {
                Call::SendStreamingMessage(Box::new(params))
            }
        }
        Method::GetTask => {
            let history_length = match fields.get("historyLength").and_then(Value::as_str) {
                None | Some("") => None,
                Some(text) => Some(text.parse::<i32>().map_err(|_| {
                    A2aError::invalid_params(format!("historyLength {text:?} is not a number"))
                })?),
            };
            Call::GetTask(a2a_core::GetTaskRequest {
                id,
                history_length,
                ..Default::default()
            })
        }
        Method::CancelTask => Call::CancelTask(a2a_core::CancelTaskRequest {
            id,
            ..Default::default()
        }),
        Method::SubscribeToTask => Call::SubscribeToTask(a2a_core::SubscribeToTaskRequest {
            id,
            ..Default::default()
        }),
        Method::CreateTaskPushNotificationConfig => {
            let config = proto::read_create_push_config_request(body_of(body)?)?;
            // The path names the task; the body's names are not needed.
            Call::CreatePushConfig(config.into_v1(task_id))
        }
        Method::GetTaskPushNotificationConfig => {
            Call::GetPushConfig(a2a_core::GetTaskPushNotificationConfigRequest {
                task_id,
                id,
                ..Default::default()
            })
        }
        Method::ListTaskPushNotificationConfigs => {
            Call::ListPushConfigs(a2a_core::ListTaskPushNotificationConfigsRequest {
                task_id,
                ..Default::default()
            })
        }
        Method::DeleteTaskPushNotificationConfig => {
            Call::DeletePushConfig(a2a_core::DeleteTaskPushNotificationConfigRequest {
                task_id,
                id,
                ..Default::default()
            })
        }
        Method::GetExtendedAgentCard => {
            Call::GetExtendedAgentCard(a2a_core::GetExtendedAgentCardRequest::default())
        }
        Method::ListTasks => {
            return Err(A2aError::new(
                ErrorKind::MethodNotFound,
                "ListTasks is not part of A2A 0.3",
            ));
        }
    })
}

/// A unary 1.0 answer in its 0.3 ProtoJSON form (the extended card: the
/// 0.3 card JSON, as 0.3's `/v1/card` served it).
fn answer_body(
    answer: service::Response,
    public: &a2a_core::AgentCard,
) -> Result<Vec<u8>, A2aError> {
    use service::Response as R;
    Ok(match answer {
        R::SendMessage(response) => {
            to_json(&v03::SendMessageResult::from_v1(response).to_protojson())
        }
        R::Task(task) => to_json(&v03::Task::from_v1(task).to_protojson()),
        R::PushConfig(config) => {
            to_json(&v03::TaskPushNotificationConfig::from_v1(config).to_protojson())
        }
        R::PushConfigs(list) => {
            let configs: Vec<_> = list
                .configs
                .into_iter()
                .map(v03::TaskPushNotificationConfig::from_v1)
                .collect();
            to_json(&proto::list_push_configs_response(
                &configs,
                &list.next_page_token,
            ))
        }
        R::Empty => b"{}".to_vec(),
        R::AgentCard(card) => to_json(&super::jsonrpc_v03::card_v03(*card, public)?),
        R::ListTasks(_) | R::Stream(_) => {
            return Err(A2aError::internal("no 0.3 form for this answer"));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_of_0_3() {
        let method = |verb, path| route(&verb, path).map(|(m, _)| m);
        assert_eq!(
            method(Verb::POST, "/message:send").unwrap(),
            Method::SendMessage
        );
        assert_eq!(
            method(Verb::GET, "/card").unwrap(),
            Method::GetExtendedAgentCard
        );
        assert_eq!(
            method(Verb::GET, "/tasks/t:subscribe").unwrap(),
            Method::SubscribeToTask
        );
        let (m, fields) = route(&Verb::GET, "/tasks/t%201/pushNotificationConfigs/c").unwrap();
        assert_eq!(m, Method::GetTaskPushNotificationConfig);
        assert_eq!(fields["taskId"], "t 1");
        assert!(route(&Verb::GET, "/tasks").is_err());
        assert!(route(&Verb::GET, "/acme/tasks/t").is_err());
        assert!(route(&Verb::GET, "/extendedAgentCard").is_err());
        assert_eq!(
            route(&Verb::GET, "/tasks/%FF").unwrap_err().kind(),
            ErrorKind::InvalidRequest
        );
    }

    #[test]
    fn hostile_bodies_are_invalid_params() {
        for body in [
            &b"[1]"[..],
            b"{\"message\": 5}",
            b"{\"message\":{\"content\":[{}]}}",
            b"\xff",
        ] {
            let err = decode(Method::SendMessage, &Map::new(), body).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidParams | ErrorKind::ParseError),
                "{err:?}"
            );
        }
    }
}
