//! The 0.3 messages in their ProtoJSON form: what 0.3's HTTP+JSON binding
//! carries. 0.3 defined that binding by its protobuf package `a2a.v1`
//! (`specification/grpc/a2a.proto` of the 0.3 release), so its bodies are
//! those messages' canonical JSON: parts without `kind` (`{"text": …}`,
//! `{"file": {"fileWithUri": …}}`, `{"data": {"data": {…}}}`), a message's
//! parts under `content`, enums as `ROLE_USER` and `TASK_STATE_WORKING`,
//! push configs named `tasks/{id}/pushNotificationConfigs/{configId}`.
//!
//! Each type converts to and from its JSON-RPC counterpart in
//! [`super`], which converts to and from 1.0; conversions of what came from
//! the network return [`A2aError`] (invalid params), never panic.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::protojson::nullable;
use crate::{A2aError, Metadata};

fn invalid(what: impl std::fmt::Display) -> A2aError {
    A2aError::invalid_params(what.to_string())
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A protobuf enum read from its name or its number (ProtoJSON accepts
/// both); an unknown one reads as number 0 (`…_UNSPECIFIED`).
fn enum_number<'de, D: Deserializer<'de>>(d: D, names: &[&str]) -> Result<usize, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::String(name)) => names.iter().position(|n| *n == name).unwrap_or(0),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n < names.len())
            .unwrap_or(0),
        _ => 0,
    })
}

const ROLES: [&str; 3] = ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"];

/// `a2a.v1.Role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Role(pub super::Role);

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self.0 {
            super::Role::User => ROLES[1],
            super::Role::Agent => ROLES[2],
        })
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // 0.3 had no unspecified role; a message without one was the user's.
        Ok(Role(match enum_number(d, &ROLES)? {
            2 => super::Role::Agent,
            _ => super::Role::User,
        }))
    }
}

const STATES: [(&str, super::TaskState); 9] = [
    ("TASK_STATE_UNSPECIFIED", super::TaskState::Unknown),
    ("TASK_STATE_SUBMITTED", super::TaskState::Submitted),
    ("TASK_STATE_WORKING", super::TaskState::Working),
    ("TASK_STATE_COMPLETED", super::TaskState::Completed),
    ("TASK_STATE_FAILED", super::TaskState::Failed),
    ("TASK_STATE_CANCELLED", super::TaskState::Canceled),
    ("TASK_STATE_INPUT_REQUIRED", super::TaskState::InputRequired),
    ("TASK_STATE_REJECTED", super::TaskState::Rejected),
    ("TASK_STATE_AUTH_REQUIRED", super::TaskState::AuthRequired),
];

/// `a2a.v1.TaskState` (its names spell `CANCELLED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskState(pub super::TaskState);

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let name = STATES
            .iter()
            .find(|(_, state)| *state == self.0)
            .map_or(STATES[0].0, |(name, _)| name);
        s.serialize_str(name)
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let names = STATES.map(|(name, _)| name);
        Ok(TaskState(STATES[enum_number(d, &names)?].1))
    }
}

/// `a2a.v1.FilePart`: a URI or inline bytes (base64).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilePart {
    /// Where the content is.
    #[serde(
        default,
        alias = "file_with_uri",
        skip_serializing_if = "Option::is_none"
    )]
    pub file_with_uri: Option<String>,
    /// The content, base64.
    #[serde(
        default,
        alias = "file_with_bytes",
        skip_serializing_if = "Option::is_none"
    )]
    pub file_with_bytes: Option<String>,
    /// The media type.
    #[serde(
        default,
        alias = "mime_type",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub mime_type: String,
    /// The file name.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
}

/// `a2a.v1.DataPart`: a JSON object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DataPart {
    /// The data.
    #[serde(default)]
    pub data: Value,
}

