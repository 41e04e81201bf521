#![doc = include_str!("../README.md")]
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use a2a_core::{
    Artifact, AuthenticationInfo, ListTasksRequest, Message, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState, TaskStatusUpdateEvent,
};
use chrono::{DateTime, TimeDelta, Utc};

use a2a_server::Caller;
use a2a_server::store::{
    ABANDONED_REASON, Cause, Checkpoint, Job, JobFilter, JobState, JobStore, JobWrite, LeasePass,
    NewJob, PushConfigStore, StoreError, StoredEvent, TaskStore,
};

mod fencing;
mod retention;
mod totals;

pub use self::fencing::fencing_suite;

pub use self::retention::{
    canceled_job_suite, canceled_job_writes_suite, task_retention_keeps_tasks_within_it,
    task_retention_of_zero_keeps_tasks_for_ever, task_retention_removes_tasks_past_it,
};

/// A caller in a tenant of its own, so runs never see each other's data.
fn caller_in(tenant: &str, user: &str) -> Caller {
    Caller {
        tenant: tenant.to_owned(),
        user: user.to_owned(),
    }
}

fn fresh_tenant() -> String {
    format!("suite-{}", a2a_core::new_id())
}

fn at_ms(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

fn task_at(id: &str, context: &str, ms: Option<i64>, state: TaskState) -> Task {
    let mut task = Task::new(id, context, state);
    task.status.timestamp = ms.map(at_ms);
    task
}

fn status_event(task: &Task) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent::new(
        task.id.clone(),
        task.context_id.clone(),
        task.status.state,
    ))
}

/// Runs every [`TaskStore`] rule against `store`.
pub async fn task_store_suite<S: TaskStore>(store: &S) {
    versions_and_conflicts(store).await;
    concurrent_writers_of_one_version(store).await;
    tasks_are_scoped_to_their_caller(store).await;
    tasks_read_back_as_written(store).await;
    list_filters(store).await;
    list_order_and_pages(store).await;
    checkpoints(store).await;
    delete(store).await;
    event_log(store).await;
    counts_per_user(store).await;
    totals::total_size_follows_writes(store).await;
}

/// A store that counts a user's tasks counts them in every tenant, and only theirs.
async fn counts_per_user<S: TaskStore>(store: &S) {
    let user = format!("counted-{}", a2a_core::new_id());
    let Some(before) = store.count_for_user(&user).await.unwrap() else {
        return;
    };
    assert_eq!(before, 0, "a new user keeps no tasks");
    let (here, there) = (
        caller_in(&fresh_tenant(), &user),
        caller_in(&fresh_tenant(), &user),
    );
    create_numbered(store, &here, &format!("{}-", a2a_core::new_id()), 3).await;
    create_numbered(store, &there, &format!("{}-", a2a_core::new_id()), 2).await;
    let other = caller_in(&fresh_tenant(), &format!("other-{}", a2a_core::new_id()));
    create_numbered(store, &other, &format!("{}-", a2a_core::new_id()), 4).await;
    assert_eq!(
        store.count_for_user(&user).await.unwrap(),
        Some(5),
        "counted across tenants, and only the user's"
    );
}

async fn versions_and_conflicts<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let id = a2a_core::new_id();
    let task = task_at(&id, "ctx", Some(1), TaskState::Submitted);
    let cause = status_event(&task);
    assert_eq!(
        store
            .create(&alice, &task, &Cause::event(&cause))
            .await
            .unwrap(),
        1,
        "a new task is version 1"
    );
    assert!(
        matches!(
            store.create(&alice, &task, &Cause::event(&cause)).await,
            Err(StoreError::AlreadyExists(_))
        ),
        "creating an existing task is AlreadyExists"
    );
    let working = task_at(&id, "ctx", Some(2), TaskState::Working);
    let v2 = store
        .update(&alice, &working, 1, &Cause::event(&status_event(&working)))
        .await
        .unwrap();
    assert_eq!(v2, 2, "every write adds one to the version");
    let done = task_at(&id, "ctx", Some(3), TaskState::Completed);
    let stale = store
        .update(&alice, &done, 1, &Cause::event(&status_event(&done)))
        .await;
    assert!(
        matches!(
            stale,
            Err(StoreError::Conflict {
                expected: 1,
                found: 2,
                ..
            })
        ),
        "a write from a stale version is a Conflict naming both versions, got {stale:?}"
    );
    let stored = store.get(&alice, &id).await.unwrap();
    assert_eq!(
        (stored.version, stored.task.status.state),
        (2, TaskState::Working),
        "a conflicting write changes nothing"
    );
    let missing = task_at(&a2a_core::new_id(), "ctx", None, TaskState::Working);
    assert!(
        matches!(
            store
                .update(&alice, &missing, 1, &Cause::event(&status_event(&missing)))
                .await,
            Err(StoreError::NotFound(_))
        ),
        "updating a missing task is NotFound"
    );
    assert!(matches!(
        store.get(&alice, &missing.id).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn concurrent_writers_of_one_version<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let id = a2a_core::new_id();
    let task = task_at(&id, "ctx", Some(1), TaskState::Submitted);
    store
        .create(&alice, &task, &Cause::event(&status_event(&task)))
        .await
        .unwrap();
    let writers = (0..8).map(|i| {
        let mut task = task.clone();
        task.status.timestamp = Some(at_ms(10 + i));
        let alice = &alice;
        async move {
            let event = status_event(&task);
            store.update(alice, &task, 1, &Cause::event(&event)).await
        }
    });
    let results = futures::future::join_all(writers).await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(won, 1, "exactly one writer of version 1 wins: {results:?}");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(2) | Err(StoreError::Conflict { found: 2, .. }))),
        "the others see a Conflict: {results:?}"
    );
    assert_eq!(store.get(&alice, &id).await.unwrap().version, 2);
}

