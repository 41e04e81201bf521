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
    A2aError, Artifact, SendMessageConfiguration, TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
};
use a2a_core::{
    GetTaskRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, TaskState,
};
use a2a_server::push::{PushError, PushSender};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use a2a_store_sql::{PostgresCluster, PostgresStore};
use futures::StreamExt;
use support::durable::{
    LEASE_MS, Sut, cluster_node, committed, effects_per_turn, job_row, states, wait_for_effects,
};

async fn node(store: &str, effects: &Path, name: &str) -> Sut {
    cluster_node(store, effects, name, &[]).await
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

/// A task, read on the node `client` talks to.
async fn subscribe(client: &Client, task_id: &str) -> a2a_client::EventStream {
    client
        .subscribe_to_task(
            SubscribeToTaskRequest {
                id: task_id.to_owned(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
}

async fn get(client: &Client, task_id: &str) -> a2a_core::Task {
    client
        .get_task(
            GetTaskRequest {
                id: task_id.to_owned(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
}

/// The node named in a task's job row, and how many times it was started.
async fn job_node(url: &str, task_id: &str) -> (String, i64) {
    let (_, node, attempts) = job_row(url, task_id).await;
    (node, attempts)
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
    let mut events = subscribe(&c2, &task_id).await;
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
    // A follow-up on node 2 meets the execution on node 1 as it would on one
    // server: refused, and nothing recorded.
    let history = get(&c2, &task_id).await.history.len();
    let mut follow_up = support::request("more");
    follow_up.message.task_id.clone_from(&task_id);
    let refused = c2.send_message(follow_up, None).await;
    assert_eq!(
        support::protocol_kind(refused),
        a2a_core::ErrorKind::UnsupportedOperation
    );
    let after = get(&c2, &task_id).await;
    assert_eq!(after.history.len(), history);
    // A third node cancels it; the execution on node 1 stops, and node 2's
    // subscriber hears the end.
    let canceled = c3
        .cancel_task(support::cancel_request(&task_id), None)
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
    let task = get(&c1, &task_id).await;
    assert_eq!(task.status.state, TaskState::Canceled);
    let stopped_at = task.artifacts.len();
    let more = send(&c1, "turns 1 ms 1").await;
    support::wait_for_state(&c1, &more, TaskState::Completed).await;
    let task = get(&c2, &task_id).await;
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
    // Node 2 follows one of node 1's executions across the kill.
    let followed = given[0].clone();
    let mut following = subscribe(&c2, &followed).await;
    let follower = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = following.next().await {
            seen.push(event.unwrap());
        }
        seen
    });
    // Mid-flight: about one turn each committed.
    wait_for_effects(&effects, |_| committed(&effects) >= TASKS / 2).await;
    one.child.start_kill().unwrap();
    one.child.wait().await.unwrap();
    let killed = Instant::now();
    // The first turn done anywhere after the kill is a resumed execution's.
    let at_kill = support::durable::effects(&effects).len();
    wait_for_effects(&effects, |lines| lines.len() > at_kill).await;
    let first_resumed = killed.elapsed();

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
    // The follower saw the execution move: every turn's artifact once, in
    // order (a resync may restate the task), ending completed.
    let seen = tokio::time::timeout(Duration::from_secs(30), follower)
        .await
        .expect("the subscription ends with the task")
        .unwrap();
    let mut turn = 0;
    for event in &seen {
        match event {
            StreamResponse::Task(task) => turn = task.artifacts.len(),
            StreamResponse::ArtifactUpdate(update) => {
                turn += 1;
                assert_eq!(
                    update.artifact.artifact_id,
                    format!("turn-{turn}"),
                    "{seen:?}"
                );
            }
            StreamResponse::StatusUpdate(_) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(turn, usize::try_from(TURNS).unwrap(), "{seen:?}");
    match seen.last() {
        Some(StreamResponse::StatusUpdate(update)) => {
            assert_eq!(update.status.state, TaskState::Completed)
        }
        other => panic!("the follower ended with {other:?}"),
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
        "failover: {TASKS} tasks of {TURNS} turns of 1 s, {taken} taken over; first resumed turn done {:.2} s after the kill (a turn takes 1 s), all settled after {:.2} s (lease {} ms)",
        first_resumed.as_secs_f64(),
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
    let mut events = subscribe(&c1, &elsewhere).await;
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

/// A webhook stand-in that keeps what one node delivers.
#[derive(Clone, Default)]
struct Delivered(Arc<std::sync::Mutex<Vec<StreamResponse>>>);

#[async_trait::async_trait]
impl PushSender for Delivered {
    async fn send(
        &self,
        _config: &TaskPushNotificationConfig,
        event: &StreamResponse,
    ) -> Result<(), PushError> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

impl Delivered {
    fn taken(&self) -> Vec<StreamResponse> {
        self.0.lock().unwrap().clone()
    }
}

/// Works, waits at a gate (so a subscriber elsewhere can join), then writes
/// three artifacts and completes.
#[derive(Clone)]
struct GatedAgent(Arc<tokio::sync::Notify>);

#[async_trait::async_trait]
impl AgentExecutor for GatedAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let _ = ctx;
        events.working().await?;
        self.0.notified().await;
        for n in 1..=3 {
            let artifact = Artifact::text(format!("part {n}")).with_id(format!("part-{n}"));
            let event = TaskArtifactUpdateEvent::new(
                events.task_id().to_owned(),
                events.context_id(),
                artifact,
            );
            events.send(event).await?;
        }
        events.complete_with_text("done").await
    }
}

/// A node in this process: its address and its webhook stand-in.
async fn in_process_node(
    url: &str,
    name: &str,
    gate: &Arc<tokio::sync::Notify>,
) -> (String, Delivered) {
    let store = PostgresStore::connect_cluster(url, None).await.unwrap();
    let bus = PostgresCluster::new(&store).await.unwrap();
    let delivered = Delivered::default();
    let sender = delivered.clone();
    let name = name.to_owned();
    let sut = e2e::start_server(
        GatedAgent(gate.clone()),
        support::card,
        move |builder| {
            let mut jobs = a2a_server::JobConfig::default();
            jobs.node = name;
            let builder = builder
                .push_sender(sender)
                .job_config(jobs)
                .cluster(bus, a2a_server::cluster::ClusterConfig::default());
            a2a_store_sql::DurableStore::Postgres(store).install(builder)
        },
        a2a_server::http::HttpConfig::default(),
    )
    .await
    .unwrap();
    (format!("http://{}", sut.addr), delivered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_is_pushed_once_across_the_cluster() {
    let Some(url) = support::postgres_database("push_once").await else {
        return;
    };
    let gate = Arc::new(tokio::sync::Notify::new());
    let (a_url, at_a) = in_process_node(&url, "node-a", &gate).await;
    let (b_url, at_b) = in_process_node(&url, "node-b", &gate).await;
    let a = Client::connect(&a_url).await.unwrap();
    let b = Client::connect(&b_url).await.unwrap();

    let mut request = support::request("go");
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        task_push_notification_config: Some(TaskPushNotificationConfig::new(
            "",
            "https://hooks.example/a2a",
        )),
        ..Default::default()
    });
    let task_id = support::send_task(&a, request).await.id;
    // Node B follows the execution running on node A.
    let mut events = subscribe(&b, &task_id).await;
    assert!(matches!(
        events.next().await,
        Some(Ok(StreamResponse::Task(_)))
    ));
    gate.notify_one();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event.unwrap());
    }
    let parts = seen
        .iter()
        .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
        .count();
    assert_eq!(parts, 3, "node B saw every artifact: {seen:?}");
    support::wait_for_state(&a, &task_id, TaskState::Completed).await;

    // Every event went out once, from the node that wrote it; node B, which
    // only heard of them, pushed nothing.
    let pushed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let pushed = at_a.taken();
            if pushed.iter().any(|e| matches!(e, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Completed)) {
                return pushed;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("node A pushes the completion");
    let artifacts: Vec<_> = pushed
        .iter()
        .filter_map(|e| match e {
            StreamResponse::ArtifactUpdate(u) => Some(u.artifact.artifact_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(artifacts, ["part-1", "part-2", "part-3"]);
    assert!(at_b.taken().is_empty(), "node B pushed {:?}", at_b.taken());
    support::drop_postgres_database(&url).await;
}
