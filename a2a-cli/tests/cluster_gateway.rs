//! `a2a serve --config FILE --store postgres://… --node-id N`: a gateway on a
//! cluster. Three real nodes share one database (each agent in its own
//! schema); the file has a Rust agent (`echo`), a process agent (`proc`,
//! tests/agents/turns.py, whose turns are noted in a file) and a remote agent
//! (`far`: another `a2a serve` whose process agent is the same script),
//! and the collaboration hub (`[hub]`: its record in the schema `a2a_hub`
//! of the same database, one hub for every node). 200 executions and 100
//! hub exchanges (a person asks `proc` in a thread of its own) run spread
//! over the nodes, one node is killed outright while it holds some of the
//! exchanges' deliveries, and every acknowledged task completes on the
//! others without a checkpointed turn running twice, and every exchange's
//! answer lands in its thread once; the killed node comes back under its
//! name and takes back its jobs and deliveries.
//!
//! The nodes run on a PostgreSQL server of the test's own (initdb): three
//! nodes with three agents each open more connections than a shared server
//! should give one test. Skipped (with a notice) where PostgreSQL is not
//! installed, except in CI. `A2A_TEST_LEASE_SECS` sets the lease (default
//! 5 s: on a loaded machine a shorter one can expire under a live node, which
//! the cluster tolerates, but then a node that has not yet noticed may store
//! one more checkpoint after the new owner read the older one, and that
//! turn runs twice: see CLUSTER.md on fencing).

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::{Value, json};
use support::{Server, arg, serve};

/// Turns of each process and remote task, and each turn's length.
const TURNS: u64 = 6;
const TURN_MS: u64 = 2000;
/// Executions per agent in the failover: 200 in all.
const PROC_TASKS: usize = 100;
const FAR_TASKS: usize = 80;
const ECHO_TASKS: usize = 20;
/// Hub exchanges in the failover, each asking `proc` for the work of a
/// process task; and on the rejoined node before its second kill.
const HUB_EXCHANGES: usize = 100;
const HUB_BACK: usize = 10;
/// Every exchange comes from 127.0.0.1 without authentication: the guards
/// that count per address would refuse all but a few of them.
const HUB_GUARDS: &str = "[hub.guards]\npair_limit = 1000\nanonymous_threads = 1000\n";

// ===== a PostgreSQL server of the test's own =====

/// `initdb`'s directory, if PostgreSQL is installed.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A server in its own directory, stopped (immediately) when dropped.
struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_postgres: bool,
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// A fresh server with room for every node's pools; `None` (with a
    /// notice) where PostgreSQL is not installed, except in CI.
    fn start() -> Option<Postgres> {
        let Some(bin) = bin_dir() else {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "PostgreSQL's initdb is needed in CI"
            );
            eprintln!(
                "NOTICE: skipping a gateway cluster test: PostgreSQL's initdb is not installed"
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let as_postgres = is_root();
        if as_postgres {
            // PostgreSQL refuses to run as root.
            let _ = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let postgres = Postgres {
            bin,
            data: dir.path().join("data"),
            port,
            as_postgres,
            _dir: dir,
        };
        let data = postgres.data.display().to_string();
        postgres.run(
            "initdb",
            &["-D", &data, "-U", "postgres", "--auth=trust", "--no-sync"],
        );
        let options = format!(
            "-p {port} -h 127.0.0.1 -k {} -F -c max_connections=400",
            postgres._dir.path().display()
        );
        let log = postgres._dir.path().join("log").display().to_string();
        postgres.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-o", &options, "-w", "start"],
        );
        postgres.run(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "postgres",
                "-c",
                "CREATE DATABASE a2a_gateway_cluster",
            ],
        );
        Some(postgres)
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self.command(program).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The test's database.
    fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/a2a_gateway_cluster",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}

// ===== the agents' effects =====

/// One line of the effects file.
#[derive(Debug, Clone)]
struct Line {
    kind: String,
    task: String,
    /// The turn, or for `start` the message id.
    what: String,
    resumed: bool,
    node: String,
    /// When (seconds since the epoch).
    at: String,
}

fn effects(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            let [kind, task, what, resumed, node, at] = words.as_slice() else {
                return None;
            };
            Some(Line {
                kind: (*kind).to_owned(),
                task: (*task).to_owned(),
                what: (*what).to_owned(),
                resumed: *resumed == "1",
                node: (*node).to_owned(),
                at: (*at).to_owned(),
            })
        })
        .collect()
}

