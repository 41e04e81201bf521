//! The HTTP+JSON (REST) binding: every path of the spec, with and without a
//! `/{tenant}` prefix, and `google.rpc.Status` error bodies.
//!
//! Routes come from the table in `a2a_core::rest`, which the client uses too;
//! they are matched there because `{id}:cancel` puts a verb after a variable
//! inside one path segment, which path routers cannot express.

use a2a_core::json_writer::WriteJson as _;
use a2a_core::protojson::{decode_seed, json_text};
use a2a_core::rest::{Carrier, RestMatch, RestMismatch, from_query, match_route};
use a2a_core::{A2A_JSON_MEDIA_TYPE, A2aError, ErrorKind, StreamResponse};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method as Verb, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Map, Value};

use super::HttpState;
use super::common::{
    BodyRefused, answer_json, call_context, is_json_content_type, json_response, read_body,
    sse_event, sse_frame, sse_response, to_json, unsupported_content_type, with_challenge,
    with_extensions,
};
use a2a_core::operation::RequestOf;

use crate::auth::HeadCheck;
use crate::service;

/// A request no operation answers: the HTTP status to use, and why.
type Unrouted = (u16, A2aError);

/// Matches `verb path` (relative to the binding's base) against the shared
/// route table: an unknown path is 404, a known path with the wrong verb 405.
fn route(verb: &Verb, path: &str) -> Result<RestMatch, Unrouted> {
    match_route(verb.as_str(), path).map_err(|mismatch| {
        let (status, kind) = match &mismatch {
            RestMismatch::NotFound(_) => (404, ErrorKind::MethodNotFound),
            RestMismatch::MethodNotAllowed { .. } => (405, ErrorKind::MethodNotFound),
            RestMismatch::BadSegment(_) => (400, ErrorKind::InvalidRequest),
        };
        (status, A2aError::new(kind, mismatch.to_string()))
    })
}

/// Query parameters as a request object (the version parameter is no field).
fn query_object(query: Option<&str>) -> Map<String, Value> {
    let pairs: Vec<_> = url::form_urlencoded::parse(query.unwrap_or("").as_bytes()).collect();
    from_query(
        pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref())),
        a2a_core::VERSION_HEADER,
    )
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

/// Builds the call: the body (or the query) with the path's fields put back,
/// read as the operation's request type.
fn build_call(
    matched: &RestMatch,
    query: Map<String, Value>,
    body: Option<Value>,
) -> Result<service::Request, A2aError> {
    let mut object = match matched.route.carrier {
        Carrier::Query => query,
        Carrier::Body => match body {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(object)) => object,
            Some(_) => {
                return Err(A2aError::invalid_params(
                    "the request body must be a JSON object",
                ));
            }
        },
    };
    for (name, value) in &matched.fields {
        object.insert((*name).to_owned(), Value::String(value.clone()));
    }
    let bytes = to_json(&Value::Object(object));
    Ok(decode_seed(&bytes, RequestOf(matched.route.method))?)
}

/// The call a POST's body makes, with the path's fields and the query.
fn call_of(
    matched: &RestMatch,
    query: Map<String, Value>,
    bytes: &[u8],
) -> Result<service::Request, A2aError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return build_call(matched, query, None);
    }
    // The UTF-8 check JSON-RPC makes too: the body's members are read into
    // a Value today, but the check must not depend on that.
    let value = json_text(bytes).map_err(A2aError::from).and_then(|text| {
        serde_json::from_str::<Value>(text)
            .map_err(|err| A2aError::parse_error(format!("invalid JSON: {err}")))
    })?;
    build_call(matched, query, Some(value))
}

/// Handler of `{base}/v1/{*rest}` without 0.3 (the feature `v03`): a 1.0
/// request for tenant `v1` when it asks for 1.0, else a 0.3 request,
/// refused with `VersionNotSupported`.
#[cfg(not(feature = "v03"))]
pub(crate) async fn handle_or_refuse_v03(state: State<HttpState>, request: Request) -> Response {
    if super::common::wants_v03(request.headers(), request.uri().query()) {
        let media_type = response_media_type(request.headers());
        return error_response(&super::common::v03_not_served(), media_type);
    }
    handle(state, request).await
}

