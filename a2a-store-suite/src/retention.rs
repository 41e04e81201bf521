//! Jobs keep their truth: a canceled job says so, with its reason; and
//! retention keeps jobs and tasks apart, a finished job's record going after
//! the job retention while its task stays until the task retention.
//!
//! Time is given, never read: each case names the instants of its writes
//! and of its retention pass (the "store clock" of these cases), so "day 8"
//! costs no waiting.

use a2a_core::{TaskPushNotificationConfig, TaskState};
use a2a_server::Caller;
use a2a_server::store::{
    Cause, JobFilter, JobState, JobStore, JobWrite, NewJob, PushConfigStore, StoreError, TaskStore,
    prune,
};
use chrono::{DateTime, TimeDelta, Utc};

use super::{at_ms, caller_in, fresh_tenant, status_event, task_at, write_with_job};

/// Day 0 of these cases: far from the other suites' instants (which are
/// near the epoch or at 1_800_000_000 s), in 2033.
const DAY_0_MS: i64 = 2_000_000_000_000;

fn day(n: i64) -> DateTime<Utc> {
    at_ms(DAY_0_MS) + TimeDelta::days(n)
}

fn day_ms(n: i64) -> i64 {
    day(n).timestamp_millis()
}

/// The defaults of `a2a serve`: job records 7 days, tasks 30.
const JOB_DAYS: i64 = 7;
const TASK_DAYS: i64 = 30;

/// One retention pass at `now` with the default retentions (`task_days`
/// `None`: tasks kept for ever).
async fn prune_at(
    tasks: &dyn TaskStore,
    jobs: &dyn JobStore,
    push: &dyn PushConfigStore,
    now: DateTime<Utc>,
    task_days: Option<i64>,
) -> (u64, u64) {
    let pruned = prune(
        jobs,
        tasks,
        Some(push),
        now - TimeDelta::days(JOB_DAYS),
        task_days.map(|days| now - TimeDelta::days(days)),
    )
    .await
    .unwrap();
    (pruned.jobs, pruned.tasks)
}

/// A task of `caller` whose last status (`state`) is of day `on`, with its
/// job recorded then and, for a state that ends the turn, finished as the
/// execution layer finishes it.
async fn task_with_job(
    tasks: &dyn TaskStore,
    jobs: &dyn JobStore,
    caller: &Caller,
    state: TaskState,
    on: i64,
) -> String {
    let id = format!("rt-{}", a2a_core::new_id());
    let task = task_at(&id, "c", Some(day_ms(on)), state);
    let event = status_event(&task);
    tasks
        .create(caller, &task, &Cause::event(&event))
        .await
        .unwrap();
    jobs.record(&NewJob {
        task_id: &id,
        owner: caller,
        node: "node-r",
        request: "{}",
        at: day(on),
    })
    .await
    .unwrap();
    let finished = match state {
        TaskState::Canceled => Some((JobState::Canceled, Some("canceled by the client"))),
        TaskState::Failed => Some((JobState::Failed, Some("boom"))),
        s if s.ends_turn() => Some((JobState::Completed, None)),
        _ => None,
    };
    if let Some((job_state, reason)) = finished {
        jobs.finish(&id, job_state, reason, day(on)).await.unwrap();
    }
    id
}

async fn still_there(tasks: &dyn TaskStore, caller: &Caller, id: &str) -> bool {
    match tasks.get(caller, id).await {
        Ok(_) => true,
        Err(StoreError::NotFound(_)) => false,
        Err(err) => panic!("reading {id}: {err}"),
    }
}

