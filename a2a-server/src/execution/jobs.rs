//! Durable executions: every execution recorded as a job before the client
//! learns its task id, heartbeats while it runs, recovery after a restart,
//! and retention of finished work.
//!
//! A job's life maps onto A2A task states without new wire states: PENDING
//! and RUNNING jobs have SUBMITTED or WORKING tasks; a COMPLETED job's task is
//! COMPLETED (or ended its turn: INPUT_REQUIRED, REJECTED); a CANCELED job's
//! task is CANCELED; a FAILED
//! job's task is FAILED with the reason as its status message; an ABANDONED
//! job's task is FAILED with a status message and a `jobState` metadata entry
//! that say so.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aError, Message, Metadata, Method, Part, Role, SendMessageConfiguration, StreamResponse,
    Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::persist::{Current, persist};
use super::{Drive, Executions, Start};
use crate::store::{CANCELED_REASON, Cause, Job, JobState, NewJob, Pruned, StoreError};
use crate::{CallContext, RequestContext, ServiceParams, User};

/// How durable executions are kept: heartbeats, the stale limit, recovery and
/// retention. Start from `JobConfig::default()` and set what you need.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobConfig {
    /// This process's name in job records (default: host name, process id and
    /// a random suffix, so two processes never share one).
    pub node: String,
    /// How often running jobs' heartbeats are renewed (default 30 s).
    pub heartbeat_interval: Duration,
    /// A RUNNING job whose heartbeat is older than this when the server
    /// starts is ABANDONED instead of resumed (default 1 hour): its process
    /// died too long ago for the work to still be wanted.
    pub stale_after: Duration,
    /// Finished jobs' records are deleted this long after they ended
    /// (default 7 days). Their tasks stay until `task_retention`.
    pub retention: Duration,
    /// Terminal tasks are deleted this long after their last change
    /// (default 30 days); `None` keeps them for ever.
    pub task_retention: Option<Duration>,
    /// How often retention runs (default every hour, and once at start).
    pub retention_interval: Duration,
    /// Most resumed executions running at once after a restart (default 16).
    pub resume_parallelism: usize,
}

impl Default for JobConfig {
    fn default() -> Self {
        JobConfig {
            node: default_node(),
            heartbeat_interval: Duration::from_secs(30),
            stale_after: Duration::from_secs(60 * 60),
            retention: Duration::from_secs(7 * 24 * 60 * 60),
            task_retention: Some(Duration::from_secs(30 * 24 * 60 * 60)),
            retention_interval: Duration::from_secs(60 * 60),
            resume_parallelism: 16,
        }
    }
}

fn default_node() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".to_owned());
    let suffix = &a2a_core::new_id()[..8];
    format!("{host}-{}-{suffix}", std::process::id())
}

/// Wall-clock time that follows tokio's clock, so heartbeats, the stale limit
/// and retention can be tested on a paused clock. Every clock of a process
/// shares one anchor, so two handlers in one test agree on the time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    base_utc: DateTime<Utc>,
    base: tokio::time::Instant,
}

static ANCHOR: std::sync::OnceLock<(DateTime<Utc>, std::time::Instant)> =
    std::sync::OnceLock::new();

impl Clock {
    pub(crate) fn new() -> Self {
        let (base_utc, base) = *ANCHOR.get_or_init(|| (Utc::now(), std::time::Instant::now()));
        Clock {
            base_utc,
            base: tokio::time::Instant::from_std(base),
        }
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.base);
        chrono::Duration::from_std(elapsed)
            .ok()
            .and_then(|elapsed| self.base_utc.checked_add_signed(elapsed))
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// The time `age` before now (the dawn of time for an age past it).
    pub(crate) fn ago(&self, age: Duration) -> DateTime<Utc> {
        chrono::Duration::from_std(age)
            .ok()
            .and_then(|age| self.now().checked_sub_signed(age))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

/// What a job keeps of its request, to start the agent again after a restart.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobRequest {
    /// Shared with the request context it was recorded from (written as
    /// the message itself).
    message: std::sync::Arc<Message>,
    context_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(default)]
    tenant: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    authenticated: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    extensions: Vec<String>,
}

