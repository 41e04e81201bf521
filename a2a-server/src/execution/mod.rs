//! The execution pipeline: one live execution per task, event fan-out,
//! cancellation, limits and shutdown.
//!
//! # The life of an execution
//!
//! 1. **Accepted.** `SendMessage` (handler/send.rs) validates the request,
//!    checks a follow-up against its stored task, records the user's message
//!    in the follow-up's history, and hands a [`Start`] to
//!    [`Executions::start`]. That takes a slot (global and per-caller limits),
//!    registers the task as live (one execution per task: CancelTask and
//!    follow-ups find it there), and builds the [`actor::Actor`] with the
//!    agent's `execute` future and its event channel.
//! 2. **Recorded.** With a job store, the execution is a RUNNING job of this
//!    node, with its request, before the client can learn the task id: when
//!    the task store keeps jobs too (the SQL stores), the new task's first
//!    write records it in the same transaction, and the write that ends the
//!    turn finishes it, so a durable execution costs no extra writes; a
//!    follow-up's job (whose client knows the task) is recorded before
//!    `start` returns, as is every job with a separate job store. (`jobs.rs`)
//! 3. **Running.** The actor polls the agent and takes its events in order:
//!    bind ids, apply to the task, write it with the version it read
//!    ([`persist`]: one loop, re-read on conflict), and only then publish it to
//!    push delivery and subscribers ([`feed`]) and report progress to a blocking
//!    caller ([`progress`]). The first event creates the task (one write when
//!    nobody watches it yet). An event may carry the agent's turn
//!    **checkpoint**, stored in the same write. While it runs the job's
//!    **heartbeat** is renewed by the node's maintenance loop.
//! 4. **Who drives it.** A blocking caller polls the execution in its own
//!    request task ([`Drive::Inline`]) until the task settles: an agent that
//!    answers at once then costs no task spawn and no cross-task wakeup
//!    (measured with callgrind: 28.7k against 36.7k instructions per
//!    in-process call, `scripts/instructions.sh`). If
//!    the caller leaves first, [`Inline`]'s drop hands the rest to the
//!    runtime. Streams and `returnImmediately` calls spawn it
//!    ([`Drive::Spawn`]). Both are the same future; only who polls it differs.
//! 5. **Canceled** ([`cancel`]): a live execution is canceled by its own actor
//!    (so cancel and completion are decided in order by one writer); a task
//!    with none is canceled through the same hook and persist loop.
//! 6. **Ended.** The turn ends at a terminal state or INPUT_REQUIRED
//!    ([`TaskState::ends_turn`]), when the agent returns (no final state fails
//!    the task, as do an error, a panic, an invalid event or the inactivity
//!    watchdog), or on cancel. The slot is freed before blocking callers hear
//!    of it, so their next call finds the task idle; the job is finished
//!    (COMPLETED, or FAILED with the reason).
//! 7. **Shutdown.** New executions are refused; running ones get the grace
//!    period. Those still running then are stopped and, with a job store, left
//!    PENDING for the next start (without one they are failed: nothing could
//!    resume them).
//! 8. **Recovered.** On start, the maintenance loop's recovery pass marks
//!    RUNNING jobs whose heartbeat is older than the stale limit ABANDONED
//!    (their tasks FAILED with the reason), puts the others back to PENDING,
//!    and resumes every PENDING job with bounded parallelism: the agent gets
//!    the stored task and its last checkpoint, so it skips completed turns.
//!    Finished jobs' records are deleted after the job retention period;
//!    terminal tasks after the (separate, longer) task retention period.

mod actor;
pub(crate) mod apply;
mod cancel;
pub(crate) mod cluster;
pub(crate) mod feed;
pub(crate) mod jobs;
mod persist;
mod progress;
mod signals;
pub(crate) use self::persist::keep_history;
pub(crate) use self::progress::Progress;

