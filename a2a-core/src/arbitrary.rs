//! Proptest strategies for every protocol message, for property tests here and
//! in downstream crates (enable the `arbitrary` feature).
//!
//! Values stay within what every wire form represents exactly: timestamps have
//! millisecond precision, JSON numbers are 32-bit integers or binary fractions.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::*;

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,8}"
}

fn id() -> impl Strategy<Value = String> {
    "[a-z0-9-]{0,10}"
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    vec(text(), 0..3)
}

/// A JSON value of any kind, nested up to three levels.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        // Binary fractions print and parse exactly in decimal.
        (any::<i16>(), 1u8..4)
            .prop_map(|(n, k)| Value::from(f64::from(n) + 1.0 / f64::from(1u8 << k))),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(id(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A `google.protobuf.Struct`.
pub fn metadata() -> impl Strategy<Value = Metadata> {
    btree_map(id(), json_value(), 0..3).prop_map(|m| m.into_iter().collect::<Map<_, _>>())
}

fn opt_metadata() -> impl Strategy<Value = Option<Metadata>> {
    option::of(metadata())
}

/// A timestamp with millisecond precision between 2000 and 2100.
pub fn timestamp() -> impl Strategy<Value = DateTime<Utc>> {
    (946_684_800_000i64..4_102_444_800_000)
        .prop_map(|ms| DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::UNIX_EPOCH))
}

/// Any task state, unspecified included.
pub fn task_state() -> impl Strategy<Value = TaskState> {
    (0..=8).prop_map(|n| TaskState::from_number(n).unwrap_or_default())
}

/// Any role.
pub fn role() -> impl Strategy<Value = Role> {
    (0..=2).prop_map(|n| Role::from_number(n).unwrap_or_default())
}

/// A part of any content kind.
pub fn part() -> impl Strategy<Value = Part> {
    let content = prop_oneof![
        text().prop_map(PartContent::Text),
        vec(any::<u8>(), 0..16).prop_map(PartContent::Raw),
        text().prop_map(PartContent::Url),
        json_value().prop_map(PartContent::Data),
    ];
    (content, opt_metadata(), text(), text()).prop_map(
        |(content, metadata, filename, media_type)| Part {
            content,
            metadata,
            filename,
            media_type,
        },
    )
}

/// A message.
pub fn message() -> impl Strategy<Value = Message> {
    (
        id(),
        id(),
        id(),
        role(),
        vec(part(), 0..3),
        opt_metadata(),
        strings(),
        vec(id(), 0..2),
    )
        .prop_map(
            |(
                message_id,
                context_id,
                task_id,
                role,
                parts,
                metadata,
                extensions,
                reference_task_ids,
            )| {
                Message {
                    message_id,
                    context_id,
                    task_id,
                    role,
                    parts,
                    metadata,
                    extensions,
                    reference_task_ids,
                }
            },
        )
}

/// A task status.
pub fn task_status() -> impl Strategy<Value = TaskStatus> {
    (task_state(), option::of(message()), option::of(timestamp())).prop_map(
        |(state, message, timestamp)| TaskStatus {
            state,
            message: message.map(Into::into),
            timestamp,
        },
    )
}

/// An artifact.
pub fn artifact() -> impl Strategy<Value = Artifact> {
    (
        id(),
        text(),
        text(),
        vec(part(), 0..3),
        opt_metadata(),
        strings(),
    )
        .prop_map(
            |(artifact_id, name, description, parts, metadata, extensions)| Artifact {
                artifact_id,
                name,
                description,
                parts,
                metadata,
                extensions,
            },
        )
}

/// A task.
pub fn task() -> impl Strategy<Value = Task> {
    (
        id(),
        id(),
        task_status(),
        vec(artifact(), 0..2),
        vec(message(), 0..3),
        opt_metadata(),
    )
        .prop_map(
            |(id, context_id, status, artifacts, history, metadata)| Task {
                id,
                context_id,
                status,
                artifacts,
                history: history.into_iter().map(Into::into).collect(),
                metadata,
            },
        )
}

/// A status update event.
pub fn status_update() -> impl Strategy<Value = TaskStatusUpdateEvent> {
    (id(), id(), task_status(), opt_metadata()).prop_map(
        |(task_id, context_id, status, metadata)| TaskStatusUpdateEvent {
            task_id,
            context_id,
            status,
            metadata,
        },
    )
}

/// An artifact update event.
pub fn artifact_update() -> impl Strategy<Value = TaskArtifactUpdateEvent> {
    (
        id(),
        id(),
        artifact(),
        any::<bool>(),
        any::<bool>(),
        opt_metadata(),
    )
        .prop_map(
            |(task_id, context_id, artifact, append, last_chunk, metadata)| {
                TaskArtifactUpdateEvent {
                    task_id,
                    context_id,
                    artifact,
                    append,
                    last_chunk,
                    metadata,
                }
            },
        )
}

/// A stream item of any kind.
pub fn stream_response() -> impl Strategy<Value = StreamResponse> {
    prop_oneof![
        task().prop_map(StreamResponse::Task),
        message().prop_map(StreamResponse::Message),
        status_update().prop_map(StreamResponse::StatusUpdate),
        artifact_update().prop_map(StreamResponse::ArtifactUpdate),
    ]
}

/// A send-message result of either kind.
pub fn send_message_response() -> impl Strategy<Value = SendMessageResponse> {
    prop_oneof![
        task().prop_map(SendMessageResponse::Task),
        message().prop_map(SendMessageResponse::Message),
    ]
}

/// Push authentication.
pub fn authentication_info() -> impl Strategy<Value = AuthenticationInfo> {
    (text(), text()).prop_map(|(scheme, credentials)| AuthenticationInfo {
        scheme,
        credentials,
    })
}

/// A push-notification config.
pub fn push_config() -> impl Strategy<Value = TaskPushNotificationConfig> {
    (
        id(),
        id(),
        id(),
        text(),
        text(),
        option::of(authentication_info()),
    )
        .prop_map(|(tenant, id, task_id, url, token, authentication)| {
            TaskPushNotificationConfig {
                tenant,
                id,
                task_id,
                url,
                token,
                authentication,
            }
        })
}

/// A send-message configuration.
pub fn send_message_configuration() -> impl Strategy<Value = SendMessageConfiguration> {
    (
        strings(),
        option::of(push_config()),
        option::of(any::<i32>()),
        any::<bool>(),
    )
        .prop_map(
            |(
                accepted_output_modes,
                task_push_notification_config,
                history_length,
                return_immediately,
            )| {
                SendMessageConfiguration {
                    accepted_output_modes,
                    task_push_notification_config,
                    history_length,
                    return_immediately,
                }
            },
        )
}

/// A send-message request.
pub fn send_message_request() -> impl Strategy<Value = SendMessageRequest> {
    (
        id(),
        message(),
        option::of(send_message_configuration()),
        opt_metadata(),
    )
        .prop_map(
            |(tenant, message, configuration, metadata)| SendMessageRequest {
                tenant,
                message,
                configuration,
                metadata,
            },
        )
}

/// A get-task request.
pub fn get_task_request() -> impl Strategy<Value = GetTaskRequest> {
    (id(), id(), option::of(any::<i32>())).prop_map(|(tenant, id, history_length)| GetTaskRequest {
        tenant,
        id,
        history_length,
    })
}

/// A list-tasks request.
pub fn list_tasks_request() -> impl Strategy<Value = ListTasksRequest> {
    (
        id(),
        id(),
        task_state(),
        option::of(any::<i32>()),
        id(),
        option::of(any::<i32>()),
        option::of(timestamp()),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(
                tenant,
                context_id,
                status,
                page_size,
                page_token,
                history_length,
                status_timestamp_after,
                include_artifacts,
            )| {
                ListTasksRequest {
                    tenant,
                    context_id,
                    status,
                    page_size,
                    page_token,
                    history_length,
                    status_timestamp_after,
                    include_artifacts,
                }
            },
        )
}

/// A list-tasks response.
pub fn list_tasks_response() -> impl Strategy<Value = ListTasksResponse> {
    (vec(task(), 0..3), id(), any::<i32>(), any::<i32>()).prop_map(
        |(tasks, next_page_token, page_size, total_size)| ListTasksResponse {
            tasks,
            next_page_token,
            page_size,
            total_size,
        },
    )
}

/// A cancel-task request.
pub fn cancel_task_request() -> impl Strategy<Value = CancelTaskRequest> {
    (id(), id(), opt_metadata()).prop_map(|(tenant, id, metadata)| CancelTaskRequest {
        tenant,
        id,
        metadata,
    })
}

/// A subscribe-to-task request.
pub fn subscribe_to_task_request() -> impl Strategy<Value = SubscribeToTaskRequest> {
    (id(), id()).prop_map(|(tenant, id)| SubscribeToTaskRequest { tenant, id })
}

/// A get-push-config request.
pub fn get_push_config_request() -> impl Strategy<Value = GetTaskPushNotificationConfigRequest> {
    (id(), id(), id()).prop_map(
        |(tenant, task_id, id)| GetTaskPushNotificationConfigRequest {
            tenant,
            task_id,
            id,
        },
    )
}

/// A delete-push-config request.
pub fn delete_push_config_request() -> impl Strategy<Value = DeleteTaskPushNotificationConfigRequest>
{
    (id(), id(), id()).prop_map(
        |(tenant, task_id, id)| DeleteTaskPushNotificationConfigRequest {
            tenant,
            task_id,
            id,
        },
    )
}

/// A list-push-configs request.
pub fn list_push_configs_request() -> impl Strategy<Value = ListTaskPushNotificationConfigsRequest>
{
    (id(), id(), any::<i32>(), id()).prop_map(|(tenant, task_id, page_size, page_token)| {
        ListTaskPushNotificationConfigsRequest {
            tenant,
            task_id,
            page_size,
            page_token,
        }
    })
}

/// A list-push-configs response.
pub fn list_push_configs_response() -> impl Strategy<Value = ListTaskPushNotificationConfigsResponse>
{
    (vec(push_config(), 0..3), id()).prop_map(|(configs, next_page_token)| {
        ListTaskPushNotificationConfigsResponse {
            configs,
            next_page_token,
        }
    })
}

/// A get-extended-card request.
pub fn get_extended_agent_card_request() -> impl Strategy<Value = GetExtendedAgentCardRequest> {
    id().prop_map(|tenant| GetExtendedAgentCardRequest { tenant })
}

fn scopes() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map(id(), text(), 0..3)
}

