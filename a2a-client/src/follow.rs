//! Following a task until it settles: the one follower behind the client's
//! tracked blocking sends, the hub's deliveries and the gateway's remote
//! agents.
//!
//! A [`TaskFollower`] reads the task's events from a stream while it has
//! one (the stream of a send, or a subscription). When that stream is cut,
//! or its caller asks ([`TaskFollower::read_now`]), it reads the task
//! (`GetTask`); then it pauses, the pause doubling from a first one up to a
//! longest one, and subscribes again, or reads again when it polls. Its
//! caller looks at each update and decides when the task has settled for it:
//! it stops calling [`TaskFollower::next`].
//!
//! ```no_run
//! # async fn demo(client: a2a_client::Client) -> Result<(), a2a_client::FollowError> {
//! use a2a_client::{FollowUpdate, TaskFollower};
//! use a2a_core::StreamResponse;
//!
//! let mut follower = TaskFollower::subscribing(&client, "task-1");
//! let task = loop {
//!     match follower.next().await? {
//!         // The stream says it settled: the read that follows has it whole.
//!         FollowUpdate::Event(StreamResponse::StatusUpdate(update))
//!             if update.status.state.is_settled() => follower.read_now(),
//!         FollowUpdate::Event(_) => {}
//!         FollowUpdate::Task(task) if task.status.state.is_settled() => break task,
//!         FollowUpdate::Task(_) => {}
//!     }
//! };
//! # let _ = task; Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use a2a_core::{
    ErrorKind, GetTaskRequest, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use futures::StreamExt as _;
use tokio::time::Instant;

use crate::{CallOptions, Client, ClientError, ClientErrorKind, EventStream};

/// The first pause unless told otherwise.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause unless told otherwise.
const LONGEST_PAUSE: Duration = Duration::from_secs(30);
/// Failed reads in a row before giving up, unless told otherwise.
const GIVE_UP_AFTER: u32 = 3;

/// What a [`TaskFollower`] saw.
#[derive(Debug, Clone)]
pub enum FollowUpdate {
    /// An event of the stream or subscription being read.
    Event(StreamResponse),
    /// The task as read (`GetTask`): after a stream was cut, when asked
    /// for, or when polling.
    Task(Task),
}

/// Why a [`TaskFollower`] stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FollowError {
    /// Its stop signal ([`TaskFollower::stop_when`]) fired.
    #[error("following the task was stopped")]
    Stopped,
    /// The stream it started on was cut before it named a task, so there is
    /// nothing to follow.
    #[error(transparent)]
    Cut(StreamCut),
    /// The task could not be read: the agent says it does not exist, reads
    /// failed too often in a row, or the deadline passed. The error names
    /// the task ([`ClientError::task_id`]) when it is known.
    #[error(transparent)]
    Failed(ClientError),
}

/// How a stream ended before it named a task.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamCut {
    /// It broke.
    #[error(transparent)]
    Broke(ClientError),
    /// It ended.
    #[error("the stream ended before it named a task")]
    Ended,
    /// It said nothing for longer than the idle timeout
    /// ([`FollowOptions::idle_timeout`]).
    #[error("the stream said nothing for {0:?}")]
    Silent(Duration),
}

/// How a [`TaskFollower`] follows: what it does between streams, and its
/// limits.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// Whether a read that leaves the caller waiting is followed by a new
    /// subscription (default) or, polling, by another read.
    pub resubscribe: bool,
    /// The pause before subscribing or reading again (default 50 ms); it
    /// doubles each time up to `longest_pause`, and goes back to it when
    /// the caller says the task moved ([`TaskFollower::poll_sooner`]).
    pub first_pause: Duration,
    /// The longest pause (default 30 s).
    pub longest_pause: Duration,
    /// Failed reads in a row before giving up (default 3; at least 1). A
    /// read answered with `TaskNotFound` gives up at once.
    pub give_up_after: u32,
    /// How much history each read asks for (default: the agent's choice).
    pub history_length: Option<i32>,
    /// Bounds each read and each subscription's opening (default: only the
    /// client's own limits).
    pub call_timeout: Option<Duration>,
    /// How long a stream may say nothing before it counts as cut (default:
    /// only the client's own limits).
    pub idle_timeout: Option<Duration>,
    /// When to give up on the task: reading or pausing past it fails with a
    /// timeout that names the task.
    pub deadline: Option<Instant>,
    /// The options of every call the follower makes.
    pub call_options: Option<CallOptions>,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            resubscribe: true,
            first_pause: FIRST_PAUSE,
            longest_pause: LONGEST_PAUSE,
            give_up_after: GIVE_UP_AFTER,
            history_length: None,
            call_timeout: None,
            idle_timeout: None,
            deadline: None,
            call_options: None,
        }
    }
}

