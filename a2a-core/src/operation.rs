//! The eleven operations as values: a call ([`Request`], one variant per
//! operation) and its answer ([`Response`]), with what each operation's
//! request and response messages are on the JSON bindings ([`RequestOf`],
//! [`ResponseOf`]).
//!
//! This is the one list of operations beside [`Method`]: the server's
//! service, every client transport and the gateway pass these values
//! through, and a binding only says how it carries each variant.
//!
//! # Adding an operation
//!
//! A new operation is a [`Method`] (with its REST route in [`crate::rest`]),
//! a [`Request`] variant (and a [`Response`] variant if its answer is of a
//! new kind) with their rows in [`RequestOf`] and [`ResponseOf`], the
//! handler's method in `a2a-server`, and one line in each binding that maps
//! operations to its own messages (the gRPC client and server, the 0.3
//! transports). The JSON-RPC and HTTP+JSON bindings, the client's
//! `Transport` and the gateway's in-process peer pass calls through
//! without naming them.
//!
//! ```
//! use a2a_core::operation::{Request, Response, UnaryResponse};
//! use a2a_core::{GetTaskRequest, Method, Task};
//!
//! let call = Request::decode_json(Method::GetTask, br#"{"id":"t1"}"#).unwrap();
//! assert_eq!(call.method(), Method::GetTask);
//!
//! let body = br#"{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}"#;
//! let answer = UnaryResponse::decode_json(Method::GetTask, body).unwrap();
//! let task: Task = answer.try_into().unwrap();
//! assert_eq!(task.id, "t1");
//! ```

use std::marker::PhantomData;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Method, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};

/// A call: one variant per operation, holding its request message.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// `SendMessage`. Boxed, as the next: the request is several times the
    /// size of any other, and a call moves through many futures on its way.
    SendMessage(Box<SendMessageRequest>),
    /// `SendStreamingMessage`.
    SendStreamingMessage(Box<SendMessageRequest>),
    /// `GetTask`.
    GetTask(GetTaskRequest),
    /// `ListTasks`.
    ListTasks(ListTasksRequest),
    /// `CancelTask`.
    CancelTask(CancelTaskRequest),
    /// `SubscribeToTask`.
    SubscribeToTask(SubscribeToTaskRequest),
    /// `CreateTaskPushNotificationConfig`.
    CreatePushConfig(TaskPushNotificationConfig),
    /// `GetTaskPushNotificationConfig`.
    GetPushConfig(GetTaskPushNotificationConfigRequest),
    /// `ListTaskPushNotificationConfigs`.
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    /// `DeleteTaskPushNotificationConfig`.
    DeletePushConfig(DeleteTaskPushNotificationConfigRequest),
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

impl Request {
    /// The operation.
    pub fn method(&self) -> Method {
        match self {
            Request::SendMessage(_) => Method::SendMessage,
            Request::SendStreamingMessage(_) => Method::SendStreamingMessage,
            Request::GetTask(_) => Method::GetTask,
            Request::ListTasks(_) => Method::ListTasks,
            Request::CancelTask(_) => Method::CancelTask,
            Request::SubscribeToTask(_) => Method::SubscribeToTask,
            Request::CreatePushConfig(_) => Method::CreateTaskPushNotificationConfig,
            Request::GetPushConfig(_) => Method::GetTaskPushNotificationConfig,
            Request::ListPushConfigs(_) => Method::ListTaskPushNotificationConfigs,
            Request::DeletePushConfig(_) => Method::DeleteTaskPushNotificationConfig,
            Request::GetExtendedAgentCard(_) => Method::GetExtendedAgentCard,
        }
    }

