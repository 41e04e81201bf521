//! `PushConfigStore`: webhook configurations per task.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use a2a_core::TaskPushNotificationConfig;
use async_trait::async_trait;

use super::task::StoreError;

/// Persistence of push-notification configs, keyed by task id and config id.
///
/// Ownership is checked by the handler through the task store before any call
/// here, so this trait is keyed by task only.
#[async_trait]
pub trait PushConfigStore: Send + Sync + 'static {
    /// Saves (inserts or replaces) a config; an empty `id` gets a fresh one. Returns the stored config.
    async fn save(
        &self,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, StoreError>;
    /// One config.
    async fn get(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError>;
    /// All configs of a task, in creation order.
    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, StoreError>;
    /// Deletes a config; deleting a missing one succeeds (idempotent).
    async fn delete(&self, task_id: &str, config_id: &str) -> Result<(), StoreError>;
    /// Deletes every config of a task.
    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError>;
}

/// A push-config store in process memory. Cheap to clone; clones share the data.
#[derive(Debug, Clone, Default)]
pub struct InMemoryPushConfigStore {
    configs: Arc<Mutex<BTreeMap<String, Vec<TaskPushNotificationConfig>>>>,
}

impl InMemoryPushConfigStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryPushConfigStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<TaskPushNotificationConfig>>> {
        self.configs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl PushConfigStore for InMemoryPushConfigStore {
    async fn save(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, StoreError> {
        if config.id.is_empty() {
            config.id = a2a_core::new_id();
        }
        let mut configs = self.lock();
        let list = configs.entry(config.task_id.clone()).or_default();
        match list.iter_mut().find(|c| c.id == config.id) {
            Some(existing) => *existing = config.clone(),
            None => list.push(config.clone()),
        }
        Ok(config)
    }

    async fn get(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        Ok(self
            .lock()
            .get(task_id)
            .and_then(|list| list.iter().find(|c| c.id == config_id).cloned()))
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        Ok(self.lock().get(task_id).cloned().unwrap_or_default())
    }

    async fn delete(&self, task_id: &str, config_id: &str) -> Result<(), StoreError> {
        let mut configs = self.lock();
        if let Some(list) = configs.get_mut(task_id) {
            list.retain(|c| c.id != config_id);
            if list.is_empty() {
                configs.remove(task_id);
            }
        }
        Ok(())
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), StoreError> {
        self.lock().remove(task_id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn crud_is_idempotent_and_assigns_ids() {
        let store = InMemoryPushConfigStore::new();
        let saved = store
            .save(TaskPushNotificationConfig::new("t", "https://h/1"))
            .await
            .unwrap();
        assert!(!saved.id.is_empty());
        let mut replaced = saved.clone();
        replaced.url = "https://h/2".into();
        store.save(replaced).await.unwrap();
        let list = store.list("t").await.unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].url, "https://h/2");
        store.delete("t", &saved.id).await.unwrap();
        store.delete("t", &saved.id).await.unwrap();
        assert!(store.get("t", &saved.id).await.unwrap().is_none());
    }
}
