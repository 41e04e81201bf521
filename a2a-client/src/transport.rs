//! `Transport`: one binding's way of carrying calls.

use std::pin::Pin;
use std::time::Duration;

use a2a_core::StreamResponse;
use a2a_core::operation::{Request, UnaryResponse};
use async_trait::async_trait;
use futures::Stream;

use crate::ClientError;

/// A stream of events from a streaming operation.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

/// Per-call service parameters and limits.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Extra service parameters (HTTP headers / gRPC metadata), e.g. `authorization`.
    pub headers: Vec<(String, String)>,
    /// Extension URIs to request (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// Extra query parameters (HTTP bindings only; API keys sent in the query).
    pub query: Vec<(String, String)>,
    /// Timeout of a unary call (the transport's default when `None`).
    pub timeout: Option<Duration>,
    /// Longest silence tolerated between two stream events (the transport's default when `None`).
    pub idle_timeout: Option<Duration>,
}

impl CallOptions {
    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Requests an extension.
    #[must_use]
    pub fn extension(mut self, uri: impl Into<String>) -> Self {
        self.extensions.push(uri.into());
        self
    }

    /// All service parameters to send, `A2A-Version` and `A2A-Extensions` included.
    pub fn service_params(&self) -> Vec<(String, String)> {
        let mut params = vec![(
            a2a_core::VERSION_HEADER.to_owned(),
            a2a_core::PROTOCOL_VERSION.to_owned(),
        )];
        if !self.extensions.is_empty() {
            params.push((
                a2a_core::EXTENSIONS_HEADER.to_owned(),
                self.extensions.join(", "),
            ));
        }
        params.extend(self.headers.iter().cloned());
        params
    }
}

/// One binding's way of carrying calls: every unary operation through
/// [`call`](Transport::call), every streaming one through
/// [`stream`](Transport::stream). Implementations exist for JSON-RPC and
/// HTTP+JSON (1.0 and 0.3) here, and for gRPC in `a2a-grpc`; the typed
/// operations ([`Client::get_task`](crate::Client::get_task), ...) are on
/// [`Client`](crate::Client), which builds the [`Request`] and checks the
/// answer's kind.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    /// A unary operation (`request.method()` is not streaming): the answer
    /// of its kind ([`Response::Task`](a2a_core::operation::Response::Task)
    /// for `GetTask`, ...).
    async fn call(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError>;

    /// A streaming operation (`SendStreamingMessage`, `SubscribeToTask`):
    /// its events.
    async fn stream(
        &self,
        request: Request,
        options: &CallOptions,
    ) -> Result<EventStream, ClientError>;

    /// The timeout of a unary call that sets none, if the transport has one
    /// (a tracked blocking send keeps to it as a whole).
    fn default_timeout(&self) -> Option<std::time::Duration> {
        None
    }
}

/// The error of a transport asked to carry `request` the wrong way: a
/// streaming operation through [`Transport::call`] or a unary one through
/// [`Transport::stream`].
pub fn wrong_way(request: &Request) -> ClientError {
    let (asked, right) = if request.method().is_streaming() {
        ("a unary call", "stream")
    } else {
        ("a stream", "call")
    };
    ClientError::unsupported(format!(
        "{} was asked for as {asked}; it goes through Transport::{right}",
        request.method()
    ))
}
