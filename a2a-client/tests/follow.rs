//! The task follower against an agent that speaks JSON-RPC on a port and
//! answers each `GetTask` and `SubscribeToTask` from a script: the order
//! of reads and subscriptions, giving up, stopping, and the deadline.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::{
    Client, ClientBuilder, ClientErrorKind, FollowError, FollowOptions, FollowUpdate, RetryPolicy,
    StreamCut, TaskFollower,
};
use a2a_core::{
    AgentCard, ErrorKind, StreamResponse, Task, TaskState, TaskStatusUpdateEvent, binding,
};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the agent answers a call with.
#[derive(Clone)]
enum Answer {
    /// A task in this state.
    Task(TaskState),
    /// A stream of status updates to these states, then its end.
    Events(Vec<TaskState>),
    /// A stream that never says anything.
    Silence,
    /// An A2A error of this code.
    Error(i64),
    /// HTTP 500 with no A2A body.
    Broken,
}

/// The agent's script, and the methods it was called with, in order.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    calls: Mutex<Vec<String>>,
    /// The answer once the script is used up.
    otherwise: Mutex<Option<Answer>>,
    /// Told of each call.
    called: tokio::sync::Notify,
}

impl Script {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

async fn answer(script: Arc<Script>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap();
    let id = request["id"].clone();
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    script.calls.lock().unwrap().push(method);
    script.called.notify_one();
    let next = script.answers.lock().unwrap().pop_front();
    let next = next.or_else(|| script.otherwise.lock().unwrap().clone());
    match next.unwrap_or(Answer::Broken) {
        Answer::Task(state) => {
            let task = serde_json::to_value(Task::new("t-1", "c-1", state)).unwrap();
            axum::Json(result(&id, task)).into_response()
        }
        Answer::Events(states) => {
            let mut sse = String::new();
            for state in states {
                let event = TaskStatusUpdateEvent::new("t-1", "c-1", state);
                let event = serde_json::to_value(StreamResponse::StatusUpdate(event)).unwrap();
                sse.push_str(&format!("data: {}\n\n", result(&id, event)));
            }
            ([("content-type", "text/event-stream")], sse).into_response()
        }
        Answer::Silence => {
            let never = futures::stream::pending::<Result<String, std::io::Error>>();
            (
                [("content-type", "text/event-stream")],
                Body::from_stream(never),
            )
                .into_response()
        }
        Answer::Error(code) => {
            let error = json!({"code": code, "message": "scripted"});
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": error})).into_response()
        }
        Answer::Broken => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "down").into_response(),
    }
}

