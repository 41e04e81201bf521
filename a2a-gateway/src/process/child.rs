//! One child process at a time: starting it, writing its stdin, reading its
//! stdout and stderr, and the supervisor that restarts it when it dies.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::config::Backoff;
use super::protocol::{self, BadLine, FromAgent, Hello, Notice, PROTOCOL_VERSION};
use super::tasks::{Inbound, Outgoing, Shared};
use super::{Phase, ProcessState};

/// The line queue, held by the writer of the child that runs.
pub(crate) type Queue = Arc<Mutex<mpsc::UnboundedReceiver<Outgoing>>>;

/// How long a child that closed its stdout gets to exit before it is killed:
/// it can no longer answer, so its tasks would wait forever.
const STDOUT_CLOSED_GRACE: Duration = Duration::from_secs(2);

/// How long the reader gets, after the child exited, to hand over what the
/// child wrote before it died. Its stdout stays open past that only if the
/// child left a process behind that holds it.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The longest stderr line logged whole.
const MAX_STDERR_LINE: usize = 16 * 1024;

/// Lines written to the child in one go, at most (bytes, roughly).
const WRITE_BATCH: usize = 64 * 1024;

/// A running child and the tasks that serve it.
#[derive(Debug)]
pub(crate) struct Child {
    process: tokio::process::Child,
    generation: u64,
    pid: Option<u32>,
    started: Instant,
    /// Taken when stopped: a finished `JoinHandle` must not be awaited twice.
    writer: Option<JoinHandle<()>>,
    reader: Option<JoinHandle<()>>,
    stderr: JoinHandle<()>,
}

/// Starts child `generation`, which is sent `first` before anything queued
/// (taken only once the child runs: a failed start leaves it for the next).
pub(crate) fn start(
    shared: &Arc<Shared>,
    generation: u64,
    queue: &Queue,
    first: &mut Vec<Outgoing>,
) -> io::Result<Child> {
    let config = &shared.config;
    let mut command = Command::new(&config.program);
    command
        .args(&config.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A gateway that dies without shutting down must not leave agents behind.
        .kill_on_drop(true);
    // The gateway's environment holds its own secrets (its bearer token, its
    // store's password): the child gets only what it needs.
    command.env_clear();
    command.envs(config.child_env(std::env::vars_os()));
    if let Some(dir) = &config.current_dir {
        command.current_dir(dir);
    }
    // Its own process group: a Ctrl-C at the gateway's terminal is the
    // gateway's to handle (it stops the child by closing stdin), not a
    // signal that kills the child mid-line.
    #[cfg(unix)]
    command.process_group(0);
    let mut process = command.spawn()?;
    let missing = || io::Error::other("child started without its pipes");
    let stdin = process.stdin.take().ok_or_else(missing)?;
    let stdout = process.stdout.take().ok_or_else(missing)?;
    let stderr = process.stderr.take().ok_or_else(missing)?;
    let pid = process.id();
    tracing::info!(agent = %shared.name, pid, generation, "agent process started");
    let writer = tokio::spawn(write_lines(
        Arc::clone(shared),
        generation,
        stdin,
        Arc::clone(queue),
        std::mem::take(first),
    ));
    let reader = tokio::spawn(read_lines(Arc::clone(shared), generation, stdout));
    let stderr = tokio::spawn(log_stderr(Arc::clone(shared), pid, stderr));
    shared.state.send_modify(|state| {
        *state = ProcessState {
            phase: Phase::Running,
            generation,
            pid,
            restarts: generation - 1,
            last_exit: state.last_exit.take(),
        };
    });
    Ok(Child {
        process,
        generation,
        pid,
        started: Instant::now(),
        writer: Some(writer),
        reader: Some(reader),
        stderr,
    })
}

/// How a child's run ended.
enum Ended {
    /// It died (or was killed for closing its stdout): what happened.
    Died(String),
    /// The agent was shut down and the child stopped.
    Stopped(String),
}

/// Keeps a child running until the agent is shut down.
pub(crate) async fn supervise(shared: Arc<Shared>, mut child: Child, queue: Queue) {
    let name = shared.name.clone();
    let mut backoff = Backoff::new(shared.config.restart_initial, shared.config.restart_max);
    loop {
        let (ended, uptime) = run(&shared, &mut child).await;
        child.finish_io().await;
        let what = match ended {
            Ended::Stopped(what) => {
                tracing::info!(agent = %name, pid = child.pid, "agent process {what}");
                stopped(&shared, what);
                return;
            }
            Ended::Died(what) => what,
        };
        // Only now, with the writer gone and the reader drained, is the set
        // of tasks the dead child had final, and their last lines delivered.
        let reason = format!("agent '{name}' {what}; restarted");
        let mut resend = shared.orphaned(child.generation, &reason);
        backoff.child_ran(uptime);
        let generation = child.generation + 1;
        child = loop {
            let delay = backoff.next_delay();
            tracing::warn!(agent = %name, pid = child.pid, ?delay, "agent process {what}; restarting");
            shared.state.send_modify(|state| {
                state.phase = Phase::Restarting;
                state.pid = None;
                state.last_exit = Some(what.clone());
            });
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = shared.shutdown.cancelled() => {
                    stopped(&shared, what);
                    return;
                }
            }
            match start(&shared, generation, &queue, &mut resend) {
                Ok(next) => break next,
                Err(error) => {
                    tracing::warn!(agent = %name, %error, "agent process could not be restarted");
                }
            }
        };
    }
}

