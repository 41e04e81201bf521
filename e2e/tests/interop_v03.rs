//! Interop with A2A 0.3: the Python SDK's last 0.3 release (`a2a-sdk`
//! 0.3.26) as a client of our server's 0.3 bindings (JSON-RPC, HTTP+JSON
//! and gRPC), and as a server our client talks 0.3 to over each. `scripts/test.sh` installs it into the git-ignored
//! `.venv03` and runs these with `--ignored`.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use a2a_client::{CardResolver, ClientBuilder};
use a2a_core::{CancelTaskRequest, GetTaskRequest, StreamResponse, TaskState};
use futures::StreamExt;
use support::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python03() -> PathBuf {
    std::env::var_os("A2A_INTEROP_PYTHON03")
        .map_or_else(|| repo().join(".venv03/bin/python"), PathBuf::from)
}

/// A peer process, killed and reaped on every path.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn python_v03_server(binding: &str) -> (Peer, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let peer = Command::new(python03())
        .arg(repo().join("e2e/interop/python_v03_server.py"))
        .arg(port.to_string())
        .arg(binding)
        .stdout(Stdio::null())
        .spawn()
        .expect("the Python 0.3 peer starts (run scripts/test.sh to install it)");
    let peer = Peer(peer);
    let url = format!("http://127.0.0.1:{port}");
    for _ in 0..200 {
        if CardResolver::new().resolve(&url).await.is_ok() {
            return (peer, url);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the Python 0.3 peer did not come up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK 0.3 peer: run scripts/test.sh"]
async fn python_0_3_client_sends_streams_gets_and_cancels_against_rust_server() {
    python_client_against_rust_server("JSONRPC").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK 0.3 peer: run scripts/test.sh"]
async fn python_0_3_rest_client_sends_streams_gets_and_cancels_against_rust_server() {
    python_client_against_rust_server("HTTP+JSON").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK 0.3 peer: run scripts/test.sh"]
async fn python_0_3_grpc_client_sends_streams_gets_and_cancels_against_rust_server() {
    python_client_against_rust_server("GRPC").await;
}

async fn python_client_against_rust_server(binding: &str) {
    let server = server().await;
    let url = format!("http://{}", server.addr);
    let output = tokio::process::Command::new(python03())
        .arg(repo().join("e2e/interop/python_v03_client.py"))
        .arg(&url)
        .arg(binding)
        .output()
        .await
        .expect("the Python 0.3 peer runs (run scripts/test.sh to install it)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["card_url"], format!("{url}/"), "{report}");
    assert_eq!(report["card_protocol_version"], "0.3.0");
    assert_eq!(
        report["card_transports"],
        serde_json::json!(["JSONRPC", "HTTP+JSON", "GRPC"]),
        "{report}"
    );
    assert_eq!(report["send_state"], "completed", "{report}");
    assert_eq!(report["send_text"][0], "hello from python 0.3");
    assert_eq!(report["get_id_matches"], true);
    assert_eq!(report["get_state"], "completed");
    assert_eq!(report["reply_kind"], "message");
    assert_eq!(report["reply_text"][0], "reply: hi");
    let kinds = report["stream_update_kinds"].as_array().unwrap();
    assert_eq!(
        kinds.iter().filter(|k| *k == "artifact-update").count(),
        3,
        "{report}"
    );
    assert_eq!(report["stream_last_final"], true, "{report}");
    assert_eq!(report["stream_last_state"], "completed");
    assert_eq!(report["cancel_state"], "canceled", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK 0.3 peer: run scripts/test.sh"]
async fn rust_client_sends_streams_gets_and_cancels_against_python_0_3_server() {
    rust_client_against_python_server("JSONRPC").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK 0.3 peer: run scripts/test.sh"]
async fn rust_client_sends_streams_gets_and_cancels_against_python_0_3_rest_server() {
    rust_client_against_python_server("HTTP+JSON").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK 0.3 peer: run scripts/test.sh"]
async fn rust_client_sends_streams_gets_and_cancels_against_python_0_3_grpc_server() {
    rust_client_against_python_server("GRPC").await;
}

async fn rust_client_against_python_server(binding: &str) {
    let (_peer, url) = python_v03_server(binding).await;
    // The builder reads the 0.3 card and picks the 0.3 transport itself.
    let card = CardResolver::new().resolve(&url).await.unwrap();
    let client = a2a_grpc::register(ClientBuilder::new())
        .build(card)
        .unwrap();
    assert_eq!(client.interface().protocol_version, "0.3");
    assert_eq!(client.interface().protocol_binding, binding);

    let task = send_task(&client, request("echo hi there")).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "hi there");
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some("hi there"));

    let got = client
        .get_task(
            GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(got.id, task.id);
    assert_eq!(got.status.state, TaskState::Completed);

    let mut stream = client
        .send_streaming_message(request("stream 3"), None)
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert!(matches!(events[0], StreamResponse::Task(_)), "{events:?}");
    let chunks = events
        .iter()
        .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
        .count();
    assert_eq!(chunks, 3, "{events:?}");
    assert_eq!(
        events.last().and_then(StreamResponse::state),
        Some(TaskState::Completed)
    );

    let waiting = send_task(&client, immediate("wait")).await;
    let canceled = client
        .cancel_task(
            CancelTaskRequest {
                id: waiting.id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);

    let missing = client
        .get_task(
            GetTaskRequest {
                id: "no-such-task".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(
        missing.protocol_kind(),
        Some(a2a_core::ErrorKind::TaskNotFound)
    );
    // The builder's own choice for this card is the same.
    let card = CardResolver::new().resolve(&url).await.unwrap();
    assert_eq!(
        a2a_grpc::register(ClientBuilder::new())
            .choose(&card)
            .unwrap()
            .protocol_version,
        "0.3"
    );
}
