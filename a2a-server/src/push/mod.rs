//! Push notifications: every persisted event of a task is POSTed to each of the
//! task's webhooks, in order, off the task's path.

mod sender;
mod ssrf;

use foldhash::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::StreamResponse;
use futures::StreamExt;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::task::TaskTracker;

pub use self::sender::{
    EVENT_VERSION_HEADER, GuardedResolver, HttpPushSender, HttpPushSenderConfig, PushError,
    PushSender, check_webhook_url, validate_config,
};
pub use self::ssrf::{AddressPolicy, IpNetwork};
use crate::Caller;
use crate::store::{PushConfigStore, Version};

/// An event waiting for delivery, with the task version it produced (none
/// for a snapshot never stored as a version of its own) and the span (and
/// trace scope) current when it was queued: its deliveries' parent.
type Queued = (
    Arc<StreamResponse>,
    Option<Version>,
    crate::telemetry::Parent,
);

/// Bounds of push delivery, on top of the per-delivery bounds of
/// [`HttpPushSenderConfig`] (attempts, redirects, deadline).
#[derive(Debug, Clone)]
pub struct PushLimits {
    /// Deliveries of one task running at once (its webhooks are called in
    /// parallel up to this). Default 4.
    pub per_task: usize,
    /// Deliveries running at once over all tasks; the rest wait their turn.
    /// Default 64.
    pub global: usize,
    /// Events queued per task before new ones are dropped (a webhook that far
    /// behind is not keeping up). Default 1024.
    pub queue_depth: usize,
    /// At shutdown, the queued events are delivered for what is left of the
    /// grace period, but at least this long, so the final events of executions
    /// stopped at the end of the grace still go out. Default 2 s.
    pub min_drain: Duration,
    /// Push configs one caller may keep on one task. Default 10; one more is
    /// refused (replacing an existing one by its id is fine).
    pub configs_per_task: usize,
}

impl Default for PushLimits {
    fn default() -> Self {
        PushLimits {
            per_task: 4,
            global: 64,
            queue_depth: 1024,
            min_drain: Duration::from_secs(2),
            configs_per_task: 10,
        }
    }
}

/// How long a task's delivery worker waits for more events before it exits.
const IDLE: Duration = Duration::from_secs(60);

/// Queues events per task and delivers them from one worker per task, so a slow
/// webhook delays only its own task's later notifications, never the task.
#[derive(Clone)]
pub(crate) struct PushDispatcher {
    configs: Arc<dyn PushConfigStore>,
    sender: Arc<dyn PushSender>,
    queues: Arc<Mutex<HashMap<String, mpsc::Sender<Queued>>>>,
    limits: Arc<PushLimits>,
    /// Permits for deliveries in flight over all tasks.
    global: Arc<Semaphore>,
    /// The per-task workers, so shutdown can wait for them.
    workers: TaskTracker,
    /// Whether delivered events are cleared from the store's push outbox (a
    /// cluster node on a store that keeps one).
    outbox: bool,
}

impl std::fmt::Debug for PushDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushDispatcher").finish_non_exhaustive()
    }
}

impl PushDispatcher {
    pub(crate) fn new(
        configs: Arc<dyn PushConfigStore>,
        sender: Arc<dyn PushSender>,
        limits: PushLimits,
    ) -> Self {
        PushDispatcher {
            configs,
            sender,
            queues: Arc::new(Mutex::new(HashMap::default())),
            global: Arc::new(Semaphore::new(limits.global.max(1))),
            limits: Arc::new(limits),
            workers: TaskTracker::new(),
            outbox: false,
        }
    }

    /// The same dispatcher, clearing each event it delivered from the
    /// store's push outbox, if the store keeps one (cluster mode: see
    /// [`PushConfigStore::undelivered`]).
    pub(crate) fn with_outbox(mut self) -> Self {
        self.outbox = self.configs.keeps_outbox();
        self
    }

    /// Queues the task's events its outbox still holds (a node that ran the
    /// task stopped before it sent them), ahead of anything queued later.
    /// Returns how many.
    pub(crate) async fn redeliver(&self, caller: &Caller, task_id: &str) -> usize {
        if !self.outbox {
            return 0;
        }
        match self.configs.undelivered(caller, task_id).await {
            Ok(events) => {
                let count = events.len();
                for stored in events {
                    self.dispatch(
                        caller,
                        task_id,
                        Arc::new(stored.event),
                        Some(stored.version),
                    );
                }
                count
            }
            Err(err) => {
                tracing::warn!(task_id, error = %err, "could not read the push outbox");
                0
            }
        }
    }