/// An OAuth flow of any kind.
pub fn oauth_flows() -> impl Strategy<Value = OAuthFlows> {
    prop_oneof![
        (text(), text(), text(), scopes(), any::<bool>()).prop_map(
            |(a, t, r, scopes, pkce_required)| {
                OAuthFlows::AuthorizationCode(AuthorizationCodeOAuthFlow {
                    authorization_url: a,
                    token_url: t,
                    refresh_url: r,
                    scopes,
                    pkce_required,
                })
            }
        ),
        (text(), text(), scopes()).prop_map(|(t, r, scopes)| {
            OAuthFlows::ClientCredentials(ClientCredentialsOAuthFlow {
                token_url: t,
                refresh_url: r,
                scopes,
            })
        }),
        (text(), text(), scopes()).prop_map(|(a, r, scopes)| {
            OAuthFlows::Implicit(ImplicitOAuthFlow {
                authorization_url: a,
                refresh_url: r,
                scopes,
            })
        }),
        (text(), text(), scopes()).prop_map(|(t, r, scopes)| {
            OAuthFlows::Password(PasswordOAuthFlow {
                token_url: t,
                refresh_url: r,
                scopes,
            })
        }),
        (text(), text(), text(), scopes()).prop_map(|(d, t, r, scopes)| {
            OAuthFlows::DeviceCode(DeviceCodeOAuthFlow {
                device_authorization_url: d,
                token_url: t,
                refresh_url: r,
                scopes,
            })
        }),
    ]
}

