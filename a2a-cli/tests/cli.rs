//! The `a2a` binary end to end against `a2a serve`.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    url: String,
    /// Kept open: the server's later banner lines must not meet a closed pipe.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A throwaway server (state in memory).
fn serve() -> Server {
    serve_with(&["--store", "memory", "--no-conversation-log"])
}

fn serve_with(extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--port", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://") || w.starts_with("https://"))
        .unwrap()
        .to_owned();
    Server {
        child,
        url,
        _stdout: stdout,
    }
}

fn a2a(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = a2a(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&ok(&all)).unwrap()
}

#[test]
fn every_command_against_a_live_server() {
    let server = serve();
    let url = server.url.as_str();

    let card = ok(&["card", url]);
    assert!(
        card.contains("a2a echo agent") && card.contains("GRPC"),
        "{card}"
    );

    for transport in ["jsonrpc", "http_json", "grpc"] {
        let out = ok(&["send", url, "hello there", "--transport", transport]);
        assert!(
            out.contains("COMPLETED") && out.contains("hello there"),
            "{transport}: {out}"
        );
    }
    let streamed = ok(&["send", url, "one two", "--stream"]);
    assert!(
        streamed.contains("[WORKING]") && streamed.contains("[COMPLETED]"),
        "{streamed}"
    );

    let task = json(&["send", url, "?"]);
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let got = ok(&["get", url, &id]);
    assert!(
        got.contains("INPUT_REQUIRED") && got.contains("user: ?"),
        "{got}"
    );
    let listed = json(&["list", url, "--status", "input-required"]);
    assert_eq!(listed["totalSize"], 1);

    let set = json(&[
        "push",
        "set",
        url,
        &id,
        "https://hooks.example.com/a2a",
        "--auth",
        "Bearer abc",
    ]);
    let config = set["id"].as_str().unwrap().to_owned();
    assert_eq!(
        json(&["push", "get", url, &id, &config])["url"],
        "https://hooks.example.com/a2a"
    );
    assert!(ok(&["push", "list", url, &id]).contains(&config));
    ok(&["push", "delete", url, &id, &config]);

    let canceled = ok(&["cancel", url, &id]);
    assert!(canceled.contains("CANCELED"), "{canceled}");

    // Errors: one line on stderr, a failing exit code, no backtrace.
    let missing = a2a(&["get", url, "no-such-task"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8(missing.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error:") && stderr.contains("TASK_NOT_FOUND"),
        "{stderr}"
    );
    let unreachable = a2a(&["card", "http://127.0.0.1:1"]);
    assert!(!unreachable.status.success());
    assert_eq!(
        String::from_utf8(unreachable.stderr)
            .unwrap()
            .lines()
            .count(),
        1
    );
}

#[test]
fn sqlite_state_survives_a_restart_and_a_data_dir_serves_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let server = serve_with(&["--data-dir", data_dir]);
    let task = json(&["send", &server.url, "?"]);
    let id = task["task"]["id"].as_str().unwrap().to_owned();

    // A second server on the same data directory stops at once, saying why.
    let mut second = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--port", "0", "--data-dir", data_dir])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            panic!("a second server on the same data directory kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("in use by another process"),
        "unclear refusal: {stderr}"
    );

    // Killed outright, the server's state is still there for the next one.
    drop(server);
    let server = serve_with(&["--data-dir", data_dir]);
    let got = json(&["get", &server.url, &id]);
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(
        got["history"]
            .as_array()
            .is_some_and(|h| h.iter().any(|m| m["parts"][0]["text"] == "?")),
        "{got}"
    );
}

