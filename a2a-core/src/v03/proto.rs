//! The 0.3 messages in their ProtoJSON form: what 0.3's HTTP+JSON binding
//! carries. 0.3 defined that binding by its protobuf package `a2a.v1`
//! (`specification/grpc/a2a.proto` of the 0.3 release), so its bodies are
//! those messages' canonical JSON: parts without `kind` (`{"text": …}`,
//! `{"file": {"fileWithUri": …}}`, `{"data": {"data": {…}}}`), a message's
//! parts under `content`, enums as `ROLE_USER` and `TASK_STATE_WORKING`,
//! push configs named `tasks/{id}/pushNotificationConfigs/{configId}`.
//!
//! There are no separate types for this form: it is a view over the
//! JSON-RPC types of [`super`] ([`ProtoJson`]). Writing serializes the value
//! in its JSON-RPC form and reshapes that JSON into ProtoJSON; reading
//! reshapes ProtoJSON into the JSON-RPC form and deserializes it, so the
//! JSON-RPC types' own checks apply to both bindings. The reshaping keeps
//! to what a proto3 JSON reader does: field names in lowerCamelCase or
//! snake_case, `null` for the default, enums by name or number (an unknown
//! one is the `…_UNSPECIFIED` value), default values (empty strings,
//! `false`, `0`, empty lists) left out when writing. Reading what came from
//! the network returns [`A2aError`] (invalid params) when it does not fit,
//! never panics; its depth is bounded by the schema (metadata and data are
//! copied whole, not walked).
//!
//! ```
//! use a2a_core::v03::{self, proto::ProtoJson};
//! let body = serde_json::json!({"message": {"messageId": "m1",
//!     "role": "ROLE_USER", "content": [{"text": "hi"}]}});
//! let params = v03::MessageSendParams::from_protojson(body.clone()).unwrap();
//! assert_eq!(params.clone().into_v1().unwrap().message.text(), "hi");
//! assert_eq!(params.to_protojson()["message"], body["message"]);
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::A2aError;
use crate::protojson::nullable;

fn invalid(what: impl std::fmt::Display) -> A2aError {
    A2aError::invalid_params(what.to_string())
}

/// A 0.3 type that also has a ProtoJSON form (0.3's HTTP+JSON binding).
pub trait ProtoJson: Sized {
    /// This value in its ProtoJSON form.
    fn to_protojson(&self) -> Value;

    /// The value a ProtoJSON document stands for (invalid params when the
    /// document does not fit).
    fn from_protojson(value: Value) -> Result<Self, A2aError>;
}

/// The JSON-RPC form of `value` as a JSON object.
fn jsonrpc<T: Serialize>(value: &T) -> Map<String, Value> {
    // The 0.3 types have string keys and no fallible serializers, so this
    // cannot fail; an empty object is the harmless answer if one ever did.
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Reads the JSON-RPC form that a reshaped ProtoJSON document became.
fn read<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, A2aError> {
    serde_json::from_value(value).map_err(|e| invalid(format!("invalid 0.3 {what}: {e}")))
}

macro_rules! protojson {
    ($($ty:ident: $out:ident, $in:ident, $what:literal;)*) => {$(
        impl ProtoJson for super::$ty {
            fn to_protojson(&self) -> Value {
                Value::Object($out(jsonrpc(self)))
            }

            fn from_protojson(value: Value) -> Result<Self, A2aError> {
                read($in(value)?, $what)
            }
        }
    )*};
}

protojson! {
    Part: part_out, part_in, "part";
    Message: message_out, message_in, "message";
    TaskStatus: status_out, status_in, "task status";
    Artifact: artifact_out, artifact_in, "artifact";
    Task: task_out, task_in, "task";
    Event: event_out, event_in, "stream response";
    PushNotificationConfig: push_out, push_in, "push notification config";
    TaskPushNotificationConfig: task_push_out, task_push_in, "push notification config";
    MessageSendParams: send_params_out, send_params_in, "send message request";
}

impl ProtoJson for super::SendMessageResult {
    fn to_protojson(&self) -> Value {
        Value::Object(event_out(jsonrpc(self)))
    }

    fn from_protojson(value: Value) -> Result<Self, A2aError> {
        match super::Event::from_protojson(value)? {
            super::Event::Task(t) => Ok(super::SendMessageResult::Task(t)),
            super::Event::Message(m) => Ok(super::SendMessageResult::Message(m)),
            _ => Err(invalid("SendMessage answered with an update event")),
        }
    }
}

// ===== reading and writing fields =====

/// `camelCase` as `snake_case`, the other spelling a proto3 JSON reader accepts.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Takes field `name` (or its snake_case spelling); `null` is absent.
fn take(map: &mut Map<String, Value>, name: &str) -> Option<Value> {
    let value = match map.remove(name) {
        Some(value) => value,
        None => map.remove(&snake(name))?,
    };
    (!value.is_null()).then_some(value)
}

/// Takes the first of `names` present.
fn take_any(map: &mut Map<String, Value>, names: &[&str]) -> Option<Value> {
    names.iter().find_map(|name| take(map, name))
}

/// A ProtoJSON object (`null`: the empty message).
fn object(value: Value, what: &str) -> Result<Map<String, Value>, A2aError> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(invalid(format!(
            "a 0.3 {what} must be a JSON object, not {other}"
        ))),
    }
}

