//! Ready authenticators, and the trait a service enforces them through.
//!
//! A service given an [`Authenticate`] (see [`A2aService::with_authentication`])
//! runs it first on every call of every binding: a call without valid
//! credentials is refused with [`ErrorKind::Unauthenticated`] (HTTP 401 with
//! `WWW-Authenticate`, gRPC `UNAUTHENTICATED`, JSON-RPC -31401) before
//! anything else looks at it, and an identity asking for a tenant it may not
//! use is refused with [`ErrorKind::Unauthorized`] (HTTP 403, gRPC
//! `PERMISSION_DENIED`, JSON-RPC -31403).
//!
//! The bindings run it on the request head first, before a byte of the body
//! is read (see [`A2aService::authenticate_head`]): a caller without valid
//! credentials never makes the server read, hold or parse a body.
//!
//! Without authentication every caller is the same anonymous user and shares
//! one space of tasks per tenant.
//!
//! [`A2aService::with_authentication`]: crate::A2aService::with_authentication
//! [`A2aService::authenticate_head`]: crate::A2aService::authenticate_head

use std::collections::HashMap;
use std::sync::Arc;

use a2a_core::{
    A2aError, ApiKeySecurityScheme, ErrorKind, HttpAuthSecurityScheme, SecurityRequirement,
    SecurityScheme,
};
use async_trait::async_trait;
use axum::http::HeaderName;

use crate::{CallContext, User};

mod jwt;

pub use self::jwt::JwtAuth;

/// Decides who is calling, and whether they may use the tenant they ask for.
#[async_trait]
pub trait Authenticate: Send + Sync + 'static {
    /// The caller of `ctx` (`ctx.tenant` is the tenant the call asks for).
    ///
    /// Missing or invalid credentials: [`ErrorKind::Unauthenticated`]; a
    /// known identity outside its tenants: [`ErrorKind::Unauthorized`].
    async fn authenticate(&self, ctx: &CallContext) -> Result<User, A2aError>;

    /// The schemes a card declares for this authenticator, by name.
    fn security_schemes(&self) -> Vec<(String, SecurityScheme)>;

    /// Whether [`Authenticate::authenticate`] can decide from a request's
    /// head alone, as the bindings first ask it to: before any byte of the
    /// body is read, with a context of the head's headers and query, and the
    /// method and tenant only when the head names them (see
    /// [`crate::A2aService::authenticate_head`]). True by default: who a
    /// caller is comes from its credentials. An authenticator that needs the
    /// method or what only the body says returns false; its calls are then
    /// authenticated once the body is read, and callers it refuses can make
    /// the server read their bodies.
    fn decides_on_head(&self) -> bool {
        true
    }
}

/// What [`crate::A2aService::authenticate_head`] found: the caller, for a
/// call that turns out to be for the tenant the head was checked for, so
/// that [`crate::A2aService::call_checked`] verifies credentials once.
/// The default is "nothing found": the call authenticates by itself.
#[derive(Debug, Clone, Default)]
pub struct HeadCheck {
    admitted: Option<Admitted>,
}

#[derive(Debug, Clone)]
struct Admitted {
    user: User,
    tenant: String,
    /// The authenticator that admitted the caller, by address: a routed
    /// call may end at a service that authenticates otherwise.
    by: usize,
}

/// The address of an authenticator, to tell one from another.
fn identity_of(auth: &Arc<dyn Authenticate>) -> usize {
    Arc::as_ptr(auth).cast::<()>() as usize
}

impl HeadCheck {
    pub(crate) fn admitted(user: User, tenant: &str, by: &Arc<dyn Authenticate>) -> Self {
        HeadCheck {
            admitted: Some(Admitted {
                user,
                tenant: tenant.to_owned(),
                by: identity_of(by),
            }),
        }
    }

    /// The caller `by` admitted on the head, if the call is for the tenant
    /// the head was checked for.
    pub(crate) fn user_for(self, by: &Arc<dyn Authenticate>, tenant: &str) -> Option<User> {
        self.admitted
            .filter(|admitted| admitted.by == identity_of(by) && admitted.tenant == tenant)
            .map(|admitted| admitted.user)
    }

