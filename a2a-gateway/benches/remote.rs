//! What forwarding through a `RemoteAgent` costs: one blocking `SendMessage`
//! (JSON-RPC, loopback) to an agent that answers at once, sent straight to
//! it and through a gateway hosting it as a remote agent (which streams from
//! it, or sends with `returnImmediately` when its card does not stream).
//! A relay that makes one plain blocking send per message is the floor of
//! any forwarding. Everything runs on one runtime thread, so the figures are
//! the work each path adds, not what parallelism hides.
//!
//! Run with `cargo bench -p agent2agent-gateway --bench remote`.

use std::net::SocketAddr;

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, SendMessageResponse, binding};
use a2a_gateway::remote::{RemoteAgent, RemoteAgentConfig};
use a2a_server::http::HttpConfig;
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use criterion::{Criterion, criterion_group};

struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text(ctx.message.text()).await
    }
}

/// The least an executor that calls the remote can do: one plain blocking
/// send, its final status copied. The floor `RemoteAgent` is measured against.
struct Relay(Client);

#[async_trait::async_trait]
impl AgentExecutor for Relay {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let request = SendMessageRequest::new(Message::user_text(ctx.message.text()));
        match self.0.send_message(request, None).await {
            Ok(SendMessageResponse::Task(task)) => {
                let text = task.status.message.map(|m| m.text()).unwrap_or_default();
                events.complete_with_text(text).await
            }
            _ => events.fail("the remote failed").await,
        }
    }
}

fn card(addr: SocketAddr, streaming: bool) -> AgentCard {
    AgentCard::new("echo", "answers at once")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_streaming(streaming)
}

async fn serve(agent: impl AgentExecutor, streaming: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let handler = DefaultRequestHandler::builder(agent, card(addr, streaming)).build();
    let app = a2a_server::http::router(A2aService::new(handler), HttpConfig::default());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

fn client(addr: SocketAddr) -> Client {
    ClientBuilder::new()
        .track_blocking_sends(false)
        .build(card(addr, true))
        .expect("client")
}

async fn send(client: &Client) {
    let request = SendMessageRequest::new(Message::user_text("hi"));
    match client.send_message(request, None).await {
        Ok(SendMessageResponse::Task(task)) if task.status.state.is_terminal() => {}
        other => panic!("unexpected answer: {other:?}"),
    }
}

/// The four paths: their names and clients, on `runtime`.
fn paths(runtime: &tokio::runtime::Runtime) -> [(&'static str, Client); 4] {
    let (direct, streamed, polled, relayed) = runtime.block_on(async {
        let streaming = serve(Echo, true).await;
        let polling = serve(Echo, false).await;
        let via = |remote: SocketAddr| {
            RemoteAgent::new("echo", RemoteAgentConfig::new(format!("http://{remote}")))
        };
        let streamed = serve(via(streaming), true).await;
        let polled = serve(via(polling), true).await;
        let relayed = serve(Relay(client(streaming)), true).await;
        (
            client(streaming),
            client(streamed),
            client(polled),
            client(relayed),
        )
    });
    [
        ("direct", direct),
        ("via_gateway_streamed", streamed),
        ("via_gateway_return_immediately", polled),
        ("via_gateway_plain_relay", relayed),
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn forwarding(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("send_message");
    for (name, client) in paths(&runtime) {
        // The first call fetches the card and opens the connections.
        runtime.block_on(send(&client));
        group.bench_function(name, |b| b.iter(|| runtime.block_on(send(&client))));
    }
    group.finish();
}

criterion_group!(benches, forwarding);

/// With `REMOTE_BENCH_PATH=<name> REMOTE_BENCH_COUNT=<n>`, only `n` sends on
/// that path and no measuring, for an instruction count under callgrind
/// (stable on a shared machine, where wall time is not): two counts' difference
/// over the extra sends cancels start-up.
fn main() {
    let path = std::env::var("REMOTE_BENCH_PATH");
    let count = std::env::var("REMOTE_BENCH_COUNT").map(|n| n.parse::<u32>());
    if let (Ok(path), Ok(Ok(count))) = (path, count) {
        let runtime = runtime();
        let Some((_, client)) = paths(&runtime).into_iter().find(|(name, _)| *name == path) else {
            panic!("no path {path:?}");
        };
        runtime.block_on(async {
            for _ in 0..count {
                send(&client).await;
            }
        });
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
