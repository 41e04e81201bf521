//! The `a2a` binary end to end against `a2a serve`.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;

use support::{
    PATIENCE, a2a, arg, follow, gateway_file, get, http, json, ok, serve, serve_in_memory,
    serve_refused, tls_files,
};

#[test]
fn every_command_against_a_live_server() {
    let server = serve_in_memory(&[]);
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
    let server = serve(&["--data-dir", data_dir]);
    let task = json(&["send", &server.url, "?"]);
    let id = task["task"]["id"].as_str().unwrap().to_owned();

    // A second server on the same data directory stops at once, saying why.
    let stderr = serve_refused(&["--data-dir", data_dir]).stderr;
    assert!(
        stderr.contains("in use by another process"),
        "unclear refusal: {stderr}"
    );

    // Killed outright, the server's state is still there for the next one.
    drop(server);
    let server = serve(&["--data-dir", data_dir]);
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
    let server = serve(&["--data-dir", data_dir]);
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

    // Cancel goes through the server; the job then says so, with the reason.
    let canceled = ok(&["jobs", "cancel", &url, &id]);
    assert!(canceled.contains("CANCELED"), "{canceled}");
    let jobs = json(&["jobs", "list", "--data-dir", data_dir]);
    let job = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["taskId"] == id.as_str())
        .unwrap();
    assert_eq!(
        (&job["state"], &job["reason"]),
        (&json!("CANCELED"), &json!("the task was canceled")),
        "{job}"
    );
    let listed = ok(&["jobs", "list", "--data-dir", data_dir]);
    let line = listed.lines().find(|l| l.contains(&id)).unwrap();
    assert!(
        line.contains("CANCELED") && line.contains("the task was canceled"),
        "{listed}"
    );
    let shown = ok(&["jobs", "show", "--data-dir", data_dir, &id]);
    assert!(
        shown.contains("CANCELED") && shown.contains("the task was canceled"),
        "{shown}"
    );
    let only = json(&[
        "jobs",
        "list",
        "--data-dir",
        data_dir,
        "--state-filter",
        "canceled",
    ]);
    assert_eq!(only.as_array().unwrap().len(), 1, "{only}");

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
    let pruned = ok(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
    ]);
    assert_eq!(
        pruned.trim(),
        "removed 2 finished job records older than 0 days; \
         removed 0 ended tasks older than 30 days"
    );
    let left = json(&["jobs", "list", "--data-dir", data_dir]);
    assert_eq!(left.as_array().unwrap().len(), 0);
    // The tasks outlive their job records: a client still reads them.
    let server = serve(&["--data-dir", data_dir]);
    let got = json(&["get", &server.url, &id]);
    assert_eq!(got["status"]["state"], "TASK_STATE_CANCELED");
}

/// `a2a jobs prune` on a store whose work ended 40, 10 and 2 days ago: job
/// records go after 7 days, tasks after the task retention (30 days), and
/// the report says which went.
#[test]
fn prune_reports_the_job_records_and_the_tasks_it_removes() {
    use a2a_server::store::{Cause, JobState, JobWrite, NewJob, TaskStore};
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let owner = a2a_server::Caller::default();
    let now = chrono::Utc::now();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = a2a_store_sql::SqliteStore::open(dir.path()).await.unwrap();
        for (id, days) in [("ended-40", 40), ("ended-10", 10), ("ended-2", 2)] {
            let at = now - chrono::Duration::days(days);
            let mut task = a2a_core::Task::new(id, "c", a2a_core::TaskState::Completed);
            task.status.timestamp = Some(at);
            let event = a2a_core::StreamResponse::Task(task.clone());
            let job = NewJob {
                task_id: id,
                owner: &owner,
                node: "node-t",
                request: "{}",
                at,
            };
            let cause = Cause::event(&event).with_job(JobWrite::RecordFinished {
                job: &job,
                state: JobState::Completed,
                reason: None,
            });
            store.create(&owner, &task, &cause).await.unwrap();
        }
        store.close().await;
    });
    let pruned = json(&["jobs", "prune", "--data-dir", data_dir]);
    assert_eq!(pruned, json!({ "jobs": 2, "tasks": 1 }));
    let left = json(&["jobs", "list", "--data-dir", data_dir]);
    let left: Vec<&str> = left
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["ended-2"]);
    let report = ok(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
        "--task-retention-days",
        "0",
    ]);
    assert_eq!(
        report.trim(),
        "removed 1 finished job record older than 0 days; \
         kept every task (task retention 0: for ever)"
    );
    let again = ok(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--task-retention-days",
        "5",
    ]);
    assert_eq!(
        again.trim(),
        "removed 0 finished job records older than 7 days; \
         removed 1 ended task older than 5 days"
    );
}