use foldhash::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use a2a_core::{A2aError, ErrorKind, Metadata, StreamResponse, TaskState};
use futures::FutureExt as _;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::actor::Actor;
use self::cancel::CancelReply;
pub(crate) use self::feed::{StreamKind, Subscription, TaskFeeds, Update, subscriber_stream};
pub(crate) use self::signals::Signals;
use crate::observer::ExecutionObserver;
use crate::push::PushDispatcher;
use crate::store::{JobStore, StoredTask, TaskStore, Version};
use crate::{AgentExecutor, CallContext, Caller, EventQueue, RequestContext};

/// Limits and timeouts of the execution pipeline. Start from
/// `ExecutionConfig::default()` and set the fields you need (more will come).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecutionConfig {
    /// Fail a task whose agent writes no event for this long (off by default).
    pub inactivity_timeout: Option<Duration>,
    /// Most executions running at once (default 10,000); more are refused
    /// with a retryable busy error.
    pub max_concurrent: Option<usize>,
    /// Most executions running at once for one caller identity, counted
    /// across tenants (default 1,000). Anonymous callers (no authentication)
    /// share one identity, so only `max_concurrent` applies to them.
    pub max_concurrent_per_caller: Option<usize>,
    /// Most subscribers (SubscribeToTask and streaming SendMessage) on one
    /// task at once (default 1,000).
    pub max_subscribers_per_task: usize,
    /// Most open subscriptions of one caller identity at once, across tasks
    /// and tenants (default 1,000; not applied to anonymous callers).
    pub max_subscribers_per_caller: usize,
    /// Most tasks one caller identity keeps in the store, across tenants
    /// (default 100,000; not applied to anonymous callers): a new task over
    /// it is refused with a retryable busy error until retention removes
    /// old ones. Counts are read from the store once a minute per caller.
    pub max_tasks_per_caller: Option<u64>,
    /// History messages kept per task (default 1,000): older ones are
    /// dropped from the task as new ones arrive (its event log keeps them).
    pub max_history: Option<usize>,
    /// Events buffered per subscriber before it is resynced from the store.
    pub subscriber_buffer: usize,
    /// Events buffered between the agent and the pipeline.
    pub agent_buffer: usize,
    /// How long an agent may take to return after being told to stop, and how
    /// long its cancel hook may run.
    pub cancel_grace: Duration,
    /// How long an execution's store writes are retried (with backoff) while
    /// the store fails (a lost connection, a busy or full database) before
    /// the execution stops (default 30 s). A durable execution stopped so is
    /// left PENDING and resumed once the store takes writes again; its
    /// caller gets `Unavailable` with the store's reason.
    pub store_retry: Duration,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        ExecutionConfig {
            inactivity_timeout: None,
            max_concurrent: Some(10_000),
            max_concurrent_per_caller: Some(1_000),
            max_subscribers_per_task: 1_000,
            max_subscribers_per_caller: 1_000,
            max_tasks_per_caller: Some(100_000),
            max_history: Some(1_000),
            subscriber_buffer: 64,
            agent_buffer: 64,
            cancel_grace: cancel::DEFAULT_CANCEL_GRACE,
            store_retry: Duration::from_secs(30),
        }
    }
}

/// A started execution: its progress (whose signals also tell when it ends).
pub(crate) struct Started {
    /// The task's id (shared with the execution).
    pub(crate) task_id: Arc<str>,
    pub(crate) progress: progress::Watcher,
    /// The execution itself, when the caller drives it (see [`Drive::Inline`]).
    pub(crate) inline: Option<Inline>,
}

/// Who polls a new execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drive {
    /// A task of its own.
    Spawn,
    /// The caller, until it stops waiting; whatever is left then gets a task of
    /// its own. A blocking call whose agent answers at once thus costs no task
    /// spawn and no wakeup across tasks.
    Inline,
}

type ExecutionFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// An execution driven by the call that started it. Dropping it before the
/// execution ends (the call returned, or its client went away) hands the rest
/// to the runtime, so the agent is never cut off by its caller leaving.
pub(crate) struct Inline {
    execution: Option<ExecutionFuture>,
}

impl Inline {
    /// Runs the execution until it ends (pending forever once it has).
    pub(crate) async fn run(&mut self) {
        std::future::poll_fn(|cx| match self.execution.as_mut() {
            Some(execution) => {
                std::task::ready!(execution.as_mut().poll(cx));
                self.execution = None;
                std::task::Poll::Ready(())
            }
            None => std::task::Poll::Pending,
        })
        .await;
    }

