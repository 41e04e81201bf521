//! Every example program started and used as its doc comment says, with
//! its output checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Server, TempDir, assert_line, run, run_to_end};

/// Any free port on loopback: the servers print the address they got.
const ANY_PORT: &str = "127.0.0.1:0";

#[test]
fn hello_world_answers_both_calls_of_hello_client() {
    let server = Server::start(env!("CARGO_BIN_EXE_hello_world"), &[ANY_PORT], &[]);
    let out = run(env!("CARGO_BIN_EXE_hello_client"), &[&server.url], &[]);
    assert_line(&out, "is TASK_STATE_COMPLETED: Hello, world!");
    assert_line(&out, "status: TASK_STATE_COMPLETED");
}

#[test]
fn streaming_client_sees_statuses_artifacts_and_reassembles_chunks() {
    let server = Server::start(env!("CARGO_BIN_EXE_streaming_agent"), &[ANY_PORT], &[]);
    let out = run(
        env!("CARGO_BIN_EXE_streaming_client"),
        &[&server.url, "a fox"],
        &[],
    );
    assert_line(&out, "status: TASK_STATE_WORKING thinking about it");
    assert_line(
        &out,
        r#"artifact title (append: false, last chunk: false): "A story about a fox""#,
    );
    assert_line(
        &out,
        r#"artifact story (append: true, last chunk: true): "The end.""#,
    );
    assert_line(
        &out,
        r#"artifact story = "Once upon a time there was a fox. The end.""#,
    );
    let last = out.lines().rfind(|l| l.starts_with("status:")).unwrap();
    assert_eq!(last, "status: TASK_STATE_COMPLETED story told");
}