    /// Whether the head's caller was admitted (false also when the head
    /// was not checked).
    pub fn is_admitted(&self) -> bool {
        self.admitted.is_some()
    }
}

/// An identity a credential stands for, and the tenants it may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    name: String,
    /// `None`: any tenant.
    tenants: Option<Vec<String>>,
}

impl Principal {
    /// An identity allowed in every tenant.
    pub fn new(name: impl Into<String>) -> Self {
        Principal {
            name: name.into(),
            tenants: None,
        }
    }

    /// Restricts the identity to `tenants` (`""` is the default tenant).
    #[must_use]
    pub fn allow_tenants<I, S>(mut self, tenants: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tenants = Some(tenants.into_iter().map(Into::into).collect());
        self
    }

    /// The identity's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the identity may use `tenant`.
    pub fn may_use(&self, tenant: &str) -> bool {
        self.tenants
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|t| t == tenant))
    }

    /// The user for a call asking for `tenant`, or the refusal.
    pub fn admit(&self, tenant: &str) -> Result<User, A2aError> {
        if self.may_use(tenant) {
            Ok(User::authenticated(self.name.clone()))
        } else {
            Err(A2aError::new(
                ErrorKind::Unauthorized,
                format!("this identity may not use tenant {tenant:?}"),
            ))
        }
    }
}

fn unauthenticated(message: &str) -> A2aError {
    A2aError::new(ErrorKind::Unauthenticated, message)
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer_token(ctx: &CallContext) -> Option<&str> {
    let value = ctx.service_params.authorization()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Compares two secrets in time independent of where they differ.
fn secrets_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

type TokenVerifier = dyn Fn(&str) -> Option<Principal> + Send + Sync;

/// Bearer tokens (`Authorization: Bearer <token>`): a fixed list, or a
/// verifier callback for tokens checked elsewhere.
#[derive(Clone)]
pub struct BearerAuth {
    tokens: Vec<(String, Principal)>,
    verifier: Option<Arc<TokenVerifier>>,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the tokens themselves.
        f.debug_struct("BearerAuth")
            .field("tokens", &self.tokens.len())
            .field("verifier", &self.verifier.is_some())
            .finish()
    }
}

impl BearerAuth {
    /// No token accepted yet; add some with [`BearerAuth::token`].
    pub fn new() -> Self {
        BearerAuth {
            tokens: Vec::new(),
            verifier: None,
        }
    }

    /// Accepts `token` as `principal`.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>, principal: Principal) -> Self {
        self.tokens.push((token.into(), principal));
        self
    }

    /// Accepts the tokens `verify` maps to an identity (after the fixed list).
    #[must_use]
    pub fn verifier(
        mut self,
        verify: impl Fn(&str) -> Option<Principal> + Send + Sync + 'static,
    ) -> Self {
        self.verifier = Some(Arc::new(verify));
        self
    }

    /// The identity `token` stands for in the fixed list, borrowed: the
    /// caller is admitted from it without a copy.
    fn listed(&self, token: &str) -> Option<&Principal> {
        // Every entry is compared so the time taken says nothing about which matched.
        let mut found = None;
        for (known, principal) in &self.tokens {
            if secrets_equal(known.as_bytes(), token.as_bytes()) && found.is_none() {
                found = Some(principal);
            }
        }
        found
    }
}

impl Default for BearerAuth {
    fn default() -> Self {
        BearerAuth::new()
    }
}

#[async_trait]
impl Authenticate for BearerAuth {
    async fn authenticate(&self, ctx: &CallContext) -> Result<User, A2aError> {
        let token =
            bearer_token(ctx).ok_or_else(|| unauthenticated("a bearer token is required"))?;
        if let Some(principal) = self.listed(token) {
            return principal.admit(&ctx.tenant);
        }
        self.verifier
            .as_ref()
            .and_then(|verify| verify(token))
            .ok_or_else(|| unauthenticated("the bearer token is not valid"))?
            .admit(&ctx.tenant)
    }

    fn security_schemes(&self) -> Vec<(String, SecurityScheme)> {
        vec![("bearer".to_owned(), bearer_scheme(""))]
    }
}

