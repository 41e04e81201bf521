//! The model agent against a fake OpenAI-compatible endpoint: answers,
//! streams, tools, questions, retries, timeouts, cut streams, cancel.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    AgentCard, CancelTaskRequest, GetTaskRequest, Message, Method, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskState,
};
use a2a_model::{
    ModelAgent, ModelSettings, Tool, ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec,
    USAGE_KEY,
};
use a2a_server::{CallContext, DefaultRequestHandler, RequestHandler, ServiceParams};
use futures::StreamExt as _;
use serde_json::{Value, json};
use support::fake::{self, End, Fake, Reply};

fn settings(fake: &Fake) -> ModelSettings {
    let mut settings = ModelSettings::new(fake.base_url(), "fake-model").system("Be brief.");
    settings.retries = 2;
    settings
}

fn handler(agent: ModelAgent) -> DefaultRequestHandler {
    DefaultRequestHandler::builder(
        agent,
        AgentCard::new("model", "a model").with_streaming(true),
    )
    .build()
}

fn call(method: Method) -> CallContext {
    CallContext::new(method, ServiceParams::new())
}

async fn send(handler: &DefaultRequestHandler, message: Message) -> Task {
    match handler
        .send_message(&call(Method::SendMessage), SendMessageRequest::new(message))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        other => panic!("a task: {other:?}"),
    }
}

fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

/// Records its calls and answers with the arguments.
#[derive(Clone, Default)]
struct Recorder {
    calls: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Tool for Recorder {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "lookup".into(),
            description: "Looks things up.".into(),
            parameters: json!({ "type": "object", "properties": { "q": { "type": "string" } } }),
        }
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match args.get("q").and_then(Value::as_str) {
            Some(q) => Ok(ToolOutput::Text(format!("found {q}"))),
            None => Err(ToolError::new("no q")),
        }
    }
}

#[tokio::test]
async fn a_whole_answer_completes_the_task_with_its_text_and_usage() {
    let fake = Fake::start(vec![fake::text("Hello there.")]).await;
    let handler = handler(ModelAgent::new("m", settings(&fake)));
    let task = send(&handler, Message::user_text("hi")).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(status_text(&task), "Hello there.");
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some("Hello there."));
    assert_eq!(
        task.metadata.as_ref().unwrap()[USAGE_KEY]["totalTokens"],
        15
    );
    let sent = fake.request(0);
    assert_eq!(sent["model"], "fake-model");
    assert_eq!(sent["stream"], false);
    assert_eq!(
        sent["messages"][0],
        json!({ "role": "system", "content": "Be brief." })
    );
    assert_eq!(
        sent["messages"][1],
        json!({ "role": "user", "content": "hi" })
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "ask_user");
}

#[tokio::test]
async fn a_streaming_call_gets_the_tokens_as_artifact_chunks() {
    let fake = Fake::start(vec![fake::stream(&["Hel", "lo", "!"], End::Done)]).await;
    let handler = handler(ModelAgent::new("m", settings(&fake)));
    let mut events = handler
        .send_streaming_message(
            &call(Method::SendStreamingMessage),
            SendMessageRequest::new(Message::user_text("hi")),
        )
        .await
        .unwrap();
    let mut chunks = Vec::new();
    let mut last = None;
    while let Some(event) = events.next().await {
        match event.unwrap() {
            StreamResponse::ArtifactUpdate(update) => {
                chunks.push((
                    update.artifact.parts[0].as_text().unwrap().to_owned(),
                    update.append,
                    update.last_chunk,
                ));
            }
            StreamResponse::StatusUpdate(update) => last = Some(update.status),
            _ => {}
        }
    }
    assert_eq!(
        chunks,
        [
            ("Hel".to_owned(), false, false),
            ("lo".to_owned(), true, false),
            ("!".to_owned(), true, false),
            ("Hello!".to_owned(), false, true),
        ]
    );
    let last = last.unwrap();
    assert_eq!(last.state, TaskState::Completed);
    assert_eq!(last.message.unwrap().text(), "Hello!");
    assert_eq!(fake.request(0)["stream"], true);
}

#[tokio::test]
async fn a_tool_call_runs_and_its_result_goes_back_to_the_model() {
    let fake = Fake::start(vec![
        fake::calls(&[
            ("c1", "lookup", json!({ "q": "rust" })),
            ("c2", "lookup", json!({})),
            ("c3", "nope", json!({})),
        ]),
        fake::text("Rust it is."),
    ])
    .await;
    let tool = Recorder::default();
    let agent = ModelAgent::new("m", settings(&fake)).tools(ToolSet::new().tool(tool.clone()));
    let task = send(&handler(agent), Message::user_text("find rust")).await;
    assert_eq!(status_text(&task), "Rust it is.");
    assert_eq!(tool.calls.load(Ordering::SeqCst), 2);
    let second = fake.request(1);
    let messages = second["messages"].as_array().unwrap();
    let results: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1", "found rust"),
            ("c2", "error: no q"),
            ("c3", "error: there is no tool named \"nope\"")
        ]
    );
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "lookup");
    assert_eq!(
        task.metadata.as_ref().unwrap()[USAGE_KEY]["totalTokens"],
        30
    );
}

