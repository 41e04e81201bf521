//! Mirroring the remote's events into the local task, under local ids.

use a2a_core::{A2aError, Artifact, Metadata, StreamResponse, Task, TaskState, TaskStatus};
use a2a_server::store::Checkpoint;

use super::{Flow, Forward};
use crate::remote::error::{RemoteError, RemoteErrorKind};
use crate::remote::mapping::{RemoteTask, local_artifact, local_message, local_status};

impl Forward<'_> {
    /// Mirrors one remote event into the local task.
    pub(super) async fn handle(&mut self, event: StreamResponse) -> Result<Flow, RemoteError> {
        match event {
            StreamResponse::Message(message) if self.remote.is_none() => {
                // A direct reply: no task here either.
                let message = local_message(message, "", &self.ctx.context_id);
                self.events.send(message).await.map_err(|e| self.ended(e))?;
                Ok(Flow::Done)
            }
            StreamResponse::Message(message) => {
                // A message within a task: locally it can only be a status message.
                let state = self.status.as_ref().map_or(TaskState::Working, |s| s.0);
                let status = TaskStatus::new(state).with_message(message);
                self.mirror_status(status, None).await
            }
            StreamResponse::Task(task) => {
                self.learn(&task.id, &task.context_id)?;
                let Task {
                    status,
                    artifacts,
                    metadata,
                    ..
                } = task;
                if self.stale.is_some() {
                    if self.stale == Some(seen(&status)) {
                        return Ok(Flow::Continue);
                    }
                    self.stale = None;
                }
                // Artifacts first: a status that ends the turn ends the
                // local execution, and nothing after it would be taken.
                let fresh: Vec<Artifact> = artifacts
                    .into_iter()
                    .filter(|a| self.artifacts.get(&a.artifact_id) != Some(a))
                    .collect();
                if !fresh.is_empty() {
                    self.record_first().await?;
                }
                for artifact in fresh {
                    self.mirror_artifact(artifact, false, false).await?;
                }
                self.mirror_status_if_changed(status, metadata).await
            }
            StreamResponse::StatusUpdate(update) => {
                self.learn(&update.task_id, &update.context_id)?;
                self.mirror_status(update.status, update.metadata).await
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.learn(&update.task_id, &update.context_id)?;
                self.record_first().await?;
                self.mirror_artifact(update.artifact, update.append, update.last_chunk)
                    .await?;
                Ok(Flow::Continue)
            }
        }
    }

    /// Writes the record of the remote task before an artifact: it rides on
    /// a status update (an artifact cannot carry task metadata), and the
    /// local task must name its remote task from its first event on, so that
    /// a cancel or a restart finds it.
    async fn record_first(&mut self) -> Result<(), RemoteError> {
        if self.unrecorded {
            let status = TaskStatus::new(TaskState::Working);
            self.mirror_status(status, None).await?;
        }
        Ok(())
    }

    /// Notes the remote task an event belongs to: the first one names it,
    /// later ones must be about the same task.
    fn learn(&mut self, task_id: &str, context_id: &str) -> Result<(), RemoteError> {
        let message_id = self.remote_message_id();
        match &mut self.remote {
            Some(remote) if remote.task_id != task_id => Err(self.inner.link.error(
                RemoteErrorKind::BadResponse,
                format!(
                    "an event of task {task_id:?} arrived for task {:?}",
                    remote.task_id
                ),
            )),
            Some(remote) => {
                if remote.message_id != message_id {
                    remote.message_id = message_id;
                    remote.turns += 1;
                    self.unrecorded = true;
                }
                Ok(())
            }
            None if task_id.is_empty() => Err(self
                .inner
                .link
                .error(RemoteErrorKind::BadResponse, "an event without a task id")),
            None => {
                let remote = RemoteTask {
                    agent: self.inner.link.agent.clone(),
                    task_id: task_id.to_owned(),
                    context_id: context_id.to_owned(),
                    message_id,
                    turns: 1,
                };
                self.inner.learned(&self.key, self.ctx, &remote);
                self.remote = Some(remote);
                self.unrecorded = true;
                self.made_here = true;
                Ok(())
            }
        }
    }

    /// Mirrors the status of a snapshot (a poll, the first event of a
    /// subscription) unless it is the one mirrored last.
    async fn mirror_status_if_changed(
        &mut self,
        status: TaskStatus,
        metadata: Option<Metadata>,
    ) -> Result<Flow, RemoteError> {
        if self.status == Some(seen(&status)) && !self.unrecorded {
            return Ok(flow_after(status.state));
        }
        self.mirror_status(status, metadata).await
    }

    /// Mirrors a remote status. The first one after the remote task is
    /// learned (or continued with a new message) carries its record, and is
    /// waited for until stored: from then on a restart finds the remote task
    /// instead of sending the message again.
    async fn mirror_status(
        &mut self,
        status: TaskStatus,
        metadata: Option<Metadata>,
    ) -> Result<Flow, RemoteError> {
        let state = status.state;
        if state == TaskState::Unspecified {
            return Err(self
                .link()
                .error(RemoteErrorKind::BadResponse, "a status without a state"));
        }
        self.status = Some(seen(&status));
        self.stale = None;
        let mut update = local_status(status, metadata, &self.ctx.task_id, &self.ctx.context_id);
        let record = self.remote.as_ref().filter(|_| self.unrecorded).cloned();
        match record {
            Some(remote) => {
                update
                    .metadata
                    .get_or_insert_with(Metadata::new)
                    .extend(remote.to_metadata());
                let state = serde_json::to_vec(&remote).unwrap_or_default();
                let checkpoint = Checkpoint::new(remote.turns, state);
                self.events
                    .send_checkpointed(update, checkpoint)
                    .await
                    .map_err(|e| self.ended(e))?;
                self.unrecorded = false;
            }
            None => self.events.send(update).await.map_err(|e| self.ended(e))?,
        }
        Ok(flow_after(state))
    }

    async fn mirror_artifact(
        &mut self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), RemoteError> {
        match self.artifacts.get_mut(&artifact.artifact_id) {
            Some(known) if append => known.parts.extend(artifact.parts.iter().cloned()),
            _ => {
                self.artifacts
                    .insert(artifact.artifact_id.clone(), artifact.clone());
            }
        }
        let update = local_artifact(
            artifact,
            append,
            last_chunk,
            &self.ctx.task_id,
            &self.ctx.context_id,
        );
        self.events.send(update).await.map_err(|e| self.ended(e))
    }

    /// The local execution refused an event: it has ended (canceled, say) or
    /// the event was invalid.
    fn ended(&self, err: A2aError) -> RemoteError {
        self.link().error(
            RemoteErrorKind::BadResponse,
            format!("mirroring its task: {}", err.message()),
        )
    }
}

/// What tells two statuses apart: the state and the status message.
pub(super) fn seen(status: &TaskStatus) -> (TaskState, String) {
    let message = status.message.as_ref();
    (
        status.state,
        message.map(|m| m.message_id.clone()).unwrap_or_default(),
    )
}

/// The remote's turn is over at a terminal state or when it asks for input
/// (auth-required goes on: the remote continues once it has the credentials).
fn flow_after(state: TaskState) -> Flow {
    if state.ends_turn() {
        Flow::Done
    } else {
        Flow::Continue
    }
}
