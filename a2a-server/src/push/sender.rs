//! `HttpPushSender`: POSTs events to webhooks, guarded against SSRF.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2A_JSON_MEDIA_TYPE, A2aError, StreamResponse, TaskPushNotificationConfig};
use async_trait::async_trait;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION};

use super::ssrf::AddressPolicy;

/// The push token goes in both the 1.0 (Go) and the 0.3 (Python) header, so
/// receivers of either generation find it.
const TOKEN_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("a2a-notification-token"),
    HeaderName::from_static("x-a2a-notification-token"),
];

/// Why a delivery failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The webhook address is not allowed (private, loopback, ...), or the URL is unusable.
    #[error("webhook address refused: {0}")]
    Refused(String),
    /// The webhook answered with a non-success status.
    #[error("webhook answered {0}")]
    Status(u16),
    /// The connection or request failed.
    #[error("delivery failed: {0}")]
    Transport(String),
}

impl PushError {
    fn is_retryable(&self) -> bool {
        match self {
            PushError::Refused(_) => false,
            PushError::Status(status) => *status == 429 || *status >= 500,
            PushError::Transport(_) => true,
        }
    }
}

/// Delivers one event to one webhook.
#[async_trait]
pub trait PushSender: Send + Sync + 'static {
    /// Sends `event` to `config.url` (with retries, if the sender does them).
    async fn send(
        &self,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Result<(), PushError>;

    /// Sends `event`, which produced `version` of its task (none: a snapshot
    /// never stored as a version of its own). Deliveries are at least once
    /// (a node taking a task over sends again what its previous node may
    /// have sent), so a sender should let the receiver tell a repeat: the
    /// HTTP sender adds the header [`EVENT_VERSION_HEADER`]. The default
    /// sends as [`PushSender::send`] does.
    async fn send_version(
        &self,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
        version: Option<u64>,
    ) -> Result<(), PushError> {
        let _ = version;
        self.send(config, event).await
    }
}

/// The header that names the event a push delivers, as `<task id>/<version>`
/// (the task version the event produced). The same value twice is the same
/// event delivered twice, which receivers may drop. Not sent with a task's
/// first snapshot, which is no version of its own.
pub const EVENT_VERSION_HEADER: &str = "a2a-event-version";

/// Settings of [`HttpPushSender`].
#[derive(Debug, Clone)]
pub struct HttpPushSenderConfig {
    /// Which addresses may be contacted (public only by default).
    pub policy: AddressPolicy,
    /// Timeout of one attempt.
    pub timeout: Duration,
    /// Attempts per event, the first included.
    pub attempts: u32,
    /// Wait before the first retry; doubles each time.
    pub backoff: Duration,
    /// Redirects followed per attempt.
    pub max_redirects: usize,
}

impl Default for HttpPushSenderConfig {
    fn default() -> Self {
        HttpPushSenderConfig {
            policy: AddressPolicy::public_only(),
            timeout: Duration::from_secs(15),
            attempts: 3,
            backoff: Duration::from_millis(500),
            max_redirects: 10,
        }
    }
}

/// Resolves host names and drops every address the policy refuses, so the
/// connection is only ever made to a checked address (no DNS-rebinding
/// window). For a `reqwest` client's
/// [`dns_resolver`](reqwest::ClientBuilder::dns_resolver); a host given as an
/// IP address is never resolved, so check it with
/// [`AddressPolicy::check_host`] first (and build the client with
/// `no_proxy()`: a proxy would connect to addresses this never sees).
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    /// A resolver that keeps only the addresses `policy` permits.
    pub fn new(policy: AddressPolicy) -> Self {
        GuardedResolver {
            policy: Arc::new(policy),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|a| policy.permits(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(
                    format!("{host} resolves only to addresses that may not be reached").into(),
                );
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// Sends push notifications over HTTP(S).
#[derive(Debug, Clone)]
pub struct HttpPushSender {
    /// `None` when the guarded client could not be built: then nothing is
    /// sent (an unguarded stand-in would defeat the guard).
    client: Option<reqwest::Client>,
    config: Arc<HttpPushSenderConfig>,
}

impl Default for HttpPushSender {
    fn default() -> Self {
        HttpPushSender::new(HttpPushSenderConfig::default())
    }
}

/// Checks a webhook URL against the policy before it is stored or called.
pub fn check_webhook_url(url: &str, policy: &AddressPolicy) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("invalid webhook url {url:?}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "webhook url must be http or https, not {:?}",
            parsed.scheme()
        ));
    }
    let host = parsed
        .host()
        .ok_or_else(|| format!("webhook url {url:?} has no host"))?;
    policy
        .check_host(&host)
        .map_err(|why| format!("webhook address is not allowed: {why}"))?;
    Ok(parsed)
}

