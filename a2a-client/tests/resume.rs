//! Cut task streams resumed by the client, against agents on 127.0.0.1 that
//! answer from a script over JSON-RPC or HTTP+JSON: the catch-up from the
//! new subscription's snapshot (every event once, in order), the read of a
//! task that finished meanwhile, the next interface, giving up, and the
//! streams that are never resumed. (gRPC, and real servers cut by a relay
//! or a SIGKILL: e2e/tests/cluster_stream.rs.)

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::{
    CallOptions, Client, ClientBuilder, ClientError, EventStream, ResumePolicy, RetryPolicy,
};
use a2a_core::{
    AgentCard, Artifact, Message, Part, Role, SendMessageRequest, StreamResponse, Task, TaskState,
    TaskStatus, TaskStatusUpdateEvent, binding,
};
use axum::body::Body;
use axum::http::{Method, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Value, json};

/// How a scripted stream ends.
#[derive(Clone, Copy)]
enum End {
    /// The body says nothing more: cut by the client's idle timeout.
    Silent,
    /// The body just ends.
    Ends,
}

/// What the agent answers a call with.
#[derive(Clone)]
enum Answer {
    /// These events, then the end.
    Events(Vec<StreamResponse>, End),
    /// This task.
    Task(Box<Task>),
    /// A JSON-RPC error of this code.
    Error(i64),
    /// HTTP 500 with no A2A body.
    Broken,
}

/// The agent's script, and the operations it was called for, in order.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    calls: Mutex<Vec<String>>,
}

impl Script {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

/// The operation a request is for, on either binding.
fn operation(method: &Method, uri: &Uri, body: &str) -> (String, Value) {
    if let Ok(request) = serde_json::from_str::<Value>(body) {
        if let Some(name) = request["method"].as_str() {
            return (name.to_owned(), request["id"].clone());
        }
    }
    let path = uri.path();
    let name = if path.ends_with("message:stream") {
        "SendStreamingMessage"
    } else if path.ends_with(":subscribe") {
        "SubscribeToTask"
    } else if *method == Method::GET && path.contains("/tasks/") {
        "GetTask"
    } else {
        "other"
    };
    (name.to_owned(), Value::Null)
}

async fn answer(script: Arc<Script>, method: Method, uri: Uri, body: String) -> Response {
    let (name, id) = operation(&method, &uri, &body);
    let rest = id.is_null();
    script.calls.lock().unwrap().push(name);
    let next = script.answers.lock().unwrap().pop_front();
    let wrap = |result: Value| match rest {
        true => result,
        false => json!({"jsonrpc": "2.0", "id": id, "result": result}),
    };
    match next.unwrap_or(Answer::Broken) {
        Answer::Task(task) => axum::Json(wrap(serde_json::to_value(task).unwrap())).into_response(),
        Answer::Events(events, end) => {
            let chunks: Vec<Result<String, std::io::Error>> = events
                .iter()
                .map(|event| {
                    let data = wrap(serde_json::to_value(event).unwrap());
                    Ok(format!("data: {data}\n\n"))
                })
                .collect();
            let chunks = futures::stream::iter(chunks);
            let body = match end {
                End::Silent => Body::from_stream(chunks.chain(futures::stream::pending())),
                End::Ends => Body::from_stream(chunks),
            };
            ([("content-type", "text/event-stream")], body).into_response()
        }
        Answer::Error(code) => {
            let error = json!({"code": code, "message": "scripted"});
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response()
        }
        Answer::Broken => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
    }
}

/// An agent on 127.0.0.1 answering by `answers`; its base URL.
async fn agent(answers: Vec<Answer>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        answers: Mutex::new(answers.into()),
        ..Script::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shared = script.clone();
    let app = axum::Router::new().fallback(move |method: Method, uri: Uri, body: String| {
        answer(shared.clone(), method, uri, body)
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), script)
}

/// Pauses of a millisecond, three attempts.
fn quick() -> ResumePolicy {
    ResumePolicy {
        max_attempts: 3,
        first_pause: Duration::from_millis(1),
        longest_pause: Duration::from_millis(1),
        ..ResumePolicy::default()
    }
}

/// A client of the agents at `urls` (the first preferred) on `binding`.
fn client(urls: &[&str], binding: &str, policy: ResumePolicy) -> Client {
    let mut card = AgentCard::new("scripted", "answers from a script").with_streaming(true);
    for url in urls {
        let url = match binding {
            binding::JSONRPC => format!("{url}/"),
            _ => (*url).to_owned(),
        };
        card = card.with_interface(url, binding);
    }
    // A stream silent for this long counts as cut.
    let idle = CallOptions {
        idle_timeout: Some(Duration::from_millis(300)),
        ..CallOptions::default()
    };
    ClientBuilder::new()
        .retry(RetryPolicy::none())
        .default_options(idle)
        .resume_streams(policy)
        .build(card)
        .unwrap()
}

/// A status in `state` at second `second` of a minute (read as the wire
/// has it).
fn stamped(state: TaskState, second: u32) -> TaskStatus {
    let status = json!({
        "state": serde_json::to_value(state).unwrap(),
        "timestamp": format!("2026-01-01T00:00:{second:02}Z"),
    });
    serde_json::from_value(status).unwrap()
}

fn status(state: TaskState, second: u32) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        status: stamped(state, second),
        ..TaskStatusUpdateEvent::new("t-1", "c-1", state)
    })
}

