//! `a2a log search`: the conversation log's lines by their words, across
//! live, archived and gzipped days.

#![allow(clippy::unwrap_used)]

mod support;

use a2a_conversation::{ConversationLog, EntryType, LogConfig, LogEntry, SEARCH_INDEX_FILE};
use chrono::{DateTime, TimeZone, Utc};
use support::a2a;

fn at(d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, d, h, 0, 0).unwrap()
}

/// A log whose 20th is gzipped, 21st archived and 23rd live, each day with
/// a zebra from beta to alpha, a request about a route, and a line to gamma.
async fn three_days(dir: &std::path::Path) {
    let config = LogConfig::default()
        .archive_after_days(1)
        .gzip_after_days(2);
    let log = ConversationLog::open(dir, config).unwrap();
    for (day, name) in [(20, "gzipped"), (21, "archived"), (23, "live")] {
        let lines = [
            LogEntry::new(
                at(day, 9),
                EntryType::Request,
                "alpha",
                Some("beta".into()),
                "plan the route",
            ),
            LogEntry::new(
                at(day, 10),
                EntryType::Response,
                "beta",
                Some("alpha".into()),
                format!("a zebra on the {name} day"),
            ),
            LogEntry::new(
                at(day, 11),
                EntryType::Request,
                "alpha",
                Some("gamma".into()),
                "nothing (here)",
            ),
        ];
        for line in lines {
            log.append(line).await.unwrap();
        }
    }
    log.flush().await.unwrap();
    log.archive(at(23, 12).date_naive()).await.unwrap();
}

fn search(dir: &std::path::Path, args: &[&str]) -> (Vec<String>, String) {
    // The data directory first: after a `--`, everything is text.
    let mut all = vec!["log", "search", "--data-dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = a2a(&all);
    assert!(
        out.status.success(),
        "a2a {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    (
        stdout.lines().map(str::to_owned).collect(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn log_search_finds_lines_on_every_day_and_prints_them_as_log_today_does() {
    let dir = tempfile::tempdir().unwrap();
    three_days(dir.path()).await;
    let stream = dir.path().join("stream");
    assert!(stream.join("archive/2026-11-20.jsonl.gz").exists());
    assert!(stream.join("archive/2026-11-21.jsonl").exists());

    let (lines, _) = search(dir.path(), &["zebra"]);
    assert_eq!(lines.len(), 3, "{lines:?}");
    for (line, (day, name)) in lines
        .iter()
        .zip([(20, "gzipped"), (21, "archived"), (23, "live")])
    {
        assert!(
            line.starts_with(&format!("2026-11-{day} 10:00:00.000 ")),
            "{line}"
        );
        assert!(
            line.ends_with(&format!("response beta → alpha: a zebra on the {name} day")),
            "{line}"
        );
    }
    assert!(dir.path().join(SEARCH_INDEX_FILE).exists());

    // The short id printed is one `a2a log chain` takes.
    let short = lines[0].split_whitespace().nth(2).unwrap();
    assert_eq!(short.len(), 6, "{}", lines[0]);
    let chain = a2a(&[
        "log",
        "chain",
        short,
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(chain.status.success(), "{chain:?}");
    let chain = String::from_utf8(chain.stdout).unwrap();
    assert!(chain.contains("a zebra on the gzipped day"), "{chain}");

    // Several words: all of them.
    let (lines, _) = search(dir.path(), &["zebra", "ARCHIVED"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    // `--json`: the lines as stored.
    let (lines, _) = search(dir.path(), &["zebra", "--json"]);
    let live = std::fs::read_to_string(stream.join("2026-11-23.jsonl")).unwrap();
    assert_eq!(lines[2], live.lines().nth(1).unwrap());
    let first: LogEntry = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first.content_text(), "a zebra on the gzipped day");
}

#[tokio::test]
async fn log_search_filters_by_agent_type_and_days() {
    let dir = tempfile::tempdir().unwrap();
    three_days(dir.path()).await;

    let (lines, _) = search(dir.path(), &["nothing", "--agent", "gamma"]);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let (lines, _) = search(dir.path(), &["zebra", "--agent", "gamma"]);
    assert!(lines.is_empty(), "{lines:?}");
    let (lines, _) = search(dir.path(), &["route", "--type", "response"]);
    assert!(lines.is_empty(), "{lines:?}");
    let (lines, _) = search(dir.path(), &["route", "--type", "REQUEST"]);
    assert_eq!(lines.len(), 3, "{lines:?}");

    // Days are whole and inclusive; times are to the microsecond.
    let (lines, _) = search(
        dir.path(),
        &["zebra", "--since", "2026-11-21", "--until", "2026-11-21"],
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("archived"), "{lines:?}");
    let (lines, _) = search(dir.path(), &["zebra", "--until", "2026-11-21T10:00:00Z"]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let (lines, _) = search(dir.path(), &["zebra", "--since", "2026-11-21T10:00:01Z"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("live"), "{lines:?}");

    // The latest matches, and a word that more were left out.
    let (lines, stderr) = search(dir.path(), &["zebra", "--limit", "1"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("live"), "{lines:?}");
    assert!(stderr.contains("--limit"), "{stderr}");
}

#[tokio::test]
async fn log_search_takes_search_syntax_literally_and_rejects_bad_options_plainly() {
    let dir = tempfile::tempdir().unwrap();
    three_days(dir.path()).await;
    for text in [
        "\"",
        "NEAR(zebra",
        "zebra*",
        "col:zebra",
        "(here)",
        "AND OR NOT",
    ] {
        search(dir.path(), &[text]);
    }
    let (lines, _) = search(dir.path(), &["--", "-zebra"]);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let (lines, _) = search(dir.path(), &["(here)"]);
    assert_eq!(lines.len(), 3, "{lines:?}");

    let data_dir = dir.path().to_str().unwrap();
    let bad = a2a(&[
        "log",
        "search",
        "zebra",
        "--type",
        "chatter",
        "--data-dir",
        data_dir,
    ]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("not a line type"), "{stderr}");
    let bad = a2a(&[
        "log",
        "search",
        "zebra",
        "--since",
        "yesterday",
        "--data-dir",
        data_dir,
    ]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("neither a day"),
        "{bad:?}"
    );

    let missing = dir.path().join("missing");
    let bad = a2a(&[
        "log",
        "search",
        "zebra",
        "--data-dir",
        missing.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("no data directory"), "{stderr}");

    // A damaged index is rebuilt, not an error.
    std::fs::write(dir.path().join(SEARCH_INDEX_FILE), b"garbage").unwrap();
    let (lines, _) = search(dir.path(), &["zebra"]);
    assert_eq!(lines.len(), 3, "{lines:?}");
}
