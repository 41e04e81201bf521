//! Searching the conversation log through its full-text index, over a log of
//! 1,000,000 lines spread over 30 days (23 of them archived, 7 of those
//! gzipped), as `a2a log search` does it (catch-up check included):
//! - a rare word (100 matches), a common word (100,000 matches, the latest
//!   100), two words, a common word with agent and type filters, a common
//!   word within one day (target for a word query: under 50 ms);
//! - building the index from nothing over the 1,000,000 lines, and catching
//!   up with 10,000 new lines, are timed once each and printed (too slow to
//!   repeat as criterion samples).
//!
//! Measured (2 cores shared with other builds, load ~5): build 25 s for
//! 1,000,000 lines (39,500 lines/s, a 420 MiB index), catch-up of 10,000
//! lines 224 ms; rare word 0.85 ms, common word (latest 100) 1.2 ms, two
//! words 3.3 ms, with agent and type filters 3.4 ms, within one day 9.7 ms,
//! no match 0.57 ms.
//!
//! Run with `cargo bench -p agent2agent-conversation --bench search`
//! (`A2A_BENCH_SEARCH_LINES` sets another number of lines).

use std::hint::black_box;
use std::time::Instant;

use a2a_conversation::{
    ConversationLog, EntryType, LogConfig, LogEntry, LogSearch, SEARCH_INDEX_FILE, SearchQuery,
};
use chrono::{Duration, TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};

/// The log's last day.
fn today() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 0, 0, 0).unwrap()
}

const DAYS: i64 = 30;
const AGENTS: [&str; 8] = [
    "alpha", "beta", "gamma", "delta", "eden", "fjord", "grove", "heron",
];

/// A small, seeded generator: the same log on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Skewed towards small numbers, as word frequencies are.
    fn skewed(&mut self, below: u64) -> u64 {
        let a = self.next() % below;
        let b = self.next() % below;
        a.min(b)
    }
}

/// Line `n` of `lines`: 8 to 20 words from a vocabulary of 20,000, plus
/// `route` in every 10th line and `okapi` in every 10,000th.
fn line(n: u64, lines: u64, rng: &mut Rng) -> LogEntry {
    let day = (n * DAYS as u64 / lines) as i64;
    let t = today() - Duration::days(DAYS - 1 - day)
        + Duration::microseconds((n % (lines / DAYS as u64).max(1)) as i64 * 80_000);
    let mut text = String::new();
    for _ in 0..8 + rng.next() % 13 {
        text.push_str(&format!("w{} ", rng.skewed(20_000)));
    }
    if n % 10 == 2 {
        text.push_str("plan the route ");
    }
    if n % 10_000 == 7 {
        text.push_str("an okapi ");
    }
    let from = AGENTS[(rng.next() % 8) as usize];
    let to = AGENTS[(rng.next() % 8) as usize];
    let kind = match n % 4 {
        0 | 1 => EntryType::Request,
        2 => EntryType::Response,
        _ => EntryType::State,
    };
    LogEntry::new(t, kind, from, Some(to.into()), text.trim_end().to_owned())
        .meta("contextId", format!("ctx-{}", n % 5_000))
        .meta("taskId", format!("task-{n}"))
}

fn search(c: &mut Criterion) {
    let lines: u64 = std::env::var("A2A_BENCH_SEARCH_LINES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig::default()
        .archive_after_days(7)
        .gzip_after_days(23)
        .when_full(a2a_conversation::WhenFull::Wait);
    let log = ConversationLog::open(dir.path(), config).expect("log");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    runtime.block_on(async {
        for n in 0..lines {
            log.append(line(n, lines, &mut rng)).await.expect("append");
        }
        log.flush().await.expect("flush");
        log.archive(today().date_naive()).await.expect("archive");
    });

    let started = Instant::now();
    let mut index = LogSearch::open(dir.path()).expect("index");
    let built = index.update().expect("build");
    let build_time = started.elapsed();
    assert_eq!(built.lines_added, lines);
    let size = std::fs::metadata(dir.path().join(SEARCH_INDEX_FILE))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "index build from nothing: {lines} lines in {:.2} s ({:.0} lines/s), index file {} MiB",
        build_time.as_secs_f64(),
        lines as f64 / build_time.as_secs_f64(),
        size >> 20
    );

    // Catching up: 10,000 lines appended to today's file.
    runtime.block_on(async {
        for n in 0..10_000 {
            let mut entry = line(lines - 1, lines, &mut rng);
            entry.t += Duration::microseconds(n + 1);
            entry.id = a2a_conversation::new_entry_id(entry.t);
            log.append(entry).await.expect("append");
        }
        log.flush().await.expect("flush");
    });
    let started = Instant::now();
    let caught = index.update().expect("catch up");
    assert_eq!(caught.lines_added, 10_000);
    println!(
        "index catch-up: 10000 new lines in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );

    let expect = |query: &SearchQuery, index: &mut LogSearch| {
        let found = index.search(query).expect("search");
        assert!(!found.lines.is_empty(), "{query:?} found nothing");
    };
    let last_day = today();
    let queries = [
        ("search: rare word (100 matches)", SearchQuery::new("okapi")),
        (
            "search: common word (100k matches), latest 100",
            SearchQuery::new("route").limit(100),
        ),
        (
            "search: two words, latest 100",
            SearchQuery::new("plan w1").limit(100),
        ),
        (
            "search: common word + agent + type, latest 100",
            SearchQuery::new("route")
                .agent("eden")
                .kind(EntryType::Response)
                .limit(100),
        ),
        (
            "search: common word within one day, latest 100",
            SearchQuery::new("route")
                .since(last_day - Duration::days(10))
                .before(last_day - Duration::days(9))
                .limit(100),
        ),
        (
            "search: no match",
            SearchQuery::new("nonexistentword").limit(100),
        ),
    ];
    let mut group = c.benchmark_group("log search (1M lines)");
    for (name, query) in queries {
        if query.text != "nonexistentword" {
            expect(&query, &mut index);
        }
        group.bench_function(name, |b| {
            b.iter(|| black_box(index.search(&query).expect("search")));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = search
}
criterion_main!(benches);
