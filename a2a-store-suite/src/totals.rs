//! ListTasks' `totalSize` through every kind of task write.
//!
//! A store may keep counts instead of counting rows; these cases compare
//! `totalSize` with a model of the tasks after creates, state changes,
//! refused writes and deletes, for every filter combination (owner alone, with
//! status, with context, with both, and each with a timestamp, which counts
//! cannot answer), so a count that drifts from the tasks fails here.

use a2a_core::{ListTasksRequest, TaskState};

use super::{at_ms, caller_in, fresh_tenant, status_event, task_at};
use a2a_server::Caller;
use a2a_server::store::{
    Cause, JobState, JobStore, JobWrite, NewJob, StoreError, TaskStore, prune_jobs, prune_tasks,
};

/// A task as the model knows it.
struct Modelled {
    owner: usize,
    id: String,
    context: &'static str,
    state: TaskState,
    ms: i64,
    version: u64,
}

const CONTEXTS: [&str; 3] = ["c1", "c2", "c3"];

/// Checks `totalSize` (and `count_for_user`) against the model for every owner and filter.
async fn assert_totals<S: TaskStore>(
    store: &S,
    owners: &[Caller],
    model: &[Modelled],
    after: &str,
) {
    let contexts = [None, Some("c1"), Some("c2"), Some("c3"), Some("nowhere")];
    let states = [
        None,
        Some(TaskState::Submitted),
        Some(TaskState::Working),
        Some(TaskState::Completed),
        Some(TaskState::Failed),
        Some(TaskState::Canceled),
    ];
    for (owner, caller) in owners.iter().enumerate() {
        for context in contexts {
            for state in states {
                for from in [None, Some(1_006)] {
                    let want = model
                        .iter()
                        .filter(|t| {
                            t.owner == owner
                                && context.is_none_or(|c| c == t.context)
                                && state.is_none_or(|s| s == t.state)
                                && from.is_none_or(|f| t.ms >= f)
                        })
                        .count();
                    let request = ListTasksRequest {
                        context_id: context.unwrap_or_default().into(),
                        status: state.unwrap_or(TaskState::Unspecified),
                        status_timestamp_after: from.map(at_ms),
                        page_size: Some(1),
                        ..Default::default()
                    };
                    let page = store.list(caller, &request).await.unwrap();
                    assert_eq!(
                        usize::try_from(page.total_size).unwrap(),
                        want,
                        "after {after}: totalSize of {}/{} with context {context:?}, \
                         status {state:?}, from {from:?}",
                        caller.tenant,
                        caller.user,
                    );
                }
            }
        }
    }
    // Owners 0 and 2 are one user in two tenants.
    let user_total = u64::try_from(model.iter().filter(|t| t.owner != 1).count()).unwrap();
    if let Some(counted) = store.count_for_user(&owners[0].user).await.unwrap() {
        assert_eq!(
            counted, user_total,
            "after {after}: count_for_user counts the user's tasks in every tenant"
        );
    }
}

/// Writes `task`'s new state (and status time) over its stored version.
async fn move_task<S: TaskStore>(
    store: &S,
    owners: &[Caller],
    task: &mut Modelled,
    state: TaskState,
    ms: i64,
) {
    let written = task_at(&task.id, task.context, Some(ms), state);
    task.version = store
        .update(
            &owners[task.owner],
            &written,
            task.version,
            &Cause::event(&status_event(&written)),
        )
        .await
        .unwrap();
    task.state = state;
    task.ms = ms;
}

