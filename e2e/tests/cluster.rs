//! Cluster mode over real processes: three `durable-sut` nodes on one
//! PostgreSQL database. Any node answers for any task, live events cross
//! nodes, a cancel reaches the node that runs the task, and when a node is
//! killed with SIGKILL the others take its executions over after the lease
//! timeout and finish every one, resuming from checkpoints.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_client::Client;
use a2a_core::{
    CancelTaskRequest, GetTaskRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest,
    TaskState,
};
use futures::StreamExt;
use support::durable::{Sut, committed, effects_per_turn, start, states, wait_for_effects};

/// The lease timeout the nodes run with.
const LEASE_MS: u64 = 2000;

async fn node(store: &str, effects: &Path, name: &str) -> Sut {
    let lease = LEASE_MS.to_string();
    start(
        store,
        effects,
        &["--node-id", name, "--lease-timeout-ms", &lease],
    )
    .await
}

async fn send(client: &Client, text: &str) -> String {
    match client
        .send_message(support::immediate(text), None)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task.id,
        SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
    }
}

/// The node name in a task's job row.
async fn job_node(url: &str, task_id: &str) -> (String, i64) {
    use sqlx::Connection as _;
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query_as("SELECT node, attempts FROM jobs WHERE task_id = $1")
        .bind(task_id)
        .fetch_one(&mut db)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_on_one_subscribe_on_two_cancel_on_three() {
    let Some(url) = support::postgres_database("cluster").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects = dir.path().join("effects.log");
    let one = node(&url, &effects, "node-1").await;
    let two = node(&url, &effects, "node-2").await;
    let three = node(&url, &effects, "node-3").await;
    let (c1, c2, c3) = (
        Client::connect(&one.url).await.unwrap(),
        Client::connect(&two.url).await.unwrap(),
        Client::connect(&three.url).await.unwrap(),
    );

    let task_id = send(&c1, "turns 1000 ms 50").await;
    assert_eq!(job_node(&url, &task_id).await.0, "node-1");
    // Node 2 sees node 1's execution live: the task, then every turn's
    // artifact in order, none missing, none twice.
    let mut events = c2
        .subscribe_to_task(
            SubscribeToTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let first = events.next().await.unwrap().unwrap();
    let StreamResponse::Task(snapshot) = first else {
        panic!("a subscription starts with the task, got {first:?}")
    };
    let mut turn = snapshot.artifacts.len();
    while turn < snapshot.artifacts.len() + 8 {
        match events.next().await.unwrap().unwrap() {
            StreamResponse::ArtifactUpdate(update) => {
                turn += 1;
                assert_eq!(update.artifact.artifact_id, format!("turn-{turn}"));
            }
            StreamResponse::Task(task) => {
                // A resync (allowed) carries every artifact so far.
                turn = task.artifacts.len();
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    // A third node cancels it; the execution on node 1 stops, and node 2's
    // subscriber hears the end.
    let canceled = c3
        .cancel_task(
            CancelTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let ending = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match events.next().await {
                Some(Ok(StreamResponse::StatusUpdate(update))) => return update.status.state,
                Some(Ok(StreamResponse::Task(task))) if task.status.state.is_terminal() => {
                    return task.status.state;
                }
                Some(Ok(_)) => {}
                other => panic!("the subscription ended without the cancel: {other:?}"),
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(ending, TaskState::Canceled);
    // Node 1's agent was told (it stops writing turns), and its job ended.
    let task = c1
        .get_task(
            GetTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(task.status.state, TaskState::Canceled);
    let stopped_at = task.artifacts.len();
    let more = send(&c1, "turns 1 ms 1").await;
    support::wait_for_state(&c1, &more, TaskState::Completed).await;
    let task = c2
        .get_task(
            GetTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(task.artifacts.len(), stopped_at, "no turn after the cancel");
    drop((one, two, three));
    support::drop_postgres_database(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_s_executions_finish_on_the_others_and_it_rejoins() {
    const TASKS: usize = 200;
    const TURNS: u64 = 4;
    let Some(url) = support::postgres_database("failover").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects = dir.path().join("effects.log");
    let mut one = node(&url, &effects, "node-1").await;
    let two = node(&url, &effects, "node-2").await;
    let three = node(&url, &effects, "node-3").await;
    let c1 = Arc::new(Client::connect(&one.url).await.unwrap());
    let c2 = Client::connect(&two.url).await.unwrap();

    let text = format!("turns {TURNS} ms 1000");
    let given: Vec<String> = futures::stream::iter(0..TASKS)
        .map(|_| {
            let (client, text) = (c1.clone(), text.clone());
            async move { send(&client, &text).await }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert_eq!(given.iter().collect::<HashSet<_>>().len(), TASKS);
    // Mid-flight: about one turn each committed.
    wait_for_effects(&effects, |_| committed(&effects) >= TASKS / 2).await;
    one.child.start_kill().unwrap();
    one.child.wait().await.unwrap();
    let killed = Instant::now();

    let settled = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            let states = states(&c2).await;
            if given
                .iter()
                .all(|id| states.get(id).is_some_and(|(s, _)| s.is_terminal()))
            {
                return states;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("every task settles on the surviving nodes");
    let failover = killed.elapsed();
    // Taken over at the lease timeout, not at the stale limit of a single
    // server (an hour): the bound is the lease plus all the work, with room
    // for a loaded machine.
    let bound = Duration::from_millis(LEASE_MS) + Duration::from_secs(TURNS + 20);
    assert!(failover < bound, "failover took {failover:?}");
    for id in &given {
        let (state, text) = &settled[id];
        assert_eq!(*state, TaskState::Completed, "task {id}: {text}");
        assert_eq!(text, &format!("{TURNS} turns done"));
    }
    // None lost, none run twice past a checkpoint; every one taken over.
    let per_turn = effects_per_turn(&effects);
    for id in &given {
        for turn in 1..=TURNS {
            assert!(
                per_turn.contains_key(&(id.clone(), turn)),
                "{id} never did turn {turn}"
            );
        }
    }
    let mut taken = 0;
    for id in &given {
        let (node, attempts) = job_node(&url, id).await;
        if attempts > 1 {
            assert_ne!(node, "node-1", "a dead node kept task {id}");
            taken += 1;
        }
    }
    assert!(taken > 0, "no execution was taken over");
    eprintln!(
        "failover: {TASKS} tasks of {TURNS} turns of 1 s, {taken} taken over; all settled {:.2} s after the kill (lease {} ms)",
        failover.as_secs_f64(),
        LEASE_MS
    );

    // The killed node rejoins under its name: it takes new work, and its
    // subscribers see work running on another node.
    let one = node(&url, &effects, "node-1").await;
    let c1 = Client::connect(&one.url).await.unwrap();
    let fresh = send(&c1, "turns 2 ms 10").await;
    support::wait_for_state(&c1, &fresh, TaskState::Completed).await;
    let elsewhere = send(&c2, "turns 3 ms 300").await;
    let mut events = c1
        .subscribe_to_task(
            SubscribeToTaskRequest {
                id: elsewhere.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let mut last = None;
    while let Some(event) = events.next().await {
        last = Some(event.unwrap());
    }
    match last {
        Some(StreamResponse::StatusUpdate(update)) => {
            assert_eq!(update.status.state, TaskState::Completed)
        }
        Some(StreamResponse::Task(task)) => assert_eq!(task.status.state, TaskState::Completed),
        other => panic!("the subscription on the rejoined node ended with {other:?}"),
    }
    drop((one, two, three));
    support::drop_postgres_database(&url).await;
}
