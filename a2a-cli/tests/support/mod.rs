//! What the tests of the `a2a` binary share: running it, `a2a serve` on a
//! free port for as long as a test holds it, plain HTTP requests to it, and
//! the files and databases a server is given.

// Each test file uses its own part of this module.
#![allow(dead_code, unreachable_pub)]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long anything the tests wait for may take.
pub const PATIENCE: Duration = Duration::from_secs(30);

// ===== the `a2a` binary =====

/// The `a2a` binary without colours, and without the `A2A_*` variables of
/// the environment the tests run in: every test names what it uses.
pub fn command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_a2a"));
    command.env("NO_COLOR", "1");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("A2A_") {
            command.env_remove(name);
        }
    }
    command
}

/// `a2a ARGS`, run to its end.
pub fn a2a(args: &[&str]) -> Output {
    command().args(args).output().unwrap()
}

/// `a2a ARGS`, which must succeed: its standard output.
pub fn ok(args: &[&str]) -> String {
    let out = a2a(args);
    assert!(
        out.status.success(),
        "a2a {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `a2a ARGS --json`, which must succeed: what it printed.
pub fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = ok(&all);
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("a2a {all:?}: {err}: {out}"))
}

/// `a2a ARGS`, which must fail: its standard error.
pub fn fails(args: &[&str]) -> String {
    let out = a2a(args);
    assert!(!out.status.success(), "a2a {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// `a2a ARGS`, which must end by itself within [`PATIENCE`] (a server that
/// started instead would not): its output.
pub fn finishes(args: &[&str]) -> Output {
    finishes_with_env(args, &[])
}

/// As [`finishes`], with `env` added to the environment.
pub fn finishes_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut child = command()
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    let Some(status) = wait_for_exit(&mut child, PATIENCE) else {
        end(&mut child);
        panic!("a2a {args:?} kept running");
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Everything `from` gives until it ends, read aside (so that a child never
/// blocks on a full pipe).
fn read_all(mut from: impl std::io::Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = from.read_to_end(&mut all);
        all
    })
}

/// `child`'s exit status once it exits; `None` if it still runs after
/// `within`.
fn wait_for_exit(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills `child` outright (SIGKILL) and reaps it.
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends `child` the signal `signal` (`-INT`, `-TERM`) and waits up to
/// `within` for it to exit.
pub fn stop_with(child: &mut Child, signal: &str, within: Duration) -> ExitStatus {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success()
    );
    wait_for_exit(child, within).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("pid {pid} did not exit within {within:?} after kill {signal}");
    })
}

/// A running `a2a` command whose output is read as it comes (`subscribe`,
/// `hub watch`); killed when dropped.
pub struct Follower {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    stderr: BufReader<ChildStderr>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        end(&mut self.child);
    }
}

impl Follower {
    /// The next line of its standard error (where it says what it follows).
    pub fn stderr_line(&mut self) -> String {
        let mut line = String::new();
        self.stderr.read_line(&mut line).unwrap();
        line
    }

    /// The next line of its standard output, if one comes by `deadline`.
    pub fn line_by(&self, deadline: Instant) -> Option<String> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines.recv_timeout(left).ok()
    }
}

/// `a2a ARGS`, left running.
pub fn follow(args: &[&str]) -> Follower {
    let mut child = command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, lines) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let stderr = BufReader::new(child.stderr.take().unwrap());
    Follower {
        child,
        lines,
        stderr,
    }
}

// ===== `a2a serve` =====

/// A running `a2a serve`, killed outright (SIGKILL: nothing gets to finish)
/// when dropped.
pub struct Server {
    pub child: Child,
    /// The address it listens on, as its banner says.
    pub url: String,
    /// Its banner, up to the line that says how to stop it.
    pub banner: String,
    /// Kept open: the server's later lines must not meet a closed pipe.
    _stdout: BufReader<ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        end(&mut self.child);
    }
}

impl Server {
    /// Stops the server as a service manager does (SIGTERM); it must exit
    /// cleanly within `within`.
    pub fn stop(mut self, within: Duration) {
        let status = stop_with(&mut self.child, "-TERM", within);
        assert!(status.success(), "{status:?}");
    }
}

/// `a2a serve --port 0 ARGS`, once its banner says it serves.
pub fn serve(args: &[&str]) -> Server {
    serve_with_env(args, &[])
}

/// [`serve`] with these environment variables set.
pub fn serve_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut child = command()
        .args(["serve", "--port", "0"])
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("Press Ctrl-C") {
        if stdout.read_line(&mut banner).unwrap() == 0 {
            end(&mut child);
            panic!("a2a serve {args:?} stopped before it served: {banner}");
        }
    }
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://") || w.starts_with("https://"))
        .unwrap()
        .to_owned();
    Server {
        child,
        url,
        banner,
        _stdout: stdout,
    }
}

