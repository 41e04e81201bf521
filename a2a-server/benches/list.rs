//! ListTasks on the in-memory store with 100,000 tasks of one caller (and as
//! many of another): a first page, a page deep in the list, and a filter
//! few tasks match. A page should cost what it holds, not what is stored.
//!
//! Run with `cargo bench -p agent2agent-server --bench list`.

use std::hint::black_box;

use a2a_core::{ListTasksRequest, Message, StreamResponse, Task, TaskState};
use a2a_server::Caller;
use a2a_server::store::{Cause, InMemoryTaskStore, TaskStore};
use criterion::{Criterion, criterion_group, criterion_main};

const TASKS: i64 = 100_000;

fn caller(user: &str) -> Caller {
    Caller {
        tenant: String::new(),
        user: user.into(),
    }
}

fn filled(runtime: &tokio::runtime::Runtime) -> InMemoryTaskStore {
    let store = InMemoryTaskStore::new();
    let event = StreamResponse::Message(Message::user_text("x"));
    runtime.block_on(async {
        for owner in ["alice", "bob"] {
            for n in 0..TASKS {
                // One task in a thousand failed: the rare filter.
                let state = if n % 1_000 == 0 {
                    TaskState::Failed
                } else {
                    TaskState::Completed
                };
                let mut task = Task::new(format!("{owner}-{n}"), format!("ctx-{}", n % 100), state);
                task.status.timestamp = chrono::DateTime::from_timestamp_millis(1_000 + n);
                store
                    .create(&caller(owner), &task, &Cause::event(&event))
                    .await
                    .expect("create");
            }
        }
    });
    store
}

fn list(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let store = filled(&runtime);
    let alice = caller("alice");
    let first = ListTasksRequest {
        page_size: Some(50),
        ..ListTasksRequest::default()
    };
    // A page 40,000 tasks in.
    let mut deep = first.clone();
    deep.page_token = runtime.block_on(async {
        let mut request = ListTasksRequest {
            page_size: Some(1_000),
            ..ListTasksRequest::default()
        };
        for _ in 0..40 {
            request.page_token = store
                .list(&alice, &request)
                .await
                .expect("list")
                .next_page_token;
        }
        request.page_token
    });
    let rare = ListTasksRequest {
        page_size: Some(50),
        status: TaskState::Failed,
        ..ListTasksRequest::default()
    };
    let context = ListTasksRequest {
        page_size: Some(50),
        context_id: "ctx-7".into(),
        ..ListTasksRequest::default()
    };
    let mut group = c.benchmark_group("list_tasks_100k");
    for (name, request) in [
        ("first_page", &first),
        ("deep_page", &deep),
        ("rare_status", &rare),
        ("context", &context),
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
