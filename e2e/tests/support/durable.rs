//! `durable-sut` processes and the effects file of their multi-turn agent,
//! for the crash and cluster tests.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use a2a_client::Client;
use a2a_core::{ListTasksRequest, TaskState};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `durable-sut` process.
pub struct Sut {
    /// The process (killed when dropped).
    pub child: Child,
    /// Where it serves JSON-RPC.
    pub url: String,
}

/// Starts `durable-sut` on `store`, noting effects in `effects`, with `extra`
/// arguments (a node id, a lease timeout); returns once it listens.
pub async fn start(store: &str, effects: &Path, extra: &[&str]) -> Sut {
    let mut child = Command::new(env!("CARGO_BIN_EXE_durable-sut"))
        .args(["--port", "0", "--store", store, "--effects"])
        .arg(effects)
        .args(extra)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("durable-sut exited before listening");
    })
    .await
    .expect("durable-sut starts");
    // Keep reading its output so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Sut { child, url }
}

/// Lines of the effects file, parsed as (kind, task, turn).
pub fn effects(path: &Path) -> Vec<(String, String, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            Some((
                words.next()?.to_owned(),
                words.next()?.to_owned(),
                words.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// How many turns' commits the effects file notes.
pub fn committed(path: &Path) -> usize {
    effects(path)
        .iter()
        .filter(|(kind, ..)| kind == "committed")
        .count()
}

/// Waits until `done` holds for the effects file (checked as the agent works).
pub async fn wait_for_effects(path: &Path, done: impl Fn(&[(String, String, u64)]) -> bool) {
    tokio::time::timeout(Duration::from_secs(120), async {
        while !done(&effects(path)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the agent made progress");
}

/// Checks that no turn ran again after its checkpoint (once a turn's commit
/// is noted, its effect never shows up later in the file) and that no turn
/// committed twice. Returns how many effect lines each (task, turn) has.
pub fn effects_per_turn(path: &Path) -> BTreeMap<(String, u64), usize> {
    let mut committed: HashSet<(String, u64)> = HashSet::new();
    let mut per_turn: BTreeMap<(String, u64), usize> = BTreeMap::new();
    for (kind, task, turn) in effects(path) {
        let key = (task, turn);
        match kind.as_str() {
            "effect" => {
                assert!(
                    !committed.contains(&key),
                    "turn {} of task {} ran again after its checkpoint",
                    key.1,
                    key.0
                );
                *per_turn.entry(key).or_default() += 1;
            }
            "committed" => {
                assert!(
                    committed.insert(key.clone()),
                    "turn {key:?} committed twice"
                );
            }
            // A checkpoint the store did not take: no commit.
            "refused" => {}
            other => panic!("unexpected line kind {other}"),
        }
    }
    per_turn
}

/// Every task's state, read page by page.
pub async fn states(client: &Client) -> HashMap<String, (TaskState, String)> {
    let mut all = HashMap::new();
    let mut token = String::new();
    loop {
        let page = client
            .list_tasks(
                ListTasksRequest {
                    page_size: Some(100),
                    page_token: token.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        for task in page.tasks {
            all.insert(
                task.id.clone(),
                (task.status.state, super::status_text(&task)),
            );
        }
        if page.next_page_token.is_empty() {
            return all;
        }
        token = page.next_page_token;
    }
}

/// The lease timeout the cluster tests' nodes run with.
pub const LEASE_MS: u64 = 2000;

/// Starts `durable-sut` as cluster node `name` on `store` with the tests'
/// lease timeout, and `extra` arguments besides.
pub async fn cluster_node(store: &str, effects: &Path, name: &str, extra: &[&str]) -> Sut {
    let lease = LEASE_MS.to_string();
    let mut args = vec!["--node-id", name, "--lease-timeout-ms", &lease];
    args.extend_from_slice(extra);
    start(store, effects, &args).await
}

/// A task's job row: its state, the node that holds it, and how many times
/// it was started (the lease's epoch).
pub async fn job_row(url: &str, task_id: &str) -> (String, String, i64) {
    use sqlx::Connection as _;
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query_as("SELECT state, node, attempts FROM jobs WHERE task_id = $1")
        .bind(task_id)
        .fetch_one(&mut db)
        .await
        .unwrap()
}

/// A task's stored events (`task_events`), in version order.
pub async fn stored_events(url: &str, task_id: &str) -> Vec<(i64, a2a_core::StreamResponse)> {
    use sqlx::Connection as _;
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT e.version, e.event FROM task_events e JOIN tasks t ON t.seq = e.task_seq \
         WHERE t.task_id = $1 ORDER BY e.version",
    )
    .bind(task_id)
    .fetch_all(&mut db)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(version, json)| (version, serde_json::from_str(&json).unwrap()))
        .collect()
}
