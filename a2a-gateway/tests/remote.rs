//! A remote agent hosted by the gateway, over real sockets: a real A2A server
//! runs a small agent, a second server hosts a `RemoteAgent` forwarding to it,
//! and clients call the second. Round trips (polled and streamed, on every
//! binding), direct replies, input-required follow-ups and cancels reach the
//! remote task; callers of the gateway stay apart, and the remote sees the
//! gateway's credentials with the caller named in the metadata; a remote that
//! is down, silent or broken fails the call fast with an error naming the
//! agent and its URL, while one that only goes quiet is followed; a restarted
//! gateway follows its remote tasks instead of sending their messages again.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientBuilder};
use a2a_core::{
    A2aError, AgentCard, Artifact, CancelTaskRequest, ErrorKind, GetTaskRequest, ListTasksRequest,
    Message, Metadata, Part, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, TaskState, binding,
};
use a2a_gateway::remote::{
    CALLER_METADATA_KEY, ForwardedCaller, RemoteAgent, RemoteAgentConfig, RemoteTask,
};
use a2a_server::http::HttpConfig;
use a2a_server::{
    A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext, RequestHandler,
    User, auth,
};
use futures::StreamExt as _;
use tokio::net::TcpListener;
use tokio::sync::Notify;

// ===== the remote agent =====

/// What the remote agent saw of one message.
#[derive(Debug, Clone)]
struct Seen {
    task_id: String,
    text: String,
    follow_up: bool,
    metadata: Option<Metadata>,
    authorization: Option<String>,
    api_key: Option<String>,
    extensions: Vec<String>,
}

/// The agent behind the remote server. The first word says what to do:
/// `reply` answers with a message, `stream <n>` sends `n` chunks, `ask` asks
/// for input (the answer completes the same task), `hold` works until
/// released or canceled (`hold stubbornly` refuses to be canceled); anything
/// else is echoed with an artifact.
#[derive(Debug, Clone, Default)]
struct Backend {
    seen: Arc<Mutex<Vec<Seen>>>,
    canceled: Arc<Mutex<Vec<String>>>,
    holding: Arc<Notify>,
    release: Arc<Notify>,
}

impl Backend {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl AgentExecutor for Backend {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        self.seen.lock().unwrap().push(Seen {
            task_id: ctx.task_id.clone(),
            text: text.clone(),
            follow_up: ctx.is_follow_up(),
            metadata: ctx.metadata.clone(),
            authorization: ctx
                .call
                .service_params
                .get("authorization")
                .map(str::to_owned),
            api_key: ctx.call.service_params.get("x-api-key").map(str::to_owned),
            extensions: ctx.call.requested_extensions.clone(),
        });
        if ctx.is_follow_up() {
            let answer = format!("{text}, in task {}", ctx.task_id);
            return events.complete_with_text(answer).await;
        }
        let (command, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
        match command {
            "reply" => events.reply(vec![Part::text(format!("pong {rest}"))]).await,
            "stream" => {
                events.working().await?;
                let n: usize = rest.parse().unwrap_or(3);
                for i in 0..n {
                    let chunk = Artifact::text(format!("chunk-{i} ")).with_id("out");
                    events.append_artifact(chunk, i + 1 == n).await?;
                }
                events.complete_with_text(format!("streamed {n}")).await
            }
            "ask" => events.require_input("which city?").await,
            "hold" => {
                events.working().await?;
                self.holding.notify_one();
                tokio::select! {
                    () = self.release.notified() => events.complete_with_text("released").await,
                    () = ctx.cancellation.cancelled() => Ok(()),
                }
            }
            _ => {
                events
                    .artifact(Artifact::text(format!("artifact of {text}")).with_id("a"))
                    .await?;
                events.complete_with_text(format!("echo: {text}")).await
            }
        }
    }

