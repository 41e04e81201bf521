//! Streams that outlive the connection (or the server) they started on.
//!
//! A task stream (`SendStreamingMessage`, `SubscribeToTask`) that ends
//! before the task is terminal or interrupted — the node holding it died,
//! a proxy cut the connection, the stream went silent past its idle
//! timeout, an event arrived broken — is picked up again with `SubscribeToTask`: first on the
//! interface it was on, then on the card's other usable interfaces in the
//! client's order of preference, pausing between attempts (doubling from
//! [`ResumePolicy::first_pause`] up to [`ResumePolicy::longest_pause`]) and
//! giving up after [`ResumePolicy::max_attempts`] attempts in a row that
//! brought the caller nothing new. When the agent says the task can no
//! longer be subscribed to (`UnsupportedOperationError`: it is terminal)
//! the task is read (`GetTask`) instead.
//!
//! # Every event once, in order
//!
//! Events carry no sequence number on the wire, and the protocol does not
//! replay what was missed: the new subscription's first event, the task as
//! it stands, is the point to resynchronize from. The stream keeps what its
//! caller has seen of the task (its status, each artifact's parts, the ids
//! of the messages) and, instead of handing on that snapshot, hands on only
//! what the caller has not seen, as the events that would have said it:
//!
//! 1. each agent message of the history the caller never saw, as a
//!    `Message` event (a status that came and went while disconnected is
//!    only known by its message, which the agent kept in the history);
//! 2. each artifact that is new, as an `artifactUpdate` with the whole
//!    artifact; each one that grew, as an `append` with the new parts; each
//!    one that changed otherwise, as a replacing `artifactUpdate`
//!    (`lastChunk` is set when the task is terminal, as nothing more can
//!    follow);
//! 3. the status, as a `statusUpdate`, when it differs from the last one
//!    the caller saw (state, timestamp or message).
//!
//! After a resumption, an event of the new stream equal to what the caller
//! has already seen (the same status with the same timestamp, an artifact
//! identical to the one it has) is dropped rather than repeated. These
//! events are made by the client and carry no marker: a caller that must
//! tell them apart from the agent's reads the task.
//!
//! A stream whose first event is a `Message` (a message-only reply) is never
//! resumed, nor one that ends at an interrupted state (`INPUT_REQUIRED`,
//! `AUTH_REQUIRED`), where servers may close it, nor one that ends before
//! naming a task. A resumption that fails ends the stream with an error
//! naming the task ([`ClientError::task_id`]).

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use a2a_core::{
    Artifact, ErrorKind, GetTaskRequest, Role, StreamResponse, SubscribeToTaskRequest, Task,
    TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};
use futures::StreamExt as _;

use crate::{CallOptions, Client, ClientError, ClientErrorKind, EventStream};

/// Whether and how a [`Client`] resumes a task stream that was cut (see
/// [the module](crate::resume)). On by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumePolicy {
    /// Whether streams are resumed at all; `false` hands the caller the
    /// stream's end or error as it comes.
    pub enabled: bool,
    /// Attempts in a row that bring the caller nothing new before giving
    /// up (default 8; at least 1). Every event the caller gets starts the
    /// count again, so a long task survives several cuts.
    pub max_attempts: u32,
    /// The pause before the second attempt (default 200 ms; the first is
    /// made at once); it doubles up to `longest_pause`.
    pub first_pause: Duration,
    /// The longest pause between two attempts (default 5 s).
    pub longest_pause: Duration,
}

impl Default for ResumePolicy {
    fn default() -> Self {
        ResumePolicy {
            enabled: true,
            max_attempts: 8,
            first_pause: Duration::from_millis(200),
            longest_pause: Duration::from_secs(5),
        }
    }
}

impl ResumePolicy {
    /// Never resume: a cut stream ends for its caller as it did.
    pub fn off() -> Self {
        ResumePolicy {
            enabled: false,
            ..ResumePolicy::default()
        }
    }

