//! `A2aError`: every protocol error, with its code on each binding.
//!
//! One table (spec v1.0.1 §5.4) drives the JSON-RPC code, HTTP status, gRPC
//! code and `google.rpc.ErrorInfo` reason of every error, in both directions.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `google.rpc.ErrorInfo.domain` of every A2A error.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// `@type` of a `google.rpc.ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// gRPC status codes (the canonical `google.rpc.Code` values).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrpcCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl GrpcCode {
    const ALL: [GrpcCode; 17] = [
        GrpcCode::Ok,
        GrpcCode::Cancelled,
        GrpcCode::Unknown,
        GrpcCode::InvalidArgument,
        GrpcCode::DeadlineExceeded,
        GrpcCode::NotFound,
        GrpcCode::AlreadyExists,
        GrpcCode::PermissionDenied,
        GrpcCode::ResourceExhausted,
        GrpcCode::FailedPrecondition,
        GrpcCode::Aborted,
        GrpcCode::OutOfRange,
        GrpcCode::Unimplemented,
        GrpcCode::Internal,
        GrpcCode::Unavailable,
        GrpcCode::DataLoss,
        GrpcCode::Unauthenticated,
    ];

    /// The canonical name, as used in the `status` field of HTTP error bodies.
    pub const fn name(self) -> &'static str {
        match self {
            GrpcCode::Ok => "OK",
            GrpcCode::Cancelled => "CANCELLED",
            GrpcCode::Unknown => "UNKNOWN",
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::AlreadyExists => "ALREADY_EXISTS",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
            GrpcCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Aborted => "ABORTED",
            GrpcCode::OutOfRange => "OUT_OF_RANGE",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::DataLoss => "DATA_LOSS",
            GrpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The numeric code.
    pub const fn number(self) -> i32 {
        self as i32
    }

    /// Looks a code up by number.
    pub fn from_number(number: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.number() == number)
    }

    /// Looks a code up by canonical name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// What went wrong: one value per A2A error and per JSON-RPC standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The task does not exist or is not visible to the caller (-32001).
    TaskNotFound,
    /// The task is in a terminal state and cannot be canceled (-32002).
    TaskNotCancelable,
    /// The agent does not support push notifications (-32003).
    PushNotificationNotSupported,
    /// The operation is not supported, or not in the task's state (-32004).
    UnsupportedOperation,
    /// A part's media type is not accepted by the agent (-32005).
    ContentTypeNotSupported,
    /// The agent produced an invalid response (-32006).
    InvalidAgentResponse,
    /// The extended card is declared but not configured (-32007).
    ExtendedAgentCardNotConfigured,
    /// A required extension was not requested by the client (-32008).
    ExtensionSupportRequired,
    /// The requested protocol version is not served (-32009).
    VersionNotSupported,
    /// The body is not valid JSON (-32700).
    ParseError,
    /// The JSON is not a valid JSON-RPC request (-32600).
    InvalidRequest,
    /// The method or route does not exist (-32601).
    MethodNotFound,
    /// The parameters are invalid (-32602).
    InvalidParams,
    /// An internal error (-32603).
    Internal,
    /// The caller is not authenticated.
    Unauthenticated,
    /// The caller may not do this.
    Unauthorized,
    /// The server is at a limit; try again later (see [`A2aError::retry_after`]).
    /// HTTP 429 with `Retry-After`, gRPC `RESOURCE_EXHAUSTED`.
    Busy,
    /// A service the server depends on (its store) is down for now; try
    /// again later (see [`A2aError::retry_after`]). The spec's "system"
    /// category: HTTP 503 with `Retry-After`, gRPC `UNAVAILABLE`, JSON-RPC
    /// -32603 with the ErrorInfo reason `UNAVAILABLE`.
    Unavailable,
}

