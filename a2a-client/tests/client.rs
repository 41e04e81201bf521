//! Transport choice, retries (on a paused clock) and interceptors, against a
//! scripted in-memory transport.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::{
    CallOptions, ClientBuilder, ClientError, ClientErrorKind, ClientInterceptor, EventStream,
    RetryPolicy, Transport,
};
use a2a_core::operation::{Request, Response, UnaryResponse};
use a2a_core::*;
use async_trait::async_trait;
use futures::StreamExt;

/// Answers each call with the next scripted outcome and records the options it saw.
#[derive(Default)]
struct Scripted {
    outcomes: Mutex<VecDeque<Result<(), ClientError>>>,
    seen: Mutex<Vec<CallOptions>>,
}

impl Scripted {
    fn next(&self, options: &CallOptions) -> Result<(), ClientError> {
        self.seen.lock().unwrap().push(options.clone());
        self.outcomes.lock().unwrap().pop_front().unwrap_or(Ok(()))
    }
}

fn task() -> Task {
    Task::new("t", "c", TaskState::Completed)
}

/// The scripted transport, shared with the test that inspects it.
struct Fake(Arc<Scripted>);

#[async_trait]
impl Transport for Fake {
    async fn call(&self, request: Request, o: &CallOptions) -> Result<UnaryResponse, ClientError> {
        self.0.next(o)?;
        Ok(match request {
            Request::SendMessage(_) => Response::SendMessage(task().into()),
            Request::GetTask(_) | Request::CancelTask(_) => Response::Task(task()),
            Request::ListTasks(_) => Response::ListTasks(ListTasksResponse::default()),
            Request::CreatePushConfig(config) => Response::PushConfig(config),
            Request::GetPushConfig(_) => {
                Response::PushConfig(TaskPushNotificationConfig::default())
            }
            Request::ListPushConfigs(_) => {
                Response::PushConfigs(ListTaskPushNotificationConfigsResponse::default())
            }
            // The wrong kind of answer, which the client must refuse.
            Request::DeletePushConfig(_) => Response::Task(task()),
            Request::GetExtendedAgentCard(_) => Response::AgentCard(Box::default()),
            other => return Err(a2a_client::wrong_way(&other)),
        })
    }

    async fn stream(&self, request: Request, o: &CallOptions) -> Result<EventStream, ClientError> {
        if !request.method().is_streaming() {
            return Err(a2a_client::wrong_way(&request));
        }
        self.0.next(o)?;
        Ok(Box::pin(futures::stream::iter([Ok(StreamResponse::Task(
            task(),
        ))])))
    }
}

fn builder(scripted: &Arc<Scripted>) -> ClientBuilder {
    let transport = scripted.clone();
    ClientBuilder::new()
        .transport("FAKE", move |_: &AgentInterface| {
            Ok(Arc::new(Fake(transport.clone())) as Arc<dyn Transport>)
        })
        .prefer(["FAKE"])
        .retry(RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        })
}

fn fake_card() -> AgentCard {
    AgentCard::new("fake", "scripted").with_interface("mem://fake", "FAKE")
}

fn connection_error() -> ClientError {
    ClientError::new(ClientErrorKind::Connection, "connection refused")
}

#[test]
fn transport_choice_follows_preference_then_card_order_and_version() {
    let card = AgentCard::new("a", "b")
        .with_interface("grpc.example:443", binding::GRPC)
        .with_interface("https://example/rest", binding::HTTP_JSON)
        .with_interface("https://example/rpc", binding::JSONRPC);
    // gRPC is not registered here; JSON-RPC is preferred by default.
    assert_eq!(
        ClientBuilder::new().choose(&card).unwrap().protocol_binding,
        binding::JSONRPC
    );
    let rest = ClientBuilder::new()
        .prefer([binding::HTTP_JSON])
        .choose(&card)
        .unwrap();
    assert_eq!(rest.url, "https://example/rest");
    let mut future = card.clone();
    for interface in &mut future.supported_interfaces {
        interface.protocol_version = "2.0".into();
    }
    let err = ClientBuilder::new().choose(&future).unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Unsupported);
    // A minor version of the same major is fine.
    let mut minor = card;
    minor.supported_interfaces[2].protocol_version = "1.1".into();
    assert!(ClientBuilder::new().choose(&minor).is_ok());
}

