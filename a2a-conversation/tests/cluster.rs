//! The conversation log of a cluster: each node writes its own daily files,
//! in one shared data directory or each in its own, and the readers (days,
//! the last lines, chains, search, the conversation index) see one log.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use a2a_conversation::{
    ConversationIndex, ConversationLog, EntryType, LogConfig, LogEntry, LogError, LogReader,
    LogSearch, Route, RouteKey, SearchQuery,
};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};

fn at(d: u32, h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, d, h, m, s).unwrap()
}

fn day(d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
}

fn line(t: DateTime<Utc>, from: &str, text: &str) -> LogEntry {
    LogEntry::new(t, EntryType::Request, from, Some("peer".into()), text)
}

fn node_log(dir: &Path, node: &str) -> ConversationLog {
    ConversationLog::open(dir, LogConfig::default().node(node.to_owned())).unwrap()
}

fn texts(entries: &[LogEntry]) -> Vec<String> {
    entries.iter().map(LogEntry::content_text).collect()
}

/// Writes node `a`'s lines, then node `b`'s, their times interleaved (with
/// one more on b between its 3rd and 5th seconds), and returns the texts
/// in time order: the merge goes by time, not by which node wrote first.
async fn interleave(a: &ConversationLog, b: &ConversationLog) -> Vec<String> {
    for (log, name, seconds) in [(a, "a", [0, 2, 4]), (b, "b", [1, 3, 5])] {
        for n in seconds {
            let t = at(27, 9, 0, n);
            log.append(line(t, name, &format!("{name}{n}")))
                .await
                .unwrap();
            if n == 3 {
                let t = t + chrono::Duration::milliseconds(500);
                log.append(line(t, name, "b3.5")).await.unwrap();
            }
        }
        log.flush().await.unwrap();
    }
    ["a0", "b1", "a2", "b3", "b3.5", "a4", "b5"]
        .map(String::from)
        .to_vec()
}

#[tokio::test]
async fn two_nodes_sharing_a_directory_write_their_own_files_and_read_as_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let a = node_log(dir.path(), "a");
    let b = node_log(dir.path(), "b");
    assert_eq!(a.node(), Some("a"));
    let expected = interleave(&a, &b).await;

    let stream = dir.path().join("stream");
    let a_file = std::fs::read_to_string(stream.join("2026-11-27.a.jsonl")).unwrap();
    let b_file = std::fs::read_to_string(stream.join("2026-11-27.b.jsonl")).unwrap();
    assert_eq!(a_file.lines().count(), 3);
    assert_eq!(b_file.lines().count(), 4);
    assert!(!stream.join("2026-11-27.jsonl").exists());
    for json in a_file.lines() {
        assert!(json.ends_with(",\"node\":\"a\"}"), "{json}");
    }

    let reader = LogReader::new(dir.path());
    let read = reader.day(day(27)).unwrap();
    assert_eq!(texts(&read.entries), expected);
    assert_eq!(read.entries[0].node.as_deref(), Some("a"));
    assert_eq!(read.entries[1].node.as_deref(), Some("b"));
    assert_eq!(reader.days().unwrap(), vec![day(27)]);
    assert_eq!(reader.nodes().unwrap(), vec!["a", "b"]);
    assert_eq!(texts(&reader.tail(3).unwrap()), expected[4..]);
    assert_eq!(
        texts(&reader.range(day(26), day(28)).unwrap().entries),
        expected
    );
}

#[tokio::test]
async fn nodes_with_directories_of_their_own_read_as_one_log() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = node_log(dir_a.path(), "a");
    let b = node_log(dir_b.path(), "b");
    let expected = interleave(&a, &b).await;

    let reader = LogReader::merged([dir_a.path(), dir_b.path()]);
    assert_eq!(texts(&reader.day(day(27)).unwrap().entries), expected);
    assert_eq!(texts(&reader.tail(2).unwrap()), expected[5..]);
    // One directory alone holds its node's lines only.
    assert_eq!(
        texts(&LogReader::new(dir_a.path()).day(day(27)).unwrap().entries),
        ["a0", "a2", "a4"]
    );
}

#[tokio::test]
async fn a_chain_whose_lines_alternate_nodes_is_followed_whole() {
    for shared in [true, false] {
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let b_dir = if shared { dir_a.path() } else { dir_b.path() };
        let a = node_log(dir_a.path(), "a");
        let b = node_log(b_dir, "b");
        let mut parent: Option<String> = None;
        let mut expected = Vec::new();
        // Across midnight too: the chain's days are found from the ids.
        for n in 0..6u32 {
            let log = if n % 2 == 0 { &a } else { &b };
            let t = at(26, 23, 59, 57) + chrono::Duration::seconds(i64::from(n));
            let text = format!("step {n}");
            let id = log
                .append(line(t, "x", &text).parent(parent.clone()))
                .await
                .unwrap();
            // Noise on the other node, of the same times.
            let other = if n % 2 == 0 { &b } else { &a };
            other.append(line(t, "y", "noise")).await.unwrap();
            parent = Some(id);
            expected.push(text);
        }
        a.flush().await.unwrap();
        b.flush().await.unwrap();
        let reader = LogReader::merged([dir_a.path(), dir_b.path()]);
        let chain = reader.chain(parent.as_deref().unwrap()).unwrap();
        assert_eq!(texts(&chain), expected, "shared directory: {shared}");
        let nodes: Vec<_> = chain.iter().map(|e| e.node.clone().unwrap()).collect();
        assert_eq!(nodes, ["a", "b", "a", "b", "a", "b"]);
    }
}

