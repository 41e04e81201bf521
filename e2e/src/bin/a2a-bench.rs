//! Benchmarks of the server's hot paths. Run them with `scripts/bench.sh`,
//! which pins the server and the load generator to different cores.
//!
//! - `sdk`: the SDK serving an echo agent over JSON-RPC (one worker thread);
//! - `bare`: a bare axum handler that parses the same request and writes the
//!   same response JSON with no SDK behind it (the reference);
//! - `load`: blocking `SendMessage` from N keep-alive connections: throughput,
//!   latency percentiles and the slowest request;
//! - `grpc-load`: the same over gRPC, on tonic's channel or (`--raw`) on
//!   hyper's HTTP/2 client, the leaner generator;
//! - `streams`: N concurrent `SendStreamingMessage` calls, time to first
//!   event; with `--hold --server-pid`, the server's resident memory per
//!   stream held open;
//! - `memory`: resident memory per stored completed task;
//! - `seed`: fills a durable store with completed tasks and pending jobs;
//! - `recovery`: seeds a store, then times a fresh server start on it until
//!   it answers `GetTask` over HTTP and its recovery pass has run.

// Both the SDK and the bare reference run on the same allocator.
#[global_allocator]
static ALLOCATOR: a2a_alloc::Mimalloc = a2a_alloc::Mimalloc;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use a2a_conversation::HandlerBuilderExt as _;
use a2a_core::{
    A2aError, AgentCard, JsonRpcRequest, JsonRpcResponse, Message, Part, Role, SendMessageRequest,
    SendMessageResponse, Task, TaskState, TaskStatus, binding,
};
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind};
use a2a_server::store::{Cause, NewJob};
use a2a_server::{
    AgentExecutor, CallContext, Caller, DefaultRequestHandler, EventQueue, RequestContext,
    RequestHandler,
};
use a2a_store_sql::{DurableStore, StoreLocation};
use anyhow::Context as _;
use bytes::Bytes;
use clap::{Parser, Subcommand};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the SDK with an echo agent.
    Sdk {
        #[arg(long)]
        port: u16,
        /// Where state lives: memory, sqlite:DIR or a postgres:// URL (durable
        /// executions on for the SQL stores).
        #[arg(long, default_value = "memory")]
        store: StoreLocation,
        /// Write the conversation log under this data directory (as `a2a
        /// serve` does by default).
        #[arg(long)]
        conversation_log: Option<std::path::PathBuf>,
        /// Serve the echo agent as agent `bench` of a gateway, beside another
        /// agent (load it at /agents/bench, or at / through tenant routing).
        #[arg(long)]
        gateway: bool,
        /// Join a cluster on the (PostgreSQL) store as this node.
        #[arg(long, conflicts_with = "gateway")]
        node_id: Option<String>,
    },
    /// Fill a durable store with completed tasks and pending jobs, then close it.
    Seed {
        #[arg(long)]
        store: StoreLocation,
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
        #[arg(long, default_value_t = 0)]
        pending: usize,
    },
    /// Seed a store, then time a fresh server start on it until it serves
    /// GetTask over HTTP and its recovery pass has run.
    Recovery {
        #[arg(long)]
        store: StoreLocation,
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
        #[arg(long, default_value_t = 1000)]
        pending: usize,
    },
    /// Serve the bare reference handler.
    Bare {
        #[arg(long)]
        port: u16,
    },
    /// Serve the bare reference handler over gRPC: the same work as `bare`
    /// (decode, build the task, encode) on hyper's HTTP/2 with the gRPC
    /// framing written by hand, no tonic and no SDK: the floor under the
    /// SDK's gRPC binding.
    BareGrpc {
        #[arg(long)]
        port: u16,
    },
    /// Serve the same bare gRPC handler on the h2 crate alone, without
    /// hyper or axum: the floor under any gRPC server written on h2.
    BareH2 {
        #[arg(long)]
        port: u16,
    },
    /// Generate load against a JSON-RPC endpoint.
    Load {
        #[arg(long)]
        addr: SocketAddr,
        /// The endpoint's path.
        #[arg(long, default_value = "/")]
        path: String,
        #[arg(long, default_value_t = 64)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 2)]
        warmup: u64,
    },
    /// Generate unary SendMessage load over gRPC.
    GrpcLoad {
        #[arg(long)]
        addr: SocketAddr,
        /// Send the calls on hyper's HTTP/2 client directly (the gRPC framing
        /// done here), not through tonic's channel and its buffer task: a
        /// leaner generator, so the figure is the server's.
        #[arg(long)]
        raw: bool,
        #[arg(long, default_value_t = 64)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 2)]
        warmup: u64,
    },
    /// Open many streams at once and time their first event.
    Streams {
        #[arg(long)]
        addr: SocketAddr,
        #[arg(long, default_value_t = 1000)]
        count: usize,
        /// Keep every stream open after its first event (the agent holds
        /// the task working), and report the server's resident memory with
        /// all of them open against before any (needs `--server-pid`).
        #[arg(long)]
        hold: bool,
        /// Only connect and fetch the card on every connection, then close
        /// them: under callgrind, a full run's count less this one's is
        /// what the streaming calls alone cost the server.
        #[arg(long, conflicts_with = "hold")]
        connect_only: bool,
        /// The server's process id: with `--hold`, to read its resident
        /// memory; always, to report the CPU time it spent and the page
        /// faults it took from the moment the streams are sent until the
        /// last first event.
        #[arg(long)]
        server_pid: Option<u32>,
    },
    /// Time blocking SendMessage calls on the handler in-process (no HTTP).
    Handler {
        #[arg(long, default_value_t = 200_000)]
        count: usize,
        /// Write the conversation log under this data directory.
        #[arg(long)]
        conversation_log: Option<std::path::PathBuf>,
    },
    /// Verify `count` JWT bearer tokens (HS256, key from a local JWKS, cached)
    /// with `JwtAuth`, as every call to a server that requires one does.
    Jwt {
        #[arg(long, default_value_t = 100_000)]
        count: usize,
        /// Signature algorithm: hs256, rs256 or es256.
        #[arg(long, default_value = "hs256")]
        alg: String,
        /// Verify every call in full (no remembered tokens).
        #[arg(long)]
        uncached: bool,
    },
    /// Serve blocking SendMessage calls through the whole router in process
    /// (no sockets, no connection handling): the request path of one binding,
    /// `http_json` or `grpc`, for instruction counts that a route added
    /// elsewhere must leave unchanged.
    Router {
        #[arg(long, default_value = "http_json")]
        binding: String,
        #[arg(long, default_value_t = 10_000)]
        count: usize,
    },
    /// Measure resident memory per stored completed task.
    Memory {
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
    },
}

