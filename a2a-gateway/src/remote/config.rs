//! `RemoteAgentConfig`: where a remote agent is, how the gateway proves who
//! it is there, and how long it waits.

use std::time::Duration;

use a2a_core::{AgentCard, binding};

/// What the gateway presents to a remote agent on every call (and on the card
/// fetch), in place of anything its own caller sent.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credentials {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// An API key in a header of the remote's choosing (`x-api-key`, say).
    ApiKey {
        /// The header name.
        header: String,
        /// The key.
        key: String,
    },
}

impl Credentials {
    /// The header this credential travels in.
    pub(crate) fn header(&self) -> (String, String) {
        match self {
            Credentials::Bearer(token) => ("authorization".to_owned(), format!("Bearer {token}")),
            Credentials::ApiKey { header, key } => (header.clone(), key.clone()),
        }
    }
}

// Secrets stay out of logs: a config is printed when the gateway starts.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Bearer(_) => f.write_str("Bearer(***)"),
            Credentials::ApiKey { header, .. } => write!(f, "ApiKey({header}: ***)"),
        }
    }
}

/// How to reach one remote A2A agent.
///
/// ```
/// use std::time::Duration;
/// use a2a_gateway::remote::RemoteAgentConfig;
/// let config = RemoteAgentConfig::new("https://weather.example.com")
///     .bearer("token-of-the-gateway")
///     .connect_timeout(Duration::from_secs(2))
///     .prefer(["HTTP+JSON"]);
/// assert_eq!(config.url, "https://weather.example.com");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RemoteAgentConfig {
    /// The agent's base URL (its card is at `/.well-known/agent-card.json`
    /// under it) or the card's own URL (one ending in `.json`).
    pub url: String,
    /// The card, when it is known already: then it is never fetched.
    pub card: Option<AgentCard>,
    /// What the gateway presents to the remote.
    pub credentials: Option<Credentials>,
    /// Longest wait for a TCP (and TLS) connection (default 5 s).
    pub connect_timeout: Duration,
    /// Longest wait for the whole card fetch (default 10 s).
    pub card_timeout: Duration,
    /// Longest wait for a unary call, and for a stream's first answer
    /// (default 60 s).
    pub request_timeout: Duration,
    /// Longest silence tolerated on a stream before the gateway asks the
    /// remote for the task instead (default 5 min).
    pub idle_timeout: Duration,
    /// How long a failed card fetch is remembered: calls in that time fail at
    /// once with its error instead of each waiting for a dead remote; the
    /// first call after it tries again (default 5 s).
    pub retry_card_after: Duration,
    /// Longest pause between two `GetTask` polls of a remote that does not
    /// stream (default 2 s; polls start at 50 ms and double).
    pub max_poll_interval: Duration,
    /// Bindings in order of preference (default JSON-RPC, HTTP+JSON, gRPC);
    /// the card's order breaks ties.
    pub bindings: Vec<String>,
    /// Whether to stream when the card says the remote can (default yes);
    /// without streaming the gateway sends with `returnImmediately` and polls.
    pub streaming: bool,
}

impl RemoteAgentConfig {
    /// The agent at `url` (a base URL or the card's URL), with the defaults.
    pub fn new(url: impl Into<String>) -> Self {
        RemoteAgentConfig {
            url: url.into(),
            card: None,
            credentials: None,
            connect_timeout: Duration::from_secs(5),
            card_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(300),
            retry_card_after: Duration::from_secs(5),
            max_poll_interval: Duration::from_secs(2),
            bindings: [binding::JSONRPC, binding::HTTP_JSON, binding::GRPC]
                .map(str::to_owned)
                .to_vec(),
            streaming: true,
        }
    }

    /// Uses `card` instead of fetching one.
    #[must_use]
    pub fn card(mut self, card: AgentCard) -> Self {
        self.card = Some(card);
        self
    }

    /// Presents `token` as a bearer token.
    #[must_use]
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::Bearer(token.into()));
        self
    }

    /// Presents `key` in the header `header`.
    #[must_use]
    pub fn api_key(mut self, header: impl Into<String>, key: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::ApiKey {
            header: header.into(),
            key: key.into(),
        });
        self
    }

    /// Sets [`connect_timeout`](Self::connect_timeout).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`card_timeout`](Self::card_timeout).
    #[must_use]
    pub fn card_timeout(mut self, timeout: Duration) -> Self {
        self.card_timeout = timeout;
        self
    }

    /// Sets [`request_timeout`](Self::request_timeout).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`retry_card_after`](Self::retry_card_after).
    #[must_use]
    pub fn retry_card_after(mut self, wait: Duration) -> Self {
        self.retry_card_after = wait;
        self
    }

    /// Sets [`max_poll_interval`](Self::max_poll_interval).
    #[must_use]
    pub fn max_poll_interval(mut self, interval: Duration) -> Self {
        self.max_poll_interval = interval;
        self
    }

    /// Sets the binding preference.
    #[must_use]
    pub fn prefer<S: Into<String>>(mut self, bindings: impl IntoIterator<Item = S>) -> Self {
        self.bindings = bindings.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`streaming`](Self::streaming).
    #[must_use]
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }
}