/// A security scheme of any kind.
pub fn security_scheme() -> impl Strategy<Value = SecurityScheme> {
    prop_oneof![
        (text(), text(), text()).prop_map(|(description, location, name)| {
            SecurityScheme::ApiKey(ApiKeySecurityScheme {
                description,
                location,
                name,
            })
        }),
        (text(), text(), text()).prop_map(|(description, scheme, bearer_format)| {
            SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                description,
                scheme,
                bearer_format,
            })
        }),
        (text(), option::of(oauth_flows()), text()).prop_map(
            |(description, flows, oauth2_metadata_url)| {
                SecurityScheme::OAuth2(OAuth2SecurityScheme {
                    description,
                    flows,
                    oauth2_metadata_url,
                })
            }
        ),
        (text(), text()).prop_map(|(description, open_id_connect_url)| {
            SecurityScheme::OpenIdConnect(OpenIdConnectSecurityScheme {
                description,
                open_id_connect_url,
            })
        }),
        text().prop_map(
            |description| SecurityScheme::MutualTls(MutualTlsSecurityScheme { description })
        ),
    ]
}

/// A security requirement.
pub fn security_requirement() -> impl Strategy<Value = SecurityRequirement> {
    btree_map(id(), strings().prop_map(|list| StringList { list }), 0..3)
        .prop_map(|schemes| SecurityRequirement { schemes })
}

