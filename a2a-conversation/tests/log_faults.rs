//! The conversation log when the disk fails it or the writer falls behind:
//! no torn line, no loss that is not counted, no unbounded queue, no line
//! too big to read.
//!
//! The full-disk test mounts a small tmpfs of its own (the tests run as
//! root). Where mounting is not permitted it is skipped with a message,
//! except under `CI=true`, where that is a failure.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use a2a_conversation::{ConversationLog, EntryType, Flush, LogConfig, LogEntry, LogReader};
use chrono::Utc;

fn entry(text: &str) -> LogEntry {
    LogEntry::new(
        Utc::now(),
        EntryType::Request,
        "alpha",
        Some("beta".into()),
        text,
    )
}

/// A tmpfs of `size` bytes mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (after saying why) when mounting is not permitted here; a
    /// panic instead under `CI=true`, where the test must run.
    fn mount(size: usize) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        let failure = match mounted {
            Ok(out) if out.status.success() => return Some(Tmpfs { dir }),
            Ok(out) => String::from_utf8_lossy(&out.stderr).into_owned(),
            Err(err) => err.to_string(),
        };
        let why = format!("cannot mount a tmpfs ({}): {failure}", dir.path().display());
        if std::env::var("CI").is_ok_and(|ci| ci == "true") {
            panic!("{why}; the full-disk test needs root (or CAP_SYS_ADMIN)");
        }
        eprintln!("SKIPPED: {why}; run as root to test a full disk");
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fills the file system of `dir` with a file, and returns its path.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 4096];
    loop {
        match file.write(&block) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    path
}

/// Frees `bytes` of the filler.
fn free(filler: &Path, bytes: u64) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(filler)
        .unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len.saturating_sub(bytes)).unwrap();
}

#[tokio::test]
async fn a_full_disk_tears_no_line_and_the_next_write_starts_clean() {
    let Some(disk) = Tmpfs::mount(256 * 1024) else {
        return;
    };
    let log =
        ConversationLog::open(disk.path(), LogConfig::default().flush(Flush::EachLine)).unwrap();
    let day = Utc::now().date_naive();
    log.append(entry("before the disk filled")).await.unwrap();
    log.flush().await.unwrap();

    // Room for part of the next line only: it is written halfway, then ENOSPC.
    let filler = fill(disk.path());
    free(&filler, 8 * 1024);
    let big = "x".repeat(64 * 1024);
    log.append(entry(&big)).await.unwrap();
    assert!(log.flush().await.is_err(), "the write should have failed");
    // Nothing fits now: these fail whole.
    for n in 0..5 {
        log.append(entry(&format!("while full {n}"))).await.unwrap();
    }
    let _ = log.flush().await;

    // Space comes back: the next lines are written whole, each on its own line.
    std::fs::remove_file(&filler).unwrap();
    log.append(entry("after the disk emptied")).await.unwrap();
    log.flush().await.unwrap();

    let read = LogReader::new(disk.path()).day(day).unwrap();
    let texts: Vec<String> = read.entries.iter().map(LogEntry::content_text).collect();
    assert_eq!(read.skipped, 0, "torn lines in the file: {texts:?}");
    assert_eq!(
        texts.first().map(String::as_str),
        Some("before the disk filled")
    );
    assert!(
        texts.iter().any(|t| t == "after the disk emptied"),
        "{texts:?}"
    );
    let raw = std::fs::read(log.dir().join(format!("{day}.jsonl"))).unwrap();
    assert_eq!(raw.last(), Some(&b'\n'));
    // Every line is accounted for: written, or failed and counted (and the
    // loss is on record in the file).
    let appended = 1 + 1 + 5 + 1;
    let reports = read
        .entries
        .iter()
        .filter(|e| e.kind == EntryType::Error)
        .count() as u64;
    assert!(log.failed() >= 1, "no line counted as failed");
    assert_eq!(log.written() - reports + log.failed(), appended);
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("writing the log failed")),
        "{texts:?}"
    );
}

/// A writer that waits an hour between writes unless a flush wakes it: as
/// far as appenders can tell, a stalled disk.
fn stalled() -> LogConfig {
    LogConfig::default().flush(Flush::Grouped {
        max_lines: usize::MAX,
        max_delay: Duration::from_secs(3600),
    })
}

#[tokio::test]
async fn a_stalled_writer_holds_at_most_the_queues_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), stalled()).unwrap();
    // The first line wakes the writer; after it, it gathers for an hour.
    log.append(entry("first")).await.unwrap();
    log.flush().await.unwrap();
    // 200 lines of 512 KiB: 100 MiB against the 64 MiB default.
    let text = "m".repeat(512 * 1024);
    let (mut queued, mut dropped) = (0u64, 0u64);
    for _ in 0..200 {
        match log.append(entry(&text)).await {
            Ok(_) => queued += 1,
            Err(a2a_conversation::LogError::Full) => dropped += 1,
            Err(err) => panic!("{err}"),
        }
    }
    let (lines, bytes) = log.queued();
    assert_eq!(lines as u64, queued);
    assert!(bytes <= 64 << 20, "{bytes} bytes queued");
    assert!(
        queued >= 120 && dropped >= 70,
        "{queued} queued, {dropped} dropped"
    );
    assert_eq!(log.dropped(), dropped);
    log.flush().await.unwrap();
    // The first line, the queued ones and the line saying how many dropped.
    assert_eq!(log.written(), 1 + queued + 1);
}

#[tokio::test]
async fn a_huge_part_is_cut_in_the_log_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    let day = Utc::now().date_naive();
    let huge = "h".repeat(3 << 20);
    log.append(entry(&huge)).await.unwrap();
    // The hot path's borrowed lines are bounded the same way.
    let parts = [
        a2a_core::Part::text("see the data"),
        a2a_core::Part::data(serde_json::json!({ "blob": "d".repeat(2 << 20) })),
    ];
    let line = a2a_conversation::Line {
        t: Utc::now(),
        kind: EntryType::Response,
        from_agent: "beta",
        to_agent: Some("alpha"),
        content: a2a_conversation::LineContent::Parts(&parts),
        parent_id: None,
        metadata: &[("taskId", "t-1")],
    };
    log.append_line(line).await.unwrap();
    log.flush().await.unwrap();
    let raw = std::fs::read_to_string(log.dir().join(format!("{day}.jsonl"))).unwrap();
    for line in raw.lines() {
        assert!(line.len() <= 1 << 20, "a line of {} bytes", line.len());
    }
    let read = LogReader::new(dir.path()).day(day).unwrap();
    assert_eq!(read.skipped, 0);
    let text = read.entries[0].content_text();
    let cut = read.entries[0].metadata["cutBytes"].as_u64().unwrap();
    assert!(text.starts_with("hhhh"));
    assert!(
        text.ends_with(&format!("…[{cut} bytes cut]")),
        "{}",
        &text[text.len() - 40..]
    );
    assert!(((2 << 20)..(3 << 20)).contains(&cut), "{cut}");
    let content = &read.entries[1].content;
    assert_eq!(content[0]["text"], "see the data");
    let blob = content[1]["data"]["blob"].as_str().unwrap();
    assert!(blob.ends_with("bytes cut]"), "{}", &blob[blob.len() - 40..]);
    assert_eq!(read.entries[1].metadata["taskId"], "t-1");
}