    /// Gives the execution one turn: an agent that answers at once has then
    /// published everything, with no task spawned and no wakeup in between.
    pub(crate) async fn step(&mut self) {
        std::future::poll_fn(|cx| {
            if let Some(execution) = self.execution.as_mut() {
                if execution.as_mut().poll(cx).is_ready() {
                    self.execution = None;
                }
            }
            std::task::Poll::Ready(())
        })
        .await;
    }

    /// Whether the execution has ended.
    pub(crate) fn is_done(&self) -> bool {
        self.execution.is_none()
    }
}

impl Drop for Inline {
    fn drop(&mut self) {
        if let Some(execution) = self.execution.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(execution);
                }
                // Outside any runtime there is nothing left to run it on.
                Err(_) => tracing::warn!("execution dropped outside a runtime"),
            }
        }
    }
}

pub(crate) enum Control {
    /// Cancel the task on behalf of `call` (which the agent's cancel hook sees).
    Cancel {
        reply: CancelReply,
        call: Box<CallContext>,
        metadata: Option<Metadata>,
    },
    /// Stop without writing: the job's lease belongs to another node now.
    Relinquish,
}

/// What the actors share with the manager.
pub(crate) struct Shared {
    pub(crate) executor: Arc<dyn AgentExecutor>,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) push: Option<PushDispatcher>,
    pub(crate) feeds: Arc<TaskFeeds>,
    pub(crate) config: ExecutionConfig,
    /// Fires when the grace period is over: running executions stop.
    pub(crate) shutdown: CancellationToken,
    /// Durable job records (none: executions live in memory only).
    pub(crate) jobs: Option<Arc<dyn JobStore>>,
    pub(crate) job_config: jobs::JobConfig,
    pub(crate) clock: jobs::Clock,
    /// Fires when shutdown begins: the maintenance loop stops.
    pub(crate) stopping: CancellationToken,
    /// Fires once recovery has sorted the jobs a previous process left: new
    /// executions are recorded only after it, so recovery never takes this
    /// process's own running jobs for a dead one's.
    pub(crate) recovery_marked: CancellationToken,
    /// Watches executions (none: nothing is observed).
    pub(crate) observer: Option<Arc<dyn crate::observer::Observer>>,
    /// The cluster this node belongs to (none: a single server).
    pub(crate) cluster: Option<cluster::ClusterLink>,
    /// Jobs left RUNNING by executions that stopped because the store
    /// failed, and whose release failed too: the maintenance loop releases
    /// them (and resumes them) once the store takes writes again, so none
    /// stays RUNNING under this node's live heartbeat with nothing running it.
    pub(crate) stranded: Mutex<HashMap<String, Stranded>>,
    /// Wakes the maintenance loop when a job is stranded.
    pub(crate) stranded_changed: tokio::sync::Notify,
}

/// A job a failing store stopped, waiting to be brought back.
#[derive(Debug)]
pub(crate) struct Stranded {
    /// How many times it was stopped (or could not be released) in a row.
    attempts: u32,
    /// When to try next: the wait doubles with each attempt (1 s to 30 s),
    /// so a task the store keeps refusing is not rerun in a tight loop.
    due: tokio::time::Instant,
    /// Being brought back now (by a resume that has not ended yet).
    taken: bool,
}

impl Shared {
    fn lock_stranded(&self) -> MutexGuard<'_, HashMap<String, Stranded>> {
        self.stranded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Marks `task_id`'s job for the maintenance loop to release and resume,
    /// a little later each time it comes back.
    pub(crate) fn strand(&self, task_id: &str) {
        let mut stranded = self.lock_stranded();
        let entry = stranded.entry(task_id.to_owned()).or_insert(Stranded {
            attempts: 0,
            due: tokio::time::Instant::now(),
            taken: false,
        });
        let wait = Duration::from_secs(1u64 << entry.attempts.min(5)).min(Duration::from_secs(30));
        entry.attempts = entry.attempts.saturating_add(1);
        entry.due = tokio::time::Instant::now() + wait;
        entry.taken = false;
        drop(stranded);
        self.stranded_changed.notify_one();
    }

