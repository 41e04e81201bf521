//! The conversation log and index, on real files.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::time::Duration;

use a2a_conversation::{
    Clock, ConversationIndex, ConversationLog, EntryType, Flush, INDEX_FILE, LogConfig, LogEntry,
    LogError, LogReader, Route, RouteKey, WhenFull,
};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};

fn at(y: i32, m: u32, d: u32, h: u32, min: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, d, h, min, s).unwrap()
}

fn config() -> LogConfig {
    LogConfig::default()
}

fn entry(t: DateTime<Utc>, text: &str) -> LogEntry {
    LogEntry::new(t, EntryType::Request, "alpha", Some("beta".into()), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_lose_nothing_and_never_interleave_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), config()).unwrap();
    let t = Utc::now();
    let mut writers = Vec::new();
    for writer in 0..40 {
        let log = log.clone();
        writers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in 0..250 {
                // Long lines, so an interleaving would show as a broken line.
                let text = format!("writer {writer} line {n} {}", "x".repeat(300));
                let e = entry(t, &text).meta("writer", writer).meta("n", n);
                ids.push(log.append(e).await.unwrap());
                if n % 50 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            ids
        }));
    }
    let mut ids = HashSet::new();
    for writer in writers {
        ids.extend(writer.await.unwrap());
    }
    log.flush().await.unwrap();
    assert_eq!(ids.len(), 10_000);
    let read = LogReader::new(dir.path()).day(t.date_naive()).unwrap();
    assert_eq!(read.skipped, 0);
    assert_eq!(read.entries.len(), 10_000);
    assert_eq!(log.written(), 10_000);
    assert_eq!(log.dropped(), 0);
    // Each writer's lines are in its own order.
    let mut next = vec![0i64; 40];
    for e in &read.entries {
        assert!(ids.contains(&e.id));
        let writer = e.metadata["writer"].as_u64().unwrap() as usize;
        assert_eq!(e.metadata["n"].as_i64().unwrap(), next[writer]);
        next[writer] += 1;
    }
}

#[tokio::test]
async fn a_torn_last_line_is_skipped_and_the_next_line_starts_clean() {
    let dir = tempfile::tempdir().unwrap();
    let t = at(2026, 11, 23, 10, 0, 0);
    let day_file = dir.path().join("stream/2026-11-23.jsonl");
    std::fs::create_dir_all(day_file.parent().unwrap()).unwrap();
    let whole = serde_json::to_string(&entry(t, "whole")).unwrap();
    std::fs::write(&day_file, format!("{whole}\n{{\"id\":\"msg_2026112")).unwrap();

    let read = LogReader::new(dir.path()).day(t.date_naive()).unwrap();
    assert_eq!((read.entries.len(), read.skipped), (1, 1));

    let log = ConversationLog::open(dir.path(), config()).unwrap();
    log.append(entry(t, "after the crash")).await.unwrap();
    log.flush().await.unwrap();
    let read = LogReader::new(dir.path()).day(t.date_naive()).unwrap();
    let texts: Vec<_> = read.entries.iter().map(LogEntry::content_text).collect();
    assert_eq!(texts, ["whole", "after the crash"]);
    assert_eq!(read.skipped, 1);
}

#[tokio::test(start_paused = true)]
async fn lines_roll_over_to_the_next_days_file_at_midnight() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::tokio_from(at(2026, 11, 23, 23, 59, 58));
    let log = ConversationLog::open(dir.path(), config().clock(clock)).unwrap();
    log.append(entry(log.now(), "before midnight"))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(3)).await;
    log.append(entry(log.now(), "after midnight"))
        .await
        .unwrap();
    log.flush().await.unwrap();
    let reader = LogReader::new(dir.path());
    let day = |d| {
        reader
            .day(NaiveDate::from_ymd_opt(2026, 11, d).unwrap())
            .unwrap()
    };
    assert_eq!(day(23).entries[0].content_text(), "before midnight");
    assert_eq!(day(24).entries[0].content_text(), "after midnight");
    assert!(dir.path().join("stream/2026-11-24.jsonl").exists());
}

