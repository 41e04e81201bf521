//! The generated 0.3 messages to and from the 0.3 types of
//! [`a2a_core::v03`] (proto3 strings are empty where those are absent).

// The server uses one direction of most pairs, the client the other.
#![cfg_attr(not(all(feature = "client", feature = "server")), allow(dead_code))]

use a2a_core::A2aError;
use a2a_core::v03::{self, proto};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::pb;
use crate::convert::{FromProto, ToProto};

fn invalid(what: impl std::fmt::Display) -> A2aError {
    A2aError::invalid_params(what.to_string())
}

fn meta_out(metadata: Option<Map<String, Value>>) -> Option<prost_types::Struct> {
    metadata.map(ToProto::to_proto)
}

fn meta_in(metadata: Option<prost_types::Struct>) -> Result<Option<Map<String, Value>>, A2aError> {
    Option::<Map<String, Value>>::from_proto(metadata).map_err(A2aError::from)
}

fn time_out(timestamp: Option<String>) -> Option<prost_types::Timestamp> {
    let text = timestamp?;
    a2a_core::protojson::parse_timestamp(&text)
        .ok()
        .map(ToProto::to_proto)
}

fn time_in(timestamp: Option<prost_types::Timestamp>) -> Option<String> {
    // A timestamp only informs; one out of range is dropped, not refused.
    let time = DateTime::<Utc>::from_proto(timestamp?).ok()?;
    Some(a2a_core::protojson::format_timestamp(&time))
}

/// An empty string as `None`: proto3 has no absent string.
fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn part_out(part: v03::Part) -> pb::Part {
    use pb::file_part::File;
    use pb::part::Part as P;
    let (content, metadata) = match part {
        v03::Part::Text { text, metadata } => (P::Text(text), metadata),
        v03::Part::File { file, metadata } => {
            let content = match (file.uri, file.bytes) {
                (Some(uri), _) => Some(File::FileWithUri(uri)),
                (None, Some(bytes)) => a2a_core::protojson::decode_bytes(&bytes)
                    .ok()
                    .map(File::FileWithBytes),
                (None, None) => None,
            };
            let file = pb::FilePart {
                mime_type: file.mime_type.unwrap_or_default(),
                name: file.name.unwrap_or_default(),
                file: content,
            };
            (P::File(file), metadata)
        }
        v03::Part::Data { data, metadata } => {
            let data = match data {
                Value::Object(map) => map,
                other => Map::from_iter([("value".to_owned(), other)]),
            };
            let data = pb::DataPart {
                data: Some(data.to_proto()),
            };
            (P::Data(data), metadata)
        }
    };
    pb::Part {
        part: Some(content),
        metadata: meta_out(metadata),
    }
}

pub(crate) fn part_in(part: pb::Part) -> Result<v03::Part, A2aError> {
    use pb::file_part::File;
    use pb::part::Part as P;
    let metadata = meta_in(part.metadata)?;
    Ok(match part.part {
        Some(P::Text(text)) => v03::Part::Text { text, metadata },
        Some(P::File(file)) => {
            let (uri, bytes) = match file.file {
                Some(File::FileWithUri(uri)) => (Some(uri), None),
                Some(File::FileWithBytes(bytes)) => {
                    (None, Some(a2a_core::protojson::encode_bytes(&bytes)))
                }
                None => return Err(invalid("a file part holds neither a uri nor bytes")),
            };
            let file = v03::FileContent {
                name: non_empty(file.name),
                mime_type: non_empty(file.mime_type),
                bytes,
                uri,
            };
            v03::Part::File { file, metadata }
        }
        Some(P::Data(data)) => v03::Part::Data {
            data: Value::Object(meta_in(data.data)?.unwrap_or_default()),
            metadata,
        },
        None => return Err(invalid("a part holds no content")),
    })
}

fn parts_in(parts: Vec<pb::Part>) -> Result<Vec<v03::Part>, A2aError> {
    parts.into_iter().map(part_in).collect()
}

fn role_number(role: v03::Role) -> i32 {
    match role {
        v03::Role::User => pb::Role::User as i32,
        v03::Role::Agent => pb::Role::Agent as i32,
    }
}

fn message_out(m: v03::Message) -> pb::Message {
    pb::Message {
        message_id: m.message_id,
        context_id: m.context_id.unwrap_or_default(),
        task_id: m.task_id.unwrap_or_default(),
        role: role_number(m.role),
        content: m.parts.into_iter().map(part_out).collect(),
        metadata: meta_out(m.metadata),
        extensions: m.extensions,
    }
}

