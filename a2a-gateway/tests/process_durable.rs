//! A process agent on durable stores: work the gateway leaves pending when it
//! shuts down is resumed by the next start, in a new child, from the last
//! checkpoint the old child stored.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod process_support;

use std::time::Duration;

use a2a_core::{
    GetTaskRequest, Message, Method, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, Task, TaskState,
};
use a2a_gateway::process::ProcessAgent;
use a2a_server::store::{InMemoryJobStore, InMemoryTaskStore};
use a2a_server::{DefaultRequestHandler, RequestHandler as _};
use process_support::*;

fn handler(
    agent: &ProcessAgent,
    tasks: &InMemoryTaskStore,
    jobs: &InMemoryJobStore,
) -> DefaultRequestHandler {
    DefaultRequestHandler::builder(agent.clone(), card())
        .task_store(tasks.clone())
        .job_store(jobs.clone())
        .build()
}

async fn get(handler: &DefaultRequestHandler, id: &str) -> Task {
    let request = GetTaskRequest {
        id: id.to_owned(),
        ..Default::default()
    };
    handler
        .get_task(&Gateway::call(Method::GetTask), request)
        .await
        .unwrap()
}

/// Waits (up to ten seconds) until the stored task's status says `text`.
async fn until_status(handler: &DefaultRequestHandler, id: &str, text: &str) -> Task {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(handler, id).await;
        if status_text(&task) == text {
            return task;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {task:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn pending_work_resumes_in_a_new_child_from_its_checkpoint() {
    let (tasks, jobs) = (InMemoryTaskStore::new(), InMemoryJobStore::new());
    let first =
        ProcessAgent::spawn("test", config().cancel_grace(Duration::from_millis(100))).unwrap();
    let handler1 = handler(&first, &tasks, &jobs);
    let mut request = SendMessageRequest::new(Message::user_text("turns hold"));
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let SendMessageResponse::Task(task) = handler1
        .send_message(&Gateway::call(Method::SendMessage), request)
        .await
        .unwrap()
    else {
        panic!("expected a task")
    };
    until_status(&handler1, &task.id, "turn 1 stored").await;

    // The gateway stops: the handler leaves the task pending, then the child goes.
    handler1.shutdown(Duration::from_secs(1)).await;
    first.shutdown(Duration::from_secs(1)).await;
    assert!(!get(&handler1, &task.id).await.status.state.is_terminal());

    // The next start: a new child gets the task, marked resumed, with turn 1's checkpoint.
    let second = ProcessAgent::spawn("test", config()).unwrap();
    let handler2 = handler(&second, &tasks, &jobs);
    handler2.recovered().await;
    let done = until_status(
        &handler2,
        &task.id,
        r#"resumed after turn 1 with {"done": ["t1"]}"#,
    )
    .await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(done.artifacts[0].artifact_id, "t1");
    second.shutdown(Duration::from_secs(1)).await;
}
