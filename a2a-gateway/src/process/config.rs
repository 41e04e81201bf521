//! How a process agent is started, restarted and limited.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

/// The default [`ProcessAgentConfig::task_timeout`]: 10 minutes.
pub const DEFAULT_TASK_TIMEOUT: Duration = Duration::from_secs(600);

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
    /// Variables set for the child. The child does not inherit the
    /// gateway's environment, which holds the gateway's own secrets: it
    /// gets `PATH`, `HOME`, `LANG`, `LC_*`, `TZ` and `TMPDIR` from it (see
    /// [`INHERITED_ENV`]), the variables named in
    /// [`pass_env`](Self::pass_env), and these, which win over both.
    pub env: Vec<(OsString, OsString)>,
    /// Variables of the gateway's environment passed on to the child, when
    /// set there (an API key the agent needs, say).
    pub pass_env: Vec<OsString>,
    /// Start the child without even the basics of [`INHERITED_ENV`]: only
    /// [`env`](Self::env) and [`pass_env`](Self::pass_env).
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
    /// How long the child may go without writing a line about a task it
    /// works on (any line naming the task, `log` lines included) before the
    /// task is failed, with a reason saying so, and the child is sent
    /// `cancel` for it (default 10 min; `None`: wait for ever). A hung child
    /// then cannot hold its tasks, nor its share of
    /// [`max_tasks`](Self::max_tasks).
    pub task_timeout: Option<Duration>,
}

/// The variables of the gateway's environment every child gets (unless
/// [`ProcessAgentConfig::clear_env`]): what a program needs to find its
/// tools, its home, its language and time zone, and a place for temporary
/// files. `LC_*` stands for every locale variable.
pub const INHERITED_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_*", "TZ", "TMPDIR"];

/// What Windows programs need to start at all, passed on there as well.
#[cfg(windows)]
const INHERITED_ENV_WINDOWS: &[&str] = &[
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
];

/// Whether the gateway's variable `name` is one of [`INHERITED_ENV`].
fn inherited(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    #[cfg(windows)]
    if INHERITED_ENV_WINDOWS
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
    {
        return true;
    }
    INHERITED_ENV
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *pattern == name,
        })
}

impl ProcessAgentConfig {
    /// The child's whole environment, made from `parent` (the gateway's
    /// environment): the inherited basics, the passed variables, then
    /// [`env`](Self::env).
    pub(crate) fn child_env(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = parent
            .into_iter()
            .filter(|(name, _)| {
                (!self.clear_env && inherited(name)) || self.pass_env.iter().any(|p| p == name)
            })
            .collect();
        for (name, value) in &self.env {
            env.retain(|(existing, _)| existing != name);
            env.push((name.clone(), value.clone()));
        }
        env
    }
}

impl ProcessAgentConfig {
    /// Runs `program` with no arguments and the defaults.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        ProcessAgentConfig {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            pass_env: Vec::new(),
            clear_env: false,
            current_dir: None,
            restart_initial: Duration::from_millis(100),
            restart_max: Duration::from_secs(30),
            in_flight: InFlightPolicy::Fail,
            max_line_bytes: 1 << 20,
            max_tasks: 1024,
            cancel_grace: Duration::from_secs(5),
            task_timeout: Some(DEFAULT_TASK_TIMEOUT),
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

    /// The process agent an entry of the gateway's configuration file
    /// describes (`kind = "process"`: its `command`, `env`, `pass_env`,
    /// `working_dir`, `on_crash` and `task_timeout_secs`); `None` for
    /// another kind. What the gateway sets for every child
    /// (`A2A_GATEWAY_URL`, ...) is the caller's to add.
    pub fn configured(agent: &crate::config::AgentConfig) -> Option<Self> {
        let crate::config::AgentSource::Process {
            command,
            env,
            pass_env,
            task_timeout,
            working_dir,
            resume_on_crash,
        } = &agent.source
        else {
            return None;
        };
        let mut config = ProcessAgentConfig::from_command(command)?
            .current_dir(working_dir)
            .task_timeout(*task_timeout);
        for (key, value) in env {
            config = config.env(key, value);
        }
        for name in pass_env {
            config = config.pass_env(name);
        }
        if *resume_on_crash {
            config = config.in_flight(InFlightPolicy::resend());
        }
        Some(config)
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

    /// Passes the gateway's variable `name` on to the child, when it is set.
    #[must_use]
    pub fn pass_env(mut self, name: impl Into<OsString>) -> Self {
        self.pass_env.push(name.into());
        self
    }

    /// Sets [`clear_env`](Self::clear_env).
    #[must_use]
    pub fn clear_env(mut self, clear: bool) -> Self {
        self.clear_env = clear;
        self
    }

    /// Sets how long the child may go quiet on a task before it is failed
    /// (`None`: no limit).
    #[must_use]
    pub fn task_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.task_timeout = timeout;
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

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn a_child_gets_the_basics_what_is_passed_and_what_is_set_only() {
        let gateway = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/a2a"),
            ("LANG", "C.UTF-8"),
            ("LC_TIME", "en_GB.UTF-8"),
            ("TZ", "UTC"),
            ("TMPDIR", "/tmp"),
            ("A2A_AUTH_BEARER_TOKEN", "gateway-secret"),
            ("A2A_STORE", "postgres://a2a:hunter2@db/a2a"),
            ("OPENAI_API_KEY", "sk-passed"),
            ("UNLISTED", "x"),
            ("PATHOLOGICAL", "not PATH"),
        ]);
        let config = ProcessAgentConfig::new("agent")
            .pass_env("OPENAI_API_KEY")
            .pass_env("NOT_SET_ANYWHERE")
            .env("TZ", "Europe/Paris")
            .env("A2A_AGENT_TOKEN", "agent-secret");
        let mut got = config.child_env(gateway.clone());
        got.sort();
        let mut expected = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/a2a"),
            ("LANG", "C.UTF-8"),
            ("LC_TIME", "en_GB.UTF-8"),
            ("TMPDIR", "/tmp"),
            ("OPENAI_API_KEY", "sk-passed"),
            ("TZ", "Europe/Paris"),
            ("A2A_AGENT_TOKEN", "agent-secret"),
        ]);
        expected.sort();
        assert_eq!(got, expected);

        let bare = ProcessAgentConfig::new("agent")
            .clear_env(true)
            .pass_env("HOME")
            .env("K", "v");
        let mut got = bare.child_env(gateway);
        got.sort();
        assert_eq!(got, vars(&[("HOME", "/home/a2a"), ("K", "v")]));
    }

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
