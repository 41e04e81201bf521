//! The HTTP+JSON (REST) binding: every path of the spec, with and without a
//! `/{tenant}` prefix, and `google.rpc.Status` error bodies.
//!
//! Routes are matched by hand because `{id}:cancel` puts a verb after a
//! variable inside one path segment, which path routers cannot express.

use a2a_core::protojson::decode_value;
use a2a_core::{
    A2A_JSON_MEDIA_TYPE, A2aError, ErrorKind, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, Method, StreamResponse,
};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method as Verb, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Map, Value};

use super::HttpState;
use super::common::{
    call_context, is_json_content_type, json_response, read_body, sse_response, to_json,
    unsupported_content_type, with_extensions,
};
use crate::service::{Request as Call, Response as Answer};

/// A matched route: the operation, and the ids taken from the path.
#[derive(Debug, PartialEq, Eq)]
struct Route {
    method: Method,
    tenant: String,
    task_id: String,
    config_id: String,
}

/// A request no operation answers: the HTTP status to use, and why.
type Unrouted = (u16, A2aError);

/// Matches `verb path` (path relative to the binding's base) to an operation:
/// an unknown path is 404, a known path with the wrong verb 405.
fn route(verb: &Verb, path: &str) -> Result<Route, Unrouted> {
    let segments: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect::<Result<_, _>>()
        .map_err(|err| (400, err))?;
    let starts_route = |s: &str| {
        matches!(
            s,
            "message:send" | "message:stream" | "tasks" | "extendedAgentCard"
        )
    };
    let (tenant, rest) = match segments.split_first() {
        Some((first, rest)) if !starts_route(first) && !rest.is_empty() => (first.clone(), rest),
        _ => (String::new(), segments.as_slice()),
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let found = |method, task_id: &str, config_id: &str| Route {
        method,
        tenant: tenant.clone(),
        task_id: task_id.to_owned(),
        config_id: config_id.to_owned(),
    };
    let not_allowed = || {
        let err = A2aError::new(
            ErrorKind::MethodNotFound,
            format!("{verb} is not allowed on {path}"),
        );
        (405, err)
    };
    let m = verb.clone();
    let route = match rest.as_slice() {
        ["message:send"] if m == Verb::POST => found(Method::SendMessage, "", ""),
        ["message:stream"] if m == Verb::POST => found(Method::SendStreamingMessage, "", ""),
        ["message:send" | "message:stream"] => return Err(not_allowed()),
        ["tasks"] if m == Verb::GET => found(Method::ListTasks, "", ""),
        ["tasks"] => return Err(not_allowed()),
        ["tasks", last] => match last.rsplit_once(':') {
            Some((id, "cancel")) if m == Verb::POST => found(Method::CancelTask, id, ""),
            Some((id, "subscribe")) if m == Verb::POST || m == Verb::GET => {
                found(Method::SubscribeToTask, id, "")
            }
            Some((_, "cancel" | "subscribe")) => return Err(not_allowed()),
            _ if m == Verb::GET => found(Method::GetTask, last, ""),
            _ => return Err(not_allowed()),
        },
        ["tasks", id, "pushNotificationConfigs"] if m == Verb::POST => {
            found(Method::CreateTaskPushNotificationConfig, id, "")
        }
        ["tasks", id, "pushNotificationConfigs"] if m == Verb::GET => {
            found(Method::ListTaskPushNotificationConfigs, id, "")
        }
        ["tasks", id, "pushNotificationConfigs", config] if m == Verb::GET => {
            found(Method::GetTaskPushNotificationConfig, id, config)
        }
        ["tasks", id, "pushNotificationConfigs", config] if m == Verb::DELETE => {
            found(Method::DeleteTaskPushNotificationConfig, id, config)
        }
        ["tasks", _, "pushNotificationConfigs", ..] => return Err(not_allowed()),
        ["extendedAgentCard"] if m == Verb::GET => found(Method::GetExtendedAgentCard, "", ""),
        _ => {
            let err = A2aError::new(
                ErrorKind::MethodNotFound,
                format!("no A2A operation at {verb} {path}"),
            );
            return Err((404, err));
        }
    };
    Ok(route)
}

fn percent_decode(segment: &str) -> Result<String, A2aError> {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| A2aError::invalid_request(format!("path segment {segment:?} is not UTF-8")))
}