#[test]
fn jobs_are_listed_shown_canceled_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let server = serve_with(&["--data-dir", data_dir]);
    let url = server.url.clone();
    let waiting = json(&["send", &url, "?"]);
    let id = waiting["task"]["id"].as_str().unwrap().to_owned();
    ok(&["send", &url, "hello jobs"]);

    // Read beside the running server.
    let jobs = json(&["jobs", "list", "--data-dir", data_dir]);
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert!(jobs.iter().all(|j| j["state"] == "COMPLETED"), "{jobs:?}");
    let shown = ok(&["jobs", "show", "--data-dir", data_dir, &id]);
    assert!(
        shown.contains(&id) && shown.contains("INPUT_REQUIRED"),
        "{shown}"
    );
    let filtered = json(&[
        "jobs",
        "list",
        "--data-dir",
        data_dir,
        "--state-filter",
        "failed",
    ]);
    assert_eq!(filtered.as_array().unwrap().len(), 0);
    let bad = a2a(&[
        "jobs",
        "list",
        "--data-dir",
        data_dir,
        "--state-filter",
        "sleepy",
    ]);
    assert!(!bad.status.success());

    // Cancel goes through the server.
    let canceled = ok(&["jobs", "cancel", &url, &id]);
    assert!(canceled.contains("CANCELED"), "{canceled}");

    // Pruning writes: refused while the server holds the data directory.
    let busy = a2a(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
    ]);
    assert!(!busy.status.success());
    assert!(String::from_utf8_lossy(&busy.stderr).contains("in use"));
    drop(server);
    let pruned = json(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
    ]);
    assert_eq!(pruned["removed"], 2);
    let left = json(&["jobs", "list", "--data-dir", data_dir]);
    assert_eq!(left.as_array().unwrap().len(), 0);
}

#[test]
fn serve_exits_within_its_grace_period_with_a_subscriber_attached() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let mut server = serve_with(&["--data-dir", data_dir, "--shutdown-grace", "1"]);
    let waiting = json(&["send", &server.url, "?"]);
    let id = waiting["task"]["id"].as_str().unwrap().to_owned();
    // A subscription to a waiting task stays open until the server goes.
    let mut subscriber = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["subscribe", &server.url, &id])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(subscriber.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains(&id), "{first}");

    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "a2a serve did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let _ = subscriber.kill();
    let _ = subscriber.wait();
}

#[test]
fn a_server_killed_mid_flight_loses_no_acknowledged_task() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap().to_owned();
    let server = serve_with(&["--data-dir", &data_dir]);
    let url = server.url.clone();

    // Clients keep sending; each reports the tasks the server acknowledged as done.
    let (acknowledged, done) = std::sync::mpsc::channel::<String>();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (url, acknowledged, stop) = (url.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                // A server that stopped answering ends the client (and so the test).
                let mut failures = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && failures < 50 {
                    let out = a2a(&["send", &url, "one two three four five six", "--json"]);
                    let Ok(reply) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
                        failures += 1;
                        continue;
                    };
                    failures = 0;
                    if reply["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                        let id = reply["task"]["id"].as_str().unwrap().to_owned();
                        if acknowledged.send(id).is_err() {
                            return;
                        }
                    }
                }
            })
        })
        .collect();
    drop(acknowledged);
    let mut ids: Vec<String> = done.iter().take(20).collect();
    assert_eq!(ids.len(), 20, "the server stopped acknowledging tasks");
    // Killed outright while the clients are still sending.
    drop(server);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    ids.extend(done.try_iter());

    let server = serve_with(&["--data-dir", &data_dir]);
    for id in &ids {
        let task = json(&["get", &server.url, id]);
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "acknowledged task {id} after the kill: {task}"
        );
    }
    let listed = json(&["list", &server.url]);
    assert!(
        listed["totalSize"].as_u64().unwrap() >= ids.len() as u64,
        "{listed}"
    );
}

/// Status line and body of a plain HTTP/1.1 request to `url` (the server's base).
fn http(url: &str, request_line: &str, headers: &[&str]) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request =
        format!("{request_line} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n");
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    (status, response)
}

/// The banner lines up to the last one.
fn banner(server: &mut Server) -> String {
    let mut all = String::new();
    while !all.contains("Press Ctrl-C") {
        if server._stdout.read_line(&mut all).unwrap() == 0 {
            break;
        }
    }
    all
}

