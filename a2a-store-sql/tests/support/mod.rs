//! What the SQLite and PostgreSQL tests share: tasks stored before the
//! `task_counts` migration, and the totals that migration must give them.
#![allow(dead_code, unreachable_pub)]

use a2a_core::{ListTasksRequest, StreamResponse, Task, TaskState};
use a2a_server::Caller;
use a2a_server::store::{Cause, TaskStore};

/// The owner of the seeded tasks.
pub fn owner() -> Caller {
    Caller {
        tenant: "counted".into(),
        user: "carol".into(),
    }
}

/// The seeded tasks: id, context, state.
const SEEDED: [(&str, &str, TaskState); 5] = [
    ("seed-1", "a", TaskState::Working),
    ("seed-2", "a", TaskState::Working),
    ("seed-3", "a", TaskState::Completed),
    ("seed-4", "b", TaskState::Completed),
    ("seed-5", "b", TaskState::Completed),
];

/// Stores the seeded tasks `from..to`.
pub async fn seed<S: TaskStore>(store: &S, range: std::ops::Range<usize>) {
    for (id, context, state) in &SEEDED[range] {
        let task = Task::new(*id, *context, *state);
        let event = StreamResponse::Task(task.clone());
        store
            .create(&owner(), &task, &Cause::event(&event))
            .await
            .unwrap();
    }
}

/// Checks `totalSize` for every filter the counts answer, over all seeded tasks.
pub async fn assert_seeded_totals<S: TaskStore>(store: &S) {
    for (context, state, want) in [
        ("", TaskState::Unspecified, 5),
        ("", TaskState::Working, 2),
        ("", TaskState::Completed, 3),
        ("a", TaskState::Unspecified, 3),
        ("b", TaskState::Unspecified, 2),
        ("a", TaskState::Completed, 1),
        ("b", TaskState::Working, 0),
    ] {
        let request = ListTasksRequest {
            context_id: context.into(),
            status: state,
            page_size: Some(1),
            ..Default::default()
        };
        let page = store.list(&owner(), &request).await.unwrap();
        assert_eq!(
            page.total_size, want,
            "totalSize with context {context:?} and status {state}"
        );
    }
}
