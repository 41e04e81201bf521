//! The store latency metric: decorators over the three store traits that time
//! every call into `a2a.server.store.duration` (seconds), with the attributes
//! `a2a.store.operation` (`task.create`, `job.record`, `push.get`, ...) and
//! `a2a.store.kind` (the backend's type name, `InMemoryTaskStore`,
//! `SqliteStore`, ...). The handler builder puts them around its stores
//! when the `otel` feature is on, except around the in-memory stores (see
//! `is`); without the feature they do not exist.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use a2a_core::{ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;

use crate::Caller;
use crate::store::{
    Cause, InMemoryJobStore, InMemoryPushConfigStore, InMemoryTaskStore, Job, JobFilter, JobState,
    JobStore, LeasePass, NewJob, PushConfigStore, Recovered, StoreError, StoredEvent, StoredTask,
    TaskStore, Version,
};

fn histogram() -> &'static Histogram<f64> {
    static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
    DURATION.get_or_init(|| {
        opentelemetry::global::meter("a2a-server")
            .f64_histogram("a2a.server.store.duration")
            .with_unit("s")
            .with_description("Time a store call takes, by operation and store.")
            .build()
    })
}

/// The short name of a store type: `SqliteTaskStore` for
/// `a2a_store_sql::sqlite::SqliteTaskStore`.
pub(crate) fn kind_of<S: ?Sized>() -> &'static str {
    let name = std::any::type_name::<S>();
    // Generic parameters would hold `::` too; cut them off first.
    let name = name.split('<').next().unwrap_or(name);
    name.rsplit("::").next().unwrap_or(name)
}

/// Whether `S` is `M`, one of the in-memory stores: those are not timed.
/// Their calls are a map lookup, cheaper than the two clock reads and the
/// histogram update around them (a `SendMessage` makes nine store calls), and
/// their latency says nothing an operator acts on.
fn is<S: 'static, M: 'static>() -> bool {
    std::any::TypeId::of::<S>() == std::any::TypeId::of::<M>()
}

/// `store`, timed unless it is the in-memory one.
pub(crate) fn task_store<S: TaskStore>(store: S) -> Arc<dyn TaskStore> {
    if is::<S, InMemoryTaskStore>() {
        return Arc::new(store);
    }
    Arc::new(Timed::<dyn TaskStore>::new(Arc::new(store), kind_of::<S>()))
}

/// `store`, timed unless it is the in-memory one.
pub(crate) fn job_store<S: JobStore>(store: S) -> Arc<dyn JobStore> {
    if is::<S, InMemoryJobStore>() {
        return Arc::new(store);
    }
    Arc::new(Timed::<dyn JobStore>::new(Arc::new(store), kind_of::<S>()))
}

/// `store`, timed unless it is the in-memory one.
pub(crate) fn push_store<S: PushConfigStore>(store: S) -> Arc<dyn PushConfigStore> {
    if is::<S, InMemoryPushConfigStore>() {
        return Arc::new(store);
    }
    Arc::new(Timed::<dyn PushConfigStore>::new(
        Arc::new(store),
        kind_of::<S>(),
    ))
}

/// A store of any of the three kinds, timed.
pub(crate) struct Timed<S: ?Sized> {
    inner: Arc<S>,
    kind: &'static str,
}

impl<S: ?Sized> Timed<S> {
    fn new(inner: Arc<S>, kind: &'static str) -> Self {
        Timed { inner, kind }
    }

    async fn time<T>(&self, operation: &'static str, call: impl Future<Output = T>) -> T {
        let started = Instant::now();
        let out = call.await;
        histogram().record(
            started.elapsed().as_secs_f64(),
            &[
                KeyValue::new("a2a.store.operation", operation),
                KeyValue::new("a2a.store.kind", self.kind),
            ],
        );
        out
    }
}

#[async_trait]
impl TaskStore for Timed<dyn TaskStore> {
    async fn create(
        &self,
        caller: &Caller,
        task: &Task,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        self.time("task.create", self.inner.create(caller, task, cause))
            .await
    }

    async fn update(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        self.time(
            "task.update",
            self.inner.update(caller, task, expected, cause),
        )
        .await
    }