impl JobRequest {
    pub(crate) fn of(ctx: &RequestContext) -> Result<String, A2aError> {
        let request = JobRequest {
            message: ctx.message.clone(),
            context_id: ctx.context_id.clone(),
            configuration: ctx.configuration.clone(),
            metadata: ctx.metadata.clone(),
            tenant: ctx.call.tenant.clone(),
            user: ctx.call.user.name.clone(),
            authenticated: ctx.call.user.authenticated,
            extensions: ctx.call.activated_extensions.clone(),
        };
        serde_json::to_string(&request)
            .map_err(|e| A2aError::internal(format!("cannot record the execution: {e}")))
    }

    /// The context the agent gets when its job is resumed.
    fn into_context(self, task_id: &str, stored: Option<&Task>) -> RequestContext {
        let mut call = CallContext::new(Method::SendMessage, ServiceParams::new());
        call.tenant = self.tenant;
        call.user = User {
            name: self.user,
            authenticated: self.authenticated,
        };
        call.activated_extensions = self.extensions.clone();
        call.requested_extensions = self.extensions;
        let mut ctx = RequestContext::new(self.message, call);
        ctx.task_id = task_id.to_owned();
        ctx.context_id = stored.map_or(self.context_id, |t| t.context_id.clone());
        ctx.configuration = self.configuration;
        ctx.metadata = self.metadata;
        ctx
    }
}

/// Where an execution's job record stands, as its actor sees it.
#[derive(Debug)]
pub(crate) enum JobPhase {
    /// No job store: nothing is recorded.
    Volatile,
    /// To be recorded by the first task write, in its transaction.
    Unrecorded(Box<PendingRecord>),
    /// Recorded RUNNING: to be finished, or left pending at shutdown.
    Open,
    /// Finished or left pending.
    Closed,
}

/// A job record waiting for its execution's first task write.
#[derive(Debug)]
pub(crate) struct PendingRecord {
    pub(crate) request: String,
    pub(crate) at: DateTime<Utc>,
}

impl PendingRecord {
    pub(crate) fn new_job<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a crate::Caller,
        shared: &'a super::Shared,
    ) -> NewJob<'a> {
        NewJob {
            task_id,
            owner,
            node: &shared.job_config.node,
            request: &self.request,
            at: self.at,
        }
    }
}

/// Records a job in a task of its own and waits for it. A caller that
/// leaves meanwhile (its client went away) cannot cut the write short and
/// leave a record with nothing to run it: the write completes, and a record
/// nobody waited for is finished at once as abandoned.
pub(crate) async fn record_detached(
    shared: &super::Shared,
    record: &PendingRecord,
    task_id: &str,
    owner: &crate::Caller,
) -> Result<(), StoreError> {
    let Some(jobs) = shared.jobs.clone() else {
        return Ok(());
    };
    let (task_id, owner) = (task_id.to_owned(), owner.clone());
    let (node, request, at) = (
        shared.job_config.node.clone(),
        record.request.clone(),
        record.at,
    );
    let (reply, answer) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let job = NewJob {
            task_id: &task_id,
            owner: &owner,
            node: &node,
            request: &request,
            at,
        };
        let recorded = jobs.record(&job).await;
        if let Err(Ok(())) = reply.send(recorded) {
            let reason = "The request was abandoned before its execution started.";
            if let Err(err) = jobs
                .finish(&task_id, JobState::Failed, Some(reason), at)
                .await
            {
                tracing::warn!(%task_id, error = %err, "could not end an abandoned job record");
            }
        }
    });
    answer
        .await
        .unwrap_or_else(|_| Err(StoreError::Backend("recording the job stopped".into())))
}

