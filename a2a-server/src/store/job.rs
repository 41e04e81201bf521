//! `JobStore`: durable records of executions (scratch; replaced by the store suite work).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::task::StoreError;
use crate::Caller;

/// Where an execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Accepted, not running.
    Pending,
    /// Running on a node.
    Running,
    /// Ended.
    Completed,
    /// Ended with a failure.
    Failed,
    /// Its node died too long ago.
    Abandoned,
}

impl JobState {
    /// Completed, failed or abandoned.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Abandoned
        )
    }
}

/// A job record.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Job {
    /// Task.
    pub task_id: String,
    /// Owner.
    pub owner: Caller,
    /// State.
    pub state: JobState,
    /// Node.
    pub node: String,
    /// Heartbeat.
    pub heartbeat: DateTime<Utc>,
    /// Starts.
    pub attempts: u32,
    /// Request JSON.
    pub request: String,
    /// Reason.
    pub reason: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Updated.
    pub updated_at: DateTime<Utc>,
}

/// A new job.
#[derive(Debug, Clone, Copy)]
pub struct NewJob<'a> {
    /// Task.
    pub task_id: &'a str,
    /// Owner.
    pub owner: &'a Caller,
    /// Node.
    pub node: &'a str,
    /// Request JSON.
    pub request: &'a str,
    /// Now.
    pub at: DateTime<Utc>,
}

/// Recovery outcome.
#[derive(Debug, Clone, Default)]
pub struct Recovered {
    /// Abandoned now.
    pub abandoned: Vec<Job>,
    /// Pending now.
    pub pending: Vec<Job>,
}

/// Listing filter.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// State.
    pub state: Option<JobState>,
    /// Most.
    pub limit: usize,
}

/// Job persistence.
#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Records a RUNNING job.
    async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError>;
    /// Heartbeat.
    async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError>;
    /// Finish.
    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Recover.
    async fn recover(
        &self,
        node: &str,
        stale_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<Recovered, StoreError>;
    /// Claim.
    async fn claim(&self, task_id: &str, node: &str, at: DateTime<Utc>)
    -> Result<bool, StoreError>;
    /// Release.
    async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError>;
    /// Get.
    async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError>;
    /// List.
    async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError>;
    /// Finished before.
    async fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError>;
    /// Remove.
    async fn remove(&self, task_id: &str) -> Result<(), StoreError>;
}

/// In memory.
#[derive(Debug, Clone, Default)]
pub struct InMemoryJobStore {
    jobs: Arc<Mutex<BTreeMap<String, Job>>>,
}

impl InMemoryJobStore {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Job>> {
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl JobStore for InMemoryJobStore {
    async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
        let mut jobs = self.lock();
        if jobs
            .get(job.task_id)
            .is_some_and(|j| !j.state.is_finished())
        {
            return Err(StoreError::AlreadyExists(job.task_id.to_owned()));
        }
        jobs.insert(
            job.task_id.to_owned(),
            Job {
                task_id: job.task_id.to_owned(),
                owner: job.owner.clone(),
                state: JobState::Running,
                node: job.node.to_owned(),
                heartbeat: job.at,
                attempts: 1,
                request: job.request.to_owned(),
                reason: None,
                created_at: job.at,
                updated_at: job.at,
            },
        );
        Ok(())
    }

    async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut n = 0;
        for job in self.lock().values_mut() {
            if job.state == JobState::Running && job.node == node {
                job.heartbeat = at;
                n += 1;
            }
        }
        Ok(n)
    }

    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if let Some(job) = self.lock().get_mut(task_id) {
            job.state = state;
            job.reason = reason.map(str::to_owned);
            job.updated_at = at;
        }
        Ok(())
    }

    async fn recover(
        &self,
        node: &str,
        stale_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<Recovered, StoreError> {
        let mut out = Recovered::default();
        let mut jobs = self.lock();
        for job in jobs.values_mut() {
            if job.state == JobState::Running && job.node != node {
                job.updated_at = at;
                if job.heartbeat < stale_before {
                    job.state = JobState::Abandoned;
                    out.abandoned.push(job.clone());
                } else {
                    job.state = JobState::Pending;
                }
            }
        }
        out.pending = jobs
            .values()
            .filter(|j| j.state == JobState::Pending)
            .cloned()
            .collect();
        out.pending.sort_by_key(|j| j.created_at);
        Ok(out)
    }

    async fn claim(
        &self,
        task_id: &str,
        node: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        match self.lock().get_mut(task_id) {
            Some(job) if job.state == JobState::Pending => {
                job.state = JobState::Running;
                job.node = node.to_owned();
                job.heartbeat = at;
                job.attempts += 1;
                job.updated_at = at;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        if let Some(job) = self.lock().get_mut(task_id) {
            if job.state == JobState::Running {
                job.state = JobState::Pending;
                job.updated_at = at;
            }
        }
        Ok(())
    }

    async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
        Ok(self.lock().get(task_id).cloned())
    }

    async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        Ok(self
            .lock()
            .values()
            .filter(|j| filter.state.is_none_or(|s| j.state == s))
            .take(filter.limit.max(1))
            .cloned()
            .collect())
    }

    async fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError> {
        Ok(self
            .lock()
            .values()
            .filter(|j| j.state.is_finished() && j.updated_at < cutoff)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
        self.lock().remove(task_id);
        Ok(())
    }
}
