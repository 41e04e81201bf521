//! A model agent on a durable store dies mid-tool (its runtime dropped, as
//! a killed process would leave it) and a new server on the same store
//! resumes: the finished model turn is not asked again, the finished tool
//! call is not run again, the unfinished one is.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_core::{
    AgentCard, GetTaskRequest, Message, Method, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, Task,
};
use a2a_model::{
    ModelAgent, ModelSettings, Tool, ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec,
};
use a2a_server::{CallContext, DefaultRequestHandler, RequestHandler, ServiceParams};
use a2a_store_sql::SqliteStore;
use serde_json::{Value, json};
use support::fake::{self, Fake};
use tokio::sync::Notify;

/// Counts its calls; `hold` makes the first call wait for ever (and tell
/// `entered` it got there).
#[derive(Clone)]
struct Counted {
    name: &'static str,
    calls: Arc<AtomicUsize>,
    hold: bool,
    entered: Arc<Notify>,
}

impl Counted {
    fn new(name: &'static str, hold: bool) -> Counted {
        Counted {
            name,
            calls: Arc::default(),
            hold,
            entered: Arc::default(),
        }
    }
}

#[async_trait::async_trait]
impl Tool for Counted {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "counts".into(),
            parameters: json!({ "type": "object" }),
        }
    }

    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.hold && n == 0 {
            self.entered.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(ToolOutput::Text(format!("{} done", self.name)))
    }
}

async fn handler(dir: &std::path::Path, fake: &Fake, tools: ToolSet) -> DefaultRequestHandler {
    let store = SqliteStore::open(dir).await.unwrap();
    let agent = ModelAgent::new("m", ModelSettings::new(fake.base_url(), "fake")).tools(tools);
    DefaultRequestHandler::builder(agent, AgentCard::new("m", "a model").with_streaming(true))
        .task_store(store.clone())
        .push_config_store(store.clone())
        .job_store(store)
        .build()
}

fn call(method: Method) -> CallContext {
    CallContext::new(method, ServiceParams::new())
}

#[test]
fn a_restart_resumes_without_asking_the_model_again_for_finished_turns() {
    // The fake outlives both servers, on a runtime of its own.
    let fake_runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = fake_runtime.block_on(Fake::start(vec![
        fake::calls(&[("a", "quick", json!({})), ("b", "slow", json!({}))]),
        fake::text("all done"),
    ]));
    let quick = Counted::new("quick", false);
    let slow = Counted::new("slow", true);
    let tools = ToolSet::new().tool(quick.clone()).tool(slow.clone());
    let dir = tempfile::tempdir().unwrap();

    // The first server takes the task, finishes the model's turn and the
    // quick tool, and dies inside the slow one.
    let task_id = {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let id = runtime.block_on(async {
            let handler = handler(dir.path(), &fake, tools.clone()).await;
            let mut request = SendMessageRequest::new(Message::user_text("go"));
            request.configuration = Some(SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            });
            let entered = slow.entered.notified();
            let task = match handler
                .send_message(&call(Method::SendMessage), request)
                .await
                .unwrap()
            {
                SendMessageResponse::Task(task) => task,
                other => panic!("a task: {other:?}"),
            };
            tokio::time::timeout(Duration::from_secs(20), entered)
                .await
                .expect("the slow tool is reached");
            // The slow call's start is after the quick call's checkpoint:
            // both are stored by now.
            task.id
        });
        drop(runtime);
        id
    };
    assert_eq!(fake.calls(), 1);
    assert_eq!(quick.calls.load(Ordering::SeqCst), 1);

    // The next server resumes from the stored checkpoint.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let task = runtime.block_on(async {
        let handler = handler(dir.path(), &fake, tools.clone()).await;
        handler.recovered().await;
        until_terminal(&handler, &task_id).await
    });
    assert_eq!(
        task.status.message.as_ref().map(|m| m.text()).as_deref(),
        Some("all done"),
        "{task:?}"
    );
    assert_eq!(fake.calls(), 2, "the finished turn was not asked again");
    assert_eq!(
        quick.calls.load(Ordering::SeqCst),
        1,
        "the finished call was not run again"
    );
    assert_eq!(
        slow.calls.load(Ordering::SeqCst),
        2,
        "the unfinished call ran again"
    );
    let results: Vec<String> = fake.request(1)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results, ["quick done", "slow done"]);
}

/// Reads the task until it is terminal (up to 20 s).
async fn until_terminal(handler: &DefaultRequestHandler, id: &str) -> Task {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let task = handler
            .get_task(
                &call(Method::GetTask),
                GetTaskRequest {
                    id: id.into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        if task.status.state.is_terminal() {
            return task;
        }
        assert!(tokio::time::Instant::now() < deadline, "{task:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