/// The JSON-RPC form's object (anything else: the empty one).
fn fields(value: Option<Value>) -> Map<String, Value> {
    match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Whether `value` is the proto3 default ProtoJSON leaves out.
fn is_default(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Object(_) => false,
    }
}

/// Sets `name` unless `value` is absent or `null`.
fn put(map: &mut Map<String, Value>, name: &str, value: Option<Value>) {
    if let Some(value) = value.filter(|v| !v.is_null()) {
        map.insert(name.to_owned(), value);
    }
}

/// Sets `name` unless `value` is absent or its type's default.
fn put_set(map: &mut Map<String, Value>, name: &str, value: Option<Value>) {
    put(map, name, value.filter(|v| !is_default(v)));
}

/// Sets `name` always (its default when absent).
fn put_always(map: &mut Map<String, Value>, name: &str, value: Option<Value>, default: Value) {
    map.insert(
        name.to_owned(),
        value.filter(|v| !v.is_null()).unwrap_or(default),
    );
}

/// Each element of a list through `f`; `None` for an absent list.
fn list(
    value: Option<Value>,
    what: &str,
    f: impl Fn(Value) -> Result<Value, A2aError>,
) -> Result<Option<Value>, A2aError> {
    match value {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(Value::Array(
            items.into_iter().map(f).collect::<Result<_, _>>()?,
        ))),
        Some(other) => Err(invalid(format!("0.3 {what} must be a list, not {other}"))),
    }
}

/// Each element of a JSON-RPC list through `f` (absent: empty).
fn list_out(value: Option<Value>, f: impl Fn(Map<String, Value>) -> Map<String, Value>) -> Value {
    match value {
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| Value::Object(f(fields(Some(item)))))
            .collect(),
        _ => Value::Array(Vec::new()),
    }
}

/// A protobuf enum's index, read from its name or its number; anything
/// else (an unknown name, a number out of range, another type) is 0, the
/// `…_UNSPECIFIED` value.
fn enum_index(value: &Value, names: &[&str]) -> usize {
    match value {
        Value::String(name) => names.iter().position(|n| n == name).unwrap_or(0),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n < names.len())
            .unwrap_or(0),
        _ => 0,
    }
}

// ===== enums =====

const ROLES: [&str; 3] = ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"];

fn role_out(role: Option<Value>) -> Value {
    let agent = role.as_ref().and_then(Value::as_str) == Some("agent");
    Value::from(if agent { ROLES[2] } else { ROLES[1] })
}

fn role_in(role: &Value) -> Value {
    // 0.3 had no unspecified role; a message without one was the user's.
    Value::from(if enum_index(role, &ROLES) == 2 {
        "agent"
    } else {
        "user"
    })
}

/// `a2a.v1.TaskState` names (spelling `CANCELLED`) and the JSON-RPC names.
const STATES: [(&str, &str); 9] = [
    ("TASK_STATE_UNSPECIFIED", "unknown"),
    ("TASK_STATE_SUBMITTED", "submitted"),
    ("TASK_STATE_WORKING", "working"),
    ("TASK_STATE_COMPLETED", "completed"),
    ("TASK_STATE_FAILED", "failed"),
    ("TASK_STATE_CANCELLED", "canceled"),
    ("TASK_STATE_INPUT_REQUIRED", "input-required"),
    ("TASK_STATE_REJECTED", "rejected"),
    ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
];

