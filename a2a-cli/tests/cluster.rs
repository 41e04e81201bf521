//! `a2a serve --node-id`: two servers on one PostgreSQL database are one
//! agent. Whichever node a task started on, the other reads, lists,
//! continues and cancels it, and both serve the card of the address in front
//! of them (`--public-url`). Each test makes its own database, and skips
//! (with a notice) where no PostgreSQL server answers, except in CI.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use support::{Database, Refusal, Server, arg, gateway_file, get, json, ok, serve, serve_refused};

/// Where clients reach the cluster, as a load balancer would be: a TCP
/// relay to the node the test routes to (the a2a client calls the address
/// the card names, which is this one).
struct Front {
    url: String,
    addr: SocketAddr,
    node: Arc<Mutex<Option<SocketAddr>>>,
    stop: Arc<AtomicBool>,
}

impl Front {
    /// A front that routes nowhere yet.
    fn start() -> Front {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let node = Arc::new(Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let (routes, stopped) = (Arc::clone(&node), Arc::clone(&stop));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let to = *routes.lock().unwrap();
                if let (Ok(client), Some(to)) = (client, to) {
                    std::thread::spawn(move || relay(client, to));
                }
            }
        });
        Front {
            url: format!("http://{addr}"),
            addr,
            node,
            stop,
        }
    }

    /// Sends the connections that come from now on to `node`.
    fn route_to(&self, node: &Server) {
        let addr = node.url.trim_start_matches("http://").parse().unwrap();
        *self.node.lock().unwrap() = Some(addr);
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread up to see it.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Copies bytes both ways between `client` and the node at `to` until each
/// side has said all it has.
fn relay(client: TcpStream, to: SocketAddr) {
    let Ok(node) = TcpStream::connect(to) else {
        return;
    };
    let (Ok(mut from_client), Ok(mut to_node)) = (client.try_clone(), node.try_clone()) else {
        return;
    };
    let forward = std::thread::spawn(move || {
        let _ = io::copy(&mut from_client, &mut to_node);
        let _ = to_node.shutdown(Shutdown::Write);
    });
    let (mut from_node, mut to_client) = (node, client);
    let _ = io::copy(&mut from_node, &mut to_client);
    let _ = to_client.shutdown(Shutdown::Write);
    let _ = forward.join();
}

/// Two nodes, `node-a` and `node-b`, on one fresh database behind one front.
struct Cluster {
    a: Server,
    b: Server,
    front: Front,
    _data: [tempfile::TempDir; 2],
    /// Dropped last, after the nodes that use it.
    _database: Database,
}

/// The cluster, once both nodes serve; `None` (with a notice) where no
/// PostgreSQL server answers.
fn cluster() -> Option<Cluster> {
    let database = Database::create()?;
    let front = Front::start();
    let data = [(); 2].map(|()| tempfile::tempdir().unwrap());
    // One after the other: the first creates the tables.
    let [a, b] = [("node-a", &data[0]), ("node-b", &data[1])].map(|(name, data)| {
        let node = serve(&[
            "--store",
            &database.url,
            "--node-id",
            name,
            "--public-url",
            &front.url,
            "--no-conversation-log",
            "--data-dir",
            arg(data.path()),
        ]);
        let state = format!("State: PostgreSQL, cluster node {name}");
        assert!(node.banner.contains(&state), "{}", node.banner);
        node
    });
    Some(Cluster {
        a,
        b,
        front,
        _data: data,
        _database: database,
    })
}

impl Cluster {
    /// A task started on node A that waits for input (the echo agent asks
    /// when told `?`): its id.
    fn waiting_on_a(&self) -> String {
        self.front.route_to(&self.a);
        let asked = json(&["send", &self.a.url, "?"]);
        task_id(&asked, "TASK_STATE_INPUT_REQUIRED")
    }
}

/// The id of the task of an `a2a send --json` reply in `state`
/// (`TASK_STATE_…`).
fn task_id(reply: &Value, state: &str) -> String {
    assert_eq!(reply["task"]["status"]["state"], state, "{reply}");
    reply["task"]["id"].as_str().unwrap().to_owned()
}

/// The texts of the messages of `task`'s history, oldest first.
fn history(task: &Value) -> Vec<&str> {
    let messages = task["history"].as_array().map(Vec::as_slice);
    messages
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect()
}

#[test]
fn both_nodes_serve_one_card_naming_the_public_url() {
    let Some(cluster) = cluster() else { return };
    let card = json(&["card", &cluster.a.url]);
    assert_eq!(json(&["card", &cluster.b.url]), card);
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    // Each binding at 1.0 and at 0.3.
    assert_eq!(interfaces.len(), 6, "{card}");
    let public = cluster.front.url.trim_start_matches("http://");
    for interface in interfaces {
        let at = interface["url"].as_str().unwrap();
        let authority = at.trim_start_matches("http://").trim_end_matches('/');
        assert_eq!(authority, public, "{interface}");
    }
    // As served over HTTP, to the byte.
    let path = "/.well-known/agent-card.json";
    let (on_a, on_b) = (get(&cluster.a.url, path), get(&cluster.b.url, path));
    assert_eq!((on_a.status, on_b.status), (200, 200));
    assert_eq!(on_a.body, on_b.body);
}

#[test]
fn a_task_sent_to_one_node_is_read_and_listed_on_the_other() {
    let Some(cluster) = cluster() else { return };
    cluster.front.route_to(&cluster.a);
    let sent = json(&["send", &cluster.a.url, "hello from node a"]);
    let id = task_id(&sent, "TASK_STATE_COMPLETED");

    cluster.front.route_to(&cluster.b);
    let got = json(&["get", &cluster.b.url, &id]);
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(history(&got).first(), Some(&"hello from node a"), "{got}");
    let echoed: String = got["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(echoed, "hello from node a", "{got}");
    let shown = ok(&["get", &cluster.b.url, &id]);
    assert!(shown.contains("COMPLETED"), "{shown}");

    let listed = json(&["list", &cluster.b.url]);
    assert_eq!(listed["totalSize"], 1, "{listed}");
    assert_eq!(listed["tasks"][0]["id"], id.as_str());
}

#[test]
fn a_task_waiting_for_input_on_one_node_is_continued_on_the_other() {
    let Some(cluster) = cluster() else { return };
    let id = cluster.waiting_on_a();
    cluster.front.route_to(&cluster.b);
    let waiting = json(&["list", &cluster.b.url, "--status", "input-required"]);
    assert_eq!(waiting["totalSize"], 1, "{waiting}");
    let answered = json(&["send", &cluster.b.url, "echo this", "--task", &id]);
    assert_eq!(task_id(&answered, "TASK_STATE_COMPLETED"), id);

    // Node A sees what node B did.
    cluster.front.route_to(&cluster.a);
    let got = json(&["get", &cluster.a.url, &id]);
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    let said = history(&got);
    assert!(said.contains(&"?") && said.contains(&"echo this"), "{got}");
}

#[test]
fn a_task_waiting_for_input_on_one_node_is_canceled_on_the_other() {
    let Some(cluster) = cluster() else { return };
    let id = cluster.waiting_on_a();
    cluster.front.route_to(&cluster.b);
    let canceled = ok(&["cancel", &cluster.b.url, &id]);
    assert!(canceled.contains("CANCELED"), "{canceled}");

    cluster.front.route_to(&cluster.a);
    let got = json(&["get", &cluster.a.url, &id]);
    assert_eq!(got["status"]["state"], "TASK_STATE_CANCELED", "{got}");
}

/// A PostgreSQL URL no server answers at.
const NOWHERE: &str = "postgres://postgres@127.0.0.1:1/none";

#[test]
fn a_node_id_needs_a_postgresql_store() {
    let dir = tempfile::tempdir().unwrap();
    for store in ["sqlite", "memory"] {
        let stderr = serve_refused(&[
            "--store",
            store,
            "--data-dir",
            arg(dir.path()),
            "--node-id",
            "node-a",
        ])
        .stderr;
        assert!(stderr.starts_with("error: "), "{store}: {stderr}");
        assert!(stderr.contains("PostgreSQL"), "{store}: {stderr}");
    }
}

#[test]
fn a_lease_timeout_out_of_range_is_refused_before_the_store_is_opened() {
    for secs in ["0", "0.05", "3601", "NaN"] {
        let Refusal { code, stderr } = serve_refused(&[
            "--store",
            NOWHERE,
            "--node-id",
            "node-a",
            "--lease-timeout",
            secs,
        ]);
        assert_eq!(code, Some(1), "{secs}: {stderr}");
        assert!(
            stderr.contains("--lease-timeout") && stderr.contains("between 0.1 and 3600"),
            "{secs}: {stderr}"
        );
    }
}

#[test]
fn a_lease_timeout_without_a_node_id_is_refused_by_the_parser() {
    let Refusal { code, stderr } = serve_refused(&["--store", "memory", "--lease-timeout", "2"]);
    // Clap's usage error.
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--node-id"), "{stderr}");
}

#[test]
fn a_node_id_with_a_gateway_file_needs_a_postgresql_store() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(
        dir.path(),
        "[agents.a]\nkind = \"rust\"\nexecutor = \"echo\"\n",
    );
    let Refusal { code, stderr } = serve_refused(&[
        "--store",
        "sqlite",
        "--data-dir",
        arg(dir.path()),
        "--node-id",
        "node-a",
        "--config",
        arg(&file),
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("PostgreSQL"), "{stderr}");
}
