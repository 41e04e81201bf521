//! Durable executions on the handler, with stores shared across "restarts":
//! recording, checkpoints, recovery after a crash and after a clean shutdown,
//! the stale limit, heartbeats, retention and cancel of pending work.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    A2aError, AgentCard, Artifact, CancelTaskRequest, GetTaskRequest, Method, SendMessageResponse,
    Task, TaskArtifactUpdateEvent, TaskState,
};
use a2a_server::store::{
    CANCELED_REASON, Cause, Checkpoint, InMemoryJobStore, InMemoryTaskStore, JobState, JobStore,
    JobWrite, Pruned, StoreError, StoredTask, TaskStore, Version,
};
use a2a_server::{
    AgentExecutor, CallContext, Caller, DefaultRequestHandler, EventQueue, JobConfig,
    RequestContext, RequestHandler, ServiceParams,
};
use support::*;
use tokio::sync::Notify;

/// Three turns; each notes its side effect, then stores its artifact with the
/// turn's checkpoint. Turn 2 waits for `go` when `hold` is set.
#[derive(Clone, Default)]
struct Turns {
    effects: Arc<Mutex<Vec<(String, u64)>>>,
    resumed_at: Arc<Mutex<Vec<Option<u64>>>>,
    hold: Arc<Mutex<bool>>,
    go: Arc<Notify>,
    reached_hold: Arc<Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for Turns {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let done = ctx.checkpoint.as_ref().map(|c| c.turn);
        self.resumed_at.lock().unwrap().push(done);
        let task = events.task_id().to_owned();
        for turn in done.unwrap_or(0) + 1..=3 {
            if turn == 2 && *self.hold.lock().unwrap() {
                self.reached_hold.notify_one();
                tokio::select! {
                    () = self.go.notified() => {}
                    () = ctx.cancellation.cancelled() => return Ok(()),
                }
            }
            self.effects.lock().unwrap().push((task.clone(), turn));
            let artifact = Artifact::text(format!("turn {turn}")).with_id(format!("t{turn}"));
            let event = TaskArtifactUpdateEvent::new(task.clone(), events.context_id(), artifact);
            let checkpoint = Checkpoint {
                turn,
                state: vec![u8::try_from(turn).unwrap()],
            };
            events.send_checkpointed(event, checkpoint).await?;
        }
        events.complete_with_text("three turns").await
    }
}

/// In-memory stores; `together` makes the task store write job changes
/// itself (as the SQL stores do, in one transaction), so both ways the
/// execution layer keeps jobs are covered.
#[derive(Clone)]
struct Stores {
    tasks: InMemoryTaskStore,
    jobs: InMemoryJobStore,
    together: bool,
}

impl Stores {
    fn new(together: bool) -> Self {
        Stores {
            tasks: InMemoryTaskStore::new(),
            jobs: InMemoryJobStore::new(),
            together,
        }
    }

    fn handler(
        &self,
        agent: Turns,
        configure: impl FnOnce(&mut JobConfig),
    ) -> DefaultRequestHandler {
        self.limited_handler(agent, configure, None)
    }

    /// A handler that runs at most `max_concurrent` executions at once.
    fn limited_handler(
        &self,
        agent: Turns,
        configure: impl FnOnce(&mut JobConfig),
        max_concurrent: Option<usize>,
    ) -> DefaultRequestHandler {
        let mut config = JobConfig::default();
        configure(&mut config);
        let mut limits = a2a_server::ExecutionConfig::default();
        limits.max_concurrent = max_concurrent;
        DefaultRequestHandler::builder(
            agent,
            AgentCard::new("turns", "three turns").with_streaming(true),
        )
        .task_store(TasksWithJobs {
            tasks: self.tasks.clone(),
            jobs: self.together.then(|| self.jobs.clone()),
        })
        .job_store(self.jobs.clone())
        .job_config(config)
        .execution_config(limits)
        .build()
    }
}

/// A task store that applies a write's job change to a job store after the
/// task write (not atomically: these tests do not crash between the two).
struct TasksWithJobs {
    tasks: InMemoryTaskStore,
    jobs: Option<InMemoryJobStore>,
}