/// What stops a follower, as given to [`TaskFollower::stop_when`].
type StopSignal<'c> = Pin<Box<dyn Future<Output = ()> + Send + 'c>>;

/// What [`TaskFollower::next`] does next.
enum Step {
    /// Reads the events of a stream.
    Stream(EventStream),
    /// Subscribes to the task.
    Subscribe,
    /// Reads the task.
    Read,
    /// Pauses, then subscribes or reads.
    Pause { then_subscribe: bool },
    /// The stop signal fired.
    Stopped,
}

/// Follows one task through a [`Client`] until its caller has heard
/// enough: see [the module](crate::follow).
pub struct TaskFollower<'c> {
    client: &'c Client,
    task_id: Option<String>,
    step: Step,
    options: FollowOptions,
    pause: Duration,
    failures: u32,
    stop: Option<StopSignal<'c>>,
}

impl std::fmt::Debug for TaskFollower<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskFollower")
            .field("task_id", &self.task_id)
            .field("options", &self.options)
            .field("pause", &self.pause)
            .field("failures", &self.failures)
            .finish_non_exhaustive()
    }
}

impl<'c> TaskFollower<'c> {
    fn starting(client: &'c Client, task_id: Option<String>, step: Step) -> Self {
        TaskFollower {
            client,
            task_id,
            step,
            options: FollowOptions::default(),
            pause: FIRST_PAUSE,
            failures: 0,
            stop: None,
        }
    }

    /// Follows task `task_id`, starting with a subscription to it.
    pub fn subscribing(client: &'c Client, task_id: impl Into<String>) -> Self {
        TaskFollower::starting(client, Some(task_id.into()), Step::Subscribe)
    }

    /// Follows task `task_id`, starting with a read of it.
    pub fn reading(client: &'c Client, task_id: impl Into<String>) -> Self {
        TaskFollower::starting(client, Some(task_id.into()), Step::Read)
    }

    /// Follows the task of `stream` (a send's stream, say), starting with
    /// its events. The task is `task_id` if known, else the first task an
    /// event names; a stream cut before either is [`FollowError::Cut`].
    pub fn on_stream(client: &'c Client, stream: EventStream, task_id: Option<String>) -> Self {
        TaskFollower::starting(client, task_id, Step::Stream(stream))
    }

    /// Follows as `options` say.
    #[must_use]
    pub fn options(mut self, options: FollowOptions) -> Self {
        self.pause = options.first_pause;
        self.options = options;
        self
    }

    /// Stops following, with [`FollowError::Stopped`], once `signal`
    /// completes (a cancellation token's `cancelled_owned()`, say).
    #[must_use]
    pub fn stop_when(mut self, signal: impl Future<Output = ()> + Send + 'c) -> Self {
        self.stop = Some(Box::pin(signal));
        self
    }

    /// The task followed, once known.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// Leaves the stream being read (its events said what the caller waited
    /// for): the next update is a read of the task.
    pub fn read_now(&mut self) {
        if !matches!(self.step, Step::Stopped) {
            self.step = Step::Read;
        }
    }

    /// Goes back to the first pause: the task has moved, so it is worth
    /// looking again soon.
    pub fn poll_sooner(&mut self) {
        self.pause = self.options.first_pause;
    }