/// How a write of `event` onto a task in state `current` ends the execution's
/// turn, if it does: the job's finished state and the reason of a failure.
pub(crate) fn turn_end(
    event: &StreamResponse,
    current: TaskState,
) -> Option<(JobState, Option<String>)> {
    let (state, message) = match event {
        StreamResponse::StatusUpdate(update) => {
            (update.status.state, update.status.message.as_deref())
        }
        StreamResponse::Task(task) => (task.status.state, task.status.message.as_deref()),
        _ => (current, None),
    };
    state
        .ends_turn()
        .then(|| (finished_state(state), end_reason(state, message)))
}

/// The job state an execution ends in, given its task's state.
pub(crate) fn finished_state(state: TaskState) -> JobState {
    match state {
        TaskState::Failed => JobState::Failed,
        TaskState::Canceled => JobState::Canceled,
        _ => JobState::Completed,
    }
}

/// The reason recorded with a finished job: the status message of a failed
/// task, or of a canceled one (which always has a reason).
pub(crate) fn failure_reason(task: Option<&Task>) -> Option<String> {
    let task = task?;
    end_reason(task.status.state, task.status.message.as_deref())
}

fn end_reason(state: TaskState, message: Option<&Message>) -> Option<String> {
    // The text only where it is kept: most turns complete, and joining a
    // message's parts costs more than the rest of this check.
    let text = || message.map(|m| m.text()).filter(|t| !t.is_empty());
    match state {
        TaskState::Failed => text(),
        TaskState::Canceled => Some(text().unwrap_or_else(|| CANCELED_REASON.to_owned())),
        _ => None,
    }
}

/// Runs a single server's upkeep until shutdown: the recovery pass first
/// (its end fires `recovered`), then heartbeats and retention.
pub(crate) async fn maintain(executions: Arc<Executions>, recovered: CancellationToken) {
    let shared = executions.shared.clone();
    let Some(jobs) = shared.jobs.clone() else {
        shared.recovery_marked.cancel();
        recovered.cancel();
        return;
    };
    let config = &shared.job_config;
    match recover(&executions).await {
        Ok((abandoned, pending)) => {
            tracing::info!(abandoned, pending, "recovery pass done")
        }
        Err(err) => {
            // New work is still taken; what the dead process left waits for
            // the next start.
            shared.recovery_marked.cancel();
            tracing::error!(error = %err, "recovery pass failed");
        }
    }
    recovered.cancel();
    let mut heartbeat = tokio::time::interval(config.heartbeat_interval);
    let mut retention = tokio::time::interval(config.retention_interval);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    retention.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shared.stopping.cancelled() => break,
            _ = heartbeat.tick() => {
                if let Err(err) = jobs.heartbeat(&config.node, shared.clock.now()).await {
                    tracing::warn!(error = %err, "job heartbeat failed");
                }
            }
            _ = retention.tick() => {
                if let Err(err) = prune(&executions).await {
                    tracing::warn!(error = %err, "retention failed");
                }
            }
            () = shared.stranded_due() => bring_back(&executions, true).await,
        }
    }
}