impl ErrorKind {
    /// Every kind, for table-driven code and tests.
    pub const ALL: [ErrorKind; 18] = [
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::Unauthenticated,
        ErrorKind::Unauthorized,
        ErrorKind::Busy,
        // After `Internal`, which keeps -32603 when decoding by code alone.
        ErrorKind::Unavailable,
    ];

    /// The JSON-RPC error code.
    pub const fn jsonrpc_code(self) -> i32 {
        match self {
            ErrorKind::TaskNotFound => -32001,
            ErrorKind::TaskNotCancelable => -32002,
            ErrorKind::PushNotificationNotSupported => -32003,
            ErrorKind::UnsupportedOperation => -32004,
            ErrorKind::ContentTypeNotSupported => -32005,
            ErrorKind::InvalidAgentResponse => -32006,
            ErrorKind::ExtendedAgentCardNotConfigured => -32007,
            ErrorKind::ExtensionSupportRequired => -32008,
            ErrorKind::VersionNotSupported => -32009,
            ErrorKind::ParseError => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
            // The spec leaves auth codes to the implementation ("custom"); these
            // follow the Go reference so peers agree.
            ErrorKind::Unauthenticated => -31401,
            ErrorKind::Unauthorized => -31403,
            // Custom as well, in the same style: the HTTP status it stands for.
            ErrorKind::Busy => -31429,
            // The spec's "system" category; the ErrorInfo reason tells it from Internal.
            ErrorKind::Unavailable => -32603,
        }
    }