fn artifact(id: &str, texts: &[&str]) -> Artifact {
    Artifact::new(texts.iter().map(|t| Part::text(*t)).collect()).with_id(id)
}

fn made(id: &str, texts: &[&str]) -> StreamResponse {
    StreamResponse::ArtifactUpdate(a2a_core::TaskArtifactUpdateEvent::new(
        "t-1",
        "c-1",
        artifact(id, texts),
    ))
}

fn appended(id: &str, texts: &[&str]) -> StreamResponse {
    StreamResponse::ArtifactUpdate(a2a_core::TaskArtifactUpdateEvent {
        append: true,
        ..a2a_core::TaskArtifactUpdateEvent::new("t-1", "c-1", artifact(id, texts))
    })
}

fn task(state: TaskState, second: u32, artifacts: Vec<Artifact>) -> Task {
    let mut task = Task::new("t-1", "c-1", state);
    task.status = stamped(state, second);
    task.artifacts = artifacts;
    task
}

async fn send(client: &Client) -> EventStream {
    client
        .send_streaming_message(SendMessageRequest::new(Message::user_text("go")), None)
        .await
        .unwrap()
}

/// Every event of `stream` (an error ends it).
async fn all(mut stream: EventStream) -> (Vec<StreamResponse>, Option<ClientError>) {
    let mut events = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => events.push(event),
                Err(err) => return Some(err),
            }
        }
        None
    });
    let err = read.await.expect("the stream ends");
    (events, err)
}

/// A stream cut after `a-2`'s first part; the new subscription's snapshot
/// has more, then live events, one of them a repeat of the snapshot.
fn cut_then_resumed(end: End) -> Vec<Answer> {
    vec![
        Answer::Events(
            vec![
                StreamResponse::Task(task(TaskState::Submitted, 0, Vec::new())),
                status(TaskState::Working, 1),
                made("a-1", &["one"]),
                made("a-2", &["x"]),
            ],
            end,
        ),
        Answer::Events(
            vec![
                StreamResponse::Task(task(
                    TaskState::Working,
                    1,
                    vec![
                        artifact("a-1", &["one"]),
                        artifact("a-2", &["x", "y"]),
                        artifact("a-3", &["z"]),
                    ],
                )),
                // Already told by the snapshot.
                status(TaskState::Working, 1),
                made("a-3", &["z"]),
                made("a-4", &["w"]),
                status(TaskState::Completed, 2),
            ],
            End::Ends,
        ),
    ]
}

