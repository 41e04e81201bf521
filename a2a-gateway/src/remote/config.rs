//! `RemoteAgentConfig`: where a remote agent is, how the gateway proves who
//! it is there, and how long it waits.

use std::net::IpAddr;
use std::time::Duration;

use a2a_core::{AgentCard, binding};
use a2a_server::push::{AddressPolicy, IpNetwork};

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
    /// Origins (`https://agents.example:8443`) besides [`url`](Self::url)'s
    /// where a fetched card's interfaces may be. An interface anywhere else
    /// is not used: the gateway's credentials go to the configured origins
    /// only. (A card given with [`card`](Self::card) is configuration, and
    /// used as it is.)
    pub allowed_origins: Vec<String>,
    /// Which addresses the gateway may connect to for this agent (each name
    /// is resolved, and the connection pinned to a checked address). `None`
    /// (the default): public addresses only, plus the host of
    /// [`url`](Self::url) when it is an IP address, plus loopback when it is
    /// loopback (`localhost`, `127.0.0.1`). An agent in a private network
    /// reached by name needs its network listed (see
    /// [`allow_network`](Self::allow_network)).
    pub address_policy: Option<AddressPolicy>,
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
            allowed_origins: Vec::new(),
            address_policy: None,
        }
    }

    /// The address policy in force: [`address_policy`](Self::address_policy),
    /// or the default made from [`url`](Self::url).
    pub fn effective_address_policy(&self) -> AddressPolicy {
        if let Some(policy) = &self.address_policy {
            return policy.clone();
        }
        let mut policy = AddressPolicy::public_only();
        let Ok(url) = url::Url::parse(&self.url) else {
            return policy;
        };
        match url.host() {
            Some(url::Host::Ipv4(ip)) => policy = policy.allow(IpNetwork::from(IpAddr::V4(ip))),
            Some(url::Host::Ipv6(ip)) => policy = policy.allow(IpNetwork::from(IpAddr::V6(ip))),
            Some(url::Host::Domain(_)) | None => {}
        }
        // A loopback target was configured on purpose (a local setup, a
        // test): loopback stays reachable, and nothing else private.
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            // `localhost` and names under it are the names refused as loopback.
            Some(host @ url::Host::Domain(_)) => {
                AddressPolicy::public_only().check_host(&host).is_err()
            }
            None => false,
        };
        if loopback {
            for network in ["127.0.0.0/8", "::1/128"] {
                if let Ok(network) = network.parse() {
                    policy = policy.allow(network);
                }
            }
        }
        policy
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

    /// Lets a fetched card's interfaces be at `origin` too
    /// ([`allowed_origins`](Self::allowed_origins)).
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Sets the [`address_policy`](Self::address_policy).
    #[must_use]
    pub fn address_policy(mut self, policy: AddressPolicy) -> Self {
        self.address_policy = Some(policy);
        self
    }

    /// Also allows connections into `network` (a private network the agent
    /// is in, `10.0.0.0/8` say), on top of the default policy.
    #[must_use]
    pub fn allow_network(mut self, network: IpNetwork) -> Self {
        let policy = self.effective_address_policy().allow(network);
        self.address_policy = Some(policy);
        self
    }

    /// Sets [`streaming`](Self::streaming).
    #[must_use]
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn permits(url: &str, ip: &str) -> bool {
        RemoteAgentConfig::new(url)
            .effective_address_policy()
            .permits(ip.parse().unwrap())
    }

    #[test]
    fn the_default_policy_follows_the_configured_url() {
        // Loopback configured: loopback allowed, nothing else private.
        for url in [
            "http://localhost:8080",
            "http://127.0.0.1:9",
            "http://[::1]:9",
        ] {
            assert!(permits(url, "127.0.0.1") && permits(url, "::1"), "{url}");
            assert!(
                !permits(url, "10.0.0.1") && !permits(url, "169.254.169.254"),
                "{url}"
            );
        }
        // A private address configured: that one only.
        assert!(permits("http://10.1.2.3:9000", "10.1.2.3"));
        assert!(!permits("http://10.1.2.3:9000", "10.1.2.4"));
        assert!(!permits("http://10.1.2.3:9000", "127.0.0.1"));
        // A name: public addresses only, unless networks are listed.
        assert!(!permits("https://agents.example", "127.0.0.1"));
        assert!(permits("https://agents.example", "8.8.8.8"));
        let listed = RemoteAgentConfig::new("https://agents.example")
            .allow_network("10.0.0.0/8".parse().unwrap())
            .effective_address_policy();
        assert!(listed.permits(IpAddr::from([10, 9, 8, 7])));
        assert!(!listed.permits(IpAddr::from([192, 168, 0, 1])));
    }
}
