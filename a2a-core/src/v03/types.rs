//! The 0.3 messages, parts, tasks, events, push configs and request params,
//! with their conversions to and from the 1.0 types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protojson::{decode_bytes, encode_bytes, format_timestamp, nullable, parse_timestamp};
use crate::{A2aError, Metadata, PartContent};

fn invalid(what: impl std::fmt::Display) -> A2aError {
    A2aError::invalid_params(what.to_string())
}

/// An empty string as `None`: 1.0 keeps absent ids as `""`, 0.3 leaves them out.
fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// Who sent a 0.3 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `user`.
    #[default]
    User,
    /// `agent`.
    Agent,
}

impl Role {
    fn into_v1(self) -> crate::Role {
        match self {
            Role::User => crate::Role::User,
            Role::Agent => crate::Role::Agent,
        }
    }

    fn from_v1(role: crate::Role) -> Self {
        match role {
            crate::Role::Agent => Role::Agent,
            // 0.3 had no unspecified role; a message without one was the user's.
            crate::Role::User | crate::Role::Unspecified => Role::User,
        }
    }
}

/// The file of a 0.3 file part: inline `bytes` (base64) or a `uri`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    /// The file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The media type (1.0 `mediaType`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The content, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// Where the content is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// One piece of content in 0.3 form, discriminated by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    /// `{"kind":"text","text":…}`.
    Text {
        /// The text.
        text: String,
        /// Extra information.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
    },
    /// `{"kind":"file","file":{…}}`.
    File {
        /// The file.
        file: FileContent,
        /// Extra information.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
    },
    /// `{"kind":"data","data":{…}}` (an object in 0.3).
    Data {
        /// The data.
        data: Value,
        /// Extra information.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
    },
}

/// The key a 1.0 data part that is not an object goes under in 0.3, whose
/// data parts held objects only.
const WRAPPED_DATA_KEY: &str = "value";

impl Part {
    /// The 1.0 part. A file must hold exactly one of `bytes` (valid base64)
    /// and `uri`.
    pub fn into_v1(self) -> Result<crate::Part, A2aError> {
        Ok(match self {
            Part::Text { text, metadata } => crate::Part {
                metadata,
                ..crate::Part::text(text)
            },
            Part::Data { data, metadata } => crate::Part {
                metadata,
                media_type: "application/json".to_owned(),
                ..crate::Part::data(data)
            },
            Part::File { file, metadata } => {
                let content = match (file.bytes, file.uri) {
                    (Some(bytes), None) => PartContent::Raw(
                        decode_bytes(&bytes)
                            .map_err(|e| invalid(format!("file part bytes are not base64: {e}")))?,
                    ),
                    (None, Some(uri)) => PartContent::Url(uri),
                    _ => return Err(invalid("a file part holds exactly one of bytes and uri")),
                };
                crate::Part {
                    content,
                    metadata,
                    filename: file.name.unwrap_or_default(),
                    media_type: file.mime_type.unwrap_or_default(),
                }
            }
        })
    }

    /// The 0.3 part. Data that is not an object is wrapped as `{"value": …}`
    /// (0.3 data parts were objects); a text part's file name and media type
    /// have no 0.3 place and are dropped.
    pub fn from_v1(part: crate::Part) -> Self {
        let crate::Part {
            content,
            metadata,
            filename,
            media_type,
        } = part;
        let file = |bytes, uri| FileContent {
            name: non_empty(filename),
            mime_type: non_empty(media_type),
            bytes,
            uri,
        };
        match content {
            PartContent::Text(text) => Part::Text { text, metadata },
            PartContent::Raw(raw) => Part::File {
                file: file(Some(encode_bytes(&raw)), None),
                metadata,
            },
            PartContent::Url(url) => Part::File {
                file: file(None, Some(url)),
                metadata,
            },
            PartContent::Data(data) => Part::Data {
                data: match data {
                    object @ Value::Object(_) => object,
                    other => serde_json::json!({ WRAPPED_DATA_KEY: other }),
                },
                metadata,
            },
        }
    }
}

fn parts_into_v1(parts: Vec<Part>) -> Result<Vec<crate::Part>, A2aError> {
    parts.into_iter().map(Part::into_v1).collect()
}