    async fn cancel(&self, ctx: RequestContext) -> Result<(), A2aError> {
        if ctx.message.text().ends_with("stubbornly") {
            return Err(A2aError::new(
                ErrorKind::TaskNotCancelable,
                "this one runs to the end",
            ));
        }
        self.canceled.lock().unwrap().push(ctx.task_id);
        Ok(())
    }
}

// ===== servers and clients =====

async fn serve(listener: TcpListener, service: A2aService) {
    let app = a2a_grpc::router(service, HttpConfig::default());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
}

async fn listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

fn card(name: &str, addr: SocketAddr, streaming: bool) -> AgentCard {
    AgentCard::new(name, format!("{name} for the remote tests"))
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(streaming)
}

/// The remote A2A server, its agent and its address.
struct Remote {
    agent: Backend,
    addr: SocketAddr,
}

/// A remote that streams or not, and wants the gateway's token.
async fn remote(streaming: bool) -> Remote {
    let agent = Backend::default();
    let (listener, addr) = listener().await;
    let handler =
        DefaultRequestHandler::builder(agent.clone(), card("backend", addr, streaming)).build();
    let service = A2aService::new(handler).with_authentication(auth::from_fn(|ctx| {
        match ctx.service_params.get("authorization") {
            Some("Bearer gateway-token") => Ok(User::authenticated("gateway")),
            _ => Err(ErrorKind::Unauthenticated.into()),
        }
    }));
    serve(listener, service).await;
    Remote { agent, addr }
}

/// The gateway: a server hosting `agent`, whose callers are alice and bob.
async fn gateway(agent: RemoteAgent) -> SocketAddr {
    let (listener, addr) = listener().await;
    let handler = DefaultRequestHandler::builder(agent, card("gateway", addr, true)).build();
    serve(listener, callers(A2aService::new(handler))).await;
    addr
}

/// Alice and bob, told apart by their tokens.
fn callers(service: A2aService) -> A2aService {
    service.with_authentication(auth::from_fn(|ctx| {
        match ctx.service_params.get("authorization") {
            Some("Bearer alice-token") => Ok(User::authenticated("alice")),
            Some("Bearer bob-token") => Ok(User::authenticated("bob")),
            _ => Err(ErrorKind::Unauthenticated.into()),
        }
    }))
}

fn config(remote: SocketAddr) -> RemoteAgentConfig {
    RemoteAgentConfig::new(format!("http://{remote}")).bearer("gateway-token")
}

/// A client of the gateway for `user`, on `binding`. Its blocking sends are
/// plain ones: a tracked send of a follow-up reads the task as it stood
/// (the first event of a follow-up's stream) as the answer.
fn client(gateway: SocketAddr, user: &str, binding: &str) -> Client {
    let options = CallOptions::default().header("authorization", format!("Bearer {user}-token"));
    a2a_grpc::register(ClientBuilder::new())
        .prefer([binding])
        .track_blocking_sends(false)
        .default_options(options)
        .build(card("gateway", gateway, true))
        .unwrap()
}

fn request(text: &str) -> SendMessageRequest {
    SendMessageRequest::new(Message::user_text(text))
}

async fn send(client: &Client, request: SendMessageRequest) -> Task {
    match client.send_message(request, None).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("expected a task, got {m:?}"),
    }
}

fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

async fn get(client: &Client, id: &str) -> Result<Task, a2a_client::ClientError> {
    let request = GetTaskRequest {
        id: id.into(),
        ..Default::default()
    };
    client.get_task(request, None).await
}

/// Reads the task until `done` says so (bounded, so that a hang fails the test).
async fn until(client: &Client, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    let wait = async {
        loop {
            let task = get(client, id).await.unwrap();
            if done(&task) {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("task {id} never got there"))
}

// ===== the happy paths =====

/// A round trip with `binding` on both hops (caller to gateway, gateway to
/// remote).
async fn a_message_round_trips_through_the_gateway(streaming: bool, binding: &str) {
    let remote = remote(streaming).await;
    let agent = RemoteAgent::new("backend", config(remote.addr).prefer([binding]));
    let gateway = gateway(agent).await;
    let alice = client(gateway, "alice", binding);

    let task = send(&alice, request("hello")).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "echo: hello");
    assert_eq!(task.artifacts.len(), 1);
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some("artifact of hello")
    );

    // The local task is the gateway's own, and names the remote one.
    let seen = remote.agent.seen();
    assert_eq!(seen.len(), 1);
    let record = RemoteTask::of(&task).expect("the remote task is recorded");
    assert_eq!(record.task_id, seen[0].task_id);
    assert_ne!(task.id, seen[0].task_id);
    assert_eq!(record.agent, "backend");

    // The remote saw the gateway's credentials and who called, never the
    // caller's own token.
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer gateway-token")
    );
    let caller: ForwardedCaller =
        serde_json::from_value(seen[0].metadata.as_ref().unwrap()[CALLER_METADATA_KEY].clone())
            .unwrap();
    assert_eq!(
        (caller.user.as_str(), caller.authenticated),
        ("alice", true)
    );
    assert_eq!(caller.agent, "backend");
    let everything = format!("{:?}", seen[0]);
    assert!(!everything.contains("alice-token"), "{everything}");
}