async fn tasks_are_scoped_to_their_caller<S: TaskStore>(store: &S) {
    let tenant = fresh_tenant();
    let alice = caller_in(&tenant, "alice");
    let id = a2a_core::new_id();
    let task = task_at(&id, "ctx", Some(1), TaskState::Submitted);
    let cause = status_event(&task);
    store
        .create(&alice, &task, &Cause::event(&cause))
        .await
        .unwrap();
    let strangers = [
        caller_in(&tenant, "bob"),
        caller_in(&fresh_tenant(), "alice"),
        caller_in(&tenant, ""),
    ];
    for stranger in &strangers {
        assert!(
            matches!(store.get(stranger, &id).await, Err(StoreError::NotFound(_))),
            "{stranger:?} must not read alice's task"
        );
        let update = store
            .update(stranger, &task, 1, &Cause::event(&cause))
            .await;
        assert!(
            matches!(update, Err(StoreError::NotFound(_))),
            "{stranger:?} must not write alice's task, got {update:?}"
        );
        let listed = store
            .list(stranger, &ListTasksRequest::default())
            .await
            .unwrap();
        assert_eq!(
            (listed.total_size, listed.tasks.len()),
            (0, 0),
            "{stranger:?} must not list alice's task"
        );
        store.delete(stranger, &id).await.unwrap();
        assert!(
            !matches!(store.events(stranger, &id).await, Ok(events) if !events.is_empty()),
            "{stranger:?} must not read alice's events"
        );
    }
    let stored = store.get(&alice, &id).await.unwrap();
    assert_eq!(stored.version, 1, "nobody else changed or deleted it");
}

async fn tasks_read_back_as_written<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let id = a2a_core::new_id();
    let mut task = task_at(&id, "ctx-rich", Some(1_700_000_000_123), TaskState::Working);
    task.history.push(
        Message::user_text("hello \"world\" ü")
            .with_task_id(&id)
            .with_context_id("ctx-rich")
            .into(),
    );
    task.status.message = Some(
        Message::agent_text("working on it")
            .with_task_id(&id)
            .with_context_id("ctx-rich")
            .into(),
    );
    task.artifacts
        .push(Artifact::text("result").with_id("a1").with_name("answer"));
    let mut metadata = a2a_core::Metadata::new();
    metadata.insert("k".into(), serde_json::json!({"n": [1, 2.5, null]}));
    task.metadata = Some(metadata);
    store
        .create(
            &alice,
            &task,
            &Cause::event(&StreamResponse::Task(task.clone())),
        )
        .await
        .unwrap();
    let stored = store.get(&alice, &id).await.unwrap();
    assert_eq!(stored.task, task, "a task reads back exactly as written");
    let listed = store
        .list(
            &alice,
            &ListTasksRequest {
                context_id: "ctx-rich".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(listed.tasks, [task], "a listed task is the task as written");
}

/// Creates tasks `t00`..`t{n}` of `caller` (ids prefixed by `prefix`): even
/// ones COMPLETED in context "even", odd ones WORKING in context "odd", the
/// status timestamp of task i at 1000 + i ms.
async fn create_numbered<S: TaskStore>(store: &S, caller: &Caller, prefix: &str, n: i64) {
    for i in 0..n {
        let (state, context) = if i % 2 == 0 {
            (TaskState::Completed, "even")
        } else {
            (TaskState::Working, "odd")
        };
        let task = task_at(&format!("{prefix}t{i:02}"), context, Some(1000 + i), state);
        store
            .create(caller, &task, &Cause::event(&status_event(&task)))
            .await
            .unwrap();
    }
}

/// Every id the listing yields, page after page, checking each page's size and total.
async fn list_all<S: TaskStore>(
    store: &S,
    caller: &Caller,
    mut request: ListTasksRequest,
    page_size: i32,
) -> Vec<String> {
    request.page_size = Some(page_size);
    let from_start = request.page_token.is_empty();
    let mut seen = Vec::new();
    let mut total = None;
    for _page in 0..1000 {
        let page = store.list(caller, &request).await.unwrap();
        assert_eq!(page.page_size, page_size, "a page reports the size used");
        assert!(
            page.tasks.len() <= usize::try_from(page_size).unwrap(),
            "a page holds at most pageSize tasks"
        );
        let expected_total = *total.get_or_insert(page.total_size);
        assert_eq!(
            page.total_size, expected_total,
            "totalSize is the same on every page"
        );
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        if page.next_page_token.is_empty() {
            if from_start {
                assert_eq!(
                    usize::try_from(expected_total).unwrap(),
                    seen.len(),
                    "totalSize counts every matching task"
                );
            }
            return seen;
        }
        assert!(!page.tasks.is_empty(), "a page with a next token has tasks");
        request.page_token = page.next_page_token;
    }
    panic!("the listing never ended");
}

async fn list_filters<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let p = format!("{}-", a2a_core::new_id());
    create_numbered(store, &alice, &p, 25).await;
    let ids = |range: &mut dyn Iterator<Item = i64>| -> Vec<String> {
        range.map(|i| format!("{p}t{i:02}")).collect()
    };

    let all = list_all(store, &alice, ListTasksRequest::default(), 50).await;
    assert_eq!(all, ids(&mut (0..25).rev()), "newest status first");

    let completed = ListTasksRequest {
        status: TaskState::Completed,
        ..Default::default()
    };
    assert_eq!(
        list_all(store, &alice, completed, 4).await,
        ids(&mut (0..25).rev().filter(|i| i % 2 == 0)),
        "status filter"
    );

    let odd = ListTasksRequest {
        context_id: "odd".into(),
        ..Default::default()
    };
    assert_eq!(
        list_all(store, &alice, odd, 5).await,
        ids(&mut (0..25).rev().filter(|i| i % 2 == 1)),
        "contextId filter"
    );

    let recent = ListTasksRequest {
        status_timestamp_after: Some(at_ms(1020)),
        ..Default::default()
    };
    assert_eq!(
        list_all(store, &alice, recent, 2).await,
        ids(&mut (20..25).rev()),
        "statusTimestampAfter keeps tasks at or after the instant"
    );

    let combined = ListTasksRequest {
        context_id: "even".into(),
        status: TaskState::Completed,
        status_timestamp_after: Some(at_ms(1019)),
        ..Default::default()
    };
    assert_eq!(
        list_all(store, &alice, combined, 50).await,
        ids(&mut [24, 22, 20].into_iter()),
        "filters combine"
    );

    let none = ListTasksRequest {
        context_id: "even".into(),
        status: TaskState::Working,
        ..Default::default()
    };
    let page = store.list(&alice, &none).await.unwrap();
    assert_eq!(
        (
            page.tasks.len(),
            page.total_size,
            page.next_page_token.as_str()
        ),
        (0, 0, ""),
        "no match: an empty last page"
    );

    for bad in ["%%", "bm90IGEgdG9rZW4", "MTIzfA"] {
        let request = ListTasksRequest {
            page_token: bad.into(),
            ..Default::default()
        };
        assert!(
            matches!(
                store.list(&alice, &request).await,
                Err(StoreError::Invalid(_))
            ),
            "a malformed page token {bad:?} is Invalid"
        );
    }
}