fn parts_from_v1(parts: Vec<crate::Part>) -> Vec<Part> {
    parts.into_iter().map(Part::from_v1).collect()
}

/// A 0.3 message (`kind: "message"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", rename = "message")]
pub struct Message {
    /// Unique id.
    #[serde(default, deserialize_with = "nullable")]
    pub message_id: String,
    /// The sender.
    #[serde(default, deserialize_with = "nullable")]
    pub role: Role,
    /// The content.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Other tasks given as context.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
    /// Extensions that contributed.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Message {
    /// The 1.0 message.
    pub fn into_v1(self) -> Result<crate::Message, A2aError> {
        Ok(crate::Message {
            message_id: self.message_id,
            context_id: self.context_id.unwrap_or_default(),
            task_id: self.task_id.unwrap_or_default(),
            role: self.role.into_v1(),
            parts: parts_into_v1(self.parts)?,
            metadata: self.metadata,
            extensions: self.extensions,
            reference_task_ids: self.reference_task_ids,
        })
    }

    /// The 0.3 message.
    pub fn from_v1(message: crate::Message) -> Self {
        Message {
            message_id: message.message_id,
            role: Role::from_v1(message.role),
            parts: parts_from_v1(message.parts),
            context_id: non_empty(message.context_id),
            task_id: non_empty(message.task_id),
            reference_task_ids: message.reference_task_ids,
            extensions: message.extensions,
            metadata: message.metadata,
        }
    }
}

/// A 0.3 task state, in its lowercase kebab-case form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// `submitted`.
    Submitted,
    /// `working`.
    Working,
    /// `input-required`.
    InputRequired,
    /// `completed`.
    Completed,
    /// `canceled`.
    Canceled,
    /// `failed`.
    Failed,
    /// `rejected`.
    Rejected,
    /// `auth-required`.
    AuthRequired,
    /// `unknown` (1.0 `TASK_STATE_UNSPECIFIED`).
    #[default]
    Unknown,
}

impl TaskState {
    /// The 1.0 state.
    pub fn into_v1(self) -> crate::TaskState {
        use crate::TaskState as S;
        match self {
            TaskState::Submitted => S::Submitted,
            TaskState::Working => S::Working,
            TaskState::InputRequired => S::InputRequired,
            TaskState::Completed => S::Completed,
            TaskState::Canceled => S::Canceled,
            TaskState::Failed => S::Failed,
            TaskState::Rejected => S::Rejected,
            TaskState::AuthRequired => S::AuthRequired,
            TaskState::Unknown => S::Unspecified,
        }
    }

    /// The 0.3 state.
    pub fn from_v1(state: crate::TaskState) -> Self {
        use crate::TaskState as S;
        match state {
            S::Submitted => TaskState::Submitted,
            S::Working => TaskState::Working,
            S::InputRequired => TaskState::InputRequired,
            S::Completed => TaskState::Completed,
            S::Canceled => TaskState::Canceled,
            S::Failed => TaskState::Failed,
            S::Rejected => TaskState::Rejected,
            S::AuthRequired => TaskState::AuthRequired,
            S::Unspecified => TaskState::Unknown,
        }
    }
}

/// A 0.3 task status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    #[serde(default, deserialize_with = "nullable")]
    pub state: TaskState,
    /// A message about the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the state was entered (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// The 1.0 status. A timestamp that is not RFC 3339 is dropped: it only
    /// informs, and a 0.3 peer's clock text must not fail the call.
    pub fn into_v1(self) -> Result<crate::TaskStatus, A2aError> {
        Ok(crate::TaskStatus {
            state: self.state.into_v1(),
            message: self
                .message
                .map(|m| m.into_v1().map(std::sync::Arc::new))
                .transpose()?,
            timestamp: self
                .timestamp
                .as_deref()
                .and_then(|t| parse_timestamp(t).ok()),
        })
    }

    /// The 0.3 status.
    pub fn from_v1(status: crate::TaskStatus) -> Self {
        TaskStatus {
            state: TaskState::from_v1(status.state),
            message: status
                .message
                .map(|m| Message::from_v1(std::sync::Arc::unwrap_or_clone(m))),
            timestamp: status.timestamp.as_ref().map(format_timestamp),
        }
    }
}

