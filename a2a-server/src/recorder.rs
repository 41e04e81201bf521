//! What a server writes to the conversation log: each request, each answer
//! or status change with a message, each error.
//!
//! Lines of one execution form a chain: the request is the root (or, when the
//! caller is an agent that logs too, continues the caller's line named in the
//! message's metadata), and every later line takes the execution's
//! [`ChainTip`] as its parent and moves it on.

use a2a_conversation::{
    ChainTip, ConversationLog, EntryType, LogEntry, metadata_keys, parts_content,
};
use a2a_core::{A2aError, Artifact, Message, StreamResponse, Task, TaskState};

use crate::CallContext;

/// Writes a server's lines to a [`ConversationLog`], as `agent`.
#[derive(Debug, Clone)]
pub(crate) struct Recorder {
    log: ConversationLog,
    agent: String,
}

/// Who an execution answers, and the latest line of its exchange.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub(crate) peer: String,
    pub(crate) tip: ChainTip,
    /// Artifacts the agent wrote this turn: each is logged once, whole, when
    /// the turn ends (not chunk by chunk).
    pub(crate) artifacts: Vec<String>,
}

impl Recorder {
    pub(crate) fn new(log: ConversationLog, agent: String) -> Recorder {
        Recorder { log, agent }
    }

    /// The exchange of an execution that no request opened here (one resumed
    /// after a restart): its lines have no parent until the agent adds one.
    pub(crate) fn exchange_of(call: &CallContext, message: &Message, tip: ChainTip) -> Exchange {
        Exchange {
            peer: peer_name(call, message),
            tip,
            artifacts: Vec::new(),
        }
    }

    /// Appends `entry`; a full queue is the log's own business (it counts
    /// and records the loss), and never fails the request.
    async fn append(&self, entry: LogEntry) -> Option<String> {
        match self.log.append(entry).await {
            Ok(id) => Some(id),
            Err(err) => {
                tracing::debug!(error = %err, "a conversation log line was not written");
                None
            }
        }
    }

    /// Logs an incoming message and returns the exchange it opens.
    pub(crate) async fn request(&self, call: &CallContext, message: &Message) -> Exchange {
        let peer = peer_name(call, message);
        let parent = message
            .metadata
            .as_ref()
            .and_then(|m| m.get(metadata_keys::LOG_PARENT))
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        let entry = LogEntry::new(
            self.log.now(),
            EntryType::Request,
            peer.clone(),
            Some(self.agent.clone()),
            parts_content(&message.parts),
        )
        .parent(parent);
        let entry = with_ids(entry, &message.task_id, &message.context_id)
            .meta("messageId", message.message_id.as_str());
        let tip = ChainTip::at(self.append(entry).await);
        Exchange {
            peer,
            tip,
            artifacts: Vec::new(),
        }
    }

    /// Logs what the agent said in `event`: a reply or a message that ends
    /// the turn is a `response`, a failure an `error`, any other status
    /// message a `state`. Artifacts are logged whole when the turn ends, from
    /// `task` (the task after the event), before the message that ends it.
    pub(crate) async fn event(
        &self,
        exchange: &mut Exchange,
        event: &StreamResponse,
        task: Option<&Task>,
    ) {
        let status = match event {
            StreamResponse::Message(message) => {
                self.said(exchange, EntryType::Response, message, None)
                    .await;
                return;
            }
            StreamResponse::ArtifactUpdate(update) => {
                if !exchange.artifacts.contains(&update.artifact.artifact_id) {
                    exchange.artifacts.push(update.artifact.artifact_id.clone());
                }
                return;
            }
            StreamResponse::StatusUpdate(update) => &update.status,
            StreamResponse::Task(task) => {
                for artifact in &task.artifacts {
                    if !exchange.artifacts.contains(&artifact.artifact_id) {
                        exchange.artifacts.push(artifact.artifact_id.clone());
                    }
                }
                &task.status
            }
        };
        if status.state.ends_turn() {
            for id in std::mem::take(&mut exchange.artifacts) {
                let artifact = task.and_then(|t| t.artifacts.iter().find(|a| a.artifact_id == id));
                if let Some(artifact) = artifact {
                    self.artifact(exchange, artifact, task).await;
                }
            }
        }
        if let Some(message) = &status.message {
            self.said(exchange, kind_of(status.state), message, Some(status.state))
                .await;
        }
    }

    async fn artifact(&self, exchange: &Exchange, artifact: &Artifact, task: Option<&Task>) {
        let entry = LogEntry::new(
            self.log.now(),
            EntryType::Response,
            self.agent.clone(),
            Some(exchange.peer.clone()),
            parts_content(&artifact.parts),
        )
        .parent(exchange.tip.get())
        .meta("artifactId", artifact.artifact_id.as_str());
        let entry = match task {
            Some(task) => with_ids(entry, &task.id, &task.context_id),
            None => entry,
        };
        if let Some(id) = self.append(entry).await {
            exchange.tip.set(id);
        }
    }

    async fn said(
        &self,
        exchange: &Exchange,
        kind: EntryType,
        message: &Message,
        state: Option<TaskState>,
    ) {
        let entry = LogEntry::new(
            self.log.now(),
            kind,
            self.agent.clone(),
            Some(exchange.peer.clone()),
            parts_content(&message.parts),
        )
        .parent(exchange.tip.get())
        .meta("messageId", message.message_id.as_str());
        let mut entry = with_ids(entry, &message.task_id, &message.context_id);
        if let Some(state) = state {
            entry = entry.meta("state", state.as_str());
        }
        if let Some(id) = self.append(entry).await {
            exchange.tip.set(id);
        }
    }

    /// Logs a request refused with `err`.
    pub(crate) async fn error(&self, call: &CallContext, message: &Message, err: &A2aError) {
        let entry = LogEntry::new(
            self.log.now(),
            EntryType::Error,
            self.agent.clone(),
            Some(peer_name(call, message)),
            err.message().to_owned(),
        )
        .meta("code", err.kind().to_string())
        .meta("messageId", message.message_id.as_str());
        let entry = with_ids(entry, &message.task_id, &message.context_id);
        self.append(entry).await;
    }
}

fn kind_of(state: TaskState) -> EntryType {
    match state {
        TaskState::Failed | TaskState::Rejected => EntryType::Error,
        state if state.ends_turn() => EntryType::Response,
        _ => EntryType::State,
    }
}

/// The sender: the agent named in the message's metadata, else the
/// authenticated user, else `user`.
fn peer_name(call: &CallContext, message: &Message) -> String {
    if let Some(name) = message
        .metadata
        .as_ref()
        .and_then(|m| m.get(metadata_keys::FROM_AGENT))
        .and_then(|v| v.as_str())
    {
        return name.to_owned();
    }
    let user = &call.user.name;
    if user.is_empty() {
        "user".to_owned()
    } else {
        user.clone()
    }
}

fn with_ids(entry: LogEntry, task_id: &str, context_id: &str) -> LogEntry {
    let entry = if task_id.is_empty() {
        entry
    } else {
        entry.meta("taskId", task_id)
    };
    if context_id.is_empty() {
        entry
    } else {
        entry.meta("contextId", context_id)
    }
}
