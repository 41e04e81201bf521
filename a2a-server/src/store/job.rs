//! `JobStore`: durable records of executions (jobs), one per task, so work
//! accepted before a crash or a restart is found and resumed or failed.
//!
//! Every time comes from the caller, never from the store's own clock, so the
//! execution layer decides what "now" is (and tests can run on a paused clock).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::error::StoreError;
use crate::Caller;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Accepted and not running: waits to be claimed by a node.
    Pending,
    /// Running on its node, which keeps its heartbeat fresh.
    Running,
    /// Ended normally.
    Completed,
    /// Ended by an error.
    Failed,
    /// Given up: its node stopped without finishing it.
    Abandoned,
    /// Ended because its task was canceled (by a client's CancelTask, or by
    /// the agent itself).
    Canceled,
}

impl JobState {
    /// Every state, in life order.
    pub const ALL: [JobState; 6] = [
        JobState::Pending,
        JobState::Running,
        JobState::Completed,
        JobState::Failed,
        JobState::Abandoned,
        JobState::Canceled,
    ];

    /// The states of a job that has ended. Stores build their queries of
    /// finished jobs from this list (and test that they do), so a state
    /// added here is never mistaken for running work.
    pub const FINISHED: [JobState; 4] = [
        JobState::Completed,
        JobState::Failed,
        JobState::Abandoned,
        JobState::Canceled,
    ];

    /// Whether the job has ended (completed, failed, abandoned or canceled).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Abandoned | JobState::Canceled
        )
    }

    /// The state's name as stored and shown: `PENDING`, `RUNNING`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Abandoned => "ABANDONED",
            JobState::Canceled => "CANCELED",
        }
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for JobState {
    type Err = StoreError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| StoreError::Invalid(format!("unknown job state {name:?}")))
    }
}

/// A durable record of one execution of an agent on a task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Job {
    /// The task the job runs (the key: one job per task).
    pub task_id: String,
    /// Who asked for it.
    pub owner: Caller,
    /// Where it is in its life.
    pub state: JobState,
    /// The process that runs or last ran it.
    pub node: String,
    /// When its node last said it was alive.
    pub heartbeat: DateTime<Utc>,
    /// How many times it was started (1 when recorded).
    pub attempts: u32,
    /// The request to run, as JSON owned by the execution layer.
    pub request: String,
    /// Why it ended, when it did not complete (failed, abandoned, canceled).
    pub reason: Option<String>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// When its state last changed.
    pub updated_at: DateTime<Utc>,
}

impl Job {
    /// A job freshly recorded from `new`: RUNNING, first attempt.
    pub fn recorded(new: &NewJob<'_>) -> Self {
        Job {
            task_id: new.task_id.to_owned(),
            owner: new.owner.clone(),
            state: JobState::Running,
            node: new.node.to_owned(),
            heartbeat: new.at,
            attempts: 1,
            request: new.request.to_owned(),
            reason: None,
            created_at: new.at,
            updated_at: new.at,
        }
    }

    /// Where this job is in an operator listing (for [`JobFilter::after`]).
    pub fn cursor(&self) -> JobCursor {
        JobCursor {
            updated_at: self.updated_at,
            task_id: self.task_id.clone(),
        }
    }
}

/// A new execution to record.
#[derive(Debug, Clone, Copy)]
pub struct NewJob<'a> {
    /// The task it runs.
    pub task_id: &'a str,
    /// Who asked for it.
    pub owner: &'a Caller,
    /// The process that runs it.
    pub node: &'a str,
    /// The request to run, as JSON owned by the execution layer.
    pub request: &'a str,
    /// Now.
    pub at: DateTime<Utc>,
}

/// What a recovery pass found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Jobs whose node stopped long ago, now ABANDONED (their tasks are to be failed).
    pub abandoned: Vec<Job>,
    /// Every PENDING job, oldest first: to be claimed and resumed.
    pub pending: Vec<Job>,
}