struct Echo;

/// The message text that makes the echo agent hold its stream open.
const HOLD: &str = "hold this stream open";

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        if text == HOLD {
            // Held open streams (`streams --hold`): one event, then nothing
            // until the task is canceled or the server stops.
            events.working().await?;
            ctx.cancellation.cancelled().await;
            return events.fail("released").await;
        }
        events.complete_with_text(text).await
    }
}

fn card(addr: SocketAddr) -> AgentCard {
    AgentCard::new("bench", "echo")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(true)
}

fn request_body(method: a2a_core::Method) -> Bytes {
    let message = Message::user_text("hello benchmark").with_message_id("bench-message");
    Bytes::from(
        serde_json::to_vec(&JsonRpcRequest::new(
            1,
            method,
            SendMessageRequest::new(message),
        ))
        .unwrap_or_default(),
    )
}

fn one_worker() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?)
}

async fn serve_sdk(
    port: u16,
    store: StoreLocation,
    conversation_log: Option<std::path::PathBuf>,
    gateway: bool,
    node_id: Option<String>,
) -> anyhow::Result<()> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let log = match conversation_log {
        Some(dir) => Some(a2a_conversation::ConversationLog::open(
            dir,
            Default::default(),
        )?),
        None => None,
    };
    let (app, service) = if gateway {
        use a2a_gateway::{AgentDefinition, Gateway};
        let mut stores = std::collections::HashMap::new();
        for name in ["bench", "other"] {
            if let Some(store) = store.open_for_agent(name, None).await? {
                stores.insert(name, store);
            }
        }
        let gateway = Gateway::builder()
            .agent(AgentDefinition::new("bench", card(addr), Echo))
            .agent(AgentDefinition::new("other", card(addr), Echo))
            .handler_setup(move |name, mut builder| {
                if let Some(store) = stores.remove(name) {
                    builder = store.install(builder);
                }
                if let Some(log) = &log {
                    builder = builder.conversation_log(log.clone());
                }
                builder
            })
            .build(&format!("http://{addr}"))?;
        (
            gateway.router(HttpConfig::default()),
            gateway.service().clone(),
        )
    } else {
        let mut builder = DefaultRequestHandler::builder(Echo, card(addr));
        match node_id {
            Some(node) => {
                let (opened, bus) = store.open_cluster(None).await?;
                let mut jobs = a2a_server::JobConfig::default();
                jobs.node = node;
                builder = opened.install(
                    builder
                        .job_config(jobs)
                        .cluster(bus, a2a_server::cluster::ClusterConfig::default()),
                );
            }
            None => {
                if let Some(store) = store.open(None).await? {
                    builder = store.install(builder);
                }
            }
        }
        if let Some(log) = log {
            builder = builder.conversation_log(log);
        }
        let service = a2a_server::A2aService::new(builder.build());
        (
            a2a_grpc::router(service.clone(), HttpConfig::default()),
            service,
        )
    };
    // Served as `a2a serve` serves: its connection handling and limits.
    a2a_server::http::serve_with(
        listener,
        app,
        service,
        std::future::pending(),
        a2a_server::http::ServeConfig::default(),
    )
    .await?;
    Ok(())
}

/// The log `a2a serve` installs (a2a-cli/src/telemetry.rs), with its default
/// filter unless `RUST_LOG` says otherwise: the benchmark's server pays for
/// logging what the CLI's does. (Without any subscriber, the `log` fallback
/// that sqlx turns on in `tracing` makes every disabled span cost a record.)
fn install_log() {
    use tracing_subscriber::EnvFilter;
    const DEFAULT_LOG: &str =
        "info,a2a::server=warn,a2a::client=warn,a2a::execution=warn,a2a::push=warn";
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG.into());
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

/// The id of the `n`th seeded task: the recovery benchmark reads one back.
fn seeded_task_id(n: usize) -> String {
    format!("seed-task-{n:08}")
}

/// A completed task as the echo agent leaves it.
fn completed_task(n: usize) -> Task {
    let (task_id, context_id) = (seeded_task_id(n), format!("seed-context-{n:08}"));
    let user = Message::user_text("hello benchmark")
        .with_message_id(format!("seed-message-{n:08}"))
        .with_task_id(task_id.clone())
        .with_context_id(context_id.clone());
    let reply = Message::new(Role::Agent, vec![Part::text("hello benchmark")])
        .with_task_id(task_id.clone())
        .with_context_id(context_id.clone());
    Task {
        id: task_id,
        context_id,
        status: TaskStatus::new(TaskState::Completed).with_message(reply),
        history: vec![user],
        ..Task::default()
    }
}