    /// The next event or read of the task. A call dropped before it ends
    /// loses at most the stream being read, and a call after an error
    /// (but [`FollowError::Stopped`], which stays) starts over: the next call
    /// reads the task.
    pub async fn next(&mut self) -> Result<FollowUpdate, FollowError> {
        loop {
            let advanced = match std::mem::replace(&mut self.step, Step::Read) {
                Step::Stopped => Err(FollowError::Stopped),
                Step::Stream(stream) => self.event(stream).await,
                Step::Subscribe => self.subscribe().await.map(|()| None),
                Step::Read => self.read().await,
                Step::Pause { then_subscribe } => self.pause(then_subscribe).await.map(|()| None),
            };
            match advanced {
                Ok(Some(update)) => return Ok(update),
                Ok(None) => {}
                Err(FollowError::Stopped) => {
                    // A finished signal must not be polled again.
                    self.stop = None;
                    self.step = Step::Stopped;
                    return Err(FollowError::Stopped);
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// The next event of `stream`; when the stream is cut, the next step
    /// is a read of the task.
    async fn event(
        &mut self,
        mut stream: EventStream,
    ) -> Result<Option<FollowUpdate>, FollowError> {
        let idle = self.options.idle_timeout;
        let next = async {
            match idle {
                Some(idle) => tokio::time::timeout(idle, stream.next())
                    .await
                    .map_err(|_| idle),
                None => Ok(stream.next().await),
            }
        };
        let next = within(self.options.deadline, self.task_id.as_deref(), next);
        let got = until_stopped(&mut self.stop, next)
            .await?
            .map_err(FollowError::Failed)?;
        let cut = match got {
            Ok(Some(Ok(event))) => {
                self.learn(&event);
                self.step = Step::Stream(stream);
                return Ok(Some(FollowUpdate::Event(event)));
            }
            Ok(Some(Err(err))) => StreamCut::Broke(err),
            Ok(None) => StreamCut::Ended,
            Err(idle) => StreamCut::Silent(idle),
        };
        let Some(task_id) = &self.task_id else {
            return Err(FollowError::Cut(cut));
        };
        tracing::debug!(%task_id, %cut, "the task's stream was cut; reading the task");
        self.step = Step::Read;
        Ok(None)
    }

    /// Takes the task an event names as the one followed, unless one is.
    fn learn(&mut self, event: &StreamResponse) {
        if self.task_id.is_some() {
            return;
        }
        let id = match event {
            StreamResponse::Task(task) => &task.id,
            StreamResponse::StatusUpdate(update) => &update.task_id,
            StreamResponse::ArtifactUpdate(update) => &update.task_id,
            StreamResponse::Message(_) => return,
        };
        if !id.is_empty() {
            self.task_id = Some(id.clone());
        }
    }

    /// Opens a subscription; one that cannot be opened is followed by a
    /// read.
    async fn subscribe(&mut self) -> Result<(), FollowError> {
        let id = self.known_task()?;
        let request = SubscribeToTaskRequest {
            id,
            ..SubscribeToTaskRequest::default()
        };
        let options = &self.options;
        // Not resumed by the client: a cut is this follower's to handle.
        let call = self.client.streaming_once(
            a2a_core::operation::Request::SubscribeToTask(request),
            options.call_options.as_ref(),
        );
        let opened = within(
            options.deadline,
            self.task_id.as_deref(),
            bounded(options.call_timeout, call),
        );
        let opened = until_stopped(&mut self.stop, opened)
            .await?
            .map_err(FollowError::Failed)?;
        self.step = match opened {
            Ok(stream) => Step::Stream(stream),
            Err(err) => {
                tracing::debug!(task_id = ?self.task_id, error = %err, "no subscription to the task; reading it");
                Step::Read
            }
        };
        Ok(())
    }

    /// Reads the task. A failed read is tried again after a pause, up to
    /// the limit.
    async fn read(&mut self) -> Result<Option<FollowUpdate>, FollowError> {
        let id = self.known_task()?;
        let mut options = self.options.call_options.clone();
        if let Some(deadline) = self.options.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(FollowError::Failed(timed_out(Some(&id))));
            }
            options.get_or_insert_with(CallOptions::default).timeout = Some(left);
        }
        let request = GetTaskRequest {
            id: id.clone(),
            history_length: self.options.history_length,
            ..GetTaskRequest::default()
        };
        let call = self.client.get_task(request, options.as_ref());
        let read = until_stopped(&mut self.stop, bounded(self.options.call_timeout, call)).await?;
        match read {
            Ok(task) => {
                self.failures = 0;
                self.step = Step::Pause {
                    then_subscribe: self.options.resubscribe,
                };
                Ok(Some(FollowUpdate::Task(task)))
            }
            Err(err) => {
                let err = err.with_task_id(id);
                self.failures += 1;
                let gone = err.protocol_kind() == Some(ErrorKind::TaskNotFound);
                if gone || self.failures >= self.options.give_up_after.max(1) {
                    return Err(FollowError::Failed(err));
                }
                tracing::debug!(task_id = ?err.task_id(), error = %err, failures = self.failures, "reading the task failed; trying again");
                self.step = Step::Pause {
                    then_subscribe: false,
                };
                Ok(None)
            }
        }
    }

    /// Waits the pause (or, when the deadline comes first, until the
    /// deadline, and fails), doubles it, and moves on.
    async fn pause(&mut self, then_subscribe: bool) -> Result<(), FollowError> {
        let wait = self.pause;
        if let Some(deadline) = self.options.deadline {
            if Instant::now() + wait >= deadline {
                until_stopped(&mut self.stop, tokio::time::sleep_until(deadline)).await?;
                return Err(FollowError::Failed(timed_out(self.task_id.as_deref())));
            }
        }
        until_stopped(&mut self.stop, tokio::time::sleep(wait)).await?;
        let longest = self.options.longest_pause.max(self.options.first_pause);
        self.pause = wait.saturating_mul(2).min(longest);
        self.step = match then_subscribe {
            true => Step::Subscribe,
            false => Step::Read,
        };
        Ok(())
    }

    fn known_task(&self) -> Result<String, FollowError> {
        self.task_id
            .clone()
            .ok_or(FollowError::Cut(StreamCut::Ended))
    }
}

/// Runs `work` unless `stop` completes first.
async fn until_stopped<T>(
    stop: &mut Option<StopSignal<'_>>,
    work: impl Future<Output = T>,
) -> Result<T, FollowError> {
    let Some(stop) = stop else {
        return Ok(work.await);
    };
    tokio::select! {
        biased;
        () = stop.as_mut() => Err(FollowError::Stopped),
        done = work => Ok(done),
    }
}

/// Runs `call` within `limit`, if any.
async fn bounded<T>(
    limit: Option<Duration>,
    call: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    let Some(limit) = limit else {
        return call.await;
    };
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(ClientError::new(
            ClientErrorKind::Timeout,
            format!("no answer within {limit:?}"),
        ))
    })
}