#[tokio::test]
async fn a_message_round_trips_through_a_streaming_remote() {
    a_message_round_trips_through_the_gateway(true, binding::JSONRPC).await;
}

#[tokio::test]
async fn a_message_round_trips_through_a_remote_that_is_polled() {
    a_message_round_trips_through_the_gateway(false, binding::HTTP_JSON).await;
}

#[tokio::test]
async fn a_message_round_trips_over_grpc() {
    a_message_round_trips_through_the_gateway(true, binding::GRPC).await;
}

async fn remote_events_stream_through_under_local_ids(binding: &str) {
    let remote = remote(true).await;
    let agent = RemoteAgent::new("backend", config(remote.addr).prefer([binding]));
    let gateway = gateway(agent).await;
    let alice = client(gateway, "alice", binding);

    let stream = alice
        .send_streaming_message(request("stream 3"), None)
        .await
        .unwrap();
    let events: Vec<StreamResponse> = tokio::time::timeout(
        Duration::from_secs(20),
        stream.map(|e| e.unwrap()).collect(),
    )
    .await
    .unwrap();
    let local_id = events[0].task_id().to_owned();
    assert!(events.iter().all(|e| e.task_id() == local_id));
    assert_ne!(local_id, remote.agent.seen()[0].task_id);
    let chunks: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::ArtifactUpdate(u) => u.artifact.parts[0].as_text().map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, ["chunk-0 ", "chunk-1 ", "chunk-2 "]);
    assert_eq!(events.last().unwrap().state(), Some(TaskState::Completed));

    let task = get(&alice, &local_id).await.unwrap();
    let whole: String = task.artifacts[0]
        .parts
        .iter()
        .filter_map(Part::as_text)
        .collect();
    assert_eq!(whole, "chunk-0 chunk-1 chunk-2 ");
    assert_eq!(status_text(&task), "streamed 3");
}

#[tokio::test]
async fn remote_events_stream_through_under_local_ids_over_json_rpc() {
    remote_events_stream_through_under_local_ids(binding::JSONRPC).await;
}

#[tokio::test]
async fn remote_events_stream_through_under_local_ids_over_grpc() {
    remote_events_stream_through_under_local_ids(binding::GRPC).await;
}

#[tokio::test]
async fn a_caller_subscribes_to_the_local_task_and_sees_the_remote_progress() {
    let remote = remote(true).await;
    let gateway = gateway(RemoteAgent::new("backend", config(remote.addr))).await;
    let alice = client(gateway, "alice", binding::HTTP_JSON);
    let mut hold = request("hold");
    hold.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let task = send(&alice, hold).await;
    let subscribe = a2a_core::SubscribeToTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let mut events = alice.subscribe_to_task(subscribe, None).await.unwrap();
    // The stream starts with the task as it stands, then follows it.
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.state(), Some(TaskState::Working));
    remote.agent.release.notify_one();
    let rest: Vec<StreamResponse> = tokio::time::timeout(
        Duration::from_secs(20),
        events.map(|e| e.unwrap()).collect(),
    )
    .await
    .unwrap();
    let last = rest.last().unwrap();
    assert_eq!(
        (last.task_id(), last.state()),
        (task.id.as_str(), Some(TaskState::Completed))
    );
}

#[tokio::test]
async fn a_direct_reply_stays_a_direct_reply() {
    for streaming in [true, false] {
        let remote = remote(streaming).await;
        let gateway = gateway(RemoteAgent::new("backend", config(remote.addr))).await;
        let alice = client(gateway, "alice", binding::JSONRPC);
        let answer = alice
            .send_message(request("reply ping"), None)
            .await
            .unwrap();
        let SendMessageResponse::Message(message) = answer else {
            panic!("streaming={streaming}: expected a message, got {answer:?}")
        };
        assert_eq!(message.text(), "pong ping");
        assert!(message.task_id.is_empty());
    }
}

