//! The one way a stored task changes: apply an event to the task as last read,
//! write it expecting that version, and on a version conflict read it again and
//! retry. Executions and cancels without an execution both go through here.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aError, Task};

use super::apply::apply;
use crate::Caller;
use crate::store::{Cause, StoreError, StoredTask, TaskStore, Version};

/// Attempts of an optimistic write before giving up: each conflict means
/// another writer got in between, which a handful of retries outlasts.
pub(crate) const WRITE_ATTEMPTS: usize = 8;

/// A task as this process last read or wrote it.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    /// Shared with a blocking caller once settled, so it is not cloned for it.
    pub(crate) task: Arc<Task>,
    pub(crate) version: Version,
}

impl From<StoredTask> for Current {
    fn from(stored: StoredTask) -> Self {
        Current {
            task: Arc::new(stored.task),
            version: stored.version,
        }
    }
}

/// What became of an event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Persisted {
    /// Applied and stored as this version.
    Written(Version),
    /// Not written: after a re-read, `still_applies` said the task no longer
    /// takes it (another writer ended it, say); `current` holds the stored task.
    Moot,
    /// Not written: the write was fenced by the execution's lease, and the
    /// lease is gone (another node took the job over). Nothing more is to be
    /// written here.
    LeaseLost,
}

/// Applies the cause's event to `current` and stores it (with the cause's
/// checkpoint, if any).
///
/// The first attempt works on `current` as it is; after a conflict the task is
/// re-read and `still_applies` decides whether to try again (`Ok(false)`: the
/// event is moot, `Err`: refuse). On any failure `current` is re-read, so it
/// never holds a change the store did not take.
///
/// A store that fails transiently (see [`StoreError::is_transient`]) is
/// retried with backoff for up to `retry` before the failure is returned.
pub(crate) async fn persist(
    store: &dyn TaskStore,
    caller: &Caller,
    current: &mut Current,
    cause: &Cause<'_>,
    max_history: Option<usize>,
    retry: Duration,
    still_applies: impl Fn(&Task) -> Result<bool, A2aError>,
) -> Result<Persisted, A2aError> {
    for _attempt in 0..WRITE_ATTEMPTS {
        let expected = current.version;
        // Applied in place: the task is shared with nobody while it is open.
        let task = Arc::make_mut(&mut current.task);
        if let Err(err) = apply(task, cause.event) {
            reload(store, caller, current).await;
            return Err(err);
        }
        keep_history(task, max_history);
        let mut failed = false;
        let task = &*task;
        let written = retrying(retry, &mut failed, || {
            store.update(caller, task, expected, cause)
        })
        .await;
        match written {
            Ok(version) => {
                current.version = version;
                return Ok(Persisted::Written(version));
            }
            Err(StoreError::Conflict { .. }) => {
                let stored = store.get(caller, &task.id).await?;
                // A write that failed only in its answer (the connection
                // dropped after the commit) meets itself on the retry: it
                // is stored, and applying the event again would repeat it.
                if failed && stored.version == expected + 1 && stored.task == *task {
                    *current = stored.into();
                    return Ok(Persisted::Written(current.version));
                }
                *current = stored.into();
                if !still_applies(&current.task)? {
                    return Ok(Persisted::Moot);
                }
            }
            Err(StoreError::LeaseLost(_)) => return Ok(Persisted::LeaseLost),
            Err(err) => {
                reload(store, caller, current).await;
                return Err(err.into());
            }
        }
    }
    Err(A2aError::internal(
        "the task kept changing while being written; try again",
    ))
}

/// Runs `write` until it succeeds or fails for good: a transient store
/// failure (a lost connection, a busy or full database) is tried again with
/// backoff (20 ms doubling to 2 s) while `budget` lasts; `failed` is set
/// when any attempt failed. The budget counts from the first failure: the
/// clock is read only once something failed, so a write that succeeds costs
/// nothing more.
pub(crate) async fn retrying<T, F, Fut>(
    budget: Duration,
    failed: &mut bool,
    write: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    retrying_from(None, budget, failed, write).await
}

/// [`retrying`] with the budget counted from the first try's start, for a
/// caller waiting on the answer: a first try that waited long (a pool
/// waiting out its acquire timeout) leaves less time to retry. The start is
/// noted only when the first try has to wait, so a store that answers at
/// once (in memory) never reads the clock.
pub(crate) async fn retrying_from_start<T, F, Fut>(
    budget: Duration,
    failed: &mut bool,
    mut write: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut first = std::pin::pin!(write());
    let mut started = None;
    let outcome = std::future::poll_fn(|cx| {
        let poll = first.as_mut().poll(cx);
        if poll.is_pending() && started.is_none() {
            started = Some(tokio::time::Instant::now());
        }
        poll
    })
    .await;
    match outcome {
        Err(err) if err.is_transient() => {
            *failed = true;
            let deadline = started.unwrap_or_else(tokio::time::Instant::now) + budget;
            let wait = Duration::from_millis(20);
            if tokio::time::Instant::now() + wait > deadline {
                return Err(err);
            }
            tracing::warn!(error = %err, retry_in = ?wait, "store write failed; retrying");
            tokio::time::sleep(wait).await;
            retrying_from(Some(deadline), budget, failed, write).await
        }
        other => other,
    }
}

