//! The conversation index in the server: every call from one agent to
//! another continues the pair's conversation.
//!
//! Each hosted agent's handler is wrapped ([`Conversations::wrap`]): when a
//! `SendMessage` (or its streaming form) comes from another agent and names
//! no `contextId`, it gets the pair's (`WORKSPACE::a|b` in the
//! [`ConversationIndex`]), and the task too when that task waits for input;
//! the answer then moves the pair's entry on. It sits in the target's
//! handler, not in a client, so every way one agent reaches another takes
//! it alike: a Rust agent through [`Peers`](crate::Peers), a process agent
//! through `$A2A_GATEWAY_URL` with its secret, a call to a remote agent the
//! gateway hosts. The caller is who the call proved to be (`agent:<name>`,
//! see `calling_agent`); where nobody authenticates, an anonymous call may
//! name its agent in its metadata (`a2aFromAgent`), as
//! [`ClientExt::send_in_conversation`](a2a_conversation::ClientExt) does.
//!
//! The rules:
//! - a `contextId` the caller gives always wins (and becomes the pair's);
//! - a conversation still open (its task submitted, working or waiting for
//!   input) is continued whatever its age; a settled one within the reuse
//!   window of its last event ([`DEFAULT_REUSE_WINDOW`], six hours, the
//!   hub's); after that, the pair starts afresh;
//! - a waiting task that is gone (its context deleted) or no longer takes
//!   input is let go: the call is made again as a fresh conversation.
//!
//! **One notion of the pair's conversation.** The collaboration hub used to
//! keep routes of its own, `(opener, target, channel) → thread`, in its
//! SQLite record. A hub thread *is* an A2A conversation (its id is the
//! `contextId` the agents see), so two tables would soon disagree on which
//! conversation a pair is in. The hub's routes became index entries: its
//! `collaborate` looks the pair up in this same index (a thread of the entry,
//! in the channel asked, within the reuse window, is continued) and records
//! the thread it opens or continues as the pair's entry, written right after
//! the thread. A pair that talked through `Peers` and then collaborates
//! continues in a thread of that very context; a Peers call after a
//! collaborate continues the thread's context. The index, not the hub's
//! record, is the source of truth; the hub's old `routes` rows are read once,
//! on open, into the index.
//!
//! Each recorded answer is also logged as a `decision` line carrying the
//! route, so the index is rebuilt from the log when its file is missing,
//! torn or behind (see [`ConversationIndex::open`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_conversation::{
    ConversationIndex, ConversationLog, DEFAULT_REUSE_WINDOW, DEFAULT_WORKSPACE, EntryType,
    LogEntry, Route, RouteKey, metadata_keys,
};
use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Message, SendMessageRequest, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use a2a_server::{CallContext, EventStream, RequestHandler};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::Stream;

/// The conversation index as a gateway runs it: the index, the workspace
/// its keys are in, the reuse window and, optionally, the log its route
/// changes go to. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Conversations {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    index: ConversationIndex,
    workspace: String,
    reuse_window: Duration,
    log: Option<ConversationLog>,
    /// Callers whose calls are not a pair's turns (the hub, which delivers
    /// in contexts of its own).
    relays: Vec<String>,
}

impl Conversations {
    /// `index`, its keys in workspace [`DEFAULT_WORKSPACE`], settled
    /// conversations reused for [`DEFAULT_REUSE_WINDOW`].
    pub fn new(index: ConversationIndex) -> Conversations {
        Conversations {
            shared: Arc::new(Shared {
                index,
                workspace: DEFAULT_WORKSPACE.to_owned(),
                reuse_window: DEFAULT_REUSE_WINDOW,
                log: None,
                relays: Vec::new(),
            }),
        }
    }