fn message_in(m: pb::Message) -> Result<v03::Message, A2aError> {
    // 0.3 had no unspecified role; a message without one was the user's.
    let role = if m.role == pb::Role::Agent as i32 {
        v03::Role::Agent
    } else {
        v03::Role::User
    };
    Ok(v03::Message {
        message_id: m.message_id,
        role,
        parts: parts_in(m.content)?,
        context_id: non_empty(m.context_id),
        task_id: non_empty(m.task_id),
        // Not in the 0.3 proto.
        reference_task_ids: Vec::new(),
        extensions: m.extensions,
        metadata: meta_in(m.metadata)?,
    })
}

fn state_number(state: v03::TaskState) -> i32 {
    use pb::TaskState as S;
    (match state {
        v03::TaskState::Submitted => S::Submitted,
        v03::TaskState::Working => S::Working,
        v03::TaskState::InputRequired => S::InputRequired,
        v03::TaskState::Completed => S::Completed,
        v03::TaskState::Canceled => S::Cancelled,
        v03::TaskState::Failed => S::Failed,
        v03::TaskState::Rejected => S::Rejected,
        v03::TaskState::AuthRequired => S::AuthRequired,
        v03::TaskState::Unknown => S::Unspecified,
    }) as i32
}

fn state_in(number: i32) -> v03::TaskState {
    use pb::TaskState as S;
    match S::try_from(number).unwrap_or(S::Unspecified) {
        S::Submitted => v03::TaskState::Submitted,
        S::Working => v03::TaskState::Working,
        S::InputRequired => v03::TaskState::InputRequired,
        S::Completed => v03::TaskState::Completed,
        S::Cancelled => v03::TaskState::Canceled,
        S::Failed => v03::TaskState::Failed,
        S::Rejected => v03::TaskState::Rejected,
        S::AuthRequired => v03::TaskState::AuthRequired,
        S::Unspecified => v03::TaskState::Unknown,
    }
}

fn status_out(s: v03::TaskStatus) -> pb::TaskStatus {
    pb::TaskStatus {
        state: state_number(s.state),
        update: s.message.map(message_out),
        timestamp: time_out(s.timestamp),
    }
}

fn status_in(s: Option<pb::TaskStatus>) -> Result<v03::TaskStatus, A2aError> {
    let s = s.unwrap_or_default();
    Ok(v03::TaskStatus {
        state: state_in(s.state),
        message: s.update.map(message_in).transpose()?,
        timestamp: time_in(s.timestamp),
    })
}

fn artifact_out(a: v03::Artifact) -> pb::Artifact {
    pb::Artifact {
        artifact_id: a.artifact_id,
        name: a.name.unwrap_or_default(),
        description: a.description.unwrap_or_default(),
        parts: a.parts.into_iter().map(part_out).collect(),
        metadata: meta_out(a.metadata),
        extensions: a.extensions,
    }
}

fn artifact_in(a: pb::Artifact) -> Result<v03::Artifact, A2aError> {
    Ok(v03::Artifact {
        artifact_id: a.artifact_id,
        name: non_empty(a.name),
        description: non_empty(a.description),
        parts: parts_in(a.parts)?,
        metadata: meta_in(a.metadata)?,
        extensions: a.extensions,
    })
}

pub(crate) fn task_out(t: v03::Task) -> pb::Task {
    pb::Task {
        id: t.id,
        context_id: t.context_id,
        status: Some(status_out(t.status)),
        artifacts: t.artifacts.into_iter().map(artifact_out).collect(),
        history: t.history.into_iter().map(message_out).collect(),
        metadata: meta_out(t.metadata),
    }
}

pub(crate) fn task_in(t: pb::Task) -> Result<v03::Task, A2aError> {
    Ok(v03::Task {
        id: t.id,
        context_id: t.context_id,
        status: status_in(t.status)?,
        artifacts: t
            .artifacts
            .into_iter()
            .map(artifact_in)
            .collect::<Result<_, _>>()?,
        history: t
            .history
            .into_iter()
            .map(message_in)
            .collect::<Result<_, _>>()?,
        metadata: meta_in(t.metadata)?,
    })
}

