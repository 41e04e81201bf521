//! Every operation over real sockets, on each binding (same test bodies).
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};

use a2a_core::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, Message, Part, SendMessageConfiguration, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, TaskPushNotificationConfig, TaskState,
};
use futures::StreamExt;
use support::*;

async fn send_blocking_completes(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let task = send_task(&client, request("echo hello world")).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "hello world");
    assert_eq!(task.history.len(), 1);
    assert_eq!(task.history[0].text(), "echo hello world");
    assert_eq!(task.history[0].task_id, task.id);
    assert!(!task.context_id.is_empty());
}

async fn message_only_reply(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let response = client
        .send_message(request("message hi"), None)
        .await
        .unwrap();
    let SendMessageResponse::Message(message) = response else {
        panic!("expected a message")
    };
    assert_eq!(message.text(), "reply: hi");
    assert!(!message.context_id.is_empty());
}

async fn return_immediately_then_poll(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let task = send_task(&client, immediate("slow 300")).await;
    assert!(task.status.state.is_active(), "got {}", task.status.state);
    let done = wait_for_state(&client, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "done");
}

async fn multi_turn_follow_up(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let first = send_task(&client, request("input")).await;
    assert_eq!(first.status.state, TaskState::InputRequired);
    let follow_up = Message::user_text("echo thanks").with_task_id(first.id.clone());
    let done = send_task(&client, a2a_core::SendMessageRequest::new(follow_up)).await;
    assert_eq!(done.id, first.id);
    assert_eq!(done.context_id, first.context_id);
    assert_eq!(done.status.state, TaskState::Completed);
    let texts: Vec<String> = done.history.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["input", "more please", "echo thanks"]);

    // A terminal task takes no more messages; unknown ids and foreign contexts are errors.
    let again = Message::user_text("echo x").with_task_id(first.id.clone());
    let err = client
        .send_message(a2a_core::SendMessageRequest::new(again), None)
        .await;
    assert_eq!(protocol_kind(err), ErrorKind::UnsupportedOperation);
    let unknown = Message::user_text("echo x").with_task_id("no-such-task");
    let err = client
        .send_message(a2a_core::SendMessageRequest::new(unknown), None)
        .await;
    assert_eq!(protocol_kind(err), ErrorKind::TaskNotFound);
    let open = send_task(&client, request("input")).await;
    let mismatch = Message::user_text("echo x")
        .with_task_id(open.id)
        .with_context_id("other-context");
    let err = client
        .send_message(a2a_core::SendMessageRequest::new(mismatch), None)
        .await;
    assert_eq!(protocol_kind(err), ErrorKind::InvalidParams);
}

