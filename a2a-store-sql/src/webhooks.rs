//! Which tasks have push configs, known without a query.
//!
//! The execution layer asks for a task's push configs on every event it
//! persists, and most tasks have none. A server holds its SQLite database
//! exclusively, so every config is saved through this process: a set of the
//! task ids that ever had one (loaded on open) lets the store answer "none"
//! without touching the database. Ids are only ever added, which keeps the
//! set conservative: a listed id still queries the database for the truth.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::sync::RwLock;

const SHARDS: usize = 16;

/// Task ids that have, or once had, a push config.
#[derive(Debug)]
pub(crate) struct WebhookTasks {
    shards: Box<[RwLock<HashSet<Box<str>>>]>,
    hasher: RandomState,
}

impl WebhookTasks {
    pub(crate) fn new(task_ids: impl IntoIterator<Item = String>) -> Self {
        let tasks = WebhookTasks {
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            hasher: RandomState::new(),
        };
        for id in task_ids {
            tasks.insert(&id);
        }
        tasks
    }

    fn shard(&self, task_id: &str) -> &RwLock<HashSet<Box<str>>> {
        let index = usize::try_from(self.hasher.hash_one(task_id) % SHARDS as u64).unwrap_or(0);
        &self.shards[index]
    }

    /// Notes that `task_id` has a config (call before saving it).
    pub(crate) fn insert(&self, task_id: &str) {
        let shard = self.shard(task_id);
        let known = shard
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(task_id);
        if !known {
            shard
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(task_id.into());
        }
    }

    /// Whether `task_id` may have configs (false: it surely has none).
    pub(crate) fn may_have(&self, task_id: &str) -> bool {
        self.shard(task_id)
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(task_id)
    }
}
