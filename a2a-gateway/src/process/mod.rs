//! Agents that are external commands: a long-running child process speaking
//! JSON lines over stdin/stdout, hosted as an [`AgentExecutor`].
//!
//! The gateway starts the command once and sends it every message for the
//! agent as an `execute` line; the child answers with `status`, `artifact`
//! and `reply` lines, each naming its task, so one child works on many tasks
//! at once. A child that dies is restarted with exponential backoff, and the
//! tasks it had are failed with a reason ("agent 'echo' exited (status 1);
//! restarted") or sent again, per [`InFlightPolicy`]. Its stderr goes to the
//! log with the agent's name. The protocol follows below (it is the crate's
//! `PROCESS_PROTOCOL.md`), with an example exchange;
//! `examples/gateway/agents/echo.py` in the repository is a commented agent
//! to start from.
//!
//! ```no_run
//! use a2a_core::AgentCard;
//! use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
//! use a2a_server::DefaultRequestHandler;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ProcessAgentConfig::new("python3").arg("agents/echo.py");
//! let agent = ProcessAgent::spawn("echo", config)?;
//! let handler = DefaultRequestHandler::builder(agent.clone(), AgentCard::default()).build();
//! // ... serve `handler` ...
//! # use a2a_server::RequestHandler as _;
//! handler.shutdown(std::time::Duration::from_secs(5)).await;
//! agent.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```
//!
//! In a [`Gateway`](crate::Gateway), [`ProcessAgent::definition`] hosts it
//! next to the other agents and stops the child when the gateway shuts down.
//!
//! No line the child writes can panic or stall the gateway: lines that are
//! not JSON, of an unknown type, about a task the child does not have, or
//! over [`ProcessAgentConfig::max_line_bytes`] are dropped with a warning
//! (after the first few, only every power of two is logged); a known line
//! that names a task but does not fit fails that task with the reason. A
//! child that writes faster than its tasks' events are stored is slowed down
//! by its own stdout pipe filling up.
//!
#![doc = include_str!("../../PROCESS_PROTOCOL.md")]

mod child;
mod config;
mod error;
mod protocol;
mod tasks;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    A2aError, AgentCard, Artifact, StreamResponse, TaskArtifactUpdateEvent, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use async_trait::async_trait;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::config::{DEFAULT_TASK_TIMEOUT, INHERITED_ENV, InFlightPolicy, ProcessAgentConfig};
pub use self::error::ProcessError;
use self::protocol::{CheckpointLine, Execute, FromAgent};
use self::tasks::{Inbound, Shared};
use crate::{AgentDefinition, AgentKind, StopAgent};

/// An agent that is an external command. Cheap to clone; the child is
/// stopped by [`shutdown`](Self::shutdown), or killed when the last clone is
/// dropped.
#[derive(Debug, Clone)]
pub struct ProcessAgent {
    handle: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // No one can ask for a graceful stop any more.
        self.shared.stop(Duration::ZERO);
    }
}

/// Where an agent's child process stands, from [`ProcessAgent::state`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessState {
    /// Running, waiting to restart, or stopped.
    pub phase: Phase,
    /// Which child this is: 1 for the first, one more per restart.
    pub generation: u64,
    /// The running child's process id.
    pub pid: Option<u32>,
    /// How many times the child has been restarted.
    pub restarts: u64,
    /// How the last child ended ("exited (status 1)"), if one has.
    pub last_exit: Option<String>,
}

/// The phase of an agent's child process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// A child runs.
    Running,
    /// The child died; a new one starts after the backoff.
    Restarting,
    /// The agent was shut down.
    Stopped,
}

