//! Retention, in small batches, for the server's periodic sweep and the
//! operator's `a2a jobs prune` alike. Jobs and tasks are kept apart: a
//! finished job's record goes after the job retention, while its task stays
//! until the (usually longer) task retention, so a client that holds a task
//! id can still read the outcome after the job record is gone.

use chrono::{DateTime, Utc};

use super::{JobStore, PushConfigStore, StoreError, TaskStore};

/// Rows deleted per batch: small, so traffic never waits long for the store.
const BATCH: usize = 256;

/// What one retention pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// Finished job records deleted.
    pub jobs: u64,
    /// Terminal tasks deleted (with their event logs and push configs).
    pub tasks: u64,
}

impl Pruned {
    /// A pass that removed `jobs` job records and `tasks` tasks.
    pub fn new(jobs: u64, tasks: u64) -> Self {
        Pruned { jobs, tasks }
    }
}

/// Deletes the record of every job that finished before `cutoff` (not its
/// task: see [`prune_tasks`]). Returns how many went.
pub async fn prune_jobs(jobs: &dyn JobStore, cutoff: DateTime<Utc>) -> Result<u64, StoreError> {
    let mut removed = 0;
    loop {
        let batch = jobs.finished_before(cutoff, BATCH).await?;
        if batch.is_empty() {
            return Ok(removed);
        }
        for job in &batch {
            jobs.remove(&job.task_id).await?;
            removed += 1;
        }
        // Let requests waiting for the store in between.
        tokio::task::yield_now().await;
    }
}

/// Deletes every terminal task whose status last changed before `cutoff`,
/// with (when given) its push configs. Returns how many tasks went. A store
/// without task retention ([`StoreError::Unsupported`]) keeps its tasks and
/// counts none.
///
/// The push configs go first and the task last: if this stops half way,
/// the task is still there and the next sweep finishes it.
pub async fn prune_tasks(
    tasks: &dyn TaskStore,
    push_configs: Option<&dyn PushConfigStore>,
    cutoff: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut removed = 0;
    loop {
        let batch = match tasks.terminal_before(cutoff, BATCH).await {
            Ok(batch) => batch,
            Err(StoreError::Unsupported(_)) => return Ok(removed),
            Err(err) => return Err(err),
        };
        if batch.is_empty() {
            return Ok(removed);
        }
        for (owner, task_id) in &batch {
            if let Some(push_configs) = push_configs {
                push_configs.delete_all(owner, task_id).await?;
            }
            tasks.delete(owner, task_id).await?;
            removed += 1;
        }
        tokio::task::yield_now().await;
    }
}

/// One retention pass: job records finished before `jobs_before`, and
/// (unless `tasks_before` is `None`, which keeps tasks for ever) terminal
/// tasks last changed before `tasks_before`.
pub async fn prune(
    jobs: &dyn JobStore,
    tasks: &dyn TaskStore,
    push_configs: Option<&dyn PushConfigStore>,
    jobs_before: DateTime<Utc>,
    tasks_before: Option<DateTime<Utc>>,
) -> Result<Pruned, StoreError> {
    let jobs = prune_jobs(jobs, jobs_before).await?;
    let tasks = match tasks_before {
        Some(cutoff) => prune_tasks(tasks, push_configs, cutoff).await?,
        None => 0,
    };
    Ok(Pruned { jobs, tasks })
}