impl TasksWithJobs {
    async fn apply_job(&self, task_id: &str, cause: &Cause<'_>) -> Result<(), StoreError> {
        let (Some(jobs), Some(change)) = (&self.jobs, cause.job) else {
            return Ok(());
        };
        match change {
            JobWrite::Record(job) => jobs.record(job).await,
            JobWrite::RecordFinished { job, state, reason } => {
                jobs.record(job).await?;
                jobs.finish(task_id, state, reason, job.at).await
            }
            JobWrite::Finish { state, reason, at } => jobs.finish(task_id, state, reason, at).await,
        }
    }
}

#[async_trait::async_trait]
impl TaskStore for TasksWithJobs {
    async fn create(
        &self,
        caller: &Caller,
        task: &Task,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
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

    async fn terminal_before(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<(Caller, String)>, StoreError> {
        self.tasks.terminal_before(cutoff, limit).await
    }

    fn writes_jobs(&self) -> bool {
        self.jobs.is_some()
    }
}

fn ctx() -> CallContext {
    CallContext::new(Method::SendMessage, ServiceParams::new())
}

async fn start(handler: &DefaultRequestHandler) -> Task {
    match handler.send_message(&ctx(), immediate("go")).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
    }
}

async fn get(handler: &DefaultRequestHandler, id: &str) -> Task {
    let request = GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    handler.get_task(&ctx(), request).await.unwrap()
}

/// Runs `body` on a runtime of its own and then drops that runtime with the
/// work in it: what a killed process leaves behind in the stores.
fn in_process_that_dies<F>(body: impl FnOnce() -> F + Send + 'static)
where
    F: std::future::Future<Output = ()> + 'static,
{
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(body());
        // Dropping the runtime drops every task mid-flight, as SIGKILL would.
    })
    .join()
    .unwrap();
}

async fn a_crashed_execution_resumes_after_its_last_checkpoint(stores: Stores) {
    let agent = Turns::default();
    *agent.hold.lock().unwrap() = true;
    let task_id = Arc::new(Mutex::new(String::new()));
    {
        let (stores, agent, task_id) = (stores.clone(), agent.clone(), task_id.clone());
        in_process_that_dies(move || async move {
            let handler = stores.handler(agent.clone(), |_| {});
            let task = start(&handler).await;
            *task_id.lock().unwrap() = task.id;
            agent.reached_hold.notified().await;
        });
    }
    let task_id = task_id.lock().unwrap().clone();
    let job = stores.jobs.get(&task_id).await.unwrap().unwrap();
    assert_eq!(
        job.state,
        JobState::Running,
        "left running by the dead process"
    );

    // The next process: turn 1 is done and must not run again.
    *agent.hold.lock().unwrap() = false;
    let handler = stores.handler(agent.clone(), |_| {});
    handler.recovered().await;
    let task = until_terminal(&handler, &ctx(), &task_id).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "three turns");
    let turns: Vec<u64> = agent
        .effects
        .lock()
        .unwrap()
        .iter()
        .map(|(_, turn)| *turn)
        .collect();
    assert_eq!(turns, [1, 2, 3], "each turn's side effect happened once");
    assert_eq!(*agent.resumed_at.lock().unwrap(), [None, Some(1)]);
    let artifacts: Vec<&str> = task
        .artifacts
        .iter()
        .map(|a| a.artifact_id.as_str())
        .collect();
    assert_eq!(artifacts, ["t1", "t2", "t3"]);
    // Subscribers hear of the end before the job's record says so.
    let job = finished_job(&stores, &task_id).await;
    assert_eq!((job.state, job.attempts), (JobState::Completed, 2));
}

async fn shutdown_leaves_running_work_pending_and_the_next_start_finishes_it(stores: Stores) {
    let agent = Turns::default();
    *agent.hold.lock().unwrap() = true;
    let handler = stores.handler(agent.clone(), |_| {});
    let task = start(&handler).await;
    agent.reached_hold.notified().await;
    handler.shutdown(Duration::ZERO).await;

    let stored = get(&handler, &task.id).await;
    assert!(
        !stored.status.state.is_terminal(),
        "not failed: {}",
        stored.status.state
    );
    let job = stores.jobs.get(&task.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Pending);

    *agent.hold.lock().unwrap() = false;
    let restarted = stores.handler(agent.clone(), |_| {});
    let done = until_terminal(&restarted, &ctx(), &task.id).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(*agent.resumed_at.lock().unwrap(), [None, Some(1)]);
}

