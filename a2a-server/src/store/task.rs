//! `TaskStore`: versioned, caller-scoped task persistence.

use a2a_core::{A2aError, ListTasksRequest, ListTasksResponse, StreamResponse, Task};
use async_trait::async_trait;

use crate::Caller;

/// A task version: starts at 1 and grows by one with every write.
pub type Version = u64;

/// A task as stored, with its version.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    /// The task.
    pub task: Task,
    /// The version of this snapshot.
    pub version: Version,
    /// The agent's last turn checkpoint.
    pub checkpoint: Option<Checkpoint>,
}

/// An agent's turn checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The turn.
    pub turn: u64,
    /// Opaque state.
    pub state: Vec<u8>,
}

/// What a write records besides the task.
#[derive(Debug, Clone, Copy)]
pub struct Cause<'a> {
    /// The event.
    pub event: &'a StreamResponse,
    /// The checkpoint.
    pub checkpoint: Option<&'a Checkpoint>,
}

impl<'a> Cause<'a> {
    /// Just an event.
    pub fn event(event: &'a StreamResponse) -> Self {
        Cause {
            event,
            checkpoint: None,
        }
    }
}

/// Why a store write failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The task does not exist, or belongs to another caller.
    #[error("task {0} not found")]
    NotFound(String),
    /// A task with this id exists already.
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
        expected: Version,
        /// The version in the store.
        found: Version,
    },
    /// The request is invalid (for example a malformed page token).
    #[error("{0}")]
    Invalid(String),
    /// The backend failed.
    #[error("task store failure: {0}")]
    Backend(String),
}

impl From<StoreError> for A2aError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(id) => A2aError::task_not_found(&id),
            StoreError::Invalid(message) => A2aError::invalid_params(message),
            // Internal details stay in the logs; the caller gets a generic message.
            other => {
                tracing::error!(error = %other, "task store failure");
                A2aError::internal("task storage failed")
            }
        }
    }
}

/// Persistence of tasks, scoped to their owner, with optimistic versions.
///
/// Every call takes the [`Caller`]; a task owned by someone else answers
/// [`StoreError::NotFound`] exactly as a missing one does. Writes carry the event
/// that caused them so a database backend can append it to an event log in the
/// same transaction.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task owned by `caller`; returns version 1.
    async fn create(
        &self,
        caller: &Caller,
        task: &Task,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError>;

    /// Replaces a task if its stored version is `expected`; returns the new version.
    async fn update(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError>;

    /// Deletes a task.
    async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError>;

    /// Reads a task.
    async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError>;

    /// Lists the caller's tasks, filtered, newest status first, one page at a time.
    ///
    /// `request.page_size` is already validated and defaulted by the handler;
    /// history and artifact shaping is the handler's job too.
    async fn list(
        &self,
        caller: &Caller,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, StoreError>;
}
