//! A failing store never strands work or lies about it (issue 31, finding 5):
//! injected store failures on the handler, with a task store that records
//! jobs in its own writes (as the SQL stores do). Writes are retried with
//! backoff; callers of a task whose writes fail get `Unavailable` with the
//! store's reason (never "task not found", never "invalid response"); the
//! job of a task whose final write fails is released (PENDING, not RUNNING
//! under a live heartbeat) and resumed once the store takes writes again.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    A2aError, AgentCard, ErrorKind, GetTaskRequest, Method, SendMessageResponse, Task, TaskState,
};
use a2a_server::store::{
    Cause, InMemoryJobStore, InMemoryTaskStore, Job, JobFilter, JobState, JobStore, JobWrite,
    LeasePass, NewJob, Recovered, StoreError, StoredTask, TaskStore, Version,
};
use a2a_server::{
    AgentExecutor, CallContext, Caller, DefaultRequestHandler, EventQueue, ExecutionConfig,
    JobConfig, RequestContext, RequestHandler, ServiceParams,
};
use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use support::*;
use tokio::sync::Notify;

/// What the injected faults say, as SQLite says it on a full disk.
const FULL: &str = "database or disk is full (injected)";

/// Switches for the injected faults.
#[derive(Default)]
struct Faults {
    /// Every task write fails.
    tasks_down: AtomicBool,
    /// Every job write fails (heartbeats, releases, claims, finishes).
    jobs_down: AtomicBool,
    /// The next this many task updates fail, then writes succeed (a busy
    /// database: a lock held past the busy timeout, then released).
    busy_updates: AtomicUsize,
}

impl Faults {
    fn down(&self, down: bool) {
        self.tasks_down.store(down, Ordering::SeqCst);
        self.jobs_down.store(down, Ordering::SeqCst);
    }

    fn task_write(&self) -> Result<(), StoreError> {
        match self.tasks_down.load(Ordering::SeqCst) {
            true => Err(StoreError::Backend(FULL.into())),
            false => Ok(()),
        }
    }

    fn task_update(&self) -> Result<(), StoreError> {
        self.task_write()?;
        let busy = self
            .busy_updates
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        match busy {
            Ok(_) => Err(StoreError::Backend("database is locked (injected)".into())),
            Err(_) => Ok(()),
        }
    }

    fn job_write(&self) -> Result<(), StoreError> {
        match self.jobs_down.load(Ordering::SeqCst) {
            true => Err(StoreError::Backend(FULL.into())),
            false => Ok(()),
        }
    }
}

/// A task store that records job changes with its task writes (as the SQL
/// stores do in one transaction), failing when told to.
struct FaultyTasks {
    tasks: InMemoryTaskStore,
    jobs: InMemoryJobStore,
    faults: Arc<Faults>,
}

impl FaultyTasks {
    async fn apply_job(&self, task_id: &str, cause: &Cause<'_>) -> Result<(), StoreError> {
        let Some(change) = cause.job else {
            return Ok(());
        };
        match change {
            JobWrite::Record(job) => self.jobs.record(job).await,
            JobWrite::RecordFinished { job, state, reason } => {
                self.jobs.record(job).await?;
                self.jobs.finish(task_id, state, reason, job.at).await
            }
            JobWrite::Finish { state, reason, at } => {
                self.jobs.finish(task_id, state, reason, at).await
            }
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for FaultyTasks {
    async fn create(
        &self,
        caller: &Caller,
        task: &Task,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        self.faults.task_write()?;
        let version = self.tasks.create(caller, task, cause).await?;
        self.apply_job(&task.id, cause).await?;
        Ok(version)
    }

    async fn update(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        self.faults.task_update()?;
        let version = self.tasks.update(caller, task, expected, cause).await?;
        self.apply_job(&task.id, cause).await?;
        Ok(version)
    }

    async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError> {
        self.tasks.get(caller, task_id).await
    }

    async fn list(
        &self,
        caller: &Caller,
        request: &a2a_core::ListTasksRequest,
    ) -> Result<a2a_core::ListTasksResponse, StoreError> {
        self.tasks.list(caller, request).await
    }

    async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
        self.tasks.delete(caller, task_id).await
    }

    fn writes_jobs(&self) -> bool {
        true
    }
}

/// The job store, failing its writes when told to.
struct FaultyJobs {
    jobs: InMemoryJobStore,
    faults: Arc<Faults>,
}

#[async_trait::async_trait]
impl JobStore for FaultyJobs {
    async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
        self.faults.job_write()?;
        self.jobs.record(job).await
    }

    async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError> {
        self.faults.job_write()?;
        self.jobs.heartbeat(node, at).await
    }

    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.faults.job_write()?;
        self.jobs.finish(task_id, state, reason, at).await
    }

