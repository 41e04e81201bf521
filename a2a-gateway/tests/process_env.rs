//! What a process agent's child gets from the gateway: its environment holds
//! only the basics, what the gateway sets for it and what its configuration
//! lists, never the gateway's own secrets; and a child that goes quiet on a
//! task fails it after the task timeout.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod process_support;

use std::collections::HashMap;
use std::time::Duration;

use a2a_core::TaskState;
use process_support::*;

/// Set for the test binary run again by [`a_child_does_not_see_the_gateways_secrets`].
const INNER: &str = "A2A_PROCESS_ENV_TEST_INNER";

/// The gateway's secrets must stay the gateway's. The test process's own
/// environment is left alone: the test binary runs itself again with the
/// secrets set, as a gateway started with them would have them, and that
/// run hosts the agent and checks what its child sees.
#[test]
fn a_child_does_not_see_the_gateways_secrets() {
    if std::env::var_os(INNER).is_some() {
        return inner_child_sees_only_what_it_is_given();
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_child_does_not_see_the_gateways_secrets",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(INNER, "1")
        .env("A2A_AUTH_BEARER_TOKEN", "gateway-secret")
        .env("A2A_STORE", "postgres://a2a:hunter2@db/a2a")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .env("AWS_REGION", "eu-west-3")
        .env("LC_ALL", "C.UTF-8")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
}

fn inner_child_sees_only_what_it_is_given() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let gateway = Gateway::start(
            config()
                .env("A2A_AGENT_TOKEN", "agent-secret")
                .pass_env("AWS_REGION")
                .pass_env("NOT_SET_ANYWHERE"),
        );
        let task = gateway.task("env").await;
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
        let env: HashMap<String, String> = serde_json::from_str(&status_text(&task)).unwrap();
        for secret in [
            "A2A_AUTH_BEARER_TOKEN",
            "A2A_STORE",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(!env.contains_key(secret), "the child saw {secret}: {env:?}");
        }
        assert_eq!(env["A2A_AGENT_TOKEN"], "agent-secret");
        assert_eq!(env["LC_ALL"], "C.UTF-8");
        assert_eq!(env["TZ"], "UTC");
        assert_eq!(env["AWS_REGION"], "eu-west-3");
        assert!(env.contains_key("PATH"));
        assert!(!env.contains_key("NOT_SET_ANYWHERE"));
    });
}

/// A child that takes a task and never says a word about it again: the
/// task fails once the task timeout has passed, with a reason saying so,
/// and its place is free for the next one.
#[tokio::test]
async fn a_hung_child_fails_its_task_after_the_task_timeout() {
    let gateway = Gateway::start(
        config()
            .task_timeout(Some(Duration::from_millis(300)))
            .max_tasks(1),
    );
    for command in ["hang", "working-then-hang"] {
        // Bounded, so that a regression fails instead of hanging the suite.
        let task = tokio::time::timeout(Duration::from_secs(30), gateway.task(command))
            .await
            .expect("the task timeout did not end the task");
        assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
        assert_eq!(
            status_text(&task),
            "agent 'test' wrote nothing about the task for 300 ms (its task timeout); gave up on it"
        );
        gateway.idle().await;
    }
    // The one task slot the hung tasks held is free again (`idle` above),
    // and the child was not restarted for them.
    assert_eq!(gateway.agent.state().borrow().restarts, 0);
}

/// Lines about a task, `log` lines included, start its timeout over: a
/// task that runs longer than the timeout but keeps talking is not failed.
#[tokio::test]
async fn a_child_that_keeps_talking_is_not_timed_out() {
    // Beats every 20 ms for at least 4 s under a 3 s timeout: only a
    // gateway that stopped hearing them would fail it (or one whose machine
    // stalled the child for 3 s between two beats).
    let gateway = Gateway::start(config().task_timeout(Some(Duration::from_secs(3))));
    let task = gateway.task("heartbeat 200 20").await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(status_text(&task), "beat 200 times");
}