/// A job ended by its task's cancel is CANCELED with the reason given, is
/// finished (listed by state, found by retention, replaced by the task's
/// next turn) and is never taken for running work. Needs a store of its
/// own (recovery sees every job).
pub async fn canceled_job_suite<S: JobStore>(store: &S) {
    let owner = caller_in(&fresh_tenant(), "alice");
    let id = format!("cj-{}", a2a_core::new_id());
    let new = |at| NewJob {
        task_id: &id,
        owner: &owner,
        node: "node-a",
        request: "{}",
        at,
    };
    store.record(&new(day(0))).await.unwrap();
    store
        .finish(
            &id,
            JobState::Canceled,
            Some("canceled by the client"),
            day(1),
        )
        .await
        .unwrap();
    let job = store.get(&id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.reason.as_deref(), job.updated_at),
        (JobState::Canceled, Some("canceled by the client"), day(1)),
        "a canceled job shows CANCELED with its reason"
    );
    assert!(job.state.is_finished());
    assert_eq!(job.state.as_str(), "CANCELED");
    assert_eq!("canceled".parse::<JobState>().unwrap(), JobState::Canceled);
    let listed = store
        .list(&JobFilter::new(1_000).state(JobState::Canceled))
        .await
        .unwrap();
    assert!(
        listed.iter().any(|j| j.task_id == id),
        "listed under CANCELED"
    );
    assert_eq!(
        store.heartbeat("node-a", day(2)).await.unwrap(),
        0,
        "a canceled job takes no heartbeat"
    );
    let recovered = store.recover(day(2), day(2)).await.unwrap();
    assert!(
        !recovered
            .abandoned
            .iter()
            .chain(&recovered.pending)
            .any(|j| j.task_id == id),
        "recovery leaves a canceled job alone"
    );
    assert!(
        !store.claim(&id, "node-b", day(2)).await.unwrap(),
        "a canceled job cannot be claimed"
    );
    let old = store.finished_before(day(2), 1_000).await.unwrap();
    assert!(
        old.iter().any(|j| j.task_id == id),
        "retention finds a canceled job"
    );
    store.record(&new(day(3))).await.unwrap();
    let again = store.get(&id).await.unwrap().unwrap();
    assert_eq!(
        (again.state, again.reason, again.created_at),
        (JobState::Running, None, day(3)),
        "the task's next turn records over a canceled job"
    );
    store.remove(&id).await.unwrap();
}

/// The same through job changes riding along with task writes (the SQL
/// stores' statements, each guarded by the list of finished states).
pub async fn canceled_job_writes_suite<S: TaskStore + JobStore>(store: &S) {
    assert!(store.writes_jobs(), "the store must say it writes jobs");
    let caller = caller_in(&fresh_tenant(), "alice");
    let id = format!("cw-{}", a2a_core::new_id());
    let new = |at| NewJob {
        task_id: &id,
        owner: &caller,
        node: "node-a",
        request: "{}",
        at,
    };
    let working = task_at(&id, "c", Some(day_ms(0)), TaskState::Working);
    let first = new(day(0));
    write_with_job(store, &caller, &working, 0, JobWrite::Record(&first))
        .await
        .unwrap();
    let canceled = task_at(&id, "c", Some(day_ms(1)), TaskState::Canceled);
    write_with_job(
        store,
        &caller,
        &canceled,
        1,
        JobWrite::Finish {
            state: JobState::Canceled,
            reason: Some("canceled by the client"),
            at: day(1),
        },
    )
    .await
    .unwrap();
    let job = JobStore::get(store, &id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Canceled, Some("canceled by the client")),
        "a canceled job shows CANCELED with its reason"
    );
    // A new turn's record is guarded by "no unfinished job": CANCELED is finished.
    let next = new(day(2));
    write_with_job(store, &caller, &working, 2, JobWrite::Record(&next))
        .await
        .expect("a canceled job counts as finished");
    assert_eq!(
        JobStore::get(store, &id).await.unwrap().unwrap().state,
        JobState::Running
    );
    // Recorded already canceled (a task canceled by its first write).
    let other = format!("cw-{}", a2a_core::new_id());
    let at_once = NewJob {
        task_id: &other,
        ..new(day(3))
    };
    write_with_job(
        store,
        &caller,
        &task_at(&other, "c", Some(day_ms(3)), TaskState::Canceled),
        0,
        JobWrite::RecordFinished {
            job: &at_once,
            state: JobState::Canceled,
            reason: Some("the task was canceled"),
        },
    )
    .await
    .unwrap();
    let job = JobStore::get(store, &other).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.reason.as_deref()),
        (JobState::Canceled, Some("the task was canceled"))
    );
    let again = NewJob {
        task_id: &other,
        ..new(day(4))
    };
    write_with_job(
        store,
        &caller,
        &task_at(&other, "c", Some(day_ms(4)), TaskState::Working),
        1,
        JobWrite::Record(&again),
    )
    .await
    .expect("recorded over a job recorded canceled");
}

