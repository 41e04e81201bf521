//! The conversation index in the gateway: a call from one agent to another
//! continues the pair's conversation, whichever way the caller reaches the
//! gateway, across restarts and a torn index file; an explicit `contextId`
//! wins, and a settled conversation older than the reuse window, or one
//! whose task is gone, starts afresh.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use a2a_conversation::{
    ConversationIndex, ConversationLog, INDEX_FILE, LogConfig, Route, RouteKey,
};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, TaskState};
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_gateway::{AgentDefinition, Conversations, Gateway, GatewayBuilder};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

mod support;

use support::{answer_text, serve, status_text, task};

/// Answers with the context and task it ran in; "?" asks for input first.
struct Beta;

#[async_trait::async_trait]
impl AgentExecutor for Beta {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let said = format!("ctx={} task={}", ctx.context_id, ctx.task_id);
        if ctx.message.text() == "?" {
            return events.require_input(said).await;
        }
        events.complete_with_text(said).await
    }
}

fn context_of(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("ctx="))
        .unwrap_or_else(|| panic!("no context in {text:?}"))
        .to_owned()
}

fn beta() -> AgentDefinition {
    let card = AgentCard::new("Beta", "Says where it is.").with_streaming(true);
    AgentDefinition::new("beta", card, Beta)
}

fn alpha() -> AgentDefinition {
    AgentDefinition::new("alpha", AgentCard::new("Alpha", "Calls beta."), Beta)
}

fn gateway(conversations: Conversations) -> Gateway {
    gateway_at(conversations, "http://127.0.0.1:1")
}

fn gateway_at(conversations: Conversations, base_url: &str) -> Gateway {
    Gateway::builder()
        .agent(alpha())
        .agent(beta())
        .conversations(conversations)
        .build(base_url)
        .unwrap()
}

/// Alpha says `text` to beta through its peers; the answer's text.
async fn alpha_asks(gateway: &Gateway, text: &str) -> String {
    let answer = gateway
        .peers("alpha")
        .unwrap()
        .client("beta")
        .unwrap()
        .send_text(text)
        .await
        .unwrap();
    answer_text(&answer)
}

fn key() -> RouteKey {
    RouteKey::new("default", "alpha", "beta")
}

#[tokio::test]
async fn a_calls_b_twice_through_peers_in_the_same_context() {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let gateway = gateway(conversations.clone());
    let first = context_of(&alpha_asks(&gateway, "hello").await);
    let second = context_of(&alpha_asks(&gateway, "again").await);
    assert_eq!(first, second);
    let route = conversations.index().get(&key()).unwrap();
    assert_eq!(route.context_id, first);
    assert_eq!(route.last_event, "TASK_STATE_COMPLETED");
    // Beta calling alpha is the same pair.
    let back = gateway
        .peers("beta")
        .unwrap()
        .client("alpha")
        .unwrap()
        .send_text("and back")
        .await
        .unwrap();
    assert_eq!(context_of(&answer_text(&back)), first);
}

#[tokio::test]
async fn a_person_calling_an_agent_is_not_a_pair() {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let listener = a2a_server::http::bind("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let addr = listener.local_addr().unwrap();
    let gateway = gateway_at(conversations.clone(), &format!("http://{addr}"));
    alpha_asks(&gateway, "hello").await;
    let _stop = serve(
        listener,
        gateway.router(HttpConfig::default()),
        gateway.service().clone(),
    );
    let client = support::client(addr, "beta", a2a_core::binding::JSONRPC).await;
    let first = context_of(&answer_text(&client.send_text("one").await.unwrap()));
    let second = context_of(&answer_text(&client.send_text("two").await.unwrap()));
    assert_ne!(first, second, "a person's calls are not continued");
    assert_eq!(conversations.index().len(), 1);
}

fn durable(dir: &Path) -> (Conversations, ConversationLog) {
    let log = ConversationLog::open(dir, LogConfig::default()).unwrap();
    let conversations = Conversations::new(ConversationIndex::open(dir)).log(log.clone());
    (conversations, log)
}

#[tokio::test]
async fn after_a_restart_of_the_gateway_the_pair_continues() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let (conversations, log) = durable(dir.path());
        let gateway = gateway(conversations);
        let first = context_of(&alpha_asks(&gateway, "hello").await);
        gateway.service().shutdown(Duration::from_secs(1)).await;
        log.flush().await.unwrap();
        first
    };
    let saved = std::fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap();
    assert!(saved.contains(&first), "{saved}");
    assert!(saved.contains("default::alpha|beta"), "{saved}");
    let (conversations, _log) = durable(dir.path());
    let gateway = gateway(conversations);
    assert_eq!(context_of(&alpha_asks(&gateway, "again").await), first);
}

