//! `InMemoryTaskStore`: the default task store.
//!
//! Tasks are kept encoded in a positional binary form (`compact`), without
//! the ids that messages repeat from their task: a completed echo task costs
//! a few hundred bytes, and every read hands out an independent copy. The map is split
//! into shards by task id so writers to different tasks rarely meet, and uses
//! B-trees, which grow one node at a time instead of rehashing everything.
//! Their keys are plain integers (the task id's key, a sequence number), so
//! a lookup compares numbers held in the tree's own nodes instead of following a
//! pointer to a string at every step. A time-ordered id's key starts with its
//! time, so new tasks are added, and looked up again, where the last ones were.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::{ListTasksRequest, ListTasksResponse, Task, TaskState};
use async_trait::async_trait;

use super::compact;
use super::error::StoreError;
use super::listing::{ListPosition, TaskQuery, status_timestamp_ms};
use super::task::{Cause, Checkpoint, StoredTask, TaskStore, Version};
use crate::Caller;

const SHARDS: usize = 16;

/// Key of a stored task: its id's key (`InMemoryTaskStore::key_of`), then
/// its sequence number (unique; it tells tasks whose ids' keys collide apart).
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
    /// Shared with its context's counts: one copy per context.
    context_id: Arc<str>,
    /// Boxed: most tasks have none, and then it costs one pointer.
    checkpoint: Option<Box<Checkpoint>>,
}

#[derive(Debug, Default)]
struct Shard {
    tasks: BTreeMap<TaskKey, Record>,
    index: BTreeSet<IndexKey>,
    /// Each owner with tasks in this shard.
    owners: foldhash::HashMap<Caller, Owner>,
}

/// Tasks counted by state, indexed by `TaskState as usize`.
type StateCounts = [u64; 9];

/// An owner's tasks in one shard: one shared copy of the owner (instead of
/// one per task), and counts that answer ListTasks' `totalSize` without a
/// scan, for every filter but the timestamp.
#[derive(Debug)]
struct Owner {
    caller: Arc<Caller>,
    by_state: StateCounts,
    /// One entry per context, so it grows with the tasks: keyed by the
    /// context id's key (`InMemoryTaskStore::key_of`, which puts a
    /// time-ordered id where the newest ones are), then a number that tells
    /// contexts whose keys collide apart. A B-tree: it grows a node at a time,
    /// where a hash table doubling held the shard's lock (and the worker) for
    /// milliseconds once it had tens of thousands of contexts, and a new
    /// context is not written to a random place in a table of them all.
    by_context: BTreeMap<ContextKey, ContextCounts>,
    /// The second part of the next context's key.
    next_context: u64,
}

/// Key of an owner's context in one shard: the context id's key, then a
/// number unique in the owner's shard.
type ContextKey = (u64, u64);

/// One owner's tasks of one context in one shard, counted by state.
#[derive(Debug)]
struct ContextCounts {
    context: Arc<str>,
    /// `u32`: one owner's tasks of one context in one shard stay far below
    /// four billion in any memory, and the entry is 56 bytes instead of 88.
    by_state: [u32; 9],
}

impl Owner {
    fn new(caller: &Caller) -> Self {
        Self {
            caller: Arc::new(caller.clone()),
            by_state: [0; 9],
            by_context: BTreeMap::new(),
            next_context: 0,
        }
    }

    /// The counts of `context` (whose key is `key`), if it has any.
    fn context_mut(&mut self, context: &str, key: u64) -> Option<(ContextKey, &mut ContextCounts)> {
        self.by_context
            .range_mut((key, 0)..)
            .take_while(|((at, _), _)| *at == key)
            .find(|(_, counts)| *counts.context == *context)
            .map(|(at, counts)| (*at, counts))
    }

    /// Counts `context` (whose key is `key`) for the first time, with one
    /// task in `state`, and gives its shared id.
    fn first_of_context(&mut self, context: &str, key: u64, state: TaskState) -> Arc<str> {
        let shared: Arc<str> = context.into();
        let mut by_state = [0; 9];
        by_state[state as usize] = 1;
        self.by_context.insert(
            (key, self.next_context),
            ContextCounts {
                context: Arc::clone(&shared),
                by_state,
            },
        );
        self.next_context += 1;
        shared
    }

