//! Starting the example programs and reading what they print, with deadlines.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long a program may take to say what a test waits for. Generous: a
/// loaded CI machine is slow, and a test that passes only waits as long as
/// it must.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// A running example server, killed (SIGKILL) when dropped.
pub(crate) struct Server {
    child: Child,
    lines: Receiver<String>,
    /// Lines printed before the card line, not yet waited for.
    early: VecDeque<String>,
    /// `http://ADDRESS` from its `agent card:` line.
    pub(crate) url: String,
}

impl Server {
    /// Starts `bin` with `args` and `env`, and waits for its line
    /// `agent card: http://ADDRESS/.well-known/agent-card.json`.
    pub(crate) fn start(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(bin)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("starting {bin}: {err}"));
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Server {
            child,
            lines,
            early: VecDeque::new(),
            url: String::new(),
        };
        let mut before = server.lines_until(|l| l.starts_with("agent card: http://"));
        let line = before.pop().expect("the awaited line is the last");
        server.early = before.into();
        let card = line.trim_start_matches("agent card: ");
        server.url = card
            .strip_suffix("/.well-known/agent-card.json")
            .unwrap_or_else(|| panic!("unexpected card line {line:?}"))
            .to_owned();
        server
    }

    /// Waits for the next line that satisfies `wanted`, and returns it.
    pub(crate) fn wait_for_line(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let mut lines = self.lines_until(wanted);
        lines.pop().expect("the awaited line is the last")
    }

    /// Waits for the next line that satisfies `wanted`, and returns the
    /// lines up to it, it included.
    pub(crate) fn lines_until(&mut self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        loop {
            let next = match self.early.pop_front() {
                Some(line) => Ok(line),
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    self.lines.recv_timeout(left)
                }
            };
            match next {
                Ok(line) => {
                    let done = wanted(&line);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no awaited line within {PATIENCE:?}; printed: {seen:#?}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait();
                    panic!(
                        "the program ended ({status:?}) without the awaited line; printed: {seen:#?}"
                    )
                }
            }
        }
    }

    /// Kills the server the hard way (SIGKILL: no shutdown code runs) and
    /// waits until it is gone.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `bin` to its end and returns what it printed; fails the test if it
/// fails or takes longer than [`PATIENCE`].
pub(crate) fn run(bin: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let ended = run_to_end(bin, args, env);
    assert!(
        ended.success,
        "{bin} {args:?} failed; printed:\n{}\nand on stderr:\n{}",
        ended.stdout, ended.stderr
    );
    ended.stdout
}

/// How a program run to its end ended.
pub(crate) struct Ended {
    pub(crate) success: bool,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `bin` to its end, within [`PATIENCE`].
pub(crate) fn run_to_end(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Ended {
    let mut child = Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("starting {bin}: {err}"));
    // Both pipes read at once: a program blocked on a full stderr pipe
    // would never close its stdout.
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            let _ = tx.send(text);
        });
        rx
    };
    let stdout = read(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = read(Box::new(child.stderr.take().expect("stderr is piped")));
    let deadline = Instant::now() + PATIENCE;
    let mut within = |rx: Receiver<String>| {
        let left = deadline.saturating_duration_since(Instant::now());
        rx.recv_timeout(left).unwrap_or_else(|_| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{bin} {args:?} did not finish within {PATIENCE:?}");
        })
    };
    let (stdout, stderr) = (within(stdout), within(stderr));
    let status = child.wait().expect("waiting for the program");
    Ended {
        success: status.success(),
        stdout,
        stderr,
    }
}

/// Asserts that `out` has a line containing `wanted`.
#[track_caller]
pub(crate) fn assert_line(out: &str, wanted: &str) {
    assert!(
        out.lines().any(|l| l.contains(wanted)),
        "no line with {wanted:?} in:\n{out}"
    );
}

/// A fresh directory under the system's temporary one, removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "a2a-examples-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("creating a temporary directory");
        TempDir(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The path as a program argument.
    pub(crate) fn arg(&self) -> &str {
        self.0.to_str().expect("temporary paths are UTF-8")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
