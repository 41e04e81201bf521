//! Streams survive a node: a client's task stream that is cut before the
//! task settles is resumed (`SubscribeToTask` on the card's interfaces in
//! turn), and its caller sees every status and artifact once, in order.
//!
//! - Across a SIGKILL: three `durable-sut` nodes on one PostgreSQL
//!   database, a card listing the three, a streaming send held by node 1;
//!   node 1 is killed mid-task, the stream goes on from node 2 while node 2
//!   or 3 takes the execution over after the lease timeout.
//! - Across a cut connection on every binding (JSON-RPC, HTTP+JSON, gRPC):
//!   a relay in front of one server drops every connection mid-task and
//!   refuses new ones for a while; events made meanwhile come as the
//!   client's catch-up, then the live ones; or, when the task finished
//!   meanwhile, the catch-up read with `GetTask`.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_client::{Client, ClientBuilder, EventStream, ResumePolicy};
use a2a_core::{
    A2aError, AgentCard, Artifact, GetTaskRequest, Part, StreamResponse, TaskArtifactUpdateEvent,
    TaskState, binding,
};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use futures::StreamExt as _;
use support::durable::{LEASE_MS, Sut, cluster_node, job_row};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

async fn node(store: &str, effects: &Path, name: &str) -> Sut {
    cluster_node(store, effects, name, &[]).await
}

/// The node named in a task's job row, and how many times it was started.
async fn job_node(url: &str, task_id: &str) -> (String, i64) {
    let (_, node, attempts) = job_row(url, task_id).await;
    (node, attempts)
}

/// The next event, which must come within a minute.
async fn next(stream: &mut EventStream) -> Option<StreamResponse> {
    tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .expect("the stream says something within a minute")
        .map(|event| event.expect("no error on the stream"))
}

