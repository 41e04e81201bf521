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