async fn a_follow_up_continues_the_remote_task(streaming: bool) {
    let remote = remote(streaming).await;
    let gateway = gateway(RemoteAgent::new("backend", config(remote.addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);

    let asked = send(&alice, request("ask")).await;
    assert_eq!(asked.status.state, TaskState::InputRequired);
    assert_eq!(status_text(&asked), "which city?");
    let answer = Message::user_text("Paris").with_task_id(asked.id.clone());
    let done = send(&alice, SendMessageRequest::new(answer)).await;
    assert_eq!(done.id, asked.id);
    assert_eq!(done.status.state, TaskState::Completed);

    let seen = remote.agent.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].follow_up, "the answer continued a remote task");
    assert_eq!(seen[1].text, "Paris");
    assert_eq!(seen[1].task_id, seen[0].task_id);
    assert_eq!(
        status_text(&done),
        format!("Paris, in task {}", seen[0].task_id)
    );
    assert_eq!(RemoteTask::of(&done).unwrap().turns, 2);
}

#[tokio::test]
async fn a_follow_up_continues_the_remote_task_when_streaming() {
    a_follow_up_continues_the_remote_task(true).await;
}

#[tokio::test]
async fn a_follow_up_continues_the_remote_task_when_polling() {
    a_follow_up_continues_the_remote_task(false).await;
}