    /// Counts a new task of `context` (whose key is `key`) in `state`, and
    /// gives the context's shared id for the task's record.
    fn add(&mut self, context: &str, key: u64, state: TaskState) -> Arc<str> {
        self.by_state[state as usize] += 1;
        match self.context_mut(context, key) {
            Some((_, counts)) => {
                counts.by_state[state as usize] += 1;
                Arc::clone(&counts.context)
            }
            None => self.first_of_context(context, key, state),
        }
    }

    /// Moves one task of `context` (whose key is `key`) from `from` (if it
    /// was counted) to `to` (if it still is).
    fn recount(&mut self, context: &str, key: u64, from: Option<TaskState>, to: Option<TaskState>) {
        if let Some(from) = from {
            self.by_state[from as usize] -= 1;
        }
        if let Some(to) = to {
            self.by_state[to as usize] += 1;
        }
        let Some((at, counts)) = self.context_mut(context, key) else {
            // A task is counted in its context from its creation on; this
            // only keeps the counts whole if that ever failed.
            if let Some(to) = to {
                self.first_of_context(context, key, to);
            }
            return;
        };
        let in_context = &mut counts.by_state;
        if let Some(from) = from {
            in_context[from as usize] = in_context[from as usize].saturating_sub(1);
        }
        if let Some(to) = to {
            in_context[to as usize] += 1;
        }
        if in_context.iter().all(|n| *n == 0) {
            self.by_context.remove(&at);
        }
    }

    fn is_empty(&self) -> bool {
        self.by_state.iter().all(|n| *n == 0)
    }

    /// This shard's tasks of the owner that pass the context (with its
    /// key) and state filters.
    fn count(&self, context: Option<(&str, u64)>, state: Option<TaskState>) -> u64 {
        let Some((context, key)) = context else {
            return match state {
                Some(state) => self.by_state[state as usize],
                None => self.by_state.iter().sum(),
            };
        };
        let Some((_, in_context)) = self
            .by_context
            .range((key, 0)..)
            .take_while(|((at, _), _)| *at == key)
            .find(|(_, counts)| *counts.context == *context)
        else {
            return 0;
        };
        match state {
            Some(state) => u64::from(in_context.by_state[state as usize]),
            None => in_context.by_state.iter().map(|n| u64::from(*n)).sum(),
        }
    }
}

/// How far one shard's index has been read for a listing.
struct ShardScan {
    /// Where to go on.
    from: std::ops::Bound<IndexKey>,
    /// The last entry read (`None`: none yet, which sorts first).
    frontier: Option<ListPosition>,
    /// Entries to read next time.
    step: usize,
    /// Nothing more of the caller's can match.
    done: bool,
}

/// Index entries read per lock while listing: a listing that must pass over
/// many tasks (a filter few match) lets writers in between.
const SCAN_CHUNK: usize = 1_024;

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
    /// Visits this shard's index entries of the owner `owner_hash` from
    /// `from` on, in list order, stopping before an entry older than
    /// `from_ms` (when given) or after `limit` entries. Returns where to go
    /// on, or `None` once nothing more of the owner's can be reached.
    fn walk(
        &self,
        owner_hash: u64,
        from: std::ops::Bound<IndexKey>,
        from_ms: Option<i64>,
        limit: usize,
        mut visit: impl FnMut(&Self, IndexKey),
    ) -> Option<std::ops::Bound<IndexKey>> {
        let mut next = from;
        let entries = self.index.range((from, std::ops::Bound::Unbounded));
        for (read, &key) in entries.enumerate() {
            let (hash, ts, ..) = key;
            if hash != owner_hash || from_ms.is_some_and(|from| ts.0 < from) {
                return None;
            }
            // The entry past the limit is left for next time once seen to be
            // the owner's, so that `None` always means done.
            if read == limit {
                return Some(next);
            }
            next = std::ops::Bound::Excluded(key);
            visit(self, key);
        }
        None
    }

    /// Where task `id` (whose id's key is `id_key`) is, if it is stored.
    fn find(&self, id_key: u64, id: &str) -> Option<TaskKey> {
        self.tasks
            .range((id_key, 0)..)
            .take_while(|((key, _), _)| *key == id_key)
            .find(|(_, record)| *record.id == *id)
            .map(|(key, _)| *key)
    }
}

