//! The generated 0.3 messages to and from the 0.3 ProtoJSON types of
//! [`a2a_core::v03::proto`] (the same messages, field for field).

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

fn part_out(part: proto::Part) -> pb::Part {
    use pb::file_part::File;
    use pb::part::Part as P;
    let content = if let Some(text) = part.text {
        Some(P::Text(text))
    } else if let Some(file) = part.file {
        let content = match (file.file_with_uri, file.file_with_bytes) {
            (Some(uri), _) => Some(File::FileWithUri(uri)),
            (None, Some(bytes)) => a2a_core::protojson::decode_bytes(&bytes)
                .ok()
                .map(File::FileWithBytes),
            (None, None) => None,
        };
        Some(P::File(pb::FilePart {
            mime_type: file.mime_type,
            name: file.name,
            file: content,
        }))
    } else {
        part.data.map(|data| {
            let data = match data.data {
                Value::Object(map) => map,
                other => Map::from_iter([("value".to_owned(), other)]),
            };
            P::Data(pb::DataPart {
                data: Some(data.to_proto()),
            })
        })
    };
    pb::Part {
        part: content,
        metadata: meta_out(part.metadata),
    }
}

pub(crate) fn part_in(part: pb::Part) -> Result<proto::Part, A2aError> {
    use pb::file_part::File;
    use pb::part::Part as P;
    let mut out = proto::Part {
        metadata: meta_in(part.metadata)?,
        ..proto::Part::default()
    };
    match part.part {
        Some(P::Text(text)) => out.text = Some(text),
        Some(P::File(file)) => {
            let (uri, bytes) = match file.file {
                Some(File::FileWithUri(uri)) => (Some(uri), None),
                Some(File::FileWithBytes(bytes)) => {
                    (None, Some(a2a_core::protojson::encode_bytes(&bytes)))
                }
                None => return Err(invalid("a file part holds neither a uri nor bytes")),
            };
            out.file = Some(proto::FilePart {
                file_with_uri: uri,
                file_with_bytes: bytes,
                mime_type: file.mime_type,
                name: file.name,
            });
        }
        Some(P::Data(data)) => {
            let data = meta_in(data.data)?.unwrap_or_default();
            out.data = Some(proto::DataPart {
                data: Value::Object(data),
            });
        }
        None => return Err(invalid("a part holds no content")),
    }
    Ok(out)
}

fn parts_in(parts: Vec<pb::Part>) -> Result<Vec<proto::Part>, A2aError> {
    parts.into_iter().map(part_in).collect()
}

fn role_number(role: proto::Role) -> i32 {
    match role.0 {
        v03::Role::User => pb::Role::User as i32,
        v03::Role::Agent => pb::Role::Agent as i32,
    }
}

fn message_out(m: proto::Message) -> pb::Message {
    pb::Message {
        message_id: m.message_id,
        context_id: m.context_id,
        task_id: m.task_id,
        role: role_number(m.role),
        content: m.content.into_iter().map(part_out).collect(),
        metadata: meta_out(m.metadata),
        extensions: m.extensions,
    }
}

fn message_in(m: pb::Message) -> Result<proto::Message, A2aError> {
    let role = if m.role == pb::Role::Agent as i32 {
        v03::Role::Agent
    } else {
        v03::Role::User
    };
    Ok(proto::Message {
        message_id: m.message_id,
        context_id: m.context_id,
        task_id: m.task_id,
        role: proto::Role(role),
        content: parts_in(m.content)?,
        metadata: meta_in(m.metadata)?,
        extensions: m.extensions,
    })
}

