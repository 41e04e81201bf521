//! Who is calling and with which service parameters: the `CallContext` every
//! operation receives.

use a2a_core::{Method, split_list};
use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// [`VERSION_HEADER`](a2a_core::VERSION_HEADER) as a header name.
const VERSION_NAME: HeaderName = HeaderName::from_static("a2a-version");
/// [`EXTENSIONS_HEADER`](a2a_core::EXTENSIONS_HEADER) as a header name.
pub(crate) const EXTENSIONS_NAME: HeaderName = HeaderName::from_static("a2a-extensions");
/// [`LEGACY_EXTENSIONS_HEADER`](a2a_core::LEGACY_EXTENSIONS_HEADER) as a header name.
const LEGACY_EXTENSIONS_NAME: HeaderName = HeaderName::from_static("x-a2a-extensions");

/// The authenticated (or anonymous) user behind a call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct User {
    /// A stable identifier; empty for an anonymous caller.
    pub name: String,
    /// Whether an authentication hook vouched for this user.
    pub authenticated: bool,
}

impl User {
    /// An authenticated user.
    pub fn authenticated(name: impl Into<String>) -> Self {
        User {
            name: name.into(),
            authenticated: true,
        }
    }

    /// The anonymous user.
    pub fn anonymous() -> Self {
        User::default()
    }
}

/// The owner of a task: every store call is scoped to one.
///
/// Two callers see each other's tasks only if tenant and user name both match.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Caller {
    /// The tenant the call was routed to.
    pub tenant: String,
    /// The user's name (empty: anonymous).
    pub user: String,
}

/// Service parameters of a call (HTTP headers or gRPC metadata); keys are
/// case-insensitive.
///
/// Built from the request's own header map without copying it, and cheap to
/// clone: the map is shared until someone changes a clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceParams {
    values: std::sync::Arc<HeaderMap>,
}

impl ServiceParams {
    /// An empty set.
    pub fn new() -> Self {
        ServiceParams::default()
    }

    /// The parameters carried by HTTP headers (or gRPC metadata).
    pub fn from_headers(headers: HeaderMap) -> Self {
        ServiceParams {
            values: std::sync::Arc::new(headers),
        }
    }

    /// The header map the parameters were read from, given back: a
    /// binding that lent a request's headers to a context for its head's
    /// authentication returns them to the request without a copy (copied
    /// only when the parameters were shared meanwhile).
    pub fn into_headers(self) -> HeaderMap {
        std::sync::Arc::try_unwrap(self.values).unwrap_or_else(|shared| (*shared).clone())
    }

    /// The header map the parameters were read from.
    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.values
    }

    /// Adds a value (keys are case-insensitive). A key or value that could
    /// not travel as a header (a control character, say) is refused.
    pub fn append(&mut self, key: &str, value: &str) -> Result<(), InvalidParam> {
        let name = HeaderName::from_bytes(key.as_bytes()).map_err(|_| InvalidParam)?;
        let value = HeaderValue::from_str(value).map_err(|_| InvalidParam)?;
        std::sync::Arc::make_mut(&mut self.values).append(name, value);
        Ok(())
    }

    /// The first value of `key` (values that are not visible ASCII are skipped).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.get_all(key).next()
    }

    /// Every value of `key`.
    pub fn get_all(&self, key: &str) -> impl Iterator<Item = &str> {
        self.values_of(key)
    }

    /// The `Authorization` header's value (by a ready name: no parsing of
    /// the name on every request).
    pub(crate) fn authorization(&self) -> Option<&str> {
        self.values_of(axum::http::header::AUTHORIZATION).next()
    }

    /// The protocol version the caller asked for (`A2A-Version`).
    pub(crate) fn version(&self) -> Option<&str> {
        self.values_of(&VERSION_NAME).next()
    }

    /// Every value of a header; a ready [`HeaderName`] skips parsing the name
    /// on every request.
    fn values_of<K: axum::http::header::AsHeaderName>(&self, key: K) -> impl Iterator<Item = &str> {
        self.values
            .get_all(key)
            .into_iter()
            .filter_map(|v| v.to_str().ok())
    }

    /// Every key (lowercase) and value, a key once per value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
    }

    /// The extension URIs requested through `A2A-Extensions` (or its 0.3 name).
    pub fn requested_extensions(&self) -> Vec<String> {
        let mut uris: Vec<String> = self
            .values_of(&EXTENSIONS_NAME)
            .chain(self.values_of(&LEGACY_EXTENSIONS_NAME))
            .flat_map(split_list)
            .map(str::to_owned)
            .collect();
        uris.dedup();
        uris
    }
}