#[test]
fn multi_turn_agent_asks_twice_then_completes_the_same_task() {
    let server = Server::start(env!("CARGO_BIN_EXE_multi_turn_agent"), &[ANY_PORT], &[]);
    let out = run(
        env!("CARGO_BIN_EXE_multi_turn_client"),
        &[&server.url, "Paris", "many", "3"],
        &[],
    );
    let expected = [
        "> I need a hotel",
        "TASK_STATE_INPUT_REQUIRED: Which city?",
        "> Paris",
        "TASK_STATE_INPUT_REQUIRED: How many nights?",
        "> many",
        "TASK_STATE_INPUT_REQUIRED: How many nights? (a number)",
        "> 3",
        "TASK_STATE_COMPLETED: Booked 3 nights in Paris.",
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn push_receiver_accepts_the_agents_notifications_and_refuses_a_forged_one() {
    let server = Server::start(env!("CARGO_BIN_EXE_push_agent"), &[ANY_PORT], &[]);
    let out = run(env!("CARGO_BIN_EXE_push_receiver"), &[&server.url], &[]);
    assert_line(&out, "refused a notification: wrong or missing token");
    assert_line(&out, "forged notification answered 401");
    assert_line(&out, "notification: TASK_STATE_WORKING step 3 of 3");
    let last = out.lines().last().unwrap();
    assert_eq!(
        last,
        r#"notification: TASK_STATE_COMPLETED done with "report to my webhook""#
    );
}

#[test]
fn auth_client_is_refused_without_the_token_and_sees_the_extended_card_with_it() {
    let env = [("A2A_TOKEN", "t0ken-for-the-test")];
    let server = Server::start(env!("CARGO_BIN_EXE_auth_agent"), &[ANY_PORT], &env);
    let out = run(env!("CARGO_BIN_EXE_auth_client"), &[&server.url], &env);
    assert_line(&out, r#"the card asks for: ["bearer"]"#);
    assert_line(&out, "without a token: refused");
    assert_line(&out, r#"with the token: Hello alice, you said "hi""#);
    assert_line(&out, r#"extended card skills: ["greet", "admin"]"#);
    // The wrong token is refused like none at all.
    let wrong = run_to_end(
        env!("CARGO_BIN_EXE_auth_client"),
        &[&server.url],
        &[("A2A_TOKEN", "guessed")],
    );
    assert!(
        !wrong.success,
        "a wrong token was accepted:\n{}",
        wrong.stdout
    );
    assert!(
        !wrong.stdout.contains("with the token:"),
        "{}",
        wrong.stdout
    );
    assert!(
        wrong.stderr.contains("the bearer token is not valid"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn jwt_client_is_refused_without_a_good_token_and_answered_with_one() {
    let env = [("A2A_JWT_SECRET", "secret-for-the-test")];
    let server = Server::start(env!("CARGO_BIN_EXE_jwt_agent"), &[ANY_PORT], &env);
    let out = run(env!("CARGO_BIN_EXE_jwt_client"), &[&server.url], &env);
    assert_line(&out, "no token: refused");
    assert_line(&out, "another key: refused");
    assert_line(&out, "expired: refused");
    assert_line(&out, r#"good token: Hello alice, you said "hi""#);
    // Tokens signed with another secret than the agent's key set are refused,
    // the good one included.
    let wrong = run_to_end(
        env!("CARGO_BIN_EXE_jwt_client"),
        &[&server.url],
        &[("A2A_JWT_SECRET", "guessed")],
    );
    assert!(
        !wrong.success,
        "a token signed with another key was accepted:\n{}",
        wrong.stdout
    );
    assert!(!wrong.stdout.contains("good token:"), "{}", wrong.stdout);
}

#[test]
fn grpc_client_talks_grpc_without_a_card() {
    let server = Server::start(env!("CARGO_BIN_EXE_hello_world"), &[ANY_PORT], &[]);
    let endpoint = server.url.trim_start_matches("http://");
    let out = run(env!("CARGO_BIN_EXE_grpc_client"), &[endpoint, "gRPC"], &[]);
    assert_line(&out, "is TASK_STATE_COMPLETED: Hello, gRPC!");
    assert_line(&out, "streamed status: TASK_STATE_COMPLETED Hello, gRPC!");
}

#[test]
fn pick_binding_takes_the_preferred_binding_the_card_offers() {
    let server = Server::start(env!("CARGO_BIN_EXE_hello_world"), &[ANY_PORT], &[]);
    let endpoint = server.url.trim_start_matches("http://");
    let cases = [
        (vec![], format!("using: JSONRPC at {}/", server.url)),
        (vec!["GRPC"], format!("using: GRPC at {endpoint}")),
        (
            vec!["HTTP+JSON", "GRPC"],
            format!("using: HTTP+JSON at {}", server.url),
        ),
        // Not offered: the next preference, then the card's order.
        (
            vec!["NO-SUCH", "GRPC"],
            format!("using: GRPC at {endpoint}"),
        ),
    ];
    for (preferred, expected) in cases {
        let mut args = vec![server.url.as_str()];
        args.extend(&preferred);
        let out = run(env!("CARGO_BIN_EXE_pick_binding"), &args, &[]);
        assert_line(&out, "offered: GRPC at");
        assert!(out.lines().any(|l| l == expected), "{preferred:?}: {out}");
        assert_line(&out, "answer: Hello, binding!");
    }
}

#[test]
fn signed_client_verifies_the_signed_card_and_refuses_an_unsigned_one() {
    let signed = Server::start(env!("CARGO_BIN_EXE_signed_agent"), &[ANY_PORT], &[]);
    let jwks = format!("{}/.well-known/jwks.json", signed.url);
    let out = run(
        env!("CARGO_BIN_EXE_signed_client"),
        &[&signed.url, &jwks],
        &[],
    );
    assert_line(
        &out,
        r#"card of "signed-hello" verified with key key-1 (EdDSA)"#,
    );
    assert_line(&out, "answer: Hello, world! (from a signed agent)");

    // hello_world's card carries no signature: the client will not use it.
    let unsigned = Server::start(env!("CARGO_BIN_EXE_hello_world"), &[ANY_PORT], &[]);
    let refused = run_to_end(
        env!("CARGO_BIN_EXE_signed_client"),
        &[&unsigned.url, &jwks],
        &[],
    );
    assert!(
        !refused.success,
        "an unsigned card was accepted:\n{}",
        refused.stdout
    );
    assert_line(&refused.stdout, r#"card of "hello" not verified"#);
    assert!(!refused.stdout.contains("answer:"), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("is not trusted"),
        "{}",
        refused.stderr
    );
}

#[test]
fn durable_agent_resumes_after_kill_9_without_repeating_a_step() {
    // Steps take 100 ms: the kill lands long before the last one, even on
    // a slow machine.
    const STEPS: u64 = 20;
    let dir = TempDir::new("durable");
    let agent = env!("CARGO_BIN_EXE_durable_agent");
    let client = env!("CARGO_BIN_EXE_durable_client");
    let mut first = Server::start(agent, &[ANY_PORT, dir.arg()], &[]);
    let out = run(client, &[&first.url, "count", &STEPS.to_string()], &[]);
    let task = out
        .trim()
        .strip_prefix("task ")
        .expect("a task id")
        .to_owned();
    first.wait_for_line(|l| l == "step 2 done");
    first.kill();
    assert!(
        dir.path().join("a2a.db").exists(),
        "the store is in the data directory"
    );

    let mut second = Server::start(agent, &[ANY_PORT, dir.arg()], &[]);
    let resumed =
        second.wait_for_line(|l| l.starts_with(&format!("task {task} resumes after step ")));
    let done: u64 = resumed.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((2..STEPS).contains(&done), "{resumed}");
    // The second run does the steps after the checkpoint, and only those.
    let last = format!("step {STEPS} done");
    let steps = second.lines_until(|l| l == last);
    let expected: Vec<String> = (done + 1..=STEPS)
        .map(|s| format!("step {s} done"))
        .collect();
    assert_eq!(steps, expected);

    let out = run(client, &[&second.url, "wait", &task], &[]);
    assert_line(&out, &format!("TASK_STATE_COMPLETED: counted to {STEPS}"));
    // Every step's chunk exactly once, in order, across both runs.
    let count: Vec<String> = (1..=STEPS).map(|s| s.to_string()).collect();
    assert_line(&out, &format!("artifact count: {}", count.join(" ")));
}

#[test]
fn gateway_editor_gets_its_draft_from_the_writer_through_peers() {
    let server = Server::start(env!("CARGO_BIN_EXE_gateway_peers"), &[ANY_PORT], &[]);
    let editor = format!("{}/agents/editor", server.url);
    let out = run(env!("CARGO_BIN_EXE_hello_client"), &[&editor], &[]);
    // The writer saw the editor call as the user "agent:editor".
    assert_line(
        &out,
        "is TASK_STATE_COMPLETED: edited: A DRAFT ABOUT WORLD (FOR AGENT:EDITOR)",
    );
    // The writer on its own, and the root card is the editor's.
    let writer = format!("{}/agents/writer", server.url);
    let out = run(env!("CARGO_BIN_EXE_hello_client"), &[&writer], &[]);
    assert_line(
        &out,
        "is TASK_STATE_COMPLETED: a draft about world (for anonymous)",
    );
    let out = run(env!("CARGO_BIN_EXE_hello_client"), &[&server.url], &[]);
    assert_line(&out, "edited: A DRAFT ABOUT WORLD");
}

#[test]
fn process_agents_in_python_and_javascript_stream_through_the_gateway_file() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/process/gateway.toml");
    let server = Server::start(
        env!("CARGO_BIN_EXE_process_gateway"),
        &[ANY_PORT, file],
        &[],
    );
    for (agent, language) in [("python", "Python"), ("node", "JavaScript")] {
        let url = format!("{}/agents/{agent}", server.url);
        let out = run(
            env!("CARGO_BIN_EXE_streaming_client"),
            &[&url, "one two three"],
            &[],
        );
        assert_line(&out, "status: TASK_STATE_WORKING 3 words to go");
        assert_line(
            &out,
            r#"artifact words (append: true, last chunk: true): "three ""#,
        );
        assert_line(&out, r#"artifact words = "one two three ""#);
        let last = out.lines().rfind(|l| l.starts_with("status:")).unwrap();
        assert_eq!(
            last,
            format!("status: TASK_STATE_COMPLETED 3 words, from {language}")
        );
    }
}

#[test]
fn hub_lead_opens_a_thread_with_the_reviewer_who_answers_in_it() {
    let server = Server::start(env!("CARGO_BIN_EXE_hub_team"), &[ANY_PORT], &[]);
    let out = run(
        env!("CARGO_BIN_EXE_hub_client"),
        &[&server.url, "the login page needs a look"],
        &[],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "#general ann: the login page needs a look",
        "{out}"
    );
    // The hub's notice of the thread, and the lead's answer, in #general.
    assert_line(
        &out,
        r#"#general hub: lead opened the thread "lead → reviewer"#,
    );
    assert_line(
        &out,
        r#"#general lead: on it: delivered to reviewer in "lead → reviewer"#,
    );
    // The thread: the lead's request (mentioning the reviewer) and the answer.
    let thread = lines.iter().position(|l| l.starts_with("thread ")).unwrap();
    assert!(lines[thread].ends_with("(lead, reviewer):"), "{out}");
    assert_eq!(
        lines[thread + 1..],
        [
            "  lead: @reviewer please review: the login page needs a look",
            "  reviewer: reviewed what lead asked (@reviewer please review: the login page needs a look): looks good",
        ],
        "{out}"
    );
}

/// A stand-in OTLP/HTTP collector on a free port: the signal (`traces`,
/// `metrics`) and body of every export it gets.
#[cfg(feature = "otel")]
fn collector(
    runtime: &tokio::runtime::Runtime,
) -> (String, std::sync::mpsc::Receiver<(String, Vec<u8>)>) {
    use axum::body::Bytes;
    use axum::extract::Path;

    let (tx, rx) = std::sync::mpsc::channel();
    let export = move |Path(signal): Path<String>, body: Bytes| {
        let _ = tx.send((signal, body.to_vec()));
        // An empty body is an empty ExportServiceResponse: all accepted.
        async { axum::http::StatusCode::OK }
    };
    let app = axum::Router::new().route("/v1/{signal}", axum::routing::post(export));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    runtime.spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

#[cfg(feature = "otel")]
#[test]
fn otel_agent_exports_call_and_execution_spans_and_metrics() {
    use std::time::{Duration, Instant};

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (endpoint, exports) = collector(&runtime);
    // Export at once rather than every few seconds.
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
    ];
    let server = Server::start(env!("CARGO_BIN_EXE_otel_agent"), &[ANY_PORT], &env);
    let out = run(env!("CARGO_BIN_EXE_hello_client"), &[&server.url], &[]);
    assert_line(&out, "Hello, world!");

    // OTLP bodies are protobuf, whose strings are plain UTF-8 bytes: the
    // names show up as they are.
    // (hello_client's blocking send goes as a stream too: the card says
    // the agent streams, and a stream can be followed if it is cut.)
    let mut wanted = vec![
        ("traces", "SendStreamingMessage"),
        ("traces", "execution"),
        ("traces", "otel-example"),
        ("metrics", "a2a.server.requests"),
    ];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !wanted.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((signal, body)) = exports.recv_timeout(left) else {
            panic!("never exported: {wanted:?}");
        };
        wanted.retain(|(kind, name)| {
            *kind != signal || !body.windows(name.len()).any(|w| w == name.as_bytes())
        });
    }
}

/// Fails the test in CI (`CI=true`), where everything a test needs must be
/// there; elsewhere says what is skipped and why.
fn required_or_skip(what: &str, why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what} is required in CI: {why}");
    }
    eprintln!("NOTICE: skipping a test: {what} is missing ({why})");
}

/// A fresh PostgreSQL database on the tests' server (`A2A_TEST_POSTGRES_URL`,
/// default `postgres://postgres@127.0.0.1:5432/test`), dropped with this.
struct Database {
    admin: String,
    name: String,
    url: String,
}

impl Database {
    /// `None` when the server cannot be reached (outside CI).
    fn create() -> Option<Database> {
        let admin = std::env::var("A2A_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let name = format!("a2a_examples_{}", std::process::id());
        let create = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE); CREATE DATABASE {name}");
        if let Err(err) = on_admin(&admin, &create) {
            required_or_skip(&format!("PostgreSQL at {admin}"), &err.to_string());
            return None;
        }
        let (server, _) = admin.rsplit_once('/').unwrap();
        let url = format!("{server}/{name}");
        Some(Database { admin, name, url })
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if let Err(err) = on_admin(&self.admin, &drop) {
            eprintln!("cannot drop the test database {}: {err}", self.name);
        }
    }
}

/// Runs `statements` on the database at `url`.
fn on_admin(url: &str, statements: &str) -> Result<(), sqlx::Error> {
    use sqlx::Connection as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut admin = sqlx::PgConnection::connect(url).await?;
        for statement in statements.split("; ") {
            sqlx::query(statement).execute(&mut admin).await?;
        }
        admin.close().await
    })
}

#[test]
fn cluster_script_serves_every_task_from_either_node() {
    // `a2a` is another package's binary: built beside these by
    // `cargo test --workspace`, or by `cargo build -p agent2agent-cli`.
    let a2a = std::path::Path::new(env!("CARGO_BIN_EXE_hello_world")).with_file_name("a2a");
    if !a2a.exists() {
        return required_or_skip("the a2a binary", "cargo build -p agent2agent-cli");
    }
    let Some(database) = Database::create() else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/cluster/two_nodes.sh");
    // Port 0: each node takes a free port, and the script reads which.
    let env = [
        ("A2A", a2a.to_str().unwrap()),
        ("PORT1", "0"),
        ("PORT2", "0"),
    ];
    let out = run("bash", &[script, "--exit", &database.url], &env);
    let task_after = |prefix: &str| {
        let line = out.lines().find(|l| l.starts_with(prefix)).unwrap();
        line.trim_start_matches(prefix).to_owned()
    };
    let first = task_after("sent to node-1: task ");
    let second = task_after("sent to node-2: task ");
    let lines: Vec<&str> = out.lines().collect();
    let read = lines
        .iter()
        .position(|l| *l == "read from node-2:")
        .unwrap();
    assert!(
        lines[read + 1].starts_with(&format!("  task {first} [COMPLETED]")),
        "{out}"
    );
    assert_line(&out, "artifact echo: hello from node one");
    // After node-1's kill -9, node-2 has both tasks.
    let after = lines
        .iter()
        .position(|l| *l == "both tasks, from node-2:")
        .unwrap();
    assert!(
        lines[after + 1].starts_with(&format!("  task {first} [COMPLETED]")),
        "{out}"
    );
    assert!(
        lines[after + 2].starts_with(&format!("  task {second} [COMPLETED]")),
        "{out}"
    );
}