    /// The `tenant` field of the request body.
    pub fn tenant(&self) -> &str {
        match self {
            Request::SendMessage(r) | Request::SendStreamingMessage(r) => &r.tenant,
            Request::GetTask(r) => &r.tenant,
            Request::ListTasks(r) => &r.tenant,
            Request::CancelTask(r) => &r.tenant,
            Request::SubscribeToTask(r) => &r.tenant,
            Request::CreatePushConfig(r) => &r.tenant,
            Request::GetPushConfig(r) => &r.tenant,
            Request::ListPushConfigs(r) => &r.tenant,
            Request::DeletePushConfig(r) => &r.tenant,
            Request::GetExtendedAgentCard(r) => &r.tenant,
        }
    }

    /// The `tenant` field of the request body, to rewrite.
    pub fn tenant_mut(&mut self) -> &mut String {
        match self {
            Request::SendMessage(r) | Request::SendStreamingMessage(r) => &mut r.tenant,
            Request::GetTask(r) => &mut r.tenant,
            Request::ListTasks(r) => &mut r.tenant,
            Request::CancelTask(r) => &mut r.tenant,
            Request::SubscribeToTask(r) => &mut r.tenant,
            Request::CreatePushConfig(r) => &mut r.tenant,
            Request::GetPushConfig(r) => &mut r.tenant,
            Request::ListPushConfigs(r) => &mut r.tenant,
            Request::DeletePushConfig(r) => &mut r.tenant,
            Request::GetExtendedAgentCard(r) => &mut r.tenant,
        }
    }

    /// The task and context ids the request names, where it names them
    /// (empty where it does not), for logs and traces.
    pub fn ids(&self) -> (&str, &str) {
        match self {
            Request::SendMessage(r) | Request::SendStreamingMessage(r) => {
                (&r.message.task_id, &r.message.context_id)
            }
            Request::GetTask(r) => (&r.id, ""),
            Request::CancelTask(r) => (&r.id, ""),
            Request::SubscribeToTask(r) => (&r.id, ""),
            Request::CreatePushConfig(r) => (&r.task_id, ""),
            Request::GetPushConfig(r) => (&r.task_id, ""),
            Request::ListPushConfigs(r) => (&r.task_id, ""),
            Request::DeletePushConfig(r) => (&r.task_id, ""),
            Request::ListTasks(_) | Request::GetExtendedAgentCard(_) => ("", ""),
        }
    }

    /// Reads `params` (the ProtoJSON of a request message, an object) as
    /// the request of `method`.
    pub fn decode_json(
        method: Method,
        params: &[u8],
    ) -> Result<Request, crate::protojson::DecodeError> {
        crate::protojson::decode_seed(params, RequestOf(method))
    }
}

/// The request message as ProtoJSON: the same body on every JSON binding
/// (the operation travels beside it, as a JSON-RPC method or a REST route).
impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Request::SendMessage(r) | Request::SendStreamingMessage(r) => r.serialize(serializer),
            Request::GetTask(r) => r.serialize(serializer),
            Request::ListTasks(r) => r.serialize(serializer),
            Request::CancelTask(r) => r.serialize(serializer),
            Request::SubscribeToTask(r) => r.serialize(serializer),
            Request::CreatePushConfig(r) => r.serialize(serializer),
            Request::GetPushConfig(r) => r.serialize(serializer),
            Request::ListPushConfigs(r) => r.serialize(serializer),
            Request::DeletePushConfig(r) => r.serialize(serializer),
            Request::GetExtendedAgentCard(r) => r.serialize(serializer),
        }
    }
}

/// Reads a request object as the request of the method it holds: the one
/// table of the operations' request types, for every JSON binding.
#[derive(Debug, Clone, Copy)]
pub struct RequestOf(pub Method);

