//! Storage of tasks and push configs: traits and in-memory implementations.

mod compact;
mod memory;
mod push;
mod task;

pub use self::memory::InMemoryTaskStore;
pub use self::push::{InMemoryPushConfigStore, PushConfigStore};
pub use self::task::{StoreError, StoredTask, TaskStore, Version};