#[tokio::test]
async fn ask_user_ends_the_turn_input_required_and_the_answer_continues_the_task() {
    let fake = Fake::start(vec![
        fake::calls(&[("q1", "ask_user", json!({ "question": "Which city?" }))]),
        fake::text("Booked in Oslo."),
    ])
    .await;
    let handler = handler(ModelAgent::new("m", settings(&fake)));
    let task = send(&handler, Message::user_text("book a hotel")).await;
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:?}");
    assert_eq!(status_text(&task), "Which city?");
    let answer = Message::user_text("Oslo")
        .with_task_id(task.id.clone())
        .with_context_id(task.context_id.clone());
    let done = send(&handler, answer).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(status_text(&done), "Booked in Oslo.");
    // The question is the model's call; the reply follows its result.
    assert_eq!(
        chat(&fake.request(1)),
        [
            "system: Be brief.",
            "user: book a hotel",
            "assistant: calls q1 ask_user",
            ASKED_Q1,
            "user: Oslo",
        ]
    );
    // Usage adds up over the task's executions.
    assert_eq!(
        done.metadata.as_ref().unwrap()[USAGE_KEY]["totalTokens"],
        30
    );
}

/// What the `ask_user` call `q1` is answered with when the chat goes on.
const ASKED_Q1: &str =
    "tool q1: The question was put to the user; their reply is the next message.";

/// The messages of chat request `request`, one line each: `role: text`,
/// `assistant: calls ID NAME, ...` for an assistant's calls, `tool ID: text`
/// for a result.
fn chat(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap();
            let text = m["content"].as_str().unwrap_or_default();
            match (role, m["tool_calls"].as_array(), m["tool_call_id"].as_str()) {
                ("assistant", Some(calls), _) => {
                    let calls: Vec<String> = calls
                        .iter()
                        .map(|c| {
                            format!(
                                "{} {}",
                                c["id"].as_str().unwrap(),
                                c["function"]["name"].as_str().unwrap()
                            )
                        })
                        .collect();
                    format!("assistant: calls {}", calls.join(", "))
                }
                ("tool", _, Some(id)) => format!("tool {id}: {text}"),
                _ => format!("{role}: {text}"),
            }
        })
        .collect()
}

#[tokio::test]
async fn tool_calls_before_a_question_are_sent_again_with_the_answer() {
    // Turn 1 looks something up; turn 2 looks up more and asks, in one
    // message; the answer's execution must send all of it again.
    let fake = Fake::start(vec![
        fake::calls(&[("t1", "lookup", json!({ "q": "hotels" }))]),
        fake::calls(&[
            ("t2", "lookup", json!({ "q": "prices" })),
            ("q1", "ask_user", json!({ "question": "Which city?" })),
        ]),
        fake::text("Booked in Oslo."),
    ])
    .await;
    let tool = Recorder::default();
    let agent = ModelAgent::new("m", settings(&fake)).tools(ToolSet::new().tool(tool.clone()));
    let handler = handler(agent);
    let task = send(&handler, Message::user_text("book a hotel")).await;
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:?}");
    assert_eq!(status_text(&task), "Which city?");
    let answer = Message::user_text("Oslo")
        .with_task_id(task.id.clone())
        .with_context_id(task.context_id.clone());
    let done = send(&handler, answer).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(status_text(&done), "Booked in Oslo.");
    assert_eq!(
        chat(&fake.request(2)),
        [
            "system: Be brief.",
            "user: book a hotel",
            "assistant: calls t1 lookup",
            "tool t1: found hotels",
            "assistant: calls t2 lookup, q1 ask_user",
            "tool t2: found prices",
            ASKED_Q1,
            "user: Oslo",
        ]
    );
    // Sent again, not run again.
    assert_eq!(tool.calls.load(Ordering::SeqCst), 2);
    assert_eq!(fake.calls(), 3);
}

#[tokio::test]
async fn a_question_and_its_tool_calls_stay_together_within_the_history_budget() {
    // The earlier messages of the answer's execution: the first user
    // message, then the question's exchange (the model's calls, the
    // lookup's result, the question's result): four. A budget of three
    // keeps the exchange and drops the user message; a budget of two
    // drops the exchange whole (a result without its call is refused).
    let exchange = [
        "assistant: calls t1 lookup, q1 ask_user",
        "tool t1: found hotels",
        ASKED_Q1,
    ];
    for (budget, earlier) in [(3, &exchange[..]), (2, &[][..])] {
        let fake = Fake::start(vec![
            fake::calls(&[
                ("t1", "lookup", json!({ "q": "hotels" })),
                ("q1", "ask_user", json!({ "question": "Which city?" })),
            ]),
            fake::text("Booked."),
        ])
        .await;
        let mut settings = settings(&fake);
        settings.max_history_messages = budget;
        let agent = ModelAgent::new("m", settings).tools(ToolSet::new().tool(Recorder::default()));
        let handler = handler(agent);
        let task = send(&handler, Message::user_text("book a hotel")).await;
        let answer = Message::user_text("Oslo")
            .with_task_id(task.id.clone())
            .with_context_id(task.context_id.clone());
        send(&handler, answer).await;
        let mut expected = vec!["system: Be brief.".to_owned()];
        expected.extend(earlier.iter().map(|m| (*m).to_owned()));
        expected.push("user: Oslo".to_owned());
        assert_eq!(chat(&fake.request(1)), expected, "budget {budget}");
    }
}

