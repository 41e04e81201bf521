//! What the supervisor, the child's reader and writer, and the executions
//! share: the table of tasks the child works on, and the line queue to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use a2a_core::A2aError;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::protocol::{CheckpointLine, Execute};
use super::{InFlightPolicy, ProcessAgentConfig, ProcessState};

/// How many lines for one task wait between the reader and its execution.
/// Small: a full queue holds the reader back, which holds the child back,
/// which is the flow control a flooding child gets.
const TASK_LINES: usize = 16;

/// A line for the child, taken by whichever child is running when the writer
/// gets to it.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// The task's `execute` line (looked up when written: a task that ended
    /// meanwhile is skipped).
    Execute(String),
    /// A `cancel` line.
    Cancel(String),
    /// A `checkpointed` line.
    Checkpointed(String, u64),
}

/// What the reader hands an execution.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A line about this task.
    Line(Box<super::protocol::FromAgent>),
    /// A line that names this task but could not be used; the reason.
    Invalid(String),
    /// A `log` line about this task: nothing to record, but the child is
    /// alive and working on it.
    Alive,
}

/// A task the child works on (or is about to be given).
#[derive(Debug)]
struct Entry {
    /// Tells a stale execution's cleanup apart from the current one's.
    registration: u64,
    lines: mpsc::Sender<Inbound>,
    /// Told why the task was taken from the child, when it is.
    lost: Option<oneshot::Sender<String>>,
    execute: Arc<Execute>,
    /// The child (by generation) that has been sent the task; `None` until
    /// a writer sends it.
    child: Option<u64>,
    resends: u32,
    cancel_sent: bool,
}

/// What an execution holds while it runs.
#[derive(Debug)]
pub(crate) struct Registered {
    pub(crate) lines: mpsc::Receiver<Inbound>,
    pub(crate) lost: oneshot::Receiver<String>,
    pub(crate) _guard: Deregister,
}

/// Takes the task out of the table when the execution ends, however it ends.
#[derive(Debug)]
pub(crate) struct Deregister {
    shared: Arc<Shared>,
    task_id: String,
    registration: u64,
}

impl Drop for Deregister {
    fn drop(&mut self) {
        let mut table = self.shared.table();
        if table
            .tasks
            .get(&self.task_id)
            .is_some_and(|entry| entry.registration == self.registration)
        {
            table.tasks.remove(&self.task_id);
        }
    }
}

#[derive(Debug, Default)]
struct Table {
    tasks: HashMap<String, Entry>,
    registrations: u64,
}

/// The agent's state, shared by its handle, its executions and its tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) config: ProcessAgentConfig,
    table: Mutex<Table>,
    outgoing: mpsc::UnboundedSender<Outgoing>,
    /// Fires when the agent is shut down (or its last handle dropped).
    pub(crate) shutdown: CancellationToken,
    /// How long the child gets to exit once told to; set before `shutdown` fires.
    stop_grace: Mutex<Duration>,
    pub(crate) state: watch::Sender<ProcessState>,
}

