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
            // Internal details stay in the logs; the caller gets a generic message.
            other => {
                tracing::error!(error = %other, "task store failure");
                A2aError::internal("task storage failed")
            }
        }
    }
}