/// totalSize follows creates, state changes, refused writes and deletes.
pub(super) async fn total_size_follows_writes<S: TaskStore>(store: &S) {
    let tenant = fresh_tenant();
    let user = format!("totals-{}", a2a_core::new_id());
    // One user in two tenants, and another user beside them: an owner is both.
    let owners = [
        caller_in(&tenant, &user),
        caller_in(&tenant, &format!("{user}-bob")),
        caller_in(&fresh_tenant(), &user),
    ];
    let prefix = a2a_core::new_id();
    let mut model = Vec::new();
    for i in 0..15_usize {
        let states = [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed,
        ];
        let task = Modelled {
            owner: i % 3,
            id: format!("{prefix}-{i:02}"),
            context: CONTEXTS[(i / 3) % 3],
            state: states[(i / 2) % 3],
            ms: 1_000 + i64::try_from(i).unwrap(),
            version: 1,
        };
        let stored = task_at(&task.id, task.context, Some(task.ms), task.state);
        store
            .create(
                &owners[task.owner],
                &stored,
                &Cause::event(&status_event(&stored)),
            )
            .await
            .unwrap();
        model.push(task);
    }
    assert_totals(store, &owners, &model, "creates").await;

    // State changes, some of them twice, and updates that keep the state.
    for (index, state) in [
        (0, TaskState::Working),
        (0, TaskState::Completed),
        (3, TaskState::Failed),
        (4, TaskState::Working),
        (7, TaskState::Working),
        (9, TaskState::Canceled),
        (12, TaskState::Completed),
    ] {
        let ms = model[index].ms + 10;
        move_task(store, &owners, &mut model[index], state, ms).await;
    }
    for index in [1, 5] {
        let (state, ms) = (model[index].state, model[index].ms);
        move_task(store, &owners, &mut model[index], state, ms).await;
    }
    assert_totals(store, &owners, &model, "state changes").await;

    // Refused writes change no count: a stale version, another owner's
    // update, create and delete of a task that is not theirs.
    let target = &model[2];
    let moved = task_at(&target.id, target.context, Some(5_000), TaskState::Failed);
    let cause = status_event(&moved);
    let stale = store
        .update(
            &owners[target.owner],
            &moved,
            target.version + 5,
            &Cause::event(&cause),
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    let stranger = &owners[(target.owner + 1) % 3];
    let foreign = store
        .update(stranger, &moved, target.version, &Cause::event(&cause))
        .await;
    assert!(
        matches!(foreign, Err(StoreError::NotFound(_))),
        "{foreign:?}"
    );
    let again = store.create(stranger, &moved, &Cause::event(&cause)).await;
    assert!(
        matches!(again, Err(StoreError::AlreadyExists(_))),
        "{again:?}"
    );
    store.delete(stranger, &target.id).await.unwrap();
    store
        .delete(&owners[0], &format!("{prefix}-missing"))
        .await
        .unwrap();
    assert_totals(store, &owners, &model, "refused writes").await;

    // Deletes (retention deletes the same way), down to a context of one
    // owner left with no task at all.
    for index in [14, 11, 8, 5, 0] {
        let task = model.remove(index);
        store.delete(&owners[task.owner], &task.id).await.unwrap();
    }
    assert!(
        !model.iter().any(|t| t.owner == 2 && t.context == "c2"),
        "the deletes empty one owner's context"
    );
    assert_totals(store, &owners, &model, "deletes").await;

    // A deleted id used again, in another context and state.
    let task = Modelled {
        owner: 2,
        id: format!("{prefix}-14"),
        context: "c1",
        state: TaskState::Failed,
        ms: 1_100,
        version: 1,
    };
    let stored = task_at(&task.id, task.context, Some(task.ms), task.state);
    store
        .create(
            &owners[task.owner],
            &stored,
            &Cause::event(&status_event(&stored)),
        )
        .await
        .unwrap();
    model.push(task);
    assert_totals(store, &owners, &model, "a deleted id created again").await;
}

/// totalSize follows retention: job records going change nothing, terminal
/// tasks going leave the counts. Its jobs finished long before any other of
/// the job suite's, so the job cutoff takes only them; the task cutoff takes
/// its two oldest completed tasks (and whatever older terminal tasks other
/// cases left, which the model does not count).
pub(super) async fn total_size_follows_retention<S: TaskStore + JobStore>(store: &S) {
    let tenant = fresh_tenant();
    let user = format!("retained-{}", a2a_core::new_id());
    let owners = [
        caller_in(&tenant, &user),
        caller_in(&tenant, &format!("{user}-bob")),
        caller_in(&fresh_tenant(), &user),
    ];
    let prefix = a2a_core::new_id();
    let mut model = Vec::new();
    // Jobs finished at 1 s, 2 s and 3 s after the epoch, and a task without one.
    for (i, finished_s) in [Some(1), Some(2), Some(3), None].into_iter().enumerate() {
        let task = Modelled {
            owner: i % 2 * 2,
            id: format!("{prefix}-{i}"),
            context: CONTEXTS[i % 2],
            state: if finished_s.is_some() {
                TaskState::Completed
            } else {
                TaskState::Working
            },
            ms: 1_000 + i64::try_from(i).unwrap(),
            version: 1,
        };
        let stored = task_at(&task.id, task.context, Some(task.ms), task.state);
        let event = status_event(&stored);
        let job = finished_s.map(|s| NewJob {
            task_id: &task.id,
            owner: &owners[task.owner],
            node: "node-r",
            request: "{}",
            at: at_ms(s * 1_000),
        });
        let cause = match &job {
            Some(job) => Cause::event(&event).with_job(JobWrite::RecordFinished {
                job,
                state: JobState::Completed,
                reason: None,
            }),
            None => Cause::event(&event),
        };
        store
            .create(&owners[task.owner], &stored, &cause)
            .await
            .unwrap();
        model.push(task);
    }
    assert_totals(store, &owners, &model, "tasks with finished jobs").await;
    let pruned = prune_jobs(store, at_ms(2_500)).await.unwrap();
    assert_eq!(pruned, 2, "the jobs finished before the cutoff go");
    assert_totals(store, &owners, &model, "job records gone, tasks kept").await;
    prune_tasks(store, None, at_ms(1_002)).await.unwrap();
    model.drain(..2);
    assert_totals(store, &owners, &model, "retention").await;
}