    /// The pause before attempt number `attempt` (0-based) of a resumption.
    fn pause(&self, attempt: u32) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        let longest = self.longest_pause.max(self.first_pause);
        self.first_pause
            .saturating_mul(1u32 << (attempt - 1).min(16))
            .min(longest)
    }
}

/// What the caller of a stream has seen of its task.
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    task_id: String,
    context_id: String,
    status: Option<TaskStatus>,
    /// Artifacts as the caller has them, in the order first seen.
    artifacts: Vec<Artifact>,
    /// Ids of the messages the caller has seen (in a snapshot's history, a
    /// status or a message event).
    messages: HashSet<String>,
    /// The stream opened with a message: a message-only reply.
    message_only: bool,
}

/// Two statuses the caller would take for the same one.
fn same_status(a: &TaskStatus, b: &TaskStatus) -> bool {
    a.state == b.state
        && a.timestamp == b.timestamp
        && a.message.as_ref().map(|m| &m.message_id) == b.message.as_ref().map(|m| &m.message_id)
}

/// Two artifacts alike but for their parts.
fn same_but_parts(a: &Artifact, b: &Artifact) -> bool {
    a.artifact_id == b.artifact_id
        && a.name == b.name
        && a.description == b.description
        && a.metadata == b.metadata
        && a.extensions == b.extensions
}

impl Seen {
    /// Whether a stream that ends now should be resumed: it is a task's, and
    /// the task has not reached a state where servers close streams.
    pub(crate) fn resumable(&self) -> bool {
        !self.message_only
            && !self.task_id.is_empty()
            && !self.status.as_ref().is_some_and(|s| s.state.is_settled())
    }

    fn name(&mut self, task_id: &str, context_id: &str) {
        if self.task_id.is_empty() {
            task_id.clone_into(&mut self.task_id);
        }
        if self.context_id.is_empty() {
            context_id.clone_into(&mut self.context_id);
        }
    }

    fn see_status(&mut self, status: &TaskStatus) {
        if let Some(message) = &status.message {
            self.messages.insert(message.message_id.clone());
        }
        self.status = Some(status.clone());
    }

    /// Records an event handed to the caller.
    pub(crate) fn apply(&mut self, event: &StreamResponse) {
        match event {
            StreamResponse::Task(task) => {
                self.name(&task.id, &task.context_id);
                self.see_status(&task.status);
                self.artifacts.clone_from(&task.artifacts);
                self.messages
                    .extend(task.history.iter().map(|m| m.message_id.clone()));
            }
            StreamResponse::Message(message) => {
                if self.task_id.is_empty() {
                    self.message_only = true;
                }
                self.messages.insert(message.message_id.clone());
            }
            StreamResponse::StatusUpdate(update) => {
                self.name(&update.task_id, &update.context_id);
                self.see_status(&update.status);
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.name(&update.task_id, &update.context_id);
                let id = &update.artifact.artifact_id;
                match self.artifacts.iter_mut().find(|a| a.artifact_id == *id) {
                    Some(have) if update.append => {
                        have.parts.extend(update.artifact.parts.iter().cloned());
                    }
                    Some(have) => have.clone_from(&update.artifact),
                    None => self.artifacts.push(update.artifact.clone()),
                }
            }
        }
    }

    /// Whether `event` only repeats what the caller has (a resumed stream
    /// may restate what its snapshot already said).
    pub(crate) fn repeats(&self, event: &StreamResponse) -> bool {
        match event {
            StreamResponse::StatusUpdate(update) => self
                .status
                .as_ref()
                .is_some_and(|s| same_status(s, &update.status)),
            StreamResponse::ArtifactUpdate(update) if !update.append => {
                self.artifacts.contains(&update.artifact)
            }
            StreamResponse::Message(message) => self.messages.contains(&message.message_id),
            StreamResponse::Task(_) | StreamResponse::ArtifactUpdate(_) => false,
        }
    }

