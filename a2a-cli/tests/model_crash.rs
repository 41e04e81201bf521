//! A model agent of `a2a serve --config` (`kind = "model"`, SQLite store)
//! killed with SIGKILL in the middle of a model turn: after a restart on
//! the same data directory the task completes, the model is not asked
//! again for the turn that finished, and the tool call that finished (a
//! call to another agent) does not run again. A new task in the same
//! conversation then gets the earlier task's exchange from the agent's
//! store.
//!
//! The fake chat completions endpoint and the other agent (a remote agent
//! that counts what it is asked) run in this test's process, so that they
//! outlive the killed server and count every request.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2a_core::{A2aError, AgentCard, binding};
use a2a_server::http::HttpConfig;
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use serde_json::{Value, json};
use support::{PATIENCE, Server, arg, gateway_file};

// The fake chat completions endpoint of the model agent's own tests.
#[path = "../../a2a-model/tests/support/fake.rs"]
mod fake;

use fake::{Fake, Reply};

/// Counts the messages it gets, and answers each.
#[derive(Clone, Default)]
struct Counter {
    calls: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl AgentExecutor for Counter {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        events
            .complete_with_text(format!("counted {:?} (call {n})", ctx.message.text()))
            .await
    }
}

/// `counter` as an A2A server on 127.0.0.1 (JSON-RPC at its root): its URL.
async fn serve_counter(counter: Counter) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let card = AgentCard::new("counter", "Counts what it is told.")
        .with_interface(url.clone(), binding::JSONRPC);
    let handler = DefaultRequestHandler::builder(counter, card).build();
    let app = a2a_server::http::router(A2aService::new(handler), HttpConfig::default());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// The gateway of `file` with its state (SQLite) in `data`; killed outright
/// when dropped.
fn serve(file: &Path, data: &Path) -> Server {
    support::serve(&[
        "--config",
        arg(file),
        "--data-dir",
        arg(data),
        "--no-conversation-log",
    ])
}

/// A JSON-RPC call of `method` to agent `agent` of the gateway at `url`:
/// its result.
async fn rpc(url: &str, agent: &str, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = reqwest::Client::new()
        .post(format!("{url}/agents/{agent}"))
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut answer: Value = serde_json::from_str(&answer).unwrap();
    match answer.get_mut("result") {
        Some(result) => result.take(),
        None => panic!("{method}: {answer}"),
    }
}

/// Whether chat request `request` holds a tool result (it is a turn after
/// the tool call).
fn has_tool_result(request: &Value) -> bool {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "tool")
}

#[test]
fn a_model_agent_killed_mid_turn_resumes_without_repeating_finished_turns_or_tool_calls() {
    // The fake endpoint and the counter outlive both servers, on a runtime
    // of their own. The first turn calls the counter; the second is held
    // (the server is killed while it waits); the third request, the same
    // turn asked again by the restarted server, answers.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(Fake::start(vec![
        fake::calls(&[("c1", "counter", json!({ "message": "one" }))]),
        Reply::Silent,
        fake::text("The counter counted one."),
        fake::text("Still one."),
    ]));
    let counter = Counter::default();
    let counter_url = runtime.block_on(serve_counter(counter.clone()));

    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(
        dir.path(),
        &format!(
            "[agents.thinker]\nkind = \"model\"\nbase_url = \"{}\"\nmodel = \"fake\"\n\
             description = \"Thinks.\"\n\n\
             [agents.counter]\nkind = \"remote\"\nurl = \"{counter_url}\"\n",
            fake.base_url()
        ),
    );
    let data = dir.path().join("data");

    let server = serve(&file, &data);
    let params = json!({
        "message": { "messageId": "m-1", "role": "ROLE_USER", "parts": [{ "text": "count one" }] },
        "configuration": { "returnImmediately": true },
    });
    let task = runtime.block_on(rpc(&server.url, "thinker", "SendMessage", params));
    let id = task["task"]["id"].as_str().unwrap().to_owned();
    // The second turn's request arrives once the tool's result is stored
    // (the agent checkpoints it before asking the model again).
    let deadline = Instant::now() + PATIENCE;
    while fake.calls() < 2 {
        assert!(Instant::now() < deadline, "the second turn never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Killed outright, the model's second turn unanswered.
    drop(server);
    assert_eq!(counter.calls.load(Ordering::SeqCst), 1);
    assert_eq!(fake.calls(), 2);

    let server = serve(&file, &data);
    let task = runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let task = rpc(&server.url, "thinker", "GetTask", json!({ "id": id })).await;
            let state = task["status"]["state"].as_str().unwrap_or_default();
            if !matches!(state, "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING") {
                return task;
            }
            assert!(tokio::time::Instant::now() < deadline, "{task}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"], "The counter counted one.",
        "{task}"
    );

    // The model: the first turn asked once, the second twice (the killed
    // request and the resumed one), each time with the tool's one result.
    assert_eq!(fake.calls(), 3);
    let requests: Vec<Value> = (0..3).map(|i| fake.request(i)).collect();
    assert_eq!(
        requests.iter().filter(|r| !has_tool_result(r)).count(),
        1,
        "the finished first turn was asked again: {requests:?}"
    );
    for request in &requests[1..] {
        let results: Vec<&Value> = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .collect();
        assert_eq!(results.len(), 1, "{request}");
        assert_eq!(results[0]["tool_call_id"], "c1");
        assert_eq!(results[0]["content"], "counted \"one\" (call 1)");
    }
    // The tool call that finished before the kill did not run again.
    assert_eq!(counter.calls.load(Ordering::SeqCst), 1);

    // A new task in the conversation: the model is sent the earlier task's
    // exchange, read from the agent's store.
    let params = json!({
        "message": {
            "messageId": "m-2", "role": "ROLE_USER", "parts": [{ "text": "and now?" }],
            "contextId": task["contextId"],
        },
    });
    let next = runtime.block_on(rpc(&server.url, "thinker", "SendMessage", params));
    assert_eq!(
        next["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{next}"
    );
    let chat: Vec<(String, String)> = fake.request(3)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            (m["role"].as_str().unwrap().to_owned(), text.to_owned())
        })
        .collect();
    let expected = [
        ("user", "count one"),
        ("assistant", "The counter counted one."),
        ("user", "and now?"),
    ]
    .map(|(role, text)| (role.to_owned(), text.to_owned()));
    assert_eq!(chat, expected);
    server.stop(PATIENCE);
}
