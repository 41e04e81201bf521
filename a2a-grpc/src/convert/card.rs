//! The agent card and security schemes.

use a2a_core as core;

use super::{ConvertError, FromProto, ToProto, mirror};
use crate::pb;

mirror!(core::AgentCard => pb::AgentCard {
    name, description, supported_interfaces, provider, version, documentation_url,
    security_schemes, security_requirements, default_input_modes, default_output_modes, skills,
    signatures, icon_url
} required { capabilities });
mirror!(core::AgentInterface => pb::AgentInterface {
    url, protocol_binding, tenant, protocol_version
});
mirror!(core::AgentProvider => pb::AgentProvider { url, organization });
mirror!(core::AgentCapabilities => pb::AgentCapabilities {
    streaming, push_notifications, extensions, extended_agent_card
});
mirror!(core::AgentExtension => pb::AgentExtension { uri, description, required, params });
mirror!(core::AgentSkill => pb::AgentSkill {
    id, name, description, tags, examples, input_modes, output_modes, security_requirements
});
mirror!(core::AgentCardSignature => pb::AgentCardSignature { protected, signature, header });
mirror!(core::SecurityRequirement => pb::SecurityRequirement { schemes });
mirror!(core::StringList => pb::StringList { list });
mirror!(core::ApiKeySecurityScheme => pb::ApiKeySecurityScheme { description, location, name });
mirror!(core::HttpAuthSecurityScheme => pb::HttpAuthSecurityScheme {
    description, scheme, bearer_format
});
mirror!(core::OAuth2SecurityScheme => pb::OAuth2SecurityScheme {
    description, flows, oauth2_metadata_url
});
mirror!(core::OpenIdConnectSecurityScheme => pb::OpenIdConnectSecurityScheme {
    description, open_id_connect_url
});
mirror!(core::MutualTlsSecurityScheme => pb::MutualTlsSecurityScheme { description });
mirror!(core::AuthorizationCodeOAuthFlow => pb::AuthorizationCodeOAuthFlow {
    authorization_url, token_url, refresh_url, scopes, pkce_required
});
mirror!(core::ClientCredentialsOAuthFlow => pb::ClientCredentialsOAuthFlow {
    token_url, refresh_url, scopes
});
mirror!(core::DeviceCodeOAuthFlow => pb::DeviceCodeOAuthFlow {
    device_authorization_url, token_url, refresh_url, scopes
});
mirror!(core::ImplicitOAuthFlow => pb::ImplicitOAuthFlow { authorization_url, refresh_url, scopes });
mirror!(core::PasswordOAuthFlow => pb::PasswordOAuthFlow { token_url, refresh_url, scopes });

impl ToProto for core::SecurityScheme {
    type Proto = pb::SecurityScheme;
    fn to_proto(self) -> pb::SecurityScheme {
        use pb::security_scheme::Scheme;
        let scheme = match self {
            core::SecurityScheme::ApiKey(s) => Scheme::ApiKeySecurityScheme(s.to_proto()),
            core::SecurityScheme::HttpAuth(s) => Scheme::HttpAuthSecurityScheme(s.to_proto()),
            core::SecurityScheme::OAuth2(s) => Scheme::Oauth2SecurityScheme(s.to_proto()),
            core::SecurityScheme::OpenIdConnect(s) => {
                Scheme::OpenIdConnectSecurityScheme(s.to_proto())
            }
            core::SecurityScheme::MutualTls(s) => Scheme::MtlsSecurityScheme(s.to_proto()),
        };
        pb::SecurityScheme {
            scheme: Some(scheme),
        }
    }
}

impl FromProto for core::SecurityScheme {
    type Proto = pb::SecurityScheme;
    fn from_proto(proto: pb::SecurityScheme) -> Result<Self, ConvertError> {
        use pb::security_scheme::Scheme;
        Ok(match proto.scheme {
            Some(Scheme::ApiKeySecurityScheme(s)) => {
                core::SecurityScheme::ApiKey(FromProto::from_proto(s)?)
            }
            Some(Scheme::HttpAuthSecurityScheme(s)) => {
                core::SecurityScheme::HttpAuth(FromProto::from_proto(s)?)
            }
            Some(Scheme::Oauth2SecurityScheme(s)) => core::SecurityScheme::OAuth2(
                FromProto::from_proto(s).map_err(|e| e.at("oauth2SecurityScheme"))?,
            ),
            Some(Scheme::OpenIdConnectSecurityScheme(s)) => {
                core::SecurityScheme::OpenIdConnect(FromProto::from_proto(s)?)
            }
            Some(Scheme::MtlsSecurityScheme(s)) => {
                core::SecurityScheme::MutualTls(FromProto::from_proto(s)?)
            }
            None => return Err(ConvertError::new("SecurityScheme has no scheme")),
        })
    }
}

impl ToProto for core::OAuthFlows {
    type Proto = pb::OAuthFlows;
    fn to_proto(self) -> pb::OAuthFlows {
        use pb::o_auth_flows::Flow;
        let flow = match self {
            core::OAuthFlows::AuthorizationCode(f) => Flow::AuthorizationCode(f.to_proto()),
            core::OAuthFlows::ClientCredentials(f) => Flow::ClientCredentials(f.to_proto()),
            #[allow(deprecated)]
            core::OAuthFlows::Implicit(f) => Flow::Implicit(f.to_proto()),
            #[allow(deprecated)]
            core::OAuthFlows::Password(f) => Flow::Password(f.to_proto()),
            core::OAuthFlows::DeviceCode(f) => Flow::DeviceCode(f.to_proto()),
        };
        pb::OAuthFlows { flow: Some(flow) }
    }
}

impl FromProto for core::OAuthFlows {
    type Proto = pb::OAuthFlows;
    #[allow(deprecated)]
    fn from_proto(proto: pb::OAuthFlows) -> Result<Self, ConvertError> {
        use pb::o_auth_flows::Flow;
        Ok(match proto.flow {
            Some(Flow::AuthorizationCode(f)) => {
                core::OAuthFlows::AuthorizationCode(FromProto::from_proto(f)?)
            }
            Some(Flow::ClientCredentials(f)) => {
                core::OAuthFlows::ClientCredentials(FromProto::from_proto(f)?)
            }
            Some(Flow::Implicit(f)) => core::OAuthFlows::Implicit(FromProto::from_proto(f)?),
            Some(Flow::Password(f)) => core::OAuthFlows::Password(FromProto::from_proto(f)?),
            Some(Flow::DeviceCode(f)) => core::OAuthFlows::DeviceCode(FromProto::from_proto(f)?),
            None => return Err(ConvertError::new("OAuthFlows has no flow")),
        })
    }
}