    /// The events that bring the caller from what it has seen to
    /// `snapshot` (see [the module](crate::resume) for their order).
    pub(crate) fn catch_up(&self, snapshot: &Task) -> Vec<StreamResponse> {
        let task_id = if snapshot.id.is_empty() {
            self.task_id.clone()
        } else {
            snapshot.id.clone()
        };
        let context_id = if snapshot.context_id.is_empty() {
            self.context_id.clone()
        } else {
            snapshot.context_id.clone()
        };
        let mut events = Vec::new();
        let status_message = snapshot.status.message.as_ref().map(|m| &m.message_id);
        for message in &snapshot.history {
            if message.role == Role::Agent
                && !self.messages.contains(&message.message_id)
                && Some(&message.message_id) != status_message
            {
                events.push(StreamResponse::Message(a2a_core::Message::clone(message)));
            }
        }
        let last_chunk = snapshot.status.state.is_terminal();
        for artifact in &snapshot.artifacts {
            let have = self
                .artifacts
                .iter()
                .find(|a| a.artifact_id == artifact.artifact_id);
            let update = match have {
                Some(have) if have == artifact => continue,
                Some(have)
                    if same_but_parts(have, artifact)
                        && artifact.parts.starts_with(&have.parts) =>
                {
                    let mut added = artifact.clone();
                    added.parts = artifact.parts[have.parts.len()..].to_vec();
                    TaskArtifactUpdateEvent {
                        append: true,
                        ..TaskArtifactUpdateEvent::new(&task_id, &context_id, added)
                    }
                }
                _ => TaskArtifactUpdateEvent::new(&task_id, &context_id, artifact.clone()),
            };
            events.push(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                last_chunk,
                ..update
            }));
        }
        let status_seen = self
            .status
            .as_ref()
            .is_some_and(|s| same_status(s, &snapshot.status));
        if !status_seen {
            events.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: snapshot.status.clone(),
                metadata: None,
            }));
        }
        events
    }

    /// Takes in a snapshot once its differences were handed on: the
    /// messages of its history count as seen.
    fn absorb(&mut self, snapshot: &Task) {
        self.messages
            .extend(snapshot.history.iter().map(|m| m.message_id.clone()));
    }
}

/// Whether a stream that broke with `error` may be picked up again: an
/// answer of the agent (an A2A error) is its word, not a cut, unless it
/// says to come back (busy, unavailable: a node going away).
fn is_cut(error: &ClientError) -> bool {
    match error.kind() {
        ClientErrorKind::Connection
        | ClientErrorKind::Timeout
        | ClientErrorKind::Http
        | ClientErrorKind::Decode => true,
        ClientErrorKind::Protocol => error.is_retryable(),
        _ => false,
    }
}

/// A stream being read, and what to do when it ends.
struct Resuming {
    client: Client,
    options: Option<CallOptions>,
    policy: ResumePolicy,
    seen: Seen,
    stream: Option<EventStream>,
    /// Events made from a snapshot, not yet handed on.
    pending: VecDeque<StreamResponse>,
    /// The interface tried next (an index into the client's interfaces).
    interface: usize,
    /// Attempts since the caller last got something new.
    attempts: u32,
    /// The stream is a resumption: its first event is the snapshot to
    /// catch up from.
    expect_snapshot: bool,
    /// The stream was resumed at least once: repeats are dropped.
    resumed: bool,
    /// Nothing more comes after `pending`.
    finished: bool,
    /// Why the stream, or the last attempt to resume it, failed.
    last_error: Option<ClientError>,
}