    /// Completes when a stranded job is due for another try. No timer runs
    /// while none is stranded (a paused test clock jumps straight on).
    pub(crate) async fn stranded_due(&self) {
        loop {
            // Made before the look, so a job stranded in between still wakes it.
            let changed = self.stranded_changed.notified();
            let next = self
                .lock_stranded()
                .values()
                .filter(|s| !s.taken)
                .map(|s| s.due)
                .min();
            match next {
                Some(due) => tokio::select! {
                    () = tokio::time::sleep_until(due) => return,
                    () = changed => {}
                },
                None => changed.await,
            }
        }
    }

    /// The stranded jobs due for another try, marked as being tried.
    pub(crate) fn take_stranded(&self) -> Vec<String> {
        let now = tokio::time::Instant::now();
        let mut stranded = self.lock_stranded();
        if stranded.is_empty() {
            return Vec::new();
        }
        stranded
            .iter_mut()
            .filter(|(_, s)| !s.taken && s.due <= now)
            .map(|(task_id, s)| {
                s.taken = true;
                task_id.clone()
            })
            .collect()
    }

    /// Forgets a stranded job: it was brought back (or is gone).
    pub(crate) fn settle_stranded(&self, task_id: &str) {
        self.lock_stranded().remove(task_id);
    }
}

struct Live {
    caller: Caller,
    signals: Arc<Signals>,
}

/// Starts executions and reaches running ones.
pub(crate) struct Executions {
    shared: Arc<Shared>,
    live: Mutex<HashMap<Arc<str>, Live>>,
    /// Running executions per caller identity (the user, whatever tenant it
    /// names: switching tenants does not escape the limit).
    per_caller: Mutex<HashMap<String, usize>>,
    permits: Option<Arc<Semaphore>>,
    tracker: TaskTracker,
    draining: AtomicBool,
}

/// Everything needed to start an execution.
pub(crate) struct Start {
    /// Boxed: it is large, and moves through several calls before the agent gets it.
    pub(crate) ctx: Box<RequestContext>,
    pub(crate) caller: Caller,
    /// Boxed, as the context: a task is large, and only a follow-up has one.
    pub(crate) stored: Option<Box<StoredTask>>,
    /// A job resumed after a restart: its record exists (and was claimed).
    pub(crate) resumed: bool,
    /// The execution's observer, opened by its call's (`None` for a resumed
    /// job: the handler's observer opens its own).
    pub(crate) observer: Option<Box<dyn ExecutionObserver>>,
}

/// Releases the caller's execution slot when an execution ends.
pub(crate) struct Slot {
    executions: Arc<Executions>,
    /// The caller identity whose count this execution holds (only with a per-caller limit).
    counted: Option<String>,
    task_id: Arc<str>,
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(caller) = &self.counted {
            self.executions.release_count(caller);
        }
        let live = self.executions.lock_live().remove(&*self.task_id);
        if let Some(live) = live {
            live.signals.end();
        }
        self.executions.shared.feeds.prune(&self.task_id);
    }
}

impl Executions {
    pub(crate) fn new(mut shared: Shared) -> Arc<Self> {
        // A cluster node sends its tasks' pushes from the store's outbox.
        if shared.cluster.is_some() {
            shared.push = shared.push.take().map(PushDispatcher::with_outbox);
        }
        let permits = shared
            .config
            .max_concurrent
            .map(|n| Arc::new(Semaphore::new(n)));
        Arc::new(Executions {
            shared: Arc::new(shared),
            live: Mutex::new(HashMap::default()),
            per_caller: Mutex::new(HashMap::default()),
            permits,
            tracker: TaskTracker::new(),
            draining: AtomicBool::new(false),
        })
    }

    fn lock_live(&self) -> MutexGuard<'_, HashMap<Arc<str>, Live>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn counts(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.per_caller
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Gives back one of `caller`'s execution slots.
    fn release_count(&self, caller: &str) {
        let mut counts = self.counts();
        if let Some(count) = counts.get_mut(caller) {
            *count -= 1;
            if *count == 0 {
                counts.remove(caller);
            }
        }
    }