/// Validates a push config from a client: URL, and header-safe token and credentials.
pub fn validate_config(
    config: &TaskPushNotificationConfig,
    policy: &AddressPolicy,
) -> Result<(), A2aError> {
    check_webhook_url(&config.url, policy).map_err(A2aError::invalid_params)?;
    let header_safe = |s: &str| !s.chars().any(|c| c.is_control());
    if !header_safe(&config.token) {
        return Err(A2aError::invalid_params(
            "push token must not contain control characters",
        ));
    }
    if let Some(auth) = &config.authentication {
        if auth.scheme.trim().is_empty() || !header_safe(&auth.scheme) || auth.scheme.contains(' ')
        {
            return Err(A2aError::invalid_params(
                "authentication.scheme must be one token such as Bearer",
            ));
        }
        if !header_safe(&auth.credentials) {
            return Err(A2aError::invalid_params(
                "authentication.credentials must not contain control characters",
            ));
        }
    }
    Ok(())
}

impl HttpPushSender {
    /// A sender with the given settings.
    pub fn new(config: HttpPushSenderConfig) -> Self {
        let resolver = Arc::new(GuardedResolver::new(config.policy.clone()));
        let client = reqwest::Client::builder()
            // A proxy from the environment would connect on the sender's
            // behalf to an address the resolver never checked.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(resolver)
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .build()
            .inspect_err(|err| {
                tracing::error!(error = %err, "the push client could not be built; pushes are off");
            })
            .ok();
        HttpPushSender {
            client,
            config: Arc::new(config),
        }
    }

    /// The address policy in force.
    pub fn policy(&self) -> &AddressPolicy {
        &self.config.policy
    }

    fn headers(config: &TaskPushNotificationConfig) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(A2A_JSON_MEDIA_TYPE));
        if let Some(auth) = &config.authentication {
            let value = if auth.credentials.is_empty() {
                auth.scheme.clone()
            } else {
                format!("{} {}", auth.scheme, auth.credentials)
            };
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(AUTHORIZATION, value);
            }
        }
        if !config.token.is_empty() {
            if let Ok(value) = HeaderValue::from_str(&config.token) {
                for name in TOKEN_HEADERS {
                    headers.insert(name, value.clone());
                }
            }
        }
        headers
    }

    /// One attempt, following redirects by hand so every hop is checked and
    /// credentials never follow the request to another host.
    async fn attempt(
        &self,
        config: &TaskPushNotificationConfig,
        body: &[u8],
        version: Option<&HeaderValue>,
    ) -> Result<(), PushError> {
        let client = self.client.as_ref().ok_or_else(|| {
            PushError::Refused("the push client could not be built at start".into())
        })?;
        let mut url =
            check_webhook_url(&config.url, &self.config.policy).map_err(PushError::Refused)?;
        let origin = url.origin();
        let mut headers = Self::headers(config);
        if let Some(version) = version {
            headers.insert(EVENT_VERSION_HEADER, version.clone());
        }
        // The webhook's own work joins the trace of the task it hears about.
        #[cfg(feature = "otel")]
        crate::telemetry::otel::inject_headers(&tracing::Span::current(), &mut headers);
        for _hop in 0..=self.config.max_redirects {
            let response = client
                .post(url.clone())
                .headers(headers.clone())
                .body(body.to_vec())
                .send()
                .await
                .map_err(|e| PushError::Transport(format!("{e:#}")))?;
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            if !status.is_redirection() {
                return Err(PushError::Status(status.as_u16()));
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or(PushError::Status(status.as_u16()))?;
            let next = url
                .join(location)
                .map_err(|e| PushError::Refused(format!("bad redirect: {e}")))?;
            url = check_webhook_url(next.as_str(), &self.config.policy)
                .map_err(PushError::Refused)?;
            // Another scheme, host or port is another party: the webhook's
            // credentials stay with the one they were given for.
            if url.origin() != origin {
                headers.remove(AUTHORIZATION);
                for name in TOKEN_HEADERS {
                    headers.remove(name);
                }
            }
        }
        Err(PushError::Transport(format!(
            "more than {} redirects",
            self.config.max_redirects
        )))
    }
}

#[async_trait]
impl PushSender for HttpPushSender {
    async fn send(
        &self,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Result<(), PushError> {
        self.send_version(config, event, None).await
    }

    async fn send_version(
        &self,
        config: &TaskPushNotificationConfig,
        event: &StreamResponse,
        version: Option<u64>,
    ) -> Result<(), PushError> {
        let body = serde_json::to_vec(event).map_err(|e| PushError::Transport(e.to_string()))?;
        let version =
            version.and_then(|v| HeaderValue::from_str(&format!("{}/{v}", config.task_id)).ok());
        let mut wait = self.config.backoff;
        let mut attempt = 1;
        loop {
            match self.attempt(config, &body, version.as_ref()).await {
                Ok(()) => return Ok(()),
                Err(err) if err.is_retryable() && attempt < self.config.attempts => {
                    tracing::debug!(url = %config.url, attempt, error = %err, "push delivery failed; retrying");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        }
    }
}
