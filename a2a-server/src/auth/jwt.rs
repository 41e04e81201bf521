//! JWT bearer tokens checked against keys from a JWKS URL.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_core::{A2aError, ErrorKind, SecurityScheme};
use async_trait::async_trait;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::{Authenticate, Principal, bearer_scheme, bearer_token, unauthenticated};
use crate::{CallContext, User};

/// How long fetched keys are used before they are fetched again.
const KEYS_MAX_AGE: Duration = Duration::from_secs(600);
/// The least time between two fetches: a token with an unknown `kid` must
/// not make every request fetch the key set.
const MIN_REFETCH: Duration = Duration::from_secs(30);
/// The largest key set read.
const MAX_JWKS_BYTES: usize = 256 * 1024;

type PrincipalOf = dyn Fn(&Value) -> Option<Principal> + Send + Sync;

/// A key usable for verification, with the algorithms it may verify.
struct Key {
    decoding: DecodingKey,
    /// The claim checks, narrowed to the algorithms this key may verify
    /// (built once per fetched key, not per request).
    validation: Validation,
}

#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, Arc<Key>>,
    /// Keys without a `kid`: tried in turn for tokens without one.
    anonymous: Vec<Arc<Key>>,
    fetched: Option<Instant>,
}

/// JWT bearer tokens: signature (keys from a JWKS URL, cached, fetched again
/// when a token names an unknown `kid`), `exp`, `nbf`, `aud` and `iss`.
///
/// The identity is the `sub` claim; a `tenants` claim (an array of strings)
/// restricts it to those tenants. [`JwtAuth::principal`] changes that rule.
pub struct JwtAuth {
    jwks_url: String,
    client: reqwest::Client,
    validation: Validation,
    principal: Arc<PrincipalOf>,
    cache: tokio::sync::RwLock<KeyCache>,
    min_refetch: Duration,
    /// Held while fetching, so concurrent misses fetch once.
    fetching: tokio::sync::Mutex<()>,
    /// Tokens already verified, with their claims, until they expire or
    /// `verified_ttl` passes: a client sends the same token on every call,
    /// and a signature check costs more than the rest of a call.
    verified: std::sync::Mutex<HashMap<String, (Arc<Value>, tokio::time::Instant)>>,
    verified_ttl: Duration,
}

/// How long a verified token is trusted without checking it again (so a key
/// removed from the JWKS stops working within this).
const VERIFIED_TTL: Duration = Duration::from_secs(60);
/// The most verified tokens remembered.
const VERIFIED_MAX: usize = 10_000;

impl std::fmt::Debug for JwtAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuth")
            .field("jwks_url", &self.jwks_url)
            .field("audience", &self.validation.aud)
            .field("issuer", &self.validation.iss)
            .finish()
    }
}

/// The default identity of a token: `sub`, limited to `tenants` if present.
fn principal_from_claims(claims: &Value) -> Option<Principal> {
    let subject = claims.get("sub")?.as_str().filter(|s| !s.is_empty())?;
    let principal = Principal::new(subject);
    match claims.get("tenants") {
        None => Some(principal),
        Some(Value::Array(tenants)) => Some(
            principal.allow_tenants(tenants.iter().filter_map(Value::as_str).map(str::to_owned)),
        ),
        // A malformed restriction must not become "any tenant".
        Some(_) => None,
    }
}

/// The algorithms a key of this kind may verify (a key of one family is
/// never used with another: no HMAC with an RSA public key as the secret).
fn algorithms_of(params: &AlgorithmParameters) -> Vec<Algorithm> {
    use Algorithm::*;
    match params {
        AlgorithmParameters::RSA(_) => vec![RS256, RS384, RS512, PS256, PS384, PS512],
        AlgorithmParameters::EllipticCurve(_) => vec![ES256, ES384],
        AlgorithmParameters::OctetKey(_) => vec![HS256, HS384, HS512],
        AlgorithmParameters::OctetKeyPair(_) => vec![EdDSA],
    }
}