/// One lease pass of a cluster node: which RUNNING jobs count as orphaned.
///
/// In cluster mode a RUNNING job is its node's lease, kept alive by the node's
/// heartbeats. A node that stops heartbeating loses its jobs to the others
/// once `expired_before` passes its last heartbeat.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LeasePass<'a> {
    /// RUNNING jobs whose heartbeat is older than this lost their lease:
    /// they become PENDING, for any node to claim.
    pub expired_before: DateTime<Utc>,
    /// RUNNING jobs whose heartbeat is older than this (far older than the
    /// lease) become ABANDONED instead, as in [`JobStore::recover`].
    pub stale_before: DateTime<Utc>,
    /// A node starting again under its old name: its RUNNING jobs are
    /// orphans whatever their heartbeat (the process that ran them is gone).
    pub restarted: Option<&'a str>,
    /// Now.
    pub at: DateTime<Utc>,
    /// At most this many PENDING jobs are returned (oldest first).
    pub limit: usize,
}

impl<'a> LeasePass<'a> {
    /// A pass at `at` with the given lease timeout and stale limit.
    pub fn new(at: DateTime<Utc>, lease: chrono::Duration, stale: chrono::Duration) -> Self {
        LeasePass {
            expired_before: at
                .checked_sub_signed(lease)
                .unwrap_or(DateTime::<Utc>::MIN_UTC),
            stale_before: at
                .checked_sub_signed(stale)
                .unwrap_or(DateTime::<Utc>::MIN_UTC),
            restarted: None,
            at,
            limit: 1000,
        }
    }

    /// The pass of a server that is the only one on its store, at its start:
    /// every RUNNING job is an orphan of the process before it
    /// ([`JobStore::recover`]).
    pub fn all_orphaned(stale_before: DateTime<Utc>, at: DateTime<Utc>) -> Self {
        LeasePass {
            expired_before: DateTime::<Utc>::MAX_UTC,
            stale_before,
            restarted: None,
            at,
            limit: usize::MAX,
        }
    }

    /// The same pass, for node `node` coming back under its old name.
    #[must_use]
    pub fn restarted(mut self, node: &'a str) -> Self {
        self.restarted = Some(node);
        self
    }

    /// The same pass, returning at most `limit` PENDING jobs.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// What the pass does to a RUNNING job: `Some(Abandoned)`, `Some(Pending)`,
    /// or `None` (its lease holds).
    pub fn verdict(&self, job: &Job) -> Option<JobState> {
        if job.state != JobState::Running {
            return None;
        }
        if job.heartbeat < self.stale_before {
            Some(JobState::Abandoned)
        } else if job.heartbeat < self.expired_before || self.restarted == Some(&*job.node) {
            Some(JobState::Pending)
        } else {
            None
        }
    }
}

/// A position in an operator listing: the last job of the previous page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobCursor {
    /// That job's `updated_at`.
    pub updated_at: DateTime<Utc>,
    /// That job's task id.
    pub task_id: String,
}

impl JobCursor {
    /// Whether a job with these keys comes after the cursor in listing order
    /// (newest update first, then task id descending).
    pub fn precedes(&self, updated_at: DateTime<Utc>, task_id: &str) -> bool {
        updated_at < self.updated_at || (updated_at == self.updated_at && task_id < &*self.task_id)
    }
}

/// Which jobs an operator listing shows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobFilter {
    /// Only jobs in this state.
    pub state: Option<JobState>,
    /// At most this many.
    pub limit: usize,
    /// Only jobs after this one (the next page).
    pub after: Option<JobCursor>,
}

impl JobFilter {
    /// The newest `limit` jobs in any state.
    pub fn new(limit: usize) -> Self {
        JobFilter {
            state: None,
            limit,
            after: None,
        }
    }

    /// Only jobs in `state`.
    #[must_use]
    pub fn state(mut self, state: JobState) -> Self {
        self.state = Some(state);
        self
    }

    /// The page after `cursor`.
    #[must_use]
    pub fn after(mut self, cursor: JobCursor) -> Self {
        self.after = Some(cursor);
        self
    }

    /// Whether `job` passes the filter (not the limit).
    pub fn matches(&self, job: &Job) -> bool {
        self.state.is_none_or(|s| s == job.state)
            && self
                .after
                .as_ref()
                .is_none_or(|c| c.precedes(job.updated_at, &job.task_id))
    }
}

/// The reason recovery gives an abandoned job.
pub const ABANDONED_REASON: &str =
    "the process running this task stopped and did not come back in time";

/// The reason a canceled job is given when its task's cancel said no more.
pub const CANCELED_REASON: &str = "the task was canceled";