/// `a2a.v1.Part`: exactly one of `text`, `file` and `data`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// File content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FilePart>,
    /// Structured content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataPart>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl From<super::Part> for Part {
    fn from(part: super::Part) -> Self {
        match part {
            super::Part::Text { text, metadata } => Part {
                text: Some(text),
                metadata,
                ..Part::default()
            },
            super::Part::File { file, metadata } => Part {
                file: Some(FilePart {
                    file_with_uri: file.uri,
                    file_with_bytes: file.bytes,
                    mime_type: file.mime_type.unwrap_or_default(),
                    name: file.name.unwrap_or_default(),
                }),
                metadata,
                ..Part::default()
            },
            super::Part::Data { data, metadata } => Part {
                data: Some(DataPart { data }),
                metadata,
                ..Part::default()
            },
        }
    }
}

impl TryFrom<Part> for super::Part {
    type Error = A2aError;

    fn try_from(part: Part) -> Result<Self, A2aError> {
        let metadata = part.metadata;
        Ok(match (part.text, part.file, part.data) {
            (Some(text), None, None) => super::Part::Text { text, metadata },
            (None, Some(file), None) => super::Part::File {
                file: super::FileContent {
                    name: non_empty(file.name),
                    mime_type: non_empty(file.mime_type),
                    bytes: file.file_with_bytes,
                    uri: file.file_with_uri,
                },
                metadata,
            },
            (None, None, Some(data)) => super::Part::Data {
                data: data.data,
                metadata,
            },
            _ => return Err(invalid("a part holds exactly one of text, file and data")),
        })
    }
}

fn parts_in(parts: Vec<Part>) -> Result<Vec<super::Part>, A2aError> {
    parts.into_iter().map(TryInto::try_into).collect()
}

fn parts_out(parts: Vec<super::Part>) -> Vec<Part> {
    parts.into_iter().map(Part::from).collect()
}

/// `a2a.v1.Message` (its parts are `content`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id.
    #[serde(default, alias = "message_id", deserialize_with = "nullable")]
    pub message_id: String,
    /// The conversation.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// The task.
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    /// The sender.
    #[serde(default)]
    pub role: Role,
    /// The content.
    #[serde(default, deserialize_with = "nullable")]
    pub content: Vec<Part>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extensions that contributed.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

impl From<super::Message> for Message {
    fn from(m: super::Message) -> Self {
        Message {
            message_id: m.message_id,
            context_id: m.context_id.unwrap_or_default(),
            task_id: m.task_id.unwrap_or_default(),
            role: Role(m.role),
            content: parts_out(m.parts),
            metadata: m.metadata,
            extensions: m.extensions,
        }
    }
}

impl TryFrom<Message> for super::Message {
    type Error = A2aError;

    fn try_from(m: Message) -> Result<Self, A2aError> {
        Ok(super::Message {
            message_id: m.message_id,
            role: m.role.0,
            parts: parts_in(m.content)?,
            context_id: non_empty(m.context_id),
            task_id: non_empty(m.task_id),
            // Not in the 0.3 proto.
            reference_task_ids: Vec::new(),
            extensions: m.extensions,
            metadata: m.metadata,
        })
    }
}

/// `a2a.v1.TaskStatus` (its message is the proto's `update`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state.
    #[serde(default)]
    pub state: TaskState,
    /// A message about the state.
    #[serde(default, alias = "update", skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was entered (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl From<super::TaskStatus> for TaskStatus {
    fn from(s: super::TaskStatus) -> Self {
        TaskStatus {
            state: TaskState(s.state),
            message: s.message.map(Message::from),
            timestamp: s.timestamp,
        }
    }
}

impl TryFrom<TaskStatus> for super::TaskStatus {
    type Error = A2aError;

    fn try_from(s: TaskStatus) -> Result<Self, A2aError> {
        Ok(super::TaskStatus {
            state: s.state.0,
            message: s.message.map(TryInto::try_into).transpose()?,
            timestamp: s.timestamp,
        })
    }
}

/// `a2a.v1.Artifact`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique id within the task.
    #[serde(default, alias = "artifact_id", deserialize_with = "nullable")]
    pub artifact_id: String,
    /// Name.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// The content.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Extensions that contributed.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

