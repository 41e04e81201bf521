//! The A2A 0.3 wire forms, for talking to peers of the previous protocol
//! generation: its JSON-RPC method names, its shapes of messages, parts,
//! tasks, events, push configs and agent cards, its error codes, and the
//! conversions between them and the 1.0 types of this crate. No I/O.
//!
//! A server reads a 0.3 request into these types, converts it to the 1.0
//! request (`MessageSendParams::into_v1` and friends), serves it as any
//! other call and converts the answer back (`from_v1`). A client does the
//! reverse. Whatever comes from the network may be malformed: conversions
//! that can fail return [`crate::A2aError`] (invalid params), never panic.
//!
//! Only recognizing 0.3 ([`is_v03_version`], the version constants and the
//! [`Method`] names) is always here: a server refuses a 0.3 request with `VersionNotSupported`
//! and a client passes over an interface speaking 0.3 when it cannot speak
//! it. Everything else needs the crate feature `v03`.
//!
//! ```
//! # #[cfg(feature = "v03")] {
//! use a2a_core::v03;
//! let params: v03::MessageSendParams = serde_json::from_str(
//!     r#"{"message":{"kind":"message","messageId":"m1","role":"user",
//!         "parts":[{"kind":"text","text":"hi"}]}}"#,
//! ).unwrap();
//! let request = params.into_v1().unwrap();
//! assert_eq!(request.message.text(), "hi");
//! # }
//! ```

#[cfg(feature = "v03")]
mod card;
#[cfg(feature = "v03")]
pub mod proto;
#[cfg(feature = "v03")]
mod types;

#[cfg(feature = "v03")]
pub use card::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, SERVED_BINDINGS, advertise,
    parse_any_card,
};
#[cfg(feature = "v03")]
pub use types::{
    Artifact, DeleteTaskPushNotificationConfigParams, Event, FileContent,
    GetTaskPushNotificationConfigParams, ListTaskPushNotificationConfigParams, Message,
    MessageSendConfiguration, MessageSendParams, Part, PushNotificationAuthenticationInfo,
    PushNotificationConfig, Role, SendMessageResult, Task, TaskArtifactUpdateEvent, TaskIdParams,
    TaskPushNotificationConfig, TaskQueryParams, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

#[cfg(feature = "v03")]
use crate::{A2aError, ErrorKind, JsonRpcError};

/// The protocol version a 0.3 card states (`protocolVersion`).
pub const PROTOCOL_VERSION: &str = "0.3.0";

/// The `Major.Minor` form of [`PROTOCOL_VERSION`], as a 1.0 card lists it in
/// an interface's `protocolVersion`.
pub const PROTOCOL_VERSION_MAJOR_MINOR: &str = "0.3";

#[cfg(feature = "v03")]
/// The well-known path of the 0.3-era card name, still fetched by older
/// clients (0.3.0 itself moved to `agent-card.json`, which serves the 1.0 form).
pub const LEGACY_AGENT_CARD_PATH: &str = "/.well-known/agent.json";

/// Whether an `A2A-Version` value (absent: `None`) asks for 0.3: a 0.3
/// client sends none, or an empty one, or `0.3` (patch tolerated).
pub fn is_v03_version(version: Option<&str>) -> bool {
    match version.map(str::trim) {
        None | Some("") => true,
        Some(v) => {
            let mut parts = v.split('.');
            matches!((parts.next(), parts.next()), (Some("0"), Some("3")))
        }
    }
}

/// The 0.3 JSON-RPC methods, each the counterpart of a 1.0 operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `message/send` (`SendMessage`).
    MessageSend,
    /// `message/stream` (`SendStreamingMessage`).
    MessageStream,
    /// `tasks/get` (`GetTask`).
    TasksGet,
    /// `tasks/cancel` (`CancelTask`).
    TasksCancel,
    /// `tasks/resubscribe` (`SubscribeToTask`).
    TasksResubscribe,
    /// `tasks/pushNotificationConfig/set` (`CreateTaskPushNotificationConfig`).
    PushConfigSet,
    /// `tasks/pushNotificationConfig/get` (`GetTaskPushNotificationConfig`).
    PushConfigGet,
    /// `tasks/pushNotificationConfig/list` (`ListTaskPushNotificationConfigs`).
    PushConfigList,
    /// `tasks/pushNotificationConfig/delete` (`DeleteTaskPushNotificationConfig`).
    PushConfigDelete,
    /// `agent/getAuthenticatedExtendedCard` (`GetExtendedAgentCard`).
    GetAuthenticatedExtendedCard,
}

