//! Applying an agent's event to its task: validation and mutation, no I/O.

use a2a_core::{
    A2aError, ErrorKind, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent,
};

fn invalid(message: impl Into<String>) -> A2aError {
    A2aError::new(ErrorKind::InvalidAgentResponse, message)
}

/// Checks (and fills in, when empty) the task and context ids of an event.
pub(crate) fn bind_ids(
    event: &mut StreamResponse,
    task_id: &str,
    context_id: &str,
) -> Result<(), A2aError> {
    let (tid, cid) = match event {
        StreamResponse::Task(task) => (&mut task.id, &mut task.context_id),
        StreamResponse::StatusUpdate(u) => (&mut u.task_id, &mut u.context_id),
        StreamResponse::ArtifactUpdate(u) => (&mut u.task_id, &mut u.context_id),
        StreamResponse::Message(m) => {
            if m.context_id.is_empty() {
                m.context_id = context_id.to_owned();
            }
            return Ok(());
        }
    };
    for (field, value, expected) in [("task id", tid, task_id), ("context id", cid, context_id)] {
        if value.is_empty() {
            expected.clone_into(value);
        } else if value != expected {
            return Err(invalid(format!(
                "event {field} {value:?} does not match the execution's {expected:?}"
            )));
        }
    }
    Ok(())
}

/// Applies a status or artifact update (or a whole-task replacement) to `task`.
pub(crate) fn apply(task: &mut Task, event: &StreamResponse) -> Result<(), A2aError> {
    if task.status.state.is_terminal() {
        return Err(invalid(format!(
            "task is already {}; no further events are accepted",
            task.status.state
        )));
    }
    match event {
        StreamResponse::Task(new_task) => {
            let history = std::mem::take(&mut task.history);
            *task = new_task.clone();
            if task.history.is_empty() {
                task.history = history;
            }
        }
        StreamResponse::StatusUpdate(update) => apply_status(task, update)?,
        StreamResponse::ArtifactUpdate(update) => apply_artifact(task, update)?,
        StreamResponse::Message(_) => {
            return Err(invalid(
                "a message can only be the first and only event; use a status message within a task",
            ));
        }
    }
    Ok(())
}

fn apply_status(task: &mut Task, update: &TaskStatusUpdateEvent) -> Result<(), A2aError> {
    if update.status.state == a2a_core::TaskState::Unspecified {
        return Err(invalid("status update has no state"));
    }
    // The status message being replaced becomes part of the conversation.
    task.archive_status_message();
    task.status = update.status.clone();
    if task.status.timestamp.is_none() {
        task.status.timestamp = Some(a2a_core::now());
    }
    if let Some(metadata) = &update.metadata {
        let target = task.metadata.get_or_insert_with(Default::default);
        target.extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok(())
}

fn apply_artifact(task: &mut Task, update: &TaskArtifactUpdateEvent) -> Result<(), A2aError> {
    let incoming = &update.artifact;
    if incoming.artifact_id.is_empty() {
        return Err(invalid("artifact has no artifactId"));
    }
    if incoming.parts.is_empty() {
        return Err(invalid(format!(
            "artifact {} has no parts",
            incoming.artifact_id
        )));
    }
    let existing = task
        .artifacts
        .iter_mut()
        .find(|a| a.artifact_id == incoming.artifact_id);
    match (existing, update.append) {
        (Some(artifact), true) => {
            artifact.parts.extend(incoming.parts.iter().cloned());
            if let Some(metadata) = &incoming.metadata {
                let target = artifact.metadata.get_or_insert_with(Default::default);
                target.extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            for extension in &incoming.extensions {
                if !artifact.extensions.contains(extension) {
                    artifact.extensions.push(extension.clone());
                }
            }
            if artifact.name.is_empty() {
                artifact.name.clone_from(&incoming.name);
            }
        }
        (Some(artifact), false) => *artifact = incoming.clone(),
        // The first chunk of a streamed artifact is commonly sent with append=true.
        (None, _) => task.artifacts.push(incoming.clone()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::{Artifact, Message, Part, TaskState};

    fn working() -> Task {
        Task::new("t", "c", TaskState::Working)
    }

    fn chunk(text: &str, append: bool) -> StreamResponse {
        let mut event = TaskArtifactUpdateEvent::new("t", "c", Artifact::text(text).with_id("a"));
        event.append = append;
        event.into()
    }

    #[test]
    fn artifacts_append_and_replace() {
        let mut task = working();
        apply(&mut task, &chunk("chunk-1 ", true)).unwrap();
        apply(&mut task, &chunk("chunk-2", true)).unwrap();
        let texts: Vec<_> = task.artifacts[0]
            .parts
            .iter()
            .filter_map(Part::as_text)
            .collect();
        assert_eq!(texts, ["chunk-1 ", "chunk-2"]);
        apply(&mut task, &chunk("whole", false)).unwrap();
        assert_eq!(task.artifacts.len(), 1);
        assert_eq!(task.artifacts[0].parts.len(), 1);
    }

    #[test]
    fn status_message_moves_to_history_and_terminal_is_final() {
        let mut task = working();
        let mut update = TaskStatusUpdateEvent::new("t", "c", TaskState::InputRequired);
        update.status.message = Some(Message::agent_text("which city?").into());
        apply(&mut task, &update.into()).unwrap();
        apply(
            &mut task,
            &TaskStatusUpdateEvent::new("t", "c", TaskState::Completed).into(),
        )
        .unwrap();
        assert_eq!(task.history.len(), 1);
        assert_eq!(task.history[0].text(), "which city?");
        let err = apply(&mut task, &chunk("late", false)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidAgentResponse);
    }

    /// The task and the event that set its status hold one message, not
    /// two copies; so does the history that archives it later.
    #[test]
    fn the_status_message_is_shared_not_copied() {
        let mut task = working();
        let update = TaskStatusUpdateEvent::new("t", "c", TaskState::InputRequired);
        let mut event: StreamResponse = update.into();
        if let StreamResponse::StatusUpdate(update) = &mut event {
            update.status.message = Some(Message::agent_text("which city?").into());
        }
        apply(&mut task, &event).unwrap();
        let StreamResponse::StatusUpdate(update) = &event else {
            unreachable!("built above")
        };
        let sent = update.status.message.as_ref().unwrap();
        assert!(std::sync::Arc::ptr_eq(
            task.status.message.as_ref().unwrap(),
            sent
        ));
        apply(
            &mut task,
            &TaskStatusUpdateEvent::new("t", "c", TaskState::Working).into(),
        )
        .unwrap();
        assert!(std::sync::Arc::ptr_eq(&task.history[0], sent));
    }

    #[test]
    fn ids_are_filled_in_or_checked() {
        let mut event: StreamResponse =
            TaskStatusUpdateEvent::new("", "", TaskState::Working).into();
        bind_ids(&mut event, "t", "c").unwrap();
        assert_eq!((event.task_id(), event.context_id()), ("t", "c"));
        let mut wrong: StreamResponse =
            TaskStatusUpdateEvent::new("other", "c", TaskState::Working).into();
        assert!(bind_ids(&mut wrong, "t", "c").is_err());
    }

    #[test]
    fn bad_artifacts_are_rejected() {
        let mut task = working();
        let empty = TaskArtifactUpdateEvent::new("t", "c", Artifact::new(vec![]).with_id("a"));
        assert!(apply(&mut task, &empty.into()).is_err());
        let no_id = TaskArtifactUpdateEvent::new("t", "c", Artifact::text("x").with_id(""));
        assert!(apply(&mut task, &no_id.into()).is_err());
    }
}