/// A service parameter that cannot be represented as a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a valid header name or value")]
pub struct InvalidParam;

/// Everything the server knows about one call besides its payload.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The operation.
    pub method: Method,
    /// The tenant from the request body or the `/{tenant}` path prefix.
    pub tenant: String,
    /// The caller; set by an authentication interceptor, anonymous otherwise.
    pub user: User,
    /// Headers or metadata of the call.
    pub service_params: ServiceParams,
    /// The URL's query parameters (HTTP bindings; empty over gRPC), for
    /// credentials a card declares in the query.
    pub query_params: Vec<(String, String)>,
    /// Extension URIs the client asked to activate.
    pub requested_extensions: Vec<String>,
    /// Extension URIs the server activated (echoed in `A2A-Extensions`).
    pub activated_extensions: Vec<String>,
    /// The binding the call came in on (one of [`crate::telemetry::binding`];
    /// empty when the caller did not say), for spans and metrics.
    pub binding: &'static str,
}

impl CallContext {
    /// A context for `method` with the given service parameters.
    pub fn new(method: Method, service_params: ServiceParams) -> Self {
        CallContext {
            method,
            tenant: String::new(),
            user: User::anonymous(),
            requested_extensions: service_params.requested_extensions(),
            service_params,
            query_params: Vec::new(),
            activated_extensions: Vec::new(),
            binding: "",
        }
    }

    /// This context, for a call that came in on `binding`.
    #[must_use]
    pub fn with_binding(mut self, binding: &'static str) -> Self {
        self.binding = binding;
        self
    }

    /// The owner key used to scope task and push-config storage.
    pub fn caller(&self) -> Caller {
        Caller {
            tenant: self.tenant.clone(),
            user: self.user.name.clone(),
        }
    }

    /// The first value of query parameter `name`.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query_params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Whether the client requested extension `uri`.
    pub fn is_extension_requested(&self, uri: &str) -> bool {
        self.requested_extensions.iter().any(|u| u == uri)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_header_names_match_the_protocol_constants() {
        for (name, constant) in [
            (&VERSION_NAME, a2a_core::VERSION_HEADER),
            (&EXTENSIONS_NAME, a2a_core::EXTENSIONS_HEADER),
            (&LEGACY_EXTENSIONS_NAME, a2a_core::LEGACY_EXTENSIONS_HEADER),
        ] {
            assert_eq!(*name, HeaderName::from_bytes(constant.as_bytes()).unwrap());
        }
    }

    #[test]
    fn params_are_case_insensitive_and_extensions_merge_both_headers() {
        let mut params = ServiceParams::new();
        params.append("A2A-Extensions", "urn:a, urn:b").unwrap();
        params.append("x-a2a-extensions", "urn:c").unwrap();
        assert_eq!(params.append("bad key", "v"), Err(InvalidParam));
        assert_eq!(params.append("key", "line\nbreak"), Err(InvalidParam));
        assert_eq!(params.get("a2a-EXTENSIONS"), Some("urn:a, urn:b"));
        assert_eq!(params.requested_extensions(), ["urn:a", "urn:b", "urn:c"]);
    }
}
