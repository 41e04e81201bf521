//! Parsing and serializing the two hottest payloads: a SendMessageRequest and a
//! task carrying 50 history messages (and writing the task as a server does,
//! with `a2a_core::json_writer`). Run with `cargo bench -p agent2agent-core`.

use a2a_core::json_writer::WriteJson as _;
use a2a_core::{
    Artifact, Message, Part, SendMessageConfiguration, SendMessageRequest, Task, TaskState,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn send_message_request() -> SendMessageRequest {
    let message = Message::user(vec![
        Part::text("Plan a route from the office to the airport avoiding tolls, please."),
        Part::data(
            serde_json::json!({"origin": "1600 Amphitheatre Pkwy", "avoid": ["tolls"], "n": 3}),
        ),
    ])
    .with_context_id("c295ea44-7543-4f78-b524-7a38915ad6e4");
    SendMessageRequest {
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: vec!["text/plain".into(), "application/json".into()],
            history_length: Some(10),
            ..Default::default()
        }),
        ..SendMessageRequest::new(message)
    }
}

fn task_with_history(messages: usize) -> Task {
    let mut task = Task::new(a2a_core::new_id(), a2a_core::new_id(), TaskState::Completed);
    task.history = (0..messages)
        .map(|i| {
            let text = format!("message number {i}: the quick brown fox jumps over the lazy dog");
            if i % 2 == 0 {
                Message::user_text(text).into()
            } else {
                Message::agent_text(text).into()
            }
        })
        .collect();
    task.artifacts
        .push(Artifact::text("final answer").with_name("result"));
    task
}

fn bench(c: &mut Criterion) {
    for (name, value) in [
        (
            "send_message_request",
            serde_json::to_value(send_message_request()).unwrap_or_default(),
        ),
        (
            "task_50_messages",
            serde_json::to_value(task_with_history(50)).unwrap_or_default(),
        ),
    ] {
        let bytes = serde_json::to_vec(&value).unwrap_or_default();
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if name == "send_message_request" {
            let parsed: SendMessageRequest = serde_json::from_slice(&bytes).unwrap_or_default();
            group.bench_function("parse", |b| {
                b.iter(|| serde_json::from_slice::<SendMessageRequest>(black_box(&bytes)))
            });
            group.bench_function("serialize", |b| {
                b.iter(|| serde_json::to_vec(black_box(&parsed)))
            });
        } else {
            let parsed: Task = serde_json::from_slice(&bytes).unwrap_or_default();
            group.bench_function("parse", |b| {
                b.iter(|| serde_json::from_slice::<Task>(black_box(&bytes)))
            });
            group.bench_function("serialize", |b| {
                b.iter(|| serde_json::to_vec(black_box(&parsed)))
            });
            // What a server sends: the same bytes, written directly.
            group.bench_function("write", |b| {
                b.iter(|| {
                    let mut out = Vec::with_capacity(bytes.len());
                    black_box(&parsed).write_json(&mut out);
                    out
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
