//! Security schemes and requirements declared by an agent card.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::protojson::{is_default, nullable, oneof_serde};

/// One way of authenticating to the agent (OpenAPI 3.2 style).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    ApiKey(ApiKeySecurityScheme),
    /// HTTP authentication such as Bearer or Basic.
    HttpAuth(HttpAuthSecurityScheme),
    /// OAuth 2.0.
    OAuth2(OAuth2SecurityScheme),
    /// OpenID Connect discovery.
    OpenIdConnect(OpenIdConnectSecurityScheme),
    /// Mutual TLS.
    MutualTls(MutualTlsSecurityScheme),
}

oneof_serde!(SecurityScheme, "SecurityScheme", {
    ApiKey => "apiKeySecurityScheme" | "api_key_security_scheme",
    HttpAuth => "httpAuthSecurityScheme" | "http_auth_security_scheme",
    OAuth2 => "oauth2SecurityScheme" | "oauth2_security_scheme",
    OpenIdConnect => "openIdConnectSecurityScheme" | "open_id_connect_security_scheme",
    MutualTls => "mtlsSecurityScheme" | "mtls_security_scheme",
});

/// Where an API key is sent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// Human-readable description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `query`, `header` or `cookie`.
    #[serde(default, deserialize_with = "nullable")]
    pub location: String,
    /// The parameter, header or cookie name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

/// HTTP authentication (RFC 7235 scheme).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// Human-readable description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// The scheme, such as `Bearer` or `Basic`.
    #[serde(default, deserialize_with = "nullable")]
    pub scheme: String,
    /// A hint at the bearer token format, such as `JWT`.
    #[serde(
        default,
        alias = "bearer_format",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub bearer_format: String,
}

/// OAuth 2.0 with one flow.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// Human-readable description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// The flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<OAuthFlows>,
    /// RFC 8414 authorization-server metadata URL.
    #[serde(
        default,
        alias = "oauth2_metadata_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub oauth2_metadata_url: String,
}

/// OpenID Connect discovery.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// Human-readable description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// The OpenID Connect discovery URL.
    #[serde(default, alias = "open_id_connect_url", deserialize_with = "nullable")]
    pub open_id_connect_url: String,
}

/// Mutual TLS.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutualTlsSecurityScheme {
    /// Human-readable description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
}

/// The OAuth 2.0 flow of a scheme (a proto `oneof`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthFlows {
    /// Authorization code (optionally with PKCE).
    AuthorizationCode(AuthorizationCodeOAuthFlow),
    /// Client credentials.
    ClientCredentials(ClientCredentialsOAuthFlow),
    /// Implicit (deprecated by the protocol).
    Implicit(ImplicitOAuthFlow),
    /// Resource-owner password (deprecated by the protocol).
    Password(PasswordOAuthFlow),
    /// Device authorization (RFC 8628).
    DeviceCode(DeviceCodeOAuthFlow),
}

oneof_serde!(OAuthFlows, "OAuthFlows", {
    AuthorizationCode => "authorizationCode" | "authorization_code",
    ClientCredentials => "clientCredentials" | "client_credentials",
    Implicit => "implicit",
    Password => "password",
    DeviceCode => "deviceCode" | "device_code",
});

/// Authorization-code flow.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    /// Authorization endpoint.
    #[serde(default, alias = "authorization_url", deserialize_with = "nullable")]
    pub authorization_url: String,
    /// Token endpoint.
    #[serde(default, alias = "token_url", deserialize_with = "nullable")]
    pub token_url: String,
    /// Refresh endpoint.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// Scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
    /// PKCE must be used.
    #[serde(
        default,
        alias = "pkce_required",
        deserialize_with = "nullable",
        skip_serializing_if = "is_default"
    )]
    pub pkce_required: bool,
}

/// Client-credentials flow.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    /// Token endpoint.
    #[serde(default, alias = "token_url", deserialize_with = "nullable")]
    pub token_url: String,
    /// Refresh endpoint.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// Scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// Device-code flow (RFC 8628).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    /// Device authorization endpoint.
    #[serde(
        default,
        alias = "device_authorization_url",
        deserialize_with = "nullable"
    )]
    pub device_authorization_url: String,
    /// Token endpoint.
    #[serde(default, alias = "token_url", deserialize_with = "nullable")]
    pub token_url: String,
    /// Refresh endpoint.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// Scope name to description.
    #[serde(default, deserialize_with = "nullable")]
    pub scopes: BTreeMap<String, String>,
}

/// Implicit flow (deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    /// Authorization endpoint.
    #[serde(
        default,
        alias = "authorization_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub authorization_url: String,
    /// Refresh endpoint.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// Scope name to description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub scopes: BTreeMap<String, String>,
}

/// Password flow (deprecated).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    /// Token endpoint.
    #[serde(
        default,
        alias = "token_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub token_url: String,
    /// Refresh endpoint.
    #[serde(
        default,
        alias = "refresh_url",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    /// Scope name to description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub scopes: BTreeMap<String, String>,
}

/// One alternative of a security requirement list: every scheme named here is needed together.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name to the scopes it needs.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub schemes: BTreeMap<String, StringList>,
}

impl SecurityRequirement {
    /// A requirement naming one scheme with the given scopes.
    pub fn single(scheme: impl Into<String>, scopes: Vec<String>) -> Self {
        SecurityRequirement {
            schemes: BTreeMap::from([(scheme.into(), StringList { list: scopes })]),
        }
    }
}

/// A list of strings (proto `StringList`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub list: Vec<String>,
}