    /// Waits up to `timeout` for a running execution of `task_id` to end,
    /// here or, in a cluster, on another node.
    pub(crate) async fn wait_idle(&self, task_id: &str, timeout: Duration) -> bool {
        let signals = self.lock_live().get(task_id).map(|l| l.signals.clone());
        match signals {
            None => self.wait_idle_elsewhere(task_id, timeout).await,
            Some(signals) => tokio::time::timeout(timeout, signals.ended()).await.is_ok(),
        }
    }

    /// The answer at an execution limit: retryable, with when to come back
    /// (an execution slot frees up when any running task settles).
    fn busy() -> A2aError {
        A2aError::busy(
            "the server is at its execution limit; retry later",
            Duration::from_secs(1),
        )
    }

    /// Whether executions are recorded as durable jobs.
    pub(crate) fn is_durable(&self) -> bool {
        self.shared.jobs.is_some()
    }

    /// Takes new executions without a recovery pass (none can run).
    pub(crate) fn mark_recovered(&self) {
        self.shared.recovery_marked.cancel();
    }

    /// Whether a new execution for `caller` would be refused for a limit.
    pub(crate) fn at_limit(&self, caller: &Caller) -> bool {
        let global = self
            .permits
            .as_ref()
            .is_some_and(|permits| permits.available_permits() == 0);
        let own = self
            .shared
            .config
            .max_concurrent_per_caller
            .filter(|_| !caller.user.is_empty())
            .is_some_and(|max| self.counts().get(&caller.user).is_some_and(|n| *n >= max));
        global || own
    }

    /// The execution settings.
    pub(crate) fn config(&self) -> &ExecutionConfig {
        &self.shared.config
    }