/// Durable records of executions; the execution layer is its only writer.
#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Records an execution as RUNNING on its node. Replaces a finished job of
    /// the same task (a follow-up turn); an unfinished one is
    /// [`StoreError::AlreadyExists`].
    async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError>;

    /// Refreshes the heartbeat of every RUNNING job of `node` at once, and,
    /// on a store that keeps a push outbox, of `node`'s finished jobs whose
    /// pushes it still sends (see [`JobStore::take_over_deliveries`]).
    /// Returns how many RUNNING jobs.
    async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Ends a job: `state` is one of [`JobState::FINISHED`] (anything else is
    /// [`StoreError::Invalid`]); a missing job is [`StoreError::NotFound`].
    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Ends a job as [`JobStore::finish`] does and moves it to `node`, its
    /// lease renewed at `at`: a node that writes a task's last event without
    /// running its execution (a cancel of a task waiting for input) sends
    /// that event's pushes, so the job's lease must be its own while it
    /// does (see [`JobStore::take_over_deliveries`]): were the lease left
    /// with a live node that never heard of the event, no node would send
    /// it once the writer died.
    ///
    /// The default ignores `node`: a store without a push outbox owes no
    /// pushes to anyone.
    async fn finish_on(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
        node: &str,
    ) -> Result<(), StoreError> {
        let _ = node;
        self.finish(task_id, state, reason, at).await
    }

    /// Recovery after a restart: RUNNING jobs whose heartbeat is older than
    /// `stale_before` become ABANDONED (with [`ABANDONED_REASON`]); the other
    /// RUNNING jobs become PENDING. Returns the abandoned jobs and every
    /// PENDING job afterwards (also those a clean shutdown left), oldest first.
    async fn recover(
        &self,
        stale_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<Recovered, StoreError>;

    /// Cluster mode's lease pass, in one transaction: RUNNING jobs past the
    /// stale limit become ABANDONED (with [`ABANDONED_REASON`]); RUNNING jobs
    /// whose lease expired, or whose node restarted, become PENDING; see
    /// [`LeasePass::verdict`]. Returns the abandoned jobs and up to
    /// `pass.limit` PENDING jobs, oldest first. Leases held by live nodes are
    /// never touched, so every node of a cluster may run it at any time.
    ///
    /// The default answers [`StoreError::Unsupported`]: a store only one
    /// process can open has no cluster.
    async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
        let _ = pass;
        Err(StoreError::Unsupported("cluster leases"))
    }

    /// Cluster mode's sweep of pushes a dead node still owed: finished jobs
    /// whose task's push outbox ([`crate::store::PushConfigStore::undelivered`])
    /// still holds events and whose lease expired (or, after a restart, that
    /// were `pass.restarted`'s) move to `node`, heartbeat `pass.at`; returns
    /// them (at most `pass.limit`). While a node sends a finished task's
    /// owed pushes, its [`JobStore::heartbeat`] keeps that job's lease, so a
    /// live node's deliveries are never taken; two nodes sweeping at once
    /// cannot both take a job.
    ///
    /// The default takes nothing: a store without an outbox owes no pushes.
    async fn take_over_deliveries(
        &self,
        pass: &LeasePass<'_>,
        node: &str,
    ) -> Result<Vec<Job>, StoreError> {
        let _ = (pass, node);
        Ok(Vec::new())
    }

    /// PENDING becomes RUNNING on `node`, one more attempt, heartbeat `at`.
    /// Returns false (and changes nothing) when the job was not pending; two
    /// nodes claiming at once cannot both win.
    async fn claim(&self, task_id: &str, node: &str, at: DateTime<Utc>)
    -> Result<bool, StoreError>;

    /// RUNNING becomes PENDING (a graceful shutdown leaves the work resumable);
    /// any other job is left as it is.
    async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError>;

    /// One job.
    async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError>;

    /// Operator listing: newest update first (ties by task id, descending),
    /// paged by [`JobFilter::after`].
    async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError>;

    /// Finished jobs last updated before `cutoff`, oldest first, at most `limit`
    /// (for retention).
    async fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError>;

    /// Deletes a job (idempotent).
    async fn remove(&self, task_id: &str) -> Result<(), StoreError>;
}

const SHARDS: usize = 16;

/// A job store in process memory (jobs do not outlive the process, so it only
/// serves tests and throwaway servers). Cheap to clone; clones share the data.
#[derive(Debug, Clone)]
pub struct InMemoryJobStore {
    shards: Arc<[Mutex<HashMap<String, Job>>]>,
    hasher: foldhash::fast::RandomState,
}