/// How `a2a serve` refused to start: its exit code and standard error.
#[derive(Debug)]
pub struct Refusal {
    pub code: Option<i32>,
    pub stderr: String,
}

/// `a2a serve --port 0 ARGS`, which must refuse to start: exit by itself,
/// failing, before its banner says it listens.
pub fn serve_refused(args: &[&str]) -> Refusal {
    serve_refused_with_env(args, &[])
}

/// As [`serve_refused`], with `env` added to the environment.
pub fn serve_refused_with_env(args: &[&str], env: &[(&str, &str)]) -> Refusal {
    let mut all = vec!["serve", "--port", "0"];
    all.extend(args);
    let out = finishes_with_env(&all, env);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "a2a {all:?} succeeded: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("listening"), "a2a {all:?}: {stdout}");
    Refusal {
        code: out.status.code(),
        stderr,
    }
}

/// A throwaway server (state in memory, no conversation log) with `args`.
pub fn serve_in_memory(args: &[&str]) -> Server {
    let mut all = vec!["--store", "memory", "--no-conversation-log"];
    all.extend(args);
    serve(&all)
}

/// A path as the `&str` an argument list takes (the tests' temporary
/// directories have UTF-8 names).
pub fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The gateway file `text`, written as `gateway.toml` in `dir`.
pub fn gateway_file(dir: &Path, text: &str) -> PathBuf {
    let file = dir.join("gateway.toml");
    std::fs::write(&file, text).unwrap();
    file
}

/// A CA and a server certificate it signed for 127.0.0.1, written as PEM
/// files into `dir`: (CA, certificate, key).
pub fn tls_files(dir: &Path) -> [String; 3] {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    [
        ("ca.pem", ca.pem()),
        ("cert.pem", cert.pem()),
        ("key.pem", key.serialize_pem()),
    ]
    .map(|(name, pem)| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path.to_str().unwrap().to_owned()
    })
}

// ===== plain HTTP =====

/// A server's answer to [`http`].
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// The status line and the headers.
    pub head: String,
    pub body: String,
}

/// One HTTP/1.1 request (`"GET /path"`, headers `"name: value"`, a JSON
/// body) to the server whose base URL is `url` (plain `http://`); `None`
/// when no server answers.
pub fn http(
    url: &str,
    request_line: &str,
    headers: &[&str],
    body: Option<&str>,
) -> Option<Response> {
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(PATIENCE)).ok()?;
    let mut request =
        format!("{request_line} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    if let Some(body) = body {
        request.push_str("content-type: application/json\r\n");
        request.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or(""));
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some(Response {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

/// `GET path` on the server at `url`, which must answer.
pub fn get(url: &str, path: &str) -> Response {
    http(url, &format!("GET {path}"), &[], None)
        .unwrap_or_else(|| panic!("no answer to GET {path} from {url}"))
}

// ===== PostgreSQL =====

/// A fresh PostgreSQL database for one test, dropped (with whatever is
/// still connected to it) when this is.
pub struct Database {
    /// Where it is: `postgres://…/NAME`.
    pub url: String,
    name: String,
}

impl Database {
    /// A database `a2a_cli_<random>` on the server of `A2A_TEST_POSTGRES_URL`
    /// (default `postgres://postgres@127.0.0.1:5432/postgres`). `None`, with a
    /// notice, when that server does not answer; in CI (`CI=true`) that fails
    /// the test instead.
    pub fn create() -> Option<Database> {
        let admin = admin_url();
        let name = format!("a2a_cli_{}", a2a_core::new_id().replace('-', "")).to_lowercase();
        match on_admin(&format!("CREATE DATABASE {name}")) {
            Ok(()) => {}
            Err(Admin::Unreachable(err)) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("NOTICE: skipping a PostgreSQL test: {admin} is unreachable ({err})");
                return None;
            }
            Err(err) => panic!("PostgreSQL at {admin}: {err:?}"),
        }
        let (server, _) = admin.rsplit_once('/').unwrap();
        Some(Database {
            url: format!("{server}/{name}"),
            name,
        })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // Not a panic: this may run while a failing test unwinds.
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(err) = on_admin(&drop) {
            eprintln!("cannot drop the test database {}: {err:?}", self.name);
        }
    }
}

/// The PostgreSQL server the tests use, as a URL of a database that exists.
fn admin_url() -> String {
    std::env::var("A2A_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// Why [`on_admin`] failed.
#[derive(Debug)]
enum Admin {
    /// No connection.
    Unreachable(sqlx::Error),
    /// The statement failed.
    Refused(sqlx::Error),
}

/// Runs `statement` on the admin database.
fn on_admin(statement: &str) -> Result<(), Admin> {
    use sqlx::Connection as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut admin = sqlx::PgConnection::connect(&admin_url())
            .await
            .map_err(Admin::Unreachable)?;
        sqlx::query(statement)
            .execute(&mut admin)
            .await
            .map_err(Admin::Refused)?;
        let _ = admin.close().await;
        Ok(())
    })
}