/// Checks that `events` (a whole stream) tell the task once, in order: the
/// task first, each status once (no status update repeated), the artifacts
/// `artifacts` each made once (then appended to), ending with a terminal
/// status. Returns the states of the status updates.
fn told_once(events: &[StreamResponse], artifacts: &[&str]) -> Vec<TaskState> {
    assert!(
        matches!(events.first(), Some(StreamResponse::Task(_))),
        "{events:#?}"
    );
    let mut made = Vec::new();
    let mut statuses = Vec::new();
    for event in &events[1..] {
        match event {
            StreamResponse::StatusUpdate(update) => {
                let status = (update.status.state, update.status.timestamp);
                assert!(
                    !statuses.contains(&status),
                    "status told twice: {events:#?}"
                );
                statuses.push(status);
            }
            StreamResponse::ArtifactUpdate(update) if !update.append => {
                made.push(update.artifact.artifact_id.clone());
            }
            StreamResponse::ArtifactUpdate(_) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(made, artifacts, "{events:#?}");
    match events.last() {
        Some(StreamResponse::StatusUpdate(update)) => {
            assert!(update.status.state.is_terminal(), "{events:#?}");
        }
        other => panic!("the stream ended with {other:?}"),
    }
    statuses.into_iter().map(|(state, _)| state).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_held_by_a_killed_node_goes_on_on_another() {
    const TURNS: u64 = 6;
    let Some(url) = support::postgres_database("stream_resume").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects = dir.path().join("effects.log");
    let mut one = node(&url, &effects, "node-1").await;
    let two = node(&url, &effects, "node-2").await;
    let three = node(&url, &effects, "node-3").await;
    // One card for the cluster, node 1 first: the client talks to node 1
    // and, with the default policy, resumes on the others.
    let card = AgentCard::new("durable", "three nodes")
        .with_interface(format!("{}/", one.url), binding::JSONRPC)
        .with_interface(format!("{}/", two.url), binding::JSONRPC)
        .with_interface(format!("{}/", three.url), binding::JSONRPC)
        .with_streaming(true);
    let client = ClientBuilder::new().build(card).unwrap();
    assert_eq!(client.interface().url, format!("{}/", one.url));

    let text = format!("turns {TURNS} ms 400");
    let mut stream = client
        .send_streaming_message(support::request(&text), None)
        .await
        .unwrap();
    let mut events = Vec::new();
    // Mid-task: once the first turn is told, node 1 dies.
    while !events
        .iter()
        .any(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
    {
        events.push(next(&mut stream).await.expect("the task goes on"));
    }
    let StreamResponse::Task(task) = &events[0] else {
        panic!("a task stream starts with the task: {events:?}")
    };
    let task_id = task.id.clone();
    assert_eq!(job_node(&url, &task_id).await.0, "node-1");
    one.child.start_kill().unwrap();
    one.child.wait().await.unwrap();
    let killed = Instant::now();
    let told_before = events.len();
    let mut first_after = None;
    while let Some(event) = next(&mut stream).await {
        first_after.get_or_insert_with(|| killed.elapsed());
        events.push(event);
    }
    let ended = killed.elapsed();

    let turns: Vec<String> = (1..=TURNS).map(|n| format!("turn-{n}")).collect();
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let states = told_once(&events, &turns);
    assert_eq!(states, [TaskState::Working, TaskState::Completed]);
    let Some(StreamResponse::StatusUpdate(last)) = events.last() else {
        unreachable!("told_once checked it")
    };
    let said = last.status.message.as_ref().map(|m| m.text());
    assert_eq!(said.as_deref(), Some(&*format!("{TURNS} turns done")));
    assert!(events.len() > told_before, "nothing came after the kill");
    // The execution was taken over elsewhere; the stream followed it there.
    let (node, attempts) = job_node(&url, &task_id).await;
    assert_ne!(node, "node-1");
    assert!(attempts > 1, "the job was started {attempts} times");
    eprintln!(
        "stream across a SIGKILL: first event {:.2} s after the kill, stream ended {:.2} s after it (lease {LEASE_MS} ms, turns of 0.4 s)",
        first_after.unwrap_or_default().as_secs_f64(),
        ended.as_secs_f64()
    );
    drop((two, three));
    support::drop_postgres_database(&url).await;
}

/// A relay on 127.0.0.1 in front of a server that can drop every
/// connection it carries and refuse new ones.
struct Relay {
    addr: SocketAddr,
    down: Arc<AtomicBool>,
    carried: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    /// Connections carried so far.
    relayed: Arc<AtomicUsize>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let carried = Arc::new(Mutex::new(Vec::new()));
        let relayed = Arc::new(AtomicUsize::new(0));
        let (is_down, carrying, count) = (down.clone(), carried.clone(), relayed.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if is_down.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                count.fetch_add(1, Ordering::SeqCst);
                let relayed = tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
                carrying.lock().unwrap().push(relayed.abort_handle());
            }
        });
        Relay {
            addr,
            down,
            carried,
            relayed,
        }
    }

    /// Drops every connection and refuses new ones until [`Relay::up`].
    fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for relayed in self.carried.lock().unwrap().drain(..) {
            relayed.abort();
        }
    }

    fn up(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    fn relayed(&self) -> usize {
        self.relayed.load(Ordering::SeqCst)
    }
}

/// Works, makes artifact `a-1`, waits at the first gate, makes `a-2`, waits
/// at the second, appends to `a-2` and completes.
#[derive(Clone, Default)]
struct GatedAgent {
    first: Arc<Notify>,
    second: Arc<Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for GatedAgent {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let task = events.task_id().to_owned();
        let artifact = |id: &str, text: &str| Artifact::text(text).with_id(id);
        events.working().await?;
        let one = TaskArtifactUpdateEvent::new(&task, events.context_id(), artifact("a-1", "one"));
        events.send(one).await?;
        self.first.notified().await;
        let two = TaskArtifactUpdateEvent::new(&task, events.context_id(), artifact("a-2", "two"));
        events.send(two).await?;
        self.second.notified().await;
        let more = TaskArtifactUpdateEvent {
            append: true,
            last_chunk: true,
            ..TaskArtifactUpdateEvent::new(&task, events.context_id(), artifact("a-2", "more"))
        };
        events.send(more).await?;
        events.complete_with_text("done").await
    }
}

/// Waits until the task, read past the relay, satisfies `done`.
async fn wait_for_task(direct: &Client, id: &str, done: impl Fn(&a2a_core::Task) -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let request = GetTaskRequest {
                id: id.to_owned(),
                ..Default::default()
            };
            if done(&direct.get_task(request, None).await.unwrap()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the agent moves on");
}

/// The texts of an artifact event's parts.
fn texts(event: &StreamResponse) -> Vec<String> {
    match event {
        StreamResponse::ArtifactUpdate(update) => update
            .artifact
            .parts
            .iter()
            .filter_map(Part::as_text)
            .map(str::to_owned)
            .collect(),
        other => panic!("expected an artifact, got {other:?}"),
    }
}

/// One cut on `binding`: `finished_meanwhile` lets the task complete while
/// the relay is down (so the resumption finds it terminal and reads it).
async fn cut_on(binding: &str, finished_meanwhile: bool) {
    let agent = GatedAgent::default();
    let server = e2e::start_server(
        agent.clone(),
        support::card,
        |builder| builder,
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let relay = Relay::start(server.addr).await;
    let url = match binding {
        binding::GRPC => relay.addr.to_string(),
        _ => format!("http://{}/", relay.addr),
    };
    // Only the binding under test, so the stream is resumed on it.
    let card = AgentCard::new("scripted", "behind a relay")
        .with_interface(url, binding)
        .with_streaming(true);
    let policy = ResumePolicy {
        first_pause: Duration::from_millis(20),
        longest_pause: Duration::from_millis(100),
        max_attempts: 600,
        ..ResumePolicy::default()
    };
    let client = a2a_grpc::register(ClientBuilder::new())
        .resume_streams(policy)
        .build(card)
        .unwrap();
    let direct = support::client(&server, binding::JSONRPC);

    let mut stream = client
        .send_streaming_message(support::request("go"), None)
        .await
        .unwrap();
    let mut events = Vec::new();
    while !events
        .iter()
        .any(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
    {
        events.push(next(&mut stream).await.expect("the task goes on"));
    }
    let task_id = events[0].task_id().to_owned();
    relay.cut();
    agent.first.notify_one();
    wait_for_task(&direct, &task_id, |task| task.artifacts.len() == 2).await;
    if finished_meanwhile {
        agent.second.notify_one();
        wait_for_task(&direct, &task_id, |task| task.status.state.is_terminal()).await;
    }
    let before = relay.relayed();
    relay.up();
    // What was made while cut off comes first, as the client's catch-up.
    let caught_up = next(&mut stream).await.expect("the stream goes on");
    events.push(caught_up.clone());
    if !finished_meanwhile {
        assert_eq!(texts(&caught_up), ["two"], "{binding}");
        agent.second.notify_one();
    } else {
        assert_eq!(texts(&caught_up), ["two", "more"], "{binding}");
    }
    while let Some(event) = next(&mut stream).await {
        events.push(event);
    }
    assert!(relay.relayed() > before, "{binding}: no new connection");
    let states = told_once(&events, &["a-1", "a-2"]);
    assert_eq!(
        states,
        [TaskState::Working, TaskState::Completed],
        "{binding}"
    );
    if !finished_meanwhile {
        // The append was live, after the catch-up.
        let appended: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(u) if u.append))
            .collect();
        assert_eq!(appended.len(), 1, "{binding}: {events:#?}");
        assert_eq!(texts(appended[0]), ["more"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_goes_on_live_on_every_binding() {
    for binding in support::BINDINGS {
        cut_on(binding, false).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_until_the_task_finished_is_caught_up_by_reading_it() {
    for binding in support::BINDINGS {
        cut_on(binding, true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_resumption_off_a_cut_stream_just_ends() {
    let agent = GatedAgent::default();
    let server = e2e::start_server(
        agent.clone(),
        support::card,
        |builder| builder,
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let relay = Relay::start(server.addr).await;
    let card = AgentCard::new("scripted", "behind a relay")
        .with_interface(format!("http://{}/", relay.addr), binding::JSONRPC)
        .with_streaming(true);
    let client = ClientBuilder::new()
        .resume_streams(ResumePolicy::off())
        .build(card)
        .unwrap();
    let mut stream = client
        .send_streaming_message(support::request("go"), None)
        .await
        .unwrap();
    loop {
        let event = next(&mut stream).await.expect("the task goes on");
        if matches!(event, StreamResponse::ArtifactUpdate(_)) {
            break;
        }
    }
    relay.cut();
    // The cut shows as it did before resumption existed: an error or the end.
    let after = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .unwrap();
    assert!(!matches!(after, Some(Ok(_))), "{after:?}");
    agent.first.notify_one();
    agent.second.notify_one();
}
