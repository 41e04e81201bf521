//! How a process agent is started, restarted and limited.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How to run an external command as an agent. Start from
/// [`ProcessAgentConfig::new`]; every other field has a default.
///
/// ```
/// use std::time::Duration;
/// use a2a_gateway::process::{InFlightPolicy, ProcessAgentConfig};
///
/// let config = ProcessAgentConfig::new("python3")
///     .arg("agents/echo.py")
///     .env("PYTHONUNBUFFERED", "1")
///     .restart_backoff(Duration::from_millis(200), Duration::from_secs(60))
///     .in_flight(InFlightPolicy::Resend { max_resends: 2 });
/// assert_eq!(config.args.len(), 1);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProcessAgentConfig {
    /// The program: a path, or a name looked up in `PATH`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables set for the child, on top of the gateway's own environment
    /// (or instead of it, with [`clear_env`](Self::clear_env)).
    pub env: Vec<(OsString, OsString)>,
    /// Start the child with only the variables in [`env`](Self::env).
    pub clear_env: bool,
    /// The child's working directory (default: the gateway's).
    pub current_dir: Option<PathBuf>,
    /// The wait before the first restart after the child dies (default
    /// 100 ms); it doubles with each further death.
    pub restart_initial: Duration,
    /// The longest wait between restarts (default 30 s). A child that stayed
    /// up at least this long starts the doubling over from
    /// [`restart_initial`](Self::restart_initial).
    pub restart_max: Duration,
    /// What happens to the tasks a child was working on when it dies.
    pub in_flight: InFlightPolicy,
    /// The longest line the child may write, in bytes, newline excluded
    /// (default 1 MiB). A longer line is dropped with a warning.
    pub max_line_bytes: usize,
    /// The most tasks the child works on at once (default 1,024); more are
    /// refused with a retryable busy error.
    pub max_tasks: usize,
    /// How long a canceled task waits for the child to report a final state
    /// before the execution ends without it (default 5 s).
    pub cancel_grace: Duration,
}

impl ProcessAgentConfig {
    /// Runs `program` with no arguments and the defaults.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        ProcessAgentConfig {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            clear_env: false,
            current_dir: None,
            restart_initial: Duration::from_millis(100),
            restart_max: Duration::from_secs(30),
            in_flight: InFlightPolicy::Fail,
            max_line_bytes: 1 << 20,
            max_tasks: 1024,
            cancel_grace: Duration::from_secs(5),
        }
    }

    /// Runs a command line given as program and arguments (as a
    /// configuration file lists it); `None` when it is empty.
    ///
    /// ```
    /// use a2a_gateway::process::ProcessAgentConfig;
    ///
    /// let config = ProcessAgentConfig::from_command(["python3", "agents/coder.py"]).unwrap();
    /// assert_eq!(config.program, std::path::Path::new("python3"));
    /// assert!(ProcessAgentConfig::from_command(Vec::<String>::new()).is_none());
    /// ```
    pub fn from_command<I, S>(command: I) -> Option<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut command = command.into_iter().map(Into::into);
        let program = command.next()?;
        Some(ProcessAgentConfig::new(program).args(command))
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets the child's working directory.
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// Sets the first and the longest wait between restarts.
    #[must_use]
    pub fn restart_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.restart_initial = initial;
        self.restart_max = max.max(initial);
        self
    }

    /// Sets what happens to in-flight tasks when the child dies.
    #[must_use]
    pub fn in_flight(mut self, policy: InFlightPolicy) -> Self {
        self.in_flight = policy;
        self
    }

    /// Sets the longest line the child may write.
    #[must_use]
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets the most tasks the child works on at once.
    #[must_use]
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks;
        self
    }

    /// Sets how long a canceled task waits for the child's final state.
    #[must_use]
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }
}

/// What happens to the tasks a child was working on when it dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum InFlightPolicy {
    /// Fail them, with a reason naming the agent and its exit status (the
    /// default): the child's state for them is gone, and only the agent's
    /// author knows whether redoing the work is safe.
    #[default]
    Fail,
    /// Send them again to the restarted child, marked `resumed` with the
    /// last stored checkpoint, for agents whose work is safe to repeat. A
    /// task whose child died `max_resends` times over it is failed, so a
    /// message that crashes the child cannot crash it forever.
    Resend {
        /// How many times one task is sent again before it is failed.
        max_resends: u32,
    },
}

impl InFlightPolicy {
    /// [`Resend`](Self::Resend) with the default limit: each task is sent
    /// again at most 3 times.
    pub const fn resend() -> Self {
        InFlightPolicy::Resend { max_resends: 3 }
    }
}

/// Exponential restart delays: `initial`, doubling, capped at `max`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max: max.max(initial),
            next: initial,
        }
    }

    /// The wait before the next restart.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = delay.saturating_mul(2).min(self.max);
        delay
    }

    /// Called with how long the child that just died was up: one that was
    /// up at least the longest wait was healthy, so its death starts over.
    pub(crate) fn child_ran(&mut self, uptime: Duration) {
        if uptime >= self.max {
            self.next = self.initial;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_resets() {
        let ms = Duration::from_millis;
        let mut backoff = Backoff::new(ms(100), ms(1000));
        let delays: Vec<_> = (0..6).map(|_| backoff.next_delay()).collect();
        assert_eq!(
            delays,
            [ms(100), ms(200), ms(400), ms(800), ms(1000), ms(1000)]
        );
        backoff.child_ran(ms(999));
        assert_eq!(backoff.next_delay(), ms(1000));
        backoff.child_ran(ms(1000));
        assert_eq!(backoff.next_delay(), ms(100));
    }
}