impl Method {
    /// All 0.3 methods.
    pub const ALL: [Method; 10] = [
        Method::MessageSend,
        Method::MessageStream,
        Method::TasksGet,
        Method::TasksCancel,
        Method::TasksResubscribe,
        Method::PushConfigSet,
        Method::PushConfigGet,
        Method::PushConfigList,
        Method::PushConfigDelete,
        Method::GetAuthenticatedExtendedCard,
    ];

    /// The 0.3 method name.
    pub const fn name(self) -> &'static str {
        match self {
            Method::MessageSend => "message/send",
            Method::MessageStream => "message/stream",
            Method::TasksGet => "tasks/get",
            Method::TasksCancel => "tasks/cancel",
            Method::TasksResubscribe => "tasks/resubscribe",
            Method::PushConfigSet => "tasks/pushNotificationConfig/set",
            Method::PushConfigGet => "tasks/pushNotificationConfig/get",
            Method::PushConfigList => "tasks/pushNotificationConfig/list",
            Method::PushConfigDelete => "tasks/pushNotificationConfig/delete",
            Method::GetAuthenticatedExtendedCard => "agent/getAuthenticatedExtendedCard",
        }
    }

    /// Looks a 0.3 method up by name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The 1.0 operation this method is served as.
    pub const fn v1(self) -> crate::Method {
        use crate::Method as M;
        match self {
            Method::MessageSend => M::SendMessage,
            Method::MessageStream => M::SendStreamingMessage,
            Method::TasksGet => M::GetTask,
            Method::TasksCancel => M::CancelTask,
            Method::TasksResubscribe => M::SubscribeToTask,
            Method::PushConfigSet => M::CreateTaskPushNotificationConfig,
            Method::PushConfigGet => M::GetTaskPushNotificationConfig,
            Method::PushConfigList => M::ListTaskPushNotificationConfigs,
            Method::PushConfigDelete => M::DeleteTaskPushNotificationConfig,
            Method::GetAuthenticatedExtendedCard => M::GetExtendedAgentCard,
        }
    }

    /// The 0.3 method serving a 1.0 operation (`None` for `ListTasks`,
    /// which 0.3 did not have).
    pub const fn from_v1(method: crate::Method) -> Option<Self> {
        use crate::Method as M;
        Some(match method {
            M::SendMessage => Method::MessageSend,
            M::SendStreamingMessage => Method::MessageStream,
            M::GetTask => Method::TasksGet,
            M::CancelTask => Method::TasksCancel,
            M::SubscribeToTask => Method::TasksResubscribe,
            M::CreateTaskPushNotificationConfig => Method::PushConfigSet,
            M::GetTaskPushNotificationConfig => Method::PushConfigGet,
            M::ListTaskPushNotificationConfigs => Method::PushConfigList,
            M::DeleteTaskPushNotificationConfig => Method::PushConfigDelete,
            M::GetExtendedAgentCard => Method::GetAuthenticatedExtendedCard,
            M::ListTasks => return None,
        })
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "v03")]
/// The JSON-RPC error object a 0.3 peer understands for `err`.
///
/// 0.3 used the same codes for the errors it had (-32001 to -32007 and the
/// JSON-RPC standard ones) but no `@type`d details, so `data` is left out.
/// The two errors 1.0 added (-32008, -32009) had no 0.3 code: they go out
/// as invalid request (-32600) with their message.
pub fn error_to_v03(err: &A2aError) -> JsonRpcError {
    let code = match err.kind() {
        ErrorKind::ExtensionSupportRequired | ErrorKind::VersionNotSupported => {
            ErrorKind::InvalidRequest.jsonrpc_code()
        }
        kind => kind.jsonrpc_code(),
    };
    JsonRpcError {
        code: i64::from(code),
        message: err.message().to_owned(),
        data: None,
    }
}

#[cfg(feature = "v03")]
/// The error a 0.3 peer's JSON-RPC error object stands for (by its code;
/// an unknown code is an internal error keeping the peer's message).
pub fn error_from_v03(error: &JsonRpcError) -> A2aError {
    let kind = ErrorKind::from_jsonrpc_code(error.code).unwrap_or(ErrorKind::Internal);
    let message = if error.message.is_empty() {
        kind.default_message().to_owned()
    } else {
        error.message.clone()
    };
    A2aError::new(kind, message)
}

#[cfg(all(test, feature = "v03"))]
mod tests;