#[tokio::test]
async fn search_finds_the_lines_of_every_node_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let a = node_log(dir.path(), "a");
    let b = node_log(dir.path(), "b");
    // Node a's lines are all written (and so indexed) before node b's,
    // but they interleave in time.
    for n in 0..4u32 {
        a.append(line(at(27, 10, 0, 2 * n), "a", &format!("zebra a{n}")))
            .await
            .unwrap();
    }
    a.flush().await.unwrap();
    let mut search = LogSearch::open(dir.path()).unwrap();
    let first = search.search(&SearchQuery::new("zebra")).unwrap();
    assert_eq!(first.lines.len(), 4);
    for n in 0..4u32 {
        b.append(line(at(27, 10, 0, 2 * n + 1), "b", &format!("zebra b{n}")))
            .await
            .unwrap();
    }
    // A day earlier, on b only.
    b.append(line(at(26, 10, 0, 0), "b", "zebra yesterday"))
        .await
        .unwrap();
    b.flush().await.unwrap();

    let found = search.search(&SearchQuery::new("zebra")).unwrap();
    let got: Vec<String> = found.lines.iter().map(|f| f.entry.content_text()).collect();
    assert_eq!(
        got,
        [
            "zebra yesterday",
            "zebra a0",
            "zebra b0",
            "zebra a1",
            "zebra b1",
            "zebra a2",
            "zebra b2",
            "zebra a3",
            "zebra b3"
        ]
    );
    assert!(!found.more);
    // The latest three across both nodes, still in time order.
    let latest = search.search(&SearchQuery::new("zebra").limit(3)).unwrap();
    let got: Vec<String> = latest
        .lines
        .iter()
        .map(|f| f.entry.content_text())
        .collect();
    assert_eq!(got, ["zebra b2", "zebra a3", "zebra b3"]);
    assert!(latest.more);
    assert!(latest.lines[0].json.ends_with(",\"node\":\"b\"}"));

    // Nodes that keep directories of their own: each directory's index,
    // merged.
    let other = tempfile::tempdir().unwrap();
    let c = node_log(other.path(), "c");
    c.append(line(at(27, 10, 0, 4), "c", "zebra c"))
        .await
        .unwrap();
    c.flush().await.unwrap();
    let mut both = vec![
        LogSearch::open(dir.path()).unwrap(),
        LogSearch::open(other.path()).unwrap(),
    ];
    let merged = LogSearch::search_all(&mut both, &SearchQuery::new("zebra").limit(4)).unwrap();
    let got: Vec<String> = merged
        .lines
        .iter()
        .map(|f| f.entry.content_text())
        .collect();
    assert_eq!(got, ["zebra c", "zebra b2", "zebra a3", "zebra b3"]);
    assert!(merged.more);
}

#[tokio::test]
async fn a_single_servers_directory_reads_as_before_and_beside_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let single = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(single.node(), None);
    single
        .append(line(at(27, 8, 0, 0), "s", "single first"))
        .await
        .unwrap();
    // A single server's file keeps its order even where times go back.
    single
        .append(line(at(27, 7, 0, 0), "s", "single earlier"))
        .await
        .unwrap();
    single.flush().await.unwrap();
    let file = dir.path().join("stream/2026-11-27.jsonl");
    let json = std::fs::read_to_string(&file).unwrap();
    assert!(!json.contains("\"node\""), "{json}");
    let reader = LogReader::new(dir.path());
    assert_eq!(
        texts(&reader.day(day(27)).unwrap().entries),
        ["single first", "single earlier"]
    );
    assert!(reader.nodes().unwrap().is_empty());

    // A node joins the same directory later: the single server's lines
    // come first at equal times.
    let a = node_log(dir.path(), "a");
    a.append(line(at(27, 8, 0, 0), "a", "node same time"))
        .await
        .unwrap();
    a.append(line(at(27, 9, 0, 0), "a", "node later"))
        .await
        .unwrap();
    a.flush().await.unwrap();
    assert_eq!(
        texts(&reader.day(day(27)).unwrap().entries),
        [
            "single first",
            "single earlier",
            "node same time",
            "node later"
        ]
    );
}