async fn retrying_from<T, F, Fut>(
    mut deadline: Option<tokio::time::Instant>,
    budget: Duration,
    failed: &mut bool,
    mut write: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut wait = Duration::from_millis(20);
    loop {
        match write().await {
            Err(err) if err.is_transient() => {
                *failed = true;
                let now = tokio::time::Instant::now();
                let deadline = *deadline.get_or_insert(now + budget);
                if now + wait > deadline {
                    return Err(err);
                }
                tracing::warn!(error = %err, retry_in = ?wait, "store write failed; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
            }
            other => return other,
        }
    }
}

/// Drops the oldest history messages past `max` (the task's history is kept
/// bounded; the event log still holds every event).
pub(crate) fn keep_history(task: &mut Task, max: Option<usize>) {
    if let Some(max) = max {
        let len = task.history.len();
        if len > max {
            task.history.drain(..len - max);
        }
    }
}

/// Re-reads `current` after a failed write; if even that fails, the next write
/// meets a conflict and re-reads then.
async fn reload(store: &dyn TaskStore, caller: &Caller, current: &mut Current) {
    if let Ok(stored) = store.get(caller, &current.task.id).await {
        *current = stored.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InMemoryTaskStore;
    use a2a_core::{StreamResponse, TaskState, TaskStatusUpdateEvent};

    fn status(state: TaskState) -> StreamResponse {
        TaskStatusUpdateEvent::new("t", "c", state).into()
    }

    async fn stored(store: &InMemoryTaskStore, caller: &Caller) -> Current {
        let task = Task::new("t", "c", TaskState::Submitted);
        store
            .create(caller, &task, &Cause::event(&status(TaskState::Submitted)))
            .await
            .unwrap();
        store.get(caller, "t").await.unwrap().into()
    }

    #[tokio::test]
    async fn a_conflict_rereads_and_retries_or_gives_way() {
        let store = InMemoryTaskStore::new();
        let caller = Caller::default();
        let mut stale = stored(&store, &caller).await;
        // Someone else moves the task on.
        let mut other = stale.clone();
        persist(
            &store,
            &caller,
            &mut other,
            &Cause::event(&status(TaskState::Working)),
            None,
            Duration::ZERO,
            |_| Ok(true),
        )
        .await
        .unwrap();

        let written = persist(
            &store,
            &caller,
            &mut stale.clone(),
            &Cause::event(&status(TaskState::Completed)),
            None,
            Duration::ZERO,
            |_| Ok(true),
        )
        .await
        .unwrap();
        assert_eq!(written, Persisted::Written(3));

        let moot = persist(
            &store,
            &caller,
            &mut stale,
            &Cause::event(&status(TaskState::Canceled)),
            None,
            Duration::ZERO,
            |t| Ok(!t.status.state.is_terminal()),
        )
        .await
        .unwrap();
        assert_eq!(moot, Persisted::Moot);
        assert_eq!(stale.task.status.state, TaskState::Completed);
        assert_eq!(stale.version, 3);
    }

    #[tokio::test]
    async fn a_refused_event_leaves_the_task_as_stored() {
        let store = InMemoryTaskStore::new();
        let caller = Caller::default();
        let mut current = stored(&store, &caller).await;
        let bad = status(TaskState::Unspecified);
        assert!(
            persist(
                &store,
                &caller,
                &mut current,
                &Cause::event(&bad),
                None,
                Duration::ZERO,
                |_| Ok(true)
            )
            .await
            .is_err()
        );
        assert_eq!(*current.task, store.get(&caller, "t").await.unwrap().task);
    }

    /// A write whose every try waits 3 s (a pool waiting out its acquire
    /// timeout) and fails: how many tries a 2 s budget gives it, and when
    /// the failure is answered.
    async fn slow_failures(from_start: bool) -> (u32, Duration) {
        let started = tokio::time::Instant::now();
        let mut tries = 0;
        let write = || {
            tries += 1;
            async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                Err::<(), _>(StoreError::Backend("pool timed out".into()))
            }
        };
        let budget = Duration::from_secs(2);
        let result = match from_start {
            true => retrying_from_start(budget, &mut false, write).await,
            false => retrying(budget, &mut false, write).await,
        };
        assert!(result.is_err());
        (tries, started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_budget_counted_from_the_start_includes_a_slow_first_try() {
        // From the first failure, a slow first try is followed by another.
        assert_eq!(slow_failures(false).await, (2, Duration::from_millis(6020)));
        // From the start, a caller waiting for its answer is told at once.
        assert_eq!(slow_failures(true).await, (1, Duration::from_secs(3)));
    }
}