/// A job's request as the execution layer records it (its `JobRequest`):
/// the user's message, the context, and who asked.
fn pending_request(n: usize) -> String {
    let message = Message::user_text("hello benchmark").with_message_id(format!("pending-{n:08}"));
    serde_json::json!({
        "message": message,
        "contextId": format!("pending-context-{n:08}"),
        "tenant": "",
        "user": "",
        "authenticated": false,
    })
    .to_string()
}

/// Writes `tasks` completed tasks and `pending` PENDING jobs (recorded, then
/// released, as a stopped server leaves them) through the stores' own calls,
/// many at once, then closes the store.
async fn seed(location: &StoreLocation, tasks: usize, pending: usize) -> anyhow::Result<()> {
    use futures::StreamExt as _;
    let store = location
        .open(None)
        .await?
        .context("seed needs a durable store, not memory")?;
    let started = Instant::now();
    let owner = Caller::default();
    let (store_ref, owner_ref) = (&store, &owner);
    let created = futures::stream::iter(0..tasks)
        .map(|n| async move {
            let task = completed_task(n);
            let event = a2a_core::StreamResponse::from(task.clone());
            store_ref
                .tasks()
                .create(owner_ref, &task, &Cause::event(&event))
                .await
        })
        .buffer_unordered(64);
    let mut created = std::pin::pin!(created);
    let mut count = 0usize;
    while let Some(result) = created.next().await {
        result?;
        count += 1;
        if count.is_multiple_of(100_000) {
            eprintln!("seeded {count} tasks in {:?}", started.elapsed());
        }
    }
    let jobs_started = Instant::now();
    let now = chrono::Utc::now();
    for n in 0..pending {
        let (task_id, request) = (format!("pending-task-{n:08}"), pending_request(n));
        store
            .jobs()
            .record(&NewJob {
                task_id: &task_id,
                owner: &owner,
                node: "bench-seed",
                request: &request,
                at: now,
            })
            .await?;
        store.jobs().release(&task_id, now).await?;
    }
    close(&store).await;
    println!(
        "seeded tasks={tasks} in {:?}, pending jobs={pending} in {:?}",
        jobs_started.duration_since(started),
        jobs_started.elapsed()
    );
    Ok(())
}

async fn close(store: &DurableStore) {
    match store {
        DurableStore::Sqlite(store) => store.close().await,
        DurableStore::Postgres(store) => store.close().await,
        _ => {}
    }
}

/// Seeds a store, then starts a server on it as `a2a serve` would and times
/// (a) the first GetTask answered over HTTP and (b) the recovery pass.
async fn recovery(location: StoreLocation, tasks: usize, pending: usize) -> anyhow::Result<()> {
    anyhow::ensure!(tasks > 0, "recovery needs at least one stored task to read");
    seed(&location, tasks, pending).await?;
    let started = Instant::now();
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0)), DEFAULT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let store = location
        .open(None)
        .await?
        .context("recovery needs a durable store")?;
    let handler = std::sync::Arc::new(
        store
            .install(DefaultRequestHandler::builder(Echo, card(addr)))
            .build(),
    );
    let app = a2a_grpc::router(
        a2a_server::A2aService::from_arc(handler.clone()),
        HttpConfig::default(),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let get = Bytes::from(serde_json::to_vec(&JsonRpcRequest::new(
        1,
        a2a_core::Method::GetTask,
        a2a_core::GetTaskRequest {
            id: seeded_task_id(tasks / 2),
            ..a2a_core::GetTaskRequest::default()
        },
    ))?);
    let mut sender = connect(addr).await?;
    let serving = loop {
        let response = sender.send_request(post(get.clone())).await?;
        let body = response.into_body().collect().await?.to_bytes();
        if body.windows(17).any(|w| w == b"TASK_STATE_COMPLE") {
            break started.elapsed();
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "no task in the answer: {}",
            String::from_utf8_lossy(&body)
        );
        tokio::task::yield_now().await;
    };
    handler.recovered().await;
    let recovered = started.elapsed();
    println!(
        "recovery tasks={tasks} pending={pending}: serving GetTask after {serving:?}, recovery pass done after {recovered:?}"
    );
    server.abort();
    Ok(())
}

/// The completed task an echo agent would produce for `user`: the bare
/// references' whole "agent".
fn echo_task(mut user: Message) -> Task {
    let (task_id, context_id) = (a2a_core::new_id(), a2a_core::new_id());
    user.task_id.clone_from(&task_id);
    user.context_id.clone_from(&context_id);
    let reply = Message::new(Role::Agent, vec![Part::text(user.text())])
        .with_task_id(task_id.clone())
        .with_context_id(context_id.clone());
    Task {
        id: task_id,
        context_id,
        status: TaskStatus::new(TaskState::Completed).with_message(reply),
        history: vec![user],
        ..Task::default()
    }
}

