//! A node's part in cluster mode: it hears the other nodes' events and
//! cancels, forwards cancels of tasks running elsewhere, and keeps leases
//! (see [`crate::cluster`]). It builds on the durable jobs ([`super::jobs`]),
//! which know nothing of the cluster.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{A2aError, Metadata, Method};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::Executions;
use super::feed::Update;
use crate::cluster::{CancelNotice, ClusterBus, ClusterConfig, ClusterNotice, Interest};
use crate::store::{JobState, LeasePass};
use crate::{CallContext, ServiceParams, User};

/// A node's link to its cluster.
#[derive(Clone)]
pub(crate) struct ClusterLink {
    pub(crate) bus: Arc<dyn ClusterBus>,
    pub(crate) config: ClusterConfig,
    /// Jobs this node has queued to resume, so a lease pass does not queue
    /// them twice while they wait for a resume slot.
    resuming: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for ClusterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLink")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ClusterLink {
    pub(crate) fn new(bus: Arc<dyn ClusterBus>, config: ClusterConfig) -> Self {
        ClusterLink {
            bus,
            config,
            resuming: Arc::default(),
        }
    }

    fn resuming(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.resuming
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Hears the cluster until shutdown: other nodes' events go to this node's
/// subscribers, cancels addressed here to the executions they name.
pub(crate) async fn listen(executions: Arc<Executions>, link: ClusterLink) {
    let shared = executions.shared.clone();
    let feeds = shared.feeds.clone();
    let interest: Interest = Arc::new(move |task_id: &str| feeds.is_watched(task_id));
    let mut backoff = Duration::from_millis(100);
    loop {
        let mut notices = tokio::select! {
            () = shared.stopping.cancelled() => return,
            listening = link.bus.listen(interest.clone()) => match listening {
                Ok(notices) => notices,
                Err(err) => {
                    tracing::error!(error = %err, "cannot listen to the cluster; retrying");
                    tokio::select! {
                        () = shared.stopping.cancelled() => return,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            },
        };
        backoff = Duration::from_millis(100);
        // Whatever was said while nobody listened is read from the store.
        shared.feeds.resync_all();
        loop {
            let notice = tokio::select! {
                () = shared.stopping.cancelled() => return,
                notice = notices.recv() => notice,
            };
            match notice {
                Some(notice) => hear(&executions, notice),
                None => break,
            }
        }
    }
}

fn hear(executions: &Arc<Executions>, notice: ClusterNotice) {
    let shared = &executions.shared;
    match notice {
        ClusterNotice::Event {
            task_id,
            version,
            event,
        } => {
            // An execution of this node publishes its own events, in order.
            if !executions.is_live(&task_id) {
                shared
                    .feeds
                    .publish(&task_id, Update::remote(version, event));
            }
        }
        ClusterNotice::Cancel(notice) if notice.node == shared.job_config.node => {
            let executions = executions.clone();
            tokio::spawn(async move {
                let call = notice_call(&notice);
                if let Err(err) = executions
                    .cancel(&call, &notice.task_id, notice.metadata.clone())
                    .await
                {
                    tracing::debug!(task_id = %notice.task_id, error = %err, "a forwarded cancel was refused");
                }
            });
        }
        ClusterNotice::Cancel(_) => {}
        ClusterNotice::Resync => shared.feeds.resync_all(),
    }
}

/// The call a forwarded cancel acts as: the caller the receiving node checked.
fn notice_call(notice: &CancelNotice) -> CallContext {
    let mut call = CallContext::new(Method::CancelTask, ServiceParams::new());
    call.tenant.clone_from(&notice.tenant);
    call.user = User {
        name: notice.user.clone(),
        authenticated: notice.authenticated,
    };
    call
}

impl Executions {
    /// The cluster this node belongs to, if any.
    pub(crate) fn cluster_link(&self) -> Option<ClusterLink> {
        self.shared.cluster.clone()
    }

    /// Whether an execution of `task_id` runs on this node.
    pub(crate) fn is_live(&self, task_id: &str) -> bool {
        self.lock_live().contains_key(task_id)
    }

    /// The node other than this one whose live lease runs `task_id`, if any.
    async fn running_elsewhere(&self, task_id: &str) -> Option<crate::store::Job> {
        let shared = &self.shared;
        let (Some(link), Some(jobs)) = (&shared.cluster, &shared.jobs) else {
            return None;
        };
        // A store that cannot answer: as on a single server, let the call go
        // on and meet the job record's own checks.
        let job = jobs.get(task_id).await.ok()??;
        let lease_holds = job.heartbeat >= shared.clock.ago(link.config.lease_timeout);
        (job.state == JobState::Running && job.node != shared.job_config.node && lease_holds)
            .then_some(job)
    }

    /// Waits up to `timeout` for an execution of `task_id` on another node to
    /// end its turn; true when none runs anywhere else (then).
    pub(super) async fn wait_idle_elsewhere(&self, task_id: &str, timeout: Duration) -> bool {
        if self.running_elsewhere(task_id).await.is_none() {
            return true;
        }
        let mut subscription = self.shared.feeds.subscribe(task_id);
        if self.running_elsewhere(task_id).await.is_none() {
            return true;
        }
        let _ = tokio::time::timeout(timeout, subscription.settled()).await;
        self.running_elsewhere(task_id).await.is_none()
    }

    /// Forwards a cancel to the node whose lease runs `task_id`, and waits
    /// until the task settles there or the time for it is up. Returns whether
    /// it forwarded (the caller then reads the task again); false when no
    /// other live node runs it.
    pub(super) async fn cancel_remote(
        &self,
        call: &CallContext,
        task_id: &str,
        metadata: Option<Metadata>,
    ) -> Result<bool, A2aError> {
        let shared = &self.shared;
        let Some(link) = &shared.cluster else {
            return Ok(false);
        };
        let Some(job) = self.running_elsewhere(task_id).await else {
            return Ok(false);
        };
        // Listen before asking, so the answer cannot slip by.
        let mut subscription = shared.feeds.subscribe(task_id);
        let notice = CancelNotice {
            task_id: task_id.to_owned(),
            node: job.node.clone(),
            tenant: call.tenant.clone(),
            user: call.user.name.clone(),
            authenticated: call.user.authenticated,
            metadata,
        };
        link.bus.send_cancel(&notice).await?;
        let patience = shared.config.cancel_grace + link.config.lease_timeout;
        if tokio::time::timeout(patience, subscription.settled())
            .await
            .is_err()
        {
            tracing::warn!(%task_id, node = %job.node, "the node running the task did not answer a cancel in time");
        }
        Ok(true)
    }
}

/// Runs a cluster node's upkeep until shutdown: a lease pass first (taking
/// back what this node ran under its name before a restart, and whatever
/// other nodes lost), then heartbeats and lease passes every third of the
/// lease timeout, and retention (a single server's is [`super::jobs::maintain`]).
pub(crate) async fn maintain(
    executions: Arc<Executions>,
    link: ClusterLink,
    recovered: CancellationToken,
) {
    let shared = executions.shared.clone();
    let Some(jobs) = shared.jobs.clone() else {
        shared.recovery_marked.cancel();
        recovered.cancel();
        return;
    };
    let config = &shared.job_config;
    let permits = Arc::new(Semaphore::new(config.resume_parallelism.max(1)));
    match lease_pass(&executions, &link, &permits, true).await {
        Ok((abandoned, pending)) => tracing::info!(abandoned, pending, "first lease pass done"),
        Err(err) => tracing::error!(error = %err, "first lease pass failed"),
    }
    shared.recovery_marked.cancel();
    recovered.cancel();
    let mut tick = tokio::time::interval(link.config.heartbeat_interval());
    let mut renewed = tokio::time::Instant::now();
    let mut retention = tokio::time::interval(config.retention_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    retention.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shared.stopping.cancelled() => break,
            _ = tick.tick() => {
                super::jobs::bring_back(&executions, false).await;
                let now = tokio::time::Instant::now();
                let silent = now.saturating_duration_since(renewed);
                match jobs.heartbeat(&config.node, shared.clock.now()).await {
                    Ok(_) => {
                        // Stood still past the lease (a paused process): the
                        // others may have taken work over meanwhile.
                        if silent > link.config.lease_timeout {
                            tracing::warn!(?silent, "leases went unrenewed past their timeout");
                            fence(&executions, false).await;
                        }
                        renewed = now;
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "job heartbeat failed");
                        if silent > link.config.lease_timeout.mul_f32(0.8) {
                            fence(&executions, true).await;
                        }
                    }
                }
                if let Err(err) = lease_pass(&executions, &link, &permits, false).await {
                    tracing::warn!(error = %err, "lease pass failed");
                }
            }
            _ = retention.tick() => {
                if let Err(err) = super::jobs::prune(&executions).await {
                    tracing::warn!(error = %err, "retention failed");
                }
            }
        }
    }
}

/// Stops this node's executions whose lease it may have lost: after
/// heartbeats failed for most of the lease timeout (the others may take the
/// work over any moment), every one; after a pause longer than the timeout
/// (the process stood still), those whose job another node holds now.
async fn fence(executions: &Executions, unreachable: bool) {
    let shared = &executions.shared;
    let Some(jobs) = &shared.jobs else {
        return;
    };
    let live: Vec<(Arc<str>, Arc<super::Signals>)> = executions
        .lock_live()
        .iter()
        .map(|(task_id, live)| (task_id.clone(), live.signals.clone()))
        .collect();
    for (task_id, signals) in live {
        let lost = unreachable
            || match jobs.get(&task_id).await {
                Ok(Some(job)) => {
                    job.state != JobState::Running || job.node != shared.job_config.node
                }
                // Not recorded yet: nobody else can hold it.
                Ok(None) => false,
                Err(_) => true,
            };
        if lost {
            let _ = signals.send(super::Control::Relinquish);
            if unreachable {
                // The store may come back before another node takes the
                // job: then this node's heartbeat would keep it RUNNING
                // with nothing running it. It is released once the store
                // answers (if it is still this node's).
                shared.strand(&task_id);
            }
        }
    }
}

/// Runs one lease pass: abandons jobs past the stale limit, and queues every
/// orphaned or PENDING job for this node to claim and resume (another node
/// may claim it first; the claim decides).
async fn lease_pass(
    executions: &Arc<Executions>,
    link: &ClusterLink,
    permits: &Arc<Semaphore>,
    restarted: bool,
) -> Result<(usize, usize), A2aError> {
    let shared = &executions.shared;
    let Some(jobs) = &shared.jobs else {
        return Ok((0, 0));
    };
    let node = shared.job_config.node.as_str();
    let lease =
        chrono::Duration::from_std(link.config.lease_timeout).unwrap_or(chrono::Duration::MAX);
    let stale =
        chrono::Duration::from_std(shared.job_config.stale_after).unwrap_or(chrono::Duration::MAX);
    let mut pass = LeasePass::new(shared.clock.now(), lease, stale)
        .limit(shared.job_config.resume_parallelism.max(1) * 4);
    if restarted {
        pass = pass.restarted(node);
    }
    let found = jobs.take_over(&pass).await?;
    let abandoned = found.abandoned.len();
    for job in found.abandoned {
        if let Err(err) = super::jobs::abandon(executions, &job).await {
            tracing::error!(task_id = %job.task_id, error = %err, "could not fail an abandoned task");
        }
    }
    let mut queued = 0;
    for job in found.pending {
        if !link.resuming().insert(job.task_id.clone()) {
            continue;
        }
        queued += 1;
        let executions = executions.clone();
        let permits = permits.clone();
        let link = link.clone();
        tokio::spawn(async move {
            let task_id = job.task_id.clone();
            if let Ok(_permit) = permits.acquire_owned().await {
                if let Err(err) = super::jobs::resume(&executions, job).await {
                    tracing::error!(%task_id, error = %err, "could not resume a job");
                }
            }
            link.resuming().remove(&task_id);
        });
    }
    // Finished tasks whose node died before it sent their pushes: no
    // execution resumes them, so their outbox is sent from here.
    if let Some(push) = &shared.push {
        for job in jobs.take_over_deliveries(&pass, node).await? {
            let owed = push.redeliver(&job.owner, &job.task_id).await;
            tracing::info!(task_id = %job.task_id, owed, "sending the pushes a previous node left");
        }
    }
    Ok((abandoned, queued))
}
