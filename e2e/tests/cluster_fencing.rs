//! Fenced writes over real processes: a cluster node stopped (SIGSTOP) past
//! its lease while it runs a task, and continued (SIGCONT) after another node
//! took the task over, writes nothing more: its writes carry its lease, and
//! the store refuses them in the same statement.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use a2a_client::Client;
use a2a_core::{SendMessageResponse, StreamResponse, TaskState};
use support::durable::{Sut, cluster_node, effects, job_row, stored_events, wait_for_effects};

async fn node(store: &str, effects: &Path, name: &str) -> Sut {
    cluster_node(store, effects, name, &[]).await
}

/// Sends `signal` (`STOP`, `CONT`) to a node's process.
fn signal(sut: &Sut, signal: &str) {
    let pid = sut.child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Whether the effects file has a `kind task turn` line.
fn noted(lines: &[(String, String, u64)], kind: &str, task: &str, turn: u64) -> bool {
    lines
        .iter()
        .any(|(k, t, n)| k == kind && t == task && *n == turn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stopped_past_its_lease_writes_nothing_once_continued() {
    let Some(url) = support::postgres_database("fencing").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects_file = dir.path().join("effects.log");
    let one = node(&url, &effects_file, "node-1").await;
    let two = node(&url, &effects_file, "node-2").await;
    let c1 = Client::connect(&one.url).await.unwrap();
    let c2 = Client::connect(&two.url).await.unwrap();

    // Three turns of 1.5 s on node 1.
    let task_id = match c1
        .send_message(support::immediate("turns 3 ms 1500"), None)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task.id,
        SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
    };
    // Turn 1 is committed on node 1; it is in turn 2's wait when it stops.
    wait_for_effects(&effects_file, |lines| {
        noted(lines, "committed", &task_id, 1)
    })
    .await;
    signal(&one, "STOP");
    // Its lease expires, node 2 claims the job (attempt 2) and commits
    // turn 2 (node 1 cannot: it stands still).
    wait_for_effects(&effects_file, |lines| {
        noted(lines, "committed", &task_id, 2)
    })
    .await;
    let (state, holder, attempts) = job_row(&url, &task_id).await;
    assert_eq!(
        (state.as_str(), holder.as_str(), attempts),
        ("RUNNING", "node-2", 2)
    );

    // Node 1 goes on where it stood: its turn 2 wait is over, it does the
    // turn's effect again, and its checkpointed write is refused.
    signal(&one, "CONT");
    wait_for_effects(&effects_file, |lines| noted(lines, "refused", &task_id, 2)).await;
    let done = support::wait_for_state(&c2, &task_id, TaskState::Completed).await;
    assert_eq!(support::status_text(&done), "3 turns done");

    // The store holds node 2's writes only: versions one by one, each turn's
    // artifact once, one completion.
    let events = stored_events(&url, &task_id).await;
    let versions: Vec<i64> = events.iter().map(|(v, _)| *v).collect();
    let expected: Vec<i64> = (1..=i64::try_from(events.len()).unwrap()).collect();
    assert_eq!(versions, expected);
    let artifacts: Vec<String> = events
        .iter()
        .filter_map(|(_, e)| match e {
            StreamResponse::ArtifactUpdate(u) => Some(u.artifact.artifact_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(artifacts, ["turn-1", "turn-2", "turn-3"], "{events:?}");
    let completions = events
        .iter()
        .filter(|(_, e)| {
            matches!(e, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Completed)
        })
        .count();
    assert_eq!(completions, 1);
    let (state, holder, attempts) = job_row(&url, &task_id).await;
    assert_eq!(
        (state.as_str(), holder.as_str(), attempts),
        ("COMPLETED", "node-2", 2)
    );
    // Each turn committed once; node 1 committed nothing after it stopped.
    let lines = effects(&effects_file);
    for turn in 1..=3 {
        let commits = lines
            .iter()
            .filter(|(k, t, n)| k == "committed" && *t == task_id && *n == turn)
            .count();
        assert_eq!(
            commits, 1,
            "turn {turn} committed {commits} times: {lines:?}"
        );
    }
    // Node 1 still serves, and reads the task as node 2 left it.
    let seen = support::wait_for_state(&c1, &task_id, TaskState::Completed).await;
    assert_eq!(seen.artifacts.len(), 3);
    drop((one, two));
    support::drop_postgres_database(&url).await;
}