/// Brings back the jobs of executions that a failing store stopped (see
/// [`super::Shared::stranded`]): each is released to PENDING (if it is not
/// already) and, with `resume_here` (a single server; a cluster's lease
/// pass resumes PENDING jobs itself), resumed. Those the store still
/// refuses wait for the next sweep.
pub(crate) async fn bring_back(executions: &Arc<Executions>, resume_here: bool) {
    let shared = &executions.shared;
    let Some(jobs) = shared.jobs.clone() else {
        return;
    };
    for task_id in shared.take_stranded() {
        if executions.is_draining() {
            // The next start's recovery pass finds it RUNNING or PENDING.
            return;
        }
        let job = match jobs.get(&task_id).await {
            Ok(Some(job)) => job,
            Ok(None) => {
                shared.settle_stranded(&task_id);
                continue;
            }
            Err(err) => {
                tracing::debug!(%task_id, error = %err, "a stranded job cannot be read yet");
                shared.strand(&task_id);
                continue;
            }
        };
        let mine = job.node == shared.job_config.node;
        let job = match job.state {
            // Still this node's, and nothing runs it here: released, so no
            // heartbeat of this node keeps it looking alive.
            JobState::Running if mine && !executions.lock_live().contains_key(task_id.as_str()) => {
                if let Err(err) = jobs.release(&task_id, shared.clock.now()).await {
                    tracing::debug!(%task_id, error = %err, "a stranded job cannot be released yet");
                    shared.strand(&task_id);
                    continue;
                }
                Job {
                    state: JobState::Pending,
                    ..job
                }
            }
            JobState::Pending => job,
            // Finished, running here again, or another node's now.
            _ => {
                shared.settle_stranded(&task_id);
                continue;
            }
        };
        if !resume_here {
            // Released: the lease pass resumes it, here or on another node.
            shared.settle_stranded(&task_id);
            continue;
        }
        tracing::info!(%task_id, "the store is back; resuming a job it had stopped");
        let executions = executions.clone();
        tokio::spawn(async move {
            match resume(&executions, job).await {
                // Stopped by the store again: it stranded itself once more.
                Ok(Some(failure)) if failure.kind() == a2a_core::ErrorKind::Unavailable => {}
                Ok(_) => executions.shared.settle_stranded(&task_id),
                Err(err) if err.kind() == a2a_core::ErrorKind::Unavailable => {
                    tracing::warn!(%task_id, error = %err, "could not resume a stopped job; trying again later");
                    executions.shared.strand(&task_id);
                }
                Err(err) => {
                    tracing::error!(%task_id, error = %err, "could not resume a stopped job");
                    executions.shared.settle_stranded(&task_id);
                }
            }
        });
    }
}

/// The recovery pass: abandons stale jobs and resumes the others in the
/// background. Returns how many were abandoned and how many will resume.
async fn recover(executions: &Arc<Executions>) -> Result<(usize, usize), A2aError> {
    let shared = &executions.shared;
    let Some(jobs) = &shared.jobs else {
        return Ok((0, 0));
    };
    let config = &shared.job_config;
    let recovered = jobs
        .recover(shared.clock.ago(config.stale_after), shared.clock.now())
        .await?;
    shared.recovery_marked.cancel();
    let abandoned = recovered.abandoned.len();
    for job in recovered.abandoned {
        if let Err(err) = abandon(executions, &job).await {
            tracing::error!(task_id = %job.task_id, error = %err, "could not fail an abandoned task");
        }
    }
    let pending = recovered.pending.len();
    let permits = Arc::new(Semaphore::new(config.resume_parallelism.max(1)));
    for job in recovered.pending {
        let executions = executions.clone();
        let permits = permits.clone();
        tokio::spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let task_id = job.task_id.clone();
            match resume(&executions, job).await {
                // The store failed: brought back once it answers again.
                Err(err) if err.kind() == a2a_core::ErrorKind::Unavailable => {
                    tracing::warn!(%task_id, error = %err, "could not resume a job yet");
                    executions.shared.strand(&task_id);
                }
                Err(err) => tracing::error!(%task_id, error = %err, "could not resume a job"),
                Ok(_) => {}
            }
        });
    }
    Ok((abandoned, pending))
}

