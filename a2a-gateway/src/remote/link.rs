//! The gateway's connection to one remote agent: its card and a client for
//! it, made on first use and again after a failure, so that a remote that is
//! down when the gateway starts does not stop the gateway.

use std::sync::Arc;

use a2a_client::{CallOptions, Client, ClientBuilder, HttpSettings, RetryPolicy};
use a2a_core::AgentCard;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::config::RemoteAgentConfig;
use super::error::{RemoteError, RemoteErrorKind};

/// A client for the remote and the card it was made from.
#[derive(Debug, Clone)]
pub(crate) struct Connected {
    pub(crate) client: Client,
    pub(crate) card: Arc<AgentCard>,
}

#[derive(Debug, Default)]
struct State {
    connected: Option<Connected>,
    /// The last failed attempt, answered to every call until it is
    /// `retry_card_after` old.
    failed: Option<(Instant, RemoteError)>,
}

/// The lazily made connection of one remote agent.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) agent: String,
    pub(crate) config: RemoteAgentConfig,
    state: Mutex<State>,
}

impl Link {
    pub(crate) fn new(agent: String, config: RemoteAgentConfig) -> Self {
        Link {
            agent,
            config,
            state: Mutex::new(State::default()),
        }
    }

    /// An error of this agent.
    pub(crate) fn error(&self, kind: RemoteErrorKind, message: impl Into<String>) -> RemoteError {
        RemoteError::new(&self.agent, &self.config.url, kind, message)
    }

    /// The card and client if made already, without trying (and without
    /// waiting for an attempt under way).
    pub(crate) fn cached(&self) -> Option<Connected> {
        self.state.try_lock().ok()?.connected.clone()
    }

    /// Forgets the client, so that the next call fetches the card again: the
    /// remote may have moved, and its new card says where.
    pub(crate) async fn forget(&self) {
        self.state.lock().await.connected = None;
    }

    /// The client, made now if need be. Callers that arrive during an attempt
    /// wait for it (bounded by the card timeout) instead of starting their own.
    pub(crate) async fn connect(&self) -> Result<Connected, RemoteError> {
        let mut state = self.state.lock().await;
        if let Some(connected) = &state.connected {
            return Ok(connected.clone());
        }
        if let Some((at, err)) = &state.failed {
            if at.elapsed() < self.config.retry_card_after {
                return Err(err.clone());
            }
        }
        match self.make().await {
            Ok(connected) => {
                state.failed = None;
                state.connected = Some(connected.clone());
                Ok(connected)
            }
            Err(err) => {
                tracing::warn!(agent = %self.agent, error = %err, "remote agent unavailable");
                state.failed = Some((Instant::now(), err.clone()));
                Err(err)
            }
        }
    }

    async fn make(&self) -> Result<Connected, RemoteError> {
        let config = &self.config;
        // The client crate's default HTTP client has a fixed connect timeout;
        // this one keeps the agent's.
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| self.error(RemoteErrorKind::Config, format!("HTTP client: {e}")))?;
        let settings = HttpSettings {
            timeout: config.request_timeout,
            idle_timeout: config.idle_timeout,
            ..HttpSettings::default()
        };
        let mut defaults = CallOptions::default();
        if let Some(credentials) = &config.credentials {
            defaults.headers.push(credentials.header());
        }
        let builder = a2a_grpc::register(ClientBuilder::with_http_client(http, settings))
            .prefer(config.bindings.iter().cloned())
            .default_options(defaults.clone())
            // The executor bounds and follows every call itself.
            .retry(RetryPolicy::none())
            .track_blocking_sends(false);
        let card = match &config.card {
            Some(card) => card.clone(),
            None => self.fetch_card(&builder, &defaults.headers).await?,
        };
        let client = builder
            .build(card.clone())
            .map_err(|e| self.error(RemoteErrorKind::BadCard, format!("its card: {e}")))?;
        Ok(Connected {
            client,
            card: Arc::new(card),
        })
    }

    /// Fetches the card with the gateway's credentials, within the card
    /// timeout (kept here too, so that it holds whatever the resolver's HTTP
    /// client does).
    async fn fetch_card(
        &self,
        builder: &ClientBuilder,
        headers: &[(String, String)],
    ) -> Result<AgentCard, RemoteError> {
        let config = &self.config;
        let mut resolver = builder.resolver().timeout(config.card_timeout);
        for (name, value) in headers {
            resolver = resolver.header(name, value);
        }
        let url = resolver.card_url(&config.url);
        let fetched = tokio::time::timeout(config.card_timeout, resolver.resolve(&config.url))
            .await
            .map_err(|_| {
                self.error(
                    RemoteErrorKind::Timeout,
                    format!(
                        "fetching the card at {url}: no answer within {:?}",
                        config.card_timeout
                    ),
                )
            })?;
        fetched.map_err(|e| {
            let err = RemoteError::from_client(&self.agent, &config.url, "fetching the card", &e);
            match err.kind() {
                // Unreachable or too slow says where to look; anything else
                // is what was found at the URL.
                RemoteErrorKind::Unreachable | RemoteErrorKind::Timeout => err,
                _ => self.error(
                    RemoteErrorKind::BadCard,
                    format!("fetching the card at {url}: {e}"),
                ),
            }
        })
    }
}