/// Checks that no turn ran again once its checkpoint was stored (its
/// `effect` never follows its `committed`) and that none committed twice;
/// returns how many times each (task, turn) ran.
fn runs_per_turn(lines: &[Line]) -> BTreeMap<(String, u64), usize> {
    let mut committed = HashSet::new();
    let mut runs: BTreeMap<(String, u64), usize> = BTreeMap::new();
    for line in lines.iter().filter(|l| l.kind != "start") {
        let key = (line.task.clone(), line.what.parse::<u64>().unwrap());
        match line.kind.as_str() {
            "effect" => {
                assert!(
                    !committed.contains(&key),
                    "turn {} of task {} ran again after its checkpoint: {:#?}",
                    key.1,
                    key.0,
                    lines.iter().filter(|l| l.task == key.0).collect::<Vec<_>>()
                );
                *runs.entry(key).or_default() += 1;
            }
            "committed" => assert!(committed.insert(key.clone()), "{key:?} committed twice"),
            other => panic!("unexpected effect line kind {other}"),
        }
    }
    runs
}

fn committed(path: &Path) -> usize {
    effects(path)
        .iter()
        .filter(|l| l.kind == "committed")
        .count()
}

/// Waits (up to two minutes) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ===== calls =====

/// A JSON-RPC call to agent `agent` of the gateway at `node`.
async fn rpc(
    http: &reqwest::Client,
    node: &str,
    agent: &str,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = http
        .post(format!("{node}/agents/{agent}"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let text = response.text().await.map_err(|e| e.to_string())?;
    let mut answer: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    match answer.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(text),
    }
}

/// Sends `text` to `agent` on `node` without waiting for the work: the
/// acknowledged task's id.
async fn send(http: &reqwest::Client, node: &str, agent: &str, text: &str) -> String {
    let params = json!({
        "message": {
            "messageId": a2a_core::new_id(),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        },
        "configuration": {"returnImmediately": true},
    });
    let answer = rpc(http, node, agent, "SendMessage", params)
        .await
        .unwrap_or_else(|e| panic!("sending to {agent} on {node}: {e}"));
    answer["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {answer}"))
        .to_owned()
}