impl Shared {
    /// The shared state, and the receiving end of the line queue for the
    /// writers. The queue is unbounded so that no execution ever waits on the
    /// child to read (which could wait on the execution to take the child's
    /// output: a cycle); it holds at most one `execute` per task, limited by
    /// `max_tasks`, plus one line per cancel and per checkpoint.
    pub(crate) fn new(
        name: String,
        config: ProcessAgentConfig,
        state: ProcessState,
    ) -> (Arc<Shared>, mpsc::UnboundedReceiver<Outgoing>) {
        let (outgoing, receiver) = mpsc::unbounded_channel();
        let shared = Shared {
            name,
            config,
            table: Mutex::new(Table::default()),
            outgoing,
            shutdown: CancellationToken::new(),
            stop_grace: Mutex::new(Duration::ZERO),
            state: watch::Sender::new(state),
        };
        (Arc::new(shared), receiver)
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // The table holds no invariant a panic halfway could break.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Asks the supervisor to stop the child, giving it `grace` to exit.
    pub(crate) fn stop(&self, grace: Duration) {
        if !self.shutdown.is_cancelled() {
            *self
                .stop_grace
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = grace;
            self.shutdown.cancel();
        }
    }

    pub(crate) fn stop_grace(&self) -> Duration {
        *self
            .stop_grace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues a line for the child. Once the agent is shut down there is no
    /// child to read it, and dropping it is what the caller would get anyway.
    pub(crate) fn send(&self, line: Outgoing) {
        let _ = self.outgoing.send(line);
    }

    /// Enters a task and queues its `execute` line.
    pub(crate) fn register(self: &Arc<Self>, execute: Execute) -> Result<Registered, A2aError> {
        if self.shutdown.is_cancelled() {
            return Err(A2aError::internal(format!(
                "agent '{}' is shut down",
                self.name
            )));
        }
        let task_id = execute.task_id.clone();
        let (lines_in, lines) = mpsc::channel(TASK_LINES);
        let (lost_in, lost) = oneshot::channel();
        let registration = {
            let mut table = self.table();
            if table.tasks.len() >= self.config.max_tasks && !table.tasks.contains_key(&task_id) {
                return Err(A2aError::busy(
                    format!(
                        "agent '{}' is working on {} tasks, its most at once",
                        self.name, self.config.max_tasks
                    ),
                    Duration::from_secs(1),
                ));
            }
            table.registrations += 1;
            let registration = table.registrations;
            let entry = Entry {
                registration,
                lines: lines_in,
                lost: Some(lost_in),
                execute: Arc::new(execute),
                child: None,
                resends: 0,
                cancel_sent: false,
            };
            // A task has one execution at a time; an entry left over for the
            // same id belongs to one that is ending, and the new one wins.
            table.tasks.insert(task_id.clone(), entry);
            registration
        };
        self.send(Outgoing::Execute(task_id.clone()));
        Ok(Registered {
            lines,
            lost,
            _guard: Deregister {
                shared: Arc::clone(self),
                task_id,
                registration,
            },
        })
    }

    /// Tells the child to stop working on a task, once per execution. A task
    /// with no execution (waiting for input) is told too: the child may hold
    /// state for it.
    pub(crate) fn cancel(&self, task_id: &str) {
        if let Some(entry) = self.table().tasks.get_mut(task_id) {
            if std::mem::replace(&mut entry.cancel_sent, true) {
                return;
            }
        }
        self.send(Outgoing::Cancel(task_id.to_owned()));
    }

    /// Remembers the task's newest stored checkpoint, for a resend.
    pub(crate) fn checkpointed(&self, task_id: &str, checkpoint: CheckpointLine) {
        if let Some(entry) = self.table().tasks.get_mut(task_id) {
            Arc::make_mut(&mut entry.execute).checkpoint = Some(checkpoint);
        }
    }

    /// The `execute` line to write to child `generation`, which now has the
    /// task. `None`: the task ended before it was written.
    pub(crate) fn hand_out(&self, task_id: &str, generation: u64) -> Option<Arc<Execute>> {
        let mut table = self.table();
        let entry = table.tasks.get_mut(task_id)?;
        entry.child = Some(generation);
        Some(Arc::clone(&entry.execute))
    }

    /// Where the lines child `generation` writes about `task_id` go. A task
    /// that child was not given is unknown to it.
    pub(crate) fn route(&self, task_id: &str, generation: u64) -> Option<mpsc::Sender<Inbound>> {
        let table = self.table();
        let entry = table.tasks.get(task_id)?;
        (entry.child == Some(generation)).then(|| entry.lines.clone())
    }

    /// Deals with the tasks of child `generation`, which died: fails them
    /// with `reason`, or returns the `execute` lines to send the next child.
    pub(crate) fn orphaned(&self, generation: u64, reason: &str) -> Vec<Outgoing> {
        let mut table = self.table();
        let mut resend = Vec::new();
        let mut lost = Vec::new();
        for (task_id, entry) in &mut table.tasks {
            if entry.child != Some(generation) {
                continue;
            }
            match self.config.in_flight {
                InFlightPolicy::Resend { max_resends } if entry.resends < max_resends => {
                    entry.resends += 1;
                    entry.child = None;
                    Arc::make_mut(&mut entry.execute).resumed = true;
                    resend.push(Outgoing::Execute(task_id.clone()));
                }
                InFlightPolicy::Resend { max_resends } => lost.push((
                    task_id.clone(),
                    format!("{reason} (gave up after {max_resends} resends)"),
                )),
                InFlightPolicy::Fail => lost.push((task_id.clone(), reason.to_owned())),
            }
        }
        for (task_id, reason) in lost {
            if let Some(mut entry) = table.tasks.remove(&task_id) {
                if let Some(lost) = entry.lost.take() {
                    let _ = lost.send(reason);
                }
            }
        }
        resend
    }

    /// Fails every task: the agent is shut down.
    pub(crate) fn lose_all(&self, reason: &str) {
        let mut table = self.table();
        for (_, mut entry) in table.tasks.drain() {
            if let Some(lost) = entry.lost.take() {
                let _ = lost.send(reason.to_owned());
            }
        }
    }

    /// How many tasks the agent has now.
    pub(crate) fn task_count(&self) -> usize {
        self.table().tasks.len()
    }
}