impl<'de> DeserializeSeed<'de> for RequestOf {
    type Value = Request;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Request, D::Error> {
        // Params must be an object; a struct would also accept an array.
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestOf {
    type Value = Request;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a params object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Request, A::Error> {
        let d = serde::de::value::MapAccessDeserializer::new(map);
        Ok(match self.0 {
            Method::SendMessage => Request::SendMessage(Box::new(Deserialize::deserialize(d)?)),
            Method::SendStreamingMessage => {
                Request::SendStreamingMessage(Box::new(Deserialize::deserialize(d)?))
            }
            Method::GetTask => Request::GetTask(Deserialize::deserialize(d)?),
            Method::ListTasks => Request::ListTasks(Deserialize::deserialize(d)?),
            Method::CancelTask => Request::CancelTask(Deserialize::deserialize(d)?),
            Method::SubscribeToTask => Request::SubscribeToTask(Deserialize::deserialize(d)?),
            Method::CreateTaskPushNotificationConfig => {
                Request::CreatePushConfig(Deserialize::deserialize(d)?)
            }
            Method::GetTaskPushNotificationConfig => {
                Request::GetPushConfig(Deserialize::deserialize(d)?)
            }
            Method::ListTaskPushNotificationConfigs => {
                Request::ListPushConfigs(Deserialize::deserialize(d)?)
            }
            Method::DeleteTaskPushNotificationConfig => {
                Request::DeletePushConfig(Deserialize::deserialize(d)?)
            }
            Method::GetExtendedAgentCard => {
                Request::GetExtendedAgentCard(Deserialize::deserialize(d)?)
            }
        })
    }
}

/// The answer to a call; `S` is the event stream of a streaming operation,
/// which the server and the client each type their own way.
pub enum Response<S> {
    /// `SendMessage`'s task or message.
    SendMessage(SendMessageResponse),
    /// A streaming operation's events.
    Stream(S),
    /// `GetTask` / `CancelTask`.
    Task(Task),
    /// `ListTasks`.
    ListTasks(ListTasksResponse),
    /// Create / Get push config.
    PushConfig(TaskPushNotificationConfig),
    /// List push configs.
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// Delete push config.
    Empty,
    /// `GetExtendedAgentCard`.
    AgentCard(Box<AgentCard>),
}

/// The answer of a unary operation: a [`Response`] that cannot be a stream.
pub type UnaryResponse = Response<std::convert::Infallible>;

impl<S> Response<S> {
    /// The answer as a unary one, or the stream it is.
    pub fn into_unary<T>(self) -> Result<Response<T>, S> {
        Ok(match self {
            Response::SendMessage(r) => Response::SendMessage(r),
            Response::Stream(s) => return Err(s),
            Response::Task(t) => Response::Task(t),
            Response::ListTasks(r) => Response::ListTasks(r),
            Response::PushConfig(c) => Response::PushConfig(c),
            Response::PushConfigs(c) => Response::PushConfigs(c),
            Response::Empty => Response::Empty,
            Response::AgentCard(c) => Response::AgentCard(c),
        })
    }

    /// The answer's variant, for messages about an answer of the wrong kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Response::SendMessage(_) => "SendMessage",
            Response::Stream(_) => "Stream",
            Response::Task(_) => "Task",
            Response::ListTasks(_) => "ListTasks",
            Response::PushConfig(_) => "PushConfig",
            Response::PushConfigs(_) => "PushConfigs",
            Response::Empty => "Empty",
            Response::AgentCard(_) => "AgentCard",
        }
    }

    /// Whether this is the kind of answer `method` has (a stream for the
    /// streaming operations).
    pub fn is_answer_to(&self, method: Method) -> bool {
        match self {
            Response::SendMessage(_) => method == Method::SendMessage,
            Response::Stream(_) => method.is_streaming(),
            Response::Task(_) => matches!(method, Method::GetTask | Method::CancelTask),
            Response::ListTasks(_) => method == Method::ListTasks,
            Response::PushConfig(_) => matches!(
                method,
                Method::CreateTaskPushNotificationConfig | Method::GetTaskPushNotificationConfig
            ),
            Response::PushConfigs(_) => method == Method::ListTaskPushNotificationConfigs,
            Response::Empty => method == Method::DeleteTaskPushNotificationConfig,
            Response::AgentCard(_) => method == Method::GetExtendedAgentCard,
        }
    }

