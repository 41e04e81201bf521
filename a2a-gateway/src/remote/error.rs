//! `RemoteError`: a remote agent that cannot be reached or misbehaves, named
//! with its URL so that whoever reads the failed task knows where to look.

use a2a_client::{ClientError, ClientErrorKind};
use a2a_core::{A2aError, ErrorKind};

/// The class of a [`RemoteError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteErrorKind {
    /// No connection could be made, or it broke.
    Unreachable,
    /// The remote did not answer in time.
    Timeout,
    /// The card could not be fetched or read, or names no usable interface.
    BadCard,
    /// The remote answered with an A2A error ([`RemoteError::protocol`]).
    Protocol,
    /// The remote's answer was not valid A2A (undecodable, or an event that
    /// does not belong to the task).
    BadResponse,
    /// The gateway's own setup for this agent is unusable.
    Config,
}

/// A failed exchange with a remote agent. Boxed inside, so that results
/// carrying it stay small.
#[derive(Debug, Clone, thiserror::Error)]
#[error("remote agent {:?} at {}: {}", .0.agent, .0.url, .0.message)]
pub struct RemoteError(Box<Inner>);

#[derive(Debug, Clone)]
struct Inner {
    agent: String,
    url: String,
    kind: RemoteErrorKind,
    message: String,
    protocol: Option<A2aError>,
}

impl RemoteError {
    pub(crate) fn new(
        agent: &str,
        url: &str,
        kind: RemoteErrorKind,
        message: impl Into<String>,
    ) -> Self {
        RemoteError(Box::new(Inner {
            agent: agent.to_owned(),
            url: url.to_owned(),
            kind,
            message: message.into(),
            protocol: None,
        }))
    }

    /// A client failure while `doing` something.
    pub(crate) fn from_client(agent: &str, url: &str, doing: &str, err: &ClientError) -> Self {
        let kind = match err.kind() {
            ClientErrorKind::Protocol => RemoteErrorKind::Protocol,
            ClientErrorKind::Connection => RemoteErrorKind::Unreachable,
            ClientErrorKind::Timeout => RemoteErrorKind::Timeout,
            ClientErrorKind::Config => RemoteErrorKind::Config,
            _ => RemoteErrorKind::BadResponse,
        };
        let mut error = RemoteError::new(agent, url, kind, format!("{doing}: {err}"));
        error.0.protocol = err.protocol().cloned();
        error
    }

    /// The name the gateway hosts the agent under.
    pub fn agent(&self) -> &str {
        &self.0.agent
    }

    /// The URL the agent was configured with.
    pub fn url(&self) -> &str {
        &self.0.url
    }

    /// The class of failure.
    pub fn kind(&self) -> RemoteErrorKind {
        self.0.kind
    }

    /// The A2A error the remote answered with, if that is what this is.
    pub fn protocol(&self) -> Option<&A2aError> {
        self.0.protocol.as_ref()
    }
}

impl From<RemoteError> for A2aError {
    /// Keeps the kind of the errors that say something about the task or
    /// the message (a task that is not cancelable stays so for the gateway's
    /// caller); the rest, the remote refusing the gateway's credentials
    /// included, is the gateway failing to reach its agent, not the caller's
    /// fault.
    fn from(err: RemoteError) -> Self {
        let kind = match (err.protocol().map(A2aError::kind), err.kind()) {
            (
                Some(
                    kind @ (ErrorKind::TaskNotCancelable
                    | ErrorKind::UnsupportedOperation
                    | ErrorKind::ContentTypeNotSupported),
                ),
                _,
            ) => kind,
            (_, RemoteErrorKind::BadResponse | RemoteErrorKind::BadCard) => {
                ErrorKind::InvalidAgentResponse
            }
            _ => ErrorKind::Internal,
        };
        A2aError::new(kind, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_about_the_task_keep_their_kind_for_the_gateways_caller() {
        let refused = ClientError::from(A2aError::new(ErrorKind::TaskNotCancelable, "no"));
        let err = RemoteError::from_client("weather", "http://w", "canceling", &refused);
        assert_eq!(err.kind(), RemoteErrorKind::Protocol);
        let local = A2aError::from(err);
        assert_eq!(local.kind(), ErrorKind::TaskNotCancelable);
        assert_eq!(
            local.message(),
            "remote agent \"weather\" at http://w: canceling: no (TASK_NOT_CANCELABLE)"
        );

        // The remote refusing the gateway is not the caller's fault.
        let denied = ClientError::from(A2aError::new(ErrorKind::Unauthenticated, "who?"));
        let err = RemoteError::from_client("weather", "http://w", "sending", &denied);
        assert_eq!(A2aError::from(err).kind(), ErrorKind::Internal);

        let garbage = RemoteError::new("weather", "http://w", RemoteErrorKind::BadCard, "x");
        assert_eq!(
            A2aError::from(garbage).kind(),
            ErrorKind::InvalidAgentResponse
        );
    }
}
