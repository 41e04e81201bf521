//! What a server writes to the conversation log: each request, each answer
//! or status change with a message, each error.
//!
//! Lines of one execution form a chain: the request is the root (or, when the
//! caller is an agent that logs too, continues the caller's line named in the
//! message's metadata), and every later line takes the execution's
//! [`ChainTip`] as its parent and moves it on.

use a2a_conversation::{ChainTip, ConversationLog, EntryType, Line, LineContent, metadata_keys};
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

    /// Appends a line (encoded from the borrowed fields, no entry built); a
    /// full queue is the log's own business (it counts and records the
    /// loss), and never fails the request.
    async fn append(
        &self,
        kind: EntryType,
        (from, to): (&str, &str),
        content: LineContent<'_>,
        parent: Option<&str>,
        metadata: &[(&str, &str)],
    ) -> Option<String> {
        let line = Line {
            t: self.log.now(),
            kind,
            from_agent: from,
            to_agent: Some(to),
            content,
            parent_id: parent,
            metadata,
        };
        match self.log.append_line(line).await {
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
            .and_then(|v| v.as_str());
        let ids = Ids::sorted([
            ("contextId", &message.context_id),
            ("messageId", &message.message_id),
            ("taskId", &message.task_id),
        ]);
        let id = self
            .append(
                EntryType::Request,
                (&peer, &self.agent),
                LineContent::Parts(&message.parts),
                parent,
                ids.as_slice(),
            )
            .await;
        Exchange {
            peer,
            tip: ChainTip::at(id),
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
                if let (Some(artifact), Some(task)) = (artifact, task) {
                    self.artifact(exchange, artifact, task).await;
                }
            }
        }
        if let Some(message) = &status.message {
            self.said(exchange, kind_of(status.state), message, Some(status.state))
                .await;
        }
    }

    async fn artifact(&self, exchange: &Exchange, artifact: &Artifact, task: &Task) {
        let ids = Ids::sorted([
            ("artifactId", &artifact.artifact_id),
            ("contextId", &task.context_id),
            ("taskId", &task.id),
        ]);
        let parent = exchange.tip.get();
        let id = self
            .append(
                EntryType::Response,
                (&self.agent, &exchange.peer),
                LineContent::Parts(&artifact.parts),
                parent.as_deref(),
                ids.as_slice(),
            )
            .await;
        if let Some(id) = id {
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
        let ids = Ids::sorted([
            ("contextId", &message.context_id),
            ("messageId", &message.message_id),
            ("state", state.map_or("", TaskState::as_str)),
            ("taskId", &message.task_id),
        ]);
        let parent = exchange.tip.get();
        let id = self
            .append(
                kind,
                (&self.agent, &exchange.peer),
                LineContent::Parts(&message.parts),
                parent.as_deref(),
                ids.as_slice(),
            )
            .await;
        if let Some(id) = id {
            exchange.tip.set(id);
        }
    }

    /// Logs a request refused with `err`.
    pub(crate) async fn error(&self, request: &RequestIds, err: &A2aError) {
        let code = err.kind().to_string();
        let ids = Ids::sorted([
            ("code", &code),
            ("contextId", &request.context_id),
            ("messageId", &request.message_id),
            ("taskId", &request.task_id),
        ]);
        self.append(
            EntryType::Error,
            (&self.agent, &request.peer),
            LineContent::Text(err.message()),
            None,
            ids.as_slice(),
        )
        .await;
    }
}

/// What a refusal's line says of the request: taken before the message is
/// handed on (cheaper than keeping a copy of the whole message in case).
#[derive(Debug)]
pub(crate) struct RequestIds {
    peer: String,
    context_id: String,
    message_id: String,
    task_id: String,
}

impl RequestIds {
    pub(crate) fn of(call: &CallContext, message: &Message) -> RequestIds {
        RequestIds {
            peer: peer_name(call, message),
            context_id: message.context_id.clone(),
            message_id: message.message_id.clone(),
            task_id: message.task_id.clone(),
        }
    }
}

/// A line's metadata: the A2A ids and a few more, sorted by key (the order
/// a stored entry's metadata reads back in), on the stack.
struct Ids<'a> {
    pairs: [(&'a str, &'a str); 4],
    len: usize,
}

impl<'a> Ids<'a> {
    /// The pairs with a value, given in key order (checked in debug builds).
    fn sorted<const N: usize>(given: [(&'a str, &'a str); N]) -> Ids<'a> {
        debug_assert!(
            given.windows(2).all(|w| w[0].0 < w[1].0),
            "keys out of order"
        );
        let mut ids = Ids {
            pairs: [("", ""); 4],
            len: 0,
        };
        for (key, value) in given {
            if !value.is_empty() && ids.len < ids.pairs.len() {
                ids.pairs[ids.len] = (key, value);
                ids.len += 1;
            }
        }
        ids
    }

    fn as_slice(&self) -> &[(&'a str, &'a str)] {
        &self.pairs[..self.len]
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
