//! What a server writes to the conversation log: each request, each answer
//! or status change with a message, each artifact, each refused request.
//!
//! The [`Recorder`] is an [`Observer`] of an `a2a-server` handler; install it
//! with [`HandlerBuilderExt::conversation_log`]. Lines of one execution form
//! a chain: the request is the root (or, when the caller is an agent that
//! logs too, continues the caller's line named in the message's metadata),
//! and every later line takes the execution's [`ChainTip`] as its parent and
//! moves it on. The agent finds that tip in its context's extensions
//! (`ctx.extensions.get::<ChainTip>()`), so the calls it makes to other
//! agents ([`ClientExt::send_in_conversation`](crate::ClientExt::send_in_conversation))
//! join the chain between the request and the answer.
//!
//! A caller that writes to the same log (the collaboration hub delivering a
//! message, an agent calling a peer of its gateway) logs the request and its
//! outcome itself and marks the message so ([`mark_logged`]): the server
//! then takes the caller's line as the request's, and writes only what comes
//! between (status messages that do not end the turn, artifacts), so each
//! message is in the log once.

use std::borrow::Cow;
use std::sync::Arc;

use a2a_core::{A2aError, Artifact, Message, SendMessageRequest, StreamResponse, Task, TaskState};
use a2a_server::observer::{CallObserver, ExecutionObserver, Observer};
use a2a_server::{CallContext, HandlerBuilder, RequestContext};
use async_trait::async_trait;

use crate::entry::{AgentName, EntryId, Key, Record, Side, TipId};
use crate::{ChainTip, ConversationLog, EntryType, LineContent, metadata_keys};

/// Writes a server's lines to a [`ConversationLog`], as its agent. Cheap to
/// clone.
///
/// ```no_run
/// # fn demo(agent: impl a2a_server::AgentExecutor, card: a2a_core::AgentCard) {
/// use a2a_conversation::{ConversationLog, HandlerBuilderExt as _, LogConfig};
/// use a2a_server::DefaultRequestHandler;
///
/// let log = ConversationLog::open("./.a2a", LogConfig::default()).expect("log");
/// let handler = DefaultRequestHandler::builder(agent, card).conversation_log(log).build();
/// # let _ = handler; }
/// ```
#[derive(Debug, Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    log: ConversationLog,
    agent: AgentName,
    /// [`log_token`] of `log`.
    token: String,
}

/// What names a log in a message's metadata ([`metadata_keys::LOG_OWNER`]):
/// a hash of its directory salted per process, so the same log in this
/// process is recognised and nothing of the path leaves it.
fn log_token(log: &ConversationLog) -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    static SALT: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    let dir = log
        .dir()
        .canonicalize()
        .unwrap_or_else(|_| log.dir().to_owned());
    let mut hasher = SALT.get_or_init(Default::default).build_hasher();
    hasher.write(dir.as_os_str().as_encoded_bytes());
    format!("{:016x}", hasher.finish())
}

/// Marks `message` as logged by its sender in `log`, as line `line` (the
/// request's own line): a [`Recorder`] writing to the same log takes that
/// line as the request's and writes neither the request nor the message
/// that ends the agent's turn (the sender writes the outcome too), only
/// what comes between. A server with another log (or none) sees the line
/// as the parent of its own request line, as [`metadata_keys::LOG_PARENT`]
/// says.
pub fn mark_logged(message: &mut Message, log: &ConversationLog, line: &str) {
    let metadata = message.metadata.get_or_insert_with(Default::default);
    metadata.insert(metadata_keys::LOG_PARENT.to_owned(), line.into());
    metadata.insert(metadata_keys::LOG_OWNER.to_owned(), log_token(log).into());
}

/// Logs the messages a handler's agent takes and gives.
pub trait HandlerBuilderExt: sealed::Sealed {
    /// Writes every message that enters or leaves this agent to `log`:
    /// requests, the agent's replies, status changes with a message,
    /// artifacts and refused requests, each line chained to the request it
    /// answers (see [`Recorder`](crate::Recorder)). Appending never waits for the disk
    /// (see [`WhenFull`](crate::WhenFull)). It is the handler's
    /// [observer](a2a_server::observer), replacing any set before.
    #[must_use]
    fn conversation_log(self, log: ConversationLog) -> Self;
}

impl HandlerBuilderExt for HandlerBuilder {
    fn conversation_log(self, log: ConversationLog) -> Self {
        let agent = self.card().name.clone();
        self.observer(Recorder::new(log, agent))
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for a2a_server::HandlerBuilder {}
}

impl Recorder {
    /// Writes to `log` as `agent` (the name the lines give the server's side).
    pub fn new(log: ConversationLog, agent: impl Into<String>) -> Recorder {
        Recorder {
            shared: Arc::new(Shared {
                token: log_token(&log),
                log,
                agent: AgentName::new(agent.into()),
            }),
        }
    }

