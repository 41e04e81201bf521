//! Retention: deleting finished jobs with their tasks and push configs, in
//! small batches, for the server's periodic sweep and the operator's
//! `a2a jobs prune` alike.

use chrono::{DateTime, Utc};

use super::{JobStore, PushConfigStore, StoreError, TaskStore};

/// Rows deleted per batch: small, so traffic never waits long for the store.
const BATCH: usize = 256;

/// Deletes every job that finished before `cutoff`, with its task and (when
/// given) its push configs. Returns how many jobs went.
///
/// The task goes first and the job last: if this stops half way (a crash, a
/// store error), the job is still there and the next sweep finishes it.
pub async fn prune_finished(
    jobs: &dyn JobStore,
    tasks: &dyn TaskStore,
    push_configs: Option<&dyn PushConfigStore>,
    cutoff: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut removed = 0;
    loop {
        let batch = jobs.finished_before(cutoff, BATCH).await?;
        if batch.is_empty() {
            return Ok(removed);
        }
        for job in &batch {
            tasks.delete(&job.owner, &job.task_id).await?;
            if let Some(push_configs) = push_configs {
                push_configs.delete_all(&job.owner, &job.task_id).await?;
            }
            jobs.remove(&job.task_id).await?;
            removed += 1;
        }
        // Let requests waiting for the store in between.
        tokio::task::yield_now().await;
    }
}