fn state_out(state: Option<Value>) -> Value {
    let name = state.as_ref().and_then(Value::as_str).unwrap_or_default();
    let proto = STATES
        .iter()
        .find(|(_, jsonrpc)| *jsonrpc == name)
        .map_or(STATES[0].0, |(proto, _)| proto);
    Value::from(proto)
}

fn state_in(state: &Value) -> Value {
    Value::from(STATES[enum_index(state, &STATES.map(|(proto, _)| proto))].1)
}

// ===== parts, messages, tasks =====

fn part_out(mut part: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    match part.remove("kind").as_ref().and_then(Value::as_str) {
        Some("text") => put_always(&mut out, "text", part.remove("text"), Value::from("")),
        Some("file") => {
            let mut file = fields(part.remove("file"));
            let mut proto = Map::new();
            put(&mut proto, "fileWithUri", file.remove("uri"));
            put(&mut proto, "fileWithBytes", file.remove("bytes"));
            put_set(&mut proto, "mimeType", file.remove("mimeType"));
            put_set(&mut proto, "name", file.remove("name"));
            out.insert("file".to_owned(), Value::Object(proto));
        }
        Some("data") => {
            let mut data = Map::new();
            put_always(&mut data, "data", part.remove("data"), Value::Null);
            out.insert("data".to_owned(), Value::Object(data));
        }
        _ => {}
    }
    put(&mut out, "metadata", part.remove("metadata"));
    out
}

fn part_in(value: Value) -> Result<Value, A2aError> {
    let mut part = object(value, "part")?;
    let mut out = Map::new();
    let content = (
        take(&mut part, "text"),
        take(&mut part, "file"),
        take(&mut part, "data"),
    );
    match content {
        (Some(text), None, None) => {
            out.insert("kind".to_owned(), Value::from("text"));
            out.insert("text".to_owned(), text);
        }
        (None, Some(file), None) => {
            let mut file = object(file, "file part")?;
            let mut jsonrpc = Map::new();
            put(&mut jsonrpc, "uri", take(&mut file, "fileWithUri"));
            put(&mut jsonrpc, "bytes", take(&mut file, "fileWithBytes"));
            put_set(&mut jsonrpc, "mimeType", take(&mut file, "mimeType"));
            put_set(&mut jsonrpc, "name", take(&mut file, "name"));
            out.insert("kind".to_owned(), Value::from("file"));
            out.insert("file".to_owned(), Value::Object(jsonrpc));
        }
        (None, None, Some(data)) => {
            let data = take(&mut object(data, "data part")?, "data");
            out.insert("kind".to_owned(), Value::from("data"));
            out.insert("data".to_owned(), data.unwrap_or(Value::Null));
        }
        _ => return Err(invalid("a part holds exactly one of text, file and data")),
    }
    put(&mut out, "metadata", take(&mut part, "metadata"));
    Ok(Value::Object(out))
}

fn message_out(mut m: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    put_always(
        &mut out,
        "messageId",
        m.remove("messageId"),
        Value::from(""),
    );
    put_set(&mut out, "contextId", m.remove("contextId"));
    put_set(&mut out, "taskId", m.remove("taskId"));
    out.insert("role".to_owned(), role_out(m.remove("role")));
    out.insert("content".to_owned(), list_out(m.remove("parts"), part_out));
    put(&mut out, "metadata", m.remove("metadata"));
    put_set(&mut out, "extensions", m.remove("extensions"));
    out
}

fn message_in(value: Value) -> Result<Value, A2aError> {
    let mut m = object(value, "message")?;
    let mut out = Map::new();
    out.insert("kind".to_owned(), Value::from("message"));
    put(&mut out, "messageId", take(&mut m, "messageId"));
    put(&mut out, "role", take(&mut m, "role").map(|r| role_in(&r)));
    put(
        &mut out,
        "parts",
        list(take(&mut m, "content"), "message content", part_in)?,
    );
    put_set(&mut out, "contextId", take(&mut m, "contextId"));
    put_set(&mut out, "taskId", take(&mut m, "taskId"));
    put(&mut out, "extensions", take(&mut m, "extensions"));
    put(&mut out, "metadata", take(&mut m, "metadata"));
    Ok(Value::Object(out))
}