pub(crate) fn event_out(event: v03::Event) -> pb::StreamResponse {
    use pb::stream_response::Payload;
    let payload = match event {
        v03::Event::Task(task) => Payload::Task(task_out(task)),
        v03::Event::Message(message) => Payload::Msg(message_out(message)),
        v03::Event::StatusUpdate(u) => Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
            task_id: u.task_id,
            context_id: u.context_id,
            status: Some(status_out(u.status)),
            r#final: u.is_final,
            metadata: meta_out(u.metadata),
        }),
        v03::Event::ArtifactUpdate(u) => Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
            task_id: u.task_id,
            context_id: u.context_id,
            artifact: Some(artifact_out(u.artifact)),
            append: u.append.unwrap_or(false),
            last_chunk: u.last_chunk.unwrap_or(false),
            metadata: meta_out(u.metadata),
        }),
    };
    pb::StreamResponse {
        payload: Some(payload),
    }
}

pub(crate) fn event_in(r: pb::StreamResponse) -> Result<v03::Event, A2aError> {
    use pb::stream_response::Payload;
    Ok(match r.payload {
        Some(Payload::Task(t)) => v03::Event::Task(task_in(t)?),
        Some(Payload::Msg(m)) => v03::Event::Message(message_in(m)?),
        Some(Payload::StatusUpdate(u)) => v03::Event::StatusUpdate(v03::TaskStatusUpdateEvent {
            task_id: u.task_id,
            context_id: u.context_id,
            status: status_in(u.status)?,
            is_final: u.r#final,
            metadata: meta_in(u.metadata)?,
        }),
        Some(Payload::ArtifactUpdate(u)) => {
            v03::Event::ArtifactUpdate(v03::TaskArtifactUpdateEvent {
                task_id: u.task_id,
                context_id: u.context_id,
                artifact: artifact_in(u.artifact.unwrap_or_default())?,
                // `false` is the proto default, which JSON-RPC left out.
                append: u.append.then_some(true),
                last_chunk: u.last_chunk.then_some(true),
                metadata: meta_in(u.metadata)?,
            })
        }
        None => return Err(invalid("a stream response holds no event")),
    })
}

pub(crate) fn send_response_out(r: v03::SendMessageResult) -> pb::SendMessageResponse {
    use pb::send_message_response::Payload;
    let payload = match r {
        v03::SendMessageResult::Task(t) => Payload::Task(task_out(t)),
        v03::SendMessageResult::Message(m) => Payload::Msg(message_out(m)),
    };
    pb::SendMessageResponse {
        payload: Some(payload),
    }
}

pub(crate) fn send_response_in(
    r: pb::SendMessageResponse,
) -> Result<v03::SendMessageResult, A2aError> {
    use pb::send_message_response::Payload;
    Ok(match r.payload {
        Some(Payload::Task(t)) => v03::SendMessageResult::Task(task_in(t)?),
        Some(Payload::Msg(m)) => v03::SendMessageResult::Message(message_in(m)?),
        None => return Err(invalid("a stream response holds no event")),
    })
}

fn push_out(c: v03::PushNotificationConfig) -> pb::PushNotificationConfig {
    pb::PushNotificationConfig {
        id: c.id.unwrap_or_default(),
        url: c.url,
        token: c.token.unwrap_or_default(),
        authentication: c.authentication.map(|a| pb::AuthenticationInfo {
            schemes: a.schemes,
            credentials: a.credentials.unwrap_or_default(),
        }),
    }
}

pub(crate) fn push_in(c: pb::PushNotificationConfig) -> v03::PushNotificationConfig {
    v03::PushNotificationConfig {
        id: non_empty(c.id),
        url: c.url,
        token: non_empty(c.token),
        authentication: c
            .authentication
            .map(|a| v03::PushNotificationAuthenticationInfo {
                schemes: a.schemes,
                credentials: non_empty(a.credentials),
            }),
    }
}

pub(crate) fn task_push_out(c: v03::TaskPushNotificationConfig) -> pb::TaskPushNotificationConfig {
    let config_id = c.push_notification_config.id.as_deref().unwrap_or_default();
    pb::TaskPushNotificationConfig {
        name: format!("tasks/{}/pushNotificationConfigs/{config_id}", c.task_id),
        push_notification_config: Some(push_out(c.push_notification_config)),
    }
}

/// The config named `tasks/{id}/pushNotificationConfigs/{configId}`, its
/// task id read from the name (an unreadable name is invalid params).
pub(crate) fn task_push_in(
    c: pb::TaskPushNotificationConfig,
) -> Result<v03::TaskPushNotificationConfig, A2aError> {
    let task_id = proto::task_id_of(&c.name)
        .ok_or_else(|| invalid(format!("bad push config name {:?}", c.name)))?
        .to_owned();
    Ok(v03::TaskPushNotificationConfig {
        task_id,
        push_notification_config: push_in(c.push_notification_config.unwrap_or_default()),
    })
}

