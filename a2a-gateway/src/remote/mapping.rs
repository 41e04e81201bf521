//! Where the remote task of a local task is kept, and how the remote's
//! events become the local task's.
//!
//! The remote ids live in the local task's metadata under
//! [`REMOTE_METADATA_KEY`]: the executor writes them with the first status
//! update after the remote names its task, and the server stores task
//! metadata like the rest of the task. So every later call finds them in
//! `RequestContext::stored_task`: a follow-up (which the server does not give
//! a checkpoint), a cancel (nor that), and an execution resumed after a
//! restart. The write goes through `send_checkpointed`, so the executor knows
//! it is stored before it goes on.

use a2a_core::{
    Artifact, Message, Metadata, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};
use serde::{Deserialize, Serialize};

/// The local task's metadata key holding its [`RemoteTask`].
pub const REMOTE_METADATA_KEY: &str = "a2a-gateway/remote";

/// The request metadata key under which the remote learns who called the
/// gateway (a [`ForwardedCaller`]); the remote itself sees the gateway's
/// credentials only. Whatever a caller puts under this key is replaced.
pub const CALLER_METADATA_KEY: &str = "a2a-gateway/caller";

/// The remote task behind a local one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RemoteTask {
    /// The name the gateway hosts the agent under (for whoever reads the task).
    pub agent: String,
    /// The remote's task id.
    pub task_id: String,
    /// The remote's context id.
    pub context_id: String,
    /// The id of the last message forwarded into it, as the remote knows it:
    /// an execution resumed after a restart whose message has this id only
    /// follows the remote task again instead of sending the message twice.
    #[serde(default)]
    pub message_id: String,
    /// How many messages were forwarded into it.
    #[serde(default)]
    pub turns: u64,
}

impl RemoteTask {
    /// The remote task recorded in `task`'s metadata, if any.
    pub fn of(task: &Task) -> Option<RemoteTask> {
        let value = task.metadata.as_ref()?.get(REMOTE_METADATA_KEY)?;
        let remote: RemoteTask = serde_json::from_value(value.clone()).ok()?;
        (!remote.task_id.is_empty()).then_some(remote)
    }

    /// Metadata holding this record.
    pub(crate) fn to_metadata(&self) -> Metadata {
        let mut metadata = Metadata::new();
        if let Ok(value) = serde_json::to_value(self) {
            metadata.insert(REMOTE_METADATA_KEY.to_owned(), value);
        }
        metadata
    }
}

/// Who called the gateway, as the remote is told in the request metadata
/// under [`CALLER_METADATA_KEY`]. Information for the remote's logs, not a
/// credential: the remote cannot check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ForwardedCaller {
    /// The gateway's name for the agent called.
    pub agent: String,
    /// The caller's tenant on the gateway.
    pub tenant: String,
    /// The caller's user name on the gateway (empty: anonymous).
    pub user: String,
    /// Whether the gateway authenticated that user.
    pub authenticated: bool,
}

/// Removes the keys only the gateway may write from a remote's metadata, so
/// that a remote cannot point a local task at another remote task.
pub(crate) fn scrub(metadata: Option<Metadata>) -> Option<Metadata> {
    let mut metadata = metadata?;
    metadata.remove(REMOTE_METADATA_KEY);
    (!metadata.is_empty()).then_some(metadata)
}

/// Rebinds a remote's agent message to the local task.
pub(crate) fn local_message(mut message: Message, task_id: &str, context_id: &str) -> Message {
    message.task_id = task_id.to_owned();
    message.context_id = context_id.to_owned();
    // Remote task ids mean nothing to the gateway's caller.
    message.reference_task_ids.clear();
    message
}

/// A remote status as a local status update.
pub(crate) fn local_status(
    mut status: TaskStatus,
    metadata: Option<Metadata>,
    task_id: &str,
    context_id: &str,
) -> TaskStatusUpdateEvent {
    status.message = status
        .message
        .map(|m| local_message(std::sync::Arc::unwrap_or_clone(m), task_id, context_id).into());
    TaskStatusUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status,
        metadata: scrub(metadata),
    }
}

/// A remote artifact as a local artifact update.
pub(crate) fn local_artifact(
    artifact: Artifact,
    append: bool,
    last_chunk: bool,
    task_id: &str,
    context_id: &str,
) -> TaskArtifactUpdateEvent {
    let mut event = TaskArtifactUpdateEvent::new(task_id, context_id, artifact);
    event.append = append;
    event.last_chunk = last_chunk;
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::TaskState;

    #[test]
    fn the_record_round_trips_through_task_metadata_and_remotes_cannot_forge_it() {
        let remote = RemoteTask {
            agent: "weather".into(),
            task_id: "r-1".into(),
            context_id: "rc-1".into(),
            message_id: "m".into(),
            turns: 2,
        };
        let mut task = Task::new("local", "lc", TaskState::Working);
        task.metadata = Some(remote.to_metadata());
        assert_eq!(RemoteTask::of(&task), Some(remote.clone()));

        let forged = scrub(Some(remote.to_metadata()));
        assert_eq!(forged, None);
        let mut mixed = remote.to_metadata();
        mixed.insert("kept".into(), 1.into());
        assert_eq!(scrub(Some(mixed)).unwrap().len(), 1);

        task.metadata = Some(Metadata::new());
        assert_eq!(RemoteTask::of(&task), None);
    }

    #[test]
    fn remote_messages_are_rebound_to_the_local_task() {
        let mut message = Message::agent_text("hi")
            .with_task_id("remote")
            .with_context_id("remote-ctx");
        message.reference_task_ids.push("remote-other".into());
        let status = TaskStatus::new(TaskState::InputRequired).with_message(message);
        let update = local_status(status, None, "t", "c");
        let message = update.status.message.unwrap();
        assert_eq!(
            (update.task_id.as_str(), update.context_id.as_str()),
            ("t", "c")
        );
        assert_eq!(
            (message.task_id.as_str(), message.context_id.as_str()),
            ("t", "c")
        );
        assert!(message.reference_task_ids.is_empty());
    }
}