async fn list_order_and_pages<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let p = format!("{}-", a2a_core::new_id());
    create_numbered(store, &alice, &p, 23).await;
    // Equal timestamps list in creation order; a task without a timestamp lists last.
    let ties = ["tie-a", "tie-b", "tie-c"].map(|id| format!("{p}{id}"));
    for id in &ties {
        let task = task_at(id, "ties", Some(5000), TaskState::Working);
        store
            .create(&alice, &task, &Cause::event(&status_event(&task)))
            .await
            .unwrap();
    }
    let untimed = task_at(&format!("{p}untimed"), "ties", None, TaskState::Submitted);
    store
        .create(&alice, &untimed, &Cause::event(&status_event(&untimed)))
        .await
        .unwrap();

    let mut expected: Vec<String> = ties.to_vec();
    expected.extend((0..23).rev().map(|i| format!("{p}t{i:02}")));
    expected.push(untimed.id.clone());
    for page_size in [1, 3, 10, 27, 100] {
        assert_eq!(
            list_all(store, &alice, ListTasksRequest::default(), page_size).await,
            expected,
            "order and pages with pageSize {page_size}"
        );
    }

    // A task whose status changes moves to the front, and a listing resumed
    // with an older token neither repeats nor skips the others.
    let first = store
        .list(
            &alice,
            &ListTasksRequest {
                page_size: Some(5),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let t03 = format!("{p}t03");
    let stored = store.get(&alice, &t03).await.unwrap();
    let mut moved = stored.task.clone();
    moved.status.timestamp = Some(at_ms(9000));
    store
        .update(
            &alice,
            &moved,
            stored.version,
            &Cause::event(&status_event(&moved)),
        )
        .await
        .unwrap();
    let rest = list_all(
        store,
        &alice,
        ListTasksRequest {
            page_token: first.next_page_token.clone(),
            ..Default::default()
        },
        7,
    )
    .await;
    let mut expected_rest: Vec<String> = expected[5..].to_vec();
    expected_rest.retain(|id| *id != t03);
    assert_eq!(rest, expected_rest, "a page token resumes after its task");
    let all = list_all(store, &alice, ListTasksRequest::default(), 50).await;
    assert_eq!(all[0], t03, "an updated status timestamp moves a task");
    assert_eq!(all.len(), expected.len());
}

async fn checkpoints<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let plain_id = a2a_core::new_id();
    let plain = task_at(&plain_id, "ctx", Some(1), TaskState::Submitted);
    store
        .create(&alice, &plain, &Cause::event(&status_event(&plain)))
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice, &plain_id).await.unwrap().checkpoint,
        None,
        "a task written without a checkpoint has none"
    );

    let id = a2a_core::new_id();
    let task = task_at(&id, "ctx", Some(1), TaskState::Working);
    let event = status_event(&task);
    let first = Checkpoint::new(1, b"after turn one".to_vec());
    store
        .create(&alice, &task, &Cause::event(&event).with_checkpoint(&first))
        .await
        .unwrap();
    let stored = store.get(&alice, &id).await.unwrap();
    assert_eq!(
        stored.checkpoint.as_ref(),
        Some(&first),
        "a checkpoint is stored with the write"
    );

    let v2 = store
        .update(&alice, &task, 1, &Cause::event(&event))
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice, &id).await.unwrap().checkpoint.as_ref(),
        Some(&first),
        "a write without a checkpoint keeps the previous one"
    );

    let second = Checkpoint::new(u64::from(u32::MAX) + 2, vec![0, 255, 7]);
    let refused = Checkpoint::new(99, b"from a stale writer".to_vec());
    assert!(
        store
            .update(
                &alice,
                &task,
                1,
                &Cause::event(&event).with_checkpoint(&refused)
            )
            .await
            .is_err()
    );
    assert_eq!(
        store.get(&alice, &id).await.unwrap().checkpoint.as_ref(),
        Some(&first),
        "a conflicting write stores no checkpoint"
    );
    store
        .update(
            &alice,
            &task,
            v2,
            &Cause::event(&event).with_checkpoint(&second),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice, &id).await.unwrap().checkpoint,
        Some(second),
        "a later checkpoint replaces the earlier"
    );
    let empty = Checkpoint::new(0, Vec::new());
    store
        .update(
            &alice,
            &task,
            v2 + 1,
            &Cause::event(&event).with_checkpoint(&empty),
        )
        .await
        .unwrap();
    assert_eq!(
        store.get(&alice, &id).await.unwrap().checkpoint,
        Some(empty),
        "an empty checkpoint state is kept as empty, not dropped"
    );
}

