//! The `a2a` binary as a Unix tool in an operator's hands: quiet when its
//! reader goes away (`| head`), log lines that show the id `a2a log chain`
//! takes, `a2a jobs` on a gateway's data directory, a banner that says each
//! thing once.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{PATIENCE, arg, command, fails, gateway_file, json, ok, serve, stop_with};

/// Two echo agents and a hub, as the gateway file of a data directory.
const GATEWAY: &str = r#"[agents.alpha]
kind = "rust"
executor = "echo"

[agents.beta]
kind = "rust"
executor = "echo"

[hub]
default_channel = "general"

[hub.channels.general]
description = "Everything."
default_agent = "alpha"
"#;

/// `child`'s output once it exits by itself within [`PATIENCE`] (its
/// standard error read aside, so that it never blocks on it).
fn exit_of(mut child: Child, args: &[&str]) -> Output {
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_end(&mut all);
        }
        all
    });
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a2a {args:?} kept running with its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: Vec::new(),
        stderr: reader.join().unwrap(),
    }
}

/// `a2a ARGS` started with a standard output nobody reads: the pipe's
/// reader (`true`, which reads nothing) has exited before the command
/// starts, so its first write meets a closed pipe, as behind `| head -0`.
fn spawn_with_stdout_closed(args: &[&str]) -> Child {
    let mut reader = std::process::Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = reader.stdin.take().unwrap();
    assert!(reader.wait().unwrap().success());
    command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(pipe)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `a2a ARGS` with its stdout closed: it must exit 0, without a panic.
fn quiet_when_closed(args: &[&str]) {
    let out = exit_of(spawn_with_stdout_closed(args), args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "a2a {args:?}: {stderr}");
    assert_eq!(out.status.code(), Some(0), "a2a {args:?}: {stderr}");
}

/// `a2a ARGS` prints something (so that a closed stdout is met), and exits
/// 0 quietly when nobody reads it.
fn prints_and_stops_quietly(args: &[&str]) {
    let printed = ok(args);
    assert!(!printed.trim().is_empty(), "a2a {args:?} printed nothing");
    quiet_when_closed(args);
}

/// The lines of today's log in `data_dir`, once there are at least `count`.
fn log_lines(data_dir: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let out = ok(&["log", "today", "--data-dir", data_dir, "--json"]);
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(Instant::now() < deadline, "{lines:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_printing_command_exits_0_without_a_panic_when_its_reader_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = arg(dir.path());
    let server = serve(&["--data-dir", data_dir]);
    let url = server.url.as_str();
    let done = json(&["send", url, "hello pipes"]);
    let done = done["task"]["id"].as_str().unwrap().to_owned();
    let waiting = |text: &str| {
        let task = json(&["send", url, text]);
        task["task"]["id"].as_str().unwrap().to_owned()
    };
    let waits = waiting("?");
    let hook = json(&["push", "set", url, &waits, "https://hooks.example.com/a"]);
    let hook = hook["id"].as_str().unwrap().to_owned();
    let lines = log_lines(data_dir, 3);
    let last = lines.last().unwrap()["id"].as_str().unwrap().to_owned();
    let today = chrono::Utc::now().date_naive().to_string();

    for args in [
        &["card", url][..],
        &["card", url, "--json"],
        &["send", url, "one two three"],
        &["send", url, "one two three", "--stream"],
        &["send", url, "one two three", "--stream", "--json"],
        &["get", url, &done],
        &["get", url, &done, "--json"],
        &["list", url],
        &["list", url, "--json"],
        &["push", "get", url, &waits, &hook],
        &["push", "list", url, &waits],
        &["push", "list", url, &waits, "--json"],
        &["jobs", "list", "--data-dir", data_dir],
        &["jobs", "list", "--data-dir", data_dir, "--json"],
        &["jobs", "show", "--data-dir", data_dir, &done],
        &["jobs", "show", "--data-dir", data_dir, &done, "--json"],
        &["log", "today", "--data-dir", data_dir],
        &["log", "today", "--data-dir", data_dir, "--json"],
        &["log", "date", &today, "--data-dir", data_dir],
        &["log", "tail", "--data-dir", data_dir],
        &["log", "chain", &last, "--data-dir", data_dir],
    ] {
        prints_and_stops_quietly(args);
    }
    // Commands that change something run once, closed; what they did shows.
    quiet_when_closed(&["push", "set", url, &waits, "https://hooks.example.com/b"]);
    assert_eq!(
        json(&["push", "list", url, &waits])["configs"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    quiet_when_closed(&["push", "delete", url, &waits, &hook]);
    // A subscription to a waiting task stays open: the closed pipe ends it.
    quiet_when_closed(&["subscribe", url, &waits]);
    quiet_when_closed(&["cancel", url, &waits]);
    let other = waiting("?");
    quiet_when_closed(&["jobs", "cancel", url, &other]);
    for task in [&waits, &other] {
        let got = json(&["get", url, task]);
        assert_eq!(got["status"]["state"], "TASK_STATE_CANCELED", "{got}");
    }
    drop(server);
    quiet_when_closed(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
    ]);
    assert_eq!(
        json(&["jobs", "list", "--data-dir", data_dir])
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn hub_commands_exit_0_without_a_panic_when_their_reader_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let data = dir.path().join("data");
    let server = serve(&["--config", arg(&file), "--data-dir", arg(&data)]);
    let url = server.url.as_str();
    let hub = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = vec!["hub".into()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        all.extend(["--url".into(), url.to_owned()]);
        all
    };
    let run = |args: &[&str], closed_only: bool| {
        let all = hub(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        if closed_only {
            quiet_when_closed(&all);
        } else {
            prints_and_stops_quietly(&all);
        }
    };
    run(&["collaborate", "beta", "look at this"], true);
    run(&["post", "hello @alpha"], true);
    for args in [
        &["channels"][..],
        &["channels", "--json"],
        &["threads"],
        &["messages"],
        &["messages", "--json"],
    ] {
        run(args, false);
    }

    // `hub watch` prints nothing until something happens: then it stops.
    let args = hub(&["watch"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut watch = spawn_with_stdout_closed(&args);
    let mut stderr = BufReader::new(watch.stderr.take().unwrap());
    let mut following = String::new();
    stderr.read_line(&mut following).unwrap();
    assert!(following.starts_with("Following"), "{following}");
    ok(&hub(&["post", "hello again"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    let (sender, rest) = mpsc::channel();
    std::thread::spawn(move || {
        let mut all = String::new();
        let _ = stderr.read_to_string(&mut all);
        let _ = sender.send(all);
    });
    let out = exit_of(watch, &args);
    let rest = rest.recv_timeout(PATIENCE).unwrap();
    assert!(!rest.contains("panicked"), "{rest}");
    assert_eq!(out.status.code(), Some(0), "{rest}");
}

#[test]
fn serve_keeps_serving_when_its_stdout_is_closed_and_stops_cleanly() {
    // A free port, known before the server starts: its banner goes nowhere.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let mut server = spawn_with_stdout_closed(&[
        "serve",
        "--store",
        "memory",
        "--no-conversation-log",
        "--port",
        &port,
    ]);
    let stderr = server.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut all);
        all
    });
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + PATIENCE;
    while support::http(&url, "GET /.well-known/agent-card.json", &[], None)
        .is_none_or(|r| r.status != 200)
    {
        assert!(
            Instant::now() < deadline,
            "a2a serve with a closed stdout never served"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ok(&["send", &url, "still here"]).contains("COMPLETED"));
    let status = stop_with(&mut server, "-TERM", PATIENCE);
    let stderr = stderr.join().unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(status.success(), "{status:?}: {stderr}");
}

#[test]
fn log_lines_show_the_id_log_chain_takes_and_json_keeps_them_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = arg(dir.path());
    let server = serve(&["--store", "memory", "--data-dir", data_dir]);
    ok(&["send", &server.url, "hello ids"]);
    let lines = log_lines(data_dir, 3);
    drop(server);
    // --json: the lines as stored, whole ids included.
    let stored = std::fs::read_dir(dir.path().join("stream"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<String>();
    let as_json = ok(&["log", "today", "--data-dir", data_dir, "--json"]);
    assert_eq!(as_json.trim(), stored.trim());

    let ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    let short = |id: &str| id.rsplit('_').next().unwrap().to_owned();
    let today = chrono::Utc::now().date_naive().to_string();
    for args in [
        &["log", "today"][..],
        &["log", "date", &today],
        &["log", "tail", "-n", "3"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--data-dir", data_dir]);
        let text = ok(&all);
        let printed: Vec<&str> = text.lines().collect();
        assert_eq!(printed.len(), 3, "{text}");
        for (line, id) in printed.iter().zip(&ids) {
            // `2026-11-27 02:15:00.123 ab12cd request  user → …`
            let shown = line.split_whitespace().nth(2).unwrap();
            assert_eq!(shown, short(id), "{line}");
        }
    }
    // What was shown, a prefix of it, and the whole id name the same chain.
    let whole = ok(&["log", "chain", ids[2], "--data-dir", data_dir]);
    assert_eq!(whole.lines().count(), 3, "{whole}");
    let last = short(ids[2]);
    for id in [last.as_str(), &last[..4], &ids[2][..ids[2].len() - 2]] {
        assert_eq!(ok(&["log", "chain", id, "--data-dir", data_dir]), whole);
    }
    let first = ok(&["log", "chain", &short(ids[0]), "--data-dir", data_dir]);
    assert_eq!(first.lines().count(), 1, "{first}");
}

/// A log of `lines` (id, parent id) on 2026-01-01, written as the log
/// writes it, in `data_dir`.
fn write_log(data_dir: &Path, lines: &[(&str, Option<&str>)]) {
    let stream = data_dir.join("stream");
    std::fs::create_dir_all(&stream).unwrap();
    let text: String = lines
        .iter()
        .map(|(id, parent)| {
            // `id` first, as the writer puts it: `chain` looks for it there.
            let parent = parent.map_or("null".to_owned(), |p| format!("{p:?}"));
            format!(
                "{{\"id\":{id:?},\"t\":\"2026-01-01T00:00:00.000000Z\",\"from_agent\":\"user\",\
                 \"to_agent\":\"echo\",\"type\":\"request\",\"content\":\"line {id}\",\
                 \"parent_id\":{parent},\"metadata\":{{}}}}\n"
            )
        })
        .collect();
    std::fs::write(stream.join("2026-01-01.jsonl"), text).unwrap();
}

#[test]
fn log_chain_says_when_a_short_id_is_ambiguous_or_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = arg(dir.path());
    write_log(
        dir.path(),
        &[
            ("msg_20260101_000000_abc111", None),
            (
                "msg_20260101_000001_abc222",
                Some("msg_20260101_000000_abc111"),
            ),
        ],
    );
    let ambiguous = fails(&["log", "chain", "abc", "--data-dir", data_dir]);
    assert!(
        ambiguous.contains("ambiguous")
            && ambiguous.contains("msg_20260101_000000_abc111")
            && ambiguous.contains("msg_20260101_000001_abc222"),
        "{ambiguous}"
    );
    let unknown = fails(&["log", "chain", "zzz", "--data-dir", data_dir]);
    assert!(
        unknown.contains("\"zzz\"") && unknown.contains(data_dir),
        "{unknown}"
    );
    let chain = ok(&["log", "chain", "abc2", "--data-dir", data_dir]);
    assert_eq!(chain.lines().count(), 2, "{chain}");
    assert!(chain.contains("line msg_20260101_000000_abc111"), "{chain}");
}

/// The agent of each job `a2a jobs list ARGS --json` lists, by task id.
fn agents_of_jobs(args: &[&str]) -> Vec<(String, String)> {
    let mut all = vec!["jobs", "list"];
    all.extend(args);
    let mut jobs: Vec<(String, String)> = json(&all)
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["taskId"].as_str().unwrap().to_owned(),
                j["agent"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    jobs.sort();
    jobs
}

#[test]
fn jobs_on_a_gateway_data_dir_cover_every_agent_and_narrow_to_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(
        dir.path(),
        "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n\n\
         [agents.beta]\nkind = \"rust\"\nexecutor = \"echo\"\n",
    );
    let data = dir.path().join("data");
    let data_dir = arg(&data);
    let server = serve(&["--config", arg(&file), "--data-dir", data_dir]);
    let url = server.url.clone();
    let send = |agent: &str, text: &str| {
        let task = json(&["send", &format!("{url}/agents/{agent}"), text]);
        task["task"]["id"].as_str().unwrap().to_owned()
    };
    let alpha = send("alpha", "hello alpha");
    let beta = send("beta", "?");

    let mut expected = vec![
        (alpha.clone(), "alpha".to_owned()),
        (beta.clone(), "beta".to_owned()),
    ];
    expected.sort();
    assert_eq!(agents_of_jobs(&["--data-dir", data_dir]), expected);
    assert_eq!(
        agents_of_jobs(&["--data-dir", data_dir, "--agent", "beta"]),
        vec![(beta.clone(), "beta".to_owned())]
    );
    let text = ok(&["jobs", "list", "--data-dir", data_dir]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("AGENT"), "{text}");
    for (task, agent) in &expected {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(agent.as_str()) && l.contains(task.as_str())),
            "{agent} {task} in\n{text}"
        );
    }
    let unknown = fails(&["jobs", "list", "--data-dir", data_dir, "--agent", "gamma"]);
    assert!(
        unknown.contains("gamma") && unknown.contains("alpha, beta"),
        "{unknown}"
    );

    let shown = ok(&["jobs", "show", "--data-dir", data_dir, &beta]);
    assert!(
        shown.contains("agent beta") && shown.contains("INPUT_REQUIRED"),
        "{shown}"
    );
    assert_eq!(
        json(&["jobs", "show", "--data-dir", data_dir, &beta])["agent"],
        "beta"
    );
    // Not alpha's: narrowed to alpha, there is no such job.
    let elsewhere = fails(&[
        "jobs",
        "show",
        "--data-dir",
        data_dir,
        "--agent",
        "alpha",
        &beta,
    ]);
    assert!(elsewhere.contains("no job"), "{elsewhere}");

    // The data directory says which agent runs the task: it cancels it.
    let canceled = ok(&["jobs", "cancel", &url, &beta, "--data-dir", data_dir]);
    assert!(canceled.contains("CANCELED"), "{canceled}");
    let again = send("beta", "?");
    let canceled = ok(&["jobs", "cancel", &url, &again, "--agent", "beta"]);
    assert!(canceled.contains("CANCELED"), "{canceled}");

    drop(server);
    let pruned = json(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
        "--agent",
        "alpha",
    ]);
    assert_eq!(
        (&pruned["jobs"], &pruned["tasks"]),
        (&1.into(), &0.into()),
        "{pruned}"
    );
    assert_eq!(pruned["agents"]["alpha"]["jobs"], 1, "{pruned}");
    let pruned = json(&[
        "jobs",
        "prune",
        "--data-dir",
        data_dir,
        "--older-than-days",
        "0",
    ]);
    assert_eq!(pruned["jobs"], 2, "{pruned}");
    assert_eq!(pruned["agents"]["beta"]["jobs"], 2, "{pruned}");
    assert!(agents_of_jobs(&["--data-dir", data_dir]).is_empty());
}

#[test]
fn jobs_on_a_directory_without_stores_say_what_they_looked_for_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = arg(dir.path());
    for command in ["list", "prune"] {
        let stderr = fails(&["jobs", command, "--data-dir", data_dir]);
        assert!(
            stderr.contains(&format!("{data_dir}/a2a.db"))
                && stderr.contains(&format!("{data_dir}/agents/NAME/a2a.db")),
            "{stderr}"
        );
        // Looking created nothing.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    let stderr = fails(&["jobs", "show", "--data-dir", data_dir, "some-task"]);
    assert!(stderr.contains("no job store"), "{stderr}");
}

#[test]
fn the_gateway_banner_prints_each_table_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let data = dir.path().join("data");
    let mut child = command()
        .args(["serve", "--port", "0", "--config", arg(&file)])
        .args(["--data-dir", arg(&data)])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut all);
        all
    });
    let mut banner = String::new();
    while !banner.contains("Press Ctrl-C") {
        assert!(stdout.read_line(&mut banner).unwrap() > 0, "{banner}");
    }
    // At once: it listens for SIGTERM by the time it says how to stop.
    let status = stop_with(&mut child, "-TERM", PATIENCE);
    assert!(status.success(), "{status:?}");
    // Everything a person sees in a terminal: both streams.
    let seen = format!("{banner}{}", stderr.join().unwrap());
    let header_count = |starts: &str, has: &str| {
        seen.lines()
            .filter(|l| l.trim_start().starts_with(starts) && l.contains(has))
            .count()
    };
    // The gateway's agents, then the hub's.
    assert_eq!(header_count("NAME", "CARD"), 1, "{seen}");
    assert_eq!(header_count("AGENT", "ENDPOINT"), 1, "{seen}");
    for agent in ["alpha", "beta"] {
        // One row in each table.
        let rows = seen
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(agent))
            .count();
        assert_eq!(rows, 2, "{agent} in\n{seen}");
    }
    assert!(!seen.contains("collaboration hub agents"), "{seen}");
}