/// A 0.3 artifact.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique id within the task.
    #[serde(default, deserialize_with = "nullable")]
    pub artifact_id: String,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
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

impl Artifact {
    /// The 1.0 artifact.
    pub fn into_v1(self) -> Result<crate::Artifact, A2aError> {
        Ok(crate::Artifact {
            artifact_id: self.artifact_id,
            name: self.name.unwrap_or_default(),
            description: self.description.unwrap_or_default(),
            parts: parts_into_v1(self.parts)?,
            metadata: self.metadata,
            extensions: self.extensions,
        })
    }

    /// The 0.3 artifact.
    pub fn from_v1(artifact: crate::Artifact) -> Self {
        Artifact {
            artifact_id: artifact.artifact_id,
            name: non_empty(artifact.name),
            description: non_empty(artifact.description),
            parts: parts_from_v1(artifact.parts),
            metadata: artifact.metadata,
            extensions: artifact.extensions,
        }
    }
}

/// A 0.3 task (`kind: "task"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", rename = "task")]
pub struct Task {
    /// Unique id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// The conversation.
    #[serde(default, deserialize_with = "nullable")]
    pub context_id: String,
    /// Current status.
    #[serde(default, deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Messages exchanged.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    /// Outputs.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// The 1.0 task.
    pub fn into_v1(self) -> Result<crate::Task, A2aError> {
        Ok(crate::Task {
            id: self.id,
            context_id: self.context_id,
            status: self.status.into_v1()?,
            artifacts: self
                .artifacts
                .into_iter()
                .map(Artifact::into_v1)
                .collect::<Result<_, _>>()?,
            history: self
                .history
                .into_iter()
                .map(|m| m.into_v1().map(std::sync::Arc::new))
                .collect::<Result<_, _>>()?,
            metadata: self.metadata,
        })
    }

    /// The 0.3 task.
    pub fn from_v1(task: crate::Task) -> Self {
        Task {
            id: task.id,
            context_id: task.context_id,
            status: TaskStatus::from_v1(task.status),
            history: task
                .history
                .into_iter()
                .map(|m| Message::from_v1(std::sync::Arc::unwrap_or_clone(m)))
                .collect(),
            artifacts: task.artifacts.into_iter().map(Artifact::from_v1).collect(),
            metadata: task.metadata,
        }
    }
}

