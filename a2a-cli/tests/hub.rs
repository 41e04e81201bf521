//! `a2a hub` end to end against `a2a serve --config FILE` with a `[hub]`
//! table: two echo agents, alpha and beta, in channels people and the
//! command line post to.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{PATIENCE, Server, arg, command, follow, gateway_file, stop_with, tls_files};

const GATEWAY: &str = r#"[agents.alpha]
kind = "rust"
executor = "echo"

[agents.beta]
kind = "rust"
executor = "echo"

[hub]
default_channel = "general"
operator_channel = "ops"

[hub.channels.general]
description = "Everything."
default_agent = "alpha"

[hub.channels.dev]
members = ["beta"]
"#;

/// `a2a serve --config FILE` on a free port with its state in `data_dir`,
/// once its banner says it serves the hub.
fn serve(file: &Path, data_dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec![
        "--shutdown-grace",
        "1",
        "--config",
        arg(file),
        "--data-dir",
        arg(data_dir),
    ];
    args.extend(extra);
    let server = support::serve(&args);
    assert!(
        server.banner.contains("Collaboration hub:"),
        "{}",
        server.banner
    );
    server
}

/// `a2a hub ARGS --url URL`.
fn hub<'a>(url: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["hub"];
    all.extend(args);
    all.extend(["--url", url]);
    all
}

fn ok(url: &str, args: &[&str]) -> String {
    support::ok(&hub(url, args))
}

fn json(url: &str, args: &[&str]) -> Value {
    support::json(&hub(url, args))
}

/// `a2a hub ARGS` failing: its stderr.
fn fails(url: &str, args: &[&str]) -> String {
    support::fails(&hub(url, args))
}

/// The messages `args` (`--channel C` or `--thread T`) lists, once one
/// satisfies `done`; fails after [`PATIENCE`].
fn wait_for_message(url: &str, args: &[&str], done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + PATIENCE;
    let mut all = vec!["messages"];
    all.extend(args);
    loop {
        let messages = json(url, &all)["messages"].as_array().unwrap().clone();
        if messages.iter().any(&done) {
            return messages;
        }
        assert!(
            Instant::now() < deadline,
            "no such message in {args:?}: {messages:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `message` is `agent`'s answer to message `id`.
fn answer_of(message: &Value, agent: &str, id: &str) -> bool {
    message["from"]["kind"] == "agent"
        && message["from"]["name"] == agent
        && message["replyTo"] == id
}

#[test]
fn hub_channels_lists_the_channels_of_the_gateway_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);

    let text = ok(&server.url, &["channels"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("CHANNEL") && lines[0].contains("DEFAULT AGENT"),
        "{text}"
    );
    let row = |name: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("#general"),
        "#general alpha alpha, beta default, threads Everything."
    );
    assert_eq!(row("#dev"), "#dev - beta threads");
    assert!(row("#ops").starts_with("#ops - - sink"), "{text}");

    let listed = json(&server.url, &["channels"]);
    let channels = listed["channels"].as_array().unwrap();
    let names: Vec<&str> = channels
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["general", "dev", "ops"]);
    assert_eq!(channels[0]["defaultAgent"], "alpha");
    assert_eq!(channels[0]["isDefault"], true);
    assert_eq!(channels[2]["sink"], true);

    // The base URL and the token also come from the environment.
    let out = command()
        .args(["hub", "channels", "--json"])
        .env("A2A_HUB_URL", &server.url)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        listed
    );
}

#[test]
fn a_post_mentioning_beta_is_handled_and_answered_by_beta() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    let posted = ok(url, &["post", "@beta hi"]);
    assert!(
        posted.starts_with("#general operator: @beta hi\n"),
        "{posted}"
    );
    assert!(posted.contains("delivering to beta (primary)"), "{posted}");

    let stored = json(url, &["post", "@beta once more", "--as", "ann"]);
    let message = &stored["message"];
    assert_eq!(message["from"]["name"], "ann");
    assert_eq!(message["handlers"], serde_json::json!(["beta"]));
    let id = message["id"].as_str().unwrap();

    // Beta's answer lands where the message was, replying to it.
    let messages = wait_for_message(url, &["--channel", "general"], |m| answer_of(m, "beta", id));
    assert!(
        !messages.iter().any(|m| m["from"]["name"] == "alpha"),
        "alpha handled a message for beta: {messages:#?}"
    );
    let shown = ok(url, &["messages", "--channel", "general"]);
    assert!(shown.contains("#general ann: @beta once more"), "{shown}");
    assert!(shown.contains("#general beta: "), "{shown}");
    // At channel level no thread opens.
    assert_eq!(ok(url, &["threads"]).trim(), "No threads.");

    // No mention: the channel's default agent handles it.
    let posted = ok(url, &["post", "how is it going?"]);
    assert!(
        posted.contains("delivering to alpha (default agent)"),
        "{posted}"
    );
}

