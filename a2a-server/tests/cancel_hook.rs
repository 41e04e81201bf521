//! What an agent's cancel hook sees, whether or not an execution is running:
//! the task as it stands, its latest user message, and the cancel call itself.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use a2a_core::{
    A2aError, AgentCard, CancelTaskRequest, Message, Metadata, Method, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, Task, TaskState,
};
use a2a_server::{
    AgentExecutor, CallContext, DefaultRequestHandler, EventQueue, RequestContext, RequestHandler,
    ServiceParams,
};

/// Works until canceled; a message saying "ask" gets a question instead.
struct Agent {
    hooks: Arc<Mutex<Vec<RequestContext>>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Agent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        if ctx.message.text() == "ask" {
            return events.require_input("which one?").await;
        }
        events.working().await?;
        ctx.cancellation.cancelled().await;
        Ok(())
    }

    async fn cancel(&self, ctx: RequestContext) -> Result<(), A2aError> {
        self.hooks.lock().unwrap().push(ctx);
        Ok(())
    }
}

fn call(method: Method) -> CallContext {
    let mut ctx = CallContext::new(method, ServiceParams::new());
    ctx.user.name = "alice".into();
    ctx
}

async fn start(handler: &DefaultRequestHandler, text: &str) -> Task {
    let mut request = SendMessageRequest::new(Message::user_text(text));
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..SendMessageConfiguration::default()
    });
    match handler
        .send_message(&call(Method::SendMessage), request)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(_) => panic!("expected a task"),
    }
}

async fn cancel_and_check(
    handler: &DefaultRequestHandler,
    hooks: &Mutex<Vec<RequestContext>>,
    task: &Task,
    text: &str,
    state: TaskState,
) {
    // Cancel once the agent has written its state, so the hook can show it.
    let written = async {
        loop {
            let stored = handler
                .get_task(
                    &call(Method::GetTask),
                    a2a_core::GetTaskRequest {
                        id: task.id.clone(),
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            if stored.status.state == state {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), written)
        .await
        .expect("the agent wrote its state");
    let mut metadata = Metadata::new();
    metadata.insert("reason".into(), "user asked".into());
    let canceled = handler
        .cancel_task(
            &call(Method::CancelTask),
            CancelTaskRequest {
                id: task.id.clone(),
                metadata: Some(metadata.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);

    let hook = hooks.lock().unwrap().pop().expect("the cancel hook ran");
    assert_eq!(
        hook.call.method,
        Method::CancelTask,
        "the cancel call's own context"
    );
    assert_eq!(hook.call.user.name, "alice");
    assert_eq!(hook.metadata, Some(metadata));
    assert_eq!(
        (hook.task_id.as_str(), hook.context_id.as_str()),
        (task.id.as_str(), task.context_id.as_str())
    );
    assert_eq!(hook.message.text(), text, "the task's latest user message");
    let stored = hook.stored_task.expect("the task as it stands");
    assert_eq!(stored.status.state, state);
}

#[tokio::test]
async fn the_cancel_hook_sees_the_task_and_the_cancel_call() {
    let hooks = Arc::new(Mutex::new(Vec::new()));
    let handler = DefaultRequestHandler::builder(
        Agent {
            hooks: hooks.clone(),
        },
        AgentCard::new("hooks", "cancel hooks"),
    )
    .build();

    // A running execution cancels through its own pipeline.
    let running = start(&handler, "work").await;
    cancel_and_check(&handler, &hooks, &running, "work", TaskState::Working).await;

    // A task waiting for input has no execution: the handler cancels it.
    let waiting = start(&handler, "ask").await;
    cancel_and_check(&handler, &hooks, &waiting, "ask", TaskState::InputRequired).await;
}