fn encode(task: &Task) -> Box<[u8]> {
    thread_local! {
        // Reused across writes: the stored copy is then one exact-size allocation
        // instead of a growing buffer shrunk at the end.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        buffer.clear();
        compact::encode(task, &mut buffer);
        let stored = Box::from(buffer.as_slice());
        // A huge task should not pin its buffer's memory to the thread forever.
        if buffer.capacity() > 64 * 1024 {
            *buffer = Vec::new();
        }
        stored
    })
}

fn decode(bytes: &[u8]) -> Result<Task, StoreError> {
    compact::decode(bytes).map_err(|e| StoreError::Backend(e.to_string()))
}

impl InMemoryTaskStore {
    /// How many of `caller`'s tasks pass the query's filters (not its
    /// cursor): from the owners' counts, except with a timestamp filter,
    /// which counts the tasks newer than it (the head of each shard's list).
    fn count_matching(&self, caller: &Caller, owner_hash: u64, query: &TaskQuery<'_>) -> u64 {
        let context = query
            .context_id
            .map(|context| (context, self.key_of(context)));
        let mut total = 0;
        for shard in self.shards.iter() {
            let Some(from_ms) = query.timestamp_from_ms else {
                total += lock(shard)
                    .owners
                    .get(caller)
                    .map_or(0, |owner| owner.count(context, query.state));
                continue;
            };
            // In chunks, the lock let go in between.
            let mut from = Some(std::ops::Bound::Included((
                owner_hash,
                Reverse(i64::MAX),
                0,
                0,
            )));
            while let Some(at) = from {
                from = lock(shard).walk(owner_hash, at, Some(from_ms), SCAN_CHUNK, |shard, key| {
                    let (_, ts, sequence, id_key) = key;
                    let matches = shard.tasks.get(&(id_key, sequence)).is_some_and(|record| {
                        *record.owner == *caller
                            && query.matches(&record.context_id, record.state, ts.0)
                    });
                    total += u64::from(matches);
                });
            }
        }
        total
    }

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

    /// The key of a task id or a context id in a shard's maps (for a task,
    /// also the number that picks its shard: the low bits always come from
    /// the keyed hash).
    ///
    /// For a time-ordered id (a UUID v7, as `a2a_core::new_id` makes), the
    /// id's millisecond above 16 bits of the keyed hash, every bit flipped:
    /// tasks and contexts made one after another land at the left edge of
    /// their shard's trees, where the last lookups left the nodes in cache,
    /// instead of on a random path through them (the random descents were
    /// 6% of a gRPC SendMessage's time on one core, the context table's
    /// random inserts 2%). Newest first, because std's B-tree searches each
    /// node from its first key: at the left edge one comparison a node finds
    /// the place, at the right edge eleven. Any other id: the keyed hash.
    /// Either way a chosen id cannot aim at another's key, and ids whose keys
    /// collide are told apart by the second part of the map's key and a
    /// comparison of the ids.
    fn key_of(&self, id: &str) -> u64 {
        #[cfg(test)]
        if self.colliding {
            return 7;
        }
        let hash = self.hash(id);
        match uuid_v7_millis(id) {
            Some(millis) => !(millis << 16 | hash & 0xFFFF),
            None => hash,
        }
    }

    /// The shard of the task whose id's key is `key`.
    fn shard(&self, key: u64) -> MutexGuard<'_, Shard> {
        lock(&self.shards[shard_index(key)])
    }
}

/// The millisecond stamped on `id` if it is written as a UUID v7
/// (`tttttttt-tttt-7…`, 48 bits of Unix time first), whatever follows.
fn uuid_v7_millis(id: &str) -> Option<u64> {
    let bytes = id.as_bytes();
    if bytes.len() < 15 || bytes[8] != b'-' || bytes[13] != b'-' || bytes[14] != b'7' {
        return None;
    }
    bytes[..8]
        .iter()
        .chain(&bytes[9..13])
        .try_fold(0u64, |millis, &digit| {
            let value = char::from(digit).to_digit(16)?;
            Some(millis << 4 | u64::from(value))
        })
}

