//! `InMemoryTaskStore`: the default task store.
//!
//! Tasks are kept encoded, as MessagePack of their ProtoJSON shape minus the ids
//! that messages repeat from their task: a completed echo task costs a few
//! hundred bytes, and every read hands out an independent copy. (MessagePack
//! writes strings as they are; JSON's escaping was half the cost of a write.) The map is split
//! into shards by task id so writers to different tasks rarely meet, and uses
//! B-trees, which grow one node at a time instead of rehashing everything.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::{ListTasksRequest, ListTasksResponse, StreamResponse, Task, TaskState};
use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::compact;
use super::task::{StoreError, StoredTask, TaskStore, Version};
use crate::Caller;

const SHARDS: usize = 16;

/// Sort key of the list index: owner, newest status first, then id.
type IndexKey = (u64, Reverse<i64>, Arc<str>);

#[derive(Debug)]
struct Record {
    owner: Arc<Caller>,
    encoded: Box<[u8]>,
    version: Version,
    timestamp_ms: i64,
    state: TaskState,
    context_id: Box<str>,
}

#[derive(Debug, Default)]
struct Shard {
    tasks: BTreeMap<Arc<str>, Record>,
    index: BTreeSet<IndexKey>,
    /// One shared copy of each owner, instead of one per task.
    owners: foldhash::HashMap<Caller, Arc<Caller>>,
}

/// A task store in process memory. Cheap to clone; clones share the data.
#[derive(Debug, Clone)]
pub struct InMemoryTaskStore {
    shards: Arc<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        InMemoryTaskStore {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hasher: foldhash::fast::RandomState::default(),
        }
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

fn timestamp_ms(task: &Task) -> i64 {
    task.status.timestamp.map_or(0, |ts| ts.timestamp_millis())
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

    fn shard(&self, task_id: &str) -> MutexGuard<'_, Shard> {
        let index = usize::try_from(self.hash(task_id) % SHARDS as u64).unwrap_or(0);
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
        _cause: &StreamResponse,
    ) -> Result<Version, StoreError> {
        let encoded = encode(task)?;
        let owner_hash = self.hash(caller);
        let id: Arc<str> = Arc::from(task.id.as_str());
        let mut shard = self.shard(&task.id);
        if shard.tasks.contains_key(&id) {
            return Err(StoreError::AlreadyExists(task.id.clone()));
        }
        let owner = match shard.owners.get(caller) {
            Some(owner) => owner.clone(),
            None => {
                let owner = Arc::new(caller.clone());
                shard.owners.insert(caller.clone(), owner.clone());
                owner
            }
        };
        let record = Record {
            owner,
            encoded,
            version: 1,
            timestamp_ms: timestamp_ms(task),
            state: task.status.state,
            context_id: task.context_id.as_str().into(),
        };
        shard
            .index
            .insert((owner_hash, Reverse(record.timestamp_ms), id.clone()));
        shard.tasks.insert(id, record);
        Ok(1)
    }

