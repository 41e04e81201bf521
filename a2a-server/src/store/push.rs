//! `PushConfigStore`: webhook configurations per task, scoped to the caller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::TaskPushNotificationConfig;
use async_trait::async_trait;

use super::error::StoreError;
use super::task::{StoredEvent, Version};
use crate::Caller;

/// Persistence of push-notification configs, keyed by owner, task id and config id.
///
/// Scoped like the task store: every call takes the [`Caller`], and another
/// caller's configs are invisible (`get` answers `None`, `list` nothing, and
/// `delete` changes nothing).
#[async_trait]
pub trait PushConfigStore: Send + Sync + 'static {
    /// Saves (inserts or replaces) a config; an empty `id` gets a fresh one. Returns the stored config.
    async fn save(
        &self,
        caller: &Caller,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, StoreError>;
    /// One config.
    async fn get(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError>;
    /// All configs of a task, in creation order.
    async fn list(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError>;
    /// Deletes a config; deleting a missing one succeeds (idempotent).
    async fn delete(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<(), StoreError>;
    /// Deletes every config of a task.
    async fn delete_all(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError>;

    /// The task's events still owed to its webhooks, oldest first: a store
    /// that keeps a push outbox (a cluster's) records each event that has
    /// webhooks in the transaction that writes it, until
    /// [`PushConfigStore::delivered`] clears it. A node taking a task over
    /// sends these first. The default keeps no outbox: none.
    async fn undelivered(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let _ = (caller, task_id);
        Ok(Vec::new())
    }

    /// Clears the task's outbox up to `version` (included): that event went
    /// to every webhook, and the events before it were sent already, or
    /// were never to be (a follow-up's own message). The default keeps no
    /// outbox: nothing to do.
    async fn delivered(
        &self,
        caller: &Caller,
        task_id: &str,
        version: Version,
    ) -> Result<(), StoreError> {
        let _ = (caller, task_id, version);
        Ok(())
    }

    /// Whether this store keeps a push outbox (see
    /// [`PushConfigStore::undelivered`]). The default: no.
    fn keeps_outbox(&self) -> bool {
        false
    }
}

/// The configs of one task id: its owner's, and in the rare case that another
/// caller used the same id, theirs apart.
type Configs = HashMap<String, Vec<(Caller, Vec<TaskPushNotificationConfig>)>>;

/// A push-config store in process memory. Cheap to clone; clones share the data.
#[derive(Debug, Clone, Default)]
pub struct InMemoryPushConfigStore {
    configs: Arc<Mutex<Configs>>,
}

impl InMemoryPushConfigStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryPushConfigStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Configs> {
        self.configs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn owned<'a>(
    configs: &'a Configs,
    caller: &Caller,
    task_id: &str,
) -> Option<&'a Vec<TaskPushNotificationConfig>> {
    configs
        .get(task_id)?
        .iter()
        .find(|(owner, _)| owner == caller)
        .map(|(_, list)| list)
}

#[async_trait]
impl PushConfigStore for InMemoryPushConfigStore {
    async fn save(
        &self,
        caller: &Caller,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, StoreError> {
        if config.id.is_empty() {
            config.id = a2a_core::new_id();
        }
        let mut configs = self.lock();
        let owners = configs.entry(config.task_id.clone()).or_default();
        let index = match owners.iter().position(|(owner, _)| owner == caller) {
            Some(index) => index,
            None => {
                owners.push((caller.clone(), Vec::new()));
                owners.len() - 1
            }
        };
        let list = &mut owners[index].1;
        match list.iter_mut().find(|c| c.id == config.id) {
            Some(existing) => existing.clone_from(&config),
            None => list.push(config.clone()),
        }
        Ok(config)
    }

    async fn get(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        Ok(owned(&self.lock(), caller, task_id)
            .and_then(|list| list.iter().find(|c| c.id == config_id).cloned()))
    }

    async fn list(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        Ok(owned(&self.lock(), caller, task_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn delete(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<(), StoreError> {
        let mut configs = self.lock();
        if let Some(owners) = configs.get_mut(task_id) {
            for (owner, list) in owners.iter_mut() {
                if owner == caller {
                    list.retain(|c| c.id != config_id);
                }
            }
            owners.retain(|(_, list)| !list.is_empty());
            if owners.is_empty() {
                configs.remove(task_id);
            }
        }
        Ok(())
    }

    async fn delete_all(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
        let mut configs = self.lock();
        if let Some(owners) = configs.get_mut(task_id) {
            owners.retain(|(owner, _)| owner != caller);
            if owners.is_empty() {
                configs.remove(task_id);
            }
        }
        Ok(())
    }
}
