//! A compact stored form of a task: messages inside it do not repeat the
//! task's own id and context id (they are put back on reading). Saves about 70
//! bytes per message in memory and in the encoding time.
//!
//! Maps declare their length up front, so a binary format writes them in one
//! pass instead of buffering each map to count it.

use a2a_core::{Message, Task, TaskStatus};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// Serializes a task like its ProtoJSON, minus the redundant message ids.
pub(crate) struct CompactTask<'a>(pub(crate) &'a Task);

struct CompactStatus<'a>(&'a TaskStatus, &'a Task);
struct CompactMessage<'a>(&'a Message, &'a Task);
struct CompactHistory<'a>(&'a [Message], &'a Task);

impl Serialize for CompactTask<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let task = self.0;
        let len = 2
            + usize::from(!task.context_id.is_empty())
            + usize::from(!task.artifacts.is_empty())
            + usize::from(!task.history.is_empty())
            + usize::from(task.metadata.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("id", &task.id)?;
        if !task.context_id.is_empty() {
            map.serialize_entry("contextId", &task.context_id)?;
        }
        map.serialize_entry("status", &CompactStatus(&task.status, task))?;
        if !task.artifacts.is_empty() {
            map.serialize_entry("artifacts", &task.artifacts)?;
        }
        if !task.history.is_empty() {
            map.serialize_entry("history", &CompactHistory(&task.history, task))?;
        }
        if let Some(metadata) = &task.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

impl Serialize for CompactStatus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (status, task) = (self.0, self.1);
        let len =
            1 + usize::from(status.message.is_some()) + usize::from(status.timestamp.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("state", &status.state)?;
        if let Some(message) = &status.message {
            map.serialize_entry("message", &CompactMessage(message, task))?;
        }
        if let Some(timestamp) = &status.timestamp {
            map.serialize_entry(
                "timestamp",
                &a2a_core::protojson::format_timestamp(timestamp),
            )?;
        }
        map.end()
    }
}

impl Serialize for CompactHistory<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|m| CompactMessage(m, self.1)))
    }
}

impl Serialize for CompactMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (m, task) = (self.0, self.1);
        let len = 3
            + usize::from(m.context_id != task.context_id)
            + usize::from(m.task_id != task.id)
            + usize::from(m.metadata.is_some())
            + usize::from(!m.extensions.is_empty())
            + usize::from(!m.reference_task_ids.is_empty());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("messageId", &m.message_id)?;
        if m.context_id != task.context_id {
            map.serialize_entry("contextId", &m.context_id)?;
        }
        if m.task_id != task.id {
            map.serialize_entry("taskId", &m.task_id)?;
        }
        map.serialize_entry("role", &m.role)?;
        map.serialize_entry("parts", &m.parts)?;
        if let Some(metadata) = &m.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if !m.extensions.is_empty() {
            map.serialize_entry("extensions", &m.extensions)?;
        }
        if !m.reference_task_ids.is_empty() {
            map.serialize_entry("referenceTaskIds", &m.reference_task_ids)?;
        }
        map.end()
    }
}

/// Puts the task's ids back into messages stored without them. (A message
/// inside a task belongs to that task, so an empty id is filled in too.)
pub(crate) fn restore_ids(task: &mut Task) {
    let (id, context) = (task.id.clone(), task.context_id.clone());
    let messages = task.history.iter_mut().chain(task.status.message.as_mut());
    for message in messages {
        if message.task_id.is_empty() {
            message.task_id.clone_from(&id);
        }
        if message.context_id.is_empty() {
            message.context_id.clone_from(&context);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::{Message, TaskState};

    #[test]
    fn compact_form_round_trips() {
        let mut task = Task::new("t", "c", TaskState::Completed);
        task.history.push(
            Message::user_text("hi")
                .with_task_id("t")
                .with_context_id("c"),
        );
        task.status.message = Some(
            Message::agent_text("yo")
                .with_task_id("t")
                .with_context_id("c"),
        );
        let json = serde_json::to_string(&CompactTask(&task)).unwrap();
        assert!(!json.contains("taskId"), "{json}");
        let mut back: Task = serde_json::from_str(&json).unwrap();
        restore_ids(&mut back);
        assert_eq!(back, task);
    }
}