    async fn recover(
        &self,
        stale_before: DateTime<Utc>,
        at: DateTime<Utc>,
    ) -> Result<Recovered, StoreError> {
        self.faults.job_write()?;
        self.jobs.recover(stale_before, at).await
    }

    async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
        self.faults.job_write()?;
        self.jobs.take_over(pass).await
    }

    async fn claim(
        &self,
        task_id: &str,
        node: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.faults.job_write()?;
        self.jobs.claim(task_id, node, at).await
    }

    async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        self.faults.job_write()?;
        self.jobs.release(task_id, at).await
    }

    async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
        self.jobs.get(task_id).await
    }

    async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        self.jobs.list(filter).await
    }

    async fn finished_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError> {
        self.jobs.finished_before(cutoff, limit).await
    }

    async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
        self.faults.job_write()?;
        self.jobs.remove(task_id).await
    }
}

/// Says WORKING, waits for `go` on its first run (when `hold` is set), then
/// completes. Counts its runs and remembers its task.
#[derive(Clone, Default)]
struct Held {
    hold: Arc<AtomicBool>,
    go: Arc<Notify>,
    reached_hold: Arc<Notify>,
    runs: Arc<AtomicUsize>,
    task_id: Arc<Mutex<Option<String>>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Held {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        *self.task_id.lock().unwrap() = Some(events.task_id().to_owned());
        events.working().await?;
        if self.hold.swap(false, Ordering::SeqCst) {
            self.reached_hold.notify_one();
            self.go.notified().await;
        }
        events.complete_with_text("done").await
    }
}

struct Rig {
    handler: DefaultRequestHandler,
    jobs: InMemoryJobStore,
    faults: Arc<Faults>,
    agent: Held,
}

fn rig() -> Rig {
    let faults = Arc::new(Faults::default());
    let jobs = InMemoryJobStore::new();
    let agent = Held::default();
    let mut limits = ExecutionConfig::default();
    limits.store_retry = Duration::from_secs(5);
    let handler = DefaultRequestHandler::builder(
        agent.clone(),
        AgentCard::new("held", "holds its task").with_streaming(true),
    )
    .task_store(FaultyTasks {
        tasks: InMemoryTaskStore::new(),
        jobs: jobs.clone(),
        faults: faults.clone(),
    })
    .job_store(FaultyJobs {
        jobs: jobs.clone(),
        faults: faults.clone(),
    })
    .job_config(JobConfig::default())
    .execution_config(limits)
    .build();
    Rig {
        handler,
        jobs,
        faults,
        agent,
    }
}

fn ctx() -> CallContext {
    CallContext::new(Method::SendMessage, ServiceParams::new())
}

async fn get(handler: &DefaultRequestHandler, id: &str) -> Task {
    let request = GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    handler.get_task(&ctx(), request).await.unwrap()
}

fn assert_unavailable(err: &A2aError, reason: &str) {
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.message().contains(reason), "the real reason: {err}");
    assert!(err.retry_after().is_some(), "with when to retry: {err:?}");
}

/// Every way of sending a new task, while the store cannot take its first
/// write: each caller hears the store is unavailable and why, none that the
/// task it never learned of is "not found", and no job is left behind.
#[tokio::test(start_paused = true)]
async fn a_new_task_that_cannot_be_stored_is_unavailable_not_not_found() {
    let rig = rig();
    rig.faults.down(true);

    let blocking = rig.handler.send_message(&ctx(), request("hi")).await;
    assert_unavailable(&blocking.unwrap_err(), FULL);

    let immediate = rig.handler.send_message(&ctx(), immediate("hi")).await;
    assert_unavailable(&immediate.unwrap_err(), FULL);

    let streamed = match rig
        .handler
        .send_streaming_message(&ctx(), request("hi"))
        .await
    {
        Ok(stream) => stream.collect::<Vec<_>>().await,
        Err(err) => vec![Err(err)],
    };
    let last = streamed.last().expect("the stream says something");
    assert_unavailable(last.as_ref().unwrap_err(), FULL);
    assert!(streamed.iter().all(Result::is_err), "{streamed:?}");

    let jobs = rig.jobs.list(&JobFilter::new(10)).await.unwrap();
    assert!(jobs.is_empty(), "nothing recorded: {jobs:?}");
}