    async fn update(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        _cause: &StreamResponse,
    ) -> Result<Version, StoreError> {
        let encoded = encode(task)?;
        let owner_hash = self.hash(caller);
        let mut guard = self.shard(&task.id);
        let shard = &mut *guard;
        let Some(record) = shard.tasks.get_mut(task.id.as_str()) else {
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
        let new_ts = timestamp_ms(task);
        if new_ts != record.timestamp_ms {
            let old_key = (
                owner_hash,
                Reverse(record.timestamp_ms),
                Arc::<str>::from(task.id.as_str()),
            );
            if let Some((_, _, id)) = shard.index.take(&old_key) {
                shard.index.insert((owner_hash, Reverse(new_ts), id));
            }
        }
        record.encoded = encoded;
        record.version += 1;
        record.timestamp_ms = new_ts;
        record.state = task.status.state;
        Ok(record.version)
    }

    async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError> {
        let (encoded, version) = {
            let shard = self.shard(task_id);
            match shard.tasks.get(task_id) {
                Some(record) if *record.owner == *caller => {
                    (record.encoded.clone(), record.version)
                }
                _ => return Err(StoreError::NotFound(task_id.to_owned())),
            }
        };
        Ok(StoredTask {
            task: decode(&encoded)?,
            version,
        })
    }

    async fn list(
        &self,
        caller: &Caller,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, StoreError> {
        let page_size = usize::try_from(request.page_size.unwrap_or(50).max(1)).unwrap_or(50);
        let cursor = parse_page_token(&request.page_token)?;
        let after_ms = request
            .status_timestamp_after
            .map(|ts| ts.timestamp_millis());
        let owner_hash = self.hash(caller);

        // Matching keys of every shard, in list order (newest first, then id).
        let mut matches: Vec<(Reverse<i64>, Arc<str>)> = Vec::new();
        for shard in self.shards.iter() {
            let shard = lock(shard);
            let range = shard
                .index
                .range((owner_hash, Reverse(i64::MAX), Arc::from(""))..)
                .take_while(|(hash, _, _)| *hash == owner_hash);
            for (_, ts, id) in range {
                let Some(record) = shard.tasks.get(id) else {
                    continue;
                };
                let matched = *record.owner == *caller
                    && (request.context_id.is_empty() || *record.context_id == *request.context_id)
                    && (request.status == TaskState::Unspecified || record.state == request.status)
                    && after_ms.is_none_or(|after| ts.0 >= after);
                if matched {
                    matches.push((*ts, id.clone()));
                }
            }
        }
        matches.sort_unstable();
        let total_size = i32::try_from(matches.len()).unwrap_or(i32::MAX);
        let start = match &cursor {
            Some((ts, id)) => {
                matches.partition_point(|(t, i)| (t.0 > *ts) || (t.0 == *ts && **i <= **id))
            }
            None => 0,
        };
        let page: Vec<_> = matches.iter().skip(start).take(page_size).collect();
        let next_page_token = match page.last() {
            Some((ts, id)) if start + page.len() < matches.len() => make_page_token(ts.0, id),
            _ => String::new(),
        };
        let mut tasks = Vec::with_capacity(page.len());
        for (_, id) in page {
            // A task that vanished between the scan and the read is skipped.
            if let Ok(stored) = self.get(caller, id).await {
                tasks.push(stored.task);
            }
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token,
            page_size: i32::try_from(page_size).unwrap_or(50),
            total_size,
        })
    }
}

fn make_page_token(timestamp_ms: i64, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{timestamp_ms}|{id}"))
}

fn parse_page_token(token: &str) -> Result<Option<(i64, String)>, StoreError> {
    if token.is_empty() {
        return Ok(None);
    }
    let invalid = || StoreError::Invalid(format!("invalid pageToken {token:?}"));
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (ts, id) = text.split_once('|').ok_or_else(invalid)?;
    Ok(Some((ts.parse().map_err(|_| invalid())?, id.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::{Message, TaskState};

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

    fn cause() -> StreamResponse {
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
    async fn versions_and_conflicts() {
        let store = InMemoryTaskStore::new();
        let alice = caller("alice");
        assert_eq!(
            store
                .create(&alice, &task_at("t", 1, TaskState::Submitted), &cause())
                .await
                .unwrap(),
            1
        );
        assert!(matches!(
            store
                .create(&alice, &task_at("t", 1, TaskState::Submitted), &cause())
                .await,
            Err(StoreError::AlreadyExists(_))
        ));
        assert_eq!(
            store
                .update(&alice, &task_at("t", 2, TaskState::Working), 1, &cause())
                .await
                .unwrap(),
            2
        );
        let err = store
            .update(&alice, &task_at("t", 3, TaskState::Completed), 1, &cause())
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::Conflict {
                expected: 1,
                found: 2,
                ..
            }
        ));
        let stored = store.get(&alice, "t").await.unwrap();
        assert_eq!(
            (stored.version, stored.task.state()),
            (2, TaskState::Working)
        );
    }

    #[tokio::test]
    async fn other_callers_see_not_found() {
        let store = InMemoryTaskStore::new();
        store
            .create(
                &caller("alice"),
                &task_at("t", 1, TaskState::Submitted),
                &cause(),
            )
            .await
            .unwrap();
        let bob = caller("bob");
        assert!(matches!(
            store.get(&bob, "t").await,
            Err(StoreError::NotFound(_))
        ));
        let err = store
            .update(&bob, &task_at("t", 2, TaskState::Working), 1, &cause())
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)));
        let other_tenant = Caller {
            tenant: "x".into(),
            user: "alice".into(),
        };
        assert!(store.get(&other_tenant, "t").await.is_err());
        let listed = store
            .list(&bob, &ListTasksRequest::default())
            .await
            .unwrap();
        assert_eq!(listed.total_size, 0);
    }

    #[tokio::test]
    async fn list_pages_newest_first_with_filters() {
        let store = InMemoryTaskStore::new();
        let alice = caller("alice");
        for i in 0..25 {
            let state = if i % 2 == 0 {
                TaskState::Completed
            } else {
                TaskState::Working
            };
            store
                .create(
                    &alice,
                    &task_at(&format!("t{i:02}"), 1000 + i, state),
                    &cause(),
                )
                .await
                .unwrap();
        }
        let mut request = ListTasksRequest {
            page_size: Some(10),
            ..Default::default()
        };
        let mut seen = Vec::new();
        loop {
            let page = store.list(&alice, &request).await.unwrap();
            assert_eq!(page.total_size, 25);
            seen.extend(page.tasks.iter().map(|t| t.id.clone()));
            if page.next_page_token.is_empty() {
                break;
            }
            request.page_token = page.next_page_token;
        }
        let expected: Vec<String> = (0..25).rev().map(|i| format!("t{i:02}")).collect();
        assert_eq!(seen, expected);

        let completed = ListTasksRequest {
            status: TaskState::Completed,
            ..Default::default()
        };
        assert_eq!(store.list(&alice, &completed).await.unwrap().total_size, 13);
        let recent = ListTasksRequest {
            status_timestamp_after: chrono::DateTime::from_timestamp_millis(1020),
            ..Default::default()
        };
        assert_eq!(store.list(&alice, &recent).await.unwrap().total_size, 5);
        let bad = ListTasksRequest {
            page_token: "%%".into(),
            ..Default::default()
        };
        assert!(matches!(
            store.list(&alice, &bad).await,
            Err(StoreError::Invalid(_))
        ));
    }
}
