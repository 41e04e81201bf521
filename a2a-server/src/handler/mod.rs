//! `RequestHandler`: the eleven A2A operations, independent of any binding.

mod push;
mod quota;
mod send;
mod tasks;
mod validate;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;
use futures::Stream;
use tokio_util::sync::CancellationToken;

use crate::execution::cluster::ClusterLink;
use crate::execution::jobs::{Clock, JobConfig};
use crate::execution::{ExecutionConfig, Executions, Shared, TaskFeeds};
use crate::observer::Observer;
use crate::push::{
    AddressPolicy, HttpPushSender, HttpPushSenderConfig, PushDispatcher, PushLimits, PushSender,
};
use crate::store::{
    InMemoryPushConfigStore, InMemoryTaskStore, JobStore, PushConfigStore, TaskStore,
};
use crate::{AgentExecutor, CallContext};

/// A stream of events answering a streaming operation.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamResponse, A2aError>> + Send>>;

/// The eleven A2A operations. Bindings decode a request, build the
/// [`CallContext`], and call one of these; errors that are known before a stream
/// starts come back as `Err`, not inside the stream.
#[async_trait]
pub trait RequestHandler: Send + Sync + 'static {
    /// The public agent card, served by every binding at the well-known path.
    fn card(&self) -> &AgentCard;

    /// Stops taking new work and winds down what runs within `grace`. The
    /// default has nothing to wind down.
    async fn shutdown(&self, grace: Duration) {
        let _ = grace;
    }

    /// `SendMessage`.
    async fn send_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aError>;
    /// `SendStreamingMessage`.
    async fn send_streaming_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2aError>;
    /// `GetTask`.
    async fn get_task(&self, ctx: &CallContext, request: GetTaskRequest) -> Result<Task, A2aError>;
    /// `ListTasks`.
    async fn list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError>;
    /// `CancelTask`.
    async fn cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError>;
    /// `SubscribeToTask`.
    async fn subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError>;
    /// `CreateTaskPushNotificationConfig`.
    async fn create_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError>;
    /// `GetTaskPushNotificationConfig`.
    async fn get_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aError>;
    /// `ListTaskPushNotificationConfigs`.
    async fn list_task_push_notification_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError>;
    /// `DeleteTaskPushNotificationConfig`.
    async fn delete_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError>;
    /// `GetExtendedAgentCard`.
    async fn get_extended_agent_card(
        &self,
        ctx: &CallContext,
        request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2aError>;
}

/// The standard [`RequestHandler`]: runs an [`AgentExecutor`] with the
/// execution pipeline, a [`TaskStore`] and, when the card declares them, push
/// notifications. Build it with [`DefaultRequestHandler::builder`].
pub struct DefaultRequestHandler {
    card: AgentCard,
    extended_card: Option<AgentCard>,
    store: Arc<dyn TaskStore>,
    push: Option<PushDispatcher>,
    push_policy: AddressPolicy,
    executions: Arc<Executions>,
    follow_up_wait: Duration,
    /// Fires when the recovery pass has run (at once without a job store).
    recovered: CancellationToken,
    /// Watches sends and their executions, when one is installed.
    observer: Option<Arc<dyn Observer>>,
    /// Stored tasks per caller.
    quota: quota::TaskQuota,
}

impl std::fmt::Debug for DefaultRequestHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultRequestHandler")
            .field("agent", &self.card.name)
            .finish_non_exhaustive()
    }
}

/// Builds a [`DefaultRequestHandler`].
pub struct HandlerBuilder {
    executor: Arc<dyn AgentExecutor>,
    card: AgentCard,
    extended_card: Option<AgentCard>,
    store: Option<Arc<dyn TaskStore>>,
    push_store: Option<Arc<dyn PushConfigStore>>,
    push_sender: Option<Arc<dyn PushSender>>,
    push_policy: AddressPolicy,
    push_limits: PushLimits,
    config: ExecutionConfig,
    jobs: Option<Arc<dyn JobStore>>,
    job_config: JobConfig,
    observer: Option<Arc<dyn Observer>>,
    cluster: Option<(
        Arc<dyn crate::cluster::ClusterBus>,
        crate::cluster::ClusterConfig,
    )>,
}

impl std::fmt::Debug for HandlerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerBuilder")
            .field("agent", &self.card.name)
            .finish_non_exhaustive()
    }
}