/// Writes one line per day for `days` (each the parent of the next), through
/// the log itself, and returns their ids in order.
async fn one_line_a_day(log: &ConversationLog, days: &[DateTime<Utc>]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (n, t) in days.iter().enumerate() {
        let e = entry(*t, &format!("day {n} 대화")).parent(ids.last().cloned());
        ids.push(log.append(e).await.unwrap());
    }
    log.flush().await.unwrap();
    ids
}

#[tokio::test]
async fn old_days_are_archived_then_gzipped_and_chains_still_reach_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), config()).unwrap();
    let today = at(2026, 11, 23, 12, 0, 0);
    let days: Vec<_> = [40, 31, 29, 8, 6, 0]
        .iter()
        .map(|ago| today - chrono::Duration::days(*ago))
        .collect();
    let ids = one_line_a_day(&log, &days).await;
    log.archive(today.date_naive()).await.unwrap();

    let stream = dir.path().join("stream");
    let name = |t: &DateTime<Utc>| t.format("%Y-%m-%d").to_string();
    for (t, place) in days.iter().zip([
        "archive/{}.jsonl.gz",
        "archive/{}.jsonl.gz",
        "archive/{}.jsonl",
        "archive/{}.jsonl",
        "{}.jsonl",
        "{}.jsonl",
    ]) {
        let path = stream.join(place.replace("{}", &name(t)));
        assert!(path.exists(), "{} is missing", path.display());
    }
    // Nothing is left behind in the old places.
    assert!(
        !stream
            .join(format!("archive/{}.jsonl", name(&days[0])))
            .exists()
    );
    assert!(!stream.join(format!("{}.jsonl", name(&days[3]))).exists());

    let reader = LogReader::new(dir.path());
    let chain = reader.chain(ids.last().unwrap()).unwrap();
    let chain_ids: Vec<_> = chain.iter().map(|e| e.id.clone()).collect();
    assert_eq!(chain_ids, ids);
    assert_eq!(chain[0].content_text(), "day 0 대화");
    assert_eq!(reader.day(days[0].date_naive()).unwrap().entries.len(), 1);
    assert_eq!(reader.days().unwrap().len(), 6);
    let range = reader
        .range(days[2].date_naive(), days[4].date_naive())
        .unwrap();
    assert_eq!(range.entries.len(), 3);
    assert_eq!(reader.tail(2).unwrap().len(), 2);
    assert_eq!(reader.tail(2).unwrap()[1].id, ids[5]);
}

