//! Two agents on two servers keep one conversation across turns and restarts
//! (the conversation index), and the whole exchange reads back as one chain
//! of the conversation log (`a2a log chain`).

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use a2a_client::Client;
use a2a_conversation::{
    ChainTip, ClientExt as _, ConversationIndex, ConversationLog, Conversations,
    HandlerBuilderExt as _, LogConfig, LogReader,
};
use a2a_core::{
    A2aError, AgentCapabilities, AgentCard, AgentInterface, ListTasksRequest, Message,
    SendMessageResponse, binding,
};
use a2a_server::http::{HttpConfig, serve_until};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use a2a_store_sql::SqliteStore;
use tokio::sync::oneshot;

/// Beta answers what it heard.
struct Beta;

#[async_trait::async_trait]
impl AgentExecutor for Beta {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!("beta heard: {}", ctx.message.text()))
            .await
    }
}

/// Alpha asks beta, continuing their conversation, and passes the answer on.
struct Alpha {
    beta: Client,
    conversations: Conversations,
}

#[async_trait::async_trait]
impl AgentExecutor for Alpha {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let asked = Message::user_text(format!("alpha asks: {}", ctx.message.text()));
        let answer = self
            .beta
            .send_in_conversation(&self.conversations, asked, ctx.extensions.get::<ChainTip>())
            .await
            .map_err(|e| A2aError::internal(e.to_string()))?;
        let SendMessageResponse::Task(task) = answer else {
            return Err(A2aError::internal("beta answered without a task"));
        };
        let text = task.status.message.map(|m| m.text()).unwrap_or_default();
        events
            .complete_with_text(format!("alpha relays: {text}"))
            .await
    }
}

fn card(name: &str, addr: SocketAddr) -> AgentCard {
    AgentCard {
        name: name.into(),
        description: format!("{name}, for the conversation test"),
        version: "1.0.0".into(),
        supported_interfaces: vec![AgentInterface::new(
            format!("http://{addr}"),
            binding::JSONRPC,
        )],
        capabilities: AgentCapabilities::default(),
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        ..AgentCard::default()
    }
}

/// A server on its own data directory (SQLite store and conversation log).
struct Node {
    url: String,
    log: ConversationLog,
    stop: Option<oneshot::Sender<()>>,
    serving: tokio::task::JoinHandle<()>,
}

impl Node {
    async fn start(
        dir: &Path,
        name: &str,
        agent: impl FnOnce(ConversationLog) -> Box<dyn AgentExecutor>,
    ) -> Node {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let store = SqliteStore::open(dir).await.unwrap();
        let log = ConversationLog::open(dir, LogConfig::default()).unwrap();
        let handler =
            DefaultRequestHandler::builder(BoxedAgent(agent(log.clone())), card(name, addr))
                .task_store(store.clone())
                .push_config_store(store.clone())
                .job_store(store)
                .conversation_log(log.clone())
                .build();
        let service = A2aService::new(handler);
        let app = a2a_grpc::router(service.clone(), HttpConfig::default());
        let (stop, stopped) = oneshot::channel();
        let serving = tokio::spawn(async move {
            let stop = async move {
                let _ = stopped.await;
            };
            serve_until(listener, app, service, stop, Duration::from_secs(1))
                .await
                .unwrap();
        });
        Node {
            url: format!("http://{addr}"),
            log,
            stop: Some(stop),
            serving,
        }
    }

