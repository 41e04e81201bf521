//! Starting the example programs and reading what they print, with deadlines.

use std::io::{BufRead as _, BufReader, Read as _};
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
            url: String::new(),
        };
        let line = server.wait_for_line(|l| l.starts_with("agent card: http://"));
        let card = line.trim_start_matches("agent card: ");
        server.url = card
            .strip_suffix("/.well-known/agent-card.json")
            .unwrap_or_else(|| panic!("unexpected card line {line:?}"))
            .to_owned();
        server
    }

    /// Waits for the next line that satisfies `wanted`, and returns it.
    pub(crate) fn wait_for_line(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if wanted(&line) => return line,
                Ok(line) => seen.push(line),
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
    let (success, out) = run_to_end(bin, args, env);
    assert!(success, "{bin} {args:?} failed; printed:\n{out}");
    out
}

/// Runs `bin` to its end (within [`PATIENCE`]): whether it succeeded, and
/// what it printed.
pub(crate) fn run_to_end(bin: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut child = Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("starting {bin}: {err}"));
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = tx.send(out);
    });
    let out = match rx.recv_timeout(PATIENCE) {
        Ok(out) => out,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{bin} {args:?} did not finish within {PATIENCE:?}");
        }
    };
    let status = child.wait().expect("waiting for the program");
    (status.success(), out)
}

/// Asserts that `out` has a line containing `wanted`.
#[track_caller]
pub(crate) fn assert_line(out: &str, wanted: &str) {
    assert!(
        out.lines().any(|l| l.contains(wanted)),
        "no line with {wanted:?} in:\n{out}"
    );
}
