//! Helpers for the process-agent tests: the Python test agent behind a real
//! request handler, and ways to send it messages.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    AgentCard, Message, Method, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    Task, TaskState,
};
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_server::{CallContext, DefaultRequestHandler, RequestHandler, ServiceParams};

/// The test agent script, `tests/agents/test_agent.py`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/agents")
        .join(name)
}

/// Runs the test agent with python3 (unbuffered, as a gateway should run
/// Python agents).
pub fn config() -> ProcessAgentConfig {
    ProcessAgentConfig::new("python3")
        .arg("-u")
        .arg(script("test_agent.py"))
}

/// A process agent named "test" behind a real request handler.
pub struct Gateway {
    pub agent: ProcessAgent,
    pub handler: Arc<DefaultRequestHandler>,
}

pub fn card() -> AgentCard {
    AgentCard::new("test", "the process test agent").with_streaming(true)
}

impl Gateway {
    pub fn start(config: ProcessAgentConfig) -> Gateway {
        let agent = ProcessAgent::spawn("test", config).unwrap();
        let handler = Arc::new(DefaultRequestHandler::builder(agent.clone(), card()).build());
        Gateway { agent, handler }
    }

    pub fn call(method: Method) -> CallContext {
        CallContext::new(method, ServiceParams::new())
    }

    pub async fn send(&self, request: SendMessageRequest) -> SendMessageResponse {
        self.handler
            .send_message(&Self::call(Method::SendMessage), request)
            .await
            .unwrap()
    }

    /// Sends `text` and waits for the task to settle.
    pub async fn task(&self, text: &str) -> Task {
        self.task_for(SendMessageRequest::new(Message::user_text(text)))
            .await
    }

    pub async fn task_for(&self, request: SendMessageRequest) -> Task {
        match self.send(request).await {
            SendMessageResponse::Task(task) => task,
            SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
        }
    }

    /// Sends `text` and returns as soon as the task exists.
    pub async fn start_task(&self, text: &str) -> Task {
        let mut request = SendMessageRequest::new(Message::user_text(text));
        request.configuration = Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        });
        self.task_for(request).await
    }

    /// The task as stored.
    pub async fn get(&self, id: &str) -> Task {
        let request = a2a_core::GetTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        };
        self.handler
            .get_task(&Self::call(Method::GetTask), request)
            .await
            .unwrap()
    }

    /// Waits for the task to reach `state`, by subscribing to it.
    pub async fn wait_for(&self, id: &str, state: TaskState) -> Task {
        use futures::StreamExt as _;
        let task = self.get(id).await;
        if task.status.state == state {
            return task;
        }
        let request = a2a_core::SubscribeToTaskRequest {
            id: id.to_owned(),
            ..Default::default()
        };
        if let Ok(mut stream) = self
            .handler
            .subscribe_to_task(&Self::call(Method::SubscribeToTask), request)
            .await
        {
            while let Some(event) = stream.next().await {
                if event.unwrap().state() == Some(state) {
                    break;
                }
            }
        }
        let task = self.get(id).await;
        assert_eq!(task.status.state, state, "{task:?}");
        task
    }

    /// Waits until the agent has no tasks left (its executions ended).
    pub async fn idle(&self) {
        eventually(|| self.agent.task_count() == 0).await;
    }
}

/// The text of the task's status message.
pub fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

/// Waits (up to ten seconds) for a condition only polling can see.
pub async fn eventually(mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met in 10 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