#[tokio::test]
async fn a_torn_index_file_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let (conversations, log) = durable(dir.path());
        let gateway = gateway(conversations);
        let first = context_of(&alpha_asks(&gateway, "hello").await);
        gateway.service().shutdown(Duration::from_secs(1)).await;
        log.flush().await.unwrap();
        first
    };
    let file = dir.path().join(INDEX_FILE);
    let saved = std::fs::read(&file).unwrap();
    std::fs::write(&file, &saved[..saved.len() / 2]).unwrap();
    let index = ConversationIndex::open(dir.path());
    assert_eq!(index.get(&key()).unwrap().context_id, first);
    let gateway = gateway(Conversations::new(index));
    assert_eq!(context_of(&alpha_asks(&gateway, "again").await), first);
}

#[tokio::test]
async fn an_explicit_context_id_wins_and_becomes_the_pairs() {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let gateway = gateway(conversations.clone());
    let first = context_of(&alpha_asks(&gateway, "hello").await);
    let beta = gateway.peers("alpha").unwrap().client("beta").unwrap();
    let mut message = Message::user_text("elsewhere");
    message.context_id = "chosen-by-alpha".into();
    let answer = beta
        .send_message(SendMessageRequest::new(message), None)
        .await
        .unwrap();
    assert_eq!(context_of(&answer_text(&answer)), "chosen-by-alpha");
    assert_ne!(first, "chosen-by-alpha");
    assert_eq!(
        context_of(&alpha_asks(&gateway, "and now").await),
        "chosen-by-alpha"
    );
}

/// Moves the pair's last event `age` into the past.
fn age_route(conversations: &Conversations, age: chrono::Duration) -> Route {
    let mut route = (*conversations.index().get(&key()).unwrap()).clone();
    route.updated_at -= age;
    conversations.index().record(key(), route.clone());
    route
}

#[tokio::test]
async fn a_settled_conversation_older_than_the_reuse_window_starts_fresh() {
    let conversations = Conversations::new(ConversationIndex::in_memory())
        .reuse_window(Duration::from_secs(6 * 3600));
    let gateway = gateway(conversations.clone());
    let first = context_of(&alpha_asks(&gateway, "hello").await);
    // Within the window: continued.
    age_route(&conversations, chrono::Duration::hours(5));
    assert_eq!(context_of(&alpha_asks(&gateway, "soon").await), first);
    // Beyond it, the task being terminal: a new conversation.
    age_route(&conversations, chrono::Duration::hours(7));
    let fresh = context_of(&alpha_asks(&gateway, "much later").await);
    assert_ne!(fresh, first);
    assert_eq!(conversations.index().get(&key()).unwrap().context_id, fresh);
}