    fn edit(mut self, change: impl FnOnce(&mut Shared)) -> Conversations {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => change(shared),
            None => {
                let mut shared = Shared {
                    index: self.shared.index.clone(),
                    workspace: self.shared.workspace.clone(),
                    reuse_window: self.shared.reuse_window,
                    log: self.shared.log.clone(),
                    relays: self.shared.relays.clone(),
                };
                change(&mut shared);
                self.shared = Arc::new(shared);
            }
        }
        self
    }

    /// The workspace the keys are in (the gateway's name).
    #[must_use]
    pub fn workspace(self, workspace: impl Into<String>) -> Conversations {
        let workspace = workspace.into();
        self.edit(|s| s.workspace = workspace)
    }

    /// How long a settled conversation stays the pair's.
    #[must_use]
    pub fn reuse_window(self, window: Duration) -> Conversations {
        self.edit(|s| s.reuse_window = window)
    }

    /// Logs each route change to `log` (a `decision` line), so that the
    /// index can be rebuilt from the log.
    #[must_use]
    pub fn log(self, log: ConversationLog) -> Conversations {
        self.edit(|s| s.log = Some(log))
    }

    /// Calls from agent `name` are not a pair's turns: they are neither
    /// continued nor recorded (the hub's deliveries, which carry the
    /// thread's context themselves).
    #[must_use]
    pub fn relay(self, name: impl Into<String>) -> Conversations {
        let name = name.into();
        self.edit(|s| s.relays.push(name))
    }

    /// The index.
    pub fn index(&self) -> &ConversationIndex {
        &self.shared.index
    }

    /// The workspace of the keys.
    pub fn workspace_name(&self) -> &str {
        &self.shared.workspace
    }

    /// The reuse window.
    pub fn window(&self) -> Duration {
        self.shared.reuse_window
    }

    /// The key of the pair `a`, `b`.
    pub fn key(&self, a: &str, b: &str) -> RouteKey {
        RouteKey::new(&self.shared.workspace, a, b)
    }

    /// The pair's conversation a call at `now` continues, if any.
    pub fn current(&self, key: &RouteKey, now: DateTime<Utc>) -> Option<Arc<Route>> {
        self.shared
            .index
            .get(key)
            .filter(|route| route.continues_at(now, self.shared.reuse_window))
    }

    /// Records where the pair's conversation stands, logs it and saves the
    /// index soon.
    pub async fn record(&self, key: RouteKey, route: Route, from: &str, to: &str) {
        if let Some(log) = &self.shared.log {
            let line = LogEntry::new(
                route.updated_at,
                EntryType::Decision,
                from,
                Some(to.to_owned()),
                format!("conversation {} ({})", route.context_id, route.last_event),
            )
            .route(&key, &route);
            if let Err(err) = log.append(line).await {
                tracing::debug!(error = %err, "a route line was not logged");
            }
        }
        self.shared.index.record(key, route);
        if self.shared.index.is_shared() {
            // Other nodes look the pair up in the store: written before the
            // answer goes back, so the pair's next call finds it anywhere.
            if let Err(err) = self.shared.index.flush().await {
                tracing::warn!(error = %err, "writing a conversation route to the shared index failed; it is written with the next one");
            }
        } else {
            self.shared.index.save_soon();
        }
    }

    /// Wraps agent `agent`'s handler so that calls from other agents
    /// continue their conversation with it.
    pub fn wrap(&self, agent: &str, handler: Arc<dyn RequestHandler>) -> Arc<dyn RequestHandler> {
        Arc::new(Continuing {
            conversations: self.clone(),
            agent: agent.into(),
            inner: handler,
        })
    }

    /// The agent a call comes from, if it is one (and not a relay).
    fn caller<'a>(&self, ctx: &'a CallContext, message: &'a Message) -> Option<&'a str> {
        let user = &ctx.user;
        let name = match user.name.strip_prefix("agent:") {
            Some(agent) => agent,
            None if !user.authenticated && user.name.is_empty() => message
                .metadata
                .as_ref()?
                .get(metadata_keys::FROM_AGENT)?
                .as_str()?,
            None => return None,
        };
        (!name.is_empty() && !self.shared.relays.iter().any(|r| r == name)).then_some(name)
    }
}

/// A handler whose `SendMessage` calls from agents continue the pair's
/// conversation.
struct Continuing {
    conversations: Conversations,
    agent: Arc<str>,
    inner: Arc<dyn RequestHandler>,
}

/// What a call from an agent was given: its key, and whether a waiting task
/// was filled in (then an answer that the task is gone starts afresh).
struct Continued {
    key: RouteKey,
    caller: String,
    filled_task: bool,
}

impl Continuing {
    /// Fills the pair's conversation into `request` when it names none.
    async fn prepare(
        &self,
        ctx: &CallContext,
        request: &mut SendMessageRequest,
    ) -> Option<Continued> {
        let caller = self.conversations.caller(ctx, &request.message)?;
        if caller == &*self.agent {
            return None;
        }
        let key = self.conversations.key(caller, &self.agent);
        let caller = caller.to_owned();
        let message = &mut request.message;
        let mut filled_task = false;
        if message.context_id.is_empty() {
            // Another node of a cluster may have moved the pair on.
            self.conversations.index().refresh(&key).await;
            if let Some(route) = self.conversations.current(&key, Utc::now()) {
                message.context_id.clone_from(&route.context_id);
                if message.task_id.is_empty() && route.task_waits() {
                    if let Some(task) = &route.task_id {
                        message.task_id.clone_from(task);
                        filled_task = true;
                    }
                }
            }
        }
        Some(Continued {
            key,
            caller,
            filled_task,
        })
    }

    async fn record(&self, call: Continued, route: Route) {
        self.conversations
            .record(call.key, route, &call.caller, &self.agent)
            .await;
    }
}

/// The request again when `err` says the task filled in from the index
/// cannot be continued: gone with its context (a fresh conversation), or
/// no longer taking messages (a new task in the same conversation).
fn retry(mut request: SendMessageRequest, err: &A2aError) -> Option<SendMessageRequest> {
    match err.kind() {
        ErrorKind::TaskNotFound => request.message.context_id.clear(),
        ErrorKind::UnsupportedOperation => {}
        _ => return None,
    }
    request.message.task_id.clear();
    Some(request)
}

/// Where the pair's conversation stands after `response`.
pub(crate) fn route_of(response: &SendMessageResponse, now: DateTime<Utc>) -> Route {
    match response {
        SendMessageResponse::Task(task) => route_of_task(task, now),
        SendMessageResponse::Message(message) => route_of_message(message, now),
    }
}