impl HandlerBuilder {
    /// Uses `store` for tasks (default: [`InMemoryTaskStore`]).
    #[must_use]
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.store = Some(crate::telemetry::task_store(store));
        self
    }

    /// Uses `store` for push configs (default: [`InMemoryPushConfigStore`]).
    #[must_use]
    pub fn push_config_store(mut self, store: impl PushConfigStore) -> Self {
        self.push_store = Some(crate::telemetry::push_store(store));
        self
    }

    /// Delivers push notifications with `sender` (default: [`HttpPushSender`] with the address policy).
    #[must_use]
    pub fn push_sender(mut self, sender: impl PushSender) -> Self {
        self.push_sender = Some(Arc::new(sender));
        self
    }

    /// Which webhook addresses are allowed (default: public addresses only).
    #[must_use]
    pub fn push_address_policy(mut self, policy: AddressPolicy) -> Self {
        self.push_policy = policy;
        self
    }

    /// Concurrency, queue and shutdown-drain bounds of push delivery (default: [`PushLimits::default`]).
    #[must_use]
    pub fn push_limits(mut self, limits: PushLimits) -> Self {
        self.push_limits = limits;
        self
    }

    /// Serves `card` to `GetExtendedAgentCard` (the public card must declare `extendedAgentCard`).
    #[must_use]
    pub fn extended_card(mut self, card: AgentCard) -> Self {
        self.extended_card = Some(card);
        self
    }

    /// Limits and timeouts of the execution pipeline.
    #[must_use]
    pub fn execution_config(mut self, config: ExecutionConfig) -> Self {
        self.config = config;
        self
    }

    /// Makes executions durable: each is recorded in `store` before the
    /// client learns its task id, heartbeats while it runs, and is resumed
    /// (or, past the stale limit, abandoned) when the server starts again.
    /// Use it with a durable task store; the task store and the job store
    /// should be one database.
    #[must_use]
    pub fn job_store(mut self, store: impl JobStore) -> Self {
        self.jobs = Some(crate::telemetry::job_store(store));
        self
    }

    /// Shows every `SendMessage` and `SendStreamingMessage` call, and the
    /// events of the executions they start, to `observer` (see
    /// [`crate::observer`]). One observer per handler: a later call replaces
    /// an earlier one.
    #[must_use]
    pub fn observer(mut self, observer: impl Observer) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The card the handler will serve (an observer may want the agent's
    /// name, say).
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// Makes this server a node of a cluster: servers sharing one database
    /// (the task and job stores given here) answer any request for any task,
    /// see each other's events through `bus`, and take over the executions
    /// of a node that stops renewing its leases (see [`crate::cluster`]).
    /// Needs a job store whose [`JobStore::take_over`] works (PostgreSQL);
    /// give every node its own [`JobConfig::node`] name, kept across restarts.
    #[must_use]
    pub fn cluster(
        mut self,
        bus: impl crate::cluster::ClusterBus,
        config: crate::cluster::ClusterConfig,
    ) -> Self {
        self.cluster = Some((Arc::new(bus), config));
        self
    }

    /// Heartbeats, stale limit, recovery and retention of durable executions.
    #[must_use]
    pub fn job_config(mut self, config: JobConfig) -> Self {
        self.job_config = config;
        self
    }

    /// Builds the handler. Push notifications are on when the card declares them.
    ///
    /// With a job store, the node's maintenance (the recovery pass, then
    /// heartbeats and retention) starts on the current tokio runtime; build
    /// the handler inside one. [`DefaultRequestHandler::recovered`] tells
    /// when recovery has run.
    pub fn build(self) -> DefaultRequestHandler {
        let store = self
            .store
            .unwrap_or_else(|| crate::telemetry::task_store(InMemoryTaskStore::new()));
        let push = self
            .card
            .capabilities
            .supports_push_notifications()
            .then(|| {
                let configs = self.push_store.unwrap_or_else(|| {
                    crate::telemetry::push_store(InMemoryPushConfigStore::new())
                });
                let sender = self.push_sender.unwrap_or_else(|| {
                    Arc::new(HttpPushSender::new(HttpPushSenderConfig {
                        policy: self.push_policy.clone(),
                        ..HttpPushSenderConfig::default()
                    }))
                });
                PushDispatcher::new(configs, sender, self.push_limits)
            });
        let quota = quota::TaskQuota::new(self.config.max_tasks_per_caller);
        let executions = Executions::new(Shared {
            executor: self.executor,
            store: store.clone(),
            push: push.clone(),
            feeds: Arc::new(TaskFeeds::with_limits(
                self.config.subscriber_buffer,
                self.config.max_subscribers_per_task,
                self.config.max_subscribers_per_caller,
            )),
            config: self.config,
            shutdown: CancellationToken::new(),
            jobs: self.jobs,
            job_config: self.job_config,
            clock: Clock::new(),
            stopping: CancellationToken::new(),
            recovery_marked: CancellationToken::new(),
            observer: self.observer.clone(),
            cluster: self
                .cluster
                .map(|(bus, config)| ClusterLink::new(bus, config)),
            stranded: std::sync::Mutex::default(),
            stranded_changed: tokio::sync::Notify::new(),
        });
        let recovered = CancellationToken::new();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => match executions.cluster_link() {
                Some(link) => {
                    runtime.spawn(crate::execution::cluster::maintain(
                        executions.clone(),
                        link.clone(),
                        recovered.clone(),
                    ));
                    runtime.spawn(crate::execution::cluster::listen(executions.clone(), link));
                }
                None => {
                    runtime.spawn(crate::execution::jobs::maintain(
                        executions.clone(),
                        recovered.clone(),
                    ));
                }
            },
            Err(_) => {
                if executions.is_durable() {
                    tracing::error!(
                        "handler built outside a tokio runtime: no recovery, heartbeats or retention"
                    );
                }
                executions.mark_recovered();
                recovered.cancel();
            }
        }
        DefaultRequestHandler {
            card: self.card,
            extended_card: self.extended_card,
            store,
            push,
            push_policy: self.push_policy,
            executions,
            follow_up_wait: Duration::from_secs(2),
            recovered,
            observer: self.observer,
            quota,
        }
    }
}