/// The reference: parse the request, answer the completed task an echo agent
/// would produce, with none of the SDK's machinery.
async fn bare_handler(body: Bytes) -> axum::response::Response {
    let request: JsonRpcRequest<SendMessageRequest> = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(_) => return axum::http::StatusCode::BAD_REQUEST.into_response(),
    };
    let Some(params) = request.params else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let streaming = request.method == a2a_core::Method::SendStreamingMessage.name();
    let task = echo_task(params.message);
    let response = JsonRpcResponse::success(request.id, SendMessageResponse::Task(task));
    // Sized up front, as the SDK does, so the comparison measures the SDK's
    // machinery rather than buffer growth.
    let mut json = Vec::with_capacity(1024);
    // A streaming call (the `streams` reference) gets its task as the one
    // event of an SSE body, written with the headers as the SDK writes its
    // first events.
    if streaming {
        json.extend_from_slice(b"data: ");
    }
    if serde_json::to_writer(&mut json, &response).is_err() {
        return axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let content_type = if streaming {
        json.extend_from_slice(b"\n\n");
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut http = axum::response::Response::new(axum::body::Body::from(json));
    http.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    http
}

use axum::response::IntoResponse as _;

/// The bare handler's work on one gRPC SendMessage: the length-prefixed
/// message decoded, the task built as `bare_handler` builds it, the answer
/// encoded and framed, then `grpc-status: 0` in the trailers.
async fn bare_grpc_handler(body: Bytes) -> axum::response::Response {
    let Some(framed) = bare_grpc_answer(&body) else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let frames = futures::stream::iter([
        Ok::<_, std::convert::Infallible>(http_body::Frame::data(framed)),
        Ok(http_body::Frame::trailers(grpc_ok_trailers())),
    ]);
    let mut http = axum::response::Response::new(axum::body::Body::new(
        http_body_util::StreamBody::new(frames),
    ));
    http.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/grpc"),
    );
    http
}

fn grpc_ok_trailers() -> axum::http::HeaderMap {
    let mut trailers = axum::http::HeaderMap::new();
    trailers.insert("grpc-status", axum::http::HeaderValue::from_static("0"));
    trailers
}

/// The framed answer of the bare gRPC handlers to one framed
/// SendMessageRequest; `None` when the request does not decode.
fn bare_grpc_answer(body: &[u8]) -> Option<Bytes> {
    use a2a_grpc::convert::{FromProto as _, ToProto as _};
    use prost::Message as _;
    let proto = a2a_grpc::pb::SendMessageRequest::decode(body.get(5..)?).ok()?;
    let params = SendMessageRequest::from_proto(proto).ok()?;
    let task = echo_task(params.message);
    let answer = a2a_core::SendMessageResponse::Task(task).to_proto();
    let length = answer.encoded_len();
    let mut framed = Vec::with_capacity(5 + length);
    framed.push(0);
    framed.extend_from_slice(&u32::try_from(length).ok()?.to_be_bytes());
    answer.encode(&mut framed).ok()?;
    Some(Bytes::from(framed))
}

/// The bare gRPC handler on the h2 crate alone: each connection's streams
/// accepted in one task, each stream answered in its own (the way hyper
/// runs them, so that a slow body does not hold up the connection).
async fn serve_bare_h2(port: u16) -> anyhow::Result<()> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)?;
    loop {
        let (socket, _) = listener.accept().await?;
        socket.set_nodelay(true)?;
        tokio::spawn(async move {
            let mut connection = h2::server::handshake(socket).await?;
            while let Some(stream) = connection.accept().await {
                let (request, respond) = stream?;
                tokio::spawn(bare_h2_stream(request, respond));
            }
            anyhow::Ok(())
        });
    }
}

async fn bare_h2_stream(
    request: axum::http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) -> anyhow::Result<()> {
    let mut body = request.into_body();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
        data.extend_from_slice(&chunk);
    }
    let Some(answer) = bare_grpc_answer(&data) else {
        // As the hyper bare handler answers it.
        let refusal = axum::http::Response::builder()
            .status(axum::http::StatusCode::BAD_REQUEST)
            .body(())?;
        respond.send_response(refusal, true)?;
        return Ok(());
    };
    let response = axum::http::Response::builder()
        .header("content-type", "application/grpc")
        .body(())?;
    let mut send = respond.send_response(response, false)?;
    send.send_data(answer, false)?;
    send.send_trailers(grpc_ok_trailers())?;
    Ok(())
}

async fn serve_bare_grpc(port: u16) -> anyhow::Result<()> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)?;
    let path = a2a_grpc::method_path(a2a_core::Method::SendMessage);
    let app = axum::Router::new().route(&path, axum::routing::post(bare_grpc_handler));
    axum::serve(listener, app).await?;
    Ok(())
}

async fn serve_bare(port: u16) -> anyhow::Result<()> {
    let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)?;
    let app = axum::Router::new().route("/", axum::routing::post(bare_handler));
    axum::serve(listener, app).await?;
    Ok(())
}

async fn connect(
    addr: SocketAddr,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

fn post(body: Bytes) -> hyper::Request<Full<Bytes>> {
    post_to("/", body)
}

fn post_to(path: &str, body: Bytes) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(Full::new(body))
        .unwrap_or_default()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[percentile_index(sorted.len(), p)]
}

/// Where the `p` percentile of `len` sorted values (at least one) is.
fn percentile_index(len: usize, p: f64) -> usize {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((len as f64 - 1.0) * p).round() as usize;
    index.min(len.saturating_sub(1))
}

/// One connection of the load generator: sends one blocking SendMessage.
#[async_trait::async_trait]
trait Connection: Send {
    async fn call(&mut self) -> anyhow::Result<()>;
}

struct JsonRpcConnection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    path: std::sync::Arc<str>,
    body: Bytes,
}

#[async_trait::async_trait]
impl Connection for JsonRpcConnection {
    async fn call(&mut self) -> anyhow::Result<()> {
        let response = self
            .sender
            .send_request(post_to(&self.path, self.body.clone()))
            .await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        anyhow::ensure!(
            status.is_success() && bytes.len() > 100,
            "bad response {status}"
        );
        Ok(())
    }
}