async fn delete<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let id = a2a_core::new_id();
    let task = task_at(&id, "ctx", Some(1), TaskState::Completed);
    let event = status_event(&task);
    let checkpoint = Checkpoint::new(3, b"x".to_vec());
    store
        .create(
            &alice,
            &task,
            &Cause::event(&event).with_checkpoint(&checkpoint),
        )
        .await
        .unwrap();
    store.delete(&alice, &id).await.unwrap();
    assert!(
        matches!(store.get(&alice, &id).await, Err(StoreError::NotFound(_))),
        "a deleted task is gone"
    );
    assert_eq!(
        store
            .list(&alice, &ListTasksRequest::default())
            .await
            .unwrap()
            .total_size,
        0,
        "a deleted task is not listed"
    );
    store.delete(&alice, &id).await.unwrap();
    assert!(
        !matches!(store.events(&alice, &id).await, Ok(events) if !events.is_empty()),
        "a deleted task's events are gone"
    );
    assert_eq!(
        store
            .create(&alice, &task, &Cause::event(&event))
            .await
            .unwrap(),
        1,
        "a deleted task's id can be used again"
    );
    let again = store.get(&alice, &id).await.unwrap();
    assert_eq!(
        (again.version, again.checkpoint),
        (1, None),
        "nothing of the deleted task survives"
    );
}

async fn event_log<S: TaskStore>(store: &S) {
    let alice = caller_in(&fresh_tenant(), "alice");
    let id = a2a_core::new_id();
    let mut task = task_at(&id, "ctx", Some(1), TaskState::Submitted);
    let created = StreamResponse::Task(task.clone());
    store
        .create(&alice, &task, &Cause::event(&created))
        .await
        .unwrap();
    let events = match store.events(&alice, &id).await {
        Err(StoreError::Unsupported(_)) => return,
        other => other.unwrap(),
    };
    assert_eq!(
        events,
        [StoredEvent {
            version: 1,
            event: created.clone()
        }]
    );
    task.status.state = TaskState::Working;
    let working = status_event(&task);
    store
        .update(&alice, &task, 1, &Cause::event(&working))
        .await
        .unwrap();
    task.artifacts.push(Artifact::text("out").with_id("a"));
    let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent::new(
        id.clone(),
        "ctx",
        Artifact::text("out").with_id("a"),
    ));
    store
        .update(&alice, &task, 2, &Cause::event(&artifact))
        .await
        .unwrap();
    // A refused write appends nothing.
    let _ = store
        .update(&alice, &task, 1, &Cause::event(&working))
        .await;
    let events = store.events(&alice, &id).await.unwrap();
    assert_eq!(
        events,
        [
            StoredEvent {
                version: 1,
                event: created
            },
            StoredEvent {
                version: 2,
                event: working
            },
            StoredEvent {
                version: 3,
                event: artifact
            },
        ],
        "every write appends its cause, in order"
    );
    assert!(
        !matches!(store.events(&caller_in(&fresh_tenant(), "alice"), &id).await, Ok(e) if !e.is_empty()),
        "another caller reads no events"
    );
}

/// Runs every [`PushConfigStore`] rule against `store`.
pub async fn push_config_store_suite<S: PushConfigStore>(store: &S) {
    let tenant = fresh_tenant();
    let alice = caller_in(&tenant, "alice");
    let bob = caller_in(&tenant, "bob");
    let task = a2a_core::new_id();

    let mut first = TaskPushNotificationConfig::new(&task, "https://hooks.example/1");
    first.token = "tok".into();
    first.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: "s3cr3t".into(),
    });
    let first = store.save(&alice, first).await.unwrap();
    assert!(!first.id.is_empty(), "a config without an id gets one");
    let mut second = TaskPushNotificationConfig::new(&task, "https://hooks.example/2");
    second.id = "chosen".into();
    let second = store.save(&alice, second).await.unwrap();
    assert_eq!(second.id, "chosen", "a given id is kept");

    assert_eq!(
        store.get(&alice, &task, &first.id).await.unwrap().as_ref(),
        Some(&first),
        "a config reads back as saved, credentials included"
    );
    assert_eq!(
        store.list(&alice, &task).await.unwrap(),
        [first.clone(), second.clone()],
        "configs list in creation order"
    );

    let mut replaced = first.clone();
    replaced.url = "https://hooks.example/1b".into();
    replaced.authentication = None;
    store.save(&alice, replaced.clone()).await.unwrap();
    assert_eq!(
        store.list(&alice, &task).await.unwrap(),
        [replaced.clone(), second.clone()],
        "saving an existing id replaces it in place"
    );

    // Bob sees nothing of alice's, and his own config of the same ids stays apart.
    assert_eq!(store.get(&bob, &task, &first.id).await.unwrap(), None);
    assert!(store.list(&bob, &task).await.unwrap().is_empty());
    store.delete(&bob, &task, &first.id).await.unwrap();
    store.delete_all(&bob, &task).await.unwrap();
    assert_eq!(
        store.list(&alice, &task).await.unwrap().len(),
        2,
        "another caller's deletes change nothing"
    );
    let mut bobs = TaskPushNotificationConfig::new(&task, "https://bob.example");
    bobs.id = "chosen".into();
    store.save(&bob, bobs.clone()).await.unwrap();
    assert_eq!(
        store.get(&alice, &task, "chosen").await.unwrap().as_ref(),
        Some(&second),
        "another caller's save does not overwrite"
    );
    assert_eq!(store.list(&bob, &task).await.unwrap(), [bobs]);
    let other_tenant = caller_in(&fresh_tenant(), "alice");
    assert!(store.list(&other_tenant, &task).await.unwrap().is_empty());

    store.delete(&alice, &task, &first.id).await.unwrap();
    store.delete(&alice, &task, &first.id).await.unwrap();
    assert_eq!(store.get(&alice, &task, &first.id).await.unwrap(), None);
    assert_eq!(store.list(&alice, &task).await.unwrap(), [second]);
    store.delete(&alice, &task, "never-existed").await.unwrap();

    store.delete_all(&alice, &task).await.unwrap();
    assert!(store.list(&alice, &task).await.unwrap().is_empty());
    assert_eq!(
        store.list(&bob, &task).await.unwrap().len(),
        1,
        "delete_all removes only the caller's configs"
    );
    assert!(store.list(&alice, "no-such-task").await.unwrap().is_empty());
}