impl JwtAuth {
    /// Tokens signed by the keys at `jwks_url`, for `audience`, from `issuer`.
    pub fn new(
        jwks_url: impl Into<String>,
        audience: impl Into<String>,
        issuer: impl Into<String>,
    ) -> Self {
        // Any algorithm here; each key narrows it to its own family.
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_audience(&[audience.into()]);
        validation.set_issuer(&[issuer.into()]);
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "aud", "iss", "sub"]);
        validation.leeway = 30;
        JwtAuth {
            jwks_url: jwks_url.into(),
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
            validation,
            principal: Arc::new(principal_from_claims),
            cache: tokio::sync::RwLock::new(KeyCache::default()),
            min_refetch: MIN_REFETCH,
            fetching: tokio::sync::Mutex::new(()),
            verified: std::sync::Mutex::new(HashMap::new()),
            verified_ttl: VERIFIED_TTL,
        }
    }

    /// Derives the identity (and its tenants) from the verified claims;
    /// `None` refuses the token.
    #[must_use]
    pub fn principal(
        mut self,
        principal: impl Fn(&Value) -> Option<Principal> + Send + Sync + 'static,
    ) -> Self {
        self.principal = Arc::new(principal);
        self
    }

    /// How long a verified token is trusted before its signature and claims
    /// are checked again (default 60 s; never past its `exp`). Zero checks
    /// every call.
    #[must_use]
    pub fn verified_ttl(mut self, ttl: Duration) -> Self {
        self.verified_ttl = ttl;
        self
    }

    /// The claims of `token`: remembered if it was verified lately, else
    /// verified now (and remembered).
    async fn claims(&self, token: &str) -> Result<Arc<Value>, A2aError> {
        let now = tokio::time::Instant::now();
        if let Some((claims, until)) = self.lock_verified().get(token) {
            if *until > now {
                return Ok(claims.clone());
            }
        }
        let claims = Arc::new(self.verify(token).await?);
        if !self.verified_ttl.is_zero() {
            // Never trusted past its expiry (without the leeway).
            let left = claims
                .get("exp")
                .and_then(Value::as_u64)
                .and_then(|exp| {
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()?
                        .as_secs();
                    exp.checked_sub(now)
                })
                .map_or(Duration::ZERO, Duration::from_secs);
            let keep = self.verified_ttl.min(left);
            if !keep.is_zero() {
                let mut verified = self.lock_verified();
                if verified.len() >= VERIFIED_MAX {
                    verified.retain(|_, (_, until)| *until > now);
                    if verified.len() >= VERIFIED_MAX {
                        verified.clear();
                    }
                }
                verified.insert(token.to_owned(), (claims.clone(), now + keep));
            }
        }
        Ok(claims)
    }

    fn lock_verified(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<Value>, tokio::time::Instant)>> {
        self.verified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Clock skew allowed on `exp` and `nbf` (default 30 s).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.validation.leeway = leeway.as_secs();
        self
    }

    /// The least time between two fetches of the key set (default 30 s):
    /// a token with an unknown `kid` fetches at most this often.
    #[must_use]
    pub fn min_refetch(mut self, interval: Duration) -> Self {
        self.min_refetch = interval;
        self
    }

    async fn cached_key(&self, kid: Option<&str>) -> (Vec<Arc<Key>>, bool) {
        let cache = self.cache.read().await;
        let fresh = cache.fetched.is_some_and(|at| at.elapsed() < KEYS_MAX_AGE);
        let keys = match kid {
            Some(kid) => cache.keys.get(kid).cloned().into_iter().collect(),
            None => cache.anonymous.clone(),
        };
        (keys, fresh)
    }

    /// The keys for `kid`, fetching the set when they are unknown or stale.
    async fn keys_for(&self, kid: Option<&str>) -> Vec<Arc<Key>> {
        let (keys, fresh) = self.cached_key(kid).await;
        if !keys.is_empty() && fresh {
            return keys;
        }
        let _fetching = self.fetching.lock().await;
        // Someone may have fetched while this call waited.
        let recently = self
            .cache
            .read()
            .await
            .fetched
            .is_some_and(|at| at.elapsed() < self.min_refetch);
        if !recently {
            match self.fetch().await {
                Ok(fetched) => *self.cache.write().await = fetched,
                Err(err) => {
                    tracing::warn!(url = %self.jwks_url, error = %err, "fetching the JWKS failed");
                    // Stale keys still verify until a fetch succeeds.
                }
            }
        }
        self.cached_key(kid).await.0
    }

    async fn fetch(&self) -> Result<KeyCache, String> {
        let mut response = self
            .client
            .get(&self.jwks_url)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("key set larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let set: JwkSet = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let mut cache = KeyCache {
            fetched: Some(Instant::now()),
            ..KeyCache::default()
        };
        for jwk in &set.keys {
            let Ok(decoding) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let mut algorithms = algorithms_of(&jwk.algorithm);
            if let Some(declared) = jwk.common.key_algorithm {
                // The key names its one algorithm: hold it to that.
                let declared = format!("{declared:?}");
                algorithms.retain(|a| format!("{a:?}") == declared);
            }
            if algorithms.is_empty() {
                continue;
            }
            let mut validation = self.validation.clone();
            validation.algorithms = algorithms;
            let key = Arc::new(Key {
                decoding,
                validation,
            });
            match &jwk.common.key_id {
                Some(kid) => {
                    cache.keys.insert(kid.clone(), key);
                }
                None => cache.anonymous.push(key),
            }
        }
        Ok(cache)
    }

    /// The verified claims of `token`.
    async fn verify(&self, token: &str) -> Result<Value, A2aError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| unauthenticated("the bearer token is not a JWT"))?;
        let keys = self.keys_for(header.kid.as_deref()).await;
        let mut last = unauthenticated("no key verifies the token");
        for key in keys {
            if !key.validation.algorithms.contains(&header.alg) {
                continue;
            }
            match jsonwebtoken::decode::<Value>(token, &key.decoding, &key.validation) {
                Ok(data) => return Ok(data.claims),
                Err(err) => last = unauthenticated(&rejection(&err)),
            }
        }
        Err(last)
    }
}

