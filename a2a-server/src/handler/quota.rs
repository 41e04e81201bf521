//! The most tasks one caller may keep in the store
//! ([`ExecutionConfig::max_tasks_per_caller`](crate::ExecutionConfig::max_tasks_per_caller)).
//!
//! Counting a caller's tasks in the store on every new task would cost a scan
//! (or an index count) per request; instead each caller's count is read from
//! the store once a minute and moved on by the tasks created since. Tasks that
//! leave the store (retention) show at the next read, and callers racing
//! each other can pass the limit by at most the executions they run at once.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use a2a_core::{A2aError, ListTasksRequest};
use tokio::time::Instant;

use crate::Caller;
use crate::store::TaskStore;

/// How long a count read from the store is trusted.
const FRESH_FOR: Duration = Duration::from_secs(60);
/// Callers remembered before stale counts are dropped.
const REMEMBERED: usize = 100_000;

/// Counts of stored tasks per caller.
#[derive(Debug)]
pub(crate) struct TaskQuota {
    max: Option<u64>,
    counts: Mutex<HashMap<Caller, (u64, Instant)>>,
}

impl TaskQuota {
    pub(crate) fn new(max: Option<u64>) -> TaskQuota {
        TaskQuota {
            max,
            counts: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Caller, (u64, Instant)>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a new task of `caller`, or refuses it when the caller already
    /// keeps the most allowed. Anonymous callers (no authentication) are one
    /// shared space, not a caller: the limit does not apply to them.
    pub(crate) async fn admit(
        &self,
        store: &dyn TaskStore,
        caller: &Caller,
    ) -> Result<(), A2aError> {
        let Some(max) = self.max.filter(|_| !caller.user.is_empty()) else {
            return Ok(());
        };
        let now = Instant::now();
        let known = self
            .lock()
            .get(caller)
            .filter(|(_, read)| now.duration_since(*read) < FRESH_FOR)
            .map(|(count, _)| *count);
        let count = match known {
            Some(count) => count,
            None => {
                let request = ListTasksRequest {
                    page_size: Some(1),
                    ..ListTasksRequest::default()
                };
                let listed = store.list(caller, &request).await.map_err(|err| {
                    tracing::error!(error = %err, "counting a caller's stored tasks failed");
                    A2aError::internal("the task store is unavailable")
                })?;
                let count = u64::try_from(listed.total_size).unwrap_or(0);
                let mut counts = self.lock();
                if counts.len() >= REMEMBERED {
                    counts.retain(|_, (_, read)| now.duration_since(*read) < FRESH_FOR);
                }
                counts.insert(caller.clone(), (count, now));
                count
            }
        };
        if count >= max {
            return Err(A2aError::busy(
                format!(
                    "this caller keeps {count} tasks, the most allowed; tasks leave the store with its retention"
                ),
                FRESH_FOR,
            ));
        }
        if let Some((count, _)) = self.lock().get_mut(caller) {
            *count += 1;
        }
        Ok(())
    }
}
