//! Storage of tasks and push configs: traits and in-memory implementations.

mod compact;
mod job;
mod memory;
mod push;
mod task;

pub use self::job::{InMemoryJobStore, Job, JobFilter, JobState, JobStore, NewJob, Recovered};
pub use self::memory::InMemoryTaskStore;
pub use self::push::{InMemoryPushConfigStore, PushConfigStore};
pub use self::task::{Cause, Checkpoint, StoreError, StoredTask, TaskStore, Version};
