//! `CardResolver`: fetches an agent card.

use std::time::Duration;

use a2a_core::{AGENT_CARD_PATH, AgentCard};

use crate::ClientError;

/// The largest agent card read (4 MiB: cards are a few kilobytes; a larger
/// answer is not a card).
pub const MAX_CARD_SIZE: usize = 4 * 1024 * 1024;

/// Fetches agent cards over HTTP.
#[derive(Debug, Clone)]
pub struct CardResolver {
    http: reqwest::Client,
    path: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl Default for CardResolver {
    fn default() -> Self {
        CardResolver::new()
    }
}

impl CardResolver {
    /// Resolves from the well-known path with a 30 s timeout.
    pub fn new() -> Self {
        CardResolver::with_client(crate::http::default_client())
    }

    /// Resolves with the given HTTP client (one that trusts a private CA,
    /// say; [`ClientBuilder::resolver`](crate::ClientBuilder::resolver) gives
    /// the builder's).
    pub fn with_client(http: reqwest::Client) -> Self {
        CardResolver {
            http,
            path: AGENT_CARD_PATH.to_owned(),
            headers: Vec::new(),
            timeout: Duration::from_secs(30),
        }
    }

    /// Uses another path than `/.well-known/agent-card.json`.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sends an extra header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The URL the card is fetched from for `base_url`. A URL that already ends
    /// in `.json` is taken as the card's own URL.
    pub fn card_url(&self, base_url: &str) -> String {
        if base_url.ends_with(".json") {
            return base_url.to_owned();
        }
        let origin = base_url.trim_end_matches('/');
        let path = if self.path.starts_with('/') {
            self.path.clone()
        } else {
            format!("/{}", self.path)
        };
        format!("{origin}{path}")
    }

    /// Fetches and parses the card. With the crate feature `v03`, either
    /// form (see `a2a_core::v03::parse_any_card`), and an agent without a
    /// card at the default path is asked at the 0.3-era
    /// `/.well-known/agent.json`.
    pub async fn resolve(&self, base_url: &str) -> Result<AgentCard, ClientError> {
        let first = self.resolve_at(self.card_url(base_url)).await;
        #[cfg(feature = "v03")]
        if let Err(err) = &first {
            if err.status() == Some(404)
                && self.path == AGENT_CARD_PATH
                && !base_url.ends_with(".json")
            {
                let legacy = CardResolver {
                    path: a2a_core::v03::LEGACY_AGENT_CARD_PATH.to_owned(),
                    ..self.clone()
                };
                // The first answer says more when the older name is missing too.
                if let Ok(card) = legacy.resolve_at(legacy.card_url(base_url)).await {
                    return Ok(card);
                }
            }
        }
        first
    }

    async fn resolve_at(&self, url: String) -> Result<AgentCard, ClientError> {
        let mut request = self.http.get(&url).timeout(self.timeout);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(ClientError::from_reqwest)?;
        let status = response.status();
        if !status.is_success() {
            return Err(ClientError::http(
                status.as_u16(),
                format!("fetching {url}: HTTP {status}"),
            ));
        }
        let bytes = crate::http::read_limited(response, MAX_CARD_SIZE).await?;
        // A 0.3 agent's card comes in the 0.3 form; read as 1.0, its
        // interfaces say 0.3, and the client speaks 0.3 to them.
        #[cfg(feature = "v03")]
        let card = a2a_core::v03::parse_any_card(&bytes);
        #[cfg(not(feature = "v03"))]
        let card = a2a_core::protojson::decode::<AgentCard>(&bytes);
        card.map_err(|e| ClientError::decode(format!("agent card at {url}: {e}")))
    }
}