impl ProcessAgent {
    /// Starts the command and the task that supervises it. Must be called
    /// within a Tokio runtime. Fails at once if the program cannot be
    /// started (not found, not executable); a program that starts and then
    /// dies is restarted like any child that dies.
    pub fn spawn(
        name: impl Into<String>,
        config: ProcessAgentConfig,
    ) -> Result<ProcessAgent, ProcessError> {
        let name = name.into();
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| ProcessError::NoRuntime {
                agent: name.clone(),
            })?;
        let program = config.program.clone();
        let initial = ProcessState {
            phase: Phase::Running,
            generation: 1,
            pid: None,
            restarts: 0,
            last_exit: None,
        };
        let (shared, queue) = Shared::new(name.clone(), config, initial);
        let queue: child::Queue = Arc::new(tokio::sync::Mutex::new(queue));
        let _guard = runtime.enter();
        let first = child::start(&shared, 1, &queue, &mut Vec::new()).map_err(|source| {
            ProcessError::Spawn {
                agent: name,
                program,
                source,
            }
        })?;
        let supervisor = runtime.spawn(child::supervise(Arc::clone(&shared), first, queue));
        Ok(ProcessAgent {
            handle: Arc::new(Handle {
                shared,
                supervisor: Mutex::new(Some(supervisor)),
            }),
        })
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.handle.shared.name
    }

    /// The agent as a gateway hosts it: `card` and this executor, the
    /// command line for the start-up table, and the child's shutdown once the
    /// agent's handler has wound down (so durable work is left resumable).
    pub fn definition(&self, card: AgentCard) -> AgentDefinition {
        let agent = self.clone();
        let stop: StopAgent =
            Box::new(move |grace| Box::pin(async move { agent.shutdown(grace).await }));
        AgentDefinition::new(self.name(), card, self.clone())
            .kind(AgentKind::Process, self.command_line())
            .on_shutdown(stop)
    }

    /// The program and its arguments, space-separated, for showing.
    pub fn command_line(&self) -> String {
        let config = &self.handle.shared.config;
        std::iter::once(config.program.as_os_str())
            .chain(config.args.iter().map(|arg| arg.as_os_str()))
            .map(|part| part.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Where the child process stands; the receiver sees every change.
    pub fn state(&self) -> watch::Receiver<ProcessState> {
        self.handle.shared.state.subscribe()
    }

    /// How many tasks the agent has now (running, or waiting for a restart).
    pub fn task_count(&self) -> usize {
        self.handle.shared.task_count()
    }

    /// Stops the child: closes its stdin (the protocol's "stop"), sends
    /// SIGTERM after half of `grace`, kills it after all of it, and fails
    /// the tasks it still had. New messages are refused from the start.
    /// Shut the request handler down first, so durable tasks are left
    /// resumable rather than failed here. Returns once the child is gone.
    pub async fn shutdown(&self, grace: Duration) {
        self.handle.shared.stop(grace);
        let supervisor = self
            .handle
            .supervisor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(supervisor) = supervisor {
            let _ = supervisor.await;
        }
    }
}

#[async_trait]
impl AgentExecutor for ProcessAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let shared = &self.handle.shared;
        let execute = Execute {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            follow_up: ctx.is_follow_up(),
            resumed: ctx.resumed,
            checkpoint: ctx.checkpoint.as_ref().map(CheckpointLine::from_checkpoint),
            message: ctx.message,
            traceparent: None,
            tracestate: None,
        };
        // The execution's span is the current one: the agent's calls back
        // into the gateway continue its trace.
        #[cfg(feature = "otel")]
        let execute = {
            let mut execute = execute;
            for (name, value) in
                a2a_server::telemetry::otel::trace_context(&tracing::Span::current())
            {
                match name.as_str() {
                    "traceparent" => execute.traceparent = Some(value),
                    "tracestate" => execute.tracestate = Some(value),
                    _ => {}
                }
            }
            execute
        };
        let mut registered = shared.register(execute)?;
        let mut forward = Forward {
            shared,
            events: &events,
            started: false,
        };
        // Set once the execution is told to stop: the child gets that long
        // to report a final state, which is no longer forwarded (the task is
        // settled already).
        let mut stopping: Option<tokio::time::Instant> = None;
        let grace = shared.config.cancel_grace;
        // The child must say something about the task within this, or the
        // task is failed: a hung child must not hold it for ever.
        let quiet_limit = shared.config.task_timeout;
        let mut heard_at = tokio::time::Instant::now();
        let lost = loop {
            let deadline = async {
                match stopping {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            let quiet = async {
                match (quiet_limit, stopping) {
                    (Some(limit), None) => tokio::time::sleep_until(heard_at + limit).await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = ctx.cancellation.cancelled(), if stopping.is_none() => {
                    shared.cancel(&ctx.task_id);
                    stopping = Some(tokio::time::Instant::now() + grace);
                }
                () = deadline => return Ok(()),
                // Before `lost`: what the child wrote before it died counts.
                inbound = registered.lines.recv() => match inbound {
                    Some(Inbound::Alive) => {}
                    Some(Inbound::Line(line)) if stopping.is_some() => {
                        if ends_turn(&line) {
                            return Ok(());
                        }
                    }
                    Some(Inbound::Line(line)) => {
                        if forward.line(*line).await? {
                            return Ok(());
                        }
                    }
                    Some(Inbound::Invalid(reason)) => {
                        if stopping.is_none() {
                            events.fail(reason).await?;
                        }
                        return Ok(());
                    }
                    // The task was taken from the table, and `lost` told why
                    // before.
                    None => break (&mut registered.lost).await,
                },
                lost = &mut registered.lost => break lost,
                // Last: a line that came just in time counts.
                () = quiet => {
                    let limit = quiet_limit.unwrap_or_default();
                    tracing::warn!(agent = %shared.name, task_id = %ctx.task_id, ?limit, "agent process went quiet on a task; failing it");
                    shared.cancel(&ctx.task_id);
                    events
                        .fail(format!(
                            "agent '{}' wrote nothing about the task for {} (its task timeout); gave up on it",
                            shared.name,
                            describe_duration(limit)
                        ))
                        .await?;
                    return Ok(());
                }
            }
            heard_at = tokio::time::Instant::now();
        };
        if let (Ok(reason), None) = (lost, stopping) {
            events.fail(reason).await?;
        }
        Ok(())
    }

    async fn cancel(&self, ctx: RequestContext) -> Result<(), A2aError> {
        self.handle.shared.cancel(&ctx.task_id);
        Ok(())
    }
}

/// "600 s", "250 ms": a timeout as a person reads it.
fn describe_duration(duration: Duration) -> String {
    match duration.subsec_nanos() {
        0 => format!("{} s", duration.as_secs()),
        _ => format!("{} ms", duration.as_millis()),
    }
}

/// Whether the line ends the agent's turn on the task.
fn ends_turn(line: &FromAgent) -> bool {
    match line {
        FromAgent::Status { state, .. } => state.ends_turn(),
        FromAgent::Reply { .. } => true,
        FromAgent::Event { event, .. } => event_ends_turn(event, false),
        FromAgent::Artifact { .. } | FromAgent::Log { .. } => false,
    }
}

/// A final or input-required state ends the turn, and so does a message as
/// the first event (a direct reply).
fn event_ends_turn(event: &StreamResponse, started: bool) -> bool {
    match event {
        StreamResponse::Message(_) => !started,
        event => event.state().is_some_and(|state| state.ends_turn()),
    }
}

/// Turns the child's lines about one task into the task's events.
struct Forward<'a> {
    shared: &'a Shared,
    events: &'a EventQueue,
    /// Whether an event was written (a message is a reply only as the first).
    started: bool,
}

impl Forward<'_> {
    /// Writes the line's event; `true` when it ends the turn.
    async fn line(&mut self, line: FromAgent) -> Result<bool, A2aError> {
        let events = self.events;
        let (event, checkpoint, done) = match line {
            FromAgent::Status {
                state,
                content,
                checkpoint,
                ..
            } => {
                let mut status = TaskStatus::new(state);
                if !content.is_empty() {
                    status.message = Some(events.agent_message(content.into_parts()).into());
                }
                let event = TaskStatusUpdateEvent {
                    task_id: events.task_id().to_owned(),
                    context_id: events.context_id().to_owned(),
                    status,
                    metadata: None,
                };
                (event.into(), checkpoint, state.ends_turn())
            }
            FromAgent::Artifact {
                artifact_id,
                name,
                content,
                append,
                last_chunk,
                checkpoint,
                ..
            } => {
                let mut artifact = Artifact::new(content.into_parts());
                if let Some(id) = artifact_id {
                    artifact.artifact_id = id;
                }
                artifact.name = name.unwrap_or_default();
                let mut event =
                    TaskArtifactUpdateEvent::new(events.task_id(), events.context_id(), artifact);
                event.append = append;
                event.last_chunk = last_chunk;
                (event.into(), checkpoint, false)
            }
            FromAgent::Reply { content, .. } => {
                events.reply(content.into_parts()).await?;
                return Ok(true);
            }
            FromAgent::Event {
                mut event,
                checkpoint,
                ..
            } => {
                fill_ids(&mut event, events);
                let done = event_ends_turn(&event, self.started);
                (*event, checkpoint, done)
            }
            FromAgent::Log { .. } => return Ok(false),
        };
        self.started = true;
        match checkpoint {
            Some(checkpoint) => {
                let turn = checkpoint.turn;
                events
                    .send_checkpointed(event, checkpoint.clone().into_checkpoint())
                    .await?;
                let task_id = events.task_id();
                self.shared.checkpointed(task_id, checkpoint);
                self.shared
                    .send(tasks::Outgoing::Checkpointed(task_id.to_owned(), turn));
            }
            None => events.send(event).await?,
        }
        Ok(done)
    }
}

/// Fills in the ids an `event` line left out. Ids that are there are kept:
/// one naming another task is the server's to refuse.
fn fill_ids(event: &mut StreamResponse, events: &EventQueue) {
    // A message as the first event is a direct reply: no task to name.
    let is_reply = matches!(event, StreamResponse::Message(_));
    let (task_id, context_id) = match event {
        StreamResponse::Task(task) => (&mut task.id, &mut task.context_id),
        StreamResponse::Message(message) => (&mut message.task_id, &mut message.context_id),
        StreamResponse::StatusUpdate(update) => (&mut update.task_id, &mut update.context_id),
        StreamResponse::ArtifactUpdate(update) => (&mut update.task_id, &mut update.context_id),
    };
    if task_id.is_empty() && !is_reply {
        events.task_id().clone_into(task_id);
    }
    if context_id.is_empty() {
        events.context_id().clone_into(context_id);
    }
}