/// A 0.3 status update (`kind: "status-update"`), with its `final` flag.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", rename = "status-update")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub task_id: String,
    /// The conversation.
    #[serde(default, deserialize_with = "nullable")]
    pub context_id: String,
    /// The new status.
    #[serde(default, deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Whether this is the stream's last event (1.0 closes the stream instead).
    #[serde(default, rename = "final", deserialize_with = "nullable")]
    pub is_final: bool,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A 0.3 artifact update (`kind: "artifact-update"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", rename = "artifact-update")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub task_id: String,
    /// The conversation.
    #[serde(default, deserialize_with = "nullable")]
    pub context_id: String,
    /// The artifact or chunk.
    #[serde(default, deserialize_with = "nullable")]
    pub artifact: Artifact,
    /// Append to the artifact already sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// The artifact's last chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One event of a 0.3 stream (the `result` of each SSE envelope), told
/// apart by its `kind`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Event {
    /// A task snapshot.
    Task(Task),
    /// A message.
    Message(Message),
    /// A status update.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact update.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = Value::deserialize(d)?;
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let event = match kind {
            "task" => serde_json::from_value(value).map(Event::Task),
            "message" => serde_json::from_value(value).map(Event::Message),
            "status-update" => serde_json::from_value(value).map(Event::StatusUpdate),
            "artifact-update" => serde_json::from_value(value).map(Event::ArtifactUpdate),
            other => return Err(D::Error::custom(format!("unknown event kind {other:?}"))),
        };
        event.map_err(D::Error::custom)
    }
}

impl Event {
    /// The 0.3 event. A status update's `final` is set when its state ends
    /// the stream (terminal, or waiting for input or authentication), as a
    /// 0.3 client stops reading there.
    pub fn from_v1(event: crate::StreamResponse) -> Self {
        use crate::StreamResponse as E;
        match event {
            E::Task(task) => Event::Task(Task::from_v1(task)),
            E::Message(message) => Event::Message(Message::from_v1(message)),
            E::StatusUpdate(update) => Event::StatusUpdate(TaskStatusUpdateEvent {
                is_final: update.status.state.is_terminal() || update.status.state.is_interrupted(),
                task_id: update.task_id,
                context_id: update.context_id,
                status: TaskStatus::from_v1(update.status),
                metadata: update.metadata,
            }),
            E::ArtifactUpdate(update) => Event::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: update.task_id,
                context_id: update.context_id,
                artifact: Artifact::from_v1(update.artifact),
                append: update.append.then_some(true),
                last_chunk: update.last_chunk.then_some(true),
                metadata: update.metadata,
            }),
        }
    }

    /// The 1.0 event.
    pub fn into_v1(self) -> Result<crate::StreamResponse, A2aError> {
        use crate::StreamResponse as E;
        Ok(match self {
            Event::Task(task) => E::Task(task.into_v1()?),
            Event::Message(message) => E::Message(message.into_v1()?),
            Event::StatusUpdate(update) => E::StatusUpdate(crate::TaskStatusUpdateEvent {
                task_id: update.task_id,
                context_id: update.context_id,
                status: update.status.into_v1()?,
                metadata: update.metadata,
            }),
            Event::ArtifactUpdate(update) => E::ArtifactUpdate(crate::TaskArtifactUpdateEvent {
                task_id: update.task_id,
                context_id: update.context_id,
                artifact: update.artifact.into_v1()?,
                append: update.append.unwrap_or(false),
                last_chunk: update.last_chunk.unwrap_or(false),
                metadata: update.metadata,
            }),
        })
    }
}

/// The `result` of a 0.3 `message/send`: the bare task or message (1.0
/// wraps it as `{"task":…}` / `{"message":…}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SendMessageResult {
    /// A task.
    Task(Task),
    /// A message.
    Message(Message),
}

impl<'de> Deserialize<'de> for SendMessageResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Event::deserialize(d)? {
            Event::Task(task) => Ok(SendMessageResult::Task(task)),
            Event::Message(message) => Ok(SendMessageResult::Message(message)),
            _ => Err(D::Error::custom(
                "message/send answered with an update event",
            )),
        }
    }
}

impl SendMessageResult {
    /// The 0.3 result.
    pub fn from_v1(response: crate::SendMessageResponse) -> Self {
        match response {
            crate::SendMessageResponse::Task(task) => SendMessageResult::Task(Task::from_v1(task)),
            crate::SendMessageResponse::Message(message) => {
                SendMessageResult::Message(Message::from_v1(message))
            }
        }
    }

    /// The 1.0 response.
    pub fn into_v1(self) -> Result<crate::SendMessageResponse, A2aError> {
        Ok(match self {
            SendMessageResult::Task(task) => crate::SendMessageResponse::Task(task.into_v1()?),
            SendMessageResult::Message(message) => {
                crate::SendMessageResponse::Message(message.into_v1()?)
            }
        })
    }
}

/// How a 0.3 push receiver authenticates the agent (several schemes; 1.0 keeps one).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushNotificationAuthenticationInfo {
    /// Accepted schemes, e.g. `Bearer`.
    #[serde(default, deserialize_with = "nullable")]
    pub schemes: Vec<String>,
    /// Credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A 0.3 push config (without its task).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushNotificationConfig {
    /// The config's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The webhook.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// A token the webhook checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the webhook authenticates the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushNotificationAuthenticationInfo>,
}

impl PushNotificationConfig {
    /// The 1.0 config of task `task_id` (the first 0.3 scheme is kept).
    pub fn into_v1(self, task_id: String) -> crate::TaskPushNotificationConfig {
        crate::TaskPushNotificationConfig {
            tenant: String::new(),
            id: self.id.unwrap_or_default(),
            task_id,
            url: self.url,
            token: self.token.unwrap_or_default(),
            authentication: self.authentication.map(|auth| crate::AuthenticationInfo {
                scheme: auth.schemes.into_iter().next().unwrap_or_default(),
                credentials: auth.credentials.unwrap_or_default(),
            }),
        }
    }

