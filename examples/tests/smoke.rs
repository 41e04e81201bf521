//! Every example program started and used as its doc comment says, with
//! its output checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Server, assert_line, run, run_to_end};

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
    let (success, wrong) = run_to_end(
        env!("CARGO_BIN_EXE_auth_client"),
        &[&server.url],
        &[("A2A_TOKEN", "guessed")],
    );
    assert!(!success, "a wrong token was accepted:\n{wrong}");
    assert!(!wrong.contains("with the token:"), "{wrong}");
}