/// Runs every [`JobWrite`] rule against `store`: a [`TaskStore`] whose
/// [`TaskStore::writes_jobs`] is true, applying job changes to the jobs it
/// keeps as a [`JobStore`], in the same transaction as the task write.
pub async fn job_writes_suite<S: TaskStore + JobStore>(store: &S) {
    assert!(store.writes_jobs(), "the store must say it writes jobs");
    let t0 = at_ms(1_800_000_000_000);
    let secs = |n: i64| t0 + TimeDelta::seconds(n);
    let caller = caller_in(&fresh_tenant(), "alice");
    let request = r#"{"message":{"text":"hi"}}"#;
    let new = |task_id, node, at| NewJob {
        task_id,
        owner: &caller,
        node,
        request,
        at,
    };
    let job_of = |task_id: &str| {
        let task_id = task_id.to_owned();
        async move { JobStore::get(store, &task_id).await.unwrap() }
    };
    let version_of = |task_id: &str| {
        let task_id = task_id.to_owned();
        let caller = caller.clone();
        async move {
            TaskStore::get(store, &caller, &task_id)
                .await
                .map(|t| t.version)
        }
    };
    // Record with a create: the task and its RUNNING job are written together.
    let id = format!("jw-{}", a2a_core::new_id());
    let submitted = task_at(&id, "c", Some(1_000), TaskState::Submitted);
    let first = new(&id, "node-a", secs(0));
    assert_eq!(
        write_with_job(store, &caller, &submitted, 0, JobWrite::Record(&first))
            .await
            .unwrap(),
        1
    );
    let job = job_of(&id).await.expect("the create recorded the job");
    assert_eq!(
        (
            job.state,
            job.node.as_str(),
            job.attempts,
            job.heartbeat,
            job.created_at,
            job.updated_at,
            job.reason.as_deref()
        ),
        (
            JobState::Running,
            "node-a",
            1,
            secs(0),
            secs(0),
            secs(0),
            None
        ),
        "Record writes the job as JobStore::record does"
    );
    assert_eq!((&job.owner, job.request.as_str()), (&caller, request));

    // Finish with an update: the job ends with the task's write.
    let completed = task_at(&id, "c", Some(2_000), TaskState::Completed);
    let finish = JobWrite::Finish {
        state: JobState::Completed,
        reason: None,
        at: secs(5),
    };
    assert_eq!(
        write_with_job(store, &caller, &completed, 1, finish)
            .await
            .unwrap(),
        2
    );
    let job = job_of(&id).await.unwrap();
    assert_eq!(
        (job.state, job.updated_at, job.created_at, job.reason),
        (JobState::Completed, secs(5), secs(0), None),
        "Finish ends the job as JobStore::finish does"
    );

    // Record with an update replaces the finished job (a follow-up turn).
    let follow_up = new(&id, "node-b", secs(10));
    let working = task_at(&id, "c", Some(3_000), TaskState::Working);
    assert_eq!(
        write_with_job(store, &caller, &working, 2, JobWrite::Record(&follow_up))
            .await
            .unwrap(),
        3
    );
    let job = job_of(&id).await.unwrap();
    assert_eq!(
        (job.state, job.node.as_str(), job.attempts, job.created_at),
        (JobState::Running, "node-b", 1, secs(10)),
        "Record replaces a finished job"
    );

    // Record over an unfinished job fails the whole write.
    let again = new(&id, "node-c", secs(11));
    let failed = task_at(&id, "c", Some(4_000), TaskState::Failed);
    assert!(
        matches!(
            write_with_job(store, &caller, &failed, 3, JobWrite::Record(&again)).await,
            Err(StoreError::AlreadyExists(_))
        ),
        "an unfinished job cannot be recorded over"
    );
    assert_eq!(version_of(&id).await.unwrap(), 3, "the task is not written");
    let stored = TaskStore::get(store, &caller, &id).await.unwrap();
    assert_eq!(stored.task.status.state, TaskState::Working);
    assert_eq!(job_of(&id).await.unwrap().node, "node-b");

    // The same on a create: the task is not created.
    let busy = format!("jw-busy-{}", a2a_core::new_id());
    store.record(&new(&busy, "node-a", secs(12))).await.unwrap();
    let busy_task = task_at(&busy, "c", Some(1_000), TaskState::Submitted);
    assert!(matches!(
        write_with_job(
            store,
            &caller,
            &busy_task,
            0,
            JobWrite::Record(&new(&busy, "node-b", secs(13)))
        )
        .await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(
        matches!(version_of(&busy).await, Err(StoreError::NotFound(_))),
        "a refused job record leaves the task unwritten"
    );
    assert_eq!(job_of(&busy).await.unwrap().node, "node-a");

    // RecordFinished: the job's first write already ends it.
    let once = format!("jw-once-{}", a2a_core::new_id());
    let once_task = task_at(&once, "c", Some(1_000), TaskState::Failed);
    let once_job = new(&once, "node-a", secs(20));
    let record_failed = JobWrite::RecordFinished {
        job: &once_job,
        state: JobState::Failed,
        reason: Some("the agent failed"),
    };
    assert_eq!(
        write_with_job(store, &caller, &once_task, 0, record_failed)
            .await
            .unwrap(),
        1
    );
    let job = job_of(&once).await.unwrap();
    assert_eq!(
        (
            job.state,
            job.reason.as_deref(),
            job.attempts,
            job.heartbeat,
            job.created_at,
            job.updated_at
        ),
        (
            JobState::Failed,
            Some("the agent failed"),
            1,
            secs(20),
            secs(20),
            secs(20)
        ),
        "RecordFinished writes the job finished"
    );
    let twice_job = new(&once, "node-b", secs(21));
    let record_completed = JobWrite::RecordFinished {
        job: &twice_job,
        state: JobState::Completed,
        reason: None,
    };
    assert_eq!(
        write_with_job(store, &caller, &once_task, 1, record_completed)
            .await
            .unwrap(),
        2
    );
    let job = job_of(&once).await.unwrap();
    assert_eq!(
        (job.state, job.reason, job.node.as_str(), job.created_at),
        (JobState::Completed, None, "node-b", secs(21)),
        "RecordFinished replaces a finished job"
    );

    // A finish must be to a finished state, and of a job that exists; either
    // failure leaves the task unwritten.
    let not_finished = JobWrite::Finish {
        state: JobState::Running,
        reason: None,
        at: secs(22),
    };
    assert!(matches!(
        write_with_job(store, &caller, &once_task, 2, not_finished).await,
        Err(StoreError::Invalid(_))
    ));
    let jobless = format!("jw-jobless-{}", a2a_core::new_id());
    let jobless_task = task_at(&jobless, "c", Some(1_000), TaskState::Working);
    store
        .create(
            &caller,
            &jobless_task,
            &Cause::event(&status_event(&jobless_task)),
        )
        .await
        .unwrap();
    assert!(matches!(
        write_with_job(store, &caller, &jobless_task, 1, finish).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(version_of(&once).await.unwrap(), 2);
    assert_eq!(version_of(&jobless).await.unwrap(), 1);
    assert_eq!(job_of(&jobless).await, None);

    // A stale version still fails as a conflict, and writes no job.
    // Bound first: Rust 1.85 (the MSRV) does not extend a temporary's life
    // through an enum variant's constructor.
    let stale_job = new(&jobless, "node-a", secs(23));
    let stale = JobWrite::Record(&stale_job);
    assert!(matches!(
        write_with_job(store, &caller, &jobless_task, 7, stale).await,
        Err(StoreError::Conflict { found: 1, .. })
    ));
    assert_eq!(job_of(&jobless).await, None);

    // Writes at the same moment (one commit group, in a store that groups
    // them): the refused one fails alone, its neighbours land.
    let fresh = format!("jw-fresh-{}", a2a_core::new_id());
    let fresh_task = task_at(&fresh, "c", Some(1_000), TaskState::Submitted);
    let fresh_job = new(&fresh, "node-a", secs(30));
    let refused_job = new(&busy, "node-b", secs(30));
    let jobless_event = status_event(&jobless_task);
    let plain_cause = Cause::event(&jobless_event);
    let (refused, recorded, plain) = tokio::join!(
        write_with_job(
            store,
            &caller,
            &busy_task,
            0,
            JobWrite::Record(&refused_job)
        ),
        write_with_job(store, &caller, &fresh_task, 0, JobWrite::Record(&fresh_job)),
        store.update(&caller, &jobless_task, 1, &plain_cause),
    );
    assert!(matches!(refused, Err(StoreError::AlreadyExists(_))));
    assert_eq!((recorded.unwrap(), plain.unwrap()), (1, 2));
    assert_eq!(job_of(&fresh).await.unwrap().state, JobState::Running);
    assert!(matches!(
        version_of(&busy).await,
        Err(StoreError::NotFound(_))
    ));
    totals::total_size_follows_retention(store).await;
}

/// Creates `task` (`version` 0) or updates it from `version`, with `job`.
async fn write_with_job<S: TaskStore>(
    store: &S,
    caller: &Caller,
    task: &Task,
    version: u64,
    job: JobWrite<'_>,
) -> Result<u64, StoreError> {
    let event = status_event(task);
    let cause = Cause::event(&event).with_job(job);
    if version == 0 {
        store.create(caller, task, &cause).await
    } else {
        store.update(caller, task, version, &cause).await
    }
}

/// Runs every [`JobStore`] transition against `store`, which must hold no
/// other jobs (recovery and listings see all of them).
pub async fn job_store_suite<S: JobStore>(store: &S) {
    let t0 = at_ms(1_800_000_000_000);
    let secs = |n: i64| t0 + TimeDelta::seconds(n);
    let owner = caller_in(&fresh_tenant(), "alice");
    let new = |task_id: &'static str, node: &'static str, at| NewJob {
        task_id,
        owner: &owner,
        node,
        request: r#"{"message":{"text":"hi"}}"#,
        at,
    };

    // record
    store.record(&new("j1", "node-a", secs(0))).await.unwrap();
    let job = store.get("j1").await.unwrap().unwrap();
    assert_eq!(
        (
            job.state,
            job.node.as_str(),
            job.attempts,
            job.heartbeat,
            job.created_at,
            job.updated_at,
            job.reason.as_deref()
        ),
        (
            JobState::Running,
            "node-a",
            1,
            secs(0),
            secs(0),
            secs(0),
            None
        ),
        "a recorded job is RUNNING on its node, first attempt"
    );
    assert_eq!(job.owner, owner);
    assert_eq!(job.request, r#"{"message":{"text":"hi"}}"#);
    assert!(
        matches!(
            store.record(&new("j1", "node-b", secs(1))).await,
            Err(StoreError::AlreadyExists(_))
        ),
        "an unfinished job of the task cannot be recorded again"
    );
    assert_eq!(store.get("nope").await.unwrap(), None);

    // heartbeat: every RUNNING job of the node, nothing else.
    store.record(&new("j2", "node-a", secs(1))).await.unwrap();
    store.record(&new("j3", "node-b", secs(1))).await.unwrap();
    store.record(&new("j4", "node-a", secs(1))).await.unwrap();
    store
        .finish("j4", JobState::Completed, None, secs(2))
        .await
        .unwrap();
    assert_eq!(store.heartbeat("node-a", secs(5)).await.unwrap(), 2);
    assert_eq!(store.get("j1").await.unwrap().unwrap().heartbeat, secs(5));
    assert_eq!(store.get("j2").await.unwrap().unwrap().heartbeat, secs(5));
    assert_eq!(
        store.get("j3").await.unwrap().unwrap().heartbeat,
        secs(1),
        "another node's job keeps its heartbeat"
    );
    assert_eq!(
        store.get("j4").await.unwrap().unwrap().heartbeat,
        secs(1),
        "a finished job keeps its heartbeat"
    );
    assert_eq!(store.heartbeat("node-z", secs(5)).await.unwrap(), 0);

    // finish
    let finished = store.get("j4").await.unwrap().unwrap();
    assert_eq!(
        (finished.state, finished.updated_at),
        (JobState::Completed, secs(2))
    );
    for state in [JobState::Pending, JobState::Running] {
        assert!(
            matches!(
                store.finish("j1", state, None, secs(6)).await,
                Err(StoreError::Invalid(_))
            ),
            "finishing as {state} is Invalid"
        );
    }
    assert!(matches!(
        store.finish("nope", JobState::Failed, None, secs(6)).await,
        Err(StoreError::NotFound(_))
    ));
    // A finished job is replaced by the task's next turn.
    store.record(&new("j4", "node-b", secs(7))).await.unwrap();
    let replaced = store.get("j4").await.unwrap().unwrap();
    assert_eq!(
        (
            replaced.state,
            replaced.node.as_str(),
            replaced.attempts,
            replaced.created_at
        ),
        (JobState::Running, "node-b", 1, secs(7)),
        "recording over a finished job starts afresh"
    );
    store
        .finish("j4", JobState::Failed, Some("agent error: boom"), secs(8))
        .await
        .unwrap();
    let failed = store.get("j4").await.unwrap().unwrap();
    assert_eq!(
        (failed.state, failed.reason.as_deref()),
        (JobState::Failed, Some("agent error: boom"))
    );

    // release and claim
    store.release("j2", secs(9)).await.unwrap();
    let released = store.get("j2").await.unwrap().unwrap();
    assert_eq!(
        (released.state, released.updated_at),
        (JobState::Pending, secs(9))
    );
    store.release("j4", secs(9)).await.unwrap();
    assert_eq!(
        store.get("j4").await.unwrap().unwrap().state,
        JobState::Failed,
        "releasing a finished job changes nothing"
    );
    store.release("nope", secs(9)).await.unwrap();
    assert!(store.claim("j2", "node-c", secs(10)).await.unwrap());
    let claimed = store.get("j2").await.unwrap().unwrap();
    assert_eq!(
        (
            claimed.state,
            claimed.node.as_str(),
            claimed.attempts,
            claimed.heartbeat
        ),
        (JobState::Running, "node-c", 2, secs(10)),
        "a claim runs the job on the claiming node, one more attempt"
    );
    assert!(
        !store.claim("j2", "node-d", secs(11)).await.unwrap(),
        "a running job cannot be claimed"
    );
    assert!(!store.claim("j4", "node-d", secs(11)).await.unwrap());
    store.release("j2", secs(11)).await.unwrap();
    let claims =
        ["node-x", "node-y", "node-z", "node-c"].map(|node| store.claim("j2", node, secs(12)));
    let won: Vec<bool> = futures::future::join_all(claims)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "exactly one of concurrent claims wins: {won:?}"
    );
    let winner = ["node-x", "node-y", "node-z", "node-c"][won.iter().position(|w| *w).unwrap()];
    let reclaimed = store.get("j2").await.unwrap().unwrap();
    assert_eq!((reclaimed.node.as_str(), reclaimed.attempts), (winner, 3));
    // Back where the rest of the suite expects it: running on node-c with heartbeat 10.
    store.release("j2", secs(12)).await.unwrap();
    assert!(store.claim("j2", "node-c", secs(10)).await.unwrap());
    assert!(!store.claim("nope", "node-d", secs(11)).await.unwrap());
    assert_eq!(store.get("j2").await.unwrap().unwrap().node, "node-c");

    // recover: j1 (node-a, heartbeat 5) and j3 (node-b, heartbeat 1) and j2
    // (node-c, heartbeat 10) are running; j5 is left pending by a clean shutdown.
    store.record(&new("j5", "node-a", secs(3))).await.unwrap();
    store.release("j5", secs(4)).await.unwrap();
    let recovered = store.recover(secs(4), secs(20)).await.unwrap();
    let abandoned: Vec<&str> = recovered
        .abandoned
        .iter()
        .map(|j| j.task_id.as_str())
        .collect();
    assert_eq!(abandoned, ["j3"], "a stale running job is abandoned");
    let pending: Vec<&str> = recovered
        .pending
        .iter()
        .map(|j| j.task_id.as_str())
        .collect();
    assert_eq!(
        pending,
        ["j1", "j2", "j5"],
        "every pending job afterwards, oldest first"
    );
    assert!(
        recovered
            .pending
            .iter()
            .all(|j| j.state == JobState::Pending)
    );
    let j3 = store.get("j3").await.unwrap().unwrap();
    assert_eq!(
        (j3.state, j3.reason.as_deref(), j3.updated_at),
        (JobState::Abandoned, Some(ABANDONED_REASON), secs(20))
    );
    let j1 = store.get("j1").await.unwrap().unwrap();
    assert_eq!((j1.state, j1.updated_at), (JobState::Pending, secs(20)));
    assert_eq!(
        store.get("j5").await.unwrap().unwrap().updated_at,
        secs(4),
        "a job already pending is left as it was"
    );
    assert_eq!(
        store.heartbeat("node-a", secs(21)).await.unwrap(),
        0,
        "pending jobs take no heartbeat"
    );
    let again = store.recover(secs(4), secs(22)).await.unwrap();
    assert!(again.abandoned.is_empty());
    assert_eq!(again.pending.len(), 3, "recovery is repeatable");

    // list: newest update first, ties by task id descending, filtered, paged.
    // Updated at: j1 20, j2 20, j3 20, j4 8, j5 4.
    let all = store.list(&JobFilter::new(100)).await.unwrap();
    let order: Vec<&str> = all.iter().map(|j| j.task_id.as_str()).collect();
    assert_eq!(order, ["j3", "j2", "j1", "j4", "j5"]);
    let mut paged = Vec::new();
    let mut filter = JobFilter::new(2);
    loop {
        let page = store.list(&filter).await.unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        filter = JobFilter::new(2).after(last.cursor());
        paged.extend(page.iter().map(|j| j.task_id.clone()));
    }
    assert_eq!(paged, order, "pages by cursor cover every job once");
    let pending = store
        .list(&JobFilter::new(10).state(JobState::Pending))
        .await
        .unwrap();
    let pending: Vec<&str> = pending.iter().map(|j| j.task_id.as_str()).collect();
    assert_eq!(pending, ["j2", "j1", "j5"], "state filter");
    assert!(store.list(&JobFilter::new(0)).await.unwrap().is_empty());

    // finished_before: finished jobs only, oldest first, at most limit.
    store
        .finish("j1", JobState::Completed, None, secs(30))
        .await
        .unwrap();
    let old = store.finished_before(secs(25), 10).await.unwrap();
    let old: Vec<&str> = old.iter().map(|j| j.task_id.as_str()).collect();
    assert_eq!(
        old,
        ["j4", "j3"],
        "finished before the cutoff, oldest first"
    );
    let old = store.finished_before(secs(31), 1).await.unwrap();
    assert_eq!(old.len(), 1, "at most limit");
    assert_eq!(old[0].task_id, "j4");
    assert!(store.finished_before(secs(8), 10).await.unwrap().is_empty());

    // remove
    store.remove("j4").await.unwrap();
    store.remove("j4").await.unwrap();
    assert_eq!(store.get("j4").await.unwrap(), None);
    store.record(&new("j4", "node-a", secs(40))).await.unwrap();
    assert_eq!(store.get("j4").await.unwrap().unwrap().attempts, 1);
}

/// Cluster leases ([`JobStore::take_over`]): expired leases go back to
/// PENDING for any node to claim, live ones stay, long-dead ones are
/// abandoned, a restarted node gets its own jobs back, and a claim is won once.
pub async fn lease_suite<S: JobStore>(store: &S) {
    let t0 = at_ms(1_800_000_000_000);
    let secs = |n: i64| t0 + TimeDelta::seconds(n);
    let owner = caller_in(&fresh_tenant(), "alice");
    let record = |task_id: &'static str, node: &'static str, at| {
        let owner = owner.clone();
        async move {
            let job = NewJob {
                task_id,
                owner: &owner,
                node,
                request: "{}",
                at,
            };
            store.record(&job).await.unwrap();
        }
    };
    record("lease-live", "node-a", secs(0)).await;
    record("lease-dead", "node-b", secs(1)).await;
    record("lease-old", "node-c", secs(-7200)).await;
    record("lease-mine", "node-d", secs(9)).await;
    store.heartbeat("node-a", secs(9)).await.unwrap();

    let pass = |at| LeasePass::new(at, TimeDelta::seconds(5), TimeDelta::hours(1));
    let ids = |jobs: &[Job]| jobs.iter().map(|j| j.task_id.clone()).collect::<Vec<_>>();
    let found = store.take_over(&pass(secs(10))).await.unwrap();
    assert_eq!(ids(&found.abandoned), ["lease-old"]);
    assert_eq!(found.abandoned[0].reason.as_deref(), Some(ABANDONED_REASON));
    assert_eq!(ids(&found.pending), ["lease-dead"]);
    let live = store.get("lease-live").await.unwrap().unwrap();
    assert_eq!(
        (live.state, live.node.as_str()),
        (JobState::Running, "node-a")
    );

    // Passes may run on every node at any time: the second changes nothing.
    let again = store.take_over(&pass(secs(10))).await.unwrap();
    assert!(again.abandoned.is_empty());
    assert_eq!(ids(&again.pending), ["lease-dead"]);

    // Two nodes claim the orphan: one wins, on its next attempt.
    assert!(store.claim("lease-dead", "node-c", secs(11)).await.unwrap());
    assert!(!store.claim("lease-dead", "node-a", secs(11)).await.unwrap());
    let taken = store.get("lease-dead").await.unwrap().unwrap();
    assert_eq!(
        (taken.state, taken.node.as_str(), taken.attempts),
        (JobState::Running, "node-c", 2)
    );

    // A node back under its old name takes back its jobs at once, fresh
    // heartbeat or not; nobody else's.
    let back = store
        .take_over(&pass(secs(12)).restarted("node-d"))
        .await
        .unwrap();
    assert_eq!(ids(&back.pending), ["lease-mine"]);
    assert_eq!(
        store.get("lease-live").await.unwrap().unwrap().state,
        JobState::Running
    );

    // The PENDING list is bounded, oldest first.
    store
        .finish("lease-mine", JobState::Completed, None, secs(12))
        .await
        .unwrap();
    record("lease-p1", "node-e", secs(20)).await;
    record("lease-p2", "node-e", secs(21)).await;
    let bounded = store.take_over(&pass(secs(40)).limit(1)).await.unwrap();
    assert_eq!(ids(&bounded.pending), ["lease-live"]);
    let all = store.take_over(&pass(secs(40))).await.unwrap();
    assert_eq!(
        ids(&all.pending),
        ["lease-live", "lease-dead", "lease-p1", "lease-p2"]
    );
}