    /// Reads `body` (a unary answer's ProtoJSON) as the response of
    /// `method`. A streaming method has no single body: that is an error.
    pub fn decode_json(method: Method, body: &[u8]) -> Result<Self, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let response = ResponseOf::new(method).deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(response)
    }
}

/// Reads a unary answer's ProtoJSON as the response of a method: the one
/// table of the operations' response types, for every JSON binding.
pub struct ResponseOf<S> {
    method: Method,
    stream: PhantomData<fn() -> S>,
}

impl<S> ResponseOf<S> {
    /// A reader of `method`'s response.
    pub fn new(method: Method) -> Self {
        ResponseOf {
            method,
            stream: PhantomData,
        }
    }
}

impl<S> Clone for ResponseOf<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for ResponseOf<S> {}

impl<S> std::fmt::Debug for ResponseOf<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ResponseOf").field(&self.method).finish()
    }
}

impl<'de, S> DeserializeSeed<'de> for ResponseOf<S> {
    type Value = Response<S>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Response<S>, D::Error> {
        Ok(match self.method {
            Method::SendMessage => Response::SendMessage(Deserialize::deserialize(d)?),
            Method::GetTask | Method::CancelTask => Response::Task(Deserialize::deserialize(d)?),
            Method::ListTasks => Response::ListTasks(Deserialize::deserialize(d)?),
            Method::CreateTaskPushNotificationConfig | Method::GetTaskPushNotificationConfig => {
                Response::PushConfig(Deserialize::deserialize(d)?)
            }
            Method::ListTaskPushNotificationConfigs => {
                Response::PushConfigs(Deserialize::deserialize(d)?)
            }
            // Whatever the body (`{}`, or `null` from some servers).
            Method::DeleteTaskPushNotificationConfig => {
                IgnoredAny::deserialize(d)?;
                Response::Empty
            }
            Method::GetExtendedAgentCard => Response::AgentCard(Deserialize::deserialize(d)?),
            Method::SendStreamingMessage | Method::SubscribeToTask => {
                return Err(serde::de::Error::custom(format!(
                    "{} answers with a stream, not one body",
                    self.method
                )));
            }
        })
    }
}

/// A unary answer's body: the operation's response message as ProtoJSON (`{}`
/// for an empty one), the same on every JSON binding. A stream has no single
/// body; bindings send its events one by one.
impl<S> Serialize for Response<S> {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        use serde::ser::{Error as _, SerializeMap as _};
        match self {
            Response::SendMessage(r) => r.serialize(serializer),
            Response::Task(t) => t.serialize(serializer),
            Response::ListTasks(r) => r.serialize(serializer),
            Response::PushConfig(c) => c.serialize(serializer),
            Response::PushConfigs(c) => c.serialize(serializer),
            Response::AgentCard(card) => card.serialize(serializer),
            Response::Empty => serializer.serialize_map(Some(0))?.end(),
            Response::Stream(_) => Err(Z::Error::custom(
                "a stream is sent as its events, not as one body",
            )),
        }
    }
}

impl<S> std::fmt::Debug for Response<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Response::SendMessage(r) => f.debug_tuple("SendMessage").field(r).finish(),
            Response::Stream(_) => f.write_str("Stream(..)"),
            Response::Task(t) => f.debug_tuple("Task").field(t).finish(),
            Response::ListTasks(r) => f.debug_tuple("ListTasks").field(r).finish(),
            Response::PushConfig(c) => f.debug_tuple("PushConfig").field(c).finish(),
            Response::PushConfigs(c) => f.debug_tuple("PushConfigs").field(c).finish(),
            Response::Empty => f.write_str("Empty"),
            Response::AgentCard(c) => f.debug_tuple("AgentCard").field(c).finish(),
        }
    }
}