fn status_out(mut s: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("state".to_owned(), state_out(s.remove("state")));
    if let Some(message) = s.remove("message").filter(|m| !m.is_null()) {
        let message = message_out(fields(Some(message)));
        out.insert("message".to_owned(), Value::Object(message));
    }
    put(&mut out, "timestamp", s.remove("timestamp"));
    out
}

fn status_in(value: Value) -> Result<Value, A2aError> {
    let mut s = object(value, "task status")?;
    let mut out = Map::new();
    if let Some(state) = s.remove("state") {
        out.insert("state".to_owned(), state_in(&state));
    }
    if let Some(message) = take_any(&mut s, &["message", "update"]) {
        out.insert("message".to_owned(), message_in(message)?);
    }
    put(&mut out, "timestamp", take(&mut s, "timestamp"));
    Ok(Value::Object(out))
}

fn artifact_out(mut a: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    put_always(
        &mut out,
        "artifactId",
        a.remove("artifactId"),
        Value::from(""),
    );
    put_set(&mut out, "name", a.remove("name"));
    put_set(&mut out, "description", a.remove("description"));
    out.insert("parts".to_owned(), list_out(a.remove("parts"), part_out));
    put(&mut out, "metadata", a.remove("metadata"));
    put_set(&mut out, "extensions", a.remove("extensions"));
    out
}

fn artifact_in(value: Value) -> Result<Value, A2aError> {
    let mut a = object(value, "artifact")?;
    let mut out = Map::new();
    put(&mut out, "artifactId", take(&mut a, "artifactId"));
    put_set(&mut out, "name", take(&mut a, "name"));
    put_set(&mut out, "description", take(&mut a, "description"));
    put(
        &mut out,
        "parts",
        list(take(&mut a, "parts"), "artifact parts", part_in)?,
    );
    put(&mut out, "metadata", take(&mut a, "metadata"));
    put(&mut out, "extensions", take(&mut a, "extensions"));
    Ok(Value::Object(out))
}

fn task_out(mut t: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    put_always(&mut out, "id", t.remove("id"), Value::from(""));
    put_always(
        &mut out,
        "contextId",
        t.remove("contextId"),
        Value::from(""),
    );
    let status = status_out(fields(t.remove("status")));
    out.insert("status".to_owned(), Value::Object(status));
    put_set(
        &mut out,
        "artifacts",
        Some(list_out(t.remove("artifacts"), artifact_out)),
    );
    put_set(
        &mut out,
        "history",
        Some(list_out(t.remove("history"), message_out)),
    );
    put(&mut out, "metadata", t.remove("metadata"));
    out
}

fn task_in(value: Value) -> Result<Value, A2aError> {
    let mut t = object(value, "task")?;
    let mut out = Map::new();
    out.insert("kind".to_owned(), Value::from("task"));
    put(&mut out, "id", take(&mut t, "id"));
    put(&mut out, "contextId", take(&mut t, "contextId"));
    if let Some(status) = take(&mut t, "status") {
        out.insert("status".to_owned(), status_in(status)?);
    }
    put(
        &mut out,
        "artifacts",
        list(take(&mut t, "artifacts"), "task artifacts", artifact_in)?,
    );
    put(
        &mut out,
        "history",
        list(take(&mut t, "history"), "task history", message_in)?,
    );
    put(&mut out, "metadata", take(&mut t, "metadata"));
    Ok(Value::Object(out))
}

// ===== events =====

fn event_out(mut e: Map<String, Value>) -> Map<String, Value> {
    let kind = e.remove("kind");
    let (name, body) = match kind.as_ref().and_then(Value::as_str) {
        Some("task") => ("task", task_out(e)),
        Some("message") => ("message", message_out(e)),
        Some("status-update") => {
            let mut out = Map::new();
            put_always(&mut out, "taskId", e.remove("taskId"), Value::from(""));
            put_always(
                &mut out,
                "contextId",
                e.remove("contextId"),
                Value::from(""),
            );
            let status = status_out(fields(e.remove("status")));
            out.insert("status".to_owned(), Value::Object(status));
            put_set(&mut out, "final", e.remove("final"));
            put(&mut out, "metadata", e.remove("metadata"));
            ("statusUpdate", out)
        }
        Some("artifact-update") => {
            let mut out = Map::new();
            put_always(&mut out, "taskId", e.remove("taskId"), Value::from(""));
            put_always(
                &mut out,
                "contextId",
                e.remove("contextId"),
                Value::from(""),
            );
            let artifact = artifact_out(fields(e.remove("artifact")));
            out.insert("artifact".to_owned(), Value::Object(artifact));
            put_set(&mut out, "append", e.remove("append"));
            put_set(&mut out, "lastChunk", e.remove("lastChunk"));
            put(&mut out, "metadata", e.remove("metadata"));
            ("artifactUpdate", out)
        }
        // The JSON-RPC form of an event always has its kind.
        _ => return Map::new(),
    };
    Map::from_iter([(name.to_owned(), Value::Object(body))])
}