#[test]
fn c3_collaborate_from_the_command_line_opens_a_thread_in_the_default_channel() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    let out = ok(
        url,
        &["collaborate", "beta", "please review the auth module"],
    );
    let mut lines = out.lines();
    let confirmation = lines.next().unwrap();
    assert!(
        confirmation.starts_with("delivered to beta in \"operator → beta · "),
        "{out}"
    );
    let details = lines.next().unwrap();
    assert!(details.contains("in #general (new)"), "{out}");
    let thread = details.split_whitespace().nth(1).unwrap().to_owned();

    let listed = json(url, &["threads"]);
    let threads = listed["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{listed}");
    assert_eq!(threads[0]["id"], thread.as_str());
    assert_eq!(threads[0]["channel"], "general");
    assert_eq!(threads[0]["participants"], serde_json::json!(["beta"]));
    assert_eq!(threads[0]["paused"], false);

    // Beta answers in the thread.
    let messages = wait_for_message(url, &["--thread", &thread], |m| m["from"]["name"] == "beta");
    assert_eq!(messages[0]["text"], "@beta please review the auth module");
    let shown = ok(url, &["threads", "--channel", "general"]);
    let row = shown.lines().find(|l| l.starts_with(&thread)).unwrap();
    assert!(
        row.contains("#general") && row.contains("beta") && row.contains("open"),
        "{shown}"
    );

    // Again: the pair's thread is continued; in JSON for scripts.
    let again = json(url, &["collaborate", "beta", "and the tests"]);
    assert_eq!(again["collaboration"]["thread"], thread.as_str());
    assert_eq!(again["collaboration"]["continued"], true);
    assert_eq!(again["collaboration"]["delivered"], true);

    // The guards answer as errors, with a failing exit.
    let unknown = fails(url, &["collaborate", "zeta", "hello"]);
    assert!(unknown.starts_with("error: "), "{unknown}");
    assert!(unknown.contains("zeta"), "{unknown}");
    let sink = fails(url, &["collaborate", "beta", "hello", "--channel", "ops"]);
    assert!(sink.contains("not allowed"), "{sink}");
}

#[test]
fn watch_json_prints_a_message_posted_after_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    let mut watch = follow(&["hub", "watch", "--json", "--url", url]);
    // Its stderr says when the feed is open.
    let ready = watch.stderr_line();
    assert!(ready.starts_with("Following every channel"), "{ready}");

    let posted = json(url, &["post", "@beta watched?", "--as", "ann"]);
    let id = posted["message"]["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + PATIENCE;
    let mut got = Vec::new();
    let (mine, answer) = loop {
        let line = watch
            .line_by(deadline)
            .unwrap_or_else(|| panic!("watch printed no answer to {id}: {got:#?}"));
        // One JSON object per line.
        let event: Value = serde_json::from_str(&line).unwrap();
        got.push(event);
        let find = |pred: &dyn Fn(&Value) -> bool| {
            got.iter()
                .find(|e| pred(&e["message"]))
                .map(|e| e["message"].clone())
        };
        if let (Some(mine), Some(answer)) = (
            find(&|m| m["id"] == id.as_str()),
            find(&|m| answer_of(m, "beta", &id)),
        ) {
            break (mine, answer);
        }
    };
    // Ctrl-C ends it, as a success.
    assert_eq!(
        stop_with(&mut watch.child, "-INT", PATIENCE).code(),
        Some(0)
    );
    assert_eq!(mine["text"], "@beta watched?");
    assert_eq!(mine["from"]["name"], "ann");
    assert_eq!(answer["channel"], "general");
}

