//! Helpers shared by the whole-system tests.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use a2a_client::{Client, ClientBuilder, ClientError, EventStream};
use a2a_core::{
    AgentCard, AgentSkill, ErrorKind, GetTaskRequest, Message, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState, binding,
};
use a2a_server::http::HttpConfig;
use e2e::{RunningSut, ScriptedAgent, loopback_policy};
use futures::StreamExt;

pub mod durable;
mod served;
#[cfg(feature = "otel")]
pub mod telemetry;
// Not every test file serves with its own connection settings.
#[allow(unused_imports)]
pub use self::served::{Served, serve};

/// The bindings every operation test runs on.
pub const BINDINGS: [&str; 3] = [binding::JSONRPC, binding::HTTP_JSON, binding::GRPC];

pub fn card(addr: SocketAddr) -> AgentCard {
    let mut card = AgentCard::new("scripted", "scripted test agent")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_skill(AgentSkill::new("s", "scripted", "runs commands").with_tags(["test"]))
        .with_streaming(true)
        .with_push_notifications(true)
        .with_extended_agent_card(true);
    card.default_input_modes = vec!["text/plain".into(), "application/json".into()];
    card
}

/// A scripted-agent server with loopback webhooks allowed.
pub async fn server() -> RunningSut {
    e2e::start_server(
        ScriptedAgent,
        card,
        |b| {
            b.push_address_policy(loopback_policy())
                .extended_card(AgentCard::new("extended", "more"))
        },
        HttpConfig::default(),
    )
    .await
    .expect("server starts")
}

/// A client for `server` on `binding`.
pub fn client(server: &RunningSut, binding: &str) -> Client {
    let card = card(server.addr);
    let client = a2a_grpc::register(ClientBuilder::new())
        .prefer([binding])
        .build(card)
        .expect("usable interface");
    assert_eq!(client.interface().protocol_binding, binding);
    client
}

pub fn request(text: &str) -> SendMessageRequest {
    SendMessageRequest::new(Message::user_text(text))
}

pub fn immediate(text: &str) -> SendMessageRequest {
    let mut request = request(text);
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    request
}

/// CancelTask of task `id`, nothing else set.
pub fn cancel_request(id: &str) -> a2a_core::CancelTaskRequest {
    a2a_core::CancelTaskRequest {
        id: id.into(),
        ..Default::default()
    }
}

pub async fn send_task(client: &Client, request: SendMessageRequest) -> Task {
    match client
        .send_message(request, None)
        .await
        .expect("send succeeds")
    {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got message {m:?}"),
    }
}

pub fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

pub fn protocol_kind<T>(result: Result<T, ClientError>) -> ErrorKind {
    let Err(err) = result else {
        panic!("call should fail")
    };
    err.protocol_kind()
        .unwrap_or_else(|| panic!("expected a protocol error, got {err:?}"))
}

/// Collects a stream to its end (bounded by a generous timeout so a hang fails the test).
pub async fn collect(stream: EventStream) -> Vec<StreamResponse> {
    tokio::time::timeout(
        Duration::from_secs(20),
        stream.map(|e| e.expect("stream event")).collect(),
    )
    .await
    .expect("stream should end")
}

/// Waits for the task to reach `state`, following its events (bounded by a
/// generous timeout so a hang fails the test).
pub async fn wait_for_state(client: &Client, id: &str, state: TaskState) -> Task {
    let get = || async {
        let request = GetTaskRequest {
            id: id.into(),
            ..Default::default()
        };
        client.get_task(request, None).await.expect("get task")
    };
    let wait = async {
        loop {
            let task = get().await;
            if task.status.state == state {
                return task;
            }
            assert!(
                !task.status.state.is_terminal(),
                "task {id} ended {} instead of reaching {state}",
                task.status.state
            );
            let request = a2a_core::SubscribeToTaskRequest {
                id: id.into(),
                ..Default::default()
            };
            // Subscribing fails only if the task ended in between; then re-read.
            if let Ok(mut events) = client.subscribe_to_task(request, None).await {
                while let Some(Ok(event)) = events.next().await {
                    if event.state() == Some(state) {
                        break;
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("task {id} never reached {state}"))
}

/// Runs an async test body once per binding (JSON-RPC, HTTP+JSON, gRPC).
#[macro_export]
macro_rules! per_binding {
    ($($name:ident),* $(,)?) => {
        mod jsonrpc {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(a2a_core::binding::JSONRPC).await })*
        }
        mod http_json {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(a2a_core::binding::HTTP_JSON).await })*
        }
        mod grpc {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(a2a_core::binding::GRPC).await })*
        }
    };
}

/// The PostgreSQL server the tests use (`A2A_TEST_POSTGRES_URL`, default the
/// local one).
pub fn postgres_url() -> String {
    std::env::var("A2A_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A fresh database for one test (`<name>_<random>`), as a URL; `None` (with a
/// notice) when no server is reachable, except in CI (`CI=true`), where that
/// fails the test.
pub async fn postgres_database(name: &str) -> Option<String> {
    use sqlx::Connection as _;
    let base = postgres_url();
    let mut admin = match sqlx::PgConnection::connect(&base).await {
        Ok(admin) => admin,
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("PostgreSQL at {base} is unreachable in CI: {err}")
        }
        Err(err) => {
            eprintln!("NOTICE: skipping a PostgreSQL test: {base} is unreachable ({err})");
            return None;
        }
    };
    let database = format!("{name}_{}", a2a_core::new_id().replace('-', ""));
    sqlx::query(&format!("CREATE DATABASE {database}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let (server, _) = base.rsplit_once('/').unwrap();
    Some(format!("{server}/{database}"))
}

/// Drops a database made by [`postgres_database`] (its connections first).
pub async fn drop_postgres_database(url: &str) {
    use sqlx::Connection as _;
    let (_, database) = url.rsplit_once('/').unwrap();
    let mut admin = sqlx::PgConnection::connect(&postgres_url()).await.unwrap();
    sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .unwrap();
}