fn stopped(shared: &Shared, what: String) {
    shared.lose_all(&format!("agent '{}' shut down", shared.name));
    shared.state.send_modify(|state| {
        state.phase = Phase::Stopped;
        state.pid = None;
        state.last_exit = Some(what);
    });
}

/// Waits for the child to die, to close its stdout, or for the shutdown;
/// returns how, and how long the child was up (until the first sign of its
/// end, not counting the graces after it).
async fn run(shared: &Shared, child: &mut Child) -> (Ended, Duration) {
    let reader = async {
        match child.reader.as_mut() {
            Some(reader) => {
                let _ = reader.await;
            }
            None => std::future::pending().await,
        }
    };
    let started = child.started;
    let uptime = || started.elapsed();
    tokio::select! {
        status = child.process.wait() => (Ended::Died(describe(status)), uptime()),
        () = reader => {
            child.reader = None;
            let uptime = uptime();
            // Usually the child is exiting; one that lives on without its
            // stdout can never finish a task again.
            let ended = match tokio::time::timeout(STDOUT_CLOSED_GRACE, child.process.wait()).await {
                Ok(status) => Ended::Died(describe(status)),
                // The timer can beat the exit notice by a hair; a child that
                // has exited is reaped here and described as it ended.
                Err(_) if matches!(child.process.try_wait(), Ok(Some(_))) => {
                    Ended::Died(describe(child.process.wait().await))
                }
                Err(_) => {
                    tracing::warn!(agent = %shared.name, pid = child.pid, "agent process closed its stdout but kept running; killing it");
                    let _ = kill(child).await;
                    Ended::Died("closed its stdout (killed)".to_owned())
                }
            };
            (ended, uptime)
        }
        () = shared.shutdown.cancelled() => (Ended::Stopped(stop(shared, child).await), uptime()),
    }
}

/// Closes the child's stdin (the protocol's "stop"), then asks with SIGTERM,
/// then kills: each step after half the grace.
async fn stop(shared: &Shared, child: &mut Child) -> String {
    child.stop_writer().await;
    let half = shared.stop_grace() / 2;
    if let Ok(status) = tokio::time::timeout(half, child.process.wait()).await {
        return describe(status);
    }
    #[cfg(unix)]
    if signal_group(child.pid, rustix::process::Signal::TERM) {
        if let Ok(status) = tokio::time::timeout(half, child.process.wait()).await {
            return describe(status);
        }
    }
    kill(child).await
}

/// Kills the child, and what it started: a shell-script agent's own
/// children must not outlive it holding its pipes.
async fn kill(child: &mut Child) -> String {
    #[cfg(unix)]
    signal_group(child.pid, rustix::process::Signal::KILL);
    let _ = child.process.start_kill();
    describe(child.process.wait().await)
}

/// Signals the child's process group (the child leads one of its own, see
/// [`start`]); `false` when there was no one to signal.
#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: rustix::process::Signal) -> bool {
    pid.and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| rustix::process::kill_process_group(pid, signal).is_ok())
}

impl Child {
    /// Stops the writer, which closes the child's stdin.
    async fn stop_writer(&mut self) {
        if let Some(writer) = self.writer.take() {
            writer.abort();
            let _ = writer.await;
        }
    }

    /// Stops the writer and lets the reader deliver what the child wrote.
    async fn finish_io(&mut self) {
        self.stop_writer().await;
        if let Some(mut reader) = self.reader.take() {
            if tokio::time::timeout(DRAIN_GRACE, &mut reader)
                .await
                .is_err()
            {
                reader.abort();
            }
        }
        if tokio::time::timeout(DRAIN_GRACE, &mut self.stderr)
            .await
            .is_err()
        {
            self.stderr.abort();
        }
    }
}

/// "exited (status 1)", "was killed by signal 9".
fn describe(status: io::Result<ExitStatus>) -> String {
    match status {
        Ok(status) => match status.code() {
            Some(code) => format!("exited (status {code})"),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt as _;
                    if let Some(signal) = status.signal() {
                        return format!("was killed by signal {signal}");
                    }
                }
                format!("exited ({status})")
            }
        },
        Err(error) => format!("could not be waited for ({error})"),
    }
}