#[test]
fn watch_prints_messages_and_thread_changes_as_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    let mut watch = follow(&["hub", "watch", "--channel", "general", "--url", url]);
    let ready = watch.stderr_line();
    assert!(ready.starts_with("Following #general"), "{ready}");

    // Not in the watched channel: not shown.
    ok(url, &["post", "@beta elsewhere", "--channel", "dev"]);
    let done = json(url, &["collaborate", "beta", "check the deployment"]);
    let title = done["collaboration"]["title"].as_str().unwrap().to_owned();
    let want = [
        format!("#general [{title}] thread "),
        format!("#general [{title}] operator: @beta check the deployment"),
        format!("#general [{title}] beta: "),
    ];
    let deadline = Instant::now() + PATIENCE;
    let mut got: Vec<String> = Vec::new();
    // Where the delivery to beta stands, as it moves on.
    let delivered = format!("#general [{title}] message ");
    let settled = |got: &[String]| {
        got.iter()
            .any(|l| l.starts_with(&delivered) && l.ends_with(": beta: completed"))
    };
    while !want.iter().all(|w| got.iter().any(|l| l.starts_with(w))) || !settled(&got) {
        match watch.line_by(deadline) {
            Some(line) => got.push(line),
            None => panic!("watch printed {got:#?}, wanted {want:#?}"),
        }
    }
    drop(watch);
    assert!(
        got.iter().any(|l| l.contains("opened; participants: beta")),
        "{got:#?}"
    );
    assert!(!got.iter().any(|l| l.contains("elsewhere")), "{got:#?}");
}

#[test]
fn an_unknown_channel_is_a_clear_error_with_a_failing_exit() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    for args in [
        &["post", "hello", "--channel", "nope"][..],
        &["threads", "--channel", "nope"],
        &["messages", "--channel", "nope"],
        &["watch", "--channel", "nope"],
        &["collaborate", "beta", "hello", "--channel", "nope"],
    ] {
        let stderr = fails(url, args);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains("no channel named \"nope\""),
            "{args:?}: {stderr}"
        );
    }
    // The API's own feed refuses it too, rather than streaming nothing.
    let feed = support::get(url, "/hub/api/events?channel=nope");
    assert_eq!(feed.status, 404);

    // A server without a hub, and no server at all, are said so.
    let plain = tempfile::tempdir().unwrap();
    let no_hub = gateway_file(
        plain.path(),
        "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n",
    );
    let plain = support::serve_in_memory(&["--config", arg(&no_hub)]);
    let stderr = fails(&plain.url, &["channels"]);
    assert!(stderr.contains("no collaboration hub at"), "{stderr}");
    let stderr = fails("http://127.0.0.1:1", &["channels"]);
    assert!(stderr.contains("cannot reach the hub at"), "{stderr}");
}

#[test]
fn hub_commands_carry_the_token_of_an_authenticating_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(
        &file,
        &dir.path().join("data"),
        &["--auth-bearer-token", "s3cret"],
    );
    let url = server.url.as_str();

    let refused = fails(url, &["channels"]);
    assert!(refused.starts_with("error: "), "{refused}");
    let refused = fails(url, &["channels", "--token", "wrong"]);
    assert!(refused.starts_with("error: "), "{refused}");
    let listed = json(url, &["channels", "--token", "s3cret"]);
    assert_eq!(listed["channels"][0]["name"], "general");
    // The person is who the token says, not who --as claims.
    let posted = json(
        url,
        &["post", "hello", "--token", "s3cret", "--as", "mallory"],
    );
    assert_eq!(posted["message"]["from"]["kind"], "person");
    assert_ne!(posted["message"]["from"]["name"], "mallory");
}

#[test]
fn a_hub_config_error_stops_serve_naming_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = GATEWAY.replace("default_agent = \"alpha\"", "default_agent = \"zeta\"");
    let line = text
        .lines()
        .position(|l| l.contains("zeta"))
        .map(|n| n + 1)
        .unwrap();
    let file = gateway_file(dir.path(), &text);
    let stderr = support::serve_refused(&["--store", "memory", "--config", arg(&file)]).stderr;
    let at = format!(
        "{}:{line}:17: hub.channels.general.default_agent: no agent named \"zeta\" (agents: alpha, beta)",
        file.display()
    );
    assert!(stderr.contains(&at), "{at:?} in {stderr}");
}