/// A busy store (a lock held past the busy timeout, then released) is
/// retried: the task completes, once, and is not failed as an "invalid
/// response".
#[tokio::test(start_paused = true)]
async fn a_busy_store_is_retried_not_a_failure() {
    let rig = rig();
    rig.faults.busy_updates.store(4, Ordering::SeqCst);
    let answer = rig.handler.send_message(&ctx(), request("hi")).await;
    let SendMessageResponse::Task(task) = answer.unwrap() else {
        panic!("a task");
    };
    assert_eq!(
        task.status.state,
        TaskState::Completed,
        "{}",
        status_text(&task)
    );
    assert_eq!(rig.faults.busy_updates.load(Ordering::SeqCst), 0);
    assert_eq!(rig.agent.runs.load(Ordering::SeqCst), 1);
    let job = rig.jobs.get(&task.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
}

/// The disk fills while a task runs (task and job writes fail past the
/// retry window): its blocking caller hears so, with the task's id; the
/// task is not failed; its job is not left RUNNING under this node's
/// heartbeat; once space is back it is released, resumed and completes.
#[tokio::test(start_paused = true)]
async fn a_task_whose_final_write_fails_is_resumed_once_the_store_is_back() {
    let rig = rig();
    rig.agent.hold.store(true, Ordering::SeqCst);
    let handler = Arc::new(rig.handler);
    let call = {
        let handler = handler.clone();
        tokio::spawn(async move { handler.send_message(&ctx(), request("hi")).await })
    };
    rig.agent.reached_hold.notified().await;
    let id = rig.agent.task_id.lock().unwrap().clone().unwrap();
    rig.faults.down(true);
    rig.agent.go.notify_one();

    let err = call.await.unwrap().unwrap_err();
    assert_unavailable(&err, FULL);
    assert!(err.message().contains(&id), "names the task: {err}");
    let stored = get(&handler, &id).await;
    assert_eq!(stored.status.state, TaskState::Working, "not failed");

    // Down for two minutes: heartbeats fail, nothing is lost or failed.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(get(&handler, &id).await.status.state, TaskState::Working);

    rig.faults.down(false);
    let done = until_terminal(&handler, &ctx(), &id).await;
    assert_eq!(
        done.status.state,
        TaskState::Completed,
        "{}",
        status_text(&done)
    );
    assert_eq!(rig.agent.runs.load(Ordering::SeqCst), 2, "resumed once");
    let job = rig.jobs.get(&id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
}

/// Only task writes fail (the jobs table still takes writes): the job is
/// released at once, PENDING rather than RUNNING, and no heartbeat makes
/// it look alive; the maintenance loop resumes it when writes work again.
#[tokio::test(start_paused = true)]
async fn a_stopped_execution_leaves_its_job_pending_not_running() {
    let rig = rig();
    rig.agent.hold.store(true, Ordering::SeqCst);
    let handler = Arc::new(rig.handler);
    let call = {
        let handler = handler.clone();
        tokio::spawn(async move { handler.send_message(&ctx(), request("hi")).await })
    };
    rig.agent.reached_hold.notified().await;
    let id = rig.agent.task_id.lock().unwrap().clone().unwrap();
    rig.faults.tasks_down.store(true, Ordering::SeqCst);
    rig.agent.go.notify_one();

    let err = call.await.unwrap().unwrap_err();
    assert_unavailable(&err, FULL);
    let job = rig.jobs.get(&id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Pending, "released, not left RUNNING");

    rig.faults.tasks_down.store(false, Ordering::SeqCst);
    let done = until_terminal(&handler, &ctx(), &id).await;
    assert_eq!(
        done.status.state,
        TaskState::Completed,
        "{}",
        status_text(&done)
    );
    let job = rig.jobs.get(&id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
}
