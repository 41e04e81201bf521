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

/// Tasks and jobs as a release before the `task_retention` migration wrote
/// them: a canceled task whose job says COMPLETED, and a completed one.
pub async fn seed_jobs_of_an_older_release<S: TaskStore>(store: &S) {
    use a2a_server::store::{JobState, JobWrite, NewJob};
    for (id, state) in [
        ("old-canceled", TaskState::Canceled),
        ("old-completed", TaskState::Completed),
    ] {
        let task = Task::new(id, "a", state);
        let event = StreamResponse::Task(task.clone());
        let job = NewJob {
            task_id: id,
            owner: &owner(),
            node: "node-old",
            request: "{}",
            at: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        };
        let cause = Cause::event(&event).with_job(JobWrite::RecordFinished {
            job: &job,
            state: JobState::Completed,
            reason: None,
        });
        store.create(&owner(), &task, &cause).await.unwrap();
    }
}

/// What the `task_retention` migration makes of them: the canceled task's
/// job is CANCELED, with a reason; the completed one's is left as it was.
pub async fn assert_older_jobs_tell_cancels_apart<S: a2a_server::store::JobStore>(store: &S) {
    use a2a_server::store::{CANCELED_REASON, JobState};
    let canceled = store.get("old-canceled").await.unwrap().unwrap();
    assert_eq!(
        (canceled.state, canceled.reason.as_deref()),
        (JobState::Canceled, Some(CANCELED_REASON)),
        "the job of a task canceled before the migration says CANCELED"
    );
    let completed = store.get("old-completed").await.unwrap().unwrap();
    assert_eq!(
        (completed.state, completed.reason),
        (JobState::Completed, None)
    );
}
