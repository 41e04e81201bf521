//! What the conversation index costs an agent-to-agent call: alpha calls
//! beta through `Peers` (in process, the whole service: checks, the index
//! wrapper, the handler, an in-memory store), once with the `contextId`
//! passed by hand and once with none, continued by the index. Both record
//! the answer in the index; the difference is the lookup that fills the
//! context in. Also: a lookup by names among 100,000 pairs (the key built
//! from the two names, as a call does).
//!
//! Run with `cargo bench -p agent2agent-gateway --bench conversations`.
//!
//! Instructions, which a busy machine does not blur: run the bench binary
//! under callgrind with `A2A_BENCH_CALLS=MODE:N` (MODE `hand` or
//! `continued`): it makes N calls and exits, and the difference of two Ns
//! divided by their difference is the cost of one call, start-up cancelled
//! out (`scripts/conversation-instructions.sh` does it). `A2A_BENCH_LOOKUPS=N`
//! makes N lookups by names among 100,000 pairs the same way.
//!
//! Measured on 2026-11-27 on a shared 2-core VM (load average about 5),
//! callgrind, N 500 → 2,500: 63,588 instructions a call with the contextId
//! by hand, 64,246 continued by the index (+1.0 %); a lookup by names
//! among 100,000 pairs (the key built, the entry read, the reuse rule
//! checked) 2,124 instructions; criterion, 1.44 µs (1.38–1.50) on that
//! busy machine.

use std::hint::black_box;

use a2a_conversation::{ConversationIndex, Route, RouteKey};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, SendMessageResponse};
use a2a_gateway::{AgentDefinition, Conversations, Gateway};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use criterion::{Criterion, criterion_group};

struct Beta;

#[async_trait::async_trait]
impl AgentExecutor for Beta {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text("ok").await
    }
}

fn gateway() -> (Gateway, Conversations) {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let gateway = Gateway::builder()
        .agent(AgentDefinition::new(
            "alpha",
            AgentCard::new("Alpha", "Calls."),
            Beta,
        ))
        .agent(AgentDefinition::new(
            "beta",
            AgentCard::new("Beta", "Answers."),
            Beta,
        ))
        .conversations(conversations.clone())
        .build("http://127.0.0.1:1")
        .expect("gateway");
    (gateway, conversations)
}

/// One call from alpha to beta; `context`: the contextId passed by hand.
async fn call(beta: &a2a_client::Client, context: Option<&str>) {
    let mut message = Message::user_text("hello");
    if let Some(context) = context {
        context.clone_into(&mut message.context_id);
    }
    match beta
        .send_message(SendMessageRequest::new(message), None)
        .await
    {
        Ok(SendMessageResponse::Task(task)) if task.status.state.is_terminal() => {}
        other => panic!("unexpected answer: {other:?}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Alpha's client of beta, and the pair's context after a first call.
fn setup(runtime: &tokio::runtime::Runtime) -> (Gateway, a2a_client::Client, String) {
    let (gateway, conversations) = gateway();
    let beta = gateway
        .peers("alpha")
        .and_then(|peers| peers.client("beta"))
        .expect("alpha's client of beta");
    runtime.block_on(call(&beta, None));
    let context = conversations
        .index()
        .get(&RouteKey::new("default", "alpha", "beta"))
        .expect("the first call is recorded")
        .context_id
        .clone();
    (gateway, beta, context)
}

fn calls(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("agent-to-agent call");
    {
        let (_gateway, beta, context) = setup(&runtime);
        group.bench_function("contextId by hand", |b| {
            b.iter(|| runtime.block_on(call(&beta, Some(&context))));
        });
    }
    {
        let (_gateway, beta, _) = setup(&runtime);
        group.bench_function("continued by the index", |b| {
            b.iter(|| runtime.block_on(call(&beta, None)));
        });
    }
    group.finish();
}

/// 100,000 pairs in an index, and their names.
fn pairs() -> (Conversations, Vec<(String, String)>) {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let now = chrono::Utc::now();
    let names: Vec<(String, String)> = (0..100_000)
        .map(|n| (format!("agent-{n}"), format!("peer-{}", n % 97)))
        .collect();
    for (a, b) in &names {
        conversations.index().record(
            conversations.key(a, b),
            Route {
                context_id: a2a_core::new_id(),
                task_id: Some(a2a_core::new_id()),
                last_event: "TASK_STATE_COMPLETED".into(),
                updated_at: now,
            },
        );
    }
    (conversations, names)
}

fn lookup(c: &mut Criterion) {
    let (conversations, names) = pairs();
    let now = chrono::Utc::now();
    let mut n = 0;
    c.bench_function("lookup by names (100k pairs)", |b| {
        b.iter(|| {
            n = (n + 7919) % names.len();
            let (a, b) = &names[n];
            black_box(conversations.current(&conversations.key(a, b), now))
        });
    });
}

criterion_group!(benches, calls, lookup);

fn main() {
    // Lookups by names among 100,000 pairs, for callgrind (as A2A_BENCH_CALLS).
    if let Ok(count) = std::env::var("A2A_BENCH_LOOKUPS") {
        let count: usize = count.parse().expect("a number of lookups");
        let (conversations, names) = pairs();
        let now = chrono::Utc::now();
        for n in 0..count {
            let (a, b) = &names[(n * 7919) % names.len()];
            black_box(conversations.current(&conversations.key(a, b), now));
        }
        return;
    }
    if let Ok(spec) = std::env::var("A2A_BENCH_CALLS") {
        let (mode, count) = spec.split_once(':').expect("A2A_BENCH_CALLS=MODE:N");
        let count: usize = count.parse().expect("a number of calls");
        let runtime = runtime();
        let (_gateway, beta, context) = setup(&runtime);
        let context = (mode == "hand").then_some(context.as_str());
        runtime.block_on(async {
            for _ in 0..count {
                call(&beta, context).await;
            }
        });
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