fn event_in(value: Value) -> Result<Value, A2aError> {
    let mut r = object(value, "stream response")?;
    let members = (
        take(&mut r, "task"),
        take_any(&mut r, &["message", "msg"]),
        take(&mut r, "statusUpdate"),
        take(&mut r, "artifactUpdate"),
    );
    Ok(match members {
        (Some(t), None, None, None) => task_in(t)?,
        (None, Some(m), None, None) => message_in(m)?,
        (None, None, Some(u), None) => {
            let mut u = object(u, "status update")?;
            let mut out = Map::new();
            out.insert("kind".to_owned(), Value::from("status-update"));
            put(&mut out, "taskId", take(&mut u, "taskId"));
            put(&mut out, "contextId", take(&mut u, "contextId"));
            if let Some(status) = take(&mut u, "status") {
                out.insert("status".to_owned(), status_in(status)?);
            }
            put(&mut out, "final", take(&mut u, "final"));
            put(&mut out, "metadata", take(&mut u, "metadata"));
            Value::Object(out)
        }
        (None, None, None, Some(u)) => {
            let mut u = object(u, "artifact update")?;
            let mut out = Map::new();
            out.insert("kind".to_owned(), Value::from("artifact-update"));
            put(&mut out, "taskId", take(&mut u, "taskId"));
            put(&mut out, "contextId", take(&mut u, "contextId"));
            if let Some(artifact) = take(&mut u, "artifact") {
                out.insert("artifact".to_owned(), artifact_in(artifact)?);
            }
            // `false` is the proto default, which JSON-RPC left out.
            put_set(&mut out, "append", take(&mut u, "append"));
            put_set(&mut out, "lastChunk", take(&mut u, "lastChunk"));
            put(&mut out, "metadata", take(&mut u, "metadata"));
            Value::Object(out)
        }
        _ => return Err(invalid("a stream response holds exactly one event")),
    })
}

// ===== push configs =====

fn push_out(mut c: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    put_set(&mut out, "id", c.remove("id"));
    put_always(&mut out, "url", c.remove("url"), Value::from(""));
    put_set(&mut out, "token", c.remove("token"));
    if let Some(auth) = c.remove("authentication").filter(|a| !a.is_null()) {
        let mut auth = fields(Some(auth));
        let mut proto = Map::new();
        put_always(
            &mut proto,
            "schemes",
            auth.remove("schemes"),
            Value::Array(Vec::new()),
        );
        put_set(&mut proto, "credentials", auth.remove("credentials"));
        out.insert("authentication".to_owned(), Value::Object(proto));
    }
    out
}

fn push_in(value: Value) -> Result<Value, A2aError> {
    let mut c = object(value, "push notification config")?;
    let mut out = Map::new();
    put_set(&mut out, "id", take(&mut c, "id"));
    put(&mut out, "url", take(&mut c, "url"));
    put_set(&mut out, "token", take(&mut c, "token"));
    if let Some(auth) = take(&mut c, "authentication") {
        let mut auth = object(auth, "authentication info")?;
        let mut jsonrpc = Map::new();
        put(&mut jsonrpc, "schemes", take(&mut auth, "schemes"));
        put_set(&mut jsonrpc, "credentials", take(&mut auth, "credentials"));
        out.insert("authentication".to_owned(), Value::Object(jsonrpc));
    }
    Ok(Value::Object(out))
}

fn task_push_out(mut c: Map<String, Value>) -> Map<String, Value> {
    let task_id = c.remove("taskId");
    let config = fields(c.remove("pushNotificationConfig"));
    let config_id = config.get("id").and_then(Value::as_str).unwrap_or_default();
    let task_id = task_id.as_ref().and_then(Value::as_str).unwrap_or_default();
    let name = format!("tasks/{task_id}/pushNotificationConfigs/{config_id}");
    Map::from_iter([
        ("name".to_owned(), Value::from(name)),
        (
            "pushNotificationConfig".to_owned(),
            Value::Object(push_out(config)),
        ),
    ])
}