/// What to tell a caller whose token failed (never the key or the token).
fn rejection(err: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as Jwt;
    match err.kind() {
        Jwt::ExpiredSignature => "the token has expired".to_owned(),
        Jwt::ImmatureSignature => "the token is not valid yet".to_owned(),
        Jwt::InvalidAudience => "the token is for another audience".to_owned(),
        Jwt::InvalidIssuer => "the token is from another issuer".to_owned(),
        Jwt::InvalidSignature => "the token's signature is not valid".to_owned(),
        Jwt::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        _ => "the token is not valid".to_owned(),
    }
}

#[async_trait]
impl Authenticate for JwtAuth {
    async fn authenticate(&self, ctx: &CallContext) -> Result<User, A2aError> {
        let token =
            bearer_token(ctx).ok_or_else(|| unauthenticated("a bearer token is required"))?;
        let claims = self.claims(token).await?;
        (self.principal)(&claims)
            .ok_or_else(|| {
                A2aError::new(
                    ErrorKind::Unauthenticated,
                    "the token names no identity this agent accepts",
                )
            })?
            .admit(&ctx.tenant)
    }

    fn security_schemes(&self) -> Vec<(String, SecurityScheme)> {
        vec![("jwt".to_owned(), bearer_scheme("JWT"))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_default_identity_is_sub_and_a_tenants_claim_limits_it() {
        let open = principal_from_claims(&json!({"sub": "alice"})).unwrap();
        assert!(open.may_use("anything"));
        let limited = principal_from_claims(&json!({"sub": "alice", "tenants": ["a"]})).unwrap();
        assert!(limited.may_use("a") && !limited.may_use("b"));
        // A restriction that cannot be read must not widen into "any tenant".
        assert!(principal_from_claims(&json!({"sub": "alice", "tenants": "a"})).is_none());
        assert!(principal_from_claims(&json!({"sub": ""})).is_none());
        assert!(principal_from_claims(&json!({})).is_none());
    }

    #[test]
    fn a_key_verifies_only_its_own_family() {
        let oct: jsonwebtoken::jwk::Jwk = serde_json::from_value(json!({
            "kty": "oct", "k": "c2VjcmV0"
        }))
        .unwrap();
        let algorithms = algorithms_of(&oct.algorithm);
        assert!(algorithms.contains(&Algorithm::HS256));
        assert!(!algorithms.contains(&Algorithm::RS256));
    }
}