    /// The HTTP status used by the HTTP+JSON binding.
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorKind::TaskNotFound | ErrorKind::MethodNotFound => 404,
            ErrorKind::InvalidAgentResponse | ErrorKind::Internal => 500,
            ErrorKind::Unauthenticated => 401,
            ErrorKind::Unauthorized => 403,
            ErrorKind::Busy => 429,
            ErrorKind::Unavailable => 503,
            _ => 400,
        }
    }

    /// The gRPC status code.
    pub const fn grpc_code(self) -> GrpcCode {
        match self {
            ErrorKind::TaskNotFound => GrpcCode::NotFound,
            ErrorKind::TaskNotCancelable
            | ErrorKind::PushNotificationNotSupported
            | ErrorKind::UnsupportedOperation
            | ErrorKind::ExtendedAgentCardNotConfigured
            | ErrorKind::ExtensionSupportRequired
            | ErrorKind::VersionNotSupported => GrpcCode::FailedPrecondition,
            ErrorKind::ContentTypeNotSupported
            | ErrorKind::ParseError
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams => GrpcCode::InvalidArgument,
            ErrorKind::InvalidAgentResponse | ErrorKind::Internal => GrpcCode::Internal,
            ErrorKind::MethodNotFound => GrpcCode::Unimplemented,
            ErrorKind::Unauthenticated => GrpcCode::Unauthenticated,
            ErrorKind::Unauthorized => GrpcCode::PermissionDenied,
            ErrorKind::Busy => GrpcCode::ResourceExhausted,
            ErrorKind::Unavailable => GrpcCode::Unavailable,
        }
    }

    /// The `google.rpc.ErrorInfo` reason (UPPER_SNAKE, no `Error` suffix).
    pub const fn reason(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            ErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorKind::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ErrorKind::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorKind::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            ErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorKind::ParseError => "PARSE_ERROR",
            ErrorKind::InvalidRequest => "INVALID_REQUEST",
            ErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::Internal => "INTERNAL_ERROR",
            ErrorKind::Unauthenticated => "UNAUTHENTICATED",
            ErrorKind::Unauthorized => "UNAUTHORIZED",
            ErrorKind::Busy => "RESOURCE_EXHAUSTED",
            ErrorKind::Unavailable => "UNAVAILABLE",
        }
    }

    /// The message used when none is given.
    pub const fn default_message(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "Task not found",
            ErrorKind::TaskNotCancelable => "Task cannot be canceled",
            ErrorKind::PushNotificationNotSupported => "Push notifications are not supported",
            ErrorKind::UnsupportedOperation => "This operation is not supported",
            ErrorKind::ContentTypeNotSupported => "Incompatible content types",
            ErrorKind::InvalidAgentResponse => "Invalid agent response",
            ErrorKind::ExtendedAgentCardNotConfigured => "Extended agent card is not configured",
            ErrorKind::ExtensionSupportRequired => "A required extension was not requested",
            ErrorKind::VersionNotSupported => "Protocol version is not supported",
            ErrorKind::ParseError => "Invalid JSON payload",
            ErrorKind::InvalidRequest => "Request payload validation error",
            ErrorKind::MethodNotFound => "Method not found",
            ErrorKind::InvalidParams => "Invalid parameters",
            ErrorKind::Internal => "Internal error",
            ErrorKind::Unauthenticated => "Authentication required",
            ErrorKind::Unauthorized => "Permission denied",
            ErrorKind::Busy => "The server is busy; try again later",
            ErrorKind::Unavailable => "The service is unavailable; try again later",
        }
    }

    /// The kind whose ErrorInfo reason is `reason`.
    pub fn from_reason(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.reason() == reason)
    }

    /// The kind whose JSON-RPC code is `code`.
    pub fn from_jsonrpc_code(code: i64) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| i64::from(k.jsonrpc_code()) == code)
    }

    /// The kind implied by a gRPC code alone, when that code is unambiguous.
    ///
    /// `FAILED_PRECONDITION` is shared by six errors, so it (and any other code
    /// shared by several kinds) yields `None`: decode by reason first.
    pub fn from_grpc_code(code: GrpcCode) -> Option<Self> {
        match code {
            GrpcCode::NotFound => Some(ErrorKind::TaskNotFound),
            GrpcCode::Unauthenticated => Some(ErrorKind::Unauthenticated),
            GrpcCode::PermissionDenied => Some(ErrorKind::Unauthorized),
            GrpcCode::ResourceExhausted => Some(ErrorKind::Busy),
            GrpcCode::Unavailable => Some(ErrorKind::Unavailable),
            GrpcCode::Unimplemented => Some(ErrorKind::MethodNotFound),
            GrpcCode::InvalidArgument => Some(ErrorKind::InvalidParams),
            GrpcCode::Internal => Some(ErrorKind::Internal),
            _ => None,
        }
    }

    /// The kind implied by an HTTP status alone, when unambiguous.
    pub fn from_http_status(status: u16) -> Option<Self> {
        match status {
            404 => Some(ErrorKind::TaskNotFound),
            401 => Some(ErrorKind::Unauthenticated),
            403 => Some(ErrorKind::Unauthorized),
            429 => Some(ErrorKind::Busy),
            503 => Some(ErrorKind::Unavailable),
            405 | 501 => Some(ErrorKind::MethodNotFound),
            415 => Some(ErrorKind::ContentTypeNotSupported),
            400 | 422 => Some(ErrorKind::InvalidParams),
            500 => Some(ErrorKind::Internal),
            _ => None,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

/// ErrorInfo metadata key of a busy error's wait, in whole seconds.
const RETRY_AFTER_KEY: &str = "retryAfterSeconds";
/// `@type` of the `google.rpc.RetryInfo` detail.
const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// An A2A protocol error: a kind, a message, ErrorInfo metadata and any further details.
///
/// ```
/// use a2a_core::{A2aError, ErrorKind};
/// let err = A2aError::task_not_found("t-1");
/// assert_eq!(err.kind(), ErrorKind::TaskNotFound);
/// let wire = err.to_jsonrpc();
/// assert_eq!(wire.code, -32001);
/// assert_eq!(A2aError::from_jsonrpc(&wire), err);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct A2aError {
    kind: ErrorKind,
    message: String,
    metadata: BTreeMap<String, String>,
    details: Vec<Value>,
}

impl std::error::Error for A2aError {}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.kind.reason())
    }
}

