//! The in-memory stores pass the conformance suites every backend runs.

use a2a_server::store::{InMemoryJobStore, InMemoryPushConfigStore, InMemoryTaskStore};
use a2a_store_suite::{job_store_suite, lease_suite, push_config_store_suite, task_store_suite};

#[tokio::test]
async fn in_memory_task_store_conforms() {
    task_store_suite(&InMemoryTaskStore::new()).await;
}

#[tokio::test]
async fn in_memory_push_config_store_conforms() {
    push_config_store_suite(&InMemoryPushConfigStore::new()).await;
}

#[tokio::test]
async fn in_memory_job_store_conforms() {
    job_store_suite(&InMemoryJobStore::new()).await;
}

#[tokio::test]
async fn in_memory_job_store_keeps_cluster_leases() {
    lease_suite(&InMemoryJobStore::new()).await;
}

#[tokio::test]
async fn in_memory_canceled_job_shows_canceled_with_its_reason() {
    a2a_store_suite::canceled_job_suite(&InMemoryJobStore::new()).await;
}

/// Fresh stores for one retention case: a task store, a job store, a push store.
fn memory_stores() -> (InMemoryTaskStore, InMemoryJobStore, InMemoryPushConfigStore) {
    (
        InMemoryTaskStore::new(),
        InMemoryJobStore::new(),
        InMemoryPushConfigStore::new(),
    )
}

#[tokio::test]
async fn in_memory_prune_keeps_tasks_within_task_retention() {
    let (tasks, jobs, push) = memory_stores();
    a2a_store_suite::task_retention_keeps_tasks_within_it(&tasks, &jobs, &push).await;
}

#[tokio::test]
async fn in_memory_prune_removes_tasks_past_task_retention() {
    let (tasks, jobs, push) = memory_stores();
    a2a_store_suite::task_retention_removes_tasks_past_it(&tasks, &jobs, &push).await;
}

#[tokio::test]
async fn in_memory_task_retention_of_zero_keeps_tasks_for_ever() {
    let (tasks, jobs, push) = memory_stores();
    a2a_store_suite::task_retention_of_zero_keeps_tasks_for_ever(&tasks, &jobs, &push).await;
}