/// An [`Authenticate`] made of a closure: the quick way to write your own
/// check, and the same path as the ready authenticators (it runs first, on
/// every call of every binding). The closure sees the call (its service
/// parameters and the tenant asked for) and returns the caller, or refuses
/// with [`ErrorKind::Unauthenticated`] / [`ErrorKind::Unauthorized`].
///
/// Returning [`User::anonymous`] lets an anonymous caller through, unless a
/// scheme is declared ([`AuthFn::scheme`]): a card that declares security
/// admits only authenticated callers.
///
/// ```
/// use a2a_server::{User, auth};
/// let auth = auth::from_fn(|ctx| match ctx.service_params.get("authorization") {
///     Some("Bearer secret") => Ok(User::authenticated("alice")),
///     Some(_) => Err(a2a_core::ErrorKind::Unauthenticated.into()),
///     None => Ok(User::anonymous()),
/// });
/// # let _ = auth;
/// ```
pub fn from_fn<F>(authenticate: F) -> AuthFn<F>
where
    F: Fn(&CallContext) -> Result<User, A2aError> + Send + Sync + 'static,
{
    AuthFn {
        authenticate,
        schemes: Vec::new(),
    }
}

/// The [`Authenticate`] built by [`from_fn`].
pub struct AuthFn<F> {
    authenticate: F,
    schemes: Vec<(String, SecurityScheme)>,
}

impl<F> std::fmt::Debug for AuthFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthFn")
            .field("schemes", &self.schemes.len())
            .finish_non_exhaustive()
    }
}

impl<F> AuthFn<F> {
    /// Declares a scheme on the card under `name`: callers learn how to
    /// authenticate, and anonymous calls are refused.
    #[must_use]
    pub fn scheme(mut self, name: impl Into<String>, scheme: SecurityScheme) -> Self {
        self.schemes.push((name.into(), scheme));
        self
    }
}

#[async_trait]
impl<F> Authenticate for AuthFn<F>
where
    F: Fn(&CallContext) -> Result<User, A2aError> + Send + Sync + 'static,
{
    async fn authenticate(&self, ctx: &CallContext) -> Result<User, A2aError> {
        (self.authenticate)(ctx)
    }

    fn security_schemes(&self) -> Vec<(String, SecurityScheme)> {
        self.schemes.clone()
    }
}

/// An HTTP bearer scheme for a card.
pub(crate) fn bearer_scheme(format: &str) -> SecurityScheme {
    SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
        description: String::new(),
        scheme: "Bearer".to_owned(),
        bearer_format: format.to_owned(),
    })
}

/// API keys carried in a request header (`X-API-Key: <key>`, say).
#[derive(Clone)]
pub struct ApiKeyAuth {
    header: HeaderName,
    keys: HashMap<String, Principal>,
}

impl std::fmt::Debug for ApiKeyAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyAuth")
            .field("header", &self.header)
            .field("keys", &self.keys.len())
            .finish()
    }
}

/// A header name an API key cannot travel in.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0:?} is not a valid header name")]
pub struct InvalidHeaderName(String);

impl ApiKeyAuth {
    /// Keys read from header `header` (case-insensitive).
    pub fn new(header: &str) -> Result<Self, InvalidHeaderName> {
        let header = HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| InvalidHeaderName(header.to_owned()))?;
        Ok(ApiKeyAuth {
            header,
            keys: HashMap::new(),
        })
    }

    /// Accepts `key` as `principal`.
    #[must_use]
    pub fn key(mut self, key: impl Into<String>, principal: Principal) -> Self {
        self.keys.insert(key.into(), principal);
        self
    }
}

#[async_trait]
impl Authenticate for ApiKeyAuth {
    async fn authenticate(&self, ctx: &CallContext) -> Result<User, A2aError> {
        let given = ctx
            .service_params
            .get(self.header.as_str())
            .ok_or_else(|| unauthenticated("an API key is required"))?;
        let mut found = None;
        for (key, principal) in &self.keys {
            if secrets_equal(key.as_bytes(), given.as_bytes()) && found.is_none() {
                found = Some(principal);
            }
        }
        found
            .ok_or_else(|| unauthenticated("the API key is not valid"))?
            .admit(&ctx.tenant)
    }

