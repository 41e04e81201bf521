//! The push outbox over real processes: a cluster node is killed (SIGKILL)
//! while its webhook is slow and deliveries are queued; the node that takes
//! the task over sends what was left, so the webhook hears every event at
//! least once, each delivery naming its event (`A2A-Event-Version`) so
//! repeats can be told apart. A task that finished before its pushes were
//! sent has no execution to take over: another node sweeps its outbox once
//! the dead node's lease on the job expires. That holds for a task canceled
//! by a node that did not run it, too: the canceling node sends the cancel's
//! pushes under the job's lease, so its death leaves them to another.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::Client;
use a2a_core::{SendMessageConfiguration, StreamResponse, TaskPushNotificationConfig, TaskState};
use sqlx::Connection as _;
use support::durable::{Sut, cluster_node, stored_events, wait_for_effects};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// How long the webhook takes to answer each delivery.
const SLOW: Duration = Duration::from_millis(700);

async fn node(store: &str, effects: &Path, name: &str) -> Sut {
    cluster_node(store, effects, name, &["--push"]).await
}

/// One delivery: its event-version header, if any, and its body.
type Delivery = (Option<String>, String);

/// What the webhook received, in arrival order.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Delivery>>>);

impl Received {
    fn all(&self) -> Vec<Delivery> {
        self.0.lock().unwrap().clone()
    }
}

/// A slow webhook on 127.0.0.1: notes each POST as it arrives, answers 200
/// after [`SLOW`]. Plain HTTP/1.1 with keep-alive, as the push client speaks it.
async fn slow_webhook() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let received = Received::default();
    let noted = received.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let noted = noted.clone();
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut length = 0;
                    let mut version = None;
                    let mut line = String::new();
                    // The request line, then the headers.
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let header = line.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':') {
                            let value = value.trim();
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.parse().unwrap();
                            } else if name.eq_ignore_ascii_case("a2a-event-version") {
                                version = Some(value.to_owned());
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    noted
                        .0
                        .lock()
                        .unwrap()
                        .push((version, String::from_utf8(body).unwrap()));
                    tokio::time::sleep(SLOW).await;
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    if stream.get_mut().write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, received)
}

/// Starts a task of the test agent (`text`) whose events go to `hook`;
/// returns at once with its id.
async fn send_pushed(client: &Client, text: &str, hook: &str) -> String {
    let mut request = support::request(text);
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        task_push_notification_config: Some(TaskPushNotificationConfig::new("", hook)),
        ..Default::default()
    });
    support::send_task(client, request).await.id
}

/// The task's stored events by version.
async fn stored_by_version(url: &str, task_id: &str) -> BTreeMap<u64, StreamResponse> {
    stored_events(url, task_id)
        .await
        .into_iter()
        .map(|(v, event)| (u64::try_from(v).unwrap(), event))
        .collect()
}