    /// Stops the server and waits until its state is let go (so the data
    /// directory can be opened again).
    async fn stop(mut self, dir: &Path) {
        self.log.flush().await.unwrap();
        let _ = self.stop.take().unwrap().send(());
        self.serving.await.unwrap();
        drop(self.log);
        // The store's directory lock goes with the last clone of the store,
        // which background work may hold a moment longer.
        for _ in 0..200 {
            match SqliteStore::open(dir).await {
                Ok(store) => {
                    store.close().await;
                    return;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        panic!("the store in {} was not released", dir.display());
    }
}

struct BoxedAgent(Box<dyn AgentExecutor>);

#[async_trait::async_trait]
impl AgentExecutor for BoxedAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        self.0.execute(ctx, events).await
    }
}

async fn start_pair(alpha_dir: &Path, beta_dir: &Path) -> (Node, Node) {
    let beta = Node::start(beta_dir, "beta", |_| Box::new(Beta)).await;
    let beta_client = Client::connect(&beta.url).await.unwrap();
    let index = ConversationIndex::open(alpha_dir);
    let alpha = Node::start(alpha_dir, "alpha", move |log| {
        Box::new(Alpha {
            beta: beta_client,
            conversations: Conversations::new("alpha", "ws-1", index).log(log),
        })
    })
    .await;
    (alpha, beta)
}

async fn exchange(alpha: &Node, text: &str) -> String {
    let user = Client::connect(&alpha.url).await.unwrap();
    match user.send_text(text).await.unwrap() {
        SendMessageResponse::Task(task) => task.status.message.unwrap().text(),
        other => panic!("{other:?}"),
    }
}

async fn beta_contexts(beta: &Node) -> Vec<String> {
    let client = Client::connect(&beta.url).await.unwrap();
    let tasks = client
        .list_tasks(ListTasksRequest::default(), None)
        .await
        .unwrap()
        .tasks;
    tasks.into_iter().map(|t| t.context_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_keep_their_conversation_across_turns_and_restarts() {
    let alpha_dir = tempfile::tempdir().unwrap();
    let beta_dir = tempfile::tempdir().unwrap();

    let (alpha, beta) = start_pair(alpha_dir.path(), beta_dir.path()).await;
    assert_eq!(
        exchange(&alpha, "first").await,
        "alpha relays: beta heard: alpha asks: first"
    );
    exchange(&alpha, "second").await;
    let contexts = beta_contexts(&beta).await;
    assert_eq!(contexts.len(), 2);
    assert_eq!(
        contexts[0], contexts[1],
        "the second exchange continues the first"
    );
    let conversation = contexts[0].clone();
    alpha.stop(alpha_dir.path()).await;
    beta.stop(beta_dir.path()).await;

    // Both restart (beta on another port: alpha finds it by name, not address).
    let (alpha, beta) = start_pair(alpha_dir.path(), beta_dir.path()).await;
    assert_eq!(
        exchange(&alpha, "third 세 번째").await,
        "alpha relays: beta heard: alpha asks: third 세 번째"
    );
    let contexts = beta_contexts(&beta).await;
    assert_eq!(contexts.len(), 3);
    assert!(contexts.iter().all(|c| *c == conversation), "{contexts:?}");
    alpha.log.flush().await.unwrap();
    beta.log.flush().await.unwrap();

    // The last exchange, as alpha's log chains it.
    let last = LogReader::new(alpha_dir.path()).tail(1).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["log", "chain", &last[0].id, "--data-dir"])
        .arg(alpha_dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let printed = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 4, "{printed}");
    assert!(
        lines[0].contains("request  user → alpha: third 세 번째"),
        "{printed}"
    );
    assert!(
        lines[1].contains("request  alpha → beta: alpha asks: third"),
        "{printed}"
    );
    assert!(
        lines[2].contains("response beta → alpha: beta heard: alpha asks: third"),
        "{printed}"
    );
    assert!(
        lines[3].contains("response alpha → user: alpha relays: beta heard"),
        "{printed}"
    );

    // Beta's own log continues alpha's line: its request names alpha's as parent.
    let beta_lines = LogReader::new(beta_dir.path()).tail(2).unwrap();
    let alpha_chain = LogReader::new(alpha_dir.path()).chain(&last[0].id).unwrap();
    assert_eq!(beta_lines[0].from_agent, "alpha");
    assert_eq!(
        beta_lines[0].parent_id.as_deref(),
        Some(alpha_chain[1].id.as_str())
    );
    assert_eq!(
        beta_lines[1].parent_id.as_deref(),
        Some(beta_lines[0].id.as_str())
    );
    assert_eq!(beta_lines[1].metadata["contextId"], conversation.as_str());

    alpha.stop(alpha_dir.path()).await;
    beta.stop(beta_dir.path()).await;
}
