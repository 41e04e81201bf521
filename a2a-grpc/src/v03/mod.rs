//! A2A 0.3 over gRPC: the 0.3 service `a2a.v1.A2AService` (generated from
//! `proto/a2a_v03.proto`, the 0.3 release's normative proto), served beside
//! the 1.0 `lf.a2a.v1.A2AService` on its own paths, and a client transport
//! for agents whose card offers 0.3 gRPC.
//!
//! The generated messages convert to and from the 0.3 types of
//! [`a2a_core::v03`], which convert to and from 1.0; so a 0.3 call is served as the 1.0 call it
//! stands for, as on the JSON bindings. Errors travel as 0.3 did: a status
//! code and a message starting with the 0.3 error's name
//! (`TaskNotFoundError: …`), no `ErrorInfo`.

use a2a_core::{A2aError, ErrorKind};
use tonic::{Code, Status};

#[cfg(feature = "client")]
mod client;
mod convert;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use self::client::GrpcV03Transport;
#[cfg(feature = "server")]
pub use self::server::{GrpcServiceV03, GrpcV03EventStream};

/// The generated `a2a.v1` (A2A 0.3) messages, client and server.
pub mod pb {
    pub use crate::generated_v03::*;
}

/// The full name of the 0.3 gRPC service.
pub const SERVICE_NAME: &str = "a2a.v1.A2AService";

// ===== errors =====

/// The 0.3 error names, as 0.3 peers put them at the start of a status
/// message, and the kinds they stand for.
const ERROR_NAMES: [(&str, ErrorKind); 12] = [
    ("JSONParseError", ErrorKind::ParseError),
    ("InvalidRequestError", ErrorKind::InvalidRequest),
    ("MethodNotFoundError", ErrorKind::MethodNotFound),
    ("InvalidParamsError", ErrorKind::InvalidParams),
    ("InternalError", ErrorKind::Internal),
    ("TaskNotFoundError", ErrorKind::TaskNotFound),
    ("TaskNotCancelableError", ErrorKind::TaskNotCancelable),
    (
        "PushNotificationNotSupportedError",
        ErrorKind::PushNotificationNotSupported,
    ),
    ("UnsupportedOperationError", ErrorKind::UnsupportedOperation),
    (
        "ContentTypeNotSupportedError",
        ErrorKind::ContentTypeNotSupported,
    ),
    ("InvalidAgentResponseError", ErrorKind::InvalidAgentResponse),
    (
        "AuthenticatedExtendedCardNotConfiguredError",
        ErrorKind::ExtendedAgentCardNotConfigured,
    ),
];

/// The status a 0.3 peer expects for `err`: 0.3's code for the error and
/// `Name: message`.
pub fn to_status(err: &A2aError) -> Status {
    let kind = err.kind();
    let code = match kind {
        ErrorKind::InvalidRequest | ErrorKind::InvalidParams => Code::InvalidArgument,
        ErrorKind::MethodNotFound | ErrorKind::TaskNotFound => Code::NotFound,
        ErrorKind::TaskNotCancelable
        | ErrorKind::PushNotificationNotSupported
        | ErrorKind::UnsupportedOperation
        | ErrorKind::ContentTypeNotSupported => Code::Unimplemented,
        ErrorKind::ExtendedAgentCardNotConfigured => Code::FailedPrecondition,
        ErrorKind::Unauthenticated => Code::Unauthenticated,
        ErrorKind::Unauthorized => Code::PermissionDenied,
        ErrorKind::Busy => Code::ResourceExhausted,
        ErrorKind::Unavailable => Code::Unavailable,
        ErrorKind::ExtensionSupportRequired | ErrorKind::VersionNotSupported => {
            Code::FailedPrecondition
        }
        // Parse errors, internal errors, invalid agent responses, and any
        // kind added later.
        _ => Code::Internal,
    };
    let message = match ERROR_NAMES.iter().find(|(_, k)| *k == kind) {
        Some((name, _)) => format!("{name}: {}", err.message()),
        None => err.message().to_owned(),
    };
    Status::new(code, message)
}

/// The error a 0.3 peer's status stands for: by the error name its message
/// starts with, else by its code.
pub fn from_status(status: &Status) -> A2aError {
    let text = status.message();
    if let Some((name, message)) = text.split_once(": ") {
        if let Some((_, kind)) = ERROR_NAMES.iter().find(|(n, _)| *n == name) {
            return A2aError::new(*kind, message);
        }
    }
    let kind = match status.code() {
        Code::NotFound => ErrorKind::TaskNotFound,
        Code::InvalidArgument => ErrorKind::InvalidParams,
        Code::Unimplemented => ErrorKind::UnsupportedOperation,
        Code::Unauthenticated => ErrorKind::Unauthenticated,
        Code::PermissionDenied => ErrorKind::Unauthorized,
        Code::ResourceExhausted => ErrorKind::Busy,
        Code::Unavailable => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    };
    A2aError::new(kind, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_the_0_3_name() {
        for (_, kind) in ERROR_NAMES {
            let err = A2aError::new(kind, "boom");
            let back = from_status(&to_status(&err));
            assert_eq!((back.kind(), back.message()), (kind, "boom"), "{kind:?}");
        }
        assert_eq!(
            from_status(&Status::not_found("gone")).kind(),
            ErrorKind::TaskNotFound
        );
    }
}

#[cfg(test)]
mod convert_tests {
    use super::convert::*;
    use super::pb;
    use a2a_core::v03;

    #[test]
    fn a_task_survives_the_generated_form() {
        let task = a2a_core::Task::new("t1", "c1", a2a_core::TaskState::Canceled);
        let old = v03::Task::from_v1(task.clone());
        let back = task_in(task_out(old)).unwrap();
        let back = back.into_v1().unwrap();
        assert_eq!(back.status.state, task.status.state);
        assert_eq!((back.id, back.context_id), (task.id, task.context_id));
        assert!(part_in(pb::Part::default()).is_err());
        assert!(event_in(pb::StreamResponse::default()).is_err());
    }
}