    /// Whether shutdown has begun.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Starts an execution. With a job store it is recorded as a RUNNING job
    /// first, so that once this returns (and the client can learn the task
    /// id), a crash no longer loses it.
    pub(crate) async fn start(
        self: &Arc<Self>,
        mut start: Start,
        drive: Drive,
    ) -> Result<Started, A2aError> {
        if self.is_draining() {
            return Err(A2aError::internal("the server is shutting down"));
        }
        let permit = match &self.permits {
            Some(permits) => Some(
                permits
                    .clone()
                    .try_acquire_owned()
                    .map_err(|_| Self::busy())?,
            ),
            None => None,
        };
        // One copy of the id, shared by the live map, the slot, the queue and
        // the actor.
        let task_id: Arc<str> = Arc::from(start.ctx.task_id.as_str());
        // Counting per caller costs a map update per execution; only a limit needs it.
        // Anonymous callers are everyone at once (no authentication): only the
        // global limit applies to them.
        let per_caller = self
            .shared
            .config
            .max_concurrent_per_caller
            .filter(|_| !start.caller.user.is_empty());
        let counted = match per_caller {
            Some(max) => {
                let mut counts = self.counts();
                let count = counts.entry(start.caller.user.clone()).or_insert(0);
                if *count >= max {
                    if *count == 0 {
                        counts.remove(&start.caller.user);
                    }
                    return Err(Self::busy());
                }
                *count += 1;
                Some(start.caller.user.clone())
            }
            None => None,
        };
        let (signals, inbox) = Signals::new();
        {
            let mut live = self.lock_live();
            if live.contains_key(&*task_id) {
                drop(live);
                if let Some(caller) = &counted {
                    self.release_count(caller);
                }
                return Err(A2aError::unsupported_operation(format!(
                    "task {task_id} is still being worked on; wait for it or cancel it"
                )));
            }
            live.insert(
                Arc::clone(&task_id),
                Live {
                    caller: start.caller.clone(),
                    signals: signals.clone(),
                },
            );
        }
        let slot = Slot {
            executions: self.clone(),
            counted,
            task_id: Arc::clone(&task_id),
            _permit: permit,
        };
        let job = match (&self.shared.jobs, start.resumed) {
            (None, _) => jobs::JobPhase::Volatile,
            // Claimed by recovery: the record is there.
            (Some(_), true) => jobs::JobPhase::Open,
            (Some(_), false) => {
                self.shared.recovery_marked.cancelled().await;
                let record = jobs::PendingRecord {
                    request: jobs::JobRequest::of(&start.ctx)?,
                    at: self.shared.clock.now(),
                };
                if self.shared.store.writes_jobs() && start.stored.is_none() {
                    // A new task's id reaches the client only with its first
                    // write, which records the job in the same transaction.
                    jobs::JobPhase::Unrecorded(Box::new(record))
                } else {
                    // A follow-up's client knows the task already: record now.
                    // On failure the slot's drop unregisters the execution. A
                    // caller that leaves during the write may still leave the
                    // record behind with nothing to run it, so the write runs
                    // on its own and ends such a record itself.
                    let recorded =
                        jobs::record_detached(&self.shared, &record, &task_id, &start.caller).await;
                    recorded.map_err(|err| match err {
                        crate::store::StoreError::AlreadyExists(_) => {
                            A2aError::unsupported_operation(format!(
                                "task {task_id} is still being worked on; wait for it or cancel it"
                            ))
                        }
                        err => err.into(),
                    })?;
                    jobs::JobPhase::Open
                }
            }
        };
        // In cluster mode the job is this node's lease, and every write of
        // the execution carries it: a job this node records starts at
        // attempt 1; a claimed one is read back for its attempt (a claim is
        // rare, so the read costs nothing that matters). A job some other
        // node holds already gets an epoch no job has (0): its first write
        // is refused, and the execution stops there.
        let lease_epoch = match (&self.shared.cluster, &self.shared.jobs) {
            (Some(_), Some(jobs)) if start.resumed => match jobs.get(&task_id).await? {
                Some(job)
                    if job.state == crate::store::JobState::Running
                        && job.node == self.shared.job_config.node =>
                {
                    Some(job.attempts)
                }
                _ => Some(0),
            },
            (Some(_), Some(_)) => Some(1),
            _ => None,
        };
        // A task taken over (or taken back after a restart) first sends what
        // its outbox still owes its webhooks, ahead of its own events.
        if let (true, Some(_), Some(push)) =
            (start.resumed, &self.shared.cluster, &self.shared.push)
        {
            let owed = push.redeliver(&start.caller, &task_id).await;
            if owed > 0 {
                tracing::info!(%task_id, owed, "sending the pushes a previous node left");
            }
        }
        if start.resumed {
            // Read again now that the execution is registered: a cancel that
            // came in between either found it live, or wrote first and is seen
            // here. Either way no agent runs on a task that has ended.
            match self.shared.store.get(&start.caller, &task_id).await {
                Ok(stored) if stored.task.status.state.ends_turn() => {
                    return Err(A2aError::new(
                        ErrorKind::TaskNotCancelable,
                        format!("task {task_id} ended before it could be resumed"),
                    ));
                }
                Ok(stored) => start.stored = Some(Box::new(stored)),
                Err(crate::store::StoreError::NotFound(_)) => {}
                Err(err) => return Err(err.into()),
            }
        }
        let (progress_tx, progress) = progress::channel(&signals);
        let (event_tx, event_rx) = mpsc::channel(self.shared.config.agent_buffer.max(1));
        let mut ctx = start.ctx;
        let observer = match (start.observer, &self.shared.observer) {
            (None, Some(observer)) if start.resumed => observer.resumed(&mut ctx),
            (observer, _) => observer,
        };
        let context_id: Arc<str> = Arc::from(ctx.context_id.as_str());
        let queue = EventQueue::new(event_tx, Arc::clone(&task_id), Arc::clone(&context_id));
        let token = ctx.cancellation.clone();
        // A new task's history opens with the user's message; a follow-up's
        // stored task already holds it.
        // Shared with the agent's context, not copied.
        let message = start.stored.is_none().then(|| Arc::clone(&ctx.message));
        let executor = self.shared.executor.clone();
        let agent = async move { executor.execute(*ctx, queue).await };
        let producer = std::panic::AssertUnwindSafe(agent).catch_unwind();

        let started_id = Arc::clone(&task_id);
        let actor = Actor {
            shared: self.shared.clone(),
            task_id,
            context_id,
            caller: start.caller,
            task: start.stored.map(|stored| persist::Current::from(*stored)),
            message,
            replied: false,
            token,
            progress: progress_tx,
            slot: Some(slot),
            job,
            checkpoint_written: false,
            observer,
            lease_epoch,
            fenced: false,
        };
        // The execution's span: a child of the call's, entered whenever the
        // execution runs (inline or on a task of its own).
        let traced = crate::telemetry::execution_span(&actor.task_id, &actor.context_id);
        let execution = self
            .tracker
            .track_future(traced.instrument(actor.run(event_rx, inbox, producer)));
        let inline = match drive {
            Drive::Spawn => {
                tokio::spawn(execution);
                None
            }
            Drive::Inline => Some(Inline {
                execution: Some(Box::pin(execution)),
            }),
        };
        Ok(Started {
            task_id: started_id,
            progress,
            inline,
        })
    }

