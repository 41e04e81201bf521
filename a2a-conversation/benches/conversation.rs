//! The conversation log and index on their hot paths:
//! - index lookup with 100,000 routes (target: under 1 µs);
//! - appending a line (what an execution pays: the entry handed to the queue);
//! - writing lines to the file (the writer thread's cost per line);
//! - a chain of depth 100 spread over 30 days of files, some archived and gzipped.
//!
//! Run with `cargo bench -p agent2agent-conversation`.

use std::hint::black_box;

use a2a_conversation::{
    ConversationIndex, ConversationLog, EntryType, LogConfig, LogEntry, LogReader, Route, RouteKey,
};
use chrono::{Duration, Utc};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

fn index_lookup(c: &mut Criterion) {
    let index = ConversationIndex::in_memory();
    let now = Utc::now();
    let keys: Vec<RouteKey> = (0..100_000)
        .map(|n| RouteKey::new("ws-1", &format!("agent-{n}"), &format!("peer-{}", n % 97)))
        .collect();
    for key in &keys {
        index.record(
            key.clone(),
            Route {
                context_id: a2a_core::new_id(),
                task_id: Some(a2a_core::new_id()),
                last_event: "TASK_STATE_COMPLETED".into(),
                updated_at: now,
            },
        );
    }
    let mut n = 0;
    c.bench_function("index lookup (100k routes)", |b| {
        b.iter(|| {
            n = (n + 7919) % keys.len();
            black_box(index.get(&keys[n]))
        });
    });
}

fn entry(text: &str) -> LogEntry {
    LogEntry::new(
        Utc::now(),
        EntryType::Request,
        "alpha",
        Some("beta".into()),
        text,
    )
    .meta("taskId", a2a_core::new_id())
    .meta("contextId", a2a_core::new_id())
}

fn append(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    // No gathering delay: the writer's own cost per line, not its pauses.
    let config = LogConfig::default().flush(a2a_conversation::Flush::Grouped {
        max_lines: 4_096,
        max_delay: std::time::Duration::ZERO,
    });
    let log = ConversationLog::open(dir.path(), config).expect("log");
    let text = "Plan a route from the office to the airport avoiding tolls, please.";
    let mut group = c.benchmark_group("log");
    group.throughput(Throughput::Elements(1));
    // What the execution pays: queue a built line. Timed in chunks that fit
    // the queue, with the writer drained between chunks (untimed), so the
    // queue never fills (that would time the drop path instead).
    group.bench_function("append (queue a line)", |b| {
        b.iter_custom(|iters| {
            let mut spent = std::time::Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let chunk = left.min(10_000);
                let lines: Vec<_> = (0..chunk).map(|_| entry(text)).collect();
                let started = std::time::Instant::now();
                runtime.block_on(async {
                    for e in lines {
                        black_box(log.append(e).await.expect("append"));
                    }
                });
                spent += started.elapsed();
                runtime.block_on(log.flush()).expect("flush");
                left -= chunk;
            }
            spent
        });
    });
    // What the writer pays per line: 1,000 lines queued then written.
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("write 1,000 lines to the file", |b| {
        b.iter_batched(
            || (0..1_000).map(|_| entry(text)).collect::<Vec<_>>(),
            |lines| {
                runtime.block_on(async {
                    for e in lines {
                        log.append(e).await.expect("append");
                    }
                    log.flush().await.expect("flush");
                });
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
    assert_eq!(log.dropped(), 0, "the benchmark overran the queue");
}

fn chain(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig::default()
        .archive_after_days(7)
        .gzip_after_days(14);
    let log = ConversationLog::open(dir.path(), config).expect("log");
    let today = Utc::now();
    // 30 days, each with 2,000 other lines; a chain of 120 lines across them;
    // days older than 7 archived, older than 14 gzipped.
    let last = runtime.block_on(async {
        let mut parent: Option<String> = None;
        for day in (0..30).rev() {
            let t = today - Duration::days(day);
            for n in 0..2_000 {
                let mut e = entry("unrelated traffic on the same day");
                e.t = t;
                e.id = a2a_conversation::new_entry_id(t);
                log.append(e).await.expect("append");
                if n % 600 == 0 {
                    let mut link = entry("a link of the chain").parent(parent.take());
                    link.t = t;
                    link.id = a2a_conversation::new_entry_id(t);
                    parent = Some(log.append(link).await.expect("append"));
                }
            }
        }
        log.archive(today.date_naive()).await.expect("archive");
        log.flush().await.expect("flush");
        parent.expect("a chain")
    });
    let reader = LogReader::new(dir.path());
    let depth = reader.chain(&last).expect("chain").len();
    assert!(depth >= 100, "chain of {depth}");
    c.bench_function(&format!("chain of {depth} across 30 days"), |b| {
        b.iter(|| black_box(reader.chain(&last).expect("chain")));
    });
}

criterion_group!(benches, index_lookup, append, chain);
criterion_main!(benches);