    /// Appends a line (encoded from the borrowed fields, no entry built); a
    /// full queue is the log's own business (it counts and records the
    /// loss), and never fails the request.
    async fn append(
        &self,
        kind: EntryType,
        (from, to): (Side<'_>, Side<'_>),
        content: LineContent<'_>,
        parent: Option<&TipId>,
        metadata: &[(Key, &str)],
    ) -> Option<EntryId> {
        let log = &self.shared.log;
        let record = Record {
            t: log.now(),
            kind,
            from_agent: from,
            to_agent: to,
            content,
            parent_id: parent,
            metadata,
        };
        match log.append_record(record).await {
            Ok(id) => Some(id),
            Err(err) => {
                tracing::debug!(error = %err, "a conversation log line was not written");
                None
            }
        }
    }

    /// Logs an incoming message from `peer` and returns the exchange it
    /// opens; a message its sender logged in this log ([`mark_logged`]) is
    /// not logged again.
    async fn request(&self, peer: Peer, message: &Message) -> Exchange {
        let metadata = message.metadata.as_ref();
        let parent = metadata
            .and_then(|m| m.get(metadata_keys::LOG_PARENT))
            .and_then(|v| v.as_str());
        let owner = metadata
            .and_then(|m| m.get(metadata_keys::LOG_OWNER))
            .and_then(|v| v.as_str());
        if let (Some(line), Some(owner)) = (parent, owner) {
            if owner == self.shared.token {
                return Exchange {
                    recorder: self.clone(),
                    peer,
                    tip: ChainTip::at(Some(line.to_owned())),
                    artifacts: Vec::new(),
                    caller_logs: true,
                };
            }
        }
        let ids = Ids::sorted([
            (Key::ContextId, &message.context_id),
            (Key::MessageId, &message.message_id),
            (Key::TaskId, &message.task_id),
        ]);
        let parent = parent.map(|line| TipId::Given(line.to_owned()));
        let id = self
            .append(
                EntryType::Request,
                (side(&peer), Side::Encoded(&self.shared.agent)),
                LineContent::Parts(&message.parts),
                parent.as_ref(),
                ids.as_slice(),
            )
            .await;
        Exchange {
            recorder: self.clone(),
            peer,
            tip: ChainTip::at_made(id),
            artifacts: Vec::new(),
            caller_logs: false,
        }
    }

    /// Logs a request refused with `err`.
    async fn error(&self, request: &RequestIds, err: &A2aError) {
        let code = err.kind().to_string();
        let ids = Ids::sorted([
            (Key::Code, &code),
            (Key::ContextId, &request.context_id),
            (Key::MessageId, &request.message_id),
            (Key::TaskId, &request.task_id),
        ]);
        self.append(
            EntryType::Error,
            (Side::Encoded(&self.shared.agent), side(&request.peer)),
            LineContent::Text(err.message()),
            None,
            ids.as_slice(),
        )
        .await;
    }
}

impl Observer for Recorder {
    fn call(
        &self,
        call: &CallContext,
        request: &SendMessageRequest,
    ) -> Option<Box<dyn CallObserver>> {
        Some(Box::new(Call {
            recorder: self.clone(),
            request: RequestIds::of(call, &request.message),
        }))
    }