    /// Stops accepting executions and waits up to `deadline` for running ones;
    /// those still running then are stopped: left PENDING for the next start
    /// with a job store, failed without one.
    pub(crate) async fn shutdown(&self, deadline: Duration) {
        self.draining.store(true, Ordering::Release);
        self.shared.stopping.cancel();
        self.tracker.close();
        if tokio::time::timeout(deadline, self.tracker.wait())
            .await
            .is_err()
        {
            self.shared.shutdown.cancel();
            self.tracker.wait().await;
        }
        self.shared.shutdown.cancel();
    }

    /// A subscriber on a task's events (subscribe before reading a snapshot or
    /// starting an execution, so nothing falls in between).
    pub(crate) fn subscribe(
        &self,
        task_id: &str,
        caller: &Caller,
    ) -> Result<Subscription, A2aError> {
        self.shared.feeds.subscribe_as(task_id, &caller.user)
    }

    /// A stream of `receiver`'s events; `done` ends it when the execution ends.
    pub(crate) fn stream(
        &self,
        subscription: Subscription,
        first: Option<(StreamResponse, Version)>,
        kind: StreamKind,
        caller: Caller,
        done: Option<Arc<Signals>>,
    ) -> impl futures::Stream<Item = Result<StreamResponse, A2aError>> + Send + 'static {
        subscriber_stream(
            subscription,
            first,
            kind,
            self.shared.store.clone(),
            caller,
            done,
        )
    }
}

/// Whether an event of `task_id` has anyone to go to (subscribers or webhooks),
/// so events nobody receives are never built.
pub(crate) async fn is_watched(shared: &Shared, caller: &Caller, task_id: &str) -> bool {
    shared.feeds.is_watched(task_id) || has_webhooks(shared, caller, task_id).await
}

async fn has_webhooks(shared: &Shared, caller: &Caller, task_id: &str) -> bool {
    match &shared.push {
        Some(push) => push
            .configs()
            .list(caller, task_id)
            .await
            .is_ok_and(|c| !c.is_empty()),
        None => false,
    }
}

/// Hands a persisted event to push delivery and to the task's subscribers.
pub(crate) async fn publish(
    shared: &Shared,
    caller: &Caller,
    task_id: &str,
    event: Arc<StreamResponse>,
    version: Version,
    state: TaskState,
) {
    let push = match &shared.push {
        Some(push) if has_webhooks(shared, caller, task_id).await => Some(push),
        _ => None,
    };
    let subscribers = shared.feeds.sender(task_id);
    // Most events of a blocking call have nowhere to go: build nothing for them.
    if push.is_none() && subscribers.is_none() {
        return;
    }
    if let Some(push) = push {
        // Version 0: a new task's snapshot, never stored as a version.
        push.dispatch(
            caller,
            task_id,
            event.clone(),
            (version > 0).then_some(version),
        );
    }
    if let Some(subscribers) = subscribers {
        // No receivers is fine: nobody is watching this task right now.
        let _ = subscribers.send(Update {
            version,
            event,
            state: Some(state),
            origin: feed::Origin::Local,
        });
    }
}