impl From<super::Artifact> for Artifact {
    fn from(a: super::Artifact) -> Self {
        Artifact {
            artifact_id: a.artifact_id,
            name: a.name.unwrap_or_default(),
            description: a.description.unwrap_or_default(),
            parts: parts_out(a.parts),
            metadata: a.metadata,
            extensions: a.extensions,
        }
    }
}

impl TryFrom<Artifact> for super::Artifact {
    type Error = A2aError;

    fn try_from(a: Artifact) -> Result<Self, A2aError> {
        Ok(super::Artifact {
            artifact_id: a.artifact_id,
            name: non_empty(a.name),
            description: non_empty(a.description),
            parts: parts_in(a.parts)?,
            metadata: a.metadata,
            extensions: a.extensions,
        })
    }
}

/// `a2a.v1.Task`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Unique id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// The conversation.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// Current status.
    #[serde(default, deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Outputs.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    /// The messages so far.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl From<super::Task> for Task {
    fn from(t: super::Task) -> Self {
        Task {
            id: t.id,
            context_id: t.context_id,
            status: t.status.into(),
            artifacts: t.artifacts.into_iter().map(Artifact::from).collect(),
            history: t.history.into_iter().map(Message::from).collect(),
            metadata: t.metadata,
        }
    }
}

impl TryFrom<Task> for super::Task {
    type Error = A2aError;

    fn try_from(t: Task) -> Result<Self, A2aError> {
        Ok(super::Task {
            id: t.id,
            context_id: t.context_id,
            status: t.status.try_into()?,
            history: t
                .history
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            artifacts: t
                .artifacts
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            metadata: t.metadata,
        })
    }
}

/// `a2a.v1.TaskStatusUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// The conversation.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// The new status.
    #[serde(default, deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Whether this is the stream's last event.
    #[serde(
        default,
        rename = "final",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub is_final: bool,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `a2a.v1.TaskArtifactUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// The conversation.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// The artifact (or the chunk of it).
    #[serde(default, deserialize_with = "nullable")]
    pub artifact: Artifact,
    /// Appends to an artifact sent before.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub append: bool,
    /// The artifact's last chunk.
    #[serde(
        default,
        alias = "last_chunk",
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub last_chunk: bool,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `a2a.v1.StreamResponse`, also `a2a.v1.SendMessageResponse` (which has
/// its first two members): exactly one member is set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamResponse {
    /// A task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// A message (the proto's `msg`).
    #[serde(default, alias = "msg", skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// A status update.
    #[serde(
        default,
        alias = "status_update",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_update: Option<TaskStatusUpdateEvent>,
    /// An artifact update.
    #[serde(
        default,
        alias = "artifact_update",
        skip_serializing_if = "Option::is_none"
    )]
    pub artifact_update: Option<TaskArtifactUpdateEvent>,
}

impl From<super::Event> for StreamResponse {
    fn from(event: super::Event) -> Self {
        let mut out = StreamResponse::default();
        match event {
            super::Event::Task(t) => out.task = Some(t.into()),
            super::Event::Message(m) => out.message = Some(m.into()),
            super::Event::StatusUpdate(u) => {
                out.status_update = Some(TaskStatusUpdateEvent {
                    task_id: u.task_id,
                    context_id: u.context_id,
                    status: u.status.into(),
                    is_final: u.is_final,
                    metadata: u.metadata,
                });
            }
            super::Event::ArtifactUpdate(u) => {
                out.artifact_update = Some(TaskArtifactUpdateEvent {
                    task_id: u.task_id,
                    context_id: u.context_id,
                    artifact: u.artifact.into(),
                    append: u.append.unwrap_or(false),
                    last_chunk: u.last_chunk.unwrap_or(false),
                    metadata: u.metadata,
                });
            }
        }
        out
    }
}

impl TryFrom<StreamResponse> for super::Event {
    type Error = A2aError;

    fn try_from(r: StreamResponse) -> Result<Self, A2aError> {
        Ok(
            match (r.task, r.message, r.status_update, r.artifact_update) {
                (Some(t), None, None, None) => super::Event::Task(t.try_into()?),
                (None, Some(m), None, None) => super::Event::Message(m.try_into()?),
                (None, None, Some(u), None) => {
                    super::Event::StatusUpdate(super::TaskStatusUpdateEvent {
                        task_id: u.task_id,
                        context_id: u.context_id,
                        status: u.status.try_into()?,
                        is_final: u.is_final,
                        metadata: u.metadata,
                    })
                }
                (None, None, None, Some(u)) => {
                    super::Event::ArtifactUpdate(super::TaskArtifactUpdateEvent {
                        task_id: u.task_id,
                        context_id: u.context_id,
                        artifact: u.artifact.try_into()?,
                        append: u.append.then_some(true),
                        last_chunk: u.last_chunk.then_some(true),
                        metadata: u.metadata,
                    })
                }
                _ => return Err(invalid("a stream response holds exactly one event")),
            },
        )
    }
}

impl From<super::SendMessageResult> for StreamResponse {
    fn from(result: super::SendMessageResult) -> Self {
        match result {
            super::SendMessageResult::Task(t) => super::Event::Task(t).into(),
            super::SendMessageResult::Message(m) => super::Event::Message(m).into(),
        }
    }
}

impl TryFrom<StreamResponse> for super::SendMessageResult {
    type Error = A2aError;

    fn try_from(r: StreamResponse) -> Result<Self, A2aError> {
        match super::Event::try_from(r)? {
            super::Event::Task(t) => Ok(super::SendMessageResult::Task(t)),
            super::Event::Message(m) => Ok(super::SendMessageResult::Message(m)),
            _ => Err(invalid("SendMessage answered with an update event")),
        }
    }
}

/// `a2a.v1.AuthenticationInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AuthenticationInfo {
    /// Accepted schemes.
    #[serde(default, deserialize_with = "nullable")]
    pub schemes: Vec<String>,
    /// Credentials.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub credentials: String,
}