#[tokio::test]
async fn the_archive_ages_are_configurable() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(
        dir.path(),
        config().archive_after_days(1).gzip_after_days(2),
    )
    .unwrap();
    let today = at(2026, 11, 23, 12, 0, 0);
    let days: Vec<_> = [3, 2, 1, 0]
        .iter()
        .map(|ago| today - chrono::Duration::days(*ago))
        .collect();
    one_line_a_day(&log, &days).await;
    log.archive(today.date_naive()).await.unwrap();
    let stream = dir.path().join("stream");
    assert!(stream.join("archive/2026-11-20.jsonl.gz").exists());
    assert!(stream.join("archive/2026-11-21.jsonl").exists());
    assert!(stream.join("2026-11-22.jsonl").exists());
    assert!(stream.join("2026-11-23.jsonl").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_drops_lines_on_record_never_silently() {
    let dir = tempfile::tempdir().unwrap();
    // A writer that syncs every line is far slower than appends.
    let log = ConversationLog::open(
        dir.path(),
        config().queue(4).flush(Flush::EachLine).sync(true),
    )
    .unwrap();
    let t = Utc::now();
    let (mut accepted, mut full) = (0u64, 0u64);
    for n in 0..2_000 {
        match log.append(entry(t, &format!("line {n}"))).await {
            Ok(_) => accepted += 1,
            Err(LogError::Full) => full += 1,
            Err(err) => panic!("{err}"),
        }
    }
    log.flush().await.unwrap();
    assert!(full > 0, "the queue never filled");
    assert_eq!(log.dropped(), full);
    let read = LogReader::new(dir.path()).day(t.date_naive()).unwrap();
    let (reports, lines): (Vec<_>, Vec<_>) = read
        .entries
        .iter()
        .partition(|e| e.kind == EntryType::Error);
    assert_eq!(lines.len() as u64, accepted);
    let reported: u64 = reports
        .iter()
        .map(|e| e.metadata["dropped"].as_u64().unwrap())
        .sum();
    assert_eq!(reported, full, "every dropped line is on record");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wait_a_full_queue_makes_appends_wait_and_drops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(
        dir.path(),
        config()
            .queue(2)
            .when_full(WhenFull::Wait)
            .flush(Flush::EachLine),
    )
    .unwrap();
    let t = Utc::now();
    for n in 0..2_000 {
        log.append(entry(t, &format!("line {n}"))).await.unwrap();
    }
    log.flush().await.unwrap();
    assert_eq!(log.dropped(), 0);
    let read = LogReader::new(dir.path()).day(t.date_naive()).unwrap();
    assert_eq!(read.entries.len(), 2_000);
}

fn route(context: &str, state: &str, t: DateTime<Utc>) -> Route {
    Route {
        context_id: context.into(),
        task_id: Some(format!("task-of-{context}")),
        last_event: state.into(),
        updated_at: t,
    }
}

#[test]
fn route_keys_do_not_depend_on_who_speaks_first() {
    assert_eq!(
        RouteKey::new("ws-1", "beta", "alpha").as_str(),
        "ws-1::alpha|beta"
    );
    assert_eq!(
        RouteKey::new("ws-1", "alpha", "beta"),
        RouteKey::new("ws-1", "beta", "alpha")
    );
    assert_ne!(
        RouteKey::new("ws-1", "alpha", "beta"),
        RouteKey::new("ws-2", "alpha", "beta")
    );
}

#[tokio::test]
async fn the_index_survives_a_restart_and_replays_what_was_logged_after_its_save() {
    let dir = tempfile::tempdir().unwrap();
    let key = RouteKey::new("ws-1", "alpha", "beta");
    let other = RouteKey::new("ws-1", "alpha", "gamma");
    let t = Utc::now();
    {
        let index = ConversationIndex::open(dir.path());
        assert!(index.is_empty());
        index.record(key.clone(), route("ctx-1", "TASK_STATE_COMPLETED", t));
        index.save().unwrap();
        // Changed and logged after the save, then a crash (no save).
        let log = ConversationLog::open(dir.path(), config()).unwrap();
        let later = route(
            "ctx-2",
            "TASK_STATE_INPUT_REQUIRED",
            t + chrono::Duration::seconds(1),
        );
        index.record(other.clone(), later.clone());
        log.append(entry(later.updated_at, "hi").route(&other, &later))
            .await
            .unwrap();
        log.flush().await.unwrap();
    }
    let index = ConversationIndex::open(dir.path());
    assert_eq!(index.get(&key).unwrap().context_id, "ctx-1");
    let replayed = index.get(&other).unwrap();
    assert_eq!(replayed.context_id, "ctx-2");
    assert!(replayed.task_waits());
    assert_eq!(replayed.task_id.as_deref(), Some("task-of-ctx-2"));
}

#[tokio::test]
async fn a_corrupt_index_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let key = RouteKey::new("ws-1", "alpha", "beta");
    let t = Utc::now();
    let log = ConversationLog::open(dir.path(), config()).unwrap();
    for (n, context) in ["ctx-old", "ctx-new"].iter().enumerate() {
        let r = route(
            context,
            "TASK_STATE_COMPLETED",
            t + chrono::Duration::seconds(n as i64),
        );
        log.append(entry(r.updated_at, "x").route(&key, &r))
            .await
            .unwrap();
    }
    log.flush().await.unwrap();
    std::fs::write(dir.path().join(INDEX_FILE), b"{\"version\":1,\"entr").unwrap();
    let index = ConversationIndex::open(dir.path());
    assert_eq!(index.get(&key).unwrap().context_id, "ctx-new");
    // Missing altogether: the same.
    std::fs::remove_file(dir.path().join(INDEX_FILE)).unwrap();
    assert_eq!(
        ConversationIndex::open(dir.path())
            .get(&key)
            .unwrap()
            .context_id,
        "ctx-new"
    );
    // And a saved index is a valid document again.
    index.save().unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(INDEX_FILE)).unwrap()).unwrap();
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["entries"]["ws-1::alpha|beta"]["contextId"], "ctx-new");
    assert!(doc["updatedAt"].is_string());
}