/// `stream`, resumed by `client` as `policy` says when it is cut.
pub(crate) fn resuming(
    client: Client,
    stream: EventStream,
    options: Option<CallOptions>,
    policy: ResumePolicy,
) -> EventStream {
    let state = Resuming {
        client,
        options,
        policy,
        seen: Seen::default(),
        stream: Some(stream),
        pending: VecDeque::new(),
        interface: 0,
        attempts: 0,
        expect_snapshot: false,
        resumed: false,
        finished: false,
        last_error: None,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

impl Resuming {
    async fn next(&mut self) -> Option<Result<StreamResponse, ClientError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.seen.apply(&event);
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            let Some(stream) = self.stream.as_mut() else {
                if let Err(err) = self.resume().await {
                    self.finished = true;
                    return Some(Err(err));
                }
                continue;
            };
            let cut = match stream.next().await {
                Some(Ok(event)) => {
                    if std::mem::take(&mut self.expect_snapshot) {
                        if let StreamResponse::Task(snapshot) = &event {
                            self.catch_up(snapshot);
                            continue;
                        }
                    }
                    if self.resumed && self.seen.repeats(&event) {
                        continue;
                    }
                    self.attempts = 0;
                    self.seen.apply(&event);
                    return Some(Ok(event));
                }
                Some(Err(err)) if is_cut(&err) && self.seen.resumable() => Some(err),
                Some(Err(err)) => return Some(Err(err)),
                None if self.seen.resumable() => None,
                None => {
                    self.finished = true;
                    return None;
                }
            };
            self.stream = None;
            tracing::debug!(
                task_id = self.seen.task_id,
                error = ?cut.as_ref().map(ToString::to_string),
                "the task's stream was cut before the task settled; resubscribing"
            );
            if let Some(cut) = cut {
                self.last_error = Some(cut);
            }
        }
    }

    /// Queues what `snapshot` has that the caller has not seen; an attempt
    /// that brought something new starts the count again.
    fn catch_up(&mut self, snapshot: &Task) {
        let events = self.seen.catch_up(snapshot);
        if !events.is_empty() {
            self.attempts = 0;
        }
        self.pending.extend(events);
        self.seen.absorb(snapshot);
    }

    /// Subscribes to the task again, on the interface tried next and then
    /// the others in turn, until one answers or the attempts run out. A task
    /// that can no longer be subscribed to is read instead, and what it has
    /// that the caller has not seen is queued.
    async fn resume(&mut self) -> Result<(), ClientError> {
        let task_id = self.seen.task_id.clone();
        let interfaces = self.client.interface_count().max(1);
        loop {
            if self.attempts >= self.policy.max_attempts.max(1) {
                return Err(self.gave_up(&task_id));
            }
            tokio::time::sleep(self.policy.pause(self.attempts)).await;
            self.attempts += 1;
            let at = self.interface % interfaces;
            let target = match self.client.on_interface(at) {
                Ok(target) => target,
                Err(err) => {
                    self.failed(err, interfaces);
                    continue;
                }
            };
            let request = SubscribeToTaskRequest {
                id: task_id.clone(),
                ..SubscribeToTaskRequest::default()
            };
            let opened = target
                .open_stream(
                    a2a_core::operation::Request::SubscribeToTask(request),
                    self.options.as_ref(),
                )
                .await;
            let err = match opened {
                Ok(stream) => {
                    tracing::debug!(%task_id, interface = %target.interface().url, "resubscribed to the task");
                    self.stream = Some(stream);
                    self.expect_snapshot = true;
                    self.resumed = true;
                    return Ok(());
                }
                Err(err) => err,
            };
            match err.protocol_kind() {
                Some(ErrorKind::UnsupportedOperation) => {
                    // Terminal (or not subscribable here): read it.
                    let request = GetTaskRequest {
                        id: task_id.clone(),
                        ..GetTaskRequest::default()
                    };
                    match target.get_task(request, self.options.as_ref()).await {
                        Ok(task) => {
                            self.catch_up(&task);
                            if task.status.state.is_settled() {
                                self.finished = true;
                                return Ok(());
                            }
                            self.failed(err, interfaces);
                        }
                        Err(read) => self.failed(read, interfaces),
                    }
                }
                Some(ErrorKind::TaskNotFound) => return Err(err.with_task_id(task_id)),
                _ => self.failed(err, interfaces),
            }
        }
    }

    /// Notes a failed attempt; the next one goes to the next interface.
    fn failed(&mut self, err: ClientError, interfaces: usize) {
        tracing::debug!(task_id = self.seen.task_id, error = %err, attempts = self.attempts, "resubscribing failed");
        self.last_error = Some(err);
        self.interface = (self.interface + 1) % interfaces;
    }

    /// The error that ends a stream that could not be resumed.
    fn gave_up(&mut self, task_id: &str) -> ClientError {
        let (kind, why) = match self.last_error.take() {
            Some(err) => (err.kind(), err.to_string()),
            None => (
                ClientErrorKind::Connection,
                "the stream ended before the task settled".to_owned(),
            ),
        };
        ClientError::new(
            kind,
            format!(
                "the stream of task {task_id} was cut and could not be resumed after {} attempts: {why}",
                self.attempts
            ),
        )
        .with_task_id(task_id)
    }
}

