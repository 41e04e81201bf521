//! Agents that live elsewhere: the gateway forwards to a remote A2A agent.
//!
//! A [`RemoteAgent`] is an [`AgentExecutor`] like any Rust agent, so the
//! gateway hosts it the same way and its callers cannot tell the
//! difference: the gateway's own store keeps the local task (ownership,
//! `ListTasks`, `SubscribeToTask`, push configs and durability work as for a
//! local agent), and the executor mirrors the remote task into it. The
//! remote sees one caller, the gateway with its [`Credentials`]; who called
//! the gateway travels in the request metadata under
//! [`CALLER_METADATA_KEY`] (a [`ForwardedCaller`]), and the caller's own
//! credentials never leave the gateway.
//!
//! The local task keeps its remote task in its metadata under
//! [`REMOTE_METADATA_KEY`] (a [`RemoteTask`]): a follow-up message to a
//! local task waiting for input continues the remote task, `CancelTask`
//! cancels the remote one, and an execution resumed after a gateway restart
//! follows the remote task again instead of sending the message twice.
//!
//! The local task exists from the remote's first answer on (a reply with a
//! message instead of a task stays a message), so a `returnImmediately` call
//! to the gateway returns once the remote has answered, within the request
//! timeout. A message reaches the remote at least once: it carries an id
//! made from the local task and message ids, the same when an execution
//! resumed after a crash sends it again because the crash came before its
//! remote task was recorded (a remote that drops repeated message ids drops
//! it). A task made by a send whose execution stops before recording it is
//! canceled, since nothing could follow it again.
//!
//! The card is fetched on first use, not at start: a remote that is down
//! does not keep the gateway from starting. Its calls then fail at once
//! with an error naming the agent and its URL, and the card is fetched
//! again once [`RemoteAgentConfig::retry_card_after`] has passed. Every
//! wait is bounded by the configured timeouts.
//!
//! ```no_run
//! use a2a_gateway::remote::{RemoteAgent, RemoteAgentConfig};
//! use a2a_server::DefaultRequestHandler;
//!
//! # async fn demo() {
//! let weather = RemoteAgent::new(
//!     "weather",
//!     RemoteAgentConfig::new("https://weather.example.com").bearer("gateway-token"),
//! );
//! // Hosted by a gateway, with a card made from the remote's.
//! let gateway = a2a_gateway::Gateway::builder()
//!     .agent(weather.clone().definition().await)
//!     .build("http://127.0.0.1:8080");
//! // Or behind a handler of its own.
//! let card = match weather.card().await {
//!     Ok(card) => RemoteAgent::hosted_card(&card),
//!     Err(_) => a2a_core::AgentCard::new("weather", "(remote agent unavailable)"),
//! };
//! let handler = DefaultRequestHandler::builder(weather, card).build();
//! # let _ = (gateway, handler);
//! # }
//! ```

mod config;
mod error;
mod forward;
mod hosting;
mod link;
mod mapping;

pub use self::config::{Credentials, RemoteAgentConfig};
pub use self::error::{RemoteError, RemoteErrorKind};
pub use self::mapping::{CALLER_METADATA_KEY, ForwardedCaller, REMOTE_METADATA_KEY, RemoteTask};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, ErrorKind, Metadata, SendMessageResponse,
    StreamResponse,
};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use async_trait::async_trait;
use futures::StreamExt as _;

use self::forward::{Forward, Sending, Sent};
use self::link::Link;

/// Most conversations whose remote context the gateway remembers; past it
/// the memory starts over (a new task in a forgotten conversation starts a
/// new remote conversation).
const MAX_CONTEXTS: usize = 10_000;

/// A remote A2A agent hosted by the gateway. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RemoteAgent {
    inner: Arc<Inner>,
}

/// Who owns a local task or conversation: a caller's tenant and user with
/// the local id, so that one caller's ids never reach another's remote work.
type LiveKey = (String, String, String);