/// Day 8: the job records of day 0 are past the job retention and go; their
/// tasks, within the task retention, stay, and a client still reads them.
/// Needs stores of its own (retention sees every task and job).
pub async fn task_retention_keeps_tasks_within_it(
    tasks: &dyn TaskStore,
    jobs: &dyn JobStore,
    push: &dyn PushConfigStore,
) {
    let caller = caller_in(&fresh_tenant(), "alice");
    let completed = task_with_job(tasks, jobs, &caller, TaskState::Completed, 0).await;
    let canceled = task_with_job(tasks, jobs, &caller, TaskState::Canceled, 0).await;
    let (jobs_gone, tasks_gone) = prune_at(tasks, jobs, push, day(8), Some(TASK_DAYS)).await;
    assert_eq!(
        (jobs_gone, tasks_gone),
        (2, 0),
        "day 8: the job records go, the tasks stay"
    );
    for id in [&completed, &canceled] {
        assert_eq!(jobs.get(id).await.unwrap(), None, "the job record of {id}");
        assert!(
            still_there(tasks, &caller, id).await,
            "GetTask on day 8 finds {id}"
        );
    }
    let (jobs_gone, tasks_gone) =
        prune_at(tasks, jobs, push, day(TASK_DAYS - 1), Some(TASK_DAYS)).await;
    assert_eq!((jobs_gone, tasks_gone), (0, 0), "kept until the last day");
    assert!(still_there(tasks, &caller, &completed).await);
}

/// Past the task retention, terminal tasks go (with their push configs),
/// oldest first; tasks that can still change (working, waiting for input)
/// and newer ones stay. Needs stores of its own (retention sees every task
/// and job).
pub async fn task_retention_removes_tasks_past_it(
    tasks: &dyn TaskStore,
    jobs: &dyn JobStore,
    push: &dyn PushConfigStore,
) {
    let caller = caller_in(&fresh_tenant(), "alice");
    let mut ended = Vec::new();
    for (state, on) in [
        (TaskState::Failed, 2),
        (TaskState::Completed, 0),
        (TaskState::Rejected, 3),
        (TaskState::Canceled, 1),
    ] {
        ended.push((on, task_with_job(tasks, jobs, &caller, state, on).await));
    }
    ended.sort();
    let ended: Vec<String> = ended.into_iter().map(|(_, id)| id).collect();
    let working = task_with_job(tasks, jobs, &caller, TaskState::Working, 0).await;
    let waiting = task_with_job(tasks, jobs, &caller, TaskState::InputRequired, 0).await;
    let recent = task_with_job(tasks, jobs, &caller, TaskState::Completed, 20).await;
    let config = TaskPushNotificationConfig::new(&ended[0], "https://hooks.example/r");
    push.save(&caller, config).await.unwrap();

    // What retention reads: terminal, older than the cutoff, oldest first.
    let cutoff = day(4);
    let found = tasks.terminal_before(cutoff, 100).await.unwrap();
    let found: Vec<&str> = found.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(found, ended, "terminal tasks past the cutoff, oldest first");
    let first = tasks.terminal_before(cutoff, 1).await.unwrap();
    assert_eq!(first, [(caller.clone(), ended[0].clone())], "at most limit");
    assert!(tasks.terminal_before(day(0), 100).await.unwrap().is_empty());

    let (_, tasks_gone) = prune_at(tasks, jobs, push, day(TASK_DAYS + 3), Some(TASK_DAYS)).await;
    assert_eq!(tasks_gone, 3, "the tasks ended more than 30 days ago go");
    for id in &ended[..3] {
        assert!(!still_there(tasks, &caller, id).await, "{id} is gone");
    }
    assert!(
        still_there(tasks, &caller, &ended[3]).await,
        "day 3 + 30 not yet"
    );
    assert!(
        push.list(&caller, &ended[0]).await.unwrap().is_empty(),
        "a removed task's push configs go with it"
    );
    let (_, tasks_gone) = prune_at(tasks, jobs, push, day(49), Some(TASK_DAYS)).await;
    assert_eq!(tasks_gone, 1);
    for id in [&working, &waiting, &recent] {
        assert!(
            still_there(tasks, &caller, id).await,
            "{id} is kept: not ended, or ended within the retention"
        );
    }
    let (_, tasks_gone) = prune_at(tasks, jobs, push, day(51), Some(TASK_DAYS)).await;
    assert_eq!(tasks_gone, 1, "the day 20 task, on day 51");
    assert!(!still_there(tasks, &caller, &recent).await);
    assert!(still_there(tasks, &caller, &working).await);
    assert!(still_there(tasks, &caller, &waiting).await);
}

/// A task retention of 0 (`None`) keeps every task for ever; job records
/// still go after theirs. Needs stores of its own.
pub async fn task_retention_of_zero_keeps_tasks_for_ever(
    tasks: &dyn TaskStore,
    jobs: &dyn JobStore,
    push: &dyn PushConfigStore,
) {
    let caller = caller_in(&fresh_tenant(), "alice");
    let completed = task_with_job(tasks, jobs, &caller, TaskState::Completed, 0).await;
    let (jobs_gone, tasks_gone) = prune_at(tasks, jobs, push, day(10_000), None).await;
    assert_eq!((jobs_gone, tasks_gone), (1, 0));
    assert!(still_there(tasks, &caller, &completed).await);
}