#[cfg(test)]
mod tests {
    use a2a_core::{Message, Part, TaskState};

    use super::*;

    fn artifact(id: &str, texts: &[&str]) -> Artifact {
        Artifact::new(texts.iter().map(|t| Part::text(*t)).collect()).with_id(id)
    }

    fn seen_of(task: &Task) -> Seen {
        let mut seen = Seen::default();
        seen.apply(&StreamResponse::Task(task.clone()));
        seen
    }

    #[test]
    fn the_same_snapshot_again_brings_nothing() {
        let mut task = Task::new("t", "c", TaskState::Working);
        task.artifacts = vec![artifact("a", &["1"])];
        task.history = vec![Message::agent_text("hi").into()];
        assert!(seen_of(&task).catch_up(&task).is_empty());
    }

    #[test]
    fn a_changed_artifact_is_replaced_and_a_grown_one_appended() {
        let mut before = Task::new("t", "c", TaskState::Working);
        before.artifacts = vec![artifact("a", &["1"]), artifact("b", &["1", "2"])];
        let seen = seen_of(&before);
        let mut after = before.clone();
        after.artifacts = vec![artifact("a", &["1", "2"]), artifact("b", &["3"])];
        let events = seen.catch_up(&after);
        let [
            StreamResponse::ArtifactUpdate(a),
            StreamResponse::ArtifactUpdate(b),
        ] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert!(a.append && !a.last_chunk);
        assert_eq!(a.artifact.parts, [Part::text("2")]);
        assert!(!b.append);
        assert_eq!(b.artifact.parts, [Part::text("3")]);
    }

    #[test]
    fn a_status_seen_is_not_told_again_and_a_new_one_is() {
        let task = Task::new("t", "c", TaskState::Working);
        let mut seen = seen_of(&task);
        let mut update = TaskStatusUpdateEvent::new("t", "c", TaskState::Working);
        update.status = task.status.clone();
        let again = StreamResponse::StatusUpdate(update);
        assert!(seen.repeats(&again));
        let mut done = task.clone();
        done.status.state = TaskState::Completed;
        let events = seen.catch_up(&done);
        assert!(
            matches!(&events[..], [StreamResponse::StatusUpdate(u)] if u.status.state == TaskState::Completed)
        );
        seen.apply(&events[0]);
        assert!(!seen.resumable());
    }

    #[test]
    fn only_named_unsettled_task_streams_resume() {
        let mut seen = Seen::default();
        assert!(!seen.resumable());
        seen.apply(&StreamResponse::Message(Message::agent_text("hi")));
        assert!(!seen.resumable(), "a message-only reply");
        let mut seen = Seen::default();
        let mut update = TaskStatusUpdateEvent::new("t", "c", TaskState::Working);
        seen.apply(&StreamResponse::StatusUpdate(update.clone()));
        assert!(seen.resumable());
        update.status.state = TaskState::AuthRequired;
        seen.apply(&StreamResponse::StatusUpdate(update));
        assert!(!seen.resumable());
    }

    #[test]
    fn pauses_double_from_none_up_to_the_longest() {
        let policy = ResumePolicy {
            first_pause: Duration::from_millis(100),
            longest_pause: Duration::from_millis(350),
            ..ResumePolicy::default()
        };
        let pauses: Vec<u128> = (0..5).map(|n| policy.pause(n).as_millis()).collect();
        assert_eq!(pauses, [0, 100, 200, 350, 350]);
    }
}
