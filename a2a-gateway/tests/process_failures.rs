//! A process agent whose child misbehaves: crashes, restarts and their
//! backoff, output that is not the protocol, a child that cannot start or
//! will not stop. None of it may panic or hang the gateway.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod process_support;

use std::time::Duration;

use a2a_core::TaskState;
use a2a_gateway::process::{InFlightPolicy, Phase, ProcessAgent, ProcessAgentConfig, ProcessError};
use process_support::*;

#[tokio::test]
async fn a_crash_fails_the_task_with_the_reason_and_the_next_task_works() {
    let gateway = Gateway::start(config().restart_backoff(Duration::ZERO, Duration::ZERO));
    let before = gateway.task("pid").await;
    let crashed = gateway.task("crash 1").await;
    assert_eq!(crashed.status.state, TaskState::Failed);
    assert_eq!(
        status_text(&crashed),
        "agent 'test' exited (status 1); restarted"
    );
    // What the child wrote before dying was kept.
    assert!(crashed.history.iter().any(|m| m.text() == "about to crash"));

    let after = gateway.task("pid").await;
    assert_eq!(after.status.state, TaskState::Completed);
    assert_ne!(status_text(&after), status_text(&before));
    let state = gateway.agent.state().borrow().clone();
    assert_eq!(state.restarts, 1);
    assert_eq!(state.last_exit.as_deref(), Some("exited (status 1)"));
}

#[tokio::test]
async fn every_task_of_a_crashed_child_fails_but_only_those() {
    let gateway = Gateway::start(config().restart_backoff(Duration::ZERO, Duration::ZERO));
    let waiting = gateway.start_task("wait").await;
    gateway.wait_for(&waiting.id, TaskState::Working).await;
    let crashed = gateway.task("crash 2").await;
    assert_eq!(
        status_text(&crashed),
        "agent 'test' exited (status 2); restarted"
    );
    let waiting = gateway.wait_for(&waiting.id, TaskState::Failed).await;
    assert_eq!(
        status_text(&waiting),
        "agent 'test' exited (status 2); restarted"
    );
    gateway.idle().await;
}

#[tokio::test]
async fn resend_gives_in_flight_tasks_to_the_restarted_child() {
    let policy = InFlightPolicy::Resend { max_resends: 1 };
    let gateway = Gateway::start(
        config()
            .restart_backoff(Duration::ZERO, Duration::ZERO)
            .in_flight(policy),
    );
    let task = gateway.task("crash-once").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "resumed after a crash");

    // A message that kills every child is failed once its resends are spent.
    let task = gateway.task("crash 5").await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(
        status_text(&task),
        "agent 'test' exited (status 5); restarted (gave up after 1 resends)"
    );
    eventually(|| gateway.agent.state().borrow().restarts == 3).await;
}

#[tokio::test]
async fn a_resent_task_resumes_from_its_last_stored_checkpoint() {
    let policy = InFlightPolicy::Resend { max_resends: 1 };
    let gateway = Gateway::start(
        config()
            .restart_backoff(Duration::ZERO, Duration::ZERO)
            .in_flight(policy),
    );
    // Turn 1 is checkpointed and acknowledged, then the child dies.
    let task = gateway.task("turns").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        status_text(&task),
        r#"resumed after turn 1 with {"done": ["t1"]}"#
    );
    assert_eq!(task.artifacts[0].artifact_id, "t1");
}