#[derive(Debug)]
pub(crate) struct Inner {
    link: Link,
    /// The executions running now, by local task: what a cancel that comes
    /// before the remote task is written down needs.
    live: Mutex<HashMap<LiveKey, Live>>,
    /// The remote conversation of each local one, so that a new task in a
    /// local conversation continues the remote one.
    contexts: Mutex<HashMap<LiveKey, String>>,
}

#[derive(Debug, Default)]
struct Live {
    remote: Option<RemoteTask>,
    cancel_requested: bool,
}

/// A poisoned lock only means another execution panicked while holding it;
/// the maps stay usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn key(ctx: &RequestContext, id: &str) -> LiveKey {
    (
        ctx.call.tenant.clone(),
        ctx.call.user.name.clone(),
        id.to_owned(),
    )
}

impl RemoteAgent {
    /// The agent at `config.url`, hosted as `name`. Nothing is fetched yet:
    /// the first call (or [`card`](Self::card)) does it.
    pub fn new(name: impl Into<String>, config: RemoteAgentConfig) -> Self {
        RemoteAgent {
            inner: Arc::new(Inner {
                link: Link::new(name.into(), config),
                live: Mutex::new(HashMap::new()),
                contexts: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The agent, with its card fetched now: fails if the remote cannot be
    /// reached. For a gateway that must start whatever its remotes do, use
    /// [`new`](Self::new).
    pub async fn connect(
        name: impl Into<String>,
        config: RemoteAgentConfig,
    ) -> Result<Self, RemoteError> {
        let agent = RemoteAgent::new(name, config);
        agent.card().await?;
        Ok(agent)
    }

    /// The name the gateway hosts the agent under.
    pub fn name(&self) -> &str {
        &self.inner.link.agent
    }

    /// How the agent is reached.
    pub fn config(&self) -> &RemoteAgentConfig {
        &self.inner.link.config
    }

    /// The remote's card, fetched now if it has not been (or if the last
    /// attempt failed longer than `retry_card_after` ago).
    pub async fn card(&self) -> Result<Arc<AgentCard>, RemoteError> {
        Ok(self.inner.link.connect().await?.card)
    }

    /// The remote's card if it has been fetched, without fetching it (nor
    /// waiting for a fetch under way).
    pub fn cached_card(&self) -> Option<Arc<AgentCard>> {
        self.inner.link.cached().map(|c| c.card)
    }
}

impl Inner {
    fn error(&self, kind: RemoteErrorKind, message: impl Into<String>) -> RemoteError {
        self.link.error(kind, message)
    }

    /// The remote conversation for a new task in the caller's local
    /// conversation: that of a task it references in the same conversation,
    /// else the one remembered for it, else none (the remote starts one).
    fn remote_context(&self, ctx: &RequestContext) -> String {
        let referenced = ctx
            .referenced_tasks
            .iter()
            .filter(|t| t.context_id == ctx.context_id)
            .filter_map(RemoteTask::of)
            .find(|r| r.agent == self.link.agent);
        if let Some(remote) = referenced {
            return remote.context_id;
        }
        lock(&self.contexts)
            .get(&key(ctx, &ctx.context_id))
            .cloned()
            .unwrap_or_default()
    }

    /// Notes the remote task an execution has just learned of.
    fn learned(&self, live: &LiveKey, ctx: &RequestContext, remote: &RemoteTask) {
        if let Some(entry) = lock(&self.live).get_mut(live) {
            entry.remote = Some(remote.clone());
        }
        let mut contexts = lock(&self.contexts);
        if contexts.len() >= MAX_CONTEXTS {
            contexts.clear();
        }
        contexts.insert(key(ctx, &ctx.context_id), remote.context_id.clone());
    }

    fn cancel_requested(&self, live: &LiveKey) -> bool {
        lock(&self.live)
            .get(live)
            .is_some_and(|l| l.cancel_requested)
    }

    /// Cancels the remote task. A remote that refuses (its task has ended,
    /// say) refuses the local cancel too; one that no longer knows the task,
    /// or cannot be reached, does not keep the local task from being
    /// canceled.
    async fn cancel_remote(
        &self,
        remote: &RemoteTask,
        metadata: Option<Metadata>,
    ) -> Result<(), RemoteError> {
        let connected = match self.link.connect().await {
            Ok(connected) => connected,
            Err(err) => {
                tracing::warn!(agent = %self.link.agent, remote_task = %remote.task_id, error = %err, "the remote task could not be canceled");
                return Ok(());
            }
        };
        let request = CancelTaskRequest {
            id: remote.task_id.clone(),
            metadata,
            ..CancelTaskRequest::default()
        };
        let limit = self.link.config.request_timeout;
        let outcome =
            tokio::time::timeout(limit, connected.client.cancel_task(request, None)).await;
        let err = match outcome {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(err)) => RemoteError::from_client(
                &self.link.agent,
                &self.link.config.url,
                "canceling the remote task",
                &err,
            ),
            Err(_) => self.error(
                RemoteErrorKind::Timeout,
                format!("canceling the remote task: no answer within {limit:?}"),
            ),
        };
        match err.protocol().map(A2aError::kind) {
            Some(ErrorKind::TaskNotCancelable | ErrorKind::UnsupportedOperation) => Err(err),
            _ => {
                tracing::warn!(agent = %self.link.agent, remote_task = %remote.task_id, error = %err, "the remote task could not be canceled");
                Ok(())
            }
        }
    }

    /// Waits for a send whose execution has stopped, and cancels the task it
    /// made, if any (bounded by the request timeout at each step).
    async fn cancel_when_sent(self: Arc<Self>, send: Sending, metadata: Option<Metadata>) {
        let limit = self.link.config.request_timeout;
        let task_id = match tokio::time::timeout(limit, send).await {
            Ok(Ok(Sent::Answer(answer))) => match *answer {
                SendMessageResponse::Task(task) => task.id,
                SendMessageResponse::Message(_) => return,
            },
            Ok(Ok(Sent::Stream(mut stream))) => loop {
                match tokio::time::timeout(limit, stream.next()).await {
                    Ok(Some(Ok(StreamResponse::Message(_)))) => return,
                    Ok(Some(Ok(event))) if !event.task_id().is_empty() => {
                        break event.task_id().to_owned();
                    }
                    Ok(Some(Ok(_))) => {}
                    _ => return,
                }
            },
            _ => return,
        };
        let remote = RemoteTask {
            agent: self.link.agent.clone(),
            task_id,
            context_id: String::new(),
            message_id: String::new(),
            turns: 0,
        };
        self.cancel_remote(&remote, metadata).await.ok();
    }
}

/// Removes an execution's entry when it ends, however it ends.
struct LiveGuard<'a> {
    inner: &'a Inner,
    key: LiveKey,
}

impl Drop for LiveGuard<'_> {
    fn drop(&mut self) {
        lock(&self.inner.live).remove(&self.key);
    }
}

#[async_trait]
impl AgentExecutor for RemoteAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let live = key(&ctx, &ctx.task_id);
        lock(&self.inner.live).insert(live.clone(), Live::default());
        let _guard = LiveGuard {
            inner: &self.inner,
            key: live.clone(),
        };
        let connected = self.inner.link.connect().await?;
        Forward::new(&self.inner, connected, &ctx, &events, live)
            .run()
            .await
            .map_err(A2aError::from)
    }

    async fn cancel(&self, ctx: RequestContext) -> Result<(), A2aError> {
        let live = key(&ctx, &ctx.task_id);
        let known = ctx
            .stored_task
            .as_ref()
            .and_then(RemoteTask::of)
            .or_else(|| {
                let mut executions = lock(&self.inner.live);
                let entry = executions.get_mut(&live)?;
                // Not known yet: the execution cancels it once it is.
                entry.cancel_requested = entry.remote.is_none();
                entry.remote.clone()
            });
        match known {
            Some(remote) => {
                let metadata = forward::forwarded_metadata(&ctx, self.name());
                Ok(self.inner.cancel_remote(&remote, metadata).await?)
            }
            None => Ok(()),
        }
    }
}
