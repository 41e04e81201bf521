//! Instructions per logged line, for callgrind: `A2A_BENCH_APPENDS=N`
//! appends N lines the way a server's recorder does (`append_line`, borrowed
//! fields) and writes them; `A2A_BENCH_NODE=NAME` as a cluster node. The
//! figure is the difference of two runs over the difference of their N
//! (start-up cancels out):
//!
//! ```text
//! cargo bench -p agent2agent-conversation --bench append_count --no-run
//! A2A_BENCH_APPENDS=20000 valgrind --tool=callgrind target/release/deps/append_count-…
//! ```

use a2a_conversation::{ConversationLog, EntryType, Flush, Line, LineContent, LogConfig, WhenFull};

fn main() {
    let Some(count) = std::env::var("A2A_BENCH_APPENDS")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
    else {
        eprintln!("set A2A_BENCH_APPENDS=N (and A2A_BENCH_NODE=NAME for a node's log)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig::default()
        .when_full(WhenFull::Wait)
        .flush(Flush::Grouped {
            max_lines: 4_096,
            max_delay: std::time::Duration::ZERO,
        });
    let config = node(config);
    let log = ConversationLog::open(dir.path(), config).expect("log");
    let text = "Plan a route from the office to the airport avoiding tolls, please.";
    let metadata = [
        ("contextId", "0b7c6a1e-3f5d-4b8e-9a2c-1d4e5f6a7b8c"),
        ("taskId", "5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716"),
    ];
    runtime.block_on(async {
        for _ in 0..count {
            let line = Line {
                t: log.now(),
                kind: EntryType::Request,
                from_agent: "alpha",
                to_agent: Some("beta"),
                content: LineContent::Text(text),
                parent_id: None,
                metadata: &metadata,
            };
            std::hint::black_box(log.append_line(line).await.expect("append"));
        }
        log.flush().await.expect("flush");
    });
}

/// The node of `A2A_BENCH_NODE`, if set.
fn node(config: LogConfig) -> LogConfig {
    config.node(std::env::var("A2A_BENCH_NODE").ok())
}
