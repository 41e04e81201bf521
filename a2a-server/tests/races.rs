//! Concurrency on the handler: cancel vs completion, several and stalled
//! subscribers, late subscribers, callers that leave, the watchdog, limits and
//! shutdown. (Client disconnects over each binding: e2e's `bindings.rs`.)
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use a2a_core::{
    CancelTaskRequest, ErrorKind, GetTaskRequest, Method, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use a2a_server::{
    CallContext, DefaultRequestHandler, EventStream, ExecutionConfig, RequestHandler, ServiceParams,
};
use futures::StreamExt;
use support::*;

fn ctx() -> CallContext {
    CallContext::new(Method::SendMessage, ServiceParams::new())
}

fn handler(configure: impl FnOnce(&mut ExecutionConfig)) -> DefaultRequestHandler {
    let mut config = ExecutionConfig::default();
    configure(&mut config);
    DefaultRequestHandler::builder(ScriptedAgent, card("127.0.0.1:1".parse().unwrap()))
        .execution_config(config)
        .build()
}

async fn start(handler: &DefaultRequestHandler, text: &str) -> Task {
    match handler.send_message(&ctx(), immediate(text)).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    }
}

/// Sends `text` and waits for the task to settle (terminal or interrupted).
async fn settled(handler: &DefaultRequestHandler, text: &str) -> Task {
    match handler.send_message(&ctx(), request(text)).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    }
}