/// Takes each unary answer's message out of a [`Response`]; an answer of
/// another kind is handed back whole (the caller says what it expected).
macro_rules! answer_of {
    ($($variant:ident => $message:ty;)*) => {$(
        impl<S> TryFrom<Response<S>> for $message {
            type Error = Response<S>;

            fn try_from(response: Response<S>) -> Result<$message, Response<S>> {
                match response {
                    Response::$variant(message) => Ok(message),
                    other => Err(other),
                }
            }
        }
    )*};
}

answer_of! {
    SendMessage => SendMessageResponse;
    Task => Task;
    ListTasks => ListTasksResponse;
    PushConfig => TaskPushNotificationConfig;
    PushConfigs => ListTaskPushNotificationConfigsResponse;
}

/// `GetExtendedAgentCard`'s answer.
impl<S> TryFrom<Response<S>> for AgentCard {
    type Error = Response<S>;

    fn try_from(response: Response<S>) -> Result<AgentCard, Response<S>> {
        match response {
            Response::AgentCard(card) => Ok(*card),
            other => Err(other),
        }
    }
}

/// `DeleteTaskPushNotificationConfig`'s empty answer.
impl<S> TryFrom<Response<S>> for () {
    type Error = Response<S>;

    fn try_from(response: Response<S>) -> Result<(), Response<S>> {
        match response {
            Response::Empty => Ok(()),
            other => Err(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unary_method_reads_its_answer_and_streams_have_none() {
        let task = br#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}"#;
        let config = br#"{"taskId":"t","id":"p","url":"https://example.com/hook"}"#;
        let card = serde_json::to_vec(&AgentCard::default()).unwrap();
        for method in Method::ALL {
            let body: &[u8] = match method {
                Method::SendMessage => br#"{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}"#,
                Method::GetTask | Method::CancelTask => task,
                Method::ListTasks => {
                    br#"{"tasks":[],"nextPageToken":"","pageSize":0,"totalSize":0}"#
                }
                Method::CreateTaskPushNotificationConfig
                | Method::GetTaskPushNotificationConfig => config,
                Method::ListTaskPushNotificationConfigs => b"{}",
                Method::DeleteTaskPushNotificationConfig => b"{}",
                Method::GetExtendedAgentCard => &card,
                Method::SendStreamingMessage | Method::SubscribeToTask => b"{}",
            };
            let read = UnaryResponse::decode_json(method, body);
            if method.is_streaming() {
                assert!(read.is_err(), "{method}");
                continue;
            }
            let read = read.unwrap_or_else(|e| panic!("{method}: {e}"));
            assert!(read.is_answer_to(method), "{method}");
            let others = Method::ALL.into_iter().filter(|m| read.is_answer_to(*m));
            assert!(
                others.count() <= 2,
                "{method}: one kind answers at most two methods"
            );
            // The answer writes back to what was read.
            let again: serde_json::Value = serde_json::to_value(&read).unwrap();
            let original: serde_json::Value = serde_json::from_slice(body).unwrap();
            assert_eq!(again, original, "{method}");
        }
        assert!(matches!(
            UnaryResponse::decode_json(Method::DeleteTaskPushNotificationConfig, b"null"),
            Ok(Response::Empty)
        ));
    }

    #[test]
    fn requests_read_back_from_their_json_with_their_method() {
        let call = Request::GetTask(GetTaskRequest {
            id: "t1".into(),
            tenant: "acme".into(),
            ..Default::default()
        });
        let json = serde_json::to_vec(&call).unwrap();
        let read = Request::decode_json(Method::GetTask, &json).unwrap();
        assert_eq!(read, call);
        assert_eq!(read.tenant(), "acme");
        assert!(Request::decode_json(Method::GetTask, b"[]").is_err());
    }

    #[test]
    fn a_wrong_answer_is_handed_back() {
        let answer: UnaryResponse = Response::Empty;
        let wrong: Result<Task, _> = answer.try_into();
        assert_eq!(wrong.unwrap_err().kind(), "Empty");
        let stream: Response<u8> = Response::Stream(7);
        assert_eq!(stream.into_unary::<()>().unwrap_err(), 7);
    }
}