impl From<ErrorKind> for A2aError {
    fn from(kind: ErrorKind) -> Self {
        A2aError::new(kind, kind.default_message())
    }
}

impl A2aError {
    /// An error of `kind` with the given message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        A2aError {
            kind,
            message: message.into(),
            metadata: BTreeMap::new(),
            details: Vec::new(),
        }
    }

    /// Adds an ErrorInfo metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds a further `@type`d detail object (other than the ErrorInfo).
    #[must_use]
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.details.push(detail);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The ErrorInfo metadata (for example `taskId`).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// Details other than the ErrorInfo, as `@type`d JSON objects.
    pub fn details(&self) -> &[Value] {
        &self.details
    }

    /// `TaskNotFound` for `task_id`.
    pub fn task_not_found(task_id: &str) -> Self {
        A2aError::new(
            ErrorKind::TaskNotFound,
            format!("Task not found: {task_id}"),
        )
        .with_metadata("taskId", task_id)
    }

    /// `TaskNotCancelable` for a task in `state`.
    pub fn task_not_cancelable(task_id: &str, state: crate::TaskState) -> Self {
        A2aError::new(
            ErrorKind::TaskNotCancelable,
            format!("Task {task_id} cannot be canceled: it is {state}"),
        )
        .with_metadata("taskId", task_id)
    }

    /// `UnsupportedOperation` with a reason.
    pub fn unsupported_operation(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::UnsupportedOperation, message)
    }

    /// `InvalidParams` with a reason.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::InvalidParams, message)
    }

    /// `InvalidRequest` with a reason.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::InvalidRequest, message)
    }

    /// `ParseError` with a reason.
    pub fn parse_error(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::ParseError, message)
    }

    /// `MethodNotFound` for `method`.
    pub fn method_not_found(method: &str) -> Self {
        A2aError::new(
            ErrorKind::MethodNotFound,
            format!("Method not found: {method}"),
        )
    }

    /// `Busy`: the server is at a limit; come back after `retry_after`
    /// (rounded up to whole seconds, at least one). The wait travels as
    /// ErrorInfo metadata `retryAfterSeconds` and a `google.rpc.RetryInfo`
    /// detail; the HTTP bindings also send `Retry-After`.
    pub fn busy(message: impl Into<String>, retry_after: std::time::Duration) -> Self {
        let seconds = retry_after
            .as_secs()
            .saturating_add(u64::from(retry_after.subsec_nanos() > 0))
            .max(1);
        let mut retry_info = Map::new();
        retry_info.insert("@type".into(), RETRY_INFO_TYPE.into());
        retry_info.insert("retryDelay".into(), format!("{seconds}s").into());
        A2aError::new(ErrorKind::Busy, message)
            .with_metadata(RETRY_AFTER_KEY, seconds.to_string())
            .with_detail(Value::Object(retry_info))
    }

    /// `Unavailable`: something the server depends on (its store) failed
    /// for now; `message` says what. Carries the same retry hint as
    /// [`A2aError::busy`] (the HTTP bindings send `Retry-After`).
    pub fn unavailable(message: impl Into<String>, retry_after: std::time::Duration) -> Self {
        let busy = A2aError::busy(message, retry_after);
        A2aError {
            kind: ErrorKind::Unavailable,
            ..busy
        }
    }

    /// How long the server asked the caller to wait before trying again
    /// (a [`ErrorKind::Busy`] or [`ErrorKind::Unavailable`] error's hint), if it said.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.metadata
            .get(RETRY_AFTER_KEY)
            .and_then(|s| s.parse::<u64>().ok())
            .map(std::time::Duration::from_secs)
    }

    /// `Internal` with a message safe to show to the caller.
    pub fn internal(message: impl Into<String>) -> Self {
        A2aError::new(ErrorKind::Internal, message)
    }

    /// The `google.rpc.ErrorInfo` detail as ProtoJSON.
    pub fn error_info(&self) -> Value {
        let mut info = Map::new();
        info.insert("@type".into(), ERROR_INFO_TYPE.into());
        info.insert("reason".into(), self.kind.reason().into());
        info.insert("domain".into(), ERROR_DOMAIN.into());
        if !self.metadata.is_empty() {
            let metadata = self
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            info.insert("metadata".into(), Value::Object(metadata));
        }
        Value::Object(info)
    }

    /// All details: the ErrorInfo first, then the others.
    pub fn all_details(&self) -> Vec<Value> {
        let mut all = Vec::with_capacity(1 + self.details.len());
        all.push(self.error_info());
        all.extend(self.details.iter().cloned());
        all
    }

    /// Builds an error from a code-derived fallback kind, a message and received details.
    ///
    /// The ErrorInfo reason, when present, wins over the fallback (several
    /// errors share one HTTP status or gRPC code).
    pub fn from_details(
        fallback: ErrorKind,
        message: impl Into<String>,
        details: &[Value],
    ) -> Self {
        let mut err = A2aError::new(fallback, message);
        for detail in details {
            let is_info = detail.get("@type").and_then(Value::as_str) == Some(ERROR_INFO_TYPE);
            let reason = detail.get("reason").and_then(Value::as_str);
            let domain = detail.get("domain").and_then(Value::as_str);
            let known = reason.and_then(ErrorKind::from_reason);
            match (is_info, known) {
                (true, Some(kind)) if domain.is_none_or(|d| d == ERROR_DOMAIN) => {
                    err.kind = kind;
                    if let Some(metadata) = detail.get("metadata").and_then(Value::as_object) {
                        err.metadata = metadata
                            .iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect();
                    }
                }
                _ => err.details.push(detail.clone()),
            }
        }
        err
    }

    /// The JSON-RPC error object (`data` = the `@type`d details).
    pub fn to_jsonrpc(&self) -> JsonRpcError {
        JsonRpcError {
            code: i64::from(self.kind.jsonrpc_code()),
            message: self.message.clone(),
            data: Some(Value::Array(self.all_details())),
        }
    }

    /// Decodes a received JSON-RPC error object.
    pub fn from_jsonrpc(error: &JsonRpcError) -> Self {
        let fallback = ErrorKind::from_jsonrpc_code(error.code).unwrap_or(ErrorKind::Internal);
        let details = match &error.data {
            Some(Value::Array(items)) => items.as_slice(),
            Some(other) => std::slice::from_ref(other),
            None => &[],
        };
        A2aError::from_details(fallback, error.message.clone(), details)
    }

    /// The HTTP+JSON error body (`google.rpc.Status` in its JSON form).
    pub fn to_http_body(&self) -> HttpErrorBody {
        HttpErrorBody {
            error: HttpStatusError {
                code: i32::from(self.kind.http_status()),
                status: self.kind.grpc_code().name().to_owned(),
                message: self.message.clone(),
                details: self.all_details(),
            },
        }
    }

    /// Decodes a received HTTP+JSON error body, with the response status as fallback.
    pub fn from_http_body(http_status: u16, body: &HttpErrorBody) -> Self {
        let fallback = GrpcCode::from_name(&body.error.status)
            .and_then(ErrorKind::from_grpc_code)
            .or_else(|| ErrorKind::from_http_status(http_status))
            .unwrap_or(ErrorKind::Internal);
        A2aError::from_details(fallback, body.error.message.clone(), &body.error.details)
    }
}