/// Task `id` of `agent`, read on `node` (`None` while the node cannot say).
async fn get(http: &reqwest::Client, node: &str, agent: &str, id: &str) -> Option<Value> {
    rpc(http, node, agent, "GetTask", json!({"id": id}))
        .await
        .ok()
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

fn is_terminal(task: &Value) -> bool {
    matches!(
        state(task),
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

fn status_text(task: &Value) -> String {
    let parts = task["status"]["message"]["parts"].as_array();
    parts
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// Reads every task of `given` ((agent, id)) on `node` until all have ended.
async fn settle(
    http: &reqwest::Client,
    node: &str,
    given: &[(&'static str, String)],
) -> HashMap<String, Value> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let read: Vec<Option<Value>> = futures::stream::iter(given)
            .map(|(agent, id)| get(http, node, agent, id))
            .buffered(16)
            .collect()
            .await;
        if read.iter().all(|t| t.as_ref().is_some_and(is_terminal)) {
            return given
                .iter()
                .zip(read)
                .map(|((_, id), task)| (id.clone(), task.unwrap()))
                .collect();
        }
        let open = read
            .iter()
            .filter(|t| !t.as_ref().is_some_and(is_terminal))
            .count();
        assert!(
            Instant::now() < deadline,
            "{open} of {} tasks never settled",
            given.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// (node, attempts) of each job of `agent`, by task id.
async fn jobs(url: &str, agent: &str) -> HashMap<String, (String, i64)> {
    use sqlx::Connection as _;
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    let rows: Vec<(String, String, i64)> = sqlx::query_as(&format!(
        "SELECT task_id, node, attempts::bigint FROM \"a2a_agent_{agent}\".jobs"
    ))
    .fetch_all(&mut db)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(task, node, attempts)| (task, (node, attempts)))
        .collect()
}

// ===== the hub =====

/// Asks `agent` through the hub of `node`, as `person`, in a thread of its
/// own: the thread, once the agent took the message (the exchange is
/// acknowledged).
async fn collaborate(
    http: &reqwest::Client,
    node: &str,
    person: &str,
    agent: &str,
    text: &str,
) -> String {
    let body = json!({"target": agent, "text": text, "from": person});
    let response = http
        .post(format!("{node}/hub/api/collaborate"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("collaborating on {node}: {e}"));
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(
        status.is_success(),
        "collaborating on {node}: {status} {text}"
    );
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["collaboration"]["delivered"], true, "{answer}");
    answer["collaboration"]["thread"]
        .as_str()
        .unwrap_or_else(|| panic!("no thread in {answer}"))
        .to_owned()
}

/// The messages of hub thread `thread`, oldest first, read on `node`
/// (`None` while the node cannot say).
async fn thread_messages(http: &reqwest::Client, node: &str, thread: &str) -> Option<Vec<Value>> {
    let url = format!("{node}/hub/api/messages?thread={thread}&limit=1000");
    let response = http.get(url).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let list: Value = serde_json::from_str(&response.text().await.ok()?).ok()?;
    list["messages"].as_array().cloned()
}

/// Runs `query` (pairs of text) on the database at `url`.
async fn pairs(url: &str, query: &str) -> Vec<(String, String)> {
    use sqlx::Connection as _;
    let mut db = sqlx::PgConnection::connect(url).await.unwrap();
    let rows = sqlx::query_as(query).fetch_all(&mut db).await.unwrap();
    let _ = db.close().await;
    rows
}

/// (thread, node) of each hub delivery waiting for its agent's answer: the
/// node holds its lease.
async fn hub_deliveries(url: &str) -> Vec<(String, String)> {
    pairs(
        url,
        "SELECT COALESCE(m.thread_id, ''), d.node FROM a2a_hub.deliveries d \
         JOIN a2a_hub.messages m ON m.id = d.message_id",
    )
    .await
}

/// (thread, node that posted it) of each message in a hub thread that no
/// person wrote: the agents' answers, and the hub's notices if any.
async fn hub_answers(url: &str) -> Vec<(String, String)> {
    pairs(
        url,
        "SELECT thread_id, node FROM a2a_hub.messages \
         WHERE thread_id IS NOT NULL AND (body::jsonb)->'from'->>'kind' <> 'person'",
    )
    .await
}

/// Waits (on the database) until every thread of `threads` has an answer
/// and no delivery waits any more.
async fn hub_settles(url: &str, threads: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let answered: HashSet<String> =
            hub_answers(url).await.into_iter().map(|(t, _)| t).collect();
        let open = threads.iter().filter(|t| !answered.contains(*t)).count();
        let waiting = hub_deliveries(url).await.len();
        if open == 0 && waiting == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{open} of {} hub exchanges never answered; {waiting} deliveries still wait",
            threads.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Checks, on `node`, that each thread of `threads` ((person, thread))
/// holds the person's question and `proc`'s answer `text` to it, once, and
/// nothing else; returns the process tasks the exchanges ran.
async fn answered_once(
    http: &reqwest::Client,
    node: &str,
    threads: &[(String, String)],
    text: &str,
) -> Vec<String> {
    let read: Vec<Option<Vec<Value>>> = futures::stream::iter(threads)
        .map(|(_, thread)| thread_messages(http, node, thread))
        .buffered(16)
        .collect()
        .await;
    let mut tasks = Vec::new();
    for ((person, thread), messages) in threads.iter().zip(read) {
        let messages = messages.unwrap_or_else(|| panic!("thread {thread} unread on {node}"));
        let [question, answer] = messages.as_slice() else {
            panic!("thread {thread}: not a question and one answer: {messages:#?}");
        };
        assert_eq!(question["from"], json!({"kind": "person", "name": person}));
        assert_eq!(
            answer["from"],
            json!({"kind": "agent", "name": "proc"}),
            "{answer}"
        );
        assert_eq!(answer["text"], text, "{answer}");
        assert_eq!(answer["replyTo"], question["id"], "{answer}");
        let task = question["deliveries"][0]["taskId"].as_str();
        tasks.push(
            task.unwrap_or_else(|| panic!("no task in {question}"))
                .to_owned(),
        );
    }
    tasks
}

// ===== the cluster =====

/// What the nodes are started with.
struct Setup {
    config: PathBuf,
    url: String,
    front: String,
    lease: String,
    data: PathBuf,
}

impl Setup {
    /// Node `name`, once it serves.
    fn node(&self, name: &str) -> Server {
        let data = self.data.join(name);
        std::fs::create_dir_all(&data).unwrap();
        let node = serve(&[
            "--config",
            arg(&self.config),
            "--store",
            &self.url,
            "--node-id",
            name,
            "--lease-timeout",
            &self.lease,
            "--public-url",
            &self.front,
            "--no-conversation-log",
            "--data-dir",
            arg(&data),
        ]);
        assert!(
            node.banner.contains(&format!("cluster node {name}")),
            "{}",
            node.banner
        );
        node
    }
}

/// Kills `node` outright (SIGKILL) and reaps it.
fn kill(node: &mut Server) {
    node.child.kill().unwrap();
    node.child.wait().unwrap();
}

#[test]
fn a_gateway_cluster_with_its_hub_finishes_a_killed_node_s_work_and_the_node_takes_it_back() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let lease = std::env::var("A2A_TEST_LEASE_SECS").unwrap_or_else(|_| "5".to_owned());
    let lease_time = Duration::from_secs_f64(lease.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/turns.py");
    let local_effects = dir.path().join("effects.log");
    let remote_effects = dir.path().join("remote-effects.log");

    // The remote agent: a gateway in memory of its own, elsewhere.
    let remote_file = dir.path().join("remote.toml");
    std::fs::write(
        &remote_file,
        format!(
            "[agents.turns]\nkind = \"process\"\ncommand = [\"python3\", {script:?}]\n\
             env = {{ EFFECTS = {remote_effects:?} }}\n"
        ),
    )
    .unwrap();
    let remote_data = dir.path().join("remote");
    std::fs::create_dir_all(&remote_data).unwrap();
    let remote = serve(&[
        "--config",
        arg(&remote_file),
        "--store",
        "memory",
        "--no-conversation-log",
        "--data-dir",
        arg(&remote_data),
    ]);

    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[agents.echo]\nkind = \"rust\"\nexecutor = \"echo\"\n\n\
             [agents.proc]\nkind = \"process\"\ncommand = [\"python3\", {script:?}]\n\
             env = {{ EFFECTS = {local_effects:?} }}\n\n\
             [agents.far]\nkind = \"remote\"\nurl = {:?}\n\n\
             [hub]\ndefault_channel = \"general\"\n\n\
             [hub.channels.general]\ndescription = \"Where people ask the agents.\"\n\n\
             {HUB_GUARDS}",
            remote.url
        ),
    )
    .unwrap();
    let setup = Setup {
        config,
        url: postgres.url(),
        front: "http://a2a.example.test:8080".to_owned(),
        lease,
        data: dir.path().join("nodes"),
    };
    // One after the other: the first creates the schemas and tables.
    let mut one = setup.node("node-1");
    let two = setup.node("node-2");
    let three = setup.node("node-3");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();

    // Every node serves the same cards, naming the public URL.
    runtime.block_on(async {
        let mut served = Vec::new();
        for node in [&one, &two, &three] {
            let mut cards = Vec::new();
            for agent in ["echo", "proc", "far"] {
                let url = format!("{}/agents/{agent}/.well-known/agent-card.json", node.url);
                let card = http.get(url).send().await.unwrap().text().await.unwrap();
                assert!(card.contains(&setup.front), "{card}");
                cards.push(card);
            }
            served.push(cards);
        }
        assert!(served.iter().all(|cards| *cards == served[0]));
    });

    // 200 executions spread over the nodes.
    let nodes = [one.url.clone(), two.url.clone(), three.url.clone()];
    let work = format!("turns {TURNS} ms {TURN_MS}");
    // The remote ones first: they are acknowledged once the remote answers.
    // Longer turns for them: acknowledged first, they must still run when
    // the node is killed.
    let far_work = format!("turns {TURNS} ms {}", 3 * TURN_MS);
    let plan: Vec<(&'static str, String, String)> = (0..FAR_TASKS)
        .map(|_| ("far", far_work.clone()))
        .chain((0..ECHO_TASKS).map(|i| ("echo", format!("hello gateway cluster {i}"))))
        .chain((0..PROC_TASKS).map(|_| ("proc", work.clone())))
        .enumerate()
        .map(|(i, (agent, text))| (agent, nodes[i % 3].clone(), text))
        .collect();
    let started = Instant::now();
    let given: Vec<(&'static str, String)> = runtime.block_on(
        futures::stream::iter(&plan)
            .map(|(agent, node, text)| async { (*agent, send(&http, node, agent, text).await) })
            .buffered(32)
            .collect(),
    );
    assert_eq!(
        given.iter().map(|(_, id)| id).collect::<HashSet<_>>().len(),
        given.len()
    );
    // 100 hub exchanges spread over the nodes: people ask the process agent
    // for the same work, each in a thread of their own.
    let exchanges: Vec<(String, String)> = runtime.block_on(
        futures::stream::iter(0..HUB_EXCHANGES)
            .map(|i| {
                let (http, node, work) = (&http, &nodes[i % 3], &work);
                async move {
                    let person = format!("person-{i}");
                    let thread = collaborate(http, node, &person, "proc", work).await;
                    (person, thread)
                }
            })
            .buffered(16)
            .collect(),
    );
    assert_eq!(
        exchanges
            .iter()
            .map(|(_, t)| t)
            .collect::<HashSet<_>>()
            .len(),
        HUB_EXCHANGES
    );
    // Mid-flight: about half of the process tasks have a turn stored, and
    // every remote task is recorded in its local task (else a resumed
    // execution would rightly send the message to the remote again).
    let sent = started.elapsed();
    wait_until("half the process agent's first turns", || {
        committed(&local_effects) >= (PROC_TASKS + HUB_EXCHANGES) / 2
    });
    let half = started.elapsed();
    runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        let far: Vec<&(&str, String)> = given.iter().filter(|(a, _)| *a == "far").collect();
        loop {
            let recorded = futures::stream::iter(&far)
                .map(|(agent, id)| get(&http, &nodes[1], agent, id))
                .buffered(16)
                .filter(|task| {
                    let named = task
                        .as_ref()
                        .is_some_and(|t| t["metadata"]["a2a-gateway/remote"]["taskId"].is_string());
                    futures::future::ready(named)
                })
                .count()
                .await;
            if recorded == far.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "only {recorded} remote tasks recorded"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });

    eprintln!(
        "200 executions and {HUB_EXCHANGES} hub exchanges sent in {sent:?}, half the first \
         turns stored after {half:?}, remote tasks recorded after {:?}",
        started.elapsed()
    );
    let kill_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // Node 1 follows some exchanges' tasks at its death: their answers are
    // its to post (the hub's delivery leases, on record).
    let held_by_one = || {
        let held = runtime.block_on(hub_deliveries(&setup.url));
        held.into_iter()
            .filter(|(_, node)| node == "node-1")
            .map(|(thread, _)| thread)
            .collect::<HashSet<String>>()
    };
    let mut held = held_by_one();
    let deadline = Instant::now() + Duration::from_secs(60);
    while held.is_empty() {
        assert!(
            Instant::now() < deadline,
            "node 1 held no hub delivery: {:?}",
            runtime.block_on(hub_deliveries(&setup.url))
        );
        std::thread::sleep(Duration::from_millis(20));
        held = held_by_one();
    }
    eprintln!(
        "nodes {nodes:?}; node 1 killed at {kill_epoch:.3} holding {} hub deliveries",
        held.len()
    );
    kill(&mut one);
    let killed = Instant::now();
    let lines = effects(&local_effects);
    let at_kill = lines.len();
    // Executions resumed while every node was alive: leases that expired
    // under a live node (a loaded machine).
    let early = lines
        .iter()
        .filter(|l| l.kind == "start" && l.resumed)
        .count();
    // Its children call the others at its own address.
    let node_one = format!("{}/agents", one.url);
    // Node 1's process work cut short: turns begun and not all stored.
    let mut cut: HashSet<&str> = lines
        .iter()
        .filter(|l| l.kind == "effect" && l.node == node_one)
        .map(|l| l.task.as_str())
        .collect();
    for line in &lines {
        if line.kind == "committed" && line.what == TURNS.to_string() {
            cut.remove(line.task.as_str());
        }
    }
    assert!(
        !cut.is_empty(),
        "node 1 had finished its work before the kill"
    );
    let cut_tasks: HashSet<String> = cut.iter().map(|t| (*t).to_owned()).collect();
    let cut = cut.len();
    // The first turn a resumed execution does after the kill, on another node.
    wait_until("a resumed turn", || {
        let after = effects(&local_effects).split_off(at_kill);
        after
            .iter()
            .any(|l| l.kind == "effect" && l.resumed && l.node != node_one)
    });
    let first_resumed = killed.elapsed();
    let local: Vec<_> = given.iter().filter(|(a, _)| *a != "far").cloned().collect();
    runtime.block_on(settle(&http, &nodes[1], &local));
    let failover = killed.elapsed();
    let settled = runtime.block_on(settle(&http, &nodes[1], &given));
    let far_failover = killed.elapsed();
    // Every exchange's answer lands in its thread, once; those node 1
    // followed, posted by the others.
    let threads: Vec<String> = exchanges.iter().map(|(_, t)| t.clone()).collect();
    runtime.block_on(hub_settles(&setup.url, &threads));
    let hub_failover = killed.elapsed();
    let turns_done = format!("{TURNS} turns done");
    let hub_tasks = runtime.block_on(answered_once(&http, &nodes[1], &exchanges, &turns_done));
    let answers = runtime.block_on(hub_answers(&setup.url));
    let hub_taken = answers
        .iter()
        .filter(|(thread, node)| held.contains(thread) && node != "node-1")
        .count();
    assert!(hub_taken > 0, "no hub delivery of node 1 taken over");

    // Every acknowledged task completed.
    for (agent, id) in &given {
        let task = &settled[id];
        assert_eq!(
            state(task),
            "TASK_STATE_COMPLETED",
            "{agent} task {id}: {task}"
        );
        if *agent != "echo" {
            assert_eq!(status_text(task), format!("{TURNS} turns done"), "{task}");
        }
    }
    // None lost, none run again past a checkpoint.
    let local = effects(&local_effects);
    let runs = runs_per_turn(&local);
    let proc_tasks = given.iter().filter(|(agent, _)| *agent == "proc");
    for id in proc_tasks.map(|(_, id)| id).chain(&hub_tasks) {
        for turn in 1..=TURNS {
            assert!(
                runs.contains_key(&(id.clone(), turn)),
                "{id} never did turn {turn}"
            );
        }
    }
    let rerun = runs.values().filter(|n| **n > 1).count();
    // When the last turn of node 1's cut-short work was stored.
    let cut_done = local
        .iter()
        .filter(|l| l.kind == "committed" && cut_tasks.contains(&l.task))
        .filter_map(|l| l.at.parse::<f64>().ok())
        .fold(0.0, f64::max)
        - kill_epoch;
    // The remote did each forwarded message once: a resumed execution
    // followed the remote task instead of sending the message again.
    let remote_lines = effects(&remote_effects);
    runs_per_turn(&remote_lines);
    let mut starts: HashMap<&str, usize> = HashMap::new();
    for line in remote_lines.iter().filter(|l| l.kind == "start") {
        *starts.entry(line.what.as_str()).or_default() += 1;
    }
    assert_eq!(starts.len(), FAR_TASKS, "{starts:?}");
    assert!(starts.values().all(|n| *n == 1), "sent twice: {starts:?}");
    // What node 1 ran is now the others'.
    let (proc_jobs, far_jobs) = runtime.block_on(async {
        (
            jobs(&setup.url, "proc").await,
            jobs(&setup.url, "far").await,
        )
    });
    let mut taken = [0, 0];
    for (i, jobs) in [&proc_jobs, &far_jobs].into_iter().enumerate() {
        for (node, attempts) in jobs.values() {
            if *attempts > 1 {
                assert_ne!(node, "node-1", "a dead node kept a job");
                taken[i] += 1;
            }
        }
    }
    assert!(
        taken[0] > 0 && taken[1] > 0,
        "nothing taken over: {taken:?}"
    );
    eprintln!(
        "gateway failover (lease {lease_time:?}): {} tasks ({PROC_TASKS} process, {FAR_TASKS} remote, \
         {ECHO_TASKS} echo) on 3 nodes, {cut} process tasks cut short by the kill, {} process \
         and {} remote executions taken over; first resumed turn {:.2} s after the kill, every \
         local task settled after {:.2} s (turns of {TURN_MS} ms; the last turn of node 1's \
         cut-short work stored after {cut_done:.2} s), every remote one after {:.2} s; \
         {rerun} unstored turns ran again; {early} executions resumed before the kill; \
         {HUB_EXCHANGES} hub exchanges, {hub_taken} of node 1's {} deliveries taken over, \
         every answer in its thread once after {:.2} s",
        given.len(),
        taken[0],
        taken[1],
        first_resumed.as_secs_f64(),
        failover.as_secs_f64(),
        far_failover.as_secs_f64(),
        held.len(),
        hub_failover.as_secs_f64(),
    );

    // The killed node comes back under its name and runs new work; killed
    // again mid-flight and restarted at once, it takes its jobs back itself
    // (before its lease runs out nobody else may).
    let mut one = setup.node("node-1");
    let back: Vec<(&'static str, String)> = runtime.block_on(
        futures::stream::iter(
            (0..20)
                .map(|_| "proc")
                .chain((0..10).map(|_| "far"))
                .collect::<Vec<_>>(),
        )
        .map(|agent| {
            let (http, node, text) = (&http, &one.url, format!("turns 3 ms {TURN_MS}"));
            async move { (agent, send(http, node, agent, &text).await) }
        })
        .buffered(30)
        .collect(),
    );
    let back_exchanges: Vec<(String, String)> = runtime.block_on(
        futures::stream::iter(0..HUB_BACK)
            .map(|i| {
                let (http, node) = (&http, &one.url);
                async move {
                    let person = format!("person-back-{i}");
                    let work = format!("turns 3 ms {TURN_MS}");
                    let thread = collaborate(http, node, &person, "proc", &work).await;
                    (person, thread)
                }
            })
            .buffered(HUB_BACK)
            .collect(),
    );
    let before = committed(&local_effects);
    wait_until("a turn of node 1's new work", || {
        committed(&local_effects) >= before + 10
    });
    let far_recorded = runtime.block_on(async {
        let mut all = true;
        for (agent, id) in back.iter().filter(|(agent, _)| *agent == "far") {
            let task = get(&http, &one.url, agent, id).await;
            all &= task.is_some_and(|t| t["metadata"]["a2a-gateway/remote"]["taskId"].is_string());
        }
        all
    });
    kill(&mut one);
    let killed = Instant::now();
    let one = setup.node("node-1");
    let restarted = killed.elapsed();
    let settled = runtime.block_on(settle(&http, &one.url, &back));
    for (agent, id) in &back {
        let task = &settled[id];
        assert_eq!(
            state(task),
            "TASK_STATE_COMPLETED",
            "{agent} task {id}: {task}"
        );
        assert_eq!(status_text(task), "3 turns done", "{task}");
    }
    // The exchanges asked of the rejoined node are answered once too, and
    // it reads every thread of the one hub.
    let back_threads: Vec<String> = back_exchanges.iter().map(|(_, t)| t.clone()).collect();
    runtime.block_on(hub_settles(&setup.url, &back_threads));
    let back_hub_tasks = runtime.block_on(answered_once(
        &http,
        &one.url,
        &back_exchanges,
        "3 turns done",
    ));
    runtime.block_on(answered_once(&http, &one.url, &exchanges, &turns_done));
    let runs = runs_per_turn(&effects(&local_effects));
    for id in &back_hub_tasks {
        for turn in 1..=3 {
            assert!(
                runs.contains_key(&(id.clone(), turn)),
                "{id} never did turn {turn}"
            );
        }
    }
    let back_hub_by_one = runtime
        .block_on(hub_answers(&setup.url))
        .iter()
        .filter(|(thread, node)| back_threads.contains(thread) && node == "node-1")
        .count();
    let (proc_jobs, far_jobs) = runtime.block_on(async {
        (
            jobs(&setup.url, "proc").await,
            jobs(&setup.url, "far").await,
        )
    });
    let taken_back = back
        .iter()
        .filter(|(agent, id)| {
            let jobs = if *agent == "proc" {
                &proc_jobs
            } else {
                &far_jobs
            };
            jobs.get(id)
                .is_some_and(|(node, attempts)| node == "node-1" && *attempts > 1)
        })
        .count();
    eprintln!(
        "rejoin: node-1 restarted {:.2} s after its second kill and took back {taken_back} of \
         its {} executions (lease {lease_time:?}); it posted {back_hub_by_one} of the answers \
         to the {HUB_BACK} hub exchanges asked of it",
        restarted.as_secs_f64(),
        back.len()
    );
    // Nobody else may take a job over before its lease (renewed every third
    // of it) has run out: a node back sooner releases its jobs and claims
    // them itself at once (another node's pass may still win a few of them
    // in between, which is as correct).
    if restarted < lease_time - lease_time / 3 {
        assert!(
            taken_back > 0,
            "restarted within the lease, took nothing back"
        );
    }
    if !far_recorded {
        eprintln!("(some remote tasks were not yet recorded at the second kill)");
    }

    drop((one, two, three, remote));
    drop(postgres);
}
