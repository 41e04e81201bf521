//! Interop with the official SDKs: Python (`a2a-sdk` 1.3.0) in both
//! directions over JSON-RPC, HTTP+JSON and gRPC, and the JavaScript client
//! (`@a2a-js/sdk` 1.3.0) against our server over JSON-RPC and HTTP+JSON.
//! `scripts/test.sh` installs the peers (`.venv`, `e2e/interop/node_modules`)
//! and runs these with `--ignored`.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use a2a_client::ClientBuilder;
use a2a_core::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, Message, SendMessageRequest, StreamResponse, SubscribeToTaskRequest,
    TaskPushNotificationConfig, TaskState,
};
use support::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    std::env::var_os("A2A_INTEROP_PYTHON")
        .map_or_else(|| repo().join(".venv/bin/python"), PathBuf::from)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn python_server() -> (Peer, String) {
    let (http, grpc) = (free_port(), free_port());
    let peer = Command::new(python())
        .arg(repo().join("e2e/interop/python_server.py"))
        .args([http.to_string(), grpc.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .expect("the Python peer starts (run scripts/test.sh to install it)");
    // Owned by the guard from here on, so it is killed and reaped on every path.
    let peer = Peer(peer);
    let url = format!("http://127.0.0.1:{http}");
    for _ in 0..200 {
        if a2a_client::CardResolver::new().resolve(&url).await.is_ok() {
            return (peer, url);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the Python peer did not come up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK peer: run scripts/test.sh"]
async fn rust_client_against_python_server() {
    let (_peer, url) = python_server().await;
    let card = a2a_client::CardResolver::new().resolve(&url).await.unwrap();
    for binding in BINDINGS {
        let client = a2a_grpc::register(ClientBuilder::new())
            .prefer([binding])
            .build(card.clone())
            .unwrap();
        assert_eq!(client.interface().protocol_binding, binding);

        let task = send_task(&client, request("echo hi there")).await;
        assert_eq!(task.status.state, TaskState::Completed, "{binding}");
        assert_eq!(status_text(&task), "hi there", "{binding}");
        assert_eq!(
            task.artifacts[0].parts[0].as_text(),
            Some("hi there"),
            "{binding}"
        );

        let events = collect(
            client
                .send_streaming_message(request("stream 3"), None)
                .await
                .unwrap(),
        )
        .await;
        assert!(
            matches!(events[0], StreamResponse::Task(_)),
            "{binding}: first event is the task"
        );
        let chunks = events
            .iter()
            .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
            .count();
        assert_eq!(chunks, 3, "{binding}");
        assert_eq!(
            events.last().and_then(StreamResponse::state),
            Some(TaskState::Completed),
            "{binding}"
        );

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
        assert_eq!(
            (got.id.as_str(), got.status.state),
            (task.id.as_str(), TaskState::Completed),
            "{binding}"
        );
        let listed = client
            .list_tasks(ListTasksRequest::default(), None)
            .await
            .unwrap();
        assert!(listed.tasks.iter().any(|t| t.id == task.id), "{binding}");

        // Subscribe to a waiting task, then cancel it: the stream sees the cancellation.
        let waiting = send_task(&client, request("input")).await;
        assert_eq!(waiting.status.state, TaskState::InputRequired, "{binding}");
        let subscription = client
            .subscribe_to_task(
                SubscribeToTaskRequest {
                    id: waiting.id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        let running = send_task(&client, immediate("wait")).await;
        let canceled = client
            .cancel_task(
                CancelTaskRequest {
                    id: running.id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled, "{binding}");
        let follow_up = Message::user_text("echo done").with_task_id(waiting.id.clone());
        let done = send_task(&client, SendMessageRequest::new(follow_up)).await;
        assert_eq!(done.status.state, TaskState::Completed, "{binding}");
        let seen = collect(subscription).await;
        assert!(
            matches!(&seen[0], StreamResponse::Task(t) if t.id == waiting.id),
            "{binding}"
        );
        assert_eq!(
            seen.last().and_then(StreamResponse::state),
            Some(TaskState::Completed),
            "{binding}"
        );

        let created = client
            .create_task_push_notification_config(
                TaskPushNotificationConfig::new(task.id.clone(), "https://hooks.example.com/a2a"),
                None,
            )
            .await
            .unwrap();
        let get = GetTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: created.id.clone(),
            ..Default::default()
        };
        assert_eq!(
            client
                .get_task_push_notification_config(get, None)
                .await
                .unwrap()
                .url,
            created.url,
            "{binding}"
        );
        let list = ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        };
        assert_eq!(
            client
                .list_task_push_notification_configs(list, None)
                .await
                .unwrap()
                .configs
                .len(),
            1,
            "{binding}"
        );
        let delete = DeleteTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: created.id,
            ..Default::default()
        };
        client
            .delete_task_push_notification_config(delete, None)
            .await
            .unwrap();

        let missing = client
            .get_task(
                GetTaskRequest {
                    id: "no-such-task".into(),
                    ..Default::default()
                },
                None,
            )
            .await;
        assert_eq!(protocol_kind(missing), ErrorKind::TaskNotFound, "{binding}");
    }
}

/// Checks what a foreign client reported from its send / stream / get / cancel
/// round against our scripted agent. `greeting` is what it sent after `echo `,
/// `artifact_kind` its name for artifact-update events.
fn check_report(report: &serde_json::Value, binding: &str, greeting: &str, artifact_kind: &str) {
    assert_eq!(
        report["send"]["state"], "TASK_STATE_COMPLETED",
        "{binding}: {report}"
    );
    assert_eq!(report["send"]["text"], greeting, "{binding}");
    assert_eq!(
        report["stream"]["final"], "TASK_STATE_COMPLETED",
        "{binding}"
    );
    let kinds: Vec<&str> = report["stream"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{binding}: {kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == artifact_kind).count(),
        3,
        "{binding}: {kinds:?}"
    );
    assert_eq!(report["get"]["state"], "TASK_STATE_COMPLETED", "{binding}");
    assert_eq!(
        report["get"]["history"][0],
        format!("echo {greeting}"),
        "{binding}"
    );
    assert_eq!(
        report["cancel"]["after"], "TASK_STATE_CANCELED",
        "{binding}"
    );
    assert!(
        report["missing"].as_str().unwrap().contains("TaskNotFound"),
        "{binding}: {report}"
    );
}

/// Runs a foreign client script against `url` and returns its JSON report.
async fn run_client(program: &str, script: &str, url: &str, binding: &str) -> serde_json::Value {
    let output = tokio::process::Command::new(program)
        .arg(repo().join(script))
        .args([url, binding])
        .output()
        .await
        .expect("the peer runs (run scripts/test.sh to install it)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{binding}: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Python SDK peer: run scripts/test.sh"]
async fn python_client_against_rust_server() {
    let server = server().await;
    let url = format!("http://{}", server.addr);
    let python = python();
    for binding in BINDINGS {
        let report = run_client(
            python.to_str().unwrap(),
            "e2e/interop/python_client.py",
            &url,
            binding,
        )
        .await;
        check_report(&report, binding, "hello from python", "artifact_update");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the JavaScript SDK peer: run scripts/test.sh"]
async fn javascript_client_against_rust_server() {
    let server = server().await;
    let url = format!("http://{}", server.addr);
    for binding in [a2a_core::binding::JSONRPC, a2a_core::binding::HTTP_JSON] {
        let report = run_client("node", "e2e/interop/js_client.mjs", &url, binding).await;
        check_report(&report, binding, "hello from js", "artifactUpdate");
    }
}

/// Runs the Python SDK's card verifier on `card` with the keys of `jwks`.
fn python_verifies(card: &a2a_core::AgentCard, jwks: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let (card_path, jwks_path) = (dir.path().join("card.json"), dir.path().join("jwks.json"));
    std::fs::write(&card_path, serde_json::to_vec(card).unwrap()).unwrap();
    std::fs::write(&jwks_path, jwks).unwrap();
    let output = std::process::Command::new(python())
        .arg(repo().join("e2e/interop/python_verify_card.py"))
        .arg(&card_path)
        .arg(&jwks_path)
        .output()
        .expect("the Python peer runs (run scripts/test.sh to install it)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
#[ignore = "needs the Python SDK peer: run scripts/test.sh"]
fn the_python_sdk_verifies_a_card_signed_here() {
    use a2a_signing::testing::{ed25519_pair, es256_pair};
    use a2a_signing::{CardSigner, SigningAlgorithm};
    for (algorithm, (pem, jwks)) in [
        (SigningAlgorithm::Es256, es256_pair("rust-es")),
        (SigningAlgorithm::EdDsa, ed25519_pair("rust-ed")),
    ] {
        let kid = if algorithm == SigningAlgorithm::Es256 {
            "rust-es"
        } else {
            "rust-ed"
        };
        let signer = CardSigner::from_pem(&pem, algorithm, kid).unwrap();
        let mut card = a2a_core::AgentCard::new("Signé 😀", "A card signed in Rust")
            .with_interface("http://127.0.0.1:8080/", a2a_core::binding::JSONRPC)
            .with_streaming(true)
            .with_push_notifications(false);
        card.skills.push(a2a_core::AgentSkill {
            id: "echo".into(),
            name: "Echo".into(),
            description: "Repeats <what> you say".into(),
            tags: vec!["echo".into()],
            ..Default::default()
        });
        signer.sign(&mut card).unwrap();
        let report = python_verifies(&card, &jwks);
        assert_eq!(report["verified"], true, "{}: {report}", algorithm.name());
        card.description = "tampered".into();
        let report = python_verifies(&card, &jwks);
        assert_eq!(report["verified"], false, "{}: {report}", algorithm.name());
    }
}