fn task_push_in(value: Value) -> Result<Value, A2aError> {
    let mut c = object(value, "push notification config")?;
    let name = match take(&mut c, "name") {
        None => String::new(),
        Some(Value::String(name)) => name,
        Some(other) => return Err(invalid(format!("bad push config name {other}"))),
    };
    let task_id = task_id_of(&name)
        .ok_or_else(|| invalid(format!("bad push config name {name:?}")))?
        .to_owned();
    let config = take(&mut c, "pushNotificationConfig").unwrap_or(Value::Null);
    Ok(Value::Object(Map::from_iter([
        ("taskId".to_owned(), Value::from(task_id)),
        ("pushNotificationConfig".to_owned(), push_in(config)?),
    ])))
}

// ===== requests =====

fn send_params_out(mut p: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let message = message_out(fields(p.remove("message")));
    out.insert("message".to_owned(), Value::Object(message));
    if let Some(config) = p.remove("configuration").filter(|c| !c.is_null()) {
        let mut c = fields(Some(config));
        let mut proto = Map::new();
        put_set(
            &mut proto,
            "acceptedOutputModes",
            c.remove("acceptedOutputModes"),
        );
        if let Some(push) = c.remove("pushNotificationConfig").filter(|p| !p.is_null()) {
            let push = push_out(fields(Some(push)));
            proto.insert("pushNotification".to_owned(), Value::Object(push));
        }
        put_set(&mut proto, "historyLength", c.remove("historyLength"));
        // JSON-RPC's default was to wait; the proto's field is false when
        // unset, so the wait is always spelled out.
        let blocking = c
            .remove("blocking")
            .and_then(|b| b.as_bool())
            .unwrap_or(true);
        put_set(&mut proto, "blocking", Some(Value::Bool(blocking)));
        out.insert("configuration".to_owned(), Value::Object(proto));
    }
    put(&mut out, "metadata", p.remove("metadata"));
    out
}

fn send_params_in(value: Value) -> Result<Value, A2aError> {
    let mut r = object(value, "send message request")?;
    let mut out = Map::new();
    let message = take_any(&mut r, &["message", "request"]).unwrap_or(Value::Null);
    out.insert("message".to_owned(), message_in(message)?);
    if let Some(config) = take(&mut r, "configuration") {
        let mut c = object(config, "send message configuration")?;
        let mut jsonrpc = Map::new();
        put(
            &mut jsonrpc,
            "acceptedOutputModes",
            take(&mut c, "acceptedOutputModes"),
        );
        if let Some(push) = take(&mut c, "pushNotification") {
            jsonrpc.insert("pushNotificationConfig".to_owned(), push_in(push)?);
        }
        // 0 (the proto default) and below: no limit asked for.
        let history =
            take(&mut c, "historyLength").filter(|n| !n.as_f64().is_some_and(|n| n <= 0.0));
        put(&mut jsonrpc, "historyLength", history);
        // The proto's default is not to wait, and that is what unset says.
        put_always(
            &mut jsonrpc,
            "blocking",
            take(&mut c, "blocking"),
            Value::Bool(false),
        );
        out.insert("configuration".to_owned(), Value::Object(jsonrpc));
    }
    put(&mut out, "metadata", take(&mut r, "metadata"));
    Ok(Value::Object(out))
}

/// The body of 0.3's `POST /v1/tasks/{id}/pushNotificationConfigs`
/// (`a2a.v1.CreateTaskPushNotificationConfigRequest`) creating `config`.
pub fn create_push_config_request(config: &super::TaskPushNotificationConfig) -> Value {
    let mut out = Map::new();
    out.insert("parent".to_owned(), Value::from(task_name(&config.task_id)));
    let config_id = config.push_notification_config.id.clone();
    put_set(&mut out, "configId", config_id.map(Value::from));
    out.insert("config".to_owned(), config.to_protojson());
    Value::Object(out)
}

