//! ListTasks on a SQLite store with 50,000 tasks of one caller (and 5,000 of
//! another): the first page with no filter, with a status, with a context,
//! and with a timestamp (the one filter `totalSize` still counts rows for).
//! A first page should cost the page, not the caller's tasks.
//!
//! Run with `cargo bench -p agent2agent-store-sql --bench list`.

use std::hint::black_box;

use a2a_core::{ListTasksRequest, Message, StreamResponse, Task, TaskState};
use a2a_server::Caller;
use a2a_server::store::{Cause, TaskStore};
use a2a_store_sql::SqliteStore;
use criterion::{Criterion, criterion_group, criterion_main};

const TASKS: i64 = 50_000;

fn caller(user: &str) -> Caller {
    Caller {
        tenant: String::new(),
        user: user.into(),
    }
}

async fn fill(store: &SqliteStore, owner: &str, tasks: i64) {
    let event = StreamResponse::Message(Message::user_text("x"));
    let owner = caller(owner);
    // Many writes at once, so the writer commits them in groups.
    for chunk in 0..(tasks + 499) / 500 {
        let writes = (chunk * 500..((chunk + 1) * 500).min(tasks)).map(|n| {
            // One task in a thousand failed: the rare filter.
            let state = if n % 1_000 == 0 {
                TaskState::Failed
            } else {
                TaskState::Completed
            };
            let mut task = Task::new(
                format!("{}-{n}", owner.user),
                format!("ctx-{}", n % 100),
                state,
            );
            task.status.timestamp = chrono::DateTime::from_timestamp_millis(1_000 + n);
            let (owner, event) = (&owner, &event);
            async move {
                store
                    .create(owner, &task, &Cause::event(event))
                    .await
                    .expect("create");
            }
        });
        futures::future::join_all(writes).await;
    }
}

fn list(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = runtime.block_on(async {
        let store = SqliteStore::open(dir.path()).await.expect("open");
        fill(&store, "alice", TASKS).await;
        fill(&store, "bob", TASKS / 10).await;
        store
    });
    let alice = caller("alice");
    let page = |request: ListTasksRequest| ListTasksRequest {
        page_size: Some(50),
        ..request
    };
    let first = page(ListTasksRequest::default());
    let status = page(ListTasksRequest {
        status: TaskState::Completed,
        ..Default::default()
    });
    let context = page(ListTasksRequest {
        context_id: "ctx-7".into(),
        ..Default::default()
    });
    let recent = page(ListTasksRequest {
        status_timestamp_after: chrono::DateTime::from_timestamp_millis(1_000),
        ..Default::default()
    });
    let mut group = c.benchmark_group("sqlite_list_tasks_50k");
    for (name, request) in [
        ("first_page", &first),
        ("status", &status),
        ("context", &context),
        ("since_timestamp", &recent),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                runtime
                    .block_on(store.list(&alice, black_box(request)))
                    .expect("list")
            });
        });
    }
    group.finish();
}

criterion_group!(benches, list);
criterion_main!(benches);
