//! Push notifications: every persisted event of a task is POSTed to each of the
//! task's webhooks, in order, off the task's path.

mod sender;
mod ssrf;

use foldhash::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::StreamResponse;
use tokio::sync::mpsc;

pub use self::sender::{
    HttpPushSender, HttpPushSenderConfig, PushError, PushSender, check_webhook_url, validate_config,
};
pub use self::ssrf::{AddressPolicy, IpNetwork};
use crate::Caller;
use crate::store::PushConfigStore;

/// Events queued per task before new ones are dropped (a webhook that far behind is not keeping up).
const QUEUE_DEPTH: usize = 1024;

/// How long a task's delivery worker waits for more events before it exits.
const IDLE: Duration = Duration::from_secs(60);

/// Queues events per task and delivers them from one worker per task, so a slow
/// webhook delays only its own task's later notifications, never the task.
#[derive(Clone)]
pub(crate) struct PushDispatcher {
    configs: Arc<dyn PushConfigStore>,
    sender: Arc<dyn PushSender>,
    queues: Arc<Mutex<HashMap<String, mpsc::Sender<Arc<StreamResponse>>>>>,
}

impl std::fmt::Debug for PushDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushDispatcher").finish_non_exhaustive()
    }
}

impl PushDispatcher {
    pub(crate) fn new(configs: Arc<dyn PushConfigStore>, sender: Arc<dyn PushSender>) -> Self {
        PushDispatcher {
            configs,
            sender,
            queues: Arc::new(Mutex::new(HashMap::default())),
        }
    }

    pub(crate) fn configs(&self) -> &Arc<dyn PushConfigStore> {
        &self.configs
    }

    /// Queues `event` for delivery to the task's webhooks. Never waits.
    pub(crate) fn dispatch(&self, caller: &Caller, task_id: &str, event: Arc<StreamResponse>) {
        let mut queues = self
            .queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(queue) = queues.get(task_id) {
            if queue.try_send(event).is_err() {
                tracing::warn!(task_id, "push queue full; dropping a notification");
            }
            return;
        }
        let (tx, rx) = mpsc::channel(QUEUE_DEPTH);
        let _ = tx.try_send(event);
        queues.insert(task_id.to_owned(), tx);
        let worker = self.clone();
        let task_id = task_id.to_owned();
        let caller = caller.clone();
        tokio::spawn(async move { worker.run(caller, task_id, rx).await });
    }

    async fn run(
        self,
        caller: Caller,
        task_id: String,
        mut rx: mpsc::Receiver<Arc<StreamResponse>>,
    ) {
        loop {
            let event = match tokio::time::timeout(IDLE, rx.recv()).await {
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
            let deliveries = configs.iter().map(|config| {
                let sender = self.sender.clone();
                let event = event.clone();
                async move {
                    if let Err(err) = sender.send(config, &event).await {
                        tracing::warn!(url = %config.url, error = %err, "push notification not delivered");
                    }
                }
            });
            futures::future::join_all(deliveries).await;
        }
    }
}