#[tokio::test(start_paused = true)]
async fn idempotent_calls_retry_with_exponential_backoff() {
    let scripted = Arc::new(Scripted::default());
    scripted.outcomes.lock().unwrap().extend([
        Err(connection_error()),
        Err(ClientError::new(ClientErrorKind::Timeout, "slow")),
    ]);
    let client = builder(&scripted).build(fake_card()).unwrap();
    let started = tokio::time::Instant::now();
    client
        .get_task(
            GetTaskRequest {
                id: "t".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(3), "1 s then 2 s");
    assert_eq!(scripted.seen.lock().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn final_errors_and_non_idempotent_calls_are_not_retried() {
    let scripted = Arc::new(Scripted::default());
    let client = builder(&scripted).build(fake_card()).unwrap();
    for error in [
        ClientError::from(A2aError::task_not_found("t")),
        ClientError::new(ClientErrorKind::Decode, "garbage"),
    ] {
        scripted.outcomes.lock().unwrap().push_back(Err(error));
        assert!(
            client
                .get_task(GetTaskRequest::default(), None)
                .await
                .is_err()
        );
    }
    scripted
        .outcomes
        .lock()
        .unwrap()
        .push_back(Err(connection_error()));
    assert!(
        client
            .send_message(SendMessageRequest::new(Message::user_text("x")), None)
            .await
            .is_err()
    );
    assert_eq!(scripted.seen.lock().unwrap().len(), 3, "one attempt each");
}

#[tokio::test(start_paused = true)]
async fn send_message_retries_only_when_opted_in_with_a_fixed_id() {
    let scripted = Arc::new(Scripted::default());
    let policy = RetryPolicy {
        jitter: 0.0,
        retry_send_message: true,
        ..RetryPolicy::default()
    };
    let client = builder(&scripted).retry(policy).build(fake_card()).unwrap();
    scripted
        .outcomes
        .lock()
        .unwrap()
        .extend([Err(connection_error())]);
    let started = tokio::time::Instant::now();
    let message = Message::user_text("x").with_message_id("fixed-id");
    client
        .send_message(SendMessageRequest::new(message), None)
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(scripted.seen.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn too_many_requests_waits_for_retry_after_and_gives_up_after_max() {
    let scripted = Arc::new(Scripted::default());
    let client = builder(&scripted).build(fake_card()).unwrap();
    let limited = || {
        let mut err = ClientError::new(ClientErrorKind::Http, "429");
        err = err
            .with_http_status(429)
            .with_retry_after(Some(Duration::from_secs(5)));
        err
    };
    scripted.outcomes.lock().unwrap().extend([
        Err(limited()),
        Err(limited()),
        Err(limited()),
        Err(limited()),
    ]);
    let started = tokio::time::Instant::now();
    let err = client
        .list_tasks(ListTasksRequest::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(15),
        "three 5 s waits, then give up"
    );
    assert_eq!(scripted.seen.lock().unwrap().len(), 4);
}

#[derive(Default)]
struct Recorder {
    after: Mutex<Vec<(Method, bool)>>,
}

struct Rec(Arc<Recorder>);

impl ClientInterceptor for Rec {
    fn before(
        &self,
        _: Method,
        options: &mut CallOptions,
        card: Option<&AgentCard>,
    ) -> Result<(), ClientError> {
        options.headers.push((
            "x-agent".into(),
            card.map(|c| c.name.clone()).unwrap_or_default(),
        ));
        Ok(())
    }
    fn after(&self, method: Method, error: Option<&ClientError>) {
        self.0.after.lock().unwrap().push((method, error.is_some()));
    }
    fn on_event(&self, _: Method, event: &mut StreamResponse) {
        if let StreamResponse::Task(task) = event {
            task.metadata = Some(Metadata::from_iter([("seen".into(), true.into())]));
        }
    }
}

#[tokio::test]
async fn interceptors_see_calls_outcomes_and_stream_events() {
    let scripted = Arc::new(Scripted::default());
    let recorder = Arc::new(Recorder::default());
    let client = builder(&scripted)
        .interceptor(Rec(recorder.clone()))
        .build(fake_card())
        .unwrap();
    client
        .get_task(GetTaskRequest::default(), None)
        .await
        .unwrap();
    let events: Vec<_> = client
        .send_streaming_message(SendMessageRequest::default(), None)
        .await
        .unwrap()
        .collect()
        .await;
    let StreamResponse::Task(task) = events[0].as_ref().unwrap() else {
        panic!()
    };
    assert!(
        task.metadata
            .as_ref()
            .is_some_and(|m| m.contains_key("seen"))
    );
    let seen = scripted.seen.lock().unwrap();
    assert!(
        seen[0]
            .headers
            .contains(&("x-agent".to_owned(), "fake".to_owned()))
    );
    // Every call carries the protocol version.
    assert_eq!(
        seen[0].service_params()[0],
        ("A2A-Version".to_owned(), "1.0".to_owned())
    );
    assert_eq!(
        *recorder.after.lock().unwrap(),
        [
            (Method::GetTask, false),
            (Method::SendStreamingMessage, false)
        ]
    );
}

#[tokio::test]
async fn an_answer_of_the_wrong_kind_is_an_error_not_a_panic() {
    let scripted = Arc::new(Scripted::default());
    let client = builder(&scripted).build(fake_card()).unwrap();
    let err = client
        .delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest {
                task_id: "t".into(),
                id: "p".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Decode);
    assert!(err.to_string().contains("Task"), "{err}");
    // The typed operations each reach the transport the right way.
    client.get_extended_agent_card(None).await.unwrap();
    let events: Vec<_> = client
        .subscribe_to_task(
            SubscribeToTaskRequest {
                id: "t".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(events.len(), 1);
}