#[test]
fn jobs_on_a_postgres_gateway_cover_every_agent_schema() {
    let Some(database) = support::Database::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(
        dir.path(),
        "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n\n\
         [agents.beta]\nkind = \"rust\"\nexecutor = \"echo\"\n",
    );
    let store = database.url.as_str();
    let server = serve(&[
        "--config",
        arg(&file),
        "--store",
        store,
        "--no-conversation-log",
    ]);
    let mut expected: Vec<(String, String)> = ["alpha", "beta"]
        .iter()
        .map(|agent| {
            let at = format!("{}/agents/{agent}", server.url);
            let task = json(&["send", &at, "hello"]);
            let id = task["task"]["id"].as_str().unwrap().to_owned();
            (id, (*agent).to_owned())
        })
        .collect();
    expected.sort();
    assert_eq!(agents_of_jobs(&["--store", store]), expected);
    assert_eq!(
        agents_of_jobs(&["--store", store, "--agent", "alpha"]),
        expected
            .iter()
            .filter(|(_, agent)| agent == "alpha")
            .cloned()
            .collect::<Vec<_>>()
    );
    // A name that is no agent's is refused, not given a schema.
    let unknown = fails(&["jobs", "list", "--store", store, "--agent", "gamma"]);
    assert!(
        unknown.contains("gamma") && unknown.contains("alpha, beta"),
        "{unknown}"
    );
    assert_eq!(agents_of_jobs(&["--store", store]), expected);
}

#[test]
fn serve_stops_cleanly_on_a_sigterm_sent_as_soon_as_its_banner_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    for _ in 0..3 {
        // SIGTERM's default action would kill it (exit by signal, no
        // "Shutting down."): it must listen before it says how to stop.
        support::serve_in_memory(&[]).stop(PATIENCE);
        serve(&["--store", "memory", "--config", arg(&file)]).stop(PATIENCE);
    }
}
