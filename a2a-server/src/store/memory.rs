//! `InMemoryTaskStore`: the default task store.
//!
//! Tasks are kept encoded, as MessagePack of their ProtoJSON shape minus the ids
//! that messages repeat from their task: a completed echo task costs a few
//! hundred bytes, and every read hands out an independent copy. (MessagePack
//! writes strings as they are; JSON's escaping was half the cost of a write.) The map is split
//! into shards by task id so writers to different tasks rarely meet, and uses
//! B-trees, which grow one node at a time instead of rehashing everything.
//! Their keys are plain integers (a hash of the task id, a sequence number), so
//! a lookup compares numbers held in the tree's own nodes instead of following a
//! pointer to a string at every step.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::{ListTasksRequest, ListTasksResponse, Task, TaskState};
use async_trait::async_trait;

use super::compact;
use super::listing::{ListPosition, TaskQuery, status_timestamp_ms};
use super::task::{Cause, Checkpoint, StoreError, StoredTask, TaskStore, Version};
use crate::Caller;

const SHARDS: usize = 16;

/// Key of a stored task: a hash of its id, then its sequence number (unique;
/// it tells tasks whose ids hash alike apart).
type TaskKey = (u64, u64);

/// Sort key of the list index: owner, newest status first, then creation
/// order; the last part finds the task.
type IndexKey = (u64, Reverse<i64>, u64, u64);

#[derive(Debug)]
struct Record {
    id: Box<str>,
    owner: Arc<Caller>,
    encoded: Box<[u8]>,
    version: Version,
    timestamp_ms: i64,
    state: TaskState,
    context_id: Box<str>,
    /// Boxed: most tasks have none, and then it costs one pointer.
    checkpoint: Option<Box<Checkpoint>>,
}

#[derive(Debug, Default)]
struct Shard {
    tasks: BTreeMap<TaskKey, Record>,
    index: BTreeSet<IndexKey>,
    /// One shared copy of each owner, instead of one per task.
    owners: foldhash::HashMap<Caller, Arc<Caller>>,
}

/// A task store in process memory. Cheap to clone; clones share the data.
#[derive(Debug, Clone)]
pub struct InMemoryTaskStore {
    shards: Arc<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    /// The next task's sequence number.
    sequence: Arc<AtomicU64>,
    /// Hashes every task id alike, so tests reach the collision paths.
    #[cfg(test)]
    colliding: bool,
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        InMemoryTaskStore {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: foldhash::fast::RandomState::default(),
            sequence: Arc::new(AtomicU64::new(1)),
            #[cfg(test)]
            colliding: false,
        }
    }
}

impl Shard {
    /// The key of task `id` (whose hash is `hash`), if it is stored.
    fn find(&self, hash: u64, id: &str) -> Option<TaskKey> {
        self.tasks
            .range((hash, 0)..=(hash, u64::MAX))
            .find(|(_, record)| *record.id == *id)
            .map(|(key, _)| *key)
    }
}

fn encode(task: &Task) -> Result<Box<[u8]>, StoreError> {
    thread_local! {
        // Reused across writes: the stored copy is then one exact-size allocation
        // instead of a growing buffer shrunk at the end.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        rmp_serde::encode::write_named(&mut *buffer, &compact::CompactTask(task))
            .map_err(|e| StoreError::Backend(format!("serializing task: {e}")))?;
        let stored = Box::from(buffer.as_slice());
        // A huge task should not pin its buffer's memory to the thread forever.
        if buffer.capacity() > 64 * 1024 {
            *buffer = Vec::new();
        }
        Ok(stored)
    })
}

fn decode(bytes: &[u8]) -> Result<Task, StoreError> {
    let mut task: Task = rmp_serde::from_slice(bytes)
        .map_err(|e| StoreError::Backend(format!("reading task: {e}")))?;
    compact::restore_ids(&mut task);
    Ok(task)
}

impl InMemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryTaskStore::default()
    }

    /// Number of stored tasks (all owners).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).tasks.len()).sum()
    }

    /// Whether the store holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn hash<T: Hash + ?Sized>(&self, value: &T) -> u64 {
        self.hasher.hash_one(value)
    }

    fn id_hash(&self, task_id: &str) -> u64 {
        #[cfg(test)]
        if self.colliding {
            return 7;
        }
        self.hash(task_id)
    }

    /// The shard of the task whose id hashes to `hash`.
    fn shard(&self, hash: u64) -> MutexGuard<'_, Shard> {
        let index = usize::try_from(hash % SHARDS as u64).unwrap_or(0);
        lock(&self.shards[index])
    }
}

