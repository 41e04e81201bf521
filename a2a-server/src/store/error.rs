//! `StoreError`: why a store call failed, shared by every store trait.

use a2a_core::A2aError;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The task (or job) does not exist, or belongs to another caller.
    #[error("task {0} not found")]
    NotFound(String),
    /// A task (or unfinished job) with this id exists already.
    #[error("task {0} already exists")]
    AlreadyExists(String),
    /// The stored version is not the one the write expected (optimistic concurrency).
    #[error(
        "task {task_id} was modified concurrently (expected version {expected}, found {found})"
    )]
    Conflict {
        /// The task.
        task_id: String,
        /// The version the writer read.
        expected: u64,
        /// The version in the store.
        found: u64,
    },
    /// The request is invalid (for example a malformed page token).
    #[error("{0}")]
    Invalid(String),
    /// This store does not offer the operation (for example an event log).
    #[error("this store does not support {0}")]
    Unsupported(&'static str),
    /// A fenced write (see [`super::Cause::lease`]) was refused: the task's
    /// job is no longer RUNNING under the writer's lease, because another node
    /// took it over (or it ended). Nothing was written; the writer stops
    /// without writing anything more, and the new owner goes on.
    #[error("the lease on task {0}'s job is lost: another node holds it now")]
    LeaseLost(String),
    /// The backend failed.
    #[error("task store failure: {0}")]
    Backend(String),
}

impl From<StoreError> for A2aError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(id) => A2aError::task_not_found(&id),
            StoreError::Invalid(message) => A2aError::invalid_params(message),
            StoreError::Unsupported(what) => {
                A2aError::unsupported_operation(format!("this server does not support {what}"))
            }
            // The store is down or full for now: the caller hears so, with the
            // backend's own reason (one line, bounded), and when to come back.
            StoreError::Backend(reason) => {
                tracing::error!(error = %reason, "task store failure");
                A2aError::unavailable(
                    format!("task storage is unavailable: {}", short_reason(&reason)),
                    STORE_RETRY_AFTER,
                )
            }
            // Internal details stay in the logs; the caller gets a generic message.
            other => {
                tracing::error!(error = %other, "task store failure");
                A2aError::internal("task storage failed")
            }
        }
    }
}

/// When a caller refused for a store failure is told to come back.
pub(crate) const STORE_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

impl StoreError {
    /// Whether trying the same call again later may succeed: the backend
    /// failed (a lost connection, a busy or full database), as opposed to an
    /// answer about the data (not found, a conflict, an invalid request).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Backend(_))
    }
}

/// The first line of a backend's reason, at most 200 characters: enough to
/// say what failed ("database or disk is full") without echoing whole queries.
fn short_reason(reason: &str) -> &str {
    let line = reason.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((end, _)) => &line[..end],
        None => line,
    }
}