/// A blocking send, or a follow of its task, that ran out of time, naming
/// the task when known.
fn timed_out(task_id: Option<&str>) -> ClientError {
    match task_id {
        Some(id) => ClientError::new(
            ClientErrorKind::Timeout,
            format!(
                "the agent did not finish task {id} in time; it goes on there: follow it with GetTask or SubscribeToTask"
            ),
        )
        .with_task_id(id),
        None => ClientError::new(
            ClientErrorKind::Timeout,
            "the agent did not answer in time",
        ),
    }
}

/// Runs `future` until `deadline` (if any); past it, a timeout naming `task_id`.
async fn within<T>(
    deadline: Option<Instant>,
    task_id: Option<&str>,
    future: impl Future<Output = T>,
) -> Result<T, ClientError> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, future)
            .await
            .map_err(|_| timed_out(task_id)),
        None => Ok(future.await),
    }
}

/// A blocking send that knows its task from the first event on: the
/// stream of the send when the agent streams, else `send_once` with
/// `returnImmediately`; then the task is followed, polling, until it
/// settles in answer to this message or `deadline` passes.
pub(crate) async fn send_tracked<SendOnce, Sending>(
    client: &Client,
    request: SendMessageRequest,
    options: Option<&CallOptions>,
    deadline: Option<Instant>,
    send_once: SendOnce,
) -> Result<SendMessageResponse, ClientError>
where
    SendOnce: FnOnce(SendMessageRequest) -> Sending,
    Sending: Future<Output = Result<SendMessageResponse, ClientError>>,
{
    let history_length = request
        .configuration
        .as_ref()
        .and_then(|c| c.history_length);
    let streams = client
        .card()
        .is_some_and(|card| card.capabilities.streaming == Some(true));
    let sent = request.message.message_id.clone();
    let follow_up = !request.message.task_id.is_empty();
    let follower = if streams {
        let stream = within(
            deadline,
            None,
            // The follower reads the task when this stream is cut.
            client.streaming_once(
                a2a_core::operation::Request::SendStreamingMessage(Box::new(request)),
                options,
            ),
        )
        .await??;
        TaskFollower::on_stream(client, stream, None)
    } else {
        let mut request = request;
        request
            .configuration
            .get_or_insert_with(Default::default)
            .return_immediately = true;
        match within(deadline, None, send_once(request)).await?? {
            SendMessageResponse::Task(task)
                if !task.status.state.is_settled() || predates(&task, &sent) =>
            {
                TaskFollower::reading(client, task.id)
            }
            settled_or_reply => return Ok(settled_or_reply),
        }
    };
    let mut follower = follower.options(FollowOptions {
        resubscribe: false,
        longest_pause: Duration::from_secs(2),
        give_up_after: 1,
        history_length,
        deadline,
        call_options: options.cloned(),
        ..FollowOptions::default()
    });
    until_answered(&mut follower, &sent, follow_up)
        .await
        .map_err(|err| match err {
            FollowError::Failed(err) | FollowError::Cut(StreamCut::Broke(err)) => err,
            FollowError::Cut(StreamCut::Silent(idle)) => ClientError::new(
                ClientErrorKind::Timeout,
                format!("the agent's stream said nothing for {idle:?}"),
            ),
            // No stop signal is set: only an ended stream is left.
            _ => ClientError::decode("the agent's stream ended before it named a task or replied"),
        })
}