#[tokio::test]
async fn a_cut_stream_is_resumed_with_every_event_once_in_order() {
    for (binding, end) in [
        (binding::JSONRPC, End::Silent),
        (binding::JSONRPC, End::Ends),
        (binding::HTTP_JSON, End::Silent),
        (binding::HTTP_JSON, End::Ends),
    ] {
        let (url, script) = agent(cut_then_resumed(end)).await;
        let client = client(&[&url], binding, quick());
        let (events, err) = all(send(&client).await).await;
        assert!(err.is_none(), "{binding}: {err:?}");
        let expected = [
            StreamResponse::Task(task(TaskState::Submitted, 0, Vec::new())),
            status(TaskState::Working, 1),
            made("a-1", &["one"]),
            made("a-2", &["x"]),
            // The catch-up: what the snapshot has that was not told.
            appended("a-2", &["y"]),
            made("a-3", &["z"]),
            // Live again.
            made("a-4", &["w"]),
            status(TaskState::Completed, 2),
        ];
        assert_eq!(events, expected, "{binding}");
        assert_eq!(
            script.calls(),
            ["SendStreamingMessage", "SubscribeToTask"],
            "{binding}"
        );
    }
}

#[tokio::test]
async fn a_subscription_is_resumed_too() {
    let mut answers = cut_then_resumed(End::Silent);
    // A subscription opens with the task as it stands.
    let Answer::Events(first, _) = &mut answers[0] else {
        unreachable!()
    };
    first[0] = StreamResponse::Task(task(TaskState::Working, 1, Vec::new()));
    first.remove(1);
    let (url, script) = agent(answers).await;
    let client = client(&[&url], binding::JSONRPC, quick());
    let stream = client
        .subscribe_to_task(
            a2a_core::SubscribeToTaskRequest {
                id: "t-1".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let (events, err) = all(stream).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events.len(), 7, "{events:#?}");
    assert_eq!(events.last(), Some(&status(TaskState::Completed, 2)));
    assert_eq!(script.calls(), ["SubscribeToTask", "SubscribeToTask"]);
}

#[tokio::test]
async fn a_task_that_finished_while_cut_off_is_read_and_caught_up() {
    let mut done = task(
        TaskState::Completed,
        5,
        vec![artifact("a-1", &["one"]), artifact("a-2", &["two"])],
    );
    let said = |id: &str, role: Role| Message {
        message_id: id.into(),
        role,
        parts: vec![Part::text(id)],
        ..Message::default()
    };
    done.history = vec![
        said("m-user", Role::User).into(),
        said("m-between", Role::Agent).into(),
        said("m-done", Role::Agent).into(),
    ];
    done.status.message = Some(said("m-done", Role::Agent).into());
    let (url, script) = agent(vec![
        Answer::Events(
            vec![
                StreamResponse::Task(task(TaskState::Submitted, 0, Vec::new())),
                status(TaskState::Working, 1),
                made("a-1", &["one"]),
            ],
            End::Ends,
        ),
        // UnsupportedOperationError: the task is terminal.
        Answer::Error(-32004),
        Answer::Task(Box::new(done.clone())),
    ])
    .await;
    let client = client(&[&url], binding::JSONRPC, quick());
    let (events, err) = all(send(&client).await).await;
    assert!(err.is_none(), "{err:?}");
    let last_chunk = |event: StreamResponse| match event {
        StreamResponse::ArtifactUpdate(mut update) => {
            update.last_chunk = true;
            StreamResponse::ArtifactUpdate(update)
        }
        other => other,
    };
    let expected = [
        StreamResponse::Task(task(TaskState::Submitted, 0, Vec::new())),
        status(TaskState::Working, 1),
        made("a-1", &["one"]),
        // The agent's words of a status missed, then what is new.
        StreamResponse::Message(said("m-between", Role::Agent)),
        last_chunk(made("a-2", &["two"])),
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t-1".into(),
            context_id: "c-1".into(),
            status: done.status.clone(),
            metadata: None,
        }),
    ];
    assert_eq!(events, expected);
    assert_eq!(
        script.calls(),
        ["SendStreamingMessage", "SubscribeToTask", "GetTask"]
    );
}

