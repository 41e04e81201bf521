//! The process protocol's round trip: one message in, a completed task out,
//! through a real request handler and a long-running child (the example echo
//! agent, examples/gateway/agents/echo.py, started once before measuring).
//! The same round trip with an in-process Rust agent is measured alongside,
//! so the difference is what the protocol and the child cost.
//!
//! Run with `cargo bench -p agent2agent-gateway --bench process` (needs python3).
//!
//! Measured on 2026-11-23 on a shared 2-core VM: busy (load average about
//! 9), `process` 107 µs (92–124) against `in_process` 15 µs (14–17); idle
//! (load 0.1), `process` 162 µs (154–169) against 10 µs (10–12). The
//! protocol's share, about 90–150 µs a message, is mostly the two wake-ups
//! across the pipes (slower when the idle VM's cores sleep deeper) and the
//! child's own JSON work in Python.

use std::path::PathBuf;
use std::time::Duration;

use a2a_core::{A2aError, AgentCard, Message, Method, SendMessageRequest, SendMessageResponse};
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_server::{
    AgentExecutor, CallContext, DefaultRequestHandler, EventQueue, RequestContext, RequestHandler,
    ServiceParams,
};
use criterion::{Criterion, criterion_group, criterion_main};

/// What the echo script does, in Rust: complete with the text.
struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text(ctx.message.text()).await
    }
}

async fn round_trip(handler: &DefaultRequestHandler, call: &CallContext) {
    let request = SendMessageRequest::new(Message::user_text("hello"));
    match handler.send_message(call, request).await {
        Ok(SendMessageResponse::Task(task)) if task.status.state.is_terminal() => {}
        other => panic!("unexpected answer: {other:?}"),
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/gateway/agents/echo.py");
    let config = ProcessAgentConfig::new("python3").arg("-u").arg(script);
    let agent = runtime
        .block_on(async { ProcessAgent::spawn("echo", config) })
        .expect("python3 starts");
    let process = DefaultRequestHandler::builder(agent.clone(), AgentCard::default()).build();
    let in_process = DefaultRequestHandler::builder(Echo, AgentCard::default()).build();
    let call = CallContext::new(Method::SendMessage, ServiceParams::new());
    // The child is up and has answered once before anything is measured.
    runtime.block_on(round_trip(&process, &call));

    let mut group = c.benchmark_group("round_trip");
    group.bench_function("process", |b| {
        b.iter(|| runtime.block_on(round_trip(&process, &call)));
    });
    group.bench_function("in_process", |b| {
        b.iter(|| runtime.block_on(round_trip(&in_process, &call)));
    });
    group.finish();
    runtime.block_on(agent.shutdown(Duration::from_secs(2)));
}

criterion_group!(benches, bench);
criterion_main!(benches);