fn route_of_message(message: &Message, now: DateTime<Utc>) -> Route {
    Route {
        context_id: message.context_id.clone(),
        task_id: (!message.task_id.is_empty()).then(|| message.task_id.clone()),
        last_event: "message".to_owned(),
        updated_at: now,
    }
}

fn route_of_task(task: &Task, now: DateTime<Utc>) -> Route {
    Route {
        context_id: task.context_id.clone(),
        task_id: Some(task.id.clone()),
        last_event: task.status.state.as_str().to_owned(),
        updated_at: now,
    }
}

#[async_trait]
impl RequestHandler for Continuing {
    fn card(&self) -> &AgentCard {
        self.inner.card()
    }

    async fn shutdown(&self, grace: Duration) {
        self.inner.shutdown(grace).await;
    }

    async fn send_message(
        &self,
        ctx: &CallContext,
        mut request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aError> {
        let Some(call) = self.prepare(ctx, &mut request).await else {
            return self.inner.send_message(ctx, request).await;
        };
        let outcome = match call.filled_task {
            false => self.inner.send_message(ctx, request).await,
            true => {
                let again = request.clone();
                match self.inner.send_message(ctx, request).await {
                    Err(err) => match retry(again, &err) {
                        Some(again) => self.inner.send_message(ctx, again).await,
                        None => Err(err),
                    },
                    ok => ok,
                }
            }
        };
        if let Ok(response) = &outcome {
            self.record(call, route_of(response, Utc::now())).await;
        }
        outcome
    }

    async fn send_streaming_message(
        &self,
        ctx: &CallContext,
        mut request: SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        let Some(call) = self.prepare(ctx, &mut request).await else {
            return self.inner.send_streaming_message(ctx, request).await;
        };
        let stream = match call.filled_task {
            false => self.inner.send_streaming_message(ctx, request).await?,
            true => {
                let again = request.clone();
                match self.inner.send_streaming_message(ctx, request).await {
                    Err(err) => match retry(again, &err) {
                        Some(again) => self.inner.send_streaming_message(ctx, again).await?,
                        None => return Err(err),
                    },
                    Ok(stream) => stream,
                }
            }
        };
        Ok(Box::pin(Following {
            inner: stream,
            call: Some(call),
            route: None,
            conversations: self.conversations.clone(),
            agent: self.agent.clone(),
        }))
    }

    async fn get_task(&self, ctx: &CallContext, request: GetTaskRequest) -> Result<Task, A2aError> {
        self.inner.get_task(ctx, request).await
    }

    async fn list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        self.inner.list_tasks(ctx, request).await
    }

    async fn cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        self.inner.cancel_task(ctx, request).await
    }

    async fn subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        self.inner.subscribe_to_task(ctx, request).await
    }

    async fn create_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.inner
            .create_task_push_notification_config(ctx, request)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.inner
            .get_task_push_notification_config(ctx, request)
            .await
    }

    async fn list_task_push_notification_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        self.inner
            .list_task_push_notification_configs(ctx, request)
            .await
    }

    async fn delete_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        self.inner
            .delete_task_push_notification_config(ctx, request)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        ctx: &CallContext,
        request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2aError> {
        self.inner.get_extended_agent_card(ctx, request).await
    }
}

/// A streamed answer, followed: each event moves the pair's conversation
/// on in memory, and the last one is recorded (logged, saved) when the
/// stream ends or its reader lets go.
struct Following {
    inner: EventStream,
    call: Option<Continued>,
    route: Option<Route>,
    conversations: Conversations,
    agent: Arc<str>,
}

impl Following {
    fn follow(&mut self, event: &StreamResponse) {
        let now = Utc::now();
        let route = match event {
            StreamResponse::Task(task) => route_of_task(task, now),
            StreamResponse::Message(message) => route_of_message(message, now),
            StreamResponse::StatusUpdate(update) => Route {
                context_id: update.context_id.clone(),
                task_id: Some(update.task_id.clone()),
                last_event: update.status.state.as_str().to_owned(),
                updated_at: now,
            },
            StreamResponse::ArtifactUpdate(_) => return,
        };
        if let Some(call) = &self.call {
            // In memory at once: a call made while this one streams
            // continues the same conversation.
            self.conversations
                .index()
                .record(call.key.clone(), route.clone());
        }
        self.route = Some(route);
    }

    /// Logs and saves the last route, once.
    fn finish(&mut self) {
        let (Some(call), Some(route)) = (self.call.take(), self.route.take()) else {
            return;
        };
        let conversations = self.conversations.clone();
        let agent = self.agent.clone();
        let record = async move {
            conversations
                .record(call.key, route, &call.caller, &agent)
                .await;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(record);
            }
            Err(_) => self.conversations.index().save_soon(),
        }
    }
}

impl Stream for Following {
    type Item = Result<StreamResponse, A2aError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(event))) => self.follow(event),
            Poll::Ready(None) => self.finish(),
            _ => {}
        }
        polled
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.finish();
    }
}
