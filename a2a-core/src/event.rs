//! Stream events and the send-message result.

use serde::{Deserialize, Serialize};

use crate::protojson::{is_default, nullable, oneof_serde};
use crate::{Artifact, Message, Metadata, Task, TaskState, TaskStatus};

/// A change of a task's status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// The task's context.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// The new status.
    #[serde(default, deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl TaskStatusUpdateEvent {
    /// A status update to `state`, stamped now.
    pub fn new(
        task_id: impl Into<String>,
        context_id: impl Into<String>,
        state: TaskState,
    ) -> Self {
        TaskStatusUpdateEvent {
            task_id: task_id.into(),
            context_id: context_id.into(),
            status: TaskStatus::new(state),
            metadata: None,
        }
    }
}

/// A new, replaced or extended artifact.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// The task's context.
    #[serde(default, alias = "context_id", deserialize_with = "nullable")]
    pub context_id: String,
    /// The artifact (or, with `append`, the parts to add to it).
    #[serde(default, deserialize_with = "nullable")]
    pub artifact: Artifact,
    /// Add these parts to the artifact with the same id instead of replacing it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_default"
    )]
    pub append: bool,
    /// This is the last chunk of the artifact.
    #[serde(
        default,
        alias = "last_chunk",
        deserialize_with = "nullable",
        skip_serializing_if = "is_default"
    )]
    pub last_chunk: bool,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl TaskArtifactUpdateEvent {
    /// A new (or replacing) artifact event.
    pub fn new(
        task_id: impl Into<String>,
        context_id: impl Into<String>,
        artifact: Artifact,
    ) -> Self {
        TaskArtifactUpdateEvent {
            task_id: task_id.into(),
            context_id: context_id.into(),
            artifact,
            ..TaskArtifactUpdateEvent::default()
        }
    }
}

/// One item of a stream, and the body of a push notification.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamResponse {
    /// A task snapshot.
    Task(Task),
    /// A message (a message-only reply, or a message outside a task).
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact change.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

oneof_serde!(StreamResponse, "StreamResponse", {
    Task => "task",
    Message => "message",
    StatusUpdate => "statusUpdate" | "status_update",
    ArtifactUpdate => "artifactUpdate" | "artifact_update",
});

impl StreamResponse {
    /// The id of the task this event belongs to (empty for a task-less message).
    pub fn task_id(&self) -> &str {
        match self {
            StreamResponse::Task(task) => &task.id,
            StreamResponse::Message(message) => &message.task_id,
            StreamResponse::StatusUpdate(update) => &update.task_id,
            StreamResponse::ArtifactUpdate(update) => &update.task_id,
        }
    }

    /// The context id carried by the event.
    pub fn context_id(&self) -> &str {
        match self {
            StreamResponse::Task(task) => &task.context_id,
            StreamResponse::Message(message) => &message.context_id,
            StreamResponse::StatusUpdate(update) => &update.context_id,
            StreamResponse::ArtifactUpdate(update) => &update.context_id,
        }
    }

    /// The task state this event reports, if it reports one.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            StreamResponse::Task(task) => Some(task.status.state),
            StreamResponse::StatusUpdate(update) => Some(update.status.state),
            StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
        }
    }
}

impl From<Task> for StreamResponse {
    fn from(task: Task) -> Self {
        StreamResponse::Task(task)
    }
}

impl From<Message> for StreamResponse {
    fn from(message: Message) -> Self {
        StreamResponse::Message(message)
    }
}

impl From<TaskStatusUpdateEvent> for StreamResponse {
    fn from(update: TaskStatusUpdateEvent) -> Self {
        StreamResponse::StatusUpdate(update)
    }
}

impl From<TaskArtifactUpdateEvent> for StreamResponse {
    fn from(update: TaskArtifactUpdateEvent) -> Self {
        StreamResponse::ArtifactUpdate(update)
    }
}

/// The result of `SendMessage`: a task, or a direct message reply.
#[derive(Debug, Clone, PartialEq)]
pub enum SendMessageResponse {
    /// The task the message created or continued.
    Task(Task),
    /// A direct reply without a task.
    Message(Message),
}

oneof_serde!(SendMessageResponse, "SendMessageResponse", {
    Task => "task",
    Message => "message",
});

impl From<Task> for SendMessageResponse {
    fn from(task: Task) -> Self {
        SendMessageResponse::Task(task)
    }
}

impl From<Message> for SendMessageResponse {
    fn from(message: Message) -> Self {
        SendMessageResponse::Message(message)
    }
}