async fn streaming_events_in_order(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let stream = client
        .send_streaming_message(request("stream 3"), None)
        .await
        .unwrap();
    let events = collect(stream).await;
    assert!(
        matches!(&events[0], StreamResponse::Task(t) if t.status.state == TaskState::Submitted)
    );
    assert_eq!(events[1].state(), Some(TaskState::Working));
    let chunks: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::ArtifactUpdate(u) => {
                Some(u.artifact.parts[0].as_text().unwrap_or("").to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(chunks, ["chunk-0 ", "chunk-1 ", "chunk-2 "]);
    assert_eq!(
        events.last().and_then(StreamResponse::state),
        Some(TaskState::Completed)
    );
    let task_id = events[0].task_id().to_owned();
    let stored = client
        .get_task(
            GetTaskRequest {
                id: task_id,
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(stored.artifacts.len(), 1);
    assert_eq!(stored.artifacts[0].parts.len(), 3);

    let stream = client
        .send_streaming_message(request("message m"), None)
        .await
        .unwrap();
    let events = collect(stream).await;
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], StreamResponse::Message(m) if m.text() == "reply: m"));
}

async fn get_task_history_and_errors(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let task = send_task(&client, request("echo a")).await;
    let get = |history_length| GetTaskRequest {
        id: task.id.clone(),
        history_length,
        ..Default::default()
    };
    assert_eq!(
        client
            .get_task(get(None), None)
            .await
            .unwrap()
            .history
            .len(),
        1
    );
    assert!(
        client
            .get_task(get(Some(0)), None)
            .await
            .unwrap()
            .history
            .is_empty()
    );
    let err = client.get_task(get(Some(-1)), None).await;
    assert_eq!(protocol_kind(err), ErrorKind::InvalidParams);
    let err = client
        .get_task(
            GetTaskRequest {
                id: "nope".into(),
                ..Default::default()
            },
            None,
        )
        .await;
    assert_eq!(protocol_kind(err), ErrorKind::TaskNotFound);
}

async fn list_tasks_filters_and_pages(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let first = send_task(&client, request("stream 1")).await;
    let context = first.context_id.clone();
    for _ in 0..2 {
        let message = Message::user_text("stream 1").with_context_id(context.clone());
        let task = send_task(&client, a2a_core::SendMessageRequest::new(message)).await;
        assert_eq!(task.context_id, context);
    }
    send_task(&client, request("input")).await;

    let by_context = ListTasksRequest {
        context_id: context.clone(),
        ..Default::default()
    };
    let page = client.list_tasks(by_context.clone(), None).await.unwrap();
    assert_eq!(
        (page.total_size, page.tasks.len(), page.page_size),
        (3, 3, 50)
    );
    assert_eq!(page.next_page_token, "");
    assert!(
        page.tasks.iter().all(|t| t.artifacts.is_empty()),
        "artifacts are dropped by default"
    );
    let stamps: Vec<_> = page.tasks.iter().map(|t| t.status.timestamp).collect();
    assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "newest first");

    let small = ListTasksRequest {
        page_size: Some(2),
        include_artifacts: Some(true),
        ..by_context
    };
    let one = client.list_tasks(small.clone(), None).await.unwrap();
    assert_eq!((one.tasks.len(), one.total_size), (2, 3));
    assert!(one.tasks.iter().all(|t| !t.artifacts.is_empty()));
    let two = client
        .list_tasks(
            ListTasksRequest {
                page_token: one.next_page_token.clone(),
                ..small
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(two.tasks.len(), 1);
    assert_eq!(two.next_page_token, "");

    let waiting = ListTasksRequest {
        status: TaskState::InputRequired,
        ..Default::default()
    };
    assert_eq!(
        client.list_tasks(waiting, None).await.unwrap().total_size,
        1
    );
    for size in [0, 101] {
        let err = client
            .list_tasks(
                ListTasksRequest {
                    page_size: Some(size),
                    ..Default::default()
                },
                None,
            )
            .await;
        assert_eq!(protocol_kind(err), ErrorKind::InvalidParams);
    }
}

async fn cancel_running_waiting_and_terminal(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let cancel = support::cancel_request;

    let running = send_task(&client, immediate("wait")).await;
    let canceled = client.cancel_task(cancel(&running.id), None).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // Canceling again returns the canceled task unchanged.
    let again = client.cancel_task(cancel(&running.id), None).await.unwrap();
    assert_eq!(again.status.state, TaskState::Canceled);

    let waiting = send_task(&client, request("input")).await;
    let canceled = client.cancel_task(cancel(&waiting.id), None).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);

    let done = send_task(&client, request("echo x")).await;
    assert_eq!(
        protocol_kind(client.cancel_task(cancel(&done.id), None).await),
        ErrorKind::TaskNotCancelable
    );
    assert_eq!(
        protocol_kind(client.cancel_task(cancel("nope"), None).await),
        ErrorKind::TaskNotFound
    );
}

async fn subscribe_to_waiting_task(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let waiting = send_task(&client, request("input")).await;
    let subscribe = |id: &str| SubscribeToTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    let mut stream = client
        .subscribe_to_task(subscribe(&waiting.id), None)
        .await
        .unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(&first, StreamResponse::Task(t) if t.status.state == TaskState::InputRequired)
    );

    let follow_up = Message::user_text("echo fine").with_task_id(waiting.id.clone());
    send_task(&client, a2a_core::SendMessageRequest::new(follow_up)).await;
    let rest = collect(stream).await;
    assert_eq!(
        rest.last().and_then(StreamResponse::state),
        Some(TaskState::Completed)
    );

    let err = client.subscribe_to_task(subscribe(&waiting.id), None).await;
    assert_eq!(protocol_kind(err), ErrorKind::UnsupportedOperation);
    assert_eq!(
        protocol_kind(client.subscribe_to_task(subscribe("nope"), None).await),
        ErrorKind::TaskNotFound
    );
}

async fn push_config_crud(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let task = send_task(&client, request("input")).await;
    let created = client
        .create_task_push_notification_config(
            TaskPushNotificationConfig::new(task.id.clone(), "https://hooks.example.com/a2a"),
            None,
        )
        .await
        .unwrap();
    assert!(!created.id.is_empty());
    assert_eq!(created.task_id, task.id);
    let get = GetTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: created.id.clone(),
        ..Default::default()
    };
    assert_eq!(
        client
            .get_task_push_notification_config(get.clone(), None)
            .await
            .unwrap(),
        created
    );
    let list = ListTaskPushNotificationConfigsRequest {
        task_id: task.id.clone(),
        ..Default::default()
    };
    assert_eq!(
        client
            .list_task_push_notification_configs(list.clone(), None)
            .await
            .unwrap()
            .configs,
        std::slice::from_ref(&created)
    );
    let delete = DeleteTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: created.id.clone(),
        ..Default::default()
    };
    client
        .delete_task_push_notification_config(delete.clone(), None)
        .await
        .unwrap();
    client
        .delete_task_push_notification_config(delete, None)
        .await
        .unwrap();
    assert_eq!(
        protocol_kind(client.get_task_push_notification_config(get, None).await),
        ErrorKind::TaskNotFound
    );
    assert!(
        client
            .list_task_push_notification_configs(list, None)
            .await
            .unwrap()
            .configs
            .is_empty()
    );

    let unknown = TaskPushNotificationConfig::new("nope", "https://hooks.example.com/a2a");
    assert_eq!(
        protocol_kind(
            client
                .create_task_push_notification_config(unknown, None)
                .await
        ),
        ErrorKind::TaskNotFound
    );
    let private = TaskPushNotificationConfig::new(task.id.clone(), "http://10.1.2.3/hook");
    assert_eq!(
        protocol_kind(
            client
                .create_task_push_notification_config(private, None)
                .await
        ),
        ErrorKind::InvalidParams
    );
}

