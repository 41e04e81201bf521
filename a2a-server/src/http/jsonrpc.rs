//! The JSON-RPC 2.0 binding, with SSE for the streaming methods.

use a2a_core::json_writer::WriteJson as _;
use a2a_core::protojson::{StrRef, decode_seed, json_text};
use a2a_core::{A2aError, ErrorKind, JsonRpcResponse, Method, StreamResponse};
use axum::extract::{Request, State};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;
use serde_json::value::RawValue;

use super::common::{
    BodyRefused, call_context, is_json_content_type, json_response, read_body, sse_event,
    sse_frame, sse_response, to_json, unsupported_content_type, with_challenge, with_extensions,
    write_answer, write_jsonrpc_result,
};
#[cfg(feature = "v03")]
use super::jsonrpc_v03;
use super::{HttpState, common};
use a2a_core::operation::RequestOf;

use crate::CallContext;
use crate::auth::HeadCheck;
use crate::service;

const JSON: &str = "application/json";

fn error_response(id: Value, err: &A2aError) -> Response {
    let body = JsonRpcResponse::<()>::failure(id, err.to_jsonrpc());
    // JSON-RPC reports errors in the body; the HTTP exchange itself succeeded.
    json_response(200, JSON, to_json(&body))
}

fn success(id: &Value, answer: &service::Response) -> Vec<u8> {
    let mut body = Vec::with_capacity(1024);
    write_jsonrpc_result(&mut body, id, |out| write_answer(out, answer));
    body
}

/// Decodes the params of `method` straight from their JSON text into a call.
fn decode_call(method: Method, params: &str) -> Result<service::Request, A2aError> {
    Ok(decode_seed(params.as_bytes(), RequestOf(method))?)
}

/// A well-formed request read in one pass: when `method` comes before
/// `params` (as every client writes it), the params are parsed straight into
/// their request type while the envelope is read. Anything else (params first,
/// a malformed envelope, invalid params) fails here and is read again by
/// [`envelope`], which says exactly what is wrong.
struct Direct {
    id: Value,
    call: service::Request,
}

impl<'de> serde::Deserialize<'de> for Direct {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DirectVisitor)
    }
}

struct DirectVisitor;

