//! `a2a log` over a cluster's log: each node writes its own daily files, in
//! one shared data directory or each in its own (`--data-dir` repeated),
//! and `a2a log` reads them as one log in time order.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use a2a_conversation::{ConversationLog, EntryType, LogConfig, LogEntry};
use chrono::{DateTime, TimeZone, Utc};
use support::{Database, arg, json, ok, serve, serve_refused};

fn at(s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 9, 0, s).unwrap()
}

/// A chain of six lines alternating between node `a` (in `dir_a`) and node
/// `b` (in `dir_b`), each node's lines written in one go, with a zebra in
/// each; returns the last line's id.
async fn chain_across(dir_a: &Path, dir_b: &Path) -> String {
    let a = ConversationLog::open(dir_a, LogConfig::default().node("a".to_owned())).unwrap();
    let b = ConversationLog::open(dir_b, LogConfig::default().node("b".to_owned())).unwrap();
    let mut parent: Option<String> = None;
    for n in 0..6u32 {
        let (log, from, to) = if n % 2 == 0 {
            (&a, "alpha", "beta")
        } else {
            (&b, "beta", "alpha")
        };
        let entry = LogEntry::new(
            at(n),
            EntryType::Request,
            from,
            Some(to.into()),
            format!("zebra step {n}"),
        )
        .parent(parent.take());
        parent = Some(log.append(entry).await.unwrap());
    }
    a.flush().await.unwrap();
    b.flush().await.unwrap();
    parent.unwrap()
}

fn steps(out: &str) -> Vec<String> {
    out.lines()
        .map(|line| line.rsplit(": ").next().unwrap().to_owned())
        .collect()
}

fn all_steps() -> Vec<String> {
    (0..6).map(|n| format!("zebra step {n}")).collect()
}

#[tokio::test]
async fn a2a_log_reads_nodes_of_two_directories_as_one_log() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let last = chain_across(dir_a.path(), dir_b.path()).await;
    let both = [
        "--data-dir",
        arg(dir_a.path()),
        "--data-dir",
        arg(dir_b.path()),
    ];
    let with_both = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&both);
        ok(&all)
    };

    let day = with_both(&["log", "date", "2026-11-27"]);
    assert_eq!(steps(&day), all_steps(), "{day}");
    let tail = with_both(&["log", "tail", "-n", "2"]);
    assert_eq!(steps(&tail), all_steps()[4..], "{tail}");
    // A chain by its short id, followed from node to node.
    let short = &last[last.len() - 6..];
    let chain = with_both(&["log", "chain", short]);
    assert_eq!(steps(&chain), all_steps(), "{chain}");
    // Search: each directory's index, merged in time order.
    let found = with_both(&["log", "search", "zebra"]);
    assert_eq!(steps(&found), all_steps(), "{found}");
    let latest = with_both(&["log", "search", "zebra", "--limit", "3"]);
    assert_eq!(steps(&latest), all_steps()[3..], "{latest}");
    // As stored: each line says its node.
    let stored = with_both(&["log", "date", "2026-11-27", "--json"]);
    let nodes: Vec<String> = stored
        .lines()
        .map(|line| {
            serde_json::from_str::<LogEntry>(line)
                .unwrap()
                .node
                .unwrap()
        })
        .collect();
    assert_eq!(nodes, ["a", "b", "a", "b", "a", "b"]);

    // One directory alone: that node's lines; its chain stops where the
    // other node's part begins.
    let only_a = ok(&["log", "date", "2026-11-27", "--data-dir", arg(dir_a.path())]);
    assert_eq!(
        steps(&only_a),
        ["zebra step 0", "zebra step 2", "zebra step 4"]
    );

    // The help says both ways.
    let help = ok(&["log", "--help"]);
    assert!(help.contains("Repeat the flag"), "{help}");
}

#[tokio::test]
async fn a2a_log_reads_every_node_of_a_shared_directory() {
    let dir = tempfile::tempdir().unwrap();
    let last = chain_across(dir.path(), dir.path()).await;
    let stream = dir.path().join("stream");
    assert!(stream.join("2026-11-27.a.jsonl").exists());
    assert!(stream.join("2026-11-27.b.jsonl").exists());
    let data = ["--data-dir", arg(dir.path())];
    let day = ok(&[&["log", "date", "2026-11-27"][..], &data].concat());
    assert_eq!(steps(&day), all_steps(), "{day}");
    let chain = ok(&[&["log", "chain", last.as_str()][..], &data].concat());
    assert_eq!(steps(&chain), all_steps(), "{chain}");
    let found = ok(&[&["log", "search", "zebra"][..], &data].concat());
    assert_eq!(steps(&found), all_steps(), "{found}");
}

/// Two `a2a serve --node-id` sharing one data directory write their own
/// files; a third with a node id already in use there is refused.
#[test]
fn nodes_serving_from_one_data_directory_log_apart_and_a_node_id_twice_is_refused() {
    let Some(database) = Database::create() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let node = |name: &str| {
        serve(&[
            "--store",
            &database.url,
            "--node-id",
            name,
            "--data-dir",
            arg(data.path()),
        ])
    };
    let a = node("node-a");
    let b = node("node-b");
    json(&["send", &a.url, "hello node a"]);
    json(&["send", &b.url, "hello node b"]);

    let refused = serve_refused(&[
        "--store",
        &database.url,
        "--node-id",
        "node-a",
        "--data-dir",
        arg(data.path()),
    ]);
    assert!(
        refused
            .stderr
            .contains("already writes the conversation log"),
        "{}",
        refused.stderr
    );

    // Stopped cleanly, each node has written what it logged.
    a.stop(support::PATIENCE);
    b.stop(support::PATIENCE);
    // (Read by name, not by today's date: the test may straddle midnight.)
    let stream = data.path().join("stream");
    for name in ["node-a", "node-b"] {
        let suffix = format!(".{name}.jsonl");
        let mut text = String::new();
        for entry in std::fs::read_dir(&stream).unwrap() {
            let path = entry.unwrap().path();
            if path.to_str().unwrap().ends_with(&suffix) {
                text.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
        let hello = format!("hello {}", name.replace('-', " "));
        assert!(text.contains(&hello), "{name}: {text}");
    }
    let log = ok(&["log", "tail", "--data-dir", arg(data.path())]);
    assert!(
        log.contains("hello node a") && log.contains("hello node b"),
        "{log}"
    );
}
