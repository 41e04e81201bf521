//! Storage of tasks, push configs and jobs: traits, the rules every backend
//! shares, and in-memory implementations.

mod compact;
mod error;
mod job;
pub mod listing;
mod memory;
mod push;
mod retention;
mod task;

pub(crate) use self::error::STORE_RETRY_AFTER;
pub use self::error::StoreError;
pub use self::job::{
    ABANDONED_REASON, CANCELED_REASON, InMemoryJobStore, Job, JobCursor, JobFilter, JobState,
    JobStore, LeasePass, NewJob, Recovered,
};
pub use self::memory::InMemoryTaskStore;
pub use self::push::{InMemoryPushConfigStore, PushConfigStore};
pub use self::retention::{Pruned, prune, prune_jobs, prune_tasks};
pub use self::task::{
    Cause, Checkpoint, JobWrite, Lease, StoredEvent, StoredTask, TaskStore, Version,
};