/// A client of an agent that answers by `answers`, then by `otherwise`.
async fn agent(answers: Vec<Answer>, otherwise: Option<Answer>) -> (Client, Arc<Script>) {
    let script = Arc::new(Script {
        answers: Mutex::new(answers.into()),
        otherwise: Mutex::new(otherwise),
        ..Script::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shared = script.clone();
    let app = axum::Router::new().fallback(move |body: String| answer(shared.clone(), body));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let card = AgentCard::new("scripted", "answers from a script")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_streaming(true);
    // The follower's retries only: the client's own would repeat each call.
    let client = ClientBuilder::new().retry(RetryPolicy::none());
    (client.build(card).unwrap(), script)
}

/// Pauses of a millisecond.
fn quick() -> FollowOptions {
    FollowOptions {
        first_pause: Duration::from_millis(1),
        longest_pause: Duration::from_millis(1),
        ..FollowOptions::default()
    }
}

#[tokio::test]
async fn a_cut_subscription_is_followed_by_a_read_then_a_new_subscription() {
    let (client, script) = agent(
        vec![
            Answer::Events(vec![TaskState::Working]),
            Answer::Task(TaskState::Working),
            Answer::Events(vec![TaskState::Working, TaskState::Completed]),
            Answer::Task(TaskState::Completed),
        ],
        None,
    )
    .await;
    let mut follower = TaskFollower::subscribing(&client, "t-1").options(quick());
    let mut events = 0;
    let task = loop {
        match follower.next().await.unwrap() {
            FollowUpdate::Event(StreamResponse::StatusUpdate(update)) => {
                events += 1;
                if update.status.state.is_settled() {
                    follower.read_now();
                }
            }
            FollowUpdate::Event(other) => panic!("{other:?}"),
            FollowUpdate::Task(task) if task.status.state.is_settled() => break task,
            FollowUpdate::Task(_) => {}
        }
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(events, 3);
    assert_eq!(
        script.calls(),
        ["SubscribeToTask", "GetTask", "SubscribeToTask", "GetTask"]
    );
}

#[tokio::test]
async fn a_polling_follower_reads_until_its_caller_has_heard_enough() {
    let (client, script) = agent(
        vec![
            Answer::Task(TaskState::Submitted),
            Answer::Task(TaskState::Working),
            Answer::Task(TaskState::InputRequired),
        ],
        None,
    )
    .await;
    let polling = FollowOptions {
        resubscribe: false,
        ..quick()
    };
    let mut follower = TaskFollower::reading(&client, "t-1").options(polling);
    let mut states = Vec::new();
    while states.last() != Some(&TaskState::InputRequired) {
        match follower.next().await.unwrap() {
            FollowUpdate::Task(task) => states.push(task.status.state),
            FollowUpdate::Event(event) => panic!("a polling follower streamed {event:?}"),
        }
    }
    assert_eq!(script.calls(), ["GetTask", "GetTask", "GetTask"]);
}

#[tokio::test]
async fn failed_reads_are_tried_again_up_to_the_limit_and_name_the_task() {
    let (client, script) = agent(Vec::new(), Some(Answer::Broken)).await;
    let three = FollowOptions {
        give_up_after: 3,
        ..quick()
    };
    let mut follower = TaskFollower::reading(&client, "t-1").options(three);
    let Err(FollowError::Failed(err)) = follower.next().await else {
        panic!("the follower did not give up");
    };
    assert_eq!(err.task_id(), Some("t-1"));
    assert_eq!(script.calls(), ["GetTask", "GetTask", "GetTask"]);
}

#[tokio::test]
async fn a_task_the_agent_does_not_know_ends_the_follow_at_once() {
    let (client, script) = agent(Vec::new(), Some(Answer::Error(-32001))).await;
    let ten = FollowOptions {
        give_up_after: 10,
        ..FollowOptions::default()
    };
    let mut follower = TaskFollower::reading(&client, "t-1").options(ten);
    let Err(FollowError::Failed(err)) = follower.next().await else {
        panic!("the follower did not give up");
    };
    assert_eq!(err.protocol_kind(), Some(ErrorKind::TaskNotFound));
    assert_eq!(script.calls(), ["GetTask"]);
}

#[tokio::test]
async fn a_subscription_that_cannot_be_made_or_goes_silent_is_followed_by_a_read() {
    let idle = Duration::from_millis(50);
    for opened in [Answer::Error(-32004), Answer::Silence] {
        let read = Answer::Task(TaskState::Working);
        let (client, script) = agent(vec![opened, read], None).await;
        let options = FollowOptions {
            idle_timeout: Some(idle),
            ..FollowOptions::default()
        };
        let mut follower = TaskFollower::subscribing(&client, "t-1").options(options);
        let update = follower.next().await.unwrap();
        assert!(matches!(update, FollowUpdate::Task(_)), "{update:?}");
        assert_eq!(script.calls(), ["SubscribeToTask", "GetTask"]);
    }
}

#[tokio::test]
async fn the_stop_signal_ends_a_follow_and_every_later_call() {
    let (client, script) = agent(vec![Answer::Silence], None).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut follower = TaskFollower::subscribing(&client, "t-1").stop_when(async {
        let _ = stopped.await;
    });
    // Stopped while the subscription says nothing.
    let stopping = async {
        script.called.notified().await;
        stop.send(()).unwrap();
    };
    let (first, ()) = tokio::join!(follower.next(), stopping);
    assert!(matches!(first, Err(FollowError::Stopped)), "{first:?}");
    let second = follower.next().await;
    assert!(matches!(second, Err(FollowError::Stopped)), "{second:?}");
}

#[tokio::test]
async fn past_the_deadline_the_follow_fails_naming_the_task() {
    let (client, _script) = agent(Vec::new(), Some(Answer::Task(TaskState::Working))).await;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
    let options = FollowOptions {
        resubscribe: false,
        first_pause: Duration::from_millis(10),
        longest_pause: Duration::from_millis(40),
        deadline: Some(deadline),
        ..FollowOptions::default()
    };
    let mut follower = TaskFollower::reading(&client, "t-1").options(options);
    let err = loop {
        match follower.next().await {
            Ok(FollowUpdate::Task(_)) => {}
            Ok(FollowUpdate::Event(event)) => panic!("{event:?}"),
            Err(FollowError::Failed(err)) => break err,
            Err(other) => panic!("{other:?}"),
        }
    };
    assert!(tokio::time::Instant::now() >= deadline);
    assert_eq!(err.kind(), ClientErrorKind::Timeout);
    assert_eq!(err.task_id(), Some("t-1"));
}

#[tokio::test]
async fn a_stream_cut_before_it_names_a_task_leaves_nothing_to_follow() {
    let (client, script) = agent(Vec::new(), None).await;
    let empty = Box::pin(futures::stream::empty());
    let mut follower = TaskFollower::on_stream(&client, empty, None);
    let cut = follower.next().await;
    assert!(
        matches!(cut, Err(FollowError::Cut(StreamCut::Ended))),
        "{cut:?}"
    );
    assert!(script.calls().is_empty());
}