struct GrpcConnection {
    client: a2a_grpc::pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel>,
    request: a2a_grpc::pb::SendMessageRequest,
}

#[async_trait::async_trait]
impl Connection for GrpcConnection {
    async fn call(&mut self) -> anyhow::Result<()> {
        let mut call = tonic::Request::new(self.request.clone());
        call.metadata_mut().insert(
            "a2a-version",
            tonic::metadata::MetadataValue::from_static("1.0"),
        );
        self.client.send_message(call).await?;
        Ok(())
    }
}

/// Runs `connections` connections in a closed loop for `warmup + seconds`
/// and reports the latencies measured after the warmup.
async fn drive<F, Fut>(
    connections: usize,
    seconds: u64,
    warmup: u64,
    connect: F,
) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Box<dyn Connection>>> + Send + 'static,
{
    let measure_from = Instant::now() + Duration::from_secs(warmup);
    let end = measure_from + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for _ in 0..connections {
        let connection = connect();
        workers.push(tokio::spawn(async move {
            let mut connection = connection.await?;
            let mut latencies = Vec::new();
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                connection.call().await?;
                if sent >= measure_from {
                    latencies.push(sent.elapsed());
                }
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await??);
    }
    report(seconds, all);
    Ok(())
}

async fn load(
    addr: SocketAddr,
    path: &str,
    connections: usize,
    seconds: u64,
    warmup: u64,
) -> anyhow::Result<()> {
    let body = request_body(a2a_core::Method::SendMessage);
    let path: std::sync::Arc<str> = path.into();
    drive(connections, seconds, warmup, || {
        let (body, path) = (body.clone(), path.clone());
        async move {
            let sender = connect(addr).await?;
            Ok(Box::new(JsonRpcConnection { sender, path, body }) as Box<dyn Connection>)
        }
    })
    .await
}

/// One gRPC connection on hyper's HTTP/2 client: each call is one POST of
/// the framed request, its answer read whole and its `grpc-status` checked.
struct RawGrpcConnection {
    sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    uri: hyper::Uri,
    body: Bytes,
}

#[async_trait::async_trait]
impl Connection for RawGrpcConnection {
    async fn call(&mut self) -> anyhow::Result<()> {
        let request = hyper::Request::post(self.uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("a2a-version", "1.0")
            .body(Full::new(self.body.clone()))?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let answer = response.into_body().collect().await?;
        let grpc_status = answer
            .trailers()
            .and_then(|trailers| trailers.get("grpc-status"))
            .map(|value| value.as_bytes() == b"0");
        let bytes = answer.to_bytes();
        anyhow::ensure!(
            status.is_success() && grpc_status == Some(true) && bytes.len() > 100,
            "bad response {status}"
        );
        Ok(())
    }
}

async fn grpc_load(
    addr: SocketAddr,
    raw: bool,
    connections: usize,
    seconds: u64,
    warmup: u64,
) -> anyhow::Result<()> {
    use a2a_grpc::convert::ToProto as _;
    let request = SendMessageRequest::new(
        Message::user_text("hello benchmark").with_message_id("bench-message"),
    )
    .to_proto();
    if raw {
        use prost::Message as _;
        // gRPC framing: uncompressed, then the length, then the message.
        let length = u32::try_from(request.encoded_len())?;
        let mut framed = vec![0u8];
        framed.extend_from_slice(&length.to_be_bytes());
        request.encode(&mut framed)?;
        let body = Bytes::from(framed);
        let uri: hyper::Uri = format!(
            "http://{addr}{}",
            a2a_grpc::method_path(a2a_core::Method::SendMessage)
        )
        .parse()?;
        return drive(connections, seconds, warmup, || {
            let (body, uri) = (body.clone(), uri.clone());
            async move {
                let stream = tokio::net::TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                let (sender, connection) = hyper::client::conn::http2::handshake(
                    hyper_util::rt::TokioExecutor::new(),
                    TokioIo::new(stream),
                )
                .await?;
                tokio::spawn(connection);
                Ok(Box::new(RawGrpcConnection { sender, uri, body }) as Box<dyn Connection>)
            }
        })
        .await;
    }
    drive(connections, seconds, warmup, || {
        let request = request.clone();
        async move {
            let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
                .connect()
                .await?;
            let client = a2a_grpc::pb::a2a_service_client::A2aServiceClient::new(channel);
            Ok(Box::new(GrpcConnection { client, request }) as Box<dyn Connection>)
        }
    })
    .await
}

fn report(seconds: u64, mut all: Vec<Duration>) {
    all.sort_unstable();
    #[allow(clippy::cast_precision_loss)]
    let rps = all.len() as f64 / seconds as f64;
    println!(
        "requests={} throughput={rps:.0}/s p50={:?} p99={:?} p99.9={:?} max={:?}",
        all.len(),
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        percentile(&all, 0.999),
        all.last().copied().unwrap_or_default()
    );
}

/// A process's CPU time so far (the sum over its threads of
/// `/proc/PID/task/TID/schedstat`) and its minor page faults (from
/// `/proc/PID/stat`).
fn cpu_and_faults_of(pid: u32) -> anyhow::Result<(Duration, u64)> {
    let mut nanos = 0u64;
    let mut threads_read = 0;
    for thread in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread that ends between the listing and the read is skipped
        // (the server's threads are its runtime's, which live as long as it).
        let Ok(schedstat) = std::fs::read_to_string(thread?.path().join("schedstat")) else {
            continue;
        };
        threads_read += 1;
        nanos += schedstat
            .split_whitespace()
            .next()
            .context("empty schedstat")?
            .parse::<u64>()?;
    }
    anyhow::ensure!(threads_read > 0, "no schedstat for process {pid}");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (which may hold spaces) start with
    // the state; minflt is the tenth field of the line, the eighth after it.
    let after_name = stat.rsplit_once(')').context("no command name")?.1;
    let minor_faults: u64 = after_name
        .split_whitespace()
        .nth(7)
        .context("short stat line")?
        .parse()?;
    Ok((Duration::from_nanos(nanos), minor_faults))
}

/// A process's resident memory in bytes, from `/proc/PID/status`.
fn resident_of(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .context("no VmRSS")?
        .parse()?;
    Ok(kib * 1024)
}

/// What `a2a-bench streams` does with each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamsMode {
    /// Time the first event of a stream that then runs to its end.
    FirstEvent,
    /// Time the first event and hold every stream open.
    Hold,
    /// Send no stream at all (see `--connect-only`).
    ConnectOnly,
}

async fn streams(
    addr: SocketAddr,
    count: usize,
    mode: StreamsMode,
    server_pid: Option<u32>,
) -> anyhow::Result<()> {
    let hold = mode == StreamsMode::Hold;
    let body = if hold {
        let message = Message::user_text(HOLD).with_message_id("bench-hold");
        Bytes::from(serde_json::to_vec(&JsonRpcRequest::new(
            1,
            a2a_core::Method::SendStreamingMessage,
            SendMessageRequest::new(message),
        ))?)
    } else {
        request_body(a2a_core::Method::SendStreamingMessage)
    };
    let before = server_pid.map(resident_of).transpose()?;
    // One more than the streams: this task reads the server's counters when
    // they are all sent.
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(count + 1));
    // Held streams stay open (their bodies are kept here) until all are counted.
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let opened = std::sync::Arc::new(tokio::sync::Barrier::new(count + 1));
    // The server's counters when the first event that sets the p99 arrives:
    // what the server spent up to it, apart from what it spends after.
    // The rank `percentile` reads the p99 from; the order first events arrive
    // in is near enough the order of their latencies for this figure. Held
    // streams report memory instead.
    let p99_rank = match mode {
        StreamsMode::FirstEvent => percentile_index(count.max(1), 0.99) + 1,
        StreamsMode::Hold | StreamsMode::ConnectOnly => 0,
    };
    let arrived = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server_at_p99 = std::sync::Arc::new(std::sync::OnceLock::new());
    let mut tasks = Vec::new();
    for _ in 0..count {
        let (body, barrier, release, opened, arrived, server_at_p99) = (
            body.clone(),
            barrier.clone(),
            release.clone(),
            opened.clone(),
            arrived.clone(),
            server_at_p99.clone(),
        );
        tasks.push(tokio::spawn(async move {
            // One request first, so the server has accepted and set up every
            // connection before the clock starts: this measures streams, not
            // connection setup.
            let connected = async {
                let mut sender = connect(addr).await?;
                let card = hyper::Request::get(a2a_core::AGENT_CARD_PATH)
                    .header("host", "127.0.0.1")
                    .body(Full::new(Bytes::new()))?;
                sender
                    .send_request(card)
                    .await?
                    .into_body()
                    .collect()
                    .await?;
                anyhow::Ok(sender)
            }
            .await;
            // Every task passes both barriers whatever happens to its own
            // connection, so a failed one is reported instead of leaving the
            // rest waiting for it.
            barrier.wait().await;
            let mut reached_opened = false;
            let timed = async {
                let mut sender = connected?;
                if mode == StreamsMode::ConnectOnly {
                    return anyhow::Ok(Duration::ZERO);
                }
                let sent = Instant::now();
                let response = sender.send_request(post(body)).await?;
                let mut body = response.into_body();
                while let Some(frame) = body.frame().await {
                    if frame?
                        .data_ref()
                        .is_some_and(|d| d.windows(5).any(|w| w == b"data:"))
                    {
                        let first = sent.elapsed();
                        let rank = arrived.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        // Read on this (the only) worker: it delays the streams
                        // still to come by one read of /proc, about as long
                        // as a first event takes to handle here.
                        #[allow(clippy::collapsible_if)] // the MSRV has no let chains
                        if let (true, Some(pid)) = (rank == p99_rank, server_pid) {
                            if let Ok(counters) = cpu_and_faults_of(pid) {
                                let _ = server_at_p99.set(counters);
                            }
                        }
                        if hold {
                            let released = release.notified();
                            reached_opened = true;
                            opened.wait().await;
                            released.await;
                            drop((body, sender));
                        }
                        return anyhow::Ok(first);
                    }
                }
                anyhow::bail!("stream ended without an event")
            }
            .await;
            if hold && !reached_opened {
                opened.wait().await;
            }
            timed
        }));
    }
    barrier.wait().await;
    // Counters a kernel does not keep (no schedstat) leave the figure out.
    let server_at_send = server_pid.and_then(|pid| cpu_and_faults_of(pid).ok());
    if hold {
        // Every stream has had its first event and is still open.
        opened.wait().await;
        let during = server_pid.map(resident_of).transpose()?;
        if let (Some(before), Some(during)) = (before, during) {
            #[allow(clippy::cast_precision_loss)]
            let per_stream = during.saturating_sub(before) as f64 / count as f64;
            println!(
                "open streams={count} server resident: before={}MiB with them open={}MiB per stream={per_stream:.0}B",
                before >> 20,
                during >> 20
            );
        }
        release.notify_waiters();
    }
    let mut firsts = Vec::new();
    for task in tasks {
        firsts.push(task.await??);
    }
    let server_now = server_pid.and_then(|pid| cpu_and_faults_of(pid).ok());
    let server_spent = match (server_at_send, server_at_p99.get(), server_now) {
        (Some((cpu, faults)), Some((cpu_p99, faults_p99)), Some((cpu_now, faults_now)))
            if !hold =>
        {
            format!(
                " server cpu until p99={:?} until all={:?} page-faults until p99={} until all={}",
                cpu_p99.saturating_sub(cpu),
                cpu_now.saturating_sub(cpu),
                faults_p99.saturating_sub(faults),
                faults_now.saturating_sub(faults)
            )
        }
        _ => String::new(),
    };
    if mode == StreamsMode::ConnectOnly {
        println!("connections={count} opened, card fetched, closed");
        return Ok(());
    }
    firsts.sort_unstable();
    println!(
        "streams={count} first-event p50={:?} p99={:?} max={:?}{server_spent}",
        percentile(&firsts, 0.5),
        percentile(&firsts, 0.99),
        firsts.last().copied().unwrap_or_default()
    );
    Ok(())
}