// ===== the child's stdin =====

async fn write_lines(
    shared: Arc<Shared>,
    generation: u64,
    mut stdin: ChildStdin,
    queue: Queue,
    first: Vec<Outgoing>,
) {
    let mut buf = Vec::with_capacity(4096);
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        agent: &shared.name,
    };
    push_line(&mut buf, &hello);
    for line in first {
        encode(&shared, generation, line, &mut buf);
    }
    if let Err(error) = stdin.write_all(&buf).await {
        return broken(&shared, &error);
    }
    // The one writer that runs holds the queue; the previous one released it
    // when it was aborted.
    let mut queue = queue.lock().await;
    loop {
        buf.clear();
        let Some(line) = queue.recv().await else {
            return;
        };
        encode(&shared, generation, line, &mut buf);
        // What is queued already goes out in the same write.
        while buf.len() < WRITE_BATCH {
            match queue.try_recv() {
                Ok(line) => encode(&shared, generation, line, &mut buf),
                Err(_) => break,
            }
        }
        if buf.is_empty() {
            continue;
        }
        if let Err(error) = stdin.write_all(&buf).await {
            return broken(&shared, &error);
        }
    }
}

/// A write to a child that died; the supervisor sees the exit and handles it.
fn broken(shared: &Shared, error: &io::Error) {
    tracing::debug!(agent = %shared.name, %error, "agent process stdin closed");
}

fn encode(shared: &Shared, generation: u64, line: Outgoing, buf: &mut Vec<u8>) {
    match line {
        Outgoing::Execute(task_id) => {
            if let Some(execute) = shared.hand_out(&task_id, generation) {
                push_line(buf, &*execute);
            }
        }
        Outgoing::Cancel(task_id) => push_line(buf, &Notice::Cancel { task_id: &task_id }),
        Outgoing::Checkpointed(task_id, turn) => push_line(
            buf,
            &Notice::Checkpointed {
                task_id: &task_id,
                turn,
            },
        ),
    }
}

fn push_line(buf: &mut Vec<u8>, line: &impl serde::Serialize) {
    // Our own types always serialize; a failure would leave a partial line,
    // so it is cut off rather than sent.
    let start = buf.len();
    match serde_json::to_writer(&mut *buf, line) {
        Ok(()) => buf.push(b'\n'),
        Err(_) => buf.truncate(start),
    }
}

// ===== the child's stdout =====

/// One line read, or why not.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadLine {
    /// A line is in the buffer (newline and a trailing `\r` removed).
    Line,
    /// A line longer than the limit was skipped; its length.
    TooLong(usize),
    /// The end of the stream.
    Eof,
}

/// Reads one line of at most `max` bytes into `line`. A longer line is
/// skipped to its end without being held in memory.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<ReadLine> {
    line.clear();
    let mut skipped = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (skipped, line.is_empty()) {
                (0, true) => ReadLine::Eof,
                (0, false) => ReadLine::Line,
                (n, _) => ReadLine::TooLong(n),
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if skipped == 0 && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            skipped += line.len() + chunk.len();
            line.clear();
        }
        let used = newline.map_or(chunk.len(), |at| at + 1);
        reader.consume(used);
        if newline.is_some() {
            if skipped > 0 {
                return Ok(ReadLine::TooLong(skipped));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(ReadLine::Line);
        }
    }
}

/// Warns about the first few bad lines of a child and then ever more rarely,
/// so a child that floods garbage cannot flood the log.
#[derive(Debug, Default)]
struct Warnings {
    seen: u64,
}

impl Warnings {
    fn admit(&mut self) -> Option<u64> {
        self.seen += 1;
        (self.seen <= 10 || self.seen.is_power_of_two()).then_some(self.seen)
    }
}

async fn read_lines(shared: Arc<Shared>, generation: u64, stdout: tokio::process::ChildStdout) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut warnings = Warnings::default();
    let max = shared.config.max_line_bytes;
    loop {
        match read_line(&mut reader, &mut line, max).await {
            Ok(ReadLine::Line) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(ReadLine::Line) => dispatch(&shared, generation, &line, &mut warnings).await,
            Ok(ReadLine::TooLong(length)) => {
                if let Some(nth) = warnings.admit() {
                    tracing::warn!(agent = %shared.name, length, max, nth, "agent line over the length limit dropped");
                }
            }
            Ok(ReadLine::Eof) => return,
            Err(error) => {
                tracing::warn!(agent = %shared.name, %error, "reading the agent's stdout failed");
                return;
            }
        }
    }
}