pub(crate) async fn handle(State(state): State<HttpState>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let media_type = response_media_type(&parts.headers);
    let path = parts.uri.path();
    let relative = path
        .strip_prefix(state.config.rest_base.trim_end_matches('/'))
        .unwrap_or(path);
    let matched = match route(&parts.method, relative) {
        Ok(matched) => matched,
        Err((status, err)) => {
            return json_response(status, media_type, to_json(&err.to_http_body()));
        }
    };
    // Who calls, before a byte of the body is read: a caller the server
    // would refuse never makes it read, hold or parse one.
    let head = if state.service.authenticates_heads() {
        let mut ctx = call_context(
            matched.route.method,
            parts.headers.clone(),
            parts.uri.query(),
        )
        .with_binding(crate::telemetry::binding::HTTP_JSON);
        matched.tenant.clone_into(&mut ctx.tenant);
        match state.service.authenticate_head(&mut ctx).await {
            Ok(head) => head,
            Err(err) => {
                let response = error_response(&err, media_type);
                return with_challenge(response, &err, state.challenge.as_ref());
            }
        }
    } else {
        HeadCheck::default()
    };
    let query = query_object(parts.uri.query());
    let call = if parts.method == Verb::POST {
        if !is_json_content_type(&parts.headers) {
            let err = unsupported_content_type(&parts.headers);
            return json_response(415, media_type, to_json(&err.to_http_body()));
        }
        let (bytes, hold) = match read_body(&parts.headers, body, (&state.config).into()).await {
            Ok(read) => read,
            Err(BodyRefused::Refused(err)) => {
                return json_response(413, media_type, to_json(&err.to_http_body()));
            }
            Err(BodyRefused::OverBudget) => return super::common::over_budget_rest(media_type),
        };
        let parsed = if bytes.len() <= super::common::PARSE_INLINE_MAX {
            Ok(call_of(&matched, query, &bytes))
        } else {
            let matched = matched.clone();
            super::common::parse_off_workers(bytes, move |bytes| call_of(&matched, query, &bytes))
                .await
        };
        // Parsed: the body's bytes leave the budget.
        drop(hold);
        parsed.and_then(|call| call)
    } else {
        build_call(&matched, query, None)
    };
    let call = match call {
        Ok(call) => call,
        Err(err) => return error_response(&err, media_type),
    };
    let mut ctx = call_context(
        matched.route.method,
        std::mem::take(&mut parts.headers),
        parts.uri.query(),
    )
    .with_binding(crate::telemetry::binding::HTTP_JSON);
    ctx.tenant = matched.tenant;
    let answer = match state.service.call_checked(&mut ctx, call, head).await {
        Ok(answer) => answer,
        Err(err) => {
            let response = error_response(&err, media_type);
            let response = with_challenge(response, &err, state.challenge.as_ref());
            return with_extensions(response, &ctx);
        }
    };
    let body = match answer {
        service::Response::Stream(events) => {
            let frames = events.map(|item: Result<StreamResponse, A2aError>| match item {
                Ok(event) => sse_frame(|frame| event.write_json(frame)),
                Err(err) => sse_event(&err.to_http_body()),
            });
            return with_extensions(sse_response(frames, state.config.keep_alive), &ctx);
        }
        unary => answer_json(&unary),
    };
    with_extensions(json_response(200, media_type, body), &ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::Method;

    #[test]
    fn routing_statuses() {
        let status = |verb, path| route(&verb, path).err().map(|(status, _)| status);
        assert_eq!(status(Verb::GET, "/nope"), Some(404));
        assert_eq!(status(Verb::DELETE, "/tasks/t-1"), Some(405));
        assert_eq!(status(Verb::GET, "/tasks/t-1:cancel"), Some(405));
        assert_eq!(status(Verb::GET, "/tasks/%FF"), Some(400));
        let matched = route(&Verb::GET, "/acme/tasks/a%20b").unwrap();
        assert_eq!(matched.route.method, Method::GetTask);
        assert_eq!(matched.tenant, "acme");
        assert_eq!(matched.fields, [("id", "a b".to_owned())]);
    }
}