/// `a2a.v1.PushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PushNotificationConfig {
    /// The config's id.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    /// Where notifications go.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// A token sent along.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub token: String,
    /// How to authenticate to `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl From<super::PushNotificationConfig> for PushNotificationConfig {
    fn from(c: super::PushNotificationConfig) -> Self {
        PushNotificationConfig {
            id: c.id.unwrap_or_default(),
            url: c.url,
            token: c.token.unwrap_or_default(),
            authentication: c.authentication.map(|a| AuthenticationInfo {
                schemes: a.schemes,
                credentials: a.credentials.unwrap_or_default(),
            }),
        }
    }
}

impl From<PushNotificationConfig> for super::PushNotificationConfig {
    fn from(c: PushNotificationConfig) -> Self {
        super::PushNotificationConfig {
            id: non_empty(c.id),
            url: c.url,
            token: non_empty(c.token),
            authentication: c
                .authentication
                .map(|a| super::PushNotificationAuthenticationInfo {
                    schemes: a.schemes,
                    credentials: non_empty(a.credentials),
                }),
        }
    }
}

/// `a2a.v1.TaskPushNotificationConfig`: named
/// `tasks/{taskId}/pushNotificationConfigs/{configId}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The resource name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// The config.
    #[serde(
        default,
        alias = "push_notification_config",
        deserialize_with = "nullable"
    )]
    pub push_notification_config: PushNotificationConfig,
}

/// The resource name of task `task_id` (`tasks/{id}`).
pub fn task_name(task_id: &str) -> String {
    format!("tasks/{task_id}")
}

/// The task id in a resource name starting `tasks/{id}` (`None` for
/// another name or an empty id).
pub fn task_id_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("tasks/")?;
    let id = rest.split('/').next().unwrap_or_default();
    (!id.is_empty()).then_some(id)
}

/// The task id and config id in `tasks/{id}/pushNotificationConfigs/{configId}`.
pub fn push_config_name_parts(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("tasks/")?;
    let (task, config) = rest.split_once("/pushNotificationConfigs/")?;
    (!task.is_empty() && !task.contains('/') && !config.is_empty() && !config.contains('/'))
        .then_some((task, config))
}