/// The answer to message `sent`: a reply on the send's stream, the task
/// read once the stream said it settled, or a task read later (after the
/// stream was cut, or polling) whose settled state answers this message
/// (see [`predates`]).
async fn until_answered(
    follower: &mut TaskFollower<'_>,
    sent: &str,
    follow_up: bool,
) -> Result<SendMessageResponse, FollowError> {
    // A follow-up's stream may open with the task as it stood before this
    // message (INPUT_REQUIRED, say): that is not this message's answer.
    let mut before_this_message = follow_up;
    let mut settled = false;
    loop {
        match follower.next().await? {
            FollowUpdate::Event(event) => {
                let snapshot_before = std::mem::take(&mut before_this_message);
                let state = match event {
                    StreamResponse::Message(message) if follower.task_id().is_none() => {
                        return Ok(SendMessageResponse::Message(message));
                    }
                    StreamResponse::Task(_) if snapshot_before => None,
                    StreamResponse::Task(task) => Some(task.status.state),
                    StreamResponse::StatusUpdate(update) => Some(update.status.state),
                    StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
                };
                if state.is_some_and(TaskState::is_settled) {
                    settled = true;
                    follower.read_now();
                }
            }
            FollowUpdate::Task(task)
                if settled || (task.status.state.is_settled() && !predates(&task, sent)) =>
            {
                return Ok(SendMessageResponse::Task(task));
            }
            FollowUpdate::Task(_) => {}
        }
    }
}

/// Whether `task`'s status is older than message `sent`: its status message
/// comes before `sent` in the history. A follow-up to an INPUT_REQUIRED task
/// reads back that way until the agent answers it. Without both messages in
/// the history nothing can be told, and the status counts.
fn predates(task: &Task, sent: &str) -> bool {
    let Some(status) = &task.status.message else {
        return false;
    };
    let at = |id: &str| task.history.iter().position(|m| m.message_id == id);
    matches!((at(&status.message_id), at(sent)), (Some(said), Some(asked)) if said < asked)
}
