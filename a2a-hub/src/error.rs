//! `HubError`: why the hub refused or could not do something, with the fix
//! in the message where there is one.

use std::time::Duration;

use a2a_core::A2aError;

/// The class of a [`HubError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HubErrorKind {
    /// No such agent, channel or thread, or a request that cannot be.
    Invalid,
    /// No such thread or channel.
    NotFound,
    /// A loop guard refused it; try again after the wait.
    Refused,
    /// The target could not take the message (offline, refused it, did not
    /// answer); escalated to the operator.
    Undelivered,
    /// The hub's own record could not be written.
    Store,
}

impl HubErrorKind {
    /// The kind's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            HubErrorKind::Invalid => "invalid",
            HubErrorKind::NotFound => "notFound",
            HubErrorKind::Refused => "refused",
            HubErrorKind::Undelivered => "undelivered",
            HubErrorKind::Store => "store",
        }
    }

    fn from_str(kind: &str) -> HubErrorKind {
        match kind {
            "notFound" => HubErrorKind::NotFound,
            "refused" => HubErrorKind::Refused,
            "undelivered" => HubErrorKind::Undelivered,
            "store" => HubErrorKind::Store,
            _ => HubErrorKind::Invalid,
        }
    }
}

/// Why the hub refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HubError {
    kind: HubErrorKind,
    message: String,
    retry_after: Option<Duration>,
}

impl HubError {
    pub(crate) fn new(kind: HubErrorKind, message: impl Into<String>) -> Self {
        HubError {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        HubError::new(HubErrorKind::Invalid, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        HubError::new(HubErrorKind::NotFound, message)
    }

    pub(crate) fn refused(message: impl Into<String>, retry_after: Duration) -> Self {
        HubError {
            retry_after: Some(retry_after),
            ..HubError::new(HubErrorKind::Refused, message)
        }
    }

    pub(crate) fn store(err: &impl std::fmt::Display) -> Self {
        HubError::new(
            HubErrorKind::Store,
            format!("the hub could not write its record: {err}"),
        )
    }

    /// The error the hub's HTTP API answered with (its kind told by the
    /// status).
    pub(crate) fn answered(
        kind: HubErrorKind,
        message: impl Into<String>,
        retry_after: Option<Duration>,
    ) -> Self {
        HubError {
            retry_after,
            ..HubError::new(kind, message)
        }
    }

    /// The error as the hub's A2A face sends it (`{"kind", "message",
    /// "retryAfterSecs"}`), read back.
    pub fn from_wire(value: &serde_json::Value) -> HubError {
        let text = |key: &str| value.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        HubError {
            kind: HubErrorKind::from_str(text("kind")),
            message: text("message").to_owned(),
            retry_after: value
                .get("retryAfterSecs")
                .and_then(serde_json::Value::as_u64)
                .map(Duration::from_secs),
        }
    }

    /// The class.
    pub fn kind(&self) -> HubErrorKind {
        self.kind
    }

    /// What went wrong and, where there is one, the fix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// When a refused request may be tried again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The HTTP status the hub's API answers it with.
    pub fn http_status(&self) -> u16 {
        match self.kind {
            HubErrorKind::Invalid => 400,
            HubErrorKind::NotFound => 404,
            HubErrorKind::Refused => 429,
            HubErrorKind::Undelivered => 502,
            HubErrorKind::Store => 503,
        }
    }
}

impl From<HubError> for A2aError {
    fn from(err: HubError) -> Self {
        match err.kind {
            HubErrorKind::Invalid | HubErrorKind::NotFound => A2aError::invalid_params(err.message),
            HubErrorKind::Refused => {
                A2aError::busy(err.message, err.retry_after.unwrap_or_default())
            }
            HubErrorKind::Undelivered | HubErrorKind::Store => A2aError::internal(err.message),
        }
    }
}
