//! What a model agent costs besides the model: the time of one task (one
//! model turn) through the handler against a fake endpoint that answers at
//! once, minus the time of the same HTTP exchange made bare with reqwest;
//! and the memory each open model stream holds (resident set growth with
//! many tasks streaming at once, each held mid-answer by the fake).
//!
//! Run: `cargo bench -p agent2agent-model --bench turn` (prints the
//! figures; `TURN_TASKS` and `TURN_STREAMS` change the counts).
#![allow(clippy::unwrap_used, missing_docs)]

#[path = "../tests/support/fake.rs"]
mod fake;

use std::time::{Duration, Instant};

use a2a_core::{AgentCard, Message, Method, SendMessageRequest, StreamResponse};
use a2a_model::{ModelAgent, ModelSettings};
use a2a_server::{CallContext, DefaultRequestHandler, RequestHandler, ServiceParams};
use fake::{End, Fake};
use futures::StreamExt as _;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The resident set in bytes (Linux; 0 elsewhere).
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let tasks = count("TURN_TASKS", 2000);
    let streams = count("TURN_STREAMS", 200);
    let fake = Fake::start(Vec::new()).await;
    fake.repeat(fake::text("An answer of a few words."));
    let handler = DefaultRequestHandler::builder(
        ModelAgent::new(
            "m",
            ModelSettings::new(fake.base_url(), "fake").system("Be brief."),
        ),
        AgentCard::new("m", "a model").with_streaming(true),
    )
    .build();
    let ctx = CallContext::new(Method::SendMessage, ServiceParams::new());
    let one = || async {
        handler
            .send_message(
                &ctx,
                SendMessageRequest::new(Message::user_text("hello there")),
            )
            .await
            .unwrap();
    };
    for _ in 0..200 {
        one().await;
    }
    fake.forget();
    let started = Instant::now();
    for _ in 0..tasks {
        one().await;
    }
    let agent = started.elapsed() / u32::try_from(tasks).unwrap();
    fake.forget();

    // The same exchange, bare: what the model's own side costs here.
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", fake.base_url());
    let body = serde_json::json!({
        "model": "fake",
        "messages": [{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "hello there" }],
        "stream": false,
    })
    .to_string();
    let bare = || async {
        let response = http.post(&url).body(body.clone()).send().await.unwrap();
        let _ = response.bytes().await.unwrap();
    };
    for _ in 0..200 {
        bare().await;
    }
    let started = Instant::now();
    for _ in 0..tasks {
        bare().await;
    }
    let exchange = started.elapsed() / u32::try_from(tasks).unwrap();
    fake.forget();
    println!(
        "one task, one model turn: {:.1} µs through the agent, {:.1} µs the bare HTTP exchange, {:.1} µs the agent's own ({} tasks)",
        micros(agent),
        micros(exchange),
        micros(agent.saturating_sub(exchange)),
        tasks
    );

    // Open streams, each held mid-answer.
    fake.repeat(fake::stream(&["Thinking"], End::Hang));
    let stream_ctx = CallContext::new(Method::SendStreamingMessage, ServiceParams::new());
    let before = rss();
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut events = handler
            .send_streaming_message(
                &stream_ctx,
                SendMessageRequest::new(Message::user_text("hello there")),
            )
            .await
            .unwrap();
        // Held once its first chunk arrived.
        while let Some(event) = events.next().await {
            if matches!(event.unwrap(), StreamResponse::ArtifactUpdate(_)) {
                break;
            }
        }
        open.push(events);
    }
    let after = rss();
    println!(
        "{streams} open model streams: {:.1} KiB resident each (RSS {} -> {} KiB)",
        (after.saturating_sub(before)) as f64 / 1024.0 / streams as f64,
        before / 1024,
        after / 1024
    );
    drop(open);
    tokio::time::sleep(Duration::from_millis(10)).await;
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