    fn security_schemes(&self) -> Vec<(String, SecurityScheme)> {
        vec![(
            "apiKey".to_owned(),
            SecurityScheme::ApiKey(ApiKeySecurityScheme {
                description: String::new(),
                location: "header".to_owned(),
                name: self.header.as_str().to_owned(),
            }),
        )]
    }
}

/// Declares `auth`'s schemes on `card`, each one enough on its own.
pub fn declare_on(card: &mut a2a_core::AgentCard, auth: &dyn Authenticate) {
    for (name, scheme) in auth.security_schemes() {
        card.security_requirements
            .push(SecurityRequirement::single(name.clone(), Vec::new()));
        card.security_schemes.insert(name, scheme);
    }
}

/// The `WWW-Authenticate` challenge for a card's schemes: `Bearer` when it
/// declares an HTTP bearer scheme, otherwise the first API key's header.
pub(crate) fn challenge(card: &a2a_core::AgentCard) -> String {
    let mut fallback = None;
    for scheme in card.security_schemes.values() {
        match scheme {
            SecurityScheme::HttpAuth(http) if http.scheme.eq_ignore_ascii_case("bearer") => {
                return r#"Bearer realm="a2a""#.to_owned();
            }
            SecurityScheme::OAuth2(_) | SecurityScheme::OpenIdConnect(_) => {
                return r#"Bearer realm="a2a""#.to_owned();
            }
            SecurityScheme::ApiKey(key) if fallback.is_none() => {
                fallback = Some(format!(r#"ApiKey realm="a2a", header="{}""#, key.name));
            }
            _ => {}
        }
    }
    fallback.unwrap_or_else(|| r#"Bearer realm="a2a""#.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServiceParams;
    use a2a_core::Method;

    fn ctx(header: (&str, &str), tenant: &str) -> CallContext {
        let mut params = ServiceParams::new();
        params.append(header.0, header.1).unwrap();
        let mut ctx = CallContext::new(Method::GetTask, params);
        tenant.clone_into(&mut ctx.tenant);
        ctx
    }

    #[tokio::test]
    async fn bearer_tokens_map_to_their_identity_and_tenants() {
        let auth = BearerAuth::new()
            .token("t-alice", Principal::new("alice").allow_tenants(["a"]))
            .verifier(|t| (t == "t-bob").then(|| Principal::new("bob")));
        let alice = auth
            .authenticate(&ctx(("Authorization", "Bearer t-alice"), "a"))
            .await
            .unwrap();
        assert_eq!(alice, User::authenticated("alice"));
        let err = auth
            .authenticate(&ctx(("Authorization", "bearer t-alice"), "b"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unauthorized);
        let bob = auth
            .authenticate(&ctx(("authorization", "Bearer t-bob"), "anything"))
            .await
            .unwrap();
        assert_eq!(bob.name, "bob");
        for wrong in ["Bearer nope", "Basic t-alice", "Bearer ", "t-alice"] {
            let err = auth
                .authenticate(&ctx(("Authorization", wrong), "a"))
                .await
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unauthenticated, "{wrong}");
        }
    }

    #[tokio::test]
    async fn api_keys_are_read_from_their_header_only() {
        let auth = ApiKeyAuth::new("X-API-Key")
            .unwrap()
            .key("k1", Principal::new("alice"));
        let user = auth
            .authenticate(&ctx(("x-api-key", "k1"), ""))
            .await
            .unwrap();
        assert_eq!(user.name, "alice");
        for header in [("x-api-key", "k2"), ("authorization", "Bearer k1")] {
            let err = auth.authenticate(&ctx(header, "")).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unauthenticated);
        }
        assert!(ApiKeyAuth::new("bad header").is_err());
    }

    #[test]
    fn the_card_declares_the_scheme_and_the_challenge_follows_it() {
        let mut card = a2a_core::AgentCard::default();
        declare_on(&mut card, &ApiKeyAuth::new("X-Key").unwrap());
        assert!(card.security_schemes.contains_key("apiKey"));
        assert_eq!(card.security_requirements.len(), 1);
        assert_eq!(challenge(&card), r#"ApiKey realm="a2a", header="x-key""#);
        declare_on(&mut card, &BearerAuth::new());
        assert_eq!(challenge(&card), r#"Bearer realm="a2a""#);
    }
}