/// The config a `CreateTaskPushNotificationConfigRequest` body creates
/// (its id: the config's own, else the request's `configId`). The task is
/// the one the request's path names, so the body's names are not read.
pub fn read_create_push_config_request(
    body: Value,
) -> Result<super::PushNotificationConfig, A2aError> {
    let mut request = object(body, "create push notification config request")?;
    let config_id = take(&mut request, "configId");
    let mut config = object(
        take(&mut request, "config").unwrap_or(Value::Null),
        "push notification config",
    )?;
    let push = take(&mut config, "pushNotificationConfig").unwrap_or(Value::Null);
    let mut push: super::PushNotificationConfig = read(push_in(push)?, "push notification config")?;
    if push.id.is_none() {
        push.id = read::<Option<String>>(config_id.unwrap_or(Value::Null), "config id")?
            .filter(|id| !id.is_empty());
    }
    Ok(push)
}

/// The body of 0.3's push config list answer
/// (`a2a.v1.ListTaskPushNotificationConfigResponse`).
pub fn list_push_configs_response(
    configs: &[super::TaskPushNotificationConfig],
    next_page_token: &str,
) -> Value {
    let mut out = Map::new();
    let configs = configs.iter().map(ProtoJson::to_protojson).collect();
    out.insert("configs".to_owned(), Value::Array(configs));
    put_set(
        &mut out,
        "nextPageToken",
        Some(Value::from(next_page_token)),
    );
    Value::Object(out)
}

/// The configs and next page token (empty: none) of a push config list
/// answer.
pub fn read_list_push_configs_response(
    body: Value,
) -> Result<(Vec<super::TaskPushNotificationConfig>, String), A2aError> {
    let mut list = object(body, "push notification config list")?;
    let configs = match take(&mut list, "configs") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(super::TaskPushNotificationConfig::from_protojson)
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(invalid(format!("0.3 configs must be a list, not {other}"))),
    };
    let token = read::<Option<String>>(
        take(&mut list, "nextPageToken").unwrap_or(Value::Null),
        "next page token",
    )?;
    Ok((configs, token.unwrap_or_default()))
}

// ===== resource names =====

/// The resource name of task `task_id` (`tasks/{id}`).
pub fn task_name(task_id: &str) -> String {
    format!("tasks/{task_id}")
}

/// The task id in a resource name starting `tasks/{id}` (`None` for
/// another name or an empty id).
pub fn task_id_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("tasks/")?;
    let id = rest.split('/').next().unwrap_or_default();
    (!id.is_empty()).then_some(id)
}

/// The task id and config id in `tasks/{id}/pushNotificationConfigs/{configId}`.
pub fn push_config_name_parts(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("tasks/")?;
    let (task, config) = rest.split_once("/pushNotificationConfigs/")?;
    (!task.is_empty() && !task.contains('/') && !config.is_empty() && !config.contains('/'))
        .then_some((task, config))
}

// ===== errors =====

/// The error body 0.3's HTTP+JSON binding answers with (`{"message": …}`),
/// beside the HTTP status of [`http_status`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
}

/// The HTTP status 0.3's HTTP+JSON binding gives an error of `kind`.
pub fn http_status(kind: crate::ErrorKind) -> u16 {
    use crate::ErrorKind as K;
    match kind {
        K::ParseError | K::InvalidRequest => 400,
        K::MethodNotFound | K::TaskNotFound | K::ExtendedAgentCardNotConfigured => 404,
        K::InvalidParams => 422,
        K::TaskNotCancelable => 409,
        K::PushNotificationNotSupported | K::UnsupportedOperation => 501,
        K::ContentTypeNotSupported => 415,
        K::InvalidAgentResponse => 502,
        K::Unauthenticated => 401,
        K::Unauthorized => 403,
        K::Busy => 429,
        K::Unavailable => 503,
        K::ExtensionSupportRequired | K::VersionNotSupported => 400,
        K::Internal => 500,
    }
}

/// The error a 0.3 HTTP+JSON answer of `status` with `body` stands for
/// (by its status; the body's message when it has one).
pub fn error_from_http(status: u16, body: &[u8]) -> A2aError {
    use crate::ErrorKind as K;
    let kind = match status {
        409 => K::TaskNotCancelable,
        501 => K::UnsupportedOperation,
        502 => K::InvalidAgentResponse,
        422 => K::InvalidParams,
        400 => K::InvalidRequest,
        other => K::from_http_status(other).unwrap_or(K::Internal),
    };
    let message = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.message)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| kind.default_message().to_owned());
    A2aError::new(kind, message)
}

#[cfg(test)]
mod tests;