    /// The 0.3 config (its task goes beside it).
    pub fn from_v1(config: crate::TaskPushNotificationConfig) -> Self {
        PushNotificationConfig {
            id: non_empty(config.id),
            url: config.url,
            token: non_empty(config.token),
            authentication: config
                .authentication
                .map(|auth| PushNotificationAuthenticationInfo {
                    schemes: vec![auth.scheme],
                    credentials: non_empty(auth.credentials),
                }),
        }
    }
}

/// A 0.3 push config with its task: `{taskId, pushNotificationConfig}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub task_id: String,
    /// The config.
    #[serde(default, deserialize_with = "nullable")]
    pub push_notification_config: PushNotificationConfig,
}

impl TaskPushNotificationConfig {
    /// The 1.0 (flat) config.
    pub fn into_v1(self) -> crate::TaskPushNotificationConfig {
        self.push_notification_config.into_v1(self.task_id)
    }

    /// The 0.3 (nested) config.
    pub fn from_v1(mut config: crate::TaskPushNotificationConfig) -> Self {
        let task_id = std::mem::take(&mut config.task_id);
        TaskPushNotificationConfig {
            task_id,
            push_notification_config: PushNotificationConfig::from_v1(config),
        }
    }
}

/// The options of a 0.3 `message/send`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendConfiguration {
    /// Media types the client accepts.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// Wait for the task to settle (1.0 `returnImmediately`, inverted; unset
    /// blocks, as 0.3 servers did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    /// History messages to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// A push config for the new task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<PushNotificationConfig>,
}

/// The params of 0.3 `message/send` and `message/stream`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendParams {
    /// The message.
    pub message: Message,
    /// Options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<MessageSendConfiguration>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl MessageSendParams {
    /// The 1.0 request.
    pub fn into_v1(self) -> Result<crate::SendMessageRequest, A2aError> {
        let message = self.message.into_v1()?;
        let task_id = message.task_id.clone();
        Ok(crate::SendMessageRequest {
            tenant: String::new(),
            message,
            configuration: self.configuration.map(|c| crate::SendMessageConfiguration {
                accepted_output_modes: c.accepted_output_modes,
                task_push_notification_config: c
                    .push_notification_config
                    .map(|p| p.into_v1(task_id)),
                history_length: c.history_length,
                return_immediately: c.blocking == Some(false),
            }),
            metadata: self.metadata,
        })
    }

    /// The 0.3 params.
    pub fn from_v1(request: crate::SendMessageRequest) -> Self {
        MessageSendParams {
            message: Message::from_v1(request.message),
            configuration: request.configuration.map(|c| MessageSendConfiguration {
                accepted_output_modes: c.accepted_output_modes,
                blocking: Some(!c.return_immediately),
                history_length: c.history_length,
                push_notification_config: c
                    .task_push_notification_config
                    .map(PushNotificationConfig::from_v1),
            }),
            metadata: request.metadata,
        }
    }
}

/// The params of 0.3 `tasks/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// History messages to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Extra information (no 1.0 place: dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl TaskQueryParams {
    /// The 1.0 request.
    pub fn into_v1(self) -> crate::GetTaskRequest {
        crate::GetTaskRequest {
            tenant: String::new(),
            id: self.id,
            history_length: self.history_length,
        }
    }

    /// The 0.3 params.
    pub fn from_v1(request: crate::GetTaskRequest) -> Self {
        TaskQueryParams {
            id: request.id,
            history_length: request.history_length,
            metadata: None,
        }
    }
}

/// The params of 0.3 `tasks/cancel` and `tasks/resubscribe`, and of
/// `tasks/pushNotificationConfig/list` (`id` is the task).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// The params of 0.3 `tasks/pushNotificationConfig/list`.
pub type ListTaskPushNotificationConfigParams = TaskIdParams;

/// The params of 0.3 `tasks/pushNotificationConfig/get`: `id` is the
/// **task** (1.0 `taskId`), the config id is optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigParams {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// The config (0.3: when absent, the task's config whose id is the task id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config_id: Option<String>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// The params of 0.3 `tasks/pushNotificationConfig/delete` (`id` is the task).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigParams {
    /// The task.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// The config.
    #[serde(default, deserialize_with = "nullable")]
    pub push_notification_config_id: String,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}