/// The shard that holds the task whose id's key is `key`.
fn shard_index(key: u64) -> usize {
    usize::try_from(key % SHARDS as u64).unwrap_or(0)
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
        let encoded = encode(task);
        let owner_hash = self.hash(caller);
        let id_key = self.key_of(&task.id);
        let context_key = self.key_of(&task.context_id);
        let mut shard = self.shard(id_key);
        if shard.find(id_key, &task.id).is_some() {
            return Err(StoreError::AlreadyExists(task.id.clone()));
        }
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let stats = match shard.owners.get_mut(caller) {
            Some(stats) => stats,
            None => shard
                .owners
                .entry(caller.clone())
                .or_insert_with(|| Owner::new(caller)),
        };
        let context_id = stats.add(&task.context_id, context_key, task.status.state);
        let owner = stats.caller.clone();
        let record = Record {
            id: task.id.as_str().into(),
            owner,
            encoded,
            version: 1,
            timestamp_ms: status_timestamp_ms(task),
            state: task.status.state,
            context_id,
            checkpoint: cause.checkpoint.map(|c| Box::new(c.clone())),
        };
        shard
            .index
            .insert((owner_hash, Reverse(record.timestamp_ms), sequence, id_key));
        shard.tasks.insert((id_key, sequence), record);
        Ok(1)
    }

    async fn update(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        let encoded = encode(task);
        let owner_hash = self.hash(caller);
        let id_key = self.key_of(&task.id);
        let mut guard = self.shard(id_key);
        let shard = &mut *guard;
        let Some(key) = shard.find(id_key, &task.id) else {
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
            let old_key = (owner_hash, Reverse(record.timestamp_ms), sequence, id_key);
            if shard.index.remove(&old_key) {
                shard
                    .index
                    .insert((owner_hash, Reverse(new_ts), sequence, id_key));
            }
        }
        if record.state != task.status.state {
            if let Some(stats) = shard.owners.get_mut(&*record.owner) {
                stats.recount(
                    &record.context_id,
                    self.key_of(&record.context_id),
                    Some(record.state),
                    Some(task.status.state),
                );
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
            let id_key = self.key_of(task_id);
            let shard = self.shard(id_key);
            let record = shard
                .find(id_key, task_id)
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
        let total = self.count_matching(caller, owner_hash, &query);

        // The shards' indexes are each in list order: scan them side by side,
        // always the one scanned least far, in steps that grow, and take a
        // match once no shard can still hold an earlier one. A page thus
        // costs the entries up to its end in list order (for a filter that
        // matches one task in k, k times the page), not what is stored.
        let wanted = query.page_size.saturating_add(1);
        let start = match query.after {
            Some(after) => std::ops::Bound::Excluded((
                owner_hash,
                Reverse(after.timestamp_ms),
                after.sequence,
                u64::MAX,
            )),
            None => std::ops::Bound::Included((owner_hash, Reverse(i64::MAX), 0, 0)),
        };
        let first_step = wanted.div_ceil(SHARDS) + 1;
        let mut scans: Vec<ShardScan> = (0..self.shards.len())
            .map(|_| ShardScan {
                from: start,
                frontier: None,
                step: first_step,
                done: false,
            })
            .collect();
        let mut candidates: std::collections::BinaryHeap<Reverse<(ListPosition, usize, u64)>> =
            std::collections::BinaryHeap::new();
        let mut matches: Vec<(ListPosition, usize, u64)> = Vec::with_capacity(wanted);
        while matches.len() < wanted {
            let least = scans
                .iter()
                .enumerate()
                .filter(|(_, scan)| !scan.done)
                .min_by_key(|(_, scan)| scan.frontier)
                .map(|(index, scan)| (index, scan.frontier));
            while let Some(Reverse(top)) = candidates.peek() {
                let settled = match least {
                    None => true,
                    Some((_, frontier)) => frontier.is_some_and(|f| top.0 <= f),
                };
                if !settled || matches.len() == wanted {
                    break;
                }
                if let Some(Reverse(top)) = candidates.pop() {
                    matches.push(top);
                }
            }
            let Some((shard_index, _)) = least else {
                break;
            };
            if matches.len() == wanted {
                break;
            }
            let scan = &mut scans[shard_index];
            let frontier = &mut scan.frontier;
            let next = lock(&self.shards[shard_index]).walk(
                owner_hash,
                scan.from,
                query.timestamp_from_ms,
                scan.step,
                |shard, key| {
                    let (_, ts, sequence, id_key) = key;
                    let position = ListPosition::new(ts.0, sequence);
                    *frontier = Some(position);
                    let matches = shard.tasks.get(&(id_key, sequence)).is_some_and(|record| {
                        *record.owner == *caller
                            && query.matches(&record.context_id, record.state, ts.0)
                    });
                    if matches {
                        candidates.push(Reverse((position, shard_index, id_key)));
                    }
                },
            );
            match next {
                Some(from) => scan.from = from,
                None => scan.done = true,
            }
            scan.step = (scan.step * 2).min(SCAN_CHUNK);
        }
        let more = matches.len() > query.page_size;
        let page = &matches[..matches.len().min(query.page_size)];
        let total_size = i32::try_from(total).unwrap_or(i32::MAX);
        let next_page_token =
            TaskQuery::next_page_token(page.last().map(|(position, ..)| position), more);
        let mut tasks = Vec::with_capacity(page.len());
        for &(position, shard_index, id_key) in page {
            let sequence = position.sequence;
            let encoded = {
                let shard = lock(&self.shards[shard_index]);
                // A task that vanished between the scan and the read is skipped.
                match shard.tasks.get(&(id_key, sequence)) {
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

    async fn count_for_user(&self, user: &str) -> Result<Option<u64>, StoreError> {
        let mut total = 0;
        for shard in self.shards.iter() {
            total += lock(shard)
                .owners
                .iter()
                .filter(|(caller, _)| caller.user == user)
                .map(|(_, owner)| owner.count(None, None))
                .sum::<u64>();
        }
        Ok(Some(total))
    }

    async fn terminal_before(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<(Caller, String)>, StoreError> {
        let cutoff_ms = cutoff.timestamp_millis();
        // The index is ordered by owner first, so finding the oldest means
        // reading every task: retention runs rarely, one shard lock at a time,
        // and keeps only the `limit` oldest while it reads.
        let mut oldest: std::collections::BinaryHeap<(i64, Box<str>, Arc<Caller>)> =
            std::collections::BinaryHeap::new();
        if limit == 0 {
            return Ok(Vec::new());
        }
        for shard in self.shards.iter() {
            let shard = lock(shard);
            for record in shard.tasks.values() {
                if !record.state.is_terminal() || record.timestamp_ms >= cutoff_ms {
                    continue;
                }
                let entry = (record.timestamp_ms, record.id.clone(), record.owner.clone());
                if oldest.len() < limit {
                    oldest.push(entry);
                } else if oldest.peek().is_some_and(|newest| entry < *newest) {
                    oldest.pop();
                    oldest.push(entry);
                }
            }
        }
        Ok(oldest
            .into_sorted_vec()
            .into_iter()
            .map(|(_, id, owner)| (Caller::clone(&owner), id.into()))
            .collect())
    }

    async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
        let owner_hash = self.hash(caller);
        let id_key = self.key_of(task_id);
        let mut shard = self.shard(id_key);
        let Some(key) = shard.find(id_key, task_id) else {
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
                .remove(&(owner_hash, Reverse(record.timestamp_ms), sequence, id_key));
            if let Some(stats) = shard.owners.get_mut(caller) {
                stats.recount(
                    &record.context_id,
                    self.key_of(&record.context_id),
                    Some(record.state),
                    None,
                );
                if stats.is_empty() {
                    shard.owners.remove(caller);
                }
            }
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

    /// ListTasks' `totalSize` of `caller`'s tasks in `context` with `status`.
    async fn total_size(
        store: &InMemoryTaskStore,
        caller: &Caller,
        context: String,
        status: TaskState,
    ) -> i32 {
        let request = ListTasksRequest {
            context_id: context,
            status,
            page_size: Some(1),
            ..Default::default()
        };
        store.list(caller, &request).await.unwrap().total_size
    }

    /// A store whose ids all have one key, so tests reach the collision paths.
    fn colliding_store() -> InMemoryTaskStore {
        InMemoryTaskStore {
            colliding: true,
            ..InMemoryTaskStore::default()
        }
    }

    /// What reading a stored task gives its messages with no ids of their
    /// own: the task's.
    fn restore_ids(task: &mut Task) {
        let (id, context) = (task.id.clone(), task.context_id.clone());
        let messages = task.history.iter_mut().chain(task.status.message.as_mut());
        for message in messages {
            let message = std::sync::Arc::make_mut(message);
            if message.task_id.is_empty() {
                message.task_id.clone_from(&id);
            }
            if message.context_id.is_empty() {
                message.context_id.clone_from(&context);
            }
        }
    }

    proptest::proptest! {
        // Every task, whatever its parts, metadata and artifacts, reads back as
        // written (messages with no ids of their own read back with the task's).
        #[test]
        fn the_stored_form_round_trips(task in a2a_core::arbitrary::task()) {
            let mut expected = task.clone();
            restore_ids(&mut expected);
            let read = decode(&encode(&task)).unwrap();
            proptest::prop_assert_eq!(read, expected);
        }
    }

    /// Lists every page of `request` for `caller`: the tasks' ids, and the
    /// `totalSize` every page reported.
    async fn list_every_page(
        store: &InMemoryTaskStore,
        caller: &Caller,
        mut request: ListTasksRequest,
    ) -> (Vec<String>, Vec<i32>) {
        let (mut ids, mut totals) = (Vec::new(), Vec::new());
        loop {
            let page = store.list(caller, &request).await.unwrap();
            ids.extend(page.tasks.iter().map(|t| t.id.clone()));
            totals.push(page.total_size);
            if page.next_page_token.is_empty() {
                return (ids, totals);
            }
            request.page_token = page.next_page_token;
        }
    }

    #[tokio::test]
    async fn counts_and_pages_hold_across_writes_and_long_scans() {
        let store = InMemoryTaskStore::new();
        let (alice, bob) = (caller("alice"), caller("bob"));
        // Enough tasks that each shard holds more than one scan chunk.
        let mut expected: Vec<(String, String, TaskState, i64)> = Vec::new();
        for n in 0..20_000i64 {
            let state = if n % 997 == 0 {
                TaskState::Failed
            } else {
                TaskState::Completed
            };
            let context = format!("c{}", n % 5);
            let mut task = task_at(&format!("a{n}"), 1_000 + n, state);
            task.context_id.clone_from(&context);
            store
                .create(&alice, &task, &Cause::event(&event()))
                .await
                .unwrap();
            expected.push((task.id, context, state, 1_000 + n));
        }
        for n in 0..50 {
            let task = task_at(&format!("b{n}"), 5, TaskState::Failed);
            store
                .create(&bob, &task, &Cause::event(&event()))
                .await
                .unwrap();
        }
        // Writes after creation move the counts: a state change, a delete.
        let mut moved = task_at("a10", 1_010, TaskState::Working);
        moved.context_id = "c0".into();
        store
            .update(&alice, &moved, 1, &Cause::event(&event()))
            .await
            .unwrap();
        expected[10].2 = TaskState::Working;
        store.delete(&alice, "a11").await.unwrap();
        expected.remove(11);

        let requests = [
            ListTasksRequest::default(),
            ListTasksRequest {
                context_id: "c3".into(),
                ..Default::default()
            },
            ListTasksRequest {
                status: TaskState::Failed,
                ..Default::default()
            },
            ListTasksRequest {
                status: TaskState::Working,
                context_id: "c0".into(),
                ..Default::default()
            },
            ListTasksRequest {
                status: TaskState::Failed,
                context_id: "c2".into(),
                ..Default::default()
            },
            ListTasksRequest {
                status_timestamp_after: chrono::DateTime::from_timestamp_millis(20_000),
                status: TaskState::Failed,
                ..Default::default()
            },
        ];
        for request in requests {
            let query = TaskQuery::from_request(&request).unwrap();
            let mut want: Vec<_> = expected
                .iter()
                .filter(|(_, context, state, ts)| query.matches(context, *state, *ts))
                .collect();
            want.sort_by_key(|(_, _, _, ts)| Reverse(*ts));
            let want: Vec<String> = want.into_iter().map(|(id, ..)| id.clone()).collect();
            let mut paged = request.clone();
            paged.page_size = Some(100);
            let (ids, totals) = list_every_page(&store, &alice, paged).await;
            assert_eq!(ids, want, "{request:?}");
            let count = i32::try_from(want.len()).unwrap();
            assert!(
                totals.iter().all(|t| *t == count),
                "{request:?}: {totals:?} != {count}"
            );
        }
        assert_eq!(
            store
                .list(&bob, &ListTasksRequest::default())
                .await
                .unwrap()
                .total_size,
            50
        );
    }

    /// Enough contexts that every shard's context map holds thousands while
    /// tasks move and go: each context's count stays its own.
    #[tokio::test]
    async fn context_counts_survive_many_contexts_moving_and_going() {
        let store = InMemoryTaskStore::new();
        let alice = caller("alice");
        let contexts = 2_000;
        for n in 0..contexts * 3 {
            let mut task = task_at(&format!("t{n}"), 1_000 + n, TaskState::Submitted);
            task.context_id = format!("c{}", n % contexts);
            store
                .create(&alice, &task, &Cause::event(&event()))
                .await
                .unwrap();
        }
        // In every context: one task goes on to completed, one is deleted.
        for c in 0..contexts {
            let mut task = task_at(&format!("t{c}"), 9_000_000 + c, TaskState::Completed);
            task.context_id = format!("c{c}");
            store
                .update(&alice, &task, 1, &Cause::event(&event()))
                .await
                .unwrap();
            store
                .delete(&alice, &format!("t{}", c + contexts))
                .await
                .unwrap();
        }
        let total =
            |context: String, status: TaskState| total_size(&store, &alice, context, status);
        for c in (0..contexts).step_by(97) {
            let context = format!("c{c}");
            assert_eq!(total(context.clone(), TaskState::Unspecified).await, 2);
            assert_eq!(total(context.clone(), TaskState::Completed).await, 1);
            assert_eq!(total(context, TaskState::Submitted).await, 1);
        }
        assert_eq!(total("nowhere".into(), TaskState::Unspecified).await, 0);
        // Each shard holds an entry for each context it has tasks of.
        let entries = || -> usize {
            store
                .shards
                .iter()
                .filter_map(|shard| lock(shard).owners.get(&alice).map(|o| o.by_context.len()))
                .sum()
        };
        let before = entries();
        // Every context has two tasks left; each counts once per shard.
        assert!(
            (2_000..=4_000).contains(&before),
            "{before} context entries"
        );
        // A context whose tasks are all gone is forgotten (its entry goes in
        // each shard that held one of them), then counted anew.
        let last = [format!("t{}", 5), format!("t{}", 5 + 2 * contexts)];
        let shards_of_c5: std::collections::BTreeSet<usize> = last
            .iter()
            .map(|id| shard_index(store.key_of(id)))
            .collect();
        for id in &last {
            store.delete(&alice, id).await.unwrap();
        }
        assert_eq!(entries(), before - shards_of_c5.len());
        assert_eq!(total("c5".into(), TaskState::Unspecified).await, 0);
        let mut again = task_at("again", 1, TaskState::Working);
        again.context_id = "c5".into();
        store
            .create(&alice, &again, &Cause::event(&event()))
            .await
            .unwrap();
        assert_eq!(total("c5".into(), TaskState::Working).await, 1);
    }

    #[test]
    fn time_ordered_ids_are_keyed_by_their_time_and_spread_over_the_shards() {
        let store = InMemoryTaskStore::new();
        let at = |millis: u64, rest: &str| {
            format!("{:08x}-{:04x}-7{rest}", millis >> 16, millis & 0xFFFF)
        };
        let millis = 0x0193_a2b4_5c6d;
        assert_eq!(
            uuid_v7_millis(&at(millis, "abc-8def-0123456789ab")),
            Some(millis)
        );
        assert_eq!(
            uuid_v7_millis(&at(millis, "ABC-8DEF-0123456789AB").to_uppercase()),
            Some(millis)
        );
        // Other versions, other shapes: no time.
        for id in [
            "0193a2b4-5c6d-4abc-8def-0123456789ab",
            "0193a2b4-5c6d-",
            "t1",
            "",
            "0193a2b4x5c6d-7abc",
            "0193a2g4-5c6d-7abc-8def-0123456789ab",
        ] {
            assert_eq!(uuid_v7_millis(id), None, "{id}");
        }
        // A later millisecond sorts before an earlier one, whatever the hash.
        for n in 0..100 {
            let earlier = store.key_of(&at(millis, &format!("{n:03x}-8def-0123456789ab")));
            let later = store.key_of(&at(millis + 1, &format!("{n:03x}-8def-0123456789ab")));
            assert!(later < earlier);
        }
        // Ids of one millisecond differ only in their random part: their keys
        // come from the keyed hash, so they spread over every shard and
        // nearly never collide.
        let ids: Vec<String> = (0..1_000)
            .map(|n| at(millis, &format!("abc-8def-{n:012x}")))
            .collect();
        let keys: std::collections::BTreeSet<u64> = ids.iter().map(|id| store.key_of(id)).collect();
        assert!(keys.len() > 980, "{} distinct keys", keys.len());
        let shards: std::collections::BTreeSet<usize> =
            keys.iter().map(|key| shard_index(*key)).collect();
        assert_eq!(shards.len(), SHARDS);
        // The ids the SDK makes are keyed by their time.
        let made = a2a_core::new_id();
        assert!(uuid_v7_millis(&made).is_some(), "{made}");
    }

    #[tokio::test]
    async fn time_ordered_ids_whose_keys_collide_stay_apart() {
        // 70,000 ids of one millisecond: 16 bits of hash cannot tell them
        // all apart, so some keys are shared, and every task is still found
        // as itself.
        let store = InMemoryTaskStore::new();
        let alice = caller("alice");
        let ids: Vec<String> = (0..70_000u64)
            .map(|n| format!("0193a2b4-5c6d-7abc-8def-{n:012x}"))
            .collect();
        let keys: std::collections::HashSet<u64> = ids.iter().map(|id| store.key_of(id)).collect();
        assert!(keys.len() < ids.len());
        for (n, id) in ids.iter().enumerate() {
            let state = if n % 2 == 0 {
                TaskState::Working
            } else {
                TaskState::Completed
            };
            store
                .create(&alice, &task_at(id, 1, state), &Cause::event(&event()))
                .await
                .unwrap();
        }
        for (n, id) in ids.iter().enumerate() {
            let stored = store.get(&alice, id).await.unwrap();
            assert_eq!(stored.task.id, *id);
            let state = if n % 2 == 0 {
                TaskState::Working
            } else {
                TaskState::Completed
            };
            assert_eq!(stored.task.status.state, state);
        }
        assert!(matches!(
            store
                .create(
                    &alice,
                    &task_at(&ids[7], 1, TaskState::Working),
                    &Cause::event(&event())
                )
                .await,
            Err(StoreError::AlreadyExists(_))
        ));
        assert_eq!(store.len(), ids.len());
    }

    #[tokio::test]
    async fn contexts_whose_keys_collide_are_counted_apart() {
        let store = colliding_store();
        let alice = caller("alice");
        let in_context = |id: &str, context: &str, state| {
            let mut task = task_at(id, 10, state);
            task.context_id = context.into();
            task
        };
        for (id, context, state) in [
            ("a", "x", TaskState::Submitted),
            ("b", "y", TaskState::Submitted),
            ("c", "x", TaskState::Working),
        ] {
            store
                .create(
                    &alice,
                    &in_context(id, context, state),
                    &Cause::event(&event()),
                )
                .await
                .unwrap();
        }
        store
            .update(
                &alice,
                &in_context("b", "y", TaskState::Completed),
                1,
                &Cause::event(&event()),
            )
            .await
            .unwrap();
        store.delete(&alice, "a").await.unwrap();
        let total =
            |context: &str, status: TaskState| total_size(&store, &alice, context.into(), status);
        assert_eq!(total("x", TaskState::Unspecified).await, 1);
        assert_eq!(total("x", TaskState::Working).await, 1);
        assert_eq!(total("x", TaskState::Submitted).await, 0);
        assert_eq!(total("y", TaskState::Unspecified).await, 1);
        assert_eq!(total("y", TaskState::Completed).await, 1);
        assert_eq!(total("z", TaskState::Unspecified).await, 0);
        let contexts = || {
            lock(&store.shards[shard_index(7)])
                .owners
                .get(&alice)
                .map_or(0, |owner| owner.by_context.len())
        };
        assert_eq!(contexts(), 2);
        // The last task of `x` goes, and its counts with it.
        store.delete(&alice, "c").await.unwrap();
        assert_eq!(contexts(), 1);
        assert_eq!(total("x", TaskState::Unspecified).await, 0);
        assert_eq!(total("y", TaskState::Unspecified).await, 1);
    }

    #[tokio::test]
    async fn ids_that_hash_alike_stay_apart() {
        let store = colliding_store();
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