/// A restart that cannot start the program is tried again with backoff, and
/// the tasks waiting to be resent wait for the child that does start.
#[tokio::test]
async fn a_failed_restart_is_retried_and_keeps_the_tasks_to_resend() {
    // The interpreter itself: `python3` on PATH may be a wrapper script
    // (pyenv's shims) that goes by the name it is called with.
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let python = std::path::PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    // The program is a symlink the test removes and puts back (a link, not
    // a copy: an executable written while other tests fork can be "busy").
    let dir = std::env::temp_dir().join(format!("a2a-process-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("agent-python");
    let _ = std::fs::remove_file(&program);
    std::os::unix::fs::symlink(&python, &program).unwrap();
    let policy = InFlightPolicy::Resend { max_resends: 1 };
    let config = ProcessAgentConfig::new(&program)
        .arg("-u")
        .arg(script("test_agent.py"))
        .restart_backoff(Duration::from_millis(10), Duration::from_millis(40))
        .in_flight(policy);
    let gateway = Gateway::start(config);
    std::fs::remove_file(&program).unwrap();

    let mut state = gateway.agent.state();
    let put_back = async {
        // Two attempts in the restarting phase: the first restart failed.
        let mut attempts = 0;
        while attempts < 2 {
            state.changed().await.unwrap();
            if state.borrow_and_update().phase == Phase::Restarting {
                attempts += 1;
            }
        }
        std::os::unix::fs::symlink(&python, &program).unwrap();
    };
    // The task exists only once a child answers, so the send waits for it.
    let both = async { tokio::join!(gateway.task("crash-once"), put_back) };
    let (task, ()) = tokio::time::timeout(Duration::from_secs(20), both)
        .await
        .expect("the resent task is answered");
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "resumed after a crash");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Restart delays double from the initial one up to the cap. The clock is
/// paused: each wait passes as soon as nothing else can run, and the
/// supervisor's sleeps are measured exactly.
#[tokio::test(start_paused = true)]
async fn restarts_back_off_exponentially_up_to_the_cap() {
    let config = config()
        .env("CRASH_AT_START", "1")
        .restart_backoff(Duration::from_millis(100), Duration::from_millis(800));
    let agent = ProcessAgent::spawn("crashy", config).unwrap();
    let mut state = agent.state();
    let mut restarting_since = None;
    let mut delays = Vec::new();
    while delays.len() < 6 {
        state.changed().await.unwrap();
        let now = tokio::time::Instant::now();
        let current = state.borrow_and_update().clone();
        match current.phase {
            Phase::Restarting => {
                // Not asserted in full: on a paused clock, the grace a
                // child gets between closing stdout and exiting passes at
                // once, so its exit may read as a kill.
                assert!(current.last_exit.is_some());
                restarting_since = Some(now);
            }
            Phase::Running => {
                if let Some(since) = restarting_since.take() {
                    delays.push(now - since);
                }
            }
            Phase::Stopped => panic!("stopped"),
            _ => {}
        }
    }
    let ms = Duration::from_millis;
    assert_eq!(
        delays,
        [ms(100), ms(200), ms(400), ms(800), ms(800), ms(800)]
    );
    agent.shutdown(Duration::from_secs(1)).await;
    assert_eq!(agent.state().borrow().phase, Phase::Stopped);
}

#[tokio::test]
async fn output_that_is_not_the_protocol_is_ignored() {
    let gateway = Gateway::start(config().max_line_bytes(100_000));
    // Not JSON, not UTF-8, unknown types, no type, an unknown task, a line
    // without its task id, one over the limit, a blank line: each dropped.
    let task = gateway.task("garbage").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "survived");
    assert_eq!(status_text(&gateway.task("echo ok").await), "ok");
    assert_eq!(gateway.agent.state().borrow().restarts, 0);
}

#[tokio::test]
async fn an_unusable_line_about_a_task_fails_that_task() {
    let gateway = Gateway::start(config());
    let task = gateway.task("invalid").await;
    assert_eq!(task.status.state, TaskState::Failed);
    let text = status_text(&task);
    assert!(
        text.starts_with("agent 'test' wrote an invalid status line: unknown state \"sleeping\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_flood_of_garbage_neither_stalls_nor_stops_other_tasks() {
    let gateway = Gateway::start(config());
    let (flooded, echoed) =
        tokio::join!(gateway.task("flood 50000"), gateway.task("echo meanwhile"));
    assert_eq!(status_text(&flooded), "flooded");
    assert_eq!(status_text(&echoed), "meanwhile");
}

#[tokio::test]
async fn a_child_that_closes_stdout_is_killed_and_restarted() {
    let gateway = Gateway::start(config().restart_backoff(Duration::ZERO, Duration::ZERO));
    let task = gateway.task("close-stdout").await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(
        status_text(&task),
        "agent 'test' closed its stdout (killed); restarted"
    );
    assert_eq!(status_text(&gateway.task("echo back").await), "back");
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_an_error_at_spawn() {
    let config = ProcessAgentConfig::new("/no/such/agent-program");
    let error = ProcessAgent::spawn("ghost", config).unwrap_err();
    let ProcessError::Spawn { agent, source, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(agent, "ghost");
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let text = error.to_string();
    assert!(
        text.starts_with("agent 'ghost': cannot start \"/no/such/agent-program\""),
        "{text}"
    );
}

#[test]
fn spawn_outside_a_runtime_is_an_error() {
    let error = ProcessAgent::spawn("early", config()).unwrap_err();
    assert!(matches!(error, ProcessError::NoRuntime { .. }), "{error:?}");
}

#[tokio::test]
async fn shutdown_closes_stdin_and_the_child_exits() {
    let gateway = Gateway::start(config());
    assert_eq!(status_text(&gateway.task("echo up").await), "up");
    gateway.agent.shutdown(Duration::from_secs(10)).await;
    let state = gateway.agent.state().borrow().clone();
    assert_eq!(state.phase, Phase::Stopped);
    assert_eq!(state.last_exit.as_deref(), Some("exited (status 0)"));
    // New work is refused, not queued for a child that will not come.
    let task = gateway.task("echo anyone?").await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(status_text(&task), "agent 'test' is shut down");
}

#[tokio::test]
async fn shutdown_terminates_a_child_that_ignores_stdin_closing() {
    let gateway = Gateway::start(config().env("IGNORE_EOF", "1"));
    let waiting = gateway.start_task("wait").await;
    gateway.wait_for(&waiting.id, TaskState::Working).await;
    gateway.agent.shutdown(Duration::from_millis(400)).await;
    let state = gateway.agent.state().borrow().clone();
    assert_eq!(state.last_exit.as_deref(), Some("was killed by signal 15"));
    let waiting = gateway.wait_for(&waiting.id, TaskState::Failed).await;
    assert_eq!(status_text(&waiting), "agent 'test' shut down");
}

#[tokio::test]
async fn shutdown_also_ends_what_the_child_started() {
    let gateway = Gateway::start(config().env("IGNORE_EOF", "1"));
    let task = gateway.task("grandchild").await;
    let pid = status_text(&task);
    gateway.agent.shutdown(Duration::from_millis(400)).await;
    // Gone, or dead and waiting to be reaped by whoever inherited it.
    let stat = format!("/proc/{pid}/stat");
    eventually(|| match std::fs::read_to_string(&stat) {
        Ok(stat) => stat.split_whitespace().nth(2) == Some("Z"),
        Err(_) => true,
    })
    .await;
}