#[test]
fn serve_exits_within_its_grace_period_with_a_subscriber_attached() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let server = serve(&["--data-dir", data_dir, "--shutdown-grace", "1"]);
    let waiting = json(&["send", &server.url, "?"]);
    let id = waiting["task"]["id"].as_str().unwrap().to_owned();
    // A subscription to a waiting task stays open until the server goes.
    let subscriber = follow(&["subscribe", &server.url, &id]);
    let first = subscriber
        .line_by(Instant::now() + PATIENCE)
        .expect("a2a subscribe printed nothing");
    assert!(first.contains(&id), "{first}");

    // Stopped as a service manager does, it exits cleanly in good time.
    server.stop(Duration::from_secs(15));
    drop(subscriber);
}

#[test]
fn a_server_killed_mid_flight_loses_no_acknowledged_task() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap().to_owned();
    let server = serve(&["--data-dir", &data_dir]);
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

    let server = serve(&["--data-dir", &data_dir]);
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

/// The status of `GET path` with `headers` on the server at `url`.
fn status_of(url: &str, path: &str, headers: &[&str]) -> u16 {
    http(url, &format!("GET {path}"), headers, None)
        .unwrap()
        .status
}

#[test]
fn serve_enforces_a_bearer_token_from_its_flag_and_warns_without_one() {
    let open = serve_in_memory(&[]);
    assert!(open.banner.contains("Warning: no authentication"));

    let guarded = serve_in_memory(&["--auth-bearer-token", "s3cret"]);
    assert!(!guarded.banner.contains("Warning"));
    let card = get(&guarded.url, "/.well-known/agent-card.json");
    assert_eq!(card.status, 200);
    assert!(
        card.body.contains(r#""securitySchemes":{"bearer""#),
        "{card:?}"
    );
    let refused = get(&guarded.url, "/tasks/nope");
    assert_eq!(refused.status, 401);
    assert!(
        refused
            .head
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer")
    );
    let wrong = ["authorization: Bearer wrong"];
    assert_eq!(status_of(&guarded.url, "/tasks/nope", &wrong), 401);
    let right = ["authorization: Bearer s3cret"];
    assert_eq!(status_of(&guarded.url, "/tasks/nope", &right), 404);
}

#[test]
fn serve_enforces_an_api_key_from_its_flag() {
    let guarded = serve_in_memory(&["--auth-api-key", "X-API-Key=k1"]);
    let card = get(&guarded.url, "/.well-known/agent-card.json");
    assert_eq!(card.status, 200);
    assert!(card.body.contains(r#""name":"x-api-key""#), "{card:?}");
    let url = guarded.url.as_str();
    assert_eq!(status_of(url, "/tasks/nope", &["x-api-key: k2"]), 401);
    assert_eq!(status_of(url, "/tasks/nope", &["x-api-key: k1"]), 404);
}

#[test]
fn serve_refuses_malformed_auth_flags() {
    for args in [
        &["--store", "memory", "--auth-api-key", "no-equals-sign"][..],
        &["--auth-jwt-jwks", "http://127.0.0.1:9/jwks.json"][..],
        &["--auth-bearer-token", "a", "--auth-api-key", "X=k"][..],
    ] {
        serve_refused(args);
    }
}

#[test]
fn serve_logs_every_message_in_and_out_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let server = serve(&["--store", "memory", "--data-dir", data_dir]);
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
    let server = serve(&[
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

#[test]
fn serve_speaks_tls_from_its_flags_with_https_urls_for_every_binding() {
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key] = tls_files(dir.path());
    let server = serve_in_memory(&["--tls-cert", &cert, "--tls-key", &key]);
    let url = server.url.clone();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let banner = &server.banner;
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
        let mut all = vec!["--store", "memory"];
        all.extend(args);
        let stderr = serve_refused(&all).stderr;
        assert!(stderr.contains(says), "{all:?}: {stderr}");
    }
}

#[test]
fn serve_hosts_the_three_kinds_of_agents_of_a_gateway_file() {
    let remote = serve_in_memory(&[]);
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/gateway/agents/echo.py"
    );
    let file = gateway_file(
        dir.path(),
        &format!(
            "[agents.planner]\nkind = \"rust\"\nexecutor = \"echo\"\ntitle = \"Planner\"\n\n\
             [agents.scripted]\nkind = \"process\"\ncommand = [\"python3\", {script:?}]\n\n\
             [agents.reviewer]\nkind = \"remote\"\nurl = \"{}\"\n",
            remote.url
        ),
    );
    let data = dir.path().join("data");
    let gateway = serve(&["--config", arg(&file), "--data-dir", arg(&data)]);
    let banner = &gateway.banner;
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
        let file = gateway_file(dir.path(), text);
        let stderr = serve_refused(&["--store", "memory", "--config", arg(&file)]).stderr;
        assert!(
            stderr.contains(&format!("{}{says}", file.display())),
            "{says:?} in {stderr}"
        );
    }
}
