//! Client interceptors, the auth interceptor, and the retry policy.

use std::collections::BTreeMap;
use std::time::Duration;

use a2a_core::{AgentCard, Method, SecurityScheme, StreamResponse};

#[cfg(test)]
use crate::ClientErrorKind;
use crate::{CallOptions, ClientError};

/// Hooks around every call a [`Client`](crate::Client) makes.
///
/// `before` may change the call's options (headers, query parameters) or refuse
/// the call; `after` sees the outcome; `on_event` sees (and may change) every
/// event of a stream. Closures implement it through [`before_fn`].
pub trait ClientInterceptor: Send + Sync + 'static {
    /// Runs before each attempt of a call.
    fn before(
        &self,
        method: Method,
        options: &mut CallOptions,
        card: Option<&AgentCard>,
    ) -> Result<(), ClientError> {
        let _ = (method, options, card);
        Ok(())
    }

    /// Runs after a call (after its last attempt), with its error if it failed.
    fn after(&self, method: Method, error: Option<&ClientError>) {
        let _ = (method, error);
    }

    /// Runs for every event of a stream.
    fn on_event(&self, method: Method, event: &mut StreamResponse) {
        let _ = (method, event);
    }
}

/// An interceptor from a closure run before each call.
pub fn before_fn<F>(f: F) -> impl ClientInterceptor
where
    F: Fn(Method, &mut CallOptions) -> Result<(), ClientError> + Send + Sync + 'static,
{
    struct BeforeFn<F>(F);
    impl<F> ClientInterceptor for BeforeFn<F>
    where
        F: Fn(Method, &mut CallOptions) -> Result<(), ClientError> + Send + Sync + 'static,
    {
        fn before(
            &self,
            method: Method,
            options: &mut CallOptions,
            _card: Option<&AgentCard>,
        ) -> Result<(), ClientError> {
            (self.0)(method, options)
        }
    }
    BeforeFn(f)
}

/// Fills in credentials for the security schemes the agent card declares.
///
/// Credentials are given per scheme name (the keys of the card's
/// `securitySchemes`): a token for HTTP Bearer, OAuth 2.0 and OpenID Connect,
/// `user:password` (or its base64) for HTTP Basic, the key for API-key schemes
/// (sent in the declared header, query parameter or cookie). The first of the
/// card's `securityRequirements` alternatives for which every scheme has a
/// credential is used; with no requirements, every declared scheme with a
/// credential is applied.
#[derive(Debug, Clone, Default)]
pub struct AuthInterceptor {
    credentials: BTreeMap<String, String>,
}

impl AuthInterceptor {
    /// No credentials yet.
    pub fn new() -> Self {
        AuthInterceptor::default()
    }

    /// Adds the credential for the scheme named `scheme` in the card.
    #[must_use]
    pub fn credential(mut self, scheme: impl Into<String>, value: impl Into<String>) -> Self {
        self.credentials.insert(scheme.into(), value.into());
        self
    }

    fn schemes_to_apply<'c>(&self, card: &'c AgentCard) -> Vec<&'c str> {
        if card.security_requirements.is_empty() {
            return card
                .security_schemes
                .keys()
                .filter(|name| self.credentials.contains_key(*name))
                .map(String::as_str)
                .collect();
        }
        card.security_requirements
            .iter()
            .find(|alternative| {
                !alternative.schemes.is_empty()
                    && alternative
                        .schemes
                        .keys()
                        .all(|name| self.credentials.contains_key(name))
            })
            .map(|alternative| alternative.schemes.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

fn basic(credential: &str) -> String {
    use base64::Engine as _;
    if credential.contains(':') {
        base64::engine::general_purpose::STANDARD.encode(credential)
    } else {
        credential.to_owned()
    }
}

impl ClientInterceptor for AuthInterceptor {
    fn before(
        &self,
        _method: Method,
        options: &mut CallOptions,
        card: Option<&AgentCard>,
    ) -> Result<(), ClientError> {
        let Some(card) = card else { return Ok(()) };
        for name in self.schemes_to_apply(card) {
            let (Some(scheme), Some(credential)) =
                (card.security_schemes.get(name), self.credentials.get(name))
            else {
                continue;
            };
            match scheme {
                SecurityScheme::HttpAuth(http) if http.scheme.eq_ignore_ascii_case("basic") => {
                    options.headers.push((
                        "authorization".into(),
                        format!("Basic {}", basic(credential)),
                    ));
                }
                SecurityScheme::HttpAuth(http) => {
                    let scheme = if http.scheme.is_empty() {
                        "Bearer"
                    } else {
                        http.scheme.as_str()
                    };
                    options
                        .headers
                        .push(("authorization".into(), format!("{scheme} {credential}")));
                }
                SecurityScheme::OAuth2(_) | SecurityScheme::OpenIdConnect(_) => {
                    options
                        .headers
                        .push(("authorization".into(), format!("Bearer {credential}")));
                }
                SecurityScheme::ApiKey(key) => match key.location.to_ascii_lowercase().as_str() {
                    "query" => options.query.push((key.name.clone(), credential.clone())),
                    "cookie" => options
                        .headers
                        .push(("cookie".into(), format!("{}={credential}", key.name))),
                    _ => options.headers.push((key.name.clone(), credential.clone())),
                },
                SecurityScheme::MutualTls(_) => {}
            }
        }
        Ok(())
    }
}

/// When and how calls are retried.
///
/// Connection failures, timeouts and 5xx are retried with exponential backoff
/// (1 s, 2 s, 4 s by default, with ±20 % jitter); a busy server (429, 503, or
/// the busy error on any binding) is retried after the wait it asked for
/// (`Retry-After` in seconds or as a date, or the error's own hint) when given; protocol errors and 401/403/404 are never retried. Only
/// idempotent operations are retried, unless `retry_send_message` is set, and
/// then only for a message with a fixed `messageId` (so the agent can dedupe).
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Wait before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Longest wait between two attempts.
    pub max_delay: Duration,
    /// Fraction of random variation added to each wait (0.2 = ±20 %).
    pub jitter: f64,
    /// Also retry SendMessage (only when the message has a fixed id).
    pub retry_send_message: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            jitter: 0.2,
            retry_send_message: false,
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `retry` (0-based) after `error`, or `None` to give up.
    pub fn delay(&self, retry: u32, error: &ClientError) -> Option<Duration> {
        if retry >= self.max_retries || !error.is_retryable() {
            return None;
        }
        // A server that said when to come back (429, 503, a busy error on
        // any binding) is taken at its word, up to `max_delay`.
        if let Some(wait) = error.retry_after() {
            return Some(wait.min(self.max_delay));
        }
        let exponential = self.base_delay.saturating_mul(1u32 << retry.min(16));
        let spread = exponential.as_secs_f64() * self.jitter * (2.0 * random_unit() - 1.0);
        Some(
            Duration::from_secs_f64((exponential.as_secs_f64() + spread).max(0.0))
                .min(self.max_delay),
        )
    }
}