#[tokio::test]
async fn a_second_process_of_the_same_node_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let a = node_log(dir.path(), "a");
    let err =
        ConversationLog::open(dir.path(), LogConfig::default().node("a".to_owned())).unwrap_err();
    assert!(matches!(err, LogError::NodeInUse { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("node \"a\" already writes"), "{message}");
    assert!(message.contains("--node-id"), "{message}");
    // Another node, and a single server, are welcome.
    let _b = node_log(dir.path(), "b");
    let _single = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();

    // Once the first log is closed (its writer done), the node can open
    // again: a restart after a crash or a clean stop is not refused.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match ConversationLog::open(dir.path(), LogConfig::default().node("a".to_owned())) {
            Ok(_) => break,
            Err(LogError::NodeInUse { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(err) => panic!("reopening node a: {err}"),
        }
    }
}

#[tokio::test]
async fn each_node_archives_and_gzips_only_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = |node: &str| {
        LogConfig::default()
            .archive_after_days(1)
            .gzip_after_days(2)
            .node(node.to_owned())
    };
    let a = ConversationLog::open(dir.path(), config("a")).unwrap();
    // b keeps its days live for a week (the default).
    let b = node_log(dir.path(), "b");
    for d in [20, 21, 23] {
        a.append(line(at(d, 9, 0, 0), "a", &format!("a {d}")))
            .await
            .unwrap();
        b.append(line(at(d, 9, 0, 1), "b", &format!("b {d}")))
            .await
            .unwrap();
    }
    a.flush().await.unwrap();
    b.flush().await.unwrap();
    a.archive(day(23)).await.unwrap();
    let stream = dir.path().join("stream");
    assert!(stream.join("archive/2026-11-20.a.jsonl.gz").exists());
    assert!(stream.join("archive/2026-11-21.a.jsonl").exists());
    assert!(stream.join("2026-11-23.a.jsonl").exists());
    // b's files are where b left them.
    for d in [20, 21, 23] {
        assert!(stream.join(format!("2026-11-{d}.b.jsonl")).exists());
    }
    let reader = LogReader::new(dir.path());
    assert_eq!(
        texts(&reader.range(day(20), day(23)).unwrap().entries),
        ["a 20", "b 20", "a 21", "b 21", "a 23", "b 23"]
    );
    let mut search = LogSearch::open(dir.path()).unwrap();
    assert_eq!(
        search.search(&SearchQuery::new("20")).unwrap().lines.len(),
        2
    );
}

#[tokio::test]
async fn a_node_name_of_any_characters_stays_one_file_in_the_log_folder() {
    let dir = tempfile::tempdir().unwrap();
    let odd = "../eu west/1.jsonl";
    let long = "n".repeat(150);
    for node in [odd, long.as_str()] {
        let log = node_log(dir.path(), node);
        log.append(line(at(27, 9, 0, 0), "x", node)).await.unwrap();
        log.flush().await.unwrap();
    }
    let stream = dir.path().join("stream");
    let mut names: Vec<String> = std::fs::read_dir(&stream)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".jsonl"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().all(|n| n.len() < 120), "{names:?}");
    assert!(
        names.contains(&"2026-11-27.%2E%2E%2Feu%20west%2F1%2Ejsonl.jsonl".to_owned()),
        "{names:?}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let read = LogReader::new(dir.path()).day(day(27)).unwrap();
    let nodes: Vec<_> = read
        .entries
        .iter()
        .map(|e| e.node.clone().unwrap())
        .collect();
    assert!(
        nodes.contains(&odd.to_owned()) && nodes.contains(&long),
        "{nodes:?}"
    );
}

#[tokio::test]
async fn the_conversation_index_is_rebuilt_from_every_nodes_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = node_log(dir.path(), "a");
    let b = node_log(dir.path(), "b");
    let key = RouteKey::new("ws-1", "alpha", "beta");
    let other = RouteKey::new("ws-1", "alpha", "gamma");
    let route = |context: &str, t| Route {
        context_id: context.into(),
        task_id: None,
        last_event: "message".into(),
        updated_at: t,
    };
    // The pair moved on to ctx-2 on node b, after ctx-1 on node a.
    a.append(line(at(27, 9, 0, 0), "alpha", "hi").route(&key, &route("ctx-1", at(27, 9, 0, 0))))
        .await
        .unwrap();
    b.append(line(at(27, 9, 0, 5), "alpha", "again").route(&key, &route("ctx-2", at(27, 9, 0, 5))))
        .await
        .unwrap();
    a.append(
        line(at(27, 9, 0, 1), "alpha", "other").route(&other, &route("ctx-3", at(27, 9, 0, 1))),
    )
    .await
    .unwrap();
    a.flush().await.unwrap();
    b.flush().await.unwrap();
    let index = ConversationIndex::open(dir.path());
    assert_eq!(index.get(&key).unwrap().context_id, "ctx-2");
    assert_eq!(index.get(&other).unwrap().context_id, "ctx-3");
}