/// Query parameters as a JSON object; only `includeArtifacts` is a boolean, the
/// rest are strings (numbers and enums accept their string forms).
fn query_object(query: Option<&str>) -> Map<String, Value> {
    let mut object = Map::new();
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if key.eq_ignore_ascii_case(a2a_core::VERSION_HEADER) {
            continue;
        }
        let value = match (key.as_ref(), value.as_ref()) {
            ("includeArtifacts" | "include_artifacts", "true") => Value::Bool(true),
            ("includeArtifacts" | "include_artifacts", "false") => Value::Bool(false),
            _ => Value::String(value.into_owned()),
        };
        object.insert(key.into_owned(), value);
    }
    object
}

/// The response media type: what the client asked for, `application/json` by default.
fn response_media_type(headers: &HeaderMap) -> &'static str {
    let asks_a2a = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains(A2A_JSON_MEDIA_TYPE))
    };
    if asks_a2a(header::ACCEPT) || asks_a2a(header::CONTENT_TYPE) {
        A2A_JSON_MEDIA_TYPE
    } else {
        "application/json"
    }
}

fn error_response(err: &A2aError, media_type: &'static str) -> Response {
    json_response(
        err.kind().http_status(),
        media_type,
        to_json(&err.to_http_body()),
    )
}

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, A2aError> {
    Ok(decode_value(value)?)
}

/// Builds the call from the route, query and body.
fn build_call(
    route: &Route,
    query: Map<String, Value>,
    body: Option<Value>,
) -> Result<Call, A2aError> {
    let body_object = || -> Result<Map<String, Value>, A2aError> {
        match body.clone() {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(object)) => Ok(object),
            Some(_) => Err(A2aError::invalid_params(
                "the request body must be a JSON object",
            )),
        }
    };
    let with_ids = |mut object: Map<String, Value>, id_key: &str, id: &str| {
        if !id.is_empty() {
            object.insert(id_key.to_owned(), Value::String(id.to_owned()));
        }
        Value::Object(object)
    };
    Ok(match route.method {
        Method::SendMessage => Call::SendMessage(decode(Value::Object(body_object()?))?),
        Method::SendStreamingMessage => {
            Call::SendStreamingMessage(decode(Value::Object(body_object()?))?)
        }
        Method::GetTask => Call::GetTask(decode(with_ids(query, "id", &route.task_id))?),
        Method::ListTasks => Call::ListTasks(decode(Value::Object(query))?),
        Method::CancelTask => {
            Call::CancelTask(decode(with_ids(body_object()?, "id", &route.task_id))?)
        }
        Method::SubscribeToTask => {
            Call::SubscribeToTask(decode(with_ids(Map::new(), "id", &route.task_id))?)
        }
        Method::CreateTaskPushNotificationConfig => {
            Call::CreatePushConfig(decode(with_ids(body_object()?, "taskId", &route.task_id))?)
        }
        Method::ListTaskPushNotificationConfigs => {
            Call::ListPushConfigs(decode(with_ids(query, "taskId", &route.task_id))?)
        }
        Method::GetTaskPushNotificationConfig => {
            Call::GetPushConfig(GetTaskPushNotificationConfigRequest {
                tenant: String::new(),
                task_id: route.task_id.clone(),
                id: route.config_id.clone(),
            })
        }
        Method::DeleteTaskPushNotificationConfig => {
            Call::DeletePushConfig(a2a_core::DeleteTaskPushNotificationConfigRequest {
                tenant: String::new(),
                task_id: route.task_id.clone(),
                id: route.config_id.clone(),
            })
        }
        Method::GetExtendedAgentCard => {
            Call::GetExtendedAgentCard(GetExtendedAgentCardRequest::default())
        }
    })
}

