//! `seed` and `recovery`: a durable store filled, and a server's start on it timed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use a2a_core::{JsonRpcRequest, Message, Part, Role, Task, TaskState, TaskStatus};
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind};
use a2a_server::store::{Cause, NewJob};
use a2a_server::{Caller, DefaultRequestHandler};
use a2a_store_sql::{DurableStore, StoreLocation};
use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::BodyExt as _;

use crate::agent::{Echo, card};
use crate::load::{connect, post};

/// The id of the `n`th seeded task: the recovery benchmark reads one back.
fn seeded_task_id(n: usize) -> String {
    format!("seed-task-{n:08}")
}

/// A completed task as the echo agent leaves it.
fn completed_task(n: usize) -> Task {
    let (task_id, context_id) = (seeded_task_id(n), format!("seed-context-{n:08}"));
    let user = Message::user_text("hello benchmark")
        .with_message_id(format!("seed-message-{n:08}"))
        .with_task_id(task_id.clone())
        .with_context_id(context_id.clone());
    let reply = Message::new(Role::Agent, vec![Part::text("hello benchmark")])
        .with_task_id(task_id.clone())
        .with_context_id(context_id.clone());
    Task {
        id: task_id,
        context_id,
        status: TaskStatus::new(TaskState::Completed).with_message(reply),
        history: vec![user.into()],
        ..Task::default()
    }
}

/// A job's request as the execution layer records it (its `JobRequest`):
/// the user's message, the context, and who asked.
fn pending_request(n: usize) -> String {
    let message = Message::user_text("hello benchmark").with_message_id(format!("pending-{n:08}"));
    serde_json::json!({
        "message": message,
        "contextId": format!("pending-context-{n:08}"),
        "tenant": "",
        "user": "",
        "authenticated": false,
    })
    .to_string()
}

/// Writes `tasks` completed tasks and `pending` PENDING jobs (recorded, then
/// released, as a stopped server leaves them) through the stores' own calls,
/// many at once, then closes the store.
pub(crate) async fn seed(
    location: &StoreLocation,
    tasks: usize,
    pending: usize,
) -> anyhow::Result<()> {
    use futures::StreamExt as _;
    let store = location
        .open(None)
        .await?
        .context("seed needs a durable store, not memory")?;
    let started = Instant::now();
    let owner = Caller::default();
    let (store_ref, owner_ref) = (&store, &owner);
    let created = futures::stream::iter(0..tasks)
        .map(|n| async move {
            let task = completed_task(n);
            let event = a2a_core::StreamResponse::from(task.clone());
            store_ref
                .tasks()
                .create(owner_ref, &task, &Cause::event(&event))
                .await
        })
        .buffer_unordered(64);
    let mut created = std::pin::pin!(created);
    let mut count = 0usize;
    while let Some(result) = created.next().await {
        result?;
        count += 1;
        if count % 100_000 == 0 {
            eprintln!("seeded {count} tasks in {:?}", started.elapsed());
        }
    }
    let jobs_started = Instant::now();
    let now = chrono::Utc::now();
    for n in 0..pending {
        let (task_id, request) = (format!("pending-task-{n:08}"), pending_request(n));
        store
            .jobs()
            .record(&NewJob {
                task_id: &task_id,
                owner: &owner,
                node: "bench-seed",
                request: &request,
                at: now,
            })
            .await?;
        store.jobs().release(&task_id, now).await?;
    }
    close(&store).await;
    println!(
        "seeded tasks={tasks} in {:?}, pending jobs={pending} in {:?}",
        jobs_started.duration_since(started),
        jobs_started.elapsed()
    );
    Ok(())
}

async fn close(store: &DurableStore) {
    match store {
        DurableStore::Sqlite(store) => store.close().await,
        DurableStore::Postgres(store) => store.close().await,
        _ => {}
    }
}

/// Seeds a store, then starts a server on it as `a2a serve` would and times
/// (a) the first GetTask answered over HTTP and (b) the recovery pass.
pub(crate) async fn recovery(
    location: StoreLocation,
    tasks: usize,
    pending: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(tasks > 0, "recovery needs at least one stored task to read");
    seed(&location, tasks, pending).await?;
    let started = Instant::now();
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)), DEFAULT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let store = location
        .open(None)
        .await?
        .context("recovery needs a durable store")?;
    let handler = std::sync::Arc::new(
        store
            .install(DefaultRequestHandler::builder(Echo, card(addr)))
            .build(),
    );
    let service = a2a_server::A2aService::from_arc(handler.clone());
    let app = a2a_grpc::router(service.clone(), HttpConfig::default());
    let server = tokio::spawn(async move {
        let stop = std::future::pending();
        let config = a2a_server::http::ServeConfig::default();
        a2a_server::http::serve_with(listener, app, service, stop, config).await
    });
    let get = Bytes::from(serde_json::to_vec(&JsonRpcRequest::new(
        1,
        a2a_core::Method::GetTask,
        a2a_core::GetTaskRequest {
            id: seeded_task_id(tasks / 2),
            ..a2a_core::GetTaskRequest::default()
        },
    ))?);
    let mut sender = connect(addr).await?;
    let serving = loop {
        let response = sender.send_request(post(get.clone())).await?;
        let body = response.into_body().collect().await?.to_bytes();
        if body.windows(17).any(|w| w == b"TASK_STATE_COMPLE") {
            break started.elapsed();
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "no task in the answer: {}",
            String::from_utf8_lossy(&body)
        );
        tokio::task::yield_now().await;
    };
    handler.recovered().await;
    let recovered = started.elapsed();
    println!(
        "recovery tasks={tasks} pending={pending}: serving GetTask after {serving:?}, recovery pass done after {recovered:?}"
    );
    server.abort();
    Ok(())
}