    async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError> {
        self.time("task.get", self.inner.get(caller, task_id)).await
    }

    async fn list(
        &self,
        caller: &Caller,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, StoreError> {
        self.time("task.list", self.inner.list(caller, request))
            .await
    }

    async fn count_for_user(&self, user: &str) -> Result<Option<u64>, StoreError> {
        self.time("task.count_for_user", self.inner.count_for_user(user))
            .await
    }

    async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
        self.time("task.delete", self.inner.delete(caller, task_id))
            .await
    }

    async fn terminal_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<(Caller, String)>, StoreError> {
        self.time(
            "task.terminal_before",
            self.inner.terminal_before(cutoff, limit),
        )
        .await
    }

    fn writes_jobs(&self) -> bool {
        self.inner.writes_jobs()
    }

    async fn events(&self, caller: &Caller, task_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        self.time("task.events", self.inner.events(caller, task_id))
            .await
    }
}

#[async_trait]
impl JobStore for Timed<dyn JobStore> {
    async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
        self.time("job.record", self.inner.record(job)).await
    }

    async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError> {
        self.time("job.heartbeat", self.inner.heartbeat(node, at))
            .await
    }

    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.time("job.finish", self.inner.finish(task_id, state, reason, at))
            .await
    }

    async fn finish_on(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
        node: &str,
    ) -> Result<(), StoreError> {
        self.time(
            "job.finish",
            self.inner.finish_on(task_id, state, reason, at, node),
        )
        .await
    }

    async fn recover(
        &self,
        stale_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<Recovered, StoreError> {
        self.time("job.recover", self.inner.recover(stale_before, at))
            .await
    }

    async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
        self.time("job.take_over", self.inner.take_over(pass)).await
    }

    async fn take_over_deliveries(
        &self,
        pass: &LeasePass<'_>,
        node: &str,
    ) -> Result<Vec<Job>, StoreError> {
        self.time(
            "job.take_over_deliveries",
            self.inner.take_over_deliveries(pass, node),
        )
        .await
    }

    async fn claim(
        &self,
        task_id: &str,
        node: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.time("job.claim", self.inner.claim(task_id, node, at))
            .await
    }

    async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        self.time("job.release", self.inner.release(task_id, at))
            .await
    }

    async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
        self.time("job.get", self.inner.get(task_id)).await
    }

    async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        self.time("job.list", self.inner.list(filter)).await
    }

    async fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError> {
        self.time(
            "job.finished_before",
            self.inner.finished_before(cutoff, limit),
        )
        .await
    }

    async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
        self.time("job.remove", self.inner.remove(task_id)).await
    }
}

#[async_trait]
impl PushConfigStore for Timed<dyn PushConfigStore> {
    async fn save(
        &self,
        caller: &Caller,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, StoreError> {
        self.time("push.save", self.inner.save(caller, config))
            .await
    }

    async fn get(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        self.time("push.get", self.inner.get(caller, task_id, config_id))
            .await
    }

    async fn list(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        self.time("push.list", self.inner.list(caller, task_id))
            .await
    }

    async fn delete(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<(), StoreError> {
        self.time("push.delete", self.inner.delete(caller, task_id, config_id))
            .await
    }

    async fn delete_all(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
        self.time("push.delete_all", self.inner.delete_all(caller, task_id))
            .await
    }

    async fn undelivered(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<crate::store::StoredEvent>, StoreError> {
        self.time("push.undelivered", self.inner.undelivered(caller, task_id))
            .await
    }

    async fn delivered(
        &self,
        caller: &Caller,
        task_id: &str,
        version: crate::store::Version,
    ) -> Result<(), StoreError> {
        self.time(
            "push.delivered",
            self.inner.delivered(caller, task_id, version),
        )
        .await
    }

    fn keeps_outbox(&self) -> bool {
        self.inner.keeps_outbox()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn kind_is_the_short_type_name() {
        assert_eq!(
            super::kind_of::<crate::store::InMemoryTaskStore>(),
            "InMemoryTaskStore"
        );
        assert_eq!(super::kind_of::<Vec<String>>(), "Vec");
    }
}