async fn stored(handler: &DefaultRequestHandler, id: &str) -> Task {
    handler
        .get_task(
            &ctx(),
            GetTaskRequest {
                id: id.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
}

async fn subscribe(handler: &DefaultRequestHandler, id: &str) -> EventStream {
    handler
        .subscribe_to_task(
            &ctx(),
            SubscribeToTaskRequest {
                id: id.into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
}

async fn drain(stream: EventStream) -> Vec<StreamResponse> {
    tokio::time::timeout(
        Duration::from_secs(20),
        stream.map(|e| e.unwrap()).collect(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_completion_race_to_one_consistent_outcome() {
    let handler = handler(|_| {});
    let (mut canceled, mut completed) = (0, 0);
    for i in 0..40 {
        let task = start(&handler, &format!("slow {}", i % 3)).await;
        let outcome = handler
            .cancel_task(
                &ctx(),
                CancelTaskRequest {
                    id: task.id.clone(),
                    ..Default::default()
                },
            )
            .await;
        // Whatever won, the stored task agrees with what the canceler was told.
        let final_state = until_terminal(&handler, &ctx(), &task.id)
            .await
            .status
            .state;
        match outcome {
            Ok(task) => {
                assert_eq!(task.status.state, TaskState::Canceled);
                assert_eq!(final_state, TaskState::Canceled);
                canceled += 1;
            }
            Err(err) => {
                assert_eq!(err.kind(), ErrorKind::TaskNotCancelable, "{err}");
                assert_eq!(final_state, TaskState::Completed);
                completed += 1;
            }
        }
    }
    assert_eq!(canceled + completed, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_neither_blocks_the_agent_nor_the_others() {
    let handler = handler(|config| config.subscriber_buffer = 8);
    let task = settled(&handler, "input").await;
    // Three subscribers on a waiting task; the follow-up streams 30 chunks.
    let (a, b, stalled) = (
        subscribe(&handler, &task.id).await,
        subscribe(&handler, &task.id).await,
        subscribe(&handler, &task.id).await,
    );
    let readers = tokio::spawn(async move { tokio::join!(drain(a), drain(b)) });
    let follow_up = a2a_core::Message::user_text("stream 30").with_task_id(task.id.clone());
    let done = handler
        .send_message(&ctx(), a2a_core::SendMessageRequest::new(follow_up))
        .await
        .unwrap();
    let SendMessageResponse::Task(done) = done else {
        panic!()
    };
    assert_eq!(
        done.status.state,
        TaskState::Completed,
        "the agent finished while one subscriber never read"
    );

    let (a, b) = readers.await.unwrap();
    assert_eq!(a.len(), b.len());
    let kinds = |events: &[StreamResponse]| {
        events
            .iter()
            .map(|e| (e.task_id().to_owned(), e.state()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        kinds(&a),
        kinds(&b),
        "both readers saw the same events in the same order"
    );
    assert_eq!(
        a.last().and_then(StreamResponse::state),
        Some(TaskState::Completed)
    );

    // The stalled one fell behind its 8-event buffer: it is resynced with a
    // snapshot of the finished task instead of replaying everything.
    let stalled = drain(stalled).await;
    assert!(
        stalled.len() < a.len(),
        "stalled subscriber got {} events",
        stalled.len()
    );
    match stalled.last() {
        Some(StreamResponse::Task(task)) => {
            assert_eq!(task.status.state, TaskState::Completed);
            assert_eq!(task.artifacts[0].parts.len(), 30);
        }
        other => panic!("expected a resync snapshot, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_joining_mid_stream_gets_a_snapshot_then_the_rest() {
    let handler = handler(|_| {});
    let mut live = handler
        .send_streaming_message(&ctx(), request("stream 12"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
        .count()
        < 3
    {
        seen.push(live.next().await.unwrap().unwrap());
    }
    let task_id = seen[0].task_id().to_owned();
    let late = drain(subscribe(&handler, &task_id).await).await;
    let StreamResponse::Task(snapshot) = &late[0] else {
        panic!("first event must be the task")
    };
    let mut parts: Vec<String> = snapshot
        .artifacts
        .iter()
        .flat_map(|a| {
            a.parts
                .iter()
                .filter_map(|p| p.as_text().map(str::to_owned))
        })
        .collect();
    for event in &late[1..] {
        if let StreamResponse::ArtifactUpdate(update) = event {
            parts.extend(
                update
                    .artifact
                    .parts
                    .iter()
                    .filter_map(|p| p.as_text().map(str::to_owned)),
            );
        }
    }
    let expected: Vec<String> = (0..12).map(|i| format!("chunk-{i} ")).collect();
    assert_eq!(
        parts, expected,
        "snapshot plus later events: every chunk exactly once, in order"
    );
    assert_eq!(
        late.last().and_then(StreamResponse::state),
        Some(TaskState::Completed)
    );
    drop(live);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_caller_that_leaves_does_not_cut_off_the_agent() {
    // A blocking call drives its execution itself; when the caller goes away
    // (as hyper drops the call of a client that disconnected), the rest of the
    // execution must carry on without it.
    let handler = handler(|_| {});
    let caller = ctx();
    let call = handler.send_message(&caller, request("slow 300"));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), call)
            .await
            .is_err()
    );
    let listed = handler
        .list_tasks(&ctx(), a2a_core::ListTasksRequest::default())
        .await
        .unwrap();
    let [task] = listed.tasks.as_slice() else {
        panic!("expected one task, got {listed:?}")
    };
    assert_eq!(task.status.state, TaskState::Working);
    let done = tokio::time::timeout(
        Duration::from_secs(20),
        until_terminal(&handler, &ctx(), &task.id),
    )
    .await
    .expect("the agent was cut off with its caller");
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(status_text(&done), "done");
}

#[tokio::test(start_paused = true)]
async fn the_watchdog_fails_a_silent_agent() {
    let handler = handler(|config| config.inactivity_timeout = Some(Duration::from_secs(30)));
    // The blocking call returns when the watchdog fails the task (time is paused
    // and jumps ahead while everything waits).
    let response = handler.send_message(&ctx(), request("hang")).await.unwrap();
    let SendMessageResponse::Task(task) = response else {
        panic!()
    };
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        status_text(&task).contains("inactivity"),
        "{}",
        status_text(&task)
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_drains_then_fails_what_is_left() {
    let handler = handler(|_| {});
    let quick = start(&handler, "slow 500").await;
    let stuck = start(&handler, "hang").await;
    handler.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        stored(&handler, &quick.id).await.status.state,
        TaskState::Completed
    );
    let stuck = stored(&handler, &stuck.id).await;
    assert_eq!(stuck.status.state, TaskState::Failed);
    assert!(status_text(&stuck).contains("shut down"));
    let err = handler
        .send_message(&ctx(), request("echo late"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Internal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canceling_a_waiting_task_reaches_its_subscribers() {
    let handler = handler(|_| {});
    let task = settled(&handler, "input").await;
    let stream = subscribe(&handler, &task.id).await;
    handler
        .cancel_task(
            &ctx(),
            CancelTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let events = drain(stream).await;
    assert_eq!(
        events.first().and_then(StreamResponse::state),
        Some(TaskState::InputRequired)
    );
    assert_eq!(
        events.last().and_then(StreamResponse::state),
        Some(TaskState::Canceled)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_limits_per_caller_and_globally() {
    let handler = handler(|config| config.max_concurrent_per_caller = Some(1));
    let alice = as_user("alice", "");
    let busy = match handler
        .send_message(&alice, immediate("wait"))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    };
    let err = handler
        .send_message(&alice, request("echo x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    assert!(err.message().contains("limit"), "{err}");
    // Naming another tenant does not escape the limit: it is the identity's.
    let err = handler
        .send_message(&as_user("alice", "elsewhere"), request("echo x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    // Another caller is not affected by this caller's limit, nor are
    // anonymous callers (they share one identity: only the global limit).
    let other = as_user("bob", "");
    assert!(
        handler
            .send_message(&other, request("echo y"))
            .await
            .is_ok()
    );
    assert!(
        handler
            .send_message(&ctx(), request("echo y"))
            .await
            .is_ok()
    );
    handler
        .cancel_task(
            &alice,
            CancelTaskRequest {
                id: busy.id,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        handler
            .send_message(&alice, request("echo z"))
            .await
            .is_ok()
    );

    let global = self::handler(|config| config.max_concurrent = Some(1));
    start(&global, "wait").await;
    assert!(
        global
            .send_message(&other, request("echo y"))
            .await
            .is_err()
    );
}

fn as_user(name: &str, tenant: &str) -> CallContext {
    let mut ctx = ctx();
    ctx.user = a2a_server::User::authenticated(name);
    ctx.tenant = tenant.to_owned();
    ctx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriber_floods_are_refused_per_task_and_per_caller() {
    let handler = handler(|config| {
        config.max_subscribers_per_task = 3;
        config.max_subscribers_per_caller = 4;
    });
    let alice = as_user("alice", "");
    let bob = as_user("bob", "");
    let task = match handler
        .send_message(&alice, immediate("input"))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    };
    let subscribe = |who: &CallContext, id: &str| {
        let request = SubscribeToTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        };
        let who = who.clone();
        let handler = &handler;
        async move { handler.subscribe_to_task(&who, request).await }
    };
    // Wait until the task asks for input: it stays open, streams can attach.
    until_settled(&handler, &alice, &task.id).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(subscribe(&alice, &task.id).await.unwrap());
    }
    // The fourth on the same task is refused, for anyone.
    let err = subscribe(&alice, &task.id).await.err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    let err = subscribe(&bob, &task.id).await.err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    // One leaves: room again.
    open.pop();
    open.push(subscribe(&alice, &task.id).await.unwrap());

    // Per caller, across tasks: alice holds 3; a second task takes one more,
    // and the fifth subscription is refused wherever it is.
    let second = match handler
        .send_message(&alice, immediate("input"))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    };
    until_settled(&handler, &alice, &second.id).await;
    open.push(subscribe(&alice, &second.id).await.unwrap());
    let err = subscribe(&alice, &second.id).await.err().unwrap();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    assert!(err.message().contains("caller"), "{err}");
    drop(open);
    assert!(subscribe(&alice, &second.id).await.is_ok());
}

async fn until_settled(handler: &DefaultRequestHandler, who: &CallContext, id: &str) {
    for _ in 0..500 {
        let task = handler
            .get_task(
                who,
                GetTaskRequest {
                    id: id.to_owned(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        if task.status.state.is_settled() {
            return;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("task {id} did not settle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_invisible_to_other_callers() {
    let handler = handler(|_| {});
    let task = settled(&handler, "input").await;
    let mut bob = ctx();
    bob.user = a2a_server::User::authenticated("bob");
    let get = GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    assert_eq!(
        handler.get_task(&bob, get).await.unwrap_err().kind(),
        ErrorKind::TaskNotFound
    );
    let cancel = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    assert_eq!(
        handler.cancel_task(&bob, cancel).await.unwrap_err().kind(),
        ErrorKind::TaskNotFound
    );
    let sub = SubscribeToTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    assert_eq!(
        handler
            .subscribe_to_task(&bob, sub)
            .await
            .err()
            .map(|e| e.kind()),
        Some(ErrorKind::TaskNotFound)
    );
    let follow_up = a2a_core::Message::user_text("echo x").with_task_id(task.id.clone());
    let err = handler
        .send_message(&bob, a2a_core::SendMessageRequest::new(follow_up))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TaskNotFound);
    let list = handler.list_tasks(&bob, Default::default()).await.unwrap();
    assert_eq!(list.total_size, 0);
}

#[tokio::test]
async fn a_push_config_flood_is_refused_past_the_per_task_limit() {
    let limits = a2a_server::push::PushLimits {
        configs_per_task: 3,
        ..Default::default()
    };
    let handler =
        DefaultRequestHandler::builder(ScriptedAgent, card("127.0.0.1:1".parse().unwrap()))
            .push_limits(limits)
            .build();
    let task = start(&handler, "input").await;
    let config = |id: &str| a2a_core::TaskPushNotificationConfig {
        id: id.to_owned(),
        task_id: task.id.clone(),
        url: format!("https://example.com/hook/{id}"),
        ..Default::default()
    };
    for id in ["a", "b", "c"] {
        handler
            .create_task_push_notification_config(&ctx(), config(id))
            .await
            .unwrap();
    }
    let err = handler
        .create_task_push_notification_config(&ctx(), config("d"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidParams, "{err}");
    assert!(err.message().contains("delete one first"), "{err}");
    // Without an id, a new one too.
    assert!(
        handler
            .create_task_push_notification_config(&ctx(), config(""))
            .await
            .is_err()
    );
    // Replacing an existing one is fine; after a delete there is room.
    handler
        .create_task_push_notification_config(&ctx(), config("b"))
        .await
        .unwrap();
    handler
        .delete_task_push_notification_config(
            &ctx(),
            a2a_core::DeleteTaskPushNotificationConfigRequest {
                task_id: task.id.clone(),
                id: "a".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    handler
        .create_task_push_notification_config(&ctx(), config("d"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_kept_per_task_is_bounded() {
    let handler = handler(|config| config.max_history = Some(3));
    let first = match handler
        .send_message(&ctx(), request("input"))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    };
    assert_eq!(first.status.state, TaskState::InputRequired);
    // Each round adds the agent's question and the user's answer.
    for round in 0..5 {
        let mut message = a2a_core::Message::user_text(format!("input {round}"));
        message.task_id.clone_from(&first.id);
        let answer = handler
            .send_message(&ctx(), a2a_core::SendMessageRequest::new(message))
            .await
            .unwrap();
        let SendMessageResponse::Task(task) = answer else {
            panic!("expected a task");
        };
        assert!(
            task.history.len() <= 3,
            "round {round}: {}",
            task.history.len()
        );
    }
    let stored = handler
        .get_task(
            &ctx(),
            GetTaskRequest {
                id: first.id.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.history.len(), 3);
    // The newest are the ones kept.
    assert!(
        stored.history.iter().any(|m| m.text() == "input 4"),
        "{:?}",
        stored.history.iter().map(|m| m.text()).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_tasks_are_limited_per_caller_and_refreshed_from_the_store() {
    let store = a2a_server::store::InMemoryTaskStore::new();
    let mut config = ExecutionConfig::default();
    config.max_tasks_per_caller = Some(3);
    let handler =
        DefaultRequestHandler::builder(ScriptedAgent, card("127.0.0.1:1".parse().unwrap()))
            .execution_config(config)
            .task_store(store.clone())
            .build();
    let alice = as_user("alice", "");
    let mut kept = Vec::new();
    for n in 0..3 {
        match handler
            .send_message(&alice, request(&format!("input {n}")))
            .await
            .unwrap()
        {
            SendMessageResponse::Task(task) => kept.push(task),
            SendMessageResponse::Message(_) => panic!("expected a task"),
        }
    }
    let err = handler
        .send_message(&alice, request("echo one too many"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(60)));
    assert!(err.message().contains("3 tasks"), "{err}");
    // Naming another tenant does not escape the limit: it is the identity's.
    let err = handler
        .send_message(&as_user("alice", "elsewhere"), request("echo x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    // Continuing a stored task makes no new one: still allowed.
    let mut follow_up = request("echo more");
    follow_up.message.task_id.clone_from(&kept[0].id);
    handler.send_message(&alice, follow_up).await.unwrap();
    // Others are not affected, nor are anonymous callers (one shared space).
    handler
        .send_message(&as_user("bob", ""), request("echo b"))
        .await
        .unwrap();
    handler
        .send_message(&ctx(), request("echo anon"))
        .await
        .unwrap();
    assert_eq!(store.len(), 5);

    // A fresh handler on the same store reads alice's count from the store.
    let mut config = ExecutionConfig::default();
    config.max_tasks_per_caller = Some(3);
    let restarted =
        DefaultRequestHandler::builder(ScriptedAgent, card("127.0.0.1:1".parse().unwrap()))
            .execution_config(config)
            .task_store(store.clone())
            .build();
    let err = restarted
        .send_message(&alice, request("echo after restart"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
}
