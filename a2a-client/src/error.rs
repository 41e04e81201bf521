//! `ClientError`: what can go wrong calling an agent.

use a2a_core::{A2aError, ErrorKind};

/// The class of a client failure, for retry decisions and matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientErrorKind {
    /// The agent answered with an A2A or JSON-RPC error ([`ClientError::protocol`] has it).
    Protocol,
    /// The connection could not be made or broke.
    Connection,
    /// The call or a stream went quiet for longer than allowed.
    Timeout,
    /// An HTTP status without a recognisable A2A error body.
    Http,
    /// The response could not be decoded.
    Decode,
    /// The client cannot do this (no usable interface, unsupported binding, ...).
    Unsupported,
    /// The client's own setup is unusable (an unreadable CA certificate, say).
    Config,
    /// The agent card is not signed by a key the client trusts
    /// ([`ClientBuilder::verify_cards`](crate::ClientBuilder::verify_cards)).
    Signature,
}

/// A failed call. Boxed inside, so `Result<T, ClientError>` stays small.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.message)]
pub struct ClientError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: ClientErrorKind,
    message: String,
    status: Option<u16>,
    protocol: Option<A2aError>,
    retry_after: Option<std::time::Duration>,
    task_id: Option<String>,
}

impl ClientError {
    /// An error of `kind` (for transports implemented outside this crate).
    pub fn new(kind: ClientErrorKind, message: impl Into<String>) -> Self {
        ClientError(Box::new(Inner {
            kind,
            message: message.into(),
            status: None,
            protocol: None,
            retry_after: None,
            task_id: None,
        }))
    }

    pub(crate) fn http(status: u16, message: impl Into<String>) -> Self {
        ClientError::new(ClientErrorKind::Http, message).with_status(status)
    }

    pub(crate) fn with_status(self, status: u16) -> Self {
        self.with_http_status(status)
    }

    /// Records the HTTP status of the failed response.
    #[must_use]
    pub fn with_http_status(mut self, status: u16) -> Self {
        self.0.status = Some(status);
        self
    }

    /// Records the wait the server asked for (`Retry-After`).
    #[must_use]
    pub fn with_retry_after(mut self, wait: Option<std::time::Duration>) -> Self {
        if wait.is_some() {
            self.0.retry_after = wait;
        }
        self
    }

    pub(crate) fn decode(message: impl Into<String>) -> Self {
        ClientError::new(ClientErrorKind::Decode, message)
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        ClientError::new(ClientErrorKind::Unsupported, message)
    }

    /// The class of failure.
    pub fn kind(&self) -> ClientErrorKind {
        self.0.kind
    }

    /// The protocol error the agent returned, if that is what this is.
    pub fn protocol(&self) -> Option<&A2aError> {
        self.0.protocol.as_ref()
    }

    /// The protocol error kind, if the agent returned one.
    pub fn protocol_kind(&self) -> Option<ErrorKind> {
        self.0.protocol.as_ref().map(A2aError::kind)
    }

    /// The HTTP status of the response, when there was one.
    pub fn status(&self) -> Option<u16> {
        self.0.status
    }

    /// The task the failed call had started, when the agent named it before
    /// the failure: a blocking `SendMessage` that ran out of time leaves its
    /// task running on the agent, to be followed with `GetTask` or
    /// `SubscribeToTask`.
    pub fn task_id(&self) -> Option<&str> {
        self.0.task_id.as_deref()
    }

    /// Records the task the failed call had started.
    #[must_use]
    pub fn with_task_id(mut self, task_id: impl Into<String>) -> Self {
        self.0.task_id = Some(task_id.into());
        self
    }

    /// The wait the server asked for (`Retry-After`), if any.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.0.retry_after
    }

    /// Whether trying again may succeed: connection failures, timeouts, 429 and
    /// 5xx. Protocol errors and 401/403/404 are final.
    pub fn is_retryable(&self) -> bool {
        match self.0.kind {
            ClientErrorKind::Connection | ClientErrorKind::Timeout => true,
            ClientErrorKind::Http => self.0.status.is_some_and(|s| s == 429 || s >= 500),
            ClientErrorKind::Protocol => {
                matches!(
                    self.protocol_kind(),
                    Some(a2a_core::ErrorKind::Busy | a2a_core::ErrorKind::Unavailable)
                ) || self
                    .0
                    .status
                    .is_some_and(|s| s == 429 || s == 502 || s == 503 || s == 504)
            }
            ClientErrorKind::Decode
            | ClientErrorKind::Unsupported
            | ClientErrorKind::Config
            | ClientErrorKind::Signature => false,
        }
    }

    pub(crate) fn from_reqwest(err: reqwest::Error) -> Self {
        let kind = if err.is_timeout() {
            ClientErrorKind::Timeout
        } else if err.is_decode() {
            ClientErrorKind::Decode
        } else {
            ClientErrorKind::Connection
        };
        // reqwest's own message stops at "error sending request"; the reason
        // (a refused connection, an untrusted certificate) is in its sources.
        let mut message = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message = format!("{message}: {text}");
            }
            source = cause.source();
        }
        let error = ClientError::new(kind, message);
        match err.status() {
            Some(status) => error.with_status(status.as_u16()),
            None => error,
        }
    }
}

impl From<A2aError> for ClientError {
    fn from(err: A2aError) -> Self {
        let mut error = ClientError::new(ClientErrorKind::Protocol, err.to_string());
        // A busy server's wait travels in the error itself on every binding
        // (a `Retry-After` header, where there is one, says the same).
        error.0.retry_after = err.retry_after();
        error.0.protocol = Some(err);
        error
    }
}