async fn dispatch(shared: &Shared, generation: u64, line: &[u8], warnings: &mut Warnings) {
    let name = &shared.name;
    let (task_id, inbound) = match protocol::parse(line) {
        Ok(FromAgent::Log {
            task_id,
            level,
            text,
        }) => {
            log_line(name, task_id.as_deref(), level.as_deref(), &text);
            // The task's execution hears the child is still on it (its task
            // timeout starts over). Never waits: a full queue holds lines
            // about the task, which say as much.
            if let Some(lines) = task_id.and_then(|id| shared.route(&id, generation)) {
                let _ = lines.try_send(Inbound::Alive);
            }
            return;
        }
        Ok(parsed) => {
            let task_id = parsed.task_id().unwrap_or_default().to_owned();
            (task_id, Inbound::Line(Box::new(parsed)))
        }
        Err(BadLine::Invalid {
            kind,
            task_id: Some(task_id),
            error,
        }) => {
            let reason = format!("agent '{name}' wrote an invalid {kind} line: {error}");
            if let Some(nth) = warnings.admit() {
                tracing::warn!(agent = %name, %task_id, nth, "{reason}");
            }
            (task_id, Inbound::Invalid(reason))
        }
        Err(bad) => {
            if let Some(nth) = warnings.admit() {
                let line = String::from_utf8_lossy(&line[..line.len().min(200)]);
                match bad {
                    BadLine::NotJson(error) => {
                        tracing::warn!(agent = %name, nth, %error, %line, "agent line is not JSON; ignored");
                    }
                    BadLine::UnknownType(Some(kind)) => {
                        tracing::warn!(agent = %name, nth, %line, "agent line of unknown type {kind:?}; ignored");
                    }
                    BadLine::UnknownType(None) => {
                        tracing::warn!(agent = %name, nth, %line, "agent line without a \"type\"; ignored");
                    }
                    BadLine::Invalid { kind, error, .. } => {
                        tracing::warn!(agent = %name, nth, %error, %line, "agent {kind} line without a taskId; ignored");
                    }
                }
            }
            return;
        }
    };
    match shared.route(&task_id, generation) {
        // The execution may have ended since; its lines have nowhere to go.
        Some(lines) => {
            let _ = lines.send(inbound).await;
        }
        None => {
            if let Some(nth) = warnings.admit() {
                tracing::warn!(agent = %name, %task_id, nth, "agent line for a task it does not have; ignored");
            }
        }
    }
}

fn log_line(agent: &str, task_id: Option<&str>, level: Option<&str>, text: &str) {
    let task_id = task_id.unwrap_or_default();
    match level.map(str::to_ascii_lowercase).as_deref() {
        Some("error") => tracing::error!(agent = %agent, task_id, "{text}"),
        Some("warn" | "warning") => tracing::warn!(agent = %agent, task_id, "{text}"),
        Some("debug") => tracing::debug!(agent = %agent, task_id, "{text}"),
        Some("trace") => tracing::trace!(agent = %agent, task_id, "{text}"),
        _ => tracing::info!(agent = %agent, task_id, "{text}"),
    }
}

async fn log_stderr(shared: Arc<Shared>, pid: Option<u32>, stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    let agent = shared.name.as_str();
    loop {
        match read_line(&mut reader, &mut line, MAX_STDERR_LINE).await {
            Ok(ReadLine::Line) => {
                let text = String::from_utf8_lossy(&line);
                tracing::info!(target: "a2a_gateway::process::stderr", agent = %agent, pid, "{text}");
            }
            Ok(ReadLine::TooLong(length)) => {
                tracing::info!(target: "a2a_gateway::process::stderr", agent = %agent, pid, length, "(a stderr line too long to log)");
            }
            Ok(ReadLine::Eof) | Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(ReadLine, String)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            let read = read_line(&mut reader, &mut line, max).await.unwrap();
            let done = read == ReadLine::Eof;
            out.push((read, String::from_utf8_lossy(&line).into_owned()));
            if done {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn long_lines_are_skipped_whole() {
        let got = lines(b"short\r\nthis one is long\nok\nlast", 8).await;
        let expected = [
            (ReadLine::Line, "short"),
            (ReadLine::TooLong(16), ""),
            (ReadLine::Line, "ok"),
            (ReadLine::Line, "last"),
            (ReadLine::Eof, ""),
        ];
        let got: Vec<_> = got.iter().map(|(r, s)| (r, s.as_str())).collect();
        let expected: Vec<_> = expected.iter().map(|(r, s)| (r, *s)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn warnings_thin_out() {
        let mut warnings = Warnings::default();
        let admitted = (0..2000).filter(|_| warnings.admit().is_some()).count();
        // 1..=10, then 16, 32, ..., 1024.
        assert_eq!(admitted, 10 + 7);
    }
}
