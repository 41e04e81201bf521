//! `TaskStore`: versioned, caller-scoped task persistence.

use a2a_core::{ListTasksRequest, ListTasksResponse, StreamResponse, Task};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::error::StoreError;
use super::job::{JobState, NewJob};
use crate::Caller;

/// A task version: starts at 1 and grows by one with every write.
pub type Version = u64;

/// An agent's turn checkpoint: how far a multi-turn execution got, and the
/// small opaque state it needs to go on from there.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// The last completed turn.
    pub turn: u64,
    /// The agent's own state after that turn (opaque to the store).
    pub state: Vec<u8>,
}

impl Checkpoint {
    /// A checkpoint after `turn` with `state`.
    pub fn new(turn: u64, state: impl Into<Vec<u8>>) -> Self {
        Checkpoint {
            turn,
            state: state.into(),
        }
    }
}

/// Why a task is written: the event that changed it, optionally the
/// checkpoint of the turn that event completes, and optionally a change to the
/// execution's job record, all stored atomically with it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Cause<'a> {
    /// The event that produced this version of the task.
    pub event: &'a StreamResponse,
    /// The checkpoint to store with the task; `None` keeps the previous one.
    pub checkpoint: Option<&'a Checkpoint>,
    /// A change to the task's job record, applied in the same transaction by a
    /// store whose [`TaskStore::writes_jobs`] is true (and never given to
    /// one whose is not).
    pub job: Option<JobWrite<'a>>,
    /// The lease the writing execution holds on the task's job: a store that
    /// fences writes (a cluster's) refuses the whole write with
    /// [`StoreError::LeaseLost`] unless the job is still RUNNING under this
    /// very lease, checked in the write's own statement. `None`: unfenced (a
    /// single server, or a write made outside any execution).
    pub lease: Option<Lease<'a>>,
}

/// An execution's hold on its task's job in cluster mode: the node running
/// it and the job's `attempts` when that node recorded or claimed it. Every
/// claim adds an attempt, so a lease that moved to another node and back
/// still differs from the one an older execution holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease<'a> {
    /// The node that holds the job.
    pub node: &'a str,
    /// The job's attempts when this node took it (1 when it recorded it).
    pub epoch: u32,
}

impl<'a> Cause<'a> {
    /// A write caused by `event`, keeping the task's checkpoint as it is.
    pub fn event(event: &'a StreamResponse) -> Self {
        Cause {
            event,
            checkpoint: None,
            job: None,
            lease: None,
        }
    }

    /// The same write, storing `checkpoint` with it.
    #[must_use]
    pub fn with_checkpoint(self, checkpoint: &'a Checkpoint) -> Self {
        Cause {
            checkpoint: Some(checkpoint),
            ..self
        }
    }

    /// The same write, storing `checkpoint` with it if there is one.
    #[must_use]
    pub fn with_optional_checkpoint(self, checkpoint: Option<&'a Checkpoint>) -> Self {
        Cause { checkpoint, ..self }
    }

    /// The same write, fenced by `lease` if there is one (see [`Cause::lease`]).
    #[must_use]
    pub fn with_lease(self, lease: Option<Lease<'a>>) -> Self {
        Cause { lease, ..self }
    }

    /// The same write, changing the task's job record as `job` says.
    #[must_use]
    pub fn with_job(self, job: JobWrite<'a>) -> Self {
        Cause {
            job: Some(job),
            ..self
        }
    }
}

/// A change to an execution's job record that rides along with a task write,
/// so that recording, or finishing, an execution costs no write of its own.
#[derive(Debug, Clone, Copy)]
pub enum JobWrite<'a> {
    /// Record the job RUNNING, exactly as [`JobStore::record`] does (an
    /// unfinished job of the task is a [`StoreError::AlreadyExists`], which
    /// fails the whole write).
    ///
    /// [`JobStore::record`]: super::JobStore::record
    Record(&'a NewJob<'a>),
    /// Record the job already finished in `state` (its first write also ends
    /// its turn), with `reason`.
    RecordFinished {
        /// The job.
        job: &'a NewJob<'a>,
        /// A finished state.
        state: JobState,
        /// Why, for a failure.
        reason: Option<&'a str>,
    },
    /// Finish the task's job, exactly as [`JobStore::finish`] does.
    ///
    /// [`JobStore::finish`]: super::JobStore::finish
    Finish {
        /// A finished state.
        state: JobState,
        /// Why, for a failure.
        reason: Option<&'a str>,
        /// When.
        at: DateTime<Utc>,
    },
}

/// A task as stored, with its version and last checkpoint.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredTask {
    /// The task.
    pub task: Task,
    /// The version of this snapshot.
    pub version: Version,
    /// The last checkpoint written with the task, if any.
    pub checkpoint: Option<Checkpoint>,
}

impl StoredTask {
    /// A stored task at `version`, with its checkpoint.
    pub fn new(task: Task, version: Version, checkpoint: Option<Checkpoint>) -> Self {
        StoredTask {
            task,
            version,
            checkpoint,
        }
    }
}

/// One entry of a task's event log: the event that produced `version`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The task version the event produced.
    pub version: Version,
    /// The event.
    pub event: StreamResponse,
}

/// Persistence of tasks, scoped to their owner, with optimistic versions.
///
/// Every call takes the [`Caller`]; a task owned by someone else answers
/// [`StoreError::NotFound`] exactly as a missing one does. Writes carry their
/// [`Cause`], so a database backend appends the event to the task's log and
/// stores the checkpoint in the same transaction as the task.
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

    /// Reads a task.
    async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError>;

    /// Lists the caller's tasks, filtered, newest status first, one page at a time,
    /// following the rules of [`super::listing`].
    ///
    /// `request.page_size` is already validated and defaulted by the handler;
    /// history and artifact shaping is the handler's job too.
    async fn list(
        &self,
        caller: &Caller,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, StoreError>;

    /// How many tasks `user` keeps, across every tenant, if the store can
    /// count them (the per-caller limit of stored tasks uses it, so that
    /// naming another tenant does not escape the limit). The default,
    /// `None`, counts per tenant instead.
    async fn count_for_user(&self, user: &str) -> Result<Option<u64>, StoreError> {
        let _ = user;
        Ok(None)
    }

    /// Deletes a task with its checkpoint and event log; deleting a missing
    /// task (or another caller's) succeeds and changes nothing.
    async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError>;

    /// Up to `limit` terminal tasks (completed, failed, canceled, rejected)
    /// whose status last changed before `cutoff`, oldest first, each with its
    /// owner: what task retention deletes. A task with no status timestamp
    /// counts as older than any cutoff.
    ///
    /// The default answers [`StoreError::Unsupported`]: such a store keeps
    /// its tasks for ever.
    async fn terminal_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<(Caller, String)>, StoreError> {
        let _ = (cutoff, limit);
        Err(StoreError::Unsupported("task retention"))
    }

    /// Whether this store also keeps jobs and applies [`Cause::job`] in the
    /// task write's transaction. The execution layer then writes a job's
    /// record and end along with its task instead of on their own (one write
    /// per execution instead of three). The default: no.
    fn writes_jobs(&self) -> bool {
        false
    }

    /// The task's events in write order, each with the version it produced.
    ///
    /// Stores that keep no event log answer [`StoreError::Unsupported`].
    async fn events(&self, caller: &Caller, task_id: &str) -> Result<Vec<StoredEvent>, StoreError> {
        let _ = (caller, task_id);
        Err(StoreError::Unsupported("a task event log"))
    }
}