async fn cancel_reaches_work_left_pending(stores: Stores) {
    let agent = Turns::default();
    *agent.hold.lock().unwrap() = true;
    let handler = stores.handler(agent.clone(), |_| {});
    let task = start(&handler).await;
    agent.reached_hold.notified().await;
    handler.shutdown(Duration::ZERO).await;

    // Recovery of the next start is held back until the cancel is done.
    let restarted = stores.handler(agent.clone(), |config| config.resume_parallelism = 1);
    let canceled = restarted
        .cancel_task(
            &ctx(),
            CancelTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    restarted.recovered().await;
    let job = finished_job(&stores, &task.id).await;
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Canceled, Some(CANCELED_REASON)),
        "a canceled job shows CANCELED with its reason"
    );
    assert_eq!(
        get(&restarted, &task.id).await.status.state,
        TaskState::Canceled
    );
}

async fn past_the_stale_limit_work_is_abandoned_with_its_reason(stores: Stores) {
    // A process that stopped heartbeating, as a dead one does, with a job
    // running since long ago and one started a minute ago.
    let silent = Turns::default();
    *silent.hold.lock().unwrap() = true;
    let dead = stores.handler(silent.clone(), |c| {
        c.heartbeat_interval = Duration::from_secs(1000 * 3600);
    });
    let stale = start(&dead).await;
    silent.reached_hold.notified().await;
    tokio::time::sleep(Duration::from_secs(2 * 3600)).await;
    let fresh = start(&dead).await;
    silent.reached_hold.notified().await;
    tokio::time::sleep(Duration::from_secs(60)).await;

    // The next process, with the default stale limit of one hour.
    let agent = Turns::default();
    let handler = stores.handler(agent.clone(), |_| {});
    handler.recovered().await;

    let abandoned = get(&handler, &stale.id).await;
    assert_eq!(abandoned.status.state, TaskState::Failed);
    assert!(
        status_text(&abandoned).contains("abandoned"),
        "{}",
        status_text(&abandoned)
    );
    assert_eq!(
        abandoned.metadata.as_ref().and_then(|m| m.get("jobState")),
        Some(&serde_json::Value::from("ABANDONED"))
    );
    let job = stores.jobs.get(&stale.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Abandoned);
    assert!(job.reason.unwrap().contains("abandoned"));

    let resumed = until_terminal(&handler, &ctx(), &fresh.id).await;
    assert_eq!(resumed.status.state, TaskState::Completed);
    assert_eq!(*agent.resumed_at.lock().unwrap(), [Some(1)]);
}

async fn heartbeats_renew_running_jobs_on_the_clock(stores: Stores) {
    let agent = Turns::default();
    *agent.hold.lock().unwrap() = true;
    let handler = stores.handler(agent.clone(), |c| {
        c.heartbeat_interval = Duration::from_secs(30)
    });
    let task = start(&handler).await;
    agent.reached_hold.notified().await;
    let first = stores.jobs.get(&task.id).await.unwrap().unwrap().heartbeat;
    tokio::time::sleep(Duration::from_secs(31)).await;
    let second = stores.jobs.get(&task.id).await.unwrap().unwrap().heartbeat;
    assert!(
        second - first >= chrono::Duration::seconds(30),
        "heartbeat moved from {first} to {second}"
    );
    agent.go.notify_one();
    let done = until_terminal(&handler, &ctx(), &task.id).await;
    assert_eq!(done.status.state, TaskState::Completed);
}

const DAY: u64 = 24 * 3600;

async fn get_task(handler: &DefaultRequestHandler, id: &str) -> Result<Task, A2aError> {
    let request = GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    handler.get_task(&ctx(), request).await
}