/// A random number in [0, 1) (jitter only needs to spread clients apart).
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    #[allow(clippy::cast_possible_truncation)]
    hasher.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    #[allow(clippy::cast_precision_loss)]
    let unit = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64;
    unit
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::{ApiKeySecurityScheme, HttpAuthSecurityScheme, SecurityRequirement};

    fn card() -> AgentCard {
        let mut card = AgentCard::new("a", "b");
        card.security_schemes.insert(
            "bearer".into(),
            SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                scheme: "Bearer".into(),
                ..Default::default()
            }),
        );
        card.security_schemes.insert(
            "basic".into(),
            SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                scheme: "Basic".into(),
                ..Default::default()
            }),
        );
        for (name, location) in [("hdr", "header"), ("qry", "query"), ("cky", "cookie")] {
            card.security_schemes.insert(
                name.into(),
                SecurityScheme::ApiKey(ApiKeySecurityScheme {
                    location: location.into(),
                    name: format!("X-{name}"),
                    ..Default::default()
                }),
            );
        }
        card
    }

    fn apply(auth: &AuthInterceptor, card: &AgentCard) -> CallOptions {
        let mut options = CallOptions::default();
        auth.before(Method::GetTask, &mut options, Some(card))
            .unwrap();
        options
    }

    #[test]
    fn credentials_go_where_each_scheme_says() {
        let card = card();
        let auth = AuthInterceptor::new()
            .credential("bearer", "tok")
            .credential("hdr", "k1")
            .credential("qry", "k2")
            .credential("cky", "k3");
        let options = apply(&auth, &card);
        assert!(
            options
                .headers
                .contains(&("authorization".into(), "Bearer tok".into()))
        );
        assert!(options.headers.contains(&("X-hdr".into(), "k1".into())));
        assert!(
            options
                .headers
                .contains(&("cookie".into(), "X-cky=k3".into()))
        );
        assert_eq!(options.query, [("X-qry".to_owned(), "k2".to_owned())]);

        let basic = apply(
            &AuthInterceptor::new().credential("basic", "user:pass"),
            &card,
        );
        assert_eq!(
            basic.headers,
            [("authorization".to_owned(), "Basic dXNlcjpwYXNz".to_owned())]
        );
    }

    #[test]
    fn requirements_pick_the_first_satisfiable_alternative() {
        let mut card = card();
        card.security_requirements = vec![
            SecurityRequirement::single("basic", vec![]),
            SecurityRequirement::single("bearer", vec!["read".into()]),
        ];
        let options = apply(
            &AuthInterceptor::new()
                .credential("bearer", "tok")
                .credential("hdr", "x"),
            &card,
        );
        assert_eq!(
            options.headers,
            [("authorization".to_owned(), "Bearer tok".to_owned())]
        );
        assert!(apply(&AuthInterceptor::new(), &card).headers.is_empty());
    }

    #[test]
    fn retry_classes() {
        let policy = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        let connection = ClientError::new(ClientErrorKind::Connection, "refused");
        let delays: Vec<_> = (0..4).map(|i| policy.delay(i, &connection)).collect();
        assert_eq!(
            delays,
            [
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(2)),
                Some(Duration::from_secs(4)),
                None
            ]
        );
        for status in [401, 403, 404, 400] {
            assert_eq!(
                policy.delay(0, &ClientError::http(status, "no")),
                None,
                "{status}"
            );
        }
        assert_eq!(
            policy.delay(0, &ClientError::http(503, "busy")),
            Some(Duration::from_secs(1))
        );
        let limited =
            ClientError::http(429, "slow down").with_retry_after(Some(Duration::from_secs(7)));
        assert_eq!(policy.delay(0, &limited), Some(Duration::from_secs(7)));
        let protocol = ClientError::from(a2a_core::A2aError::task_not_found("t"));
        assert_eq!(policy.delay(0, &protocol), None);
        let jittery = RetryPolicy::default();
        let wait = jittery.delay(1, &connection).unwrap();
        assert!(
            wait >= Duration::from_millis(1600) && wait <= Duration::from_millis(2400),
            "{wait:?}"
        );
    }
}