async fn cancel_reaches_the_remote_task(streaming: bool) {
    let remote = remote(streaming).await;
    let gateway = gateway(RemoteAgent::new("backend", config(remote.addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);

    let mut hold = request("hold");
    hold.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let holding = remote.agent.holding.notified();
    let task = send(&alice, hold).await;
    tokio::time::timeout(Duration::from_secs(20), holding)
        .await
        .unwrap();
    // Wait until the local task names its remote task (then the cancel
    // finds it in the stored task, not only in the running execution).
    until(&alice, &task.id, |t| RemoteTask::of(t).is_some()).await;

    let cancel = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let canceled = alice.cancel_task(cancel, None).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let remote_id = remote.agent.seen()[0].task_id.clone();
    assert_eq!(*remote.agent.canceled.lock().unwrap(), [remote_id]);
}

#[tokio::test]
async fn cancel_reaches_a_streaming_remote_task() {
    cancel_reaches_the_remote_task(true).await;
}

#[tokio::test]
async fn cancel_reaches_a_polled_remote_task() {
    cancel_reaches_the_remote_task(false).await;
}

#[tokio::test]
async fn a_remote_that_refuses_the_cancel_refuses_it_for_the_gateways_caller() {
    let remote = remote(true).await;
    let gateway = gateway(RemoteAgent::new("backend", config(remote.addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let mut hold = request("hold stubbornly");
    hold.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let task = send(&alice, hold).await;
    let cancel = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let err = alice.cancel_task(cancel, None).await.unwrap_err();
    assert_eq!(
        err.protocol_kind(),
        Some(ErrorKind::TaskNotCancelable),
        "{err}"
    );
    assert!(err.to_string().contains("\"backend\""), "{err}");
    // The task goes on, and ends as the remote's does.
    remote.agent.release.notify_one();
    let done = until(&alice, &task.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(status_text(&done), "released");
}

#[tokio::test]
async fn the_remote_gets_the_gateways_api_key_and_never_the_callers_credentials() {
    let agent = Backend::default();
    let (listener, addr) = listener().await;
    let handler =
        DefaultRequestHandler::builder(agent.clone(), card("backend", addr, false)).build();
    let service = A2aService::new(handler).with_authentication(auth::from_fn(|ctx| {
        match ctx.service_params.get("x-api-key") {
            Some("gateway-key") => Ok(User::authenticated("gateway")),
            _ => Err(ErrorKind::Unauthenticated.into()),
        }
    }));
    serve(listener, service).await;
    let config =
        RemoteAgentConfig::new(format!("http://{addr}")).api_key("x-api-key", "gateway-key");
    let gateway = gateway(RemoteAgent::new("backend", config)).await;
    let bob = client(gateway, "bob", binding::HTTP_JSON);

    let mut request = request("who am I");
    let mut metadata = Metadata::new();
    // A caller cannot pass itself off as another.
    metadata.insert(
        CALLER_METADATA_KEY.into(),
        serde_json::json!({"user": "admin"}),
    );
    request.metadata = Some(metadata);
    // The extensions it asks the gateway for are asked of the remote.
    let options = CallOptions::default().extension("urn:test:extension");
    let answer = bob.send_message(request, Some(&options)).await.unwrap();
    let SendMessageResponse::Task(task) = answer else {
        panic!("expected a task, got {answer:?}")
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let seen = &agent.seen()[0];
    assert_eq!(seen.extensions, ["urn:test:extension"]);
    assert_eq!(seen.api_key.as_deref(), Some("gateway-key"));
    assert_eq!(seen.authorization, None);
    let caller = &seen.metadata.as_ref().unwrap()[CALLER_METADATA_KEY];
    assert_eq!(caller["user"], "bob");
}

#[tokio::test]
async fn callers_of_the_gateway_cannot_see_each_others_tasks() {
    let remote = remote(true).await;
    let gateway = gateway(RemoteAgent::new("backend", config(remote.addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let bob = client(gateway, "bob", binding::JSONRPC);

    let task = send(&alice, request("mine")).await;
    let err = get(&bob, &task.id).await.unwrap_err();
    assert_eq!(err.protocol_kind(), Some(ErrorKind::TaskNotFound));
    let cancel = CancelTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let err = bob.cancel_task(cancel, None).await.unwrap_err();
    assert_eq!(err.protocol_kind(), Some(ErrorKind::TaskNotFound));
    let listed = bob
        .list_tasks(ListTasksRequest::default(), None)
        .await
        .unwrap();
    assert!(listed.tasks.is_empty(), "{listed:?}");
    let listed = alice
        .list_tasks(ListTasksRequest::default(), None)
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 1);

    // Bob naming alice's conversation does not put him in her remote one.
    let mut intruding = Message::user_text("hello again");
    intruding.context_id = task.context_id.clone();
    let bobs = send(&bob, SendMessageRequest::new(intruding)).await;
    let alices = RemoteTask::of(&task).unwrap();
    assert_ne!(RemoteTask::of(&bobs).unwrap().context_id, alices.context_id);
    // While alice's next task in it continues hers.
    let mut again = Message::user_text("hello again");
    again.context_id = task.context_id.clone();
    let next = send(&alice, SendMessageRequest::new(again)).await;
    assert_eq!(RemoteTask::of(&next).unwrap().context_id, alices.context_id);
}

// ===== a remote that is down, silent or broken =====

/// Sends "hello" to the gateway and expects a failed task whose message names
/// the agent and `url`.
async fn fails_naming_the_remote(alice: &Client, url: &str) -> String {
    let task = send(alice, request("hello")).await;
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let text = status_text(&task);
    assert!(text.contains("\"backend\""), "names the agent: {text}");
    assert!(text.contains(url), "names the URL: {text}");
    text
}

/// A port nobody listens on.
async fn closed_port() -> SocketAddr {
    let (listener, addr) = listener().await;
    drop(listener);
    addr
}

#[tokio::test]
async fn a_remote_that_refuses_connections_fails_the_task_at_once() {
    let addr = closed_port().await;
    let url = format!("http://{addr}");
    let gateway = gateway(RemoteAgent::new("backend", config(addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);

    let started = std::time::Instant::now();
    let text = fails_naming_the_remote(&alice, &url).await;
    assert!(text.contains("card"), "{text}");
    // The failure is remembered for a while: the next call does not wait
    // for the dead remote again.
    fails_naming_the_remote(&alice, &url).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // A known card whose interfaces refuse: the send itself fails.
    let known = config(addr).card(card("backend", addr, true));
    let gateway = self::gateway(RemoteAgent::new("backend", known)).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let text = fails_naming_the_remote(&alice, &url).await;
    assert!(text.contains("sending the message"), "{text}");
}

#[tokio::test]
async fn a_remote_down_at_start_is_tried_again_later() {
    let addr = closed_port().await;
    let agent = RemoteAgent::new("backend", config(addr).retry_card_after(Duration::ZERO));
    // The gateway starts (and builds its card) whatever the remote does.
    assert!(agent.card().await.is_err());
    assert!(agent.cached_card().is_none());
    let gateway = gateway(agent.clone()).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    fails_naming_the_remote(&alice, &format!("http://{addr}")).await;

    // The remote comes up on that address: the next call reaches it.
    let listener = TcpListener::bind(addr).await.unwrap();
    let backend = Backend::default();
    let handler =
        DefaultRequestHandler::builder(backend.clone(), card("backend", addr, true)).build();
    serve(listener, A2aService::new(handler)).await;
    let task = send(&alice, request("hello")).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(agent.cached_card().unwrap().name, "backend");
    let hosted = RemoteAgent::hosted_card(&agent.card().await.unwrap());
    assert_eq!(hosted.name, "backend");
    assert!(hosted.supported_interfaces.is_empty());
}

/// A server that accepts connections and never says a word.
async fn silent() -> SocketAddr {
    let (listener, addr) = listener().await;
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}

#[tokio::test(start_paused = true)]
async fn a_remote_that_never_answers_fails_the_task_within_the_timeouts() {
    let addr = silent().await;
    let url = format!("http://{addr}");

    // Its card never comes: the card timeout ends the wait.
    let waiting = config(addr).card_timeout(Duration::from_secs(3));
    let gateway = gateway(RemoteAgent::new("backend", waiting)).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let started = tokio::time::Instant::now();
    let text = fails_naming_the_remote(&alice, &url).await;
    assert!(text.contains("card"), "{text}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(4),
        "{waited:?}"
    );

    // Its card is known but no call is answered: the request timeout ends it,
    // streamed or polled, on every binding.
    for (streaming, binding) in [
        (true, binding::JSONRPC),
        (false, binding::HTTP_JSON),
        (true, binding::GRPC),
    ] {
        let known = config(addr)
            .card(card("backend", addr, streaming))
            .prefer([binding])
            .request_timeout(Duration::from_secs(5));
        let gateway = self::gateway(RemoteAgent::new("backend", known)).await;
        let alice = client(gateway, "alice", binding::JSONRPC);
        let started = tokio::time::Instant::now();
        let text = fails_naming_the_remote(&alice, &url).await;
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
            "{binding}: {waited:?}: {text}"
        );
    }
}

/// A server answering every request with `body` (200, JSON).
async fn answering(body: &'static str) -> SocketAddr {
    let (listener, addr) = listener().await;
    let app = axum::Router::new().fallback(move || async move {
        (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[tokio::test]
async fn a_card_that_is_garbage_fails_the_task_clearly() {
    let addr = answering("<html>not a card</html>").await;
    let gateway = gateway(RemoteAgent::new("backend", config(addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let text = fails_naming_the_remote(&alice, &format!("http://{addr}")).await;
    assert!(text.contains("card"), "{text}");
}

/// A streaming remote whose stream names a task, then breaks off with
/// garbage; the task cannot be read afterwards either.
async fn breaking() -> SocketAddr {
    use axum::response::IntoResponse as _;
    let (listener, addr) = listener().await;
    let card = card("backend", addr, true);
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || async move { axum::Json(card) }),
        )
        .fallback(|body: String| async move {
            if body.contains("SendStreamingMessage") {
                let working = r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"r-1","contextId":"rc-1","status":{"state":"TASK_STATE_WORKING"}}}}"#;
                let sse = format!("data: {working}\n\ndata: {{not json\n\n");
                ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
            } else {
                (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "down for repairs").into_response()
            }
        });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

#[tokio::test]
async fn a_remote_that_breaks_mid_stream_fails_the_task_clearly() {
    let addr = breaking().await;
    let gateway = gateway(RemoteAgent::new("backend", config(addr))).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let text = fails_naming_the_remote(&alice, &format!("http://{addr}")).await;
    assert!(text.contains("remote task"), "{text}");
}

/// (On the real clock: a paused one would jump past the idle timeout while
/// the remote's first events are on their way over the socket.)
#[tokio::test]
async fn a_remote_task_that_goes_quiet_is_followed_not_failed() {
    let remote = remote(true).await;
    let quiet = config(remote.addr).idle_timeout(Duration::from_millis(200));
    let gateway = gateway(RemoteAgent::new("backend", quiet)).await;
    let alice = client(gateway, "alice", binding::JSONRPC);
    let mut hold = request("hold");
    hold.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let task = send(&alice, hold).await;

    // Silent for several idle timeouts (plus their one-second margin): the
    // gateway reads the task and subscribes again each time, and the task
    // stays at work.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let working = get(&alice, &task.id).await.unwrap();
    assert_eq!(working.status.state, TaskState::Working, "{working:?}");
    remote.agent.release.notify_one();
    let done = until(&alice, &task.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(status_text(&done), "released");
    assert_eq!(remote.agent.seen().len(), 1);
}

// ===== a gateway restart =====

/// A gateway keeping its tasks and jobs in SQLite under `dir`.
async fn durable_gateway(
    dir: &std::path::Path,
    remote: SocketAddr,
) -> (SocketAddr, Arc<DefaultRequestHandler>) {
    let store = a2a_store_sql::SqliteStore::open(dir).await.unwrap();
    let (listener, addr) = listener().await;
    let agent = RemoteAgent::new("backend", config(remote));
    let handler = DefaultRequestHandler::builder(agent, card("gateway", addr, true))
        .task_store(store.clone())
        .push_config_store(store.clone())
        .job_store(store)
        .build();
    let handler = Arc::new(handler);
    serve(listener, callers(A2aService::from_arc(handler.clone()))).await;
    (addr, handler)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_gateway_follows_the_remote_task_instead_of_sending_again() {
    let remote = remote(true).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let holding = remote.agent.holding.clone();
    let remote_addr = remote.addr;

    // The first gateway forwards a task, then dies with it running (its
    // runtime dropped mid-flight, as a killed process would be).
    let task_id = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (addr, _handler) = durable_gateway(&path, remote_addr).await;
            let alice = client(addr, "alice", binding::JSONRPC);
            let mut hold = request("hold");
            hold.configuration = Some(SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            });
            let held = holding.notified();
            let task = send(&alice, hold).await;
            tokio::time::timeout(Duration::from_secs(20), held)
                .await
                .unwrap();
            until(&alice, &task.id, |t| RemoteTask::of(t).is_some()).await;
            task.id
        })
    })
    .await
    .unwrap();
    assert_eq!(remote.agent.seen().len(), 1);

    // The next start resumes the execution: it finds the remote task again
    // and mirrors how it ends, without sending the message a second time.
    let (addr, handler) = durable_gateway(dir.path(), remote.addr).await;
    handler.recovered().await;
    let alice = client(addr, "alice", binding::JSONRPC);
    remote.agent.release.notify_one();
    let done = until(&alice, &task_id, |t| t.status.state.is_terminal()).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(status_text(&done), "released");
    assert_eq!(remote.agent.seen().len(), 1, "the message was sent once");
}

// ===== a gateway that stops while a send is in flight =====

/// A remote whose first JSON-RPC call waits at the door until `open` says so
/// (`arrived` tells when it got there).
async fn gated_remote() -> (Remote, tokio::sync::oneshot::Sender<()>, Arc<Notify>) {
    let (open, gate) = tokio::sync::oneshot::channel::<()>();
    let gate = Arc::new(Mutex::new(Some(gate)));
    let arrived = Arc::new(Notify::new());
    let agent = Backend::default();
    let (listener, addr) = listener().await;
    let handler =
        DefaultRequestHandler::builder(agent.clone(), card("backend", addr, true)).build();
    let at_the_door = arrived.clone();
    let app = a2a_grpc::router(A2aService::new(handler), HttpConfig::default()).layer(
        axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let waiting = (request.method() == axum::http::Method::POST)
                    .then(|| gate.lock().unwrap().take())
                    .flatten();
                let arrived = at_the_door.clone();
                async move {
                    if let Some(gate) = waiting {
                        arrived.notify_one();
                        let _ = gate.await;
                    }
                    next.run(request).await
                }
            },
        ),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (Remote { agent, addr }, open, arrived)
}

#[tokio::test]
async fn a_gateway_stopped_during_a_send_cancels_what_the_send_made() {
    let (remote, open, arrived) = gated_remote().await;
    let (listener, addr) = listener().await;
    let agent = RemoteAgent::new(
        "backend",
        RemoteAgentConfig::new(format!("http://{}", remote.addr)),
    );
    let handler =
        Arc::new(DefaultRequestHandler::builder(agent, card("gateway", addr, true)).build());
    serve(listener, callers(A2aService::from_arc(handler.clone()))).await;
    let alice = client(addr, "alice", binding::JSONRPC);
    let sending = tokio::spawn(async move { alice.send_message(request("hold"), None).await });
    tokio::time::timeout(Duration::from_secs(20), arrived.notified())
        .await
        .unwrap();

    // The gateway stops before the remote has answered: nobody could follow
    // the task the send is making, so it is canceled once it exists.
    handler.shutdown(Duration::ZERO).await;
    open.send(()).unwrap();
    let canceled = async {
        loop {
            if let Some(id) = remote.agent.canceled.lock().unwrap().first() {
                return id.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let canceled = tokio::time::timeout(Duration::from_secs(20), canceled)
        .await
        .unwrap();
    assert_eq!(canceled, remote.agent.seen()[0].task_id);
    let answer = sending.await.unwrap();
    assert!(
        matches!(&answer, Ok(SendMessageResponse::Task(t)) if t.status.state == TaskState::Failed),
        "{answer:?}"
    );
}

// ===== hosted by the gateway =====

#[tokio::test]
async fn the_gateway_hosts_a_remote_agent_like_any_other() {
    let remote = remote(true).await;
    let (listener, addr) = listener().await;
    let agent = RemoteAgent::new("backend", config(remote.addr));
    let down = RemoteAgent::new("down", config(closed_port().await));
    let gateway = a2a_gateway::Gateway::builder()
        .agent(agent.definition().await)
        .agent(down.definition().await)
        .build(&format!("http://{addr}"))
        .unwrap();
    assert!(gateway.table().contains("remote"), "{}", gateway.table());
    let app = gateway.router(HttpConfig::default());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    for (name, on) in [("backend", binding::JSONRPC), ("down", binding::HTTP_JSON)] {
        let builder = a2a_grpc::register(ClientBuilder::new())
            .prefer([on])
            .track_blocking_sends(false);
        let card = builder
            .resolver()
            .resolve(&format!("http://{addr}/agents/{name}"))
            .await
            .unwrap();
        let client = builder.build(card).unwrap();
        let task = send(&client, request("hello")).await;
        match name {
            "backend" => {
                // Its card is the remote's, its interfaces the gateway's.
                assert_eq!(client.card().unwrap().name, "backend");
                assert_eq!(status_text(&task), "echo: hello");
            }
            _ => {
                assert_eq!(task.status.state, TaskState::Failed);
                assert!(status_text(&task).contains("\"down\""), "{task:?}");
            }
        }
    }
}

#[tokio::test]
async fn a_remote_agent_of_the_configuration_file_keeps_what_the_file_says() {
    let remote = remote(false).await;
    let text = format!(
        "[agents.reviewer]\nkind = \"remote\"\nurl = \"http://{}\"\ndescription = \"Reviews.\"\n\n[agents.planner]\nkind = \"rust\"\nexecutor = \"echo\"\n",
        remote.addr
    );
    let config = a2a_gateway::config::GatewayConfig::parse("gateway.toml", &text).unwrap();
    let reviewer = &config.agents[0];
    assert!(
        RemoteAgent::configured(&config.agents[1]).await.is_none(),
        "not remote"
    );
    // Without the file's token the remote refuses it: the call fails clearly.
    let definition = RemoteAgent::configured(reviewer).await.unwrap();
    assert_eq!(definition.name(), "reviewer");
    let (listener, addr) = listener().await;
    let gateway = a2a_gateway::Gateway::builder()
        .agent(definition)
        .build(&format!("http://{addr}"))
        .unwrap();
    let card = gateway.agent("reviewer").unwrap().card().clone();
    // The file's description, the remote's name (the file sets no title).
    assert_eq!(
        (card.name.as_str(), card.description.as_str()),
        ("backend", "Reviews.")
    );
    let app = gateway.router(HttpConfig::default());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let builder = ClientBuilder::new().track_blocking_sends(false);
    let card = builder
        .resolver()
        .resolve(&format!("http://{addr}/agents/reviewer"))
        .await
        .unwrap();
    let task = send(&builder.build(card).unwrap(), request("hello")).await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(status_text(&task).contains("\"reviewer\""), "{task:?}");
}