/// Fails the task of an abandoned job, saying why.
pub(super) async fn abandon(executions: &Executions, job: &Job) -> Result<(), A2aError> {
    let shared = &executions.shared;
    let reason = format!(
        "The execution was abandoned: its server stopped at {} and did not come back within the stale limit.",
        job.heartbeat.to_rfc3339()
    );
    let store = shared.store.as_ref();
    let mut status = TaskStatusUpdateEvent::new(job.task_id.clone(), "", TaskState::Failed);
    status.metadata = Some(Metadata::from_iter([(
        "jobState".to_owned(),
        serde_json::Value::from("ABANDONED"),
    )]));
    match store.get(&job.owner, &job.task_id).await {
        Ok(stored) if stored.task.status.state.is_terminal() => {}
        Ok(stored) => {
            let mut current = Current::from(stored);
            status.context_id.clone_from(&current.task.context_id);
            status.status.message = Some(agent_text(&current.task, &reason).into());
            let event = StreamResponse::from(status);
            persist(
                store,
                &job.owner,
                &mut current,
                &Cause::event(&event),
                shared.config.max_history,
                shared.config.store_retry,
                |t| Ok(!t.status.state.is_terminal()),
            )
            .await?;
        }
        Err(StoreError::NotFound(_)) => {
            // The agent never wrote anything: the task is made, failed, with
            // the user's message, so whoever holds its id can read why.
            let request: Option<JobRequest> = serde_json::from_str(&job.request).ok();
            let mut task = Task {
                id: job.task_id.clone(),
                context_id: request
                    .as_ref()
                    .map(|r| r.context_id.clone())
                    .unwrap_or_default(),
                status: TaskStatus::new(TaskState::Failed),
                history: request.map(|r| r.message).into_iter().collect(),
                ..Task::default()
            };
            task.status.message = Some(agent_text(&task, &reason).into());
            status.context_id.clone_from(&task.context_id);
            status.status = task.status.clone();
            let event = StreamResponse::from(status);
            shared
                .store
                .create(&job.owner, &task, &Cause::event(&event))
                .await?;
        }
        Err(err) => return Err(err.into()),
    }
    if let Some(jobs) = &shared.jobs {
        jobs.finish(
            &job.task_id,
            JobState::Abandoned,
            Some(&reason),
            shared.clock.now(),
        )
        .await?;
    }
    Ok(())
}

fn agent_text(task: &Task, text: &str) -> Message {
    Message::new(Role::Agent, vec![Part::text(text)])
        .with_task_id(task.id.clone())
        .with_context_id(task.context_id.clone())
}

/// Starts a pending job's execution again on this node and waits for it to
/// end; returns why it stopped short, if it did (the store failed again).
pub(super) async fn resume(
    executions: &Arc<Executions>,
    job: Job,
) -> Result<Option<A2aError>, A2aError> {
    let shared = &executions.shared;
    let Some(jobs) = &shared.jobs else {
        return Ok(None);
    };
    let node = &shared.job_config.node;
    if !jobs.claim(&job.task_id, node, shared.clock.now()).await? {
        // Canceled or taken meanwhile.
        return Ok(None);
    }
    // In a cluster this node may have stood still between its claim and now
    // for longer than the lease: then another node holds the job, and runs
    // it. Nothing of it (not even the agent) is to run here.
    if shared.cluster.is_some() {
        let held = jobs.get(&job.task_id).await?;
        if !held.is_some_and(|held| held.state == JobState::Running && held.node == *node) {
            return Ok(None);
        }
    }
    let stored = match shared.store.get(&job.owner, &job.task_id).await {
        Ok(stored) => Some(stored),
        Err(StoreError::NotFound(_)) => None,
        Err(err) => {
            jobs.release(&job.task_id, shared.clock.now()).await?;
            return Err(err.into());
        }
    };
    // The turn ended before the crash, only the job's end was not recorded.
    if let Some(stored) = stored.as_ref().filter(|s| s.task.status.state.ends_turn()) {
        return finish_as_task_ended(shared, jobs.as_ref(), &stored.task)
            .await
            .map(|()| None);
    }
    let request: JobRequest = match serde_json::from_str(&job.request) {
        Ok(request) => request,
        Err(err) => {
            let reason =
                format!("The execution could not be resumed: its record is unreadable ({err}).");
            jobs.finish(
                &job.task_id,
                JobState::Failed,
                Some(&reason),
                shared.clock.now(),
            )
            .await?;
            return Ok(None);
        }
    };
    let mut ctx = request.into_context(&job.task_id, stored.as_ref().map(|s| &s.task));
    ctx.resumed = true;
    ctx.checkpoint = stored.as_ref().and_then(|s| s.checkpoint.clone());
    ctx.stored_task = stored.as_ref().map(|s| s.task.clone());
    for id in &ctx.message.reference_task_ids {
        if let Ok(referenced) = shared.store.get(&job.owner, id).await {
            ctx.referenced_tasks.push(referenced.task);
        }
    }
    let start = Start {
        ctx: Box::new(ctx),
        caller: job.owner.clone(),
        stored: stored.map(Box::new),
        resumed: true,
        observer: None,
    };
    let started = loop {
        match executions.start(start_again(&start), Drive::Spawn).await {
            Ok(started) => break started,
            // At a limit: wait for room rather than fail work that was accepted.
            Err(_) if executions.at_limit(&job.owner) && !executions.is_draining() => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            // Ended meanwhile (canceled before it could run): nothing to do.
            Err(err) if err.kind() == a2a_core::ErrorKind::TaskNotCancelable => {
                let stored = shared.store.get(&job.owner, &job.task_id).await?;
                return finish_as_task_ended(shared, jobs.as_ref(), &stored.task)
                    .await
                    .map(|()| None);
            }
            Err(err) => {
                jobs.release(&job.task_id, shared.clock.now()).await?;
                return Err(err);
            }
        }
    };
    let signals = started.progress.signals();
    signals.ended().await;
    Ok(signals.failure().cloned())
}