#[test]
fn hub_threads_keep_their_participants_across_a_restart_of_serve() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let data = dir.path().join("data");
    let server = serve(&file, &data, &[]);
    let done = json(
        &server.url,
        &["collaborate", "beta", "please review the auth module"],
    );
    let thread = done["collaboration"]["thread"].as_str().unwrap().to_owned();
    wait_for_message(&server.url, &["--thread", &thread], |m| {
        m["from"]["name"] == "beta"
    });
    let before = json(&server.url, &["threads"]);
    server.stop(PATIENCE);

    let server = serve(&file, &data, &[]);
    let after = json(&server.url, &["threads"]);
    // The same threads (times as stored: to the microsecond).
    let ids = |list: &Value| -> Vec<(Value, Value, Value)> {
        list["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["id"].clone(),
                    t["participants"].clone(),
                    t["messages"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(ids(&after), ids(&before));
    let threads = after["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{after}");
    assert_eq!(threads[0]["id"], thread.as_str());
    assert_eq!(threads[0]["participants"], serde_json::json!(["beta"]));
    let shown = ok(&server.url, &["threads"]);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with(&thread) && l.contains("beta")),
        "{shown}"
    );

    // Beta, a participant, handles what the thread is told without a mention.
    let posted = json(
        &server.url,
        &["post", "one more thing to check", "--thread", &thread],
    );
    assert_eq!(posted["message"]["handlers"], serde_json::json!(["beta"]));
    let id = posted["message"]["id"].as_str().unwrap().to_owned();
    wait_for_message(&server.url, &["--thread", &thread], |m| {
        answer_of(m, "beta", &id)
    });
}

#[test]
fn the_example_hub_file_serves_its_agents_in_their_channels() {
    let dir = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gateway/hub.toml");
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();
    let listed = json(url, &["channels"]);
    let names: Vec<&str> = listed["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["general", "dev", "ops"]);
    // gamma, the Python process agent, answers in its thread; the account
    // `default` reaches alpha.
    let done = json(
        url,
        &["collaborate", "gamma", "please review the auth module"],
    );
    let thread = done["collaboration"]["thread"].as_str().unwrap().to_owned();
    wait_for_message(url, &["--thread", &thread], |m| {
        m["from"]["name"] == "gamma"
    });
    let done = json(url, &["collaborate", "default", "hello"]);
    assert_eq!(done["collaboration"]["target"], "alpha");
}

#[test]
fn a_thread_paused_by_its_loop_guard_is_resumed_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    // Two echo agents in one thread answer each other (each answer goes to
    // the other participant) until the burst guard pauses the thread.
    let done = json(url, &["collaborate", "beta", "check this"]);
    let thread = done["collaboration"]["thread"].as_str().unwrap().to_owned();
    ok(url, &["post", "@alpha you too", "--thread", &thread]);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listed = json(url, &["threads"]);
        if listed["threads"][0]["paused"] == true {
            assert_eq!(
                listed["threads"][0]["participants"],
                serde_json::json!(["beta", "alpha"])
            );
            break;
        }
        assert!(Instant::now() < deadline, "never paused: {listed}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let shown = ok(url, &["threads"]);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with(&thread) && l.contains("paused")),
        "{shown}"
    );
    let posted = ok(url, &["post", "anyone?", "--thread", &thread]);
    assert!(
        posted.contains("no agent called: the thread is paused"),
        "{posted}"
    );

    // Nobody authenticates here: a resume must hold the operator token,
    // which the banner showed once and the command reads from the data
    // directory by itself.
    let data = dir.path().join("data");
    let token_file = data.join("hub").join(a2a_hub::OPERATOR_TOKEN_FILE);
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert!(server.banner.contains(token.trim()), "{}", server.banner);
    let elsewhere = dir.path().join("elsewhere");
    let refused = fails(url, &["resume", &thread, "--data-dir", arg(&elsewhere)]);
    assert!(refused.contains("operator token"), "{refused}");
    let resumed = ok(url, &["resume", &thread, "--data-dir", arg(&data)]);
    assert!(
        resumed.contains("resumed; participants: beta, alpha"),
        "{resumed}"
    );
    assert_eq!(json(url, &["threads"])["threads"][0]["paused"], false);
    let missing = fails(url, &["resume", "no-such-thread", "--data-dir", arg(&data)]);
    assert!(missing.contains("no-such-thread"), "{missing}");
}