impl From<super::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(c: super::TaskPushNotificationConfig) -> Self {
        let config_id = c.push_notification_config.id.clone().unwrap_or_default();
        TaskPushNotificationConfig {
            name: format!("tasks/{}/pushNotificationConfigs/{config_id}", c.task_id),
            push_notification_config: c.push_notification_config.into(),
        }
    }
}

impl TaskPushNotificationConfig {
    /// The JSON-RPC form, its task id read from the name (an unreadable
    /// name is invalid params).
    pub fn into_jsonrpc(self) -> Result<super::TaskPushNotificationConfig, A2aError> {
        let task_id = task_id_of(&self.name)
            .ok_or_else(|| invalid(format!("bad push config name {:?}", self.name)))?
            .to_owned();
        Ok(super::TaskPushNotificationConfig {
            task_id,
            push_notification_config: self.push_notification_config.into(),
        })
    }
}

/// `a2a.v1.SendMessageConfiguration`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Accepted output media types.
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// A push config for the task.
    #[serde(
        default,
        alias = "push_notification",
        skip_serializing_if = "Option::is_none"
    )]
    pub push_notification: Option<PushNotificationConfig>,
    /// Messages of history to return.
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "nullable",
        skip_serializing_if = "is_zero"
    )]
    pub history_length: i32,
    /// Wait for a terminal or interrupted state (proto default: no).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub blocking: bool,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `a2a.v1.SendMessageRequest` (its message is the proto's `request`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SendMessageRequest {
    /// The message.
    #[serde(default, alias = "request", deserialize_with = "nullable")]
    pub message: Message,
    /// How to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl From<super::MessageSendParams> for SendMessageRequest {
    fn from(p: super::MessageSendParams) -> Self {
        SendMessageRequest {
            message: p.message.into(),
            configuration: p.configuration.map(|c| SendMessageConfiguration {
                accepted_output_modes: c.accepted_output_modes,
                push_notification: c.push_notification_config.map(Into::into),
                history_length: c.history_length.unwrap_or(0),
                // JSON-RPC's default was to wait; the proto's field is false
                // when unset, so the wait is always spelled out.
                blocking: c.blocking.unwrap_or(true),
            }),
            metadata: p.metadata,
        }
    }
}

impl TryFrom<SendMessageRequest> for super::MessageSendParams {
    type Error = A2aError;

    fn try_from(r: SendMessageRequest) -> Result<Self, A2aError> {
        Ok(super::MessageSendParams {
            message: r.message.try_into()?,
            configuration: r.configuration.map(|c| super::MessageSendConfiguration {
                accepted_output_modes: c.accepted_output_modes,
                blocking: Some(c.blocking),
                history_length: (c.history_length > 0).then_some(c.history_length),
                push_notification_config: c.push_notification.map(Into::into),
            }),
            metadata: r.metadata,
        })
    }
}

/// `a2a.v1.CreateTaskPushNotificationConfigRequest`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskPushNotificationConfigRequest {
    /// The task's resource name (`tasks/{id}`).
    #[serde(default, deserialize_with = "nullable")]
    pub parent: String,
    /// The config's id.
    #[serde(
        default,
        alias = "config_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub config_id: String,
    /// The config.
    #[serde(default, deserialize_with = "nullable")]
    pub config: TaskPushNotificationConfig,
}

/// `a2a.v1.ListTaskPushNotificationConfigResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigResponse {
    /// The configs.
    #[serde(default, deserialize_with = "nullable")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The next page (0.3 servers sent none).
    #[serde(
        default,
        alias = "next_page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_page_token: String,
}

/// The error body 0.3's HTTP+JSON binding answers with (`{"message": …}`),
/// beside the HTTP status of [`http_status`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    #[serde(default, deserialize_with = "nullable")]
    pub message: String,
}