/// A skill.
pub fn skill() -> impl Strategy<Value = AgentSkill> {
    (
        id(),
        text(),
        text(),
        strings(),
        strings(),
        strings(),
        strings(),
        vec(security_requirement(), 0..2),
    )
        .prop_map(
            |(
                id,
                name,
                description,
                tags,
                examples,
                input_modes,
                output_modes,
                security_requirements,
            )| AgentSkill {
                id,
                name,
                description,
                tags,
                examples,
                input_modes,
                output_modes,
                security_requirements,
            },
        )
}

/// A full agent card.
pub fn agent_card() -> impl Strategy<Value = AgentCard> {
    let interface = (text(), text(), id(), text()).prop_map(
        |(url, protocol_binding, tenant, protocol_version)| AgentInterface {
            url,
            protocol_binding,
            tenant,
            protocol_version,
        },
    );
    let extension = (text(), text(), any::<bool>(), opt_metadata()).prop_map(
        |(uri, description, required, params)| AgentExtension {
            uri,
            description,
            required,
            params,
        },
    );
    let capabilities = (
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        vec(extension, 0..2),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(streaming, push_notifications, extensions, extended_agent_card)| AgentCapabilities {
                streaming,
                push_notifications,
                extensions,
                extended_agent_card,
            },
        );
    let provider =
        (text(), text()).prop_map(|(url, organization)| AgentProvider { url, organization });
    let signature = (text(), text(), opt_metadata()).prop_map(|(protected, signature, header)| {
        AgentCardSignature {
            protected,
            signature,
            header,
        }
    });
    let head = (
        text(),
        text(),
        vec(interface, 0..3),
        option::of(provider),
        text(),
        option::of(text()),
        capabilities,
    );
    let tail = (
        btree_map(id(), security_scheme(), 0..3),
        vec(security_requirement(), 0..2),
        strings(),
        strings(),
        vec(skill(), 0..2),
        vec(signature, 0..2),
        option::of(text()),
    );
    (head, tail).prop_map(
        |(
            (
                name,
                description,
                supported_interfaces,
                provider,
                version,
                documentation_url,
                capabilities,
            ),
            (
                security_schemes,
                security_requirements,
                default_input_modes,
                default_output_modes,
                skills,
                signatures,
                icon_url,
            ),
        )| AgentCard {
            name,
            description,
            supported_interfaces,
            provider,
            version,
            documentation_url,
            capabilities,
            security_schemes,
            security_requirements,
            default_input_modes,
            default_output_modes,
            skills,
            signatures,
            icon_url,
        },
    )
}