impl DefaultRequestHandler {
    /// Starts building a handler for `executor`, described by `card`.
    pub fn builder(executor: impl AgentExecutor, card: AgentCard) -> HandlerBuilder {
        DefaultRequestHandler::builder_shared(Arc::new(executor), card)
    }

    /// [`DefaultRequestHandler::builder`] for an executor already shared
    /// (one chosen at run time, say).
    pub fn builder_shared(executor: Arc<dyn AgentExecutor>, card: AgentCard) -> HandlerBuilder {
        HandlerBuilder {
            executor,
            card,
            extended_card: None,
            store: None,
            push_store: None,
            push_sender: None,
            push_policy: AddressPolicy::public_only(),
            push_limits: PushLimits::default(),
            config: ExecutionConfig::default(),
            jobs: None,
            job_config: JobConfig::default(),
            observer: None,
            cluster: None,
        }
    }

    /// Resolves once the recovery pass after start has run: stale jobs are
    /// abandoned and the others are being resumed (they may still run).
    pub async fn recovered(&self) {
        self.recovered.cancelled().await;
    }

    /// Runs retention now, instead of at the next sweep: deletes the records
    /// of jobs finished longer ago than the job retention, and terminal tasks
    /// older than the task retention. Returns how many of each went.
    pub async fn prune(&self) -> Result<crate::store::Pruned, A2aError> {
        crate::execution::jobs::prune(&self.executions).await
    }

    /// The task store.
    pub fn task_store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    fn require_streaming(&self) -> Result<(), A2aError> {
        if self.card.capabilities.supports_streaming() {
            Ok(())
        } else {
            Err(A2aError::unsupported_operation(
                "this agent does not support streaming",
            ))
        }
    }

    fn require_push(&self) -> Result<&PushDispatcher, A2aError> {
        self.push
            .as_ref()
            .ok_or_else(|| ErrorKind::PushNotificationNotSupported.into())
    }
}

#[async_trait]
impl RequestHandler for DefaultRequestHandler {
    fn card(&self) -> &AgentCard {
        &self.card
    }

    /// Winds down executions within `grace`, then delivers the queued push
    /// notifications (their final events included) for what is left of it, at
    /// least [`PushLimits::min_drain`].
    async fn shutdown(&self, grace: Duration) {
        let started = tokio::time::Instant::now();
        self.executions.shutdown(grace).await;
        if let Some(push) = &self.push {
            push.drain(grace.saturating_sub(started.elapsed())).await;
        }
    }

    async fn send_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2aError> {
        // Boxed: a pointer is cheaper than the request to move through the
        // futures on its way to the execution.
        self.send(ctx, Box::new(request)).await
    }

    async fn send_streaming_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2aError> {
        self.require_streaming()?;
        self.send_streaming(ctx, Box::new(request)).await
    }

    async fn get_task(&self, ctx: &CallContext, request: GetTaskRequest) -> Result<Task, A2aError> {
        self.get(ctx, request).await
    }

    async fn list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2aError> {
        self.list(ctx, request).await
    }

    async fn cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2aError> {
        self.cancel(ctx, request).await
    }

    async fn subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, A2aError> {
        self.require_streaming()?;
        self.subscribe(ctx, request).await
    }

    async fn create_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.create_push_config(ctx, request).await
    }

    async fn get_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.get_push_config(ctx, request).await
    }

    async fn list_task_push_notification_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        self.list_push_configs(ctx, request).await
    }

    async fn delete_task_push_notification_config(
        &self,
        ctx: &CallContext,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2aError> {
        self.delete_push_config(ctx, request).await
    }

    async fn get_extended_agent_card(
        &self,
        ctx: &CallContext,
        _request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2aError> {
        if !self.card.capabilities.supports_extended_agent_card() {
            return Err(A2aError::unsupported_operation(
                "this agent has no extended agent card",
            ));
        }
        // The card can only demand authentication it declares a way to provide.
        let declares_auth =
            !self.card.security_schemes.is_empty() || !self.card.security_requirements.is_empty();
        if declares_auth && !ctx.user.authenticated {
            return Err(A2aError::new(
                ErrorKind::Unauthenticated,
                "the extended agent card requires authentication",
            ));
        }
        self.extended_card
            .clone()
            .ok_or_else(|| ErrorKind::ExtendedAgentCardNotConfigured.into())
    }
}
