//! `Task`, its status and state, and `Artifact`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::protojson::{enum_serde, nullable, nullable_shared_list, shared_option, timestamp};
use crate::{Message, Metadata, Part};

/// The lifecycle state of a task.
///
/// The proto numbering is not lifecycle order: `Rejected` is 7 and
/// `AuthRequired` is 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TaskState {
    /// Not set; never a valid state for a task.
    #[default]
    Unspecified,
    /// Received, not yet started.
    Submitted,
    /// Being worked on.
    Working,
    /// Finished successfully (terminal).
    Completed,
    /// Finished with an error (terminal).
    Failed,
    /// Canceled (terminal).
    Canceled,
    /// Waiting for more input from the client (interrupted).
    InputRequired,
    /// Refused by the agent (terminal).
    Rejected,
    /// Waiting for authentication (interrupted).
    AuthRequired,
}

enum_serde!(TaskState, "TaskState", {
    Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
    Submitted = 1 => "TASK_STATE_SUBMITTED",
    Working = 2 => "TASK_STATE_WORKING",
    Completed = 3 => "TASK_STATE_COMPLETED",
    Failed = 4 => "TASK_STATE_FAILED",
    Canceled = 5 => "TASK_STATE_CANCELED",
    InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
    Rejected = 7 => "TASK_STATE_REJECTED",
    AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
});

impl TaskState {
    /// Completed, failed, canceled or rejected: the task can never change again.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input-required or auth-required: the task waits for the client.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Terminal or input-required: the agent's turn is over and its execution
    /// ends (auth-required does not end it: the agent goes on once the
    /// credentials arrive out of band).
    pub const fn ends_turn(self) -> bool {
        self.is_terminal() || matches!(self, TaskState::InputRequired)
    }

    /// Terminal or interrupted: a caller waiting for the task gets its answer.
    pub const fn is_settled(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }

    /// Submitted or working.
    pub const fn is_active(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }
}

/// The current status of a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    #[serde(default, deserialize_with = "nullable")]
    pub state: TaskState,
    /// A message from the agent about this status, if any.
    ///
    /// Shared: the same message is held by the task, by the status update
    /// event that set it and, once the status moves on, by the task's history,
    /// and each holder takes a reference rather than a copy. Read it through
    /// the `Arc` as a `Message`; set it with [`TaskStatus::with_message`] or
    /// `Some(message.into())`.
    #[serde(
        default,
        deserialize_with = "shared_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub message: Option<Arc<Message>>,
    /// When the status was set.
    #[serde(default, with = "timestamp", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
}

impl TaskStatus {
    /// A status in the given state, stamped now.
    pub fn new(state: TaskState) -> Self {
        TaskStatus {
            state,
            message: None,
            timestamp: Some(crate::now()),
        }
    }

    /// Attaches a message to the status (a `Message`, or an `Arc<Message>`
    /// already shared elsewhere).
    #[must_use]
    pub fn with_message(mut self, message: impl Into<Arc<Message>>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// A unit of work the agent performs for a client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-generated unique id.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// The conversation the task belongs to.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// The current status.
    #[serde(default, deserialize_with = "nullable")]
    pub status: TaskStatus,
    /// The outputs produced so far.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged, as far as the agent keeps them.
    ///
    /// Shared, as [`TaskStatus::message`] is: the user's message is the one
    /// the agent's request context holds, and an archived
    /// status message the one its status update carried. Push a `Message`
    /// with `history.push(message.into())`; change one in place with
    /// [`Arc::make_mut`] (which copies it only if it is shared).
    #[serde(
        default,
        deserialize_with = "nullable_shared_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Arc<Message>>,
    /// Extra information about the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// A task in the given state, stamped now.
    pub fn new(id: impl Into<String>, context_id: impl Into<String>, state: TaskState) -> Self {
        Task {
            id: id.into(),
            context_id: context_id.into(),
            status: TaskStatus::new(state),
            ..Task::default()
        }
    }

    /// The current state (shorthand for `task.status.state`).
    pub fn state(&self) -> TaskState {
        self.status.state
    }

    /// Records the current status message in the history, unless it is there
    /// already. Done before the status is replaced (or answered), so the
    /// conversation keeps the agent's words in order. The history shares the
    /// message with the status: nothing is copied.
    pub fn archive_status_message(&mut self) {
        if let Some(message) = &self.status.message {
            if !self
                .history
                .iter()
                .any(|m| m.message_id == message.message_id)
            {
                self.history.push(Arc::clone(message));
            }
        }
    }

    /// Keeps only the `n` most recent history messages (`historyLength` semantics).
    ///
    /// `None` keeps everything, `Some(0)` drops all history.
    pub fn truncate_history(&mut self, history_length: Option<i32>) {
        if let Some(limit) = history_length {
            let keep = usize::try_from(limit.max(0)).unwrap_or(0);
            let len = self.history.len();
            if len > keep {
                self.history.drain(..len - keep);
            }
        }
    }
}

/// An output of a task: a document, an image, structured data...
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    #[serde(default, alias = "artifact_id", deserialize_with = "nullable")]
    pub artifact_id: String,
    /// A human-readable name.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// A human-readable description.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// The content; at least one part.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// URIs of the extensions that contributed to this artifact.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

impl Artifact {
    /// An artifact with a fresh id and the given parts.
    pub fn new(parts: Vec<Part>) -> Self {
        Artifact {
            artifact_id: crate::new_id(),
            parts,
            ..Artifact::default()
        }
    }

    /// An artifact with a fresh id holding one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Artifact::new(vec![Part::text(text)])
    }

    /// Sets the artifact id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.artifact_id = id.into();
        self
    }

    /// Sets the name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_classes() {
        assert!(TaskState::Rejected.is_terminal());
        assert!(!TaskState::InputRequired.is_terminal());
        assert!(TaskState::AuthRequired.is_interrupted());
        assert!(TaskState::Working.is_active());
        assert!(TaskState::InputRequired.ends_turn() && TaskState::Canceled.ends_turn());
        assert!(!TaskState::AuthRequired.ends_turn() && !TaskState::Working.ends_turn());
        assert!(TaskState::AuthRequired.is_settled() && TaskState::Failed.is_settled());
        assert!(!TaskState::Submitted.is_settled());
        assert_eq!(TaskState::AuthRequired.number(), 8);
        assert_eq!("7".parse::<TaskState>().unwrap(), TaskState::Rejected);
    }

    #[test]
    fn status_message_is_archived_once() {
        let mut task = Task::new("t", "c", TaskState::InputRequired);
        let question = Arc::new(Message::agent_text("which city?"));
        task.history.push(question.clone());
        task.status.message = Some(question);
        task.archive_status_message();
        assert_eq!(task.history.len(), 1);
        task.status = task
            .status
            .clone()
            .with_message(Message::agent_text("done"));
        task.archive_status_message();
        assert_eq!(task.history.len(), 2);
        // The history holds the status's own message, not a copy of it.
        let status_message = task.status.message.as_ref().unwrap();
        assert!(Arc::ptr_eq(&task.history[1], status_message));
    }

    #[test]
    fn history_truncation_keeps_most_recent() {
        let mut task = Task::new("t", "c", TaskState::Working);
        task.history = (0..5)
            .map(|i| Message::user_text(i.to_string()).into())
            .collect();
        task.truncate_history(Some(2));
        assert_eq!(
            task.history.iter().map(|m| m.text()).collect::<Vec<_>>(),
            ["3", "4"]
        );
        task.truncate_history(None);
        assert_eq!(task.history.len(), 2);
        task.truncate_history(Some(0));
        assert!(task.history.is_empty());
    }
}