impl<'de> serde::de::Visitor<'de> for DirectVisitor {
    type Value = Direct;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Direct, A::Error> {
        use serde::de::Error as _;
        let (mut id, mut version, mut method, mut call) = (None, None, None, None);
        // Names and values borrowed where they can be (serde's `Cow<str>`
        // always copies).
        while let Some(key) = map.next_key::<StrRef<'de>>()? {
            match &*key {
                "jsonrpc" if version.is_none() => {
                    version = Some(&*map.next_value::<StrRef<'de>>()? == "2.0");
                }
                "id" if id.is_none() => {
                    id = Some(match map.next_value::<Value>()? {
                        id @ (Value::String(_) | Value::Number(_) | Value::Null) => id,
                        _ => return Err(A::Error::custom("id")),
                    });
                }
                "method" if method.is_none() => {
                    let name = map.next_value::<StrRef<'de>>()?;
                    method =
                        Some(Method::from_name(&name).ok_or_else(|| A::Error::custom("method"))?);
                }
                "params" if call.is_none() => match method {
                    Some(method) => call = Some(map.next_value_seed(RequestOf(method))?),
                    None => return Err(A::Error::custom("params before method")),
                },
                "jsonrpc" | "id" | "method" | "params" => {
                    return Err(A::Error::custom("duplicate member"));
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let (Some(method), Some(true)) = (method, version) else {
            return Err(A::Error::custom("envelope"));
        };
        let call = match call {
            Some(call) => call,
            None => decode_call(method, "{}").map_err(|_| A::Error::custom("params"))?,
        };
        Ok(Direct {
            id: id.unwrap_or(Value::Null),
            call,
        })
    }
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
    let text = json_text(body).map_err(|err| (Value::Null, A2aError::from(err)))?;
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
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

/// The request's id and call, or the id (if known) and what is wrong.
pub(crate) fn read_call(body: &[u8]) -> Result<(Value, service::Request), (Value, A2aError)> {
    match read_call_in_one_pass(body) {
        Some(read) => Ok(read),
        None => read_call_in_two_passes(body),
    }
}

/// The one-pass shortcut of [`read_call`]: `None` for any body it does not
/// read by itself, whatever the reason.
pub(crate) fn read_call_in_one_pass(body: &[u8]) -> Option<(Value, service::Request)> {
    // A stray byte in an unknown member was accepted here yet a parse error
    // for the two-pass reader: member order decided (see json_text).
    let text = json_text(body).ok()?;
    let Direct { id, call } = serde_json::from_str::<Direct>(text).ok()?;
    Some((id, call))
}

/// [`read_call`] without the one-pass shortcut: what it falls back to, and
/// what the shortcut must agree with whenever the shortcut succeeds.
pub(crate) fn read_call_in_two_passes(
    body: &[u8],
) -> Result<(Value, service::Request), (Value, A2aError)> {
    let (id, method, params) = envelope(body)?;
    match decode_call(method, params) {
        Ok(call) => Ok((id, call)),
        Err(err) => Err((id, err)),
    }
}

/// The head's authentication (see [`crate::A2aService::authenticate_head`]),
/// or the JSON-RPC answer refusing it.
async fn authenticate_head(
    state: &HttpState,
    ctx: &mut CallContext,
) -> Result<HeadCheck, Response> {
    if !state.service.authenticates_heads() {
        return Ok(HeadCheck::default());
    }
    state.service.authenticate_head(ctx).await.map_err(|err| {
        with_challenge(
            error_response(Value::Null, &err),
            &err,
            state.challenge.as_ref(),
        )
    })
}

/// `POST` handler of the JSON-RPC endpoint.
pub(crate) async fn handle(State(state): State<HttpState>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    // One context for the head and the call: the headers move into it once.
    // The operation is in the body, so it names a placeholder until then.
    let mut ctx = call_context(
        Method::SendMessage,
        std::mem::take(&mut parts.headers),
        parts.uri.query(),
    )
    .with_binding(crate::telemetry::binding::JSONRPC);
    // Who calls, before a byte of the body is read: a caller the server
    // would refuse never makes it read, hold or parse one.
    let head = match authenticate_head(&state, &mut ctx).await {
        Ok(head) => head,
        Err(refused) => return refused,
    };
    let headers = ctx.service_params.headers();
    if !is_json_content_type(headers) {
        return error_response(Value::Null, &unsupported_content_type(headers));
    }
    let (bytes, hold) = match read_body(headers, body, (&state.config).into()).await {
        Ok(read) => read,
        Err(BodyRefused::Refused(err)) => return error_response(Value::Null, &err),
        Err(BodyRefused::OverBudget) => return common::over_budget_jsonrpc(),
    };
    let parsed = common::parse_off_workers(bytes, |bytes| {
        let read = read_call(&bytes);
        (bytes, read)
    })
    .await;
    let (bytes, read) = match parsed {
        Ok(parsed) => parsed,
        Err(err) => return error_response(Value::Null, &err),
    };
    let (id, call) = match read {
        Ok(read) => read,
        Err((id, err)) => {
            // A 0.3 method name is no 1.0 method: only requests refused as
            // such are looked at again, so 1.0 calls never pay for 0.3.
            if err.kind() == ErrorKind::MethodNotFound
                && common::wants_v03(ctx.service_params.headers(), parts.uri.query())
            {
                if let Some(method) = common::method_of(&bytes) {
                    // Boxed: its state stays out of this future, which every
                    // 1.0 call creates and moves.
                    #[cfg(feature = "v03")]
                    {
                        // The 0.3 handler reads the request's head whole.
                        parts.headers = ctx.service_params.headers().clone();
                        return Box::pin(jsonrpc_v03::handle(state, parts, method, &bytes)).await;
                    }
                    #[cfg(not(feature = "v03"))]
                    {
                        let _ = method;
                        return error_response(id, &common::v03_not_served());
                    }
                }
            }
            return error_response(id, &err);
        }
    };
    ctx.method = call.method();
    // Not kept across the call: this future is boxed and moved whole. The
    // body is parsed, so its bytes leave the budget.
    drop((parts, bytes, hold));
    let answer = match state.service.call_checked(&mut ctx, call, head).await {
        Ok(answer) => answer,
        Err(err) => {
            let response = with_challenge(error_response(id, &err), &err, state.challenge.as_ref());
            return with_extensions(response, &ctx);
        }
    };
    let body = match answer {
        service::Response::Stream(events) => {
            let frames = events.map(move |item: Result<StreamResponse, A2aError>| match item {
                Ok(event) => {
                    sse_frame(|frame| write_jsonrpc_result(frame, &id, |out| event.write_json(out)))
                }
                Err(err) => sse_event(&JsonRpcResponse::<()>::failure(
                    id.clone(),
                    err.to_jsonrpc(),
                )),
            });
            return with_extensions(sse_response(frames, state.config.keep_alive), &ctx);
        }
        unary => success(&id, &unary),
    };
    with_extensions(json_response(200, JSON, body), &ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(body: &str) -> Result<(Value, String), (Value, i64)> {
        read_call(body.as_bytes())
            .map(|(id, call)| (id, format!("{call:?}")))
            .map_err(|(id, err)| (id, err.to_jsonrpc().code))
    }

    #[test]
    fn member_order_does_not_change_the_call() {
        let usual = r#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t","historyLength":2}}"#;
        assert!(
            serde_json::from_slice::<Direct>(usual.as_bytes()).is_ok(),
            "the usual order is read in one pass"
        );
        let method_first = read(usual);
        let params_first = read(
            r#"{"params":{"historyLength":2,"id":"t"},"id":"a","method":"GetTask","jsonrpc":"2.0"}"#,
        );
        assert!(method_first.is_ok());
        assert_eq!(method_first, params_first);
        let no_params = read(r#"{"jsonrpc":"2.0","id":3,"method":"GetExtendedAgentCard"}"#);
        let null_params =
            read(r#"{"jsonrpc":"2.0","id":3,"method":"GetExtendedAgentCard","params":null}"#);
        assert!(no_params.is_ok());
        assert_eq!(no_params, null_params);
    }

    #[test]
    fn escapes_in_the_envelope_read_as_their_text() {
        // Escaped names and values cannot be borrowed: they are copied.
        let plain = read(r#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t"}}"#);
        assert!(plain.is_ok());
        for escaped in [
            r#"{"jsonrpc":"2.0","id":"a","\u006dethod":"GetTask","params":{"id":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"Get\u0054ask","params":{"id":"t"}}"#,
            r#"{"jsonrpc":"2\u002e0","id":"a","method":"GetTask","params":{"id":"t"}}"#,
        ] {
            assert_eq!(read(escaped), plain, "{escaped}");
        }
    }

    #[test]
    fn a_malformed_envelope_is_told_apart_from_bad_params() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}"#,
                json_id(1),
                -32602,
            ),
            (
                r#"{"id":1,"method":"GetTask","params":{"id":5},"jsonrpc":"2.0"}"#,
                json_id(1),
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[]}"#,
                json_id(1),
                -32602,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}"#,
                json_id(1),
                -32601,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"t"}}"#,
                json_id(1),
                -32600,
            ),
            (
                r#"{"id":1,"method":"GetTask","params":{"id":"t"}}"#,
                json_id(1),
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{"id":"t"}}"#,
                Value::Null,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#,
                Value::Null,
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}"#,
                Value::Null,
                -32700,
            ),
        ];
        for (body, id, code) in cases {
            assert_eq!(read(body), Err((id, code)), "{body}");
        }
    }

    #[test]
    fn invalid_utf8_is_a_parse_error_in_any_member_order() {
        // Found by the jsonrpc_envelope fuzz target: a byte that is not UTF-8
        // inside a member the reader skips was accepted when method came
        // before params, and a parse error otherwise.
        let method_first =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"x\":\"\xd0\",\"id\":\"t\"}}";
        let params_first =
            b"{\"params\":{\"x\":\"\xd0\",\"id\":\"t\"},\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"}";
        for body in [&method_first[..], &params_first[..]] {
            let read = read_call(body).map_err(|(id, err)| (id, err.to_jsonrpc().code));
            assert_eq!(read.map(|_| ()), Err((Value::Null, -32700)));
        }
    }

    fn json_id(id: i64) -> Value {
        Value::from(id)
    }
}