impl Default for InMemoryJobStore {
    fn default() -> Self {
        InMemoryJobStore {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl InMemoryJobStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryJobStore::default()
    }

    fn shard(&self, task_id: &str) -> MutexGuard<'_, HashMap<String, Job>> {
        let index = usize::try_from(self.hasher.hash_one(task_id) % SHARDS as u64).unwrap_or(0);
        lock(&self.shards[index])
    }

    /// Every job passing `keep`, from all shards.
    fn collect(&self, mut keep: impl FnMut(&Job) -> bool) -> Vec<Job> {
        let mut jobs = Vec::new();
        for shard in self.shards.iter() {
            jobs.extend(lock(shard).values().filter(|job| keep(job)).cloned());
        }
        jobs
    }
}

/// Job records are always left whole, so a poisoned lock is still consistent.
fn lock(shard: &Mutex<HashMap<String, Job>>) -> MutexGuard<'_, HashMap<String, Job>> {
    shard
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl JobStore for InMemoryJobStore {
    async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
        let mut shard = self.shard(job.task_id);
        if shard
            .get(job.task_id)
            .is_some_and(|existing| !existing.state.is_finished())
        {
            return Err(StoreError::AlreadyExists(job.task_id.to_owned()));
        }
        shard.insert(job.task_id.to_owned(), Job::recorded(job));
        Ok(())
    }

    async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut count = 0;
        for shard in self.shards.iter() {
            for job in lock(shard).values_mut() {
                if job.state == JobState::Running && job.node == node {
                    job.heartbeat = at;
                    count += 1;
                }
            }
        }
        Ok(count)
    }

    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if !state.is_finished() {
            return Err(StoreError::Invalid(format!(
                "a job cannot finish as {state}"
            )));
        }
        let mut shard = self.shard(task_id);
        let job = shard
            .get_mut(task_id)
            .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        job.state = state;
        job.reason = reason.map(str::to_owned);
        job.updated_at = at;
        Ok(())
    }

    async fn recover(
        &self,
        stale_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<Recovered, StoreError> {
        self.take_over(&LeasePass::all_orphaned(stale_before, at))
            .await
    }

    async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
        let mut recovered = Recovered::default();
        for shard in self.shards.iter() {
            for job in lock(shard).values_mut() {
                match pass.verdict(job) {
                    Some(JobState::Abandoned) => {
                        job.state = JobState::Abandoned;
                        job.reason = Some(ABANDONED_REASON.to_owned());
                        job.updated_at = pass.at;
                        recovered.abandoned.push(job.clone());
                    }
                    Some(_) => {
                        job.state = JobState::Pending;
                        job.updated_at = pass.at;
                        recovered.pending.push(job.clone());
                    }
                    None if job.state == JobState::Pending => recovered.pending.push(job.clone()),
                    None => {}
                }
            }
        }
        let order = |a: &Job, b: &Job| (a.created_at, &a.task_id).cmp(&(b.created_at, &b.task_id));
        recovered.abandoned.sort_by(order);
        recovered.pending.sort_by(order);
        recovered.pending.truncate(pass.limit);
        Ok(recovered)
    }

    async fn claim(
        &self,
        task_id: &str,
        node: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut shard = self.shard(task_id);
        match shard.get_mut(task_id) {
            Some(job) if job.state == JobState::Pending => {
                job.state = JobState::Running;
                node.clone_into(&mut job.node);
                job.attempts = job.attempts.saturating_add(1);
                job.heartbeat = at;
                job.updated_at = at;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        let mut shard = self.shard(task_id);
        if let Some(job) = shard.get_mut(task_id) {
            if job.state == JobState::Running {
                job.state = JobState::Pending;
                job.updated_at = at;
            }
        }
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
        Ok(self.shard(task_id).get(task_id).cloned())
    }

    async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        let mut jobs = self.collect(|job| filter.matches(job));
        jobs.sort_by(|a, b| (b.updated_at, &b.task_id).cmp(&(a.updated_at, &a.task_id)));
        jobs.truncate(filter.limit);
        Ok(jobs)
    }

    async fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError> {
        let mut jobs = self.collect(|job| job.state.is_finished() && job.updated_at < cutoff);
        jobs.sort_by(|a, b| (a.updated_at, &a.task_id).cmp(&(b.updated_at, &b.task_id)));
        jobs.truncate(limit);
        Ok(jobs)
    }

    async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
        self.shard(task_id).remove(task_id);
        Ok(())
    }
}