#[test]
fn hub_commands_trust_the_ca_of_a_tls_server_they_are_given() {
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key] = tls_files(dir.path());
    let file = gateway_file(dir.path(), GATEWAY);
    let server = serve(
        &file,
        &dir.path().join("data"),
        &["--tls-cert", &cert, "--tls-key", &key],
    );
    let url = server.url.as_str();
    assert!(url.starts_with("https://"), "{url}");

    let listed = json(url, &["channels", "--tls-ca", &ca]);
    assert_eq!(listed["channels"][0]["name"], "general");
    let refused = fails(url, &["channels"]);
    assert!(refused.contains("certificate"), "{refused}");
}

#[test]
fn hub_post_says_whom_it_delivers_to_and_with_wait_the_outcome_and_the_answer_or_why_not() {
    let dir = tempfile::tempdir().unwrap();
    // gamma is a remote agent nobody serves: its deliveries fail.
    let file = gateway_file(
        dir.path(),
        &format!("{GATEWAY}\n[agents.gamma]\nkind = \"remote\"\nurl = \"http://127.0.0.1:9\"\n"),
    );
    let server = serve(&file, &dir.path().join("data"), &[]);
    let url = server.url.as_str();

    // Without waiting: what was posted and whom it goes to, nothing of
    // what has not happened yet.
    let posted = ok(url, &["post", "@beta hi", "--no-wait"]);
    assert!(posted.contains("delivering to beta (primary)"), "{posted}");
    assert!(!posted.contains("→"), "{posted}");

    // Waiting: each step of the delivery, then the answer.
    let posted = ok(url, &["post", "@beta are you there?", "--wait"]);
    let lines: Vec<&str> = posted.lines().collect();
    assert_eq!(
        lines[0], "#general operator: @beta are you there?",
        "{posted}"
    );
    assert!(
        lines[1].ends_with(": delivering to beta (primary)"),
        "{posted}"
    );
    assert!(lines.contains(&"  → beta: completed"), "{posted}");
    let answer = lines.iter().position(|l| l.starts_with("beta: ")).unwrap();
    let completed = lines
        .iter()
        .position(|l| *l == "  → beta: completed")
        .unwrap();
    assert!(
        answer < completed,
        "the answer comes before the end: {posted}"
    );

    // The exchange is one chain in the conversation log: the post, its
    // delivery to beta, beta's answer (the message posted), each once.
    let listed = json(url, &["messages", "--channel", "general"]);
    let answered = listed["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["from"]["name"] == "beta")
        .unwrap()
        .clone();
    let last = answered["logId"].as_str().unwrap();
    let data = dir.path().join("data");
    let deadline = Instant::now() + PATIENCE;
    let chain = loop {
        let out = support::a2a(&["log", "chain", last, "--data-dir", arg(&data)]);
        let chain = String::from_utf8_lossy(&out.stdout).into_owned();
        if chain.lines().count() >= 3 || Instant::now() > deadline {
            break chain;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let steps: Vec<String> = chain
        .lines()
        .map(|l| l.split_whitespace().skip(3).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        steps,
        [
            "request operator → hub: @beta are you there?".to_owned(),
            "request hub → beta: @beta are you there?".to_owned(),
            format!(
                "response beta → hub: {}",
                answered["text"].as_str().unwrap()
            ),
        ],
        "{chain}"
    );

    // A delivery that fails says why, and the command fails.
    let out = support::a2a(&hub(url, &["post", "@gamma hello", "--wait"]));
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("delivering to gamma (primary)"), "{stdout}");
    assert!(stdout.contains("  → gamma: failed: is offline"), "{stdout}");
    assert!(
        stderr.contains("not delivered: gamma: failed: is offline"),
        "{stderr}"
    );

    // The record shows where each delivery stands.
    let shown = ok(url, &["messages", "--channel", "general"]);
    assert!(shown.contains("  → beta: completed"), "{shown}");
    assert!(shown.contains("  → gamma: failed: is offline"), "{shown}");
    let listed = json(url, &["messages", "--channel", "general"]);
    let failed = listed["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == "@gamma hello")
        .unwrap();
    assert_eq!(failed["deliveries"][0]["agent"], "gamma");
    assert_eq!(failed["deliveries"][0]["state"], "failed");
    assert_eq!(failed["deliveries"][0]["attempt"], 1);
}