async fn handler_only(
    count: usize,
    conversation_log: Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let card = card(SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut builder = DefaultRequestHandler::builder(Echo, card);
    let log = match conversation_log {
        Some(dir) => Some(a2a_conversation::ConversationLog::open(
            dir,
            Default::default(),
        )?),
        None => None,
    };
    if let Some(log) = &log {
        builder = builder.conversation_log(log.clone());
    }
    let handler = builder.build();
    let ctx = CallContext::new(
        a2a_core::Method::SendMessage,
        a2a_server::ServiceParams::new(),
    );
    let started = Instant::now();
    for _ in 0..count {
        handler
            .send_message(
                &ctx,
                SendMessageRequest::new(Message::user_text("hello benchmark")),
            )
            .await?;
    }
    if let Some(log) = &log {
        // The writer's work counts too.
        log.flush().await?;
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let per_call = elapsed.as_secs_f64() * 1e6 / count as f64;
    println!("calls={count} per_call={per_call:.2}µs");
    Ok(())
}

/// `count` blocking SendMessage calls through the full router (HTTP+JSON or
/// gRPC framing, routing, decoding, the handler, encoding), in process.
async fn router_only(binding: String, count: usize) -> anyhow::Result<()> {
    use a2a_grpc::convert::ToProto as _;
    use tower::ServiceExt as _;
    let card = card(SocketAddr::from(([127, 0, 0, 1], 1)));
    let service = a2a_server::A2aService::new(DefaultRequestHandler::builder(Echo, card).build());
    let app = a2a_grpc::router(service, HttpConfig::default());
    let request = SendMessageRequest::new(Message::user_text("hello benchmark"));
    let (path, content_type, body) = match binding.as_str() {
        "jsonrpc" => (
            "/",
            "application/json",
            request_body(a2a_core::Method::SendMessage),
        ),
        "http_json" => (
            "/message:send",
            "application/json",
            Bytes::from(serde_json::to_vec(&request)?),
        ),
        "grpc" => {
            let message = prost::Message::encode_to_vec(&request.to_proto());
            let mut framed = vec![0u8];
            framed.extend_from_slice(&u32::try_from(message.len())?.to_be_bytes());
            framed.extend_from_slice(&message);
            (
                "/lf.a2a.v1.A2AService/SendMessage",
                "application/grpc",
                Bytes::from(framed),
            )
        }
        other => anyhow::bail!("unknown binding {other:?} (jsonrpc, http_json or grpc)"),
    };
    let started = Instant::now();
    for _ in 0..count {
        let request = axum::http::Request::post(path)
            .header("content-type", content_type)
            .header("a2a-version", "1.0")
            .body(axum::body::Body::from(body.clone()))?;
        let response = app.clone().oneshot(request).await?;
        anyhow::ensure!(response.status().is_success(), "{}", response.status());
        let answer = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
        anyhow::ensure!(!answer.is_empty(), "empty answer");
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let per_call = elapsed.as_secs_f64() * 1e6 / count as f64;
    println!("calls={count} per_call={per_call:.2}µs");
    Ok(())
}

/// Times `JwtAuth::authenticate` on a valid token: the per-call cost of JWT
/// authentication (the key is fetched once, before the timing).
async fn jwt_only(count: usize, alg: &str, uncached: bool) -> anyhow::Result<()> {
    use a2a_server::auth::{Authenticate as _, JwtAuth};
    use base64::Engine as _;
    use e2e::bench_keys;
    use jsonwebtoken::{Algorithm, EncodingKey};
    let standard = base64::engine::general_purpose::STANDARD;
    let secret = b"a benchmark secret of thirty-two bytes!";
    let (algorithm, key, jwk) = match alg {
        "hs256" => (
            Algorithm::HS256,
            EncodingKey::from_secret(secret),
            serde_json::json!({
                "kty": "oct", "kid": "k1", "alg": "HS256",
                "k": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
            }),
        ),
        "rs256" => (
            Algorithm::RS256,
            EncodingKey::from_rsa_der(&standard.decode(bench_keys::RSA_PRIVATE_DER)?),
            serde_json::json!({
                "kty": "RSA", "kid": "k1", "alg": "RS256",
                "n": bench_keys::RSA_MODULUS, "e": "AQAB",
            }),
        ),
        "es256" => (
            Algorithm::ES256,
            EncodingKey::from_ec_der(&standard.decode(bench_keys::EC_PRIVATE_DER)?),
            serde_json::json!({
                "kty": "EC", "kid": "k1", "alg": "ES256", "crv": "P-256",
                "x": bench_keys::EC_X, "y": bench_keys::EC_Y,
            }),
        ),
        other => anyhow::bail!("unknown algorithm {other:?}: use hs256, rs256 or es256"),
    };
    let jwks = serde_json::json!({ "keys": [jwk] });
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let jwks = jwks.clone();
            async move { axum::Json(jwks) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/jwks.json", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut auth = JwtAuth::new(url, "bench-agent", "https://issuer.example");
    if uncached {
        auth = auth.verified_ttl(std::time::Duration::ZERO);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let claims = serde_json::json!({
        "sub": "alice", "aud": "bench-agent", "iss": "https://issuer.example",
        "exp": now + 3600, "nbf": now - 10,
    });
    let mut header = jsonwebtoken::Header::new(algorithm);
    header.kid = Some("k1".into());
    let token = jsonwebtoken::encode(&header, &claims, &key)?;
    let mut params = a2a_server::ServiceParams::new();
    params
        .append("authorization", &format!("Bearer {token}"))
        .map_err(|_| anyhow::anyhow!("bad header"))?;
    let ctx = CallContext::new(a2a_core::Method::SendMessage, params);
    // The first call fetches the key set.
    auth.authenticate(&ctx)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let started = Instant::now();
    for _ in 0..count {
        std::hint::black_box(
            auth.authenticate(&ctx)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        );
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let per_call = elapsed.as_secs_f64() * 1e6 / count as f64;
    println!("jwt alg={alg} uncached={uncached} verifications={count} per_call={per_call:.2}µs");
    Ok(())
}

fn resident_bytes() -> anyhow::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm.split_whitespace().nth(1).context("statm")?.parse()?;
    Ok(pages * 4096)
}

async fn memory(tasks: usize) -> anyhow::Result<()> {
    let card = card(SocketAddr::from(([127, 0, 0, 1], 1)));
    let handler = std::sync::Arc::new(DefaultRequestHandler::builder(Echo, card).build());
    let ctx = CallContext::new(
        a2a_core::Method::SendMessage,
        a2a_server::ServiceParams::new(),
    );
    // Warm up allocator pools before the baseline.
    for _ in 0..1000 {
        handler
            .send_message(
                &ctx,
                SendMessageRequest::new(Message::user_text("hello benchmark")),
            )
            .await?;
    }
    let before = resident_bytes()?;
    let mut joins = Vec::new();
    for chunk in 0..64 {
        let (handler, ctx) = (handler.clone(), ctx.clone());
        joins.push(tokio::spawn(async move {
            for _ in (chunk..tasks).step_by(64) {
                handler
                    .send_message(
                        &ctx,
                        SendMessageRequest::new(Message::user_text("hello benchmark")),
                    )
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    for join in joins {
        join.await??;
    }
    let after = resident_bytes()?;
    #[allow(clippy::cast_precision_loss)]
    let per_task = after.saturating_sub(before) as f64 / tasks as f64;
    println!(
        "tasks={tasks} resident_delta={}KiB per_task={per_task:.0}B",
        (after - before) / 1024
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    // As `a2a serve` does: the benchmark measures what it runs.
    let _ = a2a_alloc::disable_transparent_huge_pages();
    match Args::parse().command {
        Command::Sdk {
            port,
            store,
            conversation_log,
            gateway,
            node_id,
        } => {
            install_log();
            one_worker()?.block_on(serve_sdk(port, store, conversation_log, gateway, node_id))
        }
        Command::Seed {
            store,
            tasks,
            pending,
        } => one_worker()?.block_on(seed(&store, tasks, pending)),
        Command::Recovery {
            store,
            tasks,
            pending,
        } => one_worker()?.block_on(recovery(store, tasks, pending)),
        Command::Bare { port } => one_worker()?.block_on(serve_bare(port)),
        Command::BareGrpc { port } => one_worker()?.block_on(serve_bare_grpc(port)),
        Command::BareH2 { port } => one_worker()?.block_on(serve_bare_h2(port)),
        Command::Load {
            addr,
            path,
            connections,
            seconds,
            warmup,
        } => one_worker()?.block_on(load(addr, &path, connections, seconds, warmup)),
        Command::GrpcLoad {
            addr,
            raw,
            connections,
            seconds,
            warmup,
        } => one_worker()?.block_on(grpc_load(addr, raw, connections, seconds, warmup)),
        Command::Streams {
            addr,
            count,
            hold,
            connect_only,
            server_pid,
        } => {
            let mode = if hold {
                StreamsMode::Hold
            } else if connect_only {
                StreamsMode::ConnectOnly
            } else {
                StreamsMode::FirstEvent
            };
            one_worker()?.block_on(streams(addr, count, mode, server_pid))
        }
        Command::Handler {
            count,
            conversation_log,
        } => one_worker()?
            .block_on(async { tokio::spawn(handler_only(count, conversation_log)).await? }),
        Command::Router { binding, count } => {
            one_worker()?.block_on(async move { tokio::spawn(router_only(binding, count)).await? })
        }
        Command::Memory { tasks } => one_worker()?.block_on(memory(tasks)),
        Command::Jwt {
            count,
            alg,
            uncached,
        } => one_worker()?.block_on(jwt_only(count, &alg, uncached)),
    }
}