pub(crate) fn send_request_out(r: v03::MessageSendParams) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        request: Some(message_out(r.message)),
        configuration: r.configuration.map(|c| pb::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            push_notification: c.push_notification_config.map(push_out),
            history_length: c.history_length.unwrap_or(0),
            // JSON-RPC's default was to wait; the proto's field is false
            // when unset, so the wait is always spelled out.
            blocking: c.blocking.unwrap_or(true),
        }),
        metadata: meta_out(r.metadata),
    }
}

pub(crate) fn send_request_in(
    r: pb::SendMessageRequest,
) -> Result<v03::MessageSendParams, A2aError> {
    Ok(v03::MessageSendParams {
        message: message_in(r.request.unwrap_or_default())?,
        configuration: r.configuration.map(|c| v03::MessageSendConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            blocking: Some(c.blocking),
            history_length: (c.history_length > 0).then_some(c.history_length),
            push_notification_config: c.push_notification.map(push_in),
        }),
        metadata: meta_in(r.metadata)?,
    })
}

/// The 0.3 card's gRPC form. Its security schemes and requirements are
/// left out (their proto form differs from their JSON one); clients read
/// those from the card document.
pub(crate) fn card_out(card: v03::AgentCard) -> pb::AgentCard {
    pb::AgentCard {
        protocol_version: card.protocol_version,
        name: card.name,
        description: card.description,
        url: card.url,
        preferred_transport: card.preferred_transport.unwrap_or_default(),
        additional_interfaces: card
            .additional_interfaces
            .into_iter()
            .map(|i| pb::AgentInterface {
                url: i.url,
                transport: i.transport,
            })
            .collect(),
        provider: card.provider.map(|p| pb::AgentProvider {
            url: p.url,
            organization: p.organization,
        }),
        version: card.version,
        documentation_url: card.documentation_url.unwrap_or_default(),
        capabilities: Some(pb::AgentCapabilities {
            streaming: card.capabilities.streaming.unwrap_or(false),
            push_notifications: card.capabilities.push_notifications.unwrap_or(false),
            extensions: Vec::new(),
        }),
        default_input_modes: card.default_input_modes,
        default_output_modes: card.default_output_modes,
        skills: card
            .skills
            .into_iter()
            .map(|s| pb::AgentSkill {
                id: s.id,
                name: s.name,
                description: s.description,
                tags: s.tags,
                examples: s.examples,
                input_modes: s.input_modes,
                output_modes: s.output_modes,
                ..Default::default()
            })
            .collect(),
        supports_authenticated_extended_card: card
            .supports_authenticated_extended_card
            .unwrap_or(false),
        ..Default::default()
    }
}

/// The 0.3 card from its gRPC form (see [`card_out`] for what is not carried).
pub(crate) fn card_in(card: pb::AgentCard) -> v03::AgentCard {
    let capabilities = card.capabilities.unwrap_or_default();
    v03::AgentCard {
        protocol_version: card.protocol_version,
        name: card.name,
        description: card.description,
        url: card.url,
        preferred_transport: (!card.preferred_transport.is_empty())
            .then_some(card.preferred_transport),
        additional_interfaces: card
            .additional_interfaces
            .into_iter()
            .map(|i| v03::AgentInterface {
                url: i.url,
                transport: i.transport,
            })
            .collect(),
        provider: card.provider.map(|p| a2a_core::AgentProvider {
            url: p.url,
            organization: p.organization,
        }),
        version: card.version,
        documentation_url: (!card.documentation_url.is_empty()).then_some(card.documentation_url),
        capabilities: v03::AgentCapabilities {
            streaming: Some(capabilities.streaming),
            push_notifications: Some(capabilities.push_notifications),
            ..Default::default()
        },
        default_input_modes: card.default_input_modes,
        default_output_modes: card.default_output_modes,
        skills: card
            .skills
            .into_iter()
            .map(|s| v03::AgentSkill {
                id: s.id,
                name: s.name,
                description: s.description,
                tags: s.tags,
                examples: s.examples,
                input_modes: s.input_modes,
                output_modes: s.output_modes,
                security: Vec::new(),
            })
            .collect(),
        supports_authenticated_extended_card: Some(card.supports_authenticated_extended_card),
        ..Default::default()
    }
}
