//! Push-notification configuration and its four operations.

use serde::{Deserialize, Serialize};

use crate::protojson::{int32, is_default, nullable};

/// A webhook that receives a task's events as HTTP POSTs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The config id (assigned by the server when empty).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    /// The task the config belongs to.
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    /// The webhook URL.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// A token unique to this task or session, echoed to the webhook.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub token: String,
    /// How the agent authenticates to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl TaskPushNotificationConfig {
    /// A config for `task_id` that posts to `url`.
    pub fn new(task_id: impl Into<String>, url: impl Into<String>) -> Self {
        TaskPushNotificationConfig {
            task_id: task_id.into(),
            url: url.into(),
            ..TaskPushNotificationConfig::default()
        }
    }
}

/// Credentials sent as `Authorization: <scheme> <credentials>`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// An HTTP authentication scheme such as `Bearer` or `Basic` (case-insensitive).
    #[serde(default, deserialize_with = "nullable")]
    pub scheme: String,
    /// The credentials that follow the scheme.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub credentials: String,
}

/// `GetTaskPushNotificationConfig` request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task id.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// The config id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// `DeleteTaskPushNotificationConfig` request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteTaskPushNotificationConfigRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task id.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// The config id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
}

/// `ListTaskPushNotificationConfigs` request.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// Opaque routing value.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task id.
    #[serde(default, alias = "task_id", deserialize_with = "nullable")]
    pub task_id: String,
    /// Maximum configs per page (0: server default).
    #[serde(
        default,
        alias = "page_size",
        deserialize_with = "int32",
        skip_serializing_if = "is_default"
    )]
    pub page_size: i32,
    /// The `nextPageToken` of the previous page.
    #[serde(
        default,
        alias = "page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
}

/// `ListTaskPushNotificationConfigs` response.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The configs of this page.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Token of the next page; empty on the last page.
    #[serde(
        default,
        alias = "next_page_token",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_page_token: String,
}
