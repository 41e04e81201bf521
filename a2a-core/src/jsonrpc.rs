//! JSON-RPC 2.0 envelopes and the A2A method names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonRpcError;

/// The eleven A2A operations; the JSON-RPC method name equals the gRPC rpc name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `SendMessage`.
    SendMessage,
    /// `SendStreamingMessage` (streaming).
    SendStreamingMessage,
    /// `GetTask`.
    GetTask,
    /// `ListTasks`.
    ListTasks,
    /// `CancelTask`.
    CancelTask,
    /// `SubscribeToTask` (streaming).
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig,
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig,
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs,
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard,
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig,
}

impl Method {
    /// All methods, in the service's rpc order.
    pub const ALL: [Method; 11] = [
        Method::SendMessage,
        Method::SendStreamingMessage,
        Method::GetTask,
        Method::ListTasks,
        Method::CancelTask,
        Method::SubscribeToTask,
        Method::CreateTaskPushNotificationConfig,
        Method::GetTaskPushNotificationConfig,
        Method::ListTaskPushNotificationConfigs,
        Method::GetExtendedAgentCard,
        Method::DeleteTaskPushNotificationConfig,
    ];

    /// The method name.
    pub const fn name(self) -> &'static str {
        match self {
            Method::SendMessage => "SendMessage",
            Method::SendStreamingMessage => "SendStreamingMessage",
            Method::GetTask => "GetTask",
            Method::ListTasks => "ListTasks",
            Method::CancelTask => "CancelTask",
            Method::SubscribeToTask => "SubscribeToTask",
            Method::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Method::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Method::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Method::GetExtendedAgentCard => "GetExtendedAgentCard",
            Method::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
        }
    }

    /// Looks a method up by name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the method answers with a stream.
    pub const fn is_streaming(self) -> bool {
        matches!(self, Method::SendStreamingMessage | Method::SubscribeToTask)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A JSON-RPC 2.0 request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P = Value> {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// Correlation id: a string, a number or null.
    #[serde(default)]
    pub id: Value,
    /// The method name.
    pub method: String,
    /// The parameters (the ProtoJSON of the request message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcRequest<P> {
    /// A request for `method` with `params`.
    pub fn new(id: impl Into<Value>, method: Method, params: P) -> Self {
        JsonRpcRequest {
            jsonrpc: "2.0".into(),
            id: id.into(),
            method: method.name().into(),
            params: Some(params),
        }
    }
}

/// A JSON-RPC 2.0 response: a result or an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse<R = Value> {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// The request's id.
    #[serde(default)]
    pub id: Value,
    /// The result, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    /// The error, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

impl<R> JsonRpcResponse<R> {
    /// A success response.
    pub fn success(id: Value, result: R) -> Self {
        JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// An error response.
    pub fn failure(id: Value, error: JsonRpcError) -> Self {
        JsonRpcResponse {
            jsonrpc: "2.0".into(),
            id,
            result: None,
            error: Some(error),
        }
    }
}