async fn a_finished_job_record_goes_after_7_days_and_its_task_after_30(stores: Stores) {
    let handler = stores.handler(Turns::default(), |c| {
        c.retention = Duration::from_secs(7 * DAY);
        c.task_retention = Some(Duration::from_secs(30 * DAY));
        c.retention_interval = Duration::from_secs(3600);
    });
    let task = start(&handler).await;
    until_terminal(&handler, &ctx(), &task.id).await;
    assert_eq!(
        handler.prune().await.unwrap(),
        Pruned::new(0, 0),
        "kept within retention"
    );

    // Day 8, through the periodic sweep: the job record is gone, the task is not.
    tokio::time::sleep(Duration::from_secs(7 * DAY + 3601)).await;
    assert!(stores.jobs.get(&task.id).await.unwrap().is_none());
    let day_8 = get_task(&handler, &task.id).await;
    assert_eq!(
        day_8.expect("GetTask on day 8 finds the task").status.state,
        TaskState::Completed
    );

    // Day 31: past the task retention, the task goes too.
    tokio::time::sleep(Duration::from_secs(23 * DAY)).await;
    assert_eq!(
        handler.prune().await.unwrap(),
        Pruned::new(0, 0),
        "the sweep took it"
    );
    let gone = get_task(&handler, &task.id).await;
    assert!(gone.is_err(), "the task went after the task retention");
}

async fn a_task_retention_of_none_keeps_tasks_for_ever(stores: Stores) {
    let handler = stores.handler(Turns::default(), |c| {
        c.task_retention = None;
        c.retention_interval = Duration::from_secs(DAY);
    });
    let task = start(&handler).await;
    until_terminal(&handler, &ctx(), &task.id).await;
    tokio::time::sleep(Duration::from_secs(100 * DAY)).await;
    assert!(stores.jobs.get(&task.id).await.unwrap().is_none());
    assert_eq!(handler.prune().await.unwrap(), Pruned::new(0, 0));
    assert!(get_task(&handler, &task.id).await.is_ok(), "kept for ever");
}

/// Waits for the job of `id` to finish.
async fn finished_job(stores: &Stores, id: &str) -> a2a_server::store::Job {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let job = stores.jobs.get(id).await.unwrap().unwrap();
            if job.state.is_finished() {
                return job;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the job finishes")
}

async fn cancel(handler: &DefaultRequestHandler, id: &str) -> Task {
    let request = CancelTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    handler.cancel_task(&ctx(), request).await.unwrap()
}

async fn cancel_reaches_running_and_resumed_work(stores: Stores) {
    let agent = Turns::default();
    *agent.hold.lock().unwrap() = true;
    let handler = stores.handler(agent.clone(), |_| {});

    let running = start(&handler).await;
    agent.reached_hold.notified().await;
    assert_eq!(
        cancel(&handler, &running.id).await.status.state,
        TaskState::Canceled
    );
    let job = finished_job(&stores, &running.id).await;
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Canceled, Some(CANCELED_REASON)),
        "a canceled job shows CANCELED with its reason"
    );

    let later = start(&handler).await;
    agent.reached_hold.notified().await;
    handler.shutdown(Duration::ZERO).await;
    let restarted = stores.handler(agent.clone(), |_| {});
    // The resumed execution reaches the same hold after its checkpoint.
    agent.reached_hold.notified().await;
    assert_eq!(
        cancel(&restarted, &later.id).await.status.state,
        TaskState::Canceled
    );
    let job = finished_job(&stores, &later.id).await;
    assert_eq!((job.state, job.attempts), (JobState::Canceled, 2));
    assert_eq!(*agent.resumed_at.lock().unwrap(), [None, None, Some(1)]);
}

async fn resumed_work_waits_for_room_under_a_limit(stores: Stores) {
    let agent = Turns::default();
    *agent.hold.lock().unwrap() = true;
    let handler = stores.handler(agent.clone(), |_| {});
    let first = start(&handler).await;
    agent.reached_hold.notified().await;
    let second = start(&handler).await;
    agent.reached_hold.notified().await;
    handler.shutdown(Duration::ZERO).await;

    // One execution at a time: the second resume waits for the first.
    *agent.hold.lock().unwrap() = false;
    let restarted = stores.limited_handler(agent.clone(), |_| {}, Some(1));
    for id in [&first.id, &second.id] {
        let done = until_terminal(&restarted, &ctx(), id).await;
        assert_eq!(done.status.state, TaskState::Completed);
    }
}