/// A JSON-RPC 2.0 error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// The error code.
    pub code: i64,
    /// The message.
    #[serde(default)]
    pub message: String,
    /// Further data; for A2A, an array of `@type`d details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The HTTP+JSON error body: `{"error": {code, status, message, details}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpErrorBody {
    /// The status.
    pub error: HttpStatusError,
}

/// `google.rpc.Status` as sent in HTTP+JSON error bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpStatusError {
    /// The HTTP status code.
    #[serde(default)]
    pub code: i32,
    /// The gRPC canonical code name.
    #[serde(default)]
    pub status: String,
    /// The message.
    #[serde(default)]
    pub message: String,
    /// `@type`d details.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_error_says_when_to_come_back_on_every_wire() {
        let busy = A2aError::busy(
            "at the execution limit",
            std::time::Duration::from_millis(2500),
        );
        assert_eq!(busy.retry_after(), Some(std::time::Duration::from_secs(3)));
        assert_eq!(busy.kind().http_status(), 429);
        assert_eq!(busy.kind().grpc_code(), GrpcCode::ResourceExhausted);
        assert!(busy.details().iter().any(|d| d["retryDelay"] == "3s"));
        let read_back = A2aError::from_jsonrpc(&busy.to_jsonrpc());
        assert_eq!(read_back.kind(), ErrorKind::Busy);
        assert_eq!(
            read_back.retry_after(),
            Some(std::time::Duration::from_secs(3))
        );
        let zero = A2aError::busy("x", std::time::Duration::ZERO);
        assert_eq!(zero.retry_after(), Some(std::time::Duration::from_secs(1)));
        assert_eq!(A2aError::internal("x").retry_after(), None);
    }

    #[test]
    fn every_kind_round_trips_on_both_wire_forms() {
        for kind in ErrorKind::ALL {
            let err = A2aError::new(kind, "boom").with_metadata("taskId", "t");
            assert_eq!(A2aError::from_jsonrpc(&err.to_jsonrpc()), err, "{kind:?}");
            let body = err.to_http_body();
            assert_eq!(
                A2aError::from_http_body(kind.http_status(), &body),
                err,
                "{kind:?}"
            );
            assert_eq!(ErrorKind::from_reason(kind.reason()), Some(kind));
        }
    }

    #[test]
    fn unavailable_is_the_system_category_with_a_retry_hint() {
        let err = A2aError::unavailable(
            "task storage is unavailable: disk full",
            std::time::Duration::from_millis(1500),
        );
        assert_eq!(err.kind().http_status(), 503);
        assert_eq!(err.kind().grpc_code(), GrpcCode::Unavailable);
        assert_eq!(err.kind().jsonrpc_code(), -32603);
        assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(2)));
        // Told from Internal on JSON-RPC by its reason, with the hint kept.
        let read_back = A2aError::from_jsonrpc(&err.to_jsonrpc());
        assert_eq!(read_back.kind(), ErrorKind::Unavailable);
        assert_eq!(read_back.retry_after(), err.retry_after());
        assert_eq!(
            ErrorKind::from_jsonrpc_code(-32603),
            Some(ErrorKind::Internal)
        );
        assert_eq!(
            ErrorKind::from_http_status(503),
            Some(ErrorKind::Unavailable)
        );
    }

    #[test]
    fn v1_0_1_table() {
        assert_eq!(ErrorKind::TaskNotCancelable.http_status(), 400);
        assert_eq!(
            ErrorKind::VersionNotSupported.grpc_code(),
            GrpcCode::FailedPrecondition
        );
        assert_eq!(
            ErrorKind::ContentTypeNotSupported.grpc_code(),
            GrpcCode::InvalidArgument
        );
        assert_eq!(ErrorKind::InvalidAgentResponse.http_status(), 500);
        assert_eq!(ErrorKind::TaskNotFound.grpc_code().name(), "NOT_FOUND");
    }

    #[test]
    fn code_only_errors_fall_back_by_code() {
        let wire = JsonRpcError {
            code: -32002,
            message: "no".into(),
            data: None,
        };
        assert_eq!(
            A2aError::from_jsonrpc(&wire).kind(),
            ErrorKind::TaskNotCancelable
        );
        let wire = JsonRpcError {
            code: -32000,
            message: "server".into(),
            data: None,
        };
        assert_eq!(A2aError::from_jsonrpc(&wire).kind(), ErrorKind::Internal);
    }
}