/// A webhook receiver on loopback that records what it gets.
type Delivery = (axum::http::HeaderMap, serde_json::Value);

/// What a test webhook received, and a signal for each arrival.
#[derive(Default)]
struct Received {
    deliveries: Mutex<Vec<Delivery>>,
    arrived: tokio::sync::Notify,
}

impl Received {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Delivery>> {
        self.deliveries.lock().unwrap()
    }

    /// Waits (up to 20 s) until what arrived satisfies `done`.
    async fn wait_for(&self, done: impl Fn(&[Delivery]) -> bool) -> bool {
        let wait = async {
            loop {
                let arrival = self.arrived.notified();
                tokio::pin!(arrival);
                // Registered before looking, so an arrival in between is not missed.
                arrival.as_mut().enable();
                if done(&self.lock()) {
                    return;
                }
                arrival.await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), wait)
            .await
            .is_ok()
    }
}

async fn webhook() -> (String, Arc<Received>) {
    let received = Arc::new(Received::default());
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let sink = sink.clone();
                async move {
                    let value = serde_json::from_slice(&body).unwrap_or_default();
                    sink.lock().push((headers, value));
                    sink.arrived.notify_waiters();
                    "ok"
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

async fn push_delivery(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let (url, received) = webhook().await;
    let mut request = request("stream 2");
    request.configuration = Some(SendMessageConfiguration {
        task_push_notification_config: Some(TaskPushNotificationConfig {
            url,
            token: "tok-1".into(),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "cred-1".into(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    let task = send_task(&client, request).await;
    assert_eq!(task.status.state, TaskState::Completed);
    let seen_final = received
        .wait_for(|deliveries| {
            deliveries
                .iter()
                .any(|(_, body)| body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED")
        })
        .await;
    assert!(seen_final, "the webhook got the completion");
    let received = received.lock();
    // Task snapshot, working, two chunks, completed: every event, in order.
    let kinds: Vec<&str> = received
        .iter()
        .map(|(_, b)| {
            b.as_object()
                .and_then(|o| o.keys().next())
                .map_or("", String::as_str)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ]
    );
    let (headers, _) = &received[0];
    assert_eq!(headers["authorization"], "Bearer cred-1");
    assert_eq!(headers["a2a-notification-token"], "tok-1");
    assert_eq!(headers["x-a2a-notification-token"], "tok-1");
    assert_eq!(headers["content-type"], "application/a2a+json");
}

async fn extended_card_and_content_types(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    assert_eq!(
        client.get_extended_agent_card(None).await.unwrap().name,
        "extended"
    );
    let image = Message::user(vec![Part::raw(vec![1, 2]).with_media_type("image/png")]);
    let err = client
        .send_message(a2a_core::SendMessageRequest::new(image), None)
        .await;
    assert_eq!(protocol_kind(err), ErrorKind::ContentTypeNotSupported);
}

async fn agent_failures_become_failed_tasks(binding: &str) {
    let server = server().await;
    let client = client(&server, binding);
    let task = send_task(&client, request("panic")).await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        !status_text(&task).contains("secret"),
        "panic details must not leak: {}",
        status_text(&task)
    );
    let task = send_task(&client, request("fail")).await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(status_text(&task), "scripted failure");
    // The blocking call returns on AUTH_REQUIRED; the agent then finishes by itself.
    let task = send_task(&client, request("auth")).await;
    assert_eq!(task.status.state, TaskState::AuthRequired);
    wait_for_state(&client, &task.id, TaskState::Completed).await;
}

per_binding!(
    send_blocking_completes,
    message_only_reply,
    return_immediately_then_poll,
    multi_turn_follow_up,
    streaming_events_in_order,
    get_task_history_and_errors,
    list_tasks_filters_and_pages,
    cancel_running_waiting_and_terminal,
    subscribe_to_waiting_task,
    push_config_crud,
    push_delivery,
    extended_card_and_content_types,
    agent_failures_become_failed_tasks,
);