/// Records the waits instead of sleeping.
fn recorded_waits() -> (a2a_model::api::Sleep, Arc<Mutex<Vec<Duration>>>) {
    let waits: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let seen = waits.clone();
    let sleep: a2a_model::api::Sleep = Arc::new(move |wait| {
        seen.lock().unwrap().push(wait);
        Box::pin(async {})
    });
    (sleep, waits)
}

#[tokio::test]
async fn a_429_waits_as_retry_after_says_and_a_500_is_retried_with_backoff() {
    let fake = Fake::start(vec![
        Reply::Status(429, Some("7")),
        Reply::Status(500, None),
        fake::text("finally"),
    ])
    .await;
    let (sleep, waits) = recorded_waits();
    let agent = ModelAgent::new("m", settings(&fake)).with_sleep(sleep);
    let task = send(&handler(agent), Message::user_text("hi")).await;
    assert_eq!(status_text(&task), "finally");
    assert_eq!(fake.calls(), 3);
    // The first retry waits what the server asked; the second, with no
    // Retry-After, twice the first backoff.
    assert_eq!(
        *waits.lock().unwrap(),
        [Duration::from_secs(7), Duration::from_secs(1)]
    );
}

#[tokio::test]
async fn retries_run_out_and_the_task_fails_saying_why() {
    let fake = Fake::start(vec![
        Reply::Status(503, None),
        Reply::Status(503, None),
        Reply::Status(503, None),
    ])
    .await;
    let (sleep, waits) = recorded_waits();
    let agent = ModelAgent::new("m", settings(&fake)).with_sleep(sleep);
    let task = send(&handler(agent), Message::user_text("hi")).await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(status_text(&task).contains("503"), "{}", status_text(&task));
    assert_eq!(fake.calls(), 3);
    assert_eq!(waits.lock().unwrap().len(), 2);
    // A 400 is not retried.
    let fake = Fake::start(vec![Reply::Status(400, None)]).await;
    let task = send(
        &handler(ModelAgent::new("m", settings(&fake))),
        Message::user_text("hi"),
    )
    .await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn a_silent_endpoint_times_out_and_the_task_fails() {
    let fake = Fake::start(vec![Reply::Silent]).await;
    let mut settings = settings(&fake);
    settings.retries = 0;
    settings.request_timeout = Duration::from_millis(200);
    let task = send(
        &handler(ModelAgent::new("m", settings)),
        Message::user_text("hi"),
    )
    .await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        status_text(&task).contains("did not answer within"),
        "{}",
        status_text(&task)
    );
}

#[tokio::test]
async fn a_cut_stream_fails_the_task_with_a_clear_message() {
    let fake = Fake::start(vec![fake::stream(&["Hal", "f an"], End::Cut)]).await;
    let handler = handler(ModelAgent::new("m", settings(&fake)));
    let mut events = handler
        .send_streaming_message(
            &call(Method::SendStreamingMessage),
            SendMessageRequest::new(Message::user_text("hi")),
        )
        .await
        .unwrap();
    let mut last = None;
    while let Some(event) = events.next().await {
        if let StreamResponse::StatusUpdate(update) = event.unwrap() {
            last = Some(update.status);
        }
    }
    let last = last.unwrap();
    assert_eq!(last.state, TaskState::Failed);
    let text = last.message.unwrap().text();
    assert!(text.contains("cut off"), "{text}");
    // Not retried: part of the answer had been streamed.
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn cancel_mid_stream_drops_the_model_connection() {
    let fake = Fake::start(vec![fake::stream(&["Thinking"], End::Hang)]).await;
    let handler = handler(ModelAgent::new("m", settings(&fake)));
    let mut events = handler
        .send_streaming_message(
            &call(Method::SendStreamingMessage),
            SendMessageRequest::new(Message::user_text("hi")),
        )
        .await
        .unwrap();
    // Wait for the first chunk: the model is mid-answer.
    let task_id = loop {
        match events.next().await.unwrap().unwrap() {
            StreamResponse::ArtifactUpdate(update) => break update.task_id,
            _ => continue,
        }
    };
    let dropped = fake.dropped.notified();
    let canceled = handler
        .cancel_task(
            &call(Method::CancelTask),
            CancelTaskRequest {
                id: task_id.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    tokio::time::timeout(Duration::from_secs(20), dropped)
        .await
        .expect("the fake sees the connection dropped");
    let task = handler
        .get_task(
            &call(Method::GetTask),
            GetTaskRequest {
                id: task_id,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(task.status.state, TaskState::Canceled);
}
