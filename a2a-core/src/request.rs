//! Request and response messages of the task operations.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::protojson::{int32, is_default, nullable, opt_int32, timestamp};
use crate::{Message, Metadata, Task, TaskPushNotificationConfig, TaskState};

/// `SendMessage` / `SendStreamingMessage` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// Opaque routing value copied from the selected interface.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The message to send.
    #[serde(default, deserialize_with = "nullable")]
    pub message: Message,
    /// How to process the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Extra information for the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// A request carrying `message` with default configuration (blocking).
    pub fn new(message: Message) -> Self {
        SendMessageRequest {
            message,
            ..SendMessageRequest::default()
        }
    }

    /// Whether the caller asked to return as soon as the task exists.
    pub fn return_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }

    /// The requested `historyLength`, if any.
    pub fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }
}

/// Options of a send-message request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the output.
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    /// A webhook to register for the task (its `taskId` left empty).
    #[serde(
        default,
        alias = "task_push_notification_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many recent history messages to return; unset means the server default.
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    /// Return as soon as the task exists instead of waiting for a terminal or interrupted state.
    #[serde(
        default,
        alias = "return_immediately",
        deserialize_with = "nullable",
        skip_serializing_if = "is_default"
    )]
    pub return_immediately: bool,
}

/// `GetTask` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// How many recent history messages to return.
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
}

/// `ListTasks` request: filters and pagination.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// Only tasks of this context.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// Only tasks in this state (unspecified: all states).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_default"
    )]
    pub status: TaskState,
    /// Page size, 1 to 100; 50 when unset.
    #[serde(
        default,
        alias = "page_size",
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page.
    #[serde(
        default,
        alias = "page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
    /// How many recent history messages to return per task.
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "opt_int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    /// Only tasks whose status timestamp is at or after this instant.
    #[serde(
        default,
        alias = "status_timestamp_after",
        with = "timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_timestamp_after: Option<DateTime<Utc>>,
    /// Include artifacts in the returned tasks (default false).
    #[serde(
        default,
        alias = "include_artifacts",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_artifacts: Option<bool>,
}

/// `ListTasks` response.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The tasks of this page.
    #[serde(default, deserialize_with = "nullable")]
    pub tasks: Vec<Task>,
    /// Token of the next page; `""` on the last page (always emitted).
    #[serde(default, alias = "next_page_token", deserialize_with = "nullable")]
    pub next_page_token: String,
    /// The page size actually used.
    #[serde(default, alias = "page_size", deserialize_with = "int32")]
    pub page_size: i32,
    /// Number of matching tasks before pagination.
    #[serde(default, alias = "total_size", deserialize_with = "int32")]
    pub total_size: i32,
}

/// `CancelTask` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// Extra information for the cancellation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `SubscribeToTask` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// `GetExtendedAgentCard` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
}
