//! The most tasks one caller identity may keep in the store
//! ([`ExecutionConfig::max_tasks_per_caller`](crate::ExecutionConfig::max_tasks_per_caller)),
//! counted across tenants so that naming another tenant does not escape it
//! (per tenant with a store that cannot count across them, see
//! [`TaskStore::count_for_user`]).
//!
//! Counting a caller's tasks in the store on every new task would cost a scan
//! (or an index count) per request; instead each caller's count is read from
//! the store once a minute and moved on by the tasks created since. Tasks that
//! leave the store (retention) show at the next read, and calls racing each
//! other can pass the limit by at most the executions the caller runs at once.

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

/// Whose count: an identity (across tenants), or one tenant of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Counted {
    User(String),
    Caller(Caller),
}

/// Counts of stored tasks per caller identity.
#[derive(Debug)]
pub(crate) struct TaskQuota {
    max: Option<u64>,
    counts: Mutex<HashMap<Counted, (u64, Instant)>>,
}

impl TaskQuota {
    pub(crate) fn new(max: Option<u64>) -> TaskQuota {
        TaskQuota {
            max,
            counts: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Counted, (u64, Instant)>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a new task of `caller` is counted at all. Anonymous callers
    /// (no authentication) are one shared space, not a caller: the limit does
    /// not apply to them.
    pub(crate) fn applies_to(&self, caller: &Caller) -> bool {
        self.max.is_some() && !caller.user.is_empty()
    }

    /// Counts a new task of `caller`, or refuses it when the caller already
    /// keeps the most allowed (see [`TaskQuota::applies_to`]).
    pub(crate) async fn admit(
        &self,
        store: &dyn TaskStore,
        caller: &Caller,
    ) -> Result<(), A2aError> {
        let Some(max) = self.max.filter(|_| self.applies_to(caller)) else {
            return Ok(());
        };
        let now = Instant::now();
        let fresh = |key: &Counted| {
            self.lock()
                .get(key)
                .filter(|(_, read)| now.duration_since(*read) < FRESH_FOR)
                .map(|(count, _)| *count)
        };
        // Keyed by the identity when the store counts across tenants.
        let by_user = Counted::User(caller.user.clone());
        let by_caller = Counted::Caller(caller.clone());
        let known = fresh(&by_user)
            .map(|n| (by_user.clone(), n))
            .or_else(|| fresh(&by_caller).map(|n| (by_caller.clone(), n)));
        let (key, count) = match known {
            Some(known) => known,
            None => {
                let failed = |err: crate::store::StoreError| {
                    tracing::error!(error = %err, "counting a caller's stored tasks failed");
                    A2aError::internal("the task store is unavailable")
                };
                let (key, count) = match store.count_for_user(&caller.user).await.map_err(failed)? {
                    Some(count) => (by_user, count),
                    None => {
                        let request = ListTasksRequest {
                            page_size: Some(1),
                            ..ListTasksRequest::default()
                        };
                        let listed = store.list(caller, &request).await.map_err(failed)?;
                        (by_caller, u64::try_from(listed.total_size).unwrap_or(0))
                    }
                };
                let mut counts = self.lock();
                if counts.len() >= REMEMBERED {
                    counts.retain(|_, (_, read)| now.duration_since(*read) < FRESH_FOR);
                }
                counts.insert(key.clone(), (count, now));
                (key, count)
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
        if let Some((count, _)) = self.lock().get_mut(&key) {
            *count += 1;
        }
        Ok(())
    }
}