/// A poisoned shard only means another thread panicked mid-write of plain data
/// that is always left consistent; keep serving.
fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn create(
        &self,
        caller: &Caller,
        task: &Task,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        let encoded = encode(task)?;
        let owner_hash = self.hash(caller);
        let id_hash = self.id_hash(&task.id);
        let mut shard = self.shard(id_hash);
        if shard.find(id_hash, &task.id).is_some() {
            return Err(StoreError::AlreadyExists(task.id.clone()));
        }
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let owner = match shard.owners.get(caller) {
            Some(owner) => owner.clone(),
            None => {
                let owner = Arc::new(caller.clone());
                shard.owners.insert(caller.clone(), owner.clone());
                owner
            }
        };
        let record = Record {
            id: task.id.as_str().into(),
            owner,
            encoded,
            version: 1,
            timestamp_ms: status_timestamp_ms(task),
            state: task.status.state,
            context_id: task.context_id.as_str().into(),
            checkpoint: cause.checkpoint.map(|c| Box::new(c.clone())),
        };
        shard
            .index
            .insert((owner_hash, Reverse(record.timestamp_ms), sequence, id_hash));
        shard.tasks.insert((id_hash, sequence), record);
        Ok(1)
    }

    async fn update(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        let encoded = encode(task)?;
        let owner_hash = self.hash(caller);
        let id_hash = self.id_hash(&task.id);
        let mut guard = self.shard(id_hash);
        let shard = &mut *guard;
        let Some(key) = shard.find(id_hash, &task.id) else {
            return Err(StoreError::NotFound(task.id.clone()));
        };
        let Some(record) = shard.tasks.get_mut(&key) else {
            return Err(StoreError::NotFound(task.id.clone()));
        };
        if *record.owner != *caller {
            return Err(StoreError::NotFound(task.id.clone()));
        }
        if record.version != expected {
            return Err(StoreError::Conflict {
                task_id: task.id.clone(),
                expected,
                found: record.version,
            });
        }
        let new_ts = status_timestamp_ms(task);
        if new_ts != record.timestamp_ms {
            let (_, sequence) = key;
            let old_key = (owner_hash, Reverse(record.timestamp_ms), sequence, id_hash);
            if shard.index.remove(&old_key) {
                shard
                    .index
                    .insert((owner_hash, Reverse(new_ts), sequence, id_hash));
            }
        }
        record.encoded = encoded;
        record.version += 1;
        record.timestamp_ms = new_ts;
        record.state = task.status.state;
        if let Some(checkpoint) = cause.checkpoint {
            record.checkpoint = Some(Box::new(checkpoint.clone()));
        }
        Ok(record.version)
    }

    async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError> {
        let (encoded, version, checkpoint) = {
            let id_hash = self.id_hash(task_id);
            let shard = self.shard(id_hash);
            let record = shard
                .find(id_hash, task_id)
                .and_then(|key| shard.tasks.get(&key));
            match record {
                Some(record) if *record.owner == *caller => (
                    record.encoded.clone(),
                    record.version,
                    record.checkpoint.as_deref().cloned(),
                ),
                _ => return Err(StoreError::NotFound(task_id.to_owned())),
            }
        };
        Ok(StoredTask::new(decode(&encoded)?, version, checkpoint))
    }

    async fn list(
        &self,
        caller: &Caller,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, StoreError> {
        let query = TaskQuery::from_request(request)?;
        let owner_hash = self.hash(caller);

        // Matching tasks of every shard, in list order, with where to find them.
        let mut matches: Vec<(ListPosition, usize, u64)> = Vec::new();
        for (shard_index, shard) in self.shards.iter().enumerate() {
            let shard = lock(shard);
            let range = shard
                .index
                .range((owner_hash, Reverse(i64::MAX), 0, 0)..)
                .take_while(|(hash, ..)| *hash == owner_hash);
            for &(_, ts, sequence, id_hash) in range {
                let Some(record) = shard.tasks.get(&(id_hash, sequence)) else {
                    continue;
                };
                if *record.owner == *caller && query.matches(&record.context_id, record.state, ts.0)
                {
                    matches.push((ListPosition::new(ts.0, sequence), shard_index, id_hash));
                }
            }
        }
        matches.sort_unstable();
        let total_size = i32::try_from(matches.len()).unwrap_or(i32::MAX);
        let start = matches.partition_point(|(position, ..)| !query.is_past_cursor(position));
        let page = &matches[start..];
        let page = &page[..page.len().min(query.page_size)];
        let next_page_token = TaskQuery::next_page_token(
            page.last().map(|(position, ..)| position),
            start + page.len() < matches.len(),
        );
        let mut tasks = Vec::with_capacity(page.len());
        for &(position, shard_index, id_hash) in page {
            let sequence = position.sequence;
            let encoded = {
                let shard = lock(&self.shards[shard_index]);
                // A task that vanished between the scan and the read is skipped.
                match shard.tasks.get(&(id_hash, sequence)) {
                    Some(record) if *record.owner == *caller => record.encoded.clone(),
                    _ => continue,
                }
            };
            tasks.push(decode(&encoded)?);
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token,
            page_size: query.page_size_i32(),
            total_size,
        })
    }

    async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
        let owner_hash = self.hash(caller);
        let id_hash = self.id_hash(task_id);
        let mut shard = self.shard(id_hash);
        let Some(key) = shard.find(id_hash, task_id) else {
            return Ok(());
        };
        let owned = shard
            .tasks
            .get(&key)
            .is_some_and(|record| *record.owner == *caller);
        if let Some(record) = owned.then(|| shard.tasks.remove(&key)).flatten() {
            let (_, sequence) = key;
            shard
                .index
                .remove(&(owner_hash, Reverse(record.timestamp_ms), sequence, id_hash));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::{Message, StreamResponse, TaskState};

    fn caller(user: &str) -> Caller {
        Caller {
            tenant: String::new(),
            user: user.into(),
        }
    }

    fn task_at(id: &str, ms: i64, state: TaskState) -> Task {
        let mut task = Task::new(id, "ctx", state);
        task.status.timestamp = chrono::DateTime::from_timestamp_millis(ms);
        task
    }

    fn event() -> StreamResponse {
        StreamResponse::Message(Message::user_text("x"))
    }

    proptest::proptest! {
        // Every task, whatever its parts, metadata and artifacts, reads back as
        // written (messages with no ids of their own read back with the task's).
        #[test]
        fn the_stored_form_round_trips(task in a2a_core::arbitrary::task()) {
            let mut expected = task.clone();
            compact::restore_ids(&mut expected);
            let read = decode(&encode(&task).unwrap()).unwrap();
            proptest::prop_assert_eq!(read, expected);
        }
    }

    #[tokio::test]
    async fn ids_that_hash_alike_stay_apart() {
        let store = InMemoryTaskStore {
            colliding: true,
            ..InMemoryTaskStore::default()
        };
        let alice = caller("alice");
        for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
            let ms = 10 + i64::try_from(i).unwrap();
            store
                .create(
                    &alice,
                    &task_at(id, ms, TaskState::Submitted),
                    &Cause::event(&event()),
                )
                .await
                .unwrap();
        }
        assert!(matches!(
            store
                .create(
                    &alice,
                    &task_at("b", 1, TaskState::Submitted),
                    &Cause::event(&event())
                )
                .await,
            Err(StoreError::AlreadyExists(_))
        ));
        store
            .update(
                &alice,
                &task_at("b", 20, TaskState::Working),
                1,
                &Cause::event(&event()),
            )
            .await
            .unwrap();
        for (id, version, state) in [
            ("a", 1, TaskState::Submitted),
            ("b", 2, TaskState::Working),
            ("c", 1, TaskState::Submitted),
        ] {
            let stored = store.get(&alice, id).await.unwrap();
            assert_eq!(
                (stored.task.id.as_str(), stored.version, stored.task.state()),
                (id, version, state)
            );
        }
        assert!(matches!(
            store.get(&alice, "d").await,
            Err(StoreError::NotFound(_))
        ));
        let listed = store
            .list(&alice, &ListTasksRequest::default())
            .await
            .unwrap();
        let ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
    }
}
