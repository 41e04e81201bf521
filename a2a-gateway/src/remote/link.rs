//! The gateway's connection to one remote agent: its card and a client for
//! it, made on first use and again after a failure, so that a remote that is
//! down when the gateway starts does not stop the gateway.

use std::sync::Arc;

use a2a_client::{CallOptions, Client, ClientBuilder, HttpSettings, RetryPolicy};
use a2a_core::AgentCard;
use a2a_server::push::{AddressPolicy, GuardedResolver};
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
        let configured = url::Url::parse(&config.url)
            .map_err(|e| self.error(RemoteErrorKind::Config, format!("its URL: {e}")))?;
        let policy = config.effective_address_policy();
        self.check_address(&configured, &policy).await?;
        // The client crate's default HTTP client has a fixed connect timeout;
        // this one keeps the agent's. It connects only to addresses the
        // policy permits, checked when the name is resolved (no window for
        // the name to change in between), never through a proxy (which
        // would connect to addresses nobody checked), and follows a redirect
        // only within its origin: the gateway's credentials (an API key in a
        // header of the remote's choosing too) never leave it that way.
        let resolver = Arc::new(GuardedResolver::new(policy.clone()));
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .no_proxy()
            .dns_resolver(resolver.clone())
            .redirect(same_origin_redirects())
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
        // gRPC connections resolve through the same guard.
        let grpc = a2a_grpc::GrpcSettings::default().dns_resolver(resolver);
        let builder =
            a2a_grpc::register_with(ClientBuilder::with_http_client(http, settings), grpc)
                .prefer(config.bindings.iter().cloned())
                .default_options(defaults.clone())
                // The executor bounds and follows every call itself.
                .retry(RetryPolicy::none())
                .track_blocking_sends(false);
        let mut card = match &config.card {
            Some(card) => card.clone(),
            None => {
                let fetched = self.fetch_card(&builder, &defaults.headers).await?;
                self.on_configured_origins(fetched, &configured)?
            }
        };
        self.on_permitted_addresses(&mut card, &policy).await?;
        let client = builder
            .build(card.clone())
            .map_err(|e| self.error(RemoteErrorKind::BadCard, format!("its card: {e}")))?;
        Ok(Connected {
            client,
            card: Arc::new(card),
        })
    }

    /// The origins a fetched card's interfaces may be at: the configured
    /// URL's, and those the config lists.
    fn origins(&self, configured: &url::Url) -> Result<Vec<url::Origin>, RemoteError> {
        let mut origins = vec![configured.origin()];
        for origin in &self.config.allowed_origins {
            let url = url::Url::parse(origin).map_err(|e| {
                self.error(
                    RemoteErrorKind::Config,
                    format!("allowed origin {origin:?}: {e}"),
                )
            })?;
            origins.push(url.origin());
        }
        Ok(origins)
    }

    /// Keeps the card's interfaces that are on the configured origins: a
    /// card is the remote's word, and must not send the gateway (with its
    /// credentials) anywhere else.
    fn on_configured_origins(
        &self,
        mut card: AgentCard,
        configured: &url::Url,
    ) -> Result<AgentCard, RemoteError> {
        let origins = self.origins(configured)?;
        let mut elsewhere = Vec::new();
        card.supported_interfaces.retain(|interface| {
            let kept =
                interface_url(&interface.url).is_some_and(|url| origins.contains(&url.origin()));
            if !kept {
                elsewhere.push(interface.url.clone());
            }
            kept
        });
        if !elsewhere.is_empty() {
            tracing::warn!(agent = %self.agent, ?elsewhere, "ignoring the remote card's interfaces that are not on the configured origin (list others in allowed_origins)");
        }
        if card.supported_interfaces.is_empty() {
            return Err(self.error(
                RemoteErrorKind::BadCard,
                format!(
                    "its card names no interface on the configured origin ({} named elsewhere; list other origins in allowed_origins to use them)",
                    elsewhere.len()
                ),
            ));
        }
        Ok(card)
    }

    /// Keeps the card's interfaces whose hosts the address policy permits.
    /// Connections (HTTP and gRPC) are checked again when made, by the
    /// guarded resolver.
    async fn on_permitted_addresses(
        &self,
        card: &mut AgentCard,
        policy: &AddressPolicy,
    ) -> Result<(), RemoteError> {
        let mut refused = None;
        let mut kept = Vec::with_capacity(card.supported_interfaces.len());
        for interface in std::mem::take(&mut card.supported_interfaces) {
            let checked = match interface_url(&interface.url) {
                Some(url) => self.check_address(&url, policy).await,
                None => Err(self.error(
                    RemoteErrorKind::BadCard,
                    format!("its card names an unusable URL {:?}", interface.url),
                )),
            };
            match checked {
                Ok(()) => kept.push(interface),
                Err(err) => refused = Some(err),
            }
        }
        card.supported_interfaces = kept;
        match refused {
            Some(err) if card.supported_interfaces.is_empty() => Err(err),
            _ => Ok(()),
        }
    }

    /// Checks the host of `url` against the policy: an IP address as it is,
    /// a name by resolving it (every address must be permitted).
    async fn check_address(
        &self,
        url: &url::Url,
        policy: &AddressPolicy,
    ) -> Result<(), RemoteError> {
        let refused = |why: String| {
            self.error(
                RemoteErrorKind::Config,
                format!("{why}; list its network in allowed_networks to reach it"),
            )
        };
        let Some(host) = url.host() else {
            return Err(self.error(RemoteErrorKind::Config, format!("{url} has no host")));
        };
        policy.check_host(&host).map_err(refused)?;
        let url::Host::Domain(name) = host else {
            return Ok(());
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let addresses = tokio::net::lookup_host((name, port)).await.map_err(|e| {
            self.error(
                RemoteErrorKind::Unreachable,
                format!("resolving {name}: {e}"),
            )
        })?;
        for address in addresses {
            if let Some(why) = policy.refusal(address.ip()) {
                return Err(refused(format!("{name} resolves to {why}")));
            }
        }
        Ok(())
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
            let doing = format!("fetching the card at {url}");
            let err = RemoteError::from_client(&self.agent, &config.url, &doing, &e);
            match err.kind() {
                // Unreachable or too slow says where to look; anything else
                // is what was found at the URL.
                RemoteErrorKind::Unreachable | RemoteErrorKind::Timeout => err,
                _ => err.with_kind(RemoteErrorKind::BadCard),
            }
        })
    }
}

/// An interface's URL: an absolute URL, or `host:port` (gRPC), which the
/// gRPC client reaches as `http://host:port`.
fn interface_url(url: &str) -> Option<url::Url> {
    match url.contains("://") {
        true => url::Url::parse(url).ok(),
        false => url::Url::parse(&format!("http://{url}")).ok(),
    }
}

/// Follows a redirect only to the origin (scheme, host and port) of the
/// request it answers, ten at most; any other is an error.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .last()
            .is_some_and(|previous| previous.origin() == attempt.url().origin());
        if !same_origin {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "a redirect to another origin ({to}) is not followed"
            ))
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    })
}