fn state_number(state: proto::TaskState) -> i32 {
    use pb::TaskState as S;
    (match state.0 {
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

fn state_in(number: i32) -> proto::TaskState {
    use pb::TaskState as S;
    proto::TaskState(match S::try_from(number).unwrap_or(S::Unspecified) {
        S::Submitted => v03::TaskState::Submitted,
        S::Working => v03::TaskState::Working,
        S::InputRequired => v03::TaskState::InputRequired,
        S::Completed => v03::TaskState::Completed,
        S::Cancelled => v03::TaskState::Canceled,
        S::Failed => v03::TaskState::Failed,
        S::Rejected => v03::TaskState::Rejected,
        S::AuthRequired => v03::TaskState::AuthRequired,
        S::Unspecified => v03::TaskState::Unknown,
    })
}

fn status_out(s: proto::TaskStatus) -> pb::TaskStatus {
    pb::TaskStatus {
        state: state_number(s.state),
        update: s.message.map(message_out),
        timestamp: time_out(s.timestamp),
    }
}

fn status_in(s: Option<pb::TaskStatus>) -> Result<proto::TaskStatus, A2aError> {
    let s = s.unwrap_or_default();
    Ok(proto::TaskStatus {
        state: state_in(s.state),
        message: s.update.map(message_in).transpose()?,
        timestamp: time_in(s.timestamp),
    })
}

fn artifact_out(a: proto::Artifact) -> pb::Artifact {
    pb::Artifact {
        artifact_id: a.artifact_id,
        name: a.name,
        description: a.description,
        parts: a.parts.into_iter().map(part_out).collect(),
        metadata: meta_out(a.metadata),
        extensions: a.extensions,
    }
}

fn artifact_in(a: pb::Artifact) -> Result<proto::Artifact, A2aError> {
    Ok(proto::Artifact {
        artifact_id: a.artifact_id,
        name: a.name,
        description: a.description,
        parts: parts_in(a.parts)?,
        metadata: meta_in(a.metadata)?,
        extensions: a.extensions,
    })
}

pub(crate) fn task_out(t: proto::Task) -> pb::Task {
    pb::Task {
        id: t.id,
        context_id: t.context_id,
        status: Some(status_out(t.status)),
        artifacts: t.artifacts.into_iter().map(artifact_out).collect(),
        history: t.history.into_iter().map(message_out).collect(),
        metadata: meta_out(t.metadata),
    }
}

pub(crate) fn task_in(t: pb::Task) -> Result<proto::Task, A2aError> {
    Ok(proto::Task {
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

pub(crate) fn event_out(r: proto::StreamResponse) -> pb::StreamResponse {
    use pb::stream_response::Payload;
    let payload = if let Some(task) = r.task {
        Some(Payload::Task(task_out(task)))
    } else if let Some(message) = r.message {
        Some(Payload::Msg(message_out(message)))
    } else if let Some(u) = r.status_update {
        Some(Payload::StatusUpdate(pb::TaskStatusUpdateEvent {
            task_id: u.task_id,
            context_id: u.context_id,
            status: Some(status_out(u.status)),
            r#final: u.is_final,
            metadata: meta_out(u.metadata),
        }))
    } else {
        r.artifact_update.map(|u| {
            Payload::ArtifactUpdate(pb::TaskArtifactUpdateEvent {
                task_id: u.task_id,
                context_id: u.context_id,
                artifact: Some(artifact_out(u.artifact)),
                append: u.append,
                last_chunk: u.last_chunk,
                metadata: meta_out(u.metadata),
            })
        })
    };
    pb::StreamResponse { payload }
}

pub(crate) fn event_in(r: pb::StreamResponse) -> Result<proto::StreamResponse, A2aError> {
    use pb::stream_response::Payload;
    let mut out = proto::StreamResponse::default();
    match r.payload {
        Some(Payload::Task(t)) => out.task = Some(task_in(t)?),
        Some(Payload::Msg(m)) => out.message = Some(message_in(m)?),
        Some(Payload::StatusUpdate(u)) => {
            out.status_update = Some(proto::TaskStatusUpdateEvent {
                task_id: u.task_id,
                context_id: u.context_id,
                status: status_in(u.status)?,
                is_final: u.r#final,
                metadata: meta_in(u.metadata)?,
            });
        }
        Some(Payload::ArtifactUpdate(u)) => {
            out.artifact_update = Some(proto::TaskArtifactUpdateEvent {
                task_id: u.task_id,
                context_id: u.context_id,
                artifact: artifact_in(u.artifact.unwrap_or_default())?,
                append: u.append,
                last_chunk: u.last_chunk,
                metadata: meta_in(u.metadata)?,
            });
        }
        None => return Err(invalid("a stream response holds no event")),
    }
    Ok(out)
}

pub(crate) fn send_response_out(r: proto::StreamResponse) -> pb::SendMessageResponse {
    use pb::send_message_response::Payload as Out;
    use pb::stream_response::Payload as In;
    let payload = match event_out(r).payload {
        Some(In::Task(t)) => Some(Out::Task(t)),
        Some(In::Msg(m)) => Some(Out::Msg(m)),
        _ => None,
    };
    pb::SendMessageResponse { payload }
}

pub(crate) fn send_response_in(
    r: pb::SendMessageResponse,
) -> Result<proto::StreamResponse, A2aError> {
    use pb::send_message_response::Payload as In;
    use pb::stream_response::Payload as Out;
    let payload = match r.payload {
        Some(In::Task(t)) => Some(Out::Task(t)),
        Some(In::Msg(m)) => Some(Out::Msg(m)),
        None => None,
    };
    event_in(pb::StreamResponse { payload })
}

fn push_out(c: proto::PushNotificationConfig) -> pb::PushNotificationConfig {
    pb::PushNotificationConfig {
        id: c.id,
        url: c.url,
        token: c.token,
        authentication: c.authentication.map(|a| pb::AuthenticationInfo {
            schemes: a.schemes,
            credentials: a.credentials,
        }),
    }
}

fn push_in(c: pb::PushNotificationConfig) -> proto::PushNotificationConfig {
    proto::PushNotificationConfig {
        id: c.id,
        url: c.url,
        token: c.token,
        authentication: c.authentication.map(|a| proto::AuthenticationInfo {
            schemes: a.schemes,
            credentials: a.credentials,
        }),
    }
}

pub(crate) fn task_push_out(
    c: proto::TaskPushNotificationConfig,
) -> pb::TaskPushNotificationConfig {
    pb::TaskPushNotificationConfig {
        name: c.name,
        push_notification_config: Some(push_out(c.push_notification_config)),
    }
}

pub(crate) fn task_push_in(c: pb::TaskPushNotificationConfig) -> proto::TaskPushNotificationConfig {
    proto::TaskPushNotificationConfig {
        name: c.name,
        push_notification_config: push_in(c.push_notification_config.unwrap_or_default()),
    }
}

pub(crate) fn send_request_out(r: proto::SendMessageRequest) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        request: Some(message_out(r.message)),
        configuration: r.configuration.map(|c| pb::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            push_notification: c.push_notification.map(push_out),
            history_length: c.history_length,
            blocking: c.blocking,
        }),
        metadata: meta_out(r.metadata),
    }
}

pub(crate) fn send_request_in(
    r: pb::SendMessageRequest,
) -> Result<proto::SendMessageRequest, A2aError> {
    Ok(proto::SendMessageRequest {
        message: message_in(r.request.unwrap_or_default())?,
        configuration: r.configuration.map(|c| proto::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            push_notification: c.push_notification.map(push_in),
            history_length: c.history_length,
            blocking: c.blocking,
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
