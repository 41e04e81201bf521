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

    /// A client failure while `doing` something. What the remote wrote (an
    /// error page, an answer that is not A2A) goes to the gateway's log, not
    /// into the error, which reaches the gateway's caller: it says what
    /// happened (`HTTP 500`) and names the agent. An A2A error the remote
    /// answered with is kept, cut to [`MAX_REMOTE_MESSAGE`] characters.
    pub(crate) fn from_client(agent: &str, url: &str, doing: &str, err: &ClientError) -> Self {
        let kind = match err.kind() {
            ClientErrorKind::Protocol => RemoteErrorKind::Protocol,
            ClientErrorKind::Connection => RemoteErrorKind::Unreachable,
            ClientErrorKind::Timeout => RemoteErrorKind::Timeout,
            ClientErrorKind::Config => RemoteErrorKind::Config,
            _ => RemoteErrorKind::BadResponse,
        };
        let message = match err.kind() {
            ClientErrorKind::Http => match err.status() {
                Some(status) => format!("{doing}: the remote answered HTTP {status}"),
                None => format!("{doing}: the remote answered with an HTTP error"),
            },
            ClientErrorKind::Decode => format!("{doing}: the remote's answer is not valid A2A"),
            ClientErrorKind::Protocol => format!("{doing}: {}", cut(&err.to_string())),
            // The client's own account (refused, timed out, no usable
            // interface): nothing the remote wrote.
            _ => format!("{doing}: {err}"),
        };
        if matches!(
            err.kind(),
            ClientErrorKind::Http | ClientErrorKind::Decode | ClientErrorKind::Protocol
        ) {
            tracing::warn!(agent, url, doing, status = err.status(), error = %err, "remote agent answered with an error");
        }
        let mut error = RemoteError::new(agent, url, kind, message);
        error.0.protocol = err.protocol().cloned();
        error
    }

    /// The same error, of another kind.
    pub(crate) fn with_kind(mut self, kind: RemoteErrorKind) -> Self {
        self.0.kind = kind;
        self
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

/// The most characters of a remote's own error message passed on.
pub(crate) const MAX_REMOTE_MESSAGE: usize = 200;

/// `text` cut to [`MAX_REMOTE_MESSAGE`] characters.
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_REMOTE_MESSAGE) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
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

    #[test]
    fn a_remote_long_error_message_is_cut() {
        let long = ClientError::from(A2aError::new(ErrorKind::Internal, "é".repeat(1000)));
        let err = RemoteError::from_client("weather", "http://w", "sending", &long);
        let message = A2aError::from(err).message().to_owned();
        assert!(
            message.chars().count() < MAX_REMOTE_MESSAGE + 80,
            "{message}"
        );
        assert!(message.ends_with('…'), "{message}");
    }
}