async fn outbox_rows(url: &str) -> i64 {
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query_scalar("SELECT count(*) FROM push_outbox")
        .fetch_one(&mut db)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_owed_by_a_killed_node_are_sent_by_the_node_that_takes_over() {
    let Some(url) = support::postgres_database("push_outbox").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects = dir.path().join("effects.log");
    let (hook, received) = slow_webhook().await;
    let mut one = node(&url, &effects, "node-1").await;
    let two = node(&url, &effects, "node-2").await;
    let c1 = Client::connect(&one.url).await.unwrap();
    let c2 = Client::connect(&two.url).await.unwrap();

    // Four turns of 300 ms on node 1, each pushed to a webhook that takes
    // 700 ms per delivery: deliveries fall behind the work.
    let task_id = send_pushed(&c1, "turns 4 ms 300", &hook).await;
    // Two turns done while the webhook has heard of at most two events: node
    // 1 owes it some. Then it dies.
    wait_for_effects(&effects, |lines| {
        lines
            .iter()
            .any(|(k, t, n)| k == "committed" && *t == task_id && *n == 2)
    })
    .await;
    let heard_before_kill = received.all().len();
    one.child.start_kill().unwrap();
    one.child.wait().await.unwrap();
    let stored_at_kill = stored_by_version(&url, &task_id).await.len();
    assert!(
        heard_before_kill < stored_at_kill,
        "the webhook was to be behind at the kill ({heard_before_kill} heard, {stored_at_kill} stored)"
    );

    // Node 2 takes the task over and finishes it.
    let done = support::wait_for_state(&c2, &task_id, TaskState::Completed).await;
    assert_eq!(support::status_text(&done), "4 turns done");
    let stored = stored_by_version(&url, &task_id).await;
    let last = *stored.keys().last().unwrap();

    let (all, repeats) = every_event_heard(&url, &task_id, &received, &stored).await;
    eprintln!(
        "push outbox: {all} deliveries of {last} events ({repeats} repeats); the webhook had {heard_before_kill} when node 1 was killed"
    );
    drop(two);
    support::drop_postgres_database(&url).await;
}

/// Waits until the webhook heard every stored event of the task (by its
/// `A2A-Event-Version`) and the outbox is empty; checks that each delivery
/// is the stored event it names. Returns the deliveries and the repeats.
async fn every_event_heard(
    url: &str,
    task_id: &str,
    received: &Received,
    stored: &BTreeMap<u64, StreamResponse>,
) -> (usize, usize) {
    let last = *stored.keys().last().unwrap();
    let all = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let heard: BTreeSet<String> = received
                .all()
                .into_iter()
                .filter_map(|(version, _)| version)
                .collect();
            if (1..=last).all(|v| heard.contains(&format!("{task_id}/{v}")))
                && outbox_rows(url).await == 0
            {
                return received.all();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("every event reaches the webhook and the outbox empties");

    // Each delivery is the spec's StreamResponse of the version it names:
    // a repeat carries the same name and the same event.
    let mut repeats = 0;
    let mut seen = BTreeSet::new();
    for (version, body) in &all {
        let event: StreamResponse = serde_json::from_str(body).unwrap();
        let Some(version) = version else {
            // A new task's first snapshot is no stored version.
            assert!(matches!(event, StreamResponse::Task(_)), "{body}");
            continue;
        };
        let (task, number) = version.rsplit_once('/').unwrap();
        assert_eq!(task, task_id);
        let number: u64 = number.parse().unwrap();
        assert_eq!(
            stored[&number], event,
            "delivery {version} is its stored event"
        );
        if !seen.insert(number) {
            repeats += 1;
        }
    }
    (all.len(), repeats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_owed_for_a_finished_task_by_a_killed_node_are_swept_by_another() {
    let Some(url) = support::postgres_database("push_outbox_swept").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects = dir.path().join("effects.log");
    let (hook, received) = slow_webhook().await;
    let mut one = node(&url, &effects, "node-1").await;
    let two = node(&url, &effects, "node-2").await;
    let c1 = Client::connect(&one.url).await.unwrap();

    // The task ends on node 1 long before its webhook, at 700 ms per
    // delivery, has heard its events: no execution is left to resume them.
    let task_id = send_pushed(&c1, "turns 3 ms 20", &hook).await;
    let done = support::wait_for_state(&c1, &task_id, TaskState::Completed).await;
    assert_eq!(support::status_text(&done), "3 turns done");
    let stored = stored_by_version(&url, &task_id).await;
    let heard_before_kill = received.all().len();
    one.child.start_kill().unwrap();
    one.child.wait().await.unwrap();
    assert!(
        outbox_rows(&url).await > 0,
        "node 1 was to owe pushes at the kill ({heard_before_kill} heard of {} stored)",
        stored.len()
    );

    // Node 2 sweeps the finished task's outbox once node 1's lease expires.
    let (all, repeats) = every_event_heard(&url, &task_id, &received, &stored).await;
    eprintln!(
        "swept outbox: {all} deliveries of {} events ({repeats} repeats); the webhook had {heard_before_kill} when node 1 was killed",
        stored.len()
    );
    drop(two);
    support::drop_postgres_database(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pushes_of_a_cancel_by_a_node_that_dies_are_sent_by_another() {
    let Some(url) = support::postgres_database("push_outbox_cancel").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let effects = dir.path().join("effects.log");
    let (hook, received) = slow_webhook().await;
    let one = node(&url, &effects, "node-1").await;
    let mut two = node(&url, &effects, "node-2").await;
    let c1 = Client::connect(&one.url).await.unwrap();
    let c2 = Client::connect(&two.url).await.unwrap();

    // The task's turn ends on node 1 waiting for input: no execution runs.
    let task_id = send_pushed(&c1, "turns 1 ask", &hook).await;
    support::wait_for_state(&c1, &task_id, TaskState::InputRequired).await;
    // Node 2 cancels it: node 2 writes the cancel and owes its push, which
    // the webhook (700 ms a delivery) has not answered when node 2 dies.
    let canceled = c2
        .cancel_task(support::cancel_request(&task_id), None)
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    two.child.start_kill().unwrap();
    two.child.wait().await.unwrap();
    let (state, holder, _) = support::durable::job_row(&url, &task_id).await;
    assert_eq!(
        (state.as_str(), holder.as_str()),
        ("CANCELED", "node-2"),
        "the canceling node holds the job while it sends the cancel's pushes"
    );

    // Node 1, alive all along, sweeps the cancel's push once node 2's lease
    // expires (were the lease still node 1's, its heartbeat would keep it
    // and nobody would send the cancel).
    let stored = stored_by_version(&url, &task_id).await;
    assert!(matches!(
        stored.values().last(),
        Some(StreamResponse::StatusUpdate(update)) if update.status.state == TaskState::Canceled
    ));
    let (all, repeats) = every_event_heard(&url, &task_id, &received, &stored).await;
    eprintln!(
        "a dead node's cancel: {all} deliveries of {} events ({repeats} repeats)",
        stored.len()
    );
    drop(one);
    support::drop_postgres_database(&url).await;
}
