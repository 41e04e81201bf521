//! Fenced writes: a cluster store refuses an execution's write once the
//! lease it carries (its node and the job's attempt) no longer holds.

use a2a_core::{TaskState, TaskStatusUpdateEvent};
use chrono::TimeDelta;

use a2a_server::store::{
    Cause, JobState, JobStore, JobWrite, Lease, LeasePass, NewJob, StoreError, TaskStore,
};

use super::{at_ms, caller_in, fresh_tenant, status_event, task_at};

/// Runs the fencing rules against `store`, a store that fences writes (a
/// cluster's). Every write here names its lease; the ones whose lease moved
/// on (another node claimed the job, or it ended) must be refused with
/// [`StoreError::LeaseLost`] and change nothing, in the task, its event log
/// or its job.
pub async fn fencing_suite<S: TaskStore + JobStore>(store: &S) {
    let t0 = at_ms(1_800_000_000_000);
    let secs = |n: i64| t0 + TimeDelta::seconds(n);
    let caller = caller_in(&fresh_tenant(), "alice");
    let id = format!("fence-{}", a2a_core::new_id());
    let a1 = Lease {
        node: "node-a",
        epoch: 1,
    };

    // Node A records the job with the task's first write: its lease is (A, 1).
    let mut task = task_at(&id, "c", Some(1_000), TaskState::Submitted);
    let job = NewJob {
        task_id: &id,
        owner: &caller,
        node: "node-a",
        request: "{}",
        at: secs(0),
    };
    let event = status_event(&task);
    store
        .create(
            &caller,
            &task,
            &Cause::event(&event)
                .with_job(JobWrite::Record(&job))
                .with_lease(Some(a1)),
        )
        .await
        .unwrap();

    // Under its lease, A writes.
    task.status.state = TaskState::Working;
    let working = status_event(&task);
    let cause = Cause::event(&working).with_lease(Some(a1));
    assert_eq!(store.update(&caller, &task, 1, &cause).await.unwrap(), 2);

    // A wrong epoch, or another node's name, is refused at once.
    for stale in [
        Lease {
            node: "node-a",
            epoch: 2,
        },
        Lease {
            node: "node-b",
            epoch: 1,
        },
    ] {
        let cause = Cause::event(&working).with_lease(Some(stale));
        assert!(
            matches!(
                store.update(&caller, &task, 2, &cause).await,
                Err(StoreError::LeaseLost(_))
            ),
            "a write under {stale:?} must be refused: the job is (node-a, 1)"
        );
    }

    // A's lease expires; B claims the job: attempt 2.
    let pass = LeasePass::new(secs(10), TimeDelta::seconds(5), TimeDelta::hours(1));
    let found = store.take_over(&pass).await.unwrap();
    assert!(found.pending.iter().any(|job| job.task_id == id));
    assert!(store.claim(&id, "node-b", secs(10)).await.unwrap());
    let b2 = Lease {
        node: "node-b",
        epoch: 2,
    };

    // A wakes up and writes under its old lease: refused, nothing written,
    // whether the write would end the job or not, and whatever version it
    // names.
    task.status.state = TaskState::Completed;
    let completed = status_event(&task);
    let finish = JobWrite::Finish {
        state: JobState::Completed,
        reason: None,
        at: secs(11),
    };
    for cause in [
        Cause::event(&completed).with_lease(Some(a1)),
        Cause::event(&completed)
            .with_job(finish)
            .with_lease(Some(a1)),
    ] {
        for version in [1, 2] {
            assert!(
                matches!(
                    store.update(&caller, &task, version, &cause).await,
                    Err(StoreError::LeaseLost(_))
                ),
                "node A's write after node B claimed the job must be refused"
            );
        }
    }
    let stored = TaskStore::get(store, &caller, &id).await.unwrap();
    assert_eq!(
        (stored.version, stored.task.status.state),
        (2, TaskState::Working),
        "a refused write changes nothing"
    );
    assert_eq!(store.events(&caller, &id).await.unwrap().len(), 2);
    let job = JobStore::get(store, &id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.node.as_str(), job.attempts),
        (JobState::Running, "node-b", 2),
        "a refused write leaves the job as the new owner holds it"
    );

    // B, the owner now, writes, and ends the job with its last write.
    let next = TaskStatusUpdateEvent::new(id.clone(), "c", TaskState::Working).into();
    task.status.state = TaskState::Working;
    let cause = Cause::event(&next).with_lease(Some(b2));
    assert_eq!(store.update(&caller, &task, 2, &cause).await.unwrap(), 3);
    task.status.state = TaskState::Completed;
    let cause = Cause::event(&completed)
        .with_job(finish)
        .with_lease(Some(b2));
    assert_eq!(store.update(&caller, &task, 3, &cause).await.unwrap(), 4);
    let job = JobStore::get(store, &id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);

    // Once the job ended, no lease holds: even B's next write is refused.
    let cause = Cause::event(&completed).with_lease(Some(b2));
    assert!(matches!(
        store.update(&caller, &task, 4, &cause).await,
        Err(StoreError::LeaseLost(_))
    ));

    // A version conflict under a valid lease is still a conflict.
    let other = format!("fence-{}", a2a_core::new_id());
    let mut task = task_at(&other, "c", Some(1_000), TaskState::Submitted);
    let job = NewJob {
        task_id: &other,
        owner: &caller,
        node: "node-a",
        request: "{}",
        at: secs(20),
    };
    let event = status_event(&task);
    store
        .create(
            &caller,
            &task,
            &Cause::event(&event).with_job(JobWrite::Record(&job)),
        )
        .await
        .unwrap();
    task.status.state = TaskState::Working;
    let working = status_event(&task);
    let stale = store
        .update(
            &caller,
            &task,
            7,
            &Cause::event(&working).with_lease(Some(a1)),
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { found: 1, .. })),
        "a stale version under a valid lease is a conflict, not {stale:?}"
    );

    // A fenced create (a resumed job whose task was never stored) writes
    // under its lease, and not under a lost one.
    let fresh = format!("fence-{}", a2a_core::new_id());
    let job = NewJob {
        task_id: &fresh,
        owner: &caller,
        node: "node-a",
        request: "{}",
        at: secs(30),
    };
    store.record(&job).await.unwrap();
    let task = task_at(&fresh, "c", Some(1_000), TaskState::Working);
    let event = status_event(&task);
    assert!(matches!(
        store
            .create(&caller, &task, &Cause::event(&event).with_lease(Some(b2)))
            .await,
        Err(StoreError::LeaseLost(_))
    ));
    assert!(matches!(
        TaskStore::get(store, &caller, &fresh).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        store
            .create(&caller, &task, &Cause::event(&event).with_lease(Some(a1)))
            .await
            .unwrap(),
        1
    );
}