/// Handler of every HTTP+JSON path under the binding's base.
pub(crate) async fn handle(State(state): State<HttpState>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let media_type = response_media_type(&parts.headers);
    let path = parts.uri.path();
    let relative = path
        .strip_prefix(state.config.rest_base.trim_end_matches('/'))
        .unwrap_or(path);
    let route = match route(&parts.method, relative) {
        Ok(route) => route,
        Err((status, err)) => {
            return json_response(status, media_type, to_json(&err.to_http_body()));
        }
    };
    let body = if parts.method == Verb::POST {
        if !is_json_content_type(&parts.headers) {
            return error_response(&unsupported_content_type(&parts.headers), media_type);
        }
        let bytes = match read_body(&parts.headers, body, state.config.body_limit).await {
            Ok(bytes) => bytes,
            Err(err) => return json_response(413, media_type, to_json(&err.to_http_body())),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(value) => Some(value),
                Err(err) => {
                    return error_response(
                        &A2aError::parse_error(format!("invalid JSON: {err}")),
                        media_type,
                    );
                }
            }
        }
    } else {
        None
    };
    let call = match build_call(&route, query_object(parts.uri.query()), body) {
        Ok(call) => call,
        Err(err) => return error_response(&err, media_type),
    };
    let mut ctx = call_context(
        route.method,
        std::mem::take(&mut parts.headers),
        parts.uri.query(),
    );
    ctx.tenant = route.tenant;
    let answer = match state.service.call(&mut ctx, call).await {
        Ok(answer) => answer,
        Err(err) => return with_extensions(error_response(&err, media_type), &ctx),
    };
    let body = match answer {
        Answer::SendMessage(r) => to_json(&r),
        Answer::Task(t) => to_json(&t),
        Answer::ListTasks(r) => to_json(&r),
        Answer::PushConfig(c) => to_json(&c),
        Answer::PushConfigs(c) => to_json(&c),
        Answer::Empty => b"{}".to_vec(),
        Answer::AgentCard(card) => to_json(&card),
        Answer::Stream(events) => {
            let frames = events.map(|item: Result<StreamResponse, A2aError>| match item {
                Ok(event) => to_json(&event),
                Err(err) => to_json(&err.to_http_body()),
            });
            return with_extensions(sse_response(frames, state.config.keep_alive), &ctx);
        }
    };
    with_extensions(json_response(200, media_type, body), &ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(verb: Verb, path: &str) -> Route {
        route(&verb, path).unwrap_or_else(|(_, e)| panic!("{verb} {path}: {e}"))
    }

    #[test]
    fn every_path_with_and_without_tenant() {
        for prefix in ["", "/acme"] {
            let tenant = prefix.trim_start_matches('/');
            let r = ok(Verb::POST, &format!("{prefix}/message:send"));
            assert_eq!((r.method, r.tenant.as_str()), (Method::SendMessage, tenant));
            assert_eq!(
                ok(Verb::POST, &format!("{prefix}/message:stream")).method,
                Method::SendStreamingMessage
            );
            assert_eq!(
                ok(Verb::GET, &format!("{prefix}/tasks")).method,
                Method::ListTasks
            );
            let r = ok(Verb::GET, &format!("{prefix}/tasks/t-1"));
            assert_eq!((r.method, r.task_id.as_str()), (Method::GetTask, "t-1"));
            let r = ok(Verb::POST, &format!("{prefix}/tasks/t-1:cancel"));
            assert_eq!((r.method, r.task_id.as_str()), (Method::CancelTask, "t-1"));
            assert_eq!(
                ok(Verb::GET, &format!("{prefix}/tasks/t-1:subscribe")).method,
                Method::SubscribeToTask
            );
            assert_eq!(
                ok(Verb::POST, &format!("{prefix}/tasks/t-1:subscribe")).method,
                Method::SubscribeToTask
            );
            let base = format!("{prefix}/tasks/t-1/pushNotificationConfigs");
            assert_eq!(
                ok(Verb::POST, &base).method,
                Method::CreateTaskPushNotificationConfig
            );
            assert_eq!(
                ok(Verb::GET, &base).method,
                Method::ListTaskPushNotificationConfigs
            );
            let r = ok(Verb::GET, &format!("{base}/c-1"));
            assert_eq!(
                (r.method, r.config_id.as_str()),
                (Method::GetTaskPushNotificationConfig, "c-1")
            );
            assert_eq!(
                ok(Verb::DELETE, &format!("{base}/c-1")).method,
                Method::DeleteTaskPushNotificationConfig
            );
            assert_eq!(
                ok(Verb::GET, &format!("{prefix}/extendedAgentCard")).method,
                Method::GetExtendedAgentCard
            );
        }
    }

    #[test]
    fn unknown_paths_and_wrong_verbs() {
        let status = |verb, path| route(&verb, path).err().map(|(status, _)| status);
        assert_eq!(status(Verb::GET, "/nope"), Some(404));
        assert_eq!(status(Verb::DELETE, "/tasks/t-1"), Some(405));
        assert_eq!(status(Verb::GET, "/tasks/t-1:cancel"), Some(405));
        assert_eq!(status(Verb::GET, "/tasks/%FF"), Some(400));
        let r = ok(Verb::GET, "/tasks/a%20b");
        assert_eq!(r.task_id, "a b");
    }
}