    /// Delivers what is queued and waits for it up to `deadline`
    /// (at least [`PushLimits::min_drain`]). Events dispatched meanwhile are
    /// still delivered; whatever is left at the deadline is dropped.
    pub(crate) async fn drain(&self, deadline: Duration) {
        let deadline = deadline.max(self.limits.min_drain);
        // Dropping the queues' senders lets each worker end once its queue is empty.
        self.queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.workers.close();
        if tokio::time::timeout(deadline, self.workers.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                workers = self.workers.len(),
                "push notifications still undelivered at shutdown; dropping them"
            );
        }
    }

    /// Saves `config` for `caller`, unless the task already has as many
    /// configs as [`PushLimits::configs_per_task`] and this one is new.
    pub(crate) async fn save_config(
        &self,
        caller: &crate::Caller,
        config: a2a_core::TaskPushNotificationConfig,
    ) -> Result<a2a_core::TaskPushNotificationConfig, a2a_core::A2aError> {
        let max = self.limits.configs_per_task;
        let existing = self.configs.list(caller, &config.task_id).await?;
        let replaces = !config.id.is_empty() && existing.iter().any(|c| c.id == config.id);
        if !replaces && existing.len() >= max {
            return Err(a2a_core::A2aError::invalid_params(format!(
                "task {} already has {} push notification configs, the most allowed; delete one first",
                config.task_id,
                existing.len()
            )));
        }
        Ok(self.configs.save(caller, config).await?)
    }

    pub(crate) fn configs(&self) -> &Arc<dyn PushConfigStore> {
        &self.configs
    }

    /// Queues `event`, which produced `version` of the task (none: a
    /// snapshot never stored as such), for delivery to the task's webhooks.
    /// Never waits.
    pub(crate) fn dispatch(
        &self,
        caller: &Caller,
        task_id: &str,
        event: Arc<StreamResponse>,
        version: Option<Version>,
    ) {
        let mut queues = self
            .queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(queue) = queues.get(task_id) {
            if queue
                .try_send((event, version, crate::telemetry::Parent::current()))
                .is_err()
            {
                tracing::warn!(task_id, "push queue full; dropping a notification");
            }
            return;
        }
        let (tx, rx) = mpsc::channel(self.limits.queue_depth.max(1));
        let _ = tx.try_send((event, version, crate::telemetry::Parent::current()));
        queues.insert(task_id.to_owned(), tx);
        let worker = self.clone();
        let task_id = task_id.to_owned();
        let caller = caller.clone();
        self.workers
            .spawn(async move { worker.run(caller, task_id, rx).await });
    }

    async fn run(self, caller: Caller, task_id: String, mut rx: mpsc::Receiver<Queued>) {
        loop {
            let (event, version, parent) = match tokio::time::timeout(IDLE, rx.recv()).await {
                Ok(Some(event)) => event,
                Ok(None) => return,
                Err(_idle) => {
                    // Under the lock no event can be queued meanwhile: exit only if none is.
                    let mut queues = self
                        .queues
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if rx.is_empty() {
                        queues.remove(&task_id);
                        return;
                    }
                    continue;
                }
            };
            let configs = match self.configs.list(&caller, &task_id).await {
                Ok(configs) => configs,
                Err(err) => {
                    tracing::warn!(task_id, error = %err, "could not read push configs");
                    continue;
                }
            };
            // Each delivery owns what it uses, so the futures are `'static` and
            // the worker stays `Send` whatever the borrow checker infers.
            let deliveries = configs.into_iter().map(|config| {
                let (sender, global, event) =
                    (self.sender.clone(), self.global.clone(), event.clone());
                let traced = crate::telemetry::push_span(&parent, &task_id, &config.url);
                let delivery = async move {
                    // The semaphore is never closed; without a permit nothing is sent.
                    let Ok(_permit) = global.acquire_owned().await else {
                        return;
                    };
                    let outcome = sender.send_version(&config, &event, version).await;
                    crate::telemetry::record_push_outcome(&tracing::Span::current(), outcome.is_ok());
                    #[cfg(feature = "otel")]
                    crate::telemetry::otel::record_push(outcome.is_ok());
                    if let Err(err) = outcome {
                        tracing::warn!(url = %config.url, error = %err, "push notification not delivered");
                    }
                };
                traced.instrument(delivery)
            });
            futures::stream::iter(deliveries)
                .buffer_unordered(self.limits.per_task.max(1))
                .collect::<()>()
                .await;
            // Sent (or given up on after the sender's retries): off the
            // outbox, so a node taking the task over does not send it again.
            if let (true, Some(version)) = (self.outbox, version) {
                if let Err(err) = self.configs.delivered(&caller, &task_id, version).await {
                    tracing::warn!(task_id, version, error = %err, "could not clear the push outbox");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use a2a_core::{Task, TaskPushNotificationConfig, TaskState};
    use async_trait::async_trait;

    use super::*;
    use crate::store::InMemoryPushConfigStore;

    /// A webhook stand-in that reports each delivery as it starts and holds it
    /// until the test releases a permit.
    struct HeldWebhook {
        started: Mutex<Option<mpsc::UnboundedSender<String>>>,
        release: Semaphore,
        in_flight: AtomicUsize,
        most_in_flight: AtomicUsize,
        delivered: AtomicUsize,
    }

    #[async_trait]
    impl PushSender for Arc<HeldWebhook> {
        async fn send(
            &self,
            config: &TaskPushNotificationConfig,
            _event: &StreamResponse,
        ) -> Result<(), PushError> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            if let Some(started) = self.started.lock().unwrap().as_ref() {
                let _ = started.send(config.url.clone());
            }
            self.release.acquire().await.unwrap().forget();
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            self.delivered.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    async fn setup(
        tasks: usize,
        webhooks_per_task: usize,
        limits: PushLimits,
    ) -> (
        PushDispatcher,
        Arc<HeldWebhook>,
        mpsc::UnboundedReceiver<String>,
    ) {
        let store = InMemoryPushConfigStore::new();
        let caller = Caller::default();
        for task in 0..tasks {
            for hook in 0..webhooks_per_task {
                store
                    .save(
                        &caller,
                        TaskPushNotificationConfig::new(
                            format!("t{task}"),
                            format!("http://hook/{task}/{hook}"),
                        ),
                    )
                    .await
                    .unwrap();
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let webhook = Arc::new(HeldWebhook {
            started: Mutex::new(Some(tx)),
            release: Semaphore::new(0),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
            delivered: AtomicUsize::new(0),
        });
        let dispatcher = PushDispatcher::new(Arc::new(store), Arc::new(webhook.clone()), limits);
        (dispatcher, webhook, rx)
    }

    fn dispatch_to(dispatcher: &PushDispatcher, tasks: usize) {
        for task in 0..tasks {
            let event: StreamResponse =
                Task::new(format!("t{task}"), "c", TaskState::Working).into();
            dispatcher.dispatch(
                &Caller::default(),
                &format!("t{task}"),
                Arc::new(event),
                None,
            );
        }
    }

    /// With time paused, the timeout fires only once every task is idle: if
    /// another delivery could start, it would have.
    async fn no_more_start(rx: &mut mpsc::UnboundedReceiver<String>) -> bool {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .is_err()
    }

    #[tokio::test(start_paused = true)]
    async fn one_task_calls_at_most_per_task_webhooks_at_once() {
        let limits = PushLimits {
            per_task: 2,
            ..PushLimits::default()
        };
        let (dispatcher, webhook, mut started) = setup(1, 5, limits).await;
        dispatch_to(&dispatcher, 1);
        started.recv().await.unwrap();
        started.recv().await.unwrap();
        assert!(no_more_start(&mut started).await);
        webhook.release.add_permits(5);
        dispatcher.drain(Duration::from_secs(5)).await;
        assert_eq!(webhook.delivered.load(Ordering::SeqCst), 5);
        assert_eq!(webhook.most_in_flight.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn many_tasks_share_the_global_bound() {
        let limits = PushLimits {
            global: 3,
            ..PushLimits::default()
        };
        let (dispatcher, webhook, mut started) = setup(20, 1, limits).await;
        dispatch_to(&dispatcher, 20);
        for _ in 0..3 {
            started.recv().await.unwrap();
        }
        assert!(no_more_start(&mut started).await);
        webhook.release.add_permits(20);
        dispatcher.drain(Duration::from_secs(5)).await;
        assert_eq!(webhook.delivered.load(Ordering::SeqCst), 20);
        assert_eq!(webhook.most_in_flight.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drain_delivers_what_is_queued() {
        let (dispatcher, webhook, _started) = setup(5, 2, PushLimits::default()).await;
        webhook.release.add_permits(10);
        dispatch_to(&dispatcher, 5);
        dispatcher.drain(Duration::from_secs(5)).await;
        assert_eq!(webhook.delivered.load(Ordering::SeqCst), 10);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drain_gives_up_on_a_hanging_webhook_at_the_deadline() {
        let limits = PushLimits {
            min_drain: Duration::from_millis(100),
            ..PushLimits::default()
        };
        let (dispatcher, webhook, mut started) = setup(1, 1, limits).await;
        dispatch_to(&dispatcher, 1);
        started.recv().await.unwrap();
        let begun = tokio::time::Instant::now();
        dispatcher.drain(Duration::from_secs(3)).await;
        assert_eq!(begun.elapsed(), Duration::from_secs(3));
        assert_eq!(webhook.delivered.load(Ordering::SeqCst), 0);
    }
}