#[tokio::test]
async fn a_dead_interface_is_left_for_the_next_one() {
    let (first_url, first) = agent(vec![Answer::Events(
        vec![
            StreamResponse::Task(task(TaskState::Working, 1, Vec::new())),
            made("a-1", &["one"]),
        ],
        End::Silent,
    )])
    .await;
    let (second_url, second) = agent(vec![Answer::Events(
        vec![
            StreamResponse::Task(task(
                TaskState::Working,
                1,
                vec![artifact("a-1", &["one"]), artifact("a-2", &["two"])],
            )),
            status(TaskState::Completed, 2),
        ],
        End::Ends,
    )])
    .await;
    let client = client(&[&first_url, &second_url], binding::JSONRPC, quick());
    assert_eq!(client.interface().url, format!("{first_url}/"));
    let (events, err) = all(send(&client).await).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        events[2..],
        [made("a-2", &["two"]), status(TaskState::Completed, 2)]
    );
    // The first agent answered the subscription with a 500 (its script
    // was used up): the second one took it.
    assert_eq!(first.calls(), ["SendStreamingMessage", "SubscribeToTask"]);
    assert_eq!(second.calls(), ["SubscribeToTask"]);
}

#[tokio::test]
async fn resuming_gives_up_after_its_attempts_and_names_the_task() {
    let (url, script) = agent(vec![Answer::Events(
        vec![StreamResponse::Task(task(
            TaskState::Working,
            1,
            Vec::new(),
        ))],
        End::Ends,
    )])
    .await;
    let client = client(&[&url], binding::JSONRPC, quick());
    let (events, err) = all(send(&client).await).await;
    assert_eq!(events.len(), 1);
    let err = err.expect("the stream ends with an error");
    assert_eq!(err.task_id(), Some("t-1"));
    assert_eq!(
        script.calls(),
        [
            "SendStreamingMessage",
            "SubscribeToTask",
            "SubscribeToTask",
            "SubscribeToTask"
        ]
    );
}

#[tokio::test]
async fn settled_streams_messages_and_unnamed_tasks_are_not_resumed() {
    let reply = Message {
        message_id: "m-1".into(),
        role: Role::Agent,
        parts: vec![Part::text("hi")],
        ..Message::default()
    };
    for events in [
        vec![
            StreamResponse::Task(task(TaskState::Working, 1, Vec::new())),
            status(TaskState::InputRequired, 2),
        ],
        vec![StreamResponse::Message(reply.clone())],
        Vec::new(),
    ] {
        let told = events.len();
        let (url, script) = agent(vec![Answer::Events(events, End::Ends)]).await;
        let client = client(&[&url], binding::JSONRPC, quick());
        let (events, err) = all(send(&client).await).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(events.len(), told);
        assert_eq!(script.calls(), ["SendStreamingMessage"]);
    }
}

#[tokio::test]
async fn with_resumption_off_a_cut_stream_ends_as_it_comes() {
    let (url, script) = agent(cut_then_resumed(End::Ends)).await;
    let client = client(&[&url], binding::JSONRPC, ResumePolicy::off());
    let (events, err) = all(send(&client).await).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events.len(), 4);
    assert_eq!(script.calls(), ["SendStreamingMessage"]);
}

#[test]
fn the_policy_is_on_by_default() {
    let policy = ResumePolicy::default();
    assert!(policy.enabled);
    assert!(policy.max_attempts > 1);
    assert!(!ResumePolicy::off().enabled);
    let client = Client::from_transport(
        a2a_client::JsonRpcTransport::new("http://127.0.0.1:9/"),
        a2a_core::AgentInterface::new("http://127.0.0.1:9/", binding::JSONRPC),
    );
    assert!(client.resume_policy().enabled);
}