#[tokio::test]
async fn a_task_waiting_for_input_is_continued_whatever_its_age() {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let gateway = gateway(conversations.clone());
    let asked = alpha_asks(&gateway, "?").await;
    let route = age_route(&conversations, chrono::Duration::days(2));
    assert_eq!(route.last_event, "TASK_STATE_INPUT_REQUIRED");
    let answer = gateway
        .peers("alpha")
        .unwrap()
        .client("beta")
        .unwrap()
        .send_text("here is the input")
        .await
        .unwrap();
    let answered = task(answer);
    assert_eq!(answered.status.state, TaskState::Completed);
    assert_eq!(Some(answered.id.clone()), route.task_id);
    assert_eq!(context_of(&status_text(&answered)), context_of(&asked));
}

#[tokio::test]
async fn a_conversation_whose_task_is_gone_starts_fresh() {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let gateway = gateway(conversations.clone());
    conversations.index().record(
        key(),
        Route {
            context_id: "deleted-context".into(),
            task_id: Some("deleted-task".into()),
            last_event: "TASK_STATE_INPUT_REQUIRED".into(),
            updated_at: chrono::Utc::now(),
        },
    );
    let fresh = context_of(&alpha_asks(&gateway, "hello").await);
    assert_ne!(fresh, "deleted-context");
    assert_eq!(conversations.index().get(&key()).unwrap().context_id, fresh);
}

#[tokio::test]
async fn a_relay_such_as_the_hub_is_neither_continued_nor_recorded() {
    let conversations = Conversations::new(ConversationIndex::in_memory()).relay("alpha");
    let gateway = gateway(conversations.clone());
    let first = context_of(&alpha_asks(&gateway, "hello").await);
    let second = context_of(&alpha_asks(&gateway, "again").await);
    assert_ne!(first, second);
    assert!(conversations.index().is_empty());
}

#[tokio::test]
async fn a_streamed_call_continues_and_moves_the_pair_on() {
    use futures::StreamExt as _;
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let gateway = gateway(conversations.clone());
    let first = context_of(&alpha_asks(&gateway, "hello").await);
    let beta = gateway.peers("alpha").unwrap().client("beta").unwrap();
    let mut events = beta
        .send_streaming_message(
            SendMessageRequest::new(Message::user_text("streamed")),
            None,
        )
        .await
        .unwrap();
    let mut contexts = Vec::new();
    while let Some(event) = events.next().await {
        if let a2a_core::StreamResponse::Task(task) = event.unwrap() {
            contexts.push(task.context_id);
        }
    }
    assert!(contexts.iter().all(|c| *c == first), "{contexts:?}");
    let route = conversations.index().get(&key()).unwrap();
    assert_eq!(route.context_id, first);
    assert_eq!(route.last_event, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_process_agent_calling_through_the_gateway_url_continues() {
    let listener = a2a_server::http::bind("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let addr = listener.local_addr().unwrap();
    let base_url = format!("http://{addr}");
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let mut builder: GatewayBuilder = Gateway::builder();
    let secret = builder.agent_secret("script");
    let script = ProcessAgentConfig::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/agents/caller.py"
        ))
        .env("A2A_GATEWAY_URL", format!("{base_url}/agents"))
        .env("A2A_AGENT_TOKEN", secret);
    let script = ProcessAgent::spawn("script", script).unwrap();
    let gateway = builder
        .agent(script.definition(AgentCard::new("Script", "A Python script.")))
        .agent(beta())
        .conversations(conversations.clone())
        .build(&base_url)
        .unwrap();
    let _stop = serve(
        listener,
        gateway.router(HttpConfig::default()),
        gateway.service().clone(),
    );
    let client = support::client(addr, "script", a2a_core::binding::JSONRPC).await;
    let mut contexts = Vec::new();
    for text in ["call beta hello", "call beta again"] {
        let answer = task(client.send_text(text).await.unwrap());
        assert_eq!(answer.status.state, TaskState::Completed, "{answer:?}");
        contexts.push(context_of(&status_text(&answer)));
    }
    assert_eq!(contexts[0], contexts[1]);
    let route = conversations
        .index()
        .get(&RouteKey::new("default", "script", "beta"))
        .unwrap();
    assert_eq!(route.context_id, contexts[0]);
}