#[test]
fn serve_enforces_a_bearer_token_from_its_flag_and_warns_without_one() {
    let mut open = serve();
    assert!(banner(&mut open).contains("Warning: no authentication"));

    let mut guarded = serve_with(&[
        "--store",
        "memory",
        "--no-conversation-log",
        "--auth-bearer-token",
        "s3cret",
    ]);
    assert!(!banner(&mut guarded).contains("Warning"));
    let (status, card) = http(&guarded.url, "GET /.well-known/agent-card.json", &[]);
    assert_eq!(status, 200);
    assert!(card.contains(r#""securitySchemes":{"bearer""#), "{card}");
    let (status, refused) = http(&guarded.url, "GET /tasks/nope", &[]);
    assert_eq!(status, 401);
    assert!(
        refused
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer")
    );
    let (status, _) = http(
        &guarded.url,
        "GET /tasks/nope",
        &["authorization: Bearer wrong"],
    );
    assert_eq!(status, 401);
    let (status, _) = http(
        &guarded.url,
        "GET /tasks/nope",
        &["authorization: Bearer s3cret"],
    );
    assert_eq!(status, 404);
}

#[test]
fn serve_enforces_an_api_key_from_its_flag() {
    let guarded = serve_with(&[
        "--store",
        "memory",
        "--no-conversation-log",
        "--auth-api-key",
        "X-API-Key=k1",
    ]);
    let (status, card) = http(&guarded.url, "GET /.well-known/agent-card.json", &[]);
    assert_eq!(status, 200);
    assert!(card.contains(r#""name":"x-api-key""#), "{card}");
    let (status, _) = http(&guarded.url, "GET /tasks/nope", &["x-api-key: k2"]);
    assert_eq!(status, 401);
    let (status, _) = http(&guarded.url, "GET /tasks/nope", &["x-api-key: k1"]);
    assert_eq!(status, 404);
}

#[test]
fn serve_refuses_malformed_auth_flags() {
    for args in [
        &[
            "serve",
            "--store",
            "memory",
            "--port",
            "0",
            "--auth-api-key",
            "no-equals-sign",
        ][..],
        &["serve", "--auth-jwt-jwks", "http://127.0.0.1:9/jwks.json"][..],
        &["serve", "--auth-bearer-token", "a", "--auth-api-key", "X=k"][..],
    ] {
        // Refused at once (a server that started would not exit by itself).
        let out = a2a(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}

#[test]
fn serve_logs_every_message_in_and_out_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let server = serve_with(&["--store", "memory", "--data-dir", data_dir]);
    ok(&["send", &server.url, "hello, 로그"]);
    // The writer takes lines off its queue at once; wait for it to catch up.
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let out = ok(&["log", "today", "--data-dir", data_dir, "--json"]);
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= 3 || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The request, the echoed artifact (whole, not chunk by chunk), and the
    // message that completes the task, chained.
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["type"], "request");
    assert_eq!(lines[0]["from_agent"], "user");
    assert_eq!(lines[0]["content"], "hello, 로그");
    assert_eq!(lines[1]["type"], "response");
    assert_eq!(lines[1]["content"], "hello, 로그");
    assert!(lines[1]["metadata"]["artifactId"].is_string());
    assert_eq!(lines[2]["type"], "response");
    assert_eq!(lines[2]["metadata"]["state"], "TASK_STATE_COMPLETED");
    for n in 1..3 {
        assert_eq!(lines[n]["parent_id"], lines[n - 1]["id"]);
        assert_eq!(lines[n]["to_agent"], "user");
        assert_eq!(
            lines[n]["metadata"]["taskId"],
            lines[0]["metadata"]["taskId"]
        );
    }
    let tail = ok(&["log", "tail", "-n", "1", "--data-dir", data_dir]);
    assert!(tail.contains("response"), "{tail}");
    assert!(tail.contains("→ user: "), "{tail}");
    let chain = ok(&[
        "log",
        "chain",
        lines[2]["id"].as_str().unwrap(),
        "--data-dir",
        data_dir,
    ]);
    assert_eq!(chain.lines().count(), 3, "{chain}");
    drop(server);

    let quiet = tempfile::tempdir().unwrap();
    let quiet_dir = quiet.path().to_str().unwrap();
    let server = serve_with(&[
        "--store",
        "memory",
        "--data-dir",
        quiet_dir,
        "--no-conversation-log",
    ]);
    ok(&["send", &server.url, "hello"]);
    drop(server);
    assert!(!quiet.path().join("stream").exists());
}

/// A CA and a server certificate it signed for 127.0.0.1, written as PEM
/// files into `dir`: (CA, certificate, key).
fn tls_files(dir: &std::path::Path) -> [String; 3] {
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

#[test]
fn serve_speaks_tls_from_its_flags_with_https_urls_for_every_binding() {
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key] = tls_files(dir.path());
    let mut server = serve_with(&[
        "--store",
        "memory",
        "--no-conversation-log",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    let url = server.url.clone();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let banner = banner(&mut server);
    assert!(banner.contains("Agent card: https://"), "{banner}");

    let card = json(&["card", &url, "--tls-ca", &ca]);
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    // Three 1.0 interfaces, and the same three speaking 0.3.
    assert_eq!(interfaces.len(), 6, "{card}");
    for interface in interfaces {
        let at = interface["url"].as_str().unwrap();
        assert!(at.starts_with("https://127.0.0.1:"), "{interface}");
    }
    for transport in ["jsonrpc", "http_json", "grpc"] {
        let out = ok(&[
            "send",
            &url,
            "hello over tls",
            "--transport",
            transport,
            "--tls-ca",
            &ca,
        ]);
        assert!(
            out.contains("COMPLETED") && out.contains("hello over tls"),
            "{transport}: {out}"
        );
    }
    // Without the CA, the client refuses the server's certificate.
    let out = a2a(&["card", &url]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("certificate"), "{stderr}");
}

#[test]
fn serve_refuses_unusable_tls_files_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key] = tls_files(dir.path());
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--tls-cert", missing, "--tls-key", &key],
            "missing.pem",
        ),
        // A CA certificate is no private key.
        (
            vec!["--tls-cert", &cert, "--tls-key", &ca],
            "no private key",
        ),
        (vec!["--tls-cert", &cert], "--tls-key"),
    ] {
        let mut all = vec!["serve", "--store", "memory", "--port", "0"];
        all.extend(args);
        // Refused at once (a server that started would not exit by itself).
        let out = a2a(&all);
        assert!(!out.status.success(), "{all:?}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{all:?}: {stderr}");
    }
}

/// `a2a serve --config FILE` in `dir`: the server and its banner up to the
/// line that says how to stop it.
fn serve_gateway(dir: &std::path::Path, file: &std::path::Path) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--port", "0", "--config"])
        .arg(file)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("Press Ctrl-C") {
        if stdout.read_line(&mut banner).unwrap() == 0 {
            panic!("the gateway stopped: {banner}");
        }
    }
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let server = Server {
        child,
        url,
        _stdout: stdout,
    };
    (server, banner)
}

#[test]
fn serve_hosts_the_three_kinds_of_agents_of_a_gateway_file() {
    let remote = serve();
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/gateway/agents/echo.py"
    );
    let file = dir.path().join("gateway.toml");
    std::fs::write(
        &file,
        format!(
            "[agents.planner]\nkind = \"rust\"\nexecutor = \"echo\"\ntitle = \"Planner\"\n\n\
             [agents.scripted]\nkind = \"process\"\ncommand = [\"python3\", {script:?}]\n\n\
             [agents.reviewer]\nkind = \"remote\"\nurl = \"{}\"\n",
            remote.url
        ),
    )
    .unwrap();
    let (gateway, banner) = serve_gateway(dir.path(), &file);
    for row in [
        "planner   rust",
        "scripted  process  python3",
        "reviewer  remote   http://",
    ] {
        assert!(banner.contains(row), "{row:?} in\n{banner}");
    }
    assert!(banner.contains("one database per agent"), "{banner}");
    let url = gateway.url.as_str();
    for agent in ["planner", "scripted", "reviewer"] {
        let at = format!("{url}/agents/{agent}");
        for transport in ["jsonrpc", "http_json", "grpc"] {
            let out = ok(&["send", &at, "hello there", "--transport", transport]);
            assert!(out.contains("COMPLETED"), "{agent} over {transport}: {out}");
        }
    }
    // The root card is the first agent's; each agent keeps its state apart.
    assert!(ok(&["card", url]).contains("Planner"));
    for agent in ["planner", "scripted", "reviewer"] {
        assert!(
            dir.path().join("data/agents").join(agent).is_dir(),
            "{agent}"
        );
    }
    let unknown = a2a(&["send", &format!("{url}/agents/nope"), "hi"]);
    assert!(!unknown.status.success());
}

#[test]
fn serve_refuses_a_gateway_file_with_an_error_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway.toml");
    for (text, says) in [
        (
            "[agents.a]\nkind = \"rust\"\nexecutor = \"nope\"\n",
            ":3:12: agents.a.executor: no Rust agent named \"nope\"",
        ),
        (
            "[agents.a]\nkind = \"process\"\ncommand = [\"no-such-program-here\"]\n",
            ":3:11: agents.a.command:",
        ),
        (
            "[agents.a]\nkind = \"rust\"\n\nexecuter = \"echo\"\n",
            ":4:1: unknown field",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_a2a"))
            .args(["serve", "--port", "0", "--store", "memory", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(
            stderr.contains(&format!("{}{says}", file.display())),
            "{says:?} in {stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}