/// The HTTP status 0.3's HTTP+JSON binding gives an error of `kind`.
pub fn http_status(kind: crate::ErrorKind) -> u16 {
    use crate::ErrorKind as K;
    match kind {
        K::ParseError | K::InvalidRequest => 400,
        K::MethodNotFound | K::TaskNotFound | K::ExtendedAgentCardNotConfigured => 404,
        K::InvalidParams => 422,
        K::TaskNotCancelable => 409,
        K::PushNotificationNotSupported | K::UnsupportedOperation => 501,
        K::ContentTypeNotSupported => 415,
        K::InvalidAgentResponse => 502,
        K::Unauthenticated => 401,
        K::Unauthorized => 403,
        K::Busy => 429,
        K::ExtensionSupportRequired | K::VersionNotSupported => 400,
        K::Internal => 500,
    }
}

/// The error a 0.3 HTTP+JSON answer of `status` with `body` stands for
/// (by its status; the body's message when it has one).
pub fn error_from_http(status: u16, body: &[u8]) -> A2aError {
    use crate::ErrorKind as K;
    let kind = match status {
        409 => K::TaskNotCancelable,
        501 => K::UnsupportedOperation,
        502 => K::InvalidAgentResponse,
        422 => K::InvalidParams,
        400 => K::InvalidRequest,
        other => K::from_http_status(other).unwrap_or(K::Internal),
    };
    let message = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.message)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| kind.default_message().to_owned());
    A2aError::new(kind, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_python_send_request_reads_and_writes_back() {
        let body = json!({
            "message": {"messageId": "m1", "role": "ROLE_USER",
                "content": [{"text": "hi"}, {"data": {"data": {"a": 1}}},
                    {"file": {"fileWithUri": "https://x/f", "mimeType": "text/plain"}}]},
            "configuration": {"blocking": true, "acceptedOutputModes": ["text/plain"]}
        });
        let request: SendMessageRequest = serde_json::from_value(body.clone()).unwrap();
        let params = super::super::MessageSendParams::try_from(request).unwrap();
        let v1 = params.clone().into_v1().unwrap();
        assert_eq!(v1.message.text(), "hi");
        assert!(!v1.configuration.unwrap().return_immediately);
        let back = serde_json::to_value(SendMessageRequest::from(params)).unwrap();
        assert_eq!(back, body);
    }

    #[test]
    fn enums_by_name_or_number_and_hostile_parts() {
        let status: TaskStatus =
            serde_json::from_value(json!({"state": "TASK_STATE_CANCELLED"})).unwrap();
        assert_eq!(status.state.0, super::super::TaskState::Canceled);
        let status: TaskStatus = serde_json::from_value(json!({"state": 2})).unwrap();
        assert_eq!(status.state.0, super::super::TaskState::Working);
        let status: TaskStatus = serde_json::from_value(json!({"state": 99})).unwrap();
        assert_eq!(status.state.0, super::super::TaskState::Unknown);
        let two: Part = serde_json::from_value(json!({"text": "a", "data": {}})).unwrap();
        assert!(super::super::Part::try_from(two).is_err());
        assert!(super::super::Part::try_from(Part::default()).is_err());
        let event = StreamResponse::default();
        assert!(super::super::Event::try_from(event).is_err());
    }

    #[test]
    fn push_config_names() {
        assert_eq!(
            push_config_name_parts("tasks/t1/pushNotificationConfigs/c1"),
            Some(("t1", "c1"))
        );
        assert_eq!(
            push_config_name_parts("tasks//pushNotificationConfigs/c"),
            None
        );
        assert_eq!(task_id_of("tasks/t1"), Some("t1"));
        assert_eq!(task_id_of("tasks/"), None);
        assert_eq!(task_id_of("other/t1"), None);
    }

    #[test]
    fn errors_by_status() {
        let err = error_from_http(409, br#"{"message":"no"}"#);
        assert_eq!(err.kind(), crate::ErrorKind::TaskNotCancelable);
        assert_eq!(err.message(), "no");
        assert_eq!(
            error_from_http(404, b"garbage").kind(),
            crate::ErrorKind::TaskNotFound
        );
        assert_eq!(http_status(crate::ErrorKind::InvalidParams), 422);
    }
}