    /// A resumed execution's lines have no parent until the agent adds one.
    fn resumed(&self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>> {
        let tip = ChainTip::default();
        ctx.extensions.insert(tip.clone());
        Some(Box::new(Exchange {
            recorder: self.clone(),
            peer: peer_name(&ctx.call, &ctx.message),
            tip,
            artifacts: Vec::new(),
            caller_logs: false,
        }))
    }
}

/// One call: its request line once accepted, its error line if refused.
struct Call {
    recorder: Recorder,
    /// What the error line says of the request, taken before the message
    /// is handed on (cheaper than keeping a copy of the whole message).
    request: RequestIds,
}

#[async_trait]
impl CallObserver for Call {
    async fn accepted(&mut self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>> {
        // The peer as `call` found it: the message's sender does not change
        // on the way.
        let peer = self.request.peer.clone();
        let exchange = self.recorder.request(peer, &ctx.message).await;
        ctx.extensions.insert(exchange.tip.clone());
        Some(Box::new(exchange))
    }

    async fn refused(&mut self, error: &A2aError) {
        self.recorder.error(&self.request, error).await;
    }
}

/// Who an execution answers, and the latest line of its exchange.
struct Exchange {
    recorder: Recorder,
    peer: Peer,
    tip: ChainTip,
    /// Artifacts the agent wrote this turn: each is logged once, whole, when
    /// the turn ends (not chunk by chunk).
    artifacts: Vec<String>,
    /// Whether the caller logs the request and the message that ends the
    /// turn itself ([`mark_logged`]).
    caller_logs: bool,
}

#[async_trait]
impl ExecutionObserver for Exchange {
    /// Logs what the agent said in `event`: a reply or a message that ends
    /// the turn is a `response`, a failure an `error`, any other status
    /// message a `state`. Artifacts are logged whole when the turn ends, from
    /// `task` (the task after the event), before the message that ends it.
    async fn event(&mut self, event: &StreamResponse, task: Option<&Task>) {
        let status = match event {
            StreamResponse::Message(message) => {
                if !self.caller_logs {
                    self.said(EntryType::Response, message, None).await;
                }
                return;
            }
            StreamResponse::ArtifactUpdate(update) => {
                if !self.artifacts.contains(&update.artifact.artifact_id) {
                    self.artifacts.push(update.artifact.artifact_id.clone());
                }
                return;
            }
            StreamResponse::StatusUpdate(update) => &update.status,
            StreamResponse::Task(task) => {
                for artifact in &task.artifacts {
                    if !self.artifacts.contains(&artifact.artifact_id) {
                        self.artifacts.push(artifact.artifact_id.clone());
                    }
                }
                &task.status
            }
        };
        if status.state.ends_turn() {
            for id in std::mem::take(&mut self.artifacts) {
                let artifact = task.and_then(|t| t.artifacts.iter().find(|a| a.artifact_id == id));
                if let (Some(artifact), Some(task)) = (artifact, task) {
                    self.artifact(artifact, task).await;
                }
            }
        }
        if let Some(message) = &status.message {
            if self.caller_logs && status.state.ends_turn() {
                return;
            }
            self.said(kind_of(status.state), message, Some(status.state))
                .await;
        }
    }
}

impl Exchange {
    async fn artifact(&self, artifact: &Artifact, task: &Task) {
        let ids = Ids::sorted([
            (Key::ArtifactId, &artifact.artifact_id),
            (Key::ContextId, &task.context_id),
            (Key::TaskId, &task.id),
        ]);
        let parent = self.tip.id();
        let id = self
            .recorder
            .append(
                EntryType::Response,
                (Side::Encoded(&self.recorder.shared.agent), side(&self.peer)),
                LineContent::Parts(&artifact.parts),
                parent.as_ref(),
                ids.as_slice(),
            )
            .await;
        if let Some(id) = id {
            self.tip.set_made(id);
        }
    }

    async fn said(&self, kind: EntryType, message: &Message, state: Option<TaskState>) {
        let ids = Ids::sorted([
            (Key::ContextId, &message.context_id),
            (Key::MessageId, &message.message_id),
            (Key::State, state.map_or("", TaskState::as_str)),
            (Key::TaskId, &message.task_id),
        ]);
        let parent = self.tip.id();
        let id = self
            .recorder
            .append(
                kind,
                (Side::Encoded(&self.recorder.shared.agent), side(&self.peer)),
                LineContent::Parts(&message.parts),
                parent.as_ref(),
                ids.as_slice(),
            )
            .await;
        if let Some(id) = id {
            self.tip.set_made(id);
        }
    }
}

/// What a refusal's line says of the request.
#[derive(Debug)]
struct RequestIds {
    peer: Peer,
    context_id: String,
    message_id: String,
    task_id: String,
}

impl RequestIds {
    fn of(call: &CallContext, message: &Message) -> RequestIds {
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
    pairs: [(Key, &'a str); 4],
    len: usize,
}

impl<'a> Ids<'a> {
    /// The pairs with a value, given in key order (checked in debug builds).
    fn sorted<const N: usize>(given: [(Key, &'a str); N]) -> Ids<'a> {
        debug_assert!(
            given.windows(2).all(|w| w[0].0 < w[1].0),
            "keys out of order"
        );
        let mut ids = Ids {
            pairs: [(Key::Code, ""); 4],
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

    fn as_slice(&self) -> &[(Key, &'a str)] {
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
/// authenticated user (an agent of a gateway, `agent:NAME`, by its name),
/// else `user`.
fn peer_name(call: &CallContext, message: &Message) -> Peer {
    if let Some(name) = message
        .metadata
        .as_ref()
        .and_then(|m| m.get(metadata_keys::FROM_AGENT))
        .and_then(|v| v.as_str())
    {
        return Cow::Owned(name.to_owned());
    }
    let user = &call.user.name;
    if let Some(agent) = user.strip_prefix("agent:").filter(|a| !a.is_empty()) {
        return Cow::Owned(agent.to_owned());
    }
    if user.is_empty() {
        Cow::Borrowed("user")
    } else {
        Cow::Owned(user.clone())
    }
}

/// Who an exchange is with: `user`, the most common, without an allocation.
type Peer = Cow<'static, str>;

/// The peer as a side of a line: `user` is written without a check.
fn side(peer: &Peer) -> Side<'_> {
    match peer {
        Cow::Borrowed("user") => Side::User,
        peer => Side::Name(peer),
    }
}