/// Finishes a job whose task ended its turn without the job being told.
async fn finish_as_task_ended(
    shared: &super::Shared,
    jobs: &dyn crate::store::JobStore,
    task: &Task,
) -> Result<(), A2aError> {
    let state = finished_state(task.status.state);
    let reason = failure_reason(Some(task));
    let at = shared.clock.now();
    jobs.finish(&task.id, state, reason.as_deref(), at).await?;
    Ok(())
}

/// Marks the job of a task canceled while no execution ran (it waited for
/// input, or its job waits to resume) CANCELED: its record then says how the
/// task ended, not how its last turn did. A RUNNING job is left alone: the
/// execution that runs it sees the cancel and finishes it.
pub(crate) async fn record_cancel(shared: &super::Shared, task_id: &str) {
    let Some(jobs) = &shared.jobs else {
        return;
    };
    let outcome = match jobs.get(task_id).await {
        // This node wrote the cancel and sends its pushes: the job's lease
        // becomes its own while it does.
        Ok(Some(job)) if job.state != JobState::Running => {
            jobs.finish_on(
                task_id,
                JobState::Canceled,
                Some(CANCELED_REASON),
                shared.clock.now(),
                &shared.job_config.node,
            )
            .await
        }
        Ok(_) => Ok(()),
        Err(err) => Err(err),
    };
    if let Err(err) = outcome {
        tracing::warn!(%task_id, error = %err, "could not mark a canceled task's job");
    }
}

/// A copy of a resume's start, for another attempt.
fn start_again(start: &Start) -> Start {
    Start {
        ctx: start.ctx.clone(),
        caller: start.caller.clone(),
        stored: start.stored.clone(),
        resumed: start.resumed,
        // A resume's start has none: the handler's observer opens one.
        observer: None,
    }
}

/// Deletes the records of jobs finished longer ago than the job retention,
/// and terminal tasks (with their push configs) last changed longer ago than
/// the task retention.
pub(crate) async fn prune(executions: &Executions) -> Result<Pruned, A2aError> {
    let shared = &executions.shared;
    let Some(jobs) = &shared.jobs else {
        return Ok(Pruned::default());
    };
    let config = &shared.job_config;
    let push = shared.push.as_ref().map(|p| p.configs().as_ref());
    Ok(crate::store::prune(
        jobs.as_ref(),
        shared.store.as_ref(),
        push,
        shared.clock.ago(config.retention),
        config.task_retention.map(|age| shared.clock.ago(age)),
    )
    .await?)
}
