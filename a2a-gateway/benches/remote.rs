//! What forwarding through a `RemoteAgent` costs: one blocking `SendMessage`
//! (JSON-RPC, loopback) to an agent that answers at once, sent straight to
//! it and through a gateway hosting it as a remote agent (which streams from
//! it, or sends with `returnImmediately` when its card does not stream).
//! Everything runs on one runtime thread, so the figures are the work each
//! path adds, not what parallelism hides.
//!
//! Run with `cargo bench -p a2a-gateway --bench remote`.

use std::net::SocketAddr;

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, SendMessageResponse, binding};
use a2a_gateway::remote::{RemoteAgent, RemoteAgentConfig};
use a2a_server::http::HttpConfig;
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use criterion::{Criterion, criterion_group, criterion_main};

struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text(ctx.message.text()).await
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

fn forwarding(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (direct, streamed, polled) = runtime.block_on(async {
        let streaming = serve(Echo, true).await;
        let polling = serve(Echo, false).await;
        let via = |remote: SocketAddr| {
            RemoteAgent::new("echo", RemoteAgentConfig::new(format!("http://{remote}")))
        };
        let streamed = serve(via(streaming), true).await;
        let polled = serve(via(polling), true).await;
        (client(streaming), client(streamed), client(polled))
    });
    let mut group = c.benchmark_group("send_message");
    for (name, client) in [
        ("direct", &direct),
        ("via_gateway_streamed", &streamed),
        ("via_gateway_return_immediately", &polled),
    ] {
        // The first call fetches the card and opens the connections.
        runtime.block_on(send(client));
        group.bench_function(name, |b| b.iter(|| runtime.block_on(send(client))));
    }
    group.finish();
}

criterion_group!(benches, forwarding);
criterion_main!(benches);
