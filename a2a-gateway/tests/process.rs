//! A process agent behind a real request handler: what a caller sees of the
//! child's answers (the Python test agent, tests/agents/test_agent.py).
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod process_support;

use std::time::Duration;

use a2a_client::ClientBuilder;
use a2a_core::{
    CancelTaskRequest, Message, Method, SendMessageRequest, SendMessageResponse, StreamResponse,
    TaskState, binding,
};
use a2a_gateway::process::ProcessAgent;
use a2a_server::RequestHandler as _;
use futures::StreamExt as _;
use process_support::*;

#[tokio::test]
async fn echo_round_trip_over_http() {
    let agent = ProcessAgent::spawn("test", config()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let card = card().with_interface(format!("http://{addr}/"), binding::JSONRPC);
    let handler = a2a_server::DefaultRequestHandler::builder(agent.clone(), card.clone()).build();
    let service = a2a_server::A2aService::new(handler);
    let app = a2a_server::http::router(service, a2a_server::http::HttpConfig::default());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = ClientBuilder::new().build(card).unwrap();

    let request = SendMessageRequest::new(Message::user_text("echo hello there"));
    let SendMessageResponse::Task(task) = client.send_message(request, None).await.unwrap() else {
        panic!("expected a task")
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "hello there");
    assert_eq!(task.history[0].text(), "echo hello there");
    agent.shutdown(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn the_child_is_greeted_with_its_name_and_the_protocol() {
    let gateway = Gateway::start(config());
    let task = gateway.task("hello").await;
    assert_eq!(status_text(&task), "test 1");
}

#[tokio::test]
async fn a_reply_is_a_message_not_a_task() {
    let gateway = Gateway::start(config());
    let request = SendMessageRequest::new(Message::user_text("reply hi"));
    let SendMessageResponse::Message(message) = gateway.send(request).await else {
        panic!("expected a message")
    };
    assert_eq!(message.text(), "reply: hi");
    gateway.idle().await;
}

#[tokio::test]
async fn many_tasks_at_once_over_one_child() {
    let gateway = Gateway::start(config());
    let pid = gateway.agent.state().borrow().pid;
    // The later a task is sent, the sooner it finishes: answers come back
    // out of order and each must find its own task.
    let sends = (0..20).map(|n| {
        let gateway = &gateway;
        async move {
            let task = gateway
                .task(&format!("slow {} answer-{n}", 400 - n * 20))
                .await;
            (n, task)
        }
    });
    for (n, task) in futures::future::join_all(sends).await {
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(status_text(&task), format!("answer-{n}"));
    }
    let state = gateway.agent.state().borrow().clone();
    assert_eq!((state.pid, state.restarts), (pid, 0));
    gateway.idle().await;
}

#[tokio::test]
async fn streamed_artifact_chunks_form_one_artifact() {
    let gateway = Gateway::start(config());
    let request = SendMessageRequest::new(Message::user_text("stream 4"));
    let stream = gateway
        .handler
        .send_streaming_message(&Gateway::call(Method::SendStreamingMessage), request)
        .await
        .unwrap();
    let events: Vec<StreamResponse> = stream.map(Result::unwrap).collect().await;
    let chunks: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StreamResponse::ArtifactUpdate(update) => Some((
                update.artifact.parts[0].as_text().unwrap().to_owned(),
                update.append,
                update.last_chunk,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(chunks.len(), 4);
    assert_eq!(chunks[0], ("chunk-0 ".to_owned(), false, false));
    assert_eq!(chunks[3], ("chunk-3 ".to_owned(), true, true));
    assert_eq!(events.last().unwrap().state(), Some(TaskState::Completed));

    let task = gateway.get(events[0].task_id()).await;
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(task.artifacts[0].artifact_id, "out");
    assert_eq!(task.artifacts[0].name, "output");
    let text: String = task.artifacts[0]
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect();
    assert_eq!(text, "chunk-0 chunk-1 chunk-2 chunk-3 ");
}

#[tokio::test]
async fn input_required_then_a_follow_up() {
    let gateway = Gateway::start(config());
    let first = gateway.task("input").await;
    assert_eq!(first.status.state, TaskState::InputRequired);
    assert_eq!(status_text(&first), "more please");
    // Waiting for input, the task has no execution and the child no line to answer.
    gateway.idle().await;

    let follow_up = Message::user_text("the rest").with_task_id(first.id.clone());
    let done = gateway.task_for(SendMessageRequest::new(follow_up)).await;
    assert_eq!(done.id, first.id);
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(status_text(&done), "got: the rest");
}

#[tokio::test]
async fn cancel_reaches_the_child_which_ends_the_task() {
    let gateway = Gateway::start(config());
    let task = gateway.start_task("wait").await;
    let working = gateway.wait_for(&task.id, TaskState::Working).await;
    assert_eq!(status_text(&working), "waiting for cancel");

    let request = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let canceled = gateway
        .handler
        .cancel_task(&Gateway::call(Method::CancelTask), request)
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The execution ends when the child reports its final state, well
    // before the (default, five-second) grace.
    let started = tokio::time::Instant::now();
    gateway.idle().await;
    assert!(started.elapsed() < Duration::from_secs(4));
    // The child's own "canceled" came after the task was settled: not recorded.
    let stored = gateway.get(&task.id).await;
    assert_eq!(stored.status.state, TaskState::Canceled);
}

#[tokio::test]
async fn a_child_that_ignores_cancel_is_given_up_on_after_the_grace() {
    let gateway = Gateway::start(config().cancel_grace(Duration::from_millis(200)));
    let task = gateway.start_task("ignore-cancel").await;
    gateway.wait_for(&task.id, TaskState::Working).await;
    let request = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    gateway
        .handler
        .cancel_task(&Gateway::call(Method::CancelTask), request)
        .await
        .unwrap();
    gateway.idle().await;
    // The child still serves everything else.
    assert_eq!(
        status_text(&gateway.task("echo still here").await),
        "still here"
    );
}

#[tokio::test]
async fn an_event_line_carries_any_stream_response() {
    let gateway = Gateway::start(config());
    let task = gateway.task("event").await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "raw event");
}

#[tokio::test]
async fn a_checkpoint_is_stored_then_acknowledged() {
    let gateway = Gateway::start(config());
    let task = gateway.task("checkpoint").await;
    assert_eq!(status_text(&task), "acked");
    assert_eq!(task.artifacts[0].artifact_id, "t1");
}

#[tokio::test]
async fn tasks_over_the_limit_are_refused() {
    let gateway = Gateway::start(config().max_tasks(1));
    let first = gateway.start_task("wait").await;
    gateway.wait_for(&first.id, TaskState::Working).await;
    let second = gateway.task("echo no room").await;
    assert_eq!(second.status.state, TaskState::Failed);
    assert!(
        status_text(&second).contains("its most at once"),
        "{second:?}"
    );
}

/// The example agent users start from (examples/gateway/agents/echo.py)
/// does what its comments say.
#[tokio::test]
async fn the_example_echo_agent_works() {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gateway/agents/echo.py");
    let config = a2a_gateway::process::ProcessAgentConfig::new("python3").arg(script);
    let gateway = Gateway::start(config);
    assert_eq!(status_text(&gateway.task("hi").await), "hi");

    let asked = gateway.task("ask").await;
    assert_eq!(asked.status.state, TaskState::InputRequired);
    let answer = Message::user_text("Ada").with_task_id(asked.id.clone());
    let greeted = gateway.task_for(SendMessageRequest::new(answer)).await;
    assert_eq!(status_text(&greeted), "Hello, Ada!");

    let request = SendMessageRequest::new(Message::user_text("ping"));
    let SendMessageResponse::Message(pong) = gateway.send(request).await else {
        panic!("expected a message")
    };
    assert_eq!(pong.text(), "pong");

    let counted = gateway.task("slow 1").await;
    assert_eq!(status_text(&counted), "done counting");
    assert_eq!(counted.artifacts[0].parts[0].as_text(), Some("1 "));
    gateway.agent.shutdown(Duration::from_secs(5)).await;
}