/// A job store whose record commits only after a pause (as a write queued
/// behind others does), so a caller can leave in the middle of it.
#[derive(Clone)]
struct SlowRecords(InMemoryJobStore);

#[async_trait::async_trait]
impl JobStore for SlowRecords {
    async fn record(&self, job: &a2a_server::store::NewJob<'_>) -> Result<(), StoreError> {
        // The write reaches the store whether or not its caller still waits.
        let (store, owned) = (self.0.clone(), a2a_server::store::Job::recorded(job));
        let written = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let job = a2a_server::store::NewJob {
                task_id: &owned.task_id,
                owner: &owned.owner,
                node: &owned.node,
                request: &owned.request,
                at: owned.created_at,
            };
            store.record(&job).await
        });
        written.await.unwrap()
    }
    async fn heartbeat(
        &self,
        node: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, StoreError> {
        self.0.heartbeat(node, at).await
    }
    async fn finish(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        self.0.finish(task_id, state, reason, at).await
    }
    async fn recover(
        &self,
        stale_before: chrono::DateTime<chrono::Utc>,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<a2a_server::store::Recovered, StoreError> {
        self.0.recover(stale_before, at).await
    }
    async fn claim(
        &self,
        task_id: &str,
        node: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, StoreError> {
        self.0.claim(task_id, node, at).await
    }
    async fn release(
        &self,
        task_id: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        self.0.release(task_id, at).await
    }
    async fn get(&self, task_id: &str) -> Result<Option<a2a_server::store::Job>, StoreError> {
        self.0.get(task_id).await
    }
    async fn list(
        &self,
        filter: &a2a_server::store::JobFilter,
    ) -> Result<Vec<a2a_server::store::Job>, StoreError> {
        self.0.list(filter).await
    }
    async fn finished_before(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<Vec<a2a_server::store::Job>, StoreError> {
        self.0.finished_before(cutoff, limit).await
    }
    async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
        self.0.remove(task_id).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_leaves_while_its_job_is_recorded_leaves_no_running_job() {
    let jobs = InMemoryJobStore::new();
    let handler = DefaultRequestHandler::builder(
        Turns::default(),
        AgentCard::new("turns", "three turns").with_streaming(true),
    )
    .job_store(SlowRecords(jobs.clone()))
    .build();
    handler.recovered().await;
    // The caller gives up half way through the record.
    let caller = ctx();
    let call = handler.send_message(&caller, immediate("go"));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let left = jobs
        .list(&a2a_server::store::JobFilter::new(10))
        .await
        .unwrap();
    assert_eq!(left.len(), 1, "the record was written: {left:?}");
    assert_eq!(left[0].state, JobState::Failed, "{left:?}");
    assert!(
        left[0]
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("abandoned")
    );
}

/// Every test, with jobs written on their own and with jobs written by the
/// task store.
macro_rules! both_ways {
    (multi: $($multi:ident),*; paused: $($paused:ident),*) => {
        mod jobs_apart {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $multi() { super::$multi(Stores::new(false)).await })*
            $(#[tokio::test(start_paused = true)]
            async fn $paused() { super::$paused(Stores::new(false)).await })*
        }
        mod jobs_with_tasks {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $multi() { super::$multi(Stores::new(true)).await })*
            $(#[tokio::test(start_paused = true)]
            async fn $paused() { super::$paused(Stores::new(true)).await })*
        }
    };
}

both_ways!(
    multi: resumed_work_waits_for_room_under_a_limit,
    a_crashed_execution_resumes_after_its_last_checkpoint, shutdown_leaves_running_work_pending_and_the_next_start_finishes_it, cancel_reaches_work_left_pending, cancel_reaches_running_and_resumed_work;
    paused: past_the_stale_limit_work_is_abandoned_with_its_reason, heartbeats_renew_running_jobs_on_the_clock, a_finished_job_record_goes_after_7_days_and_its_task_after_30, a_task_retention_of_none_keeps_tasks_for_ever
);
